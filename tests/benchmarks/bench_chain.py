"""Benchmark of chainamp.chain (plain script, not part of the default test run).

    python tests/benchmarks/bench_chain.py

1. Dense 2000 x 2000 random chain: stationary distribution by chainamp (blocked GTH) and by
   quantecon's MarkovChain(P).stationary_distributions (numba GTH; ``pip install quantecon``,
   in the ``bench`` extra), best of a few runs after a warm-up, plus the agreement of the two.
2. Spectral gap of dense 1000 x 1000 chains (goal: under 1 s), next to ``numpy.linalg.eigvals`` of the
   same matrix in the same run: the lazy walk on a 1000-node small world stored dense and a random walk
   with symmetric random weights (both reversible: the symmetric method), and a random non-reversible
   chain (eigvals, nothing faster is reliable for its clustered spectrum). The machine load is printed.
   Issue 20: the eigenvalues run with one BLAS thread (threadpoolctl); each line also gives the tracemalloc peak.
4. ``mixing_time`` of 1000-state chains (goal: under 0.5 s; issue 20 item 5): a random chain, sticky ones
   (0.9 I + 0.1 random, 0.99 I + 0.01 random), lazy walks stored dense (small world, 25 x 40 grid, 1000-cycle) and
   the grid and cycle as ``random_walk`` stores them (sparse); wall and CPU time and tracemalloc peak, next to the
   same call with issue 20's second-round paths switched off (the circulant path, CSR squares, the dense search of
   sparse chains: the search as it was before) and numpy squaring to ``K^t`` with one per-row TV loop at the answer
   t (the least a direct computation needs), in the same run.
   ``python tests/benchmarks/bench_chain.py --issue20`` runs 2 and 4 only; ``--mixing`` runs 4 only.
5. Random walks on 100,000-node graphs (a 316 x 316 grid, where the sparse LU solve is used,
   and a Barabasi-Albert graph, where power iteration converges first), with the residual
   ``||pi K - pi||_1`` and the distance to the degree-proportional closed form; and the spectral
   gap of the lazy walk on the Barabasi-Albert graph (ARPACK).
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc

import networkx as nx
import numpy as np

from chainamp import MarkovOperator
from chainamp.operators import analyze_chain, spectral_gap, spectral_gap_method, stationary_distribution


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} cores)"


def numpy_gap(P: np.ndarray) -> float:
    vals = np.linalg.eigvals(P)
    vals = np.delete(vals, np.argmin(np.abs(vals - 1.0)))
    return 1.0 - float(np.abs(vals).max())


def spectral_benchmark(n: int = 1000) -> None:
    rng = np.random.default_rng(0)
    walk = MarkovOperator.random_walk(nx.connected_watts_strogatz_graph(n, 10, 0.1, seed=0), laziness=0.5)
    W = rng.random((n, n))
    W = W + W.T
    A = rng.random((n, n))
    cases = {"lazy small-world walk, stored dense": walk.matrix,
             "symmetric random weights (reversible)": W / W.sum(axis=1, keepdims=True),
             "random non-reversible": A / A.sum(axis=1, keepdims=True)}
    print(f"spectral gap, dense {n}x{n}   [{load()}]")
    for name, P in cases.items():
        K = MarkovOperator(P)
        t_ours, (gap, method) = best_of(lambda: spectral_gap_method(K), repeat=3)
        mb_ours = peak_mb(lambda: spectral_gap_method(K))
        t_np, ref = best_of(lambda: numpy_gap(P), repeat=3)
        mb_np = peak_mb(lambda: numpy_gap(P))
        print(f"  {name:40s} chainamp {t_ours:6.3f} s {mb_ours:5.1f} MB ({method}, gap {gap:.10f}); numpy eigvals "
              f"{t_np:6.3f} s {mb_np:5.1f} MB (gap {ref:.10f})   [{load()}]")


def peak_mb(fn) -> float:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return peak


def mixing_time_benchmark(n: int = 1000) -> None:
    from chainamp.mixing import guarantees, mixing_time, pairwise, power_search

    rng = np.random.default_rng(0)
    A = rng.random((n, n))
    P = A / A.sum(axis=1, keepdims=True)

    def lazy(G) -> np.ndarray:
        return MarkovOperator.random_walk(G, laziness=0.5).matrix

    def sparse(G):
        return MarkovOperator.random_walk(G, laziness=0.5)._data

    cases = {"random dense (non-reversible)": P,
             "sticky 0.9 I + 0.1 random": 0.9 * np.eye(n) + 0.1 * P,
             "sticky 0.99 I + 0.01 random": 0.99 * np.eye(n) + 0.01 * P,
             "lazy small-world walk stored dense": lazy(nx.connected_watts_strogatz_graph(n, 10, 0.1, seed=0)),
             "lazy walk on a 25 x 40 grid, dense": lazy(nx.grid_2d_graph(25, 40)),
             "lazy walk on a 1000-cycle, dense": lazy(nx.cycle_graph(n)),
             "the same grid stored sparse": sparse(nx.grid_2d_graph(25, 40)),
             "the same cycle stored sparse": sparse(nx.cycle_graph(n))}
    warm = 0.99 * np.eye(200) + 0.01 * P[:200, :200] / P[:200, :200].sum(axis=1, keepdims=True)
    mixing_time(MarkovOperator(warm), progress=False)  # warm-up (threads)
    from chainamp.mixing import dobrushin

    dobrushin(cases["sticky 0.99 I + 0.01 random"], progress=False)  # numba import and its cached kernels
    # the search before issue 20's second round: no circulant path, thin squares as dense @ CSR, sparse chains by
    # the product search (the dsyrk mirror by blocks cannot be switched off: that part is in both columns)
    before = [(guarantees, "_CIRCULANT", False), (guarantees, "_SPARSE_TO_DENSE_MAX_N", 0),
              (power_search, "_SPARSE_SQUARES", False)]
    print(f"mixing_time(K, 0.25), {n} states   [{load()}]")
    print("  wall s / CPU s (best of 3 after a warm-up), tracemalloc peak: chainamp; the same with this round's paths "
          "off (circulant, CSR squares, sparse -> dense search); numpy: K^t by squaring at the known t, then one "
          "per-row TV loop (dense)")
    for name, M in cases.items():
        D = M.toarray() if hasattr(M, "toarray") else M

        def ours():
            pairwise._PREP_CACHE.clear()
            return mixing_time(MarkovOperator(M), progress=False)

        def previous():
            saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in before]
            for mod, attr, value in before:
                setattr(mod, attr, value)
            try:
                return ours()
            finally:
                for mod, attr, value in saved:
                    setattr(mod, attr, value)

        t_ours, steps, cpu_ours = best_of_cpu(ours, repeat=3)
        mb = peak_mb(ours)
        t_old, steps_old, cpu_old = best_of_cpu(previous, repeat=3)
        mb_old = peak_mb(previous)

        def numpy_direct():
            power, done = D.copy(), 1
            while 2 * done <= steps:
                power, done = power @ power, 2 * done
            rest, base = steps - done, D
            while rest:  # the remaining steps by the binary digits of t - done
                if rest & 1:
                    power = power @ base
                rest >>= 1
                if rest:
                    base = base @ base
            return max(float(0.5 * np.abs(power[i] - power[i + 1:]).sum(axis=1).max()) for i in range(n - 1))

        t_np, gamma, cpu_np = best_of_cpu(numpy_direct, repeat=1)
        mb_np = peak_mb(numpy_direct)
        same = "same t" if steps_old == steps else f"DIFFERENT t = {steps_old}"
        print(f"  {name:36s} t = {steps:6d}: chainamp {t_ours:6.3f} s / {cpu_ours:6.3f} s {mb:5.0f} MB; before "
              f"{t_old:6.3f} s / {cpu_old:6.3f} s {mb_old:5.0f} MB ({same}); numpy {t_np:6.3f} s / {cpu_np:6.3f} s "
              f"{mb_np:5.0f} MB (gamma(K^t) {gamma:.4f})   [{load()}]", flush=True)


def best_of_cpu(fn, repeat: int = 3) -> tuple[float, object, float]:
    """Best wall time, the result and the CPU time (this process, all threads) of the best run."""
    fn()
    best, out, cpu = float("inf"), None, float("nan")
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        wall = time.perf_counter() - t0
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    return best, out, cpu


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
    if "--mixing" not in sys.argv:
        spectral_benchmark()
    mixing_time_benchmark()
    if "--mixing" in sys.argv:
        sys.exit(0)
    if "--issue20" not in sys.argv:
        dense_benchmark()
        sparse_benchmark()
