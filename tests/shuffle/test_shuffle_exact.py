"""The exact method of chainamp.shuffle against brute force in exact rational arithmetic and mpmath."""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from chainamp.shuffle import binary_rr_shuffle, krr_shuffle
from chainamp.shuffle import _binomial


def _eps_below(a: Fraction) -> float:
    """A float eps with ``e^eps <= a`` (so a certified delta(eps) must be >= H_a)."""
    e = math.log(float(a))
    return math.nextafter(math.nextafter(e - 1e-15 * (abs(e) + 1), -math.inf), -math.inf)


def _hockey(P: dict, Q: dict, a: Fraction) -> Fraction:
    return sum(max(P.get(h, 0) - a * Q.get(h, 0), Fraction(0)) for h in set(P) | set(Q))


def _shuffled(values, x: int, R) -> dict:
    """Distribution of the histogram (tuple of counts) of all reports, user 1 holding x, others ``values`` (read only:
    computed once per dataset and channel, the tests query it at many a)."""
    return _shuffled_of(tuple(values), x, tuple(tuple(row) for row in R))


@functools.lru_cache(maxsize=4096)
def _shuffled_of(values: tuple, x: int, R: tuple) -> dict:
    k = len(R[0])
    dist = {tuple([0] * k): Fraction(1)}
    for v in (x, *values):
        new: dict = {}
        for h, w in dist.items():
            for y in range(k):
                if R[v][y]:
                    g = list(h)
                    g[y] += 1
                    g = tuple(g)
                    new[g] = new.get(g, 0) + w * R[v][y]
        dist = new
    return dist


def _worst(n: int, R, a: Fraction, x0: int = 0, x1: int = 1) -> Fraction:
    """max over every dataset of the other n - 1 users (multisets suffice) and both orders of H_a."""
    return _worst_of(n, tuple(tuple(row) for row in R), a, x0, x1)


@functools.lru_cache(maxsize=4096)
def _worst_of(n: int, R: tuple, a: Fraction, x0: int, x1: int) -> Fraction:
    k = len(R)
    best = Fraction(0)
    for values in itertools.combinations_with_replacement(range(k), n - 1):
        P, Q = _shuffled_of(values, x0, R), _shuffled_of(values, x1, R)
        best = max(best, _hockey(P, Q, a), _hockey(Q, P, a))
    return best


A_VALUES = [Fraction(1), Fraction(11, 10), Fraction(3, 2), Fraction(2), Fraction(3), Fraction(7)]


@pytest.mark.parametrize("p", [0.75, 0.6, 0.9, 2 / 3], ids=lambda p: f"p={p:.3g}")
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6], ids=lambda n: f"n={n}")
def test_binary_rr_never_below_brute_force(n, p):
    fp = Fraction(p)
    R = [[fp, 1 - fp], [1 - fp, fp]]
    res = binary_rr_shuffle(n, p, progress=False)
    assert res.exact_all
    for a in A_VALUES:
        exact = _worst(n, R, a)
        eps = _eps_below(a)
        assert res.upper.delta(eps) >= exact
        # and tight: the certified curve at a exceeds the exact worst case by rounding only
        assert res.upper.delta(math.log(float(a))) <= float(exact) * (1 + 1e-6) + 1e-8
        assert res.lower.delta(math.nextafter(math.log(float(a)), math.inf) + 1e-12) <= float(exact) + 1e-12


def test_binary_rr_worst_dataset_is_not_always_all_zeros():
    """The claim "m = 0 is worst" is false in exact arithmetic: N = 2 others, p = 2/3, eps = 0 (m = 1 wins)."""
    R = [[Fraction(2, 3), Fraction(1, 3)], [Fraction(1, 3), Fraction(2, 3)]]
    allzero = max(_hockey(_shuffled((0, 0), 0, R), _shuffled((0, 0), 1, R), Fraction(1)),
                  _hockey(_shuffled((0, 0), 1, R), _shuffled((0, 0), 0, R), Fraction(1)))
    worst = _worst(3, R, Fraction(1))
    assert (allzero, worst) == (Fraction(4, 27), Fraction(5, 27))
    assert binary_rr_shuffle(3, 2 / 3, progress=False).upper.delta(0.0) >= 5 / 27


