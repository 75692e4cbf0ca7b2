"""Certified search for ``max_{x != x'} D_{e^eps}(K_x || K_x')`` (Definition 1(2); private).

The search behind :func:`chainamp.mixing.dobrushin` and :func:`chainamp.mixing.dobrushin_curve`
(:func:`_max_hockey`, :func:`_curve_values`): shortcuts, the exact small-operator pass, the blocked
scan of every pair with per-pair certified bounds (:mod:`.scan`; with the bounds kept across eps of
:mod:`.anchors` when the n x n matrices fit), and, at very large eps, the enumeration of the active
terms only (:func:`_enumerate_hockey`). Rows, preparation and exact pair evaluation come from
:mod:`.pairwise`. Every value is rounded toward the safe (larger) side and is never below the
exact value for the stored matrix.

Floating-point error model (used by every rounding below): a sum of m
non-negative doubles has relative error at most ``(m - 1) u`` in any order;
``math.exp`` and ``math.log`` are within one ulp (relative ``2u``), numpy's
vectorised ``log`` within four; ``u = 2**-53``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.sparse as sp

from .anchors import anchored_max, anchors_allowed
from .pairwise import _INF_EPS, _TINY, _U, _Prep, _eval_pairs, _hockey_rows, _max_inf, _rows
from .scan import scan_max
from .._numerics import check_memory, progress_bar, scaled_by_exp
from ..errors import ResourceLimitError

__all__ = []

#: Above this eps the scan's float ``c = exp(eps)`` could overflow a product: exact paths only.
_SCAN_MAX_EPS = 700.0
#: The enumeration of active terms is tried when ``c (2m + 16) u`` exceeds this (few active terms).
_ENUM_FROM = 1e-7


#: The enumeration path keeps three n x n accumulators: used for n up to this.
_ENUM_MAX_N = 3000


def _scaled_inv(p: np.ndarray, eps: float) -> np.ndarray:
    """``e^-eps p`` with relative error <= 6u plus 2 ulps of the subnormal range."""
    if eps <= 700.0:
        return p * math.exp(-eps)
    h = math.exp(-0.5 * eps)
    return (p * h) * h


def _sorted_columns(prep: _Prep):
    """(row order, sorted values) of every column of a dense K, kept in ``prep.cache`` for the next eps
    (independent of eps); None when the n x m copies do not fit (each enumeration then sorts its blocks)."""
    kept = prep.cache.get("sorted_columns")
    if kept is None:
        n, m = prep.n, prep.m
        try:
            check_memory(12.0 * n * m, f"the sorted columns of a {n} x {m} operator kept across eps")
        except ResourceLimitError:
            return None
        order = np.argsort(prep.data, axis=0, kind="stable").astype(np.int32)
        kept = prep.cache.setdefault("sorted_columns", (order, np.take_along_axis(prep.data, order, axis=0)))
    return kept


def _enumerate_hockey(prep: _Prep, eps: float, budget: int, matrix: bool = False):
    """All ordered pairs at once by enumerating the ACTIVE terms only (large eps).

    A term ``[K(x,y) - c K(x',y)]_+`` with ``K(x',y) > 0`` is positive only when
    ``K(x',y) < K(x,y) / c``; sorting each column lists those x' for every x. The terms
    with ``K(x',y) = 0`` are ``K @ [K == 0]^T``. Per-pair sums go through ``bincount``;
    the threshold is relaxed by ``32u`` so every term that is, or could truly be,
    positive is enumerated (the others are truly 0).
    Returns None (caller falls back) when about more than ``budget`` terms would be
    needed (estimated from a sample of columns: one term costs about as much as 128
    entries of the L1 pass). The result is rounded up by ``(m + 2) u`` relatively plus
    ``8u max_x sum K_x`` (the terms' own errors), so it may exceed the exact value by
    about 1e-15. With ``matrix=True`` returns instead ``(U, low)``: the n x n matrix of those
    per-pair upper bounds (diagonal -inf; kept as an anchor by :mod:`.anchors`) and the best
    per-pair lower bound (the same error taken off).
    """
    data, n, m = prep.data, prep.n, prep.m
    if not isinstance(data, np.ndarray) or n > _ENUM_MAX_N:  # sparse, or a dask-backed operator's row reader
        return None
    width = max(1, min(m, 2**20 // n))

    def columns():
        """Per column: (values p, sorted column w, sorted row order, first positive z, rows, k)."""
        kept = _sorted_columns(prep)
        for y0 in range(0, m, width):
            blk = data[:, y0:y0 + width]
            if kept is None:
                order = np.argsort(blk, axis=0, kind="stable")
                srt = np.take_along_axis(blk, order, axis=0)
            else:
                order, srt = kept[0][:, y0:y0 + width], kept[1][:, y0:y0 + width]
            for t in range(blk.shape[1]):
                w = srt[:, t]
                z = int(np.searchsorted(w, 0.0, side="right"))  # first positive entry
                if z == n:
                    continue
                rows = np.flatnonzero(blk[:, t] > 0)
                thr = _scaled_inv(blk[rows, t], eps) * (1.0 + 32 * _U) + 4 * _TINY
                k = np.maximum(np.searchsorted(w, thr, side="left") - z, 0)
                yield blk[rows, t], w, order[:, t], z, rows, k

    # cost estimate from a sample of columns (only decides the path, never the value)
    sample = np.linspace(0, m - 1, min(m, 48)).astype(int)
    cols = np.sort(data[:, sample], axis=0)
    est = 0
    for t, y in enumerate(sample):
        p = data[data[:, y] > 0, y]
        z = int(np.searchsorted(cols[:, t], 0.0, side="right"))
        est += int(np.maximum(np.searchsorted(cols[:, t], _scaled_inv(p, eps), side="left") - z, 0).sum())
    if est * m / sample.size > budget:
        return None
    nn = n * n
    val = np.zeros(nn)
    parts: list = []
    pending = 0

    def flush():
        idx = np.concatenate([q[0] for q in parts])
        P = np.concatenate([q[1] for q in parts])
        cQ = scaled_by_exp(np.concatenate([q[2] for q in parts]), eps)
        val[:] += np.bincount(idx, weights=np.maximum(P - cQ, 0.0), minlength=nn)
        parts.clear()

    for p, w, order, z, rows, k in columns():
        tot = int(k.sum())
        if not tot:
            continue
        pos = z + np.arange(tot) - np.repeat(np.cumsum(k) - k, k)
        parts.append((np.repeat(rows, k) * n + order[pos], np.repeat(p, k), w[pos]))
        pending += tot
        if pending > 2**22:
            flush()
            pending = 0
    if parts:
        flush()
    zero_cols = np.flatnonzero((data == 0).any(axis=0))
    if zero_cols.size:  # terms with K(x', y) = 0: sums of non-negative products
        sub = data[:, zero_cols]
        val += (sub @ (sub == 0).T.astype(float)).ravel()
    val = val.reshape(n, n)
    np.fill_diagonal(val, -math.inf)
    k = int(np.argmax(val))
    i, j = divmod(k, n)
    best = max(float(val[i, j]), 0.0)
    # terms: 7u p each where (near-)active, so at most 8u s_x per pair in all, plus
    # underflow (2**-1074 per term) and the (m + 2) u of the sums
    slack = 8 * _U * float(prep.sums.max()) * (1.0 + (m + 2) * _U) + m * _TINY
    if matrix:
        low = math.nextafter(best * (1.0 - (m + 2) * _U) - slack, -math.inf)
        val *= 1.0 + (m + 2) * _U
        val += slack
        np.nextafter(val, math.inf, out=val)
        np.fill_diagonal(val, -math.inf)
        return val, low
    return min(math.nextafter(best * (1.0 + (m + 2) * _U) + slack, math.inf), 1.0), i, j


#: Below this many entries ``n * n * m``, all pairs are evaluated exactly in one pass.
_SMALL_WORK = 2**16


@functools.lru_cache(maxsize=16)
def _off_diagonal(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the n * (n - 1) ordered pairs x != x' (read-only: cached)."""
    I, J = np.divmod(np.arange(n * n), n)
    off = I != J
    I, J = I[off], J[off]
    I.setflags(write=False)
    J.setflags(write=False)
    return I, J



def _all_pairs_max(prep: _Prep, eps: float) -> tuple[float, int, int]:
    """Every ordered pair evaluated exactly (term by term), by chunks of rows: O(chunk x m) memory."""
    n = prep.n
    best, bi, bj = -1.0, 0, 1
    step = max(1, 2**16 // n)
    for i0 in range(0, n, step):
        I, J = np.meshgrid(np.arange(i0, min(n, i0 + step)), np.arange(n), indexing="ij")
        I, J = I.ravel(), J.ravel()
        off = I != J
        _, ups = _eval_pairs(prep.data, I[off], J[off], eps)
        if ups.size:
            k = int(np.argmax(ups))
            if ups[k] > best:
                best, bi, bj = float(ups[k]), int(I[off][k]), int(J[off][k])
    return min(max(best, 0.0), 1.0), bi, bj


def _max_hockey(prep: _Prep, eps: float, *, executor=None, progress=None) -> tuple[float, int, int]:
    """``max_{x != x'} D_{e^eps}(K_x || K_x')``, rounded up, and the pair attaining it.

    Shortcuts (disjoint supports, shared support beyond the largest log-ratio, eps = inf), then:
    small operators (``n^2 m <= 2^16``) exactly in one vectorised pass; eps beyond 700 (or a large
    ``e^eps`` with an operator-level estimate of few active terms) by enumerating the active terms;
    otherwise the blocked scan of :mod:`.scan` (certified per-pair bounds, the best pairs refined
    exactly), through the bounds kept across eps of :mod:`.anchors` when they fit in memory.
    """
    n, ultra = prep.n, prep.ultra
    if n < 2:
        return 0.0, 0, 0
    if prep.disjoint is not None:  # disjoint supports: D_c = K_x(Y) = 1 for every c
        return 1.0, prep.disjoint[0], prep.disjoint[1]
    if ultra.identical or (ultra.shared and eps >= ultra.log_max):
        return 0.0, ultra.rows[0], ultra.rows[1]  # every term p - e^eps q <= 0 exactly
    if math.isinf(eps) or eps >= _INF_EPS:
        if ultra.shared:
            return 0.0, ultra.rows[0], ultra.rows[1]
        return _max_inf(prep)
    if n * n * prep.m <= _SMALL_WORK:  # small operator: every pair exactly, one vectorised pass
        I, J = _off_diagonal(n)
        _, ups = _hockey_rows(_rows(prep.data, I), _rows(prep.data, J), eps)
        k = int(np.argmax(ups))
        return min(float(ups[k]), 1.0), int(I[k]), int(J[k])
    anchored = anchors_allowed(prep)
    if eps > _SCAN_MAX_EPS or ((2 * prep.m + 16) * _U * math.exp(eps) > _ENUM_FROM
                               and not (anchored and prep.cache.get("anchors"))):
        enumerated = _enumerate_hockey(prep, eps, budget=max(n * n * prep.m // 128, 2**20))
        if enumerated is not None:
            return enumerated
        if eps > _SCAN_MAX_EPS:
            return _all_pairs_max(prep, eps)
    c = math.exp(eps)
    if anchored:
        full = None
        if (2 * prep.m + 16) * _U * c > _ENUM_FROM:  # few active terms: enumerate them rather than scan
            def full():
                return _enumerate_hockey(prep, eps, budget=max(n * n * prep.m // 128, 2**20), matrix=True)
        return anchored_max(prep, eps, c, executor=executor, progress=progress, full=full)
    return scan_max(prep, eps, c, executor=executor, progress=progress)


def _curve_values(prep: _Prep, eps_sorted: np.ndarray, *, executor=None, progress=None) -> np.ndarray:
    """gamma at each eps (ascending, distinct): :func:`_max_hockey` in turn, so that the pair bounds
    kept across eps (:mod:`.anchors`) prune the pairs at every eps after the first."""
    out = np.empty(eps_sorted.size)
    with progress_bar(eps_sorted.size if eps_sorted.size > 1 else None, "epsilon values", unit="eps",
                      progress=progress if eps_sorted.size > 1 else False) as bar:
        for k, e in enumerate(eps_sorted):
            out[k] = _max_hockey(prep, float(e), executor=executor, progress=progress)[0]
            bar.update(1)
    return out
