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
renormalise K and have chainamp certify it. Solving is the mixing LPs' own plumbing
(:func:`chainamp.mixing.solve_lp`: the solver options, quiet unless ``verbose``, and only an ``OPTIMAL``
cvxpy status trusted, anything else raising :class:`~chainamp.errors.SolverError` naming the status).
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from .._numerics import check_choice
from ..mixing import lp_values, solve_lp

__all__: list[str] = []


@dataclass(frozen=True)
class LPOutcome:
    """The solver's primal K and the clipped multipliers of the coupling inequalities."""

    K: np.ndarray
    lam: np.ndarray
    solver: str
    status: str


def post_processing_lp(C: np.ndarray, A: np.ndarray, budget: np.ndarray, relaxed: bool, solver: str,
                       verbose: bool = False) -> LPOutcome:
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
    solve_lp(problem, solver, verbose)
    return LPOutcome(lp_values(K.value, (m, k), "K"), np.maximum(lp_values(coupling.dual_value, (P, k), "lam"), 0.0),
                     solver, problem.status)


def mixing_lp(C: np.ndarray, gamma: float, coefficient: str, pairs: np.ndarray, solver: str,
              verbose: bool = False) -> LPOutcome:
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
    solve_lp(problem, solver, verbose)
    return LPOutcome(lp_values(K.value, (n, n), "K"), np.maximum(lp_values(coupling.dual_value, shape, "lam"), 0.0),
                     solver, problem.status)
