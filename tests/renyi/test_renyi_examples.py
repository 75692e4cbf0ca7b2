"""Examples 1-3 of Balle et al. 2019 (iterated Gaussian, iterated Laplace, Lipschitz kernel).

References: exact Renyi divergences of the post-processed laws by quadrature
(scipy.integrate.quad) or by numerical convolution on a grid, and brute-force
searches over the interpolation point w.
"""

import math

import numpy as np
import pytest
from scipy import integrate, optimize

from chainamp.errors import InvalidParameterError
from chainamp.renyi import (iterated_gaussian_bound, iterated_gaussian_optimal, iterated_laplace_bound,
                            iterated_laplace_optimal, lap2_logpdf, lap2_pdf, lap2_pure_epsilon,
                            laplace_renyi_divergence, lipschitz_gaussian_bound, lipschitz_gaussian_optimal)

# quad on these smooth (or kink-split) integrands is accurate to ~1e-10 relative; 1e-7 is the margin.
QUAD_RTOL = 1e-7


def _gauss_renyi_quad(m1, m2, var, alpha):
    s = math.sqrt(var)
    f = lambda x: math.exp(-(alpha * (x - m1) ** 2 + (1 - alpha) * (x - m2) ** 2) / (2 * var)) / (s * math.sqrt(2 * math.pi))  # noqa
    val, _ = integrate.quad(f, -np.inf, np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return math.log(val) / (alpha - 1)


# ----------------------------------------------------------------- Example 1
@pytest.mark.parametrize("s1,s2,alpha", [(1.0, 1.0, 2.0), (0.5, 2.0, 5.0), (2.0, 0.3, 1.5)],
                         ids=["equal", "weak-first", "weak-second"])
def test_iterated_gaussian_optimum_is_exact_rdp_of_sum(s1, s2, alpha):
    u, v = 1.3, -0.4
    b = iterated_gaussian_optimal(u, v, s1, s2, alpha)
    exact = _gauss_renyi_quad(u, v, s1**2 + s2**2, alpha)  # K(M(D)) = N(f(D), s1^2 + s2^2)
    assert b.value >= exact * (1 - QUAD_RTOL)
    assert b.value == pytest.approx(exact, rel=QUAD_RTOL)
    assert b.value == pytest.approx(alpha * (u - v) ** 2 / (2 * (s1**2 + s2**2)), rel=1e-13)


def test_iterated_gaussian_arbitrary_w_and_numerical_minimiser():
    u, v, s1, s2, a = np.array([1.0, 2.0]), np.array([0.0, -1.0]), 0.8, 1.7, 3.0
    opt = iterated_gaussian_optimal(u, v, s1, s2, a)
    rng = np.random.default_rng(3)
    for w in rng.normal(size=(20, 2)) * 2:
        assert iterated_gaussian_bound(u, v, w, s1, s2, a).value >= opt.value * (1 - 1e-13)
    res = optimize.minimize(lambda w: iterated_gaussian_bound(u, v, w, s1, s2, a).value, x0=np.zeros(2),
                            method="BFGS", options={"gtol": 1e-10})
    # BFGS on a quadratic: minimiser within 1e-5 of theta u + (1 - theta) v
    np.testing.assert_allclose(res.x, opt.w, rtol=0, atol=1e-5)
    assert opt.theta == pytest.approx(1 / (1 + s2**2 / s1**2), rel=1e-14)
    assert res.fun >= opt.value * (1 - 1e-12)


# ----------------------------------------------------------------- Example 3
def test_lipschitz_gaussian_linear_map_is_tight():
    # psi(x) = L x: K(M(D)) = N(L f(D), L^2 s1^2 + s2^2), exact RDP alpha Delta^2 / (2 sigma_*^2)
    u, v, s1, s2, L, a = 1.0, 0.0, 1.0, 0.7, 0.6, 4.0
    b = lipschitz_gaussian_optimal(u, v, s1, s2, L, a)
    exact = _gauss_renyi_quad(L * u, L * v, L**2 * s1**2 + s2**2, a)
    assert b.value >= exact * (1 - QUAD_RTOL)
    assert b.value == pytest.approx(exact, rel=QUAD_RTOL)
    assert b.value == pytest.approx(a * (u - v) ** 2 / (2 * (s1**2 + s2**2 / L**2)), rel=1e-13)


def _nonlinear_exact(u, v, s1, s2, L, alpha):
    """R_alpha of the laws of L tanh(X) + Z, X ~ N(u or v, s1^2), Z ~ N(0, s2^2), on a grid."""
    x = np.linspace(-12, 12, 3001)
    y = np.linspace(-L - 10 * s2, L + 10 * s2, 1501)
    kern = np.exp(-((y[None, :] - L * np.tanh(x)[:, None]) ** 2) / (2 * s2**2)) / (s2 * math.sqrt(2 * math.pi))
    dens = []
    for m in (u, v):
        px = np.exp(-((x - m) ** 2) / (2 * s1**2)) / (s1 * math.sqrt(2 * math.pi))
        dens.append(integrate.trapezoid(px[:, None] * kern, x, axis=0))
    p, q = dens
    return math.log(integrate.trapezoid(p**alpha * q ** (1 - alpha), y)) / (alpha - 1)


def test_lipschitz_gaussian_bound_holds_for_nonlinear_map():
    u, v, s1, s2, L, a = 0.5, -0.5, 0.8, 0.5, 0.9, 3.0
    b = lipschitz_gaussian_optimal(u, v, s1, s2, L, a)
    exact = _nonlinear_exact(u, v, s1, s2, L, a)
    # grid quadrature error ~1e-8 here; the bound has a margin of several percent
    assert b.value >= exact + 1e-6
    assert lipschitz_gaussian_bound(u, v, 0.0, s1, s2, L, a).value >= b.value
    assert lipschitz_gaussian_optimal(u, v, s1, s2, 0.0, a).value == 0.0  # constant map forgets everything


# ----------------------------------------------------------------- Example 2: Lap2 density
def _lap2_conv(x, l1, l2):
    f = lambda t: math.exp(-abs(x - t) / l1 - abs(t) / l2) / (4 * l1 * l2)  # noqa: E731
    pts = sorted({0.0, x})
    parts = [(-np.inf, pts[0])] + [(pts[k], pts[k + 1]) for k in range(len(pts) - 1)] + [(pts[-1], np.inf)]
    return sum(integrate.quad(f, a, b, epsabs=0, epsrel=1e-12)[0] for a, b in parts)


@pytest.mark.parametrize("l1,l2", [(1.0, 1.0), (1.0, 2.0), (3.0, 0.5), (1.0, 1.0 + 1e-7)],
                         ids=["equal", "l1<l2", "l1>l2", "nearly-equal"])
def test_lap2_pdf_matches_convolution_integral(l1, l2):
    for x in (-3.0, 0.0, 0.4, 2.5, 10.0):
        assert lap2_pdf(x, l1, l2) == pytest.approx(_lap2_conv(x, l1, l2), rel=1e-9)
    total, _ = integrate.quad(lambda x: float(lap2_pdf(x, l1, l2)), -np.inf, np.inf, points=None, epsrel=1e-12)
    assert total == pytest.approx(1.0, rel=1e-8)


def test_lap2_symmetric_in_scales_and_vectorised():
    x = np.linspace(-5, 5, 11)
    np.testing.assert_allclose(lap2_pdf(x, 1.0, 2.0), lap2_pdf(x, 2.0, 1.0), rtol=1e-14, atol=0)
    np.testing.assert_allclose(lap2_pdf(x, 1.5, 1.5 * (1 + 1e-9)), lap2_pdf(x, 1.5, 1.5), rtol=1e-8, atol=0)


@pytest.mark.parametrize("l1,l2", [(1.0, 1.0), (1.0, 2.0), (2.5, 0.7)], ids=["equal", "l1<l2", "l1>l2"])
def test_lemma3_limit_of_log_ratio(l1, l2):
    delta = 0.8
    eps = lap2_pure_epsilon(delta, l1, l2)
    assert eps == pytest.approx(delta / max(l1, l2), rel=1e-15)
    xs = np.concatenate([np.linspace(0.0, 400.0 * max(l1, l2), 4001), [1e7]])
    ratios = lap2_logpdf(xs, l1, l2) - lap2_logpdf(xs + delta, l1, l2)
    # the limit x -> inf (the equal-scale case converges like delta/x: 8e-8 at x = 1e7)
    assert abs(ratios[-1] - eps) < 1e-6
    # and it is the supremum (approached from below); the log-densities are ~ -x/lambda, so
    # their difference carries a float error ~ x * u: allow 1e-14 * (1 + x)
    assert np.all(ratios <= eps + 1e-14 * (1 + xs))


# ----------------------------------------------------------------- Example 2: coupling bound vs exact
def _lap2_renyi_quad(delta, l1, l2, alpha):
    f = lambda x: math.exp(alpha * lap2_logpdf(x, l1, l2) + (1 - alpha) * lap2_logpdf(x - delta, l1, l2))  # noqa
    parts = [(-np.inf, 0.0), (0.0, delta), (delta, np.inf)]
    val = sum(integrate.quad(f, a, b, epsabs=0, epsrel=1e-12, limit=200)[0] for a, b in parts)
    return math.log(val) / (alpha - 1)


@pytest.mark.parametrize("l1,l2,alpha,delta", [
    (1.0, 1.0, 2.0, 1.0), (1.0, 1.0, 8.0, 2.0), (1.0, 2.0, 3.0, 1.0), (2.0, 1.0, 3.0, 1.0), (0.5, 3.0, 1.5, 0.7),
], ids=["equal-a2", "equal-a8", "l1<l2", "l1>l2", "very-different"])
def test_iterated_laplace_bound_exceeds_exact_divergence(l1, l2, alpha, delta):
    b = iterated_laplace_optimal(delta, 0.0, l1, l2, alpha)
    exact = _lap2_renyi_quad(delta, l1, l2, alpha)
    assert b.value >= exact * (1 + QUAD_RTOL)
    # never worse than either endpoint (no amplification: plain Laplace RDP at l1 or l2)
    assert b.value <= min(laplace_renyi_divergence(delta, l1, alpha), laplace_renyi_divergence(delta, l2, alpha))
    # the optimiser's point beats a brute-force grid over w in [0, delta] up to 1e-9
    grid = min(iterated_laplace_bound(delta, 0.0, w, l1, l2, alpha).value for w in np.linspace(0, delta, 401))
    assert b.value <= grid + 1e-9


def test_iterated_laplace_amplifies_for_equal_scales_and_not_at_infinity():
    b = iterated_laplace_optimal(1.0, 0.0, 1.0, 1.0, 2.0)
    assert b.value < laplace_renyi_divergence(1.0, 1.0, 2.0) - 0.1  # log-convexity of g_alpha
    assert b.w == pytest.approx(0.5, abs=1e-6)
    inf = iterated_laplace_optimal(1.0, 0.0, 1.0, 2.0, math.inf)
    assert inf.value == pytest.approx(lap2_pure_epsilon(1.0, 1.0, 2.0), rel=1e-14)  # Lemma 3


@pytest.mark.parametrize("call,match", [
    (lambda: iterated_gaussian_optimal(1.0, 0.0, 0.0, 1.0, 2.0), "sigma1 must be > 0"),
    (lambda: iterated_gaussian_optimal(1.0, 0.0, 1.0, -1.0, 2.0), "sigma2 must be > 0"),
    (lambda: iterated_gaussian_optimal(1.0, 0.0, 1.0, 1.0, 1.0), "alpha must be > 1"),
    (lambda: iterated_gaussian_optimal(1.0, 0.0, 1.0, 1.0, math.inf), "alpha must be finite"),
    (lambda: iterated_gaussian_bound([1.0, 0.0], 0.0, [0.0, 0.0, 1.0], 1.0, 1.0, 2.0), "one dimension"),
    (lambda: lipschitz_gaussian_optimal(1.0, 0.0, 1.0, 1.0, -0.5, 2.0), "lipschitz must be >= 0"),
    (lambda: iterated_laplace_optimal(1.0, 0.0, 1.0, 1.0, 0.9), "alpha must be > 1"),
    (lambda: iterated_laplace_bound(1.0, 0.0, 0.5, 0.0, 1.0, 2.0), "lambda1 must be > 0"),
    (lambda: lap2_pdf(0.0, 1.0, 0.0), "lambda2 must be > 0"),
    (lambda: iterated_gaussian_bound([np.nan], [0.0], [0.0], 1.0, 1.0, 2.0), "u must be a finite"),
], ids=["sigma1", "sigma2", "alpha-one", "alpha-inf", "dims", "lipschitz", "laplace-alpha", "lambda1",
        "lambda2", "nan-point"])
def test_example_validation(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call()
