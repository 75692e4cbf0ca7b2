"""Solver plumbing of the LPs of :mod:`.lp`: the certified-bracket result, solver choice, solving, repair helpers.

Owns :class:`LPSolution` (a certified bracket ``lower <= optimum <= upper``), the
accepted solvers (``LP_SOLVERS``, ``DEFAULT_LP_SOLVER``) and their checks, the call to
cvxpy that trusts only an ``OPTIMAL`` status (:func:`solve_lp`), the conversion of solver
values (:func:`lp_values`), the column scaling shown to the solver and undone afterwards
(:func:`_columns`, :func:`_unscaled`), the outward rounding of repaired objectives
(:func:`_down`) and the final bracket check (:func:`_solution`). The formulations of
Definition 1 of Balle et al. 2019 are in :mod:`.lp` and :mod:`.lp_hockey`.

The four helpers other folders' LPs need (:func:`check_lp_solver`, :func:`check_lp_verbose`,
:func:`solve_lp`, :func:`lp_values`; :mod:`chainamp.design` uses them) are public and reachable
as ``chainamp.mixing.<name>``, which imports this module (and cvxpy) on first access only.

Solvers are quiet unless asked: every LP entry point takes ``verbose=False``, passed on to
cvxpy (which then turns the solver's log off), and HiGHS's licence banner ("Running HiGHS
... THIRD_PARTY_NOTICES"), which HiGHS writes to the C-level stdout when the first solver
object of the process is created, before any option can be set, is swallowed once
(:func:`_swallow_highs_banner`: file descriptor 1 points at the null device while a first
``highspy.Highs()`` is created). Nothing else of the process's output is redirected, so a
thread printing meanwhile loses nothing but that one construction's window.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_choice, check_positive
from .._numerics import swallow_highs_banner as _swallow_highs_banner
from ..errors import InvalidParameterError, SolverError
from ..operators import as_matrix, check_row_sums

__all__ = [
    "LPSolution",
    "LP_SOLVERS",
    "DEFAULT_LP_SOLVER",
    "check_lp_solver",
    "check_lp_verbose",
    "solve_lp",
    "lp_values",
]

#: Solver options: tighter than the defaults so that brackets close to well within ``LP_ATOL``.
_SOLVER_OPTIONS: dict[str, dict[str, float]] = {
    "HIGHS": {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
}
#: cvxpy solver names accepted by ``solver=`` (LP solvers that return dual values).
LP_SOLVERS: tuple[str, ...] = tuple(_SOLVER_OPTIONS)
#: Used when ``solver=None``: a simplex/IPM solver whose LP solutions are vertices.
DEFAULT_LP_SOLVER = "HIGHS"


@dataclass(frozen=True, eq=False)
class LPSolution:
    """A solved linear program with a certified bracket of its optimum.

    Attributes
    ----------
    lower : float
        Certified lower bound of the optimum: objective of a repaired, exactly
        feasible primal point, recomputed in numpy and rounded down.
    upper : float
        Certified upper bound of the optimum: objective of a repaired, exactly
        feasible dual point, recomputed in numpy and rounded up (weak duality).
    primal : dict of str to ndarray
        Named primal variables: the repaired point and, under ``<name>_solver``,
        the solver's values.
    dual : dict of str to ndarray
        Named dual variables: the repaired certificate and the solver's values.
    status : str
        The cvxpy status; always ``cvxpy.OPTIMAL`` (anything else raises).
    solver : str
        The cvxpy solver name used.
    """

    lower: float
    upper: float
    primal: dict[str, np.ndarray]
    dual: dict[str, np.ndarray]
    status: str
    solver: str

    @property
    def gap(self) -> float:
        """Width ``upper - lower`` of the certified bracket."""
        return self.upper - self.lower


# ---------------------------------------------------------------- shared helpers

@functools.lru_cache(maxsize=1)
def _installed() -> frozenset[str]:
    return frozenset(cp.installed_solvers())


def check_lp_solver(solver: Any) -> str:
    """The cvxpy name of an LP solver: ``None`` is ``DEFAULT_LP_SOLVER``, a name (any case) one of ``LP_SOLVERS``
    that cvxpy has installed.

    Examples
    --------
    >>> check_lp_solver(None), check_lp_solver("highs")
    ('HIGHS', 'HIGHS')
    """
    if solver is None:
        return DEFAULT_LP_SOLVER
    name = check_choice(solver.upper() if isinstance(solver, str) else solver, "solver", LP_SOLVERS)
    if name not in _installed():
        raise InvalidParameterError(f"solver {name!r} is not installed (cvxpy has {sorted(_installed())})")
    return name


def _check_solver_atol(solver: Any, lp_atol: Any) -> tuple[str, float]:
    """The checked solver name and bracket tolerance of every LP entry point."""
    return check_lp_solver(solver), check_positive(lp_atol, "lp_atol")


def _dense(matrix: Any, row_sum_atol: float) -> np.ndarray:
    """A validated dense float copy of a row-stochastic matrix (or of a MarkovOperator)."""
    mat = as_matrix(matrix)
    if not isinstance(mat, np.ndarray):
        mat = mat.toarray()
    check_row_sums(mat, check_positive(row_sum_atol, "row_sum_atol"))
    return mat


def _columns(K: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column minima, column maxima and the live columns (not identically zero) of K.

    The Doeblin and ultra-mixing LPs show the solver their variables on live columns
    divided by ``max_x K(x, y)`` (every column scaled to max 1); :func:`_unscaled`
    maps the solver's values back.
    """
    colmin, colmax = K.min(axis=0), K.max(axis=0)
    return colmin, colmax, np.flatnonzero(colmax > 0.0)


