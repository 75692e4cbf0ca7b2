"""The clone pair shared by the generic and the variation-ratio bounds: counts of two kinds of clones.

The pair (a private helper of :mod:`.generic` and :mod:`.variation`): n - 1 other users, each
independently a *clone* with probability ``s``; a clone is of kind 0 or kind 1 with probability 1/2
each; the changing user is a clone of kind 0 with probability ``w`` under x0 (kind 1 under x1, the
kinds swapped). The observer sees the two counts ``(a, b)``, ``a + b = c + 1``, with
``C ~ Bin(n - 1, s)``. With probability ``1 - lam`` (the variation-ratio bound's third component of
the changing user, revealed to the observer) both hypotheses give the same view, which adds nothing
to the hockey-stick divergence at eps >= 0, so ``delta(eps) = lam * sum_c Bin(n-1, s)(c) D_c(eps)``.

Per c (``W = Bin(c, 1/2)`` pmf, ``S(j) = P(Bin(c, 1/2) >= j)``, ``A = w - e^eps (1 - w)``,
``B = e^eps w - (1 - w)``): ``P_c(a) - e^eps Q_c(a) = W(a) (A a / (c - a + 1) - B)`` because
``W(a - 1) / W(a) = a / (c - a + 1)``; the bracket increases with a, so the positive part is a tail
``a >= j*`` and ``D_c = max_j [A S(j - 1) - B S(j)] = A W(j* - 1) - (e^eps - 1) S(j*)`` (using
``A - B = 1 - e^eps``), with ``j*`` the first integer above ``(c + 1) B / ((2w - 1)(1 + e^eps))``.
``D_c`` does not increase with c (one more clone is a post-processing of both sides), and the pair
is symmetric (``a -> c + 1 - a`` swaps P and Q), so ``D(P || Q) = D(Q || P)``.

Rounding (toward a larger delta): ``e^eps`` is pushed down (the divergence falls as ``e^eps`` grows);
the three integers around the computed threshold are all tried and the largest value kept; beyond
one count per ``sd(C) / 64`` the window is summed in blocks of consecutive counts valued at their smallest count
(an upper bound: ``D_c`` does not increase with c); scipy's
binomial pmf and survival function are trusted to a relative ``SHUFFLE_SPECIAL_RTOL`` (pmf pushed up,
survival function pushed down where it is subtracted); the mass of ``C`` outside the summed window
(computed, pushed up) is added with ``D_c <= 1``; the final sum is rounded up.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import SHUFFLE_SPECIAL_RTOL, UNIT_ROUNDOFF, check_memory, round_up

__all__: list[str] = []

_U = UNIT_ROUNDOFF
_WINDOW_TAIL = 1e-18  # each tail of C left out of the sum (its mass is added back, computed)
#: the clone counts are summed in blocks of ``sd(C) / _BLOCK_PER_SD`` consecutive counts when that is more than one
#: (n >~ 1e5), each block's mass (a sum of pmfs, pushed up) times D at its smallest count: an upper bound since D_c
#: does not increase with c; over one block D_c changes by ~1e-5 relative (about 1500 counts evaluated in all)
_BLOCK_PER_SD = 64


def _stats():
    import scipy.stats

    return scipy.stats


def clone_window(n_others: int, s: float, tail: float = _WINDOW_TAIL) -> tuple[np.ndarray, np.ndarray, float]:
    """The summed window of ``C ~ Bin(n_others, s)``: its values (the first count of each block of ``sd / 64``
    counts when that is more than one), their pmf (block masses) pushed up, and the mass outside it pushed up."""
    st = _stats()
    if n_others == 0 or s <= 0.0:
        return np.zeros(1), np.ones(1), 0.0
    if s >= 1.0:
        return np.array([float(n_others)]), np.ones(1), 0.0
    if s < 1e-250:  # Boost's pmf overflows near subnormal s: C = 0 but with probability P(C >= 1) <= n s
        return np.zeros(1), np.ones(1), math.nextafter(n_others * s * (1.0 + 4 * _U), math.inf) + 1e-300
    mean, sd = n_others * s, math.sqrt(n_others * s * (1.0 - s))
    z = 4.0
    while True:
        lo = max(0, int(mean - z * sd - z))
        hi = min(n_others, int(mean + z * sd + z * z) + 1)
        out = (float(st.binom.cdf(lo - 1, n_others, s)) if lo > 0 else 0.0) + \
            (float(st.binom.sf(hi, n_others, s)) if hi < n_others else 0.0)
        if out <= tail or (lo == 0 and hi == n_others):
            break
        z *= 1.2
    check_memory(8.0 * 8 * (hi - lo + 1), f"the clone-count window of {hi - lo + 1} values")
    c = np.arange(lo, hi + 1, dtype=float)
    pc = st.binom.pmf(c, n_others, s) * (1.0 + SHUFFLE_SPECIAL_RTOL)
    w = int(sd // _BLOCK_PER_SD)
    if w > 1:  # blocks [k w, (k + 1) w) of counts, each valued at k w (D_c does not increase with c); aligned to
        # multiples of w (w depends on n and s only), so windows of different tails share their blocks
        blk = (c // w).astype(np.int64)
        starts = np.flatnonzero(np.diff(blk, prepend=blk[0] - 1))
        c, pc = blk[starts].astype(float) * w, np.add.reduceat(pc, starts) * (1.0 + (w + 2) * _U)
    return c, pc, out * (1.0 + SHUFFLE_SPECIAL_RTOL) + 1e-300


def _per_count(c: np.ndarray, w: float, e: float) -> np.ndarray:
    """Upper bounds of ``D_c(eps)`` for every c in the window, ``e`` a lower bound of ``e^eps``."""
    st = _stats()
    A = w - e * (1.0 - w)
    A_up = A + 4 * _U * (1.0 + e)
    if A_up <= 0.0:
        return np.zeros_like(c)
    B = e * w - (1.0 - w)
    em1 = max(0.0, (e - 1.0) * (1.0 - 4 * _U))
    theta = (c + 1.0) * (B / ((2.0 * w - 1.0) * (1.0 + e))) if w > 0.5 else c + 1.0
    base = np.floor(theta)
    r = SHUFFLE_SPECIAL_RTOL
    j = np.clip(base + 1.0, 0.0, c + 1.0)  # the threshold unless theta sits within rounding of an integer
    W1 = st.binom.pmf(j - 1.0, c, 0.5)  # W(j - 1); its neighbours by the exact ratios of binomial pmfs
    with np.errstate(divide="ignore", invalid="ignore"):
        W0 = np.where(j >= 2.0, W1 * (j - 1.0) / (c - j + 2.0), 0.0)  # W(j - 2)
        W2 = np.where(j <= c, W1 * (c - j + 1.0) / np.maximum(j, 1.0), 0.0)  # W(j)
    W2 = np.where(j == 0.0, st.binom.pmf(0.0, c, 0.5), W2)  # j = 0: W(j - 1) = 0, no ratio
    Wm = np.stack((W0, W1, W2)) * (1.0 + 8 * _U)  # the ratios' rounding, pushed up
    W_up, W_lo = Wm * (1.0 + r) + 1e-300, Wm * ((1.0 - r) * (1.0 - 32 * _U))  # 1e-300: an underflowed ratio
    S1 = np.where(j <= 0, 1.0, st.binom.sf(j - 1.0, c, 0.5))
    S_lo = np.stack((S1 * (1.0 - r) + W_lo[1],  # S(j - 1) = S(j) + W(j - 1)
                     S1 * (1.0 - r),
                     np.maximum(0.0, S1 * (1.0 - r) - W_up[2])))  # S(j + 1) = S(j) - W(j), bounded below
    vals = A_up * W_up - em1 * S_lo  # candidates j - 1, j, j + 1 (each uses W at its own j - 1)
    best = np.max(vals * (1.0 + 4 * _U) + 4 * _U * (A_up * W_up), axis=0)
    best = np.maximum(best, 0.0)
    return np.minimum(best, 1.0)


def clone_pair_delta(n_others: int, s: float, w: float, lam: float, epsilons: np.ndarray, *,
                     tail: float = _WINDOW_TAIL, window: tuple | None = None) -> np.ndarray:
    """Certified ``delta(eps)`` of the clone pair (module docstring) for every ``eps >= 0``; ``window``
    is a :func:`clone_window` of the same ``(n_others, s)`` computed once for many calls."""
    c, pc, tail = clone_window(n_others, s, tail) if window is None else window
    out = np.empty(epsilons.size)
    for i, eps in enumerate(epsilons.tolist()):
        if math.isinf(eps):
            out[i] = 0.0 if w < 1.0 else lam  # w = 1: the changing user is always seen
            continue
        e = math.exp(min(eps, 700.0)) * (1.0 - 4 * _U)  # a smaller e^eps only raises the bound
        d = _per_count(c, w, e)
        if not np.any(d > 0.0):
            out[i] = 0.0
            continue
        total = float(np.dot(pc, d))
        val = round_up(lam * (total + tail), c.size + 4)
        out[i] = min(1.0, val)
    return out


def invert_delta(delta_at, target: float, hi: float, *, rtol: float = 1e-6) -> float:
    """Smallest certified eps in ``[0, hi]`` with ``delta_at(eps) <= target``, by the Illinois variant of
    regula falsi on ``log delta(eps) - log target`` (zeros read as 1e-300), with a bisection step whenever
    an interpolated step would not shrink the bracket by 1 %. Returns the bracket's UPPER end, where
    ``delta_at(eps) <= target`` was evaluated (certified); inf when even ``hi`` does not reach ``target``.
    ``delta_at`` must not increase with eps (every hockey-stick curve)."""
    d0 = delta_at(0.0)
    if d0 <= target:
        return 0.0
    if math.isinf(hi):
        hi = 1.0
        while delta_at(hi) > target:
            hi *= 2.0
            if hi > 1e4:
                return math.inf
    dhi = delta_at(hi)
    if dhi > target:
        return math.inf
    lt = math.log(target)

    def f(d: float) -> float:
        return math.log(max(d, 1e-300)) - lt

    lo, flo, fhi = 0.0, f(d0), f(dhi)
    last = 0
    while hi - lo > rtol * hi + 1e-15:
        width = hi - lo
        mid = lo + width * flo / (flo - fhi) if flo != fhi else lo + 0.5 * width
        if not (lo + 0.01 * width <= mid <= hi - 0.01 * width):
            mid = min(max(mid, lo + 0.01 * width), hi - 0.01 * width)
        d = delta_at(mid)
        if d <= target:
            hi, fhi = mid, f(d)
            if last == 1:
                flo *= 0.5  # Illinois: the other end has stayed twice
            last = 1
        else:
            lo, flo = mid, f(d)
            if last == -1:
                fhi *= 0.5
            last = -1
    return math.nextafter(hi, math.inf)
