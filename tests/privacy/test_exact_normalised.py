"""privacy_profile of rows accepted off 1: the profile certified is the row-normalised mechanism's
(what every other certificate of chainamp uses; found by the adversarial review: it was the stored rows')."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from chainamp import privacy_profile

from conftest import random_stochastic


def _normalised_delta_low(rows: np.ndarray, eps: float) -> float:
    """A lower bound of the normalised rows' profile: Fractions, e^eps rounded up (mpmath-free, exact sums)."""
    R = [[Fraction(v) / sum(map(Fraction, r)) for v in r] for r in rows.tolist()]
    a = Fraction(math.nextafter(math.exp(eps), math.inf))
    best = Fraction(0)
    for i in range(len(R)):
        for j in range(len(R)):
            if i != j:
                best = max(best, sum(max(p - a * q, Fraction(0)) for p, q in zip(R[i], R[j])))
    return float(best)


@pytest.mark.parametrize("offset", [1e-10, -1e-10, 9.9e-10, -9.9e-10], ids=["+1e-10", "-1e-10", "+9.9e-10", "-9.9e-10"])
@pytest.mark.parametrize("seed", range(4), ids=[f"seed{s}" for s in range(4)])
def test_rows_off_1_are_certified_for_their_normalised_rows(seed, offset):
    rng = np.random.default_rng(seed)
    rows = random_stochastic(rng, 3, 4, zero_prob=0.3 if seed % 2 else 0.0)
    rows = rows * (1.0 + offset * rng.choice([-1.0, 1.0], size=3))[:, None]
    prof = privacy_profile(rows)
    for eps in (0.0, 1e-12, 1e-9, 0.1, 0.5, 1.0, 3.0):
        assert prof.delta(eps) >= _normalised_delta_low(rows, eps), eps


def test_rows_summing_to_1_are_used_as_stored():
    """No widening for rows whose sums are 1 up to the rounding of the sums: exact values stay exact."""
    prof = privacy_profile([[0.75, 0.25], [0.25, 0.75]])
    assert prof._row_dev == 0.0 and prof.delta(0.0) == pytest.approx(0.5, abs=1e-14)
