"""Diffusion semigroups and their Renyi DP: Section 5 (Theorem 6) of Balle, Barthe, Gaboardi and Geumlek 2019.

A Markov semigroup ``(P_t)`` on ``R^d`` defines the output-perturbation
mechanism ``M_t(D) = P_t(f(D))``. Theorem 6 of Balle et al. 2019 bounds its
Renyi DP through the *intrinsic sensitivity*

    Lambda(t) = sup_{D ~ D'} int_t^inf kappa_{f(D), f(D')}(s) ds,
    kappa_{x, x'}(s) = sup_y Gamma(log p_s(x, y) / p_s(x', y)),

where ``Gamma`` is the carre du champ operator of the generator ``L``:
``M_t`` is ``(alpha, alpha Lambda(t))``-RDP for every ``alpha > 1``.

Two semigroups are provided, both with exact Gaussian transitions:

* :class:`BrownianMotion` (Examples 4-5): ``dX = sqrt(2) dW``,
  ``P_t(x) = N(x, 2t I)``, ``L`` the Laplacian, ``Gamma(f, g) = <grad f, grad g>``;
* :class:`OrnsteinUhlenbeck` (Section 5.1): ``L f = rho^2 lap f - theta <x, grad f>``,
  ``P_t(x) = N(e^{-theta t} x, rho^2 (1 - e^{-2 theta t}) / theta I)``,
  ``Gamma(f, g) = rho^2 <grad f, grad g>``. This kernel and generator belong to
  the SDE ``dX = -theta X dt + sqrt(2) rho dW`` (diffusion matrix ``2 rho^2 I``);
  we follow the kernel, generator and Corollary 7, which agree with each other.

Each semigroup computes ``Lambda(t)`` in closed form (Example 5, Corollary 7)
and by quadrature of ``kappa`` from Theorem 6's definition, ``kappa`` being
formed from the gradient of the log transition density.

The mean squared errors of Section 5.1 and Theorem 8 live in :mod:`.accuracy`.

Soundness
---------
Every epsilon / Lambda returned is rounded up past its floating-point error
(:func:`chainamp._numerics.round_up`). The quadrature path adds quad's own
error estimate before rounding up; that estimate is not a rigorous enclosure,
so the closed form is the default and the quadrature is a cross-check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import (QUAD_EPSREL, SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_choice, check_order, check_positive,
                         check_real, round_up)
from ..errors import InvalidParameterError

__all__ = [
    "GaussianTransition",
    "BrownianMotion",
    "OrnsteinUhlenbeck",
]

_METHODS = ("closed_form", "quadrature")
_QUAD_U_MAX = 100.0  # quadrature over s in [t, t e^100]
_QUAD_T_MAX = 1e250  # keeps t e^100 finite
_LOG_MAX = math.log(np.finfo(float).max)
_TINY = SMALLEST_SUBNORMAL  # a positive exact value rounds UP to at least this


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class GaussianTransition:
    """The law ``N(mean, covariance)`` of ``P_t(x)``; ``covariance = variance * I``."""

    mean: np.ndarray
    covariance: np.ndarray
    variance: float


# ----------------------------------------------------------------------------- helpers


def _exp_capped(log_value: float) -> float:
    """``exp(log_value)`` with ``inf`` instead of OverflowError."""
    return math.inf if log_value > _LOG_MAX else math.exp(log_value)


def _exp_sum_up(log_terms: tuple[float, ...]) -> float:
    """An upper bound on ``exp(sum(log_terms))`` for a positive quantity given by its log terms.

    Each term is a float within one ulp (relative error <= 2u) of its exact value, plus an
    absolute error of a few u for a ``log`` of a number near 1; ``fsum`` adds one rounding.
    So ``|error of the sum| <= 2 (n + 2) u (1 + sum |term_i|)``; we exponentiate the sum plus
    that bound, round up, and never return 0 (the exact value is positive; underflow returns
    the smallest positive float).
    """
    total = math.fsum(log_terms)
    slack = 2.0 * (len(log_terms) + 2) * UNIT_ROUNDOFF * (1.0 + math.fsum(abs(v) for v in log_terms))
    return max(round_up(_exp_capped(total + slack), 2), _TINY)


def _points(x: Any, name: str) -> np.ndarray:
    """A point (shape ``(d,)``) or a batch (shape ``(..., d)``) of finite reals; a scalar is a 1-d point."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers ({exc})") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.shape[-1] == 0:
        raise InvalidParameterError(f"{name} must have at least one coordinate (got shape {arr.shape})")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} must be finite (got {x!r})")
    return arr


