"""Row access, preparation and exact pair evaluation behind :mod:`chainamp.mixing` (private).

Row-pair quantities of a finite Markov operator K, each rounded toward the safe
(larger) side: the preparation shared by every eps (row sums, a disjoint-support pair,
the one-pass ultra-mixing core; :class:`_Prep`, built from the row primitives of
:mod:`.rows`, or by :mod:`.dask_prep` for a dask-backed operator), and the exact
evaluation of ``D_{e^eps}(K_x || K_x')`` on given pairs (:func:`_eval_pairs`,
:func:`_all_pairs`, the footnote-3 pass :func:`_max_inf`).
The certified search for the maximising pair of large operators (L1-form candidates,
enumeration of active terms, bound reuse across eps) is in :mod:`.pruning`; the public
functions, their results and the full algorithm description live in
:mod:`.coefficients`. Sparse operators are never densified as a whole: only blocks
of rows are.

Floating-point error model (used by every rounding below): a sum of m
non-negative doubles has relative error at most ``(m - 1) u`` in any order;
``math.exp`` and ``math.log`` are within one ulp (relative ``2u``), numpy's
vectorised ``log`` within four; ``u = 2**-53``.
"""

from __future__ import annotations

import functools
import math
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from .._numerics import check_memory, scaled_by_exp
from ..errors import ResourceLimitError
from ..operators import DaskRows, MarkovOperator, row_source
from .dask_prep import prepare_rows, probe_disjoint, times
# the row primitives live below both this module and .dask_prep; imported here under their old names,
# which the other modules of the folder (and tests) use as ``pairwise._rows`` etc.
from .rows import _TINY, _U, _Prep, _clean_sparse, _row_sums, _rows, _tile_rows, _ultra_core, _up  # noqa: F401

__all__ = []

#: Above this eps, ``e^eps q >= e^746 * 2**-1074 > 2 > p`` for every stored q > 0, so
#: ``D_{e^eps}(p || q)`` equals the footnote-3 divergence ``p(supp p minus supp q)`` exactly.
_INF_EPS = 746.0


def _source(K: MarkovOperator):
    """Where the scans read K's rows: its stored matrix, or the row reader of a dask-backed operator."""
    reader = row_source(K)
    return K._data if reader is None else reader


