"""Benchmark: exact privacy profile of a finite mechanism (100 data values, 1000 outputs, 200 eps).

Run: ``python tests/benchmarks/bench_profiles.py [--pairs N] [--stream N] [--workers W]``.

``--stream N`` (issue 10, item 2) times instead the streamed exact profile of a dense random N x N mechanism
(Dirichlet(1) rows, all pairs) at 50 eps, in a child process whose peak RSS is reported (goal for N = 1000:
under 60 s and 1 GB), serially and with ``--workers`` processes; the baseline is a vectorised numpy brute
force ``max over pairs of sum_y [P_u(y) - e^eps P_v(y)]_+`` (timed on a sample of rows, extrapolated; the
per-pair implementation this replaced would need 40 N^3 bytes, 40 GB at N = 1000).

The mechanism is ``P = M K``: M a random 100 x 1000 channel (Dirichlet rows), K a lazy random
walk on a random 4-regular graph over 1000 nodes; neighbours are all pairs (local DP, 9900 ordered
pairs). chainamp's :func:`privacy_profile` is compared with Google's dp-accounting, used the way a
user of that library would audit the channel: one
``PrivacyLossDistribution.from_two_probability_mass_functions`` per ordered pair (pessimistic
estimate, default discretization 1e-4), ``get_delta_for_epsilon`` on the 200 eps, maximum over pairs.
dp-accounting is slow per pair, so by default it runs on a random sample of ``--pairs`` unordered pairs
(both directions) and the full-loop time is extrapolated linearly (``--pairs 4950`` runs them all); on the sample,
the two curves are compared too (dp-accounting's pessimistic values must not be below ours by more
than its float noise, and ours must not be below the exact per-pair hockey-stick divergences).
"""

from __future__ import annotations

import argparse
import math
import time

import networkx as nx
import numpy as np

from chainamp.privacy import hockey_stick_curve
from chainamp.operators import MarkovOperator
from chainamp.privacy import privacy_profile


