"""Safety margins of dominating pairs and ROC hulls (issue 18, "Tests that catch last-ulp mistakes").

Every test compares a certified float with an exact reference and NO slack: ``Fraction`` for rational
quantities, mpmath at 80 digits for ``e^eps`` (its error, ~1e-75, is far below one ulp of any value
compared). Each input was searched for so that the computation WITHOUT the margin under test lands strictly
below the exact value; where that can be checked cheaply the test first asserts it (the input sits on the
margin's rounding edge), then that the certified value is not below the exact one. Each test was checked
to fail with its margin removed (issue 18's report lists the margin, line and result).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from chainamp._numerics import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF
from chainamp.privacy import DominatingPair
from chainamp.privacy._roc import _cross_sign, _masses_from_vertices, _upper_hull
from conftest import CROSS_EDGES

mpmath.mp.dps = 80
M = mpmath.mpf
U = UNIT_ROUNDOFF


def exact_delta(p, q, eps: float) -> mpmath.mpf:
    """``H_{e^eps}(p || q) = sum_y [p_y - e^eps q_y]_+`` of the stored doubles (80 digits)."""
    a = mpmath.exp(M(eps))
    return sum((max(M(float(x)) - a * M(float(y)), 0) for x, y in zip(p, q)), M(0))


def chain_value(p, q, s: Fraction) -> Fraction:
    """The pair's ROC chain (exact partial sums of its float masses, in order) at ``Q(S) = s``."""
    cp, cq = [Fraction(0)], [Fraction(0)]
    for x, y in zip(p, q):
        cp.append(cp[-1] + Fraction(float(x)))
        cq.append(cq[-1] + Fraction(float(y)))
    for j in range(1, len(cq)):
        if cq[j] >= s:
            if cq[j] == cq[j - 1]:
                return cp[j]
            return cp[j - 1] + (cp[j] - cp[j - 1]) * (s - cq[j - 1]) / (cq[j] - cq[j - 1])
    return cp[-1]


# ----------------------------------------------------------------- DominatingPair.delta and friends
def lost_prefix_pair(tiny: int) -> DominatingPair:
    """``tiny`` outcomes of P-mass just under half an ulp of 0.5 follow an outcome of mass 0.5, all where Q
    vanishes: the float prefix sum stays 0.5 while the exact one is ``0.5 + tiny * 0.99 * 2^-54``."""
    small = 0.99 * 2.0**-54
    p = [0.5] + [small] * tiny + [0.5 - tiny * small, 0.0]
    q = [0.0] * (tiny + 1) + [0.5, 0.5]
    return DominatingPair(p, q)


@pytest.mark.parametrize("eps", [1.0, 5.0, 2000.0, math.inf], ids=["eps1", "eps5", "beyond-1000", "inf"])
def test_prefix_sum_inflation_covers_lost_low_bits(eps):
    """``(n + 4) u`` on the prefix sums (and ``(n + 2) u`` on the mass of infinite loss beyond eps = 1000)."""
    pair = lost_prefix_pair(20)
    _, P, _, _, n_inf = pair._sorted
    assert n_inf == 21 and M(float(P[n_inf])) < exact_delta(pair.p, pair.q, 1.0)  # the float sum lost bits
    assert M(pair.delta(eps)) >= exact_delta(pair.p, pair.q, min(eps, 1e4))
    assert M(pair.infinity_mass) >= exact_delta(pair.p, pair.q, 1e4)


#: (p0, q0, eps): q0 tiny, eps just below log(p0 / q0); exp(eps + log q0) errs by ~|log q0| u relative
SHRINK_EDGES = [(0.7847644738418963, 9.453010283630392e-44, 98.82503921288223),
                (0.33235842142899386, 5.386034329469792e-145, 331.08948780615145),
                (0.535442798600867, 4.2174732210311266e-36, 80.82916594837481)]


