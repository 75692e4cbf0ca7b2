"""Memoized and fresh reports: amplify_reports and memoized_steps against closed forms and brute force."""

from __future__ import annotations

import itertools
import math
import re
from fractions import Fraction

import numpy as np
import pytest

from chainamp import DP, MarkovOperator, amplify, mechanisms
from chainamp.accounting import amplify_reports, memoized_steps
from chainamp.errors import IncompatibleOperatorsError, InvalidParameterError

from conftest import krr_matrix, random_stochastic

#: The certified epsilon is the upper end of a bisection bracket of relative width 1e-7 (BISECTION_RTOL)
#: widened by the product error model (relative ~1e-13 here): it may exceed the exact value by this much.
RTOL = 2e-7


def _one_bit(f, p, q):
    return mechanisms.rappor_permanent(f), mechanisms.rappor_instantaneous(p, q)


def _one_bit_pure_epsilon(f: float, p: float, q: float, T: int) -> float:
    """Closed form (derived here) of the exact pure epsilon of T memoized reports of one RAPPOR bit.

    With b' the permanent bit and c the number of ones among the T reports,
    ``P[c | b'] = C(T, c) K(b', 1)^c K(b', 0)^(T - c)``, so the likelihood ratio of the true bit is
    ``P[c | 1] / P[c | 0] = ((1 - f/2) L + f/2) / ((f/2) L + 1 - f/2)`` with
    ``L = P[c | b'=1] / P[c | b'=0] = (q/p)^c ((1-q)/(1-p))^(T-c)``, increasing in L for f < 1 and
    extreme at c = T or c = 0; the other direction is the same expression at 1/L. Hence
    ``eps_T = log(((1 - f/2) L* + f/2) / ((f/2) L* + 1 - f/2))``,
    ``L* = max((q/p)^T, (1-p)/(1-q))^T, (p/q)^T, ((1-q)/(1-p))^T)``, which increases to
    ``log((1 - f/2)/(f/2))`` (RAPPOR's eps_inf of one bit, Erlingsson, Pihur and Korolova 2014).
    """
    L = max((q / p) ** T, ((1 - p) / (1 - q)) ** T, (p / q) ** T, ((1 - q) / (1 - p)) ** T)
    a = 1 - f / 2
    return math.log((a * L + (1 - a)) / ((1 - a) * L + a))


def _one_bit_delta(f, p, q, T, eps) -> float:
    """Exact hockey-stick of the two rows (both orders) of the count-of-ones channel, in rationals."""
    M = [[Fraction(1) - Fraction(f) / 2, Fraction(f) / 2], [Fraction(f) / 2, Fraction(1) - Fraction(f) / 2]]
    K1 = [Fraction(p), Fraction(q)]  # P[report 1 | b']
    rows = [[sum(M[x][b] * math.comb(T, c) * K1[b] ** c * (1 - K1[b]) ** (T - c) for b in (0, 1))
             for c in range(T + 1)] for x in (0, 1)]
    ee = Fraction(math.exp(eps))
    return float(max(sum(max(u - ee * v, 0) for u, v in zip(rows[x], rows[1 - x])) for x in (0, 1)))


def _brute_force(M: np.ndarray, K: np.ndarray, T: int) -> np.ndarray:
    """M followed by T independent applications of K to the same draw: the full sequence space."""
    seq = K
    for _ in range(T - 1):
        seq = np.einsum("bi,bj->bij", seq, K).reshape(K.shape[0], -1)
    return M @ seq


def _pure_epsilon(P: np.ndarray) -> float:
    out = 0.0
    for x, z in itertools.permutations(range(P.shape[0]), 2):
        if np.any((P[x] > 0) & (P[z] == 0)):
            return math.inf
        pos = P[x] > 0
        out = max(out, float(np.max(np.log(P[x][pos] / P[z][pos]))))
    return out


def _delta(P: np.ndarray, eps: float) -> float:
    return max(float(np.maximum(P[x] - math.exp(eps) * P[z], 0).sum())
               for x, z in itertools.permutations(range(P.shape[0]), 2))


