"""How far the certified k-RR shuffle bound sits above concrete datasets (issue 19); not part of the test run.

    PYTHONPATH=. python tests/benchmarks/bench_shuffle_krr_gap.py [--users N] [--brute]

Default: for n = 1000 users and delta = 1e-6, over k in {3, 4, 10, 100, 1000} and eps0 in {1, ..., 6}, prints
``amplify_shuffled``'s certified epsilon (the tightest certified method), its ``lower`` epsilon (a concrete dataset
of the other users, computed exactly), and, in the same run, an independent numpy evaluation of the dataset
"every other user holds one third value v" from its closed form (below), with the wall time of each. The truth
(the worst case over the other users' data) lies between the lower and the certificate.

Closed form of that dataset (derived here, not from a paper). With the values other than x0, x1, v lumped (their
split is uniform and identical under both hypotheses), the histogram ``h = (h0, h1, hv, h_rest)`` of all n reports
has, for the multinomial ``M`` of n trials with probabilities ``(o, o, d, (k - 3) o)``,

    P(h | x0) = M(h) / n * [(d/o) h0 + h1 + (o/d) hv + h_rest],   P(h | x1) = the same with h0 and h1 swapped,

because ``P_others(h - e_y) = M(h) h_y / (n pi_y)``. Given ``T = h0 + h1``, ``hv ~ Bin(n - T, d / (1 - 2o))`` and
``P - e^eps Q`` is affine in hv, so the hv sum is two binomial tails: a 2-D sum over (h0, h1).

``--brute``: every dataset of the other users (values up to relabelling) at n <= 8, k <= 6, in floats: which
dataset is worst at each eps. Observed (2026-11-28): a dataset "a users at x0 (or at x1), the others at ONE
third value" is always among the worst; x0 and x1 users together never are; split third values at best tie
(proved since for datasets without users at x0 or x1: shuffle/_krr_datasets.py). The worst a is often 0 or N but
not always: at n = 6, k = 4, e^eps0 = 7, e^eps = 4 it is a = 3 (tests/shuffle/test_krr_third_values.py). That is
evidence, not a proof: nothing in chainamp certifies with it.

``--scan-a K EPS0 EPS[,EPS...] A[,A...]``: the exact delta (both orders) of the dataset "a users at x0, the others
at one third value" for each a, at n = ``--users``, from windowed multinomial laws of the two groups (12 standard
deviations; the mass left out is far below the printed digits) convolved by FFT: 4-D, seconds per a at n = 1000.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections import defaultdict

import numpy as np


def third_value_delta(n: int, k: int, eps0: float, eps: float, sig: float = 12.0) -> float:
    """delta(eps) of the dataset "every other user holds one third value" (closed form above; plain floats)."""
    from scipy.special import gammaln
    from scipy.stats import binom

    d = math.exp(eps0) / (math.exp(eps0) + k - 1)
    o = 1.0 / (math.exp(eps0) + k - 1)
    s = math.sqrt(n * o * (1 - o)) + 1
    h = np.arange(max(0, int(n * o - sig * s)), min(n, int(n * o + sig * s) + 1) + 1)
    H0, H1 = np.meshgrid(h, h, indexing="ij")
    T = H0 + H1
    ok = T <= n
    m = np.where(ok, n - T, 0)
    lp = (gammaln(n + 1) - gammaln(H0 + 1) - gammaln(H1 + 1) - gammaln(m + 1) + T * math.log(o)
          + m * math.log1p(-2 * o))
    M2 = np.where(ok, np.exp(lp), 0.0)
    pv = min(1.0, d / (1 - 2 * o))
    E = math.exp(eps)
    alpha = (d / o - E) * H0 + (1 - E * d / o) * H1 + (1 - E) * m
    beta = (E - 1) * (1 - o / d)
    if beta == 0.0:
        val = np.maximum(alpha, 0.0)
    else:
        xs = np.maximum(np.ceil(-alpha / beta - 1e-12), 0)
        val = alpha * binom.sf(xs - 1, m, pv) + beta * m * pv * binom.sf(xs - 2, np.maximum(m - 1, 0), pv)
    return float((M2 * np.maximum(val, 0.0)).sum() / n)


def bisect(f, delta: float, hi: float) -> float:
    lo = 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) > delta else (lo, mid)
    return lo


def gap_grid(n: int, delta: float = 1e-6) -> None:
    import chainamp as ca

    ca.amplify_shuffled(ca.mechanisms.randomized_response(4, 2.0), 100, delta=delta, progress=False)  # warm up
    print(f"n = {n}, delta = {delta:g}, load {os.getloadavg()[0]:.2f}")
    print("| k | eps0 | certified eps (method) | lower eps | certified / lower | third-value dataset, numpy "
          "| chainamp s | numpy s |")
    print("|---|---|---|---|---|---|---|---|")
    for k in (3, 4, 10, 100, 1000):
        for eps0 in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0):
            t = time.perf_counter()
            r = ca.amplify_shuffled(ca.mechanisms.randomized_response(k, eps0), n, delta=delta, progress=False)
            t_ca = time.perf_counter() - t
            t = time.perf_counter()
            ref = bisect(lambda e: third_value_delta(n, k, eps0, e), delta, eps0)
            t_np = time.perf_counter() - t
            low = r.lower_epsilon if r.lower is not None else float("nan")
            print(f"| {k} | {eps0:g} | {r.epsilon:.5f} ({r.method}) | {low:.5f} | {r.epsilon / low:.4f} | {ref:.5f} "
                  f"| {t_ca:.2f} | {t_np:.2f} |", flush=True)
    import resource

    print(f"peak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; load "
          f"{os.getloadavg()[0]:.2f}")


def _law(groups, K, rows):
    dist = {(0,) * K: 1.0}
    for v, count in groups:
        for _ in range(count):
            nd = defaultdict(float)
            for h, pr in dist.items():
                for y in range(K):
                    if rows[v][y]:
                        hh = list(h)
                        hh[y] += 1
                        nd[tuple(hh)] += pr * rows[v][y]
            dist = nd
    return dist


def _partitions(c, m, mx=None):
    mx = c if mx is None else mx
    if c == 0:
        yield ()
        return
    if m == 0:
        return
    for f in range(min(c, mx), 0, -1):
        for rest in _partitions(c - f, m - 1, f):
            yield (f,) + rest


def _describe(a: int, b: int, parts: tuple) -> str:
    """A dataset of the other users in words (a at x0, b at x1, third values with the counts in ``parts``)."""
    said = [w for w, c in (("x0", a), ("x1", b)) if c]
    if parts:
        said.append("one third value" if len(parts) == 1 else f"{len(parts)} third values")
    return " and ".join(said) if said else "nobody"


def brute(seed: int = 0, trials: int = 20) -> None:
    rng = np.random.default_rng(seed)
    kinds = defaultdict(int)
    for _ in range(trials):
        n, k, eps0 = int(rng.integers(3, 8)), int(rng.integers(3, 7)), float(rng.uniform(0.2, 4))
        d, o, N = math.exp(eps0) / (math.exp(eps0) + k - 1), 1 / (math.exp(eps0) + k - 1), n - 1
        epss = np.sort(rng.uniform(0, eps0, 6))
        res = {}
        for a in range(N + 1):
            for b in range(N + 1 - a):
                for parts in _partitions(N - a - b, k - 2):
                    K = 3 + len(parts)  # x0, x1, the third values used, the rest lumped
                    rows = []
                    for v in range(K - 1):
                        row = [o] * (K - 1) + [(k - 2 - len(parts)) * o]
                        row[v] = d
                        rows.append(row)
                    groups = [(0, a), (1, b)] + [(2 + j, c) for j, c in enumerate(parts)]
                    P, Q = _law(groups + [(0, 1)], K, rows), _law(groups + [(1, 1)], K, rows)
                    res[(a, b, parts)] = [max(sum(max(P[h] - math.exp(e) * Q.get(h, 0), 0) for h in P),
                                              sum(max(Q[h] - math.exp(e) * P.get(h, 0), 0) for h in Q)) for e in epss]
        for i in range(len(epss)):
            top = max(v[i] for v in res.values())
            if top > 1e-12:
                worst = [key for key, v in res.items() if v[i] >= top * (1 - 1e-9)]
                kinds[tuple(sorted({_describe(a, b, p) for a, b, p in worst}))] += 1
    for kind, count in sorted(kinds.items(), key=lambda t: -t[1]):
        print(count, "eps points, the worst datasets:", " | ".join(kind))


#: the largest window --scan-a builds for one group of users. At k = 100, eps0 = 5, n = 1000 a group's window has
#: 7.0e5 cells and the run peaked at 847 MB with its convolutions (about 1.2 kB a cell), so 3e6 cells is ~4 GB
MAX_CELLS = 3e6


def _group_law(m: int, probs: list, sig: float = 12.0):
    """Windowed law of the counts on (x0, x1, v) of m users with report law ``probs`` on (x0, x1, v, rest), with
    the window's offsets."""
    if m == 0:
        return np.ones((1, 1, 1)), (0, 0, 0)
    from scipy.special import gammaln
    wins = []
    for p in probs[:3]:
        mu, sd = m * p, math.sqrt(m * p * (1 - p)) + 1
        wins.append((max(0, int(mu - sig * sd)), min(m, int(mu + sig * sd) + 1)))
    cells = math.prod(hi - lo + 1 for lo, hi in wins)
    if cells > MAX_CELLS:  # about 8 bytes a cell, several arrays of it, and the FFT of the convolution after
        raise SystemExit(f"--scan-a: {m} users need a window of {cells:.3g} cells (limit {MAX_CELLS:.0e}); "
                         "use fewer users")
    g = np.meshgrid(*[np.arange(lo, hi + 1) for lo, hi in wins], indexing="ij")
    rest = m - sum(g)
    ok = rest >= 0
    rest = np.where(ok, rest, 0)
    lp = gammaln(m + 1) - sum(gammaln(x + 1) for x in g) - gammaln(rest + 1)
    lp = lp + sum(x * math.log(p) for x, p in zip(g, probs[:3])) + (rest * math.log(probs[3]) if probs[3] > 0 else 0)
    return np.where(ok if probs[3] > 0 else sum(g) == m, np.exp(lp), 0.0), tuple(lo for lo, _ in wins)


