"""Closed forms of the privacy-profile families: the bodies of the constructors of
:class:`~chainamp.privacy.PrivacyProfile`, which delegate here.

* the canonical pair of an ``(epsilon, delta)``-DP point (Kairouz, Oh, Viswanath 2015) and the
  minimum over several points (``from_points``, hence ``pure`` and ``DP.profile``);
* a user-supplied curve (``from_callable``);
* the Laplace mechanism (Theorem 3 of Balle, Barthe, Gaboardi 2018), the Gaussian mechanism
  (Theorem 8 of Balle and Wang 2018) and k-ary randomized response, all exact.

Each function takes the class to build (``cls``) and returns ``cls(evaluate, ...)``; the
derivation and the rounding of each closed form are documented on its constructor in
:mod:`.profiles`, whose soundness conventions every ``evaluate`` here follows (values rounded
UP, evaluated in log space without forming ``e^eps``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import numpy as np

from .._numerics import log_ndtr, SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_epsilon, check_int, check_positive, round_up_array
from ..errors import InvalidMechanismError
from ._roc import _exp_up, _masses_from_fractions
from .dominating import DominatingPair

__all__: list[str] = []

_TINY = SMALLEST_SUBNORMAL  # a positive exact value rounds UP to at least this


def _canonical_delta(eps0: float, delta0: float, eps: np.ndarray) -> np.ndarray:
    """Canonical-pair profile at ``eps`` (1-D, may hold inf), rounded up.

    For ``eps' < eps0``: ``(e^eps0 - e^eps')/(1 + e^eps0) = -expm1(eps' - eps0) / (1 + e^-eps0)``,
    which never forms ``e^eps0``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        frac = np.where(eps < eps0, -np.expm1(np.minimum(eps - eps0, 0.0)) / (1.0 + math.exp(-eps0)), 0.0)
    vals = delta0 + (1.0 - delta0) * frac
    out = round_up_array(vals, 16, upper=1.0)
    return np.where(frac > 0.0, out, delta0)  # delta0 alone is exact


def _from_points(cls: Any, points: Iterable, DP: type) -> Any:  # noqa: N803 (the DP class of .profiles)
    """Body of ``PrivacyProfile.from_points``: the minimum of the canonical-pair profiles of the points.

    ``DP`` is the point class, passed in by the caller: it lives beside ``PrivacyProfile``
    (``DP.profile`` is this family), which imports this module.
    """
    if isinstance(points, (DP, str)) or not isinstance(points, Iterable):
        raise TypeError(f"points must be an iterable of DP or (epsilon, delta) pairs, got {points!r}")
    pts: list[DP] = []
    for p in points:
        if isinstance(p, DP):
            pts.append(p)
            continue
        try:
            e, d = p
        except (TypeError, ValueError):
            raise InvalidMechanismError(f"each point must be a DP or an (epsilon, delta) pair, got {p!r}") from None
        pts.append(DP(e, d))
    if not pts:
        raise InvalidMechanismError("points must contain at least one (epsilon, delta) point")
    front = sorted({p for p in pts if not any(q != p and q.epsilon <= p.epsilon and q.delta <= p.delta
                                               for q in pts)}, key=lambda p: (p.epsilon, p.delta))
    eps0 = np.array([p.epsilon for p in front])
    del0 = np.array([p.delta for p in front])
    pair_pts = [(p.epsilon, p.delta) for p in front]
    name = ", ".join(f"({p.epsilon:g}, {p.delta:g})" for p in front) + "-DP"

    def make_pair() -> DominatingPair:
        return DominatingPair.from_points(pair_pts, name=name)

    if len(front) == 1:
        def evaluate(eps: np.ndarray) -> np.ndarray:
            return _canonical_delta(eps0[0], del0[0], eps)
        source = "canonical pair (Kairouz, Oh, Viswanath 2015)"
    else:
        joint = make_pair()

        def evaluate(eps: np.ndarray) -> np.ndarray:
            # the intersection's exact profile; never above any single point's canonical profile (the
            # minimum also absorbs the looser lines the pair drops for eps_i > 1e4)
            single = np.min([_canonical_delta(e, d, eps) for e, d in zip(eps0, del0)], axis=0)
            return np.minimum(joint.delta(eps), single)
        source = "intersection of the points' regions (exact worst case; Dong, Roth, Su 2019 trade-off functions)"

    pure = min((p.epsilon for p in front if p.delta == 0.0), default=math.inf)
    return cls(evaluate, name=name, exact=True, pure_epsilon=pure, dp_points=tuple(front), source=source,
               pair=make_pair)


def _from_callable(cls: Any, fn: Callable[[float], float], *, name: str, pure_epsilon: float | None,
                   exact: bool, vectorized: bool, source: str) -> Any:
    """Body of ``PrivacyProfile.from_callable``: the user's curve, range-checked at every call."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")

    def evaluate(eps: np.ndarray) -> np.ndarray:
        if vectorized:
            vals = np.asarray(fn(eps), dtype=float)
            if vals.shape != eps.shape:
                raise InvalidMechanismError(f"profile {name!r}: fn returned shape {vals.shape} "
                                            f"for input of shape {eps.shape}")
        else:
            vals = np.array([float(fn(float(e))) for e in eps])
        bad = np.isnan(vals) | (vals < 0) | (vals > 1)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise InvalidMechanismError(f"profile {name!r}: fn({eps[i]!r}) = {vals[i]!r} is not in [0, 1]")
        return vals

    pure = math.inf
    if pure_epsilon is not None:
        pure = check_epsilon(pure_epsilon, "pure_epsilon")
        if math.isfinite(pure) and evaluate(np.array([pure]))[0] != 0.0:
            raise InvalidMechanismError(f"profile {name!r}: pure_epsilon={pure!r} but fn({pure!r}) != 0")
    return cls(evaluate, name=name, source=source, exact=bool(exact), pure_epsilon=pure)


def _laplace(cls: Any, scale: float, sensitivity: float) -> Any:
    """Body of ``PrivacyProfile.laplace``: ``1 - exp((eps - eps0)/2)`` below ``eps0 = sensitivity/scale``."""
    b = check_positive(scale, "scale")
    s = check_positive(sensitivity, "sensitivity")
    eps0 = s / b
    # the division is correctly rounded, possibly DOWN; the float check ``eps0 * b != s`` cannot see
    # that (the product rounds too: 3 * (1/3 rounded down) == 1.0), so compare exact rationals
    if math.isfinite(eps0) and Fraction(eps0) * Fraction(b) < Fraction(s):
        eps0 = math.nextafter(eps0, math.inf)

    def evaluate(eps: np.ndarray) -> np.ndarray:
        # every eps here is < eps0 (delta() answers eps >= pure_epsilon with 0)
        return round_up_array(-np.expm1((eps - eps0) / 2.0), 16, upper=1.0)

    return cls(evaluate, name=f"Laplace(scale={b:g}, sensitivity={s:g})", exact=True, pure_epsilon=eps0,
               source="Laplace (Balle, Barthe, Gaboardi 2018, Theorem 3)")


def _gaussian(cls: Any, sigma: float, sensitivity: float) -> Any:
    """Body of ``PrivacyProfile.gaussian``: Theorem 8 of Balle and Wang 2018 in log space, rounded up."""
    sg = check_positive(sigma, "sigma")
    D = check_positive(sensitivity, "sensitivity")
    mu = math.nextafter(D / sg, math.inf)
    u = UNIT_ROUNDOFF

    def evaluate(eps: np.ndarray) -> np.ndarray:
        out = np.zeros(eps.shape)
        fin = np.isfinite(eps)
        e = eps[fin]
        with np.errstate(all="ignore"):
            la = log_ndtr(mu / 2.0 - e / mu)
            lb = log_ndtr(-mu / 2.0 - e / mu)
            diff = np.minimum(e + lb - la, 0.0)
            base = np.exp(la)
            val = base * -np.expm1(diff)
            # lb = -inf (mu beyond ~4e154: almost no noise): the second term is dropped (diff = -inf), which
            # only raises the value, so |lb| must not enter the error (it made err = inf and the value _TINY)
            lb_mag = np.where(np.isfinite(lb), np.abs(lb), 0.0)
            err = base * (1e3 * u) * (1.0 + e + np.abs(la) + lb_mag) + val * (1e3 * u) * (1.0 + np.abs(la))
            val = np.nextafter(val + err, np.inf)
        val = np.where(np.isfinite(val), val, 1.0)  # any other overflow: the trivial bound, never a small one
        # la = -inf (eps beyond ~1e150 mu): the exact value is positive but below any double
        val = np.where(np.isfinite(la), val, _TINY)
        val = np.minimum(val, _gaussian_small_mu(mu, e))
        out[fin] = np.minimum(np.maximum(val, _TINY), 1.0)
        return out  # eps = inf: the two Gaussians share their support, delta(inf) = 0

    return cls(evaluate, name=f"Gaussian(sigma={sg:g}, sensitivity={D:g})", exact=True,
               source="Gaussian (Balle and Wang 2018, Theorem 8)")


def _gaussian_small_mu(mu: float, e: np.ndarray) -> np.ndarray:
    """An upper bound of the Gaussian profile that stays tight when ``mu = sensitivity / sigma`` is small.

    The log-space form above carries an absolute error of about ``1e3 u Phi(a)``: at sigma = 1e300
    it gives 1.3e-13 at eps = 0, where the value is ``2 Phi(mu/2) - 1`` = 4e-301. With
    ``a = mu/2 - eps/mu`` and ``b = a - mu``, ``delta = (Phi(a) - Phi(b)) - (e^eps - 1) Phi(b)`` and
    ``Phi(a) - Phi(b)`` is the integral of the normal density over ``[b, a]``, an interval of length
    mu: at most ``mu phi(t*)`` with ``t*`` the point of ``[b, a]`` nearest 0. Each rounding moves the
    bound up: ``|t*|`` taken 8 ulps low, ``b`` 8 ulps further from 0 before ``Phi(b)`` is taken, whose
    logarithm (``log_ndtr``) is trusted to ``1e3 u (1 + |log Phi(b)|)`` as above.
    """
    u = UNIT_ROUNDOFF
    with np.errstate(all="ignore"):
        a = mu / 2.0 - e / mu
        b = -mu / 2.0 - e / mu
        near = np.where((a >= 0.0) & (b <= 0.0), 0.0, np.minimum(np.abs(a), np.abs(b)) * (1.0 - 8 * u))
        mass = mu * np.exp(-0.5 * near * near) / math.sqrt(2.0 * math.pi) * (1.0 + 16 * u)
        lb = log_ndtr(b * (1.0 + 8 * u))
        phi_b = np.maximum(np.exp(lb) * (1.0 - 1e3 * u * (1.0 + np.abs(lb))), 0.0)
        cap = (mass - np.expm1(e) * (1.0 - 8 * u) * phi_b) * (1.0 + 8 * u)
    cap = np.where(np.isfinite(cap), np.nextafter(np.maximum(cap, 0.0), np.inf), 1.0)
    return np.maximum(cap, _TINY)


def _randomized_response(cls: Any, k: int, epsilon: float) -> Any:
    """Body of ``PrivacyProfile.randomized_response``: ``[(e^eps - e^eps')/(e^eps + k - 1)]_+``."""
    kk = check_int(k, "k", minimum=2)
    e0 = check_epsilon(epsilon, "epsilon", allow_inf=False)

    def evaluate(eps: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            frac = -np.expm1(np.minimum(eps - e0, 0.0)) / (1.0 + (kk - 1) * math.exp(-e0))
        return round_up_array(frac, 16, upper=1.0)

    def make_pair() -> DominatingPair:
        # outcomes u, u' and the k - 2 others (one merged outcome, ratio 1); e^eps rounded UP, which only
        # raises the curve at every a (1 - a + a H_{1/a} for a < 1), exact rationals, p up and q down
        big = _exp_up(e0)
        z = big + (kk - 1)
        p, q = _masses_from_fractions([big / z, 1 / z, (kk - 2) / z], [1 / z, big / z, (kk - 2) / z])
        return DominatingPair(p, q, name=f"{kk}-ary randomized response(epsilon={e0:g})", exact=True)

    return cls(evaluate, name=f"{kk}-ary randomized response(epsilon={e0:g})", exact=True,
               pure_epsilon=e0, source="k-ary randomized response (exact closed form)", pair=make_pair)
