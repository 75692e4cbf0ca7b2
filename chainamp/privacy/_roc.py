"""Exact ROC hulls behind :class:`~chainamp.privacy.DominatingPair` (private to ``privacy/``).

A pair of distributions ``(P, Q)`` is described by its ROC points ``(s, b) = (Q(S), P(S))`` over the
sets S of outcomes, and its hockey-stick curve is ``H_a(P || Q) = max_S P(S) - a Q(S)`` for every
``a = e^eps > 0`` (negative eps included). The curve only depends on the upper concave hull of the
ROC points, and a concave chain ``(0, b_0), (s_1, b_1), ..., (1, 1)`` IS a pair: an atom of P-mass
``b_0`` where Q vanishes and one outcome per edge with masses ``(b_j - b_{j-1}, s_j - s_{j-1})``
(Zhu, Dong and Wang 2022, Section 3; the trade-off function of the pair is ``beta = 1 - b`` at
``alpha = s``, Dong, Roth and Su 2019).

* :func:`_intersection_vertices`: the upper boundary of the region allowed by a list of
  ``(eps_i, delta_i)`` points (both orders), exactly, in :class:`fractions.Fraction`.
* :func:`_upper_hull`: the exact upper hull of float ROC points (float predicates with an exact
  fallback), for finite mechanisms.
* :func:`_masses_from_vertices` / :func:`_masses_from_fractions`: the pair of a chain, every P-mass
  rounded UP and every Q-mass rounded DOWN. ``H_a = sum_y [p_y - a q_y]_+`` grows with each
  ``p_y`` and shrinks with each ``q_y``, so the float pair's curve lies above the exact chain's.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._numerics import UNIT_ROUNDOFF, compiled

__all__: list[str] = []

#: points with eps above this give no line (dropping a constraint only enlarges the region: sound)
_EPS_LINE_MAX = 1.0e4
_UP = Fraction(1) + Fraction(1, 2**50)  # > 1 + 4 ulps: covers math.exp's error
_DOWN = Fraction(1) - Fraction(1, 2**50)


def _exp_up(x: float) -> Fraction:
    """An exact rational ``>= e^x`` (x finite, ``x <= _EPS_LINE_MAX``)."""
    if x < 709.0:
        return Fraction(math.exp(x)) * _UP
    return Fraction(2) ** (math.ceil(x * 1.4426950408889634 * (1 + 1e-12)) + 1)


def _exp_down(x: float) -> Fraction:
    """An exact rational in ``[0, e^x]`` (x finite)."""
    v = math.exp(x) if x > -745.0 else 0.0
    return Fraction(v) * _DOWN


def _intersection_vertices(points: list[tuple[float, float]]) -> list[tuple[Fraction, Fraction]]:
    """Vertices ``(s, b)`` of ``U(s) = min(1, min_i e^eps_i s + delta_i, 1 - e^-eps_i (1 - delta_i - s))``.

    ``U`` is the largest ROC curve of a pair that is ``(eps_i, delta_i)``-DP in both orders for every
    i: ``P(S) <= e^eps Q(S) + delta`` bounds the first line, the same for ``(Q, P)`` on the
    complement of S the second. Slopes are rounded outward (``e^eps`` up, ``e^-eps`` down), which only
    loosens each constraint. Returns the vertices from ``s = 0`` to ``s = 1`` (``U(1) = 1``).
    """
    lines: list[tuple[Fraction, Fraction]] = [(Fraction(0), Fraction(1))]
    for eps, delta in points:
        if eps > _EPS_LINE_MAX:
            continue
        d = Fraction(delta)
        up, down = _exp_up(eps), _exp_down(-eps)
        lines.append((up, d))
        lines.append((down, 1 - down * (1 - d)))
    # lower envelope of lines: slopes decreasing along s; equal slopes keep the smallest intercept
    lines.sort(key=lambda mc: (-mc[0], mc[1]))
    stack: list[tuple[Fraction, Fraction]] = []
    for m, c in lines:
        if stack and stack[-1][0] == m:
            continue
        while len(stack) >= 2:
            (m1, c1), (m2, c2) = stack[-2], stack[-1]
            # line 2 is never the minimum when line 3 overtakes line 1 no later than line 2 does
            if (c - c1) * (m1 - m2) <= (c2 - c1) * (m1 - m):
                stack.pop()
            else:
                break
        stack.append((m, c))
    breaks = [(stack[i + 1][1] - stack[i][1]) / (stack[i][0] - stack[i + 1][0]) for i in range(len(stack) - 1)]
    verts: list[tuple[Fraction, Fraction]] = []
    i = 0
    while i < len(breaks) and breaks[i] <= 0:
        i += 1
    m, c = stack[i]
    verts.append((Fraction(0), c))
    for j in range(i, len(breaks)):
        x = breaks[j]
        if x >= 1:
            break
        verts.append((x, stack[j][0] * x + stack[j][1]))
    k = min(len(stack) - 1, sum(1 for x in breaks if x < 1))
    verts.append((Fraction(1), min(Fraction(1), stack[k][0] + stack[k][1])))
    return verts


def _round_up(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _round_down(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


def _masses_from_fractions(p: list[Fraction], q: list[Fraction]) -> tuple[np.ndarray, np.ndarray]:
    """Exact masses to floats: P rounded up, Q rounded down (outcomes with both 0 dropped)."""
    pf = np.array([_round_up(x) for x in p])
    qf = np.array([max(_round_down(x), 0.0) for x in q])
    keep = (pf > 0) | (qf > 0)
    return pf[keep], qf[keep]


def _fraction_chain_masses(verts: list[tuple[Fraction, Fraction]]) -> tuple[np.ndarray, np.ndarray]:
    """The pair of an exact concave chain (first vertex at s = 0)."""
    p = [verts[0][1]] + [verts[j][1] - verts[j - 1][1] for j in range(1, len(verts))]
    q = [Fraction(0)] + [verts[j][0] - verts[j - 1][0] for j in range(1, len(verts))]
    return _masses_from_fractions(p, q)


#: the float filter of :func:`_cross_sign`: a float cross product beyond this many units of its terms has its sign
_FILTER = 16 * UNIT_ROUNDOFF


def _cross_sign(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> int:
    """Sign of ``(a - o) x (b - o)``, exact (a float evaluation with an error filter, Fractions otherwise)."""
    t1 = (a[0] - o[0]) * (b[1] - o[1])
    t2 = (a[1] - o[1]) * (b[0] - o[0])
    val = t1 - t2
    if abs(val) > _FILTER * (abs(t1) + abs(t2)) + 1e-300:
        return 1 if val > 0 else -1
    fo, fa, fb = (tuple(Fraction(x) for x in pt) for pt in (o, a, b))
    ex = (fa[0] - fo[0]) * (fb[1] - fo[1]) - (fa[1] - fo[1]) * (fb[0] - fo[0])
    return (ex > 0) - (ex < 0)


#: chains of at least this many points use the compiled monotone chain
_COMPILED_MIN = 2000


def _chain_source(s, b, filt):  # pragma: no cover - compiled by numba
    """The monotone chain of :func:`_upper_hull` with :func:`_cross_sign`'s float filter; an empty result when
    some sign is not settled by the filter (the caller then runs the exact loop)."""
    n = s.size
    stack = np.empty(n, np.int64)
    top = 0
    for i in range(n):
        while top >= 2:
            o = stack[top - 2]
            a = stack[top - 1]
            t1 = (s[a] - s[o]) * (b[i] - b[o])
            t2 = (b[a] - b[o]) * (s[i] - s[o])
            val = t1 - t2
            if abs(val) > filt * (abs(t1) + abs(t2)) + 1e-300:
                if val > 0:
                    top -= 1
                else:
                    break
            else:
                return np.empty(0, np.int64)
        stack[top] = i
        top += 1
    return stack[:top].copy()


def _compiled_chain():
    """The compiled chain (numba when installed, the plain function otherwise)."""
    return compiled(_chain_source)


def _upper_hull(s: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the upper concave hull of the points ``(s, b)`` in ``[0, 1]^2`` together with
    ``(0, 0)`` and ``(1, 1)``, from the highest point at ``s = 0`` to ``(1, 1)``, exactly.

    Every point lies on or below the returned chain (the predicate is exact), so ``max`` over the
    points of ``b - a s`` equals the same maximum over the vertices for every ``a >= 0``.
    Points dominated by another (no larger s, no smaller b) are dropped first, in numpy.
    """
    s = np.concatenate(([0.0, 1.0], np.asarray(s, dtype=float).ravel()))
    b = np.concatenate(([0.0, 1.0], np.asarray(b, dtype=float).ravel()))
    order = np.lexsort((-b, s))  # by s ascending, then b descending
    s, b = s[order], b[order]
    first = np.concatenate(([True], s[1:] != s[:-1]))  # the highest point of each s
    s, b = s[first], b[first]
    prev_max = np.maximum.accumulate(np.concatenate(([-1.0], b[:-1])))
    keep = b > prev_max  # strictly above every point with smaller s
    s, b = s[keep], b[keep]
    if s.size >= _COMPILED_MIN:  # the same chain, compiled: settled by the float filter alone (else empty)
        idx = _compiled_chain()(s, b, _FILTER)
        if idx.size:
            hs, hb = s[idx], b[idx]
            if hs[-1] < 1.0:
                hs, hb = np.append(hs, 1.0), np.append(hb, 1.0)
            return hs, hb
    hull: list[tuple[float, float]] = []
    for pt in zip(s.tolist(), b.tolist()):
        while len(hull) >= 2 and _cross_sign(hull[-2], hull[-1], pt) >= 0:
            hull.pop()
        hull.append(pt)
    if hull[-1][0] < 1.0:  # b reached 1 before s = 1: the rest of Q sits where P vanishes (a flat edge)
        hull.append((1.0, 1.0))
    arr = np.array(hull)
    return arr[:, 0], arr[:, 1]


def _directed_diff(hi: np.ndarray, lo: np.ndarray, up: bool) -> np.ndarray:
    """``hi - lo`` (``hi >= lo >= 0``) rounded up (``up``) or down: Fast2Sum gives the exact error."""
    d = hi - lo
    err = (hi - d) - lo  # Fast2Sum (Dekker 1971; |hi| >= |lo|): hi - lo = d + err exactly
    if up:
        return np.where(err > 0, np.nextafter(d, np.inf), d)
    return np.maximum(np.where(err < 0, np.nextafter(d, -np.inf), d), 0.0)


def _masses_from_vertices(s: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pair of a float concave chain (first vertex at s = 0): P-masses up, Q-masses down."""
    p = np.concatenate(([b[0]], _directed_diff(b[1:], b[:-1], True)))
    q = np.concatenate(([0.0], _directed_diff(s[1:], s[:-1], False)))
    keep = (p > 0) | (q > 0)
    return p[keep], q[keep]
