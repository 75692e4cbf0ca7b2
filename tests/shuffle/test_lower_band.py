"""The lower profile of randomized response read with a rounding band (a product chainamp forms, or rows that sum
to 1 only within ``row_sum_atol``): computed at the band's MOST private end (``Randomizer.lower_epsilon0``, rounded
down), never above the truth of the exact randomizer, while the certified upper keeps the least private end.

The exact randomizer is built in Fraction arithmetic (rows normalised, as chainamp reads a stored operator, then
multiplied); its shuffled profile by brute force. The entries are dyadic, so the float product is the exact one and
the band (``r`` about 2e-6 here) is pure pessimism: a lower computed at the band's least private end (the upper's
eps0, as before) exceeds the truth by about ``r`` relative, far above the lower's own rounding (1e-9 at most)."""

from __future__ import annotations

import itertools
import math
import sys
from fractions import Fraction as F
from pathlib import Path

import mpmath
import numpy as np
import pytest

from chainamp import MarkovOperator, amplify_shuffled
from chainamp.errors import InvalidParameterError
from chainamp.operators import ProductError
from chainamp.shuffle import api, binary_rr_shuffle, krr
from chainamp.shuffle._lowers import lower_delta
from chainamp.shuffle._rr_band import (_down, _exp_minus_up, _log_down, _most_private_end, lower_keep_probability,
                                       lower_krr_parameters, rr_epsilons)

sys.path.insert(0, str(Path(__file__).parent))
from brute_histograms import _convolve, _mp, shuffled_worst_delta  # noqa: E402
from test_margins_round5 import _lower_channels  # noqa: E402

#: a row sum 2^-20 above 1 (accepted with this row_sum_atol): the operator stands for its rows normalised
DEV, ATOL = 2.0**-20, 1e-5


def _krr_matrix(k: int, d: float, o: float) -> np.ndarray:
    A = np.full((k, k), o)
    np.fill_diagonal(A, d)
    return A


def _normalised(A: np.ndarray) -> list[list[F]]:
    return [[F(float(x)) / sum(F(float(y)) for y in row) for x in row] for row in A]


def _times(A: list[list[F]], B: list[list[F]]) -> list[list[F]]:
    n = len(A)
    return [[sum(A[i][m] * B[m][j] for m in range(n)) for j in range(n)] for i in range(n)]


def _case(k: int, form: str):
    """The randomizer as passed (one operator, or two steps chainamp multiplies), its exact Fraction matrix, and
    the users: binary RR (keep 3/4) or 3-RR (ratio 6), each row 2^-20 above 1."""
    A = _krr_matrix(k, 0.75 + DEV, 0.25 if k == 2 else 0.125)
    op = MarkovOperator(A, row_sum_atol=ATOL)
    exact = _normalised(A)
    if form == "product":
        return [op, op], _times(exact, exact), 4 if k == 2 else 3
    return op, exact, 4 if k == 2 else 3


def _dataset_delta(R: list[list[F]], n: int, eps: float, others: list[int]) -> mpmath.mpf:
    """The exact ``H_{e^eps}`` of the shuffled histograms of one dataset (x0 = 0 against x1 = 1, the others fixed)."""
    mpmath.mp.dps = 50
    base = {tuple([0] * len(R)): F(1)}
    for x in others:
        base = _convolve(base, R[x])
    P, Q = _convolve(base, R[0]), _convolve(base, R[1])
    e = mpmath.exp(mpmath.mpf(eps))
    return sum((v for h in set(P) | set(Q) if (v := _mp(P.get(h, 0)) - e * _mp(Q.get(h, 0))) > 0), mpmath.mpf(0))


def _truth(k: int, R, n: int):
    """The exact curve the lower must stay below: the worst case over every dataset of the other users (binary
    RR: :func:`shuffled_worst_delta`; k-RR: every one of the k^(n-1) datasets, the lower being the larger of two
    concrete datasets' profiles)."""
    if k == 2:
        return lambda eps: shuffled_worst_delta(R, n, eps)
    datasets = [list(c) for c in itertools.product(range(k), repeat=n - 1)]
    return lambda eps: max(_dataset_delta(R, n, eps, others) for others in datasets)


