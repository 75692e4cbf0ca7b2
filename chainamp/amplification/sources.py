"""Bound sources: the families of certified ``(eps', delta')`` pairs an amplification report queries.

A ``PairSource`` is a finite set of pairs (a clause of Theorem 1 at the input's points), a
``CurveSource`` a guarantee at every eps', searched by bisection for a delta;
``best_bound`` is the lower envelope over sources. ``profile_points`` picks the points of an
input profile at which the clauses are applied, and ``target_delta_for`` the delta' a report is
given at. All of them serve :mod:`.amplifier` and :mod:`.report` only: none is public API.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from .._numerics import BISECTION_ATOL, BISECTION_RTOL, check_delta
from .bounds import Bound
from ..errors import InvalidMechanismError
from ..privacy import PrivacyProfile
from .inputs import InputMechanism

__all__: list[str] = []

_GRID_POINTS = 32
#: Rounds of the guided search (:meth:`CurveSource._guided_search`) before the plain bisection takes over.
_GUIDED_ROUNDS = 3


class PairSource:
    """A finite set of certified pairs; the guarantee at eps' is the best pair with eps <= eps'."""

    def __init__(self, name: str, bounds: Iterable[Bound]):
        self.name = name
        self.bounds = tuple(bounds)

    def __repr__(self) -> str:
        return f"<BoundSource {self.name!r}: {len(self.bounds)} certified pairs>"

    def bound_at_epsilon(self, eps: float) -> Bound | None:
        ok = [b for b in self.bounds if b.epsilon <= eps]
        return min(ok, key=lambda b: (b.delta, b.epsilon)) if ok else None

    def bound_at_delta(self, delta: float) -> Bound | None:
        ok = [b for b in self.bounds if b.delta <= delta]
        return min(ok, key=lambda b: (b.epsilon, b.delta)) if ok else None


class CurveSource:
    """A guarantee at every eps' (``make(eps') -> Bound``), searched by bisection for a delta.

    ``quick(eps', delta)``, when given, may settle a bisection step without the costly ``make``: a certified
    Bound with ``delta' <= delta`` (the step holds), False (it provably fails) or None (unknown: ``make`` is
    called). A quick answer only replaces a step whose exact answer it implies, so the search visits the same
    eps' and returns the same epsilon'; the bound returned is ``make``'s at that epsilon'. With ``guided=True``
    the steps ``quick`` leaves open are first taken as provisionally holding (:meth:`_guided_search`): the
    answer is still a point where ``make`` holds, within the bisection tolerance of a refuted point, but may
    differ from the plain bisection's within that tolerance."""

    def __init__(self, name: str, make: Callable[[float], Bound],
                 upper: Callable[[float], float], epsilon_for: Callable[[float], float] | None = None,
                 quick: Callable[[float, float], Bound | bool | None] | None = None, guided: bool = False):
        self.name = name
        self._make = make
        self._upper = upper
        self._epsilon_for = epsilon_for
        self._quick = quick
        self._guided = guided and quick is not None
        self._cache: dict[float, Bound] = {}

    def __repr__(self) -> str:
        return f"<BoundSource {self.name!r}: a guarantee at every epsilon'>"

    def bound_at_epsilon(self, eps: float) -> Bound | None:
        if eps not in self._cache:
            self._cache[eps] = self._make(eps)
        return self._cache[eps]

    def _holds(self, eps: float, delta: float, quick: bool = False) -> Bound | None:
        if not math.isfinite(eps):
            return None
        if quick and self._quick is not None and eps not in self._cache:
            q = self._quick(eps, delta)
            if q is False:
                return None
            if q is not None:
                return q
        b = self.bound_at_epsilon(eps)
        return b if b.delta <= delta else None

    def bound_at_delta(self, delta: float) -> Bound | None:
        if self._epsilon_for is not None:
            hit = self._holds(self._epsilon_for(delta), delta)
            if hit is not None:
                return hit
        first = self._holds(0.0, delta)
        if first is not None:
            return first
        hi = self._upper(delta)
        hit = self._holds(hi, delta)
        if hit is None and math.isfinite(hi):  # the bracket end may miss by rounding: widen once
            hi = hi * (1.0 + 1e-9) + 1e-12
            hit = self._holds(hi, delta)
        if hit is None:
            return None
        lo = 0.0
        if self._guided:
            lo, hi, hit = self._guided_search(delta, lo, hi, hit)
        while hi - lo > max(BISECTION_ATOL, BISECTION_RTOL * hi):
            mid = 0.5 * (lo + hi)
            cand = self._holds(mid, delta, quick=True)
            if cand is None:
                lo = mid
            else:
                hi, hit = mid, cand
        if hi not in self._cache:  # a quick certificate: the exact bound there (kept if rounding disagrees)
            hit = self._holds(hi, delta) or hit
        return hit

    def _guided_search(self, delta: float, lo: float, hi: float, hit: Bound) -> tuple[float, float, Bound]:
        """Narrow ``[lo, hi]`` (``lo`` fails or is 0, ``hi`` certified by ``hit``) mostly without ``make``.

        The steps ``quick`` leaves open (``None``: its lower bound does not refute them) are taken as holding
        *provisionally*, so a bisection on ``quick`` alone finds where its refutation stops; then ``make``
        certifies that one point. If it fails there, that point is a certified lower end and the search goes on
        from it (``make`` also sharpens ``quick``); after a few rounds the plain bisection finishes. Only points
        at which ``make`` or ``quick`` certified a bound become ``hi``, and only points they refuted become
        ``lo``, so the bracket is sound; the eps' returned may differ from the plain bisection's within its
        tolerance."""
        for _ in range(_GUIDED_ROUNDS):
            a, b = lo, hi
            while b - a > max(BISECTION_ATOL, BISECTION_RTOL * b):
                mid = 0.5 * (a + b)
                if mid not in self._cache and self._quick(mid, delta) is None:
                    b = mid  # open: provisionally holding
                    continue
                q = self._holds(mid, delta, quick=True)  # settled by quick (or already evaluated)
                if q is None:
                    a = lo = mid
                else:
                    b = hi = mid
                    hit = q
            if b >= hi:
                break
            cand = self._holds(b, delta)
            if cand is None:
                lo = b
            else:
                hi, hit = b, cand
                break
        return lo, hi, hit



