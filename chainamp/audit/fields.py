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
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .._numerics import ROW_SUM_ATOL, check_memory
from ..errors import InvalidOperatorError, InvalidPipelineError
from ..operators import MarkovOperator

__all__ = ["read_operator"]

_TOP_KEYS = {"format", "name", "description", "provenance", "delta", "per_step", "mechanism", "steps", "neighbors",
             "claims", "reports", "memoized", "shuffle"}


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
    if suffix != ".npy":
        return _read_csv(path)
    _check_npy_size(path)
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InvalidOperatorError(f"{path}: not a readable NPY matrix ({' '.join(str(exc).split())})") from None
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise InvalidOperatorError(f"{path}: holds complex numbers ({arr.dtype}); a Markov matrix has real entries")
    if not np.issubdtype(arr.dtype, np.number):
        raise InvalidOperatorError(f"{path}: holds {arr.dtype} values, not real numbers")
    return arr.astype(float, copy=False)


#: Bytes per label of the operator built from a matrix file (its tuples, sets and index dictionaries).
_LABEL_BYTES = 160.0


def _check_matrix_size(path: Path, rows: float, cols: float, item_bytes: float, what: str) -> None:
    """Before reading a matrix file: the array as read (``item_bytes`` an entry), its float64 copy, the
    operator's own copy (8 bytes an entry each) and the labels of its rows and columns."""
    check_memory((item_bytes + 16.0) * rows * cols + 2.0 * _LABEL_BYTES * (rows + cols),
                 f"{path}: reading the {what} and building its operator",
                 hint="use a smaller matrix (or a structured operator in Python)")


def _check_npy_size(path: Path) -> None:
    """The shape and dtype in an NPY header sized before the data is read (a file whose header cannot be
    read is sized by its length: at least one byte an entry)."""
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(fh)
        rows = float(shape[0]) if len(shape) >= 1 else 1.0
        cols = float(math.prod(shape[1:])) if len(shape) >= 2 else 1.0
        item, what = float(dtype.itemsize), f"{' x '.join(map(str, shape)) or 'scalar'} {dtype} matrix"
    except (ValueError, OSError, EOFError, TypeError):  # np.load names the problem below, when it fits
        size = float(path.stat().st_size)
        rows, cols, item, what = size, 1.0, 1.0, f"{size:.0f}-byte NPY file"
    _check_matrix_size(path, rows, cols, item, what)


_CSV_HINT = "expected comma-separated numbers, one matrix row per line, # comments"


def _read_csv(path: Path) -> np.ndarray:
    """Comma-separated rows as people write them: a UTF-8 byte-order mark (Excel's "CSV UTF-8") is
    skipped, blank lines and ``#`` comments too; a tab-separated or ragged file, a cell that is not a
    number and a complex number each get a one-line message naming the line (and column)."""
    try:  # sized before it is read: one pass counting lines and cells (every cell at least one byte)
        with open(path, "rb") as fh:
            lines = cells = widest = 0
            for raw in fh:
                lines += 1
                width = raw.count(b",") + 1
                cells += width
                widest = max(widest, width)
        size = float(path.stat().st_size)
    except OSError as exc:
        raise InvalidOperatorError(f"{path}: cannot read ({exc.strerror or exc})") from None
    # the text (up to 4 bytes a character), its lines (about 60 bytes each besides the text) and the cells as
    # Python floats in lists (32 bytes each); then the array as for an NPY file (8 bytes an entry as read)
    check_memory(5.0 * size + 60.0 * lines + 32.0 * cells, f"{path}: reading {lines} lines with {cells} cells",
                 hint="save large matrices as .npy")
    _check_matrix_size(path, float(lines), float(widest), 8.0, f"matrix of up to {lines} x {widest} entries")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise _csv_error(path, "not UTF-8 text") from None
    except OSError as exc:
        raise InvalidOperatorError(f"{path}: cannot read ({exc.strerror or exc})") from None
    rows: list[list[float]] = []
    first = 0
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "\t" in line and "," not in line:
            raise _csv_error(path, f"line {n}: values separated by tabs; save the sheet as CSV or replace the "
                                   "tabs by commas")
        cells = [c.strip() for c in line.split(",")]
        row = [_csv_number(c, path, n, j) for j, c in enumerate(cells, start=1)]
        if rows and len(row) != len(rows[0]):
            raise _csv_error(path, f"line {n} has {len(row)} values, the first row (line {first}) has "
                                   f"{len(rows[0])}: every row needs one value per output")
        if not rows:
            first = n
        rows.append(row)
    if not rows:
        raise InvalidOperatorError(f"{path}: no numbers in the file (an empty matrix)")
    return np.array(rows, dtype=float)


def _csv_error(path: Path, detail: str) -> InvalidOperatorError:
    return InvalidOperatorError(f"{path}: not a readable numeric CSV matrix ({detail}); {_CSV_HINT}")


def _csv_number(cell: str, path: Path, line: int, column: int) -> float:
    """A cell: a number, or an exact fraction such as ``1/3`` (as in pipeline files)."""
    try:
        if "_" not in cell:  # float() reads '0_5' as 5.0 (Python's digit grouping): not a CSV number
            return float(cell)
    except ValueError:
        pass
    if "/" in cell and "_" not in cell:
        try:
            return float(Fraction(cell.replace(" ", "")))
        except (ValueError, ZeroDivisionError):
            pass
    where = f"line {line}, column {column}"
    try:
        if "_" in cell:
            raise ValueError(cell)
        complex(cell.replace(" ", ""))
    except ValueError:
        raise _csv_error(path, f"{where}: {repr(cell) if cell else 'an empty cell'} is not a number") from None
    raise _csv_error(path, f"{where}: {cell!r} is a complex number, a Markov matrix has real entries")


def read_operator(path: Path, inputs: Any = None, outputs: Any = None,
                  row_sum_atol: float = ROW_SUM_ATOL) -> MarkovOperator:
    """The operator in a CSV or NPY matrix file (see :func:`chainamp.io.load_operator`);
    InvalidOperatorError whose message starts with the file name."""
    arr = _read_array(path)
    try:
        return MarkovOperator(arr, inputs, outputs, row_sum_atol=row_sum_atol)
    except (InvalidOperatorError, TypeError) as exc:
        hint = ""
        if "must sum to 1" in str(exc):
            hint = ("; rows rounded when written (0.333333 x 3) are accepted with a larger row_sum_atol "
                    "(--row-sum-atol on the command line) and stand for the rows divided by their sums")
        raise InvalidOperatorError(f"{path}: {exc}{hint}") from None
