"""Speed of the amplifier (issue 3 goals), printed as a table; not part of the test run.

    PYTHONPATH=. python tests/benchmarks/bench_amplify.py

Goals: tight black-box bound for K of 500 x 500: delta_at one eps' under 0.5 s, epsilon_at one
delta under 5 s; exact profile of M K for k = 100 data values and K of 1000 x 1000 at 200 eps
values under 5 s (the profile computation alone is also in bench_profiles.py, against dp-accounting).
"""

from __future__ import annotations

import time

import numpy as np

import chainamp as ca


def timed(fn, repeat=3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def random_operator(rng, n, m):
    mat = rng.random((n, m)) ** 2
    return ca.MarkovOperator(mat / mat.sum(axis=1, keepdims=True))


def main() -> None:
    rng = np.random.default_rng(7)
    K = random_operator(rng, 500, 500)
    t_rep, rep = timed(lambda: ca.amplify(ca.DP(1.0, 1e-6), K), repeat=1)
    print(f"amplify(DP(1, 1e-6), K 500x500): report built in {t_rep:.3f} s")
    tight = {s.name: s for s in rep.sources}["tight"]
    for e in (0.3, 0.6, 0.9):
        tight._cache.clear()
        t, b = timed(lambda: tight.bound_at_epsilon(e), repeat=1)
        print(f"  tight delta_at(eps'={e}): {t:.3f} s  -> delta' = {b.delta:.4g}   (goal < 0.5 s)")
    for d in (1e-7, 1e-8):  # not the report's target delta, whose answer is already cached
        tight._cache.clear()
        t, b = timed(lambda: tight.bound_at_delta(d), repeat=1)
        print(f"  tight epsilon_at(delta={d:g}): {t:.3f} s  -> eps' = {b.epsilon:.6f}   (goal < 5 s)")
    t, e = timed(lambda: rep.epsilon_at(1e-7), repeat=1)
    print(f"  report.epsilon_at(1e-7) over all sources: {t:.3f} s  -> {e:.6f}")

    M = random_operator(rng, 100, 1000)
    K2 = random_operator(rng, 1000, 1000)
    eps = np.linspace(0.0, 4.0, 200)

    def exact():
        prof = ca.privacy_profile(M @ K2)
        return prof.delta(eps)

    t, vals = timed(exact, repeat=1)
    print(f"exact profile of M K, k=100, K 1000x1000, 200 eps: {t:.3f} s  (goal < 5 s; delta(0) = {vals[0]:.4f})")
    t, r = timed(lambda: ca.amplify(M, K2), repeat=1)
    print(f"full amplify(M, K) report for the same pipeline: {t:.3f} s  (best eps' = {r.best.epsilon:.4f})")


if __name__ == "__main__":
    main()
