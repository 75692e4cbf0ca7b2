"""Speed of chainamp.mixing (plain script: ``PYTHONPATH=. python tests/benchmarks/bench_mixing.py [--quick]``).

Goals: Doeblin / ultra-mixing on a dense 4000 x 4000 operator in one pass (< 0.3 s);
Dobrushin and (gamma, eps)-Dobrushin on a dense 2000 x 2000 operator < 1.5 s and at least
10x faster than the straightforward numpy loop over row pairs below (the baseline: run on
a slice of rows and extrapolated linearly, since the full loop takes minutes).
"""

from __future__ import annotations

import math
import sys
import time

import networkx as nx
import numpy as np

from chainamp.mixing import dobrushin, dobrushin_curve, doeblin, ultra_mixing
from chainamp.operators import MarkovOperator


def timed(fn, *args, repeat: int = 3, **kwargs):
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return best, out


def random_operator(n: int, m: int, seed: int = 0) -> MarkovOperator:
    A = np.random.default_rng(seed).random((n, m))
    return MarkovOperator(A / A.sum(axis=1, keepdims=True))


def baseline_pair_loop(A: np.ndarray, eps: float, rows: int) -> tuple[float, float]:
    """Straightforward numpy loop over ordered row pairs, on the first ``rows`` rows vs all rows.

    Returns (max found, seconds extrapolated to all n rows)."""
    c = math.exp(eps)
    n = A.shape[0]
    t0 = time.perf_counter()
    best = 0.0
    for i in range(rows):
        for j in range(n):
            if i != j:
                best = max(best, float(np.maximum(A[i] - c * A[j], 0.0).sum()))
    return best, (time.perf_counter() - t0) * n / rows


def main(quick: bool = False) -> None:
    big = 1000 if quick else 4000
    mid = 600 if quick else 2000
    K4 = random_operator(big, big)
    t, res = timed(doeblin, K4)
    print(f"doeblin       dense {big}x{big}: {t:.3f} s  (gamma={res.gamma:.6f})")
    t, res = timed(ultra_mixing, K4)
    print(f"ultra_mixing  dense {big}x{big}: {t:.3f} s  (gamma={res.gamma:.6f})")
    del K4

    K2 = random_operator(mid, mid, seed=1)
    A = K2.matrix
    for eps in (0.0, 0.1, 1.0):
        t, res = timed(dobrushin, K2, eps, repeat=2)
        ref, base = baseline_pair_loop(A, eps, rows=max(2, mid // 100))
        print(f"dobrushin eps={eps:<4} dense {mid}x{mid}: {t:.3f} s  (gamma={res.gamma:.9f}); "
              f"pair loop ~{base:.1f} s extrapolated -> {base / t:.0f}x")

    B = np.random.default_rng(3).random((mid, mid)) ** 4  # heavy-tailed: large likelihood ratios
    KB = MarkovOperator(B / B.sum(axis=1, keepdims=True))
    for eps in (5.0, 20.0, 40.0):
        t, res = timed(dobrushin, KB, eps, repeat=1)
        print(f"dobrushin eps={eps:<4} dense {mid}x{mid} (entries u^4): {t:.3f} s  (gamma={res.gamma:.9f})")

    k = mid
    e = 1.0
    keep = math.exp(e) / (math.exp(e) + k - 1)
    R = np.full((k, k), (1 - keep) / (k - 1))
    np.fill_diagonal(R, keep)
    t, res = timed(dobrushin, MarkovOperator(R), repeat=1)
    closed = math.expm1(e) / (math.exp(e) + k - 1)
    print(f"dobrushin {k}-ary RR (all pairs tie): {t:.3f} s  (gamma - closed form = {res.gamma - closed:.2e})")

    K5 = random_operator(500, 500, seed=2)
    grid = np.linspace(0.0, 3.0, 100)
    t, curve = timed(dobrushin_curve, K5, grid, repeat=1)
    t0 = time.perf_counter()
    loop = np.array([dobrushin(K5, e).gamma for e in grid])
    t_loop = time.perf_counter() - t0
    print(f"dobrushin_curve dense 500x500, 100 eps: {t:.3f} s  (gamma(0)={curve[0]:.6f}, gamma(3)={curve[-1]:.2e}); "
          f"one dobrushin per eps {t_loop:.3f} s, max difference {np.max(np.abs(curve - loop)):.1e}")

    small = random_operator(5, 5, seed=4)
    calls = 2000
    t0 = time.perf_counter()
    for k in range(calls):
        dobrushin(small, 0.001 * k)
    print(f"dobrushin 5x5 operator, repeated calls: {1e6 * (time.perf_counter() - t0) / calls:.0f} us per call")

    walk = MarkovOperator.random_walk(nx.cycle_graph(100_000), laziness=0.5)
    t, res = timed(dobrushin, walk, 1.0)
    print(f"dobrushin sparse random walk, 100,000 nodes: {t:.3f} s  (gamma={res.gamma})")
    t, res = timed(doeblin, walk)
    print(f"doeblin   sparse random walk, 100,000 nodes: {t:.3f} s  (gamma={res.gamma})")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
