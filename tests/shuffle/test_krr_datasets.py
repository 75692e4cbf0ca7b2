"""The exact profiles of two concrete datasets of shuffled k-RR (chainamp.shuffle._krr_datasets), the lower bound
krr_shuffle builds from them, against brute force in exact rational arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp.shuffle import _krr_datasets as kd
from chainamp.shuffle import krr
from chainamp.shuffle._lowers import lower_delta


def _hist_law(values: list[int], k: int, d: Fraction, o: Fraction) -> dict:
    """The exact law of the histogram of the users' k-RR reports (value i reports i with d, any other with o)."""
    law = {tuple([0] * k): Fraction(1)}
    for x in values:
        new: dict = {}
        for h, w in law.items():
            for y in range(k):
                hh = list(h)
                hh[y] += 1
                new[tuple(hh)] = new.get(tuple(hh), 0) + w * (d if y == x else o)
        law = new
    return law


def _dataset_delta(others: list[int], k: int, d: Fraction, o: Fraction, a: Fraction, orders: int = 2) -> Fraction:
    """H_a of the full histogram when the changed user holds value 0 or 1 and the others ``others`` (both orders)."""
    P, Q = _hist_law([0] + others, k, d, o), _hist_law([1] + others, k, d, o)
    keys = set(P) | set(Q)
    f = sum(max(P.get(h, 0) - a * Q.get(h, 0), Fraction(0)) for h in keys)
    g = sum(max(Q.get(h, 0) - a * P.get(h, 0), Fraction(0)) for h in keys)
    return max(f, g) if orders == 2 else f


def _support(s: np.ndarray, b: np.ndarray, a: Fraction) -> Fraction:
    """``max(0, max_k b_k - a s_k)`` of the points, exactly."""
    return max([Fraction(0)] + [Fraction(float(y)) - a * Fraction(float(x)) for x, y in zip(s, b)])


def _off(k: int, eps0: float) -> float:
    t = math.exp(-eps0)
    return t / (1.0 + (k - 1) * t)


SLOPES = [Fraction(1), Fraction(6, 5), Fraction(2), Fraction(4), Fraction(12)]
SMALL = [(2, 3, 1.0), (3, 3, 2.5), (4, 4, 1.0), (5, 4, 3.0), (6, 3, 0.7), (4, 5, 2.0), (3, 5, 4.0)]


@pytest.mark.parametrize("dataset", ["third", "first"])
@pytest.mark.parametrize("n,k,eps0", SMALL, ids=[f"n{n}k{k}e{e:g}" for n, k, e in SMALL])
def test_dataset_profile_is_its_brute_force_profile(dataset, n, k, eps0):
    """Every slope's value of the dataset's points is never above the brute-force profile of that dataset (all
    histograms enumerated in Fractions, the full k-value histogram: lumping the other values loses nothing) and
    within the masses' error budget of it: the closed forms are exact, only the safe rounding moves them."""
    o = _off(k, eps0)
    d_ex, o_ex = kd.exact_channel(k, o)
    if dataset == "third":
        s, b = kd.all_third_lower(n, k, o, 1e-15, 1e6)
        others = [2] * (n - 1)
    else:
        s, b = kd.all_first_lower(n, k, o, 1e-15, 1e6)
        others = [0] * (n - 1)
    for a in SLOPES:
        exact = _dataset_delta(others, k, d_ex, o_ex, a)
        got = _support(s, b, a)
        assert got <= exact
        # each test's sides move by the masses' error budget (three binomial factors at PMF_RTOL = 1e-9 each, the
        # rest a few ulps): within 4e-9 (1 + a), absolute; a wrong closed form moves it by percents
        assert got >= exact - Fraction(4, 10**9) * (1 + a), float(exact - got)


SLOPED = [(3, 4, 1.0), (5, 4, 2.5), (6, 5, 0.8), (4, 6, 3.0)]


@pytest.mark.parametrize("n,k,eps0", SLOPED, ids=[f"n{n}k{k}e{e:g}" for n, k, e in SLOPED])
def test_optimal_tests_at_slopes_are_exact_there(n, k, eps0):
    """The third-value dataset computed at a grid of slopes (the optimal test per pair (T, h0): hv above a threshold)
    is never above the brute-force profile, and equals it (within the masses' error budget) at every slope of its
    grid and at the refined target."""
    o = _off(k, eps0)
    d_ex, o_ex = kd.exact_channel(k, o)
    s, b = kd.all_third_at_slopes(n, k, o, 1e-15, 1e6, target=1e-3, slopes=9)
    rd = float(d_ex / o_ex)
    others = [2] * (n - 1)
    for eps in list(np.linspace(0.0, math.log(rd), 9)) + [0.37]:
        a = Fraction(math.exp(eps))
        exact = _dataset_delta(others, k, d_ex, o_ex, a, orders=1)  # symmetric: one order is the profile
        got = _support(s, b, a)
        assert got <= exact
        if eps != 0.37:  # a grid slope: its optimal test is among the points
            assert got >= exact - Fraction(4, 10**9) * (1 + a), float(exact - got)


