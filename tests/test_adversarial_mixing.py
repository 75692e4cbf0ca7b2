"""Adversarial soundness tests: mixing coefficients and divergences must never be reported
BELOW the exact value of the stored floats.

References are exact: ``fractions.Fraction`` of the stored doubles where no exponential
is involved, mpmath at 60+ digits otherwise, with ``e^eps`` rounded UP by a relative
1e-45 (so the reference is a rigorous lower bound on the exact value: a reported value
below it is a proven under-report). Coefficients are capped at 1 by design, so the
reference is ``min(exact, 1)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp

import chainamp.lp as lpmod
from chainamp import MarkovOperator
from chainamp.chain import stationary_distribution
from chainamp.divergences import hockey_stick, hockey_stick_curve, renyi_divergence
from chainamp.errors import SolverError
from chainamp.mixing import dobrushin, dobrushin_curve, doeblin, mixing_time, ultra_mixing

mpmath.mp.dps = 60
TINY = 2.0**-1074


# ----------------------------------------------------------------- exact references
def _c_up(eps: float) -> mpmath.mpf:
    """``e^eps`` rounded up (60 digits, padded by a relative 1e-45)."""
    return mpmath.exp(mpmath.mpf(eps)) * (1 + mpmath.mpf(10) ** -45)


def exact_hockey_low(p, q, eps: float):
    """Rigorous lower bound on ``D_{e^eps}(p || q)`` for the stored doubles p, q (exact at eps 0, inf)."""
    if eps == 0.0:
        return sum((Fraction(a) - Fraction(b) for a, b in zip(p, q) if a > b), Fraction(0))
    if math.isinf(eps):
        return sum((Fraction(a) for a, b in zip(p, q) if b == 0.0 and a > 0.0), Fraction(0))
    c = _c_up(eps)
    total = mpmath.mpf(0)
    for a, b in zip(p, q):
        d = mpmath.mpf(float(a)) - c * mpmath.mpf(float(b))
        if d > 0:
            total += d
    return total * (1 - mpmath.mpf(10) ** -50)


def _le(reported: float, exact) -> bool:
    """``min(exact, 1) <= reported`` with exact a Fraction or an mpf."""
    ref = min(exact, 1) if not isinstance(exact, Fraction) else min(exact, Fraction(1))
    return Fraction(reported) >= ref if isinstance(ref, Fraction) else mpmath.mpf(reported) >= ref


def exact_renyi(p, q, alpha: float):
    """Renyi divergence of the stored doubles at 120 digits (alpha near 1 needs the extra digits)."""
    with mpmath.workdps(120):
        P = [mpmath.mpf(float(x)) for x in p]
        Q = [mpmath.mpf(float(y)) for y in q]
        if alpha == 1.0:
            return sum(x * mpmath.log(x / y) for x, y in zip(P, Q) if x > 0)
        a = mpmath.mpf(alpha)
        s = sum(x**a * y ** (1 - a) for x, y in zip(P, Q) if x > 0 and y > 0)
        return mpmath.log(s) / (a - 1)


# ----------------------------------------------------------------- divergences (found bugs)
def _one_ulp_pair(x: float):
    hi = math.nextafter(x, 1.0)
    return [hi, 1.0 - hi], [x, 1.0 - x]


@pytest.mark.parametrize("x", [0.1, 0.123456, 0.3, 0.49], ids=["0.1", "0.123456", "0.3", "0.49"])
def test_hockey_stick_curve_one_ulp_apart_at_eps0(x):
    # Bug (fixed): both computed log-ratios were 0, so the outcome with p > q was left out of the
    # prefix sum P_k, the padding was relative to P_k = 0, and the curve returned exactly 0.
    p, q = _one_ulp_pair(x)
    exact = exact_hockey_low(p, q, 0.0)
    assert exact > 0
    assert _le(float(hockey_stick_curve(p, q, [0.0])[0]), exact)
    assert _le(hockey_stick(p, q, 0.0), exact)


def test_hockey_stick_curve_ratio_just_above_e_eps():
    # q one ulp below 0.5 / e: the ratio p/q exceeds e^1 by ~1e-16 but the computed log-ratio is
    # <= 1.0, so the old curve dropped the only active outcome and returned 0 (exact 5.9e-17).
    q0 = 0.5 / math.e
    q1 = math.nextafter(q0, 0.0)
    p, q = [0.5, 0.5], [q1, 1.0 - q1]
    exact = exact_hockey_low(p, q, 1.0)
    assert exact > 0
    assert _le(float(hockey_stick_curve(p, q, [1.0])[0]), exact)
    assert _le(hockey_stick(p, q, 1.0), exact)


def test_hockey_stick_subnormal_products():
    # Bug (fixed): e^eps q_y rounded in the subnormal range (1.6 * 2**-1074 -> 2 * 2**-1074) loses
    # 0.4 * 2**-1074 per term; four such terms sum to 1.6 * 2**-1074 > the old 2**-1074 result.
    p = [2 * TINY] * 4 + [0.5, 0.5]
    q = [TINY] * 4 + [0.5, 0.5]
    eps = math.log(1.6)
    exact = exact_hockey_low(p, q, eps)
    assert exact > TINY
    assert _le(hockey_stick(p, q, eps), exact)
    assert _le(float(hockey_stick_curve(p, q, [eps])[0]), exact)


@pytest.mark.parametrize("alpha", [1 + 1e-8, 1 + 1e-6, 1 - 1e-8, 1 - 1e-6, 1.001],
                         ids=["1+1e-8", "1+1e-6", "1-1e-8", "1-1e-6", "1.001"])
def test_renyi_alpha_near_one_not_under_reported(alpha):
    # Bug (fixed): log(sum p^a q^(1-a)) is ~(a - 1) R, its absolute rounding (~u) was divided by
    # a - 1 but the padding stayed (m + 6) u relative: 0.54930613670 < exact 0.54930613981 at 1 - 1e-8.
    p, q = [0.75, 0.25], [0.25, 0.75]
    got = renyi_divergence(p, q, alpha)
    exact = exact_renyi(p, q, alpha)
    assert mpmath.mpf(got) >= exact
    assert got - exact < 1e-12 * exact  # and still tight


@pytest.mark.parametrize("alpha", [0.01, 0.5, 1.0, 2.0, 30.0], ids=["0.01", "0.5", "kl", "2", "30"])
def test_renyi_subnormal_and_heavy_tailed_entries(alpha):
    # tiny p_y against a moderate q_y: p_y^a q_y^(1-a) must not underflow through p_y e^{z_y}
    p = np.array([3 * TINY, 1e-300, 0.25, 0.75 - 1e-300])
    q = np.array([0.5, 0.25, 0.125, 0.125])
    got = renyi_divergence(p, q, alpha)
    assert mpmath.mpf(got) >= exact_renyi(p, q, alpha)


def test_renyi_identical_rows_stay_exactly_zero():
    p = [0.2, 0.3, 0.5]
    for alpha in (0.5, 1.0, 1 + 1e-9, 2.0, math.inf):
        assert renyi_divergence(p, p, alpha) == 0.0


def test_renyi_random_against_mpmath():
    rng = np.random.default_rng(7)
    for trial in range(60):
        m = int(rng.integers(2, 6))
        p, q = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
        if trial % 3 == 1:  # heavy tails
            p = np.exp(-rng.uniform(0, 600, m))
            p /= p.sum()
        if trial % 3 == 2:  # q a relative 1e-12 perturbation of p
            q = p * np.exp(rng.uniform(-1e-12, 1e-12, m))
        for alpha in (1 + 1e-9, 0.3, 1.0, 3.0):
            exact = exact_renyi(p, q, alpha)
            if abs(exact) < 1e-40:  # below what 120 digits resolve after the division
                continue
            assert mpmath.mpf(renyi_divergence(p, q, alpha)) >= exact, (trial, alpha)
