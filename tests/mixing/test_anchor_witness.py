"""The witness of a coefficient after earlier queries on the same operator (pair bounds kept across eps).

Regression (adversarial review of issue 10): when the bounds derived from another eps already pinned the maximum,
the witness was the argmax of the kept bounds, a pair never evaluated at this eps whose value could be far below
gamma (0.18 for gamma = 0.5). The witness is now the evaluated pair of the certified lower bound.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

import chainamp as ca
from chainamp.operators import MarkovOperator

A = [0.5, 0.5, 0.0, 0.0, 0.0]
B = [0.0, 0.5, 0.5, 0.0, 0.0]
D = [0.0, 1.0, 0.0, 0.0, 0.0]
ROWS = np.array([A] + [D if k % 2 else B for k in range(1, 65)] + [A] * 65)  # 130 rows: the scan path


def exact_pair(P, i: int, j: int, eps: float) -> mp.mpf:
    c = mp.e ** mp.mpf(eps)
    return mp.fsum(max(mp.mpf(0), mp.mpf(a) - c * mp.mpf(b)) for a, b in zip(P[i], P[j]))


def exact_max(P, eps: float) -> mp.mpf:
    rows = np.unique(P, axis=0)  # the maximum over pairs of distinct rows (equal rows give 0)
    return max((exact_pair(rows, i, j, eps) for i in range(len(rows)) for j in range(len(rows)) if i != j),
               default=mp.mpf(0))


@pytest.mark.parametrize("earlier", [[0.0], [0.0, 2.0, 0.1], [3.0, 0.0]], ids=["tv-first", "several", "above-then-tv"])
@pytest.mark.parametrize("eps", [0.5, 0.25, 1.0], ids=["eps0.5", "eps0.25", "eps1"])
def test_witness_attains_gamma_after_earlier_queries(earlier, eps):
    mp.mp.dps = 40
    K = MarkovOperator(ROWS)
    for e in earlier:
        ca.dobrushin(K, e)
    r = ca.dobrushin(K, eps)
    i, j = K.input_index(r.pair[0]), K.input_index(r.pair[1])
    attained = exact_pair(ROWS, i, j, eps)
    assert attained >= mp.mpf(r.gamma) - mp.mpf(1e-12)
    assert mp.mpf(r.gamma) >= exact_max(ROWS, eps)  # still certified
    fresh = ca.dobrushin(MarkovOperator(ROWS), eps)
    assert abs(fresh.gamma - r.gamma) <= 1e-14


def test_witness_test_set_gives_gamma_after_earlier_queries():
    K = MarkovOperator(ROWS)
    ca.dobrushin(K, 0.0)
    r = ca.dobrushin(K, 0.5)
    x, y = (K.input_index(v) for v in r.pair)
    S = [K.output_index(o) for o in r.test_set]
    c = Fraction(np.exp(0.5))
    value = sum(Fraction(ROWS[x, s]) - c * Fraction(ROWS[y, s]) for s in S)
    assert float(value) == pytest.approx(r.gamma, abs=1e-12)
