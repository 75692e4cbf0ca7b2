"""Tests for chainamp.diffusion.accuracy: the errors of Section 5.1 and Theorem 8 (Balle et al. 2019).

Each formula is checked against something computed independently of it: brute-force
minimisation over a grid, the exact Gaussian Renyi divergence alpha ||m1 - m2||^2_{S^-1} / 2
between the two output laws, and Monte Carlo with fixed seeds (tolerance: several standard errors).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from chainamp.diffusion import (
    BrownianMotion,
    MonteCarloEstimate,
    OrnsteinUhlenbeck,
    OUParameters,
    estimate_mse,
    matched_gaussian_mse,
    matched_gaussian_variance,
    ou_condition,
    ou_mse,
    ou_parameters_for_epsilon,
    pgm_mse,
    pgm_scale,
)
from chainamp.errors import InvalidParameterError

#: closed-form identities evaluated in floating point (plus the outward rounding ~1e-15).
FLOAT_RTOL = 1e-12
#: Monte Carlo agreement in standard errors (fixed seeds; ~5.7e-7 two-sided false alarm).
N_SE = 5.0


def exact_gaussian_renyi(alpha, m1, m2, cov):
    """D_alpha(N(m1, S) || N(m2, S)) = alpha (m1 - m2)^T S^{-1} (m1 - m2) / 2."""
    diff = np.asarray(m1) - np.asarray(m2)
    return alpha * float(diff @ np.linalg.solve(cov, diff)) / 2.0


# ----------------------------------------------------------------------------- Section 5.1 errors


def test_ou_mse_eq4_against_monte_carlo():
    theta, rho, t, x = 0.7, 1.1, 1.3, np.array([1.0, -0.5, 0.25, 2.0])
    est = estimate_mse(OrnsteinUhlenbeck(theta, rho), x, t, 100000, np.random.default_rng(9))
    assert isinstance(est, MonteCarloEstimate) and est.n_samples == 100000
    exact = ou_mse(theta, rho, t, x.size, float(np.linalg.norm(x)))
    assert abs(est.mean - exact) <= N_SE * est.standard_error
    assert ou_mse(theta, rho, 0.0, 4, 3.0) == 0.0


def test_matched_gaussian_has_same_rdp_and_its_mse():
    theta, rho, t, d, sens = 0.9, 0.8, 0.7, 3, 1.5
    var = matched_gaussian_variance(theta, rho, t)
    assert var == pytest.approx(rho**2 * (math.exp(2 * theta * t) - 1) / theta, rel=FLOAT_RTOL)
    # the Gaussian mechanism N(f, var I) is Brownian motion at time var / 2: same RDP
    gm_eps = BrownianMotion().rdp(4.0, var / 2, sens)
    assert gm_eps == pytest.approx(OrnsteinUhlenbeck(theta, rho).rdp(4.0, t, sens), rel=FLOAT_RTOL)
    assert gm_eps == pytest.approx(4.0 * sens**2 / (2 * var), rel=FLOAT_RTOL)
    x = np.array([0.3, 0.1, -0.7])
    est = estimate_mse(BrownianMotion(), x, var / 2, 100000, np.random.default_rng(10))
    assert abs(est.mean - matched_gaussian_mse(theta, rho, t, d)) <= N_SE * est.standard_error
    assert matched_gaussian_variance(theta, rho, 0.0) == 0.0
    assert matched_gaussian_variance(1.0, 1.0, 1000.0) == math.inf


def test_post_processed_gaussian():
    theta, rho, t, d, R = 0.5, 0.6, 1.0, 2, 1.5
    var = matched_gaussian_variance(theta, rho, t)
    beta = pgm_scale(theta, rho, t, d, R)
    # beta minimises the worst case (|f| = R) MSE: brute force over a fine grid
    grid = np.linspace(0, 1, 100001)
    worst = (1 - grid) ** 2 * R**2 + grid**2 * d * var
    assert beta == pytest.approx(grid[np.argmin(worst)], abs=2e-5)
    # at |f| = R the MSE equals the paper's bound E_GM (1 + d var / R^2)^{-1}; inside it is smaller
    bound = d * var / (1 + d * var / R**2)
    assert pgm_mse(theta, rho, t, d, R) == pytest.approx(bound, rel=FLOAT_RTOL)
    assert pgm_mse(theta, rho, t, d, R, f_norm=0.5) < bound
    x = np.array([R, 0.0])
    est = estimate_mse(BrownianMotion(), x, var / 2, 100000, np.random.default_rng(12), scale=beta)
    assert abs(est.mean - bound) <= N_SE * est.standard_error
    assert pgm_mse(1.0, 1.0, 1000.0, d, R) == R**2  # infinite noise: beta = 0


# ----------------------------------------------------------------------------- Theorem 8


@pytest.mark.parametrize("theta,rho,R,d", [(1.0, 0.5, 1.0, 1), (2.0, 1.0, 2.0, 3), (0.1, 0.4, 3.0, 2)],
                         ids=["edge", "d=3", "small-theta"])
def test_theorem8_ratio_at_most_one_under_condition(theta, rho, R, d):
    assert ou_condition(theta, R, d, rho)
    for t in np.geomspace(1e-4, 30, 200):
        gm = matched_gaussian_mse(theta, rho, t, d)
        for fn in (0.0, 0.5 * R, R):
            assert ou_mse(theta, rho, t, d, fn) <= gm * (1 + 1e-12)
    # ratio -> 0 as t -> inf: E_OU stays bounded while E_GM grows like e^{2 theta t}
    big = 30.0 / theta
    assert ou_mse(theta, rho, big, d, R) / matched_gaussian_mse(theta, rho, big, d) < 1e-20


def test_theorem8_condition_is_needed():
    # theta R^2 > 4 d rho^2: for small t, E_OU - E_GM ~ theta t^2 (theta R^2 - 4 d rho^2) > 0
    theta, rho, R, d = 1.0, 0.5, 1.5, 1
    assert not ou_condition(theta, R, d, rho)
    t = 1e-2
    assert ou_mse(theta, rho, t, d, R) > matched_gaussian_mse(theta, rho, t, d)
    assert ou_condition(theta, 0.0, 1, rho)


@pytest.mark.parametrize("eps,d", [(0.5, 3), (2.0, 10)], ids=["eps=0.5,d=3", "eps=2,d=10"])
def test_theorem8_parameter_choice_monte_carlo_on_bounded_query(eps, d):
    # Bounded query: f(D) = mean of n records in the ball of radius R, so |f(D)| <= R and the
    # replace-one L2 sensitivity is Delta = 2R/n.
    R, n_rec = 1.0, 4
    sens = 2 * R / n_rec
    p = ou_parameters_for_epsilon(eps, sens, R, d)
    assert isinstance(p, OUParameters) and p.t == 1.0
    a = d * sens**2 / (2 * eps * R**2)
    assert p.theta == pytest.approx(math.log(1 + a), rel=FLOAT_RTOL)
    assert p.rho**2 == pytest.approx(p.theta * sens**2 / (2 * eps * (math.exp(2 * p.theta) - 1)), rel=1e-12)
    ou = OrnsteinUhlenbeck(p.theta, p.rho)
    # privacy: (alpha, alpha eps)-RDP at t = 1, never above the target
    assert p.certified_epsilon <= eps and p.certified_epsilon == pytest.approx(eps, rel=1e-12)
    assert ou.rdp(3.0, 1.0, sens) <= 3.0 * eps * (1 + 1e-15)
    # ... and it is exact for the output laws of two neighbouring datasets at distance Delta
    k1, k2 = ou.kernel(np.zeros(d), 1.0), ou.kernel(np.eye(d)[0] * sens, 1.0)
    assert exact_gaussian_renyi(3.0, k1.mean, k2.mean, k1.covariance) == pytest.approx(3.0 * eps, rel=1e-10)
    # error: E_GM(1) = d Delta^2 / (2 eps) and the ratio bound is attained at |f| = R
    assert p.gaussian_mse == pytest.approx(matched_gaussian_mse(p.theta, p.rho, 1.0, d), rel=1e-12)
    assert p.mse_ratio_bound == pytest.approx(1 / (1 + a), rel=FLOAT_RTOL)
    assert ou_mse(p.theta, p.rho, 1.0, d, R) == pytest.approx(p.ou_mse_bound, rel=1e-12)
    # Monte Carlo on a dataset: records in the ball, f(D) their mean; one worst-case f on the sphere
    rng = np.random.default_rng(77)
    recs = rng.normal(size=(n_rec, d))
    recs *= (R * rng.uniform(size=(n_rec, 1)) ** (1 / d)) / np.linalg.norm(recs, axis=1, keepdims=True)
    for f in (recs.mean(axis=0), np.eye(d)[0] * R):
        assert np.linalg.norm(f) <= R
        est = estimate_mse(ou, f, 1.0, 100000, rng)
        assert abs(est.mean - ou_mse(p.theta, p.rho, 1.0, d, float(np.linalg.norm(f)))) <= N_SE * est.standard_error
        assert est.mean <= p.mse_ratio_bound * p.gaussian_mse + N_SE * est.standard_error
    gm_est = estimate_mse(BrownianMotion(), f, sens**2 / (4 * eps), 100000, rng)
    assert abs(gm_est.mean - p.gaussian_mse) <= N_SE * gm_est.standard_error


# ----------------------------------------------------------------------------- validation


OU = OrnsteinUhlenbeck(1.0, 1.0)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ou_mse(1.0, 1.0, -1.0, 1, 1.0), InvalidParameterError, r"t must be >= 0 \(got -1.0\)"),
        (lambda: ou_mse(1.0, 1.0, 1.0, 0, 1.0), InvalidParameterError, r"d must be >= 1 \(got 0\)"),
        (lambda: ou_mse(1.0, 1.0, 1.0, 1.5, 1.0), TypeError, r"d must be an integer"),
        (lambda: ou_mse(1.0, 1.0, 1.0, 1, -1.0), InvalidParameterError, r"f_norm must be >= 0"),
        (lambda: ou_mse(-1.0, 1.0, 1.0, 1, 1.0), InvalidParameterError, r"theta must be > 0"),
        (lambda: matched_gaussian_variance(1.0, 0.0, 1.0), InvalidParameterError, r"rho must be > 0"),
        (lambda: matched_gaussian_variance(1.0, 1.0, -2.0), InvalidParameterError, r"t must be >= 0"),
        (lambda: matched_gaussian_mse(1.0, 1.0, 1.0, 0), InvalidParameterError, r"d must be >= 1"),
        (lambda: pgm_scale(1.0, 1.0, 1.0, 1, 0.0), InvalidParameterError, r"R must be > 0 \(got 0.0\)"),
        (lambda: pgm_mse(1.0, 1.0, 1.0, 1, 1.0, f_norm=2.0), InvalidParameterError, r"f_norm must be <= R"),
        (lambda: pgm_mse(1.0, 1.0, 1.0, 1, 1.0, f_norm=-0.5), InvalidParameterError, r"f_norm must be >= 0"),
        (lambda: ou_condition(1.0, -1.0, 1, 1.0), InvalidParameterError, r"R must be >= 0"),
        (lambda: ou_condition(-1.0, 1.0, 1, 1.0), InvalidParameterError, r"theta must be > 0"),
        (lambda: ou_condition(1.0, 1.0, 0, 1.0), InvalidParameterError, r"d must be >= 1"),
        (lambda: ou_parameters_for_epsilon(0.0, 1.0, 1.0, 1), InvalidParameterError, r"epsilon must be > 0"),
        (lambda: ou_parameters_for_epsilon(1.0, 0.0, 1.0, 1), InvalidParameterError, r"sensitivity must be > 0"),
        (lambda: ou_parameters_for_epsilon(1.0, 1.0, 0.0, 1), InvalidParameterError, r"R must be > 0"),
        (lambda: ou_parameters_for_epsilon(1.0, 1.0, 1.0, 0), InvalidParameterError, r"d must be >= 1"),
        (lambda: ou_parameters_for_epsilon(1e-300, 1e200, 1e-200, 1), InvalidParameterError,
         r"must be finite and > 0"),
        (lambda: ou_parameters_for_epsilon(1.0, 1e-200, 1e200, 1), InvalidParameterError,
         r"must be finite and > 0"),
        (lambda: estimate_mse("ou", [1.0], 1.0, 10, np.random.default_rng(0)), TypeError,
         r"semigroup must be BrownianMotion or OrnsteinUhlenbeck"),
        (lambda: estimate_mse(OU, [[1.0], [2.0]], 1.0, 10, np.random.default_rng(0)), InvalidParameterError,
         r"x must be a single point"),
        (lambda: estimate_mse(OU, [1.0], 1.0, 1, np.random.default_rng(0)), InvalidParameterError,
         r"n_samples must be >= 2"),
        (lambda: estimate_mse(OU, [1.0], 1.0, 10, np.random.default_rng(0), scale="a"), TypeError,
         r"scale must be a real number"),
    ],
    ids=["mse-t", "mse-d0", "mse-dfloat", "mse-fnorm", "mse-theta", "mgv-rho", "mgv-t", "mgm-d", "pgm-R",
         "pgm-fnorm>R", "pgm-fnorm<0", "cond-R", "cond-theta", "cond-d", "par-eps", "par-sens", "par-R",
         "par-d", "par-overflow", "par-underflow", "est-type", "est-shape", "est-n", "est-scale"],
)
def test_function_validation(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
