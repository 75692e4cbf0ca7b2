"""Benchmark of chainamp.chain (plain script, not part of the default test run).

    python tests/benchmarks/bench_chain.py

1. Dense 2000 x 2000 random chain: stationary distribution by chainamp (blocked GTH) and by
   quantecon's MarkovChain(P).stationary_distributions (numba GTH; ``pip install quantecon``,
   in the ``bench`` extra), best of a few runs after a warm-up, plus the agreement of the two.
2. Random walks on 100,000-node graphs (a 316 x 316 grid, where the sparse LU solve is used,
   and a Barabasi-Albert graph, where power iteration converges first), with the residual
   ``||pi K - pi||_1`` and the distance to the degree-proportional closed form; and the spectral
   gap of the lazy walk on the Barabasi-Albert graph (ARPACK).
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np

from chainamp import MarkovOperator
from chainamp.operators import analyze_chain, spectral_gap, stationary_distribution


def best_of(fn, repeat: int = 3) -> tuple[float, object]:
    fn()  # warm-up (numba compilation for quantecon)
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def dense_benchmark(n: int = 2000) -> None:
    rng = np.random.default_rng(0)
    P = rng.random((n, n))
    P /= P.sum(axis=1, keepdims=True)
    K = MarkovOperator(P)
    t_ours, pi = best_of(lambda: stationary_distribution(K))
    print(f"dense {n}x{n} stationary distribution")
    print(f"  chainamp (blocked GTH):            {t_ours:8.3f} s   residual {np.abs(pi @ P - pi).sum():.2e}")
    try:
        import quantecon as qe
    except ImportError:
        print("  quantecon: not installed (pip install quantecon)")
        return
    t_qe, pis = best_of(lambda: qe.MarkovChain(P).stationary_distributions)
    print(f"  quantecon MarkovChain (numba GTH): {t_qe:8.3f} s   max |difference| {np.abs(pis[0] - pi).max():.2e}")


def sparse_benchmark() -> None:
    graphs = {
        "grid 316x316 (99,856 nodes)": nx.grid_2d_graph(316, 316),
        "Barabasi-Albert m=3 (100,000 nodes)": nx.barabasi_albert_graph(100_000, 3, seed=0),
    }
    for name, G in graphs.items():
        K = MarkovOperator.random_walk(G)
        deg = np.array([d for _, d in G.degree()], dtype=float)
        t0 = time.perf_counter()
        pi = stationary_distribution(K)
        t_pi = time.perf_counter() - t0
        t0 = time.perf_counter()
        A = analyze_chain(K, spectral=False)
        t_all = time.perf_counter() - t0
        res = np.abs(K.sparse.T @ pi - pi).sum()
        rel = np.abs(pi / (deg / deg.sum()) - 1.0).max()
        print(f"random walk on {name}, nnz {K.nnz}")
        print(f"  stationary_distribution {t_pi:7.3f} s   residual {res:.2e}   max rel. error vs degree {rel:.2e}")
        print(f"  analyze_chain(spectral=False) {t_all:7.3f} s   period {A.period}")
    G = graphs["Barabasi-Albert m=3 (100,000 nodes)"]
    K = MarkovOperator.random_walk(G, laziness=0.5)
    t0 = time.perf_counter()
    gap = spectral_gap(K)
    print(f"lazy walk on the Barabasi-Albert graph: spectral_gap {gap:.6f} (ARPACK) in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    dense_benchmark()
    sparse_benchmark()
