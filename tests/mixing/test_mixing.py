"""chainamp.mixing: the four coefficients of Definition 1 (Balle et al. 2019) against brute force,
exact rational arithmetic, closed forms and the LP path (Lemma 9, the LDP reading and the mixing
time are in test_guarantees.py)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import mpmath
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import chainamp.mixing.pruning as pairwise_module
from chainamp.privacy import hockey_stick
from chainamp.errors import IncompatibleOperatorsError, InvalidParameterError
from chainamp.mixing import (DobrushinResult, dobrushin, dobrushin_curve, doeblin, ldp_guarantee, mixing_conditions,
                             mixing_time, ultra_mixing)
from chainamp.operators import MarkovOperator
from conftest import random_stochastic, stochastic_matrices

EPSILONS = [0.0, 0.3, 1.0, 4.0, math.inf]
EPS_IDS = ["tv", "0.3", "1", "4", "inf"]
#: Agreement of a reported (rounded-up) value with an exact reference on small chains.
CLOSE = 1e-12
#: Brief's agreement target between LP and exact paths.
LP_ATOL = 1e-8


def krr(k: int, eps: float) -> MarkovOperator:
    """k-ary randomized response: keep w.p. e^eps / (e^eps + k - 1), else a uniform other value."""
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    mat = np.full((k, k), (1.0 - keep) / (k - 1))
    np.fill_diagonal(mat, keep)
    return MarkovOperator(mat)


# ---------------------------------------------------------------- brute-force references
def brute_dobrushin(A: np.ndarray, eps: float) -> float:
    n = A.shape[0]
    return max((hockey_stick(A[i], A[j], eps) for i in range(n) for j in range(n) if i != j), default=0.0)


def brute_doeblin(A: np.ndarray) -> float:
    return 1.0 - sum(min(A[x, y] for x in range(A.shape[0])) for y in range(A.shape[1]))


def brute_ultra(A: np.ndarray) -> float:
    n, m = A.shape
    worst = 1.0
    for x in range(n):
        for xp in range(n):
            for y in range(m):
                if A[xp, y] > 0:
                    worst = min(worst, A[x, y] / A[xp, y])
                elif A[x, y] > 0:
                    return 1.0  # K(x) not absolutely continuous w.r.t. K(x')
    return 1.0 - worst


def fraction_hockey(p, q, c: Fraction | None) -> Fraction:
    """D_c(p||q) exactly for the stored floats; c=None is footnote 3 (eps = inf)."""
    P, Q = [Fraction(float(v)) for v in p], [Fraction(float(v)) for v in q]
    if c is None:
        return sum((a for a, b in zip(P, Q) if b == 0), Fraction(0))
    return sum((max(a - c * b, Fraction(0)) for a, b in zip(P, Q)), Fraction(0))


def mp_hockey(p, q, eps: float) -> mpmath.mpf:
    """D_{e^eps}(p||q) at 60 digits with the true e^eps of the float eps."""
    with mpmath.workdps(60):
        c = mpmath.exp(mpmath.mpf(eps))
        return sum((max(mpmath.mpf(float(a)) - c * mpmath.mpf(float(b)), 0) for a, b in zip(p, q)), mpmath.mpf(0))


SEEDS = list(range(6))


@pytest.fixture(params=["small", "fast"])
def path(request, monkeypatch):
    """Run a test through the one-pass small-operator path and through the fast path
    (candidate search, enumeration) by switching off the small-operator shortcut."""
    if request.param == "fast":
        monkeypatch.setattr(pairwise_module, "_SMALL_WORK", 0)
    return request.param


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
@pytest.mark.parametrize("eps", EPSILONS, ids=EPS_IDS)
def test_dobrushin_matches_brute_force(seed, eps, path):
    rng = np.random.default_rng(seed)
    A = random_stochastic(rng, int(rng.integers(2, 7)), int(rng.integers(2, 7)), zero_prob=0.3 * (seed % 2))
    res = dobrushin(MarkovOperator(A), eps)
    ref = brute_dobrushin(A, eps)
    assert abs(res.gamma - ref) <= CLOSE
    # the witness pair and test set attain the value
    i, j = res.pair
    S = [y for y in res.test_set]
    if not math.isinf(eps) and res.gamma > 0:
        assert abs(A[i, S].sum() - math.exp(eps) * A[j, S].sum() - res.gamma) <= 1e-9


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
def test_exact_rational_reference(seed, path):
    """Reported values are never below the exact value of the stored floats and within 1e-12."""
    rng = np.random.default_rng(100 + seed)
    n, m = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    A = random_stochastic(rng, n, m, zero_prob=0.25)
    K = MarkovOperator(A)
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    for eps, c in ((0.0, Fraction(1)), (math.inf, None)):
        exact = max(fraction_hockey(A[i], A[j], c) for i, j in pairs)
        got = Fraction(dobrushin(K, eps).gamma)
        assert exact <= got <= exact + Fraction(CLOSE)
    for eps in (0.2, 1.5):
        exact = max(mp_hockey(A[i], A[j], eps) for i, j in pairs)
        got = dobrushin(K, eps).gamma
        assert exact <= got <= exact + CLOSE
    cols = [[Fraction(float(A[x, y])) for x in range(n)] for y in range(m)]
    exact_doeblin = 1 - sum(min(col) for col in cols)
    assert exact_doeblin <= Fraction(doeblin(K).gamma) <= exact_doeblin + Fraction(CLOSE)
    B = A + 0.05
    B /= B.sum(axis=1, keepdims=True)
    cols = [[Fraction(float(B[x, y])) for x in range(n)] for y in range(m)]
    exact_ultra = 1 - min(min(col) / max(col) for col in cols)
    assert exact_ultra <= Fraction(ultra_mixing(MarkovOperator(B)).gamma) <= exact_ultra + Fraction(CLOSE)


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
def test_doeblin_and_ultra_match_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    A = random_stochastic(rng, int(rng.integers(2, 7)), int(rng.integers(2, 7)), zero_prob=0.3 * (seed % 2))
    K = MarkovOperator(A)
    d = doeblin(K)
    assert abs(d.gamma - brute_doeblin(A)) <= CLOSE
    if d.witness is not None:  # K(x) >= (1 - gamma) omega for every x
        assert np.all(A >= (1 - d.gamma) * d.witness[None, :] - 1e-15)
        assert abs(d.witness.sum() - 1.0) <= 1e-12
    u = ultra_mixing(K)
    assert abs(u.gamma - brute_ultra(A)) <= CLOSE
    x, xp = u.pair
    y = u.output
    assert abs(A[x, y] - u.ratio * A[xp, y]) <= 1e-12


# ---------------------------------------------------------------- closed forms
KRR = [(2, 0.5), (3, 1.0), (5, 2.0), (10, 0.1), (4, 6.0)]


@pytest.mark.parametrize("k,eps", KRR, ids=[f"k{k}-eps{e}" for k, e in KRR])
def test_krr_closed_forms(k, eps):
    """k-ary RR closed forms (rows differ in two entries): Dobrushin = Doeblin = (e^eps - 1)/(e^eps + k - 1), ultra = 1 - e^-eps."""
    K = krr(k, eps)
    closed = math.expm1(eps) / (math.exp(eps) + k - 1)
    assert abs(dobrushin(K).gamma - closed) <= CLOSE
    assert abs(doeblin(K).gamma - closed) <= CLOSE
    assert abs(ultra_mixing(K).gamma - (1 - math.exp(-eps))) <= CLOSE
    assert dobrushin(K, eps * (1 + 1e-9)).gamma == 0.0  # k-RR is eps-LDP
    assert ldp_guarantee(K).epsilon == pytest.approx(eps, rel=1e-12, abs=1e-12)  # tolerance: log rounding
    assert ldp_guarantee(K).epsilon >= eps * (1 - 1e-15)


def test_krr_large_tie_path():
    """300-ary RR: all 89,700 pairs tie, the tie budget applies; still >= exact and within 1e-11."""
    eps = 1.0
    K = krr(300, eps)
    closed = math.expm1(eps) / (math.exp(eps) + 299)
    got = dobrushin(K).gamma
    assert closed <= got <= closed + 1e-11
    got_hs = dobrushin(K, 0.5).gamma
    keep, other = math.exp(eps) / (math.exp(eps) + 299), 1 / (math.exp(eps) + 299)
    ref = keep - math.exp(0.5) * other  # the only positive term of D_{e^0.5}(K_x || K_x')
    assert ref - 1e-15 <= got_hs <= ref + 1e-11


# ---------------------------------------------------------------- fast path vs all pairs
@pytest.mark.parametrize("eps", [0.0, 0.5, 3.0, 20.0, math.inf], ids=["tv", "0.5", "3", "20", "inf"])
@pytest.mark.parametrize("zeros", [0.0, 0.4], ids=["dense", "zeros"])
def test_fast_path_matches_all_pairs(eps, zeros):
    rng = np.random.default_rng(7)
    A = random_stochastic(rng, 70, 40, zero_prob=zeros)
    A[3] = A[5]  # duplicated rows: a pair at 0
    K = MarkovOperator(A)
    full = dobrushin(K, eps, all_pairs=True)
    fast = dobrushin(K, eps, block_size=9)
    ref = full.pairwise.max()  # itself rounded up: few-ulp slack below
    assert ref - 1e-15 <= fast.gamma <= ref + 1e-12
    assert full.pairwise.shape == (70, 70) and np.all(np.diag(full.pairwise) == 0)
    i, j = fast.pair
    assert full.pairwise[i, j] >= ref - 1e-12


@pytest.mark.parametrize("case", ["dense", "zeros", "ties"])
def test_curve_matches_pointwise_all_pairs(case):
    """dobrushin_curve reuses bounds across eps; it must agree with all-pairs evaluation."""
    rng = np.random.default_rng(21)
    if case == "ties":
        K = krr(40, 1.5)
    else:
        A = random_stochastic(rng, 50, 30, zero_prob=0.3 if case == "zeros" else 0.0) ** 3
        K = MarkovOperator(A / A.sum(axis=1, keepdims=True))
    grid = np.concatenate([np.linspace(0.0, 6.0, 40), [30.0, 800.0, math.inf]])
    curve = dobrushin_curve(K, grid[::-1])[::-1]  # order of the request does not matter
    for e, got in zip(grid, curve):
        ref = dobrushin(K, e, all_pairs=True).pairwise.max()  # itself rounded up: few-ulp slack below
        assert ref - 1e-15 <= got <= ref + 1e-12, e


def test_large_eps_and_tiny_probabilities():
    """eps up to 800 and probabilities 1e-305 (reference with 60-digit arithmetic)."""
    A = np.array([[0.5, 0.5, 0.0], [1.0 - 1e-300, 1e-305, 1e-300]])
    K = MarkovOperator(A)
    for eps in (0.0, 10.0, 700.0, 701.5, 703.0, 745.0, 746.0, 800.0, math.inf):
        ref = max(mp_hockey(A[0], A[1], eps), mp_hockey(A[1], A[0], eps))
        got = dobrushin(K, eps).gamma
        assert ref <= got <= ref + CLOSE, eps
    assert dobrushin(K, 701.5).gamma > 0.04  # 0.5 - e^701.5 1e-305 = 0.0454...


@pytest.mark.parametrize("seed", range(3), ids=[f"seed{s}" for s in range(3)])
def test_large_eps_enumeration_path(seed, path):
    """Entries spanning 1e-300..1 and eps from 14 to 745: the active-term enumeration path
    (and the all-pairs fallback) against 60-digit arithmetic."""
    rng = np.random.default_rng(500 + seed)
    A = 10.0 ** (-rng.uniform(0, 300, size=(7, 6)))
    A[rng.random(A.shape) < 0.15 * seed] = 0.0
    A[:, 0] += 1e-3
    A /= A.sum(axis=1, keepdims=True)
    K = MarkovOperator(A)
    pairs = [(i, j) for i in range(7) for j in range(7) if i != j]
    for eps in (14.0, 40.0, 300.0, 690.0, 705.0, 745.0):
        ref = max(mp_hockey(A[i], A[j], eps) for i, j in pairs)
        got = dobrushin(K, eps).gamma
        assert ref <= got <= ref + CLOSE, eps
        assert got == dobrushin(K, eps, all_pairs=True).pairwise.max() or abs(got - float(ref)) <= CLOSE


@functools.lru_cache(maxsize=None)
def _off_one_rows_exact(eps: float):
    """``(A, exact gamma)`` of test_fast_paths_never_below_exact_arithmetic at ``eps``: the same matrix and exact
    reference for both paths, so its 600 pairs are evaluated once per eps (Fraction at inf, 60 digits otherwise)."""
    rng = np.random.default_rng(31)
    A = random_stochastic(rng, 25, 30, zero_prob=0.1) ** 3
    A /= A.sum(axis=1, keepdims=True)
    A *= 1.0 + rng.uniform(-4e-10, 4e-10, size=(25, 1))
    A.setflags(write=False)
    pairs = [(i, j) for i in range(25) for j in range(25) if i != j]
    # a float screen (each pair's value to ~1e-13: 30 terms of at most 1 each, a relative error of a few ulps per
    # term) keeps every pair within 1e-9 of the float maximum, so the exact maximum is among the pairs evaluated
    # exactly (all 600 in mpmath took ~1.4 s of CPU)
    with np.errstate(over="ignore"):
        if math.isinf(eps):
            screen = [float(np.sum(np.where(A[j] == 0, A[i], 0.0))) for i, j in pairs]
        else:
            screen = [float(np.sum(np.maximum(A[i] - math.exp(eps) * A[j], 0.0))) for i, j in pairs]
    kept = [pair for pair, value in zip(pairs, screen) if value >= max(screen) - 1e-9]
    if math.isinf(eps):
        return A, max(fraction_hockey(A[i], A[j], None) for i, j in kept)
    return A, max(mp_hockey(A[i], A[j], eps) for i, j in kept)


@pytest.mark.parametrize("eps", [0.0, 0.5, 3.0, 16.0, 40.0, math.inf], ids=["tv", "0.5", "3", "16", "40", "inf"])
def test_fast_paths_never_below_exact_arithmetic(eps, path):
    """Rows off 1 by up to 4e-10 (accepted by MarkovOperator), heavy tails, several blocks:
    the reported gamma is >= the exact value of the stored floats and within 1e-12."""
    A, exact = _off_one_rows_exact(eps)
    K = MarkovOperator(A.copy())
    got = dobrushin(K, eps, block_size=6).gamma
    if math.isinf(eps):
        assert exact <= Fraction(got) <= exact + Fraction(CLOSE)
    else:
        assert exact <= got <= exact + CLOSE


# ---------------------------------------------------------------- sparse
def test_sparse_equals_dense():
    rng = np.random.default_rng(3)
    A = random_stochastic(rng, 30, 25, zero_prob=0.5)
    dense, sparse = MarkovOperator(A), MarkovOperator(sp.csr_matrix(A))
    for eps in EPSILONS:
        assert dobrushin(sparse, eps).gamma == dobrushin(dense, eps).gamma
    assert doeblin(sparse).gamma == doeblin(dense).gamma
    assert ultra_mixing(sparse).gamma == ultra_mixing(dense).gamma
    B = A + 0.01
    B /= B.sum(axis=1, keepdims=True)
    ds, ss = MarkovOperator(B), MarkovOperator(sp.csr_matrix(B))
    for eps in EPSILONS:
        assert dobrushin(ss, eps).gamma == dobrushin(ds, eps).gamma
    assert doeblin(ss).gamma == doeblin(ds).gamma
    np.testing.assert_array_equal(doeblin(ss).minorant, doeblin(ds).minorant)
    assert ultra_mixing(ss).gamma == ultra_mixing(ds).gamma
    assert ldp_guarantee(ss).epsilon == ldp_guarantee(ds).epsilon


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_disjoint_pair_missed_by_probes(sparse):
    """Rows 0 (full support) and 5 (fewest non-zeros) overlap every row, rows 1 and 2 are
    disjoint: the general path must still report 1 with a disjoint witness."""
    supports = [range(6), [0, 2, 3], [1, 4, 5], [0, 2, 4], [1, 3, 5], [0, 1]]
    A = np.zeros((6, 6))
    for i, supp in enumerate(supports):
        A[i, list(supp)] = 1.0 / len(supp)
    K = MarkovOperator(sp.csr_matrix(A) if sparse else A)
    for eps in (0.0, 1.0, math.inf):
        res = dobrushin(K, eps)
        assert res.gamma == 1.0
        i, j = res.pair
        assert not set(supports[i]) & set(supports[j])


def test_sparse_large_random_walk_short_circuits():
    """Random walk on a 100,000-node cycle: disjoint supports -> 1 for every eps, never densified."""
    K = MarkovOperator.random_walk(nx.cycle_graph(100_000), laziness=0.5)
    for eps in (0.0, 2.0, math.inf):
        res = dobrushin(K, eps)
        assert res.gamma == 1.0
        i, j = res.pair
        assert not set(np.flatnonzero(K.row(i))) & set(np.flatnonzero(K.row(j)))
    assert doeblin(K).gamma == 1.0 and doeblin(K).witness is None
    assert ultra_mixing(K).gamma == 1.0 and ultra_mixing(K).ratio == 0.0
    assert ldp_guarantee(K).epsilon == math.inf
    np.testing.assert_array_equal(dobrushin_curve(K, [0.0, 5.0]), [1.0, 1.0])


# ---------------------------------------------------------------- restriction, footnote 3
def test_restriction_can_only_lower():
    rng = np.random.default_rng(11)
    A = random_stochastic(rng, 6, 5, zero_prob=0.2)
    K = MarkovOperator(A, inputs=list("abcdef"))
    sub = ["a", "c", "f"]
    rows = [0, 2, 5]
    for eps in EPSILONS:
        restricted = dobrushin(K, eps, inputs=sub)
        assert restricted.gamma <= dobrushin(K, eps).gamma
        assert abs(restricted.gamma - brute_dobrushin(A[rows], eps)) <= CLOSE
        assert restricted.pair is None or set(restricted.pair) <= set(sub)
    assert doeblin(K, inputs=sub).gamma <= doeblin(K).gamma
    assert ultra_mixing(K, inputs=sub).gamma <= ultra_mixing(K).gamma
    one = dobrushin(K, inputs=["b"])
    assert one.gamma == 0.0 and one.pair is None and one.test_set == ()


def test_footnote3_infinite_epsilon():
    A = np.array([[0.5, 0.25, 0.25, 0.0], [0.0, 0.5, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]])
    res = dobrushin(MarkovOperator(A, outputs=list("wxyz")), math.inf)
    assert res.gamma == pytest.approx(0.5, abs=CLOSE)  # tolerance: rounded up by a few ulps
    assert res.gamma >= 0.5
    assert res.pair == (0, 1) and res.test_set == ("w",)
    assert "footnote 3" in res.source
    # shared supports: D_inf = 0 for every pair
    assert dobrushin(krr(3, 1.0), math.inf).gamma == 0.0


# ---------------------------------------------------------------- hypothesis properties
@settings(max_examples=30, deadline=None)
@given(stochastic_matrices(max_n=5, max_m=5),
       st.lists(st.floats(0.0, 10.0), min_size=2, max_size=6))
def test_curve_monotone_and_pointwise(A, eps_list):
    K = MarkovOperator(A)
    eps = np.sort(np.array(eps_list + [math.inf]))
    curve = dobrushin_curve(K, eps)
    assert np.all(np.diff(curve) <= 0)
    for e, v in zip(eps, curve):
        assert v <= dobrushin(K, e).gamma
        # brute_dobrushin is itself rounded up by (m + 5) u (divergences.hockey_stick): 1e-14 slack
        assert v >= brute_dobrushin(A, e) - 1e-14


@settings(max_examples=30, deadline=None)
@given(stochastic_matrices(min_n=3, max_n=5, min_m=3, max_m=5), st.integers(0, 2**32 - 1))
def test_dobrushin_submultiplicative(A, seed):
    n = A.shape[1]
    B = random_stochastic(np.random.default_rng(seed), n, int(np.random.default_rng(seed).integers(2, 6)))
    K1, K2 = MarkovOperator(A), MarkovOperator(B)
    assert dobrushin(K1 @ K2).gamma <= dobrushin(K1).gamma * dobrushin(K2).gamma + CLOSE


# ---------------------------------------------------------------- LP path
@pytest.mark.parametrize("seed", range(3), ids=[f"seed{s}" for s in range(3)])
def test_lp_matches_exact(seed):
    rng = np.random.default_rng(300 + seed)
    A = random_stochastic(rng, 4, 5, zero_prob=0.2 * seed)
    K = MarkovOperator(A)
    for eps in (0.0, 0.7, math.inf):
        ex, lp = dobrushin(K, eps), dobrushin(K, eps, method="lp")
        assert abs(ex.gamma - lp.gamma) <= LP_ATOL
        assert lp.method == "lp" and lp.certificate.upper >= lp.gamma - 1e-15
    both = dobrushin(K, 0.7, method="lp", all_pairs=True)
    assert isinstance(both.certificate, dict) and len(both.certificate) == 12
    assert abs(doeblin(K).gamma - doeblin(K, method="lp").gamma) <= LP_ATOL
    B = A + 0.1
    B /= B.sum(axis=1, keepdims=True)
    assert abs(ultra_mixing(MarkovOperator(B)).gamma - ultra_mixing(MarkovOperator(B), method="lp").gamma) <= LP_ATOL


# ---------------------------------------------------------------- validation
def test_validation_errors():
    K = krr(3, 1.0)
    # arrays and nested lists are coerced (issue 14); anything else names what is accepted
    for fn in (dobrushin, doeblin, ultra_mixing, ldp_guarantee, mixing_time):
        with pytest.raises(TypeError, match="MarkovOperator"):
            fn("K.csv")
    with pytest.raises(TypeError, match="MarkovOperator"):
        dobrushin_curve(None, [0.0])
    with pytest.raises(TypeError, match="MarkovOperator"):
        mixing_conditions(3.0, 0.5)
    for fn in (dobrushin, doeblin, ultra_mixing):
        with pytest.raises(InvalidParameterError, match="method must be one of"):
            fn(K, method="simplex")
    with pytest.raises(InvalidParameterError, match="epsilon must be >= 0"):
        dobrushin(K, -1.0)
    with pytest.raises(InvalidParameterError, match="epsilon must not be NaN"):
        dobrushin(K, math.nan)
    with pytest.raises(TypeError, match="all_pairs must be a bool"):
        dobrushin(K, all_pairs=1)
    with pytest.raises(InvalidParameterError, match="block_size must be >= 1"):
        dobrushin(K, block_size=0)
    with pytest.raises(InvalidParameterError, match="epsilons must be a non-empty 1-D array"):
        dobrushin_curve(K, [0.1, -1.0])
    with pytest.raises(InvalidParameterError, match="epsilons must be a non-empty 1-D array"):
        dobrushin_curve(K, [])
    with pytest.raises(TypeError, match="epsilons must be an array of numbers"):
        dobrushin_curve(K, ["a"])
    with pytest.raises(InvalidParameterError, match=r"gamma must be in \[0, 1\]"):
        mixing_conditions(K, 1.5)
    with pytest.raises(InvalidParameterError, match="epsilon must be >= 0"):
        mixing_conditions(K, 0.5, -0.1)
    with pytest.raises(KeyError, match="not an input"):
        dobrushin(K, inputs=[0, 7])
    with pytest.raises(IncompatibleOperatorsError, match="square operator"):
        mixing_time(MarkovOperator([[0.5, 0.5]]))
    with pytest.raises(InvalidParameterError, match=r"eps must be in \[0, 1\]"):
        mixing_time(K, 1.5)
    with pytest.raises(InvalidParameterError, match="max_steps must be >= 0"):
        mixing_time(K, max_steps=-1)
    g = ldp_guarantee(K)
    with pytest.raises(InvalidParameterError, match=r"delta must be in \[0, 1\]"):
        g.epsilon_at(2.0)
    with pytest.raises(InvalidParameterError, match=r"xtol must be in \(0, 1\)"):
        g.epsilon_at(0.1, xtol=0.0)
    with pytest.raises(InvalidParameterError, match="eps must be a non-empty 1-D array"):
        g.delta(-1.0)


def test_result_types_are_frozen():
    res = dobrushin(krr(3, 1.0))
    assert isinstance(res, DobrushinResult) and res.method == "exact" and "Definition 1(1)" in res.source
    with pytest.raises(AttributeError):
        res.gamma = 0.0  # type: ignore[misc]
    assert "Definition 1(2)" in dobrushin(krr(3, 1.0), 0.5).source
    assert "Definition 1(3)" in doeblin(krr(3, 1.0)).source
    assert "Definition 1(4)" in ultra_mixing(krr(3, 1.0)).source
