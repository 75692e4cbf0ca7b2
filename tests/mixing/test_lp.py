"""chainamp.lp: certified LP brackets of the mixing coefficients against their closed forms."""

from __future__ import annotations

import dataclasses
import math

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainamp.mixing.lp_solver as lpmod
from chainamp import InvalidDistributionError, InvalidOperatorError, InvalidParameterError, MarkovOperator
from chainamp.errors import SolverError
from chainamp.lp import (DEFAULT_LP_SOLVER, LP_SOLVERS, LPSolution, doeblin_lp, hockey_stick_lp,
                         hockey_stick_lp_pairs, ultra_mixing_lp)
from conftest import krr_matrix, random_stochastic, stochastic_matrices

SOLVERS = pytest.mark.parametrize("solver", LP_SOLVERS, ids=[s.lower() for s in LP_SOLVERS])
#: The brief's agreement target between an LP bound and the closed form.
EXACT_ATOL = 1e-8
#: Dual feasibility is exact in real arithmetic; a float column sum of n <= 8 terms
#: can miss by a few ulps, so allow 1e-12 (far below anything the solver could hide).
FEAS_ATOL = 1e-12


# ------------------------------------------------------------------ closed forms, inline

def doeblin_exact(K: np.ndarray) -> float:
    """OPT of the Doeblin LP: the mass of the largest minorising measure, sum_y min_x K(x, y)."""
    return float(K.min(axis=0).sum())


def ultra_exact(K: np.ndarray) -> float:
    """OPT of the ultra-mixing LP: min_y colmin/colmax if all rows share one support, else 0."""
    support = K > 0
    if not np.all(support == support[0]):
        return 0.0
    live = support[0]
    return float(np.min(K.min(axis=0)[live] / K.max(axis=0)[live]))


def hockey_exact(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """sum_y [p_y - e^eps q_y]_+ by a plain loop; eps = inf gives p(supp p minus supp q)."""
    if math.isinf(eps):
        return float(sum(pi for pi, qi in zip(p, q) if qi == 0.0))
    c = math.exp(eps)
    return float(sum(max(pi - c * qi, 0.0) for pi, qi in zip(p, q)))


def check_bracket(sol: LPSolution, exact: float) -> None:
    assert sol.status == cp.OPTIMAL
    assert sol.lower <= exact <= sol.upper
    assert abs(sol.lower - exact) <= EXACT_ATOL and abs(sol.upper - exact) <= EXACT_ATOL


def check_doeblin_certificate(K: np.ndarray, sol: LPSolution) -> None:
    nu, w = sol.primal["nu"], sol.dual["w"]
    assert np.all(nu >= 0.0) and np.all(nu[None, :] <= K)  # primal feasible, exactly
    assert sol.lower <= nu.sum()
    assert np.all(w >= 0.0) and np.all(w.sum(axis=0) >= 1.0 - FEAS_ATOL)
    assert (w * K).sum() <= sol.upper * (1 + FEAS_ATOL)


def check_ultra_certificate(K: np.ndarray, sol: LPSolution) -> None:
    r, floor = float(sol.primal["r"]), sol.primal["floor"]
    assert r == sol.lower and 0.0 <= r <= 1.0
    assert np.all(r * K <= floor[None, :]) and np.all(floor[None, :] <= K)  # primal feasible, exactly
    alpha, beta, rho = sol.dual["alpha"], sol.dual["beta"], float(sol.dual["rho"])
    assert np.all(alpha >= 0.0) and np.all(beta >= 0.0) and rho >= 0.0
    assert np.all(alpha.sum(axis=0) <= beta.sum(axis=0) * (1 + FEAS_ATOL))
    assert (alpha * K).sum() + rho >= 1.0 - FEAS_ATOL
    assert (beta * K).sum() + rho <= sol.upper + FEAS_ATOL


def check_hockey_certificate(p: np.ndarray, q: np.ndarray, eps: float, sol: LPSolution) -> None:
    f, u = sol.primal["f"], sol.dual["u"]
    assert np.all((0.0 <= f) & (f <= 1.0))
    assert np.all(u >= 0.0)
    if math.isinf(eps):
        assert np.all(u[(q == 0) & (p > 0)] >= p[(q == 0) & (p > 0)])
    else:
        assert np.all(u >= p - math.exp(eps) * q - FEAS_ATOL)
    assert u.sum() <= sol.upper


# ------------------------------------------------------------------ random operators

CASES = [(seed, n, m, zp) for seed, (n, m, zp) in enumerate(
    [(2, 2, 0.0), (3, 5, 0.0), (5, 3, 0.0), (8, 8, 0.0), (4, 4, 0.4), (6, 7, 0.3), (8, 6, 0.5), (2, 8, 0.0)])]
CASE_IDS = [f"{n}x{m}-zeros{zp}-seed{s}" for s, n, m, zp in CASES]


@SOLVERS
@pytest.mark.parametrize("seed,n,m,zp", CASES, ids=CASE_IDS)
class TestRandomOperators:
    def test_doeblin(self, seed, n, m, zp, solver):
        K = random_stochastic(np.random.default_rng(seed), n, m, zp)
        sol = doeblin_lp(K, solver=solver)
        assert sol.solver == solver
        check_bracket(sol, doeblin_exact(K))
        check_doeblin_certificate(K, sol)

    def test_ultra(self, seed, n, m, zp, solver):
        K = random_stochastic(np.random.default_rng(seed), n, m, zp)
        sol = ultra_mixing_lp(K, solver=solver)
        check_bracket(sol, ultra_exact(K))
        check_ultra_certificate(K, sol)

    def test_hockey_pairs(self, seed, n, m, zp, solver):
        K = random_stochastic(np.random.default_rng(seed), n, m, zp)
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j][:12]
        for eps in (0.0, 0.7, math.inf):
            sols = hockey_stick_lp_pairs(K, pairs, eps, solver=solver)
            assert list(sols) == pairs
            for (i, j), sol in sols.items():
                check_bracket(sol, hockey_exact(K[i], K[j], eps))
                check_hockey_certificate(K[i], K[j], eps, sol)