@pytest.mark.parametrize("k,eps0", [(3, 1.0), (4, 2.0), (4, 0.5)], ids=["k3-e1", "k4-e2", "k4-e0.5"])
@pytest.mark.parametrize("n", [2, 3, 4, pytest.param(5, marks=pytest.mark.slow),
                               pytest.param(6, marks=pytest.mark.slow)],
                         ids=lambda n: f"n={n}")
def test_krr_bound_brackets_brute_force(n, k, eps0):
    t = math.exp(-eps0)
    d = 1.0 / (1.0 + (k - 1) * t)
    o = (1.0 - d) / (k - 1)
    fd, fo = Fraction(d), Fraction(o)
    R = [[fd if x == y else fo for y in range(k)] for x in range(k)]
    res = krr_shuffle(n, k, d, o, progress=False)
    for a in A_VALUES:
        exact = _worst(n, R, a)
        assert res.upper.delta(_eps_below(a)) >= exact
        assert res.lower.delta(math.nextafter(math.log(float(a)), math.inf) + 1e-12) <= float(exact) + 1e-12


@pytest.mark.parametrize("tail", [0.9, 0.3, 1e-3], ids=["tail0.9", "tail0.3", "tail1e-3"])
@pytest.mark.parametrize("n", [4, 6], ids=lambda n: f"n={n}")
def test_coarse_windows_stay_sound(n, tail):
    """Windows that drop real mass (tail up to 0.9) still give a certified curve above brute force."""
    p = 0.9
    fp = Fraction(p)
    R = [[fp, 1 - fp], [1 - fp, fp]]
    res = binary_rr_shuffle(n, p, tail=tail, progress=False)
    for a in A_VALUES:
        worst = _worst(n, R, a)
        assert res.upper.delta(_eps_below(a)) >= worst
        # the lower's tests have their false-alarm side raised by the mass left out: still below the truth
        assert res.lower.delta(math.nextafter(math.log(float(a)), math.inf) + 1e-12) <= float(worst) + 1e-12


def test_tail_margin_is_needed():
    """The dropped mass is what keeps a component sound when the outcomes left out carry the divergence: P, Q on
    three outcomes, the last (ratio 4) dropped; at a = 3 the exact value 0.05 comes from it alone."""
    from chainamp.privacy import DominatingPair
    from chainamp.shuffle._pairs import roc_upper

    P, Q = [Fraction(5, 10), Fraction(3, 10), Fraction(2, 10)], [Fraction(5, 10), Fraction(45, 100), Fraction(5, 100)]
    exact = sum(max(x - 3 * y, Fraction(0)) for x, y in zip(P, Q))
    kept_p, kept_q = np.array([0.5, 0.3]), np.array([0.5, 0.45])
    eps = _eps_below(Fraction(3))
    with_margin = DominatingPair.from_roc(*roc_upper(kept_p, kept_q, 0.0, 0.2))
    without = DominatingPair.from_roc(*roc_upper(kept_p, kept_q, 0.0, 0.0))
    assert exact == Fraction(1, 20)
    assert with_margin.delta(eps) >= exact > without.delta(eps)


def test_binomial_pmf_error_budget_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    from scipy.stats import binom

    worst = 0.0
    for n, p in [(10**8, 0.0179862), (10**6, 0.880797), (999, 0.119), (10**8, 0.5)]:
        mu, sd = n * p, math.sqrt(n * p * (1 - p))
        for z in (-12, -5, 0, 3, 12):
            k = int(round(mu + z * sd))
            if not 0 <= k <= n:
                continue
            exact = mp.binomial(n, k) * mp.mpf(p) ** k * (1 - mp.mpf(p)) ** (n - k)
            worst = max(worst, float(abs(mp.mpf(float(binom.pmf(k, n, p))) / exact - 1)))
    assert worst < _binomial.PMF_RTOL / 20


