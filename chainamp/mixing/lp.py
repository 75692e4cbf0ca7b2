"""Linear programs for the mixing coefficients of Definition 1 of Balle et al. 2019.

This is the only module of chainamp that imports cvxpy. Each function states a
linear program whose optimum is a mixing coefficient (or ``1 -`` one), solves it
with a cvxpy solver and returns a *certified bracket* ``lower <= optimum <= upper``:

- ``lower`` is the objective of a primal point that is **repaired** until it is
  exactly feasible, recomputed in numpy and rounded down;
- ``upper`` is the objective of a dual point that is repaired until it is exactly
  feasible, recomputed in numpy and rounded up (weak duality).

So the bracket holds whatever the solver tolerances were. Only an ``OPTIMAL``
cvxpy status is trusted, and a bracket wider than ``lp_atol`` (default
``LP_ATOL``) raises :class:`~chainamp.errors.SolverError` instead of returning a
loose answer. A caller that turns an optimum into a mixing coefficient
``gamma = 1 - optimum`` must use ``1 - lower``; a caller that reads a divergence
off the optimum must use ``upper``: both round toward the larger gamma / delta.

The solver's own (unrepaired) primal and dual values are kept in the result under
the names ending in ``_solver``.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np

from .._numerics import (LP_ATOL, ROW_SUM_ATOL, UNIT_ROUNDOFF, check_choice, check_distribution, check_epsilon,
                         check_int, check_positive, round_down, round_up)
from ..errors import InvalidParameterError, SolverError
from ..operators import as_matrix, check_row_sums

__all__ = [
    "LPSolution",
    "LP_SOLVERS",
    "DEFAULT_LP_SOLVER",
    "doeblin_lp",
    "ultra_mixing_lp",
    "hockey_stick_lp",
    "hockey_stick_lp_pairs",
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

#: Above this, ``e^eps`` (about 1.0e304 at 700) is not formed; ``e^eps q`` goes through logs.
_EXP_SAFE = 700.0


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


def _check_solver(solver: Any) -> str:
    if solver is None:
        return DEFAULT_LP_SOLVER
    name = check_choice(solver.upper() if isinstance(solver, str) else solver, "solver", LP_SOLVERS)
    if name not in _installed():
        raise InvalidParameterError(f"solver {name!r} is not installed (cvxpy has {sorted(_installed())})")
    return name


def _check_solver_atol(solver: Any, lp_atol: Any) -> tuple[str, float]:
    """The checked solver name and bracket tolerance of every LP entry point."""
    return _check_solver(solver), check_positive(lp_atol, "lp_atol")


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
    vals = _values(value, shape[:-1] + (live.size,), name)
    out[..., live] = vals / colmax[live] if dual else vals * colmax[live]
    return out


def _solve(problem: cp.Problem, solver: str) -> None:
    """Solve; anything but an OPTIMAL status (or a solver failure) raises SolverError."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an inaccurate solve is reported through its status
            problem.solve(solver=solver, **_SOLVER_OPTIONS[solver])
    except cp.error.SolverError as exc:
        raise SolverError(f"solver {solver} failed: {exc}") from exc
    if problem.status != cp.OPTIMAL:
        raise SolverError(f"solver {solver} returned status {problem.status!r}; only {cp.OPTIMAL!r} is trusted")


