"""What the coefficients of Definition 1 of Balle et al. 2019 guarantee: Lemma 9, local DP, mixing time.

* :func:`mixing_conditions` / :class:`MixingConditions`: which conditions of
  Definition 1 hold at one gamma, directly or through the implications of Lemma 9;
* :func:`ldp_guarantee` / :class:`LDPGuarantee`: K read as a local randomizer (the
  LDP table: pure eps from ultra-mixing, ``delta(eps)`` from (gamma, eps)-Dobrushin);
* :func:`mixing_time`: the worst-start mixing time from the Dobrushin coefficient.

The coefficients themselves are computed in :mod:`.coefficients`; every value here
is derived from their rounded-up results, so it inherits their soundness.
"""

from __future__ import annotations

import math  # noqa: F401  (the examples use it)
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .circulant import circulant_mixing_time, circulant_row, sparse_circulant_row
from .coefficients import dobrushin, doeblin, ultra_mixing
from .dense import dense_ldp_guarantee
from .pairwise import _eval_pairs
from .power_search import dense_mixing_time
from .readings import _flag, _operator
# the result type lives below this module, the dense path and the structured one; re-exported here
from .results import LDPGuarantee
from .structured import structured_ldp_guarantee
from .tv_bounds import submultiplicative, tv_decide
from .._numerics import check_epsilon, check_int, check_memory, check_probability, check_progress, progress_bar
from ..errors import IncompatibleOperatorsError, InvalidParameterError, ResourceLimitError
from ..operators import MarkovOperator, StructuredOperator

__all__ = [
    "MixingConditions",
    "LDPGuarantee",
    "mixing_conditions",
    "ldp_guarantee",
    "mixing_time",
]


#: dense stored chains with at least this many states take the search of :mod:`.power_search` (squares, then a
#: bisection on a few rows, one full decision per candidate), as do sparse ones up to ``_SPARSE_TO_DENSE_MAX_N`` states
#: (a dense copy); smaller ones and larger sparse ones the product search below
_DENSE_SEARCH_MIN_N = 3
#: a dense stored circulant chain (``K(x, y) = c((y - x) mod n)``, e.g. a walk on a cycle) takes :mod:`.circulant`
#: (powers and decisions from row 0 alone); False: the dense search (benchmarks compare)
_CIRCULANT = True
#: a sparse stored circulant chain up to this many states takes :mod:`.circulant` too (O(n^2) per decision)
_SPARSE_CIRCULANT_MAX_N = 20000
#: a sparse stored chain up to this many states is searched as a dense copy (:mod:`.power_search`; its powers fill in
#: anyway, and its squares with few non-zeros stay CSR factors); above, the product search below. 0: never
_SPARSE_TO_DENSE_MAX_N = 2048
#: dense powers a sparse chain's dense copy must have room for (t up to about 2^20) to take the dense search
_HELD_POWERS = 24
#: up to this many rows a dense K's row-sum deviations are exact (``math.fsum`` per row), beyond bounded in numpy
_EXACT_ROW_SUMS_MAX_N = 256


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
    ultra = ultra_mixing(K)
    ult = ultra.gamma
    # rows with different supports are not ultra-mixing for ANY gamma (K(x) << K(x') fails):
    # their reported gamma = 1 must not make the condition hold at gamma = 1
    ultra_ok = ult <= g and ultra.ratio > 0.0
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


def ldp_guarantee(K: MarkovOperator, *, inputs: Any = None, normalised: bool = False, executor: Any = None,
                  progress: bool | None = None) -> LDPGuarantee:
    """The local-DP guarantee of K itself, all input pairs being neighbours.

    gamma-ultra-mixing is ``(log(1/(1-gamma)), 0)``-LDP and (gamma, eps)-Dobrushin is
    ``(eps, gamma)``-LDP (the correspondence of Definition 1 of Balle et al. 2019 with
    local DP). ``eps_K`` is computed from the largest log-ratio directly (no ``1 - gamma``
    cancellation) and rounded up. ``K`` may be an array or nested lists (checked as
    ``MarkovOperator(K)`` does); ``normalised=True`` also covers the row-normalised operator
    when a computed row sum is not 1.0 (``eps_K + log((1 + r) / (1 - r))``, and ``delta`` as
    :func:`dobrushin` with ``normalised=True``). ``executor`` and ``progress`` are those of every
    pair scan of the guarantee and of its later ``delta`` / ``epsilon_at`` calls (as in :func:`dobrushin`:
    identical results on any executor).

    Examples
    --------
    >>> e = math.exp(1.0)
    >>> K = MarkovOperator([[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]])
    >>> g = ldp_guarantee(K)
    >>> round(g.epsilon, 6), round(g.delta(0.5), 6)
    (1.0, 0.287649)
    """
    K = _operator(K, inputs)
    if isinstance(K, StructuredOperator):  # per orbit of input pairs
        return structured_ldp_guarantee(K, _flag(normalised, "normalised"))
    return dense_ldp_guarantee(K, normalised=normalised, executor=executor, progress=progress)


