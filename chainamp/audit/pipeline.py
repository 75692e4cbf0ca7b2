"""Pipeline files: TOML parsing and validation behind :mod:`chainamp.io` (private; layer 6).

The format (``format = "chainamp-pipeline/1"``, documented in
``docs/pipeline-format.md``), its allow-lists (:data:`CATALOGUE`, :data:`PROFILES`,
:data:`GRAPHS`), the parsed objects :class:`Claim` and :class:`Pipeline`, and the
checks that turn a TOML document into them. The public entry points
(:func:`chainamp.io.load_pipeline`, :func:`chainamp.io.parse_pipeline`) and every
public name above are re-exported by :mod:`chainamp.io`.

Files are data only: nothing is executed, NPY files are read with
``allow_pickle=False``, and only allow-listed names map to functions. Relative
paths resolve against the directory of the pipeline file. Every problem raises
:class:`~chainamp.errors.InvalidPipelineError` with a one-line message naming the
file, the field (``steps[1].matrix``) and the problem.
"""

from __future__ import annotations

import csv
import inspect
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .._numerics import ROW_SUM_ATOL, fmt_number
from ..errors import ChainampError, InvalidOperatorError, InvalidPipelineError
from ..operators import MarkovOperator, kron
from ..privacy import DP, PrivacyProfile

#: The format string a pipeline file must declare.
FORMAT = "chainamp-pipeline/1"

#: Catalogue names a pipeline may use (``catalogue = "..."``), each a function of :mod:`chainamp.mechanisms`.
CATALOGUE = ("binary_randomized_response", "randomized_response", "nu_randomized_response", "rappor_permanent",
             "rappor_instantaneous", "rappor_pipeline", "symmetric_unary_encoding",
             "optimized_unary_encoding", "exponential_mechanism")

#: Catalogue entries that return several operators: the ``part`` key picks one (an attribute of the result).
_PARTS = {"rappor_pipeline": ("mechanism", "permanent", "instantaneous", "one_report")}

#: Black-box privacy profiles (``profile = "..."``) and their constructors on :class:`PrivacyProfile`.
PROFILES = {"pure": "pure", "laplace": "laplace", "gaussian": "gaussian", "randomized_response": "randomized_response"}

#: networkx graphs a random-walk step may name (``graph = "..."``), with the integer parameters they take.
GRAPHS = {"karate_club_graph": (), "florentine_families_graph": (), "les_miserables_graph": (),
          "davis_southern_women_graph": (), "path_graph": ("n",), "cycle_graph": ("n",), "complete_graph": ("n",)}

#: ``kron = t`` may build at most this many matrix entries (the product is dense for dense factors).
_MAX_KRON_ENTRIES = 1 << 24
#: Largest ``repeat`` (each repetition is one composition in the audit) and generator size ``n``.
_MAX_REPEAT = 10_000
_MAX_NODES = 100_000

_TOP_KEYS = {"format", "name", "description", "provenance", "delta", "per_step", "mechanism", "steps", "neighbors",
             "claims"}
_SOURCE_KEYS = ("matrix", "file", "catalogue", "graph", "edges")
_COMMON_KEYS = {"name", "inputs", "outputs", "kron", "row_sum_atol"}
_GRAPH_KEYS = {"laziness", "weighted", "integer_labels", "directed", "n"}


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


# --------------------------------------------------------------------------- pipeline objects
@dataclass(frozen=True)
class Claim:
    """A privacy claim about K o M.

    ``form = "epsilon_at"``: the certified epsilon' at delta' = ``delta`` is at most ``epsilon``.
    ``form = "delta_at"``: the certified delta' at epsilon' = ``epsilon`` is at most ``delta``.
    Both say "K o M is (epsilon, delta)-DP"; they differ in which number is searched.
    """

    epsilon: float
    delta: float
    form: str = "epsilon_at"
    label: str = ""

    def statement(self) -> str:
        e, d = fmt_number(self.epsilon), fmt_number(self.delta)
        return f"epsilon' <= {e} at delta' = {d}" if self.form == "epsilon_at" else f"delta' <= {d} at epsilon' = {e}"