def _same_dim(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.shape[-1] != b.shape[-1]:
        raise InvalidParameterError(
            f"{na} and {nb} must have the same dimension (got {a.shape[-1]} and {b.shape[-1]})")


def _check_time(t: Any, *, strict: bool = True) -> float:
    return check_positive(t, "t", strict=strict)


def _check_sensitivity(sensitivity: Any) -> float:
    return check_positive(sensitivity, "sensitivity", strict=False)


class _GaussianSemigroup:
    """Shared machinery of a semigroup with ``P_t(x) = N(a(t) x, v(t) I)`` and
    ``Gamma(f, g) = c <grad f, grad g>``. Subclasses define ``_mean_factor``,
    ``_variance``, ``gamma_coefficient`` and ``_closed_form_lambda``."""

    gamma_coefficient: float

    def _mean_factor(self, t: float) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _variance(self, t: float) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _closed_form_lambda(self, t: float, sensitivity: float) -> float:  # pragma: no cover
        raise NotImplementedError

    # -- kernel ---------------------------------------------------------------

    def kernel(self, x: Any, t: float) -> GaussianTransition:
        """Mean and covariance of ``P_t(x)``; ``x`` has shape ``(d,)`` or ``(..., d)``
        (the covariance ``v(t) I_d`` is shared by every point of a batch)."""
        x = _points(x, "x")
        t = _check_time(t)
        v = self._variance(t)
        return GaussianTransition(mean=self._mean_factor(t) * x,
                                  covariance=v * np.eye(x.shape[-1]), variance=v)

    def log_density(self, y: Any, x: Any, t: float) -> np.ndarray | float:
        """``log`` of the Lebesgue density of ``P_t(x)`` at ``y`` (broadcast over leading axes)."""
        y, x = _points(y, "y"), _points(x, "x")
        _same_dim(y, x, "y", "x")
        t = _check_time(t)
        v = self._variance(t)
        d = x.shape[-1]
        sq = np.sum((y - self._mean_factor(t) * x) ** 2, axis=-1)
        out = -sq / (2.0 * v) - 0.5 * d * math.log(2.0 * math.pi * v)
        return float(out) if np.ndim(out) == 0 else out

    def log_density_grad(self, y: Any, x: Any, t: float) -> np.ndarray:
        """``grad_y log p_t(x, y) = -(y - a(t) x) / v(t)``; the same whether the density is
        taken w.r.t. Lebesgue or the invariant measure up to a term that cancels in
        ``kappa`` (it does not depend on ``x``)."""
        y, x = _points(y, "y"), _points(x, "x")
        _same_dim(y, x, "y", "x")
        t = _check_time(t)
        return -(y - self._mean_factor(t) * x) / self._variance(t)

    def sample(self, x: Any, t: float, rng: np.random.Generator) -> np.ndarray:
        """Draw ``X_t ~ P_t(x)`` exactly, independently for every point of ``x`` (shape ``(..., d)``)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        x = _points(x, "x")
        t = _check_time(t)
        return self._mean_factor(t) * x + math.sqrt(self._variance(t)) * rng.standard_normal(x.shape)

    # -- carre du champ and intrinsic sensitivity -------------------------------

    def carre_du_champ(self, f_grad: Any, g_grad: Any = None) -> np.ndarray | float:
        """``Gamma(f, g) = c <grad f, grad g>`` from the gradients (last axis);
        ``Gamma(f) = Gamma(f, f)`` when ``g_grad`` is omitted."""
        fg = _points(f_grad, "f_grad")
        gg = fg if g_grad is None else _points(g_grad, "g_grad")
        _same_dim(fg, gg, "f_grad", "g_grad")
        out = self.gamma_coefficient * np.sum(fg * gg, axis=-1)
        return float(out) if np.ndim(out) == 0 else out

    def kappa(self, x: Any, x_prime: Any, t: float, y: Any = None) -> np.ndarray | float:
        """``Gamma(log p_t(x, .) / p_t(x', .))`` at ``y`` (Theorem 6), from the gradient of the
        log density. For these Gaussian kernels the log-ratio is affine in ``y``, so the value
        does not depend on ``y`` and equals ``kappa_{x,x'}(t)`` (the sup over ``y``); ``y``
        defaults to the midpoint of the two means."""
        x, xp = _points(x, "x"), _points(x_prime, "x_prime")
        _same_dim(x, xp, "x", "x_prime")
        t = _check_time(t)
        if y is None:
            y = 0.5 * self._mean_factor(t) * (x + xp)
        grad = self.log_density_grad(y, x, t) - self.log_density_grad(y, xp, t)
        return self.carre_du_champ(grad)

    def _kappa_worst_times_s(self, s: float, sensitivity: float) -> float:
        # s * kappa(s) for the pair x = (sensitivity,), x' = (0,): Gamma of the difference of the
        # log-density gradients at y = 0 (any y gives the same value). Gamma is quadratic, so
        # s Gamma(grad) = Gamma(sqrt(s) grad), which keeps the square from underflowing at large s.
        y = np.zeros(1)
        grad = (self.log_density_grad(y, np.array([sensitivity]), s)
                - self.log_density_grad(y, np.zeros(1), s))
        return float(self.carre_du_champ(math.sqrt(s) * grad))

    def intrinsic_sensitivity(self, t: float, sensitivity: float, method: str = "closed_form", *,
                              quad_epsrel: float = QUAD_EPSREL) -> float:
        """Intrinsic sensitivity ``Lambda(t)`` of ``M_t`` for a query of global L2-sensitivity
        ``sensitivity`` (Theorem 6 of Balle et al. 2019).

        ``method="closed_form"`` uses Example 5 / Corollary 7, evaluated in log space and
        rounded up past the error of the log-sum (never 0 when ``sensitivity > 0``: an
        underflow returns the smallest positive float). ``method="quadrature"``
        integrates ``kappa_{x,x'}(s)`` over ``[t, inf)`` with ``scipy.integrate.quad``
        (after ``s = t e^u``, which turns a ``1/s^2`` tail into an exponential one, over
        ``u <= 100``: the tail beyond is a fraction ``<= t/s = e^{-100}`` of ``Lambda(t)`` for both
        semigroups, since ``(e^x - 1)/x`` increases; ``t <= 1e250`` keeps ``s`` finite), for
        the pair ``x = (sensitivity,)``, ``x' = (0,)``. That pair is the worst case in any
        dimension: ``kappa_{x,x'}(s) = c a(s)^2 ||x - x'||^2 / v(s)^2`` depends on the pair
        only through ``||x - x'|| <= sensitivity`` and increases with it. The quadrature
        value plus ``max(quad's error estimate, quad_epsrel * value)`` is rounded up (toward the
        larger epsilon); that is not a rigorous enclosure, hence closed form is the default.
        """
        t = _check_time(t)
        sens = _check_sensitivity(sensitivity)
        method = check_choice(method, "method", _METHODS)
        if method == "closed_form":
            return self._closed_form_lambda(t, sens)
        epsrel = check_positive(quad_epsrel, "quad_epsrel")
        if sens == 0.0:
            return 0.0

        if t > _QUAD_T_MAX:
            raise InvalidParameterError(
                f"t must be <= {_QUAD_T_MAX:g} for method='quadrature' (got {t!r}); use 'closed_form'")

        def integrand(u: float) -> float:
            return self._kappa_worst_times_s(t * math.exp(u), sens)

        from scipy import integrate  # imported on use

        value, abserr = integrate.quad(integrand, 0.0, _QUAD_U_MAX, epsabs=0.0, epsrel=epsrel, limit=200)
        # quad's error: its estimate, but at least the requested relative accuracy. The dropped
        # tail s > t e^{U} is at most a fraction e^{-U} (about 4e-44) of Lambda(t), far below
        # the slack round_up adds. Lambda > 0 when sensitivity > 0.
        return max(round_up(value + max(abserr, epsrel * value), 4), _TINY)

    def rdp(self, alpha: float, t: float, sensitivity: float, method: str = "closed_form") -> float:
        """RDP epsilon of ``M_t`` at order ``alpha``: ``alpha * Lambda(t)`` (Theorem 6 of Balle
        et al. 2019); rounded up. ``alpha = inf`` gives ``inf`` (``0`` when ``sensitivity = 0``)."""
        a = check_order(alpha)
        lam = self.intrinsic_sensitivity(t, sensitivity, method)
        if lam == 0.0:
            return 0.0
        return math.inf if math.isinf(a) else round_up(a * lam)


# ----------------------------------------------------------------------------- semigroups


@dataclass(frozen=True)
class BrownianMotion(_GaussianSemigroup):
    """Brownian motion ``dX = sqrt(2) dW``: ``P_t(x) = N(x, 2t I)`` (Example 4 of Balle et al. 2019).

    Generator ``L`` = Laplacian, carre du champ ``Gamma(f, g) = <grad f, grad g>``, invariant
    measure Lebesgue (so the Lebesgue density is also the symmetric kernel). ``M_t`` is the
    Gaussian mechanism with ``sigma^2 = 2t``, and Example 5 gives ``Lambda(t) = Delta^2 / (4t)``.

    Examples
    --------
    >>> bm = BrownianMotion()
    >>> round(bm.intrinsic_sensitivity(0.5, 1.0), 6), round(bm.rdp(2.0, 0.5, 1.0), 6)
    (0.5, 1.0)
    >>> round(bm.intrinsic_sensitivity(0.5, 1.0, method="quadrature"), 6)
    0.5
    """

    @property
    def gamma_coefficient(self) -> float:  # type: ignore[override]
        """``1``: ``Gamma(f, g) = <grad f, grad g>``."""
        return 1.0

    def _mean_factor(self, t: float) -> float:
        return 1.0

    def _variance(self, t: float) -> float:
        return 2.0 * t

    def drift(self, x: Any) -> np.ndarray:
        """The drift ``u(x) = 0`` of the SDE."""
        return np.zeros_like(_points(x, "x"))

    def log_symmetric_kernel(self, y: Any, x: Any, t: float) -> np.ndarray | float:
        """Density of ``P_t(x)`` w.r.t. the invariant (Lebesgue) measure: equal to :meth:`log_density`."""
        return self.log_density(y, x, t)

    def _closed_form_lambda(self, t: float, sensitivity: float) -> float:
        # Example 5: kappa(s) = Delta^2 / (4 s^2), int_t^inf ds / s^2 = 1 / t
        if sensitivity == 0.0:
            return 0.0
        return _exp_sum_up((2.0 * math.log(sensitivity), -math.log(4.0 * t)))


@dataclass(frozen=True)
class OrnsteinUhlenbeck(_GaussianSemigroup):
    """Ornstein-Uhlenbeck semigroup with parameters ``theta, rho > 0`` (Section 5.1 of Balle et al. 2019).

    ``P_t(x) = N(e^{-theta t} x, rho^2 (1 - e^{-2 theta t}) / theta I)``, generator
    ``L f = rho^2 lap f - theta <x, grad f>``, carre du champ ``Gamma(f, g) = rho^2 <grad f, grad g>``,
    invariant measure ``N(0, rho^2 / theta I)``. Corollary 7:
    ``Lambda(t) = theta Delta^2 / (2 rho^2 (e^{2 theta t} - 1))``, evaluated as
    ``theta Delta^2 e^{-2 theta t} / (2 rho^2 (1 - e^{-2 theta t}))`` in log space (no overflow).
    ``theta = 0`` is Brownian motion with diffusion ``rho^2`` and is rejected here.

    Examples
    --------
    >>> ou = OrnsteinUhlenbeck(theta=1.0, rho=1.0)
    >>> round(ou.intrinsic_sensitivity(1.0, 1.0), 6)
    0.078259
    >>> round(ou.intrinsic_sensitivity(1.0, 1.0, method="quadrature"), 6)
    0.078259
    >>> round(ou.rdp(4.0, 1.0, 1.0), 6)
    0.313035
    """

    theta: float
    rho: float

    def __post_init__(self) -> None:
        theta = check_real(self.theta, "theta")
        if theta == 0.0:
            raise InvalidParameterError(
                "theta must be > 0 (got 0.0); theta = 0 is Brownian motion, use BrownianMotion")
        object.__setattr__(self, "theta", check_positive(theta, "theta"))
        object.__setattr__(self, "rho", check_positive(self.rho, "rho"))

    @property
    def gamma_coefficient(self) -> float:  # type: ignore[override]
        """``rho^2``: ``Gamma(f, g) = rho^2 <grad f, grad g>``."""
        return self.rho * self.rho

    @property
    def invariant_variance(self) -> float:
        """Per-coordinate variance ``rho^2 / theta`` of the invariant measure."""
        return self.rho * self.rho / self.theta

    def _mean_factor(self, t: float) -> float:
        return math.exp(-self.theta * t)

    def _variance(self, t: float) -> float:
        return self.invariant_variance * -math.expm1(-2.0 * self.theta * t)

    def drift(self, x: Any) -> np.ndarray:
        """The drift ``u(x) = -theta x`` of the SDE."""
        return -self.theta * _points(x, "x")

    def log_symmetric_kernel(self, y: Any, x: Any, t: float) -> np.ndarray | float:
        """``log p_t(x, y)``: the density of ``P_t(x)`` at ``y`` w.r.t. the invariant measure
        ``N(0, rho^2/theta I)`` (symmetric in ``x, y``: Assumption 1(2))."""
        y = _points(y, "y")
        v = self.invariant_variance
        log_inv = -np.sum(y * y, axis=-1) / (2.0 * v) - 0.5 * y.shape[-1] * math.log(2.0 * math.pi * v)
        return self.log_density(y, x, t) - log_inv

    def _closed_form_lambda(self, t: float, sensitivity: float) -> float:
        if sensitivity == 0.0:
            return 0.0
        two_theta_t = 2.0 * self.theta * t
        return _exp_sum_up((math.log(self.theta), 2.0 * math.log(sensitivity), -math.log(2.0),
                            -2.0 * math.log(self.rho), -two_theta_t,
                            -math.log(-math.expm1(-two_theta_t))))

