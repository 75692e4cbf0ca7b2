"""The uniform mixing coefficients of Definition 1 of Balle et al. 2019, each with a witness.

For a row-stochastic K (rows = inputs x, columns = outputs y) this module computes,
each with a witness and rounded toward the safe (larger) side:

- the Dobrushin coefficient ``max_{x,x'} TV(K_x, K_x')`` and its hockey-stick
  generalisation ``max_{x,x'} D_{e^eps}(K_x || K_x')`` (:func:`dobrushin`,
  :func:`dobrushin_curve`);
- the Doeblin coefficient ``1 - sum_y min_x K(x, y)`` (:func:`doeblin`);
- the ultra-mixing coefficient ``1 - min K(x, y) / K(x', y)`` (:func:`ultra_mixing`).

What they imply (Lemma 9, the local-DP reading of K, the mixing time) is in
:mod:`.guarantees`. Sparse operators are never densified as a whole: only blocks of
rows are. The all-pairs search machinery (and its error analysis) is in
:mod:`.pairwise` (row access, exact pair evaluation) and :mod:`.pruning` (the
certified search for the maximising pair).

Floating-point error model (used by every rounding below): a sum of m
non-negative doubles has relative error at most ``(m - 1) u`` in any order;
``math.exp`` and ``math.log`` are within one ulp (relative ``2u``), numpy's
vectorised ``log`` within four; ``u = 2**-53``. Coefficients are capped at 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .pairwise import (_INF_EPS, _U, _all_pairs, _clean_sparse, _prepare, _row_sums, _rows, _source, _ultra_core,
                       _up)
from .pruning import _curve_values, _max_hockey
from .scan import maybe_summary
from .readings import (_check_block, _check_epsilons, _check_run, _flag, _normalisation, _operator,  # noqa: F401
                       _raw_order, _shift, _test_set, _widen)
from .._numerics import ROW_SUM_ATOL, check_choice, check_epsilon, check_float_array, check_int, scaled_by_exp
from ..errors import InvalidParameterError
from ..operators import MarkovOperator, StructuredOperator, as_operator, operator_error

__all__ = [
    "DobrushinResult",
    "DoeblinResult",
    "UltraMixingResult",
    "dobrushin",
    "doeblin",
    "ultra_mixing",
    "dobrushin_curve",
]

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


def doeblin(K: MarkovOperator | ArrayLike | sp.spmatrix, *, inputs: Any = None, method: str = "exact",
            verbose: bool = False, executor: Any = None, progress: bool | None = None) -> DoeblinResult:
    """Doeblin coefficient ``gamma = 1 - sum_y min_x K(x, y)`` (Definition 1(3) of Balle et al. 2019).

    K is gamma-Doeblin iff ``K(x) >= (1 - gamma) omega`` for all x and some
    distribution omega; the largest minorising measure is ``nu(y) = min_x K(x, y)``,
    so the smallest such gamma is ``1 - sum(nu)`` with witness ``omega = nu / sum(nu)``
    (``None`` when gamma = 1: every omega works then). One pass over K.

    Parameters
    ----------
    K : MarkovOperator, array_like or scipy.sparse matrix
    inputs : sequence of input labels, optional
        Only these inputs count (Theorem 1 needs only the inputs M can output).
    method : {"exact", "lp"}
        ``"lp"`` solves ``max sum(nu) s.t. 0 <= nu <= K(x, .)`` with
        :func:`chainamp.lp.doeblin_lp` and reports ``1 - lower`` of its certified bracket.
    verbose : bool
        With ``method="lp"``, show the solver's log (default False: the solver prints nothing).
    executor, progress
        A large dense K is read by blocks of rows on ``executor`` (identical result; see
        :func:`dobrushin`); ``progress`` as there.

    ``K`` may also be a numpy array, a scipy.sparse matrix or nested lists (checked as
    ``MarkovOperator(K)`` does). Rows accepted within ``row_sum_atol`` of mass 1 stand for
    their normalised rows ``K(x, .) / s_x``; both methods report ``max(1, max_x s_x) -
    sum(nu)`` (``sum(nu)`` bounded from below), which covers the normalised rows
    (``min_x K(x, y) / s_x >= nu_y / max_x s_x``) and the rows as written.

    Returns
    -------
    DoeblinResult
        ``gamma`` is rounded up: ``sum(nu)`` is pushed down by its summation error first.
        ``minorant`` and ``witness`` are those of the rows as written.

    Examples
    --------
    >>> K = MarkovOperator([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25]])
    >>> res = doeblin(K)
    >>> round(res.gamma, 6), res.witness.round(3).tolist()
    (0.25, [0.333, 0.667, 0.0])
    """
    K = _operator(K, inputs)
    method = check_choice(method, "method", _METHODS)
    if isinstance(K, StructuredOperator) and method == "exact":  # from the structure, never densified
        from .structured import structured_doeblin
        return structured_doeblin(K)
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



def ultra_mixing(K: MarkovOperator | ArrayLike | sp.spmatrix, *, inputs: Any = None, method: str = "exact",
                 verbose: bool = False, normalised: bool = False, executor: Any = None,
                 progress: bool | None = None) -> UltraMixingResult:
    """Ultra-mixing coefficient (Definition 1(4) of Balle et al. 2019).

    K is gamma-ultra-mixing iff every ``K(x) << K(x')`` with density at least
    ``1 - gamma``: the smallest gamma is ``1 - min_{x,x',y} K(x,y)/K(x',y)`` when all
    rows share one support, else 1 (``ratio = 0``; the witness is an output y with
    ``K(x, y) = 0 < K(x', y)``). The minimum over pairs is ``min_y (min_x K(x,y)) /
    (max_x K(x,y))``: one pass over K.

    ``method="lp"`` solves ``max r s.t. r K(x', y) <= floor_y <= K(x, y)`` with
    :func:`chainamp.lp.ultra_mixing_lp` and reports ``1 - lower``; ``verbose=True`` shows the
    solver's log (by default it prints nothing). ``gamma`` is rounded
    up (the ratio is pushed down by its division error).

    ``K`` may also be a numpy array, a scipy.sparse matrix or nested lists (checked as
    ``MarkovOperator(K)`` does). With ``normalised=True`` and a computed row sum other than 1.0
    (rows accepted within ``row_sum_atol``), ``gamma`` also covers the normalised rows: with ``r`` the relative
    error of normalising (:func:`chainamp.operators.operator_error`), every ratio moves by a
    factor of at least ``(1 - r) / (1 + r)``; ``ratio`` is that of the rows as written.
    ``executor`` and ``progress`` as in :func:`doeblin`.

    Examples
    --------
    >>> K = MarkovOperator([[0.75, 0.25], [0.25, 0.75]], inputs=["a", "b"], outputs=["y0", "y1"])
    >>> res = ultra_mixing(K)
    >>> round(res.gamma, 6), res.pair, res.output
    (0.666667, ('b', 'a'), 'y0')
    """
    K = _operator(K, inputs)
    method = check_choice(method, "method", _METHODS)
    if isinstance(K, StructuredOperator) and method == "exact":  # per orbit of input pairs
        from .structured import structured_ultra_mixing
        return structured_ultra_mixing(K, _flag(normalised, "normalised"))
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



def dobrushin(K: MarkovOperator | ArrayLike | sp.spmatrix, epsilon: float = 0.0, *, inputs: Any = None,
              method: str = "exact", all_pairs: bool = False, block_size: int | None = None, verbose: bool = False,
              normalised: bool = False, executor: Any = None, progress: bool | None = None) -> DobrushinResult:
    """(gamma, eps)-Dobrushin coefficient ``max_{x,x'} D_{e^eps}(K_x || K_x')``.

    ``epsilon = 0`` is the Dobrushin coefficient ``max TV(K_x, K_x')`` (Definition 1(1)
    of Balle et al. 2019), ``epsilon > 0`` its hockey-stick version (Definition 1(2)),
    ``epsilon = inf`` footnote 3: ``max K_x(supp K_x minus supp K_x')``.

    Algorithm (``method="exact"``). Shortcuts first: two rows with disjoint supports
    give 1 for every eps (found by a mat-vec of one row's support against K); when all
    rows share one support and ``eps >= max log K(x,y)/K(x',y)`` every term vanishes
    (0); eps = inf (or >= 746, where ``e^eps q > 1`` for every stored q > 0) is
    ``K @ [K == 0]^T``, a sum of non-negative terms.

    Fast path: every pair is scanned in tiles of two blocks of rows (:mod:`chainamp.mixing.scan`;
    compiled with numba when installed, else numpy; two threads, or any ``executor``). One pass
    over y gives each pair ``sum_y min(p_y, q_y)`` (eps = 0: ``D_1 = sum p - sum min``) or
    ``sum_y [p_y - e^eps q_y]_+`` and both orders, and from it a rigorous upper and lower bound
    (relative width about ``(m + 8) u``, independent of eps: no L1-form cancellation). Pairs whose
    upper bound is below the best certified lower bound are out; the remaining candidates are
    re-evaluated term by term (``e^eps`` split when it would overflow) in decreasing order of
    their bound, at most 4096 of them (e.g. randomized response, where all pairs tie, keeps the
    others' own bounds); the result is the largest bound left, ``pair`` its first pair.
    Repeated calls on one operator (searches over eps) keep the n x n matrices of pair bounds of
    up to four eps values (monotonicity, Lipschitz and convexity in ``e^eps``), so later eps
    rescan only the pairs those bounds cannot exclude (:mod:`chainamp.mixing.anchors`).

    Large eps (``e^eps (2m + 16) u > 1e-7``, before any bounds are kept, and eps > 700): few
    terms ``K(x,y) > e^eps K(x',y)`` are active; when that is cheap they are listed from each
    sorted column and summed per pair (one n x n accumulator, n <= 3000); beyond eps = 700
    every pair is otherwise evaluated exactly by blocks.

    Soundness: the reported gamma is never below the exact value for the stored matrix
    (capped at 1). With ``normalised=True`` and a computed row sum other than 1.0 (rows
    accepted within ``row_sum_atol``), it also covers the normalised rows ``K(x, .) / s_x``: with ``r`` the
    relative error of normalising (:func:`chainamp.operators.operator_error`) the stored
    rows are evaluated at ``eps - log((1 + r) / (1 - r))`` (``[p' - c q']_+ <= (1 + r)
    [p - c (1 - r)/(1 + r) q]_+``; below 0, at 0 plus ``(1 - e^{eps - shift})(1 + r)``) and
    the value is multiplied by ``1 + r``; ``test_set`` is read at that order. Extra memory is
    O(block x m) per tile in flight besides the candidate lists, the kept pair bounds (n x n,
    only when they fit the memory limit) and the accumulator above; no n x n x m array is formed.

    Parameters
    ----------
    K : MarkovOperator, array_like or scipy.sparse matrix
        Arrays and nested lists are checked as ``MarkovOperator(K)`` does.
    epsilon : float >= 0 or math.inf
    inputs : sequence of input labels, optional
        Only these inputs count (restricting can only lower gamma).
    method : {"exact", "lp"}
        ``"lp"`` solves one hockey-stick LP per ordered pair
        (:func:`chainamp.lp.hockey_stick_lp`) and reports the largest certified upper bound;
        for small operators (cross-checks).
    verbose : bool
        With ``method="lp"``, show the solver's log (default False: the solver prints nothing).
    all_pairs : bool
        Also return the n x n matrix of (rounded-up) divergences in ``pairwise``
        (O(n^2 m) exact work).
    block_size : int, optional
        Rows per block of a tile of the fast path (default ``min(n, max(8, 2**19 // max(n, m)))``;
        never depends on the number of workers).
    normalised : bool
        Also cover the row-normalised operator (see Soundness; :func:`chainamp.amplify`
        widens the stored rows' coefficients itself).
    executor : concurrent.futures.Executor, optional
        Runs the tiles (a ``ThreadPoolExecutor``, a ``ProcessPoolExecutor``, a dask client's
        ``get_executor()``); the result and the witness are identical to the serial ones
        (``None``: in this process, on two threads for large scans).
    progress : bool, optional
        Progress bar of the scan over pairs: ``None`` shows it after 2 s, ``True`` at once,
        ``False`` never.

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
    executor, progress = _check_run(executor, progress)
    source = _SRC.format(1 if eps == 0.0 else 2) + (" (footnote 3)" if math.isinf(eps) else "")
    n = K.shape[0]
    if n < 2:
        return DobrushinResult(0.0, eps, None, (), method, None, np.zeros((n, n)) if all_pairs else None, source)
    if isinstance(K, StructuredOperator) and method == "exact" and not all_pairs:  # per orbit of input pairs
        from .structured import structured_dobrushin
        return structured_dobrushin(K, eps, _flag(normalised, "normalised"), source)
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


def dobrushin_curve(K: MarkovOperator | ArrayLike | sp.spmatrix, epsilons: Any, *, inputs: Any = None,
                    block_size: int | None = None, normalised: bool = False, executor: Any = None,
                    progress: bool | None = None) -> np.ndarray:
    """``gamma(eps) = max_{x,x'} D_{e^eps}(K_x || K_x')`` at many eps (Definition 1(2) of Balle et al. 2019).

    Same guarantees and inputs as :func:`dobrushin` (arrays and nested lists are checked as
    ``MarkovOperator(K)`` does; each value rounded up, never below the exact
    one), sharing work across eps: the disjoint-support probe and the ultra-mixing pass
    are done once (every eps at or beyond the largest log-ratio costs nothing), and since
    ``D_{e^eps}`` is non-increasing in eps, upper bounds found at one eps prune the pairs
    to re-examine at the next (the pair bounds kept across eps of :func:`dobrushin`). The
    returned curve is non-increasing. ``block_size``, ``executor`` (identical results on any
    executor) and ``progress`` (one bar over the eps values, one per scan) as in :func:`dobrushin`.

    Examples
    --------
    >>> K = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
    >>> dobrushin_curve(K, [0.0, math.log(2), math.log(3), math.inf]).round(6).tolist()
    [0.5, 0.25, 0.0, 0.0]
    """
    K = _operator(K, inputs)
    eps = _check_epsilons(epsilons)
    if isinstance(K, StructuredOperator):  # per orbit of input pairs
        from .structured import structured_curve
        uniq, back = np.unique(eps, return_inverse=True)
        return np.minimum.accumulate(structured_curve(K, uniq, _flag(normalised, "normalised")))[back]
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