def test_chernoff_window_bound_against_exact_tails():
    n, p = 400, 0.1
    lo, w, dropped = _binomial.binomial_window(n, p, 1e-12)
    fp = Fraction(p)
    pm = [math.comb(n, k) * fp**k * (1 - fp) ** (n - k) for k in range(n + 1)]
    outside = sum(pm[:lo]) + sum(pm[lo + w.size:])
    assert 0 < outside <= dropped <= 1e-12


# ---------------------------------------------------------------- interval components (reveal argument)
@pytest.mark.parametrize("coin_tail", [1e-20, 0.3, 0.05], ids=["no-coins", "tail0.3", "tail0.05"])
@pytest.mark.parametrize("p", [0.6, 0.75, 0.9], ids=lambda p: f"p={p}")
@pytest.mark.parametrize("n", [5, 7, 8], ids=lambda n: f"n={n}")
def test_interval_components_never_below_brute_force(n, p, coin_tail):
    """Every dataset but m = 0 covered by revealed intervals (no refinement), coins credited at a coarse tail
    (so ``c > 0`` at these small n): the certified curve is still above the exact worst case."""
    fp = Fraction(p)
    R = [[fp, 1 - fp], [1 - fp, fp]]
    res = binary_rr_shuffle(n, p, max_exact_all=0, min_exact=1, growth=10.0, coin_tail=coin_tail, progress=False)
    assert res.intervals and not res.exact_all and res.exact_datasets == (0,)
    for a in A_VALUES:
        assert res.upper.delta(_eps_below(a)) >= _worst(n, R, a)


def test_coin_floor_tail_is_needed():
    """The probability that fewer coins than credited are drawn is added to delta: without it the interval
    component of n = 3, p = 0.7 at tail 0.3 drops below the exact worst case (checked in exact arithmetic)."""
    from chainamp.shuffle import exact

    n, p = 3, 0.7
    fp = Fraction(p)
    R = [[fp, 1 - fp], [1 - fp, fp]]
    c, tau = exact._coin_floor(n - 1 - 0, 2 * (1 - p), 0.3)
    assert c > 0 and 0 < tau <= 0.3
    q = 1 - p
    P, Q, rel, dropped, _ = exact._component(n - 1, 0, n - 1, p, q, 1e-40, 0.3)
    from chainamp.privacy import DominatingPair
    from chainamp.shuffle._pairs import both_orders, roc_upper

    with_tau = DominatingPair.from_roc(*both_orders(roc_upper, P, Q, rel, dropped, monotone=True))
    without = DominatingPair.from_roc(*both_orders(roc_upper, P, Q, rel, dropped - tau, monotone=True))
    gaps = [(_worst(n, R, a), _eps_below(a)) for a in A_VALUES + [Fraction(21, 20)]]
    assert all(with_tau.delta(e) >= w for w, e in gaps)
    assert any(without.delta(e) < w for w, e in gaps)


@pytest.mark.parametrize("n,p", [(10**8, 0.0179862), (10**6, 0.880797), (5 * 10**7, 0.6224593312018546),
                                 (10**8, 0.5), (2000, 0.3)], ids=["1e8-q", "1e6-p", "5e7", "1e8-half", "2e3"])