def _truth_epsilon(truth, delta: float, hi: float) -> float:
    """The exact curve's epsilon at delta, from below (bisection to 1e-12; the lower must not exceed it)."""
    lo = 0.0
    if truth(0.0) <= delta:
        return 0.0
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if truth(mid) > delta else (lo, mid)
    return lo


CASES = [(2, "single"), (2, "product"), (3, "single"), (3, "product")]


@pytest.mark.parametrize("k, form", CASES, ids=[f"k{k}-{f}" for k, f in CASES])
def test_lower_is_below_the_exact_randomizer(k, form):
    """The lower's delta at every eps of a grid, and its epsilon at two deltas, never above the exact randomizer's
    (in exact arithmetic). On the code before ``lower_epsilon0`` (the lower at the upper's eps0) every case FAILS:
    by 3.6e-4 relative (binary) and 4.8e-5 (3-RR) at some eps."""
    randomizer, R, n = _case(k, form)
    rz = api.read_randomizer(randomizer)
    ratio = R[0][0] / R[0][1]
    assert rz.kind == "rr" and rz.lower_epsilon0 < math.log(ratio) < rz.epsilon0  # a real band
    assert mpmath.exp(mpmath.mpf(rz.lower_epsilon0)) <= _mp(ratio)
    truth = _truth(k, R, n)
    for delta in (1e-3, 0.05):
        rep = amplify_shuffled(randomizer, n, delta=delta, method="exact", progress=False)
        assert rep.lower_epsilon <= _truth_epsilon(truth, delta, rz.epsilon0 + 1.0) <= rep.epsilon
    for eps in np.linspace(0.0, 2.5, 26):
        assert mpmath.mpf(float(rep.lower.delta(eps))) <= truth(eps), eps
        assert float(rep.profile.delta(eps)) >= truth(eps), eps  # the upper, unchanged, stays above


@pytest.mark.parametrize("n, skipped", [(3, False), (10**5, True)], ids=["exact-computed", "exact-skipped"])
def test_auto_report_keeps_the_lower_at_the_private_end(n, skipped):
    """"auto" on k-RR: whether the exact method runs (its lower) or is skipped (the lower computed on its own), the
    report's lower is the one at ``lower_epsilon0``, below the one at the upper's eps0 (strictly somewhere). Here a
    3-RR product whose rows sum to 1 within the default tolerance (2^-31 over), and at n = 1e5 4-RR, where the
    exact method is skipped."""
    from chainamp import mechanisms

    if skipped:
        randomizer = mechanisms.randomized_response(4, 2.0)
    else:
        op = MarkovOperator(_krr_matrix(3, 0.75 + 2.0**-31, 0.125))
        randomizer = [op, op]
    rep = amplify_shuffled(randomizer, n, delta=1e-3, progress=False)
    assert isinstance(rep.methods["exact"], str) == skipped
    rz = api.read_randomizer(randomizer)
    grid = np.linspace(0.0, 1.5 if skipped else 2.5, 31)
    new = lower_delta(krr.krr_lower_profile(n, *lower_krr_parameters(rz.k, rz.lower_epsilon0))[0])(grid)
    old = lower_delta(krr.krr_lower_profile(n, *krr.krr_parameters(rz.k, rz.epsilon0))[0])(grid)
    assert np.array_equal(rep.lower.delta(grid), new)
    assert np.all(new <= old * (1 + 1e-12)) and np.any(new < old)  # (two views computed apart: ulps of noise)


def test_upper_unchanged_by_the_lower_end():
    """The certificate is computed at the least private end as before: the same pair with or without ``lower_p``."""
    a = binary_rr_shuffle(30, 0.8, progress=False)
    b = binary_rr_shuffle(30, 0.8, lower_p=0.79, progress=False)
    assert np.array_equal(a.upper.p, b.upper.p) and np.array_equal(a.upper.q, b.upper.q)
    assert all(b.lower.delta(e) < a.lower.delta(e) for e in (0.0, 0.5, 1.0))


