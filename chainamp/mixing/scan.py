"""Blocked scans over all pairs of inputs with per-pair certified bounds (private).

The all-pairs part of :func:`chainamp.mixing.dobrushin` and :func:`chainamp.mixing.dobrushin_curve`:
the ordered pairs ``x != x'`` of a row-stochastic K (n x m) are split into *tiles*, two blocks of
``b`` consecutive rows; a tile of rows ``[i0, i0 + b)`` and ``[j0, j0 + b)`` with ``j0 >= i0`` covers
both orders of each of its pairs (on the diagonal tile only ``x < x'``). :func:`_tile` (module
level, picklable) receives the two dense row blocks and returns, for every pair of the tile, a
rigorous upper and lower bound of ``D_{e^eps}(K_x || K_x')`` computed by the kernels of
:mod:`.kernels` in one pass over y:

* ``eps = 0``: ``D_1(p || q) = s_p - sum_y min(p_y, q_y)`` with ``s_p`` the computed row sum (both
  sums have relative error ``<= (m - 1) u``): the bounds are ``v +- (m + 1) u (s_p + S)``;
* ``eps > 0``: ``F = sum_y [p_y - c q_y]_+`` with the float ``c = exp(eps)``. A term with ``p <=
  e^eps q (1 - 5u)`` is computed as exactly 0 (``fl(c q) >= e^eps q (1 - 3.01u) > p``), as it truly
  is; any other term is within ``u p + 4.02 u e^eps q <= 5.03 u p`` of the exact one; each term
  may add ``2**-1074`` where ``c q`` underflows; the sum adds ``(m - 1) u``. So
  ``|F - D| <= (m - 1) u F + 5.03 u s_p + m 2**-1074`` (to first order), and the bounds are
  ``F (1 +- (m + 3) u) +- 5.2 u s_p (1 + (m + 3) u) +- m 2**-1074``, pushed one float outward.

These bounds do not depend on ``c`` (the cancellation of the L1 form is gone), so near-ties are
resolved to within about ``(m + 8) u`` relative. Tiles run through
:func:`chainamp._numerics.map_blocks` (serially, on two threads by default, or on any executor);
their size depends only on m (:func:`.pairwise._tile_rows`, or ``block_size``), and every
combination below takes the tiles in order and breaks ties by position, so results and witnesses
do not depend on the executor.

Row-source contract: tiles read rows only through :func:`.pairwise._rows` ``(data, idx)``, which
returns a dense float64 ndarray of the rows ``idx`` (a slice or an integer array), in order. An
operator backend that can produce blocks of rows (a dask array, a memory-mapped file) only has
to make ``_rows`` work on its ``data``; nothing here needs the whole matrix in memory.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .dask_prep import row_block, rows_of
from .kernels import numba_enabled, run_kernel, run_rowwise
from .pairwise import _TINY, _U, _WORKERS, _eval_pairs, _Prep, _rows
from .._numerics import TIE_BUDGET, check_memory, map_blocks

__all__: list[str] = []

#: Candidates a tile returns at most in candidate mode (the rest are covered by their largest bound).
_TILE_KEEP = 256
#: Below this many entries ``n * n * m`` the numpy kernels are used (no JIT compilation).
_NUMBA_MIN_WORK = 2**25
#: Below this many entries ``n * n * m`` the tiles run serially (threads would not pay off).
_THREAD_MIN_WORK = 2**24


def use_numba_for(n: int, m: int) -> bool:
    return n * n * m >= _NUMBA_MIN_WORK and numba_enabled()


# ----------------------------------------------------------------- rigorous bounds from the kernels' sums
def _hs_bounds(F: np.ndarray, s: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower bounds of ``D_{e^eps}(p || q)`` from ``F = sum_y [p - c q]_+`` (see module docstring)."""
    a = (m + 3) * _U
    slack = (5.2 * _U * (1.0 + a)) * s + m * _TINY
    up = np.nextafter(F * (1.0 + a) + slack, np.inf)
    low = np.nextafter(F * (1.0 - a) - slack, -np.inf)
    return up, low


