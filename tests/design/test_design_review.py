"""Regressions from the adversarial review of chainamp.design: rows accepted off 1 and eps = 0 with delta > 0."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import chainamp as ca
from chainamp.design import optimal_post_processing


def _normalised(rows) -> list:
    return [[Fraction(v) / sum(map(Fraction, row)) for v in row] for row in np.asarray(rows).tolist()]


@pytest.mark.parametrize("scale", [1 + 9e-10, 1 - 9e-10], ids=["rows-above-1", "rows-below-1"])
def test_dual_bound_and_objective_are_for_the_row_normalised_mechanism(scale):
    """Rows accepted within row_sum_atol stand for their normalised rows (what amplify certifies): the dual
    bound may not exceed the exact loss of the returned K on that operator, and the objective is that loss."""
    M = np.asarray(ca.mechanisms.randomized_response(3, 1.0).matrix) * scale
    r = optimal_post_processing(M, 2.0)
    Mn, Kn = _normalised(M), _normalised(r.K.matrix)
    loss = sum(Fraction(1, 3) * Mn[x][z] * Kn[z][y] for x in range(3) for z in range(3) for y in range(3) if x != y)
    assert Fraction(r.dual_bound) <= loss
    assert abs(r.objective - float(loss)) <= 1e-15


@pytest.mark.parametrize("M, delta", [
    ([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]], 0.1),
    (ca.mechanisms.randomized_response(3, 1.0), 1e-6),
    (ca.mechanisms.randomized_response(4, 2.0), 0.01),
], ids=["random-0.1", "rr3-1e-6", "rr4-0.01"])
def test_zero_epsilon_with_positive_delta_is_designed_and_certified(M, delta):
    """At eps = 0 the error model of the product keeps every certified eps' a few ulps above 0, so the design
    is certified by delta'(0) <= delta (the same guarantee) instead of failing to repair."""
    r = optimal_post_processing(M, 0.0, delta=delta)
    assert r.report.delta_at(0.0) <= delta
    assert r.certified_epsilon == 0.0
    assert r.dual_bound <= r.objective <= r.dual_bound + 1e-7


@pytest.mark.parametrize("call, match", [
    (lambda: optimal_post_processing(ca.mechanisms.randomized_response(5, 3.0), 1.0, max_lp_nonzeros=499,
                                     symmetry=False),
     r"optimal_post_processing: the LP would have 500 constraint nonzeros, above max_lp_nonzeros=499"),
    (lambda: ca.design.optimal_mixing_operator(5, 0.5, max_lp_nonzeros=199, symmetry=False,
                                                     formulation="lp"),
     r"optimal_mixing_operator: the LP would have 200 constraint nonzeros, above max_lp_nonzeros=199.*"
     r"use coefficient='doeblin'"),
    (lambda: optimal_post_processing(ca.mechanisms.randomized_response(5, 3.0), 1.0, max_lp_nonzeros=0),
     r"max_lp_nonzeros must be >= 1"),
], ids=["post-processing", "mixing", "bad-limit"])
def test_an_lp_past_the_size_limit_is_refused_before_it_is_built(call, match):
    """5-RR after itself: 20 ordered pairs x 5 outputs of M x 5 of K = 500 nonzeros; 5 states: 4 x 10 x 5 = 200."""
    with pytest.raises(ca.errors.InvalidParameterError, match=match):
        call()


def test_the_size_limit_does_not_refuse_a_design_that_needs_no_lp():
    r = optimal_post_processing(ca.mechanisms.randomized_response(5, 0.5), 1.0, max_lp_nonzeros=1)
    assert "already meets the target" in r.notes[0]


def _rows_off_by_one_ulp() -> np.ndarray:
    """A 3x3 mechanism whose row 1 sums to 1 - 1 ulp in floating point (a normalised random draw, issue 18.3)."""
    M = np.array([[0.02089053115964342, 0.5711827132148403, 0.40792675562551634],
                  [0.23198402839841684, 0.554702073152752, 0.2133138984488311],
                  [0.4577769257967349, 0.13530646452325268, 0.4069166096800124]])
    assert M[1].sum() == 1.0 - 2.0**-53
    return M


@pytest.mark.parametrize("neighbors", [None, [(0, 1), (1, 2)]], ids=["all-pairs", "path"])
def test_epsilon_zero_with_rows_one_ulp_off(neighbors):
    """Issue 18.3: eps = delta = 0 after an M whose rows sum to 1 +- 1 ulp is designed, not a SolverError."""
    from chainamp.design import optimal_post_processing

    r = optimal_post_processing(_rows_off_by_one_ulp(), 0.0, neighbors=neighbors)
    assert r.report.epsilon_at(0.0) == 0.0 and r.repair == 0.0
    rows = r.K.matrix if neighbors is None else r.report.mechanism.matrix.matrix @ r.K.matrix
    if neighbors is None:  # the closed form: a constant operator (identical rows)
        assert np.array_equal(rows, np.repeat(rows[:1], rows.shape[0], axis=0))
    assert r.dual_bound <= r.objective <= r.dual_bound + 1e-7
