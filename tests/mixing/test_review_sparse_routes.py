"""Review of mixing_time on sparse chains (random walks): the dense copy, the product search and exact stepping agree."""

from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

import chainamp
from chainamp import MarkovOperator, mixing_time
from chainamp.errors import InvalidParameterError
from chainamp.mixing import guarantees


def _exact(K: np.ndarray, eps: float, limit: int):
    """Smallest t <= limit with gamma(K^t) <= eps by stepping in Fractions (rows normalised), None if none."""
    for t in range(limit + 1):
        if _exact_gamma(K, t) <= Fraction(eps):
            return t
    return None


#: (K's bytes, shape) -> [gamma(K^0), gamma(K^1), ...], K^t the last power formed, t: each chain's powers are formed
#: once for all its (eps, limit) cases (they were formed again for each of the 12, ~1 s of CPU)
_POWERS: dict = {}


def _exact_gamma(K: np.ndarray, t: int) -> Fraction:
    """gamma(K^t) in Fractions (rows normalised), the powers formed once per chain and only as far as asked."""
    n = K.shape[0]
    key = (K.tobytes(), K.shape)
    if key not in _POWERS:
        _POWERS[key] = [[], [[Fraction(int(i == j)) for j in range(n)] for i in range(n)], 0]
    gammas, P, formed = state = _POWERS[key]
    if len(gammas) <= t:
        rows = [[Fraction(x) for x in r] for r in K]
        rows = [[x / sum(r) for x in r] for r in rows]
        while len(gammas) <= t:
            if formed < len(gammas):
                P = [[sum(P[i][k] * rows[k][j] for k in range(n) if rows[k][j]) for j in range(n)] for i in range(n)]
                formed += 1
            gammas.append(max((sum(max(P[i][k] - P[j][k], 0) for k in range(n)) for i in range(n)
                               for j in range(i + 1, n)), default=Fraction(0)))
        state[1], state[2] = P, formed
    return gammas[t]


def _t(K, eps, limit, monkeypatch=None, dense_max=None, memory=None):
    if dense_max is not None:
        monkeypatch.setattr(guarantees, "_SPARSE_TO_DENSE_MAX_N", dense_max)
    try:
        if memory is not None:
            with chainamp.resource_limits(memory=memory):
                return mixing_time(K, eps, max_steps=limit, progress=False)
        return mixing_time(K, eps, max_steps=limit, progress=False)
    except InvalidParameterError:
        return None


def _with_loops(G):
    for u in list(G.nodes)[: max(1, len(G) // 2)]:
        G.add_edge(u, u)
    return G


def _absorbing(n):
    G = nx.gnp_random_graph(n, 0.6, seed=n, directed=True)
    G.add_edge(n, n)
    for u in range(n):
        G.add_edge(u, n)
    return G


def _isolated(n):
    G = nx.gnp_random_graph(n, 0.7, seed=n)
    G.add_node(n)
    G.add_edge(n, n)
    return G


CHAINS = {
    "single": (nx.Graph([(0, 0)]), 0.0),
    "pair-periodic": (nx.path_graph(2), 0.0),
    "pair-lazy": (nx.path_graph(2), 0.3),
    "path-periodic": (nx.path_graph(5), 0.0),
    "path-lazy": (nx.path_graph(5), 0.5),
    "star-lazy": (nx.star_graph(4), 0.25),
    "bipartite": (nx.complete_bipartite_graph(2, 3), 0.0),
    "complete": (nx.complete_graph(4), 0.0),
    "loops": (_with_loops(nx.path_graph(6)), 0.0),
    "reducible": (nx.disjoint_union(nx.complete_graph(3), nx.complete_graph(3)), 0.2),
    "absorbing": (_absorbing(5), 0.0),
    "isolated": (_isolated(5), 0.1),
    "directed": (_with_loops(nx.gnp_random_graph(6, 0.5, seed=2, directed=True)), 0.0),
}


@pytest.mark.parametrize("limit", [0, 1, 40])
@pytest.mark.parametrize("eps", [0.0, 0.01, 0.3, 0.9])
@pytest.mark.parametrize("name", list(CHAINS))
def test_routes_agree_with_exact_stepping(name, eps, limit, monkeypatch):
    G, lazy = CHAINS[name]
    K = MarkovOperator.random_walk(G, laziness=lazy)
    assert guarantees._plain_sparse(K)
    D = np.asarray(K.matrix)
    want = _exact(D, eps, limit)
    got = {
        "new": _t(K, eps, limit),
        "dense-stored": _t(MarkovOperator(D, list(K.inputs), list(K.outputs)), eps, limit),
        "memory-fallback": _t(K, eps, limit, memory=8 * D.size * 4),
        "product-search": _t(K, eps, limit, monkeypatch, dense_max=0),
    }
    assert got == dict.fromkeys(got, want)


@pytest.mark.parametrize("n", [8, 9], ids=["at-limit", "past-limit"])
def test_sparse_to_dense_boundary(n, monkeypatch):
    # the boundary is _SPARSE_TO_DENSE_MAX_N (2,048); lowered to 8 here, n = 8 takes the dense copy, n = 9 the products
    G = _with_loops(nx.gnp_random_graph(n, 0.5, seed=n))
    for u in G.nodes:
        G.add_edge(u, u)
    K = MarkovOperator.random_walk(G, laziness=0.3)
    assert guarantees._plain_sparse(K)
    D = np.asarray(K.matrix)
    want = _exact(D, 0.05, 60)
    assert _t(K, 0.05, 60, monkeypatch, dense_max=8) == want
    assert _t(K, 0.05, 60, monkeypatch, dense_max=0) == want


@pytest.mark.parametrize("n", [2, 3], ids=["product-search", "dense-search"])
def test_max_steps_zero_when_one_step_is_needed(n):
    # before the fix the product search (n = 2, large sparse chains) returned 1 > max_steps = 0; the dense one raised
    K = MarkovOperator(np.full((n, n), 0.1) + np.eye(n) * (1.0 - 0.1 * n))
    assert mixing_time(K, 0.95, max_steps=1) == 1
    with pytest.raises(InvalidParameterError, match=r"within max_steps=0 steps \(needs 1\)"):
        mixing_time(K, 0.95, max_steps=0)
