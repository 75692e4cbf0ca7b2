"""Row primitives of the pair scans, shared by the in-memory and the dask-backed paths (private).

The one row access of every kernel (:func:`_rows`), row sums, the clean CSR form, the one-pass
ultra-mixing core (shared support, extreme log-ratio; :class:`_Ultra`), the preparation every eps shares
(:class:`_Prep`) and the tile height (:func:`_tile_rows`). :mod:`.pairwise` prepares an in-memory
operator with them and :mod:`.dask_prep` a dask-backed one; both import this module, which imports
neither, so the dispatch in :mod:`.pairwise` needs no import inside a function. The floating-point error
model is the one stated in :mod:`.pairwise`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF
from ..operators import DaskRows

__all__: list[str] = []

_U = UNIT_ROUNDOFF
_TINY = SMALLEST_SUBNORMAL  # absolute error of a product that underflows


# ----------------------------------------------------------------- row helpers
def _rows(data, idx) -> np.ndarray:
    """Dense rows ``idx`` (a slice or an integer array), in order: the ONE row access of the pair scans.

    Contract (row source): ``data`` is a numpy array, a scipy.sparse matrix (a block of rows is
    densified, never the whole) or any object whose ``data[idx]`` returns a dense float64 ndarray of
    those rows (e.g. :class:`chainamp.operators.DaskRows`); every kernel of :mod:`.scan` reads rows only
    through this function. For a numpy array and a slice the result is a view (no copy).
    """
    blk = data[idx]
    return blk.toarray() if sp.issparse(blk) else np.asarray(blk)


def _row_sums(data) -> np.ndarray:
    return np.asarray(data.sum(axis=1), dtype=float).ravel()


def _clean_sparse(data):
    """CSR with sorted indices and no explicit zeros (products may store some)."""
    if data.nnz and np.any(data.data == 0):
        data = data.copy()
        data.eliminate_zeros()
    if not data.has_sorted_indices:
        data = data.sorted_indices()
    return data


def _column_counts(data) -> np.ndarray:
    """Number of inputs with ``K(x, y) > 0`` for each output y."""
    if sp.issparse(data):
        data = _clean_sparse(data)
        return np.bincount(data.indices, minlength=data.shape[1])
    return np.count_nonzero(data > 0, axis=0)


def _up(value: float, rel: float, absolute: float = 0.0, upper: float = 1.0) -> float:
    """``value (1 + rel) + absolute``, pushed one float up and capped at ``upper``."""
    if value == 0.0 and absolute == 0.0:
        return 0.0
    return min(math.nextafter(value * (1.0 + rel) + absolute, math.inf), upper)


# ----------------------------------------------------------------- ultra-mixing core
@dataclass(frozen=True)
class _Ultra:
    shared: bool          # all rows share one support
    ratio: float          # computed min ratio (0 when supports differ)
    ratio_low: float      # rigorous lower bound on the true min ratio
    log_max: float        # rigorous upper bound on max_{x,x',y} log K(x,y)/K(x',y) (inf if not shared)
    identical: bool       # every column constant: gamma = 0 exactly
    rows: tuple | None    # (x, x') indices attaining the min ratio
    col: int | None


def _ultra_core(data, summary=None) -> _Ultra:
    """The ultra-mixing pass; ``summary`` = (counts, min, argmin, max, argmax) per column of a dense
    ``data`` when already computed by blocks (:func:`.scan.column_summary`)."""
    if isinstance(data, DaskRows) and summary is None:  # a dask-backed operator: its validation pass (issue 11)
        st = data.stats
        summary = (st.col_positive, st.col_min, st.col_argmin, st.col_max, st.col_argmax)
    n, m = data.shape
    counts = _column_counts(data) if summary is None else summary[0]
    mixed = np.flatnonzero((counts > 0) & (counts < n))
    if mixed.size:
        y = int(mixed[0])
        col = data[:, [y]].toarray().ravel() if sp.issparse(data) else data[:, y]
        x0, x1 = int(np.flatnonzero(col == 0)[0]), int(np.flatnonzero(col > 0)[0])
        return _Ultra(False, 0.0, 0.0, math.inf, False, (x0, x1), y)
    if sp.issparse(data):
        data = _clean_sparse(data)
        cols = data.indices[: data.indptr[1]]
        vals = data.data.reshape(n, cols.size)  # every row has exactly these columns, sorted
    else:
        cols = np.flatnonzero(counts == n)
        vals = data[:, cols] if summary is None else None
    if vals is None:
        lo, lo_i, hi, hi_i = (a[cols] for a in summary[1:])
    else:
        lo_i, hi_i = vals.argmin(axis=0), vals.argmax(axis=0)
        lo = vals[lo_i, np.arange(cols.size)]
        hi = vals[hi_i, np.arange(cols.size)]
    if np.all(lo == hi):
        return _Ultra(True, 1.0, 1.0, 0.0, True, (0, 1) if n > 1 else None, int(cols[0]))
    ratios = lo / hi
    k = int(np.argmin(ratios))
    ratio = float(ratios[k])
    # one correctly rounded division (absolute 2**-1074 if it underflows)
    ratio_low = max(0.0, ratio * (1.0 - 2 * _U) - _TINY)
    if ratio_low > 0:
        log_max = _up(-math.log(ratio_low), 4 * _U, 4 * _U, upper=math.inf)
    else:  # the ratio underflowed: use the logs of the entries instead
        with np.errstate(divide="ignore"):
            la, lb = np.log(hi), np.log(lo)
        d = la - lb
        log_max = float(np.max(np.nextafter(d + 8 * _U * (np.abs(la) + np.abs(lb) + np.abs(d)), np.inf)))
    return _Ultra(True, ratio, ratio_low, log_max, False, (int(lo_i[k]), int(hi_i[k])), int(cols[k]))


@dataclass(frozen=True)
class _Prep:
    """What every eps shares: the operator data, row sums, a disjoint pair, the ultra pass."""

    data: Any
    n: int
    m: int
    sums: np.ndarray
    disjoint: tuple | None
    ultra: _Ultra
    block: int
    #: per-operator state reused across calls (the pair bounds of :mod:`.anchors`)
    cache: dict = field(default_factory=dict, compare=False, repr=False)


def _tile_rows(m: int, block_size: int | None = None) -> int:
    """Rows per block of a tile of the pair scans (:mod:`.scan`): ``block_size`` when given, else about
    1 MiB of rows (16..512 rows, even). Depends on m only, never on the number of workers."""
    if block_size is not None:
        return int(block_size)
    b = 2**20 // (8 * max(m, 1))
    return int(min(512, max(16, b - b % 2)))