@pytest.mark.parametrize("p0, q0, eps", SHRINK_EDGES, ids=["q1e-44", "q1e-145", "q1e-36"])
def test_exponential_deflation_covers_log_q_error(p0, q0, eps):
    """The shrink ``1 - u (2|eps| + 2|log Q_k| + 2n + 16)`` of ``e^eps Q_k``."""
    n = 2
    naive = max(p0 * (1 + (n + 4) * U) - math.exp(eps + math.log(q0)), 0.0) * (1 + 6 * U)
    pair = DominatingPair([p0, 1.0 - p0], [q0, 1.0 - q0])
    ex = exact_delta(pair.p, pair.q, eps)
    assert M(naive) < ex  # without the shrink the value would be below the exact one
    assert M(pair.delta(eps)) >= ex


#: (a, b, eps): p0 = a 2^-1074, q0 = b 2^-1074 (subnormal), eps below log(a / b)
SUBNORMAL_EDGES = [(73, 64, 0.12904162725502222), (177, 154, 0.13842386709272644), (156, 110, 0.3492498993903127)]


@pytest.mark.parametrize("a, b, eps", SUBNORMAL_EDGES, ids=["73-64", "177-154", "156-110"])
def test_subnormal_units_of_the_exponential(a, b, eps):
    """The two absolute units ``2 * 2^-1074`` taken off ``e^eps Q_k`` (no relative factor covers them)."""
    p0, q0 = a * SMALLEST_SUBNORMAL, b * SMALLEST_SUBNORMAL
    pair = DominatingPair([p0, 1.0], [q0, 1.0])
    ex = exact_delta(pair.p, pair.q, eps)
    assert ex > 0
    assert M(pair.delta(eps)) >= ex


#: an outcome whose computed log-ratio sits within the log-ratio error of eps (found by a random search)
BAND_P = [0.003897198683377548, 3.5322636378872493e-07, 0.38547911453493283, 0.10810345392718707,
          0.5025198787456147, 8.825241415087484e-10]
BAND_Q = [2.98912752353891e-05, 0.007422928997738396, 0.3164168935601501, 0.002342848022109086,
          0.5734207068582899, 0.10036673128647712]


def test_band_of_uncertain_outcomes():
    """``d_llr = 32 u (max |log| + 1)`` and the band ``2 d (P[k_hi] - P[k_lo])``: at eps on the computed
    log-ratio of an outcome, its side of the cut is uncertain."""
    pair = DominatingPair(BAND_P, BAND_Q)
    llr = pair.log_ratios
    eps_list = [3.8317213825925127] + [float(math.nextafter(x, d)) for x in llr for d in (-math.inf, math.inf)]
    for eps in eps_list:
        assert M(pair.delta(eps)) >= exact_delta(pair.p, pair.q, eps), eps


@pytest.mark.parametrize("p", [[1 / 3, 1 / 3, 1 / 3, 0.0], [0.1, 0.2, 0.7, 0.0]], ids=["thirds", "tenths"])
def test_pure_epsilon_rounded_up(p):
    """``pure_epsilon = nextafter(max llr + d_llr)``: never below the exact largest log-ratio."""
    q = [0.06547709520251639, 0.10395649482138423, 0.12755748967939287, 0.7030094449]
    q[3] = 1.0 - sum(q[:3])
    pair = DominatingPair(p, q)
    exact = max(mpmath.log(M(float(x)) / M(float(y))) for x, y in zip(pair.p, pair.q) if x > 0 and y > 0)
    assert M(pair.pure_epsilon) >= exact


# ----------------------------------------------------------------- from_points: the exact intersection region
def region_delta(points, eps: float) -> mpmath.mpf:
    """``max_s U(s) - e^eps s`` for ``U(s) = min(1, min_i e^eps_i s + delta_i, 1 - e^-eps_i (1 - delta_i - s))``,
    with exact slopes (80 digits): the maximum sits at a vertex of U, an intersection of two lines."""
    a = mpmath.exp(M(eps))
    lines = [(M(0), M(1))]
    for e, d in points:
        E = mpmath.exp(M(e))
        lines += [(E, M(d)), (1 / E, 1 - (1 - M(d)) / E)]
    xs = {M(0), M(1)}
    for i in range(len(lines)):
        for j in range(i + 1, len(lines)):
            (m1, c1), (m2, c2) = lines[i], lines[j]
            if m1 != m2 and 0 <= (c2 - c1) / (m1 - m2) <= 1:
                xs.add((c2 - c1) / (m1 - m2))
    return max(min(m * x + c for m, c in lines) - a * x for x in xs)


