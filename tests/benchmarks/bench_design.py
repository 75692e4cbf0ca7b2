"""Benchmark of the designs at scale (issue 20, item 4): the symmetric closed form beside the LP it replaces.

Plain script: ``python tests/benchmarks/bench_design.py``. Each row times one design call in this process
(wall seconds, best of ``--repeat``) and the process's peak RSS so far, with the machine's load average:

* ``optimal_post_processing`` of k-RR (M at eps = 3, target eps = 1): the closed form at k = 34, 1000, 10^6
  beside the full LP (``symmetry=False``, cvxpy + HiGHS) at k = 34 (8.9 s before this change) — the LP's
  nonzeros grow as k^4, so it is not run past ``--lp-max-k``;
* ``optimal_mixing_operator(N, 0.5)`` with the 0-1 loss: closed form at N = 60, 200 beside the LP at N = 40.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from chainamp import mechanisms
from chainamp.design import optimal_mixing_operator, optimal_post_processing


def best_time(func, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - start)
    return best, out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lp-max-k", type=int, default=34)
    args = parser.parse_args()
    print(f"design benchmark; load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'design':<46}{'seconds':>9}{'objective':>14}{'dual bound':>14}{'peak MB':>9}")
    for k, symmetry in ((34, True), (34, False), (1000, True), (10**6, True)):
        if not symmetry and k > args.lp_max_k:
            continue
        M = mechanisms.randomized_response(k, 3.0)
        secs, r = best_time(lambda: optimal_post_processing(M, 1.0, symmetry=symmetry, progress=False),
                            1 if not symmetry else args.repeat)
        label = f"post-processing {k}-RR ({'closed form' if symmetry else 'LP'})"
        print(f"{label:<46}{secs:>9.3f}{r.objective:>14.10f}{r.dual_bound:>14.10f}{peak_mb():>9.0f}")
    for n, symmetry in ((40, False), (60, True), (200, True)):
        secs, r = best_time(lambda: optimal_mixing_operator(n, 0.5, symmetry=symmetry, progress=False),
                            1 if not symmetry else args.repeat)
        label = f"mixing Dobrushin N = {n} ({'closed form' if symmetry else 'LP'})"
        print(f"{label:<46}{secs:>9.3f}{r.objective:>14.10f}{r.dual_bound:>14.10f}{peak_mb():>9.0f}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
