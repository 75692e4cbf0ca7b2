"""The ``chainamp design`` command: the least-loss post-processing for a privacy target.

Two forms, one per function of :mod:`chainamp.design`:

* ``chainamp design M.csv --epsilon 1 [--delta D]``: the operator K after the finite
  mechanism M (a matrix file, rows = data values) that loses the least expected
  accuracy while M then K is certified (epsilon, delta)-LDP
  (:func:`chainamp.design.optimal_post_processing`);
* ``chainamp design --states N --gamma G [--coefficient doeblin]``: for black-box
  inputs, the least-loss N-state K whose Dobrushin (or Doeblin) coefficient is at
  most G (:func:`chainamp.design.optimal_mixing_operator`).

Both print the result's sentence and table, then K itself with its labels; ``--loss``
and ``--prior`` read the loss matrix and the prior from CSV or NPY files.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from .._numerics import DISPLAY_ZERO_ATOL, text_table
from .cli_common import (EXIT_OK, _check_delta_option, _check_epsilon_option, _check_report_path,
                         _check_row_sum_atol, _emit, _fmt, _row_sum_option, _UsageError, _wrap)
from .fields import _read_array

__all__: list[str] = []

#: K is printed entry by entry up to this many rows and columns; larger ones only in --json and --report
PRINT_MAX = 20
#: the largest --epsilon: the limit of chainamp.design.optimal_post_processing (e^epsilon overflows past it),
#: checked here to name the flag (tests/audit/test_cli_design.py pins that the two agree)
MAX_EPSILON = 700.0


class _DesignView:
    """A :class:`~chainamp.design.DesignResult` as the command line shows it: its own text, then K."""

    def __init__(self, result: Any, source: str):
        self.result, self.source = result, source
        self.headline = getattr(result, "headline", None) or str(result).splitlines()[0]
        self.reports = {"K": result.K}
        if getattr(result, "report", None) is not None:
            self.reports = {"M then K": result.report, "K": result.K}

    def __str__(self) -> str:
        K = self.result.K
        n, m = K.shape
        if n > PRINT_MAX or m > PRINT_MAX:
            shown = f"K is {n}x{m}: use --json or --report to see its entries"
        else:
            rows = [[repr(x)] + [_entry(v) for v in row] for x, row in zip(K.inputs, K.matrix.tolist())]
            shown = ("K (rows: what K reads, columns: what it publishes):\n"
                     + text_table([""] + [repr(y) for y in K.outputs], rows))
            if any("\u2248 0" in r for r in rows):
                shown += (f"\n\u2248 0: an entry below {DISPLAY_ZERO_ATOL:g} (the solver's rounding residue; K is "
                          "certified with it, and --json gives every entry as computed)")
        return f"{self.result}\n\n{shown}"

    def _repr_html_(self) -> str:
        return self.result._repr_html_()

    def to_dict(self) -> dict:
        out = dict(self.result.to_dict())
        out.setdefault("source", self.source)
        return out


def _entry(value: float) -> str:
    """An entry of K as printed: 6 significant digits, a rounding residue (``0 < v <= DISPLAY_ZERO_ATOL``) as
    "\u2248 0" (presentation only: K and its certificate keep the value)."""
    return "\u2248 0" if 0.0 < value <= DISPLAY_ZERO_ATOL else f"{value:.6g}"


def _table(path: str | None, option: str, ndim: int) -> np.ndarray | None:
    """A loss matrix (``ndim = 2``) or a prior (``ndim = 1``: one row or one column) from CSV or NPY."""
    if path is None:
        return None
    arr = _read_array(Path(path).expanduser())
    if ndim == 1:
        if 1 not in arr.shape:
            raise _UsageError(f"{option}: {path}: a prior is one row or one column of numbers (got shape "
                              f"{arr.shape[0]}x{arr.shape[1]})")
        arr = arr.ravel()
    return arr


#: The library's advice on an LP too large, and what the command line offers instead (it has no neighbour or
#: output-set options: a smaller mechanism or --max-lp-nonzeros)
_LP_ADVICE = ((re.compile(r"pass a larger max_lp_nonzeros= to go past it, or restrict the neighbours or the output set"),
               "pass a larger --max-lp-nonzeros N to go past it, or use a mechanism with fewer rows or outputs"),
              (re.compile(r"above max_lp_nonzeros="), "above --max-lp-nonzeros "),
              (re.compile(r"restrict the neighbours or the output set"),
               "use a mechanism with fewer rows or outputs (or fewer --states)"))


@contextlib.contextmanager
def _cli_advice():
    """A design refused for its size says what to type on the command line, not the Python keywords."""
    from ..errors import InvalidParameterError, ResourceLimitError

    try:
        yield
    except (InvalidParameterError, ResourceLimitError) as exc:
        text = str(exc)
        for pattern, replacement in _LP_ADVICE:
            text = pattern.sub(replacement, text)
        if text == str(exc):
            raise
        raise type(exc)(text) from None


def _lp_limit(value: str) -> int:
    """``--max-lp-nonzeros``: a positive integer (underscores and 1e7 allowed)."""
    try:
        number = float(value.replace("_", "")) if any(c in value for c in ".eE") else int(value.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer (got {value!r})") from None
    if number != int(number) or number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer (got {value!r})")
    return int(number)


def _design(args: argparse.Namespace) -> int:
    from ..design import optimal_mixing_operator, optimal_post_processing
    from .._numerics import ROW_SUM_ATOL
    from .io import load_operator

    _check_report_path(args.report)
    loss, prior = _table(args.loss, "--loss", 2), _table(args.prior, "--prior", 1)
    if args.matrix is not None:
        if args.states is not None or args.gamma is not None:
            raise _UsageError("give either a mechanism MATRIX with --epsilon, or --states with --gamma, not both")
        if args.coefficient is not None:
            raise _UsageError("--coefficient: only with --states (it names the coefficient --gamma bounds)")
        if args.epsilon is None:
            raise _UsageError("--epsilon: required with a mechanism MATRIX (the target epsilon' of M then K)")
        _check_epsilon_option(args.epsilon, "--epsilon")
        if math.isinf(args.epsilon):
            raise _UsageError(f"--epsilon: must be finite (got {args.epsilon})")
        if args.epsilon > MAX_EPSILON:
            raise _UsageError(f"--epsilon: must be at most {MAX_EPSILON:g}, where e^epsilon still fits in a float "
                              f"(got {args.epsilon:g})")
        delta = 0.0 if args.delta is None else args.delta
        _check_delta_option(delta, "--delta")
        atol = ROW_SUM_ATOL if args.row_sum_atol is None else args.row_sum_atol
        M = load_operator(args.matrix, row_sum_atol=_check_row_sum_atol(atol))
        # the design shows its own stages (building the LP, solving, certifying) past two seconds
        with _cli_advice():
            result = optimal_post_processing(M, args.epsilon, delta=delta, loss=loss, prior=prior,
                                             max_lp_nonzeros=args.max_lp_nonzeros)
        source = args.matrix
    else:
        if args.states is None or args.gamma is None:
            raise _UsageError("give a mechanism MATRIX with --epsilon, or --states N with --gamma G")
        if args.epsilon is not None or args.delta is not None:
            raise _UsageError("--epsilon/--delta: only with a mechanism MATRIX (with --states, give --gamma)")
        if args.row_sum_atol is not None:
            raise _UsageError("--row-sum-atol: only with a mechanism MATRIX (with --states no matrix is read)")
        if args.states < 2:
            raise _UsageError(f"--states: must be at least 2 (got {args.states})")
        coefficient = "dobrushin" if args.coefficient is None else args.coefficient
        with _cli_advice():
            result = optimal_mixing_operator(args.states, args.gamma, coefficient=coefficient, loss=loss, prior=prior,
                                             max_lp_nonzeros=args.max_lp_nonzeros)
        source = f"{args.states} states, {coefficient} <= {args.gamma:g}"
    _emit(_DesignView(result, source), args, title=f"design: {source}")
    return EXIT_OK


def add_design_command(sub: Any, outputs: Any) -> None:
    """The ``design`` subcommand on the subparsers ``sub`` (``outputs`` adds ``--json`` and ``--report``)."""
    d = sub.add_parser(
        "design", help="the least-loss post-processing K for a privacy target (an LP, certified)",
        description=_wrap("With a mechanism MATRIX: the operator K after M (from M's outputs to M's inputs) with the "
                          "least expected loss (default 0-1 loss, uniform prior) such that M then K is certified "
                          "(epsilon, delta)-LDP; chainamp re-certifies the K it prints with its own exact code. "
                          "With --states N: for black-box inputs, the least-loss N-state K whose Dobrushin (or "
                          "Doeblin) coefficient is at most --gamma."),
        formatter_class=_fmt(),
        epilog="examples:\n  chainamp design M.csv --epsilon 1\n  chainamp design M.csv --epsilon 1 --delta 1e-6 "
               "--loss L.csv --json\n  chainamp design --states 4 --gamma 0.5 --coefficient doeblin")
    d.add_argument("matrix", nargs="?", default=None,
                   help="a CSV or NPY file of the finite mechanism M (rows: data values, columns: its outputs)")
    d.add_argument("--epsilon", type=float, default=None, help="the target epsilon' of M then K (with MATRIX)")
    d.add_argument("--delta", type=float, default=None, help="the target delta' (with MATRIX; default 0)")
    d.add_argument("--states", type=int, default=None, metavar="N", help="design an N-state K for black-box inputs")
    d.add_argument("--gamma", type=float, default=None, help="the largest coefficient allowed (with --states)")
    d.add_argument("--coefficient", choices=("dobrushin", "doeblin"), default=None,
                   help="which coefficient --gamma bounds (with --states; default dobrushin)")
    d.add_argument("--loss", metavar="FILE", default=None,
                   help="CSV or NPY loss matrix, rows: data values, columns: what K publishes (default 0-1 loss)")
    d.add_argument("--prior", metavar="FILE", default=None,
                   help="CSV or NPY prior over the data values, one row or column (default uniform)")
    from .._numerics import DESIGN_MAX_LP_NONZEROS

    d.add_argument("--max-lp-nonzeros", type=_lp_limit, default=DESIGN_MAX_LP_NONZEROS, dest="max_lp_nonzeros",
                   metavar="N", help=f"refuse, before building it, an LP with more constraint nonzeros than N "
                                     f"(default {DESIGN_MAX_LP_NONZEROS:.0e}: a few GB in the solver and minutes to "
                                     "hours of solving)")
    _row_sum_option(d)
    outputs(d)
    # None for the options that only one form reads: a user who gives one to the other form is told so
    d.set_defaults(func=_design, row_sum_atol=None)
