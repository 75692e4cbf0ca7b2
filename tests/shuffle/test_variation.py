"""chainamp.shuffle.variation: the variation-ratio bound (Wang et al. 2024), sound, against brute force."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from chainamp.errors import InvalidParameterError
from chainamp.operators import SymmetricChannel
from chainamp.shuffle import VariationRatio, variation_ratio_delta, variation_ratio_epsilon, variation_ratio_parameters

sys.path.insert(0, str(Path(__file__).parent))
from brute_histograms import krr, random_randomizer, shuffled_worst_delta  # noqa: E402


def _floats(R):
    return [[float(v) for v in row] for row in R]


@pytest.mark.parametrize("k,n", [(2, 5), (3, 5), (4, 4)], ids=["k2n5", "k3n5", "k4n4"])
def test_krr_brute_force(k, n):
    R = krr(k, 3, 1)
    for eps in (0.0, 0.2, 0.6):
        exact = shuffled_worst_delta(R, n, eps, pairs=[(0, 1)])
        assert variation_ratio_delta(_floats(R), n, [eps])[0] >= exact


@pytest.mark.parametrize("seed", [3, 4, 5], ids=lambda s: f"seed{s}")
def test_random_randomizers_brute_force(seed):
    R = random_randomizer(np.random.default_rng(seed), 3, 3)
    for eps in (0.0, 0.1, 0.3):
        exact = shuffled_worst_delta(R, 4, eps)
        assert variation_ratio_delta(_floats(R), 4, [eps])[0] >= exact


def test_wang_code_undershoot_case_is_covered():
    """n = 7, k = 4, eps0 = 2, eps = 1: their code gives 0.15644; the exact worst case is 0.157355
    (brute force, :func:`test_wang_case_exact_slow`)."""
    assert variation_ratio_delta(SymmetricChannel.from_epsilon(4, 2.0), 7, [1.0])[0] >= 0.157355


@pytest.mark.slow
def test_wang_case_exact_slow():
    e = Fraction(math.exp(2.0))
    R = [[(e if x == y else 1) / (e + 3) for y in range(4)] for x in range(4)]
    exact = shuffled_worst_delta(R, 7, 1.0, pairs=[(0, 1)])
    assert abs(float(exact) - 0.157355) < 1e-6
    assert variation_ratio_delta(SymmetricChannel.from_epsilon(4, 2.0), 7, [1.0])[0] >= exact


def test_binary_rr_is_the_stronger_clone_value():
    eps = variation_ratio_epsilon(SymmetricChannel.from_epsilon(2, 2.0), 1000, 1e-6)
    assert eps == pytest.approx(0.397, abs=1e-3)


def test_krr_million_categories_is_fast():
    K = SymmetricChannel.from_epsilon(10**6, 4.0)
    vr = variation_ratio_parameters(K)
    assert vr.beta == pytest.approx((math.exp(4) - 1) / (math.exp(4) + 10**6 - 1), rel=1e-9)
    eps = variation_ratio_epsilon(vr, 10**6, 1e-6)
    assert 0.0 < eps < 4.0


def test_parameters_as_tuple_and_zero_beta():
    assert variation_ratio_delta((3.0, 0.5, 3.0), 10, [0.1])[0] > 0
    assert variation_ratio_delta(VariationRatio(p=1.0, beta=0.0, q=1.0), 10, [0.1])[0] == 0.0


@pytest.mark.parametrize("call,exc,match", [
    (lambda: VariationRatio(p=0.5, beta=0.1, q=2.0), InvalidParameterError, "p must be a real number >= 1"),
    (lambda: VariationRatio(p=2.0, beta=0.9, q=2.0), InvalidParameterError, "beta=0.9 is above"),
    (lambda: VariationRatio(p=2.0, beta=1.5, q=2.0), InvalidParameterError, "beta must be in"),
    (lambda: VariationRatio(p=3.0, beta=0.2, q=3.0, beta_low=0.3), InvalidParameterError, "beta_low"),
    (lambda: variation_ratio_parameters([[1.0, 0.0]]), ValueError, "at least 2 values"),
    (lambda: variation_ratio_epsilon((3.0, 0.5, 3.0), 10, 2.0), ValueError, "delta"),
    (lambda: variation_ratio_delta((3.0, 0.5, 3.0), 0, [0.1]), ValueError, "users"),
], ids=["p", "beta-max", "beta", "beta-low", "rows", "delta", "users"])
def test_validation(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_no_blanket_no_amplification():
    """The identity reveals every value: delta = 1 at every finite eps and no finite eps reaches delta."""
    assert np.all(variation_ratio_delta(np.eye(3), 1000, [0.0, 5.0, 800.0]) == 1.0)
    assert variation_ratio_epsilon(np.eye(3), 1000, 1e-6) == math.inf