def scan_a(n: int, k: int, eps0: float, eps_list: list, a_list: list) -> None:
    from scipy.signal import fftconvolve
    o = 1.0 / (math.exp(eps0) + k - 1)
    d, rest = 1.0 - (k - 1) * o, (k - 3) * o
    t0 = time.time()
    print(f"n = {n}, k = {k}, eps0 = {eps0}: delta (both orders) of 'a at x0, the rest at one third value'")
    for a in a_list:
        others = np.ones((1, 1, 1))
        for m, probs in ((a, [d, o, o, rest]), (n - 1 - a, [o, o, d, rest])):
            law, _ = _group_law(m, probs)
            others = np.maximum(fftconvolve(others, law), 0.0)
        P = np.pad(others, 1)
        shift = [np.roll(P, 1, axis=ax) for ax in range(3)]
        P0 = d * shift[0] + o * shift[1] + o * shift[2] + rest * P
        P1 = o * shift[0] + d * shift[1] + o * shift[2] + rest * P
        vals = [max(np.maximum(P0 - math.exp(e) * P1, 0).sum(), np.maximum(P1 - math.exp(e) * P0, 0).sum())
                for e in eps_list]
        print(f"a = {a:5d}: " + "  ".join(f"eps {e:g}: {v:.4e}" for e, v in zip(eps_list, vals)), flush=True)
    print(f"{time.time() - t0:.1f} s, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--brute", action="store_true")
    ap.add_argument("--scan-a", nargs=4, metavar=("K", "EPS0", "EPS", "A"))
    args = ap.parse_args()
    if args.scan_a:
        k, e0, eps, alist = args.scan_a
        scan_a(args.users, int(k), float(e0), [float(x) for x in eps.split(",")], [int(x) for x in alist.split(",")])
    else:
        brute() if args.brute else gap_grid(args.users)