# ------------------------------------------------------------------ one report is amplify
@pytest.mark.parametrize("seed", [0, 1, 2], ids=lambda s: f"seed{s}")
def test_one_report_is_amplify(seed):
    rng = np.random.default_rng(seed)
    M = random_stochastic(rng, 3, 4)
    K = random_stochastic(rng, 4, 3)
    one = amplify_reports(M, K, 1, delta=1e-6)
    ref = amplify(M, K, delta=1e-6)
    assert one.best.epsilon == ref.best.epsilon
    assert one.epsilon_at(1e-3) == ref.epsilon_at(1e-3)
    # the one-step channel built by memoized_steps is K relabelled: same certified numbers up to the bracket
    (step,) = memoized_steps(MarkovOperator(K), 1)
    order = [counts.index(1) for counts in step.outputs]  # outputs: one-hot count vectors
    assert sorted(order) == [0, 1, 2] and step.matrix.tolist() == K[:, order].tolist()
    built = amplify(M, [step], delta=1e-6)
    assert built.best.epsilon == pytest.approx(ref.best.epsilon, rel=RTOL)


# ------------------------------------------------------------------ RAPPOR one bit: closed forms
@pytest.mark.parametrize("f,p,q", [(0.5, 0.5, 0.75), (0.25, 0.3, 0.9), (0.8, 0.6, 0.2)],
                         ids=["published", "asym", "q<p"])
@pytest.mark.parametrize("T", [1, 2, 5, 30], ids=lambda t: f"T{t}")
def test_one_bit_pure_epsilon_closed_form(f, p, q, T):
    M, K = _one_bit(f, p, q)
    got = amplify_reports(M, K, T).epsilon_at(0.0)
    want = _one_bit_pure_epsilon(f, p, q, T)
    assert want * (1 - 1e-12) <= got <= want * (1 + RTOL) + 1e-12


@pytest.mark.parametrize("T", [2, 7, 25], ids=lambda t: f"T{t}")
@pytest.mark.parametrize("eps", [0.0, 0.3, 0.8], ids=lambda e: f"eps{e}")
def test_one_bit_delta_exact(T, eps):
    M, K = _one_bit(0.5, 0.5, 0.75)
    got = amplify_reports(M, K, T).delta_at(eps)
    want = _one_bit_delta(0.5, 0.5, 0.75, T, eps)
    assert want - 1e-15 <= got <= want * (1 + 1e-9) + 1e-14


def test_one_bit_tends_to_eps_inf_from_below():
    f = 0.5
    M, K = _one_bit(f, 0.5, 0.75)
    eps_inf = math.log((1 - f / 2) / (f / 2))
    values = [amplify_reports(M, K, t).epsilon_at(0.0) for t in (1, 2, 4, 8, 16, 64, 256)]
    assert all(a <= b for a, b in zip(values, values[1:]))
    assert all(v <= eps_inf * (1 + 1e-12) for v in values)
    assert values[-1] == pytest.approx(eps_inf, rel=1e-12)


# ------------------------------------------------------------------ full Bloom filters
@pytest.mark.parametrize("m,h", [(2, 1), (3, 1), (3, 2), (4, 2)], ids=lambda v: str(v))
@pytest.mark.parametrize("T", [2, 3], ids=lambda t: f"T{t}")
@pytest.mark.parametrize("route", ["product", "steps"])
def test_bloom_filters_against_brute_force(m, h, T, route):
    """Dense RAPPOR operators are exact Kronecker products: amplify_reports certifies them bit by bit (the
    product route, tests/accounting/test_reports_product.py); the step operators with per-bit counts (the route
    for a K that is a product after an M that is not) give the same numbers."""
    R = mechanisms.rappor_pipeline(m, h)
    if route == "product":
        rep = amplify_reports(R.mechanism, R.instantaneous, T, delta=1e-4)
    else:
        steps = memoized_steps(R.instantaneous, T)
        rep = amplify(R.mechanism, list(steps), delta=1e-4)
        # the per-bit structure was used: outcomes are tuples of per-bit counts ((T+1)^m of them)
        assert rep.operator.shape == (2**m, (T + 1) ** m)
    P = _brute_force(R.mechanism.matrix, R.instantaneous.matrix, T)
    want = _pure_epsilon(P)
    assert want * (1 - 1e-12) <= rep.epsilon_at(0.0) <= want * (1 + RTOL)
    for eps in (0.0, 0.5, 1.5):
        d = _delta(P, eps)
        assert d - 1e-15 <= rep.delta_at(eps) <= d * (1 + 1e-9) + 1e-13


