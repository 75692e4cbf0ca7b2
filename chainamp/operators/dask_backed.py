"""Markov operators backed by a 2-D dask array: rows fetched per block, never gathered on one process.

:meth:`MarkovOperator.from_dask` wraps a dask array (opened from Zarr or HDF5, generated lazily, or
persisted on a cluster) in a :class:`DaskMarkovOperator`. It is validated once, band by band of whole
rows, with the same checks and messages as an in-memory operator (finite, non-negative entries; rows
summing to 1 within ``row_sum_atol``; the first offending entry or row is named). The same pass keeps
the per-row and per-column summaries the pair scans need (row sums, column minima and maxima, support
counts), each computed on whole rows exactly as numpy computes them on the full matrix, so the
blockwise computations of :mod:`chainamp.mixing` and :mod:`chainamp.privacy` give bit-identical results.

The pair scans receive :attr:`DaskMarkovOperator.rows`, a small picklable :class:`DaskRows` reader: a
kernel running on a worker calls ``reader[i0:i1]`` and fetches that row block there (through the
worker's client on a ``dask.distributed`` worker, so persisted arrays work too). Whatever still needs the
whole matrix (``.matrix``, products, LPs) densifies it through :attr:`DaskMarkovOperator._data` after a
memory check (:func:`chainamp._numerics.check_memory`), and refuses with a ResourceLimitError beyond it.

dask is imported only inside the functions here: ``import chainamp`` never imports it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import ROW_SUM_ATOL, check_memory, check_progress, check_real, progress_bar
from ..errors import InvalidOperatorError, InvalidParameterError
from .markov import MarkovOperator, _check_labels, _preview

__all__ = ["DaskMarkovOperator", "DaskRows", "RowStats", "dask_compute", "row_source", "to_dask"]

#: Entries per band of whole rows in the validation pass (32 MiB of float64).
BAND_ENTRIES = 1 << 22


def _dask_array():
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask is in the test extra
        raise ImportError("dask-backed operators need dask: pip install 'chainamp[distributed]'") from None
    return da


def _in_dask_worker() -> bool:
    try:
        from distributed import get_worker
    except ImportError:  # pragma: no cover - dask without distributed
        return False
    try:
        get_worker()
    except ValueError:
        return False
    return True


def _holds_futures(array) -> bool:
    """True when the array's graph holds results kept on a cluster (``client.persist``)."""
    try:
        from distributed import Future
    except ImportError:  # pragma: no cover - dask without distributed
        return False
    return any(isinstance(v, Future) for v in dict(array.__dask_graph__()).values())


def dask_compute(x, persisted: bool = True) -> np.ndarray:
    """Compute a (small) dask array here. Inside a ``dask.distributed`` task: reading the storage directly
    (synchronous scheduler) unless the array is ``persisted`` on the cluster, then through the worker's client
    (the thread secedes while it waits, so a one-thread worker cannot deadlock); elsewhere dask's default."""
    if _in_dask_worker() and not persisted:
        return np.asarray(x.compute(scheduler="sync"), dtype=float)
    if _in_dask_worker():
        from distributed import worker_client

        with worker_client() as client:
            out = client.compute(x).result()
    else:
        out = x.compute()
    return np.asarray(out, dtype=float)


