"""Kronecker-product mechanisms at deployed sizes (issue 10, item 1); not part of the test run.

    PYTHONPATH=. python tests/benchmarks/bench_structured_products.py

Goals: ``rappor_pipeline(m=128, h=2)``: exact profile of one report and of the permanent response in under
1 s, pure epsilon = the paper's eps_1 / eps_inf; OUE / SUE at k = 10,000 and 1,000,000: exact profile,
coefficients and the amplify report after a per-bit randomized response, each under 1 s. Baseline in the same
run: the dense path where a dense matrix is feasible (RAPPOR m = 10: 2^10 outputs; unary encodings k = 10:
2^10 outputs), next to the structured path at the same size.
"""

from __future__ import annotations

import os
import time

import chainamp as ca
from chainamp import mechanisms
from chainamp.operators import KroneckerOperator


def timed(fn, repeat=3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def rappor(m: int, structured: bool):
    def run():
        R = mechanisms.rappor_pipeline(m, 2, structured=structured)
        return R, ca.privacy_profile(R.one_report), ca.privacy_profile(R.mechanism)
    return run


def unary(k: int, kind: str, dense: bool):
    def run():
        U = mechanisms.unary_encoding(k, 1.0, kind)
        K = KroneckerOperator.power(mechanisms.binary_randomized_response(1.0), k)
        if dense:
            U, K = U.densify(), K.densify()
        prof = ca.privacy_profile(U)
        coeffs = (ca.dobrushin(U).gamma, ca.doeblin(U).gamma, ca.ultra_mixing(U).gamma)
        try:
            best = ca.amplify(U, K, delta=1e-6).best.epsilon
        except (OverflowError, ca.ResourceLimitError) as exc:  # 2^k outputs beyond the float range (see README)
            best = f"amplify failed: {type(exc).__name__}: {exc}"
        return prof.pure_epsilon, coeffs, best
    return run


def main() -> None:
    from chainamp._numerics import progress_mode

    with progress_mode("off"):
        run_all()


def run_all() -> None:
    print(f"[{load()}]")
    print("RAPPOR, h = 2, f = 0.5, p = 0.5, q = 0.75: exact profiles of one report and of the permanent response")
    for m, structured in ((10, False), (10, True), (128, True)):
        t, (R, one, perm) = timed(rappor(m, structured), repeat=3 if structured else 1)
        print(f"  m = {m:4d} {'structured' if structured else 'dense     '}: {t:8.3f} s   eps_1 = {one.pure_epsilon:.15f} "
              f"(paper {R.epsilon_one:.15f})   eps_inf = {perm.pure_epsilon:.15f} (paper {R.epsilon_inf:.15f})")
    print(f"[{load()}]")
    print("unary encodings, eps = 1: exact profile + Dobrushin/Doeblin/ultra-mixing + amplify after per-bit RR(1)")
    for kind in ("OUE", "SUE"):
        for k, dense in ((10, True), (10, False), (12, False), (10_000, False), (1_000_000, False)):
            t, (pure, coeffs, best) = timed(unary(k, kind, dense), repeat=1 if dense or k > 10_000 else 3)
            what = "dense     " if dense else "structured"
            best_s = f"{best:.6f}" if isinstance(best, float) else best
            print(f"  {kind} k = {k:9d} {what}: {t:8.3f} s   pure eps = {pure:.15f}   coefficients = "
                  f"{tuple(round(c, 6) for c in coeffs)}   amplify best eps' = {best_s}")
    print(f"[{load()}]")


if __name__ == "__main__":
    main()
