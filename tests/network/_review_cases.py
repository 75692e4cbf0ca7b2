"""Random adversarial cases for the review tests of chainamp.network, and the comparison with the exact value."""

from __future__ import annotations

import math

import mpmath
import networkx as nx
import numpy as np

from chainamp.network import gossip_matrix, gossip_privacy

from _review_reference import exact_mu_all


def connected_graph(rng, n):
    while True:
        kind = rng.integers(5)
        if kind == 0:
            G = nx.cycle_graph(n)
        elif kind == 1:
            G = nx.path_graph(n)
        elif kind == 2:
            G = nx.star_graph(n - 1)
        elif kind == 3:
            G = nx.complete_graph(n) if n <= 5 else nx.random_regular_graph(2 + 2 * int(rng.integers(2)) if n % 2 == 0 else 2, n, seed=int(rng.integers(1 << 30)))
        else:
            G = nx.gnp_random_graph(n, float(rng.uniform(0.2, 0.7)), seed=int(rng.integers(1 << 30)))
        if nx.is_connected(G):
            return nx.convert_node_labels_to_integers(G)


def perm_mixture(rng, n, k, tiny=None):
    """A non-symmetric doubly stochastic matrix: a convex combination of random permutations (float weights)."""
    w = rng.random(k + 1) + 0.05
    if tiny is not None:
        w[-1] = tiny * w.sum()
    w = w / w.sum()
    W = np.zeros((n, n))
    W[np.arange(n), np.arange(n)] += w[0]
    for i in range(1, k + 1):
        p = rng.permutation(n)
        W[np.arange(n), p] += w[i]
    return W


def random_matrix(rng, n):
    kind = rng.integers(4)
    if kind == 0:
        return gossip_matrix(connected_graph(rng, n), "metropolis").matrix
    if kind == 1:
        return gossip_matrix(connected_graph(rng, n), "lazy").matrix
    if kind == 2:
        return perm_mixture(rng, n, int(rng.integers(1, 3)))
    return perm_mixture(rng, n, int(rng.integers(1, 3)), tiny=float(rng.choice([1e-12, 1e-200, 2.0 ** -1000])))


def random_case(rng, max_rows=30, max_n=12):
    n = int(rng.integers(3, max_n + 1))
    view = str(rng.choice(["received", "neighbourhood"]))
    sched = bool(rng.random() < 0.3)
    T = int(rng.integers(1, 41))
    mats = [random_matrix(rng, n) for _ in range(T)] if sched else [random_matrix(rng, n)] * T
    sk = rng.integers(4)
    if sk == 0:
        sigma = 1.0
    elif sk == 1:
        sigma = float(rng.choice([0.3, 7.0, 1e-8, 1e8]))
    elif sk == 2:
        sigma = rng.uniform(0.5, 2.0, n)
    else:
        sigma = np.exp(rng.uniform(math.log(1e-8), math.log(1e8), n))
    sens = float(rng.choice([1.0, 0.1, 3.0, 1e-6, 1e6]))
    v = int(rng.integers(n))
    ncol = int(rng.integers(0, 3)) if n > 3 else 0
    col = sorted(set(int(c) for c in rng.choice(n, ncol, replace=False)) - {v})
    # keep the exact reference affordable: few rows
    coal = {v, *col}
    per_round = sum(1 for w in range(n) if w not in coal and any(mats[0][c][w] != 0 or mats[0][w][c] != 0 for c in coal))
    T = max(1, min(T, max_rows // max(per_round, 1), 8 if sched else 40))  # a schedule's rationals grow fast
    mats = mats[:T]
    return dict(mats=mats, sched=sched, T=T, sigma=sigma, sens=sens, v=v, col=col, view=view, n=n)


def run_case(case, **kw):
    mats = case["mats"]
    W = list(mats) if case["sched"] else mats[0]
    res = gossip_privacy(W, case["T"], sigma=case["sigma"], sensitivity=case["sens"], observers=[case["v"]],
                         colluders=case["col"] or None, view=case["view"], progress=False, allow_disconnected=True,
                         **kw)
    ref = exact_mu_all(mats, {case["v"], *case["col"]}, case["sigma"], case["view"], case["sens"])
    return res, ref


def compare(res, ref, sens, sigma):
    """Problems found: a mu below the exact value, a wrong zero, a full-rank claim that is false, a certified value
    further above the exact one than its margin allows."""
    problems = []
    status = res.status[0]
    n = len(res.labels)
    sig = np.broadcast_to(np.asarray(sigma, float), (n,))
    for i, u in enumerate(res.sources):
        got = float(res.mu_matrix[i, 0])
        if u not in ref:
            if not math.isnan(got):
                problems.append(("coalition member not NaN", u, got))
            continue
        ex = ref[u]
        if mpmath.mpf(got) < ex:
            problems.append(("BELOW", u, got, ex, status))
        if ex == 0 and got != 0 and status != "capped":
            problems.append(("nonzero for untouched", u, got, status))
        if got == 0 and ex != 0:
            problems.append(("ZERO for touched", u, got, ex))
        cap = mpmath.mpf(sens) / mpmath.mpf(float(sig[u]))
        if status == "full rank" and ex != 0 and (cap - ex) / cap > 1e-12:
            problems.append(("false full rank", u, got, ex))
        if status == "certified projection" and ex != 0:
            gap = (mpmath.mpf(got) - ex) / cap
            if gap > 2.5 * res.margins[0] + 1e-12:
                problems.append(("gap above margin", u, got, ex, float(gap), res.margins[0]))
    return problems
