"""Structure and long-run behaviour of a square Markov operator (a finite Markov chain).

Graph structure (communicating classes, recurrent classes, transient states,
periods) comes from the directed graph with an edge ``x -> y`` for every
non-zero ``K(x, y)``; it is exact (no tolerance is involved). Stationary
distributions are computed per recurrent class with the GTH algorithm
(Grassmann, Taksar and Heyman 1985), which never subtracts and is accurate to
a small multiple of the unit roundoff entrywise (O'Cinneide 1993); large
classes of sparse operators use a sparse method whose residual is checked.

Nothing here feeds a privacy bound directly: the spectral gap in particular is
a floating-point estimate, not a certified quantity (the certified TV mixing
time lives in :mod:`chainamp.mixing`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla

from .._numerics import STATIONARY_RESIDUAL_ATOL, check_choice, check_positive
from ..errors import IncompatibleOperatorsError, InvalidOperatorError, SolverError
from .markov import MarkovOperator

__all__ = [
    "communicating_classes",
    "recurrent_classes",
    "transient_states",
    "is_irreducible",
    "period",
    "periods",
    "is_aperiodic",
    "stationary_distributions",
    "stationary_distribution",
    "spectral_gap",
    "relaxation_time",
    "ChainAnalysis",
    "analyze_chain",
]

#: Recurrent classes up to this size are solved by dense GTH, also when K is sparse.
_GTH_MAX_SPARSE_CLASS = 2000
#: Below this many states a sparse operator is densified for eigenvalues (ARPACK needs k < n - 1).
_DENSE_EIG_MAX = 256
#: Relative accuracy requested from ARPACK for the two largest eigenvalues in modulus.
_ARPACK_TOL = 1e-10
#: Block size of the blocked GTH elimination (one GEMM per block).
_GTH_BLOCK = 64
#: Power-iteration steps tried by the ``"auto"`` sparse method before the sparse LU solve.
_POWER_MAX_ITER = 1000


# ---------------------------------------------------------------- structure
def _check_square(K: Any) -> MarkovOperator:
    if not isinstance(K, MarkovOperator):
        raise TypeError(f"K must be a MarkovOperator, got {type(K).__name__}")
    if not K.is_square:
        raise IncompatibleOperatorsError(
            f"K must be square with the same input and output labels to be a Markov chain (shape {K.shape})")
    return K


@dataclass(frozen=True)
class _Structure:
    """Strongly connected components of the transition graph, in order of their smallest state."""

    comp: np.ndarray          # component id of each state
    members: tuple            # tuple of index arrays, one per class
    closed: np.ndarray        # bool per class: no edge leaves it
    adjacency: sp.csr_matrix  # transition graph (non-zero entries only)


def _structure(K: MarkovOperator) -> _Structure:
    if K.is_sparse:
        A = sp.csr_matrix(K._data, copy=True)
        A.eliminate_zeros()  # products may store exact zeros; they are not edges
    else:
        A = sp.csr_matrix(K._data)
    n_comp, raw = csgraph.connected_components(A, directed=True, connection="strong")
    # relabel components in order of their smallest state, so results are deterministic
    first = np.full(n_comp, A.shape[0])
    np.minimum.at(first, raw, np.arange(A.shape[0]))
    rank = np.empty(n_comp, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(n_comp)
    comp = rank[raw]
    order = np.argsort(comp, kind="stable")
    bounds = np.searchsorted(comp[order], np.arange(n_comp + 1))
    members = tuple(order[bounds[c]:bounds[c + 1]] for c in range(n_comp))
    coo = A.tocoo()
    leaving = comp[coo.row] != comp[coo.col]
    closed = np.ones(n_comp, dtype=bool)
    closed[comp[coo.row[leaving]]] = False
    return _Structure(comp, members, closed, A)


def _labels(K: MarkovOperator, idx: np.ndarray) -> tuple:
    return tuple(K.inputs[i] for i in idx)


def communicating_classes(K: MarkovOperator) -> list[tuple]:
    """The communicating classes of the chain K: strongly connected components of its transition graph.

    Parameters
    ----------
    K : MarkovOperator
        A square operator (dense or sparse); ``x -> y`` is an edge when ``K(x, y) > 0``.

    Returns
    -------
    list of tuple
        One tuple of state labels per class, classes ordered by their first state, states in
        input order.

    Raises
    ------
    TypeError
        K is not a MarkovOperator.
    IncompatibleOperatorsError
        K is not square.

    Examples
    --------
    >>> K = MarkovOperator([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], inputs=list("abc"), outputs=list("abc"))
    >>> communicating_classes(K)
    [('a',), ('b', 'c')]
    """
    K = _check_square(K)
    st = _structure(K)
    return [_labels(K, m) for m in st.members]


def recurrent_classes(K: MarkovOperator) -> list[tuple]:
    """The recurrent classes of a finite chain: the closed communicating classes (no edge leaves them).

    Examples
    --------
    >>> K = MarkovOperator([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], inputs=list("abc"), outputs=list("abc"))
    >>> recurrent_classes(K)
    [('b', 'c')]
    """
    K = _check_square(K)
    st = _structure(K)
    return [_labels(K, m) for m, c in zip(st.members, st.closed) if c]


def transient_states(K: MarkovOperator) -> tuple:
    """The transient states (those in a class that is not closed), in input order.

    Examples
    --------
    >>> K = MarkovOperator([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], inputs=list("abc"), outputs=list("abc"))
    >>> transient_states(K)
    ('a',)
    """
    K = _check_square(K)
    st = _structure(K)
    return _labels(K, np.flatnonzero(~st.closed[st.comp]))


def is_irreducible(K: MarkovOperator) -> bool:
    """True when every state reaches every other one (a single communicating class).

    Examples
    --------
    >>> is_irreducible(MarkovOperator([[0.0, 1.0], [1.0, 0.0]]))
    True
    """
    K = _check_square(K)
    return len(_structure(K).members) == 1


# ------------------------------------------------------------------- periods
def _class_periods(st: _Structure) -> np.ndarray:
    """Period of every class: gcd over its internal edges (u, v) of level(u) + 1 - level(v).

    Levels are BFS distances from the class's first state inside the class (a shortest
    path from it cannot leave the class and come back, so distances in the whole graph
    restricted to the class are the same). 0 for a class without internal edge.
    """
    A = st.adjacency.tocoo()
    inside = st.comp[A.row] == st.comp[A.col]
    rows, cols = A.row[inside], A.col[inside]
    n = A.shape[0]
    G = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    roots = np.array([m[0] for m in st.members])
    level = csgraph.dijkstra(G, directed=True, indices=roots, unweighted=True, min_only=True)
    level = level.astype(np.int64)
    diff = np.abs(level[rows] + 1 - level[cols])
    edge_comp = st.comp[rows]
    out = np.zeros(len(st.members), dtype=np.int64)
    if diff.size:
        order = np.argsort(edge_comp, kind="stable")
        ec, dd = edge_comp[order], diff[order]
        starts = np.flatnonzero(np.r_[True, ec[1:] != ec[:-1]])
        out[ec[starts]] = np.gcd.reduceat(dd, starts)
    return out


def periods(K: MarkovOperator) -> dict[tuple, int]:
    """Period of every communicating class: the gcd of the lengths of its cycles.

    Computed from breadth-first levels: with ``level`` the BFS distance from a fixed state
    of the class, the period is ``gcd{level(u) + 1 - level(v) : u -> v inside the class}``
    (every cycle length is a sum of such terms, and every such term is a difference of two
    closed-walk lengths). A class the chain cannot return to (one transient state without
    a self-loop) has no cycle and gets 0, the gcd of the empty set.

    Returns
    -------
    dict
        ``{class (tuple of labels, as in communicating_classes): period}``.

    Examples
    --------
    >>> K = MarkovOperator([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    >>> periods(K)
    {(0, 1, 2): 3}
    """
    K = _check_square(K)
    st = _structure(K)
    per = _class_periods(st)
    return {_labels(K, m): int(p) for m, p in zip(st.members, per)}


def period(K: MarkovOperator) -> int:
    """The period of an irreducible chain (see :func:`periods` for a reducible one).

    Raises
    ------
    InvalidOperatorError
        K has more than one communicating class.

    Examples
    --------
    >>> period(MarkovOperator([[0.0, 1.0], [1.0, 0.0]])), period(MarkovOperator([[0.5, 0.5], [1.0, 0.0]]))
    (2, 1)
    """
    K = _check_square(K)
    st = _structure(K)
    if len(st.members) != 1:
        raise InvalidOperatorError(
            f"period(K) needs an irreducible chain; K has {len(st.members)} communicating classes "
            "(use periods(K) for the period of each)")
    return int(_class_periods(st)[0])


def is_aperiodic(K: MarkovOperator) -> bool:
    """True when every recurrent class has period 1.

    For an irreducible chain this is the usual aperiodicity; in general it is exactly the
    condition for ``mu K^t`` to converge for every start ``mu`` (transient classes do not matter).

    Examples
    --------
    >>> is_aperiodic(MarkovOperator([[0.0, 1.0], [1.0, 0.0]])), is_aperiodic(MarkovOperator([[0.5, 0.5], [1.0, 0.0]]))
    (False, True)
    """
    K = _check_square(K)
    st = _structure(K)
    return bool(np.all(_class_periods(st)[st.closed] == 1))


# ------------------------------------------------------- stationary distributions
def _gth(P: np.ndarray) -> np.ndarray:
    """Stationary distribution of an irreducible stochastic matrix by blocked GTH elimination.

    State k = n-1, ..., 1 is censored out in turn: with ``s = sum_{j<k} A[k, j]`` (the
    probability of leaving k to a remaining state, computed as a sum, never as ``1 - A[k, k]``),
    ``A[i, k] /= s`` and ``A[i, j] += A[i, k] A[k, j]`` for ``i, j < k``; then
    ``x_0 = 1``, ``x_k = sum_{i<k} x_i A[i, k]``. Every operation adds or multiplies
    non-negative numbers, hence the entrywise relative accuracy. The updates for a block of
    ``_GTH_BLOCK`` states are applied eagerly to the rows and columns of the block only and to
    the rest of the matrix as one matrix product (still subtraction-free).
    """
    A = np.array(P, dtype=float)
    n = A.shape[0]
    hi = n
    while hi > 1:
        lo = max(hi - _GTH_BLOCK, 1)
        for k in range(hi - 1, lo - 1, -1):
            s = A[k, :k].sum()
            if not s > 0.0:
                raise SolverError(
                    f"GTH elimination found no path from state index {k} to the remaining states "
                    "(the class is not irreducible in floating point: a product of probabilities underflowed)")
            A[:k, k] /= s
            A[lo:k, :k] += np.outer(A[lo:k, k], A[k, :k])
            A[:lo, lo:k] += np.outer(A[:lo, k], A[k, lo:k])
        A[:lo, :lo] += A[:lo, lo:hi] @ A[lo:hi, :lo]
        hi = lo
    x = np.zeros(n)
    x[0] = 1.0
    for k in range(1, n):
        x[k] = x[:k] @ A[:k, k]
    return x / x.sum()


def _residual(pi: np.ndarray, P) -> float:
    return float(np.abs(np.asarray(P.T @ pi).ravel() - pi).sum())


def _sparse_stationary(P: sp.csr_matrix, method: str, atol: float) -> np.ndarray:
    """Stationary distribution of an irreducible sparse stochastic matrix, residual <= atol.

    ``"power"``: iterate ``x <- x (I + P) / 2`` (the lazy chain has the same stationary
    distribution and no other eigenvalue of modulus 1) from the uniform distribution until
    ``||x P - x||_1 <= atol``. ``"direct"``: fix ``pi_0 = 1`` and solve the remaining equations
    ``(I - P^T)[1:, 1:] pi[1:] = P^T[1:, 0]`` (a non-singular M-matrix) by sparse LU. ``"auto"``
    tries ``_POWER_MAX_ITER`` power steps (cheap when the chain mixes fast, where LU fill-in is
    worst) and then the LU solve (cheap for planar / banded graphs, where power iteration is slow).
    """
    n = P.shape[0]
    PT = sp.csr_matrix(P.T)
    if method in ("power", "auto"):
        x = np.full(n, 1.0 / n)
        limit = _POWER_MAX_ITER if method == "auto" else 100 * _POWER_MAX_ITER
        for _ in range(limit):
            y = PT @ x
            if np.abs(y - x).sum() <= atol:
                return x / x.sum()
            x = 0.5 * (x + y)
        if method == "power":
            raise SolverError(f"power iteration did not reach residual {atol:g} in {limit} steps "
                              "(try method='direct')")
    A = (sp.identity(n, format="csr") - PT)[1:, 1:].tocsc()
    rhs = PT[1:, 0].toarray().ravel()
    tail = spla.spsolve(A, rhs, permc_spec="COLAMD")
    # the exact solution is >= 0 (inverse M-matrix times a non-negative vector): clip round-off
    x = np.maximum(np.concatenate([[1.0], np.atleast_1d(tail)]), 0.0)
    return x / x.sum()


def stationary_distributions(K: MarkovOperator, *, method: str = "auto",
                             stationary_residual_atol: float = STATIONARY_RESIDUAL_ATOL) -> np.ndarray:
    """All extreme stationary distributions of K: one per recurrent class, supported on it.

    Every stationary distribution of K is a convex combination of the rows returned.

    Parameters
    ----------
    K : MarkovOperator
        Square, dense or sparse.
    method : {"auto", "gth", "power", "direct"}
        How a recurrent class is solved. ``"auto"``: GTH for a dense K and for classes of at most
        2000 states of a sparse K (the class block alone is densified); larger classes of a sparse K
        use power iteration on the lazy chain ``(I + K) / 2`` for up to 1000 steps, then a sparse LU
        solve of ``pi (I - K) = 0`` with ``pi_0 = 1`` fixed. ``"gth"`` forces GTH (dense per class),
        ``"power"`` / ``"direct"`` force one sparse method on every class larger than 2000 states
        of a sparse K. A dense K is always solved by GTH.
    stationary_residual_atol : float
        The sparse methods must reach ``||pi K_C - pi||_1 <= stationary_residual_atol`` on each class
        C (default ``STATIONARY_RESIDUAL_ATOL = 1e-12``); otherwise SolverError. The distance to the
        true distribution is at most this residual times the norm of the class's group inverse
        (about its relaxation time), so slowly mixing classes get fewer correct digits.

    Returns
    -------
    numpy.ndarray, shape (number of recurrent classes, n)
        Row r is the stationary distribution of the r-th class of :func:`recurrent_classes`
        (columns in K's input order); non-negative, summing to 1.

    Notes
    -----
    GTH (Grassmann, Taksar, Heyman 1985) is Gaussian elimination of ``I - P`` in which each pivot
    is recomputed as a sum of off-diagonal probabilities, so no subtraction occurs and every
    entry of the result has a relative error of a modest multiple of the unit roundoff times a
    polynomial in n (O'Cinneide 1993), however small it is. It costs ``n^3 / 3`` flops per class;
    here it is blocked so that most of them are one matrix product per 64 states. Memory is
    ``O(r n)`` for the result with r recurrent classes.

    Examples
    --------
    >>> K = MarkovOperator([[0.9, 0.1], [0.5, 0.5]])
    >>> stationary_distributions(K).round(4).tolist()
    [[0.8333, 0.1667]]
    """
    K = _check_square(K)
    method = check_choice(method, "method", ("auto", "gth", "power", "direct"))
    atol = check_positive(stationary_residual_atol, "stationary_residual_atol")
    return _stationary(K, _structure(K), method, atol)


def _stationary(K: MarkovOperator, st: _Structure, method: str, atol: float) -> np.ndarray:
    n = K.shape[0]
    rec = [m for m, c in zip(st.members, st.closed) if c]
    out = np.zeros((len(rec), n))
    data = K._data
    for r, idx in enumerate(rec):
        if idx.size == 1:
            out[r, idx[0]] = 1.0
            continue
        if K.is_sparse:
            block = data[idx][:, idx]
            big = idx.size > _GTH_MAX_SPARSE_CLASS
            if method == "gth" or not big:
                out[r, idx] = _gth(block.toarray())
            else:
                pi = _sparse_stationary(sp.csr_matrix(block), method, atol)
                res = _residual(pi, block)
                if res > atol:
                    raise SolverError(f"stationary distribution of a class of {idx.size} states has "
                                      f"residual {res:.3g} > stationary_residual_atol={atol:g}")
                out[r, idx] = pi
        else:
            out[r, idx] = _gth(data[np.ix_(idx, idx)])
    out.flags.writeable = False
    return out


def stationary_distribution(K: MarkovOperator, **kwargs: Any) -> np.ndarray:
    """The unique stationary distribution of K (K must have exactly one recurrent class).

    Keyword arguments are those of :func:`stationary_distributions`.

    Raises
    ------
    InvalidOperatorError
        K has several recurrent classes (the stationary distribution is not unique).

    Examples
    --------
    >>> stationary_distribution(MarkovOperator([[0.0, 1.0], [0.5, 0.5]])).round(4).tolist()
    [0.3333, 0.6667]
    """
    pis = stationary_distributions(K, **kwargs)
    if pis.shape[0] != 1:
        raise InvalidOperatorError(
            f"K has {pis.shape[0]} recurrent classes, so its stationary distribution is not unique "
            "(use stationary_distributions(K))")
    return pis[0]


# ------------------------------------------------------------------ spectrum
def _gap_from_structure(K: MarkovOperator, st: _Structure) -> float:
    closed = np.flatnonzero(st.closed)
    if closed.size > 1 or np.any(_class_periods(st)[closed] > 1):
        return 0.0  # eigenvalue 1 repeated, or a root of unity != 1 on the unit circle
    n = K.shape[0]
    if n == 1:
        return 1.0
    if not K.is_sparse or n <= _DENSE_EIG_MAX:
        vals = np.linalg.eigvals(K.matrix)
    else:
        try:
            vals = spla.eigs(K.sparse.T, k=2, which="LM", return_eigenvectors=False,
                             tol=_ARPACK_TOL, v0=np.full(n, 1.0 / n))
        except spla.ArpackNoConvergence as exc:
            raise SolverError(f"ARPACK did not converge on the eigenvalues of K ({exc})") from None
    vals = np.delete(vals, np.argmin(np.abs(vals - 1.0)))  # one copy of the eigenvalue 1
    return float(min(1.0, max(0.0, 1.0 - np.abs(vals).max()))) if vals.size else 1.0


def spectral_gap(K: MarkovOperator) -> float:
    """Absolute spectral gap ``1 - max{|lambda| : lambda eigenvalue of K, lambda != 1}``.

    One copy of the eigenvalue 1 is removed; the gap is exactly 0 when K has several
    recurrent classes (1 is repeated) or a periodic recurrent class (another root of unity
    is an eigenvalue) - both decided from the graph, not from rounded eigenvalues. Otherwise
    eigenvalues come from ``numpy.linalg.eigvals`` for dense K (and sparse K of at most 256
    states) and from ARPACK (``scipy.sparse.linalg.eigs``: the two largest in modulus, relative
    tolerance 1e-10) for larger sparse K; ARPACK is slow when eigenvalues cluster near the second
    one (tens of seconds on a 100,000-node graph). A floating-point estimate (eigenvalue errors
    scale with the conditioning of K), not a certified bound: it feeds no privacy guarantee.

    Examples
    --------
    >>> round(spectral_gap(MarkovOperator([[0.9, 0.1], [0.2, 0.8]])), 4)
    0.3
    """
    K = _check_square(K)
    return _gap_from_structure(K, _structure(K))


def relaxation_time(K: MarkovOperator) -> float:
    """Relaxation time ``1 / spectral_gap(K)`` (``inf`` when the gap is 0).

    Examples
    --------
    >>> round(relaxation_time(MarkovOperator([[0.9, 0.1], [0.2, 0.8]])), 4)
    3.3333
    """
    gap = spectral_gap(K)
    return math.inf if gap == 0.0 else 1.0 / gap


# ------------------------------------------------------------------- summary
@dataclass(frozen=True, eq=False)
class ChainAnalysis:
    """Structure and long-run summary of a finite chain (see :func:`analyze_chain`).

    ``periods`` is aligned with ``communicating_classes``; row r of the read-only array
    ``stationary_distributions`` belongs to ``recurrent_classes[r]``. Compared by identity
    (it holds an array).
    """

    states: tuple
    communicating_classes: tuple
    periods: tuple                       # aligned with communicating_classes
    recurrent_classes: tuple
    transient_states: tuple
    is_irreducible: bool
    period: int | None                   # None when K is reducible
    is_aperiodic: bool
    stationary_distributions: np.ndarray = field(repr=False)
    spectral_gap: float | None           # None when not computed
    relaxation_time: float | None

    def __str__(self) -> str:
        n = len(self.states)
        lines = [f"Markov chain on {n} states: "
                 + ("irreducible" if self.is_irreducible else
                    f"{len(self.communicating_classes)} communicating classes, "
                    f"{len(self.recurrent_classes)} recurrent, {len(self.transient_states)} transient states")]
        if self.period is not None:
            lines.append(f"  period {self.period}" + (" (aperiodic)" if self.period == 1 else ""))
        else:
            lines.append("  aperiodic recurrent classes" if self.is_aperiodic else
                         "  some recurrent class is periodic")
        per = dict(zip(self.communicating_classes, self.periods))
        for r, cls in enumerate(self.recurrent_classes):
            pi = self.stationary_distributions[r]
            top = sorted(((pi[i], lab) for i, lab in enumerate(self.states) if pi[i] > 0),
                         key=lambda t: -t[0])[:5]
            shown = ", ".join(f"{lab!r}: {p:.4g}" for p, lab in top)
            more = " ..." if len(cls) > 5 else ""
            lines.append(f"  recurrent class {r} ({len(cls)} states, period {per[cls]}): pi = {{{shown}{more}}}")
        if self.spectral_gap is not None:
            lines.append(f"  spectral gap {self.spectral_gap:.6g}, relaxation time {self.relaxation_time:.6g}")
        return "\n".join(lines)


def analyze_chain(K: MarkovOperator, *, spectral: bool = True, method: str = "auto",
                  stationary_residual_atol: float = STATIONARY_RESIDUAL_ATOL) -> ChainAnalysis:
    """Gather the structure, periods, stationary distributions and spectral gap of K.

    Parameters
    ----------
    K : MarkovOperator
        Square, dense or sparse.
    spectral : bool
        Compute the spectral gap and relaxation time (an eigenvalue problem: O(n^3) for dense K).
    method, stationary_residual_atol
        As in :func:`stationary_distributions`.

    Examples
    --------
    >>> A = analyze_chain(MarkovOperator([[0.9, 0.1], [0.2, 0.8]], inputs=["a", "b"], outputs=["a", "b"]))
    >>> print(A)
    Markov chain on 2 states: irreducible
      period 1 (aperiodic)
      recurrent class 0 (2 states, period 1): pi = {'a': 0.6667, 'b': 0.3333}
      spectral gap 0.3, relaxation time 3.33333
    """
    K = _check_square(K)
    if not isinstance(spectral, bool):
        raise TypeError(f"spectral must be a bool, got {type(spectral).__name__} {spectral!r}")
    method = check_choice(method, "method", ("auto", "gth", "power", "direct"))
    atol = check_positive(stationary_residual_atol, "stationary_residual_atol")
    st = _structure(K)
    per = _class_periods(st)
    classes = tuple(_labels(K, m) for m in st.members)
    irreducible = len(classes) == 1
    gap = _gap_from_structure(K, st) if spectral else None
    return ChainAnalysis(
        states=K.inputs,
        communicating_classes=classes,
        periods=tuple(int(p) for p in per),
        recurrent_classes=tuple(c for c, closed in zip(classes, st.closed) if closed),
        transient_states=_labels(K, np.flatnonzero(~st.closed[st.comp])),
        is_irreducible=irreducible,
        period=int(per[0]) if irreducible else None,
        is_aperiodic=bool(np.all(per[st.closed] == 1)),
        stationary_distributions=_stationary(K, st, method, atol),
        spectral_gap=gap,
        relaxation_time=None if gap is None else (math.inf if gap == 0.0 else 1.0 / gap),
    )