def _tv_bounds(s: np.ndarray, S: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower bounds of ``D_1(p || q) = s_p - sum_y min(p_y, q_y)`` from the computed sums."""
    v = s - S
    slack = ((m + 1) * _U) * (s + S) + _U * np.abs(v)
    return np.nextafter(v + slack, np.inf), np.nextafter(v - slack, -np.inf)


def pair_bounds(data, I: np.ndarray, J: np.ndarray, c: float, sums: np.ndarray,
                use_numba: bool) -> tuple[np.ndarray, np.ndarray]:
    """Rigorous (upper, lower) bounds of ``D_c(K_I || K_J)`` for lists of pairs, by chunks of rows."""
    m = data.shape[1]
    g = max(1, 2**20 // (8 * max(m, 1)))
    ups, lows = [], []
    for a in range(0, I.size, g):
        i, j = I[a:a + g], J[a:a + g]
        F = run_rowwise(use_numba, _rows(data, i), _rows(data, j), c)
        u, lo = _tv_bounds(sums[i], F, m) if c == 1.0 else _hs_bounds(F, sums[i], m)
        ups.append(u)
        lows.append(lo)
    if not ups:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(ups), np.concatenate(lows)


# ----------------------------------------------------------------- the tile kernel
def _tile(block):
    """Bounds for every ordered pair of one tile (module level: runs on any executor).

    ``block = (P, Q, i0, j0, sP, sQ, c, use_numba, keep)``. With ``keep = None`` returns
    ``(i0, j0, upper_fwd, upper_bwd, lower_max)`` (``upper_fwd[r, s]`` bounds ``D(K_{i0+r} || K_{j0+s})``,
    ``upper_bwd[r, s]`` the other order; -inf where not a pair of the tile). With an int ``keep``
    returns the candidates ``(lower_max, I, J, U, dropped_U, dropped_pair)``: the pairs whose upper
    bound reaches the tile's best lower bound, at most ``keep`` of them (largest bounds first, ties in
    row-major order, forward before backward); ``dropped_U`` is the largest bound of the others.
    """
    P, Q, i0, j0, sP, sQ, c, use_numba, keep = block
    P, Q = rows_of(P), (None if Q is P else rows_of(Q))  # deferred rows (row_block) are read here (issue 11)
    Q = P if Q is None else Q
    m = P.shape[1]
    if c == 1.0:
        (S,) = run_kernel("min_sums", use_numba, P, Q)
        uf, lf = _tv_bounds(sP[:, None], S, m)
        ub, lb = _tv_bounds(sQ[None, :], S, m)
    else:
        F, G = run_kernel("hockey_both", use_numba, P, Q, c)
        uf, lf = _hs_bounds(F, sP[:, None], m)
        ub, lb = _hs_bounds(G, sQ[None, :], m)
    if i0 == j0:  # diagonal tile: the pairs r < s only (each in both orders)
        lower = np.tril(np.ones(uf.shape, dtype=bool))
        for arr in (uf, ub, lf, lb):
            arr[lower] = -math.inf
    low = max(float(lf.max()), float(lb.max()))
    if keep is None:
        return i0, j0, uf, ub, low
    rf, cf = np.nonzero(uf >= low)
    rb, cb = np.nonzero(ub >= low)
    I = np.concatenate([i0 + rf, j0 + cb])
    J = np.concatenate([j0 + cf, i0 + rb])
    U = np.concatenate([uf[rf, cf], ub[rb, cb]])
    dropped, dpair = -math.inf, None
    if U.size > keep:
        order = np.argsort(-U, kind="stable")
        rest = order[keep]
        dropped, dpair = float(U[rest]), (int(I[rest]), int(J[rest]))
        sel = np.sort(order[:keep])
        I, J, U = I[sel], J[sel], U[sel]
    return low, I, J, U, dropped, dpair


def _tiles(prep: _Prep, c: float, b: int, use_numba: bool, keep):
    data, n, sums = prep.data, prep.n, prep.sums
    for i0 in range(0, n, b):
        i1 = min(n, i0 + b)
        P = row_block(data, slice(i0, i1))
        for j0 in range(i0, n, b):
            j1 = min(n, j0 + b)
            Q = P if j0 == i0 else row_block(data, slice(j0, j1))
            yield P, Q, i0, j0, sums[i0:i1], sums[j0:j1], c, use_numba, keep


def _tile_pairs(block) -> int:
    a, b = block[0].shape[0], block[1].shape[0]
    return a * (a - 1) if block[2] == block[3] else 2 * a * b


def run_tiles(prep: _Prep, c: float, *, keep, executor=None, progress=None, desc="pairs"):
    """Yield :func:`_tile` results in tile order (see :func:`_tile`)."""
    n, m = prep.n, prep.m
    b = prep.block
    use_numba = use_numba_for(n, m)
    window = 4 * _WORKERS + 1
    check_memory(window * (2 * b * m + 6 * b * b) * 8.0, f"tiles of {b} rows x {m} outputs for the pair scan",
                 hint="pass a smaller block_size")
    blocks = _tiles(prep, c, b, use_numba, keep)
    kwargs = dict(total=n * (n - 1), desc=desc, unit="pairs", progress=progress, weight=_tile_pairs)
    if executor is None and _WORKERS > 1 and n * n * m >= _THREAD_MIN_WORK:
        with ThreadPoolExecutor(_WORKERS) as pool:
            yield from map_blocks(_tile, blocks, executor=pool, **kwargs)
    else:
        yield from map_blocks(_tile, blocks, executor=executor, **kwargs)


# ----------------------------------------------------------------- exact refinement of the best candidates
def refine(prep: _Prep, I: np.ndarray, J: np.ndarray, U: np.ndarray, low: float, eps: float) -> np.ndarray:
    """Tighten the bounds ``U`` of candidates (sorted by decreasing U) by the exact term-by-term evaluation
    (:func:`.pairwise._eval_pairs`); stops once no remaining bound reaches the best lower bound (the others
    keep their own, already rigorous, bound). Callers pass at most ``TIE_BUDGET`` candidates: more are
    near-ties, whose scan bounds are already within about ``(m + 8) u`` of exact."""
    U = U.copy()
    pos, step = 0, 256
    while pos < I.size and U[pos] >= low:
        sl = slice(pos, min(I.size, pos + step))
        vals, ups = _eval_pairs(prep.data, I[sl], J[sl], eps)
        U[sl] = np.minimum(U[sl], ups)
        low = max(low, float(np.max(vals - (ups - vals))))
        pos, step = sl.stop, step * 2
    return U


def scan_max(prep: _Prep, eps: float, c: float, *, executor=None, progress=None) -> tuple[float, int, int]:
    """``max_{x != x'} D_{e^eps}(K_x || K_x')`` rounded up and a pair attaining the bound, in O(tile) memory.

    Every pair is either a candidate of its tile (its bound reaches the tile's best lower bound), or
    covered by its tile's ``dropped_U``, or has an upper bound below a certified lower bound of another
    pair. The candidates with a bound at least the best lower bound overall are refined exactly
    (:func:`refine`); the result is the largest bound left, so it is never below the exact maximum."""
    low, dropped, dpair = -math.inf, -math.inf, None
    parts = []
    for lo, I, J, U, d, dp in run_tiles(prep, c, keep=_TILE_KEEP, executor=executor, progress=progress,
                                        desc=f"pairs (eps={eps:.4g})"):
        low = max(low, lo)
        if d > dropped:
            dropped, dpair = d, dp
        keep = U >= low
        parts.append((I[keep], J[keep], U[keep]))
    I = np.concatenate([p[0] for p in parts])
    J = np.concatenate([p[1] for p in parts])
    U = np.concatenate([p[2] for p in parts])
    keep = U >= low
    I, J, U = I[keep], J[keep], U[keep]
    order = np.argsort(-U, kind="stable")
    I, J, U = I[order], J[order], U[order]
    if U.size <= TIE_BUDGET:  # more would be near-ties: their own bounds are within (m + 8) u
        U = refine(prep, I, J, U, low, eps)
    k = int(np.argmax(U))
    if dropped > U[k]:
        return min(dropped, 1.0), dpair[0], dpair[1]
    return min(max(float(U[k]), 0.0), 1.0), int(I[k]), int(J[k])


def scan_matrix(prep: _Prep, c: float, *, executor=None, progress=None, desc="pairs") -> tuple[np.ndarray, float]:
    """The n x n matrix of upper bounds (diagonal -inf) and the best certified lower bound."""
    n = prep.n
    check_memory(2.0 * n * n * 8, f"the {n} x {n} matrix of pair bounds", hint="use fewer inputs")
    U = np.full((n, n), -math.inf)
    low = -math.inf
    for i0, j0, uf, ub, lo in run_tiles(prep, c, keep=None, executor=executor, progress=progress, desc=desc):
        a, b = uf.shape
        U[i0:i0 + a, j0:j0 + b] = np.maximum(U[i0:i0 + a, j0:j0 + b], uf)
        U[j0:j0 + b, i0:i0 + a] = np.maximum(U[j0:j0 + b, i0:i0 + a], ub.T)
        low = max(low, lo)
    np.fill_diagonal(U, -math.inf)
    return U, low


# ----------------------------------------------------------------- one pass over the rows (Doeblin, ultra-mixing)
def _column_block(block):
    """Per-column summary of one block of rows (module level: runs on any executor):
    (offset, positive counts, min, argmin, max, argmax), argmin/argmax as global row indices."""
    P, i0 = block
    return (np.count_nonzero(P > 0, axis=0), P.min(axis=0), P.argmin(axis=0) + i0, P.max(axis=0),
            P.argmax(axis=0) + i0)


def column_summary(data, *, executor=None, progress=None) -> tuple:
    """(positive counts, min, argmin, max, argmax) of every column of a dense ``data``, by blocks of rows
    read through :func:`.pairwise._rows`. Minima and maxima are exact and ties go to the first row
    (blocks are combined in order), so the result equals the whole-matrix numpy one on any executor."""
    n, m = data.shape
    b = max(1, 2**22 // (8 * max(m, 1)))
    blocks = ((_rows(data, slice(i0, min(n, i0 + b))), i0) for i0 in range(0, n, b))
    out = None
    for cnt, lo, lo_i, hi, hi_i in map_blocks(_column_block, blocks, executor=executor, total=n, desc="rows",
                                              unit="rows", progress=progress, weight=lambda blk: blk[0].shape[0]):
        if out is None:
            out = [cnt, lo, lo_i, hi, hi_i]
            continue
        out[0] = out[0] + cnt
        lower, higher = lo < out[1], hi > out[3]  # strict: an earlier row keeps a tie
        out[1], out[2] = np.where(lower, lo, out[1]), np.where(lower, lo_i, out[2])
        out[3], out[4] = np.where(higher, hi, out[3]), np.where(higher, hi_i, out[4])
    return tuple(out)


def maybe_summary(data, executor=None, progress=None):
    """:func:`column_summary` for a large dense numpy ``data`` or when an executor is given; else None
    (the callers' one whole-matrix pass is then as fast)."""
    if isinstance(data, np.ndarray) and (executor is not None or data.size > 2**24):
        return column_summary(data, executor=executor, progress=progress)
    return None
