"""Structured k-ary randomized response (issue 10, item 1): timings beside the dense path in the same run.

    PYTHONPATH=. python tests/benchmarks/bench_structured_rr.py [--quick]

Goals: exact profile and full ``amplify`` report of k-RR then k-RR at k = 10,000 in under 1 s and 300 MB,
and at k = 1,000,000 in under 1 s; ``ldp_guarantee(1000-ary RR).epsilon_at(1e-3)`` under 0.5 s. Each case
runs in a fresh subprocess so that its peak RSS (``ru_maxrss``, minus the interpreter with chainamp
imported) is its own; the dense baseline is the same computation on ``K.densify()`` at sizes where a dense
matrix is feasible. The machine load (``uptime``) is printed first and last.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

CASE = r"""
import json, resource, sys, time
import chainamp as ca
from chainamp import mechanisms
kind, k, dense = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "dense"
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
M, K = mechanisms.randomized_response(k, 5.0), mechanisms.randomized_response(k, 2.0)
if dense:
    M, K = M.densify(memory_limit="none"), K.densify(memory_limit="none")
t = time.perf_counter()
if kind == "amplify":
    rep = ca.amplify(M, K, delta=1e-6)
    text = str(rep)
    value = rep.best.epsilon
elif kind == "profile":
    prof = ca.privacy_profile(M)
    value = prof.epsilon(1e-6)
else:
    value = ca.ldp_guarantee(M).epsilon_at(1e-3)
sec = time.perf_counter() - t
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
print(json.dumps({"sec": sec, "peak_mb": peak, "value": value}))
"""


def run(kind: str, k: int, dense: bool, timeout: float = 300) -> dict:
    cmd = [sys.executable, "-c", CASE, kind, str(k), "dense" if dense else "structured"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"sec": float("inf"), "peak_mb": float("nan"), "value": float("nan")}
    return json.loads(out.stdout.strip().splitlines()[-1])


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    quick = "--quick" in sys.argv
    print("load:", load(), flush=True)
    rows = [
        ("amplify(k-RR(5) then k-RR(2), delta=1e-6), full report", "amplify",
         [(300, True), (300, False), (10_000, False), (1_000_000, False)]),
        ("exact profile of k-RR(5) and its epsilon(1e-6)", "profile",
         [(300, True), (300, False), (10_000, False), (1_000_000, False)]),
        ("ldp_guarantee(k-RR(5)).epsilon_at(1e-3)", "ldp", [(1000, True), (1000, False), (1_000_000, False)]),
    ]
    print(f"{'case':58s} {'k':>9s} {'path':>10s} {'time s':>9s} {'peak MB':>8s}  value")
    for title, kind, cases in rows:
        for k, dense in cases:
            if quick and dense and k > 100:
                continue
            t = time.perf_counter()
            res = run(kind, k, dense)
            wall = time.perf_counter() - t
            print(f"{title:58s} {k:>9d} {'dense' if dense else 'structured':>10s} {res['sec']:>9.3f} "
                  f"{res['peak_mb']:>8.1f}  {res['value']:.10g}   (subprocess {wall:.1f} s)", flush=True)
    print("load:", load())


if __name__ == "__main__":
    main()
