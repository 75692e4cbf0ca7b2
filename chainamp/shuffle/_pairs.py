"""Finite pairs of distributions known up to a relative error and a dropped tail, as ROC points.

Private to ``shuffle/``. A pair ``(P, Q)`` of output distributions has the hockey-stick curve
``H_a(P || Q) = max_S P(S) - a Q(S)`` (every ``a = e^eps > 0``), which only depends on the upper concave
hull of its ROC points ``(Q(S), P(S))``. A maximum over many pairs (many datasets of the other users, both
orders of a neighbouring pair) is the curve of the hull of the union of their ROC points, which
:meth:`chainamp.privacy.DominatingPair.from_roc` turns into one finite dominating pair.

:func:`roc_upper` returns points that dominate the exact pair's: if the computed ``P~, Q~`` satisfy
``|P - P~| <= r P~`` and ``|Q - Q~| <= r Q~`` entrywise and the true P has at most ``tau`` more mass on
outcomes left out, then for every ``a >= 0``

    H_a(P || Q) <= tau + (1 + r) max_k [P~_k - a (1 - r)/(1 + r) (1 - 2d) Q~_k],

where ``P~_k, Q~_k`` are prefix sums in the order of the COMPUTED log-ratios and ``d`` bounds their error.
Derivation: ``[P - aQ]_+ <= (1 + r)[P~ - a' Q~]_+`` with ``a' = a (1 - r)/(1 + r)``; the optimal set S* of
``(P~, Q~)`` at ``a'`` is contained in the computed prefix ``S_c`` (computed ratio above ``log a' - d``), and
every outcome of ``S_c \\ S*`` has ``a' Q~ - P~ <= 2 d a' Q~``, so
``sum_{S*} (P~ - a' Q~) <= P~(S_c) - a' (1 - 2d) Q~(S_c)``. The prefix sums themselves are rounded
(``(len + 2) u`` relative) outward.
"""

from __future__ import annotations

import numpy as np

from .._numerics import UNIT_ROUNDOFF, calls_kernels, compiled

__all__: list[str] = []


