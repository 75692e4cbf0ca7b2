"""The compact post-processing LP (issue 20.4): per-output column bounds instead of one constraint per pair, solved by
the block interior-point method (chainamp.design.block_ipm) or by Clarabel; agreement with the pair LP on small
sizes, its certified lower bound, its fallbacks and its validation branches."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chainamp import mechanisms
from chainamp.design import (block_ipm, duals, lp_compact, optimal_mixing_operator, optimal_post_processing,
                             post_processing)
from chainamp.errors import InvalidParameterError, SolverError
from conftest import random_stochastic

#: the two formulations' objectives agree to this (interior point: 1e-8 relative residuals and gap; the pair LP's
#: simplex vertex; both then repaired and certified by amplify)
AGREE = 1e-6


def _case(seed, n, m, k, loss, prior):
    rng = np.random.default_rng(seed)
    M = random_stochastic(rng, n, m)
    ell = rng.random((n, k)) if loss == "random" else None
    pi = rng.dirichlet(np.ones(n)) if prior == "random" else None
    outputs = None if k == n else k
    return M, ell, pi, outputs


CASES = {
    "3x4-01": (1, 3, 4, 3, "01", "uniform", 0.5),
    "4x4-random-loss": (2, 4, 4, 4, "random", "random", 1.0),
    "5x3-to-6-outputs": (3, 5, 3, 6, "random", "uniform", 0.7),
    "6x6-tight": (4, 6, 6, 6, "01", "random", 0.2),
    "8x5-01": (5, 8, 5, 8, "01", "uniform", 1.5),
}


@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_compact_agrees_with_the_pair_lp(name):
    seed, n, m, k, loss, prior, eps = CASES[name]
    M, ell, pi, outputs = _case(seed, n, m, k, loss, prior)
    kw = dict(loss=ell, prior=pi, outputs=outputs, progress=False)
    pairs = optimal_post_processing(M, eps, formulation="pairs", **kw)
    compact = optimal_post_processing(M, eps, formulation="compact", **kw)
    if pairs.solver is None:  # M already meets the target: the Bayes decoder, no LP (both paths)
        assert compact.solver is None
        return
    assert compact.solver == "block-IPM" and compact.status == "optimal"
    assert compact.certified_epsilon <= eps and compact.report.epsilon_at(0.0) <= eps
    assert abs(compact.objective - pairs.objective) <= AGREE
    # each dual bound is below the other's certified loss (both are lower bounds on every K's loss)
    assert compact.dual_bound <= pairs.objective and pairs.dual_bound <= compact.objective
    assert compact.gap <= AGREE
    np.testing.assert_allclose(compact.objective,
                               float(np.sum((np.full(n, 1 / n) if pi is None else pi)[:, None]
                                            * (M @ compact.K.matrix)
                                            * (1 - np.eye(n, compact.K.shape[1]) if ell is None else ell))),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", [22, 30], ids=["n22", "n30"])
def test_auto_takes_the_compact_lp_past_the_threshold(n):
    M = random_stochastic(np.random.default_rng(n), n, n)
    r = optimal_post_processing(M, 1.0, progress=False)
    assert r.solver == "block-IPM" and r.certified_epsilon <= 1.0 and 0.0 <= r.gap <= AGREE


def test_auto_keeps_the_pair_lp_for_small_designs_and_delta():
    M = random_stochastic(np.random.default_rng(0), 4, 4)
    assert optimal_post_processing(M, 0.5, progress=False).solver == "HIGHS"
    # past the threshold, delta > 0 or a neighbour relation keeps the pair LP (the compact form does not apply)
    assert post_processing._compact("auto", 0.0, None, 22, 22, 22)
    assert not post_processing._compact("auto", 0.0, None, 12, 12, 12)
    assert not post_processing._compact("auto", 1e-3, None, 22, 22, 22)
    assert not post_processing._compact("auto", 0.0, [(0, 1)], 22, 22, 22)


def test_clarabel_fallback_agrees(monkeypatch):
    M = random_stochastic(np.random.default_rng(9), 5, 5)
    ref = optimal_post_processing(M, 0.6, formulation="pairs", progress=False)

    def fail(*args, **kwargs):
        raise SolverError("forced")

    monkeypatch.setattr(block_ipm, "solve", fail)
    r = optimal_post_processing(M, 0.6, formulation="compact", progress=False)
    assert r.solver == "CLARABEL" and any("Clarabel instead" in note for note in r.notes)
    assert abs(r.objective - ref.objective) <= AGREE and r.dual_bound <= ref.objective
    assert r.certified_epsilon <= 0.6


def test_clarabel_status_other_than_solved_raises(monkeypatch):
    M = random_stochastic(np.random.default_rng(9), 5, 5)
    monkeypatch.setattr(block_ipm, "solve", lambda *a, **k: (_ for _ in ()).throw(SolverError("forced")))
    monkeypatch.setattr(lp_compact, "_SETTINGS", {"max_iter": 1})
    with pytest.raises(SolverError, match="only 'Solved' is trusted"):
        optimal_post_processing(M, 0.6, formulation="compact", progress=False)


def test_block_ipm_that_does_not_converge_raises():
    M = random_stochastic(np.random.default_rng(3), 6, 6)
    C = M.T @ (np.full(6, 1 / 6)[:, None] * (1 - np.eye(6)))
    with pytest.raises(SolverError, match="did not converge within 2 iterations"):
        block_ipm.solve(C, M, math.e, max_iter=2)


@pytest.mark.parametrize("seed", range(4), ids=[f"seed{s}" for s in range(4)])
def test_compact_bound_holds_for_any_multipliers(seed):
    """The Lagrangian bound is a lower bound for arbitrary non-negative multipliers, not only the solver's."""
    rng = np.random.default_rng(seed)
    M = random_stochastic(rng, 4, 5)
    loss, eps = rng.random((4, 3)), 0.8
    best = optimal_post_processing(M, eps, loss=loss, outputs=3, formulation="pairs", progress=False)
    C = M.T @ (np.full(4, 0.25)[:, None] * loss)
    e_up = math.nextafter(math.exp(eps), math.inf)
    for _ in range(20):
        a, b, g = rng.random((4, 3)) * rng.random(), rng.random((4, 3)) * rng.random(), rng.random(3)
        assert duals.compact_bound(C, M, a, b, g, e_up) <= best.objective


