"""The pipeline-file schema: TOML reading, :class:`Claim`, :class:`Pipeline` and the document checks (private; layer 6).

The format (``format = "chainamp-pipeline/1"``, documented in
``docs/pipeline-format.md``), the parsed objects :class:`Claim` and
:class:`Pipeline`, and the checks that turn a TOML document into them: the
top-level keys, the chain of steps, the neighbour relation and the claims. The
allow-lists (:data:`CATALOGUE`, :data:`PROFILES`, :data:`GRAPHS`) and the builders
of the mechanism and of each step live in :mod:`.catalogue`; the field readers and
matrix files in :mod:`.fields`. The public entry points
(:func:`chainamp.io.load_pipeline`, :func:`chainamp.io.parse_pipeline`) and every
public name above are re-exported by :mod:`chainamp.io`.

Files are data only: nothing is executed, NPY files are read with
``allow_pickle=False``, and only allow-listed names map to functions. Relative
paths resolve against the directory of the pipeline file. Every problem raises
:class:`~chainamp.errors.InvalidPipelineError` with a one-line message naming the
file, the field (``steps[1].matrix``) and the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fields import _boolean, _Ctx, _integer, _label, _misplaced, _number, _TOP_KEYS
from .catalogue import _mechanism, _step
from .._numerics import fmt_number
from ..errors import InvalidPipelineError
from ..operators import MarkovOperator, same_label_set
from ..shuffle import METHODS

__all__ = ["FORMAT", "Claim", "Pipeline", "ShuffleSpec", "read_toml", "parse_document"]

#: The format string a pipeline file must declare.
FORMAT = "chainamp-pipeline/1"
#: Largest number of reports ``reports = T`` may name, and how many values the array may hold.
_MAX_REPORTS = 10_000
_MAX_REPORT_VALUES = 50
#: The keys of ``shuffle = {...}`` and the methods it may name (those of :func:`chainamp.amplify_shuffled`).
_SHUFFLE_KEYS = ("users", "delta", "method")
_SHUFFLE_METHODS = ("auto", *METHODS)


# --------------------------------------------------------------------------- pipeline objects
@dataclass(frozen=True)
class Claim:
    """A privacy claim about K o M.

    ``form = "epsilon_at"``: the certified epsilon' at delta' = ``delta`` is at most ``epsilon``.
    ``form = "delta_at"``: the certified delta' at epsilon' = ``epsilon`` is at most ``delta``.
    Both say "K o M is (epsilon, delta)-DP"; they differ in which number is searched.
    ``reports = T`` (optional) makes it a claim about T reports (see ``Pipeline.reports``); None is
    one report, checked against the audit's main report. ``shuffled = True`` checks it against the
    shuffled guarantee (``Pipeline.shuffle``: the users' reports after a shuffler) instead.
    """

    epsilon: float
    delta: float
    form: str = "epsilon_at"
    label: str = ""
    reports: int | None = None
    shuffled: bool = False

    def statement(self) -> str:
        e, d = fmt_number(self.epsilon), fmt_number(self.delta)
        text = f"epsilon' <= {e} at delta' = {d}" if self.form == "epsilon_at" else f"delta' <= {d} at epsilon' = {e}"
        if self.reports is not None:
            text += f" after {self.reports} report{'s' if self.reports != 1 else ''}"
        if self.shuffled:
            text += " after shuffling"
        return text


@dataclass(frozen=True)
class ShuffleSpec:
    """``shuffle = {users = n}``: also certify the n users' reports (M then the steps) after a shuffler
    (:func:`chainamp.amplify_shuffled`), at ``delta`` (None: the audit's delta' when in (0, 1), else 1e-6)
    with ``method``."""

    users: int
    delta: float | None = None
    method: str = "auto"


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
    reports : tuple of int or None
        The numbers of reports T to certify (sorted), None when the file names none: then the
        audit certifies one report, as it always did.
    memoized : bool
        True: everything before the last step is drawn once and the last step is applied T times
        to that draw (RAPPOR's permanent and instantaneous responses); False: T fresh draws of the
        whole pipeline (composition).
    shuffle : ShuffleSpec or None
        ``shuffle = {users = n}``: also certify the shuffled reports of n users (``AuditResult.shuffled``).
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
    reports: tuple | None = None
    memoized: bool = True
    shuffle: ShuffleSpec | None = None

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
    ops, names, repeat = [], [], 1
    for i, spec in enumerate(steps):
        prev = ops[-1] if ops else (mech if isinstance(mech, MarkovOperator) else None)
        reads = None if prev is None else (prev.outputs, "the previous step" if ops else "the mechanism")
        op, desc, repeat = _step(spec, ctx, f"steps[{i}]", previous=reads)
        if prev is not None and not _same_labels(prev.outputs, prev.shape[1], op.inputs, op.shape[0],
                                                 f"steps[{i}]: its inputs and the outputs before it"):
            what = "the previous step" if ops else "the mechanism"
            raise ctx.error(f"steps[{i}]", f"its {op.shape[0]} inputs {_preview(op.inputs)} are not the "
                                           f"{prev.shape[1]} outputs {_preview(prev.outputs)} of {what} "
                                           "(give matching labels with inputs = [...] / outputs = [...])")
        if repeat > 1 and not _same_labels(op.inputs, op.shape[0], op.outputs, op.shape[1],
                                           f"steps[{i}]: its inputs and outputs"):
            raise ctx.error(f"steps[{i}].repeat", "a repeated step needs the same input and output labels")
        ops += [op] * repeat
        names += [desc] * repeat
    neighbors = _neighbors(data.get("neighbors", "all"), mech, ctx)
    claims = data.get("claims", [])
    if not isinstance(claims, list):
        raise ctx.error("claims", "must be an array of tables ([[claims]])")
    parsed = tuple(_claim(c, ctx, f"claims[{i}]") for i, c in enumerate(claims))
    reports, memoized = _reports(data, ctx, last_repeat=repeat, last=len(steps) - 1)
    for i, c in enumerate(parsed):
        if c.reports is not None and c.reports not in (reports or (1,)):
            audited = ", ".join(map(str, reports or (1,)))
            raise ctx.error(f"claims[{i}].reports", f"{c.reports} is not a number of reports the audit certifies "
                                                     f"({audited}): add it to the top-level reports = [...]")
    delta = data.get("delta")
    if delta is not None:
        delta = _number(delta, ctx, "delta")
        if not 0.0 <= delta <= 1.0:
            raise ctx.error("delta", f"must be in [0, 1] (got {delta!r})")
    elif any(c.form == "epsilon_at" for c in parsed):
        delta = min(c.delta for c in parsed if c.form == "epsilon_at")
    per_step = _boolean(data.get("per_step", False), ctx, "per_step")
    shuffle = _shuffle(data["shuffle"], ctx) if "shuffle" in data else None
    return Pipeline(mech, mech_desc, tuple(ops), tuple(names), neighbors, parsed, delta=delta, per_step=per_step,
                    source=ctx.path, reports=reports, memoized=memoized, shuffle=shuffle, **texts)


def _shuffle(value: Any, ctx: _Ctx) -> ShuffleSpec:
    """``shuffle = {users = n, delta = ..., method = ...}`` (users an integer >= 1)."""
    if not isinstance(value, dict):
        raise ctx.error("shuffle", f"must be a table such as {{ users = 1000000 }}, got {value!r}")
    extra = sorted(set(value) - set(_SHUFFLE_KEYS))
    if extra:
        raise ctx.error(f"shuffle.{extra[0]}", f"unknown key (allowed: {', '.join(_SHUFFLE_KEYS)})")
    if "users" not in value:
        raise ctx.error("shuffle.users", "missing (the number of users whose reports are shuffled)")
    users = _integer(value["users"], ctx, "shuffle.users")
    delta = None
    if "delta" in value:
        delta = _number(value["delta"], ctx, "shuffle.delta")
        if not 0.0 < delta < 1.0:
            raise ctx.error("shuffle.delta", f"must be in (0, 1) (got {delta!r})")
    method = value.get("method", "auto")
    if method not in _SHUFFLE_METHODS:
        raise ctx.error("shuffle.method", f"must be one of {', '.join(map(repr, _SHUFFLE_METHODS))}, got {method!r}")
    return ShuffleSpec(users, delta, method)


def _reports(data: dict, ctx: _Ctx, last_repeat: int, last: int) -> tuple[tuple | None, bool]:
    """``reports`` (an integer or an array of distinct integers, sorted) and ``memoized`` (default true)."""
    if "reports" not in data:
        if "memoized" in data:
            raise ctx.error("memoized", "only with reports = T (or an array of numbers of reports): without "
                                        "reports the audit certifies one report, memoized or not")
        return None, True
    value = data["reports"]
    if isinstance(value, list):
        if not value or len(value) > _MAX_REPORT_VALUES:
            raise ctx.error("reports", f"must hold 1 to {_MAX_REPORT_VALUES} numbers of reports (got {len(value)})")
        named = [(f"reports[{i}]", v) for i, v in enumerate(value)]
    elif isinstance(value, int) and not isinstance(value, bool):
        named = [("reports", value)]
    else:
        raise ctx.error("reports", f"must be an integer >= 1 or an array of them, e.g. [1, 2, 5, 10], got {value!r}")
    seen: list[int] = []
    for fld, v in named:
        t = _integer(v, ctx, fld)
        if t > _MAX_REPORTS:
            raise ctx.error(fld, f"must be <= {_MAX_REPORTS} (got {t})")
        if t in seen:
            raise ctx.error(fld, f"{t} is listed twice")
        seen.append(t)
    memoized = _boolean(data.get("memoized", True), ctx, "memoized")
    if memoized and max(seen) > 1 and last_repeat > 1:
        raise ctx.error(f"steps[{last}].repeat", "with memoized reports the last step is what each report applies "
                                                  "afresh to one draw of everything before it, so it must be one "
                                                  "operator: write the earlier repetitions as a step of their own")
    return tuple(sorted(seen)), memoized


def _same_labels(a, n_a: int, b, n_b: int, what: str) -> bool:
    """The two steps' labels hold the same set, lazy labels never listed (:func:`chainamp.operators.same_label_set`)."""
    return n_a == n_b and same_label_set(a, b, what)


def _has_input(mech: MarkovOperator, label: Any) -> bool:
    try:
        mech.input_index(label)
    except (KeyError, TypeError):
        return False
    return True


def _preview(labels: tuple, k: int = 3) -> str:
    shown = ", ".join(repr(x) for x in labels[:k])
    return f"[{shown}{', ...' if len(labels) > k else ''}]"


def _neighbors(value: Any, mech: Any, ctx: _Ctx) -> tuple | None:
    if value == "all":
        return None
    if not isinstance(mech, MarkovOperator):
        raise ctx.error("neighbors", "a neighbour relation needs a finite mechanism (catalogue, matrix or file); "
                                     "a black-box guarantee already fixes it")
    if not isinstance(value, list) or not value:
        raise ctx.error("neighbors", f'must be "all" or a non-empty array of [a, b] label pairs, got {value!r}')
    pairs = []
    for i, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ctx.error(f"neighbors[{i}]", f"must be a pair [a, b], got {pair!r}")
        a, b = _label(pair[0]), _label(pair[1])
        for lab in (a, b):
            if not _has_input(mech, lab):  # by index: a 2^30-input product's labels are never listed
                raise ctx.error(f"neighbors[{i}]", f"{lab!r} is not an input label of the mechanism "
                                                   f"{_preview(mech.inputs)}")
        if a == b:
            raise ctx.error(f"neighbors[{i}]", f"pairs {a!r} with itself")
        pairs.append((a, b))
    return tuple(pairs)


def _claim(spec: Any, ctx: _Ctx, fld: str) -> Claim:
    if not isinstance(spec, dict):
        raise ctx.error(fld, f"must be a table, got {spec!r}")
    extra = sorted(set(spec) - {"epsilon", "delta", "form", "label", "reports", "shuffled"})
    if extra:
        raise ctx.error(f"{fld}.{extra[0]}", "unknown key (allowed: epsilon, delta, form, label, reports, shuffled)"
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
    reports = _integer(spec["reports"], ctx, f"{fld}.reports") if "reports" in spec else None
    shuffled = _boolean(spec.get("shuffled", False), ctx, f"{fld}.shuffled")
    if shuffled and reports is not None:
        raise ctx.error(f"{fld}.shuffled", "a shuffled claim is about one shuffled round of reports: drop reports")
    return Claim(eps, delta, form, label, reports, shuffled)