def test_binomial_window_recurrence_within_budget(n, p):
    """Long windows are filled by the ratio recurrence from one Boost value: every mass checked against mpmath
    stays within PMF_RTOL (the budget the callers carry), at the window's ends and its mode."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    lo, w, _ = _binomial.binomial_window(n, p)
    assert w.size >= _binomial.RECURRENCE_MIN
    for j in sorted({0, 1, w.size // 5, w.size // 2, int(np.argmax(w)), w.size - 2, w.size - 1}):
        k = lo + j
        exact = mp.binomial(n, k) * mp.mpf(p) ** k * (1 - mp.mpf(p)) ** (n - k)
        assert abs(mp.mpf(float(w[j])) / exact - 1) <= _binomial.PMF_RTOL


def test_refinement_reaches_the_tolerance_within_budget_and_stays_sound_past_it():
    """n = 1e5, eps0 = 4: the refined certificate at the target is within 1e-6 of the exact datasets' epsilon;
    with a tiny budget the intervals are kept unsplit, the certificate is looser but never below the lower."""
    p = math.exp(4.0) / (1 + math.exp(4.0))
    full = binary_rr_shuffle(10**5, p, target_delta=1e-6, progress=False)
    assert full.upper.epsilon(1e-6) <= full.lower.epsilon(1e-6) * (1 + 1e-6)
    cheap = binary_rr_shuffle(10**5, p, target_delta=1e-6, budget=0, progress=False)
    assert len(cheap.intervals) < len(full.intervals)
    assert cheap.upper.epsilon(1e-6) >= full.upper.epsilon(1e-6) * (1 - 1e-12)
    for e in (0.0, 0.05, 0.1, 0.5):
        assert cheap.upper.delta(e) >= full.lower.delta(e)


@pytest.mark.parametrize("n,p,z", [(10**12, 0.3, 0.5), (10**12, 0.0179862, 2.0), (10**8, 0.5, 0.2),
                                   (10**15, 0.6, 1.0)], ids=["1e12-near", "1e12-q", "1e8-half", "1e15"])
def test_chernoff_exponent_never_above_exact_near_the_mean(n, p, z):
    """Near the mean at very large n the two KL terms cancel; the bound's exponent must still be at most the exact
    n KL (mpmath at 50 digits), so the log bound is never below the exact Chernoff bound."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    sd = math.sqrt(n * p * (1 - p))
    for k, upper in ((int(n * p + z * sd) + 1, True), (int(n * p - z * sd), False)):
        x = mp.mpf(k) / n
        exact = n * (x * mp.log(x / p) + (1 - x) * mp.log((1 - x) / (1 - mp.mpf(p))))
        assert _binomial.chernoff_log_tail(n, p, k, upper) >= -exact


@pytest.mark.parametrize("tail", [0.3, 0.05], ids=["tail0.3", "tail0.05"])
@pytest.mark.parametrize("n,k,eps0", [(5, 3, 1.0), (6, 4, 0.5), (6, 3, 2.0)], ids=["n5k3", "n6k4", "n6k3"])
def test_krr_lower_stays_below_its_dataset_with_coarse_windows(n, k, eps0, tail):
    """The k-RR lower is the profile of a view of one concrete dataset (every other user holds value 2): with
    windows that leave real mass out, its points' false-alarm side is raised by the mass left out, so the curve
    stays below that dataset's exact histogram profile (Fraction brute force)."""
    from chainamp.shuffle import krr

    t = math.exp(-eps0)
    d = 1.0 / (1.0 + (k - 1) * t)
    o = (1.0 - d) / (k - 1)
    fd, fo = Fraction(d), Fraction(o)
    R = [[fd if x == y else fo for y in range(k)] for x in range(k)]
    low = krr._krr_lower(n - 1, d, o, tail, 1e6)
    P, Q = _shuffled((2,) * (n - 1), 0, R), _shuffled((2,) * (n - 1), 1, R)
    for a in A_VALUES + [Fraction(21, 20), Fraction(6, 5)]:
        exact_h = max(_hockey(P, Q, a), _hockey(Q, P, a))
        assert low.delta(math.nextafter(math.log(float(a)), math.inf) + 1e-12) <= float(exact_h) + 1e-12