def _values(value: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
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


# ---------------------------------------------------------------- Doeblin

def doeblin_lp(matrix: Any, *, solver: str | None = None, lp_atol: float = LP_ATOL,
               row_sum_atol: float = ROW_SUM_ATOL) -> LPSolution:
    r"""The Doeblin LP: the largest total mass of a measure minorising every row of K.

    By Definition 1(3) of Balle et al. 2019, K is gamma-Doeblin when
    ``K(x) >= (1 - gamma) omega`` for one distribution omega and every x. Writing
    ``nu = (1 - gamma) omega``, the smallest gamma is ``1 - OPT`` with

    .. math::

        \mathrm{OPT} = \max_{\nu} \sum_y \nu_y \quad\text{s.t.}\quad
        0 \le \nu_y \le K(x, y) \ \text{for all } x, y.

    Its dual (multiplier ``w[x, y] >= 0`` on ``nu_y <= K(x, y)``) is

    .. math::

        \min_{w \ge 0} \sum_{x,y} w_{x,y} K(x, y) \quad\text{s.t.}\quad
        \sum_x w_{x,y} \ge 1 \ \text{for all } y,

    and weak duality is the one-line chain
    ``sum_y nu_y <= sum_y nu_y sum_x w[x,y] <= sum_{x,y} w[x,y] K(x,y)``.
    The optimum is ``sum_y min_x K(x, y)``. The solver sees the same LP with
    column y divided by ``max_x K(x, y)`` (variables ``nu_y / max_x K(x, y)``),
    which keeps it well scaled; its values are mapped back before the repair.

    Certificates: the solver's ``nu`` is clipped to ``[0, min_x K(x, y)]``,
    which is exactly feasible, so its sum (rounded down) is ``lower``. The
    solver's ``w`` is clipped at 0 and each column divided by its sum (a column
    summing to 0 gets weight 1 on its smallest entry), which makes every column
    sum 1 in exact arithmetic; its objective, rounded up past the error of the
    sums and divisions, is ``upper``. The caller's Doeblin coefficient is
    ``gamma = 1 - lower`` (rounded toward the larger, safe gamma).

    Parameters
    ----------
    matrix : array_like or MarkovOperator, shape (n, m)
        Row-stochastic matrix.
    solver : {"HIGHS", "CLARABEL"}, optional
        cvxpy solver (default ``DEFAULT_LP_SOLVER``); case-insensitive.
    lp_atol : float, optional
        Largest accepted width of the certified bracket (default ``LP_ATOL``).
    row_sum_atol : float, optional
        Accepted deviation of a row sum from 1 (default ``ROW_SUM_ATOL``).

    Returns
    -------
    LPSolution
        ``primal = {"nu", "nu_solver"}``, ``dual = {"w", "w_solver"}`` (``w`` of shape (n, m)).

    Raises
    ------
    InvalidOperatorError
        ``matrix`` is not a finite, non-negative, row-stochastic 2-D array.
    InvalidParameterError
        Unknown or uninstalled solver, or ``lp_atol``/``row_sum_atol`` not > 0.
    SolverError
        Status other than OPTIMAL, or a certified bracket wider than ``lp_atol``.

    Examples
    --------
    >>> sol = doeblin_lp([[0.9, 0.1], [0.2, 0.8]])
    >>> round(sol.lower, 6), round(sol.upper, 6), round(1 - sol.lower, 6)
    (0.3, 0.3, 0.7)
    """
    K = _dense(matrix, row_sum_atol)
    name, atol = _check_solver_atol(solver, lp_atol)
    n, m = K.shape
    colmin, colmax, live = _columns(K)  # a zero column forces nu_y = 0
    t = cp.Variable(live.size, nonneg=True)  # t_y = nu_y / max_x K(x, y): every column scaled to max 1
    below = t[None, :] <= K[:, live] / colmax[live]
    _solve(cp.Problem(cp.Maximize(colmax[live] @ t), [below]), name)
    nu_raw = _unscaled(t.value, (m,), live, colmax, "nu", dual=False)
    w_raw = _unscaled(below.dual_value, (n, m), live, colmax, "w", dual=True)

    nu_rep = np.clip(nu_raw, 0.0, colmin)  # exactly feasible: no arithmetic involved
    lower = round_down(float(nu_rep.sum()), m, lower=0.0)

    w = np.maximum(w_raw, 0.0)
    sums = w.sum(axis=0)
    empty = np.flatnonzero(sums <= 0.0)
    w[K[:, empty].argmin(axis=0), empty] = 1.0
    sums[empty] = 1.0
    # column y of the certificate is w[:, y] / sums[y]: a convex combination of column y of K
    upper = round_up(float(((w * K).sum(axis=0) / sums).sum()), 2 * n + m + 4)
    w_rep = w / sums
    return _solution(lower, upper, {"nu": nu_rep, "nu_solver": nu_raw}, {"w": w_rep, "w_solver": w_raw},
                     name, atol, "Doeblin LP")


# ---------------------------------------------------------------- ultra-mixing

def ultra_mixing_lp(matrix: Any, *, solver: str | None = None, lp_atol: float = LP_ATOL,
                    row_sum_atol: float = ROW_SUM_ATOL) -> LPSolution:
    r"""The ultra-mixing LP: the largest r with ``K(x, y) >= r K(x', y)`` for all x, x', y.

    By Definition 1(4) of Balle et al. 2019, K is gamma-ultra-mixing when every
    ``K(x) << K(x')`` and ``dK(x)/dK(x') >= 1 - gamma``; on a finite space that
    is ``K(x, y) >= (1 - gamma) K(x', y)`` for all x, x', y (which forces equal
    supports when gamma < 1). The smallest gamma is ``1 - OPT`` with the LP, linear
    in ``(r, floor)`` and with ``2nm`` constraints instead of ``n^2 m``:

    .. math::

        \mathrm{OPT} = \max_{r, f} r \quad\text{s.t.}\quad
        r K(x', y) \le f_y \le K(x, y) \ \text{for all } x, x', y, \quad 0 \le r \le 1.

    Its optimum is ``min_y min_x K(x, y) / max_x K(x, y)`` over the columns that
    are not identically zero; it is 0 when two rows have different supports.
    The solver sees the same LP with column y divided by ``max_x K(x, y)``
    (variables ``f_y / max_x K(x, y)``), which keeps it well scaled.

    Dual (derived here; not in the paper). With multipliers ``alpha[x', y] >= 0``
    on ``r K(x', y) <= f_y``, ``beta[x, y] >= 0`` on ``f_y <= K(x, y)`` and
    ``rho >= 0`` on ``r <= 1``, the dual is

    .. math::

        \min \sum_{x,y} \beta_{x,y} K(x, y) + \rho \quad\text{s.t.}\quad
        \sum_{x,y} \alpha_{x,y} K(x, y) + \rho \ge 1, \quad
        \sum_x \alpha_{x,y} \le \sum_x \beta_{x,y} \ \text{for all } y.

    Weak duality, for any feasible (r, f) (note ``f >= r K >= 0``), with
    ``a_y = sum_x alpha[x, y]``:
    ``r <= r (sum alpha K + rho) <= sum_y a_y f_y + rho
    <= sum_y (sum_x beta[x, y]) f_y + rho <= sum beta K + rho``.
    For a given alpha the best choice puts all of ``beta[., y]`` (mass ``a_y``)
    on the smallest entry of column y and takes ``rho = [1 - sum alpha K]_+``, so
    every ``alpha >= 0`` certifies

    .. math::

        \mathrm{OPT} \le U(\alpha) = \sum_y a_y \min_x K(x, y)
        + \Bigl[1 - \sum_{x,y} \alpha_{x,y} K(x, y)\Bigr]_+ .

    (``alpha = 1 / max_x K(x, y*)`` on the largest entry of the best column y*
    attains ``U = OPT``.)

    Certificates: ``upper = U(alpha)`` for the solver's alpha clipped at 0,
    rounded up (and at most 1, certified by ``alpha = 0, rho = 1``). ``lower``
    is the repaired primal point ``f = min_x K(x, .)`` (the largest feasible
    floor) with ``r = min(solver's r clipped to [0, 1], min_y f_y / max_x K(x, y))``,
    rounded down past the rounding of the division. The caller's ultra-mixing
    coefficient is ``gamma = 1 - lower``.

    Parameters
    ----------
    matrix : array_like or MarkovOperator, shape (n, m)
        Row-stochastic matrix.
    solver : {"HIGHS", "CLARABEL"}, optional
        cvxpy solver (default ``DEFAULT_LP_SOLVER``); case-insensitive.
    lp_atol : float, optional
        Largest accepted width of the certified bracket (default ``LP_ATOL``).
    row_sum_atol : float, optional
        Accepted deviation of a row sum from 1 (default ``ROW_SUM_ATOL``).

    Returns
    -------
    LPSolution
        ``primal = {"r", "floor", "r_solver", "floor_solver"}``,
        ``dual = {"alpha", "beta", "rho", "alpha_solver", "beta_solver", "rho_solver"}``
        (alpha, beta of shape (n, m), in the unscaled LP; r, rho of shape ()).

    Raises
    ------
    InvalidOperatorError
        ``matrix`` is not a finite, non-negative, row-stochastic 2-D array.
    InvalidParameterError
        Unknown or uninstalled solver, or ``lp_atol``/``row_sum_atol`` not > 0.
    SolverError
        Status other than OPTIMAL, or a certified bracket wider than ``lp_atol``.

    Examples
    --------
    >>> sol = ultra_mixing_lp([[0.9, 0.1], [0.2, 0.8]])
    >>> round(sol.lower, 6), round(sol.upper, 6), round(1 - sol.lower, 6)
    (0.125, 0.125, 0.875)
    >>> round(ultra_mixing_lp([[1.0, 0.0], [0.5, 0.5]]).upper, 6)   # supports differ
    0.0
    """
    K = _dense(matrix, row_sum_atol)
    name, atol = _check_solver_atol(solver, lp_atol)
    n, m = K.shape
    colmin, colmax, live = _columns(K)  # zero columns constrain nothing (their floor is 0)
    scaled = K[:, live] / colmax[live]
    r = cp.Variable()
    g = cp.Variable(live.size)
    under = r * scaled <= g[None, :]
    over = g[None, :] <= scaled
    cap = r <= 1
    _solve(cp.Problem(cp.Maximize(r), [under, over, cap, r >= 0]), name)
    r_raw = _values(r.value, (), "r")
    floor_raw = _unscaled(g.value, (m,), live, colmax, "floor", dual=False)
    alpha_raw = _unscaled(under.dual_value, (n, m), live, colmax, "alpha", dual=True)
    beta_raw = _unscaled(over.dual_value, (n, m), live, colmax, "beta", dual=True)
    rho_raw = _values(cap.dual_value, (), "rho")

    # primal repair: floor = column minima; r capped so that r * colmax <= colmin on every live column
    ratio = float(np.min(colmin[live] / colmax[live]))
    r_rep = min(min(max(float(r_raw), 0.0), 1.0), ratio)
    lower = round_down(r_rep, 2, lower=0.0)

    # dual repair: U(alpha) for alpha >= 0, beta on the column minima, rho = [1 - sum alpha K]_+
    alpha = np.maximum(alpha_raw, 0.0)
    mass = alpha.sum(axis=0)
    covered = round_up(float(mass @ colmin), n + m + 2)
    used = round_down(float((alpha * K).sum()), n * m + 2)
    upper = round_up(covered + max(1.0 - used, 0.0), 2, scale=1.0)
    if upper >= 1.0:  # the trivial certificate alpha = beta = 0, rho = 1 is at least as good
        alpha[:] = 0.0
        mass[:] = 0.0
        upper = 1.0
    beta = np.zeros((n, m))
    beta[K.argmin(axis=0), np.arange(m)] = mass
    rho = np.array(max(1.0 - float((alpha * K).sum()), 0.0))
    primal = {"r": np.array(lower), "floor": colmin, "r_solver": r_raw, "floor_solver": floor_raw}
    dual = {"alpha": alpha, "beta": beta, "rho": rho, "alpha_solver": alpha_raw, "beta_solver": beta_raw,
            "rho_solver": rho_raw}
    return _solution(lower, upper, primal, dual, name, atol, "ultra-mixing LP")


# ---------------------------------------------------------------- hockey-stick

def _hockey_coefficients(p: np.ndarray, q: np.ndarray, eps: float) -> tuple[np.ndarray, ...]:
    """Objective coefficients of the hockey-stick LP and rigorous bounds on ``a = p - e^eps q``.

    Returns ``(coef, a_hi, a_lo)``: ``coef`` is what the solver sees, equal to
    ``a`` clipped to ``[-1, 1]`` (finite for every eps, ``e^eps * 0`` read as 0);
    ``a_lo <= a <= a_hi`` entrywise in exact arithmetic, up to one final rounding
    of the subtraction (at most ``u p_y``, absorbed by the callers' outward rounding).
    """
    cq = np.zeros_like(q)  # e^eps q_y, or +inf when it certainly exceeds 1 >= p_y
    rel = np.zeros_like(q)  # bound on the relative error of cq
    pos = q > 0.0
    if math.isinf(eps):
        cq[pos] = math.inf
    elif eps <= _EXP_SAFE:
        cq[pos] = math.exp(eps) * q[pos]
        rel[pos] = 8 * UNIT_ROUNDOFF  # exp (< 1 ulp) and one product, with room to spare
    else:
        logq = np.log(q[pos])
        t = eps + logq
        big = t > 1.0
        cq[pos] = np.where(big, math.inf, np.exp(np.minimum(t, 1.0)))
        # an absolute error of about u (eps + 2|log q|) in t becomes a relative error of e^t
        rel[pos] = np.where(big, 0.0, (16.0 + 2.0 * eps + 4.0 * np.abs(logq)) * UNIT_ROUNDOFF)
    a_hi = p - cq * (1.0 - rel)
    a_lo = p - cq * (1.0 + rel)
    coef = np.clip(p - cq, -1.0, 1.0)
    return coef, a_hi, a_lo


class _HockeyStickLP:
    """One compiled ``max <a, f> s.t. 0 <= f <= 1`` with ``a`` a cvxpy Parameter (DPP), reused per pair."""

    def __init__(self, m: int, solver: str) -> None:
        self.solver = solver
        self.coef = cp.Parameter(m)
        self.f = cp.Variable(m)
        self.top = self.f <= 1
        self.problem = cp.Problem(cp.Maximize(self.coef @ self.f), [self.f >= 0, self.top])

    def solve(self, p: np.ndarray, q: np.ndarray, eps: float, lp_atol: float) -> LPSolution:
        m = p.size
        coef, a_hi, a_lo = _hockey_coefficients(p, q, eps)
        self.coef.value = coef
        _solve(self.problem, self.solver)
        f_raw = _values(self.f.value, (m,), "f")
        u_raw = _values(self.top.dual_value, (m,), "u")
        scale = float(p[a_hi > 0.0].sum())  # |a_y| <= p_y wherever a_y can be positive
        # primal: clip to [0, 1]; outcomes whose coefficient may be <= 0 get f = 0 (never lowers <a, f>)
        f_rep = np.where(a_lo > 0.0, np.clip(f_raw, 0.0, 1.0), 0.0)
        lower = _down(float(f_rep @ np.where(a_lo > 0.0, a_lo, 0.0)), m + 4, scale)
        # dual: u >= max(a, 0) makes sum(u) an upper bound (<a, f> <= <u, f> <= sum u for f in [0, 1])
        u_rep = np.maximum(np.maximum(u_raw, 0.0), a_hi)
        upper = round_up(float(u_rep.sum()), m + 4, scale=scale)
        return _solution(lower, upper, {"f": f_rep, "f_solver": f_raw}, {"u": u_rep, "u_solver": u_raw},
                         self.solver, lp_atol, "hockey-stick LP")


def hockey_stick_lp(p: Any, q: Any, epsilon: float, *, solver: str | None = None,
                    lp_atol: float = LP_ATOL) -> LPSolution:
    r"""The hockey-stick LP over test functions: ``D_{e^eps}(p || q)`` with certificates.

    .. math::

        \mathrm{OPT} = \max_{f} \sum_y (p_y - e^\varepsilon q_y) f_y
        \quad\text{s.t.}\quad 0 \le f_y \le 1,

    the LP relaxation of the maximum of ``p(S) - e^eps q(S)`` over test sets S
    (an optimal f is the indicator of ``{p > e^eps q}``), whose optimum is
    ``D_{e^eps}(p || q) = sum_y [p_y - e^eps q_y]_+``: the quantity of
    Definition 1(2) of Balle et al. 2019. Its dual (multiplier ``u_y >= 0`` on
    ``f_y <= 1``) is

    .. math::

        \min_u \sum_y u_y \quad\text{s.t.}\quad u_y \ge p_y - e^\varepsilon q_y, \ u_y \ge 0,

    with weak duality ``<a, f> <= <u, f> <= sum u`` for ``f`` in ``[0, 1]``.

    Large and infinite eps: ``e^eps`` is never formed beyond eps = 700 (``e^eps q_y``
    goes through ``exp(eps + log q_y)``) and every coefficient the solver sees is
    clipped to ``[-1, 1]``: a coefficient ``<= 0`` contributes 0 at the optimum
    whatever its size, so the optimum is unchanged and no ``inf * 0`` appears.
    ``epsilon = math.inf`` gives ``p(supp p minus supp q)`` (footnote 3 of Balle
    et al. 2019): the coefficient is ``p_y`` where ``q_y = 0`` and ``-1`` elsewhere
    on ``supp q``.

    Certificates: the solver's f is clipped to ``[0, 1]`` and set to 0 wherever
    the coefficient might be ``<= 0``; its objective, computed with a rigorous
    lower bound of each coefficient and rounded down, is ``lower``. The solver's
    u is raised to ``max(u, 0, a_y)`` with a rigorous upper bound of each
    ``a_y``; ``upper = sum u`` rounded up. A divergence used in a privacy bound
    must be read as ``upper``.

    Parameters
    ----------
    p, q : array_like, shape (m,)
        Probability vectors.
    epsilon : float
        ``eps >= 0``; ``math.inf`` allowed.
    solver : {"HIGHS", "CLARABEL"}, optional
        cvxpy solver (default ``DEFAULT_LP_SOLVER``); case-insensitive.
    lp_atol : float, optional
        Largest accepted width of the certified bracket (default ``LP_ATOL``).

    Returns
    -------
    LPSolution
        ``primal = {"f", "f_solver"}``, ``dual = {"u", "u_solver"}``.

    Raises
    ------
    InvalidDistributionError
        ``p`` or ``q`` is not a probability vector, or their sizes differ.
    InvalidParameterError
        Negative epsilon, unknown or uninstalled solver, or ``lp_atol`` not > 0.
    SolverError
        Status other than OPTIMAL, or a certified bracket wider than ``lp_atol``.

    Examples
    --------
    >>> sol = hockey_stick_lp([0.75, 0.25], [0.25, 0.75], 0.0)
    >>> round(sol.lower, 6), round(sol.upper, 6)
    (0.5, 0.5)
    >>> round(hockey_stick_lp([0.75, 0.25], [0.25, 0.75], math.log(2)).upper, 6)
    0.25
    >>> round(hockey_stick_lp([0.5, 0.5], [1.0, 0.0], math.inf).upper, 6)
    0.5
    """
    p = check_distribution(p, "p")
    q = check_distribution(q, "q", size=p.size)
    eps = check_epsilon(epsilon)
    name, atol = _check_solver_atol(solver, lp_atol)
    return _HockeyStickLP(p.size, name).solve(p, q, eps, atol)


def _check_pairs(pairs: Any, n: int) -> list[tuple[int, int]]:
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
        raise TypeError(f"pairs must be an iterable of (row, row) index pairs, got {type(pairs).__name__}")
    out = []
    for pair in pairs:
        try:
            i, j = pair
        except (TypeError, ValueError):
            raise InvalidParameterError(f"each entry of pairs must be a pair of row indices (got {pair!r})") from None
        i, j = check_int(i, "pair index", minimum=0), check_int(j, "pair index", minimum=0)
        if i >= n or j >= n:
            raise InvalidParameterError(f"pair {pair!r} has a row index >= the number of rows {n}")
        out.append((i, j))
    return out


def hockey_stick_lp_pairs(matrix: Any, pairs: Iterable[tuple[int, int]], epsilon: float, *,
                          solver: str | None = None, lp_atol: float = LP_ATOL,
                          row_sum_atol: float = ROW_SUM_ATOL) -> dict[tuple[int, int], LPSolution]:
    r"""The hockey-stick LP ``D_{e^eps}(K_x || K_x')`` for many row pairs of one matrix.

    Same LP, dual and certificates as :func:`hockey_stick_lp`, with ``p = K_x``
    and ``q = K_x'``; the problem is compiled once with the coefficients as a
    cvxpy Parameter (DPP) and re-solved per pair. The (gamma, eps)-Dobrushin
    coefficient of Definition 1(2) of Balle et al. 2019 is the maximum of
    ``upper`` over all ordered pairs ``x != x'``.

    Parameters
    ----------
    matrix : array_like or MarkovOperator, shape (n, m)
        Row-stochastic matrix.
    pairs : iterable of (int, int)
        Ordered row index pairs ``(x, x')``; duplicates are solved once.
    epsilon : float
        ``eps >= 0``; ``math.inf`` allowed.
    solver : {"HIGHS", "CLARABEL"}, optional
        cvxpy solver (default ``DEFAULT_LP_SOLVER``); case-insensitive.
    lp_atol : float, optional
        Largest accepted width of each certified bracket (default ``LP_ATOL``).
    row_sum_atol : float, optional
        Accepted deviation of a row sum from 1 (default ``ROW_SUM_ATOL``).

    Returns
    -------
    dict of (int, int) to LPSolution
        One certified solution per distinct pair, in first-seen order.

    Raises
    ------
    TypeError
        ``pairs`` is not an iterable, or an index is not an integer.
    InvalidOperatorError
        ``matrix`` is not a finite, non-negative, row-stochastic 2-D array.
    InvalidParameterError
        A malformed pair or out-of-range index, negative epsilon, unknown or
        uninstalled solver, or ``lp_atol``/``row_sum_atol`` not > 0.
    SolverError
        Status other than OPTIMAL, or a certified bracket wider than ``lp_atol``.

    Examples
    --------
    >>> sols = hockey_stick_lp_pairs([[0.9, 0.1], [0.2, 0.8]], [(0, 1), (1, 0)], 0.0)
    >>> {k: round(v.upper, 6) for k, v in sols.items()}
    {(0, 1): 0.7, (1, 0): 0.7}
    """
    K = _dense(matrix, row_sum_atol)
    todo = _check_pairs(pairs, K.shape[0])
    eps = check_epsilon(epsilon)
    name, atol = _check_solver_atol(solver, lp_atol)
    out: dict[tuple[int, int], LPSolution] = {}
    if not todo:
        return out
    lp = _HockeyStickLP(K.shape[1], name)
    for i, j in todo:
        if (i, j) not in out:
            out[(i, j)] = lp.solve(K[i], K[j], eps, atol)
    return out
