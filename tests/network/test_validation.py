"""Every validation branch of chainamp.network, with the message it gives."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from chainamp.errors import InvalidOperatorError, InvalidParameterError, ResourceLimitError
from chainamp.network import gossip_matrix, gossip_privacy

C4 = gossip_matrix(nx.cycle_graph(4)).matrix


def run(W=C4, rounds=2, **kw):
    kw.setdefault("sigma", 1.0)
    kw.setdefault("progress", False)
    return gossip_privacy(W, rounds, **kw)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(rounds=0), InvalidParameterError, r"rounds must be >= 1 \(got 0\)"),
    (dict(rounds=2.0), TypeError, r"rounds must be an integer"),
    (dict(sigma=0.0), InvalidParameterError, r"sigma must be positive and finite \(got 0.0 for node 0\)"),
    (dict(sigma=float("inf")), InvalidParameterError, r"sigma must be positive and finite \(got inf"),
    (dict(sigma=float("nan")), InvalidParameterError, r"sigma"),
    (dict(sigma=[1.0, 2.0]), InvalidParameterError, r"sigma has 2 values but W has 4 nodes"),
    (dict(sigma={0: 1.0}), InvalidParameterError, r"sigma has no value for node 1"),
    (dict(sigma="big"), TypeError, r"sigma must be a positive number"),
    (dict(sigma=True), TypeError, r"sigma must be a positive number"),
    (dict(sigma=object()), TypeError, r"sigma must be a positive number"),
    (dict(sensitivity=-1.0), InvalidParameterError, r"sensitivity must be positive and finite \(got -1.0\)"),
    (dict(observers=[7]), InvalidParameterError, r"observers contains 7, which is not a node of W"),
    (dict(sources=["a"]), InvalidParameterError, r"sources contains 'a', which is not a node of W"),
    (dict(colluders=[[1]]), InvalidParameterError, r"colluders contains \[1\], which is not a node of W"),
    (dict(observers=[]), InvalidParameterError, r"observers must name at least one node"),
    (dict(colluders=[1, 2, 3], observers=[0]), InvalidParameterError, r"is every node: nobody is left to protect"),
    (dict(view="everything"), InvalidParameterError, r"view must be one of \('received', 'neighbourhood'\)"),
    (dict(view=3), TypeError, r"view must be a string"),
    (dict(rank_primes_limit=-1), InvalidParameterError, r"rank_primes_limit must be >= 0"),
    (dict(rule="metropolis"), InvalidParameterError, r"rule='metropolis' applies to a networkx graph only"),
    (dict(allow_disconnected="yes"), TypeError, r"allow_disconnected must be True or False"),
])
def test_argument_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        run(**kwargs)


@pytest.mark.parametrize("W, rounds, exc, match", [
    (np.array([[0.5, 0.5], [0.2, 0.9]]), 2, InvalidOperatorError, r"W is not a stochastic matrix"),
    (np.array([[0.5, 0.5], [1.0, 0.0]]), 2, InvalidOperatorError,
     r"W must be doubly stochastic \(gossip averaging keeps the mean\): column 0 sums to 1.5"),
    (np.array([[1.5, -0.5], [-0.5, 1.5]]), 2, InvalidOperatorError, r"W is not a stochastic matrix"),
    (np.ones((2, 3)) / 3, 2, InvalidOperatorError, r"W must be square"),
    ("W", 2, TypeError, r"W must be a MarkovOperator, a numpy or scipy.sparse array, a networkx graph"),
    ([C4, C4], 3, InvalidParameterError, r"W is a schedule of 2 matrices but rounds=3"),
    ([C4, np.eye(3)], 2, InvalidOperatorError, r"W\[1\] has node labels different from W\[0\]'s"),
    ([C4, np.array([[0.5, 0.5], [1.0, 0.0]])], 2, InvalidOperatorError, r"W\[1\]"),
    (nx.DiGraph([(0, 1), (1, 0)]), 2, InvalidOperatorError, r"needs an undirected graph"),
    (nx.Graph(), 2, InvalidOperatorError, r"G has no nodes"),
    (sp.csr_matrix(np.eye(4)), 2, InvalidOperatorError, r"W's graph is disconnected \(4 components"),
])
def test_matrix_errors(W, rounds, exc, match):
    with pytest.raises(exc, match=match):
        run(W, rounds)


def test_row_stochastic_error_names_the_row():
    W = np.array([[0.5, 0.5], [0.5, 0.5 + 1e-6]])
    from chainamp.network.inputs import _one_matrix

    # a MarkovOperator built with a looser tolerance is re-checked at gossip_privacy's own
    with pytest.raises(InvalidOperatorError, match=r"W must be row-stochastic: row 1 sums to 1.000001"):
        _one_matrix(__import__("chainamp").MarkovOperator(W, row_sum_atol=1e-3), "W", None, 1e-9)


def test_disconnected_allowed_gives_zero_across_pieces():
    res = run(sp.csr_matrix(np.eye(4)), 2, allow_disconnected=True, observers=[0])
    assert np.all(res.mu_matrix[1:, 0] == 0.0)
    assert res.status == ("no messages",)


def test_rule_errors():
    with pytest.raises(InvalidParameterError, match=r"rule must be one of \('metropolis', 'lazy'\) \(got 'uniform'\)"):
        gossip_matrix(nx.path_graph(3), "uniform")
    with pytest.raises(TypeError, match=r"rule must be a string"):
        gossip_matrix(nx.path_graph(3), 1)
    with pytest.raises(TypeError, match=r"G must be a networkx graph, got list"):
        gossip_matrix([[1.0]])
    with pytest.raises(InvalidParameterError, match=r"rule must be one of"):
        run(nx.path_graph(3), 2, rule="uniform")


def test_memory_limit_refuses_before_allocating():
    with pytest.raises(ResourceLimitError, match=r"matrix of mu needs about"):
        run(memory_limit=500)
    with pytest.raises(ResourceLimitError, match=r"schedule of rounds=2 rounds needs about"):
        run(memory_limit=100)
    with pytest.raises(ResourceLimitError, match=r"matrix of a view needs about"):
        run(memory_limit=300, observers=[0], sources=[0])


def test_result_lookup_errors():
    res = run(observers=[0, 1])
    with pytest.raises(InvalidParameterError, match=r"u=9 is not among the sources"):
        res.mu(9, 0)
    with pytest.raises(InvalidParameterError, match=r"v=3 is not among the observers"):
        res.mu(0, 3)
    with pytest.raises(InvalidParameterError, match=r"u=0 is in the coalition of observer 0"):
        res.profile(0, 0)
    with pytest.raises(InvalidParameterError, match=r"variant must be 'per_message' or 'random_graph'"):
        res.published(2.0, "tight")
    with pytest.raises(InvalidParameterError, match=r"alpha must be > 1"):
        res.renyi(0.5)
    with pytest.raises(InvalidParameterError, match=r"delta"):
        res.epsilon(2.0)
    solo = run(nx.path_graph(2), 1, observers=[0], sources=[0])
    with pytest.raises(InvalidParameterError, match=r"every pair is inside a coalition"):
        solo.max_mu()
