"""Streaming kernels of the exact privacy profile (private to ``privacy/``; used by :mod:`.exact`).

The unordered neighbouring pairs are never stored with their sorted outcomes: they are enumerated by
index ranges (all pairs of ``n`` inputs in lexicographic order ``(0, 1), (0, 2), ..., (n - 2, n - 1)``,
or an explicit list), cut into *blocks* of about ``BLOCK_ENTRIES`` pair-outcome entries and *units* of
``unit`` consecutive pairs (block and unit sizes depend only on the number of pairs and outputs, never
on the executor, so every result and witness is identical serially and in parallel). A block is
processed by the module-level :func:`_kernel` (picklable, so it runs on any
``concurrent.futures.Executor``), which sorts each pair's log-likelihood ratios, forms the partial sums
and evaluates every requested eps at once, exactly as :mod:`.exact` documents; it returns only
reductions (per eps the best value and first pair attaining it, per unit the maxima), never per-pair
arrays. Extra memory is O(block x outputs).

Row access contract (what a data source must provide): :func:`_block_rows` is the ONLY place rows
are read. ``data[idx]`` with ``idx`` a sorted 1-D int array must return the dense float64 rows
``idx`` (all columns) -- a numpy array does, and so does the picklable reader of a dask-backed
operator (:class:`chainamp.operators.DaskRows`), which fetches the block where the kernel runs.
"""

from __future__ import annotations

import bisect
import functools
import math
from typing import Any

import numpy as np

from .._numerics import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, round_up_array

__all__: list[str] = []

#: pair x outcome entries processed by one kernel call (bounds the kernel's temporaries: ~14 arrays of this many floats)
BLOCK_ENTRIES = 1 << 16  # (larger blocks were up to 3x slower per pair: their temporaries leave the caches)
#: at most this many pruning units are kept (a unit groups consecutive pairs; its summary is ~GRID_POINTS floats)
MAX_UNITS = 1 << 18
#: pairs with bit-identical sorted data form a class (symmetric mechanisms: k-RR has one); when a profile has at
#: most this many classes, their representatives' sorted data (within CLASS_BYTES) answer every later query
CLASS_LIMIT = 1 << 20
CLASS_BYTES = 32 << 20
#: eps grid of the pruning summaries (evenly spaced on [0, largest finite log-ratio])
GRID_POINTS = 33


def _block_rows(data: Any, idx: np.ndarray) -> np.ndarray:
    """The rows ``idx`` (sorted ints) of ``data`` as a dense float64 array: the row access contract above."""
    return np.asarray(data[idx], dtype=float)


