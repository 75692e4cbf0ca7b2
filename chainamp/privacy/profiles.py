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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import networkx as nx
import numpy as np
from scipy.special import log_ndtr

from .._numerics import (BISECTION_ATOL, BISECTION_RTOL, SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_delta,
                         check_epsilon, check_int, check_positive, round_up_array)
from ..errors import InvalidMechanismError, InvalidParameterError
from ..operators import MarkovOperator

__all__ = [
    "DP",
    "PrivacyProfile",
    "ExactProfile",
    "privacy_profile",
    "neighbor_pairs",
]

_TINY = SMALLEST_SUBNORMAL  # a positive exact value rounds UP to at least this
_EPS_SEARCH_MAX = 4096.0  # no finite eps beyond this is searched by PrivacyProfile.epsilon


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

    __slots__ = ("_evaluate", "name", "source", "exact", "_pure_epsilon", "_dp_points", "_memo")

    def __init__(self, evaluate: Callable[[np.ndarray], np.ndarray], *, name: str, source: str,
                 exact: bool, pure_epsilon: float = math.inf,
                 dp_points: tuple[DP, ...] | None = None) -> None:
        set_ = object.__setattr__
        set_(self, "_evaluate", evaluate)
        set_(self, "name", str(name))
        set_(self, "source", str(source))
        set_(self, "exact", bool(exact))
        set_(self, "_pure_epsilon", float(pure_epsilon))
        set_(self, "_dp_points", dp_points)
        set_(self, "_memo", {})  # scalar delta / epsilon answers (the curve is immutable)

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
            self._remember(key, self._search_epsilon(target, rtol, atol))
        return self._memo[key]

    def _search_epsilon(self, target: float, rtol: float, atol: float) -> float:
        if target == 0.0:
            return self._pure_epsilon
        if self.delta(0.0) <= target:
            return 0.0
        hi = min(self._pure_epsilon, _EPS_SEARCH_MAX)
        if self.delta(hi) > target:
            return math.inf
        lo = 0.0
        while hi - lo > atol + rtol * hi:
            grid = np.linspace(lo, hi, 66)[1:-1]
            ok = self.delta(grid) <= target
            first = int(np.argmax(ok)) if np.any(ok) else grid.size
            new_lo = lo if first == 0 else float(grid[first - 1])
            new_hi = hi if first == grid.size else float(grid[first])
            if (new_lo, new_hi) == (lo, hi):
                break
            lo, hi = new_lo, new_hi
        return hi

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
        """M satisfies ``(eps_i, delta_i)``-DP for each point: the profile is the minimum over i
        of the canonical-pair profiles ``delta_i + (1 - delta_i)(e^eps_i - e^eps')_+/(1 + e^eps_i)``.

        Sound: every ``(eps_i, delta_i)``-DP pair is a post-processing of the canonical pair
        (Kairouz, Oh, Viswanath 2015), so its profile lies below that pair's profile at every
        eps', hence below their minimum. The canonical profile increases in both eps_i and
        delta_i, so dominated points (another point has both coordinates no larger) are
        dropped. ``exact`` is True only for a single remaining point (the canonical pair is a
        mechanism attaining it).

        Examples
        --------
        >>> prof = PrivacyProfile.from_points([(1.0, 0.0), (0.5, 0.01), (2.0, 0.0)])
        >>> prof.dp_points
        (DP(epsilon=0.5, delta=0.01), DP(epsilon=1.0, delta=0.0))
        >>> round(prof.delta(0.0), 6), prof.pure_epsilon
        (0.252469, 1.0)
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

        def evaluate(eps: np.ndarray) -> np.ndarray:
            return np.min([_canonical_delta(e, d, eps) for e, d in zip(eps0, del0)], axis=0)

        pure = min((p.epsilon for p in front if p.delta == 0.0), default=math.inf)
        name = ", ".join(f"({p.epsilon:g}, {p.delta:g})" for p in front) + "-DP"
        return cls(evaluate, name=name, exact=len(front) == 1, pure_epsilon=pure, dp_points=tuple(front),
                   source="canonical pair (Kairouz, Oh, Viswanath 2015); minimum over the points")

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
            out[fin] = np.minimum(np.maximum(val, _TINY), 1.0)
            return out  # eps = inf: the two Gaussians share their support, delta(inf) = 0

        return cls(evaluate, name=f"Gaussian(sigma={sg:g}, sensitivity={D:g})", exact=True,
                   source="Gaussian (Balle and Wang 2018, Theorem 8)")

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
        kk = check_int(k, "k", minimum=2)
        e0 = check_epsilon(epsilon, "epsilon", allow_inf=False)

        def evaluate(eps: np.ndarray) -> np.ndarray:
            with np.errstate(over="ignore", invalid="ignore"):
                frac = -np.expm1(np.minimum(eps - e0, 0.0)) / (1.0 + (kk - 1) * math.exp(-e0))
            return round_up_array(frac, 16, upper=1.0)

        return cls(evaluate, name=f"{kk}-ary randomized response(epsilon={e0:g})", exact=True,
                   pure_epsilon=e0, source="k-ary randomized response (exact closed form)")


# ---------------------------------------------------------------------------
# exact profile of a finite mechanism

def neighbor_pairs(labels: Iterable[Hashable], neighbors: Any = None) -> np.ndarray:
    """Index pairs ``(i, j)`` of neighbouring inputs, both directions, sorted, no self-pairs.

    ``neighbors``: None (all ordered pairs: local DP), a networkx Graph over the labels
    (its edges; a DiGraph's edges count in both directions too), or an iterable of label
    pairs. An unknown label, a self-loop or an empty relation raises
    InvalidMechanismError naming the label.

    >>> neighbor_pairs(["a", "b", "c"], [("a", "b")]).tolist()
    [[0, 1], [1, 0]]
    """
    labs = tuple(labels)
    index = {lab: i for i, lab in enumerate(labs)}
    if neighbors is None:
        n = len(labs)
        ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        mask = ii != jj
        out = np.stack([ii[mask], jj[mask]], axis=1)
        if out.size == 0:
            raise InvalidMechanismError(f"the neighbour relation is empty: only {n} input label(s) {labs!r}")
        return out
    if isinstance(neighbors, nx.Graph):
        for node in neighbors.nodes:
            if node not in index:
                raise InvalidMechanismError(f"neighbour graph has node {node!r} that is not an input label")
        edges: Iterable = neighbors.edges()
    elif isinstance(neighbors, (str, bytes)) or not isinstance(neighbors, Iterable):
        raise TypeError(f"neighbors must be None, a networkx Graph or an iterable of label pairs, got {neighbors!r}")
    else:
        edges = neighbors
    found: set[tuple[int, int]] = set()
    for edge in edges:
        try:
            a, b = edge
        except (TypeError, ValueError):
            raise InvalidMechanismError(f"each neighbour pair must be a pair of labels, got {edge!r}") from None
        for lab in (a, b):
            try:
                known = lab in index
            except TypeError:
                known = False
            if not known:
                raise InvalidMechanismError(f"neighbour pair {edge!r} has unknown input label {lab!r}")
        if index[a] == index[b]:
            raise InvalidMechanismError(f"neighbour pair {edge!r} is a self-loop on label {a!r}")
        found.add((index[a], index[b]))
        found.add((index[b], index[a]))
    if not found:
        raise InvalidMechanismError("the neighbour relation is empty (no pair of input labels given)")
    return np.array(sorted(found), dtype=np.intp).reshape(-1, 2)


class ExactProfile(PrivacyProfile):
    """Exact privacy profile of a finite mechanism (a row-stochastic matrix; ``exact=True``).

    Built by :func:`privacy_profile`. ``labels`` are the mechanism's input labels,
    ``pairs`` the ``(k, 2)`` index pairs of neighbours considered (both directions).
    """

    __slots__ = ("labels", "pairs", "_rows", "_a", "_pre_u", "_pre_v", "_suf_u", "_suf_v",
                 "_llr_err", "_inf_u", "_inf_v", "_m")

    def __init__(self, **state: Any) -> None:
        super().__init__(self._eval_max, name=state.pop("name"), source=state.pop("source"), exact=True,
                         pure_epsilon=state.pop("pure_epsilon"))
        for key, value in state.items():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
            object.__setattr__(self, key, value)

    def _values(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per unordered pair (rows) and eps (columns): upper bounds of ``D_{e^eps}(M_u || M_v)``
        and ``D_{e^eps}(M_v || M_u)``. See :func:`privacy_profile` for the error model."""
        nrows, E = self._rows.shape[0], eps.size
        vu, vv = np.empty((nrows, E)), np.empty((nrows, E))
        inf = np.isinf(eps)
        vu[:, inf] = self._inf_u[:, None]
        vv[:, inf] = self._inf_v[:, None]
        e = eps[~inf]
        if e.size:
            fin = ~inf
            d = self._llr_err
            left_q = np.concatenate([-e, -(e + d), -(e - d)])
            right_q = np.concatenate([e, e + d, e - d])
            # a[r] ascending: count(llr > t) = count(a < -t) = searchsorted(a, -t, "left")
            if nrows * self._m * left_q.size <= 1 << 15:  # small: one broadcast comparison
                L = np.count_nonzero(self._a[:, None, :] < left_q[None, :, None], axis=2)
                R = np.count_nonzero(self._a[:, None, :] <= right_q[None, :, None], axis=2)
            else:
                L = np.empty((nrows, 3 * e.size), dtype=np.intp)
                R = np.empty((nrows, 3 * e.size), dtype=np.intp)
                for r in range(nrows):
                    L[r] = np.searchsorted(self._a[r], left_q, side="left")
                    R[r] = np.searchsorted(self._a[r], right_q, side="right")
            n = e.size
            vu[:, fin] = self._direction(self._pre_u, self._pre_v, L[:, :n], L[:, n:2 * n], L[:, 2 * n:], e)
            vv[:, fin] = self._direction(self._suf_v, self._suf_u, R[:, :n], R[:, n:2 * n], R[:, 2 * n:], e)
        return vu, vv

    def _direction(self, num: np.ndarray, den: np.ndarray, k: np.ndarray, k_lo: np.ndarray,
                   k_hi: np.ndarray, e: np.ndarray) -> np.ndarray:
        """``[P_S - e^eps Q_S]_+`` over the computed set S (index k into the partial sums ``num``,
        ``den``), made an upper bound of the exact divergence up to one final relative rounding
        (applied by the caller after the maximum; rounding up is monotone, so it commutes with it);
        ``k_lo``/``k_hi`` index the band of outcomes whose computed log-ratio is within
        ``llr_err`` of eps."""
        u, m = UNIT_ROUNDOFF, self._m
        offs = (np.arange(k.shape[0]) * (m + 1))[:, None]
        flat_num, flat_den = num.ravel(), den.ravel()
        P, Q = flat_num[k + offs], flat_den[k + offs]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            logQ = np.log(Q)  # -inf where Q = 0
            cQ = np.exp(e + logQ)  # 0 where Q = 0, inf on overflow
            shrink = 1.0 - u * (2.0 * e + 10.0 * np.abs(np.where(Q > 0, logQ, 0.0)) + m + 16)
            B = cQ * np.maximum(shrink, 0.0)
            B[shrink <= 0] = 0.0  # no usable lower bound of e^eps Q: drop it (also avoids inf * 0)
            X = np.maximum(P * (1.0 + (m + 4) * u) - B, 0.0)
        # X is exact up to one relative rounding of the subtraction (covered by the caller's round-up)
        band = k_hi != k_lo
        if np.any(band):
            hi, lo = flat_num[(k_hi + offs)[band]], flat_num[(k_lo + offs)[band]]
            X[band] += 2.0 * self._llr_err * (np.abs(hi - lo) + (m + 2) * u * hi)
        return X

    def _eval_max(self, eps: np.ndarray) -> np.ndarray:
        out = np.empty(eps.size)
        step = max(1, (1 << 20) // max(1, self._rows.shape[0]))  # bounds the (pairs x eps) temporaries
        for start in range(0, eps.size, step):
            vu, vv = self._values(eps[start:start + step])
            out[start:start + step] = np.maximum(vu.max(axis=0), vv.max(axis=0))
        # the subtraction in X and the band addition each add one relative rounding
        return round_up_array(out, 6, upper=1.0)

    def witness(self, epsilon: float) -> tuple:
        """The neighbouring pair ``(u, u')`` of input labels attaining ``delta(epsilon)``
        (some pair attaining the maximum of the computed bounds; any pair when delta is 0).

        >>> prof = privacy_profile([[0.75, 0.25], [0.5, 0.5]], neighbors=None)
        >>> prof.witness(0.1)  # D(M_1 || M_0) = 0.5 - e^0.1 0.25 beats D(M_0 || M_1)
        (1, 0)
        """
        eps = check_epsilon(epsilon)
        vu, vv = self._values(np.array([eps]))
        ru, rv = int(np.argmax(vu[:, 0])), int(np.argmax(vv[:, 0]))
        i, j = self._rows[ru] if vu[ru, 0] >= vv[rv, 0] else self._rows[rv][::-1]
        return (self.labels[int(i)], self.labels[int(j)])


def _row_chunks(n_rows: int, m: int, budget: int = 1 << 17) -> Iterable[slice]:
    step = max(1, budget // max(m, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


def privacy_profile(M: Any, neighbors: Any = None, *, name: str | None = None) -> ExactProfile:
    """Exact privacy profile of a finite mechanism: ``delta(eps) = max over neighbouring (u, u')
    of D_{e^eps}(M_u || M_u')`` (both orders of every pair count).

    ``M`` is a :class:`~chainamp.operators.MarkovOperator` or a row-stochastic matrix (rows =
    data values, columns = outputs); ``neighbors`` is None (all pairs: local DP, so this is an
    LDP audit of any channel), a networkx Graph over M's input labels, or a list of label pairs.

    Method: for each unordered pair the outcomes are sorted once by the log-likelihood ratio
    ``l_y = log M_u(y) - log M_u'(y)``; with partial sums ``P, Q`` of ``M_u, M_u'`` in that order,
    ``D_{e^eps}(M_u || M_u') = P_k - e^eps Q_k`` where k counts the outcomes with ``l_y > eps``
    (a prefix), and the reverse direction is the matching suffix. Each eps then costs a binary
    search per pair. Memory: ``40 * outputs`` bytes per unordered pair, kept for later queries
    (about 200 MB for 100 inputs x 1000 outputs, all pairs). Outputs no compared row can
    produce are dropped first.

    Rounding (all toward larger delta): computed log-ratios are within
    ``llr_err = 32 u max|log M(y)|`` of the exact ones (``u = 2^-53``; this allows 4-ulp
    library logarithms); an outcome on the wrong
    side of eps changes the sum by at most ``2 llr_err M_u(y)``, so the mass of the outcomes
    whose computed ratio is within ``llr_err`` of eps is added with that weight. Partial sums
    are inflated by ``(m + 4) u`` relative, ``e^eps Q_k`` (computed as ``exp(eps + log Q_k)``)
    deflated by ``u (2 eps + 10 |log Q_k| + m + 16)`` relative, and the maximum over pairs is
    rounded up once more. ``pure_epsilon`` is the largest computed finite log-ratio plus
    ``2 llr_err`` (0 when all compared rows are equal, inf when a support differs); delta is 0
    from there on.

    Examples
    --------
    >>> rr = [[0.75, 0.25], [0.25, 0.75]]
    >>> prof = privacy_profile(rr)
    >>> round(prof.delta(0.0), 6), round(prof.pure_epsilon, 6)
    (0.5, 1.098612)
    """
    op = M if isinstance(M, MarkovOperator) else MarkovOperator(M)
    labels = op.inputs
    pairs = neighbor_pairs(labels, neighbors)
    rows = pairs[pairs[:, 0] < pairs[:, 1]]
    P = np.asarray(op.matrix, dtype=float)
    used = np.unique(rows)
    P = P[:, np.any(P[used] > 0, axis=0)]
    m = P.shape[1]
    pos = P[used][P[used] > 0]
    llr_err = 32.0 * UNIT_ROUNDOFF * float(np.max(np.abs(np.log(pos))))
    nrows = rows.shape[0]
    a = np.empty((nrows, m))
    pre_u, pre_v, suf_u, suf_v = (np.zeros((nrows, m + 1)) for _ in range(4))
    inf_u, inf_v = np.empty(nrows), np.empty(nrows)
    top = -math.inf
    with np.errstate(divide="ignore"):
        logP = np.log(P)
    for sl in _row_chunks(nrows, m):
        ri, rj = rows[sl, 0], rows[sl, 1]
        with np.errstate(invalid="ignore"):
            neg = logP[rj] - logP[ri]  # -log(M_u/M_v); NaN where both vanish
        neg[np.isnan(neg)] = 0.0
        order = np.argsort(neg, axis=1)
        a[sl] = np.take_along_axis(neg, order, axis=1)
        ps, qs = P[ri[:, None], order], P[rj[:, None], order]
        np.cumsum(ps, axis=1, out=pre_u[sl, 1:])
        np.cumsum(qs, axis=1, out=pre_v[sl, 1:])
        np.cumsum(ps[:, ::-1], axis=1, out=suf_u[sl, m - 1::-1])
        np.cumsum(qs[:, ::-1], axis=1, out=suf_v[sl, m - 1::-1])
        # outcomes only M_u produces sort first (a = -inf), only M_v produces last (a = +inf)
        n_lo = np.count_nonzero(a[sl] == -math.inf, axis=1)
        n_hi = np.count_nonzero(a[sl] == math.inf, axis=1)
        idx = np.arange(n_lo.size)
        inf_u[sl] = round_up_array(pre_u[sl][idx, n_lo], m, upper=1.0)
        inf_v[sl] = round_up_array(suf_v[sl][idx, m - n_hi], m, upper=1.0)
        if np.any(n_lo > 0) or np.any(n_hi > 0):
            top = math.inf
        elif top < math.inf:  # largest finite log-ratio, either direction
            top = max(top, float(np.max(-a[sl, 0])), float(np.max(a[sl, m - 1])))
    if math.isinf(top):
        pure = math.inf
    elif top <= 0.0 and all(np.array_equal(P[i], P[j]) for i, j in rows):
        pure = 0.0  # every compared pair of rows is identical
    else:
        pure = math.nextafter(max(top, 0.0) + 2.0 * llr_err, math.inf)
    label = name if name is not None else f"finite mechanism ({len(labels)} inputs x {op.shape[1]} outputs, " \
        f"{'all pairs' if neighbors is None else f'{pairs.shape[0] // 2} neighbour pairs'})"
    return ExactProfile(name=label, source="exact: max over neighbouring pairs of the hockey-stick divergence",
                        pure_epsilon=pure, labels=labels, pairs=pairs, _rows=rows, _a=a, _pre_u=pre_u,
                        _pre_v=pre_v, _suf_u=suf_u, _suf_v=suf_v, _llr_err=llr_err, _inf_u=inf_u,
                        _inf_v=inf_v, _m=m)
