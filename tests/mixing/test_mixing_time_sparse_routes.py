"""mixing_time of sparse stored chains (issue 20 item 5): a circulant one takes :mod:`chainamp.mixing.circulant`, any
other one up to ``_SPARSE_TO_DENSE_MAX_N`` states the dense search on a dense copy (unless the memory limit has no
room for its powers); the product search stays the route above, or with the dense copy switched off. Every route
gives the same answers."""

from __future__ import annotations

import networkx as nx
import pytest

from chainamp import MarkovOperator, mixing_time, resource_limits
from chainamp.mixing import guarantees, power_search

GRAPHS = {
    "cycle-60": lambda: nx.cycle_graph(60),
    "circulant-50": lambda: nx.circulant_graph(50, [1, 4]),
    "grid-5x7": lambda: nx.grid_2d_graph(5, 7),
    "path-30": lambda: nx.path_graph(30),
    "star-20": lambda: nx.star_graph(19),
    "regular-40": lambda: nx.random_regular_graph(3, 40, seed=4),
}


def _walk(name: str) -> MarkovOperator:
    K = MarkovOperator.random_walk(GRAPHS[name](), laziness=0.5)
    assert K.is_sparse
    return K


def _product_search(K: MarkovOperator, eps: float, monkeypatch) -> int:
    with monkeypatch.context() as m:
        m.setattr(guarantees, "_CIRCULANT", False)
        m.setattr(guarantees, "_SPARSE_TO_DENSE_MAX_N", 0)
        return mixing_time(K, eps)


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("eps", [0.25, 1e-3])
def test_every_sparse_route_gives_the_same_answer(name, eps, monkeypatch):
    K = _walk(name)
    want = _product_search(K, eps, monkeypatch)
    assert mixing_time(K, eps) == want
    dense = MarkovOperator(K._data.toarray())
    assert mixing_time(dense, eps) == want
    with monkeypatch.context() as m:  # the dense copy without the circulant path
        m.setattr(guarantees, "_CIRCULANT", False)
        assert mixing_time(K, eps) == want


def test_routes_taken(monkeypatch):
    taken = []
    for module, name in ((guarantees, "circulant_mixing_time"), (guarantees, "dense_mixing_time")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _o=original, _n=name: taken.append(_n) or _o(*a))
    mixing_time(_walk("cycle-60"))
    mixing_time(_walk("grid-5x7"))
    assert taken == ["circulant_mixing_time", "dense_mixing_time"]
    taken.clear()
    monkeypatch.setattr(guarantees, "_SPARSE_TO_DENSE_MAX_N", 20)
    monkeypatch.setattr(guarantees, "_SPARSE_CIRCULANT_MAX_N", 20)
    mixing_time(_walk("cycle-60"))
    mixing_time(_walk("grid-5x7"))
    assert taken == []


def test_no_room_for_dense_powers_keeps_the_product_search(monkeypatch):
    """Under a memory limit without room for the dense copy's powers the sparse chain takes the product search (as
    before), which keeps its powers sparse: the same answer, no error."""
    K = MarkovOperator.random_walk(nx.path_graph(300), laziness=0.5)
    want = _product_search(K, 0.25, monkeypatch)
    calls = []
    monkeypatch.setattr(guarantees, "dense_mixing_time",
                        lambda *a: calls.append(1) or power_search.dense_mixing_time(*a))
    with resource_limits(memory="12MB"):
        assert mixing_time(K, 0.25) == want
    assert calls == []
    assert mixing_time(K, 0.25) == want
    assert calls == [1]