@settings(max_examples=15, deadline=None)
@given(K=stochastic_matrices(max_n=6, max_m=6), eps=st.sampled_from([0.0, 0.3, 2.0, math.inf]))
def test_property_brackets_contain_closed_forms(K, eps):
    check_bracket(doeblin_lp(K), doeblin_exact(K))
    check_bracket(ultra_mixing_lp(K), ultra_exact(K))
    check_bracket(hockey_stick_lp(K[0], K[-1], eps), hockey_exact(K[0], K[-1], eps))


def test_ultra_common_zero_column_and_single_row():
    K = np.array([[0.5, 0.5, 0.0], [0.3, 0.7, 0.0]])  # zero column: shared support, r = min(0.6, 5/7)
    check_bracket(ultra_mixing_lp(K), 0.6)
    check_bracket(ultra_mixing_lp([[0.25, 0.75]]), 1.0)
    check_bracket(doeblin_lp([[0.25, 0.75]]), 1.0)


def test_ultra_differing_supports_is_zero():
    K = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    sol = ultra_mixing_lp(K)
    check_bracket(sol, 0.0)
    assert sol.lower == 0.0


def test_accepts_markov_operator():
    K = random_stochastic(np.random.default_rng(7), 4, 3)
    assert doeblin_lp(MarkovOperator(K)).upper == doeblin_lp(K).upper


# ------------------------------------------------------------------ repair of bad solver output

@pytest.fixture(params=["noisy", "zero"], ids=["noisy", "zero"])
def sloppy_solver(request, monkeypatch):
    """Make every solve return a perturbed (infeasible) primal and dual: the repairs must cope."""
    rng = np.random.default_rng(99)
    real_solve = cp.Problem.solve

    def solve(self, *args, **kwargs):
        out = real_solve(self, *args, **kwargs)
        for con in self.constraints:
            d = np.asarray(con.dual_value, dtype=float)
            if request.param == "zero":
                con.save_dual_value(np.zeros_like(d))
            else:
                con.save_dual_value(d * rng.uniform(0.3, 1.7, d.shape) + rng.normal(0.0, 1e-3, d.shape))
        for var in self.variables():
            var.save_value(np.asarray(var.value, dtype=float) + rng.normal(0.0, 1e-2, var.shape))
        return out

    monkeypatch.setattr(cp.Problem, "solve", solve)
    return request.param


