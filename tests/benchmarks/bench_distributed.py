"""Benchmark (issue 11): Dobrushin and the exact profile of a dense 4000 x 4000 operator on 1 and 2 local
Dask workers, side by side with the in-memory computation, with speed-up and peak memory per worker.

Run: ``python tests/benchmarks/bench_distributed.py`` (``BENCH_N``, ``BENCH_BLOCK`` override the size and the
rows per tile block). For the Dask runs the operator is a lazy dask array generated block by block (seeded, rows
normalised in whole-row chunks) wherever a block is needed, as a Zarr array would be read from storage: the
client never holds it; the in-memory baseline computes the same array here. Every Dask result is checked bit
for bit against the in-memory one at the same block size. Peak memory per worker is sampled every 10 ms
during the computations (resident set size of each worker process).
"""

from __future__ import annotations

import math
import os
import resource
import subprocess
import time

import networkx as nx
import numpy as np

N = int(os.environ.get("BENCH_N", 4000))
BLOCK = int(os.environ.get("BENCH_BLOCK", 256))  # rows per tile block: 2 x 256 x 4000 x 8 B = 16 MiB per tile
CHUNK_ROWS = BLOCK  # dask chunks of whole rows, one tile block each
EPS_QUERY = [0.0, 0.5, 1.0, 2.0]


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def operator_array(n: int):
    import dask.array as da

    x = da.random.default_rng(2026).random((n, n), chunks=(CHUNK_ROWS, n)) ** 2
    return x / x.sum(axis=1, keepdims=True)  # whole-row chunks: numpy's row sums, bit for bit


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20


def start_sampler(dask_worker) -> float:
    """On a worker: sample the resident set size every 10 ms until stop_sampler (returns the RSS now)."""
    import threading

    state = {"peak": _rss_mib(), "run": True}
    dask_worker.chainamp_rss = state

    def loop():
        while state["run"]:
            state["peak"] = max(state["peak"], _rss_mib())
            time.sleep(0.01)

    threading.Thread(target=loop, daemon=True).start()
    return state["peak"]


def stop_sampler(dask_worker) -> float:
    state = dask_worker.chainamp_rss
    state["run"] = False
    return max(state["peak"], _rss_mib())


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    from distributed import Client, LocalCluster

    import chainamp
    from chainamp import MarkovOperator

    print(f"chainamp distributed benchmark: dense {N} x {N}, tile blocks of {BLOCK} rows")
    print("load before:", load())
    ring = nx.cycle_graph(N)  # the exact profile over a ring of neighbours (N pairs); all pairs would be N^2 / 2

    # ---- in-memory baseline (the same array, computed here), default threads and the benchmark's block size
    A = operator_array(N).compute(scheduler="threads")
    K = MarkovOperator(A)
    warm_up()  # numba compiles its kernels once (cached on disk for the workers)
    ref_default, t_default = timed(lambda: chainamp.dobrushin(MarkovOperator(A), progress=False))
    ref, t_mem = timed(lambda: chainamp.dobrushin(K, block_size=BLOCK, progress=False))
    prof_ref, t_prof_mem = timed(lambda: privacy_profile_values(chainamp.privacy_profile(K, ring, progress=False)))
    print(f"in memory, 2 threads, default tiles : dobrushin {t_default:7.2f} s  gamma={ref_default.gamma!r}")
    print(f"in memory, 2 threads, {BLOCK}-row tiles: dobrushin {t_mem:7.2f} s  gamma={ref.gamma!r} pair={ref.pair}")
    print(f"in memory, serial                   : exact profile (ring) {t_prof_mem:7.2f} s  "
          f"delta={prof_ref[0]}")
    del A, K
    entries = N * (N - 1) // 2 * N  # pair-outcome entries of one all-pairs scan (one kernel pass covers both orders)

    rows = []
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                          memory_limit=None, silence_logs=40) as cluster, Client(cluster) as client:
            client.run(warm_up)  # import chainamp and load the compiled kernels on the workers first
            D, t_load = timed(lambda: MarkovOperator.from_dask(operator_array(N)))  # validated on the cluster
            ex = client.get_executor()
            base = client.run(start_sampler)
            got, t_dob = timed(lambda: chainamp.dobrushin(D, block_size=BLOCK, executor=ex, progress=False))
            assert (got.gamma, got.pair, got.test_set) == (ref.gamma, ref.pair, ref.test_set), "not bit-identical"
            prof, t_prof = timed(lambda: privacy_profile_values(chainamp.privacy_profile(D, ring, executor=ex,
                                                                                           progress=False)))
            assert prof == prof_ref, "exact profile not bit-identical"
            peaks = client.run(stop_sampler)
            rows.append((workers, t_load, t_dob, t_prof, max(peaks.values())))
            print(f"{workers} worker(s): validation pass {t_load:6.2f} s, dobrushin {t_dob:7.2f} s "
                  f"({entries / t_dob / workers / 1e9:.2f} G pair-outcome entries/s per worker), "
                  f"exact profile (ring) {t_prof:6.2f} s, RSS per worker {max(base.values()):.0f} MiB before, "
                  f"peak {max(peaks.values()):.0f} MiB during")
    (w1, _, d1, p1, _), (w2, _, d2, p2, _) = rows
    print(f"speed-up 1 -> 2 workers: dobrushin x{d1 / d2:.2f}, exact profile x{p1 / p2:.2f}")
    tiles = math.ceil(N / BLOCK) * (math.ceil(N / BLOCK) + 1) // 2
    print(f"tiles per scan: {tiles}; bytes per tile block: {BLOCK * N * 8 / 2**20:.1f} MiB; "
          f"per-tile time on one worker: {d1 / tiles * 1e3:.1f} ms")
    print("load after:", load())


def warm_up() -> None:
    """One scan large enough for the numba kernels (n^2 m >= 2^25), so no timing below includes compiling."""
    import chainamp

    rng = np.random.default_rng(0)
    W = rng.random((400, 400))
    chainamp.dobrushin(W / W.sum(axis=1, keepdims=True), 0.5, progress=False)
    chainamp.dobrushin(W / W.sum(axis=1, keepdims=True), progress=False)


def privacy_profile_values(prof) -> tuple:
    return (prof.delta(EPS_QUERY).tolist(), [prof.witness(e) for e in EPS_QUERY], prof.pure_epsilon)


if __name__ == "__main__":
    main()