def _unscaled(value: Any, shape: tuple[int, ...], live: np.ndarray, colmax: np.ndarray, name: str, *,
              dual: bool) -> np.ndarray:
    """A solver value on the live columns, in the unscaled LP, zero on the other columns of ``shape``:
    a primal variable ``v_y / max_x K(x, y)`` is multiplied back, a dual multiplier divided."""
    out = np.zeros(shape)
    vals = lp_values(value, shape[:-1] + (live.size,), name)
    out[..., live] = vals / colmax[live] if dual else vals * colmax[live]
    return out


def check_lp_verbose(verbose: Any) -> bool:
    """``verbose`` of every LP entry point: a bool (numpy's too); TypeError otherwise.

    Examples
    --------
    >>> check_lp_verbose(False)
    False
    """
    if not isinstance(verbose, (bool, np.bool_)):
        raise TypeError(f"verbose must be True or False, got {type(verbose).__name__} {verbose!r}")
    return bool(verbose)


def solve_lp(problem: cp.Problem, solver: str, verbose: bool = False) -> None:
    """Solve; anything but an OPTIMAL status (or a solver failure) raises SolverError.

    ``verbose=False`` (the default of every entry point) keeps the solver silent, its banner
    included; ``verbose=True`` shows cvxpy's and the solver's log."""
    if not verbose and solver == "HIGHS":
        _swallow_highs_banner()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an inaccurate solve is reported through its status
            problem.solve(solver=solver, verbose=verbose, **_SOLVER_OPTIONS[solver])
    except cp.error.SolverError as exc:
        raise SolverError(f"solver {solver} failed: {exc}") from exc
    if problem.status != cp.OPTIMAL:
        raise SolverError(f"solver {solver} returned status {problem.status!r}; only {cp.OPTIMAL!r} is trusted")


def lp_values(value: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    """A solver value as a finite float array of the given shape (SolverError otherwise)."""
    if value is None:
        raise SolverError(f"the solver returned no value for {name}")
    out = np.array(value, dtype=float).reshape(shape)
    if not np.all(np.isfinite(out)):
        raise SolverError(f"the solver returned a non-finite value for {name}")
    return out


def _solution(lower: float, upper: float, primal: dict, dual: dict, solver: str,
              lp_atol: float, what: str) -> LPSolution:
    """Check the certified bracket and freeze the arrays."""
    if not lower <= upper:
        raise SolverError(f"{what}: certified lower bound {lower!r} exceeds upper bound {upper!r}")
    if upper - lower > lp_atol:
        raise SolverError(f"{what}: certified bracket [{lower!r}, {upper!r}] is wider than lp_atol={lp_atol:g}")
    for arr in (*primal.values(), *dual.values()):
        arr.setflags(write=False)
    return LPSolution(lower, upper, primal, dual, cp.OPTIMAL, solver)


def _down(value: float, n_ops: int, scale: float) -> float:
    """Round a non-negative LP value down past an error of ``(n_ops + 2) u max(value, scale)``;
    never below 0 (every LP here has the feasible point 0)."""
    bumped = value - max(abs(value), scale) * (n_ops + 2) * UNIT_ROUNDOFF
    return max(math.nextafter(bumped, -math.inf), 0.0)