class DaskRows:
    """Picklable reader of row blocks of a 2-D dask array: ``reader[idx]`` is a dense float64 numpy array
    of the rows ``idx`` (a slice, an int, or a sequence of ints in any order, repeats allowed), all columns
    (and ``reader[:, y]`` one whole column).

    This is what the pair-scan kernels receive instead of the matrix: rows are fetched where the kernel runs.
    """

    __slots__ = ("array", "stats", "persisted", "__weakref__")
    ndim = 2

    def __init__(self, array, stats: RowStats | None = None) -> None:
        self.array = array
        self.stats = stats  # on the process that built the operator only: never pickled
        self.persisted = _holds_futures(array)

    def __getstate__(self):
        return self.array, self.persisted

    def __setstate__(self, state) -> None:
        (self.array, self.persisted), self.stats = state, None

    def sum(self, axis: int) -> np.ndarray:
        """Row sums (``axis=1``, as numpy sums each whole row), from the validation pass."""
        if axis != 1 or self.stats is None:
            raise TypeError("DaskRows.sum(axis=1) only, on the process that built the operator")
        return self.stats.row_sums

    def min(self, axis: int) -> np.ndarray:
        """Column minima (``axis=0``), from the validation pass."""
        if axis != 0 or self.stats is None:
            raise TypeError("DaskRows.min(axis=0) only, on the process that built the operator")
        return self.stats.col_min

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(int(s) for s in self.array.shape)

    def __getitem__(self, idx) -> np.ndarray:
        if isinstance(idx, tuple):  # one whole column, reader[:, y]
            if len(idx) == 2 and idx[0] == slice(None) and isinstance(idx[1], (int, np.integer)):
                return dask_compute(self.array[:, int(idx[1])], self.persisted)
            raise TypeError("DaskRows reads whole rows (a slice or a sequence of row indices) or one whole "
                            f"column (reader[:, y]), got {idx!r}")
        if isinstance(idx, slice):
            return dask_compute(self.array[idx], self.persisted)
        if isinstance(idx, (int, np.integer)):
            return dask_compute(self.array[int(idx)], self.persisted)
        rows = np.asarray(idx, dtype=np.intp).ravel()
        if rows.size == 0:
            return np.zeros((0, self.shape[1]))
        uniq, back = np.unique(rows, return_inverse=True)
        if uniq.size == uniq[-1] - uniq[0] + 1:  # a contiguous range: one slice
            block = dask_compute(self.array[int(uniq[0]):int(uniq[-1]) + 1], self.persisted)
        else:
            block = dask_compute(self.array[uniq], self.persisted)
        return block[back]

    def __repr__(self) -> str:
        return f"DaskRows({self.shape[0]}x{self.shape[1]}, chunks={self.array.chunksize})"


@dataclass(frozen=True)
class RowStats:
    """What one blockwise pass over whole rows gives (each entry exactly as numpy computes it on the matrix).

    ``row_sums`` (numpy's sum along each row), ``row_nnz`` (positive entries per row), ``col_positive``
    (rows with a positive entry in each column), ``col_min``/``col_argmin`` and ``col_max``/``col_argmax``
    (first row attaining it, as ``argmin``/``argmax`` on the full matrix), ``min_positive`` (the smallest
    positive entry, 1.0 if none) and ``dyadic`` (every entry a multiple of ``2^-52``).
    """

    row_sums: np.ndarray
    row_nnz: np.ndarray
    col_positive: np.ndarray
    col_min: np.ndarray
    col_argmin: np.ndarray
    col_max: np.ndarray
    col_argmax: np.ndarray
    min_positive: float = 1.0
    dyadic: bool = False


