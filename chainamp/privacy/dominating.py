"""Dominating pairs: one pair of distributions whose hockey-stick curve bounds a whole privacy profile.

A pair ``(P, Q)`` over a finite outcome set *dominates* a mechanism M when
``H_{e^eps}(P || Q) >= sup over neighbouring (x, x') of H_{e^eps}(M_x || M_x')`` for EVERY real eps
(``H_a(P || Q) = sum_y [P_y - a Q_y]_+``); then the product of dominating pairs dominates any
composition of the mechanisms, adaptive included (Zhu, Dong and Wang 2022, Theorem 10), which is
what privacy-loss-distribution accountants compose.

Every pair here comes from an upper concave ROC chain (see :mod:`._roc`): the points
``(Q(S), P(S))`` over sets of outcomes, whose hull determines ``H_a = max_S P(S) - a Q(S)``:

* a finite mechanism (:meth:`ExactProfile.dominating_pair`): the hull of the ROC points of every
  ordered neighbouring pair, so the pair's curve IS the profile (exact), negative eps included;
* a list of ``(eps_i, delta_i)`` points (:meth:`DominatingPair.from_points`): the largest ROC curve
  allowed by every point in both orders, ``U(s) = min(1, min_i e^eps_i s + delta_i,
  1 - e^-eps_i (1 - delta_i - s))``, the exact worst case over all mechanisms meeting every point
  (the intersection of their regions, trade-off function ``max_i f_{eps_i, delta_i}``);
* any other profile ``delta(eps)``: the points ``(eps_k, delta(eps_k))`` of a grid, i.e. the
  pessimistic "connect the dots" pair of Doroshenko, Ghazi, Kamath, Kumar and Manurangsi 2022.

Soundness: P-masses are rounded up and Q-masses down (the curve grows with each ``P_y`` and shrinks
with each ``Q_y``), and :meth:`DominatingPair.delta` rounds its value up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numerics import (SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_delta, check_distribution, fmt_number,
                         round_up_array)
from ..errors import InvalidMechanismError, InvalidParameterError
from ._roc import _fraction_chain_masses, _intersection_vertices, _masses_from_vertices, _upper_hull

__all__ = ["DominatingPair"]

_EPS_FINITE_MAX = 1000.0  # beyond this no finite float log-ratio exists (|log(p/q)| <= 745)


def _as_real_array(epsilon: Any) -> np.ndarray:
    try:
        arr = np.asarray(epsilon, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"epsilon must be a real number or an array of them ({exc})") from None
    if np.any(np.isnan(arr)):
        raise InvalidParameterError(f"epsilon must not contain NaN (got {epsilon!r})")
    return arr


@dataclass(frozen=True, eq=False)
class DominatingPair:
    """A pair of distributions ``p``, ``q`` over a finite outcome set whose hockey-stick curve
    ``delta(eps) = H_{e^eps}(p || q) = sum_y [p_y - e^eps q_y]_+`` dominates a privacy profile for every
    real eps (Zhu, Dong and Wang 2022).

    ``p`` and ``q`` are read-only arrays of the same length, non-negative, each summing to 1 within
    1e-12; an outcome with ``q_y = 0 < p_y`` (privacy loss ``+inf``) or ``p_y = 0 < q_y`` is allowed.
    ``exact`` says the curve equals the profile it was built from (up to outward rounding); ``name``
    says what it dominates. Build one with :meth:`from_points`, :meth:`from_roc` or
    :meth:`PrivacyProfile.dominating_pair <chainamp.privacy.PrivacyProfile.dominating_pair>`.

    Examples
    --------
    >>> pair = DominatingPair([0.75, 0.25], [0.25, 0.75], name="binary RR")
    >>> pair.delta([0.0, math.log(2), -math.log(3)]).round(6).tolist()
    [0.5, 0.25, 0.666667]
    >>> round(pair.epsilon(0.25), 6)
    0.693147
    """

    p: np.ndarray
    q: np.ndarray
    name: str = "dominating pair"
    exact: bool = False
    _sorted: tuple = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        p = check_distribution(self.p, "p", atol=1e-12).copy()
        q = check_distribution(self.q, "q", size=p.size, atol=1e-12).copy()
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {self.name!r}")
        p.setflags(write=False)
        q.setflags(write=False)
        set_ = object.__setattr__
        set_(self, "p", p)
        set_(self, "q", q)
        set_(self, "exact", bool(self.exact))
        keep = p > 0
        pk, qk = p[keep], q[keep]
        with np.errstate(divide="ignore"):
            lp, lq = np.log(pk), np.log(qk)
        llr = lp - lq  # +inf where q = 0
        order = np.argsort(-llr, kind="stable")
        llr_s = llr[order]
        P = np.concatenate(([0.0], np.cumsum(pk[order])))
        Q = np.concatenate(([0.0], np.cumsum(qk[order])))
        logs = np.abs(np.concatenate((lp, lq[np.isfinite(lq)])))
        d_llr = 32.0 * UNIT_ROUNDOFF * (float(logs.max(initial=0.0)) + 1.0)
        set_(self, "_sorted", (llr_s, P, Q, d_llr, int(np.count_nonzero(np.isposinf(llr_s)))))

    # ------------------------------------------------------------------ queries
    @property
    def size(self) -> int:
        """Number of outcomes."""
        return int(self.p.size)

    @property
    def log_ratios(self) -> np.ndarray:
        """``log(p_y / q_y)`` per outcome: ``+inf`` where only q vanishes, ``-inf`` where only p does."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(self.p) - np.log(self.q)

    @property
    def infinity_mass(self) -> float:
        """``delta(inf)``: the p-mass where q vanishes (rounded up)."""
        return float(self.delta(math.inf))

    @property
    def pure_epsilon(self) -> float:
        """Smallest eps with ``delta(eps) = 0`` (the largest finite privacy loss, rounded up; inf if
        some outcome has ``q = 0 < p``)."""
        llr_s, _, _, d_llr, n_inf = self._sorted
        if n_inf:
            return math.inf
        return math.nextafter(float(llr_s[0]) + d_llr, math.inf) if llr_s.size else -math.inf

    def _largest_finite_loss(self) -> float:
        """The largest finite ``log(p_y / q_y)`` over outcomes with ``p_y > 0`` (for display; -inf if none)."""
        llr = self.log_ratios[(self.p > 0) & (self.q > 0)]
        return float(llr.max()) if llr.size else -math.inf

    def delta(self, epsilon: Any) -> float | np.ndarray:
        """``H_{e^eps}(p || q)`` for every real eps (``-inf`` and ``inf`` included), rounded UP;
        a float for scalar input, an ndarray of the same shape for arrays.

        Method: outcomes sorted once by decreasing computed log-ratio, prefix sums ``P_k, Q_k``;
        the value is ``P_k - exp(eps + log Q_k)`` with k the outcomes whose ratio exceeds eps.
        Rounding (upward): prefix sums inflated by ``(n + 4) u``, the exponential deflated by
        ``u (2 |eps| + 2 |log Q_k| + 2 n + 16)`` relative and two subnormal units, the mass of
        outcomes whose computed ratio is within the log-ratio error of eps added with twice that
        error as weight (their side of the cut is uncertain), then one final relative rounding.
        Values are capped at 1.
        """
        arr = _as_real_array(epsilon)
        flat = arr.ravel()
        out = np.empty(flat.shape)
        llr_s, P, Q, d, n_inf = self._sorted
        n, u = self.size, UNIT_ROUNDOFF
        hi = flat > _EPS_FINITE_MAX
        lo = flat < -_EPS_FINITE_MAX
        out[hi] = min(float(round_up_array(np.array([P[n_inf]]), n + 2)[0]), 1.0)
        out[lo] = 1.0
        mid = ~(hi | lo)
        e = flat[mid]
        if e.size:
            neg = -llr_s
            k = np.searchsorted(neg, -e, side="left")  # count of llr > eps
            k_lo = np.searchsorted(neg, -(e + d), side="left")
            k_hi = np.searchsorted(neg, -(e - d), side="right")
            Pk, Qk = P[k], Q[k]
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                logQ = np.log(Qk)
                cq = np.where(Qk > 0, np.exp(e + logQ), 0.0)
                shrink = 1.0 - u * (2.0 * np.abs(e) + 2.0 * np.abs(np.where(Qk > 0, logQ, 0.0)) + 2 * n + 16)
                B = np.maximum(cq * np.maximum(shrink, 0.0) - 2.0 * SMALLEST_SUBNORMAL, 0.0)
                B = np.where(np.isfinite(B), B, np.inf)
                X = np.maximum(Pk * (1.0 + (n + 4) * u) - B, 0.0)
            band = k_hi != k_lo
            X = X + np.where(band, 2.0 * d * (P[k_hi] - P[k_lo]) * (1.0 + (n + 4) * u), 0.0)
            out[mid] = np.minimum(round_up_array(X, 6), 1.0)
        res = out.reshape(arr.shape)
        return float(res) if res.ndim == 0 else res

    def epsilon(self, delta: float) -> float:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta`` (``math.inf`` if none), rounded UP.

        Closed form ``log max_k (P_k - delta)/Q_k`` over the prefix sets in likelihood-ratio order,
        then raised until :meth:`delta` (itself rounded up) confirms it.
        """
        target = check_delta(delta, "delta")
        if self.delta(0.0) <= target:
            return 0.0
        _, P, Q, _, _ = self._sorted
        over = P > target
        if np.any(over & (Q == 0)):
            return math.inf
        a = float(np.max((P[over] - target) / Q[over]))
        eps = max(math.log(a), 0.0) if a > 0 else 0.0
        step = 1e-12 + 1e-12 * eps
        eps += step
        for _ in range(200):
            if self.delta(eps) <= target:
                return eps
            step *= 2.0
            eps += step
        return math.inf

    # ------------------------------------------------------------- constructors
    @classmethod
    def from_points(cls, points: Iterable[Any], *, name: str | None = None,
                    exact: bool = True) -> DominatingPair:
        """The exact worst case over every mechanism that is ``(eps_i, delta_i)``-DP for EVERY point i.

        The points describe the intersection of their regions (trade-off function
        ``f = max_i f_{eps_i, delta_i}``, Dong, Roth and Su 2019), whose profile
        ``delta(eps) = 1 + f*(-e^eps)`` can lie below the minimum of the single-point profiles.
        Derivation: a pair ``(P, Q)`` meets ``(eps, delta)`` in both orders iff
        ``P(S) <= e^eps Q(S) + delta`` and, taking complements in ``Q(S) <= e^eps P(S) + delta``,
        ``P(S) <= 1 - e^-eps (1 - delta - Q(S))`` for every S. So its ROC curve lies below
        ``U(s) = min(1, min_i e^eps_i s + delta_i, 1 - e^-eps_i (1 - delta_i - s))``, a concave chain
        that is itself the ROC curve of a pair (masses = the chain's increments, an atom of P-mass
        ``U(0) = min_i delta_i`` where Q vanishes). Since ``H_a(P || Q) = max_S P(S) - a Q(S)``, that pair
        has the largest curve at every ``a = e^eps > 0``, and its curve is symmetric in (P, Q): exact for
        every real eps. Computed in exact rationals with ``e^eps_i`` rounded up and ``e^-eps_i`` down
        (looser constraints); points with eps above 1e4 add no constraint (sound, loose).

        ``points`` are ``DP`` objects (anything with ``epsilon`` and ``delta``) or ``(eps, delta)``
        pairs, eps finite and >= 0, delta in [0, 1].

        Examples
        --------
        >>> pair = DominatingPair.from_points([(1.0, 0.0)])  # binary RR at eps = 1
        >>> pair.size, round(pair.delta(0.0), 6)
        (2, 0.462117)
        >>> two = DominatingPair.from_points([(0.5, 0.05), (1.0, 1e-3)])
        >>> round(two.delta(0.75), 6)  # each point alone allows 0.05 and 0.1157 at eps = 0.75
        0.028547
        """
        pts = _check_points(points)
        verts = _intersection_vertices(pts)
        p, q = _fraction_chain_masses(verts)
        label = name if name is not None else ", ".join(f"({e:g}, {d:g})" for e, d in pts) + "-DP"
        return cls(p, q, name=label, exact=exact)

    @classmethod
    def from_roc(cls, s: Any, b: Any, *, name: str = "ROC hull", exact: bool = True) -> DominatingPair:
        """The pair whose curve is ``max_k [b_k - e^eps s_k]_+`` over the given ROC points
        ``(s_k, b_k) = (Q(S_k), P(S_k))`` in ``[0, 1]^2`` (``(0, 0)`` and ``(1, 1)`` are added).

        When every true test ``(Q(S), P(S))`` of every ordered neighbouring pair is dominated by some
        point (no larger s, no smaller b), the pair dominates the mechanism for every real eps. The
        upper concave hull is computed exactly; P-masses are rounded up and Q-masses down.

        >>> pair = DominatingPair.from_roc([0.25], [0.75])
        >>> pair.p.tolist(), pair.q.tolist()
        ([0.75, 0.25], [0.25, 0.75])
        """
        s_arr = np.asarray(s, dtype=float).ravel()
        b_arr = np.asarray(b, dtype=float).ravel()
        if s_arr.shape != b_arr.shape:
            raise InvalidParameterError(f"s and b must have the same length (got {s_arr.size} and {b_arr.size})")
        bad = ~(np.isfinite(s_arr) & np.isfinite(b_arr)) | (s_arr < 0) | (s_arr > 1) | (b_arr < 0) | (b_arr > 1)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise InvalidParameterError(f"ROC point {i} = ({s_arr[i]!r}, {b_arr[i]!r}) is not in [0, 1]^2")
        hs, hb = _upper_hull(s_arr, b_arr)
        p, q = _masses_from_vertices(hs, hb)
        return cls(p, q, name=name, exact=exact)

    # ------------------------------------------------------------- operations
    def widened(self, rel: float) -> DominatingPair:
        """A pair that dominates every pair ``(p*, q*)`` of distributions with ``p* = p (1 +- rel)`` and
        ``q* = q (1 +- rel)`` entrywise, whenever this pair dominates ``(p, q)``-like mechanisms through its ROC
        points. For any set S, ``P*(S) <= min((1 + rel) P(S), (1 - rel) P(S) + rel)`` (the second from the
        complement, ``P*(S^c) >= (1 - rel) P(S^c)``) and ``Q*(S) >= max((1 - rel) Q(S), (1 + rel) Q(S) - rel)``:
        each ROC point ``(Q(S), P(S))`` moves to ``(s', b')`` by these maps, which are affine on each side of
        1/2; the chain's segments are split where P or Q crosses 1/2 (the inserted points rounded toward
        smaller s and larger b), so the widened vertices' hull covers the image of every point below the chain.
        ``(1, 1)`` stays fixed: no infinite loss appears in either direction. Rounded outward (``(n + 8) u``
        relative); ``rel = 0`` returns the pair itself.

        >>> pair = DominatingPair([0.75, 0.25], [0.25, 0.75])
        >>> wide = pair.widened(1e-6)
        >>> bool(wide.delta(0.5) >= pair.delta(0.5) * (1 + 1e-6)), bool(wide.delta(math.inf) == 0.0)
        (True, True)
        """
        if not rel:
            return self
        r = float(rel)
        if not 0.0 < r < 0.5:
            raise InvalidParameterError(f"rel must be in [0, 0.5) (got {rel!r})")
        p, q = np.asarray(self.p, dtype=float), np.asarray(self.q, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(q > 0, p / q, np.inf)
        order = np.argsort(-ratio, kind="stable")
        g = (p.size + 8) * UNIT_ROUNDOFF
        P = np.concatenate([[0.0], np.cumsum(p[order])])
        Q = np.concatenate([[0.0], np.cumsum(q[order])])
        P_up, Q_dn = P * (1.0 + g), Q * (1.0 - g)  # the chain's vertices, rounded outward
        ss, bb = [Q_dn[:1]], [P_up[:1]]
        for k in range(1, P.size):
            for lo_, hi_, x0, x1 in ((P[k - 1], P[k], "P", None), (Q[k - 1], Q[k], "Q", None)):
                if lo_ < 0.5 < hi_:  # split the segment at the kink (interpolated, rounded outward)
                    t = (0.5 - lo_) / (hi_ - lo_)
                    ss.append(np.array([(Q[k - 1] + t * (Q[k] - Q[k - 1])) * (1.0 - 4 * g)]))
                    bb.append(np.array([(P[k - 1] + t * (P[k] - P[k - 1])) * (1.0 + 4 * g)]))
            ss.append(Q_dn[k:k + 1])
            bb.append(P_up[k:k + 1])
        S_, B_ = np.concatenate(ss), np.concatenate(bb)
        s_w = np.maximum(S_ * (1.0 - r), S_ * (1.0 + r) - r) * (1.0 - 4 * UNIT_ROUNDOFF)
        b_w = np.minimum(B_ * (1.0 + r), B_ * (1.0 - r) + r) * (1.0 + 4 * UNIT_ROUNDOFF)
        s_w = np.clip(np.nextafter(s_w, -np.inf), 0.0, 1.0)
        b_w = np.clip(np.nextafter(b_w, np.inf), 0.0, 1.0)
        s_w[0] = b_w[0] = 0.0  # the empty set and the set of all outcomes: (0, 0) and (1, 1), exactly
        s_w[-1] = b_w[-1] = 1.0
        return DominatingPair.from_roc(s_w, b_w, name=self.name, exact=False)

    def compose(self, *others: DominatingPair) -> DominatingPair:
        """The product pair ``(p x p', q x q')`` (outer products): it dominates the composition of
        the mechanisms the factors dominate (Zhu, Dong and Wang 2022, Theorem 10). Outcomes grow as
        the product of the sizes; meant for a few small factors (brute-force checks).

        >>> rr = DominatingPair([0.75, 0.25], [0.25, 0.75])
        >>> round(rr.compose(rr).delta(0.0), 6)
        0.5
        """
        p, q, names = self.p, self.q, [self.name]
        for o in others:
            if not isinstance(o, DominatingPair):
                raise TypeError(f"compose takes DominatingPair objects, got {type(o).__name__}")
            p, q = np.outer(p, o.p).ravel(), np.outer(q, o.q).ravel()
            names.append(o.name)
        p, q = _renormalised_up(p), _renormalised_down(q)
        return DominatingPair(p, q, name=" x ".join(names), exact=self.exact and all(o.exact for o in others))

    # ------------------------------------------------------------- display
    def __repr__(self) -> str:
        return (f"DominatingPair({self.name!r}, {self.size} outcomes, {'exact' if self.exact else 'upper bound'}, "
                f"delta(0)={self.delta(0.0):.6g})")

    def __str__(self) -> str:
        kind = ("its curve equals the profile" if self.exact else
                "its curve lies above the profile (a pessimistic bound)")
        lines = [f"A dominating pair of {self.size} outcomes for {self.name}: composing it bounds every "
                 f"composition of that mechanism ({kind}).",
                 f"  delta(0) = {fmt_number(self.delta(0.0))}, delta(inf) = {fmt_number(self.infinity_mass)}, "
                 f"largest finite privacy loss = {fmt_number(self._largest_finite_loss())}"]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        return "<pre>" + html.escape(str(self)) + "</pre>"

    def to_dict(self) -> dict:
        """Plain data (JSON-ready): masses, name, exactness and a few curve values."""
        return {"name": self.name, "exact": self.exact, "size": self.size, "p": self.p.tolist(),
                "q": self.q.tolist(), "delta_at_0": self.delta(0.0), "delta_at_inf": self.infinity_mass,
                "pure_epsilon": self.pure_epsilon}


def _renormalised_up(p: np.ndarray) -> np.ndarray:
    """Products of P-masses rounded up (one relative rounding per product)."""
    return np.nextafter(p * (1.0 + 2 * UNIT_ROUNDOFF), np.inf) * (p > 0)


def _renormalised_down(q: np.ndarray) -> np.ndarray:
    """Products of Q-masses rounded down."""
    return np.maximum(np.nextafter(q * (1.0 - 2 * UNIT_ROUNDOFF), -np.inf), 0.0) * (q > 0)


def _check_points(points: Any) -> list[tuple[float, float]]:
    """``(eps, delta)`` floats from DP objects or pairs (eps finite >= 0, delta in [0, 1])."""
    if isinstance(points, (str, bytes)) or not isinstance(points, Iterable) or hasattr(points, "epsilon"):
        raise TypeError(f"points must be an iterable of DP or (epsilon, delta) pairs, got {points!r}")
    out: list[tuple[float, float]] = []
    for pt in points:
        if hasattr(pt, "epsilon") and hasattr(pt, "delta"):
            e, d = pt.epsilon, pt.delta
        else:
            try:
                e, d = pt
            except (TypeError, ValueError):
                raise InvalidMechanismError(f"each point must be a DP or an (epsilon, delta) pair, got {pt!r}") \
                    from None
        try:
            e, d = float(e), float(d)
        except (TypeError, ValueError):
            raise TypeError(f"point {pt!r}: epsilon and delta must be real numbers") from None
        if not (math.isfinite(e) and e >= 0):
            raise InvalidParameterError(f"point {pt!r}: epsilon must be finite and >= 0 (got {e!r})")
        if not 0.0 <= d <= 1.0:
            raise InvalidParameterError(f"point {pt!r}: delta must be in [0, 1] (got {d!r})")
        out.append((e, d))
    if not out:
        raise InvalidMechanismError("points must contain at least one (epsilon, delta) point")
    return out


#: where a grid pair stops when a profile never falls to its floor (e^eps still finite in double)
_FAR_EPSILON = 700.0


def _grid_pair(profile: Any, epsilons: Any, num: int, delta_floor: float) -> DominatingPair:
    """Body of ``PrivacyProfile.dominating_pair`` for a profile known only through ``delta(eps)``.

    Connect the dots (Doroshenko et al. 2022): M is ``(eps_k, delta(eps_k))``-DP at every grid point,
    in both orders (the profile is a supremum over a symmetric neighbour relation), so M lies in the
    intersection of those regions and :meth:`DominatingPair.from_points` of the grid points is a pair
    whose curve lies above M's at every real eps (between grid points it is the chord in ``e^eps``,
    which lies above the profile, a convex function of ``e^eps``; for eps < 0 it is the mirror image
    ``1 - a + a delta(-eps)``). The grid is ``num`` points evenly spaced on ``[0, eps_max]`` with
    ``eps_max`` the profile's ``pure_epsilon`` when finite, else the eps where the profile falls to
    ``delta_floor`` (beyond it the pair keeps ``delta(eps_max)`` as its mass of infinite loss), or, when
    the profile levels off above the floor, where it comes within 0.1 % of its value at eps = 700.
    """
    if epsilons is None:
        top = profile.pure_epsilon
        if not math.isfinite(top):
            top = profile.epsilon(delta_floor)
        if not math.isfinite(top):
            # delta levels off above the floor (mass at infinite loss, e.g. a finite pipeline with a zero
            # another row lacks): end the grid where it is within 0.1 % of its value far out; the pair keeps
            # delta(eps_max) >= delta(eps) for every eps >= eps_max as its mass of infinite loss (sound)
            far = float(np.minimum(profile.delta(np.array([_FAR_EPSILON])), 1.0)[0])
            top = profile.epsilon(min(1.0, far * (1.0 + 1e-3) + delta_floor))
            if not math.isfinite(top) or top > _FAR_EPSILON:
                top = _FAR_EPSILON
        grid = np.linspace(0.0, top, num) if top > 0 else np.array([0.0])
    else:
        grid = np.unique(_as_real_array(epsilons).ravel())
        if grid.size == 0 or np.any(grid < 0) or np.any(np.isinf(grid)):
            raise InvalidParameterError(f"epsilons must be finite values >= 0 (got {epsilons!r})")
    vals = np.minimum(np.asarray(profile.delta(grid), dtype=float), 1.0)
    pts = list(zip(grid.tolist(), vals.tolist()))
    return DominatingPair.from_points(pts, name=f"{profile.name} (connect the dots, {grid.size} points)",
                                      exact=False)