def _sorted_prefix(P: np.ndarray, Q: np.ndarray, monotone: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """Prefix sums in decreasing computed log-ratio and the bound ``d`` of that ratio's error; ``monotone``: the
    caller guarantees the EXACT ratio ``P/Q`` is non-increasing along the arrays (then the natural order is the
    optimal one for the exact pair and no band correction is needed: ``d = 0``)."""
    if monotone:
        return np.cumsum(P), np.cumsum(Q), 0.0
    keep = (P > 0) | (Q > 0)
    P, Q = P[keep], Q[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        lp, lq = np.log(P), np.log(Q)
        llr = lp - lq
    llr = np.where(np.isnan(llr), 0.0, llr)
    order = np.argsort(-llr, kind="stable")
    fin = np.concatenate((np.abs(lp[np.isfinite(lp)]), np.abs(lq[np.isfinite(lq)])))
    d = 8.0 * UNIT_ROUNDOFF * (float(fin.max(initial=0.0)) + 1.0)
    return np.cumsum(P[order]), np.cumsum(Q[order]), d


def roc_upper(P: np.ndarray, Q: np.ndarray, rel: float, tau: float,
              monotone: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """ROC points ``(s, b)`` whose hull's curve lies above ``H_a(P || Q)`` of the exact pair (module docstring).

    >>> s, b = roc_upper(np.array([0.75, 0.25]), np.array([0.25, 0.75]), 0.0, 0.0)
    >>> bool(b[1] >= 0.75 and s[1] <= 0.25)
    True
    """
    cP, cQ, d = _sorted_prefix(np.asarray(P, float), np.asarray(Q, float), monotone)
    n = cP.size
    u = UNIT_ROUNDOFF
    shrink = (1.0 - rel) * (1.0 - (n + 4) * u) * (1.0 - 2.0 * d) * (1.0 - 4 * u)
    grow = (1.0 + rel) * (1.0 + (n + 4) * u) * (1.0 + 4 * u)
    s = np.maximum(np.nextafter(cQ * shrink, -np.inf), 0.0)
    b = np.minimum(np.nextafter((cP * grow + tau) * (1.0 + 4 * u), np.inf), 1.0)
    s = np.concatenate(([0.0], s))
    b = np.concatenate(([min(np.nextafter(tau, np.inf), 1.0) if tau > 0 else 0.0], b))
    return s, b


def _roc_both_source(P, Q, P2, Q2, shrink, grow, tau, first):  # pragma: no cover - compiled by numba
    """The points of :func:`roc_upper` (``monotone``) for ``(P, Q)`` and for ``(Q2, P2)`` (reversed arrays) in one pass,
    with the outward roundings of :func:`roc_upper_both` (no ``nextafter``: the margins are in ``shrink``, ``grow``
    and ``tau``)."""
    n = P.size
    s = np.empty(2 * n + 2)
    b = np.empty(2 * n + 2)
    for order in range(2):
        base = order * (n + 1)
        s[base] = 0.0
        b[base] = first
        cp = 0.0
        cq = 0.0
        for k in range(n):
            if order == 0:
                cp += P[k]
                cq += Q[k]
            else:
                cp += Q2[n - 1 - k]
                cq += P2[n - 1 - k]
            x = cq * shrink
            s[base + k + 1] = x if x >= 2.2250738585072014e-308 else 0.0  # a subnormal product: 0 (s down is safe)
            y = cp * grow + tau + 1e-320  # 1e-320 covers the absolute rounding of a subnormal product or sum
            b[base + k + 1] = y if y < 1.0 else 1.0
    return s, b


def _user_pair_source(z, p, q, eta):  # pragma: no cover - compiled by numba
    """``P(s) = p z(s) + q z(s - 1)``, ``Q(s) = q z(s) + p z(s - 1)`` and, when ``eta > 0``, P raised and Q lowered by
    ``eta`` with the roundings of :func:`user_pair_widened`."""
    n = z.size + 1
    P = np.empty(n)
    Q = np.empty(n)
    prev = 0.0
    for i in range(n):
        cur = z[i] if i < n - 1 else 0.0
        x = p * cur + q * prev
        y = q * cur + p * prev
        if eta > 0.0:
            x = (x + eta) * (1.0 + 4.0 * 1.1102230246251565e-16) + 1e-320
            y = y - eta
            y = y * (1.0 - 4.0 * 1.1102230246251565e-16) if y > 0.0 else 0.0
        P[i] = x
        Q[i] = y
        prev = cur
    return P, Q


def user_pair_widened(z: np.ndarray, p: float, q: float, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """One user's bit added to a count law ``z`` (keep probability p, ``q = 1 - p``), both orders' outcome masses
    ``P(s) = p z(s) + q z(s - 1)``, ``Q(s) = q z(s) + p z(s - 1)`` (each within ``3u`` relative of the exact sums of
    the computed products), and when the entries of z carry an absolute error ``eta`` (already scaled by the
    caller for the two coefficients), P raised and Q lowered by it: ``fl(fl(P + eta)(1 + 4u)) >= (P + eta)(1 - u)^2
    (1 + 4u) > P + eta`` (plus ``1e-320`` for a subnormal sum), and a positive ``x = fl(Q - eta)`` is at most
    ``(Q - eta)(1 + u)`` (exact when subnormal), so ``fl(x (1 - 4u)) <= Q - eta``; a non-positive one gives 0.

    >>> P, Q = user_pair_widened(np.array([0.5, 0.5]), 0.75, 0.25, 0.0)
    >>> P.tolist(), Q.tolist()
    ([0.375, 0.5, 0.125], [0.125, 0.5, 0.375])
    """
    return compiled(_user_pair_source)(np.ascontiguousarray(z, dtype=float), float(p), float(q), float(eta))


def _hockey_both_source(P, Q, a):  # pragma: no cover - compiled by numba
    f = 0.0
    g = 0.0
    for i in range(P.size):
        x = P[i] - a * Q[i]
        if x > 0.0:
            f += x
        y = Q[i] - a * P[i]
        if y > 0.0:
            g += y
    return max(f, g)


def hockey_both(P: np.ndarray, Q: np.ndarray, a: float) -> float:
    """``max`` over both orders of ``sum [P - a Q]_+`` in floats, one compiled pass (a heuristic for deciding where
    to spend work, not a certificate).

    >>> hockey_both(np.array([0.75, 0.25]), np.array([0.25, 0.75]), 1.0)
    0.5
    """
    return float(compiled(_hockey_both_source)(np.ascontiguousarray(P, dtype=float),
                                               np.ascontiguousarray(Q, dtype=float), float(a)))


def roc_upper_both(P: np.ndarray, Q: np.ndarray, rel: float, tau: float, P2: np.ndarray | None = None,
                   Q2: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``both_orders(roc_upper, P, Q, rel, tau, monotone=True)`` in one compiled pass, each run sorted by s: the
    ``n + 1`` points of ``(P, Q)`` then those of the reversed ``(Q, P)``; the caller guarantees the EXACT ratio
    ``P/Q`` is non-increasing along the arrays. ``P2, Q2`` (default ``P, Q``): the arrays the second order reads
    (the same exact pair widened for ``H(Q || P)``: :func:`roc_upper_widened`).

    Rounding (instead of :func:`roc_upper`'s ``nextafter`` after each product, a libm call per point): the
    required factors are ``S = (1 - rel)(1 - (n + 4) u)`` and ``G = (1 + rel)(1 + (n + 4) u)``. The kernel's float
    factors carry ``(1 - 4u)(1 - 8u)`` and ``(1 + 4u)(1 + 8u)``: with at most seven roundings (the factor chains
    and the product), ``fl(cQ shrink) <= cQ S (1 - 4u)(1 - 8u)(1 + u)^7 < cQ S`` for a normal result (a subnormal
    one is set to 0, which only lowers s), and ``fl(fl(cP grow) + tau') >= (cP G + tau)(1 + 4u)`` with
    ``tau' = fl(tau (1 + 8u))``; the absolute ``1e-320`` covers subnormal products and sums (at most ``2^-1075``
    each). Every point is as far out as :func:`roc_upper`'s bound requires (``tests/shuffle`` checks it in
    Fractions on inputs where the plain products round the wrong way).

    >>> s, b = roc_upper_both(np.array([0.75, 0.25]), np.array([0.25, 0.75]), 0.0, 0.0)
    >>> bool(b[2] >= 1.0 and s[1] <= 0.25 and s.size == 6)
    True
    """
    P = np.ascontiguousarray(P, dtype=float)
    Q = np.ascontiguousarray(Q, dtype=float)
    n = P.size
    u = UNIT_ROUNDOFF
    shrink = (1.0 - rel) * (1.0 - (n + 4) * u) * (1.0 - 4 * u) * (1.0 - 8 * u)
    grow = (1.0 + rel) * (1.0 + (n + 4) * u) * (1.0 + 4 * u) * (1.0 + 8 * u)
    first = min(float(np.nextafter(tau, np.inf)), 1.0) if tau > 0 else 0.0
    P2 = P if P2 is None else np.ascontiguousarray(P2, dtype=float)
    Q2 = Q if Q2 is None else np.ascontiguousarray(Q2, dtype=float)
    return compiled(_roc_both_source)(P, Q, P2, Q2, shrink, grow, tau * (1.0 + 8 * u), first)


def roc_upper_widened(z: np.ndarray, p: float, q: float, eta: float, rel: float, tau: float,
                      pair: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`roc_upper_both`'s two runs for the pair of :func:`user_pair_widened` when z's entries carry an absolute
    error ``eta``: each order widened its own way. The first order ``H(P || Q)`` needs P raised and Q lowered; the
    second, ``H(Q || P)``, reads Q as its detection side and P as its false alarm, so it needs Q raised and P lowered
    (one widening for both orders would put the second order's curve about ``eta`` per outcome below the exact one).
    ``user_pair_widened(z, q, p, eta)`` is ``(Q raised, P lowered)``. ``pair``: ``user_pair_widened(z, p, q, eta)``
    when the caller has it.

    >>> s, b = roc_upper_widened(np.array([0.5, 0.5]), 0.75, 0.25, 0.01, 0.0, 0.0)
    >>> bool(b[5] >= 0.385 and s[5] <= 0.115)   # the second order's first outcome: Q(2) + eta, P(2) - eta
    True
    """
    P, Q = user_pair_widened(z, p, q, eta) if pair is None else pair
    if eta == 0.0:
        return roc_upper_both(P, Q, rel, tau)
    Qh, Pl = user_pair_widened(z, q, p, eta)
    return roc_upper_both(P, Q, rel, tau, Pl, Qh)


def roc_lower(P: np.ndarray, Q: np.ndarray, rel: float, monotone: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """ROC points of actual tests of the exact pair rounded the other way (``P(S)`` down, ``Q(S)`` up): their
    hull's curve lies below ``H_a(P || Q)`` (every prefix is a set S of outcomes)."""
    cP, cQ, _ = _sorted_prefix(np.asarray(P, float), np.asarray(Q, float), monotone)
    n = cP.size
    u = UNIT_ROUNDOFF
    b = np.maximum(np.nextafter(cP * (1.0 - rel) * (1.0 - (n + 4) * u), -np.inf), 0.0)
    s = np.minimum(np.nextafter(cQ * (1.0 + rel) * (1.0 + (n + 4) * u), np.inf), 1.0)
    return np.concatenate(([0.0], s)), np.concatenate(([0.0], b))


def both_orders(fn, P: np.ndarray, Q: np.ndarray, *args, monotone: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The ROC points of ``(P, Q)`` and of ``(Q, P)`` together (a symmetric neighbour relation). ``monotone``:
    the exact ``P/Q`` is non-increasing along the arrays, so ``Q/P`` is along the reversed arrays."""
    if monotone:
        s1, b1 = fn(P, Q, *args, monotone=True)
        s2, b2 = fn(Q[::-1], P[::-1], *args, monotone=True)
    else:
        s1, b1 = fn(P, Q, *args)
        s2, b2 = fn(Q, P, *args)
    return np.concatenate((s1, s2)), np.concatenate((b1, b2))


def thin(s: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop points dominated by another point (no larger s and no smaller b): the hull is unchanged.

    Sorted by s with a stable sort (runs of already sorted points, as the ROC chains and the accumulated hull
    are, merge in linear time); among equal s the later points of higher b survive the running maximum and the
    chain then drops the lower ones (a vertical pair is never both kept as a turn), so only non-vertices go."""
    order = np.argsort(s, kind="stable")
    s, b = s[order], b[order]
    prev = np.maximum.accumulate(np.concatenate(([-1.0], b[:-1])))
    keep = b > prev
    s, b = s[keep], b[keep]
    keep = _hull_mask()(s, b)
    return s[keep], b[keep]


def _chain_source(s, b):  # pragma: no cover - compiled by numba
    """Monotone chain over points sorted by s with increasing b: the indices of the points kept, in order. A point
    is dropped only when the float cross product says, with a margin far above its rounding error, that it lies
    strictly below the chord of its neighbours on the chain (never a vertex of the exact hull); :meth:`from_roc`
    then computes the exact hull of the survivors."""
    n = s.size
    stack = np.empty(n, np.int64)
    top = 0
    for i in range(n):
        while top >= 2:
            o = stack[top - 2]
            a = stack[top - 1]
            t1 = (s[a] - s[o]) * (b[i] - b[o])
            t2 = (b[a] - b[o]) * (s[i] - s[o])
            if t1 - t2 > 64.0 * 1.1102230246251565e-16 * (abs(t1) + abs(t2)) + 1e-300:
                top -= 1
            else:
                break
        stack[top] = i
        top += 1
    return stack[:top]


@calls_kernels(_chain_source)
def _hull_source(s, b):  # pragma: no cover - compiled by numba
    """:func:`_chain_source` as a mask: True for the points kept."""
    keep = np.zeros(s.size, np.bool_)
    for j in _chain_source(s, b):
        keep[j] = True
    return keep


def _hull_mask():
    """The compiled monotone chain (numba when installed, the plain function otherwise)."""
    return compiled(_hull_source)


@calls_kernels(_chain_source)
def _merge_source(hs, hb, s, b, n1):  # pragma: no cover - compiled by numba
    """:meth:`HullAccumulator.add` for new points in two runs each sorted by s (``[0, n1)`` and ``[n1, len)``): the
    same filter below the current chain (``np.interp``'s formula), a stable merge by s (hull, run 1, run 2: the
    order of a stable argsort of their concatenation), the running-maximum filter and the chain of
    :func:`_chain_source`, in linear time."""
    H = hs.size
    m = s.size
    keep = np.ones(m, np.bool_)
    if H >= 2:
        for r in range(2):
            lo = 0 if r == 0 else n1
            hi = n1 if r == 0 else m
            j = -1
            for i in range(lo, hi):
                x = s[i]
                while j + 1 < H and hs[j + 1] <= x:
                    j += 1
                if j < 0:
                    ref = hb[0]
                elif j == H - 1:
                    ref = hb[H - 1]
                else:
                    ref = (hb[j + 1] - hb[j]) / (hs[j + 1] - hs[j]) * (x - hs[j]) + hb[j]
                keep[i] = b[i] > ref - 1e-13 * max(ref, 1e-300) - 1e-300
        if not keep.any():  # nothing above the chain: the hull is unchanged
            return hs.copy(), hb.copy()
    total = H + m
    ms = np.empty(total)
    mb = np.empty(total)
    i0 = 0
    i1 = 0
    i2 = n1
    t = 0
    best = -1.0
    while True:
        while i1 < n1 and not keep[i1]:
            i1 += 1
        while i2 < m and not keep[i2]:
            i2 += 1
        src = -1
        x = 0.0
        if i0 < H:
            src = 0
            x = hs[i0]
        if i1 < n1 and (src < 0 or s[i1] < x):
            src = 1
            x = s[i1]
        if i2 < m and (src < 0 or s[i2] < x):
            src = 2
            x = s[i2]
        if src < 0:
            break
        if src == 0:
            y = hb[i0]
            i0 += 1
        elif src == 1:
            y = b[i1]
            i1 += 1
        else:
            y = b[i2]
            i2 += 1
        if y > best:
            ms[t] = x
            mb[t] = y
            t += 1
        if y > best:
            best = y
    kept = _chain_source(ms[:t], mb[:t])
    return ms[kept], mb[kept]


class HullAccumulator:
    """The upper hull of many components' ROC points, merged one component at a time.

    A new point is dropped when it lies below the current hull's chain (``np.interp`` of its vertices, a concave
    piecewise-linear function) by more than a margin far above the interpolation's rounding error: such a point
    is never a vertex of the final hull (the final hull is above the current one), so the maximum of ``b - a s``
    is unchanged. The survivors are thinned (:func:`thin`) together with the current vertices."""

    def __init__(self) -> None:
        self.s = np.zeros(0)
        self.b = np.zeros(0)

    def add(self, s: np.ndarray, b: np.ndarray) -> None:
        s = np.asarray(s, dtype=float)
        b = np.asarray(b, dtype=float)
        if self.s.size >= 2:
            ref = np.interp(s, self.s, self.b)
            keep = b > ref - 1e-13 * np.maximum(ref, 1e-300) - 1e-300
            s, b = s[keep], b[keep]
        if s.size:
            self.s, self.b = thin(np.concatenate((self.s, s)), np.concatenate((self.b, b)))

    def add_runs(self, s: np.ndarray, b: np.ndarray, n1: int) -> None:
        """:meth:`add` for points in two runs each sorted by s (``[0, n1)`` and the rest, as
        :func:`roc_upper_both` returns them): the same points are kept, merged in linear time (compiled)."""
        s = np.ascontiguousarray(s, dtype=float)
        b = np.ascontiguousarray(b, dtype=float)
        self.s, self.b = compiled(_merge_source)(self.s, self.b, s, b, int(n1))

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        return self.s, self.b