@pytest.mark.parametrize("k,eps0", [(4, 2.0), (10, 4.0)], ids=["k4e2", "k10e4"])
def test_slopes_match_the_full_histogram_at_300_users(k, eps0):
    """At 300 users both computations of the third-value dataset run: at each grid slope the optimal test's value
    equals the full enumeration's (whose prefixes include that test), within the rounding budgets."""
    o = _off(k, eps0)
    full = kd.all_third_lower(300, k, o, 1e-15, 1e8)
    sl = kd.all_third_at_slopes(300, k, o, 1e-15, 1e8, target=1e-6)
    rd = float(kd.exact_channel(k, o)[0] / kd.exact_channel(k, o)[1])
    for eps in np.linspace(0.0, math.log(rd), 32)[:-1]:
        a = math.exp(eps)
        f = float(np.max(full[1] - a * full[0]))
        g = float(np.max(sl[1] - a * sl[0]))
        assert abs(f - g) <= 8e-9 * (1 + a) + 1e-15
    e_full, e_sl = kd.points_epsilon(*full, 1e-6), kd.points_epsilon(*sl, 1e-6)
    assert abs(e_full - e_sl) <= 1e-6 * e_full


@pytest.mark.parametrize("n,k,eps0", [(4, 4, 1.5), (5, 3, 2.0)], ids=["n4k4", "n5k3"])
def test_both_datasets_are_below_the_worst_case_and_the_envelope_is_their_maximum(n, k, eps0):
    """The lower of krr_shuffle (no LOWER_O_PUSH here: the exact channel of the float o) is the larger of the two
    datasets at each slope, and below the worst case over every dataset of the others (brute force)."""
    import itertools

    o = _off(k, eps0)
    d_ex, o_ex = kd.exact_channel(k, o)
    third = kd.all_third_lower(n, k, o, 1e-15, 1e6)
    first = kd.all_first_lower(n, k, o, 1e-15, 1e6)
    s, b = np.concatenate((third[0], first[0])), np.concatenate((third[1], first[1]))
    datasets = {tuple(sorted(x)) for x in itertools.product(range(k), repeat=n - 1)}
    for a in SLOPES[:4]:
        worst = max(_dataset_delta(list(x), k, d_ex, o_ex, a) for x in datasets)
        both = _support(s, b, a)
        assert both == max(_support(*third, a), _support(*first, a))
        assert both <= worst


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 5), k=st.integers(3, 5), eps0=st.floats(0.05, 6.0), a=st.fractions(1, 50))
def test_every_dataset_lower_stays_below_brute_force(n, k, eps0, a):
    """Property: at any slope, each of the three computations (the two full histograms, the third-value dataset at
    slopes) is never above its dataset's brute-force profile."""
    o = _off(k, eps0)
    d_ex, o_ex = kd.exact_channel(k, o)
    third = _dataset_delta([2] * (n - 1), k, d_ex, o_ex, a)
    assert _support(*kd.all_third_lower(n, k, o, 1e-15, 1e6), a) <= third
    assert _support(*kd.all_first_lower(n, k, o, 1e-15, 1e6), a) <= _dataset_delta([0] * (n - 1), k, d_ex, o_ex, a)
    if k > 3:
        assert _support(*kd.all_third_at_slopes(n, k, o, 1e-15, 1e6, target=1e-4, slopes=5), a) <= third


GRID = [(k, e) for k in (3, 4, 10, 100) for e in (1.0, 3.0, 5.0, 6.0)]


@pytest.mark.parametrize("k,eps0", GRID, ids=[f"k{k}e{e:g}" for k, e in GRID])
@pytest.mark.parametrize("n", [1000, pytest.param(10**4, marks=pytest.mark.slow)], ids=lambda n: f"n{n}")
def test_lower_never_above_the_certified_curve(k, eps0, n):
    """At n = 1000 (and 1e4, slow) the lower (evaluated from below) never exceeds the certified two-output curve."""
    _, d, o = krr.krr_parameters(k, eps0)
    res = krr.krr_shuffle(n, k, d, o, target_delta=1e-6, progress=False)
    eps = np.linspace(0.0, eps0, 60)
    assert np.all(lower_delta(res.lower)(eps) <= res.curve(eps))


IMPROVED = [(10, 5.0, 3.55), (4, 6.0, 5.99), (3, 5.0, 4.79), (100, 5.0, 1.69)]


@pytest.mark.parametrize("k,eps0,floor", IMPROVED, ids=[f"k{k}e{e:g}" for k, e, _ in IMPROVED])
def test_report_lower_epsilon_improves_at_1000_users(k, eps0, floor):
    """The measured cases: the view (h_x0 + h_x1, h_x0) of the third-value dataset gave 3.483, 5.600, 4.589,
    1.682; the full histograms of the two datasets give at least ``floor``, and the report names the larger one."""
    from chainamp import amplify_shuffled, mechanisms

    rep = amplify_shuffled(mechanisms.randomized_response(k, eps0), 1000, progress=False)
    assert floor <= rep.lower_epsilon <= rep.epsilon
    assert "the larger at delta = 1e-06: (" in rep.lower_dataset
    which = "(b)" if (k, eps0) in [(4, 6.0), (3, 5.0)] else "(a)"
    assert rep.lower_dataset.endswith(which)