@pytest.mark.parametrize("bad", [0.4, 0.81, math.nan], ids=["below-half", "above-p", "nan"])
def test_lower_p_validation(bad):
    with pytest.raises(InvalidParameterError, match=r"lower_p must be in \[1/2, p"):
        binary_rr_shuffle(10, 0.8, lower_p=bad)


# ---------------------------------------------------------------- 2049-ary RR: the band exceeds the lower's push
#: 2049-RR with o = 2^-12 (dyadic) squared by chainamp (``[A, A]``): the stored product's entries (the exact ones:
#: dyadic) and the error model ``multiply`` returns, r = 2.28e-13 (test_a_2049_product_reads_this_band checks both)
K2049, O2049 = 2049, F(1, 2**12)
A2049 = 1 - (K2049 - 1) * O2049
D_PRODUCT, O_PRODUCT = A2049**2 + (K2049 - 1) * O2049**2, 2 * A2049 * O2049 + (K2049 - 2) * O2049**2
ERR2049 = ProductError(rel=2.2759572004815724e-13, min_positive=0.0003661513328552246)


@pytest.mark.parametrize("budget", [3e5, 1.0], ids=["view-T-h", "view-difference"])
def test_krr_2049_lower_is_a_garbling_at_the_band_corner(monkeypatch, budget):
    """A stored 2049-RR read with that product's error model, whose exact entries sit at the band's most private
    corner (``d* = d (1 - r)``, ``o* = o (1 + r)``, rows summing exactly to 1; the model allows it): the lower's
    channels (both views) have ``d' / o' <= d* / o*``, a garbling of the exact randomizer, so below its profile.
    The upper's end is ``4 r = 9.10e-13`` above the truth on the ratio (``d`` near 1, so on o too), more than the
    2^-40 = 9.09e-13 the k-RR lower pushes its o by: read from there (the code before ``lower_epsilon0``), the
    lower's channel is LESS private than the exact randomizer, 1.3e-14 relative on the ratio (checked below: that
    chain fails the same assertion)."""
    o_star = F(1, 2**24)
    d_star = 1 - (K2049 - 1) * o_star
    r0 = F(ERR2049.rel) * (1 - F(1, 10**4))
    d, o = F(_down(d_star / (1 - r0))), F(api._up(o_star / (1 + r0)))  # stored floats, rounded into the band
    assert max(abs(d_star / d - 1), abs(o_star / o - 1)) <= F(ERR2049.rel)  # the truth is in the band
    assert F(4) * F(ERR2049.rel) > F(2) ** -40
    up, low = rr_epsilons(d, o, ERR2049)
    for eps0, private in ((low, True), (up, False)):
        _, dd, oo = (lower_krr_parameters(K2049, eps0) if private else krr.krr_parameters(K2049, eps0))
        channels = _lower_channels(monkeypatch, 40, K2049, dd, oo, budget)
        assert channels
        assert all((d_used / o_used <= d_star / o_star) == private for d_used, o_used in channels)


@pytest.mark.slow
def test_a_2049_product_reads_this_band():
    """The dense product [A, A] (2.3 s): its stored entries are the exact ones and its error model the one above;
    the randomizer's lower end is the one :func:`rr_epsilons` gives."""
    A = _krr_matrix(K2049, float(A2049), float(O2049))
    rz = api.read_randomizer([A, A])
    product, err = api._compose([A, A])
    assert api._rr_parameters(product) == (K2049, D_PRODUCT, O_PRODUCT) and err == ERR2049
    assert (rz.epsilon0, rz.lower_epsilon0) == rr_epsilons(D_PRODUCT, O_PRODUCT, ERR2049)


