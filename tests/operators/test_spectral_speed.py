"""The spectral gap's fast paths (issue 20 item 5): eigenvalues with one BLAS thread, and the period of an
irreducible chain with a self-loop read off the diagonal (no breadth-first search) - same answers as before."""

from __future__ import annotations

import numpy as np
import pytest

from chainamp import MarkovOperator
from chainamp._numerics import single_blas_thread
from chainamp.operators import spectral_gap_method
from chainamp.operators.chain import _structure
from chainamp.operators.spectral import _self_loop_in_one_class


def reference_gap(P: np.ndarray) -> float:
    vals = np.linalg.eigvals(P)
    vals = np.delete(vals, np.argmin(np.abs(vals - 1.0)))
    return 1.0 - float(np.abs(vals).max())


@pytest.mark.parametrize("n", [5, 260], ids=["small", "above-256"])
def test_non_reversible_gap_is_numpys(n):
    rng = np.random.default_rng(n)
    A = rng.random((n, n))
    P = A / A.sum(axis=1, keepdims=True)
    gap, method = spectral_gap_method(MarkovOperator(P))
    assert method == "eigvals" and gap == pytest.approx(reference_gap(P), abs=1e-12)


def test_single_blas_thread_gives_the_same_eigenvalues():
    rng = np.random.default_rng(1)
    A = rng.random((40, 40))
    with single_blas_thread():
        inside = np.sort_complex(np.linalg.eigvals(A))
    np.testing.assert_allclose(inside, np.sort_complex(np.linalg.eigvals(A)), atol=1e-12)
    with single_blas_thread(active=False):
        assert np.linalg.eigvals(np.eye(2)).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("P, loop, gap", [
    ([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], False, 0.0),        # period 3: structure
    ([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.0, 0.5]], True, None),        # a self-loop: aperiodic
    ([[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]], False, 0.0),
    ([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], False, 0.0),        # self-loop on a transient state
], ids=["cycle", "cycle-with-loop", "two-classes", "transient-loop"])
def test_self_loop_shortcut_only_for_irreducible_chains(P, loop, gap):
    K = MarkovOperator(P)
    assert _self_loop_in_one_class(K, _structure(K)) is loop
    got, method = spectral_gap_method(K)
    if gap is None:
        assert got == pytest.approx(reference_gap(np.array(P)), abs=1e-12) and got > 0
    else:
        assert (got, method) == (gap, "structure")


@pytest.mark.parametrize("reversible", [True, False], ids=["reversible", "non-reversible"])
def test_positive_dense_chains_skip_the_graph_and_agree(reversible):
    from chainamp.operators.spectral import _gap_and_method, _positive_structure

    rng = np.random.default_rng(7)
    W = rng.random((40, 40))
    W = W + W.T if reversible else W
    K = MarkovOperator(W / W.sum(axis=1, keepdims=True))
    st = _positive_structure(K)
    assert st is not None and st.adjacency is None
    fast, graph = _gap_and_method(K, st), _gap_and_method(K, _structure(K))
    assert fast[1] == graph[1] == ("symmetric" if reversible else "eigvals")
    assert fast[0] == pytest.approx(graph[0], abs=1e-12)
    P = K.matrix.copy()
    P[0, 1], P[0, 2] = 0.0, P[0, 1] + P[0, 2]
    assert _positive_structure(MarkovOperator(P)) is None  # a zero entry: the graph decides
