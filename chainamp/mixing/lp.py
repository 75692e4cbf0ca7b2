"""Linear programs for the mixing coefficients of Definition 1 of Balle et al. 2019: the namespace ``chainamp.lp``.

This module owns the Doeblin LP (Definition 1(3)) and the ultra-mixing LP
(Definition 1(4)), and its ``__all__`` is the public namespace of all the LP modules
(re-exported as ``chainamp.lp``): the hockey-stick LPs (Definition 1(2)) live in
:mod:`.lp_hockey`, the solver plumbing (:class:`LPSolution`, solver choice and checks,
solving, scaling and rounding helpers) in :mod:`.lp_solver`. Only these LP modules
import cvxpy. Each function states a
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

from typing import Any

import cvxpy as cp
import numpy as np

from .lp_hockey import hockey_stick_lp, hockey_stick_lp_pairs
from .lp_solver import (DEFAULT_LP_SOLVER, LP_SOLVERS, LPSolution, _check_solver_atol, _columns, _dense, _solution,
                        _unscaled, check_lp_verbose, lp_values, solve_lp)
from .._numerics import LP_ATOL, ROW_SUM_ATOL, round_down, round_up

__all__ = [
    "LPSolution",
    "LP_SOLVERS",
    "DEFAULT_LP_SOLVER",
    "doeblin_lp",
    "ultra_mixing_lp",
    "hockey_stick_lp",
    "hockey_stick_lp_pairs",
]


# ---------------------------------------------------------------- Doeblin

def doeblin_lp(matrix: Any, *, solver: str | None = None, lp_atol: float = LP_ATOL,
               row_sum_atol: float = ROW_SUM_ATOL, verbose: bool = False) -> LPSolution:
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
    verbose : bool, optional
        Show the solver's log (default False: nothing is printed, the HiGHS banner included).

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
    loud = check_lp_verbose(verbose)
    n, m = K.shape
    colmin, colmax, live = _columns(K)  # a zero column forces nu_y = 0
    t = cp.Variable(live.size, nonneg=True)  # t_y = nu_y / max_x K(x, y): every column scaled to max 1
    below = t[None, :] <= K[:, live] / colmax[live]
    solve_lp(cp.Problem(cp.Maximize(colmax[live] @ t), [below]), name, loud)
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
                    row_sum_atol: float = ROW_SUM_ATOL, verbose: bool = False) -> LPSolution:
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
    coefficient is ``gamma = 1 - lower``. When two rows have different supports the
    optimum is 0 exactly (``r K(x', y) <= f_y <= K(x, y) = 0``) and no solver is called:
    the bracket is ``[0, 0]`` (a multiplier ``1 / K(x', y)`` would overflow for a
    subnormal ``K(x', y)``).

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
    verbose : bool, optional
        Show the solver's log (default False: nothing is printed, the HiGHS banner included).

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
    loud = check_lp_verbose(verbose)
    n, m = K.shape
    colmin, colmax, live = _columns(K)  # zero columns constrain nothing (their floor is 0)
    split = live[colmin[live] == 0.0]
    if split.size:  # supports differ: OPT = 0 exactly, no solver needed (and none copes with 1 / 5e-324)
        return _split_supports(K, colmin, colmax, split, name, atol)
    scaled = K[:, live] / colmax[live]
    r = cp.Variable()
    g = cp.Variable(live.size)
    under = r * scaled <= g[None, :]
    over = g[None, :] <= scaled
    cap = r <= 1
    solve_lp(cp.Problem(cp.Maximize(r), [under, over, cap, r >= 0]), name, loud)
    r_raw = lp_values(r.value, (), "r")
    floor_raw = _unscaled(g.value, (m,), live, colmax, "floor", dual=False)
    with np.errstate(over="ignore"):  # a multiplier over a subnormal column maximum may overflow: dropped below
        alpha_raw = _unscaled(under.dual_value, (n, m), live, colmax, "alpha", dual=True)
        beta_raw = _unscaled(over.dual_value, (n, m), live, colmax, "beta", dual=True)
    rho_raw = lp_values(cap.dual_value, (), "rho")

    # primal repair: floor = column minima; r capped so that r * colmax <= colmin on every live column
    ratio = float(np.min(colmin[live] / colmax[live]))
    r_rep = min(min(max(float(r_raw), 0.0), 1.0), ratio)
    lower = round_down(r_rep, 2, lower=0.0)

    # dual repair: U(alpha) for alpha >= 0, beta on the column minima, rho = [1 - sum alpha K]_+
    alpha = np.maximum(np.where(np.isfinite(alpha_raw), alpha_raw, 0.0), 0.0)  # any alpha >= 0 certifies
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


def _split_supports(K: np.ndarray, colmin: np.ndarray, colmax: np.ndarray, split: np.ndarray, name: str,
                    atol: float) -> LPSolution:
    """The ultra-mixing LP when two rows have different supports: its optimum is exactly 0.

    A column y with ``K(x, y) = 0 < K(x', y)`` forces ``r K(x', y) <= f_y <= K(x, y) = 0``, so
    every feasible r is 0: ``lower = upper = 0`` by this argument alone, in exact arithmetic. The
    dual point recorded is ``alpha = 1 / K(x', y)`` on the largest such entry (``U(alpha) = 0``;
    capped at the largest double when ``K(x', y)`` is subnormal, where the argument above, not
    the rounded alpha, certifies the upper end).
    """
    n, m = K.shape
    y = int(split[np.argmax(colmax[split])])
    x = int(np.argmax(K[:, y]))
    alpha = np.zeros((n, m))
    with np.errstate(over="ignore"):
        alpha[x, y] = min(1.0 / K[x, y], np.finfo(float).max)
    beta = np.zeros((n, m))
    beta[int(np.argmin(K[:, y])), y] = alpha[x, y]
    zero = np.array(0.0)
    primal = {"r": zero.copy(), "floor": colmin.copy(), "r_solver": zero.copy(), "floor_solver": colmin.copy()}
    dual = {"alpha": alpha, "beta": beta, "rho": zero.copy(), "alpha_solver": alpha.copy(),
            "beta_solver": beta.copy(), "rho_solver": zero.copy()}
    return _solution(0.0, 0.0, primal, dual, name, atol, "ultra-mixing LP")