def _hockey_rows(P: np.ndarray, Q: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise ``D_{e^eps}(P_k || Q_k)``: (computed value, rigorous upper bound).

    ``cq`` has relative error <= 6u, so a term ``[p - cq]_+`` is off by at most
    ``7u p + 2**-1074`` and only where ``p >= cq (1 - 8u)`` (elsewhere it is truly
    0); the sum adds ``(m - 1) u`` relatively. A pair whose terms are all clearly
    inactive gets exactly 0.
    """
    m = P.shape[1]
    if math.isinf(eps) or eps >= _INF_EPS:
        val = np.where(Q == 0, P, 0.0).sum(axis=1)
        bound = val * (1.0 + (m + 2) * _U)
    else:
        cQ = scaled_by_exp(Q, eps)
        val = np.maximum(P - cQ, 0.0).sum(axis=1)
        # outputs where the term is, or could truly be, positive: p >= cq (1 - 8u)
        near = P >= cQ * (1.0 - 8 * _U)
        near_mass = np.where(near, P, 0.0).sum(axis=1)
        bound = (val * (1.0 + (m + 2) * _U) + 8 * _U * near_mass * (1.0 + (m + 2) * _U)
                 + np.count_nonzero(near, axis=1) * _TINY)
    upper = np.where(bound > 0, np.nextafter(bound, np.inf), 0.0)  # not capped: see _max_hockey
    return val, upper


# ----------------------------------------------------------------- Dobrushin search
_WORKERS = max(1, min(2, os.cpu_count() or 1))


def _probe_disjoint(data) -> tuple[int, int] | None:
    if isinstance(data, DaskRows):  # a dask-backed operator: two dask passes (issue 11)
        return probe_disjoint(data)
    """An ordered pair of inputs with disjoint supports, or None if none is found.

    Row x overlaps at most ``S_x = sum_{y in supp x} #{x' : K(x', y) > 0}`` rows, so a
    row with ``S_x < n`` surely has a disjoint partner; that row (else the row with the
    fewest non-zeros, and row 0) is checked against all rows with one mat-vec each.
    """
    n = data.shape[0]
    if sp.issparse(data):
        data = _clean_sparse(data)
        nnz = np.diff(data.indptr)
        pattern = sp.csr_matrix((np.ones(data.nnz), data.indices, data.indptr), shape=data.shape)
        reach = np.asarray(pattern @ np.bincount(data.indices, minlength=data.shape[1]).astype(float)).ravel()
    else:
        positive = data > 0
        nnz = np.count_nonzero(positive, axis=1)
        reach = positive @ np.count_nonzero(positive, axis=0).astype(float)
    for i in dict.fromkeys([int(np.argmin(reach)), int(np.argmin(nnz)), 0]):
        supp = (_rows(data, [i])[0] > 0).astype(float)
        # sums of non-negative products: zero exactly when the supports are disjoint
        overlap = np.asarray(data @ supp).ravel()
        free = np.flatnonzero(overlap == 0)
        if free.size:
            return i, int(free[0])
    return None


#: The last few preparations, keyed by the identity of the (read-only) stored matrix and checked
#: through a weak reference to it (a new matrix at a recycled id is never taken for the old one).
#: Small operators are kept for repeated cheap calls; at most ``_BIG_PREPS`` large ones are kept too,
#: since searches over eps query the same operator many times (and reuse its pair bounds). An entry
#: goes when its matrix is garbage-collected.
_PREP_CACHE: dict = {}
_BIG_PREPS = 2
#: Sparse operators with at least this fraction of non-zeros are densified once in the preparation.
_DENSIFY_FILL = 0.25


def _forget(key, ref) -> None:
    """Weak-reference callback: drop the entry of a garbage-collected matrix (and only that entry)."""
    cache = globals().get("_PREP_CACHE")  # None while the interpreter shuts down
    if isinstance(cache, dict) and key in cache and cache[key][0] is ref:
        del cache[key]


def _prepare(K: MarkovOperator, block_size: int | None) -> _Prep:
    if row_source(K) is not None:  # a dask-backed operator: its row reader, never the whole matrix (issue 11)
        return prepare_rows(K, block_size)
    key = (id(K._data), block_size)
    hit = _PREP_CACHE.get(key)
    if hit is not None and hit[0]() is K._data:
        return hit[1]
    prep = _prepare_uncached(K, block_size)
    big = prep.n * prep.m > 2**16
    try:
        ref = weakref.ref(K._data, functools.partial(_forget, key))
    except TypeError:  # pragma: no cover - a matrix type without weak references: not cached
        return prep
    _PREP_CACHE.pop(key, None)
    _PREP_CACHE[key] = (ref, prep)
    bigs = [k for k, (_, p) in list(_PREP_CACHE.items()) if p.n * p.m > 2**16]  # list: atomic under threads
    while big and len(bigs) > _BIG_PREPS:
        _PREP_CACHE.pop(bigs.pop(0), None)
    for k in bigs[:-1] if big else ():  # only the newest large operator keeps its n x n pair bounds
        hit = _PREP_CACHE.get(k)
        if hit is not None:
            hit[1].cache.pop("anchors", None)
            hit[1].cache.pop("sorted_columns", None)
    smalls = [k for k, (_, p) in list(_PREP_CACHE.items()) if p.n * p.m <= 2**16]
    while len(smalls) > 8:
        _PREP_CACHE.pop(smalls.pop(0), None)
    return prep


def _prepare_uncached(K: MarkovOperator, block_size: int | None) -> _Prep:
    data = _clean_sparse(K._data) if K.is_sparse else K._data
    n, m = data.shape
    if sp.issparse(data) and data.nnz >= _DENSIFY_FILL * n * m and n * m > 2**16:
        try:  # a product of sparse walks fills in: dense rows are read much faster by the tiles
            check_memory(8.0 * n * m, f"a dense copy of a {n} x {m} operator with {data.nnz} non-zeros")
            data = data.toarray()
        except ResourceLimitError:
            pass
    block = _tile_rows(m, block_size)
    disjoint = _probe_disjoint(data) if n > 1 else None
    return _Prep(data, n, m, _row_sums(data), disjoint, _ultra_core(data), block)


def _max_inf(prep: _Prep) -> tuple[float, int, int]:
    """Footnote 3: ``max_{x,x'} K_x(supp K_x minus supp K_x')`` as ``K @ [K == 0]^T`` by blocks:
    sums of non-negative terms, so relative error ``(m + 1) u`` and no cancellation."""
    data, n, m = prep.data, prep.n, prep.m
    best, bi, bj = -1.0, 0, 1
    width = max(1, min(n, 2**21 // max(n, m)))
    for j0 in range(0, n, width):
        j1 = min(n, j0 + width)
        Z = (_rows(data, slice(j0, j1)) == 0).astype(float)
        A = np.asarray(data @ Z.T) if not isinstance(data, DaskRows) else times(data, Z.T)
        A[np.arange(j0, j1), np.arange(j1 - j0)] = -1.0  # a row against itself is not a pair
        k = int(np.argmax(A))
        if A.flat[k] > best:
            best, bi, bj = float(A.flat[k]), k // A.shape[1], j0 + k % A.shape[1]
    return _up(max(best, 0.0), (m + 2) * _U), bi, bj


def _eval_pairs(data, I: np.ndarray, J: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``D_{e^eps}(K_I || K_J)`` (values, rigorous upper bounds) by chunks of pairs:
    extra memory O(chunk x m)."""
    m = data.shape[1]
    g = max(1, 2**18 // m)
    chunks = [slice(a, min(I.size, a + g)) for a in range(0, I.size, g)]

    def one(ch):
        return _hockey_rows(_rows(data, I[ch]), _rows(data, J[ch]), eps)

    if len(chunks) > 1 and _WORKERS > 1:
        with ThreadPoolExecutor(_WORKERS) as pool:
            parts = list(pool.map(one, chunks))
    else:
        parts = [one(ch) for ch in chunks]
    if not parts:
        return np.zeros(0), np.zeros(0)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _all_pairs(data, eps: float, n: int) -> np.ndarray:
    """Matrix of rounded-up ``D_{e^eps}(K_x || K_x')`` over all ordered pairs (diagonal 0)."""
    out = np.zeros((n, n))
    step = max(1, 2**16 // n)
    for i0 in range(0, n, step):
        I, J = np.meshgrid(np.arange(i0, min(n, i0 + step)), np.arange(n), indexing="ij")
        _, upper = _eval_pairs(data, I.ravel(), J.ravel(), eps)
        out[i0:i0 + I.shape[0]] = np.minimum(upper, 1.0).reshape(I.shape)
    np.fill_diagonal(out, 0.0)
    return out
