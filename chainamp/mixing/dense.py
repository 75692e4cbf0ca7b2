"""The dense paths of the mixing coefficients and of the LDP guarantee (private).

The body of :func:`chainamp.doeblin`, :func:`chainamp.ultra_mixing`, :func:`chainamp.dobrushin`,
:func:`chainamp.dobrushin_curve` and :func:`chainamp.ldp_guarantee` for every operator that is read
row by row (dense, sparse, dask-backed; and a structured one when the LP or all pairs are asked for): the
same signature, validation and result as the public functions, which dispatch a structured operator to
:mod:`.structured` first. The structured paths evaluate their small per-orbit operators here, so this
module sits below both :mod:`.structured` and the public :mod:`.coefficients` and :mod:`.guarantees`.
The algorithms, error model and soundness arguments are documented with the public functions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .pairwise import _all_pairs, _clean_sparse, _prepare, _row_sums, _source, _ultra_core, _U, _up
from .pruning import _curve_values, _max_hockey
from .readings import (_check_block, _check_epsilons, _check_run, _flag, _normalisation, _operator, _raw_order,
                       _shift, _test_set, _widen)
from .results import _METHODS, _SRC, DobrushinResult, DoeblinResult, LDPGuarantee, UltraMixingResult
from .scan import maybe_summary
from .._numerics import ROW_SUM_ATOL, check_choice, check_epsilon
from ..operators import MarkovOperator

__all__: list[str] = []


def _lp():
    from . import lp  # same layer; imported lazily so the exact path never needs cvxpy

    return lp


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


def dense_doeblin(K: MarkovOperator | ArrayLike | sp.spmatrix, *, inputs: Any = None, method: str = "exact",
                  verbose: bool = False, executor: Any = None, progress: bool | None = None) -> DoeblinResult:
    """:func:`chainamp.doeblin` of an operator that is not structured, or with ``method="lp"`` (see there)."""
    K = _operator(K, inputs)
    method = check_choice(method, "method", _METHODS)
    executor, progress = _check_run(executor, progress)
    summary = maybe_summary(_source(K), executor, progress)
    nu = _column_min(_source(K)) if summary is None else np.array(summary[1], dtype=float)
    nu.flags.writeable = False
    m = nu.size
    total = float(nu.sum())
    # Rows are accepted within row_sum_atol of mass 1. With top = max(1, largest row sum (rounded up)),
    # top - sum(nu) covers both readings of such rows: as written (K = (1 - gamma) omega + a remainder of
    # mass <= top) and normalised (gamma_norm <= 1 - sum(nu) / max(1, max_x s_x) <= top - sum(nu), since
    # min_x K(x, y) / s_x >= nu_y / max_x s_x). The LP bounds sum(nu) from below instead of summing it.
    sums = _row_sums(_source(K))
    top = max(1.0, float(sums.max()) * (1.0 + (m + 1) * _U))
    if method == "lp":
        dev = float(np.abs(sums - 1.0).max())  # K was accepted with at least this tolerance
        cert = _lp().doeblin_lp(K.matrix, row_sum_atol=max(ROW_SUM_ATOL, 2.0 * dev), verbose=verbose)
        gamma = _up(max(0.0, top - float(cert.lower)), 0.0)
    else:
        cert = None
        # true sum >= computed (1 - (m + 1) u); top - that is rounded up by one ulp
        gamma = _up(max(0.0, top - total * (1.0 - (m + 1) * _U)), 0.0) if total > 0 else 1.0
    witness = None
    if gamma < 1.0 and total > 0:
        witness = nu / total
        witness.flags.writeable = False
    return DoeblinResult(gamma=gamma, witness=witness, minorant=nu, method=method, certificate=cert,
                         source=_SRC.format(3))


def dense_ultra_mixing(K: MarkovOperator | ArrayLike | sp.spmatrix, *, inputs: Any = None, method: str = "exact",
                       verbose: bool = False, normalised: bool = False, executor: Any = None,
                       progress: bool | None = None) -> UltraMixingResult:
    """:func:`chainamp.ultra_mixing` of an operator that is not structured, or with ``method="lp"`` (see there)."""
    K = _operator(K, inputs)
    method = check_choice(method, "method", _METHODS)
    n = K.shape[0]
    executor, progress = _check_run(executor, progress)
    core = _ultra_core(_source(K), maybe_summary(_source(K), executor, progress))
    if core.identical or n < 2:
        gamma = 0.0
    elif not core.shared:
        gamma = 1.0
    else:
        gamma = _up(1.0 - core.ratio_low, 0.0)
    cert = None
    r = _normalisation(K) if _flag(normalised, "normalised") else 0.0
    if method == "lp":
        dev = float(np.abs(_row_sums(K._data) - 1.0).max())  # K was accepted with at least this tolerance
        cert = _lp().ultra_mixing_lp(K.matrix, row_sum_atol=max(ROW_SUM_ATOL, 2.0 * dev), verbose=verbose)
        gamma = _up(max(0.0, 1.0 - float(cert.lower)), 0.0) if n > 1 else 0.0
    if r and 0.0 < gamma < 1.0:
        # normalised rows: every ratio K(x, y) / K(x', y) moves by a factor in [(1 - r)/(1 + r), (1 + r)/(1 - r)]
        kept = (1.0 - gamma) * (1.0 - r) / (1.0 + r) * (1.0 - 8 * _U)
        gamma = _up(1.0 - kept, 0.0)
    pair = None if core.rows is None or n < 2 else (K.inputs[core.rows[0]], K.inputs[core.rows[1]])
    out = None if core.col is None or n < 2 else K.outputs[core.col]
    return UltraMixingResult(gamma=gamma, pair=pair, output=out, ratio=core.ratio, method=method,
                             certificate=cert, source=_SRC.format(4))


def dobrushin_arguments(epsilon: Any, method: Any, all_pairs: Any, block_size: Any, executor: Any,
                        progress: Any) -> tuple:
    """The keywords of :func:`chainamp.dobrushin` checked in order: (eps, method, block, executor, progress,
    source)."""
    eps = check_epsilon(epsilon)
    method = check_choice(method, "method", _METHODS)
    if not isinstance(all_pairs, (bool, np.bool_)):
        raise TypeError(f"all_pairs must be a bool, got {type(all_pairs).__name__} {all_pairs!r}")
    block = _check_block(block_size)
    executor, progress = _check_run(executor, progress)
    source = _SRC.format(1 if eps == 0.0 else 2) + (" (footnote 3)" if math.isinf(eps) else "")
    return eps, method, block, executor, progress, source


def dense_dobrushin(K: MarkovOperator | ArrayLike | sp.spmatrix, epsilon: float = 0.0, *, inputs: Any = None,
                    method: str = "exact", all_pairs: bool = False, block_size: int | None = None,
                    verbose: bool = False, normalised: bool = False, executor: Any = None,
                    progress: bool | None = None) -> DobrushinResult:
    """:func:`chainamp.dobrushin` of an operator that is not structured, or with ``method="lp"`` or
    ``all_pairs=True`` (see there)."""
    K = _operator(K, inputs)
    eps, method, block, executor, progress, source = dobrushin_arguments(epsilon, method, all_pairs, block_size,
                                                                         executor, progress)
    n = K.shape[0]
    if n < 2:
        return DobrushinResult(0.0, eps, None, (), method, None, np.zeros((n, n)) if all_pairs else None, source)
    cert: object | None = None
    pairwise = None
    r = _normalisation(K) if _flag(normalised, "normalised") else 0.0
    order = _raw_order(eps, r)  # the stored rows' divergence at this order bounds the normalised rows' at eps
    if method == "lp":
        lp = _lp()
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
        dev = float(np.abs(_row_sums(K._data) - 1.0).max())  # K was accepted with at least this tolerance
        by_index = lp.hockey_stick_lp_pairs(K.matrix, pairs, order, row_sum_atol=max(ROW_SUM_ATOL, 2.0 * dev))
        sols = {}
        pairwise = np.zeros((n, n))
        for (i, j), sol in by_index.items():
            sols[(K.inputs[i], K.inputs[j])] = sol
            pairwise[i, j] = _widen(min(max(float(sol.upper), 0.0), 1.0), eps, r)
        off = pairwise + np.diag(np.full(n, -np.inf))
        i, j = np.unravel_index(int(np.argmax(off)), off.shape)
        gamma = float(pairwise[i, j])
        cert = sols if all_pairs else sols[(K.inputs[i], K.inputs[j])]
        pairwise = pairwise if all_pairs else None
    elif all_pairs:
        pairwise = _all_pairs(K._data, order, n)
        if r:
            pairwise = np.vectorize(lambda g: _widen(float(g), eps, r), otypes=[float])(pairwise)
            np.fill_diagonal(pairwise, 0.0)
        off = pairwise + np.diag(np.full(n, -np.inf))
        i, j = np.unravel_index(int(np.argmax(off)), off.shape)
        gamma = float(pairwise[i, j])
    else:
        gamma, i, j = _max_hockey(_prepare(K, block), order, executor=executor, progress=progress)
        gamma = _widen(gamma, eps, r)
    if pairwise is not None:
        pairwise.flags.writeable = False
    return DobrushinResult(gamma=gamma, epsilon=eps, pair=(K.inputs[i], K.inputs[j]),
                           test_set=_test_set(K, int(i), int(j), order), method=method,
                           certificate=cert, pairwise=pairwise, source=source)


def dense_curve(K: MarkovOperator | ArrayLike | sp.spmatrix, epsilons: Any, *, inputs: Any = None,
                block_size: int | None = None, normalised: bool = False, executor: Any = None,
                progress: bool | None = None) -> np.ndarray:
    """:func:`chainamp.dobrushin_curve` of an operator that is not structured (see there)."""
    K = _operator(K, inputs)
    eps = _check_epsilons(epsilons)
    prep = _prepare(K, _check_block(block_size))
    run = dict(zip(("executor", "progress"), _check_run(executor, progress)))
    uniq, back = np.unique(eps, return_inverse=True)
    r = _normalisation(K) if _flag(normalised, "normalised") else 0.0
    if r:  # rows not summing to 1.0: bounds for the normalised rows, as in dobrushin
        orders = np.array([_raw_order(float(e), r) for e in uniq])
        raw = _curve_values(prep, np.unique(orders), **run)
        at = dict(zip(np.unique(orders).tolist(), raw.tolist()))
        vals = np.array([_widen(at[o], float(e), r) for o, e in zip(orders.tolist(), uniq)])
    else:
        vals = _curve_values(prep, uniq, **run)
    # monotone envelope: each value bounds the curve at every larger eps as well
    vals = np.minimum.accumulate(vals)
    return vals[back]


def dense_ldp_guarantee(K: MarkovOperator, *, inputs: Any = None, normalised: bool = False, executor: Any = None,
                        progress: bool | None = None) -> LDPGuarantee:
    """:func:`chainamp.ldp_guarantee` of an operator that is not structured (see there)."""
    K = _operator(K, inputs)
    run = dict(zip(("executor", "progress"), _check_run(executor, progress)))
    r = _normalisation(K) if _flag(normalised, "normalised") else 0.0
    prep = _prepare(K, None)
    core = prep.ultra
    if K.shape[0] < 2 or core.identical:
        eps = 0.0
    else:
        eps = core.log_max if core.shared and prep.disjoint is None else math.inf
    if r and 0.0 < eps < math.inf:  # every ratio moves by at most (1 + r) / (1 - r)
        eps = math.nextafter((eps + _shift(r)) * (1.0 + 4 * _U), math.inf)
    wide = bool(r)
    return LDPGuarantee(epsilon=eps, ultra=dense_ultra_mixing(K, normalised=wide),
                        dobrushin=dense_dobrushin(K, normalised=wide, **run), operator=K, _prep=prep, _r=r, _run=run)
