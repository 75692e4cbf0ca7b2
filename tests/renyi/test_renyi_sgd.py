"""Theorem 4, Theorem 5 and Algorithm 1 (noisy projected SGD) of Balle et al. 2019.

References: exact Renyi divergences of linear-Gaussian iterations (means and variances
propagated step by step in a plain loop), a finite-difference re-run of Algorithm 1,
and the generator script of the shipped data set.
"""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from chainamp.errors import InvalidParameterError
from chainamp.renyi import (RDPCurve, contractive_iteration_bound, feldman_noisy_sgd_slope, iteration_bound,
                            load_noisy_sgd_dataset, noisy_projected_sgd, noisy_sgd_rdp, optimal_iteration_path,
                            regularized_logistic_loss)

ROOT = Path(__file__).resolve().parents[2]


def _linear_gaussian_renyi(shift, steps, sigma, lip, alpha):
    """Exact R_alpha(mu K_1..K_r || nu K_1..K_r) for mu = delta_0, nu = delta_shift,
    K_i(x) = N(lip x + c_i, sigma^2): both laws are Gaussian with one variance."""
    mean_gap, var = shift, 0.0
    for _ in range(steps):
        mean_gap, var = lip * mean_gap, lip * lip * var + sigma * sigma
    return alpha * mean_gap**2 / (2 * var)


# ----------------------------------------------------------------- Theorem 4
@pytest.mark.parametrize("lip,steps", [(1.0, 5), (0.8, 3), (0.5, 10), (0.95, 40)],
                         ids=["nonexpansive", "short", "strong-contraction", "long"])
def test_theorem4_optimal_path_is_exact_for_linear_maps(lip, steps):
    shift, sigma, a = 1.7, 0.9, 3.0
    exact = _linear_gaussian_renyi(shift, steps, sigma, lip, a)
    path = optimal_iteration_path(shift, steps, lip)
    assert path.sum() == pytest.approx(shift, rel=1e-14) and np.all(path >= 0)
    opt = iteration_bound(path, sigma, lip, a)
    assert opt.value >= exact * (1 - 1e-13)
    assert opt.value == pytest.approx(exact, rel=1e-12)
    eq3 = contractive_iteration_bound(shift, steps, sigma, lip, a)
    paper_path = iteration_bound(eq3.path, sigma, lip, a)
    assert sum(eq3.path) == pytest.approx(shift, rel=1e-12)  # the proof's path joins mu to nu
    assert eq3.value >= paper_path.value * (1 - 1e-12) >= opt.value * (1 - 1e-12)


def test_theorem4_any_path_is_an_upper_bound():
    rng = np.random.default_rng(7)
    shift, steps, sigma, lip, a = 1.0, 6, 0.7, 0.9, 2.0
    exact = _linear_gaussian_renyi(shift, steps, sigma, lip, a)
    for _ in range(50):
        path = rng.dirichlet(np.ones(steps)) * shift
        assert iteration_bound(path, sigma, lip, a).value >= exact * (1 - 1e-13)


def test_theorem4_edge_cases():
    assert contractive_iteration_bound(1.0, 3, 1.0, 0.0, 2.0).value == 0.0
    assert iteration_bound([0.0, 0.0], 1.0, 0.5, 2.0).value == 0.0
    assert iteration_bound([1.0], 1.0, 1.0, math.inf).value == math.inf
    # L > 1 is allowed in eq. (2) (the path then matters even more)
    assert iteration_bound([1.0, 0.0], 1.0, 2.0, 2.0).value == pytest.approx(2 * 16 / 2, rel=1e-14)
    np.testing.assert_allclose(optimal_iteration_path(1.0, 3, 2.0), optimal_iteration_path(1.0, 3, 2.0).sum() *
                               np.array([1, 4, 16]) / 21, rtol=1e-14)


