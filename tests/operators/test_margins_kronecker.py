"""Safety margins of the declared error of Kronecker products (:mod:`chainamp.operators.kronecker`,
:mod:`chainamp.operators._kron_queries`) (issue 18, "Tests that catch last-ulp mistakes").

A :class:`~chainamp.operators.KroneckerOperator` stands for the exact product of its stored factors, but a densified
matrix (its entries float products of d factor entries) can exist too: every structural bound must cover both
readings. References are exact sums of the densified rows (``Fraction``), no slack; the factors are built so that
the products round the same way (entries like 1/3 and 2/3, d up to 12). Each test was checked to fail with its margin
removed (see issue 18's report).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from chainamp import MarkovOperator
from chainamp.operators import KroneckerOperator

#: rows ``[a, 1 - a]`` with ``a >= 1/2``: ``1 - a`` is exact (Sterbenz), so every factor row sums EXACTLY to 1 and the
#: exact products of the factors' row sums are 1: only the margin for the densified rounding separates the bounds
FACTORS = {"thirds": [[2 / 3, 1 - 2 / 3], [1 - 2 / 3, 2 / 3]], "sevenths": [[6 / 7, 1 - 6 / 7], [1 - 0.7, 0.7]],
           "tenths": [[0.9, 1 - 0.9], [0.7, 1 - 0.7]]}


@pytest.mark.parametrize("name", list(FACTORS))
@pytest.mark.parametrize("d", [6, 9])
def test_row_sum_bounds_cover_the_densified_rows(name, d):
    """``row_sum_bounds`` widened by ``(d - 1) u`` (:meth:`_densified_rounding`): the exact sums of the rows of the
    densified matrix lie inside, not only the exact products of the factors' row sums."""
    K = KroneckerOperator.power(MarkovOperator(np.array(FACTORS[name])), d)
    lo, hi = K.row_sum_bounds()
    assert all(Fraction(float(a)) + Fraction(float(b)) == 1 for a, b in FACTORS[name])
    D = K.densify().matrix
    rows = range(0, D.shape[0], max(1, D.shape[0] // 24))
    sums = [sum((Fraction(float(x)) for x in D[r]), Fraction(0)) for r in rows]
    assert Fraction(lo) <= min(sums) and max(sums) <= Fraction(hi)


def exact_power_entries(F: np.ndarray, d: int) -> list:
    """The exact (Fraction) entries of the d-th Kronecker power of F, row-major (first coordinate slowest)."""
    E = [[Fraction(1)]]
    for _ in range(d):
        E = [[a * Fraction(float(f)) for a in row for f in frow] for row in E for frow in F]  # kron(E, F)
    return E


#: found by a search over 60 random factor pairs: the densified product's entries err by 5.17 u (more than the
#: d u of the densified roundings alone)
FACTORS["searched-F"] = [[0.9156374173322306, 0.08436258266776941], [0.4686410387146158, 0.5313589612853842]]
FACTORS["searched-G"] = [[0.912743906696778, 0.08725609330322204], [0.4177463667629493, 0.5822536332370507]]


@pytest.mark.parametrize("names", [("thirds", "sevenths"), ("tenths", "thirds"), ("searched-F", "searched-G")],
                         ids=["a", "b", "searched"])
def test_composed_product_error_covers_both_readings(names):
    """``_compose_with_error``: ``rel`` covers the factors' float dot products (``gamma_t`` per coordinate) and the
    ``d - 1`` roundings of a densified matrix, against the exact product of the stored operators."""
    d = 4
    F, G = (np.array(FACTORS[n]) for n in names)
    A = KroneckerOperator.power(MarkovOperator(F), d)
    B = KroneckerOperator.power(MarkovOperator(G), d)
    C, rel, absolute, _ = A._compose_with_error(B)
    EA, EB = exact_power_entries(F, d), exact_power_entries(G, d)
    n = len(EA)
    exact = [[sum((EA[i][k] * EB[k][j] for k in range(n)), Fraction(0)) for j in range(n)] for i in range(n)]
    dense = C.densify().matrix
    worst = max(abs(Fraction(float(dense[i, j])) - exact[i][j]) / exact[i][j] for i in range(n) for j in range(n))
    assert worst > 0  # the products do round
    assert worst <= Fraction(rel)
