"""Review of optimal_mixing_operator's certified Dobrushin route and its tiny-gamma edge (review 2)."""

from fractions import Fraction

import numpy as np
import pytest

from chainamp import dobrushin, doeblin
from chainamp.design import optimal_mixing_operator


def _exact_symmetric_optimum(k: int, gamma: float) -> Fraction:
    """0-1 loss, uniform prior, Dobrushin <= gamma: K = a I + b (J - I) with a - b <= gamma, loss 1 - a."""
    g = Fraction(gamma)
    a = (1 + (k - 1) * g) / k
    return 1 - a


@pytest.mark.parametrize("symmetry", [True, False], ids=["symmetric", "general"])
@pytest.mark.parametrize("formulation", ["auto", "lp", "certify"])
@pytest.mark.parametrize("gamma", [1e-300, 1e-20, 1e-16, 1e-15, 1e-12], ids=lambda g: f"g{g:g}")
@pytest.mark.parametrize("n", [3, 5])
def test_tiny_gamma_returns_a_feasible_operator(n, gamma, formulation, symmetry):
    # before the fix: SolverError "cannot be repaired" (chainamp's coefficient is rounded up by about 1e-16, so no K
    # with unequal rows certifies below it, and mixing with 0.1 % of the uniform operator cannot close the gap)
    r = optimal_mixing_operator(n, gamma, formulation=formulation, symmetry=symmetry, progress=False)
    K = np.asarray(r.K.matrix)
    assert np.all(K >= 0.0) and np.allclose(K.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert dobrushin(r.K).gamma <= gamma or np.all(K == K[0])
    assert r.certified_gamma <= gamma
    assert r.dual_bound <= r.objective
    exact = _exact_symmetric_optimum(n, gamma)
    assert Fraction(r.dual_bound) <= exact
    assert Fraction(r.objective) >= exact - Fraction(1, 10**12)
    assert r.objective - r.dual_bound <= 1e-9


@pytest.mark.parametrize("gamma", [1e-300, 1e-16, 1e-13])
def test_tiny_gamma_doeblin(gamma):
    r = optimal_mixing_operator(4, gamma, coefficient="doeblin", symmetry=False, loss=np.eye(4)[::-1] + 0.5,
                                prior=[0.1, 0.2, 0.3, 0.4], progress=False)
    K = np.asarray(r.K.matrix)
    assert doeblin(r.K).gamma <= gamma or np.all(K == K[0])
    assert r.dual_bound <= r.objective <= r.dual_bound * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("gamma", [1e-16, 3e-16, 1e-15])
def test_tiny_gamma_random_loss_certify(gamma):
    rng = np.random.default_rng(3)
    L, p = rng.random((5, 5)), rng.dirichlet(np.ones(5))
    r = optimal_mixing_operator(5, gamma, loss=L, prior=p, formulation="certify", progress=False)
    K = np.asarray(r.K.matrix)
    assert dobrushin(r.K).gamma <= gamma or np.all(K == K[0])
    # every K with Dobrushin coefficient <= gamma loses at least min_y c_y - gamma sum_x p_x range_x
    c = p @ L
    floor = c.min() - gamma * float(np.sum(p * (L.max(axis=1) - L.min(axis=1))))
    assert r.dual_bound <= r.objective
    assert r.objective <= floor + 1e-12


@pytest.mark.parametrize("scale", [1e25, 1e300, 1e-300], ids=["1e25", "1e300", "1e-300"])
@pytest.mark.parametrize("gamma", [0.3, 0.999])
def test_certify_route_at_huge_and_tiny_magnitudes(scale, gamma):
    # before the fix: HiGHS took costs >= 1e20 for infinite (status 'Unknown', SolverError), and at 1e-300 its answer
    # was the closed form without the multipliers pricing anything; the scaled route must match the unscaled one
    rng = np.random.default_rng(11)
    L, p = rng.random((5, 5)) + np.eye(5)[::-1], rng.dirichlet(np.ones(5))
    ref = optimal_mixing_operator(5, gamma, loss=L, prior=p, formulation="certify", progress=False)
    r = optimal_mixing_operator(5, gamma, loss=L * scale, prior=p, formulation="certify", progress=False)
    assert dobrushin(r.K).gamma <= gamma
    assert r.dual_bound <= r.objective
    assert r.objective == pytest.approx(ref.objective * scale, rel=1e-9)
    assert r.dual_bound == pytest.approx(ref.dual_bound * scale, rel=1e-6)
    # the bound is below the exact loss of the returned K (in Fractions: every feasible K loses at least the bound)
    K = np.asarray(r.K.matrix)
    exact = sum(Fraction(float(p[x])) * Fraction(float(L[x, y] * scale)) * Fraction(float(K[x, y]))
                for x in range(5) for y in range(5))
    assert Fraction(r.dual_bound) <= exact


def test_bound_never_nan_on_overflow():
    from chainamp.design import duals
    C = np.full((2, 2), 1.5e308)
    lam = np.zeros((1, 2))  # the sum of the row minima overflows: inf - inf
    with np.errstate(over="ignore", invalid="ignore"):  # before the fix: NaN (max(NaN, 0.0) is NaN)
        b = duals.dobrushin_bound(C, np.array([[0, 1]]), lam, 0.5)
    assert b == 0.0
