"""MarkovOperator: construction, validation, algebra, graphs, immutability."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings

from chainamp import (IncompatibleOperatorsError, InvalidOperatorError, InvalidParameterError, MarkovOperator,
                      kron)
from conftest import random_stochastic, stochastic_matrices

P2 = [[0.9, 0.1], [0.2, 0.8]]


class TestConstruction:
    def test_dense_labels_default(self):
        K = MarkovOperator(P2)
        assert K.shape == (2, 2) and K.inputs == (0, 1) and K.outputs == (0, 1) and K.is_square
        assert not K.is_sparse

    def test_rectangular_with_labels(self):
        K = MarkovOperator([[0.5, 0.25, 0.25]], inputs=["x"], outputs=["a", "b", "c"])
        assert K.shape == (1, 3) and not K.is_square and K.output_index("c") == 2
        np.testing.assert_array_equal(K.row("x"), [0.5, 0.25, 0.25])

    def test_sparse_stays_sparse(self):
        S = sp.csr_matrix(np.array(P2))
        K = MarkovOperator(S)
        assert K.is_sparse and K.nnz == 4
        np.testing.assert_array_equal(K.matrix, P2)

    def test_immutable(self):
        K = MarkovOperator(P2)
        with pytest.raises(ValueError, match="read-only"):
            K.matrix[0, 0] = 0.5
        with pytest.raises(AttributeError):
            K.foo = 1

    def test_input_copied(self):
        arr = np.array(P2)
        K = MarkovOperator(arr)
        arr[0, 0] = 0.0
        assert K.matrix[0, 0] == 0.9

    def test_row_sum_tolerance_override(self):
        MarkovOperator([[0.5, 0.5 + 1e-7]], row_sum_atol=1e-6)

    def test_equality(self):
        assert MarkovOperator(P2) == MarkovOperator(sp.csr_matrix(np.array(P2)))
        assert MarkovOperator(P2) != MarkovOperator(P2, inputs=["a", "b"])


class TestValidation:
    @pytest.mark.parametrize("bad, match", [
        ([[0.5, 0.47]], r"row 0 sums to 0\.97"),
        ([[1.0, 0.0], [0.5, 0.6]], r"row 1 sums to 1\.1"),
        ([[1.5, -0.5]], r"entry \(0, 1\) is negative"),
        ([[np.nan, 1.0]], r"entry \(0, 0\) is not"),
        ([[np.inf, 0.0]], r"must be finite"),
        ([], r"2-D|at least one row"),
        ([1.0], r"must be 2-D"),
        (np.zeros((0, 3)), r"at least one row"),
        (np.ones((2, 2, 2)), r"must be 2-D"),
    ], ids=["row-sum-low", "row-sum-high", "negative", "nan", "inf", "empty", "1d", "no-rows", "3d"])
    def test_bad_matrix(self, bad, match):
        with pytest.raises(InvalidOperatorError, match=match):
            MarkovOperator(bad)

    def test_bad_sparse_entry(self):
        with pytest.raises(InvalidOperatorError, match=r"entry \(1, 0\) is negative"):
            MarkovOperator(sp.csr_matrix(np.array([[1.0, 0.0], [-0.5, 1.5]])))

    def test_not_numeric(self):
        with pytest.raises(TypeError, match="array-like of numbers"):
            MarkovOperator([["a", "b"]])

    @pytest.mark.parametrize("kw, match", [
        (dict(inputs=["a"]), "inputs has 1 labels but the matrix has 2"),
        (dict(outputs=["a", "b", "c"]), "outputs has 3 labels"),
        (dict(inputs=["a", "a"]), "distinct .'a' repeats"),
    ], ids=["inputs-count", "outputs-count", "duplicate"])
    def test_bad_labels(self, kw, match):
        with pytest.raises(InvalidOperatorError, match=match):
            MarkovOperator(P2, **kw)

    def test_string_labels_rejected(self):
        with pytest.raises(TypeError, match="not a string"):
            MarkovOperator(P2, inputs="ab")

    def test_unhashable_labels(self):
        with pytest.raises(TypeError, match="hashable"):
            MarkovOperator(P2, inputs=[[1], [2]])

    def test_unknown_label(self):
        with pytest.raises(KeyError, match="'z' is not an input"):
            MarkovOperator(P2).row("z")
        with pytest.raises(KeyError, match="'z' is not an output"):
            MarkovOperator(P2).output_index("z")


class TestAlgebra:
    def test_compose_matches_matrix_product(self, rng):
        A, B = random_stochastic(rng, 3, 4), random_stochastic(rng, 4, 2)
        np.testing.assert_allclose((MarkovOperator(A) @ MarkovOperator(B)).matrix, A @ B, rtol=0, atol=1e-15)

    def test_compose_reorders_same_labels(self):
        K1 = MarkovOperator([[1.0, 0.0]], outputs=["a", "b"])
        K2 = MarkovOperator([[0.0, 1.0], [1.0, 0.0]], inputs=["b", "a"], outputs=["u", "v"])
        # a -> row "a" of K2, which is [1, 0]
        assert (K1 @ K2).matrix.tolist() == [[1.0, 0.0]]

    def test_compose_mismatch(self):
        with pytest.raises(IncompatibleOperatorsError, match="not the inputs of the second"):
            MarkovOperator(P2) @ MarkovOperator([[1.0]])

    def test_compose_non_operator(self):
        with pytest.raises(TypeError):
            MarkovOperator(P2) @ np.eye(2)

    @pytest.mark.parametrize("t", [0, 1, 2, 5, 13], ids=lambda t: f"t={t}")
    def test_power_matches_numpy(self, t):
        K = MarkovOperator(P2)
        np.testing.assert_allclose((K ** t).matrix, np.linalg.matrix_power(np.array(P2), t), rtol=0, atol=1e-14)

    def test_power_sparse_stays_sparse(self):
        K = MarkovOperator.random_walk(nx.cycle_graph(5), laziness=0.5)
        assert (K ** 3).is_sparse

    def test_power_negative(self):
        with pytest.raises(InvalidParameterError, match="t must be >= 0"):
            MarkovOperator(P2) ** -1

    def test_power_not_integer(self):
        with pytest.raises(TypeError, match="t must be an integer"):
            MarkovOperator(P2) ** 1.5

    def test_power_not_square(self):
        with pytest.raises(IncompatibleOperatorsError, match="square"):
            MarkovOperator([[0.5, 0.5]]) ** 2

    def test_restrict(self):
        K = MarkovOperator([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], inputs=["a", "b", "c"])
        R = K.restrict(["c", "a"])
        assert R.inputs == ("c", "a") and R.matrix.tolist() == [[0.5, 0.5], [1.0, 0.0]]

    @pytest.mark.parametrize("labels, err, match", [
        ([], InvalidOperatorError, "at least one"),
        ([0, 0], InvalidOperatorError, "repeated"),
        ([7], KeyError, "7 is not an input"),
    ], ids=["empty", "repeat", "unknown"])
    def test_restrict_errors(self, labels, err, match):
        with pytest.raises(err, match=match):
            MarkovOperator(P2).restrict(labels)

    def test_apply(self):
        np.testing.assert_allclose(MarkovOperator(P2).apply([0.5, 0.5]), [0.55, 0.45], rtol=0, atol=1e-15)

    @given(stochastic_matrices(), stochastic_matrices())
    @settings(max_examples=40, deadline=None)
    def test_composition_is_stochastic(self, A, B):
        if A.shape[1] != B.shape[0]:
            B = random_stochastic(np.random.default_rng(0), A.shape[1], B.shape[1])
        P = (MarkovOperator(A) @ MarkovOperator(B)).matrix
        assert np.all(P >= 0)
        np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)  # a few ulps per row


class TestGraphs:
    def test_from_graph_weights(self):
        G = nx.DiGraph()
        G.add_edge("a", "b", weight=0.3)
        G.add_edge("a", "a", weight=0.7)
        G.add_edge("b", "a", weight=1.0)
        K = MarkovOperator.from_graph(G)
        assert K.is_sparse and K.inputs == ("a", "b")
        np.testing.assert_allclose(K.matrix, [[0.7, 0.3], [1.0, 0.0]], rtol=0, atol=0)

    def test_from_graph_normalize(self):
        G = nx.DiGraph([(0, 1, {"w": 2.0}), (0, 2, {"w": 6.0}), (1, 1, {"w": 1.0}), (2, 0, {"w": 3.0})])
        K = MarkovOperator.from_graph(G, weight="w", normalize=True)
        np.testing.assert_allclose(K.matrix[0], [0.0, 0.25, 0.75], rtol=0, atol=1e-15)

    def test_from_graph_not_stochastic(self):
        G = nx.DiGraph([(0, 1, {"weight": 0.5}), (1, 0, {"weight": 1.0})])
        with pytest.raises(InvalidOperatorError, match=r"row 0 sums to 0\.5"):
            MarkovOperator.from_graph(G)

    def test_from_graph_dead_end(self):
        G = nx.DiGraph([(0, 1)])
        with pytest.raises(InvalidOperatorError, match="node 1 has no out-edge"):
            MarkovOperator.from_graph(G, normalize=True)

    def test_from_graph_negative_weight(self):
        G = nx.DiGraph([(0, 1, {"weight": -1.0}), (1, 0, {"weight": 1.0})])
        with pytest.raises(InvalidOperatorError, match="negative edge weight"):
            MarkovOperator.from_graph(G, normalize=True)

    @pytest.mark.parametrize("bad, err, match", [
        (np.eye(2), TypeError, "networkx graph"),
        (nx.Graph(), InvalidOperatorError, "no nodes"),
    ], ids=["not-graph", "empty"])
    def test_graph_errors(self, bad, err, match):
        with pytest.raises(err, match=match):
            MarkovOperator.from_graph(bad)
        with pytest.raises(err, match=match):
            MarkovOperator.random_walk(bad)

    @pytest.mark.parametrize("lazy", [0.0, 0.3, 1.0], ids=["simple", "lazy", "frozen"])
    def test_random_walk_brute_force(self, lazy):
        G = nx.karate_club_graph()
        K = MarkovOperator.random_walk(G, laziness=lazy)
        nodes = list(G.nodes)
        for i, u in enumerate(nodes[:6]):
            for j, v in enumerate(nodes):
                expect = lazy * (u == v) + (1 - lazy) * (G.has_edge(u, v) / G.degree(u))
                assert math.isclose(K.matrix[i, j], expect, rel_tol=0, abs_tol=1e-15)

    def test_random_walk_laziness_range(self):
        with pytest.raises(InvalidParameterError, match=r"laziness must be in \[0, 1\] \(got 1\.5\)"):
            MarkovOperator.random_walk(nx.path_graph(3), laziness=1.5)

    def test_random_walk_isolated_node(self):
        G = nx.path_graph(3)
        G.add_node(99)
        with pytest.raises(InvalidOperatorError, match="node 99 has no out-edge"):
            MarkovOperator.random_walk(G)

    def test_to_graph_roundtrip(self):
        K = MarkovOperator.random_walk(nx.cycle_graph(4), laziness=0.5)
        assert MarkovOperator.from_graph(K.to_graph()) == K

    def test_to_graph_bipartite(self):
        G = MarkovOperator([[0.5, 0.5, 0.0]], inputs=["x"], outputs=["a", "b", "c"]).to_graph()
        assert set(G.edges) == {(("input", "x"), ("output", "a")), (("input", "x"), ("output", "b"))}
        assert G.nodes[("output", "c")]["bipartite"] == 1


class TestKron:
    def test_kron_labels_and_values(self):
        A = MarkovOperator([[0.75, 0.25], [0.25, 0.75]], inputs=[0, 1], outputs=["a", "b"])
        B = MarkovOperator([[0.5, 0.5], [0.1, 0.9]])
        K = kron(A, B)
        assert K.inputs[3] == (1, 1) and K.outputs[2] == ("b", 0)
        # brute force: K((x1,x2),(y1,y2)) = A(x1,y1) B(x2,y2)
        for i, (x1, x2) in enumerate(K.inputs):
            for j, (y1, y2) in enumerate(K.outputs):
                assert math.isclose(K.matrix[i, j], A.matrix[x1, A.output_index(y1)] * B.matrix[x2, y2],
                                    rel_tol=0, abs_tol=1e-16)

    def test_kron_sparse(self):
        S = MarkovOperator(sp.csr_matrix(np.array(P2)))
        assert kron(S, MarkovOperator(P2)).is_sparse

    def test_kron_errors(self):
        with pytest.raises(InvalidParameterError, match="at least one"):
            kron()
        with pytest.raises(TypeError, match="argument 1 must be a MarkovOperator"):
            kron(MarkovOperator(P2), np.eye(2))

    def test_kron_single(self):
        K = MarkovOperator(P2)
        assert kron(K) is K


def test_identity():
    assert MarkovOperator.identity(["a", "b"]).matrix.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert MarkovOperator.identity(3, sparse=True).is_sparse


def test_repr():
    assert "2x2 dense" in repr(MarkovOperator(P2))
