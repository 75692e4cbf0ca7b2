"""Tests for chainamp.chain: structure, periods, stationary distributions, spectral gap."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from functools import reduce

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp import MarkovOperator
from chainamp.operators import (
    ChainAnalysis,
    analyze_chain,
    communicating_classes,
    is_aperiodic,
    is_irreducible,
    period,
    periods,
    recurrent_classes,
    relaxation_time,
    spectral_gap,
    stationary_distribution,
    stationary_distributions,
    transient_states,
)
from chainamp.errors import IncompatibleOperatorsError, InvalidOperatorError, InvalidParameterError


# ------------------------------------------------------------------ references
def _fraction_stationary(rows: list[list[Fraction]]) -> list[Fraction]:
    """Exact pi with pi K = pi, sum pi = 1 by Gauss-Jordan elimination over the rationals."""
    n = len(rows)
    # equations: sum_i pi_i (K_ij - [i == j]) = 0 for j < n-1, and sum_i pi_i = 1
    A = [[rows[i][j] - (1 if i == j else 0) for i in range(n)] + [Fraction(0)] for j in range(n - 1)]
    A.append([Fraction(1)] * n + [Fraction(1)])
    for c in range(n):
        piv = next(r for r in range(c, n) if A[r][c] != 0)
        A[c], A[piv] = A[piv], A[c]
        A[c] = [v / A[c][c] for v in A[c]]
        for r in range(n):
            if r != c and A[r][c] != 0:
                f = A[r][c]
                A[r] = [a - f * b for a, b in zip(A[r], A[c])]
    return [A[i][n] for i in range(n)]


def _lstsq_stationary(P: np.ndarray) -> np.ndarray:
    n = P.shape[0]
    A = np.vstack([P.T - np.eye(n), np.ones((1, n))])
    b = np.r_[np.zeros(n), 1.0]
    return np.linalg.lstsq(A, b, rcond=None)[0]


def _reach(P: np.ndarray) -> np.ndarray:
    """Reflexive-transitive closure of the transition graph by plain loops (Warshall)."""
    n = P.shape[0]
    R = (P > 0) | np.eye(n, dtype=bool)
    for k in range(n):
        R = R | (R[:, [k]] & R[[k], :])
    return R


def _brute_period(P: np.ndarray, i: int) -> int:
    """gcd of the t <= 2 n^2 with (P^t)_{ii} > 0 (0 when there is none)."""
    n = P.shape[0]
    B = (P > 0).astype(np.int64)
    M = np.eye(n, dtype=np.int64)
    ts = []
    for t in range(1, 2 * n * n + 1):
        M = np.minimum(M @ B, 1)
        if M[i, i]:
            ts.append(t)
    return reduce(math.gcd, ts, 0)


def _random_chain(rng: np.random.Generator, n: int, density: float) -> np.ndarray:
    P = rng.random((n, n)) * (rng.random((n, n)) < density)
    P[np.arange(n), rng.integers(0, n, n)] += 0.1  # every row gets some mass
    return P / P.sum(axis=1, keepdims=True)


def _irreducible_chain(rng: np.random.Generator, n: int, density: float) -> np.ndarray:
    P = rng.random((n, n)) * (rng.random((n, n)) < density)
    perm = rng.permutation(n)
    P[perm, np.roll(perm, -1)] += 0.2  # a Hamiltonian cycle makes it irreducible
    return P / P.sum(axis=1, keepdims=True)


# An exactly rational chain with a reducible structure:
# states 0, 1 transient; {2, 3} recurrent (period 1); {4, 5, 6} recurrent cycle (period 3).
Q = Fraction
REDUCIBLE = [
    [Q(1, 4), Q(1, 4), Q(1, 4), Q(0), Q(1, 4), Q(0), Q(0)],
    [Q(0), Q(0), Q(1, 2), Q(1, 2), Q(0), Q(0), Q(0)],
    [Q(0), Q(0), Q(1, 3), Q(2, 3), Q(0), Q(0), Q(0)],
    [Q(0), Q(0), Q(1, 5), Q(4, 5), Q(0), Q(0), Q(0)],
    [Q(0), Q(0), Q(0), Q(0), Q(0), Q(1), Q(0)],
    [Q(0), Q(0), Q(0), Q(0), Q(0), Q(0), Q(1)],
    [Q(0), Q(0), Q(0), Q(0), Q(1), Q(0), Q(0)],
]
LABELS = ["t0", "t1", "a", "b", "x", "y", "z"]


def _reducible(sparse: bool) -> MarkovOperator:
    mat = np.array(REDUCIBLE, dtype=float)
    return MarkovOperator(sp.csr_matrix(mat) if sparse else mat, LABELS, LABELS)


# ---------------------------------------------------------------- structure
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_reducible_structure(sparse):
    K = _reducible(sparse)
    assert communicating_classes(K) == [("t0",), ("t1",), ("a", "b"), ("x", "y", "z")]
    assert recurrent_classes(K) == [("a", "b"), ("x", "y", "z")]
    assert transient_states(K) == ("t0", "t1")
    assert not is_irreducible(K)
    # t0 -> t0 self-loop: period 1; t1 never returns to itself: gcd of the empty set = 0
    assert periods(K) == {("t0",): 1, ("t1",): 0, ("a", "b"): 1, ("x", "y", "z"): 3}
    assert not is_aperiodic(K)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_reducible_stationary_matches_fractions(sparse):
    K = _reducible(sparse)
    pis = stationary_distributions(K)
    assert pis.shape == (2, 7)
    exact_ab = _fraction_stationary([r[2:4] for r in REDUCIBLE[2:4]])
    assert exact_ab == [Q(3, 13), Q(10, 13)]  # 2/3 pi_a = 1/5 pi_b
    expected = np.zeros((2, 7))
    expected[0, 2:4] = [float(v) for v in exact_ab]
    expected[1, 4:7] = 1.0 / 3.0
    # GTH is entrywise accurate to a few ulps; 1e-15 leaves room for 7 states
    np.testing.assert_allclose(pis, expected, rtol=1e-15, atol=0.0)
    with pytest.raises(InvalidOperatorError, match="K has 2 recurrent classes"):
        stationary_distribution(K)
    with pytest.raises(InvalidOperatorError, match="4 communicating classes"):
        period(K)


def test_result_is_read_only():
    pis = stationary_distributions(_reducible(False))
    with pytest.raises(ValueError, match="read-only"):
        pis[0, 0] = 1.0


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8], ids=lambda k: f"cycle{k}")
def test_cycle_period_and_gap(k):
    K = MarkovOperator(np.roll(np.eye(k), 1, axis=1))
    assert is_irreducible(K)
    assert period(K) == k
    assert is_aperiodic(K) == (k == 1)
    np.testing.assert_array_equal(stationary_distribution(K), np.full(k, 1.0 / k))
    # eigenvalues are the k-th roots of unity: all on the unit circle
    assert spectral_gap(K) == (1.0 if k == 1 else 0.0)
    assert relaxation_time(K) == (1.0 if k == 1 else math.inf)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 7), density=st.floats(0.05, 0.6))
def test_structure_matches_brute_force(seed, n, density):
    P = _random_chain(np.random.default_rng(seed), n, density)
    K = MarkovOperator(P)
    R = _reach(P)
    comm = R & R.T
    brute_classes = sorted({tuple(np.flatnonzero(comm[i])) for i in range(n)})
    assert sorted(communicating_classes(K)) == brute_classes
    # closed class: everything reachable from it is in it
    brute_rec = sorted(c for c in brute_classes if set(np.flatnonzero(R[c[0]])) <= set(c))
    assert sorted(recurrent_classes(K)) == brute_rec
    assert set(transient_states(K)) == set(range(n)) - {i for c in brute_rec for i in c}
    for cls, p in periods(K).items():
        assert p == _brute_period(P, cls[0])
    pis = stationary_distributions(K)
    assert pis.shape[0] == len(brute_rec)


# ------------------------------------------------------ stationary distributions
@pytest.mark.parametrize("n", [2, 3, 5, 6], ids=lambda n: f"n{n}")
def test_stationary_matches_fraction_arithmetic(n):
    rng = np.random.default_rng(n)
    ints = rng.integers(0, 5, (n, n))
    ints[np.arange(n), (np.arange(n) + 1) % n] += 1  # irreducible
    rows = [[Q(int(v), int(r.sum())) for v in r] for r in ints]
    exact = _fraction_stationary(rows)
    K = MarkovOperator(np.array([[float(v) for v in r] for r in rows]))
    pi = stationary_distribution(K)
    # entrywise relative accuracy of GTH: a few ulps per state eliminated
    np.testing.assert_allclose(pi, [float(v) for v in exact], rtol=1e-14, atol=0.0)


@pytest.mark.parametrize("n", [2, 63, 64, 65, 150], ids=lambda n: f"n{n}")
def test_stationary_matches_least_squares(n):
    # sizes around the GTH block size (64) exercise the blocked updates
    P = _irreducible_chain(np.random.default_rng(1000 + n), n, 0.3)
    pi = stationary_distribution(MarkovOperator(P))
    # lstsq is backward stable: agreement to 1e-12 absolute for well-conditioned random chains
    np.testing.assert_allclose(pi, _lstsq_stationary(P), rtol=0.0, atol=1e-12)


def test_gth_entrywise_relative_accuracy_on_tiny_probabilities():
    # Birth-death chain, up w.p. 1e-3 and down w.p. 1/2: detailed balance gives
    # pi_k proportional to (2e-3)^k, down to 1e-56. Subtracting methods lose these entries.
    n = 20
    up, down = Q(1, 1000), Q(1, 2)
    rows = [[Q(0)] * n for _ in range(n)]
    for k in range(n):
        if k + 1 < n:
            rows[k][k + 1] = up
        if k > 0:
            rows[k][k - 1] = down
        rows[k][k] = 1 - sum(rows[k])
    w = [(up / down) ** k for k in range(n)]
    exact = [float(v / sum(w)) for v in w]
    pi = stationary_distribution(MarkovOperator(np.array([[float(v) for v in r] for r in rows])))
    # relative error bounded by O(n) ulps entrywise (O'Cinneide 1993); 1e-13 is generous
    np.testing.assert_allclose(pi, exact, rtol=1e-13, atol=0.0)
    assert pi[-1] < 1e-50


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), density=st.floats(0.02, 1.0),
       sparse=st.booleans())
def test_stationary_property_random_irreducible(seed, n, density, sparse):
    P = _irreducible_chain(np.random.default_rng(seed), n, density)
    K = MarkovOperator(sp.csr_matrix(P) if sparse else P)
    assert is_irreducible(K)
    pi = stationary_distribution(K)
    assert np.all(pi >= 0.0)
    # sum of n non-negative floats: error <= n ulps
    assert abs(pi.sum() - 1.0) <= n * 2.0**-52
    # pi K == pi up to rounding: n-term dot products of numbers <= 1, 1e-13 >> n * eps
    np.testing.assert_allclose(pi @ P, pi, rtol=0.0, atol=1e-13)


@pytest.mark.parametrize("graph", [
    nx.petersen_graph(), nx.karate_club_graph(), nx.path_graph(6), nx.star_graph(5),
    nx.barbell_graph(4, 2),
], ids=["petersen", "karate", "path6", "star5", "barbell"])
def test_random_walk_on_undirected_graph_is_degree_proportional(graph):
    K = MarkovOperator.random_walk(graph)
    deg = np.array([graph.degree(v) for v in graph.nodes], dtype=float)
    pi = stationary_distribution(K)
    # a test of the general solver against the closed form, not the method itself
    np.testing.assert_allclose(pi, deg / deg.sum(), rtol=1e-13, atol=0.0)
    assert period(K) == (2 if nx.is_bipartite(graph) else 1)


def test_directed_graph_walk_reducible():
    # a -> b -> c -> b, d isolated with a self-loop: classes {a} transient, {b,c} period 2, {d}
    G = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "b"), ("d", "d")])
    K = MarkovOperator.random_walk(G)
    assert communicating_classes(K) == [("a",), ("b", "c"), ("d",)]
    assert recurrent_classes(K) == [("b", "c"), ("d",)]
    assert periods(K) == {("a",): 0, ("b", "c"): 2, ("d",): 1}
    np.testing.assert_array_equal(stationary_distributions(K), [[0, 0.5, 0.5, 0], [0, 0, 0, 1]])
    assert spectral_gap(K) == 0.0


GRID = nx.grid_2d_graph(45, 50)
EXPANDER = nx.random_regular_graph(3, 2400, seed=3)


# power iteration on the 45x50 grid would need ~10^5 steps: that is what "auto" avoids
@pytest.mark.parametrize("method,graph", [
    ("auto", GRID), ("direct", GRID),
    # -m slow: a dense GTH of all 2250 states (1 s of CPU); test_gth_forced_above_the_sparse_class_limit below
    # forces GTH on a class above the (lowered) limit in the default run
    pytest.param("gth", GRID, marks=pytest.mark.slow),
    ("auto", EXPANDER), ("power", EXPANDER), ("direct", EXPANDER),
], ids=["grid-auto", "grid-direct", "grid-gth", "expander-auto", "expander-power", "expander-direct"])
def test_sparse_methods_on_large_class(method, graph):
    # 2250 / 2400 states > 2000: the sparse path is used (unless method="gth")
    K = MarkovOperator.random_walk(graph, laziness=0.1)
    deg = np.array([graph.degree(v) for v in graph.nodes], dtype=float)
    pi = stationary_distribution(K, method=method)
    # residual <= 1e-12 and both chains have relaxation time < 10^4: error << 1e-8 relative
    np.testing.assert_allclose(pi, deg / deg.sum(), rtol=1e-8, atol=0.0)
    np.testing.assert_allclose(K.sparse.T @ pi, pi, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("method", ["gth", "direct", "auto"])
def test_gth_forced_above_the_sparse_class_limit(method, monkeypatch):
    """method="gth" densifies a sparse class larger than the limit (lowered to 200 states here: the 2250-state
    grid runs with -m slow) and agrees with the sparse methods the limit otherwise selects."""
    from chainamp.operators import stationary

    monkeypatch.setattr(stationary, "_GTH_MAX_SPARSE_CLASS", 200)
    graph = nx.grid_2d_graph(15, 20)
    K = MarkovOperator.random_walk(graph, laziness=0.1)
    calls = []
    monkeypatch.setattr(stationary, "_gth", lambda P, real=stationary._gth: calls.append(P.shape) or real(P))
    pi = stationary_distribution(K, method=method)
    assert calls == ([(300, 300)] if method == "gth" else [])  # GTH only when forced, the whole class densified
    deg = np.array([graph.degree(v) for v in graph.nodes], dtype=float)
    np.testing.assert_allclose(pi, deg / deg.sum(), rtol=1e-8, atol=0.0)


def test_sparse_power_reports_non_convergence(monkeypatch):
    from chainamp.errors import SolverError
    from chainamp.operators import stationary

    # the same branch with 200 power steps, not the 100,000 method="power" takes by default (1.4 s of CPU)
    monkeypatch.setattr(stationary, "_POWER_MAX_ITER", 2)
    K = MarkovOperator.random_walk(nx.path_graph(2100), laziness=0.5)
    with pytest.raises(SolverError, match="power iteration did not reach residual 1e-300 in 200 steps"):
        stationary_distributions(K, method="power", stationary_residual_atol=1e-300)


# ------------------------------------------------------------------- spectrum
@pytest.mark.parametrize("a,b", [(0.1, 0.2), (0.5, 0.5), (0.9, 0.8), (1.0, 0.3)], ids=str)
def test_two_state_gap_closed_form(a, b):
    # eigenvalues of [[1-a, a], [b, 1-b]] are 1 and 1 - a - b
    K = MarkovOperator([[1 - a, a], [b, 1 - b]])
    assert spectral_gap(K) == pytest.approx(1 - abs(1 - a - b), rel=0, abs=1e-14)  # eig rounding


def test_sparse_gap_matches_dense():
    G = nx.connected_watts_strogatz_graph(400, 6, 0.2, seed=7)
    K = MarkovOperator.random_walk(G, laziness=0.3)  # 400 > 256 states: ARPACK path
    dense = np.sort(np.abs(np.linalg.eigvals(K.matrix)))[-2]
    # ARPACK at tol=0 converges to machine precision on well separated eigenvalues
    assert spectral_gap(K) == pytest.approx(1 - dense, rel=1e-8, abs=0)
    assert spectral_gap(K.to_dense()) == pytest.approx(1 - dense, rel=1e-10, abs=0)


def test_gap_zero_for_two_recurrent_classes():
    K = MarkovOperator([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert spectral_gap(K) == 0.0 and relaxation_time(K) == math.inf


# ------------------------------------------------------------------- summary
def test_analyze_chain_fields_and_str():
    A = analyze_chain(_reducible(True))
    assert isinstance(A, ChainAnalysis)
    assert A.recurrent_classes == (("a", "b"), ("x", "y", "z"))
    assert A.periods == (1, 0, 1, 3) and A.period is None and not A.is_aperiodic
    assert A.spectral_gap == 0.0 and A.relaxation_time == math.inf
    text = str(A)
    assert "7 states: 4 communicating classes, 2 recurrent, 2 transient" in text
    assert "recurrent class 1 (3 states, period 3)" in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        A.period = 1
    B = analyze_chain(MarkovOperator([[0.9, 0.1], [0.2, 0.8]]), spectral=False)
    assert B.spectral_gap is None and B.relaxation_time is None and "spectral" not in str(B)
    assert B.period == 1 and B.is_aperiodic


# ---------------------------------------------------------------- validation
FUNCS = [communicating_classes, recurrent_classes, transient_states, is_irreducible, period,
         periods, is_aperiodic, stationary_distributions, stationary_distribution, spectral_gap,
         relaxation_time, analyze_chain]


@pytest.mark.parametrize("func", FUNCS, ids=lambda f: f.__name__)
def test_rejects_non_operator(func):
    with pytest.raises(TypeError, match="K must be a MarkovOperator, got ndarray"):
        func(np.eye(2))


@pytest.mark.parametrize("func", FUNCS, ids=lambda f: f.__name__)
def test_rejects_non_square(func):
    with pytest.raises(IncompatibleOperatorsError, match=r"K must be square .* \(shape \(2, 3\)\)"):
        func(MarkovOperator(np.full((2, 3), 1 / 3)))
    # same size but other labels on the outputs: not a chain either
    with pytest.raises(IncompatibleOperatorsError, match="K must be square"):
        func(MarkovOperator(np.eye(2), inputs=["a", "b"], outputs=["b", "a"]))


def test_rejects_bad_options():
    K = MarkovOperator(np.eye(2))
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        stationary_distributions(K, method="lu")
    with pytest.raises(InvalidParameterError, match="stationary_residual_atol must be > 0"):
        stationary_distributions(K, stationary_residual_atol=-1.0)
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        analyze_chain(K, method="qr")
    with pytest.raises(TypeError, match="spectral must be a bool"):
        analyze_chain(K, spectral=1)
