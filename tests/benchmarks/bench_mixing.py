"""Speed of chainamp.mixing, each goal next to its baseline in the same run (issue 10 item 3).

    PYTHONPATH=. python tests/benchmarks/bench_mixing.py [--quick] [--amplify]

Goals and baselines (the machine load is printed first: the figures are only comparable at equal load):

* ``dobrushin`` dense 2000 x 2000 >= 10x the per-row numpy loop
  ``max_i (1 - np.minimum(K[i], K[i+1:]).sum(1))`` (the full loop, not extrapolated);
* (gamma, eps)-Dobrushin likewise, against the per-row loop of the hockey-stick
  ``np.maximum(K[i] - e^eps K[i+1:], 0).sum(1)`` in both orders; ``dobrushin_curve`` against that
  loop at every eps of its grid;
* ``ldp_guarantee(1000-ary RR, dense).epsilon_at(1e-3)`` < 0.5 s (baseline: the same bisection with
  the per-row loop as ``delta``, extrapolated from one evaluation);
* ``mixing_time`` on a 1000-node lazy walk < 1 s (baseline: numpy squaring to ``K^t`` and one per-row
  TV loop at the answer t);
* ``import chainamp`` < 0.5 s (``python -X importtime``, best of 3);
* ``--amplify``: ``amplify(DP(1, 1e-6), [K] * 10)`` on the 3000-node small-world lazy walk (goal 15 s).
Every timing of chainamp starts from a fresh operator (no preparation or pair bounds kept from an
earlier call); the first call of the process also pays numba's import and cache load (reported).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time

import networkx as nx
import numpy as np

from chainamp.mixing import dobrushin, dobrushin_curve, doeblin, ldp_guarantee, mixing_time, pairwise, ultra_mixing
from chainamp.operators import MarkovOperator


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} cores)"


def fresh(A: np.ndarray) -> MarkovOperator:
    pairwise._PREP_CACHE.clear()
    return MarkovOperator(np.array(A))


def timed(fn, repeat: int = 2):
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def random_operator(n: int, m: int, seed: int = 0) -> np.ndarray:
    A = np.random.default_rng(seed).random((n, m))
    return A / A.sum(axis=1, keepdims=True)


def row_loop_tv(A: np.ndarray) -> float:
    """The baseline of the issue: ``max over i of 1 - np.minimum(K[i], K[i+1:]).sum(1)``."""
    best = 0.0
    for i in range(A.shape[0] - 1):
        best = max(best, float((1.0 - np.minimum(A[i], A[i + 1:]).sum(1)).max()))
    return best


def row_loop_hockey(A: np.ndarray, eps: float) -> float:
    """The analogous per-row loop of the hockey-stick divergence, both orders."""
    c = math.exp(eps)
    best = 0.0
    for i in range(A.shape[0] - 1):
        rest = A[i + 1:]
        best = max(best, float(np.maximum(A[i] - c * rest, 0.0).sum(1).max()),
                   float(np.maximum(rest - c * A[i], 0.0).sum(1).max()))
    return best


def bench_dobrushin(n: int) -> None:
    A = random_operator(n, n, seed=1)
    t0 = time.perf_counter()
    dobrushin(fresh(random_operator(256, 4096, seed=9)), 0.0, progress=False)  # numba import / cache load
    print(f"  (first large scan of the process: {time.perf_counter() - t0:.2f} s incl. numba import)")
    for eps in (0.0, 1.0):
        t, res = timed(lambda: dobrushin(fresh(A), eps, progress=False))
        t0 = time.perf_counter()
        ref = row_loop_tv(A) if eps == 0.0 else row_loop_hockey(A, eps)
        base = time.perf_counter() - t0
        print(f"dobrushin eps={eps:<3} dense {n}x{n}: {t:.3f} s (gamma={res.gamma:.12f}); per-row numpy loop "
              f"{base:.2f} s (max {ref:.12f}) -> {base / t:.1f}x   [{load()}]")
    grid = np.linspace(0.0, 2.0, 8)
    t, curve = timed(lambda: dobrushin_curve(fresh(A), grid, progress=False), repeat=1)
    t0 = time.perf_counter()
    loop = [row_loop_hockey(A, e) for e in grid[:2]]
    base = (time.perf_counter() - t0) * grid.size / 2
    print(f"dobrushin_curve dense {n}x{n}, {grid.size} eps: {t:.3f} s; per-row loop at each eps ~{base:.1f} s "
          f"(2 of {grid.size} run, max |diff| {max(abs(curve[k] - loop[k]) for k in range(2)):.1e}) -> "
          f"{base / t:.1f}x   [{load()}]")


def bench_rr(k: int = 1000) -> None:
    e = 5.0
    R = np.full((k, k), 1.0 / (math.exp(e) + k - 1))
    np.fill_diagonal(R, math.exp(e) / (math.exp(e) + k - 1))
    t, eps = timed(lambda: ldp_guarantee(fresh(R)).epsilon_at(1e-3), repeat=3)
    t0 = time.perf_counter()
    row_loop_hockey(R, 4.9)
    one = time.perf_counter() - t0
    steps = math.ceil(math.log2(e / 1e-9))
    print(f"ldp_guarantee({k}-ary RR, dense).epsilon_at(1e-3) = {eps:.9f}: {t:.3f} s; bisection over the per-row "
          f"loop ~{one * steps:.1f} s ({steps} x {one:.2f} s)   [{load()}]")


def bench_mixing_time(n: int = 1000) -> None:
    G = nx.connected_watts_strogatz_graph(n, 10, 0.1, seed=0)
    K = MarkovOperator.random_walk(G, laziness=0.5)
    t, steps = timed(lambda: (pairwise._PREP_CACHE.clear(), mixing_time(K, progress=False))[1], repeat=3)
    P = K.matrix
    t0 = time.perf_counter()
    power, done = P.copy(), 1
    while 2 * done <= steps:
        power, done = power @ power, 2 * done
    for _ in range(steps - done):
        power = power @ P
    gamma = row_loop_tv(power)
    base = time.perf_counter() - t0
    print(f"mixing_time lazy walk {n} nodes = {steps}: {t:.3f} s; numpy K^t and one per-row TV loop {base:.2f} s "
          f"(gamma {gamma:.4f})   [{load()}]")


def bench_import() -> None:
    best = math.inf
    for _ in range(3):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import chainamp"], capture_output=True,
                             text=True, env={**os.environ, "PYTHONPATH": "."}).stderr
        total = int(re.findall(r"\|\s*(\d+) \| chainamp\s*$", out, re.M)[-1])
        best = min(best, total / 1e6)
    print(f"import chainamp: {best:.3f} s (python -X importtime, best of 3)   [{load()}]")


def bench_amplify(n: int = 3000) -> None:
    from chainamp import DP, amplify

    K = MarkovOperator.random_walk(nx.connected_watts_strogatz_graph(n, 10, 0.1, seed=0), laziness=0.5)
    pairwise._PREP_CACHE.clear()
    t0 = time.perf_counter()
    rep = amplify(DP(1, 1e-6), [K] * 10)
    print(f"amplify(DP(1, 1e-6), [K] * 10), lazy walk on {n}-node small world: {time.perf_counter() - t0:.1f} s, "
          f"best {rep.best.epsilon:.6f} from {rep.best.source}   [{load()}]")


def main(quick: bool = False, with_amplify: bool = False) -> None:
    print(load())
    big = 1000 if quick else 4000
    A4 = random_operator(big, big)
    t, res = timed(lambda: doeblin(fresh(A4)))
    print(f"doeblin       dense {big}x{big}: {t:.3f} s  (gamma={res.gamma:.6f})")
    t, res = timed(lambda: ultra_mixing(fresh(A4)))
    print(f"ultra_mixing  dense {big}x{big}: {t:.3f} s  (gamma={res.gamma:.6f})")
    del A4
    bench_dobrushin(600 if quick else 2000)
    bench_rr()
    bench_mixing_time()
    bench_import()
    small = fresh(random_operator(5, 5, seed=4))
    t0 = time.perf_counter()
    for k in range(2000):
        dobrushin(small, 0.001 * k)
    print(f"dobrushin 5x5 operator, repeated calls: {1e6 * (time.perf_counter() - t0) / 2000:.0f} us per call")
    walk = MarkovOperator.random_walk(nx.cycle_graph(100_000), laziness=0.5)
    t, res = timed(lambda: dobrushin(walk, 1.0))
    print(f"dobrushin sparse random walk, 100,000 nodes: {t:.3f} s  (gamma={res.gamma})")
    if with_amplify:
        bench_amplify()


if __name__ == "__main__":
    main(quick="--quick" in sys.argv, with_amplify="--amplify" in sys.argv)
