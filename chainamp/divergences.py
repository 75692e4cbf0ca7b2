"""Divergences between finite distributions: hockey-stick, total variation, Renyi.

All functions work in log space where ``e^eps`` would overflow and round their
result *up* (see :func:`chainamp._logmath.round_up`), so a divergence used in a
privacy bound is never under-reported because of floating point.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ._logmath import round_up, round_up_array
from ._validation import check_distribution, check_epsilon, check_real
from .errors import InvalidParameterError

__all__ = [
    "hockey_stick",
    "total_variation",
    "renyi_divergence",
    "hockey_stick_curve",
    "log_likelihood_ratios",
    "scaled_by_exp",
]


def _pair(p: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    p = check_distribution(p, "p")
    q = check_distribution(q, "q", size=p.size)
    return p, q


def log_likelihood_ratios(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``log(p_y / q_y)`` with ``+inf`` where only q vanishes and ``-inf`` where only p does
    (NaN where both do: such outcomes never count)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(p) - np.log(q)


def scaled_by_exp(q: np.ndarray, eps: float) -> np.ndarray:
    """``e^eps * q`` elementwise with relative error at most 6 units of roundoff.

    ``e^eps`` itself overflows beyond eps ~ 709; there we multiply by ``e^(eps/2)``
    twice. Entries that overflow become ``inf`` (right: they exceed any probability).
    ``eps = inf`` maps 0 to 0 and anything positive to ``inf``.
    """
    q = np.asarray(q, dtype=float)
    if math.isinf(eps):
        return np.where(q > 0, math.inf, 0.0)
    with np.errstate(over="ignore"):
        if eps <= 700.0:
            return q * math.exp(eps)
        half = math.exp(0.5 * eps)
        return (q * half) * half


def _hockey_terms(p: np.ndarray, q: np.ndarray, eps: float) -> np.ndarray:
    """The positive parts ``[p_y - e^eps q_y]_+`` (footnote 3 at eps = inf).

    Each term is within ``7 u p_y`` of the exact one (``e^eps q`` carries 6u
    relative error and only terms with ``e^eps q < p`` count), so a sum of m terms
    is within ``(m + 7) u sum(p)``: callers round up by that.
    """
    if math.isinf(eps):
        return np.where((p > 0) & (q == 0), p, 0.0)
    return np.maximum(p - scaled_by_exp(q, eps), 0.0)


def hockey_stick(p: Any, q: Any, epsilon: float = 0.0) -> float:
    """Hockey-stick divergence ``D_{e^eps}(p || q) = sum_y [p_y - e^eps q_y]_+``.

    ``epsilon = 0`` gives total variation; ``epsilon = math.inf`` gives
    ``p(supp(p) minus supp(q))`` (footnote 3 of Balle et al. 2019). The result
    is rounded up past the floating-point error of the sum.

    Examples
    --------
    >>> round(hockey_stick([0.75, 0.25], [0.25, 0.75], 0.0), 6)
    0.5
    >>> round(hockey_stick([0.75, 0.25], [0.25, 0.75], math.log(3)), 6)
    0.0
    >>> round(hockey_stick([0.5, 0.5], [1.0, 0.0], math.inf), 12)
    0.5
    """
    p, q = _pair(p, q)
    eps = check_epsilon(epsilon)
    terms = _hockey_terms(p, q, eps)
    val = float(terms.sum())
    # a term that should be positive may have rounded to 0 only if p_y <= e^eps q_y (1 + 6u);
    # at eps = 0 the scaling is exact and float subtraction never flips a sign
    slack = 0.0 if eps == 0.0 else 8 * 2.0**-53
    near = float(p[(p > 0) & (p >= scaled_by_exp(q, eps) * (1 - slack)) & (terms > 0 if eps == 0.0 else True)].sum())
    return round_up(val, p.size + 9, scale=near, upper=1.0)


def total_variation(p: Any, q: Any) -> float:
    """Total variation ``TV(p, q) = sum_y [p_y - q_y]_+`` (equal to half the L1 distance
    for distributions); rounded up.

    >>> round(total_variation([1.0, 0.0], [0.5, 0.5]), 12)
    0.5
    """
    return hockey_stick(p, q, 0.0)


def renyi_divergence(p: Any, q: Any, alpha: float) -> float:
    """Renyi divergence ``R_alpha(p || q) = log(sum_y p_y^alpha q_y^(1-alpha)) / (alpha - 1)``.

    ``alpha = 1`` is the KL divergence and ``alpha = inf`` the max-divergence
    ``max_y log(p_y / q_y)``. Infinite when ``alpha >= 1`` and p is not absolutely
    continuous w.r.t. q. Computed with ``logsumexp``; rounded up.

    Examples
    --------
    >>> round(renyi_divergence([0.75, 0.25], [0.25, 0.75], 2.0), 6)
    0.847298
    >>> round(renyi_divergence([0.75, 0.25], [0.25, 0.75], math.inf), 6)
    1.098612
    """
    p, q = _pair(p, q)
    a = check_real(alpha, "alpha")
    if a <= 0.0:
        raise InvalidParameterError(f"alpha must be > 0 (got {a!r})")
    support = p > 0
    if a >= 1.0 and np.any(support & (q == 0)):
        return math.inf
    with np.errstate(divide="ignore"):
        lp, lq = np.log(p[support]), np.log(q[support])
    if math.isinf(a):
        val = float(np.max(lp - lq))
    elif a == 1.0:
        val = float(np.sum(p[support] * (lp - lq)))
    else:
        if a < 1.0:
            keep = q[support] > 0
            lp, lq = lp[keep], lq[keep]
            if lp.size == 0:
                return math.inf
        val = float(logsumexp(a * lp + (1.0 - a) * lq)) / (a - 1.0)
    val = max(val, 0.0)
    return round_up(val, p.size + 4, scale=1.0 if val else 0.0)


def hockey_stick_curve(p: Any, q: Any, epsilons: Any) -> np.ndarray:
    """``D_{e^eps}(p || q)`` at many eps at once, by sorting the likelihood ratios once.

    With the outcomes sorted by decreasing ``log(p_y/q_y)``, the divergence at
    eps is ``P_k - e^eps Q_k`` where ``P_k, Q_k`` are prefix sums over the k
    outcomes whose ratio exceeds eps: O(m log m + len(epsilons) log m) in all.
    Each value is rounded up by the error bound of a length-m sum plus the error
    of the computed log-ratios, which can misplace outcomes whose ratio lies
    within ``u (eps + 2 max |log p|, |log q|)`` of eps (each such outcome moves
    the value by at most that fraction of its mass).

    Examples
    --------
    >>> hockey_stick_curve([0.75, 0.25], [0.25, 0.75], [0.0, math.log(2), math.inf]).round(6).tolist()
    [0.5, 0.25, 0.0]
    """
    p, q = _pair(p, q)
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if eps.ndim != 1 or np.any(np.isnan(eps)) or np.any(eps < 0):
        raise InvalidParameterError(f"epsilons must be a 1-D array of values >= 0 (got {epsilons!r})")
    return _curve_from_sorted(p, q, eps)


def _curve_from_sorted(p: np.ndarray, q: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Core of :func:`hockey_stick_curve` without validation (inputs already checked)."""
    keep = p > 0
    llr = log_likelihood_ratios(p[keep], q[keep])
    order = np.argsort(-llr, kind="stable")
    llr_sorted = llr[order]
    P = np.concatenate(([0.0], np.cumsum(p[keep][order])))
    Q = np.concatenate(([0.0], np.cumsum(q[keep][order])))
    # number of outcomes with llr > eps (llr_sorted is decreasing); at eps = inf, footnote 3
    # of the paper counts the outcomes q cannot produce (llr = +inf)
    k = np.searchsorted(-llr_sorted, -eps, side="left")
    k = np.where(np.isinf(eps), np.count_nonzero(np.isposinf(llr_sorted)), k)
    Pk, Qk = P[k], Q[k]
    with np.errstate(over="ignore", invalid="ignore"):
        half = np.exp(0.5 * np.where(np.isfinite(eps), eps, 0.0))
        cq = (Qk * half) * half  # e^eps Q_k with relative error <= 6u, as in scaled_by_exp
    cq = np.where(np.isinf(eps), np.where(Qk > 0, np.inf, 0.0), cq)
    vals = np.maximum(Pk - cq, 0.0)
    finite_logs = np.abs(np.concatenate((np.log(p[keep]), np.log(q[keep & (q > 0)]))))
    log_ops = int(np.ceil(2 * finite_logs.max(initial=0.0))) + 8
    eps_ops = np.where(np.isfinite(eps), np.ceil(np.abs(np.where(np.isfinite(eps), eps, 0.0))), 0.0)
    ops = p.size + 9 + log_ops + eps_ops
    size = np.maximum(Pk, vals)
    bumped = np.nextafter(vals + size * (ops + 2) * 2.0**-53, np.inf)
    return np.minimum(np.where(size > 0, bumped, vals), 1.0)
