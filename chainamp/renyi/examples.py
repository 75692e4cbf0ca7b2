"""Examples 1-3 of Balle, Barthe, Gaboardi and Geumlek (2019): Renyi bounds by interpolation.

Eq. (1) (Theorem 2 with ``omega`` a translate of ``mu``) evaluated in closed form for
the iterated Gaussian kernel (Example 1), the iterated Laplace kernel with the
``Lap2`` density of eq. (6) and Lemma 3 (Example 2) and Lipschitz Gaussian kernels
(Example 3). Every value is rounded toward the larger (safe) side.

Re-exported by :mod:`chainamp.renyi`; import from there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import check_order, check_positive, check_real, round_up
from ..errors import InvalidParameterError
from .core import _log_g_alpha, _shift_norm, gaussian_renyi_divergence

__all__ = [
    "InterpolationBound",
    "iterated_gaussian_bound",
    "iterated_gaussian_optimal",
    "lipschitz_gaussian_bound",
    "lipschitz_gaussian_optimal",
    "lap2_pdf",
    "lap2_logpdf",
    "lap2_pure_epsilon",
    "iterated_laplace_bound",
    "iterated_laplace_optimal",
]


# --------------------------------------------------------------------------- Examples 1 and 3
@dataclass(frozen=True)
class InterpolationBound:
    """Eq. (1) evaluated with ``omega`` centred at the interpolation point ``w``:
    ``value = first_term + second_term`` (``R_alpha(omega || nu)`` and the transport term).
    ``theta`` is the weight with ``w = theta u + (1 - theta) v`` when known."""

    value: float
    w: Any
    theta: float | None
    first_term: float
    second_term: float
    alpha: float
    source: str


def _points(u: Any, v: Any, w: Any = None) -> tuple[np.ndarray, ...]:
    out = []
    for val, name in ((u, "u"), (v, "v"), (w, "w")):
        if val is None:
            continue
        arr = np.atleast_1d(np.asarray(val, dtype=float))
        if arr.ndim != 1 or not np.all(np.isfinite(arr)):
            raise InvalidParameterError(f"{name} must be a finite number or 1-D vector (got {val!r})")
        out.append(arr)
    if any(p.shape != out[0].shape for p in out):
        raise InvalidParameterError(f"u, v (and w) must have one dimension (got {[p.size for p in out]})")
    return tuple(out)


def _gaussian_interp(u, v, w, s1, s2, lip, a, theta, source) -> InterpolationBound:
    if math.isinf(a):
        raise InvalidParameterError("alpha must be finite for Gaussian bounds (got inf)")
    first = gaussian_renyi_divergence(w - v, s1, a) if np.any(w != v) else 0.0
    gap = round_up(lip * _shift_norm(u - w), 1)
    second = gaussian_renyi_divergence(gap, s2, a) if gap > 0 else 0.0
    return InterpolationBound(value=round_up(first + second, 1), w=w, theta=theta, first_term=first,
                              second_term=second, alpha=a, source=source)


def lipschitz_gaussian_bound(u: Any, v: Any, w: Any, sigma1: float, sigma2: float, lipschitz: float,
                             alpha: float) -> InterpolationBound:
    """Example 3 of Balle et al. 2019 at an arbitrary interpolation point ``w``.

    ``mu = N(u, s1^2 I)``, ``nu = N(v, s1^2 I)``, ``K(x) = N(psi(x), s2^2 I)`` with ``psi``
    L-Lipschitz, ``omega = N(w, s1^2 I)`` coupled to ``mu`` by the translation ``u - w``::

        R_alpha(mu K || nu K) <= alpha/2 (||w - v||^2 / s1^2 + L^2 ||u - w||^2 / s2^2).

    Every ``w`` gives a valid bound; rounded up.

    >>> round(lipschitz_gaussian_bound(1.0, 0.0, 0.5, 1.0, 1.0, 0.5, 2.0).value, 6)
    0.3125
    """
    u, v, w = _points(u, v, w)
    s1, s2 = check_positive(sigma1, "sigma1"), check_positive(sigma2, "sigma2")
    lip = check_positive(lipschitz, "lipschitz", strict=False)
    return _gaussian_interp(u, v, w, s1, s2, lip, check_order(alpha), None, "Example 3 of Balle et al. 2019")


def lipschitz_gaussian_optimal(u: Any, v: Any, sigma1: float, sigma2: float, lipschitz: float,
                               alpha: float) -> InterpolationBound:
    """Example 3 at its minimiser ``w = theta u + (1 - theta) v``, ``theta = (1 + s2^2/(L^2 s1^2))^-1``,
    where the bound equals ``alpha ||u - v||^2 / (2 sigma_*^2)`` with ``sigma_*^2 = s1^2 + s2^2 / L^2``.

    The value is the bound evaluated at that ``w`` (so it is a valid bound whatever
    the rounding of ``theta``), rounded up. ``L = 0`` gives 0.

    >>> b = lipschitz_gaussian_optimal(1.0, 0.0, 1.0, 1.0, 0.5, 2.0)
    >>> round(b.theta, 6), round(b.value, 6)
    (0.2, 0.2)
    """
    u, v = _points(u, v)
    s1, s2 = check_positive(sigma1, "sigma1"), check_positive(sigma2, "sigma2")
    lip = check_positive(lipschitz, "lipschitz", strict=False)
    theta = 0.0 if lip == 0.0 else 1.0 / (1.0 + s2 * s2 / (lip * lip * s1 * s1))
    w = theta * u + (1.0 - theta) * v
    return _gaussian_interp(u, v, w, s1, s2, lip, check_order(alpha), theta, "Example 3 of Balle et al. 2019")


def iterated_gaussian_bound(u: Any, v: Any, w: Any, sigma1: float, sigma2: float,
                            alpha: float) -> InterpolationBound:
    """Example 1 of Balle et al. 2019 (``K(x) = N(x, s2^2 I)``) at an arbitrary ``w``::

        alpha/2 (||w - v||^2 / s1^2 + ||u - w||^2 / s2^2).

    >>> round(iterated_gaussian_bound(1.0, 0.0, 0.0, 1.0, 1.0, 2.0).value, 6)
    1.0
    """
    b = lipschitz_gaussian_bound(u, v, w, sigma1, sigma2, 1.0, alpha)
    return InterpolationBound(**{**b.__dict__, "source": "Example 1 of Balle et al. 2019"})


def iterated_gaussian_optimal(u: Any, v: Any, sigma1: float, sigma2: float, alpha: float) -> InterpolationBound:
    """Example 1 at ``theta = (1 + s2^2/s1^2)^-1``: equals ``alpha ||u-v||^2 / (2 (s1^2 + s2^2))``,
    the exact RDP of ``N(f(D), (s1^2 + s2^2) I)``.

    >>> b = iterated_gaussian_optimal(1.0, 0.0, 1.0, 1.0, 2.0)
    >>> round(b.theta, 6), round(b.value, 6)
    (0.5, 0.5)
    """
    b = lipschitz_gaussian_optimal(u, v, sigma1, sigma2, 1.0, alpha)
    return InterpolationBound(**{**b.__dict__, "source": "Example 1 of Balle et al. 2019"})


# --------------------------------------------------------------------------- Example 2 (Laplace)
def _lap2_scales(lambda1: float, lambda2: float) -> tuple[float, float]:
    return check_positive(lambda1, "lambda1"), check_positive(lambda2, "lambda2")


def lap2_logpdf(x: Any, lambda1: float, lambda2: float) -> np.ndarray:
    """Log-density of ``Lap(0, lambda1) + Lap(0, lambda2)``, eq. (6) of Balle et al. 2019.

    For ``l1 != l2`` eq. (6) equals ``(l1 e^{-|x|/l1} - l2 e^{-|x|/l2}) / (2 (l1^2 - l2^2))``; with
    ``l1 > l2`` (the density is symmetric in the scales) we evaluate it as
    ``l2 e^{-|x|/l2} expm1(s) / (2 (l1 - l2)(l1 + l2))``, ``s = log(l1/l2) + |x| (l1 - l2)/(l1 l2)``,
    which has no cancellation even when ``l1`` and ``l2`` are close. For ``l1 = l2 = l``:
    ``(l + |x|) e^{-|x|/l} / (4 l^2)``.

    >>> float(np.round(lap2_logpdf(0.0, 1.0, 1.0), 6))
    -1.386294
    """
    l1, l2 = _lap2_scales(lambda1, lambda2)
    ax = np.abs(np.asarray(x, dtype=float))
    if l1 == l2:
        return np.log(l1 + ax) - ax / l1 - math.log(4.0 * l1 * l1)
    hi, lo = max(l1, l2), min(l1, l2)
    s = math.log1p((hi - lo) / lo) + ax * ((hi - lo) / (hi * lo))
    log_expm1_s = np.where(s > 30.0, s + np.log1p(-np.exp(-np.minimum(s, 700.0))), np.log(np.expm1(np.minimum(s, 30.0))))
    return math.log(lo) - ax / lo + log_expm1_s - math.log(2.0 * (hi - lo) * (hi + lo))


def lap2_pdf(x: Any, lambda1: float, lambda2: float) -> np.ndarray:
    """Density ``Lap2(x; lambda1, lambda2)`` of eq. (6) (both cases), via :func:`lap2_logpdf`.

    >>> float(np.round(lap2_pdf(1.0, 1.0, 2.0), 6))
    0.140864
    """
    return np.exp(lap2_logpdf(x, lambda1, lambda2))


def lap2_pure_epsilon(shift: float, lambda1: float, lambda2: float) -> float:
    """Lemma 3 of Balle et al. 2019: the exact pure-DP epsilon of ``Lap2(lambda1, lambda2)`` noise at
    sensitivity ``shift`` is ``shift / max(lambda1, lambda2)`` (no amplification in ``(eps, 0)``-DP).

    >>> lap2_pure_epsilon(1.0, 1.0, 2.0)
    0.5
    """
    d = _shift_norm(shift)
    l1, l2 = _lap2_scales(lambda1, lambda2)
    return round_up(d / max(l1, l2), 1)


def _laplace_terms(t: float, gap: float, l1: float, l2: float, a: float) -> tuple[float, float]:
    if math.isinf(a):
        return t / l1, (gap - t) / l2
    return (max(_log_g_alpha(t / l1, a), 0.0) / (a - 1.0), max(_log_g_alpha((gap - t) / l2, a), 0.0) / (a - 1.0))


def iterated_laplace_bound(u: float, v: float, w: float, lambda1: float, lambda2: float,
                           alpha: float) -> InterpolationBound:
    """Example 2 of Balle et al. 2019 at an arbitrary ``w``: ``mu = Lap(u, l1)``, ``nu = Lap(v, l1)``,
    ``K(x) = Lap(x, l2)``, ``omega = Lap(w, l1)`` coupled to ``mu`` by translation::

        R_alpha(mu K || nu K) <= log(g_alpha(|w - v|/l1) g_alpha(|u - w|/l2)) / (alpha - 1).

    ``alpha = inf`` gives ``|w - v|/l1 + |u - w|/l2``. Rounded up.

    >>> round(iterated_laplace_bound(1.0, 0.0, 0.5, 1.0, 1.0, 2.0).value, 6)
    0.400608
    """
    u_, v_, w_ = (check_real(val, name) for val, name in ((u, "u"), (v, "v"), (w, "w")))
    l1, l2 = _lap2_scales(lambda1, lambda2)
    a = check_order(alpha)
    t1, t2 = abs(w_ - v_), abs(u_ - w_)
    first, second = _laplace_terms(t1, t1 + t2, l1, l2, a)
    first, second = round_up(first, 8, scale=t1 / l1), round_up(second, 8, scale=t2 / l2)
    return InterpolationBound(value=round_up(first + second, 1), w=w_, theta=None, first_term=first,
                              second_term=second, alpha=a, source="Example 2 of Balle et al. 2019")


def iterated_laplace_optimal(u: float, v: float, lambda1: float, lambda2: float,
                             alpha: float) -> InterpolationBound:
    """Example 2 minimised over ``w`` on the segment ``[v, u]`` (points off the segment are farther
    from both ends, so never better).

    Uses a bounded scalar minimisation of ``t -> log g(t/l1) + log g((|u-v|-t)/l2)`` plus both
    endpoints; the reported value is the bound *evaluated* at the returned ``w``, so it is valid
    whatever the optimiser's accuracy. ``alpha = inf`` recovers ``|u-v| / max(l1, l2)`` (Lemma 3).

    >>> b = iterated_laplace_optimal(1.0, 0.0, 1.0, 1.0, 2.0)
    >>> round(b.w, 4), round(b.value, 6)
    (0.5, 0.400608)
    """
    u_, v_ = check_real(u, "u"), check_real(v, "v")
    l1, l2 = _lap2_scales(lambda1, lambda2)
    a = check_order(alpha)
    gap = abs(u_ - v_)
    cands = [0.0, gap]
    if gap > 0 and not math.isinf(a):
        from scipy.optimize import minimize_scalar  # imported on use (about 0.1 s)

        res = minimize_scalar(lambda t: sum(_laplace_terms(t, gap, l1, l2, a)), bounds=(0.0, gap),
                              method="bounded", options={"xatol": 1e-10 * max(gap, 1.0)})
        cands.append(float(min(max(res.x, 0.0), gap)))
    t = min(cands, key=lambda c: sum(_laplace_terms(c, gap, l1, l2, a)))
    w = v_ + math.copysign(t, u_ - v_)
    b = iterated_laplace_bound(u_, v_, w, l1, l2, a)
    theta = t / gap if gap > 0 else 0.0
    return InterpolationBound(**{**b.__dict__, "theta": theta})
