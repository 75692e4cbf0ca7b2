"""Input mechanisms as privacy profiles ``delta(eps)``.

The privacy profile of a mechanism M is
``delta_M(eps) = sup over neighbouring (u, u') of D_{e^eps}(M_u || M_u')``
(Balle, Barthe, Gaboardi 2018): a non-increasing curve in ``eps >= 0``, and M is
``(eps, delta_M(eps))``-DP for every eps at once. The amplifier of Theorem 1 of
Balle, Barthe, Gaboardi, Geumlek 2019 consumes the input mechanism through this
curve.

Soundness conventions (every constructor below follows them):

* every ``delta`` returned is an upper bound of the exact value, rounded UP past
  its floating-point error; a value is 0 only when the exact value is 0 (for
  ``from_callable``, the user's values are taken as given);
* every ``epsilon`` returned is rounded UP: ``profile.epsilon(d)`` is the upper
  end of a search bracket of width at most ``bisection_atol + bisection_rtol * eps``
  (``BISECTION_ATOL``, ``BISECTION_RTOL``), and it always satisfies
  ``profile.delta(profile.epsilon(d)) <= d``;
* everything is evaluated in log space, so eps up to 700 (and ``math.inf``)
  works without forming ``e^eps``.

This module owns :class:`DP` and the :class:`PrivacyProfile` interface; the constructors'
closed forms live in :mod:`._families`, the ``epsilon(delta)`` search in :mod:`._inversion`,
and the exact profile of a finite mechanism in :mod:`.exact`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import (BISECTION_ATOL, BISECTION_RTOL, DOMINATING_DELTA_FLOOR, DOMINATING_GRID_POINTS, check_delta,
                         check_epsilon, check_int, check_positive)
from ..errors import InvalidParameterError
from ._families import _from_callable, _from_points, _gaussian, _laplace, _randomized_response
from ._inversion import _search_epsilon
from .dominating import DominatingPair, _grid_pair

__all__ = [
    "DP",
    "PrivacyProfile",
]


def _as_eps_array(epsilon: Any) -> np.ndarray:
    """Validate an array of eps (>= 0, inf allowed) and return it as a float ndarray."""
    try:
        arr = np.asarray(epsilon, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"epsilon must be a real number or an array of them ({exc})") from None
    if np.any(np.isnan(arr)):
        raise InvalidParameterError("epsilon must not contain NaN")
    if np.any(arr < 0):
        raise InvalidParameterError(f"epsilon must be >= 0 (got {float(arr.min())!r})")
    return arr


@dataclass(frozen=True)
class DP:
    """A black-box ``(epsilon, delta)``-DP guarantee (``epsilon`` finite, ``delta`` in [0, 1]).

    Examples
    --------
    >>> DP(1.0, 1e-6)
    DP(epsilon=1.0, delta=1e-06)
    >>> round(DP(1.0).profile.delta(0.0), 6)
    0.462117
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon", allow_inf=False))
        object.__setattr__(self, "delta", check_delta(self.delta, "delta"))

    @property
    def profile(self) -> PrivacyProfile:
        """The profile of the canonical pair (Kairouz, Oh, Viswanath 2015).

        ``alpha(eps') = delta + (1 - delta) (e^eps - e^eps')_+ / (1 + e^eps)``: the
        largest profile of ANY ``(epsilon, delta)``-DP mechanism (every such pair of
        output distributions is a post-processing of the canonical 4-point pair
        ``P = (delta, a, b, 0)``, ``Q = (0, b, a, delta)``).
        """
        return PrivacyProfile.from_points([self])