def _band_summary(block: np.ndarray, offset: int) -> dict:
    """Summary of one band of whole rows starting at row ``offset`` (runs where the band is)."""
    block = np.asarray(block, dtype=float)
    out: dict = {"bad": None, "neg": None}
    finite = np.isfinite(block)
    if not finite.all():
        k = int(np.flatnonzero(~finite.ravel())[0])
        out["bad"] = (offset + k // block.shape[1], k % block.shape[1])
    negative = block < 0
    if negative.any():
        k = int(np.flatnonzero(negative.ravel())[0])
        out["neg"] = (offset + k // block.shape[1], k % block.shape[1])
    positive = block > 0
    out["row_sums"] = block.sum(axis=1)
    out["row_nnz"] = np.count_nonzero(positive, axis=1)
    out["col_positive"] = np.count_nonzero(positive, axis=0)
    lo, hi = block.argmin(axis=0), block.argmax(axis=0)
    cols = np.arange(block.shape[1])
    out["col_min"], out["col_argmin"] = block[lo, cols], lo + offset
    out["col_max"], out["col_argmax"] = block[hi, cols], hi + offset
    pos = block[positive]
    out["min_positive"] = float(pos.min()) if pos.size else 1.0
    scaled = block * 2.0**52
    out["dyadic"] = bool(np.all(scaled == np.floor(scaled)))
    return out


def _combine(a: dict, b: dict) -> dict:
    """Merge the summaries of two consecutive bands (``a`` first): exact, ties kept by ``a`` (the earlier
    rows), so the result is the summary of the rows of both, as on the full matrix."""
    out = {"bad": a["bad"] or b["bad"], "neg": a["neg"] or b["neg"]}
    out["row_sums"] = np.concatenate([a["row_sums"], b["row_sums"]])
    out["row_nnz"] = np.concatenate([a["row_nnz"], b["row_nnz"]])
    out["col_positive"] = a["col_positive"] + b["col_positive"]
    take = b["col_min"] < a["col_min"]
    out["col_min"] = np.where(take, b["col_min"], a["col_min"])
    out["col_argmin"] = np.where(take, b["col_argmin"], a["col_argmin"])
    take = b["col_max"] > a["col_max"]
    out["col_max"] = np.where(take, b["col_max"], a["col_max"])
    out["col_argmax"] = np.where(take, b["col_argmax"], a["col_argmax"])
    out["min_positive"] = min(a["min_positive"], b["min_positive"])
    out["dyadic"] = a["dyadic"] and b["dyadic"]
    return out


def band_rows(m: int) -> int:
    """Rows per band of the validation pass (depends on the width only, never on the workers)."""
    return max(1, BAND_ENTRIES // max(1, m))


#: Bands reduced per dask computation of the validation pass (the progress bar advances by groups).
BANDS_PER_GROUP = 64


def _tree(parts: list):
    from dask import delayed

    while len(parts) > 1:
        parts = [delayed(_combine)(parts[k], parts[k + 1]) if k + 1 < len(parts) else parts[k]
                 for k in range(0, len(parts), 2)]
    return parts[0]


def _scan(array, progress: bool | None = None) -> dict:
    """One pass over bands of whole rows, run by dask (on the cluster when a Client is the default): groups of
    ``BANDS_PER_GROUP`` bands, each reduced as a tree of exact merges, then merged here in row order; only the
    per-row and per-column summaries come back."""
    import dask
    from dask import delayed

    n, m = (int(s) for s in array.shape)
    step = band_rows(m)
    starts = list(range(0, n, step))
    total = None
    with progress_bar(n, "validating rows", unit="rows", progress=progress) as bar:
        for g in range(0, len(starts), BANDS_PER_GROUP):
            group = starts[g:g + BANDS_PER_GROUP]
            root = _tree([delayed(_band_summary)(array[i0:min(n, i0 + step)], i0) for i0 in group])
            if _in_dask_worker():  # pragma: no cover - an operator built inside a task
                from distributed import worker_client

                with worker_client() as client:
                    part = client.compute(root).result()
            else:
                part = dask.compute(root)[0]
            total = part if total is None else _combine(total, part)
            bar.update(min(n, group[-1] + step) - group[0])
    return total


def _validated(summary: dict, atol: float) -> None:
    """The errors of :class:`MarkovOperator`, in its order: non-finite, then negative, then row sums."""
    if summary["bad"] is not None:
        raise InvalidOperatorError(f"K entries must be finite (entry {summary['bad']} is not)")
    if summary["neg"] is not None:
        raise InvalidOperatorError(f"K entries must be non-negative (entry {summary['neg']} is negative)")
    sums = summary["row_sums"]
    err = np.abs(sums - 1.0)
    if np.any(err > atol):
        i = int(np.argmax(err > atol))
        raise InvalidOperatorError(
            f"K rows must sum to 1 within row_sum_atol={atol:g} (row {i} sums to {float(sums[i])!r})")


def _as_dask(array: Any):
    da = _dask_array()
    if not isinstance(array, da.Array):
        raise TypeError(f"array must be a dask.array.Array (e.g. dask.array.from_zarr(...)), "
                        f"got {type(array).__name__}")
    if array.ndim != 2:
        raise InvalidOperatorError(f"K must be 2-D (got {array.ndim}-D array of shape {array.shape})")
    if any(isinstance(s, float) and np.isnan(s) for s in array.shape):
        raise InvalidOperatorError(f"K must have a known shape (got {array.shape}: call compute_chunk_sizes())")
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise InvalidOperatorError(f"K must have at least one row and one column (got shape {array.shape})")
    if np.issubdtype(array.dtype, np.complexfloating):
        raise TypeError("K must have real entries, got complex numbers")
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(f"K must be an array of numbers (got dtype {array.dtype})")
    return array.astype(float) if array.dtype != np.float64 else array


class DaskMarkovOperator(MarkovOperator):
    """A :class:`MarkovOperator` whose matrix is a 2-D dask array; build it with :meth:`MarkovOperator.from_dask`.

    Rows are fetched per block (:attr:`rows`); the coefficient functions and
    :func:`chainamp.privacy_profile` scan pairs of row blocks and never gather the matrix. Everything
    else works as for an in-memory operator by densifying it after a memory check.

    Examples
    --------
    >>> import dask.array as da
    >>> from chainamp import dobrushin
    >>> K = MarkovOperator.from_dask(da.from_array([[0.75, 0.25], [0.25, 0.75]], chunks=1), outputs=["y0", "y1"])
    >>> K.shape, round(dobrushin(K).gamma, 6), dobrushin(K).test_set
    ((2, 2), 0.5, ('y0',))
    >>> MarkovOperator.from_dask(da.from_array([[0.5, 0.4], [0.5, 0.5]], chunks=1))
    Traceback (most recent call last):
    ...
    chainamp.errors.InvalidOperatorError: K rows must sum to 1 within row_sum_atol=1e-09 (row 0 sums to 0.9)
    """

    __slots__ = ("_array", "_stats", "_reader", "scan_cache")

    def __init__(self, array: Any, inputs: Sequence[Hashable] | None = None,
                 outputs: Sequence[Hashable] | None = None, *, row_sum_atol: float = ROW_SUM_ATOL,
                 progress: bool | None = None):
        atol = check_real(row_sum_atol, "row_sum_atol")
        progress = check_progress(progress)
        arr = _as_dask(array)
        n, m = (int(s) for s in arr.shape)
        summary = _scan(arr, progress)
        _validated(summary, atol)
        self._array = arr
        self._stats = RowStats(**{k: v for k, v in summary.items() if k not in ("bad", "neg")})
        for value in vars(self._stats).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        self._reader = DaskRows(arr, self._stats)
        self.scan_cache: dict = {}  # what the blockwise scans above keep per operator (their preparations)
        self._inputs = _check_labels(inputs, n, "inputs")
        self._outputs = _check_labels(outputs, m, "outputs")
        self._in_index = {lab: i for i, lab in enumerate(self._inputs)}
        self._out_index = {lab: j for j, lab in enumerate(self._outputs)}

    def __reduce__(self):  # the dask graph, labels and summaries; never the (densified) matrix
        return _restore, (self._array, self._inputs, self._outputs, self._stats)

    @property
    def _data(self) -> np.ndarray:  # the whole matrix, for the code paths that are not blockwise
        n, m = self.shape
        check_memory(8.0 * n * m, f"the dense {n} x {m} matrix of a dask-backed operator",
                     hint="the coefficient functions and privacy_profile work blockwise on it; densify only a "
                          "restriction (K.restrict(...)) or raise the limit with chainamp.resource_limits")
        dense = dask_compute(self._array)
        dense.flags.writeable = False
        return dense

    @property
    def array(self):
        """The dask array (float64) holding K."""
        return self._array

    @property
    def rows(self) -> DaskRows:
        """A picklable reader of row blocks (``rows[i0:i1]`` is a numpy array), for blockwise kernels; on this
        process it also answers ``rows.sum(axis=1)`` and ``rows.min(axis=0)`` from the validation pass."""
        return self._reader

    @property
    def row_stats(self) -> RowStats:
        """The per-row and per-column summaries of the validation pass."""
        return self._stats

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(int(s) for s in self._array.shape)

    @property
    def matrix(self) -> np.ndarray:
        return self._data

    @property
    def sparse(self):
        import scipy.sparse as sp

        return sp.csr_matrix(self._data)

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def nnz(self) -> int:
        return int(self._stats.row_nnz.sum())

    def row(self, label: Hashable) -> np.ndarray:
        return self.rows[self.input_index(label)]

    def restrict(self, inputs) -> MarkovOperator:
        """The operator restricted to some inputs, still dask-backed (row sums are not re-checked)."""
        labels = tuple(inputs)
        idx = [self.input_index(lab) for lab in labels]
        problem = ("restrict needs at least one input label" if not idx else
                   "restrict got a repeated input label" if len(set(idx)) != len(idx) else None)
        if problem:  # the messages of MarkovOperator.restrict
            raise InvalidOperatorError(problem)
        if idx == list(range(self.shape[0])):
            return self
        return DaskMarkovOperator(self._array[np.asarray(idx)], labels, self._outputs, row_sum_atol=np.inf)

    def to_dask(self, chunks: Any = "auto"):
        """The dask array, rechunked to ``chunks``."""
        return _rechunk(self._array, chunks)

    def __repr__(self) -> str:
        return (f"MarkovOperator({self.shape[0]}x{self.shape[1]} dask, chunks={self._array.chunksize}, "
                f"inputs={_preview(self._inputs)}, outputs={_preview(self._outputs)})")


def _chunks(chunks: Any, shape: tuple) -> tuple:
    """``chunks`` normalised by dask for a float64 array of ``shape`` (InvalidParameterError naming it)."""
    from dask.array.core import normalize_chunks

    try:
        out = normalize_chunks(chunks, shape, dtype=np.float64)
        if len(out) != 2 or any(sum(c) != s or min(c, default=1) <= 0 for c, s in zip(out, shape)):
            raise ValueError("they must cover each axis with positive sizes")
    except (ValueError, TypeError, ZeroDivisionError) as exc:
        raise InvalidParameterError(f"chunks must be dask chunks for a {shape} array (got {chunks!r}: {exc})") \
            from None
    return out


def _restore(array, inputs: tuple, outputs: tuple, stats: RowStats) -> DaskMarkovOperator:
    """Unpickle a :class:`DaskMarkovOperator` (already validated) without another pass over the array."""
    obj = DaskMarkovOperator.__new__(DaskMarkovOperator)
    obj._array, obj._stats = array, stats
    obj._reader = DaskRows(array, stats)
    obj.scan_cache = {}
    obj._inputs, obj._outputs = tuple(inputs), tuple(outputs)
    obj._in_index = {lab: i for i, lab in enumerate(obj._inputs)}
    obj._out_index = {lab: j for j, lab in enumerate(obj._outputs)}
    return obj


def _rechunk(array, chunks: Any):
    return array.rechunk(_chunks(chunks, tuple(int(s) for s in array.shape)))


def _dense_block(block) -> np.ndarray:
    return block.toarray() if hasattr(block, "toarray") else np.asarray(block)


def to_dask(K: MarkovOperator, chunks: Any = "auto"):
    """K's matrix as a 2-D dask array of float64 with the given ``chunks`` (sparse operators give dense
    chunks, each densified on its own). Labels are not carried: pass them back to ``from_dask``.

    >>> K = MarkovOperator.identity(4, sparse=True)
    >>> arr = K.to_dask((2, 2))
    >>> arr.chunks, bool(MarkovOperator.from_dask(arr) == K)
    (((2, 2), (2, 2)), True)
    """
    if isinstance(K, DaskMarkovOperator):
        return K.to_dask(chunks)
    da = _dask_array()
    chunks = _chunks(chunks, K.shape)
    if K.is_sparse:
        arr = da.from_array(K.sparse, chunks=chunks, asarray=False, fancy=False)
        return arr.map_blocks(_dense_block, dtype=float, meta=np.empty((0, 0)))
    return da.from_array(K.matrix, chunks=chunks)


def row_source(K: MarkovOperator):
    """The row reader of a dask-backed operator (rows fetched per block where they are used), else None."""
    return K.rows if isinstance(K, DaskMarkovOperator) else None
