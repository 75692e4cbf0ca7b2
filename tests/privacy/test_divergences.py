"""Divergences and log-space helpers against exact (Fraction) and brute-force references."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from chainamp import (InvalidDistributionError, InvalidParameterError, hockey_stick, hockey_stick_curve,
                      renyi_divergence, total_variation)
from chainamp._numerics import log1p_gamma_expm1, log_expm1, logsubexp, round_down, round_up, round_up_array
from conftest import examples, stochastic_matrices


def exact_hockey(p, q, c: Fraction) -> Fraction:
    """sum_y [p_y - c q_y]_+ in exact rational arithmetic (the floats are taken as exact)."""
    return sum((max(Fraction(a) - c * Fraction(b), Fraction(0)) for a, b in zip(p, q)), Fraction(0))


# 60 examples in the default run (150 before issue 20 §6; 600 under --hypothesis-profile=ci, 150
# before): the same branches of chainamp are reached (coverage.py, branch mode, seeds 1-3)
@given(stochastic_matrices(min_n=2, max_n=2, max_m=6), st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0]))
@settings(max_examples=examples(60), deadline=None)
def test_hockey_stick_never_below_exact(P, eps):
    p, q = P
    # e^eps is irrational; bracket it by Fractions of the float exp rounded down/up to get a rigorous reference
    c_low = Fraction(math.nextafter(math.exp(eps), 0.0)) if eps else Fraction(1)
    reported = hockey_stick(p, q, eps)
    assert Fraction(reported) >= min(exact_hockey(p, q, c_low), Fraction(1))  # D_c is decreasing in c
    assert reported <= float(exact_hockey(p, q, c_low)) + 1e-12  # and is tight


@given(stochastic_matrices(min_n=2, max_n=2, max_m=6))
@settings(max_examples=100, deadline=None)
def test_tv_is_half_l1_and_rounded_up(P):
    p, q = P
    exact = Fraction(1, 2) * sum(abs(Fraction(a) - Fraction(b)) for a, b in zip(p, q))
    # p and q sum to 1 only up to float rounding; the two TV formulas then differ by |sum p - sum q| / 2
    slack = abs(sum(Fraction(a) for a in p) - sum(Fraction(b) for b in q)) / 2
    # reported values are capped at 1, which is always a valid coefficient
    assert Fraction(total_variation(p, q)) >= min(exact - slack, Fraction(1))
    assert total_variation(p, q) <= float(exact) + 1e-12


@pytest.mark.parametrize("p, q, eps, expected", [
    ([0.75, 0.25], [0.25, 0.75], 0.0, 0.5),
    ([0.75, 0.25], [0.25, 0.75], math.log(2), 0.25),
    ([0.75, 0.25], [0.25, 0.75], math.log(3), 0.0),
    ([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], math.inf, 0.5),
    ([1.0, 0.0], [1.0, 0.0], 0.0, 0.0),
], ids=["tv", "eps=ln2", "eps=ln3", "footnote3", "equal"])
def test_hockey_stick_values(p, q, eps, expected):
    # upward rounding adds at most (m + 11) u times the mass involved
    assert expected <= hockey_stick(p, q, eps) <= expected + 1e-14


def test_hockey_stick_large_epsilon_and_tiny_probabilities():
    p = np.array([1e-300, 1.0 - 1e-300])
    q = np.array([5e-324, 1.0 - 5e-324])
    # ratio p0/q0 = 1e-300 / 5e-324 ~ 2e23, log ~ 53.7: above eps=50, below eps=700
    assert hockey_stick(p, q, 50.0) > 0
    assert hockey_stick(p, q, 700.0) == 0.0
    assert hockey_stick([1.0, 0.0], [0.5, 0.5], 700.0) == 0.0
    assert math.isfinite(hockey_stick([0.5, 0.5], [1e-300, 1 - 1e-300], 700.0))


# 50 examples in the default run (100 before issue 20 §6; 500 under --hypothesis-profile=ci, 100
# before): the same branches of chainamp are reached (coverage.py, branch mode, seeds 1-3)
@given(stochastic_matrices(min_n=2, max_n=2, max_m=7), st.lists(st.floats(0, 8), min_size=1, max_size=6))
@settings(max_examples=examples(50), deadline=None)
def test_curve_matches_pointwise(P, eps_list):
    p, q = P
    curve = hockey_stick_curve(p, q, eps_list + [math.inf])
    point = [hockey_stick(p, q, e) for e in eps_list + [math.inf]]
    # both are upward-rounded evaluations of the same sum; they agree to the rounding slack
    np.testing.assert_allclose(curve, point, rtol=0, atol=1e-12)  # curve also covers log-ratio error
    assert np.all(np.diff(curve[np.argsort(eps_list + [math.inf])]) <= 1e-15)


def test_curve_rejects_bad_epsilons():
    with pytest.raises(InvalidParameterError, match="epsilons must be"):
        hockey_stick_curve([0.5, 0.5], [0.5, 0.5], [-1.0])
    with pytest.raises(InvalidParameterError, match="epsilons must be"):
        hockey_stick_curve([0.5, 0.5], [0.5, 0.5], [[0.1]])


def brute_renyi(p, q, a):
    if math.isinf(a):
        return max(math.log(x / y) for x, y in zip(p, q) if x > 0)
    if a == 1:
        return sum(x * math.log(x / y) for x, y in zip(p, q) if x > 0)
    return math.log(sum(x**a * y ** (1 - a) for x, y in zip(p, q) if x > 0)) / (a - 1)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.5, 2.0, 10.0, math.inf], ids=lambda a: f"alpha={a}")
def test_renyi_against_direct_sum(alpha):
    rng = np.random.default_rng(1)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        ref = brute_renyi(p, q, alpha)
        got = renyi_divergence(p, q, alpha)
        assert ref <= got <= ref + 1e-12 * max(1.0, ref)


def test_renyi_support():
    assert renyi_divergence([0.5, 0.5], [1.0, 0.0], 2.0) == math.inf
    assert renyi_divergence([1.0, 0.0], [0.5, 0.5], 2.0) == pytest.approx(math.log(2), rel=1e-12)
    assert renyi_divergence([1.0, 0.0], [0.0, 1.0], 0.5) == math.inf


@pytest.mark.parametrize("fn, args, err, match", [
    (hockey_stick, ([0.5, 0.5], [0.5, 0.5], -1.0), InvalidParameterError, r"epsilon must be >= 0 \(got -1\.0\)"),
    (hockey_stick, ([0.5, 0.5], [0.5, 0.5], math.nan), InvalidParameterError, "epsilon must not be NaN"),
    (hockey_stick, ([0.5, 0.4], [0.5, 0.5], 0.0), InvalidDistributionError, r"p must sum to 1 \(sums to 0\.9"),
    (hockey_stick, ([0.5, 0.5], [1.0], 0.0), InvalidDistributionError, "q must have 2 entries"),
    (hockey_stick, ([1.5, -0.5], [0.5, 0.5], 0.0), InvalidDistributionError, "negative entry"),
    (hockey_stick, ([np.nan, 1.0], [0.5, 0.5], 0.0), InvalidDistributionError, "non-finite"),
    (hockey_stick, ([[1.0]], [1.0], 0.0), InvalidDistributionError, "1-D"),
    (hockey_stick, (["a"], [1.0], 0.0), TypeError, "array of numbers"),
    (hockey_stick, ([1.0], [1.0], "1"), TypeError, "epsilon must be a real number"),
    (renyi_divergence, ([1.0], [1.0], 0.0), InvalidParameterError, r"alpha must be > 0"),
], ids=["eps-neg", "eps-nan", "p-sum", "q-size", "negative", "nan-entry", "2d", "strings", "eps-type", "alpha"])
def test_validation(fn, args, err, match):
    with pytest.raises(err, match=match):
        fn(*args)


class TestLogMath:
    @pytest.mark.parametrize("x", [1e-10, 0.5, 1.0, 30.5, 700.0, 1000.0], ids=str)
    def test_log_expm1(self, x):
        ref = math.log(math.expm1(x)) if x < 700 else x  # e^-700 below double resolution of 700
        assert log_expm1(x) == pytest.approx(ref, rel=1e-14)

    def test_log_expm1_edges(self):
        assert log_expm1(0.0) == -math.inf and math.isnan(log_expm1(-1.0)) and log_expm1(math.inf) == math.inf

    @pytest.mark.parametrize("g, eps", [(0.5, 1.0), (1e-9, 3.0), (0.3, 200.0), (0.3, 705.0), (0.3, 5000.0)], ids=str)
    def test_log1p_gamma_expm1(self, g, eps):
        # reference in extended form: log(1 + g (e^eps - 1)) = eps + log(g + (1 - g) e^-eps) for large eps
        ref = math.log1p(g * math.expm1(eps)) if eps < 700 else eps + math.log(g + (1 - g) * math.exp(-eps))
        assert log1p_gamma_expm1(g, eps) == pytest.approx(ref, rel=1e-13)

    def test_log1p_gamma_expm1_edges(self):
        assert log1p_gamma_expm1(0.0, 5.0) == 0.0 and log1p_gamma_expm1(0.5, math.inf) == math.inf

    def test_logsubexp(self):
        assert logsubexp(1.0, -math.inf) == 1.0 and logsubexp(1.0, 1.0) == -math.inf
        with pytest.raises(ValueError, match="a >= b"):
            logsubexp(0.0, 1.0)

    @given(st.floats(0, 1e300), st.integers(0, 10**6))
    @settings(max_examples=200, deadline=None)
    def test_rounding_directions(self, x, n):
        assert round_up(x, n) >= x and round_down(x, n) <= x
        assert round_up(x, n, upper=1.0) <= max(1.0, x) if x <= 1 else True
        assert np.all(round_up_array(np.array([x]), n) >= x)

    def test_round_special(self):
        assert round_up(0.0) == 0.0 and round_up(math.inf) == math.inf and round_down(math.inf) == math.inf
        assert round_up(0.0, scale=1.0) > 0.0 and round_down(0.5, lower=0.5) == 0.5