class PrivacyProfile:
    """An immutable privacy profile: a curve ``delta(eps) >= 0``, non-increasing in ``eps >= 0``.

    Build one with a constructor (``from_points``, ``from_callable``, ``pure``,
    ``laplace``, ``gaussian``, ``randomized_response``, or :func:`privacy_profile`
    for a finite mechanism). ``exact`` is True when the curve is the exact profile of
    some mechanism (then a bound derived from it pointwise is attained), False when it
    is only an upper bound.

    The low-level ``__init__`` takes ``evaluate``, a function mapping a 1-D float array
    of eps (all below ``pure_epsilon``; ``inf`` possible when ``pure_epsilon`` is) to
    rounded-up deltas in [0, 1]; answers for ``eps >= pure_epsilon`` are 0 without calling it.
    """

    __slots__ = ("_evaluate", "name", "source", "exact", "_pure_epsilon", "_dp_points", "_memo", "_pair")

    def __init__(self, evaluate: Callable[[np.ndarray], np.ndarray], *, name: str, source: str,
                 exact: bool, pure_epsilon: float = math.inf,
                 dp_points: tuple[DP, ...] | None = None,
                 pair: Callable[[], DominatingPair] | None = None) -> None:
        set_ = object.__setattr__
        set_(self, "_evaluate", evaluate)
        set_(self, "name", str(name))
        set_(self, "source", str(source))
        set_(self, "exact", bool(exact))
        set_(self, "_pure_epsilon", float(pure_epsilon))
        set_(self, "_dp_points", dp_points)
        set_(self, "_memo", {})  # scalar delta / epsilon answers (the curve is immutable)
        set_(self, "_pair", pair)  # builds the exact dominating pair, when the family has one

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot set {key!r})")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot delete {key!r})")

    def __repr__(self) -> str:
        kind = "exact" if self.exact else "upper bound"
        return (f"{type(self).__name__}({self.name!r}, {kind}, pure_epsilon={self.pure_epsilon:.6g}, "
                f"delta(0)={self.delta(0.0):.6g}, source={self.source!r})")

    # ------------------------------------------------------------------ queries
    def delta(self, epsilon: Any) -> float | np.ndarray:
        """``delta(eps)``, rounded UP; a float for scalar input, an ndarray (same shape) for arrays.

        ``eps`` may be ``math.inf`` (then the limit ``delta(inf)``: the mass one
        neighbour puts where the other puts none).
        """
        if np.ndim(epsilon) == 0:  # scalar fast path (the amplifier calls this many times)
            e = check_epsilon(epsilon[()] if isinstance(epsilon, np.ndarray) else epsilon)
            key = ("d", e)
            if key not in self._memo:
                live = e < self._pure_epsilon or math.isinf(self._pure_epsilon)
                self._remember(key, float(self._evaluate(np.array([e]))[0]) if live else 0.0)
            return self._memo[key]
        arr = _as_eps_array(epsilon)
        flat = arr.ravel()
        out = np.zeros(flat.shape)
        # eps >= pure_epsilon: delta is exactly 0 (an infinite pure_epsilon leaves every eps live)
        live = flat < self._pure_epsilon if math.isfinite(self._pure_epsilon) else np.ones(flat.shape, bool)
        if np.any(live):
            out[live] = self._evaluate(flat[live])
        return out.reshape(arr.shape)

    def _remember(self, key: tuple, value: float) -> float:
        if len(self._memo) >= 4096:
            self._memo.clear()
        self._memo[key] = value
        return value

    def epsilon(self, delta: Any, *, bisection_rtol: float = BISECTION_RTOL,
                bisection_atol: float = BISECTION_ATOL) -> float:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta``, rounded UP (``math.inf`` if none).

        A bracketing search on grids of 64 points (vectorised calls to :meth:`delta`)
        narrows ``[lo, hi]`` with ``delta(lo) > delta >= delta(hi)`` until
        ``hi - lo <= bisection_atol + bisection_rtol * hi`` and returns ``hi``; so the result always
        satisfies ``delta(result) <= delta`` and overshoots the exact answer by at
        most that width. Finite eps beyond 4096 are not searched (``math.inf`` is
        returned instead: sound, and no realistic profile needs them).

        Examples
        --------
        >>> round(PrivacyProfile.laplace(1.0).epsilon(0.1), 6)
        0.789279
        """
        target = check_delta(delta, "delta")
        rtol = check_positive(bisection_rtol, "bisection_rtol", strict=False)
        atol = check_positive(bisection_atol, "bisection_atol")
        key = ("e", target, rtol, atol)
        if key not in self._memo:
            self._remember(key, _search_epsilon(self, target, rtol, atol))
        return self._memo[key]

    def dominating_pair(self, *, epsilons: Any = None, num: int = DOMINATING_GRID_POINTS,
                        delta_floor: float = DOMINATING_DELTA_FLOOR) -> DominatingPair:
        """A :class:`DominatingPair` whose curve lies above this profile at EVERY real eps.

        For eps < 0 the profile of a symmetric neighbour relation is
        ``max H_a(M_u || M_v) = 1 - a + a delta(-eps)`` (``a = e^eps``, since
        ``H_a(P || Q) = 1 - a + a H_{1/a}(Q || P)``); every pair below covers both orders.

        * exact pairs (``pair.exact``, the curve equals the profile up to outward rounding): a finite
          mechanism (:func:`privacy_profile`: the ROC hull of every ordered neighbouring pair), a list
          of points (:meth:`from_points`: the worst case meeting every point), k-ary randomized response;
        * any other curve (Laplace, Gaussian, a callable) or explicit ``epsilons``: the pessimistic
          "connect the dots" pair of the points ``(eps_k, delta(eps_k))`` on a grid (Doroshenko, Ghazi,
          Kamath, Kumar and Manurangsi 2022), built exactly as :meth:`DominatingPair.from_points`:
          the profile meets every grid point, so it lies in the intersection of their regions, whose
          exact worst case the pair is; between grid points the curve is the chord in ``e^eps``. The
          grid has ``num`` points evenly spaced on ``[0, eps_max]``, ``eps_max`` the pure epsilon or,
          when there is none, the eps where delta falls to ``delta_floor`` (kept as infinite-loss mass).

        Examples
        --------
        >>> pair = PrivacyProfile.laplace(1.0).dominating_pair(num=64)
        >>> bool(pair.delta(0.5) >= PrivacyProfile.laplace(1.0).delta(0.5)), pair.exact
        (True, False)
        >>> PrivacyProfile.randomized_response(4, 1.0).dominating_pair().size
        3
        """
        n = check_int(num, "num", minimum=2)
        floor = check_delta(delta_floor, "delta_floor")
        if floor == 0.0:
            raise InvalidParameterError("delta_floor must be > 0 (got 0.0)")
        if epsilons is None and self._pair is not None:
            key = ("pair",)
            if key not in self._memo:
                self._remember(key, self._pair())
            return self._memo[key]
        if epsilons is None:  # the curve is immutable: its grid pair is built once
            key = ("grid pair", n, floor)
            if key not in self._memo:
                self._remember(key, _grid_pair(self, None, n, floor))
            return self._memo[key]
        return _grid_pair(self, epsilons, n, floor)

    # ------------------------------------------------------- other accountants (chainamp.accounting)
    def to_dp_accounting(self, *, value_discretization_interval: float | None = None) -> Any:
        """A pessimistic dp-accounting ``PrivacyLossDistribution`` of :meth:`dominating_pair`, to compose with
        other mechanisms in dp-accounting (:func:`chainamp.accounting.profile_to_pld`)."""
        from ..accounting import profile_to_pld

        return profile_to_pld(self, value_discretization_interval=value_discretization_interval)

    @classmethod
    def from_dp_accounting(cls, pld: Any, *, name: str = "dp-accounting privacy loss distribution") -> PrivacyProfile:
        """The certified profile of a pessimistic dp-accounting PLD (:func:`chainamp.accounting.profile_from_pld`)."""
        from ..accounting import profile_from_pld

        return profile_from_pld(pld, name=name)

    def to_opendp(self) -> Any:
        """This curve as an OpenDP privacy profile (:func:`chainamp.accounting.profile_to_opendp`; needs opendp)."""
        from ..accounting import profile_to_opendp

        return profile_to_opendp(self)

    @property
    def pure_epsilon(self) -> float:
        """Smallest eps with ``delta(eps) == 0`` (rounded up; ``math.inf`` if none)."""
        return self._pure_epsilon

    @property
    def dp_points(self) -> tuple[DP, ...] | None:
        """For :meth:`from_points`: the (non-dominated) points, sorted by epsilon; else None."""
        return self._dp_points

    # ------------------------------------------------------------- constructors
    @classmethod
    def from_points(cls, points: Iterable[DP | tuple[float, float]]) -> PrivacyProfile:
        """M satisfies ``(eps_i, delta_i)``-DP for EACH point: the exact profile of the intersection
        of the points' regions (the worst case over every such M; ``exact`` is True).

        The points together allow less than each alone: a mechanism meeting all of them has trade-off
        function at least ``f = max_i f_{eps_i, delta_i}`` (Dong, Roth and Su 2019), whose profile
        ``delta(eps) = 1 + f*(-e^eps)`` can lie well below the minimum over i of the canonical-pair
        profiles ``delta_i + (1 - delta_i)(e^eps_i - e^eps')_+/(1 + e^eps_i)`` (Kairouz, Oh, Viswanath
        2015): between two points the profile, convex in ``e^eps``, follows the chord. It is the curve
        of the pair :meth:`DominatingPair.from_points` builds (derivation there), and the value
        returned is the minimum of that curve and the single-point profiles (each a valid bound).
        Dominated points (another point has both coordinates no larger) are dropped first.

        Examples
        --------
        >>> prof = PrivacyProfile.from_points([(1.0, 0.0), (0.5, 0.01), (2.0, 0.0)])
        >>> prof.dp_points
        (DP(epsilon=0.5, delta=0.01), DP(epsilon=1.0, delta=0.0))
        >>> round(prof.delta(0.0), 6), prof.pure_epsilon
        (0.252469, 1.0)
        >>> round(prof.delta(0.7), 6)  # the point (0.5, 0.01) alone allows 0.01
        0.006587
        """
        return _from_points(cls, points, DP)

    @classmethod
    def pure(cls, epsilon: float) -> PrivacyProfile:
        """Pure ``epsilon``-DP: ``DP(epsilon).profile``, i.e. ``(e^eps - e^eps')_+/(1 + e^eps)``.

        >>> PrivacyProfile.pure(1.0).delta(1.0)
        0.0
        """
        return DP(epsilon).profile

    @classmethod
    def from_callable(cls, fn: Callable[[float], float], *, name: str, pure_epsilon: float | None = None,
                      exact: bool = False, vectorized: bool = False,
                      source: str = "user-supplied curve") -> PrivacyProfile:
        """A profile given by the user's function ``fn: eps -> delta`` (the user's claim).

        ``fn`` must return values in [0, 1] (checked at every call) and be non-increasing
        (not checkable; the user's responsibility). ``pure_epsilon`` (if given) claims
        ``delta(eps) = 0`` for ``eps >= pure_epsilon``; it is checked once, ``fn(pure_epsilon)
        == 0``. When None, no eps is assumed pure (``pure_epsilon = inf``, conservative).
        ``vectorized=True`` calls ``fn`` once on an array instead of once per point.

        Examples
        --------
        >>> prof = PrivacyProfile.from_callable(lambda e: max(0.0, 0.5 - e / 4), name="toy", pure_epsilon=2.0)
        >>> prof.delta([0.0, 1.0, 3.0]).tolist()
        [0.5, 0.25, 0.0]
        """
        return _from_callable(cls, fn, name=name, pure_epsilon=pure_epsilon, exact=exact, vectorized=vectorized,
                              source=source)

    @classmethod
    def laplace(cls, scale: float, sensitivity: float = 1.0) -> PrivacyProfile:
        """Laplace mechanism ``f(x) + Lap(scale)``, ``|f(x) - f(x')| <= sensitivity``
        (Theorem 3 of Balle, Barthe, Gaboardi 2018; exact):

        ``delta(eps) = 1 - exp((eps - eps0)/2)`` for ``eps < eps0 = sensitivity/scale``, 0 beyond.

        Derivation (checked by quadrature in the tests): the log-likelihood ratio of
        ``Lap(0, b)`` to ``Lap(D, b)`` is ``(|y - D| - |y|)/b``, decreasing from ``eps0`` to
        ``-eps0``; it exceeds eps for ``y < y* = (D - b eps)/2``, and
        ``P[Y < y*] - e^eps Q[Y < y*] = 1 - e^{-y*/b}/2 - e^eps e^{(y* - D)/b}/2 = 1 - e^{(eps - eps0)/2}``.
        ``eps0`` is rounded up first (the curve grows with eps0) and the value is rounded up.

        >>> prof = PrivacyProfile.laplace(1.0)
        >>> round(prof.delta(0.0), 6), prof.pure_epsilon
        (0.393469, 1.0)
        """
        return _laplace(cls, scale, sensitivity)

    @classmethod
    def gaussian(cls, sigma: float, sensitivity: float = 1.0) -> PrivacyProfile:
        """Gaussian mechanism ``f(x) + N(0, sigma^2)``, L2 sensitivity ``D`` (Theorem 8 of
        Balle and Wang 2018; exact):

        ``delta(eps) = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)``.

        Computed as ``exp(la) * (-expm1(eps + lb - la))`` with ``la, lb = log_ndtr(.)`` so
        no ``e^eps`` is formed. Rounding: ``mu = D/sigma`` is pushed up (the curve grows
        with mu); the value is then raised by ``10^3 u (1 + eps + |la| + |lb|)`` times
        ``exp(la)`` plus ``10^3 u (1 + |la|)`` relative (``u = 2^-53``), a generous model of
        the log_ndtr and cancellation errors; a positive exact value never underflows to 0
        (the smallest positive double is returned), so ``pure_epsilon`` is ``inf``.

        >>> prof = PrivacyProfile.gaussian(1.0)
        >>> round(prof.delta(0.0), 6), prof.delta(700.0) > 0.0
        (0.382925, True)
        """
        return _gaussian(cls, sigma, sensitivity)

    @classmethod
    def randomized_response(cls, k: int, epsilon: float) -> PrivacyProfile:
        """k-ary randomized response (keep the value w.p. ``e^eps/(e^eps + k - 1)``), exact:

        ``delta(eps') = [(e^eps - e^eps')/(e^eps + k - 1)]_+``. Derivation: for neighbours
        u != u' only the outputs u and u' differ; for ``c = e^eps' >= 1`` output u' gives
        ``[1 - c e^eps]_+ = 0``, output u gives ``(e^eps - c)_+/(e^eps + k - 1)``. Evaluated as
        ``-expm1(eps' - eps)/(1 + (k - 1) e^-eps)``; rounded up. (k = 2 is the canonical pair
        with delta = 0.)

        >>> round(PrivacyProfile.randomized_response(5, 2.0).delta(1.0), 6)
        0.410111
        """
        return _randomized_response(cls, k, epsilon)


def dp_points_of(value: Any, name: str) -> tuple | None:
    """The ``(eps, delta)`` points of ``value`` when it is a list of :class:`DP`; None when it is not a list of
    points; TypeError for the form that reads two ways.

    A nested list of 2-number rows, ``[[0.9, 0.1], [0.1, 0.9]]``, is both a list of (eps, delta) points and a
    2-column mechanism matrix, and the two readings certify very different things (the matrix above is
    (ln 9, 0)-DP with delta(0) = 0.8; the points claim much less): that form is refused with a message showing
    both explicit spellings. Points are ``DP`` objects or :meth:`PrivacyProfile.from_points`; a matrix is a
    ``MarkovOperator`` or a numpy array.

    Examples
    --------
    >>> dp_points_of([DP(1.0), DP(0.5, 1e-3)], "mechanism")
    (DP(epsilon=1.0, delta=0.0), DP(epsilon=0.5, delta=0.001))
    >>> dp_points_of([[0.9, 0.1], [0.1, 0.9]], "items[0]")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: items[0] is a nested list of pairs of numbers, [[0.9, 0.1], [0.1, 0.9]], which reads two ways: ...
    """
    if not isinstance(value, (list, tuple)) or not value:
        return None
    if all(isinstance(v, DP) for v in value):
        return tuple(value)
    rows = [v for v in value if isinstance(v, (list, tuple, np.ndarray)) and np.ndim(v) == 1 and len(v) == 2]
    if len(rows) == len(value) or any(isinstance(v, DP) for v in value):
        shown = [[float(x) for x in r] if all(isinstance(x, (int, float, np.integer, np.floating)) for x in r)
                 else list(r) for r in rows[:3]]
        more = ", ..." if len(rows) > 3 else ""
        pts = ", ".join(f"DP({a!r}, {b!r})" for a, b in shown) + more
        raw = ", ".join(repr(list(r)) for r in shown) + more
        if len(rows) != len(value):
            raise TypeError(f"{name} mixes DP points with other values ({value!r:.80}): write every point as "
                            f"DP(epsilon, delta), e.g. [{pts}]")
        raise TypeError(f"{name} is a nested list of pairs of numbers, [{raw}], which reads two ways: write "
                        f"(epsilon, delta) points as [{pts}] or PrivacyProfile.from_points([{raw}]), and a "
                        f"mechanism matrix with 2 outputs as MarkovOperator([{raw}]) or np.array([{raw}])")
    return None
