"""Structure of a square Markov operator (a finite Markov chain): classes and periods.

Graph structure (communicating classes, recurrent classes, transient states,
periods) comes from the directed graph with an edge ``x -> y`` for every
non-zero ``K(x, y)``; it is exact (no tolerance is involved). Stationary
distributions live in :mod:`.stationary`, the spectral gap in :mod:`.spectral`
and the summary :func:`analyze_chain` in :mod:`.analysis`; all of them start
from the structure computed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import IncompatibleOperatorsError, InvalidOperatorError
from .markov import MarkovOperator

__all__ = [
    "communicating_classes",
    "recurrent_classes",
    "transient_states",
    "is_irreducible",
    "period",
    "periods",
    "is_aperiodic",
]


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
    import scipy.sparse.csgraph as csgraph  # imported on use (about 0.09 s)

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
    import scipy.sparse.csgraph as csgraph

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
