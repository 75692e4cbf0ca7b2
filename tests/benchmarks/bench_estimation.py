"""Frequency estimation on structured channels (issue 20 item 3), each goal beside its baseline in the same run.

    PYTHONPATH=. python tests/benchmarks/bench_estimation.py

Goals: closed forms for k-RR and unary encodings (estimate, variances, mse, structured covariance) at k = 10^6 in
under 1 s and 100 MB; IBU on OUE k = 16 converged in under 2 s. Baselines: pure-ldp's servers (DEServer, UEServer)
fed the same counts, Wang et al.'s one-line formulas in numpy, multi-freq-ldpy's UE IBU (on its stand-in k x k
channel), and chainamp's own dense path (the channel passed as a plain matrix: what every channel got before).
Each line gives the best wall time of a few runs, the tracemalloc peak of one run (numpy's allocations are
traced) and the machine load.
"""

from __future__ import annotations

import math
import os
import time
import tracemalloc
import warnings

import numpy as np

from chainamp import MarkovOperator, mechanisms
from chainamp.utility import FrequencyEstimator


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} cores)"


def measure(fn, repeat: int = 3):
    """(best seconds, tracemalloc peak in MB of the last run, result)."""
    best, out = math.inf, None
    for _ in range(repeat):
        tracemalloc.start()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    return best, peak, out


def show(name: str, t: float, mb: float, extra: str = "") -> None:
    print(f"  {name:62s} {t:8.4f} s  {mb:8.1f} MB  {extra}")


def bench_krr(k: int, n: int, eps: float = 2.0) -> None:
    from pure_ldp.frequency_oracles import direct_encoding as de
    print(f"k-RR, k = {k}, n = {n}, eps = {eps}   [{load()}]")
    rng = np.random.default_rng(0)
    counts = rng.multinomial(n, np.full(k, 1.0 / k)).astype(float)
    f = np.full(k, 1.0 / k)
    R = mechanisms.randomized_response(k, eps)

    def ours():
        est = FrequencyEstimator(R)
        return est.estimate(counts).frequencies, est.mse(f, n), est.variances(f, n, population="fixed")

    t, mb, (fr, mse, var) = measure(ours)
    show("chainamp: FrequencyEstimator + estimate + mse + variances", t, mb, f"mse {mse:.6g}")

    def pure():
        server = de.DEServer(eps, k)
        server.aggregated_data = counts.copy()
        server.n = n
        return server.estimate_all(range(1, k + 1), suppress_warnings=True) / n

    t, mb, theirs = measure(pure)
    show("pure-ldp DEServer.estimate_all (same counts)", t, mb, f"max |diff| {np.abs(theirs - fr).max():.1e}")
    p, q = R.diagonal, R.off_diagonal

    def formula():
        return (counts / n - q) / (p - q), q * (1 - q) / (n * (p - q) ** 2) + f * (1 - p - q) / (n * (p - q))

    t, mb, (fw, vw) = measure(formula)
    show("numpy: Wang et al.'s estimate and variance formulas", t, mb, f"max rel |var diff| "
         f"{np.abs(var / vw - 1).max():.1e}")
    t, mb, cov = measure(lambda: FrequencyEstimator(R).covariance(f, n, structured=True))
    show("chainamp: covariance(structured=True)", t, mb, f"rank {cov.rank}")
    if k <= 1000:
        dense = MarkovOperator(R.matrix)
        t, mb, _ = measure(lambda: FrequencyEstimator(dense).mse(f, n), repeat=1)
        show("chainamp dense path (a plain 1000 x 1000 matrix: SVD), before", t, mb)


def bench_oue(k: int, n: int, eps: float = 2.0) -> None:
    from pure_ldp.frequency_oracles import unary_encoding as ue
    print(f"OUE support counts, k = {k}, n = {n}, eps = {eps}   [{load()}]")
    U = mechanisms.unary_encoding(k, eps, "OUE")
    rng = np.random.default_rng(1)
    p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
    f = np.full(k, 1.0 / k)
    C = rng.binomial(n, q + f * (p - q)).astype(float)

    def ours():
        est = FrequencyEstimator(U, statistic="support")
        return est.estimate_support(C, n).frequencies, est.mse(f, n), est.variances(f, n)

    t, mb, (fr, mse, _) = measure(ours)
    show("chainamp: FrequencyEstimator + estimate_support + mse + variances", t, mb, f"mse {mse:.6g}")

    def pure():
        server = ue.UEServer(eps, k, use_oue=True)
        server.aggregated_data = C.copy()
        server.n = n
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return server.estimate_all(range(1, k + 1), suppress_warnings=True) / n

    t, mb, theirs = measure(pure, repeat=1)
    show("pure-ldp UEServer.estimate_all (same support counts)", t, mb, f"max |diff| {np.abs(theirs - fr).max():.1e}")
    t, mb, _ = measure(lambda: ((C / n - q) / (p - q), q * (1 - q) / (n * (p - q) ** 2) + f * (1 - p - q) / (n * (p - q))))
    show("numpy: Wang et al.'s formulas", t, mb)


def bench_oue16(eps: float = 2.0, n: int = 20_000) -> None:
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_IBU
    k = 16
    print(f"OUE k = 16, eps = {eps}, n = {n}: least squares over 65,536 outputs and IBU   [{load()}]")
    U = mechanisms.unary_encoding(k, eps, "OUE")
    f = np.r_[0.5, 0.3, 0.2, np.zeros(k - 3)]
    t, mb, mse = measure(lambda: FrequencyEstimator(U).mse(f, n), repeat=1)
    show("chainamp: FrequencyEstimator(OUE 16).mse (before: MemoryError)", t, mb, f"mse {mse:.6g}")
    rng = np.random.default_rng(0)
    values = rng.choice(k, size=n, p=f)
    p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
    bits = (rng.random((n, k)) < q).astype(int)
    bits[np.arange(n), values] = (rng.random(n) < p).astype(int)
    reports: dict = {}
    for row in map(tuple, bits.tolist()):
        reports[row] = reports.get(row, 0) + 1
    t, mb, r = measure(lambda: FrequencyEstimator(U, method="ibu").estimate(reports))
    show("chainamp IBU, exact likelihood of the observed reports", t, mb,
         f"converged {r.converged} after {r.iterations} EM updates, gap {r.likelihood_gap:.1e}")
    t, mb, theirs = measure(lambda: UE_Aggregator_IBU(list(bits), k, eps, optimal=True))
    show("multi-freq-ldpy UE_Aggregator_IBU (stand-in k x k channel)", t, mb,
         f"max |diff| {np.abs(theirs - r.frequencies).max():.3f} (a different likelihood)")
    dense = MarkovOperator(U.matrix, inputs=U.inputs, outputs=U.outputs)
    counts = np.zeros(2**k)
    for y, c in reports.items():
        counts[int("".join(map(str, y)), 2)] = c
    t, mb, rd = measure(lambda: FrequencyEstimator(dense, method="ibu").estimate(counts), repeat=1)
    show("chainamp IBU, dense 16 x 65,536 channel (same accelerated EM)", t, mb,
         f"max |diff| {np.abs(rd.frequencies - r.frequencies).max():.1e}")


if __name__ == "__main__":
    bench_krr(1000, 10**5)
    bench_krr(10**6, 10**7)
    bench_oue(10**6, 10**7)
    bench_oue16()
