"""chainamp.shuffle.blanket: the exact blanket pair of Balle et al. 2019, against brute force."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from chainamp.shuffle import blanket_delta, blanket_epsilon

sys.path.insert(0, str(Path(__file__).parent))
from brute_histograms import krr, random_randomizer, shuffled_worst_delta  # noqa: E402


def _floats(R):
    return [[float(v) for v in row] for row in R]


@pytest.mark.parametrize("seed", [6, 7, 8], ids=lambda s: f"seed{s}")
def test_random_randomizers_brute_force(seed):
    R = random_randomizer(np.random.default_rng(seed), 3, 3)
    for eps in (0.0, 0.1, 0.3):
        exact = shuffled_worst_delta(R, 4, eps)
        assert blanket_delta(_floats(R), 4, [eps])[0] >= exact


@pytest.mark.parametrize("k,n", [(2, 6), (3, 5)], ids=["k2n6", "k3n5"])
def test_krr_brute_force(k, n):
    R = krr(k, 3, 1)
    for eps in (0.0, 0.3):
        exact = shuffled_worst_delta(R, n, eps, pairs=[(0, 1)])
        assert blanket_delta(_floats(R), n, [eps], neighbors=[(0, 1)])[0] >= exact


def test_revealing_output_outside_the_blanket():
    R = [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]  # outputs 0 and 2 name the value
    assert blanket_delta(R, 5, [5.0])[0] >= 0.5


def test_identity_has_no_blanket():
    assert blanket_delta(np.eye(3), 100, [1.0])[0] == pytest.approx(1.0)


def test_blocks_are_an_upper_bound_of_the_window_sum():
    e = math.exp(1.0)
    R = [[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]]
    full = blanket_delta(R, 300, [0.3])[0]
    capped = blanket_delta(R, 300, [0.3], max_terms=20)[0]  # 20 blocks of blanket sizes, each at its smallest
    assert capped > full


def test_epsilon_inversion_is_certified():
    e = math.exp(1.0)
    R = [[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]]
    eps = blanket_epsilon(R, 100, 0.05)
    assert blanket_delta(R, 100, [eps])[0] <= 0.05


@pytest.mark.parametrize("call,exc,match", [
    (lambda: blanket_delta([[1.0, 0.0]], 5, [0.1]), ValueError, "at least 2 values"),
    (lambda: blanket_delta(np.eye(2), 0, [0.1]), ValueError, "users"),
    (lambda: blanket_delta(np.eye(2), 5, [0.1], max_histograms=0), ValueError, "max_histograms"),
    (lambda: blanket_epsilon(np.eye(2), 5, 0.0), ValueError, "delta"),
], ids=["rows", "users", "budget", "delta"])
def test_validation(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("seed", [9, 10], ids=lambda s: f"seed{s}")
def test_four_classes_enumeration_brute_force(seed):
    R = random_randomizer(np.random.default_rng(seed), 4, 4)
    for eps in (0.05, 0.3):
        exact = shuffled_worst_delta(R, 4, eps)
        assert blanket_delta(_floats(R), 4, [eps])[0] >= exact


def _enumerated_Db(r0, r1, om, b, e):
    """``sum_h [P_b(h) - e Q_b(h)]_+`` over every histogram of b + 1 draws on three classes (log-multinomials)."""
    total = 0.0
    for h0 in range(b + 2):
        for h1 in range(b + 2 - h0):
            h = (h0, h1, b + 1 - h0 - h1)
            lg = math.lgamma(b + 2) - sum(math.lgamma(x + 1) for x in h) + sum(x * math.log(w) for x, w in zip(h, om))
            base = math.exp(lg) / (b + 1)
            total += max(0.0, base * sum(x * (p - e * q) / w for x, p, q, w in zip(h, r0, r1, om)))
    return total


@pytest.mark.parametrize("b", [0, 1, 5, 40], ids=lambda b: f"b{b}")
def test_closed_form_matches_enumeration(b):
    from chainamp.shuffle.blanket import _three_classes_Db
    r0, r1, om = np.array([0.6, 0.1, 0.3]), np.array([0.1, 0.6, 0.3]), np.array([0.2, 0.2, 0.6])
    for e in (1.0, 1.5, 3.0):
        enum = _enumerated_Db(r0, r1, om, b, e)
        closed = _three_classes_Db(r0, r1, om, np.array([b]), e)[0]
        assert closed >= enum * (1 - 1e-9) - 1e-15
        assert closed <= enum * (1 + 1e-3) + 1e-13  # the margins of SHUFFLE_SPECIAL_RTOL = 1e-6, amplified by cancellation


def test_symmetric_channel_equals_dense_and_scales():
    from chainamp.operators import SymmetricChannel
    K = SymmetricChannel.from_epsilon(4, 2.0)
    dense = np.asarray(K.matrix)
    assert blanket_delta(K, 30, [0.5])[0] == pytest.approx(blanket_delta(dense, 30, [0.5])[0], rel=1e-9)
    big = SymmetricChannel.from_epsilon(10**6, 4.0)
    eps = blanket_epsilon(big, 10**6, 1e-6)
    assert blanket_delta(big, 10**6, [eps])[0] <= 1e-6 and 0 < eps < 0.01


def test_published_hoeffding_and_bennett_values():
    from chainamp.operators import SymmetricChannel
    from chainamp.shuffle import balle_bennett_epsilon, balle_hoeffding_epsilon
    assert round(balle_hoeffding_epsilon(0.4, 5000, 1e-6, k=2), 5) == 0.02398
    assert round(balle_bennett_epsilon(0.4, 5000, 1e-6, k=2), 5) == 0.02428
    assert round(balle_hoeffding_epsilon(0.4, 5000, 1e-6), 5) == 0.05746
    # the exact expectation they relax is smaller
    assert blanket_epsilon(SymmetricChannel.from_epsilon(2, 0.4), 5000, 1e-6) < 0.02398


@pytest.mark.parametrize("call,match", [
    (lambda: __import__("chainamp.shuffle", fromlist=["x"]).balle_hoeffding_epsilon(0.0, 10, 1e-6), "eps0"),
    (lambda: __import__("chainamp.shuffle", fromlist=["x"]).balle_bennett_epsilon(1.0, 10, 1e-6, k=1), "k"),
    (lambda: __import__("chainamp.shuffle", fromlist=["x"]).balle_hoeffding_epsilon(1.0, 10, 2.0), "delta"),
], ids=["eps0", "k", "delta"])
def test_published_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_single_user_is_the_local_randomizer():
    from chainamp.operators import SymmetricChannel
    d = blanket_delta(SymmetricChannel.from_epsilon(3, 1.0), 1, [0.0])[0]
    assert d >= (math.e - 1) / (math.e + 2) and d <= (math.e - 1) / (math.e + 2) * (1 + 1e-5)
    assert blanket_epsilon(np.eye(3), 1000, 1e-6) == math.inf