def mixing_time(K: MarkovOperator, eps: float = 0.25, *, max_steps: int = 2**40, progress: bool | None = None) -> int:
    """Smallest t with ``dobrushin(K ** t).gamma <= eps``: the worst case over ALL starting states.

    ``max_x TV(K^t_x, pi)`` lies between ``gamma(K^t) / 2`` and ``gamma(K^t)``; PyDTMC's
    ``mixing_time`` instead measures the distance from one given start distribution,
    which can be much smaller. Since ``gamma(K^{t+1}) <= gamma(K^t) gamma(K) <=
    gamma(K^t)`` (sub-multiplicativity), t is found by repeated squaring to bracket it
    and bisection with the stored powers ``K^(2^j)``: O(log t) products. A dense stored K of
    3 or more states takes :mod:`.power_search`: the squares are formed while a known pair of
    rows certifies them above eps, t is located by bisection on the ROWS of the known pairs only
    (a few rows times a stored square per step), and only the candidate ``K^t`` is formed and
    decided in full (about ``log2 t + popcount(t)`` products and one full decision for sticky
    and lazy chains with t in the thousands); an exactly circulant one (``K(x, y) = c((y - x) mod n)``: walks on
    cycles and circulant graphs) takes :mod:`.circulant` instead: every power from its row 0 (a row times an n x n
    circulant, ``O(n^2)``) and decided on the n / 2 shifts of row 0, with the same error bounds and the same
    certificates. A sparse stored chain takes the circulant path when it is one (up to 20,000 states), else up to
    2,048 states the dense search on a dense copy of the same entries (when the memory limit has room for about 24
    dense powers). Otherwise (larger sparse, structured): a power that fills
    in is stored dense (the products are then matrix products). ``gamma(K^t) > eps`` is
    settled without a scan when a pair that attained an earlier coefficient has a certified
    total variation above eps on ``K^t``. A dense power is then decided in O(n^2) by reference rows
    (``TV(x, x') <= d(x, r) + d(x', r)``, rounded up) and exact certified bounds of the few pairs they
    leave open (:mod:`.tv_bounds`); only when too many stay open is every pair scanned. A product whose
    coefficient is already at most ``gamma(A) gamma(B) <= eps`` by sub-multiplicativity (with the
    product's rounding) is not formed, and a power with few non-zeros is a sparse right factor.
    ``progress`` shows a bar over the products (None: after 2 s; False: never).

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

    progress = check_progress(progress)
    witnesses: list = []  # index pairs that attained a coefficient so far
    bound = [1.0]         # a certified upper bound on the gamma of the EXACT power last passed to above()
    # tv_err[id(op)] >= max_x ||op_x - (exact power)_x||_1 for each power formed (alive keeps ids from being
    # reused): K's own rows stand for their normalised rows (|s_x - 1| each); a product adds (module of
    # products.py) t_a (1 + t_b) + t_b + (n + 2) u (1 + t_a)(1 + t_b), u = 2^-53. Two rows off by t each in l1
    # have a total variation off by at most t, so gamma(exact) <= gamma(stored) + t.
    tv_err = {id(K): _row_sum_tv(K)}
    alive = [K]

    def above(op) -> bool:
        """``gamma(exact power) > e`` unless certified otherwise: True on a known pair's lower bound (a True
        too many only adds steps), else for a dense power by reference rows and the few pairs they cannot
        settle (:func:`.tv_bounds.tv_decide`), else by the full scan; False only when the stored power's
        certified gamma plus its error ``tv_err`` is at most e."""
        bound[0] = 1.0
        t = tv_err.get(id(op), 0.0)
        e_low = math.nextafter(e - t, -math.inf) if t > 0.0 else e  # gamma(stored) <= e_low: exact <= e
        for i, j in witnesses:
            vals, ups = _eval_pairs(op._data, np.array([i]), np.array([j]), 0.0)
            if float(vals[0] - (ups[0] - vals[0])) > e:
                return True
        found = tv_decide(op._data, e_low) if _plain_dense(op) and op.shape[0] > 2 and e_low >= 0.0 else None
        if found is not None:
            verdict, got, pair = found
            bound[0] = _up_sum(got, t)
            if verdict is not None:
                if verdict:
                    witnesses.insert(0, pair)
                    del witnesses[4:]
                return verdict
        res = dobrushin(op, progress=False)
        bound[0] = _up_sum(res.gamma, t)
        witnesses.insert(0, (op.inputs.index(res.pair[0]), op.inputs.index(res.pair[1])))
        del witnesses[4:]
        return bound[0] > e

    def product(a, b, j: int | None = None):
        thin = sparse_of.get(j) if j is not None else None
        if thin is not None and _plain_dense(a):  # dense @ sparse: O(n nnz)
            out = MarkovOperator(np.asarray(a._data @ thin), inputs=a.inputs, outputs=b.outputs)
        else:
            out = a @ b
        n = out.shape[0]
        if out.is_sparse and out.nnz > 0.1 * n * n:  # filled in: dense products from now on
            try:
                check_memory(8.0 * n * n, f"a dense {n} x {n} power of K")
                out = MarkovOperator(out.matrix, inputs=out.inputs, outputs=out.outputs)
            except ResourceLimitError:
                pass
        ta, tb, u = tv_err.get(id(a), 0.0), tv_err.get(id(b), 0.0), 2.0**-53
        tv_err[id(out)] = (ta * (1.0 + tb) + tb + (a.shape[1] + 2) * u * (1.0 + ta) * (1.0 + tb)) * (1.0 + 8 * u)
        alive.append(out)
        bar.update(1)
        return out

    if (0.0 if K.shape[0] < 2 else 1.0) <= e:
        return 0
    n = K.shape[0]
    if _plain_sparse(K) and n >= _DENSE_SEARCH_MIN_N:
        row = sparse_circulant_row(K._data) if _CIRCULANT and n <= _SPARSE_CIRCULANT_MAX_N else None
        if row is not None:  # a walk on a cycle stored sparse: O(n) memory per power
            with progress_bar(None, "mixing time", unit="products", progress=progress) as bar:
                return circulant_mixing_time(row, e, limit, tv_err[id(K)], bar)
        if n <= _SPARSE_TO_DENSE_MAX_N and _fits(8.0 * n * n * _HELD_POWERS):
            # the dense search (its thin squares stay CSR factors) on the same entries; without room for about
            # _HELD_POWERS dense powers, the product search below (which keeps powers sparse when they do not fit)
            K = MarkovOperator._trusted(K._data.toarray(), K.inputs, K.outputs)
            tv_err[id(K)] = tv_err[id(alive[0])]
            alive.append(K)
    if _plain_dense(K) and K.shape[0] >= _DENSE_SEARCH_MIN_N:
        row = circulant_row(K._data) if _CIRCULANT else None
        with progress_bar(None, "mixing time", unit="products", progress=progress) as bar:
            if row is not None:  # K(x, y) = c((y - x) mod n): O(n^2) per power and per decision
                return circulant_mixing_time(row, e, limit, tv_err[id(K)], bar)
            return dense_mixing_time(K, e, limit, tv_err[id(K)], bar)
    with progress_bar(None, "mixing time", unit="products", progress=progress) as bar:
        powers, span = [K], 1  # powers[j] = K^(2^j)
        bounds = []            # bounds[j] >= gamma(powers[j]) (certified)
        sparse_of: dict = {}   # j -> CSR copy of a dense-stored powers[j] with few non-zeros (cheap right factor)
        while above(powers[-1]):
            bounds.append(bound[0])
            if span >= limit:
                raise InvalidParameterError(
                    f"K does not mix to eps={e!r} within max_steps={limit} steps (gamma(K^{span}) > eps); "
                    "it may be periodic or reducible")
            last = powers[-1]
            if _plain_dense(last) and np.count_nonzero(last._data) <= 0.1 * last._data.size:
                sparse_of[len(powers) - 1] = sp.csr_matrix(last._data)
            span *= 2
            if submultiplicative(bound[0], bound[0], K.shape[0]) <= e:
                powers.append(None)  # gamma(K^span) <= gamma(K^(span/2))^2 <= eps: no need to form it
                break
            powers.append(product(last, last, len(powers) - 1))
        if len(powers) == 1:
            t = 0  # gamma(K) <= eps: one step (still checked against max_steps below)
        else:
            acc, t, acc_bound = powers[-2], span // 2, bounds[-1]  # gamma(K^t) > eps >= gamma(K^(2t))
        for j in range(len(powers) - 3, -1, -1):
            if submultiplicative(acc_bound, bounds[j], K.shape[0]) <= e:
                continue  # gamma(acc powers[j]) <= eps without forming the product
            trial = product(acc, powers[j], j)
            if above(trial):
                acc, t, acc_bound = trial, t + 2**j, bound[0]
    if t + 1 > limit:
        raise InvalidParameterError(
            f"K does not mix to eps={e!r} within max_steps={limit} steps (needs {t + 1})")
    return t + 1


def _up_sum(a: float, b: float) -> float:
    """``a + b`` rounded up (capped at 1: a coefficient)."""
    return min(math.nextafter(a + b, math.inf) if b > 0.0 else a, 1.0)


def _row_sum_tv(K: MarkovOperator) -> float:
    """``max_x |s_x - 1|`` (K's rows stand for their normalised rows, ``||r / s - r||_1 = |1 - s|``), rounded up;
    0 only when every row sums to exactly 1 (``math.fsum`` of the row and -1: the deviation correctly rounded). A
    dense K of more than ``_EXACT_ROW_SUMS_MAX_N`` rows: the float row sums plus their error ``(m + 4) u s``
    (non-negative terms), rounded up (about 1e-13 at m = 1000, the size of one product's error; 25 ms less)."""
    if isinstance(K, StructuredOperator):  # exact bounds on the row sums of the operator it stands for
        lo, hi = K.row_sum_bounds()
        worst = max(hi - 1.0, 1.0 - lo, 0.0)
        return math.nextafter(worst, math.inf) if worst > 0.0 else 0.0
    data = K._data
    worst = 0.0
    if not (sp.issparse(data) or isinstance(data, np.ndarray)):  # dask-backed: float row sums plus their error
        sums = np.asarray(data.sum(axis=1).compute() if hasattr(data, "compute") else data.sum(axis=1), dtype=float)
        m = K.shape[1]
        worst = float(np.max(np.abs(sums - 1.0))) + (m + 4) * 2.0**-53 * float(np.max(np.abs(sums)))
        return math.nextafter(worst * (1.0 + 2.0**-50), math.inf)
    if sp.issparse(data):
        csr = sp.csr_matrix(data)
        for i in range(csr.shape[0]):
            worst = max(worst, abs(math.fsum(np.append(csr.data[csr.indptr[i]:csr.indptr[i + 1]], -1.0))))
    elif data.shape[0] > _EXACT_ROW_SUMS_MAX_N:  # float sums with their error (gamma_m sum |a|), rounded up
        sums = data.sum(axis=1)
        m = data.shape[1]
        worst = float(np.max(np.abs(sums - 1.0) + (m + 4) * 2.0**-53 * sums))
        return math.nextafter(worst * (1.0 + 2.0**-50), math.inf)
    else:
        for row in np.asarray(data):
            worst = max(worst, abs(math.fsum(np.append(row, -1.0))))
    return math.nextafter(worst, math.inf) if worst > 0.0 else 0.0


def _fits(nbytes: float) -> bool:
    """Whether ``nbytes`` more fit the memory limit (:func:`chainamp._numerics.check_memory`), without raising."""
    try:
        check_memory(nbytes, "a dense copy of K and its powers")
    except ResourceLimitError:
        return False
    return True


def _plain_sparse(op: MarkovOperator) -> bool:
    """A scipy.sparse-stored operator (not structured, not dask-backed)."""
    if isinstance(op, StructuredOperator) or getattr(op, "row_stats", None) is not None:
        return False
    return sp.issparse(op._data)


def _plain_dense(op: MarkovOperator) -> bool:
    """A dense-stored operator whose ``_data`` is its array (a structured one would densify on access)."""
    if isinstance(op, StructuredOperator) or getattr(op, "row_stats", None) is not None:  # structured, dask-backed
        return False
    return isinstance(op._data, np.ndarray)
