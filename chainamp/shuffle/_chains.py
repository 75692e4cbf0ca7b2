r"""Hockey-stick curves of revealed mixtures of monotone pairs, from a few points per component.

Private to ``shuffle/``. A pair whose outcome reveals a component label j (weight already in the arrays) has
the hockey-stick curve ``H_a = sum_j H_a(P_j || Q_j)``, and each component's curve is the support function of
its ROC points: ``H_a(P_j || Q_j) = max_k (b_k - a s_k)`` over the points of :func:`._pairs.roc_upper`.
Summing those maxima needs no global sort of all outcomes by likelihood ratio (the k-RR two-output bound
at n = 1e8 has 6.4 million outcomes in 64 components).

**Compression (sound for every a).** A component's points are cut into segments. For a segment with points
``(s_k, b_k)`` in ``[s_i, s_j]`` and any two slopes ``sigma_1, sigma_2`` (we take the slopes of its first
and last edges), let ``c_t = max_k (b_k - sigma_t s_k)`` (rounded up). Every point lies below both lines
``L_t(s) = c_t + sigma_t s``. Keep three points: ``A = (s_i, L_1(s_i))``, ``B = (s_j, L_2(s_j))`` and
``X = (x, max(L_1(x), L_2(x)))`` for any ``x`` in ``[s_i, s_j]`` (their float intersection, clipped), all
rounded up. On ``[s_i, x]`` the chord ``A X`` is above ``L_1`` (both ends are), on ``[x, s_j]`` the chord
``X B`` is above ``L_2``, so every point of the segment lies below the polyline ``A X B`` at its own s, and
``b_k - a s_k`` is at most the largest value of ``b - a s`` over ``A, X, B``. The bound holds whatever the
slopes and the cut points; they only decide how tight it is. Segments are cut greedily so that the area
between the tangents and the chord, ``(largest - smallest slope of its edges)(s_j - s_i) / 4``, stays
below ``rtol`` times the segment's own hockey-stick value plus ``atol``: the compressed curve is then within
about ``1 + rtol`` of the uncompressed one plus ``atol`` per component.

Rounding: ``b - sigma s`` and ``c + sigma s`` are evaluated in floats; each result is within
``2u (|b| + |sigma s|)`` of the exact value (one product and one sum), and we add ``4u`` times that sum
(``_ROUND``) before rounding up one more ulp.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import UNIT_ROUNDOFF, compiled

__all__: list[str] = []

_U = UNIT_ROUNDOFF
#: the margin of a float ``b - sigma s`` or ``c + sigma s`` (a product and a sum: within 2u of the magnitudes)
_ROUND = 4.0 * _U


def _cuts_source(s, b, rtol, atol):  # pragma: no cover - compiled by numba
    """Greedy segment ends (indices into the points) for :func:`compress`: a segment grows while the spread of
    its edges' slopes times its width stays below ``4 (rtol * level + atol)``, ``level`` the segment's value
    of ``b - sigma s`` at its first slope; a run of vertical or very steep edges (slope above 1e12) is one segment,
    bounded by a flat line through its top."""
    n = s.size
    out = np.empty(n, np.int64)
    m = 0
    i = 0
    while i < n - 1:
        ds = s[i + 1] - s[i]
        first = (b[i + 1] - b[i]) / ds if ds > 0.0 else np.inf
        j = i + 1
        if not first <= 1e12:  # a run of vertical or steep edges: one segment (a flat line through its top)
            while j < n - 1:
                ds = s[j + 1] - s[j]
                last = (b[j + 1] - b[j]) / ds if ds > 0.0 else np.inf
                if last <= 1e12:
                    break
                j += 1
        else:
            lo = first
            hi = first
            level = b[i] - first * s[i]
            if level < 0.0:
                level = 0.0
            limit = 4.0 * (rtol * level + atol)
            while j < n - 1:
                ds = s[j + 1] - s[j]
                last = (b[j + 1] - b[j]) / ds if ds > 0.0 else np.inf
                if not last <= 1e12:
                    break
                lo = min(lo, last)
                hi = max(hi, last)
                if (hi - lo) * (s[j + 1] - s[i]) > limit:
                    break
                j += 1
        out[m] = j
        m += 1
        i = j
    return out[:m]


def _cuts(s: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    return compiled(_cuts_source)(s, b, float(rtol), float(atol))


def _compress_source(s, b, ends, rnd):  # pragma: no cover - compiled by numba
    """The three points of every segment (module docstring), rounded up; ``rnd`` is the rounding margin."""
    m = ends.size
    cs = np.empty(3 * m + 1)
    cb = np.empty(3 * m + 1)
    cs[0] = s[0]
    cb[0] = b[0]
    i = 0
    for t in range(m):
        j = ends[t]
        ds1 = s[i + 1] - s[i]
        ds2 = s[j] - s[j - 1]
        g1 = (b[i + 1] - b[i]) / ds1 if ds1 > 0.0 else 0.0
        g2 = (b[j] - b[j - 1]) / ds2 if ds2 > 0.0 else 0.0
        if not (g1 >= 0.0 and g1 <= 1e12):  # any slopes are sound: a steep edge gets a flat line
            g1 = 0.0
        if not (g2 >= 0.0 and g2 <= 1e12):
            g2 = 0.0
        c1 = -np.inf
        c2 = -np.inf
        for k in range(i, j + 1):
            p1 = g1 * s[k]
            p2 = g2 * s[k]
            v1 = (b[k] - p1) + rnd * (abs(b[k]) + abs(p1))
            v2 = (b[k] - p2) + rnd * (abs(b[k]) + abs(p2))
            if v1 > c1:
                c1 = v1
            if v2 > c2:
                c2 = v2
        c1 = np.nextafter(c1, np.inf)
        c2 = np.nextafter(c2, np.inf)
        si = s[i]
        sj = s[j]
        x = si
        if g1 != g2:
            x = (c2 - c1) / (g1 - g2)
            if not (x >= si):
                x = si
            if x > sj:
                x = sj
        q = g1 * si
        ya = np.nextafter((c1 + q) + rnd * (abs(c1) + abs(q)), np.inf)
        q = g2 * sj
        yb = np.nextafter((c2 + q) + rnd * (abs(c2) + abs(q)), np.inf)
        q1 = g1 * x
        q2 = g2 * x
        y1 = (c1 + q1) + rnd * (abs(c1) + abs(q1))
        y2 = (c2 + q2) + rnd * (abs(c2) + abs(q2))
        yx = np.nextafter(max(y1, y2), np.inf)
        cs[3 * t + 1] = si
        cs[3 * t + 2] = x
        cs[3 * t + 3] = sj
        cb[3 * t + 1] = ya
        cb[3 * t + 2] = yx
        cb[3 * t + 3] = yb
        i = j
    return cs, cb


def compress(s: np.ndarray, b: np.ndarray, *, rtol: float = 1e-7, atol: float = 1e-30) -> tuple[np.ndarray, np.ndarray]:
    """Points (s ascending) whose support function ``max (b - a s)`` is at least the given points' at every a
    (module docstring); the first point is kept as it is.

    >>> s = np.linspace(0.0, 1.0, 1001); b = np.sqrt(s)
    >>> cs, cb = compress(s, b, rtol=1e-3)
    >>> bool(cs.size < 200 and all(np.max(cb - a * cs) >= np.max(b - a * s) for a in (0.3, 1.0, 7.0)))
    True
    """
    s = np.ascontiguousarray(s, dtype=float)
    b = np.ascontiguousarray(b, dtype=float)
    if s.size <= 3:
        return s, b
    if np.any(s[1:] < s[:-1]):  # the segments' bound covers the points between their ends in s
        raise ValueError("compress needs the points' s in ascending order")
    ends = _cuts(s, b, rtol, atol)
    return compiled(_compress_source)(s, b, ends, _ROUND)


def _support_source(s, b, first, a, rnd):  # pragma: no cover - compiled by numba
    """``sum_j max(0, max_k (b_jk - a s_jk))`` for each a, every term rounded up (``rnd``: the margin)."""
    m = first.size
    out = np.empty(a.size)
    for g in range(a.size):
        x = a[g]
        total = 0.0
        for j in range(m):
            lo = first[j]
            hi = first[j + 1] if j + 1 < m else s.size
            best = 0.0  # the empty test
            for k in range(lo, hi):
                if s[k] == 0.0:
                    v = b[k] + rnd * abs(b[k])
                elif x == np.inf:
                    continue
                else:
                    p = x * s[k]
                    v = (b[k] - p) + rnd * (abs(b[k]) + p)
                if v > best:
                    best = v
            total += np.nextafter(best, np.inf)
        out[g] = total
    return out


class SupportSum:
    """``H(a) = sum_j max_k (b_jk - a s_jk)`` over components j, each a set of compressed points, rounded up.

    >>> h = SupportSum([(np.array([0.0, 0.5]), np.array([0.0, 0.6])), (np.array([0.0, 1.0]), np.array([0.0, 1.0]))])
    >>> float(h(np.array([1.0]))[0]) >= 0.1
    True
    """

    def __init__(self, parts: list) -> None:
        parts = [(np.asarray(s, float), np.asarray(b, float)) for s, b in parts if np.asarray(s).size]
        self.count = len(parts)
        self.s = np.ascontiguousarray(np.concatenate([p[0] for p in parts]) if parts else np.zeros(1))
        self.b = np.ascontiguousarray(np.concatenate([p[1] for p in parts]) if parts else np.zeros(1))
        sizes = [p[0].size for p in parts] or [1]
        self.first = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)

    def __call__(self, a: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(np.atleast_1d(np.asarray(a, dtype=float)))
        out = compiled(_support_source)(self.s, self.b, self.first, a, _ROUND)
        # a sum of count non-negative floats: relative error at most (count + 1) u
        return np.nextafter(out * (1.0 + (self.count + 2) * _U), np.inf)


def delta_of(h: SupportSum, eps: np.ndarray) -> np.ndarray:
    """``H(e^eps)`` with e^eps rounded down (a smaller a only raises ``b - a s`` for s >= 0)."""
    e = np.asarray(eps, dtype=float)
    with np.errstate(over="ignore"):
        a = np.exp(e) * (1.0 - 4 * _U)
    return h(np.where(np.isfinite(a), a, math.inf))