@dataclass(frozen=True)
class Pipeline:
    """A parsed pipeline file.

    Attributes
    ----------
    mechanism :
        What :func:`chainamp.amplify` takes as M: a ``DP``, a tuple of ``DP``, a
        :class:`PrivacyProfile` or a finite mechanism (MarkovOperator).
    operators : tuple of MarkovOperator
        The post-processing steps in order, each repetition listed.
    step_names : tuple of str
        A description of each entry of ``operators``.
    neighbors : tuple of label pairs or None
        None means all pairs (local DP).
    claims : tuple of Claim
    name, description, provenance : str
    delta : float or None
        The delta' the report is given at (None: amplify's default).
    per_step : bool
        Also report epsilon'(t) after each step (:func:`chainamp.amplify_steps`).
    source : Path or None
        The file it was read from.
    """

    mechanism: Any
    mechanism_description: str
    operators: tuple
    step_names: tuple
    neighbors: tuple | None
    claims: tuple
    name: str = ""
    description: str = ""
    provenance: str = ""
    delta: float | None = None
    per_step: bool = False
    source: Path | None = None

    def __repr__(self) -> str:
        n, c = len(self.operators), len(self.claims)
        where = f" from {self.source}" if self.source is not None else ""
        return (f"<Pipeline {self.name or '(unnamed)'!r}{where}: M = {self.mechanism_description}; "
                f"{n} step{'s' if n != 1 else ''}; {c} claim{'s' if c != 1 else ''}>")