def test_parameter_rounding_term_at_1e8_against_mpmath():
    """``binomial_exact_rational``'s parameter term: Bin(m, pf) at the float pf differs from Bin(m, p) at the exact
    rational p by the factor ``(pf/p)^j ((1 - pf)/(1 - p))^(m - j)`` (the coefficients cancel), evaluated at 60
    digits at both ends of the window; p is built half an ulp from its float (the rounding edge). The term bounds
    that change and is within a factor 2 of it (so removing it, or halving it, would leave the change uncovered
    once Boost's own error is counted separately)."""
    import mpmath

    m = 10**8
    pf = 0.3
    p = Fraction(pf) + Fraction(math.ulp(pf)) * Fraction(499, 1000)  # rounds to pf: the float nearest p
    assert float(p) == pf
    lo, w, _, rel = kd.binomial_exact_rational(m, p, 1e-15)
    hi = lo + w.size - 1
    with mpmath.workdps(60):
        mp_p, mp_f = mpmath.mpf(p.numerator) / p.denominator, mpmath.mpf(pf)
        change = max(abs(mpmath.expm1(j * mpmath.log(mp_f / mp_p) + (m - j) * mpmath.log((1 - mp_f) / (1 - mp_p))))
                     for j in (lo, hi))
    term = rel - 1e-9  # the rest is Boost's PMF_RTOL
    assert change <= term
    assert change >= term / 2


def _third_points_against_exact_tests(n: int, k: int, eps0: float) -> tuple[int, int]:
    """``(checked, outside)``: each grid point of :func:`kd.all_third_at_slopes` (no thinning, no target) against the
    EXACT masses of the test it stands for (the set where ``P(h | x0) > a P(h | x1)``, in Fractions): how many
    points have a detection side above the exact one or a false-alarm side below it."""
    o = _off(k, eps0)
    d, oo = kd.exact_channel(k, o)
    s, b = kd.all_third_at_slopes(n, k, o, 1e-300, 1e6, target=None, slopes=12)
    P, Q = _hist_law([0] + [2] * (n - 1), k, d, oo), _hist_law([1] + [2] * (n - 1), k, d, oo)
    outside = 0
    grid = np.linspace(0.0, math.log(float(d / oo)), 12)
    assert s.size == grid.size + 1
    for eps, x, y in zip(grid[:-1], s[1:], b[1:]):  # (the last slope, e^eps0 rounded, is a near tie: left out)
        a = Fraction(math.exp(eps))
        S = [h for h in P if P[h] - a * Q.get(h, 0) > 0]
        outside += Fraction(float(y)) > sum(P[h] for h in S) or Fraction(float(x)) < sum(Q.get(h, 0) for h in S)
    return grid.size - 1, outside


EDGE = [(4, 4, 1.3), (5, 5, 0.9), (6, 5, 2.1), (6, 4, 0.6)]


def test_lower_rounding_is_needed_on_exact_tests(monkeypatch):
    """Every point of the third-value dataset at slopes is achievable: no larger detection side and no smaller
    false-alarm side than its test's EXACT masses. The float masses fall on either side of the exact ones (Boost's
    rounding, the parameters' rounding, the brackets', the sums'), so with the safety rounding removed (every
    relative error budget composed to 0, leaving the points' one-ulp outward rounding) points lie outside in three
    of the four cases: the edge."""
    monkeypatch.setattr(kd, "thin", lambda s, b: (s, b))  # keep one point per grid slope, in order
    assert all(_third_points_against_exact_tests(*case)[1] == 0 for case in EDGE)
    monkeypatch.setattr(kd, "_compose", lambda a, b: 0.0)
    assert sum(_third_points_against_exact_tests(*case)[1] > 0 for case in EDGE) >= 3


@pytest.mark.parametrize("k,eps0", [(3, 400.0), (5, 690.0), (4, 30.0)], ids=["k3e400", "k5e690", "k4e30"])
def test_lower_reaches_large_local_epsilons(k, eps0):
    """At large eps0 the truth is near eps0 (every other user at x0: all n reports at x0 is e^eps0 times likelier
    when the changed user holds x0). The lower reaches it: no window tail is charged on its false-alarm side (a
    charge of 2e-15 caps the epsilon at log(1 / 2e-15) = 33.8 at delta = 1e-6, near where the view
    (h_x0 + h_x1, h_x0) stopped: 31.4 at eps0 = 400 and 690), and the informative masses (about e^-690 = 1e-300,
    still normal floats) are kept."""
    from chainamp import amplify_shuffled, mechanisms

    rep = amplify_shuffled(mechanisms.randomized_response(k, eps0), 300, progress=False)
    # the truth: the outcome "all n reports at x0" has likelihood ratio d/o = e^eps0 and mass ~1, so delta(eps) is
    # about 1 - e^(eps - eps0): 1e-6 at eps0 - 1e-6
    assert eps0 - 2e-6 <= rep.lower_epsilon <= rep.epsilon
