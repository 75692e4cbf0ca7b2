"""Reading the values of a pipeline file: field paths for error messages, scalars, labels, matrices (private).

:class:`_Ctx` knows the file being read and turns a problem into a one-line
:class:`~chainamp.errors.InvalidPipelineError` naming the file and the field
(``steps[1].matrix``); the small readers check one field each (a number, an
integer, a boolean, labels, an inline matrix). :func:`read_operator` reads a CSV
or NPY matrix file (NPY with ``allow_pickle=False``) for a ``file = "..."`` step
and for :func:`chainamp.io.load_operator`. Used by :mod:`.catalogue` (the catalogue
of steps and mechanisms) and :mod:`.pipeline` (the schema); it imports neither,
so the folder has no import circle (``pipeline -> steps -> fields``).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .._numerics import ROW_SUM_ATOL
from ..errors import InvalidOperatorError, InvalidPipelineError
from ..operators import MarkovOperator

__all__ = ["read_operator"]

_TOP_KEYS = {"format", "name", "description", "provenance", "delta", "per_step", "mechanism", "steps", "neighbors",
             "claims"}


# --------------------------------------------------------------------------- errors and small readers
class _Ctx:
    """Where we are in a file, for one-line error messages."""

    def __init__(self, path: Path | None):
        self.path = path
        self.base = path.parent if path is not None else Path.cwd()

    def error(self, fieldname: str, problem: Any) -> InvalidPipelineError:
        where = str(self.path) if self.path is not None else "<pipeline>"
        text = " ".join(str(problem).split())
        return InvalidPipelineError(f"{where}: {fieldname}: {text}")

    def resolve(self, name: Any, fieldname: str) -> Path:
        if not isinstance(name, str) or not name:
            raise self.error(fieldname, f"must be a file name (a string), got {name!r}")
        p = Path(name).expanduser()
        return p if p.is_absolute() else self.base / p


def _misplaced(key: str) -> str:
    """A hint when an unknown key of a table is a top-level key: TOML put it under the header above it."""
    if key in _TOP_KEYS:
        return (f"; if {key!r} is meant for the whole pipeline, move it above the first [table] header "
                "(TOML puts every key after a header into that table)")
    return ""


def _number(value: Any, ctx: _Ctx, fieldname: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ctx.error(fieldname, f"must be a number, got {type(value).__name__} {value!r}")
    if math.isnan(value):
        raise ctx.error(fieldname, "must not be NaN")
    return float(value)


def _integer(value: Any, ctx: _Ctx, fieldname: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.error(fieldname, f"must be an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ctx.error(fieldname, f"must be >= {minimum} (got {value})")
    return value


def _boolean(value: Any, ctx: _Ctx, fieldname: str) -> bool:
    if not isinstance(value, bool):
        raise ctx.error(fieldname, f"must be true or false, got {value!r}")
    return value


def _label(value: Any) -> Any:
    """TOML arrays become tuples, so labels of product operators (tuples) can be written as arrays."""
    return tuple(_label(v) for v in value) if isinstance(value, list) else value


def _labels(value: Any, ctx: _Ctx, fieldname: str) -> tuple:
    if not isinstance(value, list) or not value:
        raise ctx.error(fieldname, f"must be a non-empty array of labels, got {value!r}")
    return tuple(_label(v) for v in value)


def _entry(value: Any, ctx: _Ctx, fieldname: str) -> float:
    """A matrix entry: a number, or a string holding an exact fraction such as ``"1/3"``."""
    if isinstance(value, str):
        try:
            return float(Fraction(value.strip()))
        except (ValueError, ZeroDivisionError):
            raise ctx.error(fieldname, f"{value!r} is neither a number nor a fraction like \"1/3\"") from None
    return _number(value, ctx, fieldname)


def _inline_matrix(value: Any, ctx: _Ctx, fieldname: str) -> np.ndarray:
    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in value):
        raise ctx.error(fieldname, "must be a non-empty array of rows, e.g. [[0.75, 0.25], [0.25, 0.75]]")
    width = len(value[0])
    rows = []
    for i, row in enumerate(value):
        if len(row) != width:
            raise ctx.error(fieldname, f"row {i} has {len(row)} entries, row 0 has {width}")
        rows.append([_entry(v, ctx, f"{fieldname}[{i}][{j}]") for j, v in enumerate(row)])
    return np.array(rows, dtype=float)


def _read_array(path: Path) -> np.ndarray:
    """A 2-D float array from a CSV (comma-separated, ``#`` comments) or NPY file; InvalidOperatorError."""
    if path.is_dir():
        raise InvalidOperatorError(f"{path}: is a folder, not a matrix file")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".txt", ".npy"):
        raise InvalidOperatorError(f"{path}: unknown matrix file type {path.suffix!r} (use .csv or .npy)")
    if not path.is_file():
        raise InvalidOperatorError(f"{path}: no such file")
    try:
        if suffix == ".npy":
            arr = np.load(path, allow_pickle=False)
        else:
            with warnings.catch_warnings():  # an empty file: numpy warns, we say it below in one line
                warnings.simplefilter("ignore", UserWarning)
                arr = np.loadtxt(path, delimiter=",", comments="#", ndmin=2, dtype=float)
            if arr.size == 0:
                raise InvalidOperatorError(f"{path}: no numbers in the file (an empty matrix)")
    except InvalidOperatorError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        kind = "NPY" if suffix == ".npy" else "numeric CSV"
        hint = "" if suffix == ".npy" else "; expected comma-separated numbers, one matrix row per line, # comments"
        raise InvalidOperatorError(f"{path}: not a readable {kind} matrix ({' '.join(str(exc).split())}){hint}") \
            from None
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise InvalidOperatorError(f"{path}: holds {arr.dtype} values, not real numbers")
    return arr.astype(float)


def read_operator(path: Path, inputs: Any = None, outputs: Any = None,
                  row_sum_atol: float = ROW_SUM_ATOL) -> MarkovOperator:
    """The operator in a CSV or NPY matrix file (see :func:`chainamp.io.load_operator`);
    InvalidOperatorError whose message starts with the file name."""
    arr = _read_array(path)
    try:
        return MarkovOperator(arr, inputs, outputs, row_sum_atol=row_sum_atol)
    except (InvalidOperatorError, TypeError) as exc:
        raise InvalidOperatorError(f"{path}: {exc}") from None
