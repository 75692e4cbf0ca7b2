"""The whole-matrix passes of the pair scans for a dask-backed operator (private).

A :class:`chainamp.operators.DaskMarkovOperator` is never gathered on one process. What the pair scans
need besides pairs of row blocks is computed here from the per-row and per-column summaries of its
validation pass (:attr:`~chainamp.operators.DaskMarkovOperator.row_stats`: row sums, column minima and
maxima with the first row attaining them, support counts) and from two dask mat-vecs of the support
pattern, all exact (minima, maxima, first occurrences, integer counts, and zero tests of sums of
non-negative products) or computed on whole rows exactly as numpy does on the matrix. So
:func:`prepare_rows` returns the same :class:`~.rows._Prep` as :func:`~.pairwise._prepare` on the
in-memory matrix, except that its ``data`` is the picklable row reader
(:class:`chainamp.operators.DaskRows`): the kernels then read the same rows, and every coefficient,
value and witness is bit-identical.
"""

from __future__ import annotations

import numpy as np

from ..operators import DaskMarkovOperator, DaskRows, dask_compute
from .rows import _Prep, _row_sums, _rows, _tile_rows, _ultra_core

__all__: list[str] = []


def probe_disjoint(reader: DaskRows) -> tuple[int, int] | None:
    """:func:`.pairwise._probe_disjoint` by two dask passes over the support pattern: the reach of every row
    (a sum of integers, exact) and the overlaps of the (at most three) probed rows with every row (sums of
    non-negative products, zero exactly when the supports are disjoint)."""
    st, array = reader.stats, reader.array
    reach = dask_compute((array > 0).astype(float) @ st.col_positive.astype(float))
    probes = list(dict.fromkeys([int(np.argmin(reach)), int(np.argmin(st.row_nnz)), 0]))
    supports = (reader[probes] > 0).astype(float).T  # m x len(probes)
    overlap = dask_compute(array @ supports)
    for k, i in enumerate(probes):
        free = np.flatnonzero(overlap[:, k] == 0)
        if free.size:
            return i, int(free[0])
    return None


def prepare_rows(K: DaskMarkovOperator, block_size: int | None) -> _Prep:
    """The :class:`~.rows._Prep` of :func:`~.pairwise._prepare` for a dask-backed operator (``data`` is its
    row reader), kept on the operator for later calls."""
    key = ("prep", block_size)
    if key not in K.scan_cache:
        reader = K.rows
        n, m = reader.shape
        disjoint = probe_disjoint(reader) if n > 1 else None
        K.scan_cache[key] = _Prep(reader, n, m, _row_sums(reader), disjoint, _ultra_core(reader),
                                  _tile_rows(m, block_size))
    return K.scan_cache[key]


def times(data, M: np.ndarray) -> np.ndarray:
    """``data @ M`` for a row reader, by blocks of whole rows read here (``M`` small: m x k)."""
    n, m = data.shape
    step = max(1, 2**21 // max(m, 1))
    return np.vstack([_rows(data, slice(i0, min(n, i0 + step))) @ M for i0 in range(0, n, step)])


# ----------------------------------------------------------------- row blocks read where the kernel runs
class RowBlock:
    """A block of rows not read yet: ``(reader, idx)`` (picklable, a few bytes plus the reader's graph). A tile
    kernel calls :func:`rows_of` on it and so reads the rows on the worker that runs it."""

    __slots__ = ("reader", "idx", "shape")

    def __init__(self, reader, idx) -> None:
        self.reader, self.idx = reader, idx
        n, m = reader.shape
        count = len(range(*idx.indices(n))) if isinstance(idx, slice) else len(idx)
        self.shape = (count, m)

    def __getstate__(self):
        return self.reader, self.idx, self.shape

    def __setstate__(self, state) -> None:
        self.reader, self.idx, self.shape = state


def row_block(data, idx):
    """The rows ``idx`` of ``data``: read now (:func:`.rows._rows`) for an in-memory matrix, a
    :class:`RowBlock` to be read by the kernel for a row reader (a dask-backed operator's)."""
    if isinstance(data, DaskRows):
        return RowBlock(data, idx)
    return _rows(data, idx)


def rows_of(block) -> np.ndarray:
    """A row block as a dense array, reading it here when it was deferred (:func:`row_block`)."""
    return _rows(block.reader, block.idx) if isinstance(block, RowBlock) else block
