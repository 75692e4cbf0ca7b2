"""Speed and memory of chainamp.amplify_shuffled (issue 19 goals), printed as a table; not part of the test run.

    PYTHONPATH=. python tests/benchmarks/bench_shuffle.py [--quick | --binary]

Goals: n up to 1e8 users, k up to 1e6 categories, each epsilon_at under 1 s and 300 MB. Each row times
``amplify_shuffled(...)`` (the certified profile is built once), then ``report.epsilon_at(1e-7)`` (a new delta), with
the process's peak resident memory after the row (rows grow, so it is the row's peak when it rises) and the
load. Beside it, the
straightforward alternative: ONE dataset (all others hold 0) evaluated exactly in numpy (scipy's binomial pmf over
the whole support, ``np.convolve`` with user 1's bit, a 60-step bisection on eps of ``sum(max(P - e^eps Q, 0))``):
it is not a certificate (it is the lower end of the worst case), and it is what a user would write first.

``--binary``: binary RR only, eps0 = 4, 2, 1, 0.5, 0.25, 0.1 at n = 1e6 and 1e8, with the "auto" call's wall and
CPU time, the exact method's own CPU time, the gap of the certificate over its lower profile, and the peak memory.
"""

from __future__ import annotations

import math
import os
import sys
import resource
import time

import numpy as np

import chainamp as ca


def measured(fn):
    """(seconds, peak resident memory of the process so far in MB, result)."""
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    return dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, out


def one_dataset_numpy(n: int, eps0: float, delta: float) -> float:
    from scipy.stats import binom

    p = math.exp(eps0) / (1 + math.exp(eps0))
    z = binom.pmf(np.arange(n), n - 1, 1 - p)
    P0, P1 = np.convolve(z, [p, 1 - p]), np.convolve(z, [1 - p, p])

    def d(e):
        a = math.exp(e)
        return max(np.maximum(P0 - a * P1, 0).sum(), np.maximum(P1 - a * P0, 0).sum())

    lo, hi = 0.0, eps0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if d(mid) <= delta else (mid, hi)
    return hi


def binary_sweep() -> None:
    """Binary RR across eps0 at n = 1e6 and 1e8 (issue 19's scale goal for every eps0)."""
    from chainamp.shuffle import api

    ca.amplify_shuffled(ca.SymmetricChannel.from_epsilon(2, 1.0), 1000, delta=1e-6, progress=False)  # compile
    print(f"load: {os.getloadavg()}")
    print(f"{'n':>10} {'eps0':>5} | {'auto s':>7} {'cpu s':>6} {'exact cpu':>9} {'peak MB':>8} | {'eps@1e-6':>12} "
          f"{'lower':>12} {'gap':>8} | {'numpy 1 dataset s':>17}")
    for n in (10**6, 10**8):
        for eps0 in (4.0, 2.0, 1.0, 0.5, 0.25, 0.1):
            R = ca.SymmetricChannel.from_epsilon(2, eps0)
            c0 = time.process_time()
            t_b, mem, rep = measured(lambda: ca.amplify_shuffled(R, n, delta=1e-6, progress=False))
            cpu = time.process_time() - c0
            c0 = time.process_time()
            api.METHODS["exact"](api.read_randomizer(R), n, target=1e-6, progress=False)
            cpu_exact = time.process_time() - c0
            alt = f"{measured(lambda: one_dataset_numpy(n, eps0, 1e-6))[0]:17.2f}" if n <= 10**6 else f"{'-':>17}"
            low = rep.lower_epsilon
            print(f"{n:>10} {eps0:>5} | {t_b:7.3f} {cpu:6.3f} {cpu_exact:9.3f} {mem:8.1f} | {rep.epsilon:12.6e} "
                  f"{low:12.6e} {rep.epsilon / low - 1:8.1e} | {alt}", flush=True)
    print(f"load: {os.getloadavg()}")


def main() -> None:
    if "--binary" in sys.argv:
        binary_sweep()
        return
    quick = "--quick" in sys.argv
    print(f"load: {os.getloadavg()}")
    rows = [(2, 2.0, 10**3), (2, 4.0, 10**4), (2, 4.0, 10**5), (2, 4.0, 10**6)]
    if not quick:
        rows.append((2, 4.0, 10**8))
    rows += [(4, 2.0, 10**3), (4, 1.0, 10**6), (100, 3.0, 10**6), (10**6, 4.0, 10**8)]
    if not quick:
        rows += [(4, 1.0, 10**8), (100, 2.0, 10**8)]
    print(f"{'k':>8} {'eps0':>5} {'n':>10} | {'build s':>8} {'peak MB':>8} {'eps@1e-6':>10} {'lower':>10} | "
          f"{'eps_at s':>8} | {'numpy 1 dataset s':>17} {'eps':>10}")
    for k, eps0, n in rows:
        R = ca.SymmetricChannel.from_epsilon(k, eps0)
        t_b, mem, rep = measured(lambda: ca.amplify_shuffled(R, n, delta=1e-6, progress=False))
        t_e, _, _ = measured(lambda: rep.epsilon_at(1e-7))
        low = rep.lower_epsilon
        alt = "-"
        t_a = float("nan")
        if k == 2 and n <= 10**6:
            t_a, _, e_alt = measured(lambda: one_dataset_numpy(n, eps0, 1e-6))
            alt = f"{e_alt:.6f}"
        print(f"{k:>8} {eps0:>5} {n:>10} | {t_b:8.2f} {mem:8.1f} {rep.epsilon:10.6f} "
              f"{(low if low is not None else float('nan')):10.6f} | {t_e:8.3f} | {t_a:17.2f} {alt:>10}")
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
