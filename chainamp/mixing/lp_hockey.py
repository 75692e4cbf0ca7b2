"""The hockey-stick LPs of Definition 1(2) of Balle et al. 2019: ``D_{e^eps}(p || q)`` with certificates.

:func:`hockey_stick_lp` for one pair of distributions and :func:`hockey_stick_lp_pairs`
for many row pairs of one matrix (one compiled DPP problem re-solved per pair). The
certified-bracket scheme and the solver plumbing are those of :mod:`.lp` and
:mod:`.lp_solver`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import cvxpy as cp
import numpy as np

from .lp_solver import (LPSolution, _check_solver_atol, _dense, _down, _solution, check_lp_verbose, lp_values,
                        solve_lp)
from .._numerics import LP_ATOL, ROW_SUM_ATOL, UNIT_ROUNDOFF, check_distribution, check_epsilon, check_int, round_up
from ..errors import InvalidParameterError

__all__ = [
    "hockey_stick_lp",
    "hockey_stick_lp_pairs",
]

#: Above this, ``e^eps`` (about 1.0e304 at 700) is not formed; ``e^eps q`` goes through logs.
_EXP_SAFE = 700.0

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

    def __init__(self, m: int, solver: str, verbose: bool = False) -> None:
        self.solver = solver
        self.verbose = verbose
        self.coef = cp.Parameter(m)
        self.f = cp.Variable(m)
        self.top = self.f <= 1
        self.problem = cp.Problem(cp.Maximize(self.coef @ self.f), [self.f >= 0, self.top])

    def solve(self, p: np.ndarray, q: np.ndarray, eps: float, lp_atol: float) -> LPSolution:
        m = p.size
        coef, a_hi, a_lo = _hockey_coefficients(p, q, eps)
        self.coef.value = coef
        solve_lp(self.problem, self.solver, self.verbose)
        f_raw = lp_values(self.f.value, (m,), "f")
        u_raw = lp_values(self.top.dual_value, (m,), "u")
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
                    lp_atol: float = LP_ATOL, verbose: bool = False) -> LPSolution:
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
    verbose : bool, optional
        Show the solver's log (default False: nothing is printed, the HiGHS banner included).

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
    return _HockeyStickLP(p.size, name, check_lp_verbose(verbose)).solve(p, q, eps, atol)


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
                          row_sum_atol: float = ROW_SUM_ATOL, verbose: bool = False
                          ) -> dict[tuple[int, int], LPSolution]:
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
    verbose : bool, optional
        Show the solver's log (default False: nothing is printed, the HiGHS banner included).

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
    loud = check_lp_verbose(verbose)
    out: dict[tuple[int, int], LPSolution] = {}
    if not todo:
        return out
    lp = _HockeyStickLP(K.shape[1], name, loud)
    for i, j in todo:
        if (i, j) not in out:
            out[(i, j)] = lp.solve(K[i], K[j], eps, atol)
    return out