#: (points, eps) where the pair built without one outward rounding falls below the exact region
POINT_EDGES = [
    ([(2.337446987224669, 0.00804364418092014), (2.8488324282298545, 0.0)], 2.335109540237444),  # e^eps up
    ([(0.45298450565666104, 0.0)], -0.4512499969812147),  # e^-eps down
    ([(2.9187703171344745, 0.0)], -3.8823495602770457),  # P-masses rounded up
    ([(2.6292046819333685, 0.0), (0.6581493364063378, 0.0587646928775913), (2.827878900311883, 0.13615216483720535)],
     -1.1452979763109248),  # Q-masses rounded down
]


@pytest.mark.parametrize("points, eps", POINT_EDGES, ids=["exp-up", "exp-down", "p-up", "q-down"])
def test_from_points_never_below_the_exact_region(points, eps):
    pair = DominatingPair.from_points(points)
    for e in [eps] + [pt[0] * f for pt in points for f in (-1.0, -0.5, 0.5, 0.999, 1.0, 1.001)]:
        assert exact_delta(pair.p, pair.q, e) >= region_delta(points, e), e


# ----------------------------------------------------------------- from_roc: exact hull, directed differences
@pytest.mark.parametrize("s0, b0, s1, b1, s2, b2", CROSS_EDGES, ids=["a", "b", "c"])
def test_hull_orientation_of_near_collinear_points(s0, b0, s1, b1, s2, b2):
    """``_cross_sign``'s error filter ``16 u (|t1| + |t2|)``: below it the sign is decided exactly."""
    t1, t2 = (s1 - s0) * (b2 - b0), (b1 - b0) * (s2 - s0)
    assert t1 - t2 > 0  # the float predicate alone would call the turn a left turn
    assert _cross_sign((s0, b0), (s1, b1), (s2, b2)) == -1
    pair = DominatingPair.from_roc([s0, s1, s2], [b0, b1, b2])
    for s, b in [(s0, b0), (s1, b1), (s2, b2)]:
        assert chain_value(pair.p, pair.q, Fraction(s)) >= Fraction(b)


ROC_EDGES = [([0.0, 0.3333333333333333], [0.010075672591639306, 0.748742604140585]),
             ([0.25105163224753596, 0.6246038669520388, 0.7998409759014015],
              [0.41303963674669286, 0.7371295978971604, 0.8891634570345439])]


@pytest.mark.parametrize("s, b", ROC_EDGES, ids=["p-up", "q-down"])
def test_from_roc_masses_rounded_outward(s, b):
    """``_directed_diff``: chain increments rounded up (P) and down (Q) by Fast2Sum's exact error."""
    hs, hb = _upper_hull(np.array(s), np.array(b))
    p, q = _masses_from_vertices(hs, hb)
    for si, bi in zip(s, b):
        assert chain_value(p, q, Fraction(si)) >= Fraction(bi)


# ----------------------------------------------------------------- compose: products of masses
@pytest.mark.parametrize("p1, q1", [([2 / 3, 1 / 3], [1 / 3, 2 / 3]), ([0.7, 0.3], [0.1, 0.9])], ids=["thirds", "tenths"])
def test_compose_products_rounded_outward(p1, q1):
    """``_renormalised_up`` / ``_renormalised_down``: every product mass P up, Q down, exactly."""
    A = DominatingPair(p1, q1)
    C = A.compose(A, A)
    pe = [Fraction(float(x)) * Fraction(float(y)) * Fraction(float(z)) for x in A.p for y in A.p for z in A.p]
    qe = [Fraction(float(x)) * Fraction(float(y)) * Fraction(float(z)) for x in A.q for y in A.q for z in A.q]
    assert C.size == len(pe)
    assert any(Fraction(float(x)) != e for x, e in zip(np.outer(np.outer(A.q, A.q), A.q).ravel(), qe))  # inexact
    assert all(Fraction(float(x)) >= e for x, e in zip(C.p, pe))
    assert all(Fraction(float(y)) <= e for y, e in zip(C.q, qe))
