"""Command-line interface: ``chainamp`` / ``python -m chainamp``.

Presentation only: every command calls the public API and formats its result.
Exit codes: 0 success (every claim certified, for ``audit``), 1 a claim not
certified, 2 invalid input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence

import numpy as np

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_CLAIM_FAILED, EXIT_INVALID = 0, 1, 2


def _demo(args: argparse.Namespace) -> int:
    import networkx as nx

    import chainamp as ca
    from chainamp import mechanisms

    ops = {
        "5-ary randomized response, eps=1": mechanisms.randomized_response(5, 1.0),
        "binary randomized response, eps=0.5": mechanisms.binary_randomized_response(0.5),
        "lazy random walk on the karate club (3 steps)": ca.MarkovOperator.random_walk(
            nx.karate_club_graph(), laziness=0.5) ** 3,
        "RAPPOR instantaneous bit (p=0.5, q=0.75)": mechanisms.rappor_instantaneous(0.5, 0.75),
    }
    rows = []
    for name, K in ops.items():
        rows.append([name, f"{K.shape[0]}x{K.shape[1]}", ca.dobrushin(K).gamma, ca.dobrushin(K, epsilon=1.0).gamma,
                     ca.doeblin(K).gamma, ca.ultra_mixing(K).gamma, ca.ldp_guarantee(K).epsilon])
    from ._table import text_table

    print(text_table(["operator K", "shape", "Dobrushin", "(g,1)-Dobrushin", "Doeblin", "ultra-mixing", "LDP eps"],
                     rows, title="Mixing coefficients (Definition 1 of Balle et al. 2019)"))
    print()
    K = mechanisms.randomized_response(5, 1.0)
    print(ca.amplify(ca.DP(2.0), K))
    print()
    print(ca.amplify(mechanisms.randomized_response(5, 2.0), K))
    return EXIT_OK


def _load_matrix(path: str):
    from . import io

    return io.load_operator(path)


def _coefficients(args: argparse.Namespace) -> int:
    import chainamp as ca

    K = _load_matrix(args.matrix)
    eps = args.epsilon
    res = {"dobrushin": ca.dobrushin(K), "doeblin": ca.doeblin(K), "ultra_mixing": ca.ultra_mixing(K)}
    if eps is not None:
        res["hockey_stick"] = ca.dobrushin(K, epsilon=eps)
    ldp = ca.ldp_guarantee(K)
    chain = ca.analyze_chain(K) if K.is_square else None
    if args.json:
        out = {name: _result_dict(r) for name, r in res.items()}
        out["ldp_epsilon"] = _num(ldp.epsilon)
        if chain is not None:
            out["chain"] = {"irreducible": chain.irreducible, "period": _num(chain.period),
                            "spectral_gap": _num(chain.spectral_gap)}
        print(json.dumps(out, indent=2))
        return EXIT_OK
    from ._table import text_table

    rows = [[name, r.gamma, str(getattr(r, "pair", None) or "-"), str(getattr(r, "output", "") or "")]
            for name, r in res.items()]
    print(text_table(["coefficient", "gamma", "pair", "output"], rows, title=f"{args.matrix}: {K!r}"))
    print(f"K is {ldp.epsilon:.6g}-LDP (pure)")
    if chain is not None:
        print()
        print(chain)
    return EXIT_OK


def _num(v):
    if isinstance(v, (float, np.floating)) and math.isinf(v):
        return "inf"
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


def _result_dict(r) -> dict:
    out = {}
    for k in ("gamma", "epsilon", "pair", "output", "ratio", "test_set", "method", "source"):
        if hasattr(r, k):
            v = getattr(r, k)
            out[k] = [_num(x) for x in v] if isinstance(v, tuple) else _num(v)
    return out


def _amplify(args: argparse.Namespace) -> int:
    import chainamp as ca

    K = [_load_matrix(p) for p in args.operator]
    report = ca.amplify(ca.DP(args.epsilon, args.delta), K if len(K) > 1 else K[0])
    print(json.dumps(report.to_dict(), indent=2) if args.json else report)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = argparse.ArgumentParser(
        prog="chainamp",
        description="Certified privacy amplification by stochastic post-processing.",
        epilog="example: chainamp amplify --epsilon 2 --delta 1e-6 K.csv")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="a short tour: coefficients of a few operators and two reports",
                       description="Print the mixing coefficients of a few operators and two amplification reports.",
                       epilog="example: chainamp demo")
    d.set_defaults(func=_demo)

    c = sub.add_parser("coefficients", help="the four coefficients of a matrix, with witnesses",
                       description="Mixing coefficients (Definition 1) with witnesses and, for a square "
                                   "matrix, the chain analysis.",
                       epilog="example: chainamp coefficients K.csv --epsilon 1.0 --json")
    c.add_argument("matrix", help="a CSV or NPY file holding a row-stochastic matrix")
    c.add_argument("--epsilon", type=float, default=None, help="also the (gamma, epsilon)-Dobrushin coefficient")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=_coefficients)

    a = sub.add_parser("amplify", help="certified (eps', delta') for K o M with M (eps, delta)-DP",
                       description="Every certified bound for a black-box (epsilon, delta)-DP input followed by "
                                   "the given operator(s), applied in order.",
                       epilog="example: chainamp amplify --epsilon 2 --delta 1e-6 K1.csv K2.npy")
    a.add_argument("operator", nargs="+", help="CSV or NPY files of the post-processing operators, in order")
    a.add_argument("--epsilon", type=float, required=True, help="epsilon of the input mechanism")
    a.add_argument("--delta", type=float, default=0.0, help="delta of the input mechanism (default 0)")
    a.add_argument("--json", action="store_true", help="machine-readable output")
    a.set_defaults(func=_amplify)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    from .errors import ChainampError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ChainampError, ValueError, TypeError, OSError) as exc:
        print(f"chainamp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