@pytest.mark.parametrize("T", [2, 3], ids=lambda t: f"T{t}")
def test_general_type_channel_against_brute_force(T):
    """A K that is not a Kronecker product: counts over its outputs, C(T + m - 1, m - 1) outcomes."""
    rng = np.random.default_rng(7)
    M = random_stochastic(rng, 3, 4)
    K = random_stochastic(rng, 4, 3, zero_prob=0.3)
    rep = amplify_reports(M, K, T, delta=1e-4)
    assert rep.operator.shape[1] <= math.comb(T + 2, 2)
    P = _brute_force(M, K, T)
    for eps in (0.0, 0.4, 1.0):
        d = _delta(P, eps)
        assert d - 1e-15 <= rep.delta_at(eps) <= d * (1 + 1e-9) + 1e-13


def test_bloom_filter_kron_and_type_paths_agree():
    R = mechanisms.rappor_pipeline(3, 1)
    labels = list(range(8))  # integer labels hide the product structure: the type path is used
    K = MarkovOperator(R.instantaneous.matrix, labels, labels)
    M = MarkovOperator(R.mechanism.matrix, R.mechanism.inputs, labels)
    a = amplify_reports(R.mechanism, R.instantaneous, 3)
    b = amplify_reports(M, K, 3)
    assert b.operator.shape == (8, math.comb(3 + 7, 7))
    assert a.epsilon_at(0.0) == pytest.approx(b.epsilon_at(0.0), rel=RTOL)


@pytest.mark.parametrize("m,h", [(2, 1), (4, 2)], ids=lambda v: str(v))
def test_bloom_filters_paper_formulas(m, h):
    """One report: the paper's eps_1 (exact for m >= 2h); T reports: increasing, never above eps_inf."""
    R = mechanisms.rappor_pipeline(m, h)
    values = [amplify_reports(R.mechanism, R.instantaneous, t).epsilon_at(0.0)
              for t in ((1, 2, 4, 6) if m == 2 else (1, 2, 3))]
    assert values[0] == pytest.approx(R.epsilon_one, rel=RTOL)
    assert all(a < b for a, b in zip(values, values[1:]))
    assert values[-1] <= R.epsilon_inf
    if m == 2:
        far = amplify_reports(R.mechanism, R.instantaneous, 40).epsilon_at(0.0)
        assert R.epsilon_inf * (1 - 1e-6) <= far <= R.epsilon_inf


def test_memoized_never_above_input_and_grows_at_delta():
    M, K = MarkovOperator(krr_matrix(3, 2.0)), MarkovOperator(krr_matrix(3, 1.0))
    values = [amplify_reports(M, K, t, delta=1e-6).epsilon_at(1e-6) for t in (1, 2, 3, 5, 8)]
    assert all(a <= b * (1 + RTOL) for a, b in zip(values, values[1:]))
    assert values[-1] <= 2.0 * (1 + RTOL)


def test_black_box_input():
    """A DP point as M: Theorem 1 applied to the T-report channel, still at most the input epsilon."""
    K = mechanisms.randomized_response(3, 1.0)
    r = amplify_reports(DP(2.0), K, 3)
    assert 0 < r.best.epsilon <= 2.0


