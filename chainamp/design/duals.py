r"""Certified lower bounds on the design LPs, computed in numpy from any multipliers ``lam >= 0``.

Every design LP has the form ``min <C, K>`` over row-stochastic K (each row ``K_j`` in the simplex
``Delta``) and auxiliary variables ``s`` in a set ``S``, subject to coupling inequalities
``g(K, s) <= 0`` that are linear in (K, s). For any ``lam >= 0`` and any feasible (K, s),
``lam . g(K, s) <= 0``, so (weak Lagrangian duality, Boyd and Vandenberghe 2004, *Convex Optimization*,
Section 5.1.3)

.. math::

    \langle C, K\rangle \;\ge\; \langle C, K\rangle + \lambda\cdot g(K, s)
    \;\ge\; \min_{K_j \in \Delta,\ s \in S}\ \big(\langle C, K\rangle + \lambda\cdot g(K, s)\big).

Keeping the simplices and S as hard constraints makes the right side a closed form: a linear function
``<G, K>`` is minimised over a product of simplices at ``sum_j min_y G[j, y]``, and the part in s is
minimised over S by inspection (below). So the bound holds for *any* clipped solver multipliers,
however inaccurate; with the solver's optimal duals it equals the LP optimum (strong duality), up to
the solver's tolerance. The float evaluation is rounded down past a generous error bound (every term is
a sum of at most ``N`` products, error at most ``(N + 2) u`` times the sum of absolute values, with
``u = 2^-53``), doubled so that the bound also sits below the objective *as computed* in floats, and
clipped at 0 (losses are non-negative, so 0 is always a lower bound).
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import UNIT_ROUNDOFF

__all__: list[str] = []


def _rounded_down(G: np.ndarray, G_abs: np.ndarray, const: float, const_abs: float, n_ops: int) -> float:
    """``sum_j min_y G[j, y] + const`` rounded down past ``(n_ops + 2) u`` times its absolute size, >= 0."""
    value = float(np.sum(G.min(axis=1))) + const
    size = float(np.sum(G_abs.max(axis=1))) + const_abs + abs(value)
    bumped = value - 2.0 * (n_ops + 2) * UNIT_ROUNDOFF * size
    if not math.isfinite(bumped):  # an overflow (inf - inf is NaN, and max(NaN, 0.0) is NaN): 0 is always a bound
        return 0.0
    return max(math.nextafter(bumped, -math.inf), 0.0)


def post_processing_bound(C: np.ndarray, A: np.ndarray, A_abs: np.ndarray, lam: np.ndarray,
                          budget: np.ndarray, n_inputs: int) -> float:
    r"""Lower bound on ``min <C, K>`` s.t. ``A K <= 0`` (``budget = 0``) or ``A K <= t, t >= 0,
    sum_y t[p, y] <= budget[p]``, from multipliers ``lam[p, y] >= 0`` of ``A K - t <= 0``.

    With ``S = {t >= 0, sum_y t[p, y] <= budget[p]}`` kept hard, ``min_{t in S} -sum_{p,y} lam[p,y] t[p,y]
    = -sum_p budget[p] max_y lam[p, y]`` (all of row p's budget on its largest multiplier), so

    .. math::

        \mathrm{OPT} \ge \sum_j \min_y \big(C + A^\top \lambda\big)[j, y] - \sum_p b_p \max_y \lambda_{p,y}.

    For the privacy constraint of pair p, ``A[p] = (M[x_p] - e^eps M[x'_p]) / s_p`` and ``b_p = delta / s_p``
    (any positive row scaling ``s_p`` describes the same feasible set). ``A_abs`` bounds ``|A|``
    entrywise (``(M[x] + e^eps M[x']) / s_p``): it sizes the rounding error.
    """
    G = C + A.T @ lam
    G_abs = np.abs(C) + A_abs.T @ lam
    tail = float(np.sum(np.asarray(budget) * lam.max(axis=1))) if lam.size else 0.0
    n_ops = n_inputs + 2 * A.shape[0] + C.shape[0] + C.shape[1] + 32
    return _rounded_down(G, G_abs, -tail, tail, n_ops)


def compact_bound(C: np.ndarray, M: np.ndarray, alpha: np.ndarray, beta: np.ndarray, gamma: np.ndarray,
                  e_up: float) -> float:
    r"""Lower bound on ``min <C, K>`` over row-stochastic K with ``max_x (MK)(x, y) <= e^eps min_x (MK)(x, y)`` for
    every y (pure epsilon over all pairs), from multipliers ``alpha, beta >= 0`` (n x k) of ``(MK)(x, y) <= u_y``
    and ``l_y <= (MK)(x, y)`` and ``gamma >= 0`` (k) of ``u_y <= e^eps l_y``; ``e_up >= e^eps``.

    For a feasible K put ``u_y = max_x (MK)(x, y)`` and ``l_y = min_x (MK)(x, y)``, both in [0, 1] (MK is
    stochastic): every coupling term is ``<= 0``, ``gamma_y (u_y - e_up l_y)`` too since ``e_up >= e^eps`` and
    ``l_y >= 0``. The Lagrangian is ``<C + M^T (alpha - beta), K> + sum_y u_y (gamma_y - sum_x alpha[x, y]) +
    sum_y l_y (sum_x beta[x, y] - e_up gamma_y)``; its minimum over K's rows in the simplex and ``u, l in [0, 1]``:

    .. math::

        \mathrm{OPT} \ge \sum_z \min_y \big(C + M^\top(\alpha - \beta)\big)[z, y]
        + \sum_y \min\Big(0, \gamma_y - \sum_x \alpha_{x,y}\Big)
        + \sum_y \min\Big(0, \sum_x \beta_{x,y} - e_{\uparrow} \gamma_y\Big).
    """
    G = C + M.T @ (alpha - beta)
    G_abs = np.abs(C) + M.T @ (alpha + beta)
    sa, sb = alpha.sum(axis=0), beta.sum(axis=0)
    eg = e_up * gamma
    const = float(np.sum(np.minimum(0.0, gamma - sa)) + np.sum(np.minimum(0.0, sb - eg)))
    const_abs = float(np.sum(gamma + sa) + np.sum(sb + eg))
    n_ops = 2 * M.shape[0] + C.shape[0] + 2 * C.shape[1] + 32
    return _rounded_down(G, G_abs, const, const_abs, n_ops)


def dobrushin_bound(C: np.ndarray, pairs: np.ndarray, lam: np.ndarray, gamma: float) -> float:
    r"""Lower bound on ``min <C, K>`` s.t. ``K_i - K_j <= t_p``, ``t_p >= 0``, ``sum_y t_p[y] <= gamma`` for
    each unordered pair ``p = (i, j)`` (Dobrushin coefficient ``<= gamma``), from ``lam[p, y] >= 0``.

    ``sum_y [K_i - K_j]_+`` is the total variation distance of rows with equal sums, so one direction per
    pair suffices. The Lagrangian is ``<C + B, K> - sum lam t`` with ``B[x] = sum_{p: i_p = x} lam[p] -
    sum_{p: j_p = x} lam[p]``; minimising t over ``S`` as above,

    .. math::

        \mathrm{OPT} \ge \sum_x \min_y (C + B)[x, y] - \gamma \sum_p \max_y \lambda_{p,y}.
    """
    n = C.shape[0]
    B = np.zeros_like(C)
    B_abs = np.zeros_like(C)
    np.add.at(B, pairs[:, 0], lam)
    np.add.at(B, pairs[:, 1], -lam)
    np.add.at(B_abs, pairs[:, 0], lam)
    np.add.at(B_abs, pairs[:, 1], lam)
    tail = gamma * float(np.sum(lam.max(axis=1)))
    return _rounded_down(C + B, np.abs(C) + B_abs, -tail, tail, 2 * pairs.shape[0] + 2 * n + 32)


def doeblin_bound(C: np.ndarray, lam: np.ndarray, gamma: float) -> float:
    r"""Lower bound on ``min <C, K>`` s.t. ``m_y <= K(x, y)``, ``m >= 0``, ``sum_y m_y >= 1 - gamma``
    (Doeblin coefficient ``1 - sum_y min_x K(x, y) <= gamma``), from ``lam[x, y] >= 0`` of ``m_y - K(x, y) <= 0``.

    The Lagrangian is ``<C - lam, K> + sum_y m_y s_y`` with ``s_y = sum_x lam[x, y] >= 0``; over
    ``S = {m >= 0, sum_y m_y >= 1 - gamma}`` its minimum in m puts all the mass ``1 - gamma`` on the
    smallest ``s_y``:

    .. math::

        \mathrm{OPT} \ge \sum_x \min_y (C - \lambda)[x, y] + (1 - \gamma) \min_y \sum_x \lambda_{x,y}.
    """
    s = lam.sum(axis=0)
    head = (1.0 - gamma) * float(s.min())
    return _rounded_down(C - lam, np.abs(C) + lam, head, (1.0 - gamma) * float(s.max()), 3 * C.shape[0] + 32)


def doeblin_closed_bound(C: np.ndarray, gamma: float) -> float:
    r"""The least loss of any K with Doeblin coefficient ``<= gamma``, ``(1 - gamma) min_y sum_x C[x, y] + gamma
    sum_x min_y C[x, y]`` with ``C = diag(prior) loss >= 0``, rounded down (a certified lower bound; the derivation is
    in :mod:`chainamp.design.mixing_design`).

    Every term is a non-negative sum of at most ``n`` products, so the float value is within ``(n + 4) u`` of the
    exact one relatively; it is lowered by twice that and one ulp, and clipped at 0.
    """
    value = (1.0 - gamma) * float(C.sum(axis=0).min()) + gamma * float(C.min(axis=1).sum())
    bumped = value - 2.0 * (C.shape[0] + 8) * UNIT_ROUNDOFF * value
    return max(math.nextafter(bumped, -math.inf), 0.0)


def constant_bound(c: np.ndarray) -> float:
    r"""Lower bound ``min_y c_y`` (rounded down) when every feasible K makes the rows it is judged on equal.

    If the constraints force the rows (of K, or of M K) to one distribution v, the loss is
    ``sum_x pi(x) sum_y v_y loss(x, y) = <v, c>`` with ``c = pi @ loss``, at least ``min_y c_y``; the best
    constant operator ``1 e_{y*}^T`` attains it. This is the Lagrangian bound with ``lambda = 0`` over the
    single simplex of v.
    """
    c = np.asarray(c, dtype=float)[None, :]
    return _rounded_down(c, np.abs(c), 0.0, 0.0, c.shape[1] + 32)
