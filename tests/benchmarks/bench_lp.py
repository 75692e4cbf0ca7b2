"""Benchmark of chainamp.lp: Doeblin and ultra-mixing LPs at n = m = 100 (goal: under 10 s each).

Plain script: ``python tests/benchmarks/bench_lp.py [--repeat R] [--size N]``. Times include
building and compiling the cvxpy problem, the solve and the numpy certificate repair; each
figure is the best of ``--repeat`` runs. Also times the hockey-stick LP over row pairs
(one compiled DPP problem re-solved per pair) and prints the certified bracket widths.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import cvxpy as cp
import numpy as np

from chainamp.lp import LP_SOLVERS, doeblin_lp, hockey_stick_lp_pairs, ultra_mixing_lp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the test suite's matrix generators
from conftest import krr_matrix as krr, random_stochastic  # noqa: E402

GOAL_SECONDS = 10.0


def best_time(func, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=200, help="row pairs for the hockey-stick rows")
    args = parser.parse_args()
    n = args.size
    rng = np.random.default_rng(2019)
    matrices = {
        "dense random": random_stochastic(rng, n, n),
        "30% zeros": random_stochastic(rng, n, n, 0.3),
        f"{n}-ary RR eps=1": krr(n, 1.0),
    }
    print(f"chainamp.lp benchmark: n = m = {n}, best of {args.repeat}; cvxpy {cp.__version__}, "
          f"python {platform.python_version()}, {platform.machine()}")
    print(f"{'LP':<22}{'matrix':<18}{'solver':<10}{'seconds':>9}{'gap':>11}{'  goal':>7}")
    worst = 0.0
    for label, func in (("Doeblin", doeblin_lp), ("ultra-mixing", ultra_mixing_lp)):
        for mname, K in matrices.items():
            for solver in LP_SOLVERS:
                secs, sol = best_time(lambda: func(K, solver=solver), args.repeat)
                worst = max(worst, secs)
                ok = "ok" if secs < GOAL_SECONDS else "SLOW"
                print(f"{label:<22}{mname:<18}{solver:<10}{secs:>9.3f}{sol.gap:>11.1e}{ok:>7}")
    K = matrices["dense random"]
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j][: args.pairs]
    for solver in LP_SOLVERS:
        secs, sols = best_time(lambda: hockey_stick_lp_pairs(K, pairs, 0.5, solver=solver), 1)
        gap = max(s.gap for s in sols.values())
        label = f"hockey x{len(pairs)} pairs"
        print(f"{label:<22}{'dense random':<18}{solver:<10}{secs:>9.3f}{gap:>11.1e}{'':>7}"
              f"   ({1e3 * secs / len(pairs):.1f} ms/pair)")
    print(f"slowest Doeblin/ultra-mixing LP: {worst:.3f} s (goal < {GOAL_SECONDS:.0f} s)")


if __name__ == "__main__":
    main()