# --------------------------------------------------------------------------- parsing
def read_toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise InvalidPipelineError(f"{path}: reading TOML on Python 3.10 needs the 'tomli' package") from None
    if path.is_dir():
        raise InvalidPipelineError(f"{path}: is a folder, not a pipeline file (.toml)")
    if not path.is_file():
        raise InvalidPipelineError(f"{path}: no such pipeline file")
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidPipelineError(f"{path}: (syntax): not valid TOML: {' '.join(str(exc).split())}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidPipelineError(f"{path}: cannot read: {exc}") from None


def parse_document(data: Any, source: str | Path | None = None) -> Pipeline:
    """Check a parsed pipeline document and build the :class:`Pipeline` (see :func:`chainamp.io.parse_pipeline`)."""
    ctx = _Ctx(None if source is None else Path(source))
    if not isinstance(data, dict):
        hint = " (TOML text: parse it with tomllib.loads, or give the file to load_pipeline)" \
            if isinstance(data, str) else ""
        raise ctx.error("(document)", f"must be a table (a dict), got {type(data).__name__}{hint}")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ctx.error(unknown[0], f"unknown key (allowed: {', '.join(sorted(_TOP_KEYS))})")
    fmt = data.get("format")
    if fmt != FORMAT:
        raise ctx.error("format", f"must be {FORMAT!r}, got {fmt!r}")
    texts = {}
    for key in ("name", "description", "provenance"):
        v = data.get(key, "")
        if not isinstance(v, str):
            raise ctx.error(key, f"must be a string, got {v!r}")
        texts[key] = v
    if "mechanism" not in data:
        raise ctx.error("mechanism", "missing (the input mechanism M)")
    mech, mech_desc = _mechanism(data["mechanism"], ctx)
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ctx.error("steps", "must be a non-empty array of tables ([[steps]]), the post-processing K1, K2, ...")
    ops, names = [], []
    for i, spec in enumerate(steps):
        op, desc, repeat = _step(spec, ctx, f"steps[{i}]")
        prev = ops[-1] if ops else (mech if isinstance(mech, MarkovOperator) else None)
        if prev is not None and (len(prev.outputs) != len(op.inputs) or set(prev.outputs) != set(op.inputs)):
            what = "the previous step" if ops else "the mechanism"
            raise ctx.error(f"steps[{i}]", f"its {len(op.inputs)} inputs {_preview(op.inputs)} are not the "
                                           f"{len(prev.outputs)} outputs {_preview(prev.outputs)} of {what} "
                                           "(give matching labels with inputs = [...] / outputs = [...])")
        if repeat > 1 and set(op.inputs) != set(op.outputs):
            raise ctx.error(f"steps[{i}].repeat", "a repeated step needs the same input and output labels")
        ops += [op] * repeat
        names += [desc] * repeat
    neighbors = _neighbors(data.get("neighbors", "all"), mech, ctx)
    claims = data.get("claims", [])
    if not isinstance(claims, list):
        raise ctx.error("claims", "must be an array of tables ([[claims]])")
    parsed = tuple(_claim(c, ctx, f"claims[{i}]") for i, c in enumerate(claims))
    delta = data.get("delta")
    if delta is not None:
        delta = _number(delta, ctx, "delta")
        if not 0.0 <= delta <= 1.0:
            raise ctx.error("delta", f"must be in [0, 1] (got {delta!r})")
    elif any(c.form == "epsilon_at" for c in parsed):
        delta = min(c.delta for c in parsed if c.form == "epsilon_at")
    per_step = _boolean(data.get("per_step", False), ctx, "per_step")
    return Pipeline(mech, mech_desc, tuple(ops), tuple(names), neighbors, parsed, delta=delta, per_step=per_step,
                    source=ctx.path, **texts)


def _preview(labels: tuple, k: int = 3) -> str:
    shown = ", ".join(repr(x) for x in labels[:k])
    return f"[{shown}{', ...' if len(labels) > k else ''}]"


def _mechanism(spec: Any, ctx: _Ctx) -> tuple[Any, str]:
    fld = "mechanism"
    if not isinstance(spec, dict):
        raise ctx.error(fld, f"must be a table, got {spec!r}")
    if not any(k in spec for k in _SOURCE_KEYS):  # black-box forms: an optional name, then the numbers
        label = spec.get("name", "")
        if not isinstance(label, str):
            raise ctx.error(f"{fld}.name", f"must be a string, got {label!r}")
        spec = {k: v for k, v in spec.items() if k != "name"}
        mech, desc = _black_box(spec, ctx)
        return mech, f"{label}: {desc}" if label else desc
    if "graph" in spec or "edges" in spec:
        raise ctx.error(fld, "a graph random walk is a post-processing step, not an input mechanism")
    op, desc, _ = _step(spec, ctx, fld, allow_repeat=False)
    return op, desc


def _black_box(spec: dict, ctx: _Ctx) -> tuple[Any, str]:
    fld = "mechanism"
    if "profile" in spec:
        return _profile(spec, ctx)
    if "points" in spec:
        extra = sorted(set(spec) - {"points"})
        if extra:
            raise ctx.error(f"{fld}.{extra[0]}", "unknown key next to points" + _misplaced(extra[0]))
        pts = spec["points"]
        if not isinstance(pts, list) or not pts:
            raise ctx.error(f"{fld}.points", "must be a non-empty array of [epsilon, delta] pairs")
        out = []
        for i, pt in enumerate(pts):
            if not isinstance(pt, list) or len(pt) != 2:
                raise ctx.error(f"{fld}.points[{i}]", f"must be a pair [epsilon, delta], got {pt!r}")
            out.append(_dp(pt[0], pt[1], ctx, f"{fld}.points[{i}]"))
        desc = "DP at " + ", ".join(f"({fmt_number(p.epsilon)}, {fmt_number(p.delta)})" for p in out)
        return tuple(out), desc
    if "epsilon" not in spec:
        raise ctx.error(fld, "needs epsilon (black box), points, profile, catalogue, matrix or file")
    extra = sorted(set(spec) - {"epsilon", "delta"})
    if extra:
        raise ctx.error(f"{fld}.{extra[0]}", "unknown key for a black-box (epsilon, delta) mechanism"
                        + _misplaced(extra[0]))
    dp = _dp(spec["epsilon"], spec.get("delta", 0.0), ctx, fld)
    return dp, f"black-box ({fmt_number(dp.epsilon)}, {fmt_number(dp.delta)})-DP"


def _dp(eps: Any, delta: Any, ctx: _Ctx, fld: str) -> DP:
    e = _number(eps, ctx, f"{fld}.epsilon")
    d = _number(delta, ctx, f"{fld}.delta")
    if not (0.0 <= e < math.inf):
        raise ctx.error(f"{fld}.epsilon", f"must be finite and >= 0 (got {e!r})")
    if not 0.0 <= d <= 1.0:
        raise ctx.error(f"{fld}.delta", f"must be in [0, 1] (got {d!r})")
    return DP(e, d)


def _profile(spec: dict, ctx: _Ctx) -> tuple[PrivacyProfile, str]:
    name = spec["profile"]
    if name not in PROFILES:
        raise ctx.error("mechanism.profile", f"unknown profile {name!r} (known: {', '.join(PROFILES)})")
    params = {k: v for k, v in spec.items() if k != "profile"}
    fn = getattr(PrivacyProfile, PROFILES[name])
    prof = _call(fn, params, ctx, "mechanism", f"profile {name!r}")
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    return prof, f"{name} profile ({shown})"


def _call(fn: Callable, params: dict, ctx: _Ctx, fld: str, what: str):
    """Call an allow-listed function with keyword parameters from the file, turning every error into one line."""
    sig = inspect.signature(fn)
    names = [p for p in sig.parameters if p not in ("self", "cls")]
    for key in params:
        if key not in sig.parameters:
            raise ctx.error(f"{fld}.{key}", f"{what} has no parameter {key!r} (parameters: {', '.join(names)})"
                            + _misplaced(key))
    try:
        sig.bind(**params)
    except TypeError as exc:
        raise ctx.error(fld, f"{what}: {exc} (parameters: {', '.join(names)})") from None
    try:
        return fn(**params)
    except (ChainampError, ValueError, TypeError) as exc:
        # "k must be an integer ...": point at the field of the file that holds the bad parameter
        first = str(exc).split(" ", 1)[0]
        where = f"{fld}.{first}" if first in params else fld
        raise ctx.error(where, f"{what}: {exc}") from None


def _step(spec: Any, ctx: _Ctx, fld: str, allow_repeat: bool = True) -> tuple[MarkovOperator, str, int]:
    """One operator spec: the operator, a description and its repeat count."""
    if not isinstance(spec, dict):
        raise ctx.error(fld, f"must be a table, got {spec!r}")
    sources = [k for k in _SOURCE_KEYS if k in spec]
    if len(sources) != 1:
        raise ctx.error(fld, "needs exactly one of matrix, file, catalogue, graph, edges"
                        + (f" (got {', '.join(sources)})" if sources else ""))
    kind = sources[0]
    allowed = _COMMON_KEYS | ({"repeat"} if allow_repeat else set()) | {kind}
    if kind in ("graph", "edges"):
        allowed |= _GRAPH_KEYS
    if kind != "catalogue":
        extra = sorted(set(spec) - allowed)
        if extra:
            raise ctx.error(f"{fld}.{extra[0]}", f"unknown key for a {kind} step (allowed: "
                                                  f"{', '.join(sorted(allowed))})" + _misplaced(extra[0]))
    atol = ROW_SUM_ATOL
    if "row_sum_atol" in spec:
        atol = _number(spec["row_sum_atol"], ctx, f"{fld}.row_sum_atol")
        if not 0.0 <= atol < 0.01:
            raise ctx.error(f"{fld}.row_sum_atol", f"must be in [0, 0.01) (got {atol!r})")
    if kind == "matrix":
        arr = _inline_matrix(spec["matrix"], ctx, f"{fld}.matrix")
        op, desc = _build(arr, ctx, f"{fld}.matrix", atol), f"inline {arr.shape[0]}x{arr.shape[1]} matrix"
    elif kind == "file":
        path = ctx.resolve(spec["file"], f"{fld}.file")
        try:
            op = read_operator(path, row_sum_atol=atol)
        except InvalidOperatorError as exc:
            raise ctx.error(f"{fld}.file", exc) from None
        desc = f"matrix file {spec['file']}"
    elif kind == "catalogue":
        op, desc = _catalogue(spec, ctx, fld, allowed)
    else:
        op, desc = _graph_step(spec, kind, ctx, fld)
    op = _relabel(op, spec, ctx, fld, atol)
    if "kron" in spec:
        copies = _integer(spec["kron"], ctx, f"{fld}.kron")
        if copies > 1:
            if op.shape[0] ** copies * op.shape[1] ** copies > _MAX_KRON_ENTRIES:
                raise ctx.error(f"{fld}.kron", f"{copies} copies of a {op.shape[0]}x{op.shape[1]} operator "
                                               f"would exceed {_MAX_KRON_ENTRIES} entries (2**24, 128 MiB dense)")
            op = kron(*([op] * copies))
            desc = f"{copies} independent copies of {desc}"
    repeat = _integer(spec["repeat"], ctx, f"{fld}.repeat") if "repeat" in spec else 1
    if repeat > _MAX_REPEAT:
        raise ctx.error(f"{fld}.repeat", f"must be <= {_MAX_REPEAT} (got {repeat})")
    if "name" in spec:
        if not isinstance(spec["name"], str):
            raise ctx.error(f"{fld}.name", f"must be a string, got {spec['name']!r}")
        desc = f"{spec['name']}: {desc}"
    return op, desc, repeat


def _build(arr: np.ndarray, ctx: _Ctx, fld: str, atol: float) -> MarkovOperator:
    try:
        return MarkovOperator(arr, row_sum_atol=atol)
    except (InvalidOperatorError, TypeError) as exc:
        raise ctx.error(fld, exc) from None


def _relabel(op: MarkovOperator, spec: dict, ctx: _Ctx, fld: str, atol: float) -> MarkovOperator:
    if "inputs" not in spec and "outputs" not in spec:
        return op
    ins = _labels(spec["inputs"], ctx, f"{fld}.inputs") if "inputs" in spec else op.inputs
    outs = _labels(spec["outputs"], ctx, f"{fld}.outputs") if "outputs" in spec else op.outputs
    for key, labs, n in (("inputs", ins, op.shape[0]), ("outputs", outs, op.shape[1])):
        if len(labs) != n:
            what = "rows" if key == "inputs" else "columns"
            raise ctx.error(f"{fld}.{key}", f"has {len(labs)} labels for {n} {what}")
    try:
        return MarkovOperator(op.sparse if op.is_sparse else op.matrix, ins, outs, row_sum_atol=atol)
    except (InvalidOperatorError, TypeError) as exc:
        raise ctx.error(fld, exc) from None


def _catalogue(spec: dict, ctx: _Ctx, fld: str, reserved: set) -> tuple[MarkovOperator, str]:
    from ..privacy import mechanisms

    name = spec["catalogue"]
    available = [n for n in CATALOGUE if callable(getattr(mechanisms, n, None))]
    if not isinstance(name, str) or name not in available:
        raise ctx.error(f"{fld}.catalogue", f"unknown catalogue mechanism {name!r} (known: {', '.join(available)})")
    params = {k: v for k, v in spec.items() if k not in reserved and k != "part"}
    parts = _PARTS.get(name)
    if parts is None and "part" in spec:
        raise ctx.error(f"{fld}.part", f"only for {', '.join(_PARTS)} (catalogue {name!r} is one operator)")
    part = spec.get("part") if parts else None
    if parts and part not in parts:
        raise ctx.error(f"{fld}.part", f"catalogue {name!r} needs part = one of {', '.join(parts)} (got {part!r})")
    k = params.get("k")
    if isinstance(k, int) and not isinstance(k, bool) and k > _MAX_NODES // 20:
        raise ctx.error(f"{fld}.k", f"must be <= {_MAX_NODES // 20} (a dense k x k operator; got {k})")
    op = _call(getattr(mechanisms, name), params, ctx, fld, f"catalogue {name!r}")
    if part is not None:
        op = getattr(op, part)
    if not isinstance(op, MarkovOperator):
        raise ctx.error(f"{fld}.catalogue", f"{name!r} did not return an operator")
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    return op, f"{name}({shown})" + (f".{part}" if part else "")


def _graph_step(spec: dict, kind: str, ctx: _Ctx, fld: str) -> tuple[MarkovOperator, str]:
    import networkx as nx

    lazy = _number(spec.get("laziness", 0.0), ctx, f"{fld}.laziness")
    if not 0.0 <= lazy <= 1.0:
        raise ctx.error(f"{fld}.laziness", f"must be in [0, 1] (got {lazy!r})")
    weighted = _boolean(spec.get("weighted", False), ctx, f"{fld}.weighted")
    if kind == "graph":
        name = spec["graph"]
        if not isinstance(name, str) or name not in GRAPHS:
            raise ctx.error(f"{fld}.graph", f"unknown graph {name!r} (known: {', '.join(GRAPHS)})")
        for key in ("n", "directed"):
            if key in spec and key not in GRAPHS[name]:
                raise ctx.error(f"{fld}.{key}", f"graph {name!r} takes no parameter {key!r}")
        args = [_integer(spec.get(p), ctx, f"{fld}.{p}") if p in spec else None for p in GRAPHS[name]]
        if None in args:
            raise ctx.error(fld, f"graph {name!r} needs {', '.join(GRAPHS[name])}")
        if any(a > _MAX_NODES for a in args):
            raise ctx.error(f"{fld}.n", f"must be <= {_MAX_NODES} (got {args[0]})")
        G = getattr(nx, name)(*args)
        what = f"{name}{'(' + ', '.join(map(str, args)) + ')' if args else ''}"
    else:
        if "n" in spec:
            raise ctx.error(f"{fld}.n", "only for a named generator graph")
        directed = _boolean(spec.get("directed", False), ctx, f"{fld}.directed")
        G = _read_edges(ctx.resolve(spec["edges"], f"{fld}.edges"), directed, weighted, ctx, f"{fld}.edges")
        what = f"edge list {spec['edges']}"
    if _boolean(spec.get("integer_labels", False), ctx, f"{fld}.integer_labels"):
        G = nx.convert_node_labels_to_integers(G, ordering="default")
    try:
        op = MarkovOperator.random_walk(G, laziness=lazy, weight="weight" if weighted else None)
    except (ChainampError, ValueError, TypeError) as exc:
        raise ctx.error(fld, exc) from None
    return op, f"{'lazy ' if lazy > 0 else ''}random walk on {what} ({G.number_of_nodes()} nodes" \
               + (f", laziness {fmt_number(lazy)})" if lazy > 0 else ")")


def _read_edges(path: Path, directed: bool, weighted: bool, ctx: _Ctx, fld: str):
    """An edge list: ``u,v`` or ``u,v,weight`` per line, ``#`` comments; integer-looking labels become ints."""
    import networkx as nx

    if not path.is_file():
        raise ctx.error(fld, f"{path}: no such file")
    G = nx.DiGraph() if directed else nx.Graph()
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            lines = [(n, row) for n, row in enumerate(csv.reader(fh), start=1)
                     if row and not row[0].lstrip().startswith("#")]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ctx.error(fld, f"{path}: cannot read ({exc})") from None
    for n, row in lines:
        row = [c.strip() for c in row]
        if len(row) != (3 if weighted else 2):
            raise ctx.error(fld, f"{path} line {n}: expected {'u,v,weight' if weighted else 'u,v'}, got {row!r}")
        u, v = (_node(x) for x in row[:2])
        attrs = {}
        if weighted:
            try:
                w = float(row[2])
            except ValueError:
                raise ctx.error(fld, f"{path} line {n}: weight {row[2]!r} is not a number") from None
            if not (w >= 0 and math.isfinite(w)):
                raise ctx.error(fld, f"{path} line {n}: weight must be finite and >= 0 (got {row[2]})")
            attrs["weight"] = w
        G.add_edge(u, v, **attrs)
    if G.number_of_nodes() == 0:
        raise ctx.error(fld, f"{path}: no edges")
    return G


def _node(text: str):
    try:
        return int(text)
    except ValueError:
        return text


def _neighbors(value: Any, mech: Any, ctx: _Ctx) -> tuple | None:
    if value == "all":
        return None
    if not isinstance(mech, MarkovOperator):
        raise ctx.error("neighbors", "a neighbour relation needs a finite mechanism (catalogue, matrix or file); "
                                     "a black-box guarantee already fixes it")
    if not isinstance(value, list) or not value:
        raise ctx.error("neighbors", f'must be "all" or a non-empty array of [a, b] label pairs, got {value!r}')
    labels = set(mech.inputs)
    pairs = []
    for i, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ctx.error(f"neighbors[{i}]", f"must be a pair [a, b], got {pair!r}")
        a, b = _label(pair[0]), _label(pair[1])
        for lab in (a, b):
            if lab not in labels:
                raise ctx.error(f"neighbors[{i}]", f"{lab!r} is not an input label of the mechanism "
                                                   f"{_preview(mech.inputs)}")
        if a == b:
            raise ctx.error(f"neighbors[{i}]", f"pairs {a!r} with itself")
        pairs.append((a, b))
    return tuple(pairs)


def _claim(spec: Any, ctx: _Ctx, fld: str) -> Claim:
    if not isinstance(spec, dict):
        raise ctx.error(fld, f"must be a table, got {spec!r}")
    extra = sorted(set(spec) - {"epsilon", "delta", "form", "label"})
    if extra:
        raise ctx.error(f"{fld}.{extra[0]}", "unknown key (allowed: epsilon, delta, form, label)"
                        + _misplaced(extra[0]))
    form = spec.get("form", "epsilon_at")
    if form not in ("epsilon_at", "delta_at"):
        raise ctx.error(f"{fld}.form", f'must be "epsilon_at" or "delta_at", got {form!r}')
    if "epsilon" not in spec:
        raise ctx.error(f"{fld}.epsilon", "missing")
    if form == "delta_at" and "delta" not in spec:
        raise ctx.error(f"{fld}.delta", "missing (the claimed delta' at epsilon')")
    eps = _number(spec["epsilon"], ctx, f"{fld}.epsilon")
    delta = _number(spec.get("delta", 0.0), ctx, f"{fld}.delta")
    if eps < 0:
        raise ctx.error(f"{fld}.epsilon", f"must be >= 0 (got {eps!r})")
    if not 0.0 <= delta <= 1.0:
        raise ctx.error(f"{fld}.delta", f"must be in [0, 1] (got {delta!r})")
    label = spec.get("label", "")
    if not isinstance(label, str):
        raise ctx.error(f"{fld}.label", f"must be a string, got {label!r}")
    return Claim(eps, delta, form, label)