def test_compact_bound_below_the_exact_optimum_in_fractions():
    """3-ary RR at eps0 designed down to eps: the optimum is RR at eps (symmetric argument), error
    (k - 1) / (e^eps + k - 1) exactly for the stored rows; the bound from the solver's multipliers is below it."""
    k, eps0, eps = 3, 2.0, 1.0
    M = mechanisms.randomized_response(k, eps0).densify().matrix
    M = M / M.sum(axis=1, keepdims=True)
    C = M.T @ (np.full(k, 1 / k)[:, None] * (1 - np.eye(k)))
    out = block_ipm.solve(C, M, math.exp(eps))
    bound = duals.compact_bound(C, M, out["alpha"], out["beta"], out["gamma"], math.nextafter(math.exp(eps), math.inf))
    # every eps-LDP channel of k values has error >= (k - 1) / (e^eps + k - 1) under the uniform prior and the 0-1
    # loss, and RR(eps0) followed by a symmetric K reaches it: that is the exact optimum; with e^eps rounded UP it is
    # smaller still, and the certified bound must be below it
    e_up = Fraction(math.nextafter(math.exp(eps), math.inf))
    assert Fraction(bound) <= (k - 1) / (e_up + k - 1)
    assert bound <= float(np.sum(C * out["K"]))


def test_validation_branches():
    M = random_stochastic(np.random.default_rng(0), 3, 3)
    with pytest.raises(InvalidParameterError, match=r"formulation must be one of .* \(got 'sparse'\)"):
        optimal_post_processing(M, 0.5, formulation="sparse")
    with pytest.raises(TypeError, match="formulation must be a string"):
        optimal_post_processing(M, 0.5, formulation=1)
    with pytest.raises(InvalidParameterError, match=r"formulation='compact' needs pure epsilon .* delta=0.1"):
        optimal_post_processing(M, 0.5, delta=0.1, formulation="compact")
    with pytest.raises(InvalidParameterError, match=r"formulation='compact' needs .* neighbors=a neighbour relation"):
        optimal_post_processing(M, 0.5, neighbors=[(0, 1), (1, 2)], formulation="compact")
    assert lp_compact.compact_nonzeros(3, 3, 3) == 96  # 36 in Q = M K, 36 in the bounds, 6, 18 in K's rows and signs
    with pytest.raises(InvalidParameterError, match=r"compact LP\): the LP would have 96 constraint nonzeros"):
        optimal_post_processing(M, 0.1, formulation="compact", max_lp_nonzeros=95)
    optimal_post_processing(M, 0.1, formulation="compact", max_lp_nonzeros=96, progress=False)


# ------------------------------------------------------------------ Doeblin in closed form, any loss and prior
MIX_CASES = [(n, g, seed) for n, g, seed in ((3, 0.3, 0), (4, 0.4, 1), (6, 0.75, 2), (8, 1.0, 3), (5, 0.05, 4))]