def first_finite(*candidates: Callable[[], float]) -> float:
    """The first finite value among lazily evaluated candidates (later ones may be costly)."""
    for make in candidates:
        v = make()
        if math.isfinite(v):
            return v
    return math.inf


def best_bound(sources, fn: str, arg: float) -> Bound | None:
    found = [getattr(s, fn)(arg) for s in sources]
    found = [b for b in found if b is not None]
    if not found:
        return None
    key = (lambda b: (b.delta, b.epsilon)) if fn == "bound_at_epsilon" else (lambda b: (b.epsilon, b.delta))
    return min(found, key=key)




def target_delta_for(mech: InputMechanism, profile: PrivacyProfile, delta) -> float:
    if delta is not None:
        return check_delta(delta, "delta")
    if mech.kind == "dp":
        return mech.points[0].delta
    if mech.kind == "points":
        return min(p.delta for p in mech.points)
    if math.isfinite(profile.pure_epsilon):
        return 0.0
    raise InvalidMechanismError(f"{mech.description} has no pure-DP level: pass delta= (the delta' to report at)")


def profile_points(profile: PrivacyProfile, target: float, gammas: Sequence[float],
                   invert: Callable[[float], float] | None = None) -> list[tuple[float, float]]:
    """Points (eps, delta_M(eps)) of the input profile at which the clauses are applied.

    ``invert(d)``, when given, replaces ``profile.epsilon(d)`` in choosing the eps (e.g. the bracket from the
    unwidened profile of a finite M, much cheaper to invert): any eps gives a valid point, since every point's
    delta is ``profile.delta(eps)`` itself."""
    invert = profile.epsilon if invert is None else invert
    top = profile.pure_epsilon
    if not math.isfinite(top):
        top = invert(1e-15)
    eps = list(np.linspace(0.0, top, _GRID_POINTS)) if math.isfinite(top) else []
    wanted = dict.fromkeys(d for g in gammas for d in (target, target / g if g > 0 else 1.0))  # each inverted once
    for d in wanted:
        if 0.0 < d <= 1.0:
            e = invert(min(d, 1.0))
            if math.isfinite(e):
                eps.append(e)
    eps = sorted(set(float(e) for e in eps))
    if not eps:
        return []
    # one array query (each value is the scalar query's: profiles evaluate eps by eps)
    return [(e, min(float(v), 1.0)) for e, v in zip(eps, np.asarray(profile.delta(np.array(eps))).tolist())]
