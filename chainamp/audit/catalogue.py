"""The catalogue of steps and mechanisms a pipeline file may name, and how each is built (private).

The allow-lists (:data:`CATALOGUE`, :data:`PROFILES`, :data:`GRAPHS`) and the
builders that turn the ``mechanism`` table and each ``[[steps]]`` table into a
``DP``, a :class:`~chainamp.privacy.PrivacyProfile` or a
:class:`~chainamp.operators.MarkovOperator`: inline matrices, matrix files,
catalogue mechanisms, black-box guarantees, privacy profiles, random walks on
networkx graphs or edge lists and coarsenings written as a map from labels to groups. Only allow-listed names map to functions; every
problem raises :class:`~chainamp.errors.InvalidPipelineError` through the
field-path context of :mod:`.fields`. The allow-lists are re-exported by
:mod:`chainamp.io`.
"""

from __future__ import annotations

import csv
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .fields import _boolean, _Ctx, _inline_matrix, _integer, _label, _labels, _misplaced, _number, read_operator
from .._numerics import ROW_SUM_ATOL, check_memory, fmt_number
from ..errors import ChainampError, InvalidOperatorError
from ..operators import MarkovOperator, kron
from ..privacy import DP, PrivacyProfile

__all__ = ["CATALOGUE", "PROFILES", "GRAPHS"]

#: Catalogue names a pipeline may use (``catalogue = "..."``), each a function of :mod:`chainamp.mechanisms`
#: (looked up in ``chainamp.privacy.mechanisms``, then ``chainamp.privacy.adapters``).
CATALOGUE = ("binary_randomized_response", "randomized_response", "nu_randomized_response", "rappor_permanent",
             "rappor_instantaneous", "rappor_pipeline", "symmetric_unary_encoding",
             "optimized_unary_encoding", "unary_encoding", "exponential_mechanism", "from_multi_freq_ldpy")
#: Catalogue functions that return structured operators (never densified unless asked): no cap on k.
_STRUCTURED = ("randomized_response", "unary_encoding")

#: Catalogue entries that may return several operators: the ``part`` key picks one (an attribute of the
#: result), and is required exactly when the result is not one operator (``from_multi_freq_ldpy`` returns
#: an operator for GRR, SUE and OUE and a two-stage ``LongitudinalPipeline`` for the L- protocols).
_PARTS = {"rappor_pipeline": ("mechanism", "permanent", "instantaneous", "one_report"),
          "from_multi_freq_ldpy": ("mechanism", "instantaneous")}

#: Black-box privacy profiles (``profile = "..."``) and their constructors on :class:`PrivacyProfile`.
PROFILES = {"pure": "pure", "laplace": "laplace", "gaussian": "gaussian", "randomized_response": "randomized_response"}

#: networkx graphs a random-walk step may name (``graph = "..."``), with the integer parameters they take.
GRAPHS = {"karate_club_graph": (), "florentine_families_graph": (), "les_miserables_graph": (),
          "davis_southern_women_graph": (), "path_graph": ("n",), "cycle_graph": ("n",), "complete_graph": ("n",)}

#: ``kron = t`` may build at most this many matrix entries (the product is dense for dense factors)
#: and take at most this many copies (a 1x1 operator has one entry for any t, but t-entry labels).
_MAX_KRON_ENTRIES = 1 << 24
_MAX_KRON_COPIES = 4096  # what chainamp.kron multiplies densely (one numpy.kron per factor)
#: A coarsening is stored densely up to this many entries, sparsely (one entry a row) beyond.
_DENSE_COARSEN_ENTRIES = 1 << 22
#: Bytes per label of a product besides its entries (the tuple, its slot and its index-dict entry).
_LABEL_BYTES = 160.0
#: Largest ``repeat`` (each repetition is one composition in the audit) and generator size ``n``.
_MAX_REPEAT = 10_000
_MAX_NODES = 100_000

_SOURCE_KEYS = ("matrix", "file", "catalogue", "graph", "edges", "coarsen")
_COMMON_KEYS = {"name", "inputs", "outputs", "kron", "row_sum_atol"}
_GRAPH_KEYS = {"laziness", "weighted", "integer_labels", "directed", "n"}


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
    if "coarsen" in spec:
        raise ctx.error(f"{fld}.coarsen", "a coarsening is a post-processing step, not an input mechanism")
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