@pytest.mark.parametrize("n, gamma, seed", MIX_CASES, ids=[f"n{c[0]}-g{c[1]}" for c in MIX_CASES])
def test_doeblin_closed_form_matches_the_lp(n, gamma, seed):
    rng = np.random.default_rng(seed)
    loss, prior = rng.random((n, n)), rng.dirichlet(np.ones(n))
    kw = dict(coefficient="doeblin", loss=loss, prior=prior, progress=False)
    lp = optimal_mixing_operator(n, gamma, formulation="lp", **kw)
    closed = optimal_mixing_operator(n, gamma, **kw)
    assert closed.solver is None and lp.solver == "HIGHS"
    assert abs(closed.objective - lp.objective) <= 1e-9
    assert closed.dual_bound <= lp.objective and lp.dual_bound <= closed.objective
    assert closed.certified_gamma <= gamma and 0.0 <= closed.gap <= 1e-12
    # the optimum in exact arithmetic from the stored loss and prior: (1 - g) min_y c_y + g sum_x min_y C[x, y]
    C = [[Fraction(float(prior[x])) * Fraction(float(loss[x, y])) for y in range(n)] for x in range(n)]
    g = Fraction(gamma)
    exact = (1 - g) * min(sum(C[x][y] for x in range(n)) for y in range(n)) + g * sum(min(row) for row in C)
    assert Fraction(closed.dual_bound) <= exact
    assert abs(Fraction(closed.objective) - exact) <= Fraction(1, 10**12)


def test_doeblin_closed_bound_margin_in_exact_arithmetic():
    """The closed-form bound is rounded down past its float error: on inputs where rounding to nearest lands above the
    exact value, the returned bound is still below it (and the unrounded float is not, for at least one input)."""
    rng = np.random.default_rng(11)
    above = 0
    for _ in range(300):
        n = int(rng.integers(2, 7))
        C = rng.random((n, n)) / n
        g = float(rng.random())
        Cf = [[Fraction(float(v)) for v in row] for row in C]
        exact = ((1 - Fraction(g)) * min(sum(Cf[x][y] for x in range(n)) for y in range(n))
                 + Fraction(g) * sum(min(row) for row in Cf))
        naive = (1.0 - g) * float(C.sum(axis=0).min()) + g * float(C.min(axis=1).sum())
        above += Fraction(naive) > exact
        assert Fraction(duals.doeblin_closed_bound(C, g)) <= exact
    assert above > 0  # the margin is needed: rounding to nearest overshoots on some of these inputs


def test_doeblin_at_n200_non_invariant_loss_is_fast():
    rng = np.random.default_rng(0)
    n, gamma = 200, 0.4
    loss, prior = rng.random((n, n)), rng.dirichlet(np.ones(n))
    r = optimal_mixing_operator(n, gamma, coefficient="doeblin", loss=loss, prior=prior, progress=False)
    assert r.solver is None and r.certified_gamma <= gamma and 0.0 <= r.gap <= 1e-12


def test_mixing_formulation_validation():
    with pytest.raises(InvalidParameterError, match=r"formulation='closed_form' exists for coefficient='doeblin' only"):
        optimal_mixing_operator(3, 0.5, formulation="closed_form")
    with pytest.raises(InvalidParameterError, match=r"formulation must be one of \('auto', 'lp', 'closed_form', 'cuts', 'certify'\)"):
        optimal_mixing_operator(3, 0.5, coefficient="doeblin", formulation="sparse")
    with pytest.raises(TypeError, match="formulation must be a string"):
        optimal_mixing_operator(3, 0.5, formulation=None)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 6), m=st.integers(2, 6), k=st.integers(2, 6), eps=st.floats(0.01, 4.0),
       zero_prob=st.sampled_from([0.0, 0.4]), seed=st.integers(0, 2**31 - 1))
def test_property_compact_equals_pairs(n, m, k, eps, zero_prob, seed):
    """Random mechanisms (with structural zeros), losses and output counts: both LPs reach the same optimum, each
    certified, each lower bound below the other's loss."""
    rng = np.random.default_rng(seed)
    M = random_stochastic(rng, n, m, zero_prob=zero_prob)
    kw = dict(loss=rng.random((n, k)), outputs=k, progress=False)
    c = optimal_post_processing(M, eps, formulation="compact", **kw)
    p = optimal_post_processing(M, eps, formulation="pairs", **kw)
    assert abs(c.objective - p.objective) <= AGREE
    assert c.dual_bound <= p.objective and p.dual_bound <= c.objective and c.certified_epsilon <= eps
