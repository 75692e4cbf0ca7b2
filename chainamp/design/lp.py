"""The linear programs of :mod:`chainamp.design`, solved with cvxpy (the only design module importing it).

Two formulations, both over a row-stochastic matrix variable ``K`` (each row in the simplex):

* :func:`post_processing_lp`: ``min <C, K>`` subject to ``A K <= 0`` (pure epsilon), or to
  ``A K <= t``, ``t >= 0``, ``sum_y t[p, y] <= budget[p]`` (delta > 0); ``A[p] = (M[x_p] - e^eps M[x'_p]) / s_p``
  for each ordered neighbour pair ``p = (x_p, x'_p)`` and ``budget[p] = delta / s_p``, so ``s_p (A K)[p, y] =
  (MK)(x_p, y) - e^eps (MK)(x'_p, y)`` (the caller's row scaling ``s_p`` keeps large e^eps well conditioned).
* :func:`mixing_lp`: ``min <C, K>`` over n x n K whose Dobrushin coefficient (aux ``t[p, y] >= K_i - K_j``,
  ``t >= 0``, ``sum_y t[p, y] <= gamma`` per unordered pair ``p = (i, j)``) or Doeblin coefficient (aux
  ``0 <= m_y <= K(x, y)``, ``sum_y m_y >= 1 - gamma``) is at most gamma.

Each returns the solver's K and the multipliers ``lam >= 0`` (clipped) of the coupling inequalities;
:mod:`.duals` turns those into a certified lower bound in numpy, and the callers check, clip and
renormalise K and have chainamp certify it. Only an ``OPTIMAL`` cvxpy status is trusted: anything else
raises :class:`~chainamp.errors.SolverError` naming the status (as in :mod:`chainamp.lp`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np

from .._numerics import check_choice
from ..errors import InvalidParameterError, SolverError

__all__: list[str] = []

#: Tighter than cvxpy's defaults, as for the mixing LPs, so the dual bound closes to well within 1e-7.
_SOLVER_OPTIONS: dict[str, dict[str, float]] = {
    "HIGHS": {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
}


@dataclass(frozen=True)
class LPOutcome:
    """The solver's primal K and the clipped multipliers of the coupling inequalities."""

    K: np.ndarray
    lam: np.ndarray
    solver: str
    status: str


def check_solver(solver: Any) -> str:
    """The cvxpy solver name: ``None`` is chainamp's default LP solver (see :mod:`chainamp.lp`)."""
    from ..lp import DEFAULT_LP_SOLVER, LP_SOLVERS  # the library's solver choice, kept in one place

    if solver is None:
        return DEFAULT_LP_SOLVER
    name = check_choice(solver.upper() if isinstance(solver, str) else solver, "solver", LP_SOLVERS)
    if name not in cp.installed_solvers():
        raise InvalidParameterError(f"solver {name!r} is not installed (cvxpy has {sorted(cp.installed_solvers())})")
    return name


@contextlib.contextmanager
def _quiet_stdout():
    """Silence C-level writes to file descriptor 1 (HiGHS prints a banner when first constructed, before
    cvxpy can pass ``verbose=False``); a no-op where stdout has no file descriptor."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _solve(problem: cp.Problem, solver: str) -> None:
    try:
        with warnings.catch_warnings(), _quiet_stdout():
            warnings.simplefilter("ignore")  # an inaccurate solve shows in its status
            problem.solve(solver=solver, verbose=False, **_SOLVER_OPTIONS.get(solver, {}))
    except cp.error.SolverError as exc:
        raise SolverError(f"solver {solver} failed: {exc}") from exc
    if problem.status != cp.OPTIMAL:
        raise SolverError(f"solver {solver} returned status {problem.status!r}; only {cp.OPTIMAL!r} is trusted")


def _value(value: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    if value is None:
        raise SolverError(f"the solver returned no value for {name}")
    out = np.array(value, dtype=float).reshape(shape)
    if not np.all(np.isfinite(out)):
        raise SolverError(f"the solver returned a non-finite value for {name}")
    return out


def post_processing_lp(C: np.ndarray, A: np.ndarray, budget: np.ndarray, relaxed: bool, solver: str) -> LPOutcome:
    """Solve ``min <C, K>`` over row-stochastic K (m x k) with ``A K <= 0`` or, when ``relaxed``, with
    ``A K <= t``, ``t >= 0``, ``sum_y t[p, y] <= budget[p]``."""
    m, k = C.shape
    P = A.shape[0]
    K = cp.Variable((m, k), nonneg=True)
    cons = [cp.sum(K, axis=1) == 1]
    if not relaxed:
        coupling = A @ K <= 0
        cons.append(coupling)
    else:
        t = cp.Variable((P, k), nonneg=True)
        coupling = A @ K - t <= 0
        cons += [coupling, cp.sum(t, axis=1) <= budget]
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C, K))), cons)
    _solve(problem, solver)
    return LPOutcome(_value(K.value, (m, k), "K"), np.maximum(_value(coupling.dual_value, (P, k), "lam"), 0.0),
                     solver, problem.status)


def mixing_lp(C: np.ndarray, gamma: float, coefficient: str, pairs: np.ndarray, solver: str) -> LPOutcome:
    """Solve ``min <C, K>`` over n x n row-stochastic K with its Dobrushin or Doeblin coefficient <= gamma."""
    n = C.shape[0]
    K = cp.Variable((n, n), nonneg=True)
    cons = [cp.sum(K, axis=1) == 1]
    coefficient = check_choice(coefficient, "coefficient", ("dobrushin", "doeblin"))
    if coefficient == "dobrushin":
        D = np.zeros((pairs.shape[0], n))
        D[np.arange(pairs.shape[0]), pairs[:, 0]] = 1.0
        D[np.arange(pairs.shape[0]), pairs[:, 1]] = -1.0
        t = cp.Variable((pairs.shape[0], n), nonneg=True)
        coupling = D @ K - t <= 0
        cons += [coupling, cp.sum(t, axis=1) <= gamma]
        shape = (pairs.shape[0], n)
    else:
        mvar = cp.Variable(n, nonneg=True)
        coupling = np.ones((n, 1)) @ cp.reshape(mvar, (1, n), order="C") - K <= 0
        cons += [coupling, cp.sum(mvar) >= 1.0 - gamma]
        shape = (n, n)
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C, K))), cons)
    _solve(problem, solver)
    return LPOutcome(_value(K.value, (n, n), "K"), np.maximum(_value(coupling.dual_value, shape, "lam"), 0.0),
                     solver, problem.status)
