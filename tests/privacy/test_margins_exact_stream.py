"""Safety margins of the exact profile of a finite mechanism, streamed (:mod:`chainamp.privacy._exact_stream`,
:mod:`chainamp.privacy.exact`) (issue 18, "Tests that catch last-ulp mistakes").

The reference is the exact profile of the ROW-NORMALISED mechanism (a stored row stands for its normalised row):
``max`` over ordered pairs of ``sum_y [P_u(y) / s_u - e^eps P_v(y) / s_v]_+`` with the exact row sums ``s``
(Fractions) and ``e^eps`` in mpmath at 80 digits, no slack. Inputs sit on rounding edges found by searches (the
unmargined float computation lands below the exact value); each test was checked to fail with its margin removed
(see issue 18's report).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from chainamp import privacy_profile
from chainamp._numerics import SMALLEST_SUBNORMAL

mpmath.mp.dps = 80
M = mpmath.mpf
U = 2.0**-53


def mp_of(x: Fraction) -> mpmath.mpf:
    return M(x.numerator) / M(x.denominator)


def exact_profile(K: np.ndarray, eps: float) -> mpmath.mpf:
    """``max_{u != v} H_{e^eps}(K_u / s_u || K_v / s_v)`` over all ordered pairs, exactly for the stored doubles."""
    a = mpmath.exp(M(eps))
    rows = []
    for r in K:
        s = sum((Fraction(float(x)) for x in r), Fraction(0))
        rows.append([mp_of(Fraction(float(x)) / s) for x in r])
    best = M(0)
    for i, p in enumerate(rows):
        for j, q in enumerate(rows):
            if i != j:
                best = max(best, sum((max(x - a * y, 0) for x, y in zip(p, q)), M(0)))
    return best


def test_rows_within_float_rounding_of_one_are_normalised():
    """A row whose float sum is within ``2 (m + 2) u`` of 1 was used as stored (``rho = 0``), 43 u below the
    normalised profile here (m = 100, row 0 sums to 1 - 199.94 u exactly); ``rho`` is now the exact deviation
    (``math.fsum``), rounded up."""
    m = 100
    p, q = np.zeros(m), np.zeros(m)
    p[0], p[1:] = 0.5, (0.5 - 200 * U) / 99
    q[1:] = 1 / 99
    K = np.array([p, q])
    assert abs(K[0].sum() - 1.0) <= 2 * (m + 2) * U  # within the old "rounding" allowance
    prof = privacy_profile(K, neighbors=None)
    for eps in (0.5, 10.0, 50.0):
        assert M(prof.delta(eps)) >= exact_profile(K, eps), eps


def lost_prefix_rows(tiny: int = 20) -> np.ndarray:
    """Row 0: 0.5 then ``tiny`` entries of 3/4 of half an ulp of 0.5 where row 1 vanishes (infinite log-ratio):
    the float partial sum stays 0.5, the exact one is ``0.5 + tiny * 0.75 * 2^-54``; both rows sum exactly to 1
    (no normalisation widening hides the loss)."""
    small = 0.75 * 2.0**-54
    p = [0.5] + [small] * tiny + [0.5 - tiny * small, 0.0]
    q = [0.0] * (tiny + 1) + [0.5, 0.5]
    return np.array([p, q])


@pytest.mark.parametrize("eps", [1.0, 5.0, math.inf], ids=["eps1", "eps5", "inf"])
def test_partial_sums_inflated(eps):
    """``(m + 4) u`` on the partial sums (``m`` for the mass of infinite loss)."""
    K = lost_prefix_rows()
    assert all(math.fsum(list(r) + [-1.0]) == 0.0 for r in K)
    prof = privacy_profile(K, neighbors=None)
    assert M(prof.delta(eps)) >= exact_profile(K, min(eps, 1e4))


#: (p0, q0, eps): q0 tiny, eps just below log(p0 / q0): exp(eps + log q0) errs by ~|log q0| u relative
SHRINK_EDGES = [(0.7847644738418963, 9.453010283630392e-44, 98.82503921288223),
                (0.33235842142899386, 5.386034329469792e-145, 331.08948780615145),
                (0.535442798600867, 4.2174732210311266e-36, 80.82916594837481)]


@pytest.mark.parametrize("p0, q0, eps", SHRINK_EDGES, ids=["q1e-44", "q1e-145", "q1e-36"])
def test_exponential_deflated(p0, q0, eps):
    """The shrink ``1 - u (2 eps + 10 |log Q_k| + m + 16)`` of ``e^eps Q_k``."""
    K = np.array([[p0, 1.0 - p0], [q0, 1.0 - q0]])
    prof = privacy_profile(K, neighbors=None)
    assert M(prof.delta(eps)) >= exact_profile(K, eps)


@pytest.mark.parametrize("a, b, eps", [(73, 64, 0.12904162725502222), (177, 154, 0.13842386709272644),
                                       (156, 110, 0.3492498993903127)], ids=["73-64", "177-154", "156-110"])
def test_subnormal_units(a, b, eps):
    """The two units ``2 * 2^-1074`` taken off a subnormal ``e^eps Q_k``."""
    K = np.array([[a * SMALLEST_SUBNORMAL, 1.0], [b * SMALLEST_SUBNORMAL, 1.0]])
    prof = privacy_profile(K, neighbors=None)
    ex = exact_profile(K, eps)
    assert ex > 0
    assert M(prof.delta(eps)) >= ex


BAND_P = [0.003897198683377548, 3.5322636378872493e-07, 0.38547911453493283, 0.10810345392718707,
          0.5025198787456147, 8.825241415087484e-10]
BAND_Q = [2.98912752353891e-05, 0.007422928997738396, 0.3164168935601501, 0.002342848022109086,
          0.5734207068582899, 0.10036673128647712]


def test_band_of_uncertain_outcomes():
    """The band ``2 llr_err (|hi - lo| + (m + 2) u hi)``: at eps on a computed log-ratio its side of the cut is
    uncertain."""
    K = np.array([BAND_P, BAND_Q])
    prof = privacy_profile(K, neighbors=None)
    with np.errstate(divide="ignore"):
        llr = np.log(K[0]) - np.log(K[1])
    eps_list = [float(math.nextafter(abs(x), d)) for x in llr for d in (-math.inf, math.inf)]
    got = prof.delta(np.array(eps_list))
    for eps, g in zip(eps_list, got):
        assert M(float(g)) >= exact_profile(K, eps), eps