def build_mechanism(n: int = 100, m: int = 1000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    M = rng.dirichlet(np.full(m, 0.3), size=n)
    G = nx.random_regular_graph(4, m, seed=seed)
    K = MarkovOperator.random_walk(G, laziness=0.5).matrix
    return M, K


def run_chainamp(M: np.ndarray, K: np.ndarray, eps: np.ndarray) -> tuple[np.ndarray, dict]:
    t0 = time.perf_counter()
    P = M @ K
    P = P / P.sum(axis=1, keepdims=True)
    t1 = time.perf_counter()
    prof = privacy_profile(P)
    t2 = time.perf_counter()
    vals = prof.delta(eps)
    t3 = time.perf_counter()
    return vals, {"M@K": t1 - t0, "build": t2 - t1, "delta(200 eps)": t3 - t2, "total": t3 - t0,
                  "profile": prof, "P": P}


def run_dp_accounting(P: np.ndarray, pairs: np.ndarray, eps: np.ndarray) -> tuple[np.ndarray, float]:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    logs = [{y: math.log(v) for y, v in enumerate(row) if v > 0} for row in P]
    best = np.zeros(eps.size)
    t0 = time.perf_counter()
    for u, v in pairs:
        # D_{e^eps}(P_u || P_v): mu_upper = P_u, mu_lower = P_v
        pld = pld_lib.from_two_probability_mass_functions(logs[v], logs[u], pessimistic_estimate=True)
        best = np.maximum(best, np.asarray(pld.get_delta_for_epsilon(eps), dtype=float))
    return best, time.perf_counter() - t0


def _stream_child(n: int, workers: int) -> None:
    import resource
    from concurrent.futures import ProcessPoolExecutor

    M = np.random.default_rng(0).dirichlet(np.ones(n), size=n)
    eps = np.linspace(0.0, 8.0, 50)
    t0 = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as ex:
            vals = privacy_profile(M, executor=ex, progress=False).delta(eps)
    else:
        vals = privacy_profile(M, progress=False).delta(eps)
    secs = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{secs:.2f} {rss:.0f} {float(vals[0])!r} {float(vals[25])!r}")


def _brute_force(M: np.ndarray, eps: np.ndarray, rows: int) -> float:
    """Seconds of a vectorised numpy max over pairs (i, j > i, both orders) for the first ``rows`` rows."""
    a = np.exp(eps)[:, None, None]
    t0 = time.perf_counter()
    best = np.zeros(eps.size)
    for i in range(rows):
        for j0 in range(i + 1, M.shape[0], 64):
            Q = M[j0:j0 + 64]
            best = np.maximum(best, np.maximum(M[i] - a * Q, 0.0).sum(axis=2).max(axis=1))
            best = np.maximum(best, np.maximum(Q - a * M[i], 0.0).sum(axis=2).max(axis=1))
    return time.perf_counter() - t0


def stream(n: int, workers: int) -> None:
    import os
    import subprocess
    import sys

    print(f"machine load (1, 5, 15 min): {os.getloadavg()}")
    for w in sorted({1, workers}):
        out = subprocess.run([sys.executable, __file__, "--child", str(n), "--workers", str(w)], check=True,
                             capture_output=True, text=True).stdout.split()
        print(f"chainamp streamed exact profile, {n} x {n} Dirichlet, 50 eps, {w} process(es): {float(out[0]):.1f} s,"
              f" peak RSS {out[1]} MB (delta(0) = {float(out[2]):.6f}, delta(4.08) = {float(out[3]):.3g})")
    M = np.random.default_rng(0).dirichlet(np.ones(n), size=n)
    rows = max(1, n // 50)
    secs = _brute_force(M, np.linspace(0.0, 8.0, 50), rows)
    done = sum(n - 1 - i for i in range(rows))
    print(f"numpy brute force (same quantity, vectorised): {rows} rows ({done} pairs) in {secs:.1f} s -> all "
          f"{n * (n - 1) // 2} pairs extrapolated {secs * n * (n - 1) / 2 / done:.0f} s")
    print(f"machine load after: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=150,
                        help="unordered pairs (both directions) run through dp-accounting")
    parser.add_argument("--stream", type=int, default=0, help="time the streamed profile of an N x N mechanism")
    parser.add_argument("--workers", type=int, default=2, help="processes for the parallel streamed run")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _stream_child(args.child, args.workers)
        return
    if args.stream:
        stream(args.stream, args.workers)
        return
    eps = np.linspace(0.0, 4.0, 200)
    M, K = build_mechanism()
    vals, t = run_chainamp(M, K, eps)
    prof, P = t["profile"], t["P"]
    print(f"chainamp: M@K {t['M@K']:.3f} s, privacy_profile {t['build']:.3f} s, "
          f"delta at 200 eps {t['delta(200 eps)']:.3f} s, total {t['total']:.3f} s "
          f"({prof.pairs.shape[0]} ordered pairs, delta(0) = {vals[0]:.6g}, delta(4) = {vals[-1]:.6g})")

    rng = np.random.default_rng(1)
    unordered = prof.pairs[prof.pairs[:, 0] < prof.pairs[:, 1]]
    pick = unordered[rng.choice(unordered.shape[0], size=min(args.pairs, unordered.shape[0]), replace=False)]
    sample = np.concatenate([pick, pick[:, ::-1]])  # both directions, like privacy_profile
    try:
        theirs, secs = run_dp_accounting(P, sample, eps)
    except ImportError:
        print("dp-accounting is not installed (pip install dp-accounting): comparison skipped")
        return
    n_all = prof.pairs.shape[0]
    full = secs * n_all / sample.shape[0]
    print(f"dp-accounting: {sample.shape[0]} ordered pairs in {secs:.2f} s -> {n_all} pairs "
          f"{'measured' if sample.shape[0] == n_all else 'extrapolated'} {full:.1f} s "
          f"(chainamp is {full / t['total']:.0f}x faster end to end)")
    exact = np.max([hockey_stick_curve(P[u], P[v], eps) for u, v in sample], axis=0)
    sub = privacy_profile(P, [(int(u), int(v)) for u, v in pick]).delta(eps)
    print(f"on the sample: max |chainamp - per-pair hockey_stick_curve| = {np.max(np.abs(sub - exact)):.2e}; "
          f"dp-accounting - chainamp in [{np.min(theirs - sub):.2e}, {np.max(theirs - sub):.2e}] "
          f"(pessimistic, discretization 1e-4)")

if __name__ == "__main__":
    main()
