"""Divergences between finite distributions: hockey-stick, total variation, Renyi.

All functions work in log space where ``e^eps`` would overflow and round their
result *up* (see :func:`chainamp._numerics.round_up`), so a divergence used in a
privacy bound is never under-reported because of floating point.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._numerics import (logsumexp, SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_distribution, check_epsilon, check_real, round_up,
                         round_up_array, scaled_by_exp)
from ..errors import InvalidParameterError

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
    near_mask = (p > 0) & (p >= scaled_by_exp(q, eps) * (1 - slack)) & (terms > 0 if eps == 0.0 else True)
    near = float(p[near_mask].sum())
    out = round_up(val, p.size + 9, scale=near)
    if 0.0 < eps < math.inf and out < 1.0:
        # e^eps q_y that lands in the subnormal range is off by up to 2**-1074 absolutely,
        # which no relative bound covers: one smallest subnormal per (near-)active term
        n_near = int(np.count_nonzero(near_mask))
        if n_near:
            out = math.nextafter(out + n_near * SMALLEST_SUBNORMAL, math.inf)
    return min(out, 1.0)


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
    continuous w.r.t. q. Rounded up by a rigorous error bound.

    Evaluated as ``log(sum_y p_y e^{z_y}) / (alpha - 1)`` with ``z_y = (alpha - 1) log(p_y/q_y)``.
    When every ``|z_y| <= 1`` (alpha near 1, where the numerator is a small difference and
    dividing by ``alpha - 1`` would amplify its rounding) the numerator is ``log1p(T)`` with
    ``T = sum_y p_y expm1(z_y) + (sum_y p_y - 1)`` summed exactly by ``math.fsum``; otherwise
    ``logsumexp``. The bound: a computed log-ratio is within ``12 u (|log p_y| + |log q_y|)`` of
    the true one (0 where ``p_y = q_y``), the sum of exponentials is 1-Lipschitz in the
    largest perturbation of its exponents, plus the relative roundings of each step.

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
    ps, qs = p[support], q[support]
    if a < 1.0:  # outcomes with q = 0 contribute p^a 0^(1-a) = 0
        ps, qs = ps[qs > 0], qs[qs > 0]
        if ps.size == 0:
            return math.inf
    u = UNIT_ROUNDOFF
    lp, lq = np.log(ps), np.log(qs)
    llr = lp - lq
    # error of a computed log-ratio (exactly 0 where p_y = q_y: both logs are then equal)
    e_llr = np.where(ps == qs, 0.0, 12 * u * (np.abs(lp) + np.abs(lq)))
    if math.isinf(a):
        upper = float(np.max(llr + e_llr + 2 * u * np.abs(llr)))
        return _nonneg_up(upper)
    if a == 1.0:
        t = ps * llr
        val = math.fsum(t)
        # products that land in the subnormal range: 2**-1074 absolutely each
        err = (float(np.sum(ps * e_llr)) * (1 + 4 * u) + 4 * u * float(np.sum(np.abs(t))) + 2 * u * abs(val)
               + 2 * np.count_nonzero(llr) * SMALLEST_SUBNORMAL)
        return _nonneg_up(val + err)
    am1 = a - 1.0
    am1_err = 0.0 if 0.5 <= a <= 2.0 else u * abs(am1)  # Sterbenz: a - 1 is exact on [0.5, 2]
    z = am1 * llr
    ez = (abs(am1) * (e_llr + 3 * u * np.abs(llr)) + am1_err * np.abs(llr)) * (1 + 4 * u)
    m = ps.size
    num = None
    if float(np.max(np.abs(z))) <= 1.0:
        g = np.expm1(z)
        t = ps * g
        T = math.fsum(np.concatenate((t, ps, [-1.0])))
        # |expm1(z~) - expm1(z)| <= e^(1 + ez) ez <= 3 ez; expm1 and the product: 3u relative
        err_T = (float(np.sum(ps * (3 * ez + 4 * u * np.abs(g)))) * (1 + 4 * u) + u * abs(T)
                 + 2 * np.count_nonzero(g) * SMALLEST_SUBNORMAL)
        if 1.0 + T - err_T > 0.0:
            num = math.log1p(T)
            err_num = err_T / (1.0 + T - err_T) * (1 + 4 * u) + 2 * u * abs(num)
    if num is None:
        # in log space (log p_y + z_y), so that a tiny p_y times a huge e^{z_y} cannot underflow
        x = lp + z
        num = float(logsumexp(x))
        err_num = float(np.max(ez + 8 * u * np.abs(lp) + 2 * u * np.abs(x))) + (2 * m + 8) * u + 4 * u * abs(num)
    val = num / am1
    err = err_num / abs(am1) * (1 + 4 * u) + (2 * u + am1_err / abs(am1)) * abs(val) * 2
    return _nonneg_up(val + err)


def _nonneg_up(value: float) -> float:
    """``max(value, 0)`` pushed one float up (0 stays 0; inf stays inf)."""
    if not value > 0.0:
        return 0.0
    return value if math.isinf(value) else math.nextafter(value, math.inf)


def hockey_stick_curve(p: Any, q: Any, epsilons: Any) -> np.ndarray:
    """``D_{e^eps}(p || q)`` at many eps at once, by sorting the likelihood ratios once.

    With the outcomes sorted by decreasing ``log(p_y/q_y)``, the divergence at
    eps is ``P_k - e^eps Q_k`` where ``P_k, Q_k`` are prefix sums over the k
    outcomes whose ratio exceeds eps: O(m log m + len(epsilons) log m) in all.
    Each value is rounded up by the error bound of a length-m sum plus the error
    of the computed log-ratios, which can misplace outcomes whose ratio lies
    within ``u (eps + 2 max |log p|, |log q|)`` of eps (each such outcome moves
    the value by at most that fraction of its mass, so the mass of every outcome that
    close to eps pads the value, counted in the prefix sum or not).

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
    max_log = float(finite_logs.max(initial=0.0))
    log_ops = int(np.ceil(2 * max_log)) + 8
    eps_ops = np.where(np.isfinite(eps), np.ceil(np.abs(np.where(np.isfinite(eps), eps, 0.0))), 0.0)
    ops = p.size + 9 + log_ops + eps_ops
    size = np.maximum(Pk, vals)
    # A computed log-ratio is within ``dl = 9u (|log p| + |log q|)`` of the true one (numpy's log
    # within 4 ulps, one subtraction), so an outcome whose computed ratio lies within dl of eps may
    # sit on the wrong side of the cut. Its exact term ``p - e^eps q`` is at most ``p (e^dl - 1)``
    # in size; an outcome wrongly LEFT OUT is not in ``P_k``, so the mass of every outcome within
    # dl of eps pads the value separately (it is 0 when no ratio is that close to eps).
    dl = 20 * UNIT_ROUNDOFF * (2 * max_log + 1.0)
    k_hi = np.searchsorted(-llr_sorted, -(eps - dl), side="right")  # computed llr >= eps - dl
    k_lo = np.searchsorted(-llr_sorted, -(eps + dl), side="left")   # computed llr > eps + dl
    near_mass = np.where(np.isfinite(eps), (P[k_hi] - P[k_lo]) + (p.size + 2) * UNIT_ROUNDOFF * P[k_hi], 0.0)
    pad = size * (ops + 2) * UNIT_ROUNDOFF + near_mass * (2.0 * dl)
    # e^eps Q_k computed in (or through) the subnormal range is off by up to 2**-1074 per product
    pad = pad + np.where((Qk > 0) & (Qk < 2.0**-1020) & np.isfinite(eps), 3 * SMALLEST_SUBNORMAL, 0.0)
    bumped = np.nextafter(vals + pad, np.inf)
    return np.minimum(np.where(pad > 0, bumped, vals), 1.0)