@pytest.mark.parametrize("seed,n,m,zp", CASES[:6], ids=CASE_IDS[:6])
def test_repairs_keep_brackets_rigorous(sloppy_solver, seed, n, m, zp):
    K = random_stochastic(np.random.default_rng(seed), n, m, zp)
    loose = 2.0  # the perturbed solutions are far from optimal; only rigour is checked here
    sol = doeblin_lp(K, lp_atol=loose)
    assert sol.lower <= doeblin_exact(K) <= sol.upper
    check_doeblin_certificate(K, sol)
    sol = ultra_mixing_lp(K, lp_atol=loose)
    assert sol.lower <= ultra_exact(K) <= sol.upper
    check_ultra_certificate(K, sol)
    for eps in (0.0, 0.5, math.inf):
        sol = hockey_stick_lp(K[0], K[-1], eps, lp_atol=loose)
        assert sol.lower <= hockey_exact(K[0], K[-1], eps) <= sol.upper
        check_hockey_certificate(K[0], K[-1], eps, sol)
    if sloppy_solver == "zero":  # an all-zero Doeblin dual is repaired to the exact column minima
        assert abs(doeblin_lp(K, lp_atol=loose).upper - doeblin_exact(K)) <= EXACT_ATOL


# ------------------------------------------------------------------ k-ary randomized response

@pytest.mark.parametrize("k,eps", [(2, 0.5), (3, 1.0), (5, 2.0), (8, 0.1)],
                         ids=["k2-e0.5", "k3-e1", "k5-e2", "k8-e0.1"])
def test_krr_closed_forms(k, eps):
    # k-ary RR closed forms (rows differ in two entries): Dobrushin = Doeblin gamma = (e^eps - 1)/(e^eps + k - 1), ultra gamma = 1 - e^-eps.
    K = krr_matrix(k, eps)
    dob = math.expm1(eps) / (math.exp(eps) + k - 1)
    d = doeblin_lp(K)
    assert 1 - d.lower >= dob - 1e-15 and abs((1 - d.lower) - dob) <= EXACT_ATOL
    u = ultra_mixing_lp(K)
    assert abs((1 - u.lower) - (-math.expm1(-eps))) <= EXACT_ATOL
    sols = hockey_stick_lp_pairs(K, [(i, j) for i in range(k) for j in range(k) if i != j], 0.0)
    assert abs(max(s.upper for s in sols.values()) - dob) <= EXACT_ATOL
    # (gamma, eps)-Dobrushin at the channel's own eps is 0: k-RR is eps-LDP
    assert max(s.upper for s in hockey_stick_lp_pairs(K, [(0, 1)], eps).values()) <= EXACT_ATOL


# ------------------------------------------------------------------ hockey-stick: eps = inf and huge eps

def test_hockey_infinite_epsilon_is_mass_outside_support():
    p, q = np.array([0.5, 0.3, 0.2, 0.0]), np.array([0.1, 0.3, 0.0, 0.6])
    sol = hockey_stick_lp(p, q, math.inf)
    check_bracket(sol, 0.2)
    check_hockey_certificate(p, q, math.inf, sol)
    check_bracket(hockey_stick_lp(q, p, math.inf), 0.6)
    check_bracket(hockey_stick_lp(p, p, math.inf), 0.0)


@pytest.mark.parametrize("eps", [50.0, 705.0, 800.0, 1e6, 1e20], ids=["50", "705", "800", "1e6", "1e20"])
def test_hockey_large_epsilon_stays_finite(eps):
    p, q = np.array([0.5, 0.3, 0.2, 0.0]), np.array([0.1, 0.3, 0.0, 0.6])
    check_bracket(hockey_stick_lp(p, q, eps), 0.2)  # e^eps q_y > p_y wherever q_y > 0


def test_hockey_huge_epsilon_with_tiny_q_goes_through_logs():
    p, q = np.array([0.5, 0.5]), np.array([1.0, 1e-320])  # e^735 * 1e-320 is about 0.03
    eps = 735.0
    exact = 0.5 - math.exp(eps + math.log(1e-320))
    sol = hockey_stick_lp(p, q, eps)
    check_bracket(sol, exact)
    assert sol.lower <= exact <= sol.upper


