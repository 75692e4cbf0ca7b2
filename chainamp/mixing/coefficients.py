"""The uniform mixing coefficients of Definition 1 of Balle et al. 2019, each with a witness.

For a row-stochastic K (rows = inputs x, columns = outputs y) this module computes,
each with a witness and rounded toward the safe (larger) side:

- the Dobrushin coefficient ``max_{x,x'} TV(K_x, K_x')`` and its hockey-stick
  generalisation ``max_{x,x'} D_{e^eps}(K_x || K_x')`` (:func:`dobrushin`,
  :func:`dobrushin_curve`);
- the Doeblin coefficient ``1 - sum_y min_x K(x, y)`` (:func:`doeblin`);
- the ultra-mixing coefficient ``1 - min K(x, y) / K(x', y)`` (:func:`ultra_mixing`).

What they imply (Lemma 9, the local-DP reading of K, the mixing time) is in
:mod:`.guarantees`. Each public function here validates its arguments and dispatches: a
structured operator to :mod:`.structured` (per orbit of input pairs, never densified),
every other operator to :mod:`.dense`; both return the result types of :mod:`.results`.
Sparse operators are never densified as a whole: only blocks of rows are. The all-pairs
search machinery (and its error analysis) is in :mod:`.pairwise` (row access, exact pair
evaluation) and :mod:`.pruning` (the certified search for the maximising pair).

Floating-point error model (used by every rounding below): a sum of m
non-negative doubles has relative error at most ``(m - 1) u`` in any order;
``math.exp`` and ``math.log`` are within one ulp (relative ``2u``), numpy's
vectorised ``log`` within four; ``u = 2**-53``. Coefficients are capped at 1.
"""

from __future__ import annotations

import math  # noqa: F401  (the examples use it)
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .dense import dense_curve, dense_dobrushin, dense_doeblin, dense_ultra_mixing, dobrushin_arguments
from .readings import _check_epsilons, _flag, _operator
# the result types live below this module, the dense paths and the structured ones; re-exported here
from .results import _METHODS, DobrushinResult, DoeblinResult, UltraMixingResult
from .structured import structured_curve, structured_dobrushin, structured_doeblin, structured_ultra_mixing
from .._numerics import check_choice
from ..operators import MarkovOperator, StructuredOperator

__all__ = [
    "DobrushinResult",
    "DoeblinResult",
    "UltraMixingResult",
    "dobrushin",
    "doeblin",
    "ultra_mixing",
    "dobrushin_curve",
]


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
    if isinstance(K, StructuredOperator) and check_choice(method, "method", _METHODS) == "exact":
        return structured_doeblin(K)  # from the structure, never densified
    return dense_doeblin(K, method=method, verbose=verbose, executor=executor, progress=progress)


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
    if isinstance(K, StructuredOperator) and check_choice(method, "method", _METHODS) == "exact":
        return structured_ultra_mixing(K, _flag(normalised, "normalised"))  # per orbit of input pairs
    return dense_ultra_mixing(K, method=method, verbose=verbose, normalised=normalised, executor=executor,
                              progress=progress)


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
    if isinstance(K, StructuredOperator):
        eps, checked, *_, source = dobrushin_arguments(epsilon, method, all_pairs, block_size, executor, progress)
        if K.shape[0] >= 2 and checked == "exact" and not all_pairs:  # per orbit of input pairs
            return structured_dobrushin(K, eps, _flag(normalised, "normalised"), source)
    return dense_dobrushin(K, epsilon, method=method, all_pairs=all_pairs, block_size=block_size, verbose=verbose,
                           normalised=normalised, executor=executor, progress=progress)


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
    if isinstance(K, StructuredOperator):  # per orbit of input pairs
        if type(epsilons) is list and len(epsilons) == 1 and type(epsilons[0]) is float and epsilons[0] >= 0.0:
            return structured_curve(K, np.array(epsilons), _flag(normalised, "normalised"))  # (a search step)
        uniq, back = np.unique(_check_epsilons(epsilons), return_inverse=True)
        return np.minimum.accumulate(structured_curve(K, uniq, _flag(normalised, "normalised")))[back]
    return dense_curve(K, epsilons, block_size=block_size, normalised=normalised, executor=executor,
                       progress=progress)