class PairSpace:
    """The unordered neighbouring pairs ``(i, j)``, ``i < j``, by index: all pairs of ``n`` inputs in
    lexicographic order (``explicit`` None; nothing materialised) or the rows of ``explicit``."""

    __slots__ = ("n", "explicit", "count", "_off")

    def __init__(self, n: int, explicit: np.ndarray | None = None) -> None:
        self.n = int(n)
        self.explicit = explicit
        self.count = n * (n - 1) // 2 if explicit is None else int(explicit.shape[0])
        # all pairs: the number of pairs (a, b) with a < i is off(i) = i (n - 1) - i (i - 1) / 2
        i = np.arange(self.n, dtype=np.int64)
        self._off = None if explicit is not None else i * (self.n - 1) - i * (i - 1) // 2

    def pairs(self, p0: int, p1: int) -> tuple[np.ndarray, np.ndarray]:
        """``(i, j)`` of the pairs with indices ``p0 <= p < p1``."""
        if self.explicit is not None:
            return self.explicit[p0:p1, 0], self.explicit[p0:p1, 1]
        return self.at(np.arange(p0, p1, dtype=np.int64))

    def at(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(i, j)`` of the pairs with the given indices."""
        if self.explicit is not None:
            return self.explicit[p, 0], self.explicit[p, 1]
        i = np.searchsorted(self._off, p, side="right") - 1
        j = p - self._off[i] + i + 1
        return i.astype(np.intp), j.astype(np.intp)

    def used_rows(self) -> np.ndarray:
        if self.explicit is None:
            return np.arange(self.n)
        return np.unique(self.explicit)


def _task(data: Any, logs: np.ndarray | None, i: np.ndarray, j: np.ndarray, local: bool) -> tuple:
    """The rows a block needs (``rows``; None: the global indices of an in-memory matrix, no copy) and the pairs
    as indices into them; ``local`` (a process executor and an in-memory matrix) ships only those rows (and
    their logarithms) instead of the whole matrix."""
    if isinstance(data, np.ndarray) and not local:
        return (data, logs), None, i, j
    rows, inv = np.unique(np.concatenate([i, j]), return_inverse=True)
    li, lj = inv[:i.size], inv[i.size:]
    if local and isinstance(data, np.ndarray):
        return (data[rows], None if logs is None else logs[rows]), None, li, lj
    return (data, logs), rows, li, lj


def _fetch(source: tuple, rows: np.ndarray | None, cols: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The block's rows (kept columns) and their logarithms (precomputed for an in-memory matrix: numpy's
    log is elementwise, so the values are the same either way). ``rows`` None: the whole (in-memory) source."""
    data, logs = source
    if rows is None:
        R = np.asarray(data, dtype=float)
        if cols is not None and logs is None:
            R = R[:, cols]
        elif cols is not None:  # the kept columns of an in-memory matrix are cut once, with its logarithms
            raise AssertionError("an in-memory source is stored with its kept columns")  # pragma: no cover
    else:
        R = _block_rows(data, rows)
        if cols is not None:
            R = R[:, cols]
    if logs is not None:
        return R, logs if rows is None else logs[rows]
    with np.errstate(divide="ignore"):
        return R, np.log(R)


def _sorted_block(R: np.ndarray, logR: np.ndarray, li: np.ndarray, lj: np.ndarray, m: int):
    """Per pair: log-ratios sorted ascending (``a = log M_v - log M_u``, NaN -> 0) and the four partial sums."""
    with np.errstate(invalid="ignore"):
        neg = np.subtract(logR[lj], logR[li])
    nan = np.isnan(neg)
    if nan.any():
        neg[nan] = 0.0
    del nan
    order = np.argsort(neg, axis=1)
    B = li.size
    flat = order + (np.arange(B) * m)[:, None]
    a = neg.ravel().take(flat)
    del neg
    flat -= (np.arange(B) * m)[:, None]
    flat += (li * m)[:, None]
    ps = R.ravel().take(flat)
    flat += ((lj - li) * m)[:, None]
    qs = R.ravel().take(flat)
    del order, flat
    pre_u, pre_v, suf_u, suf_v = (np.zeros((B, m + 1)) for _ in range(4))
    np.cumsum(ps, axis=1, out=pre_u[:, 1:])
    np.cumsum(qs, axis=1, out=pre_v[:, 1:])
    np.cumsum(ps[:, ::-1], axis=1, out=suf_u[:, m - 1::-1])
    np.cumsum(qs[:, ::-1], axis=1, out=suf_v[:, m - 1::-1])
    return a, pre_u, pre_v, suf_u, suf_v


def _counts(a: np.ndarray, thresholds: np.ndarray, right: bool) -> np.ndarray:
    """Per row of ``a`` (each sorted ascending): ``#(a < t)`` (``right`` False) or ``#(a <= t)`` for every
    threshold, by exact comparisons (a ``searchsorted`` per row; a histogram of bucket indices when rows are
    short, where the per-row calls would dominate)."""
    B, m = a.shape
    T = thresholds.size
    if m >= 48 and 8 * T > m:  # many thresholds per long row: binary searches in each row
        side = "right" if right else "left"
        out = np.empty((B, T), dtype=np.intp)
        for r in range(B):
            out[r] = a[r].searchsorted(thresholds, side=side)
        return out
    order = np.argsort(thresholds, kind="stable")
    ts = thresholds[order]
    # b_y = #(t <= a_y) (left) or #(t < a_y) (right); then a_y < t_k (resp. <=) iff k >= b_y
    b = np.searchsorted(ts, a, side="left" if right else "right")
    hist = np.bincount((np.arange(B)[:, None] * (T + 1) + b).ravel(), minlength=B * (T + 1)).reshape(B, T + 1)
    cum = np.cumsum(hist, axis=1)[:, :T]
    out = np.empty_like(cum)
    out[:, order] = cum
    return out


def _direction(num, den, k, k_lo, k_hi, e, llr_err, m):
    """``[P_S - e^eps Q_S]_+`` over the computed set S (index k into the partial sums), an upper bound of the
    exact divergence up to one final relative rounding; ``k_lo``/``k_hi`` bound the band of outcomes whose
    computed log-ratio is within ``llr_err`` of eps (the error model of :func:`.exact.privacy_profile`)."""
    u = UNIT_ROUNDOFF
    offs = (np.arange(k.shape[0]) * (m + 1))[:, None]
    flat_num, flat_den = num.ravel(), den.ravel()
    P, Q = flat_num[k + offs], flat_den[k + offs]
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        logQ = np.log(Q)  # -inf where Q = 0
        cQ = np.exp(e + logQ)  # 0 where Q = 0, inf on overflow
        shrink = 1.0 - u * (2.0 * e + 10.0 * np.abs(np.where(Q > 0, logQ, 0.0)) + m + 16)
        # relative shrink for normal results; in the subnormal range exp and the product each round by
        # up to one absolute unit 2^-1074 that no relative factor covers, so subtract two of them
        Bq = np.maximum(cQ * np.maximum(shrink, 0.0) - 2.0 * SMALLEST_SUBNORMAL, 0.0)
        Bq[shrink <= 0] = 0.0  # no usable lower bound of e^eps Q: drop it (also avoids inf * 0)
        X = np.maximum(P * (1.0 + (m + 4) * u) - Bq, 0.0)
    band = k_hi != k_lo
    if np.any(band):
        hi, lo = flat_num[(k_hi + offs)[band]], flat_num[(k_lo + offs)[band]]
        X[band] += 2.0 * llr_err * (np.abs(hi - lo) + (m + 2) * u * hi)
    return X


def _values(sorted_block, eps: np.ndarray, llr_err: float, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per pair (rows) and eps (columns): upper bounds of ``D_{e^eps}(M_u || M_v)`` and ``D_{e^eps}(M_v || M_u)``."""
    a, pre_u, pre_v, suf_u, suf_v = sorted_block
    B, E = a.shape[0], eps.size
    vu, vv = np.empty((B, E)), np.empty((B, E))
    inf = np.isinf(eps)
    if np.any(inf):
        n_lo = np.count_nonzero(a == -math.inf, axis=1)
        n_hi = np.count_nonzero(a == math.inf, axis=1)
        idx = np.arange(B)
        vu[:, inf] = round_up_array(pre_u[idx, n_lo], m, upper=1.0)[:, None]
        vv[:, inf] = round_up_array(suf_v[idx, m - n_hi], m, upper=1.0)[:, None]
    fin = ~inf
    e = eps[fin]
    if e.size:
        d = llr_err
        # a ascending: count(llr > t) = count(a < -t)
        L = _counts(a, np.concatenate([-e, -(e + d), -(e - d)]), right=False)
        R = _counts(a, np.concatenate([e, e + d, e - d]), right=True)
        n = e.size
        vu[:, fin] = _direction(pre_u, pre_v, L[:, :n], L[:, n:2 * n], L[:, 2 * n:], e, d, m)
        vv[:, fin] = _direction(suf_v, suf_u, R[:, :n], R[:, n:2 * n], R[:, 2 * n:], e, d, m)
    return vu, vv


def _values_few(sorted_block, rows, e: float, llr_err: float, m: int) -> tuple[list, list]:
    """:func:`_values` at ONE finite eps for a few rows, with the same operations element by element: the
    counts are exact (a binary search per row), ``log`` and ``exp`` are numpy's own on a contiguous vector
    (as in :func:`_direction`), and the other steps are the same IEEE operations in the same order on Python
    floats. So every value is bit-identical to :func:`_values`' (tested), at a fraction of its overhead.
    Returns the lists ``vu``, ``vv`` (one float per row of ``rows``)."""
    a, pre_u, pre_v, suf_u, suf_v = sorted_block
    u, d = UNIT_ROUNDOFF, llr_err
    tl = np.array([-e, -(e + d), -(e - d)])  # u side: #(llr > t) = #(a < -t)
    tr = np.array([e, e + d, e - d])  # v side: #(a <= t)
    picks = []  # per row and direction: (numerator row, k, k_lo, k_hi), then Q
    qs = []
    for r in rows:
        ar = a[r]
        kl, kr = ar.searchsorted(tl, side="left").tolist(), ar.searchsorted(tr, side="right").tolist()
        for num, den, k in ((pre_u[r], pre_v[r], kl), (suf_v[r], suf_u[r], kr)):
            picks.append((num, k))
            qs.append(float(den[k[0]]))
    Q = np.array(qs)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        logQ = np.log(Q)
        cQ = np.exp(e + logQ)
    out = []
    grow = 1.0 + (m + 4) * u
    for (num, (k, k_lo, k_hi)), q, lq, cq in zip(picks, qs, logQ.tolist(), cQ.tolist()):
        shrink = 1.0 - u * (2.0 * e + 10.0 * abs(lq if q > 0 else 0.0) + m + 16)
        bq = 0.0 if shrink <= 0 else max(cq * shrink - 2.0 * SMALLEST_SUBNORMAL, 0.0)
        x = max(float(num[k]) * grow - bq, 0.0)
        if k_hi != k_lo:
            hi, lo = float(num[k_hi]), float(num[k_lo])
            x += 2.0 * llr_err * (abs(hi - lo) + (m + 2) * u * hi)
        out.append(x)
    return out[0::2], out[1::2]


def _kernel(task: tuple) -> tuple:
    """One block: ``(data, rows, li, lj, p0, cols, llr_err, m, eps, units, classes)`` -> per eps ``(best_u,
    arg_u, best_v, arg_v)`` (first pair index attaining each maximum); when ``units`` is given as ``(starts,
    ncols)``, the per-unit maxima ``max(vu, vv)`` at the first ``ncols`` eps; when ``classes`` (a cap), the
    block's classes of identical pairs (:func:`_classes`)."""
    source, rows, li, lj, p0, cols, llr_err, m, eps, units, classes = task
    block = _sorted_block(*_fetch(source, rows, cols), li, lj, m)
    vu, vv = _values(block, eps, llr_err, m)
    ru, rv = np.argmax(vu, axis=0), np.argmax(vv, axis=0)
    cols_e = np.arange(eps.size)
    out = (vu[ru, cols_e], ru + p0, vv[rv, cols_e], rv + p0)
    unit_max = None
    if units is not None:  # (local unit starts, number of leading eps columns summarised)
        starts, ncols = units
        unit_max = np.maximum.reduceat(np.maximum(vu[:, :ncols], vv[:, :ncols]), starts, axis=0)
    return out + (unit_max, _classes(block, p0, classes) if classes else None)


@functools.lru_cache(maxsize=8)
def _class_weights(n: int) -> np.ndarray:
    """Fixed weights of the class hash (any weights are correct: classes are checked entry by entry)."""
    w = np.random.default_rng(20261123).random(n)
    w.setflags(write=False)
    return w


def _classes(block: tuple, p0: int, cap: int) -> tuple | None:
    """The block's pairs grouped into classes of bit-identical sorted data (log-ratios and the four partial
    sums: every computed value of the pair is a function of them, so pairs of a class have identical values):
    ``(keys, first pair indices, their data rows)`` in order of first pair (the data: the block's own arrays
    when every pair is a class of its own), or None beyond ``cap`` classes.
    Grouped by a hash (fixed weights), then checked entry by entry; a mismatch starts its own class."""
    a, pre_u, pre_v, suf_u, suf_v = block
    m = a.shape[1]
    w = _class_weights(m + 1)
    # row by row with numpy's own sums (a BLAS product may round identical rows differently by position)
    key = np.stack([(pre_u * w).sum(axis=1), (suf_v * w).sum(axis=1),
                    (np.nan_to_num(a, posinf=1e290, neginf=-1e290) * w[:m]).sum(axis=1)], axis=1)
    _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    if first.size > cap:
        return None
    if first.size == a.shape[0]:  # every key distinct: every pair is its own class
        reps = np.arange(a.shape[0])
    else:
        same = np.ones(a.shape[0], dtype=bool)
        for arr in block:
            same &= np.all(arr == arr[first[inv]], axis=1)
        reps = np.union1d(first, np.flatnonzero(~same))
    if reps.size > cap:
        return None
    data = block if reps.size == a.shape[0] else tuple(arr[reps] for arr in block)
    return list(map(tuple, key[reps].tolist())), p0 + reps, data


class ClassData:
    """The sorted data of the stored class representatives, kept as the blocks' own arrays (``pieces``, in
    pair order; no copy into one array): row ``c`` of the whole is row ``c - starts[k]`` of piece ``k``. Values
    are computed piece by piece, row by row, so they are those of one stacked array (tested)."""

    __slots__ = ("pieces", "starts", "size")

    def __init__(self, pieces: list) -> None:
        self.pieces = pieces
        sizes = [p[0].shape[0] for p in pieces]
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.size = int(self.starts[-1])

    def _split(self, rows) -> list:
        """``(piece, local rows, positions in rows)`` for ascending global ``rows``."""
        if len(self.pieces) == 1:
            return [(0, np.asarray(rows, dtype=np.int64), np.arange(len(rows)))]
        if len(rows) == 1:  # (a scalar query's most promising class)
            r = int(rows[0])
            k = bisect.bisect_right(self.starts.tolist(), r) - 1
            return [(k, np.array([r - int(self.starts[k])]), np.array([0]))]
        rows = np.asarray(rows, dtype=np.int64)
        where = np.searchsorted(self.starts, rows, side="right") - 1
        return [(k, rows[where == k] - self.starts[k], np.flatnonzero(where == k)) for k in np.unique(where)]

    def values(self, eps: np.ndarray, llr_err: float, m: int, rows=None) -> tuple[np.ndarray, np.ndarray]:
        """:func:`_values` of every row (or of the ascending ``rows``)."""
        if rows is None:
            parts = [_values(p, eps, llr_err, m) for p in self.pieces]
        else:
            parts = [_values(tuple(x[loc] for x in self.pieces[k]), eps, llr_err, m)
                     for k, loc, _ in self._split(rows)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def values_few(self, rows, e: float, llr_err: float, m: int) -> tuple[list, list]:
        """:func:`_values_few` of the ascending global ``rows``."""
        if len(self.pieces) == 1:
            return _values_few(self.pieces[0], rows, e, llr_err, m)
        vu, vv = [0.0] * len(rows), [0.0] * len(rows)
        for k, loc, pos in self._split(rows):
            fu, fv = _values_few(self.pieces[k], loc.tolist(), e, llr_err, m)
            for i, a, b in zip(pos.tolist(), fu, fv):
                vu[i], vv[i] = a, b
        return vu, vv


def same_rows(x: tuple, i: int, y: tuple, j: int) -> bool:
    """Whether row ``i`` of the sorted data ``x`` and row ``j`` of ``y`` are bit-identical."""
    return all(p[i].tobytes() == q[j].tobytes() for p, q in zip(x, y))


def _kernel_at(task: tuple) -> tuple:
    """Like :func:`_kernel` for an arbitrary set of pairs (``pidx`` their global indices)."""
    source, rows, li, lj, pidx, cols, llr_err, m, eps = task
    vu, vv = _values(_sorted_block(*_fetch(source, rows, cols), li, lj, m), eps, llr_err, m)
    ru, rv = np.argmax(vu, axis=0), np.argmax(vv, axis=0)
    cols_e = np.arange(eps.size)
    return vu[ru, cols_e], pidx[ru], vv[rv, cols_e], pidx[rv]


def _scan_kernel(task: tuple) -> tuple:
    """Cheap pass (no sort): per unit the largest finite log-ratio in either direction (inf when a pair's
    supports differ) and whether every pair of the block has identical rows."""
    source, rows, li, lj, cols, units = task
    R, logR = _fetch(source, rows, cols)
    with np.errstate(invalid="ignore"):
        neg = np.subtract(logR[lj], logR[li])
    neg[np.isnan(neg)] = 0.0
    top = np.maximum(-neg.min(axis=1), neg.max(axis=1))  # inf where some outcome is one-sided
    unit_top = np.maximum.reduceat(top, units)
    # a nonzero log-ratio means different entries: only a block of all-zero log-ratios is compared entry by entry
    equal = bool(not np.any(top != 0.0) and np.array_equal(R[li], R[lj]))
    return unit_top, equal


def _roc_kernel(task: tuple) -> tuple:
    """The ROC points of one block's pairs (both orders), reduced to their exact upper hull."""
    from ._roc import _upper_hull

    source, rows, li, lj, cols, llr_err, m = task
    _, pre_u, pre_v, suf_u, suf_v = _sorted_block(*_fetch(source, rows, cols), li, lj, m)
    u = UNIT_ROUNDOFF
    rel = (2 * m + 8) * u
    tot_u, tot_v = pre_u[:, m:], pre_v[:, m:]
    shrink = (1.0 - rel) * (1.0 - 2.0 * llr_err) * (1.0 - 2 * u)
    s = np.concatenate([(pre_v / tot_v).ravel(), (suf_u / tot_u).ravel()]) * shrink
    b = np.concatenate([(pre_u / tot_u).ravel(), (suf_v / tot_v).ravel()]) * (1.0 + rel)
    s = np.maximum(np.nextafter(s, -np.inf), 0.0)
    b = np.minimum(np.where(b > 0, np.nextafter(b, np.inf), 0.0), 1.0)
    # the set of all outcomes is (1, 1) exactly for the normalised rows: kept unrounded, so that no outcome of
    # the pair gets one-sided mass (an infinite loss in the reverse order) from the rounding alone
    full = np.zeros((2, pre_u.shape[0], m + 1), dtype=bool)
    full[0, :, m] = full[1, :, 0] = True
    full = full.ravel()
    s[full] = b[full] = 1.0
    return _upper_hull(s, b)


def _row_kernel(task: tuple) -> tuple:
    """Rows pass: which columns the rows use (any positive entry)."""
    data, rows = task
    return np.any(_block_rows(data, rows) > 0, axis=0)


def _row_stats_kernel(task: tuple) -> tuple:
    """Rows pass on the kept columns: ``max |log p|`` over positive entries and each row's deviation from 1,
    ``sum(row) - 1`` correctly rounded (``math.fsum``: exactly 0 iff the row's exact sum is 1; a float sum can
    be off by ``(m - 1) u``, which the normalisation would then miss)."""
    data, rows, cols = task
    R = _block_rows(data, rows)
    if cols is not None:
        R = R[:, cols]
    pos = R[R > 0]
    big = float(np.max(np.abs(np.log(pos)))) if pos.size else 0.0
    return big, np.array([math.fsum(np.append(r, -1.0)) for r in R], dtype=float)


def chord_upper(grid: np.ndarray, unit_grid: np.ndarray, unit_pure: np.ndarray, e: float,
                margin: float) -> np.ndarray:
    """Per unit, an upper bound of every computed value ``max(vu, vv)`` of its pairs at ``eps = e`` (finite).

    ``unit_grid[:, i]`` are the computed maxima at ``grid[i]``, upper bounds of the exact ``H_{a_i}`` up to
    the final relative rounding. ``H_a`` is convex and non-increasing in ``a = e^eps`` (a maximum of the
    linear ``P(S) - a Q(S)``), and so is the maximum over a unit's pairs: between two grid points it lies
    below the chord of the values at the ends (weight ``lam = (e^e - e^g0) / (e^g1 - e^g0)``), beyond the
    last one below the last value, and it is 0 from the unit's pure level on (where the computed value is
    exactly 0). ``margin`` (:func:`value_margin`) covers how far a computed value may exceed the exact
    divergence, and the few roundings of the chord itself (each at most a few units ``u`` absolute, all
    values being at most about 1; the weight's error grows with the grid step).
    """
    G = grid.size
    i = int(np.searchsorted(grid, e, side="right")) - 1
    if i >= G - 1:
        ub = unit_grid[:, G - 1].copy()
    else:
        # expm1 form: no overflow for large eps
        g0, g1 = float(grid[i]), float(grid[i + 1])
        den = math.expm1(g1 - g0)
        lam = min(max(math.expm1(e - g0) / den, 0.0), 1.0) if den > 0.0 else 0.0
        left, right = unit_grid[:, i], unit_grid[:, i + 1]
        ub = np.where(right >= left, right, left + lam * (right - left))
    ub += margin
    ub[e >= unit_pure] = 0.0
    return ub


def value_margin(e: float, llr_err: float, m: int, step: float) -> float:
    """How far a computed value (:func:`_direction`) can exceed the exact divergence ``H`` at ``eps = e``,
    plus the rounding of :func:`chord_upper`: the inflation and rounding of the partial sum (``P <= 1 + m u``),
    of ``e^eps Q_k`` (at most about 1 whenever the value is positive; ``|log Q_k| <= 745``), the two
    subnormal units, the band term ``2 llr_err (|hi - lo| + (m + 2) u hi)``, the final round-up (``32 u``) and
    the chord's weight, whose expm1 argument and result round by ``(1 + step) u`` relative (``step`` the grid
    step). The computed set S is a set of outcomes, so ``P(S) - e^eps Q(S) <= H`` exactly."""
    u = UNIT_ROUNDOFF
    rel = u * (4.0 * e + 20.0 * 745.0 + 4.0 * m + 64.0)
    return 2.0 * rel + 32.0 * u + 4.0 * u * (1.0 + step) + 4.0 * SMALLEST_SUBNORMAL + 2.0 * llr_err * (1.0 + (m + 8) * u) * 1.01
