"""Many reports (issue 12): eps at delta = 1e-6 after T fresh reports of the longitudinal GRR chain,
chainamp.compose side by side with dp-accounting's own routes, in one run; not part of the test run.

    PYTHONPATH=. python tests/benchmarks/bench_compose.py          # all routes, T = 10, 100 and 1000
    PYTHONPATH=. python tests/benchmarks/bench_compose.py --only chainamp --T 1000   # one route (timing a process)

The chain: k = 4, first stage GRR at eps = 2 (the memoized value), second stage as multi-freq-ldpy's L-GRR
sets it for eps_1 = 0.5 (``chainamp.mechanisms.from_multi_freq_ldpy``); one report is exactly eps' = 0.428.
Routes:

* ``chainamp``: ``chainamp.compose([M K], counts=[T])`` - the exact dominating pair of the finite pipeline,
  composed through dp-accounting's pessimistic PLDs (certified);
* ``dpa-point``: dp-accounting composing the single point (eps', 0) of one report
  (``from_privacy_parameters``), the route a user without chainamp takes;
* ``dpa-pair``: dp-accounting composing ONE worst pair of rows of M K (``from_two_probability_mass_functions``,
  pessimistic): valid here only because the chain is symmetric; for a general pipeline one pair is no bound;
* ``exact``: the exact worst-pair value in closed form (the pair's privacy loss takes two values, so the
  T-fold loss is binomial): the truth every certified route must stay at or above.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from scipy.stats import binom

import chainamp as ca

DELTA = 1e-6


def chain():
    L = ca.mechanisms.from_multi_freq_ldpy("L-GRR", 4, 2.0, eps_1=0.5)
    return L.mechanism.matrix @ L.instantaneous.matrix


def exact_worst_pair(P: np.ndarray, T: int) -> float:
    """eps(delta) of the T-fold product of the rows (0, 1) of P (by symmetry every pair of distinct values is
    the same): the loss takes the values +-l on two outcomes and 0 elsewhere, so its T-fold sum is trinomial."""
    p, q = P[0], P[1]
    lr = np.log(p / q)
    support = [(np.sum(p[lr > 1e-12]), np.sum(q[lr > 1e-12]), lr[lr > 1e-12].max()),
               (np.sum(p[lr < -1e-12]), np.sum(q[lr < -1e-12]), lr[lr < -1e-12].min())]
    (pp, qp, l), (pn, qn, _) = support
    pz, qz = 1 - pp - pn, 1 - qp - qn

    def delta(eps: float) -> float:
        total = 0.0
        for a in range(T + 1):  # a outcomes of loss +l, b of -l, the rest 0
            b = np.arange(T - a + 1)
            loss = (a - b) * l
            keep = loss > eps
            if not keep.any():
                continue
            b = b[keep]
            logc = (math.lgamma(T + 1) - math.lgamma(a + 1) - np.vectorize(math.lgamma)(b + 1)
                    - np.vectorize(math.lgamma)(T - a - b + 1))
            lp = logc + a * math.log(pp) + b * math.log(pn) + (T - a - b) * math.log(pz)
            lq = logc + a * math.log(qp) + b * math.log(qn) + (T - a - b) * math.log(qz)
            total += float(np.sum(np.exp(lp) - math.exp(eps) * np.exp(lq)))
        return total

    lo, hi = 0.0, T * l
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delta(mid) > DELTA else (lo, mid)
    return hi


def route_chainamp(P: np.ndarray, T: int) -> float:
    return ca.compose([ca.MarkovOperator(P)], counts=[T]).epsilon(DELTA)


def route_dpa_point(P: np.ndarray, T: int) -> float:
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    eps1 = ca.privacy_profile(ca.MarkovOperator(P)).epsilon(0.0)
    one = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(eps1, 0.0))
    return one.self_compose(T).get_epsilon_for_delta(DELTA)


def route_dpa_pair(P: np.ndarray, T: int) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld

    p, q = P[0], P[1]
    one = pld.from_two_probability_mass_functions(
        dict(enumerate(np.log(p))), dict(enumerate(np.log(q))), pessimistic_estimate=True,
        value_discretization_interval=1e-4)
    return one.self_compose(T).get_epsilon_for_delta(DELTA)


ROUTES = {"chainamp": route_chainamp, "dpa-point": route_dpa_point, "dpa-pair": route_dpa_pair,
          "exact": exact_worst_pair}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(ROUTES))
    ap.add_argument("--T", type=int, nargs="*", default=[10, 100, 1000])
    ap.add_argument("--repeat", type=int, default=3, help="runs per route and T (the best is printed)")
    args = ap.parse_args()
    P = chain()
    print(f"longitudinal GRR k = 4 (eps_perm = 2, eps_1 = 0.5): one report eps' = "
          f"{ca.privacy_profile(ca.MarkovOperator(P)).epsilon(0.0):.4f}; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    names = [args.only] if args.only else list(ROUTES)
    for name in names:  # warm-up: imports (dp-accounting, scipy.fft) are not part of any route's time
        ROUTES[name](P, 2)
    for T in args.T:
        for name in names:
            best = math.inf
            for _ in range(args.repeat if name != "exact" else 1):  # the best of a few runs (a shared machine)
                t = time.perf_counter()
                eps = ROUTES[name](P, T)
                best = min(best, time.perf_counter() - t)
            print(f"T = {T:5d}  {name:10s} eps(1e-6) = {eps:9.4f}   {best:8.4f} s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
