"""Safety margins of the designs' certified dual bounds (:mod:`chainamp.design.duals`) (issue 18, "Tests that catch
last-ulp mistakes").

``dual_bound`` is a rigorous LOWER bound of the LP optimum. When M is already (eps, 0)-LDP for the target eps, the
identity is optimal and the optimum is known exactly: ``sum_x prior(x) (1 - M(x, x))`` for the 0-1 loss, a
``Fraction`` of the stored entries. The dual bound must not exceed it, with no slack; the float evaluation of the
dual sits within a few ulps of it (the multipliers certify the identity), so without the rounding down past
``2 (n_ops + 2) u`` of its size it lands above the exact optimum on some channels. Each test was checked to fail
with its margin removed (see issue 18's report).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from chainamp import mechanisms
from chainamp.design import optimal_post_processing

mpmath.mp.dps = 80

CASES = [(k, e) for k in (2, 3, 5) for e in (0.3, 0.9, 1.7)]


@pytest.mark.parametrize("k, eps0", CASES, ids=[f"k{k}-eps{e}" for k, e in CASES])
def test_dual_bound_never_above_the_exact_optimum(k, eps0):
    M = mechanisms.randomized_response(k, eps0)
    r = optimal_post_processing(M, eps0 + 0.5)
    d, o = Fraction(M.diagonal), Fraction(M.off_diagonal)
    exact = 1 - d / (d + (k - 1) * o)  # the identity is optimal; rows stand for their normalised rows
    assert Fraction(r.dual_bound) <= exact


def exact_profile_of_product(M: np.ndarray, K: np.ndarray, eps: float) -> mpmath.mpf:
    """``max_{x != x'} H_{e^eps}`` of the exact product of the stored M and K, rows normalised (80 digits)."""
    a = mpmath.exp(mpmath.mpf(eps))
    n, m = M.shape
    P = [[sum((Fraction(float(M[x, z])) * Fraction(float(K[z, y])) for z in range(m)), Fraction(0))
          for y in range(K.shape[1])] for x in range(n)]
    rows = []
    for r in P:
        s = sum(r, Fraction(0))
        rows.append([mpmath.mpf(v.numerator) / mpmath.mpf(v.denominator) / (mpmath.mpf(s.numerator) / mpmath.mpf(s.denominator)) for v in r])
    return max(sum((max(p - a * q, 0) for p, q in zip(rows[i], rows[j])), mpmath.mpf(0))
               for i in range(n) for j in range(n) if i != j)


DESIGNS = [(3, 2.0, 1.0, 0.0), (4, 2.5, 1.2, 0.0), (3, 2.0, 0.7, 1e-3), (5, 1.5, 0.4, 0.0)]


@pytest.mark.parametrize("k, eps0, eps, delta", DESIGNS, ids=[f"k{d[0]}-{d[2]}-{d[3]}" for d in DESIGNS])
def test_returned_design_meets_its_target_exactly(k, eps0, eps, delta):
    """The returned K is re-certified by chainamp (the LP optimum sits ON the constraints, a rounding away from
    violating them): the exact profile of ``M K`` (rows normalised) at the target eps is at most the target delta."""
    M = mechanisms.randomized_response(k, eps0)
    r = optimal_post_processing(M, eps, delta=delta)
    exact = exact_profile_of_product(M.densify().matrix, r.K.matrix, eps)
    assert exact <= mpmath.mpf(delta)
