"""The quick subset-cut certificate of the Dobrushin design (:mod:`chainamp.design.lp_dobrushin_sets`), tried first by
``formulation="certify"``: it may only ever return a bound from ``duals.dobrushin_bound`` that meets the closed form's
loss, or give up (None) so that the pair route answers; checked against the full cvxpy LP."""

from __future__ import annotations

import numpy as np
import pytest

from chainamp import resource_limits
from chainamp.design import lp_dobrushin, lp_dobrushin_sets, optimal_mixing_operator
from chainamp.design.lp_dobrushin_sets import certify_by_sets, first_sets

pytestmark = pytest.mark.skipif(not lp_dobrushin.available(), reason="highspy is not installed")


def instance(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.random((n, n)), rng.dirichlet(np.ones(n)), float(rng.uniform(0.1, 0.9))


def closed_form_loss(C: np.ndarray, gamma: float) -> float:
    return (1.0 - gamma) * float(C.sum(axis=0).min()) + gamma * float(C.min(axis=1).sum())


# (6, 6) and (12, 5): the closed form is not the Dobrushin optimum there (test_dobrushin_certify.py)
@pytest.mark.parametrize("n,seed", [(3, 0), (4, 1), (6, 3), (6, 6), (8, 5), (12, 5), (12, 7)], ids=str)
def test_auto_agrees_with_the_full_lp_and_names_its_route(n, seed):
    loss, prior, gamma = instance(n, seed)
    auto = optimal_mixing_operator(n, gamma, loss=loss, prior=prior, progress=False)
    full = optimal_mixing_operator(n, gamma, loss=loss, prior=prior, formulation="lp", progress=False)
    assert abs(auto.objective - full.objective) <= 1e-9
    assert auto.dual_bound <= full.objective and auto.dual_bound <= auto.objective <= auto.dual_bound * (1 + 1e-7)
    C = prior[:, None] * loss
    optimal_closed_form = closed_form_loss(C, gamma) <= full.objective + 1e-9
    # the subset cuts certify only the closed form; where it is not optimal the pair route answers
    assert (auto.solver == "HiGHS (subset cuts)") <= optimal_closed_form
    if auto.solver == "HiGHS (subset cuts)":
        assert any("subset cuts" in note for note in auto.notes)


@pytest.mark.parametrize("n,seed", [(5, 1), (9, 1), (20, 2)], ids=str)
def test_a_returned_certificate_is_the_bound_of_its_multipliers(n, seed):
    loss, prior, gamma = instance(n, seed)
    C = prior[:, None] * loss
    target = closed_form_loss(C, gamma)
    out = certify_by_sets(C, gamma, target, 1e-7)
    assert out is not None and out.certified and target - out.bound <= 1e-7 * target
    from chainamp.design.duals import dobrushin_bound

    assert out.bound == dobrushin_bound(C, out.pairs, out.lam, gamma)
    assert np.all(out.lam >= 0.0)
    # a target above the optimum cannot be certified: the attempt gives up
    assert certify_by_sets(C, gamma, target * 1.01, 1e-7) is None


def test_first_sets_contain_the_first_rows_best_and_not_the_seconds():
    loss, prior, _ = instance(7, 3)
    C = prior[:, None] * loss
    X, Xp, S = first_sets(C)
    best = C.argmin(axis=1)
    assert np.all(best[X] != best[Xp]) and np.all(S[np.arange(X.size), best[X]])
    assert not np.any(S[np.arange(X.size), best[Xp]])


def test_gives_up_quietly_past_its_caps_and_the_memory_limit(monkeypatch):
    loss, prior, gamma = instance(12, 7)
    C = prior[:, None] * loss
    target = closed_form_loss(C, gamma)
    assert certify_by_sets(C, gamma, target, 1e-7, max_nonzeros=100) is None
    assert certify_by_sets(C, gamma, target, 1e-7, max_rounds=0) is None
    with resource_limits(memory="1KB"):
        assert certify_by_sets(C, gamma, target, 1e-7) is None
    assert certify_by_sets(np.zeros((1, 1)), gamma, 0.0, 1e-7) is None
    # switched off, "auto" takes the pair route
    monkeypatch.setattr(lp_dobrushin_sets, "SETS_MAX_NONZEROS", 0)
    r = optimal_mixing_operator(12, gamma, loss=loss, prior=prior, progress=False)
    assert r.solver == "HiGHS (pair generation)"
