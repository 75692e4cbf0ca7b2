"""Pairwise network privacy of gossip (issue 21): chainamp.network beside a dense numpy pseudo-inverse, same run.

    PYTHONPATH=. python tests/benchmarks/bench_network.py [--quick]

Goals: all pairs on a 1,000-node sparse graph at T = 50 under 30 s and 1 GB; one observer on a 100,000-node
graph at T = 20 under 10 s. Graphs: random 4-regular (networkx seed 1, Metropolis weights) and a 316 x 316 grid.
Baseline: for each observer, the view's matrix built densely (``W^t`` as a dense numpy array for the 1,000-node
graph; the same sparse rows for 100,000 nodes, where a dense ``W`` would need 80 GB), then
``P = np.linalg.pinv(B)`` and ``||Pi e_u||^2 = (P B)_{uu}``: numpy's default rank cut-off, no certificate. Each case
runs in a fresh subprocess so that its peak RSS (``ru_maxrss`` minus the interpreter with chainamp and
networkx imported) is its own; the machine load (``uptime``) is printed first and last (other helpers share
the two cores).
"""

from __future__ import annotations

import json
import subprocess
import sys

CASE = r"""
import collections, json, resource, sys, time
import numpy as np, networkx as nx
import chainamp
from chainamp.network import gossip_matrix, gossip_privacy
kind, graph, n, T, n_obs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
if graph == "regular":
    G = nx.random_regular_graph(4, n, seed=1)
else:
    side = int(round(n ** 0.5))
    G = nx.convert_node_labels_to_integers(nx.grid_2d_graph(side, side))
W = gossip_matrix(G)
observers = list(range(n_obs))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
if kind == "chainamp":
    res = gossip_privacy(W, T, sigma=1.0, observers=observers, progress=False)
    sec = time.perf_counter() - t
    mu = res.mu_matrix
    out = {"status": dict(collections.Counter(res.status)), "mean_mu": float(np.nanmean(mu))}
else:
    from threadpoolctl import threadpool_limits
    S = W.sparse
    N = S.shape[0]
    mu = np.full((N, len(observers)), np.nan)
    dense = N <= 5000
    with threadpool_limits(1, "blas"):
        if dense:
            D = W.matrix
            powers = [np.eye(N)]
            for _ in range(T - 1):
                powers.append(powers[-1] @ D)
        for j, v in enumerate(observers):
            senders = [w for w in S[v].indices if w != v]
            if dense:
                A = np.vstack([P[senders] for P in powers])
            else:
                rows, block = [], np.zeros((len(senders), N))
                block[np.arange(len(senders)), senders] = 1.0
                St = S.T.tocsr()
                for _ in range(T):
                    rows.append(block)
                    block = np.asarray((St @ block.T).T)
                A = np.vstack(rows)
            keep = np.array([i for i in range(N) if i != v])
            B = A[:, keep]
            P = np.linalg.pinv(B)  # ||Pi e_u||^2 = (P B)_{uu}: Pi = P B is an orthogonal projection
            mu[keep, j] = np.sqrt(np.clip(np.einsum("uk,ku->u", P, B), 0, None))
    sec = time.perf_counter() - t
    out = {"mean_mu": float(np.nanmean(mu))}
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
out.update({"sec": sec, "peak_mb": peak, "observers": len(observers),
            "mean_mu_first_200_observers": float(np.nanmean(mu[:, :200]))})
print(json.dumps(out))
"""


def run(kind: str, graph: str, n: int, T: int, n_obs: int, timeout: float = 1800) -> dict:
    cmd = [sys.executable, "-c", CASE, kind, graph, str(n), str(T), str(n_obs)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"sec": float("inf"), "peak_mb": float("nan")}
    except subprocess.CalledProcessError as exc:
        return {"error": exc.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    quick = "--quick" in sys.argv
    print("load:", load(), flush=True)
    cases = [("regular", 1000, 50, 1000), ("regular", 1000, 5, 1000), ("regular", 100_000, 20, 1),
             ("grid", 99_856, 20, 1)]
    if quick:
        cases = [("regular", 1000, 50, 100), ("regular", 100_000, 20, 1)]
    for graph, n, T, n_obs in cases:
        for kind in ("chainamp", "numpy-pinv"):
            obs = n_obs if kind == "chainamp" or n_obs == 1 else min(n_obs, 200)
            res = run(kind, graph, n, T, obs)
            print(json.dumps({"case": f"{graph} n={n} T={T}", "method": kind, **res}), flush=True)
    print("load:", load(), flush=True)


if __name__ == "__main__":
    main()