# ---------------------------------------------------------------- the band's ends and their roundings
def test_most_private_end_of_the_error_model():
    """``true = stored (1 +- rel) +- absolute``: d down and o up by both; a stored zero stays zero only when the
    support is exact (else the truth may be up to ``absolute``); an exact model leaves (d, o) as they are."""
    d, o = F(3, 4), F(1, 4)
    assert _most_private_end(d, o, ProductError()) == (d, o)
    assert _most_private_end(d, o, ProductError(rel=0.5, absolute=0.125)) == (F(1, 4), F(1, 2))
    assert _most_private_end(d, F(0), ProductError(rel=0.1, absolute=1e-3)) == (d * (1 - F(0.1)) - F(1e-3), F(0))
    zero = _most_private_end(d, F(0), ProductError(rel=0.1, absolute=1e-3, support_exact=False))
    assert zero[1] == F(1e-3)
    up, low = rr_epsilons(d, F(0), ProductError(rel=0.1, absolute=1e-3, support_exact=False))
    assert up == math.inf and 0 < low < math.log(float((d * (1 - F(0.1)) - F(1e-3)) / F(1e-3)))


@pytest.mark.parametrize("x", [F(3), F(10**400, 7), F(2**80 + 1, 2**80), F(1)], ids=["3", "huge", "near-1", "1"])
def test_log_down_is_below_the_exact_log(x):
    mpmath.mp.dps = 60
    v = _log_down(x)
    assert 0.0 <= v and mpmath.mpf(v) <= mpmath.log(_mp(x))


def test_log_down_margin_is_needed():
    """``_log_down``'s ``4e-16 (|v| + 1)``: the plain ``log`` of the ratio rounded down is above the exact log on some
    of these ratios (rounded to nearest); with the margin every one is below."""
    mpmath.mp.dps = 60
    rng = np.random.default_rng(4)
    above = 0
    for _ in range(300):
        x = F(float(rng.uniform(1.0, 1e6)))
        exact_log = mpmath.log(_mp(x))
        above += mpmath.mpf(math.log(float(x))) > exact_log
        assert mpmath.mpf(_log_down(x)) <= exact_log
    assert above > 0


def test_parameters_at_the_lower_end_are_at_least_as_private():
    """k-RR's o and binary RR's keep probability at ``eps0`` rounded the private way (``d / o <= e^eps0``, ``p <= 1 /
    (1 + e^-eps0)``, exactly); ``e^-eps0`` rounded up (``_exp_minus_up``) is above the exact one where ``math.exp``
    alone is below it."""
    mpmath.mp.dps = 60
    rng = np.random.default_rng(9)
    below = 0
    for eps0 in [float(x) for x in rng.uniform(1e-3, 40.0, 200)] + [700.0, 745.5, 800.0, 1e5]:  # (past 745 e^-eps0
        # underflows: capped at 700, more private)
        e = mpmath.exp(mpmath.mpf(eps0))
        below += mpmath.mpf(math.exp(-eps0)) < 1 / e
        assert _mp(_exp_minus_up(eps0)) >= 1 / e
        for k in (3, 64, 2049):  # o at least the exact one (the lower's channel is d = 1 - (k - 1) o from it)
            _, d, o = lower_krr_parameters(k, eps0)
            assert _mp(F(o)) >= 1 / (e + k - 1) and _mp((1 - (k - 1) * F(o)) / F(o)) <= e and _mp(F(d) / F(o)) <= e
        p = lower_keep_probability(eps0)
        assert 0.5 <= p and _mp(F(p)) <= e / (1 + e)
    assert below > 0
    assert lower_keep_probability(math.inf) == 1.0 and lower_keep_probability(0.0) == 0.5
    assert lower_krr_parameters(5, math.inf) == (5, 1.0, 0.0) and lower_krr_parameters(5, 0.0) == (5, 0.2, 0.2)


def test_noiseless_upper_end_keeps_a_noisy_lower_end():
    """p = 1 at the upper's end (a stored zero that may hide a tiny true off-diagonal when the support is not
    exact): the certificate is delta = 1, the lower is computed at lower_p, not copied from the upper."""
    res = binary_rr_shuffle(6, 1.0, lower_p=0.9, progress=False)
    ref = binary_rr_shuffle(6, 0.9, progress=False)
    assert res.upper.delta(3.0) == pytest.approx(1.0)
    assert np.array_equal(res.lower.p, ref.lower.p) and res.lower.delta(0.5) < 0.9
