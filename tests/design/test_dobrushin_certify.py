"""The Dobrushin design's default route for a loss not invariant under relabelling (``formulation="certify"``): the
Doeblin closed form certified by multipliers on generated pairs, or the LP's optimum when the certificate falls short.
Checked against the full cvxpy LP, in exact arithmetic at n = 2 (where the Dobrushin and Doeblin designs coincide and
the optimum has a closed form), on the Fano-plane loss where the closed form is not optimal, and its validation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from chainamp import dobrushin
from chainamp.design import lp_dobrushin, lp_flow, optimal_mixing_operator
from chainamp.errors import InvalidParameterError, SolverError

from dobrushin_instances import exact_tv, instance, fano_loss  # tests/design is on sys.path (rootdir import mode)

pytestmark = pytest.mark.skipif(not lp_dobrushin.available(), reason="highspy is not installed")

SOLVER = "HiGHS (pair generation)"
FLOW = lp_flow.FlowOutcome.solver


# (6, 6) and (12, 5) are instances where the Doeblin closed form is not the Dobrushin optimum
NOT_KD = [(6, 6), (12, 5)]
CASES = [(3, 0), (4, 1), (5, 2), (6, 3), (6, 6), (7, 4), (8, 5), (12, 5)]


@pytest.mark.parametrize("n,seed", CASES, ids=lambda v: str(v))
def test_certify_agrees_with_the_full_lp(n, seed):
    loss, prior, gamma = instance(n, seed)
    auto = optimal_mixing_operator(n, gamma, loss=loss, prior=prior, progress=False)
    full = optimal_mixing_operator(n, gamma, loss=loss, prior=prior, formulation="lp", progress=False)
    # K_D certified by the sparse flow LP (lp_flow), or pair generation when it is not optimal
    if (n, seed) in NOT_KD:
        assert auto.solver == SOLVER and auto.status == "optimal"
    else:
        assert (auto.solver, auto.status) in ((SOLVER, "optimal"), (FLOW, "certified"))
    assert abs(auto.objective - full.objective) <= 1e-9
    # a lower bound on every feasible K's loss: the LP's certified K too, so a bound without its -gamma term fails here
    assert auto.dual_bound <= full.objective and full.dual_bound <= auto.objective
    assert auto.dual_bound <= auto.objective <= auto.dual_bound + 1e-7 * auto.objective
    assert dobrushin(auto.K).gamma == auto.certified_gamma <= gamma
    if n <= 6:
        assert exact_tv(auto.K.matrix) <= Fraction(gamma)


def doeblin_loss(C: np.ndarray, gamma: float) -> float:
    return (1.0 - gamma) * float(C.sum(axis=0).min()) + gamma * float(C.min(axis=1).sum())


@pytest.mark.parametrize("n,seed", [(5, 2), (7, 4), (8, 5), (6, 6)], ids=lambda v: str(v))
def test_the_closed_form_is_returned_when_certified(n, seed):
    loss, prior, gamma = instance(n, seed)
    r = optimal_mixing_operator(n, gamma, loss=loss, prior=prior, progress=False)
    C = prior[:, None] * loss
    if "is optimal: multipliers on" in r.notes[0]:
        assert abs(r.objective - doeblin_loss(C, gamma)) <= 1e-12  # K_D itself (repaired by at most a few ulps)
        assert np.count_nonzero(r.K.matrix > 1e-9, axis=1).max() <= 2
    else:  # (6, 6): the LP does better than the closed form
        assert "is not optimal here" in r.notes[0]
        assert r.objective < doeblin_loss(C, gamma) - 1e-6


@pytest.mark.parametrize("seed,gamma", [(0, 0.3), (1, 0.5), (2, 0.8), (3, 0.05)], ids=lambda v: str(v))
def test_two_states_exact(seed, gamma):
    # two rows: the Dobrushin and Doeblin coefficients coincide, so the optimum is (1 - gamma) min_y c_y + gamma a,
    # evaluated exactly on the doubles of C = prior * loss (the product the design forms)
    rng = np.random.default_rng(seed)
    loss = rng.random((2, 2))
    loss[0, 0], loss[1, 1] = 0.1 * loss[0, 0], 0.1 * loss[1, 1]  # each row prefers its own output: the pair binds
    loss[0, 1], loss[1, 0] = 0.5 + loss[0, 1], 0.5 + loss[1, 0]
    prior = rng.dirichlet(np.ones(2))
    r = optimal_mixing_operator(2, gamma, loss=loss, prior=prior, progress=False)
    C = prior[:, None] * loss
    F = [[Fraction(float(v)) for v in row] for row in C]
    g = Fraction(gamma)
    opt = (1 - g) * min(F[0][0] + F[1][0], F[0][1] + F[1][1]) + g * (min(F[0]) + min(F[1]))
    assert r.solver in (SOLVER, FLOW)
    assert Fraction(r.dual_bound) <= opt            # sound: never above the exact optimum ...
    assert Fraction(r.dual_bound) >= opt - Fraction(1, 10**12)   # ... and tight (so the -gamma term is needed)
    assert abs(Fraction(r.objective) - opt) <= Fraction(1, 10**12)


def test_fano_takes_the_lp_and_beats_the_closed_form():
    gamma = 2.0 / 3.0
    r = optimal_mixing_operator(7, gamma, loss=fano_loss(), progress=False)
    full = optimal_mixing_operator(7, gamma, loss=fano_loss(), formulation="lp", progress=False)
    assert r.solver == SOLVER and "is not optimal here" in r.notes[0]
    assert r.objective <= 1e-9 and abs(r.objective - full.objective) <= 1e-9
    assert 0.0 <= r.dual_bound <= r.objective
    assert exact_tv(r.K.matrix) <= Fraction(gamma)
    # the closed form's loss (1 - gamma) 4/7 is far above
    assert doeblin_loss(np.full(7, 1 / 7)[:, None] * fano_loss(), gamma) > 0.19


def test_zero_tolerance_solves_to_the_lp_optimum():
    # design_gap_rtol = 0 asks the rounded-down bound to reach the closed form's loss exactly, which it does not: the
    # pairs are generated until the relaxation is feasible, and the closed form is kept (the LP finds nothing better)
    loss, prior, gamma = instance(5, 2)
    r = optimal_mixing_operator(5, gamma, loss=loss, prior=prior, design_gap_rtol=0.0, progress=False)
    full = optimal_mixing_operator(5, gamma, loss=loss, prior=prior, formulation="lp", progress=False)
    assert "was kept" in r.notes[0] or "is optimal" in r.notes[0]
    assert abs(r.objective - full.objective) <= 1e-9 and r.dual_bound <= r.objective


def test_auto_falls_back_to_the_lp_without_highspy(monkeypatch):
    loss, prior, gamma = instance(4, 1)
    monkeypatch.setattr(lp_dobrushin, "available", lambda: False)
    r = optimal_mixing_operator(4, gamma, loss=loss, prior=prior, progress=False)
    assert r.solver not in (SOLVER, FLOW)
    assert optimal_mixing_operator(4, gamma, loss=loss, prior=prior, formulation="certify",
                                   progress=False).solver in (SOLVER, FLOW)


def test_solve_pairs_without_target_is_the_lp():
    loss, prior, gamma = instance(6, 3)
    C = prior[:, None] * loss
    out = lp_dobrushin.solve_pairs(C, gamma, 10**7)
    cuts = lp_dobrushin.solve_cuts(C, gamma, 10**7)
    assert not out.certified and out.solver == SOLVER
    assert abs(float(np.sum(C * out.K)) - float(np.sum(C * cuts.K))) <= 1e-9
    assert out.bound <= float(np.sum(C * cuts.K)) + 1e-12
    assert lp_dobrushin.pair_excess(out.K, gamma).max() <= 1e-7


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(formulation="certify", coefficient="doeblin"), InvalidParameterError,
     "formulation='certify' exists for coefficient='dobrushin' only"),
    (dict(design_gap_rtol=-1e-3), ValueError, "design_gap_rtol"),
    (dict(design_gap_rtol="tight"), TypeError, "design_gap_rtol"),
    (dict(formulation="pairs"), ValueError, "formulation"),
    (dict(max_lp_nonzeros=200), SolverError, "max_lp_nonzeros=200"),
], ids=["doeblin", "negative-rtol", "str-rtol", "unknown", "too-small"])
def test_validation(kwargs, exc, match):
    loss, prior, gamma = instance(5, 2)
    with pytest.raises(exc, match=match):
        optimal_mixing_operator(5, gamma, loss=loss, prior=prior, progress=False, **kwargs)


def test_refused_before_building_past_the_memory_limit():
    from chainamp import resource_limits
    from chainamp.errors import ResourceLimitError

    loss, prior, gamma = instance(60, 0)
    with resource_limits(memory="2MB"), pytest.raises(ResourceLimitError, match=r"Dobrushin design: the 1,770 pairs"):
        optimal_mixing_operator(60, gamma, loss=loss, prior=prior, progress=False)


def test_auto_keeps_the_full_lp_size_limit():
    # the flow certificate needs 6 x pairs x (n - 1) nonzeros (skipped above the limit); "auto" then refuses what the
    # full LP could not take on (4 x 10 pairs x 5 = 200 nonzeros); "certify" builds pairs only
    loss, prior, gamma = instance(5, 2)
    flow_nonzeros = 6 * lp_flow.graph(prior[:, None] * loss, lp_flow.DEGREES[0]).shape[0] * 4
    assert flow_nonzeros > 30
    with pytest.raises(InvalidParameterError, match=r"the LP would have 200 constraint nonzeros, above "
                                                    r"max_lp_nonzeros=30.*formulation='certify'"):
        optimal_mixing_operator(5, gamma, loss=loss, prior=prior, max_lp_nonzeros=30, progress=False)
    with pytest.raises(SolverError, match=r"more than max_lp_nonzeros=30 constraint nonzeros after 1 rounds of "
                                          r"constraint generation on pairs"):
        optimal_mixing_operator(5, gamma, loss=loss, prior=prior, max_lp_nonzeros=30, formulation="certify",
                                progress=False)
    # within the limit the flow certificate answers where the full LP (200 nonzeros) would be refused
    r = optimal_mixing_operator(5, gamma, loss=loss, prior=prior, max_lp_nonzeros=max(flow_nonzeros, 199),
                                progress=False)
    assert r.solver in (SOLVER, FLOW)


def test_auto_refuses_past_the_full_lp_limit_before_any_flow_attempt(monkeypatch):
    # past the full LP's nonzero limit "auto" refuses at once (its fallback would), without spending the flow step's
    # work budget first (about 45 s at n = 200, measured, without a certificate)
    from chainamp.design import mixing_design

    def no_flow(*args, **kwargs):
        raise AssertionError("the flow certificate ran before the refusal")

    monkeypatch.setattr(mixing_design.lp_flow, "certify_flow", no_flow)
    loss, prior, gamma = instance(5, 2)
    with pytest.raises(InvalidParameterError, match=r"above max_lp_nonzeros=30.*formulation='certify'"):
        optimal_mixing_operator(5, gamma, loss=loss, prior=prior, max_lp_nonzeros=30, progress=False)
