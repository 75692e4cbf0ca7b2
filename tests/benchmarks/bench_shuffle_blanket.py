"""Benchmark: the blanket method on general finite channels (the lattice ladder) and the clone pair at n = 1e8,
against chainamp before the ladder (the base commit, run in a subprocess of the same run from its own directory,
with a time limit) and
Balle, Bell, Gascon and Nissim 2019's generic Hoeffding bound from the local epsilon (a published comparison, not a
certificate), with peak memory and the machine's load.

Run: PYTHONPATH=$PWD python tests/benchmarks/bench_shuffle_blanket.py [BASE_DIR]

BASE_DIR holds the package of the commit to compare with (default /tmp/chainamp_base; make it with
``git archive c8d74ae chainamp | tar -x -C /tmp/chainamp_base``); without it the "before" columns are skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import resource

import numpy as np

import chainamp as ca
from chainamp.mechanisms import unary_encoding
from chainamp.shuffle import balle_hoeffding_epsilon, generic_epsilon

BASE = sys.argv[1] if len(sys.argv) > 1 else "/tmp/chainamp_base"
LIMIT = 60.0  # seconds allowed to the base commit per figure

CHANNELS = {
    "OUE k=8 eps0=2 (256 outputs)": "np.asarray(unary_encoding(8, 2.0).matrix)",
    "random 8x4": "np.random.default_rng(3).dirichlet(np.ones(4), size=8)",
    "SUE k=12 eps0=2 (4096 outputs)": "np.asarray(unary_encoding(12, 2.0, 'SUE').matrix)",
    "random 4x2048 (Dirichlet 2)": "np.random.default_rng(1).dirichlet(np.ones(2048) * 2.0, size=4)",
}


def _base(expr: str, code: str) -> str:
    """``code`` (printing one number) run on the base commit; its time or '>LIMIT s'."""
    if not os.path.isdir(os.path.join(BASE, "chainamp")):
        return "(no base)"
    prog = ("import time, numpy as np\nfrom chainamp.mechanisms import unary_encoding\n"
            f"from chainamp.shuffle import blanket_epsilon, generic_epsilon\nR = {expr}\nt = time.perf_counter()\n"
            f"v = {code}\nprint(f'{{v:.6g}} in {{time.perf_counter() - t:.2f}} s')")
    try:
        out = subprocess.run([sys.executable, "-c", prog], env={**os.environ, "PYTHONPATH": BASE}, cwd=BASE,
                             timeout=LIMIT, capture_output=True, text=True)
        return out.stdout.strip() or out.stderr.strip().splitlines()[-1][:40]
    except subprocess.TimeoutExpired:
        return f"> {LIMIT:.0f} s"


def _measure(fn):
    """(result, seconds, the process's peak resident memory so far in MB: rows grow, so a rise is the row's)."""
    t = time.perf_counter()
    val = fn()
    dt = time.perf_counter() - t
    return val, dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    print("load:", os.getloadavg())
    print(f"{'channel':>32} {'n':>10} | {'build s':>7} {'eps@1e-6':>10} {'eps_at(1e-7) s':>14} {'MB':>6} | "
          f"{'base: blanket_epsilon(1e-6)':>28} | {'Hoeffding (eps0)':>16}")
    for name, expr in CHANNELS.items():
        R = eval(expr, {"np": np, "unary_encoding": unary_encoding})
        eps0 = ca.ldp_guarantee(ca.MarkovOperator(R)).epsilon
        for n in (10**3, 10**5, 10**8):
            rep, tb, mb = _measure(lambda: ca.amplify_shuffled(R, n, method="blanket", progress=False))
            e7, te, me = _measure(lambda: rep.epsilon_at(1e-7))
            base = _base(expr, f"blanket_epsilon(R, {n}, 1e-6)") if n <= 10**5 or "8x4" in name else "(skipped)"
            try:
                hoeff = f"{balle_hoeffding_epsilon(eps0, n, 1e-6):.6g}"
            except Exception as exc:  # outside the published bound's range
                hoeff = type(exc).__name__
            print(f"{name:>32} {n:>10} | {tb:7.2f} {rep.epsilon:10.6g} {te:14.2f} {max(mb, me):6.1f} | {base:>28} | "
                  f"{hoeff:>16}")
    print("load:", os.getloadavg())
    print(f"{'generic (DP(eps0))':>32} {'n':>10} | {'eps@1e-6':>10} {'s':>6} {'MB':>6} | {'base: generic_epsilon':>28}")
    for eps0 in (4.0, 1.0):
        for n in (10**7, 10**8):
            v, t, m = _measure(lambda: generic_epsilon(eps0, n, 1e-6))
            base = _base("None", f"generic_epsilon({eps0}, {n}, 1e-6)")
            print(f"{f'eps0={eps0:g}':>32} {n:>10} | {v:10.6g} {t:6.2f} {m:6.1f} | {base:>28}")
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
