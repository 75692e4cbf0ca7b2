"""Adversarial review of the shuffle numerics at scale: scipy's binomial functions against mpmath where the
code trusts them to SHUFFLE_SPECIAL_RTOL, the clone window's mass at n = 1e8, and independent
high-precision evaluations of the blanket and clone pairs with every term."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.stats as st

from chainamp._numerics import SHUFFLE_SPECIAL_RTOL
from chainamp.operators import SymmetricChannel
from chainamp.shuffle import blanket_delta, generic_delta
from chainamp.shuffle._clones import clone_pair_delta, clone_window


def _mp_pmf(k: int, n: int, p: float) -> mpmath.mpf:
    p = mpmath.mpf(p)
    return mpmath.exp(mpmath.loggamma(n + 1) - mpmath.loggamma(k + 1) - mpmath.loggamma(n - k + 1)
                      + k * mpmath.log(p) + (n - k) * mpmath.log1p(-p))


def _mp_tail(k: int, n: int, p: float, upper: bool) -> mpmath.mpf:
    """``P(X >= k)`` (upper) or ``P(X <= k)``, summing the pmf by its ratio recurrence until negligible."""
    pm = mpmath.mpf(p)
    t = s = _mp_pmf(k, n, p)
    i = k
    while (i < n) if upper else (i > 0):
        t = t * (n - i) / (i + 1) * pm / (1 - pm) if upper else t * i / (n - i + 1) * (1 - pm) / pm
        i = i + 1 if upper else i - 1
        s += t
        if t < s * mpmath.mpf(10) ** -22:
            break
    return s


# (n, p, k): the far tails the code sums or adds back, at the largest n and the extreme p it meets
POINTS = [(10**8, 1e-6, 10), (10**8, 1e-6, 150), (10**8, 1 - 1e-6, 99_999_900), (10**8, 0.5, 50_045_000),
          (10**8, math.exp(-10), 4_000), (10**8, math.exp(-0.01), 99_000_000), (10**7, 1e-7, 0),
          (10**6, 0.3, 297_000), (10**8, 2 / (math.exp(4.0) + 1), 3_540_000)]


@pytest.mark.parametrize("n,p,k", POINTS, ids=[f"n{n:.0e}-p{p:.3g}-k{k}" for n, p, k in POINTS])
def test_scipy_binomial_within_the_trusted_rtol(n, p, k):
    """Measured in review: at most 5e-9 relative on a sweep of n up to 1e8 (16297 random points and grids);
    scipy's cdf underflows to 0 only below about 1e-278. The tolerance 1e-6 keeps a factor 200."""
    mpmath.mp.dps = 30
    mean = n * p
    checks = [(float(st.binom.pmf(k, n, p)), _mp_pmf(k, n, p))]
    if k < mean:
        checks.append((float(st.binom.cdf(k, n, p)), _mp_tail(k, n, p, False)))
    else:
        checks.append((float(st.binom.sf(k, n, p)), _mp_tail(k + 1, n, p, True)))
    for got, ref in checks:
        assert ref > 1e-250
        assert abs(got - float(ref)) <= SHUFFLE_SPECIAL_RTOL / 100 * float(ref)


@pytest.mark.parametrize("s", [0.5, math.exp(-10), 1 - 1e-6, math.exp(-0.01)], ids=["half", "e-10", "near1", "e-0.01"])
def test_clone_window_holds_all_mass_at_1e8(s):
    c, pc, tail = clone_window(10**8 - 1, s)
    assert c.size < 200_000
    assert math.fsum(pc.tolist()) + tail >= 1.0


def _rr_blanket_exact(n: int, eps0: float, eps: float) -> mpmath.mpf:
    """Binary RR's blanket pair summed over every blanket size and histogram, in mpmath."""
    mpmath.mp.dps = 30
    E0 = mpmath.exp(mpmath.mpf(eps0))
    a = E0 / (E0 + 1)
    g, e = 2 * (1 - a), mpmath.exp(mpmath.mpf(eps))
    l0, l1 = 2 * (a - e * (1 - a)), 2 * ((1 - a) - e * a)
    N, tot, pb = n - 1, mpmath.mpf(0), (1 - g) ** (n - 1)
    for b in range(N + 1):
        if b:
            pb = pb * (N - b + 1) / b * g / (1 - g)
        m, w, acc = b + 1, mpmath.mpf(2) ** (-(b + 1)), mpmath.mpf(0)
        for h in range(m + 1):
            if h:
                w = w * (m - h + 1) / h
            v = h * l0 + (m - h) * l1
            if v > 0:
                acc += w * v
        tot += pb * acc / m
    return tot


@pytest.mark.parametrize("n,eps0", [(60, 1.0), (120, 3.0)], ids=["n60", "n120"])
def test_binary_rr_blanket_against_mpmath(n, eps0):
    """Measured in review at n = 1000 (eps0 0.5 and 4): above the mpmath value, within 1e-4 where delta
    is above 1e-9 (below 1e-14 the floor of the closed form shows)."""
    S = SymmetricChannel.from_epsilon(2, eps0)
    for eps in (0.0, 0.02, 0.2, 0.8 * eps0):
        exact = _rr_blanket_exact(n, eps0, eps)
        got = blanket_delta(S, n, [eps])[0]
        assert got >= exact
        if exact > 1e-9:
            assert got <= exact * (1 + 1e-3)


def _clone_pair_mp(N: int, s: float, w: float, eps: float) -> mpmath.mpf:
    mpmath.mp.dps = 30
    e, s, w = mpmath.exp(eps), mpmath.mpf(s), mpmath.mpf(w)
    tot = mpmath.mpf(0)
    pc = (1 - s) ** N
    for c in range(N + 1):
        if c:
            pc = pc * (N - c + 1) / c * s / (1 - s)
        Wprev, W, acc = mpmath.mpf(0), mpmath.mpf(2) ** (-c), mpmath.mpf(0)
        for a in range(c + 2):
            cur = W if a <= c else mpmath.mpf(0)
            P, Q = w * Wprev + (1 - w) * cur, (1 - w) * Wprev + w * cur
            if P > e * Q:
                acc += P - e * Q
            Wprev = cur
            if a < c:
                W = W * (c - a) / (a + 1)
        tot += pc * acc
    return tot


@pytest.mark.parametrize("N,eps0,eps", [(60, 2.0, 0.3), (60, 0.2, 0.01), (40, 6.0, 1.5), (60, 2.0, 0.0)],
                         ids=["mid", "small-eps0", "large-eps0", "eps0"])
def test_clone_pair_against_mpmath(N, eps0, eps):
    w = 1 / (1 + math.exp(-eps0))
    for s in (math.exp(-eps0), 2 / (math.exp(eps0) + 1)):
        exact = _clone_pair_mp(N, s, w, eps)
        got = clone_pair_delta(N, s * (1 - 1e-15), w * (1 + 1e-15), 1.0, np.array([eps]))[0]
        assert got >= exact
        assert got <= exact * (1 + 1e-4) + 1e-13


@pytest.mark.slow
def test_generic_tiny_and_huge_eps0_at_1e8():
    for eps0 in (0.01, 10.0):
        d = generic_delta(eps0, 10**8, sorted([0.0, 1e-6, 1e-3, 0.1, eps0 * 0.5, eps0 * 1.01]))
        assert np.all(np.diff(d) <= 0) and np.all((d >= 0) & (d <= 1))