@pytest.mark.parametrize("call,match", [
    (lambda: contractive_iteration_bound(1.0, 3, 1.0, 1.1, 2.0), "lipschitz must be <= 1"),
    (lambda: contractive_iteration_bound(1.0, 0, 1.0, 0.5, 2.0), "steps must be >= 1"),
    (lambda: iteration_bound([1.0, -0.1], 1.0, 0.5, 2.0), "path must be a non-empty"),
    (lambda: iteration_bound([], 1.0, 0.5, 2.0), "path must be a non-empty"),
    (lambda: iteration_bound([1.0], 0.0, 0.5, 2.0), "sigma must be > 0"),
    (lambda: iteration_bound([1.0], 1.0, 0.5, 1.0), "alpha must be > 1"),
    (lambda: optimal_iteration_path(-1.0, 3, 0.5), "shift must be >= 0"),
], ids=["eq3-lipschitz", "steps", "negative-path", "empty-path", "sigma", "alpha", "shift"])
def test_theorem4_validation(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call()


# ----------------------------------------------------------------- Theorem 5
def _linear_sgd_exact(n, i, C, sigma, eta, rho, alpha):
    """Exact RDP at index i of Algorithm 1 (no projection) for the gradient g(x, z) = rho x + z, |z| <= C.

    Theorem 5's proof uses only the gradient-difference bound ||g(x,z) - g(x,z')|| <= 2C and the
    contraction of x -> x - eta g(x, z) (here 1 - eta rho <= L); x_n is Gaussian under both datasets.
    """
    gap, var = 0.0, 0.0
    for k in range(1, n + 1):
        gap = (1 - eta * rho) * gap + (eta * 2 * C if k == i else 0.0)
        var = (1 - eta * rho) ** 2 * var + (eta * sigma) ** 2
    return alpha * gap**2 / (2 * var)


@pytest.mark.parametrize("rho,eta", [(0.5, 0.8), (0.1, 2.0), (1.0, 1.0), (0.0, 0.5)],
                         ids=["moderate", "weak-convexity", "max-step", "convex-only"])
def test_theorem5_upper_bounds_exact_linear_sgd(rho, eta):
    n, C, sigma, a = 30, 1.0, 2.0, 4.0
    beta = max(rho, 1e-3) if rho > 0 else 1.0  # quadratic: smoothness = strong convexity
    for i in range(1, n + 1):
        g = noisy_sgd_rdp(n, i, C, sigma, min(eta, 2 / (beta + rho)), beta, rho)
        exact = _linear_sgd_exact(n, i, C, sigma, min(eta, 2 / (beta + rho)), rho, a)
        for slope in (g.slope, g.path_optimal_slope, g.baseline_slope, g.tightest_slope):
            assert a * slope >= exact * (1 - 1e-12)
        assert g.rdp(a) >= exact


def test_feldman_baseline_is_attained_without_strong_convexity():
    # rho = 0 and i = 1: every one of the n noise draws sees the shift, exact = 2 alpha C^2 / (n sigma^2)
    n, C, sigma, a = 12, 1.5, 0.8, 3.0
    exact = _linear_sgd_exact(n, 1, C, sigma, 0.3, 0.0, a)
    assert a * feldman_noisy_sgd_slope(n, 1, C, sigma) == pytest.approx(exact, rel=1e-12)
    assert a * feldman_noisy_sgd_slope(n, 1, C, sigma) >= exact


def test_theorem5_exponential_improvement_and_last_index():
    n, C, sigma, eta, beta, rho = 200, 1.0, 1.0, 0.5, 1.0, 0.5
    q = 1 - 2 * eta * beta * rho / (beta + rho)
    gs = [noisy_sgd_rdp(n, i, C, sigma, eta, beta, rho) for i in range(1, n + 1)]
    assert gs[-1].slope == pytest.approx(2 * C**2 / sigma**2, rel=1e-14)
    slopes = np.array([g.slope for g in gs])
    assert np.all(np.diff(slopes) > 0)  # later indices are less amplified
    # ratio to the baseline decays like q^((n-i)/2): compare with the closed form at i = 1 in logs
    ratio = gs[0].slope / gs[0].baseline_slope
    assert math.log(ratio) == pytest.approx(math.log(n / (n - 1)) + n / 2 * math.log(q), rel=1e-10)
    assert gs[0].contraction >= math.sqrt(q)
    # conversion to (eps, delta) through the RDP curve
    conv = gs[100].to_dp(1e-5)
    assert conv.epsilon == RDPCurve.from_slope(gs[100].tightest_slope).epsilon(1e-5)


@pytest.mark.parametrize("kwargs,match", [
    (dict(eta=1.5), r"eta must be <= 2/\(beta \+ rho\)"),
    (dict(sigma=0.0), "sigma must be > 0"),
    (dict(sigma=-1.0), "sigma must be > 0"),
    (dict(i=0), r"i must be in \[1, n\]"),
    (dict(i=11), r"i must be in \[1, n\]"),
    (dict(rho=2.0), "rho must be <= beta"),
    (dict(beta=0.0), "beta must be > 0"),
    (dict(C=-1.0), "C must be >= 0"),
    (dict(n=0), "n must be >= 1"),
], ids=["eta-too-large", "sigma-zero", "sigma-negative", "index-low", "index-high", "rho-above-beta",
        "beta", "C", "n"])
def test_theorem5_validation(kwargs, match):
    args = dict(n=10, i=5, C=1.0, sigma=1.0, eta=0.5, beta=1.0, rho=0.5)
    args.update(kwargs)
    with pytest.raises(InvalidParameterError, match=match):
        noisy_sgd_rdp(**args)


def test_rdp_order_validation():
    g = noisy_sgd_rdp(10, 5, 1.0, 1.0, 0.5, 1.0, 0.5)
    with pytest.raises(InvalidParameterError, match="alpha must be > 1"):
        g.rdp(1.0)
    with pytest.raises(TypeError, match="i must be an integer"):
        noisy_sgd_rdp(10, 2.5, 1.0, 1.0, 0.5, 1.0, 0.5)


# ----------------------------------------------------------------- Algorithm 1 and the data set
def test_dataset_matches_its_generator():
    spec = importlib.util.spec_from_file_location("gen", ROOT / "datasets" / "noisy_sgd" / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    x, y = gen.generate()
    ds = load_noisy_sgd_dataset()
    np.testing.assert_array_equal(ds.features, x)
    np.testing.assert_array_equal(ds.labels, y)
    assert ds.features.shape == (400, 5) and set(np.unique(ds.labels)) == {-1.0, 1.0}
    assert np.linalg.norm(ds.features, axis=1).max() <= 1.0


def test_algorithm1_matches_finite_difference_rerun():
    ds = load_noisy_sgd_dataset()
    X, y = ds.features[:60], ds.labels[:60]
    sigma, reg, radius, eta = 0.3, 0.1, 2.0, 1.0
    run = noisy_projected_sgd(X, y, sigma=sigma, reg=reg, radius=radius, eta=eta, rng=11)
    # independent re-run: numerical gradients of the per-sample loss, explicit ball projection
    gen = np.random.default_rng(11)
    x = np.zeros(X.shape[1])
    for a_j, y_j in zip(X, y):
        grad = approx_fprime(x, lambda w: regularized_logistic_loss(w, a_j[None, :], [y_j], reg), 1e-7)
        x = x - eta * (grad + sigma * gen.standard_normal(X.shape[1]))
        if np.linalg.norm(x) > radius:
            x = radius * x / np.linalg.norm(x)
    # finite differences carry ~1e-7 error per step, amplified by at most 60 steps of a contraction
    np.testing.assert_allclose(run.model, x, rtol=0, atol=1e-5)
    assert np.linalg.norm(run.model) <= radius * (1 + 1e-12)
    # constants of the run: C = R + reg * radius, beta = R^2/4 + reg, rho = reg
    assert run.lipschitz >= 1.0 + reg * radius and run.smoothness == 0.25 + reg
    assert len(run.guarantees) == 60 and run.guarantees[-1].slope >= 2 * run.lipschitz**2 / sigma**2
    np.testing.assert_array_equal(run.slopes, [g.slope for g in run.guarantees])


def test_algorithm1_learns_with_little_noise():
    ds = load_noisy_sgd_dataset()
    run = noisy_projected_sgd(ds.features, ds.labels, sigma=0.05, reg=0.01, radius=10.0, eta=0.5, rng=0)
    assert run.loss < regularized_logistic_loss(np.zeros(5), ds.features, ds.labels, 0.01) - 0.05


@pytest.mark.parametrize("kwargs,match", [
    (dict(labels=[0, 1]), "labels must be -1 or \\+1"),
    (dict(features=[[2.0], [0.5]]), "norm <= feature_bound"),
    (dict(eta=100.0), r"eta must be <= 2/\(beta \+ rho\)"),
    (dict(sigma=0.0), "sigma must be > 0"),
    (dict(x0=[9.0]), "x0 must lie in the ball"),
    (dict(features=[[1.0]]), "features must be"),
], ids=["labels", "feature-norm", "eta", "sigma", "x0", "shape"])
def test_algorithm1_validation(kwargs, match):
    args = dict(features=[[1.0], [-0.5]], labels=[1, -1], sigma=1.0, reg=0.1, radius=5.0)
    args.update(kwargs)
    with pytest.raises(InvalidParameterError, match=match):
        noisy_projected_sgd(**args)


def test_example_script_runs(tmp_path, monkeypatch, capsys):
    """examples/noisy_sgd.py run as ``python examples/noisy_sgd.py --output plot.png`` (as ``__main__``, in this
    process: a fresh interpreter would only add its start and imports, ~1.5 s of CPU)."""
    import runpy

    import matplotlib.pyplot as plt

    out = tmp_path / "plot.png"
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(sys, "argv", [str(ROOT / "examples" / "noisy_sgd.py"), "--output", str(out)])
    try:
        runpy.run_path(str(ROOT / "examples" / "noisy_sgd.py"), run_name="__main__")
    finally:
        plt.close("all")
    assert "Theorem 5" in capsys.readouterr().out and out.stat().st_size > 1000


@pytest.mark.parametrize("call,exc,match", [
    (lambda: iteration_bound([["a"]], 1.0, 0.5, 2.0), TypeError, "path must be an array of numbers"),
    (lambda: contractive_iteration_bound(-1.0, 3, 1.0, 0.5, 2.0), InvalidParameterError, "shift must be >= 0"),
    (lambda: optimal_iteration_path(1.0, 0, 0.5), InvalidParameterError, "steps must be >= 1"),
    (lambda: optimal_iteration_path(1.0, 2, -0.5), InvalidParameterError, "lipschitz must be >= 0"),
    (lambda: feldman_noisy_sgd_slope(5, 6, 1.0, 1.0), InvalidParameterError, r"i must be in \[1, n\]"),
    (lambda: feldman_noisy_sgd_slope(5, 2, 1.0, 0.0), InvalidParameterError, "sigma must be > 0"),
    (lambda: noisy_projected_sgd([[np.nan]], [1], sigma=1.0, reg=0.1, radius=1.0), InvalidParameterError,
     "features must be finite"),
    (lambda: noisy_projected_sgd([[0.5]], [1], sigma=1.0, reg=0.0, radius=1.0), InvalidParameterError,
     "reg must be > 0"),
    (lambda: noisy_projected_sgd([[0.5]], [1], sigma=1.0, reg=0.1, radius=0.0), InvalidParameterError,
     "radius must be > 0"),
    (lambda: noisy_projected_sgd([[0.5]], [1], sigma=1.0, reg=0.1, radius=1.0, feature_bound=0.0),
     InvalidParameterError, "feature_bound must be > 0"),
    (lambda: load_noisy_sgd_dataset("/nonexistent/data.csv"), FileNotFoundError, "dataset not found"),
], ids=["path-type", "eq3-shift", "opt-steps", "opt-lipschitz", "feldman-index", "feldman-sigma", "nan-features",
        "reg", "radius", "feature-bound", "missing-file"])
def test_remaining_validation(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_rdp_of_zero_slope_is_zero_at_every_order():
    g = noisy_sgd_rdp(10, 5, 0.0, 1.0, 0.5, 1.0, 0.5)  # C = 0: the record cannot move the gradient
    assert g.slope == 0.0 and g.rdp(math.inf) == 0.0 and g.rdp(2.0) == 0.0
    # eta = 2/(beta + rho) with beta = rho gives L = 0; L^2 is rounded up to ~1e-15, so tiny, not 0
    assert 0.0 < noisy_sgd_rdp(10, 5, 1.0, 1.0, 1.0, 1.0, 1.0).slope < 1e-40