def test_hockey_matches_divergences_module():
    from chainamp.privacy import hockey_stick
    rng = np.random.default_rng(3)
    K = random_stochastic(rng, 2, 7, 0.3)
    for eps in (0.0, 0.4, 3.0, math.inf):
        sol = hockey_stick_lp(K[0], K[1], eps)
        assert abs(sol.upper - hockey_stick(K[0], K[1], eps)) <= EXACT_ATOL


def test_pairs_reuse_matches_single_solves_and_dedupes():
    K = random_stochastic(np.random.default_rng(11), 4, 5, 0.2)
    sols = hockey_stick_lp_pairs(K, [(0, 1), (2, 3), (0, 1), (1, 1)], 0.5)
    assert list(sols) == [(0, 1), (2, 3), (1, 1)]
    for (i, j), sol in sols.items():
        single = hockey_stick_lp(K[i], K[j], 0.5)
        assert abs(sol.upper - single.upper) <= EXACT_ATOL
    assert hockey_stick_lp_pairs(K, [], 0.5) == {}


# ------------------------------------------------------------------ solver trust

def test_non_optimal_status_raises(monkeypatch):
    monkeypatch.setattr(cp.Problem, "status", property(lambda self: "optimal_inaccurate"))
    with pytest.raises(SolverError, match="optimal_inaccurate"):
        doeblin_lp([[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(SolverError, match="only 'optimal' is trusted"):
        hockey_stick_lp([0.5, 0.5], [0.25, 0.75], 0.0)


def test_solver_failure_raises(monkeypatch):
    def boom(self, *args, **kwargs):
        raise cp.error.SolverError("numerical trouble")
    monkeypatch.setattr(cp.Problem, "solve", boom)
    with pytest.raises(SolverError, match="numerical trouble"):
        ultra_mixing_lp([[0.9, 0.1], [0.2, 0.8]])


def test_missing_solver_value_raises(monkeypatch):
    monkeypatch.setattr(cp.Variable, "value", property(lambda self: None))
    with pytest.raises(SolverError, match="no value for nu"):
        doeblin_lp([[0.9, 0.1], [0.2, 0.8]])


def test_non_finite_solver_value_raises(monkeypatch):
    monkeypatch.setattr(cp.Variable, "value", property(lambda self: np.full(self.shape, np.nan)))
    with pytest.raises(SolverError, match="non-finite value for f"):
        hockey_stick_lp([0.5, 0.5], [0.25, 0.75], 0.0)


@SOLVERS
def test_bracket_wider_than_lp_atol_raises(solver):
    K = random_stochastic(np.random.default_rng(5), 5, 5)
    with pytest.raises(SolverError, match="wider than lp_atol"):
        doeblin_lp(K, solver=solver, lp_atol=1e-300)
    with pytest.raises(SolverError, match="wider than lp_atol"):
        ultra_mixing_lp(K, solver=solver, lp_atol=1e-300)
    with pytest.raises(SolverError, match="wider than lp_atol"):
        hockey_stick_lp(K[0], K[1], 0.2, solver=solver, lp_atol=1e-300)


def test_inverted_bracket_raises():
    with pytest.raises(SolverError, match="exceeds upper bound"):
        lpmod._solution(0.5, 0.4, {}, {}, "HIGHS", 1e-8, "test LP")


def test_solution_is_frozen_and_read_only():
    sol = doeblin_lp([[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(dataclasses.FrozenInstanceError):
        sol.lower = 0.0
    with pytest.raises(ValueError, match="read-only"):
        sol.dual["w"][0, 0] = 5.0
    assert sol.gap == sol.upper - sol.lower and sol.gap >= 0.0


def test_solver_names():
    assert DEFAULT_LP_SOLVER in LP_SOLVERS
    assert doeblin_lp([[1.0]], solver="clarabel").solver == "CLARABEL"
    assert doeblin_lp([[1.0]]).solver == DEFAULT_LP_SOLVER


# ------------------------------------------------------------------ validation

GOOD = [[0.9, 0.1], [0.2, 0.8]]
MATRIX_FUNCS = [doeblin_lp, ultra_mixing_lp, lambda K, **kw: hockey_stick_lp_pairs(K, [(0, 0)], 0.0, **kw)]
MATRIX_IDS = ["doeblin", "ultra", "pairs"]


@pytest.mark.parametrize("func", MATRIX_FUNCS, ids=MATRIX_IDS)
@pytest.mark.parametrize("bad,match", [
    ([0.5, 0.5], "must be 2-D"),
    (np.zeros((0, 3)), "at least one row"),
    ([[0.5, np.nan], [0.5, 0.5]], "finite"),
    ([[1.5, -0.5], [0.5, 0.5]], "non-negative"),
    ([[0.5, 0.6], [0.5, 0.5]], "sum to 1"),
], ids=["1d", "empty", "nan", "negative", "rowsum"])
def test_bad_matrix(func, bad, match):
    with pytest.raises(InvalidOperatorError, match=match):
        func(bad)


@pytest.mark.parametrize("func", MATRIX_FUNCS, ids=MATRIX_IDS)
def test_matrix_options(func):
    with pytest.raises(TypeError, match="array-like of numbers"):
        func([["a", "b"]])
    with pytest.raises(InvalidParameterError, match="solver must be one of"):
        func(GOOD, solver="MOSEK-ISH")
    with pytest.raises(TypeError, match="solver must be a string"):
        func(GOOD, solver=3)
    with pytest.raises(InvalidParameterError, match="lp_atol must be > 0"):
        func(GOOD, lp_atol=0.0)
    with pytest.raises(InvalidParameterError, match="row_sum_atol must be > 0"):
        func(GOOD, row_sum_atol=-1.0)
    # a looser row_sum_atol accepts a slightly sub-stochastic matrix
    func([[0.9, 0.1], [0.2, 0.79]], row_sum_atol=0.02)


def test_solver_not_installed(monkeypatch):
    monkeypatch.setattr(lpmod, "_installed", lambda: frozenset({"SCS"}))
    with pytest.raises(InvalidParameterError, match="not installed"):
        doeblin_lp(GOOD, solver="HIGHS")


@pytest.mark.parametrize("p,q,eps,error,match", [
    ([0.5, 0.6], [0.5, 0.5], 0.0, InvalidDistributionError, "p must sum to 1"),
    ([0.5, 0.5], [0.5, 0.5, 0.0], 0.0, InvalidDistributionError, "q must have 2 entries"),
    ([0.5, 0.5], [1.5, -0.5], 0.0, InvalidDistributionError, "q has a negative entry"),
    ([0.5, 0.5], [0.5, 0.5], -0.1, InvalidParameterError, "epsilon must be >= 0"),
    ([0.5, 0.5], [0.5, 0.5], math.nan, InvalidParameterError, "epsilon must not be NaN"),
    ([0.5, 0.5], [0.5, 0.5], "1", TypeError, "epsilon must be a real number"),
], ids=["p-sum", "size", "q-negative", "eps-negative", "eps-nan", "eps-type"])
def test_hockey_validation(p, q, eps, error, match):
    with pytest.raises(error, match=match):
        hockey_stick_lp(p, q, eps)


def test_hockey_options_validation():
    with pytest.raises(InvalidParameterError, match="solver must be one of"):
        hockey_stick_lp([0.5, 0.5], [0.5, 0.5], 0.0, solver="GLPK_MI")
    with pytest.raises(InvalidParameterError, match="lp_atol must be > 0"):
        hockey_stick_lp([0.5, 0.5], [0.5, 0.5], 0.0, lp_atol=-1e-8)


@pytest.mark.parametrize("pairs,error,match", [
    (5, TypeError, "pairs must be an iterable"),
    ("01", TypeError, "pairs must be an iterable"),
    ([(0, 1, 2)], InvalidParameterError, "pair of row indices"),
    ([3], InvalidParameterError, "pair of row indices"),
    ([(0, 2)], InvalidParameterError, "row index >= the number of rows 2"),
    ([(-1, 0)], InvalidParameterError, "pair index must be >= 0"),
    ([(0.0, 1)], TypeError, "pair index must be an integer"),
], ids=["int", "str", "triple", "scalar", "out-of-range", "negative", "float"])
def test_pairs_validation(pairs, error, match):
    with pytest.raises(error, match=match):
        hockey_stick_lp_pairs(GOOD, pairs, 0.0)


def test_pairs_epsilon_validation():
    with pytest.raises(InvalidParameterError, match="epsilon must be >= 0"):
        hockey_stick_lp_pairs(GOOD, [(0, 1)], -1.0)
