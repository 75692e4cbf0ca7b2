"""Adversarial review of the blanket pair (blanket_delta): the enumeration budget and its fallback, the
closed form for three classes, and brute force over every dataset and histogram (exact arithmetic)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from chainamp.operators import SymmetricChannel
from chainamp.shuffle import blanket, blanket_delta, blanket_epsilon

sys.path.insert(0, str(Path(__file__).parent))
from review_brute import random_R, worst_deltas  # noqa: E402

R4 = np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.4, 0.3, 0.2], [0.2, 0.1, 0.4, 0.3], [0.3, 0.2, 0.1, 0.4]])


def _floats(R):
    return [[float(v) for v in row] for row in R]


def test_many_classes_no_longer_enumerated():
    """Review counterexample (before the ladder): at n = 300 this 4-class R enumerated 12 pairs x 8436
    histograms, and at n = 20000 it built every composition in a Python list (MemoryError after 81 s under a
    3 GB ulimit). The ladder needs neither: fast, bounded and falling with n."""
    import time
    t = time.perf_counter()
    d = [blanket_delta(R4, n, [0.3], progress=False)[0] for n in (300, 20_000)]
    assert time.perf_counter() - t < 5.0
    assert 0.0 < d[1] < d[0] <= 1.0


def test_coarser_ladder_is_above_the_finer():
    """A ladder of fewer lattice points only adds mean-preserving spreads: never below the finer one here."""
    from chainamp.shuffle._ladder import sum_positive_part
    r0, r1 = R4[0], R4[1]
    mu = R4.min(axis=0)
    for n, e in ((300, 1.2), (10**5, 1.02)):
        up = (r0 - e * r1) / mu
        fine = sum_positive_part(up, mu, 1 - mu.sum() + 2**-52, n, cap=2048)
        coarse = sum_positive_part(up, mu, 1 - mu.sum() + 2**-52, n, cap=32)
        assert coarse >= fine > 0


def test_large_n_many_classes_is_bounded():
    from chainamp import resource_limits
    with resource_limits(memory="300MB"):
        d = blanket_delta(R4, 10**8, [0.05], max_histograms=50_000, progress=False)[0]
    assert 0.0 <= d <= 1.0


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_brute_force_random_with_tiny_budget(seed):
    rng = np.random.default_rng(40 + seed)
    R = random_R(rng, 3, 4, ("uniform", "zeros", "peaked", "wide")[seed])
    epss = [0.0, 1e-9, 0.1, 0.4, 1.0]
    exact = worst_deltas(R, 5, epss)
    for budget in (40, 2_000_000):
        got = blanket_delta(_floats(R), 5, epss, max_histograms=budget, progress=False)
        assert all(g >= x for g, x in zip(got, exact)), (budget, got, exact)


@pytest.mark.parametrize("k,n,ratio", [(2, 6, (7, 3)), (3, 5, (7, 3)), (4, 4, (7, 3)), (3, 5, (2, 5)), (2, 6, (1, 4))],
                         ids=["k2", "k3", "k4", "anti-k3", "anti-k2"])
def test_symmetric_channel_closed_form_brute_force(k, n, ratio):
    """Diagonal / off-diagonal = ratio; below 1 an anti-randomized response (still a SymmetricChannel)."""
    from fractions import Fraction
    e0 = Fraction(*ratio)
    R = [[(e0 if x == y else 1) / (e0 + k - 1) for y in range(k)] for x in range(k)]
    epss = [0.0, 1e-12, 0.05, 0.3, 0.8]
    exact = worst_deltas(R, n, epss, pairs=[(0, 1)])
    S = SymmetricChannel(k, float(R[0][0]), float(R[0][1]))
    got = blanket_delta(S, n, epss)
    assert all(g >= x for g, x in zip(got, exact))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(150), ids=lambda s: f"seed{s}")
def test_blanket_brute_force_sweep_slow(seed):
    rng = np.random.default_rng(2000 + seed)
    k, m = int(rng.integers(2, 5)), int(rng.integers(2, 6))
    n = int(rng.integers(1, 7 if k * m <= 9 else 5))
    R = random_R(rng, k, m, ("uniform", "zeros", "peaked", "wide")[seed % 4])
    epss = [0.0, 1e-12, 1e-4, 0.05, 0.3, 1.0, 3.0]
    exact = worst_deltas(R, n, epss)
    for budget in (100, 2_000_000):
        got = blanket_delta(_floats(R), n, epss, max_histograms=budget, progress=False)
        assert all(g >= x for g, x in zip(got, exact)), (budget, got, exact)


@pytest.mark.slow
def test_epsilon_inversion_meets_delta():
    for k, n, eps0, delta in [(2, 1000, 2.0, 1e-6), (5, 10**5, 4.0, 1e-9), (100, 10**7, 1.0, 1e-12)]:
        S = SymmetricChannel.from_epsilon(k, eps0)
        e = blanket_epsilon(S, n, delta)
        assert blanket_delta(S, n, [e])[0] <= delta
