"""The spectral gap's methods (issue 10 item 3): the symmetric form of reversible chains (dense
eigvalsh, Lanczos on sparse ones), Arnoldi for large non-reversible sparse chains, eigvals otherwise;
all against ``numpy.linalg.eigvals`` of the dense matrix, and the method reported."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from chainamp import MarkovOperator
from chainamp.operators import analyze_chain, spectral_gap, spectral_gap_method
from chainamp.operators.spectral import SPECTRAL_METHODS


def reference_gap(P: np.ndarray) -> float:
    vals = np.linalg.eigvals(P)
    vals = np.delete(vals, np.argmin(np.abs(vals - 1.0)))
    return 1.0 - float(np.abs(vals).max())


def walk(n: int, seed: int = 0, dense: bool = False) -> MarkovOperator:
    K = MarkovOperator.random_walk(nx.connected_watts_strogatz_graph(n, 6, 0.2, seed=seed), laziness=0.5)
    return MarkovOperator(K.matrix) if dense else K


@pytest.mark.parametrize("make, method", [
    (lambda: walk(60, dense=True), "symmetric"),          # dense reversible: eigvalsh
    (lambda: walk(300), "symmetric"),                     # sparse reversible: Lanczos (eigsh)
    (lambda: walk(300, dense=True), "symmetric"),         # dense with few non-zeros: Lanczos
    (lambda: MarkovOperator(np.full((3, 3), 1 / 3)), "symmetric"),
], ids=["dense-walk", "sparse-walk", "dense-sparse-walk", "uniform"])
def test_reversible_chains_use_the_symmetric_form(make, method):
    K = make()
    gap, used = spectral_gap_method(K)
    assert used == method
    assert abs(gap - reference_gap(K.matrix)) < 1e-9


def test_symmetric_weights_are_reversible_and_random_chains_are_not():
    rng = np.random.default_rng(0)
    W = rng.random((300, 300))
    W = W + W.T  # a random walk with symmetric weights: reversible w.r.t. the weighted degrees
    K = MarkovOperator(W / W.sum(axis=1, keepdims=True))
    gap, used = spectral_gap_method(K)
    assert used == "symmetric" and abs(gap - reference_gap(K.matrix)) < 1e-10
    A = rng.random((300, 300))
    N = MarkovOperator(A / A.sum(axis=1, keepdims=True))
    gap, used = spectral_gap_method(N)
    assert used == "eigvals" and abs(gap - reference_gap(N.matrix)) < 1e-12


@pytest.mark.parametrize("row", [3, 79, 1], ids=["inner", "probe-last", "probe-second"])
def test_nearly_reversible_is_refused(row):
    """One entry moved by 1e-9: detailed balance fails beyond its rounding tolerance, whether the entry lies in
    one of the rows tested first (O(n), issue 20) or only in the whole-matrix test."""
    K = walk(80, dense=True).matrix.copy()
    col = int(next(j for j in np.flatnonzero(K[row]) if j != row))
    K[row, col] += 1e-9
    K[row, row] -= 1e-9
    gap, used = spectral_gap_method(MarkovOperator(K))
    assert used == "eigvals" and abs(gap - reference_gap(K)) < 1e-9


def test_large_sparse_non_reversible_uses_arnoldi():
    """Two blocks of 200 states with 20 random out-neighbours each (non-reversible, inner spectrum within
    about 0.25) and 1% of the mass crossing: one well separated second eigenvalue near 0.98."""
    rng = np.random.default_rng(4)
    n, half = 400, 200
    P = sp.lil_matrix((n, n))
    for i in range(n):
        block = (i // half) * half
        nbrs = block + rng.choice(half, 20, replace=False)
        w = rng.random(20)
        P[i, nbrs] = 0.99 * w / w.sum()
        P[i, (i + half) % n] += 0.01
    K = MarkovOperator(P.tocsr())
    gap, used = spectral_gap_method(K)
    assert used == "arpack" and abs(gap - reference_gap(K.matrix)) < 1e-8


def test_structure_decides_zero_gaps_and_analysis_reports_the_method():
    periodic = MarkovOperator([[0.0, 1.0], [1.0, 0.0]])
    assert spectral_gap_method(periodic) == (0.0, "structure")
    assert spectral_gap(walk(50)) == pytest.approx(reference_gap(walk(50).matrix), abs=1e-10)
    assert set(SPECTRAL_METHODS) == {"structure", "symmetric", "arpack", "eigvals"}
    A = analyze_chain(walk(50))
    assert A.spectral_gap == pytest.approx(reference_gap(walk(50).matrix), abs=1e-10)
    assert A.spectral_method == "symmetric" and analyze_chain(periodic).spectral_method == "structure"
    assert analyze_chain(walk(50), spectral=False).spectral_method is None
