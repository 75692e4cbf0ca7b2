"""The helpers the command-line modules share (private): exit codes, usage and report failures, output
(text or JSON, then the ``--report`` file), option checks and the parser's formatting.

:mod:`.cli` (the parser and the commands) and :mod:`.cli_design` (``chainamp design``) both import them
from here, so neither imports the other at module level.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import textwrap
from typing import Any

import numpy as np

__all__: list[str] = []

EXIT_OK, EXIT_CLAIM_FAILED, EXIT_INVALID, EXIT_REPORT_FAILED = 0, 1, 2, 3


class _UsageError(Exception):
    """A bad command-line value: reported like invalid input (exit 2)."""


class _ReportFailure(Exception):
    """The ``--report`` file could not be drawn although the input was valid (exit 3): chainamp's fault."""


# --------------------------------------------------------------------------- output helpers
def _num(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return ("inf" if v > 0 else "-inf") if math.isinf(v) else v
    if isinstance(v, tuple):
        return [_num(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_num(x) for x in v.tolist()]
    return v


def _emit(result: Any, args: argparse.Namespace, title: str | None = None) -> None:
    """Print ``result`` as text or JSON, then write the ``--report`` file when asked.

    The results come first: a report that cannot be drawn (:class:`_ReportFailure`, exit 3) loses
    only the file, never the certified numbers.
    """
    print(json.dumps(_clean(result.to_dict()), indent=2, default=_num) if args.json else result)
    if getattr(args, "report", None):
        sys.stdout.flush()
        _write_report(result, args.report, title)


def _clean(value):
    """Strict JSON: infinities and NaN (which ``json`` would write as bare ``Infinity``) become strings."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _check_report_path(path: str | None) -> None:
    """Refuse a bad ``--report`` before any work: a wrong suffix or a folder that does not exist."""
    if path is None:
        return
    if not path.lower().endswith((".html", ".htm", ".md")):
        raise _UsageError(f"--report: {path}: the file name must end in .html or .md")
    folder = os.path.dirname(os.path.abspath(os.path.expanduser(path)))
    if not os.path.isdir(folder):
        raise _UsageError(f"--report: {path}: the folder {folder} does not exist")
    if os.path.isdir(os.path.expanduser(path)):
        raise _UsageError(f"--report: {path}: is a folder, not a file name")


def _write_report(result: Any, path: str, title: str | None) -> None:
    _check_report_path(path)
    try:
        from .report import write_report
    except ImportError as exc:  # pragma: no cover - the module ships with chainamp
        raise _UsageError(f"--report: the report writer is not available ({exc})") from None
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:  # e.g. plots omitted: matplotlib is missing
            warnings.simplefilter("always")
            out = write_report(result, os.path.expanduser(path), title=title)
    except OSError as exc:
        raise _UsageError(f"--report: {path}: cannot write ({exc.strerror or exc})") from None
    except MemoryError:
        raise
    except Exception as exc:  # the input was valid (the results are printed): a fault of the report writer
        text = " ".join(str(exc).split()) or "no message"
        raise _ReportFailure(f"--report: {path}: the report could not be drawn ({type(exc).__name__}: {text}); "
                             "the results above are complete. This is a bug in chainamp's report writer: "
                             "please report it, or run without --report") from None
    for w in caught:
        print(f"chainamp: warning: --report: {w.message}", file=sys.stderr)
    print(f"report written to {out}", file=sys.stderr)


def _check_epsilon_option(value: float | None, option: str) -> None:
    """A negative or NaN ``--epsilon``-like option, named as typed on the command line."""
    if value is not None and not value >= 0:
        raise _UsageError(f"{option}: must be a number >= 0 (got {value})")


def _check_row_sum_atol(value: float) -> float:
    """``--row-sum-atol``: the range pipeline files allow (``row_sum_atol`` in [0, 0.01))."""
    if not 0.0 <= value < 0.01:
        raise _UsageError(f"--row-sum-atol: must be in [0, 0.01) (got {value})")
    return value


def _check_delta_option(value: float | None, option: str) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise _UsageError(f"{option}: must be in [0, 1] (got {value})")


def _fmt() -> type:
    return argparse.RawDescriptionHelpFormatter


def _wrap(text: str) -> str:
    """A description wrapped for a terminal (the raw formatter keeps the epilogs' examples as written)."""
    return textwrap.fill(text, width=79, break_on_hyphens=False)


def _row_sum_option(sp) -> None:
    from .._numerics import ROW_SUM_ATOL

    sp.add_argument("--row-sum-atol", type=float, default=ROW_SUM_ATOL, dest="row_sum_atol", metavar="TOL",
                    help=f"accept rows whose sums are within TOL of 1 (default {ROW_SUM_ATOL:g}, below 0.01), e.g. "
                         "1e-5 for rows rounded to 6 decimals (0.333333 x 3); such rows stand for the rows "
                         "divided by their sums, and the results are certified for that row-normalised operator")
