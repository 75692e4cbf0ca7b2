"""The Dobrushin design by constraint generation (chainamp.design.lp_dobrushin) against the full cvxpy LP, in exact
arithmetic on small cases, and its repair, dual bound and validation."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from chainamp import dobrushin
from chainamp.design import lp_dobrushin, optimal_mixing_operator
from chainamp.errors import InvalidParameterError, SolverError

from dobrushin_instances import instance  # tests/design is on sys.path (rootdir import mode)

pytestmark = pytest.mark.skipif(not lp_dobrushin.available(), reason="highspy is not installed")


def exact_tv(K: np.ndarray) -> Fraction:
    """The Dobrushin coefficient of K's float entries in exact arithmetic (rows as they are, unnormalised)."""
    rows = [[Fraction(float(v)) for v in row] for row in K]
    return max(sum((max(a - b, 0) for a, b in zip(r, s)), Fraction(0)) for r in rows for s in rows)


def fano_loss() -> np.ndarray:
    """0 on the 3 points of line x of the Fano plane, 1 elsewhere: rows uniform on their lines have pairwise TV 2/3 and
    loss 0, while no point lies on every line (so every K with Doeblin coefficient 2/3 has a positive loss)."""
    lines = [(0, 1, 2), (0, 3, 4), (0, 5, 6), (1, 3, 5), (1, 4, 6), (2, 3, 6), (2, 4, 5)]
    loss = np.ones((7, 7))
    for x, line in enumerate(lines):
        loss[x, list(line)] = 0.0
    return loss


@pytest.mark.parametrize("n,seed", [(3, 0), (3, 1), (4, 2), (5, 3), (6, 4), (8, 5), (10, 6), (12, 7)],
                         ids=lambda v: str(v))
def test_cuts_agree_with_the_full_lp(n, seed):
    loss, prior, gamma = instance(n, seed)
    cuts = optimal_mixing_operator(n, gamma, loss=loss, prior=prior, formulation="cuts", progress=False)
    full = optimal_mixing_operator(n, gamma, loss=loss, prior=prior, formulation="lp", progress=False)
    assert cuts.solver.startswith("HiGHS") and cuts.status == "optimal"
    assert abs(cuts.objective - full.objective) <= 1e-9
    assert cuts.dual_bound <= cuts.objective <= cuts.dual_bound + 1e-9
    # the bound is a lower bound on every feasible K, the cvxpy LP's certified K included
    assert cuts.dual_bound <= full.objective and full.dual_bound <= cuts.objective
    assert dobrushin(cuts.K).gamma == cuts.certified_gamma <= gamma
    if n <= 6:
        assert exact_tv(cuts.K.matrix) <= Fraction(gamma)


def test_cuts_beat_the_doeblin_closed_form_on_the_fano_plane():
    # gamma = 2/3: the Dobrushin optimum is 0, the Doeblin optimum (closed form) is positive
    gamma = 2.0 / 3.0
    cuts = optimal_mixing_operator(7, gamma, loss=fano_loss(), formulation="cuts", progress=False)
    full = optimal_mixing_operator(7, gamma, loss=fano_loss(), formulation="lp", progress=False)
    doeblin = optimal_mixing_operator(7, gamma, coefficient="doeblin", loss=fano_loss(), progress=False)
    assert cuts.objective <= 1e-9 and abs(cuts.objective - full.objective) <= 1e-9
    assert doeblin.dual_bound > 0.1
    assert 0.0 <= cuts.dual_bound <= cuts.objective
    assert exact_tv(cuts.K.matrix) <= Fraction(gamma)


def test_cuts_are_asked_for_and_noted():
    loss, prior, gamma = instance(5, 11)
    r = optimal_mixing_operator(5, gamma, loss=loss, prior=prior, formulation="cuts", progress=False)
    assert r.solver == "HiGHS (constraint generation)"
    assert any("constraint generation" in note for note in r.notes)
    # "auto" certifies the Doeblin closed form (sparse flow LP, else pair generation) for a loss that is not invariant
    # (the entry cuts are opt-in), and takes the closed form for an invariant one
    assert optimal_mixing_operator(5, gamma, loss=loss, prior=prior, progress=False).solver in (
        "HiGHS PDLP (flow certificate)", "HiGHS (pair generation)")
    assert optimal_mixing_operator(5, gamma, progress=False).solver is None


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_separation_is_exact(seed):
    # for every pair over gamma: exactly the y with K(i, y) > K(j, y) not yet kept; no entry for a pair within gamma
    rng = np.random.default_rng(seed)
    n, gamma = 5, 0.3
    K = rng.dirichlet(np.ones(n) * 0.5, size=n)
    have = rng.random((n * (n - 1) // 2, n)) < 0.3
    p, y, excess = lp_dobrushin.violated_entries(K, gamma, have)
    expected = set()
    worst = -np.inf
    for q, (i, j) in enumerate(itertools.combinations(range(n), 2)):
        tv = max(sum(K[i, s] - K[j, s] for s in S) for r in range(n + 1) for S in itertools.combinations(range(n), r))
        worst = max(worst, tv - gamma)
        if tv > gamma + lp_dobrushin.CUT_ATOL:
            expected |= {(q, t) for t in range(n) if K[i, t] > K[j, t] and not have[q, t]}
    assert set(zip(p.tolist(), y.tolist())) == expected
    assert excess == pytest.approx(worst, abs=1e-12)


def test_repair_of_a_tolerance_level_excess(monkeypatch):
    # the solver's K sits just above gamma (as a feasibility tolerance allows): the design must mix it toward uniform
    # rows until chainamp certifies it; without the repair its exact coefficient is above gamma
    gamma = 0.5
    over = gamma + 4e-16
    K = np.array([[0.5 + over / 2, 0.5 - over / 2, 0.0], [0.5 - over / 2, 0.5 + over / 2, 0.0], [0.5, 0.5, 0.0]])
    assert exact_tv(K) > Fraction(gamma)
    real = lp_dobrushin.solve_cuts

    def near(C, g, max_nonzeros, **kw):
        out = real(C, g, max_nonzeros, **kw)
        return lp_dobrushin.CutsOutcome(K=K, pairs=out.pairs, lam=out.lam, rounds=out.rounds, entries=out.entries)

    monkeypatch.setattr(lp_dobrushin, "solve_cuts", near)
    loss = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.5, 0.5, 1.0]])
    r = optimal_mixing_operator(3, gamma, loss=loss, formulation="cuts", progress=False)
    assert r.repair > 0.0
    assert exact_tv(r.K.matrix) <= Fraction(gamma)
    assert dobrushin(r.K).gamma <= gamma
    assert r.dual_bound <= r.objective


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"coefficient": "doeblin"}, InvalidParameterError,
     r"formulation='cuts' exists for coefficient='dobrushin' only \(got coefficient='doeblin'\)"),
    ({"max_lp_nonzeros": 30}, SolverError, r"needs more than max_lp_nonzeros=30 constraint nonzeros after 1 rounds"),
], ids=["doeblin", "nonzeros"])
def test_cuts_validation(kwargs, exc, match):
    loss, prior, gamma = instance(4, 1)
    with pytest.raises(exc, match=match):
        optimal_mixing_operator(4, gamma, loss=loss, prior=prior, formulation="cuts", progress=False, **kwargs)


def test_cuts_give_up_after_max_rounds():
    loss, prior, gamma = instance(6, 2)
    C = prior[:, None] * loss
    with pytest.raises(SolverError, match=r"did not converge in 1 rounds of constraint generation \(largest TV excess "):
        lp_dobrushin.solve_cuts(C, gamma, 10**6, max_rounds=1)
