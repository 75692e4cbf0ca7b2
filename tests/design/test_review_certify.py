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
