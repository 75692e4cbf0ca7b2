"""Command-line interface: ``chainamp`` / ``python -m chainamp``.

Presentation only: every command calls the public API and formats its result.
Human-readable tables by default, ``--json`` for machines, ``--report out.html``
or ``out.md`` for a standalone report with plots (:func:`chainamp.report.write_report`).

Exit codes: 0 success (every claim certified, for ``audit``), 1 a claim not
certified, 2 invalid input (one line on stderr naming the file, the field and
the problem; never a traceback), or a step refused by the memory limit
(``--memory-limit``, default half the available memory) or out of memory (one line),
3 the results were printed but the ``--report`` file could not be drawn (a fault of
chainamp's report writer, not of the input: one line naming the error).
Progress goes to stderr (:mod:`.cli_progress`): tqdm bars on a terminal, plain
periodic lines otherwise, nothing with ``--no-progress``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# the helpers cli_design.py shares live below both modules
from .cli_common import (EXIT_CLAIM_FAILED, EXIT_INVALID, EXIT_OK, EXIT_REPORT_FAILED, _check_delta_option,
                         _check_epsilon_option, _check_report_path, _check_row_sum_atol, _emit, _fmt, _num,
                         _ReportFailure, _row_sum_option, _UsageError, _wrap)

__all__ = ["main", "build_parser"]

EXIT_SIGPIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away


# --------------------------------------------------------------------------- demo
def _demo(args: argparse.Namespace) -> int:
    import networkx as nx

    import chainamp as ca
    from chainamp import mechanisms

    from .._numerics import DISPLAY_ZERO_ATOL, text_table

    ops = {
        "5-ary randomized response, eps=1": mechanisms.randomized_response(5, 1.0),
        "binary randomized response, eps=0.5": mechanisms.binary_randomized_response(0.5),
        "lazy random walk on the karate club (3 steps)": ca.MarkovOperator.random_walk(
            nx.karate_club_graph(), laziness=0.5) ** 3,
        "RAPPOR instantaneous bit (p=0.5, q=0.75)": mechanisms.rappor_instantaneous(0.5, 0.75),
    }
    def shown(value: float):  # a certified upper bound at rounding level reads as zero (the number is unchanged)
        return "\u2248 0" if 0.0 < value <= DISPLAY_ZERO_ATOL else value

    rows = []
    for name, K in ops.items():
        rows.append([name, f"{K.shape[0]}x{K.shape[1]}"] + [shown(v) for v in (
            ca.dobrushin(K).gamma, ca.dobrushin(K, epsilon=1.0).gamma, ca.doeblin(K).gamma, ca.ultra_mixing(K).gamma,
            ca.ldp_guarantee(K).epsilon)])
    header = ["operator K", "shape", "Dobrushin", "(gamma, 1)-Dobrushin", "Doeblin", "ultra-mixing", "LDP eps"]
    print(text_table(header, rows, title="Mixing coefficients (Definition 1 of Balle et al. 2019)"))
    if any("\u2248 0" in map(str, r) for r in rows):
        print(f"\u2248 0: a certified upper bound at rounding level (at most {DISPLAY_ZERO_ATOL:g}; the exact value "
              "lies between 0 and it)")
    print()
    K = mechanisms.randomized_response(5, 1.0)
    print(ca.amplify(ca.DP(2.0), K))
    print()
    print(ca.amplify(mechanisms.randomized_response(5, 2.0), K))
    print()
    print(_next_step())
    return EXIT_OK


def _next_step() -> str:
    """Where to go after the demo: a shipped pipeline file when one is reachable, else the help."""
    rel = os.path.join("datasets", "two_stage_rr", "pipeline.toml")
    if os.path.isfile(rel):
        return f"Next: chainamp audit {rel}   (see chainamp audit --help)"
    repo = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), rel)
    if os.path.isfile(repo):  # an editable install run from another folder
        return f"Next: chainamp audit {repo}   (see chainamp audit --help)"
    return "Next: chainamp audit --help   (a pipeline file describes M, the steps K and the claims to check)"


# --------------------------------------------------------------------------- coefficients
@dataclass(frozen=True)
class _CoefficientSummary:
    """The four coefficients of one matrix with witnesses, its LDP level and chain analysis."""

    path: str
    operator: Any
    results: dict
    ldp_epsilon: float
    chain: Any

    @property
    def reports(self) -> dict:
        """What ``--report`` draws: the operator as a heat map."""
        return {"the operator K": self.operator}

    def _rows(self):
        rows = []
        for name, r in self.results.items():
            if name == "doeblin":
                wit = "omega = " + _short(r.witness) if r.witness is not None else "-"
            elif name == "ultra_mixing":
                wit = f"pair {r.pair!r}, output {r.output!r}, ratio {r.ratio:.6g}" if r.pair is not None else "-"
            else:
                wit = f"pair {r.pair!r}, test set {_short(r.test_set)}" if r.pair is not None else "-"
            rows.append([name.replace("_", "-") if name != "hockey_stick" else f"(gamma, {r.epsilon:g})-Dobrushin",
                         r.gamma, wit])
        return rows

    def __str__(self) -> str:
        from .._numerics import text_table

        out = text_table(["coefficient", "gamma", "witness"], self._rows(),
                         title=f"{self.path}: {self.operator!r}")
        out += f"\nK is {self.ldp_epsilon:.6g}-LDP (pure)"
        if self.chain is not None:
            out += "\n\n" + str(self.chain)
        return out

    def to_dict(self) -> dict:
        res = {}
        for name, r in self.results.items():
            res[name] = {k: _num(getattr(r, k)) for k in ("gamma", "epsilon", "pair", "test_set", "output", "ratio",
                                                           "method") if hasattr(r, k)}
            if name == "doeblin":
                res[name]["witness"] = None if r.witness is None else _num(np.asarray(r.witness))
        out = {"file": self.path, "shape": list(self.operator.shape), "coefficients": res,
               "ldp_epsilon": _num(self.ldp_epsilon), "chain": None}
        if self.chain is not None:
            c = self.chain
            out["chain"] = {"irreducible": c.is_irreducible, "period": c.period, "aperiodic": c.is_aperiodic,
                            "communicating_classes": len(c.communicating_classes),
                            "recurrent_classes": len(c.recurrent_classes),
                            "transient_states": len(c.transient_states),
                            "spectral_gap": _num(c.spectral_gap), "relaxation_time": _num(c.relaxation_time),
                            "stationary_distributions": _num(np.asarray(c.stationary_distributions))}
        return out


def _short(values, k: int = 6) -> str:
    vals = [f"{v:.4g}" if isinstance(v, (float, np.floating)) else repr(v) for v in list(values)[:k]]
    return "{" + ", ".join(vals) + (", ..." if len(values) > k else "") + "}"


def _coefficients(args: argparse.Namespace) -> int:
    import chainamp as ca

    from .cli_progress import Stages
    from .io import load_operator

    _check_epsilon_option(args.epsilon, "--epsilon")
    _check_report_path(args.report)
    K = load_operator(args.matrix, row_sum_atol=_check_row_sum_atol(args.row_sum_atol))
    square = K.is_square and K.inputs == K.outputs
    if square:  # the largest stage, sized before the others run (refused in a second, not after them)
        from ..operators import check_chain_analysis

        check_chain_analysis(K.shape, K.nnz if K.is_sparse else K.shape[0] ** 2, K.is_sparse)
    with Stages("coefficients", 4 + (args.epsilon is not None)) as bar:
        # rows accepted within --row-sum-atol stand for their normalised rows: certify that operator
        bar.update("Dobrushin")
        res = {"dobrushin": ca.dobrushin(K, normalised=True)}
        if args.epsilon is not None:
            bar.update("hockey-stick")
            res["hockey_stick"] = ca.dobrushin(K, epsilon=args.epsilon, normalised=True)
        bar.update("Doeblin, ultra-mixing")
        res["doeblin"], res["ultra_mixing"] = ca.doeblin(K), ca.ultra_mixing(K, normalised=True)
        bar.update("LDP epsilon")
        ldp = ca.ldp_guarantee(K, normalised=True)
        bar.update("chain analysis")
        chain = ca.analyze_chain(K) if square else None
    _emit(_CoefficientSummary(args.matrix, K, res, ldp.epsilon, chain), args, title=f"coefficients of {args.matrix}")
    return EXIT_OK


# --------------------------------------------------------------------------- amplify
def _amplify(args: argparse.Namespace) -> int:
    import chainamp as ca

    from .cli_progress import Stages
    from .io import load_operator

    _check_epsilon_option(args.epsilon, "--epsilon")
    if math.isinf(args.epsilon):
        raise _UsageError(f"--epsilon: must be finite (got {args.epsilon})")
    _check_delta_option(args.delta, "--delta")
    _check_delta_option(args.target_delta, "--target-delta")
    _check_report_path(args.report)
    atol = _check_row_sum_atol(args.row_sum_atol)
    ops = [load_operator(p, row_sum_atol=atol) for p in args.operator]
    from ..operators import same_label_set

    for (before, K1), (after, K2) in zip(zip(args.operator, ops), zip(args.operator[1:], ops[1:])):
        if not same_label_set(K1.outputs, K2.inputs, f"{after}: its inputs and the outputs of {before}"):
            raise _UsageError(f"{after}: its {len(K2.inputs)} inputs {_labels(K2.inputs)} are not the "
                              f"{len(K1.outputs)} outputs {_labels(K1.outputs)} of {before}, the operator "
                              "applied before it")
    mech = ca.DP(args.epsilon, args.delta)
    with Stages("amplify", 1) as bar:
        if args.steps:
            bar.update(f"{len(ops)} steps")
            result = ca.amplify_steps(mech, ops, delta=args.target_delta)
        else:
            bar.update("certified bounds")
            result = ca.amplify(mech, ops if len(ops) > 1 else ops[0], delta=args.target_delta)
    _emit(result, args)
    return EXIT_OK


def _labels(labels: tuple, k: int = 4) -> str:
    shown = ", ".join(repr(x) for x in labels[:k])
    return f"[{shown}{', ...' if len(labels) > k else ''}]"


# --------------------------------------------------------------------------- audit
def _audit(args: argparse.Namespace) -> int:
    from .cli_progress import Stages
    from .io import audit, load_pipeline

    _check_report_path(args.report)
    pipeline = load_pipeline(args.pipeline)
    if args.shuffle_users is not None:  # the file's shuffle delta and method are kept, its users replaced
        from dataclasses import replace

        from .pipeline import ShuffleSpec

        spec = pipeline.shuffle or ShuffleSpec(args.shuffle_users)
        pipeline = replace(pipeline, shuffle=replace(spec, users=args.shuffle_users))
    with Stages(f"audit {os.path.basename(args.pipeline)}") as bar:
        result = audit(pipeline, progress=bar.update)
    _emit(result, args, title=pipeline.name or None)
    return EXIT_OK if result.ok else EXIT_CLAIM_FAILED


# --------------------------------------------------------------------------- parser
def _users(text: str) -> int:
    """``--shuffle-users``: an integer >= 1 (``1e6`` and ``1_000_000`` accepted when whole)."""
    try:
        value = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of users >= 1, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")) or value != int(value) or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of users >= 1, got {text!r}")
    return int(value)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2) that point at ``--help``."""

    def error(self, message: str):
        if "required: COMMAND" in message:
            message = "missing COMMAND (one of demo, audit, coefficients, amplify)"
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    from .. import __version__
    from .cli_progress import add_run_options

    p = _Parser(
        prog="chainamp", formatter_class=_fmt(),
        description="Certified privacy amplification by stochastic post-processing.",
        epilog="examples:\n  chainamp demo\n  chainamp audit datasets/two_stage_rr/pipeline.toml\n"
               "  chainamp coefficients K.csv --epsilon 1\n  chainamp amplify --epsilon 2 --delta 1e-6 K.csv\n"
               "  chainamp design M.csv --epsilon 1\n\n"
               "exit codes: 0 success, 1 a claim is not certified (audit), 2 invalid input, or a\n"
               "  step refused by --memory-limit (default half the available memory) or out of memory,\n"
               "  3 the results were printed but the --report file could not be drawn (a chainamp bug)\n\n"
               "progress: past two seconds, tqdm bars on stderr on a terminal, else a plain line\n"
               "  every few seconds (CI logs); --no-progress turns it off")
    p.add_argument("--version", action="version", version=f"chainamp {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def outputs(sp, report: bool = True):
        add_run_options(sp)  # every command with outputs computes: --memory-limit and --no-progress
        sp.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
        if report:
            sp.add_argument("--report", metavar="FILE", help="also write a standalone report with plots "
                                                             "(FILE ends in .html or .md)")

    d = sub.add_parser("demo", help="a short tour: coefficients of a few operators and two reports",
                       description=_wrap("Print the mixing coefficients of a few operators and two amplification "
                                         "reports."), formatter_class=_fmt(), epilog="example:\n  chainamp demo")
    add_run_options(d)
    d.set_defaults(func=_demo)

    au = sub.add_parser(
        "audit", help="audit a pipeline file: certified bounds and a verdict per claim",
        description=_wrap("Read a pipeline file (TOML, format chainamp-pipeline/1, see docs/pipeline-format.md), "
                          "certify (epsilon', delta') for its post-processing of the input mechanism, and check "
                          "each claim. Exit 0 when every claim is certified, 1 when one is not, 2 on invalid "
                          "input or when a step is refused by --memory-limit."),
        formatter_class=_fmt(),
        epilog="example:\n  chainamp audit datasets/rappor/pipeline.toml --report rappor.html\n\n"
               "a minimal pipeline file:\n"
               '  format = "chainamp-pipeline/1"\n'
               '  mechanism = {catalogue = "randomized_response", k = 4, epsilon = 2.0}\n'
               "  [[steps]]\n"
               '  catalogue = "randomized_response"\n  k = 4\n  epsilon = 1.0\n'
               "  [[claims]]\n  epsilon = 0.65   # certified: 0.645392\n  delta = 1e-6")
    au.add_argument("pipeline", help="the pipeline file (.toml); relative paths inside resolve against its folder")
    au.add_argument("--shuffle-users", type=_users, metavar="N",
                    help="also certify N users' reports (M then the steps) after a shuffler, as the file key "
                         "shuffle = { users = N } (which it overrides)")
    outputs(au)
    au.set_defaults(func=_audit)

    c = sub.add_parser("coefficients", help="the four mixing coefficients of a matrix, with witnesses",
                       description=_wrap("Mixing coefficients (Definition 1 of Balle et al. 2019) with witnesses, "
                                         "the pure LDP level and, for a square matrix with the same input and "
                                         "output labels, the chain analysis."),
                       formatter_class=_fmt(), epilog="example:\n  chainamp coefficients K.csv --epsilon 1.0 --json")
    c.add_argument("matrix", help="a CSV (comma-separated rows, # comments) or NPY file of a row-stochastic matrix")
    c.add_argument("--epsilon", type=float, default=None, help="also the (gamma, epsilon)-Dobrushin coefficient")
    _row_sum_option(c)
    outputs(c)
    c.set_defaults(func=_coefficients)

    a = sub.add_parser("amplify", help="certified (eps', delta') for K o M with M a black-box (eps, delta)-DP",
                       description=_wrap("Every certified bound for a black-box (epsilon, delta)-DP input followed "
                                         "by the given operator(s), applied in order. For a finite input "
                                         "mechanism (and its exact profile) write a pipeline file and use "
                                         "chainamp audit."), formatter_class=_fmt(),
                       epilog="example:\n  chainamp amplify --epsilon 2 --delta 1e-6 K1.csv K2.npy\n"
                              "  chainamp amplify --epsilon 1 --steps K.csv K.csv K.csv   # epsilon'(t)")
    a.add_argument("operator", nargs="+", help="CSV or NPY files of the post-processing operators, in order")
    a.add_argument("--epsilon", type=float, required=True, help="epsilon of the input mechanism")
    a.add_argument("--delta", type=float, default=0.0, help="delta of the input mechanism (default 0)")
    a.add_argument("--target-delta", type=float, default=None, dest="target_delta",
                   help="the delta' to report at (default: the input's delta)")
    a.add_argument("--steps", action="store_true", help="report epsilon'(t) after each operator")
    _row_sum_option(a)
    outputs(a)
    a.set_defaults(func=_amplify)

    from .cli_design import add_design_command  # on use: `chainamp --help` does not pay for it

    add_design_command(sub, outputs)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (argparse usage errors exit 2 through SystemExit)."""
    from ..errors import ChainampError
    from .cli_progress import memory_error_text, running

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with running(args):  # --memory-limit and the progress mode (bars, plain lines or off)
            return args.func(args)
    except MemoryError as exc:  # refused before allocating (ResourceLimitError), or an allocation that failed
        print(f"chainamp {args.command}: error: {memory_error_text(exc)}", file=sys.stderr)
        return EXIT_INVALID
    except _ReportFailure as exc:  # before OSError/ValueError: never reported as invalid input
        print(f"chainamp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_REPORT_FAILED
    except BrokenPipeError:  # ``chainamp audit ... | head``: stop quietly, like other Unix tools
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_SIGPIPE
    except (ChainampError, _UsageError, ValueError, TypeError, OSError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        print(f"chainamp {args.command}: error: {text}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print(f"chainamp {args.command}: interrupted", file=sys.stderr)
        return 130
