"""Accuracy of diffusion mechanisms: Section 5.1 of Balle, Barthe, Gaboardi and Geumlek 2019.

The error comparison of Section 5.1 (eq. (4), the matched Gaussian mechanism,
the post-processed Gaussian mechanism), Theorem 8 with its parameter choice,
and a Monte Carlo estimate of the error of any semigroup of :mod:`.semigroups`.

Soundness
---------
The epsilon certified by :func:`ou_parameters_for_epsilon` is Corollary 7's
``Lambda(1)``, rounded up by :mod:`.semigroups`. Mean squared errors are utility
figures, not privacy guarantees, and are not rounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import check_int, check_positive, check_real, log_expm1
from ..errors import InvalidParameterError
from .semigroups import OrnsteinUhlenbeck, _check_time, _exp_capped, _GaussianSemigroup, _points

__all__ = [
    "MonteCarloEstimate",
    "OUParameters",
    "ou_mse",
    "matched_gaussian_variance",
    "matched_gaussian_mse",
    "pgm_scale",
    "pgm_mse",
    "ou_condition",
    "ou_parameters_for_epsilon",
    "estimate_mse",
]


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class MonteCarloEstimate:
    """A Monte Carlo mean with its standard error ``std / sqrt(n_samples)``."""

    mean: float
    standard_error: float
    n_samples: int


@dataclass(frozen=True)
class OUParameters:
    """Theorem 8's Ornstein-Uhlenbeck parameters for a target RDP epsilon (at ``t = 1``).

    ``certified_epsilon`` is Corollary 7's ``Lambda(1)`` for the returned
    ``(theta, rho)``, rounded up; it never exceeds ``epsilon``.
    """

    theta: float
    rho: float
    t: float
    epsilon: float
    certified_epsilon: float
    sensitivity: float
    radius: float
    dimension: int
    gaussian_mse: float
    ou_mse_bound: float
    mse_ratio_bound: float
    source: str = "Theorem 8 of Balle et al. 2019"


# ----------------------------------------------------------------------------- Section 5.1 errors


def _check_dim(d: Any) -> int:
    return check_int(d, "d", minimum=1)


def ou_mse(theta: float, rho: float, t: float, d: int, f_norm: float) -> float:
    """Mean squared error of the OU mechanism, eq. (4) of Balle et al. 2019:

    ``E_OU = (1 - e^{-theta t})^2 ||f(D)||^2 + d rho^2 (1 - e^{-2 theta t}) / theta``.

    ``t >= 0`` (``E_OU(0) = 0``). A utility figure, not rounded.

    >>> round(ou_mse(1.0, 1.0, 1.0, 2, 1.0), 6)
    2.128906
    """
    ou = OrnsteinUhlenbeck(theta, rho)
    t = _check_time(t, strict=False)
    d = _check_dim(d)
    fn = check_positive(f_norm, "f_norm", strict=False)
    shrink = -math.expm1(-ou.theta * t)
    return shrink * shrink * fn * fn + d * ou.invariant_variance * -math.expm1(-2.0 * ou.theta * t)


def matched_gaussian_variance(theta: float, rho: float, t: float) -> float:
    """``sigma~^2 = rho^2 (e^{2 theta t} - 1) / theta``: the Gaussian mechanism
    ``f(D) + N(0, sigma~^2 I)`` with the same RDP as the OU mechanism at time ``t``
    (Section 5.1 of Balle et al. 2019; both give ``alpha Delta^2 / (2 sigma~^2)`` by Corollary 7).

    >>> round(matched_gaussian_variance(1.0, 1.0, 1.0), 6)
    6.389056
    """
    ou = OrnsteinUhlenbeck(theta, rho)
    t = _check_time(t, strict=False)
    if t == 0.0:
        return 0.0
    x = 2.0 * ou.theta * t
    log_var = 2.0 * math.log(ou.rho) - math.log(ou.theta) + x + math.log(-math.expm1(-x))
    return _exp_capped(log_var)


def matched_gaussian_mse(theta: float, rho: float, t: float, d: int) -> float:
    """``E_GM = d sigma~^2``: error of the matched Gaussian mechanism (Section 5.1 of Balle et al. 2019).

    >>> round(matched_gaussian_mse(1.0, 1.0, 1.0, 2), 6)
    12.778112
    """
    d = _check_dim(d)
    return d * matched_gaussian_variance(theta, rho, t)


def pgm_scale(theta: float, rho: float, t: float, d: int, R: float) -> float:
    """Scale ``beta = R^2 / (R^2 + d sigma~^2)`` of the post-processed Gaussian mechanism
    ``beta (f(D) + N(0, sigma~^2 I))``.

    Derivation: the MSE is ``(1 - beta)^2 ||f||^2 + beta^2 d sigma~^2``; its worst case over
    ``||f|| <= R`` is at ``||f|| = R`` and is minimised by this beta.

    >>> round(pgm_scale(1.0, 1.0, 1.0, 2, 1.0), 6)
    0.072579
    """
    d = _check_dim(d)
    R = check_positive(R, "R", allow_inf=False)
    var = d * matched_gaussian_variance(theta, rho, t)
    return R * R / (R * R + var) if math.isfinite(var) else 0.0


def pgm_mse(theta: float, rho: float, t: float, d: int, R: float, f_norm: float | None = None) -> float:
    """Error of the post-processed Gaussian mechanism with :func:`pgm_scale` (Section 5.1 of
    Balle et al. 2019): ``(1 - beta)^2 ||f||^2 + beta^2 d sigma~^2``, ``f_norm`` defaulting to
    ``R``, where it equals the paper's bound ``E_GM (1 + d sigma~^2 / R^2)^{-1}``.

    >>> round(pgm_mse(1.0, 1.0, 1.0, 2, 1.0), 6)
    0.927422
    """
    beta = pgm_scale(theta, rho, t, d, R)
    R = float(R)
    fn = R if f_norm is None else check_positive(f_norm, "f_norm", strict=False)
    if fn > R:
        raise InvalidParameterError(f"f_norm must be <= R (got f_norm={fn!r}, R={R!r})")
    var = d * matched_gaussian_variance(theta, rho, t)
    if not math.isfinite(var):
        return fn * fn
    return (1.0 - beta) ** 2 * fn * fn + beta * beta * var


def ou_condition(theta: float, R: float, d: int, rho: float) -> bool:
    """Theorem 8's condition ``theta R^2 <= 4 d rho^2`` (Balle et al. 2019), under which
    ``E_OU(t) <= E_GM(t)`` for every ``t >= 0`` and every query with ``||f(D)|| <= R``.

    >>> ou_condition(1.0, 2.0, 1, 1.0), ou_condition(1.0, 2.1, 1, 1.0)
    (True, False)
    """
    ou = OrnsteinUhlenbeck(theta, rho)
    R = check_positive(R, "R", strict=False)
    d = _check_dim(d)
    return ou.theta * R * R <= 4.0 * d * ou.rho * ou.rho


def ou_parameters_for_epsilon(epsilon: float, sensitivity: float, R: float, d: int) -> OUParameters:
    """Theorem 8's choice ``theta = log(1 + d Delta^2 / (2 eps R^2))``,
    ``rho^2 = theta Delta^2 / (2 eps (e^{2 theta} - 1))``: ``M_1`` is then ``(alpha, alpha eps)``-RDP
    and ``E_OU(1) / E_GM(1) <= (1 + d Delta^2 / (2 eps R^2))^{-1}`` with ``E_GM(1) = d Delta^2 / (2 eps)``.

    Soundness: ``rho`` is nudged up by a few ulps until Corollary 7's ``Lambda(1)`` (rounded up)
    is ``<= epsilon``; more noise only lowers epsilon. The MSE figures are not rounded.

    >>> p = ou_parameters_for_epsilon(1.0, 1.0, 1.0, 2)
    >>> round(p.theta, 6), round(p.rho, 6), round(p.mse_ratio_bound, 6), p.certified_epsilon <= 1.0
    (0.693147, 0.339889, 0.5, True)
    """
    eps = check_positive(epsilon, "epsilon")
    sens = check_positive(sensitivity, "sensitivity")
    R = check_positive(R, "R")
    d = _check_dim(d)
    log_a = math.log(d) + 2.0 * math.log(sens) - math.log(2.0 * eps) - 2.0 * math.log(R)
    a = _exp_capped(log_a)
    if not math.isfinite(a) or a == 0.0:
        raise InvalidParameterError(
            f"d Delta^2 / (2 epsilon R^2) must be finite and > 0 (got {a!r} from epsilon={eps!r}, "
            f"sensitivity={sens!r}, R={R!r}, d={d})")
    theta = math.log1p(a)
    log_rho2 = (math.log(theta) + 2.0 * math.log(sens) - math.log(2.0 * eps)
                - log_expm1(2.0 * theta))
    rho = math.exp(0.5 * log_rho2)
    certified = OrnsteinUhlenbeck(theta, rho).intrinsic_sensitivity(1.0, sens)
    for _ in range(200):
        if certified <= eps:
            break
        rho = math.nextafter(rho * (1.0 + 2.0**-50), math.inf)
        certified = OrnsteinUhlenbeck(theta, rho).intrinsic_sensitivity(1.0, sens)
    else:  # pragma: no cover - a few ulps always suffice
        raise InvalidParameterError(f"could not certify epsilon={eps!r} in floating point")
    gm = d * sens * sens / (2.0 * eps)
    return OUParameters(theta=theta, rho=rho, t=1.0, epsilon=eps, certified_epsilon=certified,
                        sensitivity=sens, radius=R, dimension=d, gaussian_mse=gm,
                        ou_mse_bound=gm / (1.0 + a), mse_ratio_bound=1.0 / (1.0 + a))


def estimate_mse(semigroup: _GaussianSemigroup, x: Any, t: float, n_samples: int,
                 rng: np.random.Generator, *, scale: float = 1.0) -> MonteCarloEstimate:
    """Monte Carlo estimate of ``E ||x - scale * X_t||^2`` with ``X_t ~ P_t(x)`` for one point ``x``,
    with its standard error. ``BrownianMotion()`` at ``t = sigma^2 / 2`` is the Gaussian mechanism,
    and ``scale = beta`` gives the post-processed one. A utility estimate, not a guarantee.
    """
    if not isinstance(semigroup, _GaussianSemigroup):
        raise TypeError(f"semigroup must be BrownianMotion or OrnsteinUhlenbeck, got {type(semigroup).__name__}")
    x = _points(x, "x")
    if x.ndim != 1:
        raise InvalidParameterError(f"x must be a single point of shape (d,) (got shape {x.shape})")
    n = check_int(n_samples, "n_samples", minimum=2)
    beta = check_real(scale, "scale")
    draws = semigroup.sample(np.broadcast_to(x, (n, x.size)), t, rng)
    err = np.sum((x - beta * draws) ** 2, axis=1)
    return MonteCarloEstimate(mean=float(err.mean()), standard_error=float(err.std(ddof=1) / math.sqrt(n)),
                              n_samples=n)
