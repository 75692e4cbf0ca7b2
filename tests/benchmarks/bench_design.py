"""Benchmark of the designs at scale (issue 20, item 4): the symmetric closed form beside the LP it replaces.

Plain script: ``python tests/benchmarks/bench_design.py``. Each row times one design call in this process
(wall seconds, best of ``--repeat``) and the process's peak RSS so far, with the machine's load average:

* ``optimal_post_processing`` of k-RR (M at eps = 3, target eps = 1): the closed form at k = 34, 1000, 10^6
  beside the pair LP (``symmetry=False, formulation="pairs"``, cvxpy + HiGHS) and the compact LP (block IPM) at
  k = 34 — the pair LP's nonzeros grow as k^4, so it is not run past ``--lp-max-k``;
* ``optimal_mixing_operator(N, 0.5)`` with the 0-1 loss: closed form at N = 60, 200 beside the LP at N = 40;
* ``optimal_post_processing`` of a dense random n x n M (rows ``u^2`` normalised, seed 0; target eps = 1, pure, all
  pairs; no symmetry): the compact LP solved by the block interior-point method at n = 20, 50, 100, beside the pair
  LP (cvxpy + HiGHS) at n = 20 (at n = 100 it has 9.9e7 nonzeros and is refused) and the same compact LP solved by
  Clarabel (``--clarabel``, the general sparse solver; slow);
* ``optimal_mixing_operator(N, 0.4)`` with a random loss and prior (not invariant under relabelling): Doeblin in
  closed form at N = 40, 200 beside its LP at N = 40; Dobrushin's LP at N = 40 (cvxpy + HiGHS) beside the same LP by
  constraint generation (``formulation="cuts"``, HiGHS warm started) at N = 40, 60, 100, 200, each in a child process
  stopped after ``--cuts-timeout`` seconds (its peak RSS is the children's, from ``getrusage``);
* the same Dobrushin design by the default route (``formulation="auto"``, i.e. ``"certify"``: the Doeblin closed form
  certified first by the sparse flow LP of :mod:`chainamp.design.lp_flow` (PDLP), else by multipliers on generated
  pairs) at N = 40, 60, 100, 200 (``--certify-n``), beside the previous route (pair generation alone, the flow step
  switched off) at N = 40, 60 (``--pairs-n``), each in a child process stopped after ``--cuts-timeout`` seconds, and
  the cvxpy LP at N = 40, all in the same run (``--only-mixing`` runs these rows and the LP and cuts rows at N = 40
  only).

Each row also shows the peak of Python/numpy allocations during a second, traced call (tracemalloc; skipped for calls
over 20 s; Clarabel's own memory is not counted there, only in the RSS column) and the 1-minute load average after
it. The seconds are those of the untraced call.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from chainamp import mechanisms
from chainamp.design import optimal_mixing_operator, optimal_post_processing
from chainamp.errors import SolverError


def best_time(func, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - start)
    return best, out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def traced(func, trace_below: float = 20.0):
    """Wall seconds and the result of one call (untraced), then the peak of traced allocations (MB) of a second call
    when the first took under ``trace_below`` seconds (tracemalloc slows numpy-heavy code by 30-50%), else nan."""
    start = time.perf_counter()
    out = func()
    secs = time.perf_counter() - start
    peak = float("nan")
    if secs < trace_below:
        tracemalloc.start()
        func()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return secs, out, peak


def random_mechanism(n: int) -> np.ndarray:
    M = np.random.default_rng(0).random((n, n)) ** 2
    return M / M.sum(axis=1, keepdims=True)


def row(label: str, secs: float, r, traced_mb: float) -> None:
    print(f"{label:<58}{secs:>9.3f}{r.objective:>14.10f}{r.dual_bound:>14.10f}{traced_mb:>10.0f}{peak_mb():>9.0f}"
          f"{os.getloadavg()[0]:>6.2f}")


def dense_rows(args) -> None:
    """The dense random M (no symmetry) and the non-invariant mixing designs."""
    print(f"{'design (no symmetry)':<58}{'seconds':>9}{'objective':>14}{'dual bound':>14}{'traced MB':>10}"
          f"{'RSS MB':>9}{'load':>6}")
    # warm-up: imports (threadpoolctl, scipy.sparse, cvxpy) are not timed
    optimal_post_processing(random_mechanism(4), 1.0, formulation="compact", progress=False)
    optimal_post_processing(random_mechanism(4), 1.0, formulation="pairs", progress=False)
    for n, form in ((20, "pairs"), (20, "compact"), (50, "compact"), (100, "compact")):
        M = random_mechanism(n)
        secs, r, mb = traced(lambda: optimal_post_processing(M, 1.0, formulation=form, progress=False))
        row(f"post-processing random {n}x{n} ({form}, {r.solver})", secs, r, mb)
    if args.clarabel:
        from chainamp.design import block_ipm

        real = block_ipm.solve

        def refuse(*a, **k):
            raise SolverError("benchmark: Clarabel forced")

        block_ipm.solve = refuse
        try:
            for n in (50, 100):
                M = random_mechanism(n)
                secs, r, mb = traced(lambda: optimal_post_processing(M, 1.0, formulation="compact", progress=False))
                row(f"post-processing random {n}x{n} (compact, {r.solver})", secs, r, mb)
        finally:
            block_ipm.solve = real
    for n, coef, form in ((40, "doeblin", "lp"), (40, "doeblin", "auto"), (200, "doeblin", "auto"),
                          (40, "dobrushin", "lp")):  # Dobrushin's default route: the certify rows below
        rng = np.random.default_rng(n)  # the same loss and prior for both rows at one N
        loss, prior = rng.random((n, n)), rng.dirichlet(np.ones(n))
        secs, r, mb = traced(lambda: optimal_mixing_operator(n, 0.4, coefficient=coef, loss=loss, prior=prior,
                                                              formulation=form, progress=False))
        row(f"mixing {coef} N = {n}, random loss ({r.solver or 'closed form'})", secs, r, mb)
    child_rows(args, "cuts", args.cuts_n)
    child_rows(args, "certify", args.certify_n)


def child_rows(args, kind: str, sizes) -> None:
    """Rows run in child processes with a timeout (``kind`` "cuts" or "certify")."""
    for n in sizes:
        cmd = [sys.executable, os.path.abspath(__file__), f"--child-{kind}", str(n)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.cuts_timeout)
            print(out.stdout.rstrip() or out.stderr.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            label = f"mixing dobrushin N = {n}, random loss ({kind})"
            print(f"{label:<58}{'> ' + str(int(args.cuts_timeout)):>9}{'no answer':>14}{'':>14}{'':>10}"
                  f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0:>9.0f}{os.getloadavg()[0]:>6.2f}")


def child_certify(n: int, pairs_only: bool = False) -> None:
    """One default-route (certified closed form) Dobrushin design (``--child-certify N``), printed as a row;
    ``pairs_only`` (``--child-pairs N``) with the flow certificate switched off (the route before it)."""
    if pairs_only:
        from chainamp.design import lp_flow

        lp_flow.certify_flow = lambda *a, **k: None
    rng = np.random.default_rng(n)  # the same loss and prior as the LP rows at this N
    loss, prior = rng.random((n, n)), rng.dirichlet(np.ones(n))
    optimal_mixing_operator(3, 0.4, loss=np.random.default_rng(0).random((3, 3)), progress=False)
    secs, r, mb = traced(lambda: optimal_mixing_operator(n, 0.4, loss=loss, prior=prior, max_lp_nonzeros=10**9,
                                                         progress=False), trace_below=10.0)
    how = "K_D" if "is optimal: multipliers" in r.notes[0] else "LP"
    via = "pairs" if pairs_only else ("flow" if r.solver and "flow" in r.solver else "pairs")
    row(f"mixing dobrushin N = {n}, random ({'old ' if pairs_only else ''}certify {how} by {via}, gap {r.gap:.0e})",
        secs, r, mb)


def mixing_rows(args) -> None:
    """The Dobrushin design with a random loss: the cvxpy LP and the entry cuts at N = 40 beside the default route."""
    print(f"{'design (no symmetry)':<58}{'seconds':>9}{'objective':>14}{'dual bound':>14}{'traced MB':>10}"
          f"{'RSS MB':>9}{'load':>6}")
    optimal_mixing_operator(4, 0.4, loss=np.random.default_rng(0).random((4, 4)), formulation="lp", progress=False)
    n = 40
    rng = np.random.default_rng(n)
    loss, prior = rng.random((n, n)), rng.dirichlet(np.ones(n))
    secs, r, mb = traced(lambda: optimal_mixing_operator(n, 0.4, loss=loss, prior=prior, formulation="lp",
                                                          progress=False))
    row(f"mixing dobrushin N = {n}, random loss ({r.solver}, cvxpy)", secs, r, mb)
    child_rows(args, "cuts", [40])
    child_rows(args, "pairs", args.pairs_n)
    child_rows(args, "certify", args.certify_n)


def child_cuts(n: int) -> None:
    """One constraint-generation design (``--child-cuts N``), printed as a row (run in a child with a timeout)."""
    rng = np.random.default_rng(n)  # the same loss and prior as the LP rows at this N
    loss, prior = rng.random((n, n)), rng.dirichlet(np.ones(n))
    optimal_mixing_operator(3, 0.4, loss=np.random.default_rng(0).random((3, 3)), formulation="cuts", progress=False)
    secs, r, _ = traced(lambda: optimal_mixing_operator(n, 0.4, loss=loss, prior=prior, formulation="cuts",
                                                         max_lp_nonzeros=10**9, progress=False), trace_below=0.0)
    row(f"mixing dobrushin N = {n}, random loss (cuts, gap {r.gap:.1e})", secs, r, float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lp-max-k", type=int, default=34)
    parser.add_argument("--clarabel", action="store_true", help="also time the compact LP with Clarabel (slow)")
    parser.add_argument("--only-dense", action="store_true", help="only the rows without symmetry")
    parser.add_argument("--cuts-n", type=int, nargs="*", default=[40, 60, 100, 200],
                        help="N of the constraint-generation Dobrushin rows")
    parser.add_argument("--cuts-timeout", type=float, default=120.0, help="seconds before a cuts row is stopped")
    parser.add_argument("--certify-n", type=int, nargs="*", default=[40, 60, 100, 200],
                        help="N of the default-route (certified closed form) Dobrushin rows")
    parser.add_argument("--pairs-n", type=int, nargs="*", default=[40, 60],
                        help="N of the rows of the default route without its flow certificate (pair generation only)")
    parser.add_argument("--only-mixing", action="store_true", help="only the non-invariant Dobrushin rows")
    parser.add_argument("--child-cuts", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-certify", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-pairs", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_cuts is not None:
        child_cuts(args.child_cuts)
        return
    if args.child_certify is not None:
        child_certify(args.child_certify)
        return
    if args.child_pairs is not None:
        child_certify(args.child_pairs, pairs_only=True)
        return
    if args.only_mixing:
        print(f"design benchmark (Dobrushin, random loss); load average {os.getloadavg()[0]:.2f} at start")
        mixing_rows(args)
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
        return
    if args.only_dense:
        print(f"design benchmark; load average {os.getloadavg()[0]:.2f} at start")
        dense_rows(args)
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
        return
    print(f"design benchmark; load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'design':<46}{'seconds':>9}{'objective':>14}{'dual bound':>14}{'peak MB':>9}")
    for k, symmetry, form in ((34, True, "auto"), (34, False, "pairs"), (34, False, "compact"), (1000, True, "auto"),
                              (10**6, True, "auto")):
        if not symmetry and k > args.lp_max_k:
            continue
        M = mechanisms.randomized_response(k, 3.0)
        secs, r = best_time(lambda: optimal_post_processing(M, 1.0, symmetry=symmetry, formulation=form,
                                                            progress=False), 1 if not symmetry else args.repeat)
        label = f"post-processing {k}-RR ({'closed form' if symmetry else form + ' LP'})"
        print(f"{label:<46}{secs:>9.3f}{r.objective:>14.10f}{r.dual_bound:>14.10f}{peak_mb():>9.0f}")
    for n, symmetry in ((40, False), (60, True), (200, True)):
        secs, r = best_time(lambda: optimal_mixing_operator(n, 0.5, symmetry=symmetry, progress=False),
                            1 if not symmetry else args.repeat)
        label = f"mixing Dobrushin N = {n} ({'closed form' if symmetry else 'LP'})"
        print(f"{label:<46}{secs:>9.3f}{r.objective:>14.10f}{r.dual_bound:>14.10f}{peak_mb():>9.0f}")
    dense_rows(args)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