def test_steps_product_rows_are_multinomial():
    K = MarkovOperator([[0.5, 0.25, 0.25], [0.125, 0.375, 0.5]])
    steps = memoized_steps(K, 3)
    P = steps[0]
    for s in steps[1:]:
        P = P @ s
    assert len(P.outputs) == math.comb(5, 2)
    for x in range(2):
        for j, counts in enumerate(P.outputs):
            exact = Fraction(math.factorial(3))
            for y, n in enumerate(counts):
                exact *= Fraction(K.matrix[x, y]) ** n / math.factorial(n)
            assert float(P.matrix[x, j]) == pytest.approx(float(exact), rel=1e-15)


# ------------------------------------------------------------------ fresh reports
def test_fresh_reports_compose():
    """Fresh reports: above the exact 4-fold product of the pipeline (brute force), within the PLD grid's
    slack (0.01 in epsilon, stated) of basic composition of the pure level, and above the memoized value."""
    M, K = MarkovOperator(krr_matrix(3, 2.0)), MarkovOperator(krr_matrix(3, 1.0))
    pure = amplify(M, K).epsilon_at(0.0)
    fresh = amplify_reports(M, K, 4, memoized=False, delta=1e-6)
    memo = amplify_reports(M, K, 4, delta=1e-6).epsilon_at(1e-6)
    assert fresh.epsilon_at(1e-6) <= 4 * pure + 0.01
    assert memo <= fresh.epsilon_at(1e-6)
    P = M.matrix @ K.matrix
    fourfold = np.einsum("xa,xb,xc,xd->xabcd", P, P, P, P).reshape(3, -1)
    for eps in (0.5, 1.5, 2.5):
        assert fresh.delta_at(eps) >= _delta(fourfold, eps) - 1e-15


def test_fresh_one_report_is_amplify():
    M, K = MarkovOperator(krr_matrix(3, 2.0)), MarkovOperator(krr_matrix(3, 1.0))
    assert amplify_reports(M, K, 1, memoized=False).best.epsilon == amplify(M, K).best.epsilon


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("kwargs,exc,match", [
    ({"reports": 0}, InvalidParameterError, "reports must be >= 1"),
    ({"reports": 2.0}, TypeError, "reports must be an integer"),
    ({"reports": True}, TypeError, "reports must be an integer"),
    ({"reports": 2, "memoized": "yes"}, TypeError, "memoized must be a bool"),
    ({"reports": 2, "memoized": 1}, TypeError, "memoized must be a bool"),
    ({"reports": 2, "max_outcomes": 0}, InvalidParameterError, "max_outcomes must be >= 1"),
    ({"reports": 40, "max_outcomes": 50}, InvalidParameterError,
     r"reports=40: the memoized channel has 41 outcomes .* up to 80 intermediate states; the limit is "
     r"max_outcomes=50"),
    ({"reports": 600}, InvalidParameterError, r"below the normal range.*at most 500 memoized reports"),
], ids=["zero", "float", "bool", "memoized-str", "memoized-int", "max-outcomes", "too-many-outcomes", "underflow"])
def test_validation(kwargs, exc, match):
    M, K = _one_bit(0.5, 0.5, 0.75)
    with pytest.raises(exc, match=match):
        amplify_reports(M, K, **kwargs)


def test_validation_too_many_outcomes_names_the_count():
    K = MarkovOperator(krr_matrix(20, 1.0))
    M = MarkovOperator(krr_matrix(20, 2.0))
    with pytest.raises(InvalidParameterError, match=rf"has {math.comb(39, 19)} outcomes \(count vectors over 20 report "
                                                    r"values, C\(T \+ m - 1, m - 1\)\)"):
        amplify_reports(M, K, 20)


def test_validation_k_inputs_not_m_outputs():
    M = MarkovOperator(krr_matrix(3, 2.0))
    K = MarkovOperator(krr_matrix(4, 1.0))
    with pytest.raises(IncompatibleOperatorsError, match=r"outputs of M \(3 labels\) must be the inputs of K "
                                                         r"\(4 labels\)"):
        amplify_reports(M, K, 2)


