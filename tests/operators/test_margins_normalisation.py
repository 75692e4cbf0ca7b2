"""Safety margins of the row-normalisation error (:func:`chainamp.operators.operator_error`, dense and structured)
(issue 18, "Tests that catch last-ulp mistakes").

A stored operator stands for its row-normalised one; the declared relative error ``rel`` must cover
``max_x |1 / s_x - 1|`` with ``s_x`` the EXACT sum of the stored row (a ``Fraction``), with no slack. Inputs sit
on the rounding edge: a float row sum of exactly 1.0 for a row whose exact sum is 1 - 7.4 u (numpy's pairwise
summation, 8 interleaved accumulators), and k-RR channels whose exact row sum ``d + (k - 1) o`` rounds to 1.0.
Each test was checked to fail with its margin removed (see issue 18's report).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from chainamp import MarkovOperator
from chainamp.mechanisms import randomized_response
from chainamp.operators import operator_error


def exact_normalisation_error(rows) -> Fraction:
    """``max_x |1 / s_x - 1|`` with the exact sums of the stored rows."""
    worst = Fraction(0)
    for r in rows:
        s = sum((Fraction(float(x)) for x in r), Fraction(0))
        worst = max(worst, abs(1 / s - 1))
    return worst


def gained_row() -> np.ndarray:
    """0.5 at position 0, 15 entries ``1.01 * 2^-54`` at positions 8, ..., 120 (each addition to the accumulator
    holding 0.5 rounds UP to a whole ulp), 0.5 - 15 ulps at the end: the float sum is exactly 1.0, the exact sum
    ``1 - 7.425 * 2^-53``."""
    r = np.zeros(128)
    r[0], r[8:121:8] = 0.5, 1.01 * 2.0**-54
    r[-1] = 0.5 - 15 * 2.0**-53
    return r


def test_dense_error_covers_the_float_row_sum():
    """The summation slack ``(k - 1) u s`` of a dense operator's row sums (and the dyadic shortcut's test)."""
    r = gained_row()
    K = np.array([r, r[::-1]])
    assert K[0].sum() == 1.0 and exact_normalisation_error(K[:1]) > 0  # the float sum hides the deviation
    rel = operator_error(MarkovOperator(K)).rel
    assert Fraction(rel) >= exact_normalisation_error(K)


KS = [3, 7, 10, 100, 1000, 12345, 10**6]
EPSS = [0.1, 0.5, 1.0, 2.0, 3.7]


def test_structured_error_covers_the_exact_row_sum():
    """k-RR (a :class:`~chainamp.operators.SymmetricChannel`): ``row_sum_bounds`` rounds the exact sum
    ``d + (k - 1) o`` outward (``_down`` / ``_up``), so ``rel`` covers it even where it rounds to 1.0."""
    edges = 0
    for k in KS:
        for eps in EPSS:
            K = randomized_response(k, eps)
            d, o = Fraction(K.diagonal), Fraction(K.off_diagonal)
            s = d + (k - 1) * o
            edges += s != 1 and float(s) == 1.0
            rel = operator_error(K).rel
            assert Fraction(rel) >= abs(1 / s - 1), (k, eps)
    assert edges >= 5  # many channels sit on the edge: their exact sum rounds to 1.0


def test_structured_error_rounds_the_quotient_up():
    """``rel = rho / (1 - rho)`` pushed up (``(1 + 4u)`` and one float): for k = 52 at this eps the exact row sum
    ``s`` is itself a double, so ``rho = 1 - s`` is exact and the float quotient alone rounds below
    ``(1 - s) / s`` (found by a search over k <= 400 and 60 eps)."""
    K = randomized_response(52, 1.8957627118644071)
    s = Fraction(K.diagonal) + 51 * Fraction(K.off_diagonal)
    assert s != 1 and Fraction(float(s)) == s
    rho = abs(1.0 - float(s))
    assert Fraction(rho / (1.0 - rho)) < abs(1 / s - 1)  # on the edge
    assert Fraction(operator_error(K).rel) >= abs(1 / s - 1)
