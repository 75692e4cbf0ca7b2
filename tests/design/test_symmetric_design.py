"""Designs invariant under relabelling (chainamp/design/symmetric.py): the one-parameter closed form against the
full LP, exact references for the dual bound, the structured path at deployed k, and the fall-backs."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import chainamp as ca
from chainamp import mechanisms
from chainamp.design import optimal_mixing_operator, optimal_post_processing
from chainamp.design import symmetric as sym
from chainamp.operators import SymmetricChannel

SYMMETRIC_NOTE = "symmetric design"


def _all_pairs(k):
    return [(i, j) for i in range(k) for j in range(k) if i != j]


def _invariant_loss(k, l0, l1):
    return np.where(np.eye(k, dtype=bool), l0, l1).astype(float)


@pytest.mark.parametrize("k, eps_m, eps, delta, l0, l1", [
    (3, 2.0, 1.0, 0.0, 0.0, 1.0),
    (4, 3.0, 0.5, 0.0, 0.0, 1.0),
    (4, 3.0, 0.5, 0.05, 0.0, 1.0),
    (5, 1.0, 0.3, 0.0, 0.2, 1.5),
    (3, 2.0, 1.0, 0.0, 1.0, 0.25),     # a loss that prefers wrong answers: the smallest reporting probability
    (4, 2.0, 0.2, 0.1, 2.0, 0.5),
    (6, 4.0, 5.0, 0.0, 0.0, 1.0),      # M already meets the target: the identity
], ids=["k3", "k4", "k4-delta", "k5-loss", "k3-inverted", "k4-inverted-delta", "k6-slack"])
def test_closed_form_equals_the_full_lp(k, eps_m, eps, delta, l0, l1):
    M = mechanisms.randomized_response(k, eps_m)
    loss = _invariant_loss(k, l0, l1)
    fast = optimal_post_processing(M, eps, delta=delta, loss=loss)
    assert any(SYMMETRIC_NOTE in n for n in fast.notes)
    assert isinstance(fast.K, SymmetricChannel)
    # all pairs listed explicitly: the same problem through the general LP
    full = optimal_post_processing(M, eps, delta=delta, loss=loss, neighbors=_all_pairs(k))
    assert not any(SYMMETRIC_NOTE in n for n in full.notes)
    assert fast.objective == pytest.approx(full.objective, abs=1e-7)  # LP and closed form: within the 1e-7 bracket
    assert fast.dual_bound <= full.objective + 1e-12          # a lower bound for every K, symmetric or not
    assert full.dual_bound <= fast.objective + 1e-12
    assert fast.dual_bound <= fast.objective <= fast.dual_bound + (1e-9 if delta == 0 else 1e-7)
    assert fast.report.epsilon_at(delta) <= eps


def test_dense_rr_matrix_takes_the_symmetric_path():
    M = mechanisms.randomized_response(4, 2.0)
    dense = ca.MarkovOperator(M.matrix)
    r = optimal_post_processing(dense, 1.0)
    assert any(SYMMETRIC_NOTE in n for n in r.notes)
    assert r.objective == pytest.approx(optimal_post_processing(M, 1.0).objective, abs=1e-12)


@pytest.mark.parametrize("eps", [1.4913509104049036, 1.9582629884410614, 0.6939990415986534, 0.9170718476894237],
                         ids=lambda e: f"eps{e:.4f}")
def test_dual_bound_below_the_exact_optimum_at_the_exp_rounding_edge(eps):
    """M = identity on 3 values: the optimum is 1 - e^eps / (2 + e^eps) exactly. At these eps, math.exp rounds
    e^eps down and the dual bound computed with it (rounded down once) lands above the exact optimum; the
    bound computed with e^eps rounded up (exp_bounds) must not."""
    mpmath.mp.prec = 200
    c = mpmath.e ** mpmath.mpf(eps)
    exact = 1 - c / (2 + c)
    r = optimal_post_processing(np.eye(3), eps)
    assert mpmath.mpf(r.dual_bound) <= exact
    assert mpmath.mpf(r.objective) >= exact
    # the same computation with e^eps rounded to nearest overshoots: the margin is what keeps the bound sound
    prob = sym.SymmetricProblem(3, range(3), Fraction(0), Fraction(1), Fraction(1), Fraction(0))
    naive = sym.float_down(sym.loss_of(prob, sym.best_report_probability(prob, Fraction(math.exp(eps)), Fraction(0))))
    assert mpmath.mpf(naive) > exact


@pytest.mark.parametrize("k, eps", [(2, 0.7), (7, 1.3), (50, 2.0)], ids=["k2", "k7", "k50"])
def test_report_interval_exact(k, eps):
    """Both ends of the reporting-probability interval make k-RR exactly (eps, delta)-LDP (Fraction check)."""
    c = Fraction(math.exp(eps))
    for delta in (Fraction(0), Fraction(1, 100)):
        lo, hi = sym.report_interval(k, c, delta)
        for P in (lo, hi):
            Q = (1 - P) / (k - 1)
            assert max(P - c * Q, Fraction(0)) + max(Q - c * P, Fraction(0)) == delta or P in (0, 1)


def test_deployed_k_stays_structured():
    M = mechanisms.randomized_response(10**6, 3.0)
    with ca.resource_limits(memory="300MB"):
        r = optimal_post_processing(M, 1.0)
    assert isinstance(r.K, SymmetricChannel) and r.K.shape == (10**6, 10**6)
    assert r.certified_epsilon <= 1.0 and r.dual_bound <= r.objective <= r.dual_bound + 1e-9


@pytest.mark.parametrize("change", ["prior", "loss", "neighbors", "outputs", "not-rr"])
def test_non_invariant_problems_take_the_lp(change):
    k = 3
    M = mechanisms.randomized_response(k, 2.0)
    kw = {}
    if change == "prior":
        kw["prior"] = [0.5, 0.3, 0.2]
    elif change == "loss":
        kw["loss"] = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    elif change == "neighbors":
        kw["neighbors"] = [(0, 1), (1, 2)]
    elif change == "outputs":
        kw["outputs"] = [0, 1, 2, 3]
    else:
        M = ca.MarkovOperator([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]])
    r = optimal_post_processing(M, 1.0, **kw)
    assert not any(SYMMETRIC_NOTE in n for n in r.notes)
    assert r.dual_bound <= r.objective


def test_epsilon_zero_keeps_the_constant_operator():
    r = optimal_post_processing(mechanisms.randomized_response(4, 2.0), 0.0)
    assert r.report.epsilon_at(0.0) == 0.0
    assert r.objective == pytest.approx(0.75)


@pytest.mark.parametrize("coefficient", ["dobrushin", "doeblin"])
@pytest.mark.parametrize("n, gamma, l0, l1", [(3, 0.5, 0.0, 1.0), (4, 0.3, 1.0, 0.2), (5, 0.9, 2.0, 0.1),
                                              (4, 0.05, 0.3, 0.3)],
                         ids=["01-loss", "inverted", "inverted-large-gamma", "flat"])
def test_mixing_closed_form_equals_the_lp(coefficient, n, gamma, l0, l1):
    loss = _invariant_loss(n, l0, l1)
    fast = optimal_mixing_operator(n, gamma, coefficient=coefficient, loss=loss)
    assert any(SYMMETRIC_NOTE in note for note in fast.notes)
    assert fast.certified_gamma <= gamma
    # a tiny asymmetric perturbation of the loss sends the same problem through the LP
    bumped = loss.copy()
    bumped[0, 1] += 1e-12
    full = optimal_mixing_operator(n, gamma, coefficient=coefficient, loss=bumped)
    assert not any(SYMMETRIC_NOTE in note for note in full.notes)
    assert fast.objective == pytest.approx(full.objective, abs=1e-7)  # LP and closed form: within the 1e-7 bracket
    assert fast.dual_bound <= full.objective + 1e-9 and fast.dual_bound <= fast.objective


@pytest.mark.parametrize("coefficient", ["dobrushin", "doeblin"])
def test_mixing_closed_form_exact(coefficient):
    """0-1 loss, uniform prior: the optimum (n - 1)(1 - gamma) / n, exactly (module docstring of mixing_design)."""
    n, gamma = 200, 0.5
    r = optimal_mixing_operator(n, gamma, coefficient=coefficient)
    exact = Fraction(n - 1) * (1 - Fraction(gamma)) / n
    assert Fraction(r.dual_bound) <= exact <= Fraction(r.objective) + Fraction(1, 10**15)
    assert r.certified_gamma <= gamma


def test_brute_force_symmetric_optimum_over_a_grid():
    """On k = 3, the best K over a grid of all 3x3 stochastic matrices (steps of 1/6) never beats the dual bound."""
    k, eps = 3, 0.6
    M = mechanisms.randomized_response(k, 1.5)
    r = optimal_post_processing(M, eps)
    mat = M.matrix
    c = math.exp(eps)
    steps = [Fraction(i, 6) for i in range(7)]
    rows = [row for row in itertools.product(steps, repeat=3) if sum(row) == 1]
    best = None
    for K in itertools.product(rows, repeat=3):
        P = np.array(mat, dtype=float) @ np.array(K, dtype=float)
        if np.all(P.max(axis=0) <= c * P.min(axis=0) + 1e-15):
            loss = float(np.mean(1.0 - np.diagonal(P)))
            best = loss if best is None else min(best, loss)
    assert best is not None and r.dual_bound <= best + 1e-12
