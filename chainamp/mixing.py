"""Uniform mixing coefficients of a finite Markov operator (Definition 1 of Balle et al. 2019).

For a row-stochastic K (rows = inputs x, columns = outputs y) this module computes,
each with a witness and rounded toward the safe (larger) side:

- the Dobrushin coefficient ``max_{x,x'} TV(K_x, K_x')`` and its hockey-stick
  generalisation ``max_{x,x'} D_{e^eps}(K_x || K_x')`` (:func:`dobrushin`,
  :func:`dobrushin_curve`);
- the Doeblin coefficient ``1 - sum_y min_x K(x, y)`` (:func:`doeblin`);
- the ultra-mixing coefficient ``1 - min K(x, y) / K(x', y)`` (:func:`ultra_mixing`);

plus the Lemma 9 implications (:func:`mixing_conditions`), the local-DP reading
of K (:func:`ldp_guarantee`) and a worst-start mixing time (:func:`mixing_time`).
Sparse operators are never densified as a whole: only blocks of rows are.

Floating-point error model (used by every rounding below): a sum of m
non-negative doubles has relative error at most ``(m - 1) u`` in any order;
``math.exp`` and ``math.log`` are within one ulp (relative ``2u``), numpy's
vectorised ``log`` within four; ``u = 2**-53``. Coefficients are capped at 1.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from ._tolerances import UNIT_ROUNDOFF
from ._validation import check_choice, check_epsilon, check_int, check_probability, check_real
from .errors import IncompatibleOperatorsError, InvalidParameterError
from .operators import MarkovOperator

__all__ = [
    "DobrushinResult",
    "DoeblinResult",
    "UltraMixingResult",
    "MixingConditions",
    "LDPGuarantee",
    "dobrushin",
    "doeblin",
    "ultra_mixing",
    "dobrushin_curve",
    "mixing_conditions",
    "ldp_guarantee",
    "mixing_time",
]

_U = UNIT_ROUNDOFF
_TINY = 2.0**-1074  # smallest subnormal: absolute error of a product that underflows
#: Above this eps, ``e^eps q >= e^746 * 2**-1074 > 2 > p`` for every stored q > 0, so
#: ``D_{e^eps}(p || q)`` equals the footnote-3 divergence ``p(supp p minus supp q)`` exactly.
_INF_EPS = 746.0
_METHODS = ("exact", "lp")
_SRC = "Definition 1({}) of Balle et al. 2019"


# ----------------------------------------------------------------- result types
@dataclass(frozen=True)
class DobrushinResult:
    """``max_{x,x'} D_{e^eps}(K_x || K_x')`` (Definition 1(1)/(2)), rounded up, with its witness."""

    gamma: float
    epsilon: float
    pair: tuple | None
    test_set: tuple
    method: str
    certificate: object | None = None
    pairwise: np.ndarray | None = field(default=None, repr=False)
    source: str = ""


@dataclass(frozen=True)
class DoeblinResult:
    """``1 - sum_y min_x K(x, y)`` (Definition 1(3)) with the minorant and ``omega``."""

    gamma: float
    witness: np.ndarray | None = field(repr=False)
    minorant: np.ndarray = field(repr=False)
    method: str = "exact"
    certificate: object | None = None
    source: str = ""


@dataclass(frozen=True)
class UltraMixingResult:
    """``1 - min_{x,x',y} K(x,y)/K(x',y)`` (Definition 1(4)); 1 when the supports differ."""

    gamma: float
    pair: tuple | None
    output: object | None
    ratio: float
    method: str = "exact"
    certificate: object | None = None
    source: str = ""


# ----------------------------------------------------------------- helpers
def _operator(K: Any, inputs: Any = None) -> MarkovOperator:
    if not isinstance(K, MarkovOperator):
        raise TypeError(f"K must be a chainamp.MarkovOperator, got {type(K).__name__}")
    return K if inputs is None else K.restrict(inputs)


def _rows(data, idx) -> np.ndarray:
    """Dense copy of some rows (a block of a sparse matrix is densified, never the whole)."""
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


def _scaled(q: np.ndarray, eps: float) -> np.ndarray:
    """``e^eps q`` with relative error <= 6u, without forming an overflowing ``e^eps``
    (entries that overflow become ``inf``, which is right: they exceed every p)."""
    with np.errstate(over="ignore"):
        if eps <= 700.0:
            return q * math.exp(eps)
        h = math.exp(0.5 * eps)
        return (q * h) * h


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
        cQ = _scaled(Q, eps)
        val = np.maximum(P - cQ, 0.0).sum(axis=1)
        # outputs where the term is, or could truly be, positive: p >= cq (1 - 8u)
        near = P >= cQ * (1.0 - 8 * _U)
        near_mass = np.where(near, P, 0.0).sum(axis=1)
        bound = (val * (1.0 + (m + 2) * _U) + 8 * _U * near_mass * (1.0 + (m + 2) * _U)
                 + np.count_nonzero(near, axis=1) * _TINY)
    upper = np.where(bound > 0, np.nextafter(bound, np.inf), 0.0)  # not capped: see _max_hockey
    return val, upper


def _test_set(K: MarkovOperator, i: int, j: int, eps: float) -> tuple:
    p, q = _rows(K._data, [i])[0], _rows(K._data, [j])[0]
    if math.isinf(eps) or eps >= _INF_EPS:
        mask = (p > 0) & (q == 0)
    else:
        mask = p > _scaled(q, eps)
    return tuple(K.outputs[y] for y in np.flatnonzero(mask))


def _lp():
    from . import lp  # same layer; imported lazily so the exact path never needs cvxpy

    return lp


# ----------------------------------------------------------------- Doeblin
def _column_min(data) -> np.ndarray:
    """``nu(y) = min_x K(x, y)``; for sparse K a column with a structural zero has min 0."""
    if not sp.issparse(data):
        return np.asarray(data.min(axis=0), dtype=float)
    data = _clean_sparse(data)
    n, m = data.shape
    counts = np.bincount(data.indices, minlength=m)
    nu = np.zeros(m)
    full = counts == n
    if np.any(full):
        keep = full[data.indices]
        low = np.full(m, np.inf)
        np.minimum.at(low, data.indices[keep], data.data[keep])
        nu[full] = low[full]
    return nu


def doeblin(K: MarkovOperator, *, inputs: Any = None, method: str = "exact") -> DoeblinResult:
    """Doeblin coefficient ``gamma = 1 - sum_y min_x K(x, y)`` (Definition 1(3) of Balle et al. 2019).

    K is gamma-Doeblin iff ``K(x) >= (1 - gamma) omega`` for all x and some
    distribution omega; the largest minorising measure is ``nu(y) = min_x K(x, y)``,
    so the smallest such gamma is ``1 - sum(nu)`` with witness ``omega = nu / sum(nu)``
    (``None`` when gamma = 1: every omega works then). One pass over K.

    Parameters
    ----------
    K : MarkovOperator
    inputs : sequence of input labels, optional
        Only these inputs count (Theorem 1 needs only the inputs M can output).
    method : {"exact", "lp"}
        ``"lp"`` solves ``max sum(nu) s.t. 0 <= nu <= K(x, .)`` with
        :func:`chainamp.lp.doeblin_lp` and reports ``1 - lower`` of its certified bracket.

    Returns
    -------
    DoeblinResult
        ``gamma`` is rounded up: ``sum(nu)`` is pushed down by its summation error first.

    Examples
    --------
    >>> K = MarkovOperator([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25]])
    >>> res = doeblin(K)
    >>> round(res.gamma, 6), res.witness.round(3).tolist()
    (0.25, [0.333, 0.667, 0.0])
    """
    K = _operator(K, inputs)
    method = check_choice(method, "method", _METHODS)
    nu = _column_min(K._data)
    nu.flags.writeable = False
    m = nu.size
    total = float(nu.sum())
    if method == "lp":
        cert = _lp().doeblin_lp(K.matrix)
        gamma = _up(max(0.0, 1.0 - float(cert.lower)), 0.0)
    else:
        cert = None
        # true sum >= computed (1 - (m + 1) u); 1 - that is rounded up by one ulp
        gamma = _up(max(0.0, 1.0 - total * (1.0 - (m + 1) * _U)), 0.0) if total > 0 else 1.0
    witness = None
    if gamma < 1.0 and total > 0:
        witness = nu / total
        witness.flags.writeable = False
    return DoeblinResult(gamma=gamma, witness=witness, minorant=nu, method=method, certificate=cert,
                         source=_SRC.format(3))


# ----------------------------------------------------------------- ultra-mixing
@dataclass(frozen=True)
class _Ultra:
    shared: bool          # all rows share one support
    ratio: float          # computed min ratio (0 when supports differ)
    ratio_low: float      # rigorous lower bound on the true min ratio
    log_max: float        # rigorous upper bound on max_{x,x',y} log K(x,y)/K(x',y) (inf if not shared)
    identical: bool       # every column constant: gamma = 0 exactly
    rows: tuple | None    # (x, x') indices attaining the min ratio
    col: int | None


def _ultra_core(data) -> _Ultra:
    n, m = data.shape
    counts = _column_counts(data)
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
        vals = data[:, cols]
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


def ultra_mixing(K: MarkovOperator, *, inputs: Any = None, method: str = "exact") -> UltraMixingResult:
    """Ultra-mixing coefficient (Definition 1(4) of Balle et al. 2019).

    K is gamma-ultra-mixing iff every ``K(x) << K(x')`` with density at least
    ``1 - gamma``: the smallest gamma is ``1 - min_{x,x',y} K(x,y)/K(x',y)`` when all
    rows share one support, else 1 (``ratio = 0``; the witness is an output y with
    ``K(x, y) = 0 < K(x', y)``). The minimum over pairs is ``min_y (min_x K(x,y)) /
    (max_x K(x,y))``: one pass over K.

    ``method="lp"`` solves ``max r s.t. r K(x', y) <= floor_y <= K(x, y)`` with
    :func:`chainamp.lp.ultra_mixing_lp` and reports ``1 - lower``. ``gamma`` is rounded
    up (the ratio is pushed down by its division error).

    Examples
    --------
    >>> K = MarkovOperator([[0.75, 0.25], [0.25, 0.75]], inputs=["a", "b"], outputs=["y0", "y1"])
    >>> res = ultra_mixing(K)
    >>> round(res.gamma, 6), res.pair, res.output
    (0.666667, ('b', 'a'), 'y0')
    """
    K = _operator(K, inputs)
    method = check_choice(method, "method", _METHODS)
    n = K.shape[0]
    core = _ultra_core(K._data)
    if core.identical or n < 2:
        gamma = 0.0
    elif not core.shared:
        gamma = 1.0
    else:
        gamma = _up(1.0 - core.ratio_low, 0.0)
    cert = None
    if method == "lp":
        cert = _lp().ultra_mixing_lp(K.matrix)
        gamma = _up(max(0.0, 1.0 - float(cert.lower)), 0.0) if n > 1 else 0.0
    pair = None if core.rows is None or n < 2 else (K.inputs[core.rows[0]], K.inputs[core.rows[1]])
    out = None if core.col is None or n < 2 else K.outputs[core.col]
    return UltraMixingResult(gamma=gamma, pair=pair, output=out, ratio=core.ratio, method=method,
                             certificate=cert, source=_SRC.format(4))


# ----------------------------------------------------------------- Dobrushin
_WORKERS = max(1, min(2, os.cpu_count() or 1))
#: Candidates kept per block and exact re-evaluations allowed when values tie (see _max_hockey).
_TIE_BUDGET = 4096


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


def _probe_disjoint(data) -> tuple[int, int] | None:
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


#: The last few preparations of small operators, keyed by the identity of the (read-only)
#: stored matrix; the entry holds the matrix itself, so its id cannot be reused while cached.
_PREP_CACHE: dict = {}


def _prepare(K: MarkovOperator, block_size: int | None) -> _Prep:
    key = (id(K._data), block_size)
    hit = _PREP_CACHE.get(key)
    if hit is not None and hit[0] is K._data:
        return hit[1]
    prep = _prepare_uncached(K, block_size)
    if prep.n * prep.m <= 2**16:  # only small operators are cached (repeated cheap calls)
        if len(_PREP_CACHE) >= 8:
            _PREP_CACHE.pop(next(iter(_PREP_CACHE)))
        _PREP_CACHE[key] = (K._data, prep)
    return prep


def _prepare_uncached(K: MarkovOperator, block_size: int | None) -> _Prep:
    data = _clean_sparse(K._data) if K.is_sparse else K._data
    n, m = data.shape
    block = block_size if block_size is not None else int(min(n, max(8, 2**19 // max(n, m))))
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
        A = np.asarray(data @ Z.T)
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


def _approx_error(prep: _Prep, c: float) -> float:
    """Bound on ``|v - D_c|`` for the L1 form ``v = (c ||p/c - q||_1 + s_p - c s_q) / 2``:
    every rounding is relative to ``s_p + c s_q`` (terms, sum, row sums, scalings, and
    the one-ulp error of ``c = e^eps``), plus underflow of ``p / c``."""
    smax = float(prep.sums.max()) * (1.0 + 4 * _U)
    # 1.25: headroom so that the float comparisons against +- err cannot cut a candidate
    return 1.25 * ((2 * prep.m + 16) * _U * (1.0 + c) * smax + (prep.m + 2) * c * _TINY)


#: Columns per cdist call: rows of this many doubles stay in the L1 cache (about 1.6x faster).
_COL_CHUNK = 384


def _l1_block(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``sum_y |P_iy - Q_jy|`` for every row pair, by cdist on column chunks (a sum of
    non-negative partial sums: the same ``(m - 1) u`` relative error as one cdist)."""
    m = P.shape[1]
    if m <= 2 * _COL_CHUNK:
        return cdist(P, Q, "cityblock")
    out = None
    for c0 in range(0, m, _COL_CHUNK):
        part = cdist(np.ascontiguousarray(P[:, c0:c0 + _COL_CHUNK]),
                     np.ascontiguousarray(Q[:, c0:c0 + _COL_CHUNK]), "cityblock")
        out = part if out is None else np.add(out, part, out=out)
    return out


def _approx_candidates(prep: _Prep, c: float, err: float, cap: int | None):
    """All-pairs approximation by ``cdist`` on row blocks (2 threads; cdist releases the GIL).

    For c = 1 only the upper triangle is computed: one L1 distance gives both orders,
    ``(L1 +- (s_x - s_x')) / 2``. Returns candidate ordered pairs ``(I, J, v)`` with
    ``v >= max(v) - 2 err`` and the largest ``v`` of a candidate dropped by ``cap``
    (``-inf`` if none).
    """
    data, n, b = prep.data, prep.n, prep.block
    sums = prep.sums
    symmetric = c == 1.0
    j_width = max(1, min(n, 2**21 // prep.m)) if sp.issparse(data) else n
    state = {"best": -math.inf}

    def collect(v, rows0, cols0, swap, out):
        vmax = float(v.max())
        state["best"] = max(state["best"], vmax)  # races only keep more candidates
        ii, jj = np.nonzero(v >= state["best"] - 2 * err)
        vals = v[ii, jj]
        dropped = -math.inf
        if cap is not None and vals.size > cap:
            order = np.argpartition(-vals, cap)
            dropped = float(vals[order[cap:]].max())
            sel = order[:cap]
            ii, jj, vals = ii[sel], jj[sel], vals[sel]
        ii, jj = ii + rows0, jj + cols0
        out.append((jj, ii, vals) if swap else (ii, jj, vals))
        return dropped

    def block(i0):
        i1 = min(n, i0 + b)
        P = _rows(data, slice(i0, i1))
        Ps = P if symmetric else P * (1.0 / c)
        out, dropped = [], -math.inf
        for j0 in range(i0 if symmetric else 0, n, j_width):
            j1 = min(n, j0 + j_width)
            Q = data[j0:j1] if not sp.issparse(data) else _rows(data, slice(j0, j1))
            L = _l1_block(Ps, Q)
            if not symmetric:
                L *= c
            fwd = 0.5 * (L + (sums[i0:i1, None] - c * sums[None, j0:j1]))
            r, cc = np.nonzero(np.arange(i0, i1)[:, None] >= np.arange(j0, j1)[None, :]) if symmetric \
                else np.nonzero(np.arange(i0, i1)[:, None] == np.arange(j0, j1)[None, :])
            fwd[r, cc] = -math.inf  # the diagonal (and, when symmetric, the lower triangle)
            dropped = max(dropped, collect(fwd, i0, j0, False, out))
            if symmetric:
                bwd = 0.5 * (L + (sums[None, j0:j1] - sums[i0:i1, None]))
                bwd[r, cc] = -math.inf
                dropped = max(dropped, collect(bwd, i0, j0, True, out))
        return out, dropped

    starts = range(0, n, b)
    if len(starts) > 1 and _WORKERS > 1:
        with ThreadPoolExecutor(_WORKERS) as pool:
            parts = list(pool.map(block, starts))
    else:
        parts = [block(i0) for i0 in starts]
    triples = [t for p in parts for t in p[0]]
    I = np.concatenate([t[0] for t in triples])
    J = np.concatenate([t[1] for t in triples])
    v = np.concatenate([t[2] for t in triples])
    dropped = max(p[1] for p in parts)
    keep = v >= max(float(v.max()), dropped) - 2 * err
    return I[keep], J[keep], v[keep], dropped


#: The enumeration path keeps three n x n accumulators: used for n up to this.
_ENUM_MAX_N = 3000
#: Above this cancellation bound of the L1 form, active terms are enumerated instead.
_ENUM_ERR = 1e-7


def _scaled_inv(p: np.ndarray, eps: float) -> np.ndarray:
    """``e^-eps p`` with relative error <= 6u plus 2 ulps of the subnormal range."""
    if eps <= 700.0:
        return p * math.exp(-eps)
    h = math.exp(-0.5 * eps)
    return (p * h) * h


def _enumerate_hockey(prep: _Prep, eps: float, budget: int) -> tuple[float, int, int] | None:
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
    about 1e-15.
    """
    data, n, m = prep.data, prep.n, prep.m
    if sp.issparse(data) or n > _ENUM_MAX_N:
        return None
    width = max(1, min(m, 2**20 // n))

    def columns():
        """Per column: (values p, sorted column w, sorted row order, first positive z, rows, k)."""
        for y0 in range(0, m, width):
            blk = data[:, y0:y0 + width]
            order = np.argsort(blk, axis=0, kind="stable")
            srt = np.take_along_axis(blk, order, axis=0)
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
        cQ = _scaled(np.concatenate([q[2] for q in parts]), eps)
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
    return min(math.nextafter(best * (1.0 + (m + 2) * _U) + slack, math.inf), 1.0), i, j


#: Below this many entries ``n * n * m``, all pairs are evaluated exactly in one pass.
_SMALL_WORK = 2**16


def _off_diagonal(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the n * (n - 1) ordered pairs x != x'."""
    I, J = np.divmod(np.arange(n * n), n)
    off = I != J
    return I[off], J[off]


def _max_hockey(prep: _Prep, eps: float) -> tuple[float, int, int]:
    """``max_{x != x'} D_{e^eps}(K_x || K_x')``, rounded up, and the pair attaining it.

    Soundness of the fast path: with ``v`` the L1-form approximation and ``err`` its
    rigorous error bound, any pair with ``v < max(v) - 2 err`` has a true value below
    the true value of the pair attaining ``max(v)``, so the maximum is attained among
    the candidates. Candidates are re-evaluated exactly (log-free, with their own
    rounding bound) in decreasing ``v``, stopping once no remaining ``v + err`` can beat
    the best exact lower bound. When ``err`` is tiny (<= 1e-10) and more than
    ``_TIE_BUDGET`` candidates tie, the rest are covered by ``max(v) + err`` instead.
    When ``err`` is not small (large eps) every pair is evaluated exactly.
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
    c = math.exp(eps) if eps <= 709.0 else math.inf
    err = _approx_error(prep, c) if math.isfinite(c) else math.inf
    if err > _ENUM_ERR:  # large eps: few terms are active, enumerate them (exact, no cancellation)
        enumerated = _enumerate_hockey(prep, eps, budget=max(n * n * prep.m // 128, 2**20))
        if enumerated is not None:
            return enumerated
    if err < 0.05:
        cap = _TIE_BUDGET if err <= 1e-10 else None
        I, J, v, dropped = _approx_candidates(prep, c, err, cap)
        order = np.argsort(-v, kind="stable")
        I, J, v = I[order], J[order], v[order]
    else:
        I, J = _off_diagonal(n)
        v, dropped = np.full(I.size, math.inf), -math.inf
    return _resolve(prep, I, J, v, err, dropped, eps)[:3]


def _resolve(prep: _Prep, I, J, v, err: float, dropped: float, eps: float):
    """Exact re-evaluation of candidates sorted by decreasing approximate value ``v``
    (see :func:`_max_hockey`). Returns (gamma, x, x', evaluated I, J, upper bounds)."""
    best_up, best_low, bi, bj = -1.0, -1.0, int(I[0]), int(J[0])
    pos, step = 0, 256
    done_I, done_J, done_up = [], [], []
    while pos < I.size:
        if v[pos] + err < best_low:
            break  # no remaining candidate can be the maximiser
        if err <= 1e-10 and pos >= _TIE_BUDGET:
            break  # near-ties: covered by v + err below
        sl = slice(pos, min(I.size, pos + step))
        vals, ups = _eval_pairs(prep.data, I[sl], J[sl], eps)
        k = int(np.argmax(ups))
        if ups[k] > best_up:
            best_up, bi, bj = float(ups[k]), int(I[sl][k]), int(J[sl][k])
        # a lower bound on the true value: the computed value minus its error allowance
        best_low = max(best_low, float(np.max(vals - (ups - vals))))
        done_I.append(I[sl]), done_J.append(J[sl]), done_up.append(ups)
        pos, step = sl.stop, step * 2
    rest = max(float(v[pos]) if pos < I.size else -math.inf, dropped)
    if rest + err >= best_low and rest > -math.inf:
        best_up = max(best_up, _up(rest + err, 0.0))
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, dtype=int))
    return min(max(best_up, 0.0), 1.0), bi, bj, cat(done_I), cat(done_J), cat(done_up)


def _approx_matrix(prep: _Prep, c: float, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """L1-form approximation of ``D_c(K_x || K_x')`` on the grid rows x cols (diagonal -inf)."""
    data, sums, b = prep.data, prep.sums, prep.block
    Q = _rows(data, cols)

    def block(a):
        r = rows[a:a + b]
        L = _l1_block(_rows(data, r) * (1.0 / c), Q) * c if c != 1.0 else _l1_block(_rows(data, r), Q)
        v = 0.5 * (L + (sums[r, None] - c * sums[None, cols]))
        v[r[:, None] == cols[None, :]] = -math.inf
        return v

    starts = range(0, rows.size, b)
    if len(starts) > 1 and _WORKERS > 1:
        with ThreadPoolExecutor(_WORKERS) as pool:
            return np.vstack(list(pool.map(block, starts)))
    return np.vstack([block(a) for a in starts])


#: Largest n for which dobrushin_curve keeps an n x n matrix of upper bounds across eps.
_CURVE_MAX_N = 3000


def _curve_values(prep: _Prep, eps_sorted: np.ndarray) -> np.ndarray:
    """gamma at each eps (ascending, distinct), reusing bounds across eps.

    ``D_{e^eps}`` is non-increasing in eps, so an upper bound ``V[x, x']`` computed at
    one eps holds at every larger eps. At a new eps, the best few pairs by ``V`` are
    evaluated exactly; their largest lower bound ``LB`` is below gamma(eps), so only pairs
    with ``V >= LB`` can attain the maximum. Only the sub-grid of their rows and columns is
    re-approximated (then resolved exactly as in :func:`_max_hockey`), and V is
    tightened there. Same soundness argument as the single-eps path.
    """
    n = prep.n
    out = np.empty(eps_sorted.size)
    V = None
    idx = np.arange(n)
    for k, e in enumerate(eps_sorted):
        e = float(e)
        c = math.exp(e) if e <= 709.0 else math.inf
        special = (n < 2 or prep.disjoint is not None or prep.ultra.identical or e >= _INF_EPS
                   or (prep.ultra.shared and e >= prep.ultra.log_max))
        err = _approx_error(prep, c) if math.isfinite(c) else math.inf
        if special or err > _ENUM_ERR or n > _CURVE_MAX_N or n * n * prep.m <= _SMALL_WORK:
            out[k] = _max_hockey(prep, e)[0]
            continue
        rows = cols = idx
        if V is not None:
            top = np.argpartition(V.ravel(), -min(64, V.size))[-min(64, V.size):]
            tI, tJ = np.divmod(top, n)
            tI, tJ = tI[tI != tJ], tJ[tI != tJ]
            vals, ups = _eval_pairs(prep.data, tI, tJ, e)
            V[tI, tJ] = np.minimum(V[tI, tJ], ups)
            lb = float(np.max(vals - (ups - vals))) if vals.size else -math.inf
            aI, aJ = np.nonzero(V >= lb)
            rows, cols = np.unique(aI), np.unique(aJ)
            if rows.size * cols.size > 0.6 * n * n:
                rows = cols = idx
        v = _approx_matrix(prep, c, rows, cols)
        if V is None:  # first evaluation: the full grid
            V = v + err
        else:
            grid = np.ix_(rows, cols)
            V[grid] = np.minimum(V[grid], v + err)
        cap = _TIE_BUDGET if err <= 1e-10 else None
        vmax = float(v.max())
        ci, cj = np.nonzero(v >= vmax - 2 * err)
        cv = v[ci, cj]
        dropped = -math.inf
        if cap is not None and cv.size > cap:
            order = np.argpartition(-cv, cap)
            dropped = float(cv[order[cap:]].max())
            ci, cj, cv = ci[order[:cap]], cj[order[:cap]], cv[order[:cap]]
        order = np.argsort(-cv, kind="stable")
        gamma, _, _, dI, dJ, dU = _resolve(prep, rows[ci[order]], cols[cj[order]], cv[order], err, dropped, e)
        V[dI, dJ] = np.minimum(V[dI, dJ], dU)
        out[k] = gamma
    return out


def _check_block(block_size: Any) -> int | None:
    return None if block_size is None else check_int(block_size, "block_size", minimum=1)


def dobrushin(K: MarkovOperator, epsilon: float = 0.0, *, inputs: Any = None, method: str = "exact",
              all_pairs: bool = False, block_size: int | None = None) -> DobrushinResult:
    """(gamma, eps)-Dobrushin coefficient ``max_{x,x'} D_{e^eps}(K_x || K_x')``.

    ``epsilon = 0`` is the Dobrushin coefficient ``max TV(K_x, K_x')`` (Definition 1(1)
    of Balle et al. 2019), ``epsilon > 0`` its hockey-stick version (Definition 1(2)),
    ``epsilon = inf`` footnote 3: ``max K_x(supp K_x minus supp K_x')``.

    Algorithm (``method="exact"``). Shortcuts first: two rows with disjoint supports
    give 1 for every eps (found by a mat-vec of one row's support against K); when all
    rows share one support and ``eps >= max log K(x,y)/K(x',y)`` every term vanishes
    (0); eps = inf (or >= 746, where ``e^eps q > 1`` for every stored q > 0) is
    ``K @ [K == 0]^T``, a sum of non-negative terms.

    Fast path. The identity ``D_c(p||q) = (||p - c q||_1 + sum p - c sum q) / 2`` gives
    every pair at once from ``scipy.spatial.distance.cdist`` on row blocks (two threads,
    cdist releases the GIL; for c = 1 only the upper triangle), but with cancellation
    error up to ``err = 1.25 (2m + 16) u (1 + c) max_x sum K_x``. It is used only to FIND
    the pairs that can be the maximiser: a pair with ``v < max v - 2 err`` has a true
    value below the true value of the pair with the largest ``v``. The candidates are
    recomputed term by term (``[p_y - e^eps q_y]_+``, ``e^eps`` split when it would
    overflow) and rounded up by their own error bound; the exact maximum of those,
    rounded up, is returned. When more than 4096 candidates tie within
    ``err <= 1e-10`` (e.g. randomized response, where all pairs are equal) the rest are
    covered by ``max v + err``: the result is then at most ``2 err`` above exact.

    Large eps (``err > 1e-7``): few terms ``K(x,y) > e^eps K(x',y)`` are active; when that
    is cheaper than the L1 pass they are listed from each sorted column and summed per
    pair (no cancellation; one n x n accumulator, n <= 3000). Otherwise the fast path
    runs with its larger ``err``, or, when ``err >= 0.05``, every pair is evaluated
    exactly by blocks.

    Soundness: the reported gamma is never below the exact value for the stored matrix
    (capped at 1). Extra memory is O(block x max(n, m)) besides the candidate lists and
    the accumulator above; no n x n x m array is formed.

    Parameters
    ----------
    K : MarkovOperator
    epsilon : float >= 0 or math.inf
    inputs : sequence of input labels, optional
        Only these inputs count (restricting can only lower gamma).
    method : {"exact", "lp"}
        ``"lp"`` solves one hockey-stick LP per ordered pair
        (:func:`chainamp.lp.hockey_stick_lp`) and reports the largest certified upper bound;
        for small operators (cross-checks).
    all_pairs : bool
        Also return the n x n matrix of (rounded-up) divergences in ``pairwise``
        (O(n^2 m) exact work).
    block_size : int, optional
        Rows per block of the fast path.

    Returns
    -------
    DobrushinResult
        ``pair`` = (x, x') attaining the maximum, ``test_set`` = the outputs S with
        ``K_x(S) - e^eps K_x'(S) = gamma`` (``{y : K(x,y) > e^eps K(x',y)}``).

    Examples
    --------
    >>> K = MarkovOperator([[0.75, 0.25], [0.25, 0.75]], outputs=["y0", "y1"])
    >>> res = dobrushin(K)
    >>> round(res.gamma, 6), res.test_set
    (0.5, ('y0',))
    >>> round(dobrushin(K, math.log(2)).gamma, 6), dobrushin(K, math.log(3)).gamma
    (0.25, 0.0)
    """
    K = _operator(K, inputs)
    eps = check_epsilon(epsilon)
    method = check_choice(method, "method", _METHODS)
    if not isinstance(all_pairs, (bool, np.bool_)):
        raise TypeError(f"all_pairs must be a bool, got {type(all_pairs).__name__} {all_pairs!r}")
    block = _check_block(block_size)
    source = _SRC.format(1 if eps == 0.0 else 2) + (" (footnote 3)" if math.isinf(eps) else "")
    n = K.shape[0]
    if n < 2:
        return DobrushinResult(0.0, eps, None, (), method, None, np.zeros((n, n)) if all_pairs else None, source)
    cert: object | None = None
    pairwise = None
    if method == "lp":
        lp = _lp()
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
        if hasattr(lp, "hockey_stick_lp_pairs"):  # one compiled problem re-solved per pair
            by_index = lp.hockey_stick_lp_pairs(K.matrix, pairs, eps)
        else:
            by_index = {(i, j): lp.hockey_stick_lp(_rows(K._data, [i])[0], _rows(K._data, [j])[0], eps)
                        for i, j in pairs}
        sols = {}
        pairwise = np.zeros((n, n))
        for (i, j), sol in by_index.items():
            sols[(K.inputs[i], K.inputs[j])] = sol
            pairwise[i, j] = min(max(float(sol.upper), 0.0), 1.0)
        off = pairwise + np.diag(np.full(n, -np.inf))
        i, j = np.unravel_index(int(np.argmax(off)), off.shape)
        gamma = float(pairwise[i, j])
        cert = sols if all_pairs else sols[(K.inputs[i], K.inputs[j])]
        pairwise = pairwise if all_pairs else None
    elif all_pairs:
        pairwise = _all_pairs(K._data, eps, n)
        off = pairwise + np.diag(np.full(n, -np.inf))
        i, j = np.unravel_index(int(np.argmax(off)), off.shape)
        gamma = float(pairwise[i, j])
    else:
        gamma, i, j = _max_hockey(_prepare(K, block), eps)
    if pairwise is not None:
        pairwise.flags.writeable = False
    return DobrushinResult(gamma=gamma, epsilon=eps, pair=(K.inputs[i], K.inputs[j]),
                           test_set=_test_set(K, int(i), int(j), eps), method=method,
                           certificate=cert, pairwise=pairwise, source=source)


def _check_epsilons(epsilons: Any, name: str = "epsilons") -> np.ndarray:
    try:
        eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers ({exc})") from None
    if eps.ndim != 1 or eps.size == 0 or np.any(np.isnan(eps)) or np.any(eps < 0):
        raise InvalidParameterError(f"{name} must be a non-empty 1-D array of values >= 0 (got {epsilons!r})")
    return eps


def dobrushin_curve(K: MarkovOperator, epsilons: Any, *, inputs: Any = None,
                    block_size: int | None = None) -> np.ndarray:
    """``gamma(eps) = max_{x,x'} D_{e^eps}(K_x || K_x')`` at many eps (Definition 1(2) of Balle et al. 2019).

    Same guarantees as :func:`dobrushin` (each value rounded up, never below the exact
    one), sharing work across eps: the disjoint-support probe and the ultra-mixing pass
    are done once (every eps at or beyond the largest log-ratio costs nothing), and since
    ``D_{e^eps}`` is non-increasing in eps, upper bounds found at one eps prune the pairs
    to re-examine at the next (about 5x faster than one :func:`dobrushin` per eps on a
    dense 500 x 500 operator). The returned curve is non-increasing.

    Examples
    --------
    >>> K = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
    >>> dobrushin_curve(K, [0.0, math.log(2), math.log(3), math.inf]).round(6).tolist()
    [0.5, 0.25, 0.0, 0.0]
    """
    K = _operator(K, inputs)
    eps = _check_epsilons(epsilons)
    prep = _prepare(K, _check_block(block_size))
    uniq, back = np.unique(eps, return_inverse=True)
    vals = _curve_values(prep, uniq)
    # monotone envelope: each value bounds the curve at every larger eps as well
    vals = np.minimum.accumulate(vals)
    return vals[back]


# ----------------------------------------------------------------- Lemma 9, LDP, mixing time
@dataclass(frozen=True)
class MixingConditions:
    """Which conditions of Definition 1 (Balle et al. 2019) hold at ``gamma``, with the coefficients.

    A condition holds when its rounded-up coefficient is ``<= gamma`` or when Lemma 9
    derives it from one that does, at the same gamma: ultra-mixing => Doeblin =>
    Dobrushin => (gamma, eps)-Dobrushin. The last arrow is what ``D_{e^eps} <= TV``
    proves (the proof of Lemma 9 words it the other way round, which is false: k-ary
    randomized response is (0, eps)-Dobrushin at its own eps but not 0-Dobrushin), so
    hockey-stick never implies Dobrushin here. ``implied`` names the conditions obtained
    only through these implications. ``hockey_stick`` is None without epsilon.
    """

    gamma: float
    epsilon: float | None
    dobrushin: bool
    hockey_stick: bool | None
    doeblin: bool
    ultra_mixing: bool
    dobrushin_gamma: float
    hockey_stick_gamma: float | None
    doeblin_gamma: float
    ultra_mixing_gamma: float
    implied: tuple = ()
    source: str = "Definition 1 and Lemma 9 of Balle et al. 2019"


def mixing_conditions(K: MarkovOperator, gamma: float, epsilon: float | None = None, *,
                      inputs: Any = None) -> MixingConditions:
    """Check the four conditions of Definition 1 (Balle et al. 2019) at one ``gamma``.

    Examples
    --------
    >>> K = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
    >>> c = mixing_conditions(K, 0.6, epsilon=0.5)
    >>> c.dobrushin, c.hockey_stick, c.doeblin, c.ultra_mixing
    (True, True, True, False)
    """
    K = _operator(K, inputs)
    g = check_probability(gamma, "gamma")
    eps = None if epsilon is None else check_epsilon(epsilon)
    dob = dobrushin(K).gamma
    hs = None if eps is None else dobrushin(K, eps).gamma
    doe = doeblin(K).gamma
    ult = ultra_mixing(K).gamma
    ultra_ok = ult <= g
    doeblin_ok = doe <= g or ultra_ok
    dob_ok = dob <= g or doeblin_ok
    # D_{e^eps} <= TV: gamma-Dobrushin => (gamma, eps)-Dobrushin (never the converse)
    hs_ok = None if hs is None else (hs <= g or dob_ok)
    implied = tuple(name for name, direct, final in (("doeblin", doe <= g, doeblin_ok),
                                                     ("dobrushin", dob <= g, dob_ok),
                                                     ("hockey_stick", hs is not None and hs <= g, bool(hs_ok)))
                    if final and not direct)
    return MixingConditions(gamma=g, epsilon=eps, dobrushin=dob_ok, hockey_stick=hs_ok, doeblin=doeblin_ok,
                            ultra_mixing=ultra_ok, dobrushin_gamma=dob, hockey_stick_gamma=hs,
                            doeblin_gamma=doe, ultra_mixing_gamma=ult, implied=implied)


@dataclass(frozen=True)
class LDPGuarantee:
    """K read as a local randomizer whose neighbours are all pairs of inputs (NOTES table).

    ``epsilon`` is the pure-LDP level ``eps_K = log(1 / (1 - gamma_ultra))`` = the
    largest log-likelihood ratio ``max log K(x,y)/K(x',y)`` (inf when supports differ),
    rounded up. ``delta(eps)`` is the (gamma, eps)-Dobrushin coefficient: K is
    ``(eps, delta(eps))``-LDP for every eps, so post-processing anything by K is
    ``(eps, delta(eps))``-DP. ``epsilon_at(delta)`` inverts it by bisection.
    """

    epsilon: float
    ultra: UltraMixingResult
    dobrushin: DobrushinResult
    operator: MarkovOperator = field(repr=False, compare=False)
    _prep: _Prep = field(repr=False, compare=False, default=None)
    source: str = "Balle et al. 2019, Definition 1 read as local DP (all input pairs neighbours)"

    def delta(self, eps: Any) -> float | np.ndarray:
        """``max_{x,x'} D_{e^eps}(K_x || K_x')``, rounded up; a float for a scalar eps.

        >>> g = ldp_guarantee(MarkovOperator([[0.75, 0.25], [0.25, 0.75]]))
        >>> round(g.delta(0.0), 6), g.delta([0.0, math.log(2)]).round(6).tolist()
        (0.5, [0.5, 0.25])
        """
        scalar = np.ndim(eps) == 0
        arr = _check_epsilons(eps, "eps")
        uniq, back = np.unique(arr, return_inverse=True)
        vals = np.minimum.accumulate(_curve_values(self._prep, uniq))[back]
        return float(vals[0]) if scalar else vals

    def epsilon_at(self, delta: float, *, xtol: float = 1e-9) -> float:
        """Smallest eps (up to ``xtol`` relative, rounded up) with ``delta(eps) <= delta``;
        ``inf`` when even eps = inf needs more. The returned eps is a verified point.

        >>> g = ldp_guarantee(MarkovOperator([[0.75, 0.25], [0.25, 0.75]]))
        >>> round(g.epsilon_at(0.25), 6), g.epsilon_at(0.0) == g.epsilon
        (0.693147, True)
        """
        d = check_probability(delta, "delta")
        tol = _check_xtol(xtol, "xtol")
        if self.delta(0.0) <= d:
            return 0.0
        if math.isfinite(self.epsilon):
            lo, hi = 0.0, self.epsilon
        else:
            if self.delta(math.inf) > d:
                return math.inf
            lo, hi = 0.0, 1.0
            while hi < _INF_EPS and self.delta(hi) > d:
                lo, hi = hi, min(2.0 * hi, _INF_EPS)
        while hi - lo > tol * max(1.0, hi):
            mid = 0.5 * (lo + hi)
            if self.delta(mid) <= d:
                hi = mid
            else:
                lo = mid
        return hi


def _check_xtol(value: Any, name: str) -> float:
    x = check_real(value, name)
    if not 0.0 < x < 1.0:
        raise InvalidParameterError(f"{name} must be in (0, 1) (got {x!r})")
    return x


def ldp_guarantee(K: MarkovOperator, *, inputs: Any = None) -> LDPGuarantee:
    """The local-DP guarantee of K itself, all input pairs being neighbours.

    gamma-ultra-mixing is ``(log(1/(1-gamma)), 0)``-LDP and (gamma, eps)-Dobrushin is
    ``(eps, gamma)``-LDP (the correspondence of Definition 1 of Balle et al. 2019 with
    local DP). ``eps_K`` is computed from the largest log-ratio directly (no ``1 - gamma``
    cancellation) and rounded up.

    Examples
    --------
    >>> e = math.exp(1.0)
    >>> K = MarkovOperator([[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]])
    >>> g = ldp_guarantee(K)
    >>> round(g.epsilon, 6), round(g.delta(0.5), 6)
    (1.0, 0.287649)
    """
    K = _operator(K, inputs)
    prep = _prepare(K, None)
    core = prep.ultra
    if K.shape[0] < 2 or core.identical:
        eps = 0.0
    else:
        eps = core.log_max if core.shared and prep.disjoint is None else math.inf
    return LDPGuarantee(epsilon=eps, ultra=ultra_mixing(K), dobrushin=dobrushin(K), operator=K, _prep=prep)


def mixing_time(K: MarkovOperator, eps: float = 0.25, *, max_steps: int = 2**40) -> int:
    """Smallest t with ``dobrushin(K ** t).gamma <= eps``: the worst case over ALL starting states.

    ``max_x TV(K^t_x, pi)`` lies between ``gamma(K^t) / 2`` and ``gamma(K^t)``; PyDTMC's
    ``mixing_time`` instead measures the distance from one given start distribution,
    which can be much smaller. Since ``gamma(K^{t+1}) <= gamma(K^t) gamma(K) <=
    gamma(K^t)`` (sub-multiplicativity), t is found by repeated squaring to bracket it
    and bisection with the stored powers ``K^(2^j)``: O(log t) products.

    Raises
    ------
    IncompatibleOperatorsError
        K is not square (same input and output labels).
    InvalidParameterError
        ``gamma(K^t) > eps`` for every ``t <= max_steps`` (periodic or reducible chains).

    Examples
    --------
    >>> mixing_time(MarkovOperator([[0.9, 0.1], [0.1, 0.9]]), 0.25)
    7
    """
    if not isinstance(K, MarkovOperator):
        raise TypeError(f"K must be a chainamp.MarkovOperator, got {type(K).__name__}")
    if not K.is_square:
        raise IncompatibleOperatorsError(
            f"mixing_time needs a square operator with the same input and output labels (shape {K.shape})")
    e = check_probability(eps, "eps")
    limit = check_int(max_steps, "max_steps", minimum=0)

    def gam(op):
        return dobrushin(op).gamma

    if (0.0 if K.shape[0] < 2 else 1.0) <= e:
        return 0
    powers, span = [K], 1  # powers[j] = K^(2^j)
    while gam(powers[-1]) > e:
        if span >= limit:
            raise InvalidParameterError(
                f"K does not mix to eps={e!r} within max_steps={limit} steps (gamma(K^{span}) > eps); "
                "it may be periodic or reducible")
        powers.append(powers[-1] @ powers[-1])
        span *= 2
    if len(powers) == 1:
        return 1
    acc, t = powers[-2], span // 2  # gamma(K^t) > eps >= gamma(K^(2t))
    for j in range(len(powers) - 3, -1, -1):
        trial = acc @ powers[j]
        if gam(trial) > e:
            acc, t = trial, t + 2**j
    if t + 1 > limit:
        raise InvalidParameterError(
            f"K does not mix to eps={e!r} within max_steps={limit} steps (needs {t + 1})")
    return t + 1