def test_validation_k_list():
    M = MarkovOperator(krr_matrix(3, 2.0))
    K = MarkovOperator(krr_matrix(3, 1.0))
    with pytest.raises(TypeError, match="K must be one operator"):
        amplify_reports(M, [K, K], 2)


# --------------------------------------------------------------------------- progress (issue 10, item 4)
@pytest.fixture
def fast_lines(monkeypatch):
    """Plain progress lines with a tiny delay and interval, as the CLI prints them to a CI log."""
    from chainamp._numerics import progress as P

    monkeypatch.setattr(P, "PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(P, "PROGRESS_LINE_INTERVAL", 0.0)
    with P.progress_mode("lines"):
        yield


@pytest.mark.parametrize("memoized, expected", [
    (True, ["memoized report steps: 3/3 step", "amplify_reports: 2/2 stage"]),
    (False, ["compose: 2/2 item", "amplify_reports: 3/3 stage"]),
], ids=["memoized", "fresh"])
def test_amplify_reports_shows_its_stages(capsys, fast_lines, memoized, expected):
    M, K = _one_bit(0.5, 0.5, 0.75)
    quiet = amplify_reports(M, K, 3, memoized=memoized, progress=False)
    assert capsys.readouterr().err == ""
    shown = amplify_reports(M, K, 3, memoized=memoized)
    err = capsys.readouterr().err
    for text in expected:
        assert text in err, err
    assert shown.best.epsilon == quiet.best.epsilon  # progress never changes the result


def test_memoized_steps_progress_counts_every_step(capsys, fast_lines):
    K = MarkovOperator(krr_matrix(3, 1.0))
    steps = memoized_steps(K, 4, progress=None)
    assert len(steps) == 4
    assert "memoized report steps: 4/4 step" in capsys.readouterr().err


def test_compose_shows_items_and_the_final_composition(capsys, fast_lines):
    from chainamp import compose

    prof = compose([DP(1.0), DP(0.5)], counts=[2, 0])
    assert 1.99 <= prof.epsilon(1e-6) <= 2.0 + 2e-3
    assert "compose: 2/2 item" in capsys.readouterr().err  # one item with a positive count, then the end


@pytest.mark.parametrize("call", ["amplify_reports", "memoized_steps", "compose"])
def test_progress_keyword_is_validated(call):
    from chainamp import compose

    M, K = _one_bit(0.5, 0.5, 0.75)
    fn = {"amplify_reports": lambda: amplify_reports(M, K, 2, progress="yes"),
          "memoized_steps": lambda: memoized_steps(K, 2, progress=1),
          "compose": lambda: compose([DP(1.0)], progress="no")}[call]
    with pytest.raises(TypeError, match=r"progress must be None, True or False \(got "):
        fn()


def test_progress_false_is_silent_even_when_slow(capsys, monkeypatch):
    from chainamp._numerics import progress as P

    monkeypatch.setattr(P, "PROGRESS_DELAY", 0.0)
    M, K = _one_bit(0.5, 0.5, 0.75)
    amplify_reports(M, K, 3, progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("tiny, expected", [(1e-310, "only one report (reports = 1, K itself) can be certified"),
                                            (1e-300, "only one report (reports = 1, K itself) can be certified"),
                                            (1e-100, "at most 3 memoized reports of this K can be certified")],
                         ids=["subnormal", "1e-300", "1e-100"])
def test_memoized_refusal_names_what_can_be_certified(tiny, expected):
    """Issue 18: "at most 0 memoized reports" was printed while reports = 1 works."""
    import chainamp as ca

    K = ca.MarkovOperator([[1.0 - tiny, tiny], [0.5, 0.5]])
    assert ca.amplify_reports(ca.DP(1.0), K, 1).best.epsilon <= 1.0  # one report: K itself
    with pytest.raises(InvalidParameterError, match=re.escape(expected)):
        ca.amplify_reports(ca.DP(1.0), K, 4)