def _step(spec: Any, ctx: _Ctx, fld: str, allow_repeat: bool = True,
          previous: tuple | None = None) -> tuple[MarkovOperator, str, int]:
    """One operator spec: the operator, a description and its repeat count. ``previous`` is
    ``(labels, what)`` for the outputs the step reads (None after a black-box mechanism)."""
    if not isinstance(spec, dict):
        raise ctx.error(fld, f"must be a table, got {spec!r}")
    sources = [k for k in _SOURCE_KEYS if k in spec]
    if len(sources) != 1:
        raise ctx.error(fld, "needs exactly one of matrix, file, catalogue, graph, edges, coarsen"
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
    elif kind == "coarsen":
        op, desc = _coarsen(spec["coarsen"], previous, ctx, f"{fld}.coarsen")
    else:
        op, desc = _graph_step(spec, kind, ctx, fld)
    op = _relabel(op, spec, ctx, fld, atol)
    if "kron" in spec:
        copies = _integer(spec["kron"], ctx, f"{fld}.kron")
        if copies > 1:
            _check_kron(op.shape, copies, ctx, f"{fld}.kron")
            op = kron(*([op] * copies), structured=False)
            desc = f"{copies} independent copies of {desc}"
    repeat = _integer(spec["repeat"], ctx, f"{fld}.repeat") if "repeat" in spec else 1
    if repeat > _MAX_REPEAT:
        raise ctx.error(f"{fld}.repeat", f"must be <= {_MAX_REPEAT} (got {repeat})")
    if "name" in spec:
        if not isinstance(spec["name"], str):
            raise ctx.error(f"{fld}.name", f"must be a string, got {spec['name']!r}")
        desc = f"{spec['name']}: {desc}"
    return op, desc, repeat


def _check_kron(shape: tuple, copies: int, ctx: _Ctx, fld: str) -> None:
    """Refuse ``kron = copies`` before any big allocation or big-integer arithmetic: the product of
    ``copies`` n x m operators has n^copies x m^copies entries and as many labels, each a tuple of
    ``copies`` entries, sized here with logarithms (a float), so ``kron = 9223372036854775807``
    is refused as fast as ``kron = 30``; at most ``_MAX_KRON_COPIES`` factors (the work is linear in it)."""
    if copies > _MAX_KRON_COPIES:
        raise ctx.error(fld, f"must be <= {_MAX_KRON_COPIES} copies (got {copies}): each copy is a factor "
                             f"to multiply and one more entry in every label")
    log2_entries = copies * (math.log2(shape[0]) + math.log2(shape[1]))
    if log2_entries > math.log2(_MAX_KRON_ENTRIES):
        log10 = log2_entries * math.log10(2.0)
        shown = f"{2.0 ** log2_entries:.3g}" if log10 < 300 else f"10^{log10:.4g}"
        raise ctx.error(fld, f"{copies} copies of a {shape[0]}x{shape[1]} operator have about {shown} matrix "
                             f"entries ({shape[0]}^{copies} x {shape[1]}^{copies}, dense), above the "
                             f"{_MAX_KRON_ENTRIES} (2**24, 128 MiB) a pipeline file may build")
    labels = float(shape[0]) ** copies + float(shape[1]) ** copies  # each <= 2**24 here: no overflow
    check_memory(8.0 * 2.0 ** log2_entries + labels * (_LABEL_BYTES + 8.0 * copies),
                 f"{fld}: the product of {copies} copies of a {shape[0]}x{shape[1]} operator (matrix and labels)")


def _coarsen(value: Any, previous: tuple | None, ctx: _Ctx, fld: str) -> tuple[MarkovOperator, str]:
    """``coarsen = {a = "low", b = "low", c = "high"}``: the deterministic operator sending each output of
    the previous step (a key, matched by its text: ``0``, ``"(0, 1)"`` for the tuple label ``(0, 1)``) to
    its group; the groups, in the order first named, are the step's outputs."""
    if not isinstance(value, dict) or not value:
        raise ctx.error(fld, f'must be a table from labels to groups, e.g. {{a = "low", b = "low", c = "high"}}, '
                             f"got {value!r}")
    groups: dict = {}
    for key, group in value.items():
        if isinstance(group, dict) or group == []:
            raise ctx.error(f"{fld}.{key}", f"must be a group label (a string, a number or an array), got {group!r}")
        groups.setdefault(_label(group), len(groups))
    if previous is None:  # after a black-box mechanism: the keys, as written, are the inputs
        inputs, mapping = tuple(value), {k: _label(g) for k, g in value.items()}
    else:
        labels, what = previous
        by_text: dict = {}
        for lab in labels:
            text = _label_text(lab)
            if text in by_text:
                raise ctx.error(fld, f"the outputs {by_text[text]!r} and {lab!r} of {what} read the same ({text!r})")
            by_text[text] = lab
        mapping = {}
        for key, group in value.items():
            lab = by_text.get(_key_text(key), _MISSING)
            if lab is _MISSING:
                shown = ", ".join(repr(x) for x in labels[:6]) + (", ..." if len(labels) > 6 else "")
                raise ctx.error(f"{fld}.{key}", f"{key!r} is not an output of {what} (outputs: {shown})")
            if lab in mapping:
                raise ctx.error(f"{fld}.{key}", f"maps the output {lab!r} a second time")
            mapping[lab] = _label(group)
        missing = [lab for lab in labels if lab not in mapping]
        if missing:
            shown = ", ".join(repr(x) for x in missing[:4]) + (", ..." if len(missing) > 4 else "")
            raise ctx.error(fld, f"does not map {shown}: every output of {what} needs a group")
        inputs = tuple(labels)
    cols = np.array([groups[mapping[lab]] for lab in inputs], dtype=np.int64)
    if len(inputs) * len(groups) <= _DENSE_COARSEN_ENTRIES:
        mat = np.zeros((len(inputs), len(groups)))
        mat[np.arange(len(inputs)), cols] = 1.0
    else:  # one entry a row: sparse, never an n x g dense block (a 100000-node walk into 100000 groups: 80 GB)
        mat = sp.csr_matrix((np.ones(len(inputs)), cols, np.arange(len(inputs) + 1)), shape=(len(inputs), len(groups)))
    try:
        op = MarkovOperator(mat, inputs, tuple(groups))
    except (InvalidOperatorError, TypeError) as exc:
        raise ctx.error(fld, exc) from None
    return op, f"coarsening of {len(inputs)} labels into {len(groups)} groups"


_MISSING = object()


def _label_text(label: Any) -> str:
    """How a label is written as a key of ``coarsen``: ``0``, ``a``, ``0,1`` for the tuple ``(0, 1)``."""
    return ",".join(_label_text(x) for x in label) if isinstance(label, tuple) else str(label)


def _key_text(key: str) -> str:
    text = key.strip()
    if len(text) >= 2 and (text[0], text[-1]) in (("(", ")"), ("[", "]")):
        text = text[1:-1]
    if "," in text:
        return ",".join(part.strip().strip("'\"") for part in text.split(","))
    return text


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


def _catalogue_functions() -> dict:
    """The allow-listed catalogue functions present in this chainamp, by name (looked up lazily, in the
    mechanism catalogue and then the adapters of :mod:`chainamp.privacy`)."""
    from ..privacy import adapters, encodings, mechanisms

    found = {}
    for n in CATALOGUE:
        fn = next((f for f in (getattr(mod, n, None) for mod in (mechanisms, encodings, adapters)) if callable(f)), None)
        if callable(fn):
            found[n] = fn
    return found


def _catalogue(spec: dict, ctx: _Ctx, fld: str, reserved: set) -> tuple[MarkovOperator, str]:
    functions = _catalogue_functions()
    name = spec["catalogue"]
    if not isinstance(name, str) or name not in functions:
        raise ctx.error(f"{fld}.catalogue", f"unknown catalogue mechanism {name!r} (known: {', '.join(functions)})")
    params = {k: v for k, v in spec.items() if k not in reserved and k != "part"}
    parts = _PARTS.get(name)
    if parts is None and "part" in spec:
        raise ctx.error(f"{fld}.part", f"only for {', '.join(_PARTS)} (catalogue {name!r} is one operator)")
    part = spec.get("part") if parts else None
    if parts and part is not None and part not in parts:
        raise ctx.error(f"{fld}.part", f"catalogue {name!r} needs part = one of {', '.join(parts)} (got {part!r})")
    k = params.get("k")
    if isinstance(k, int) and not isinstance(k, bool) and k > _MAX_NODES // 20 and name not in _STRUCTURED:
        raise ctx.error(f"{fld}.k", f"must be <= {_MAX_NODES // 20} (a dense k x k operator; got {k})")
    op = _call(functions[name], params, ctx, fld, f"catalogue {name!r}")
    if parts and isinstance(op, MarkovOperator) and part is not None:
        raise ctx.error(f"{fld}.part", f"catalogue {name!r} with these parameters is one operator: leave part out")
    if parts and not isinstance(op, MarkovOperator):
        if part is None:
            raise ctx.error(f"{fld}.part", f"catalogue {name!r} needs part = one of {', '.join(parts)} (got None)")
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
        what = f"{name}{'(' + ', '.join(map(str, args)) + ')' if args else ''}"
        integer = _boolean(spec.get("integer_labels", False), ctx, f"{fld}.integer_labels")
        if name == "complete_graph" and args[0] >= 2:
            return _complete_walk(args[0], lazy, what), _walk_text(what, args[0], lazy)
        if args:  # path_graph, cycle_graph: n nodes, at most n edges (the named graphs are small)
            _check_graph(float(args[0]), float(args[0]), f"{fld}: the networkx graph {what}")
        G = getattr(nx, name)(*args)
    else:
        if "n" in spec:
            raise ctx.error(f"{fld}.n", "only for a named generator graph")
        directed = _boolean(spec.get("directed", False), ctx, f"{fld}.directed")
        integer = _boolean(spec.get("integer_labels", False), ctx, f"{fld}.integer_labels")
        G = _read_edges(ctx.resolve(spec["edges"], f"{fld}.edges"), directed, weighted, ctx, f"{fld}.edges")
        what = f"edge list {spec['edges']}"
    if integer:
        G = nx.convert_node_labels_to_integers(G, ordering="default")
    try:
        op = MarkovOperator.random_walk(G, laziness=lazy, weight="weight" if weighted else None)
    except (ChainampError, ValueError, TypeError) as exc:
        raise ctx.error(fld, exc) from None
    return op, _walk_text(what, G.number_of_nodes(), lazy)


def _walk_text(what: str, n: int, lazy: float) -> str:
    return f"{'lazy ' if lazy > 0 else ''}random walk on {what} ({n} nodes" \
        + (f", laziness {fmt_number(lazy)})" if lazy > 0 else ")")


def _complete_walk(n: int, lazy: float, what: str) -> MarkovOperator:
    """The (lazy) random walk on the complete graph K_n as the symmetric channel it is: stay with probability
    ``lazy``, else move to one of the other n - 1 nodes uniformly, ``d = lazy``, ``o = (1 - lazy) (1 / (n - 1))``
    (the floats ``MarkovOperator.random_walk`` stores: the row-normalised adjacency scaled by ``1 - lazy``).
    Two doubles instead of a networkx graph with n (n - 1) / 2 edges and a CSR matrix of n^2 entries (a
    4000-node graph took 3.27 GB; 100,000 nodes would take about 10 TB); weights (all 1) and integer labels
    (already 0..n-1) change nothing."""
    from ..operators import SymmetricChannel

    return SymmetricChannel(n, lazy, (1.0 - lazy) * (1.0 / (n - 1)))


#: Bytes a networkx graph and its random walk take per node and per edge (the graph's dicts, the node list,
#: the COO/CSR conversion and the walk's labels; measured: about 490 B per node and edge for a path, 270 B
#: per edge for the conversion), rounded up.
_GRAPH_NODE_BYTES = 1000.0
_GRAPH_EDGE_BYTES = 600.0


def _check_graph(nodes: float, edges: float, what: str) -> None:
    """Before building a networkx graph and its random walk: ``nodes`` and ``edges`` (upper bounds) sized."""
    check_memory(_GRAPH_NODE_BYTES * nodes + _GRAPH_EDGE_BYTES * edges,
                 f"{what} ({nodes:.0f} nodes, up to {edges:.0f} edges) and its random walk")


def _read_edges(path: Path, directed: bool, weighted: bool, ctx: _Ctx, fld: str):
    """An edge list: ``u,v`` or ``u,v,weight`` per line, ``#`` comments; integer-looking labels become ints."""
    import networkx as nx

    if not path.is_file():
        raise ctx.error(fld, f"{path}: no such file")
    try:  # sized before it is read: one line is one edge and at most two new nodes (streamed count)
        with open(path, "rb") as fh:
            n_lines = sum(1 for _ in fh)
    except OSError as exc:
        raise ctx.error(fld, f"{path}: cannot read ({exc})") from None
    _check_graph(2.0 * n_lines, float(n_lines), f"{fld}: the networkx graph of {path.name}")
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

