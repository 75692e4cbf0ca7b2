"""Pins the public API and the layering rule of the architecture (imports only point downward)."""

from __future__ import annotations

import ast
import functools
import importlib
import pathlib
import re

import pytest

import chainamp

TOP_LEVEL = {
    "AmplificationReport", "BOUND_SOURCES", "Bound", "Calibration", "ChainAnalysis", "ChainampError", "Coefficients",
    "DP", "DobrushinResult", "DoeblinResult", "ExactProfile", "IncompatibleOperatorsError", "InputMechanism",
    "InvalidDistributionError", "InvalidMechanismError", "InvalidOperatorError", "InvalidParameterError",
    "InvalidPipelineError", "LDPGuarantee", "MarkovOperator", "MixingConditions", "PrivacyProfile", "SolverError",
    "StepResult", "StepsReport", "UltraMixingResult", "__version__", "amplify", "amplify_steps", "analyze_chain",
    "as_input_mechanism", "calibrate", "communicating_classes", "compose_operators", "diffusion", "dobrushin",
    "dobrushin_curve", "doeblin", "doeblin_amplifies_delta", "doeblin_frontier", "errors", "hockey_stick",
    "hockey_stick_curve", "hockey_stick_order", "is_aperiodic", "is_irreducible", "kron", "ldp_bound",
    "ldp_guarantee", "log_likelihood_ratios", "lp", "mechanisms", "mixing_conditions", "mixing_time",
    "neighbor_pairs", "period", "periods", "privacy_profile", "recurrent_classes", "relaxation_time", "renyi",
    "renyi_divergence", "scaled_by_exp", "spectral_gap", "stationary_distribution", "stationary_distributions",
    "theorem1_dobrushin", "theorem1_doeblin", "theorem1_hockey_stick", "theorem1_ultra_mixing",
    "tight_pure_epsilon", "total_variation", "transient_states", "ultra_mixing",
    "utility", "design", "accounting", "DominatingPair", "compose", "amplify_reports", "ResourceLimitError", "resource_limits", "StructuredOperator", "SymmetricChannel", "KroneckerOperator",
    "sweep", "spectral_gap_method", "network", "gossip_privacy", "NetworkPrivacy", "shuffle", "amplify_shuffled",
    "ShuffleReport",
}

NAMESPACES = {
    "mechanisms": {"binary_randomized_response", "randomized_response", "nu_randomized_response", "rappor_permanent",
                   "rappor_instantaneous", "RapporPipeline", "rappor_pipeline", "symmetric_unary_encoding",
                   "optimized_unary_encoding", "unary_encoding", "exponential_mechanism",
                   "from_pure_ldp", "from_multi_freq_ldpy", "LongitudinalPipeline", "MULTI_FREQ_LDPY_PROTOCOLS"},
    "lp": {"LPSolution", "LP_SOLVERS", "DEFAULT_LP_SOLVER", "doeblin_lp", "ultra_mixing_lp", "hockey_stick_lp",
           "hockey_stick_lp_pairs"},
    "plot": {"plot_report", "plot_steps", "plot_operator", "plot_graph"},
    "report": {"write_report"},
    "cli": {"main", "build_parser"},
    "utility": {"FrequencyEstimator", "FrequencyEstimate", "frontier", "Frontier", "FrontierPoint"},
    "design": {"optimal_post_processing", "optimal_mixing_operator", "DesignResult"},
}

# names an issue spells out: the public contract
CONTRACT = {
    "renyi": {"noisy_sgd_rdp", "coupling_bound", "rdp_to_dp", "RDPCurve"},
    "diffusion": {"BrownianMotion", "OrnsteinUhlenbeck", "ou_condition"},
    "io": {"load_pipeline", "load_operator", "audit"},
    "network": {"gossip_privacy", "NetworkPrivacy"},
}


def test_top_level_api_is_pinned():
    assert set(chainamp.__all__) == TOP_LEVEL
    for name in chainamp.__all__:
        assert hasattr(chainamp, name), name


@pytest.mark.parametrize("module", sorted(NAMESPACES), ids=str)
def test_namespace_api_is_pinned(module):
    mod = importlib.import_module(f"chainamp.{module}")
    assert set(mod.__all__) == NAMESPACES[module]


@pytest.mark.parametrize("module", sorted(CONTRACT), ids=str)
def test_contract_names_exist(module):
    mod = importlib.import_module(f"chainamp.{module}")
    assert CONTRACT[module] <= set(mod.__all__)
    for name in mod.__all__:
        assert hasattr(mod, name), name


def test_contract_signatures():
    import inspect

    assert list(inspect.signature(chainamp.MarkovOperator.from_graph).parameters)[:3] == [
        "G", "weight", "normalize"]
    assert list(inspect.signature(chainamp.renyi.noisy_sgd_rdp).parameters)[:7] == [
        "n", "i", "C", "sigma", "eta", "beta", "rho"]
    assert list(inspect.signature(chainamp.calibrate).parameters)[:4] == ["family", "K", "epsilon", "delta"]
    # issue 13: the leading parameters with their kinds (P: positional or keyword, K: keyword only), and the
    # fields of a design's result
    def leading(func, count):
        kinds = {inspect.Parameter.POSITIONAL_OR_KEYWORD: "P", inspect.Parameter.KEYWORD_ONLY: "K"}
        return [(p.name, kinds.get(p.kind, p.kind.name)) for p in inspect.signature(func).parameters.values()][:count]

    assert leading(chainamp.utility.FrequencyEstimator, 2) == [("channel", "P"), ("method", "P")]
    assert leading(chainamp.utility.frontier, 6) == [("mechanism", "P"), ("family", "P"), ("parameters", "P"),
                                                     ("n_users", "K"), ("frequencies", "K"), ("delta", "K")]
    assert leading(chainamp.design.optimal_post_processing, 5) == [("M", "P"), ("epsilon", "P"), ("delta", "K"),
                                                                   ("loss", "K"), ("prior", "K")]
    assert leading(chainamp.design.optimal_mixing_operator, 5) == [("n", "P"), ("gamma", "P"), ("coefficient", "K"),
                                                                   ("loss", "K"), ("prior", "K")]
    import dataclasses

    assert [f.name for f in dataclasses.fields(chainamp.design.DesignResult)][:4] == [
        "K", "objective", "dual_bound", "report"]

    # issue 12: composition, many reports, dominating pairs and the adapters
    assert leading(chainamp.compose, 2) == [("items", "P"), ("counts", "P")]
    assert inspect.signature(chainamp.compose).parameters["counts"].default is None
    assert leading(chainamp.amplify_reports, 4) == [("mechanism", "P"), ("K", "P"), ("reports", "P"),
                                                    ("memoized", "K")]
    assert inspect.signature(chainamp.amplify_reports).parameters["memoized"].default is True
    assert [f.name for f in dataclasses.fields(chainamp.DominatingPair)][:2] == ["p", "q"]
    assert callable(chainamp.DominatingPair.delta)
    for method in ("dominating_pair", "to_dp_accounting", "to_opendp", "from_dp_accounting"):
        assert callable(getattr(chainamp.PrivacyProfile, method)), method
    assert leading(chainamp.mechanisms.from_pure_ldp, 1) == [("client", "P")]
    assert leading(chainamp.mechanisms.from_multi_freq_ldpy, 3) == [("protocol", "P"), ("k", "P"), ("epsilon", "P")]


#: the layers of docs/architecture.md: a module may import (at module level) only from its own folder or a
#: folder of a lower layer; the facade modules at the top of the package (the public namespaces) come last
FOLDER_LAYERS = {"errors": 0, "_numerics": 1, "operators": 2, "mixing": 3, "privacy": 4, "amplification": 5,
                 "accounting": 6, "utility": 6, "renyi": 6, "diffusion": 6, "design": 7, "network": 7, "shuffle": 7,
                 "audit": 8}
FACADE = {"__init__", "__main__", "mechanisms", "lp", "io", "plot", "report", "cli"}
FACADE_LAYER = 9


def _module_name(pkg: pathlib.Path, path: pathlib.Path) -> tuple[str, ...]:
    parts = (pkg.name,) + path.relative_to(pkg).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _folder(pkg: pathlib.Path, module: tuple[str, ...]) -> str:
    """The layer folder of a module: its first component below the package, or the facade for the package itself
    and the modules beside ``__init__`` (``errors`` is a folder of its own, the lowest)."""
    if len(module) == 1:
        return "__init__"
    if len(module) == 2 and not (pkg / module[1]).is_dir():
        return module[1] if module[1] in FOLDER_LAYERS else module[1] + ".py"
    return module[1]


def _layer(folder: str) -> int | None:
    if folder in FOLDER_LAYERS:
        return FOLDER_LAYERS[folder]
    if folder == "__init__" or folder.removesuffix(".py") in FACADE:
        return FACADE_LAYER
    return None


def _is_module(pkg: pathlib.Path, module: tuple[str, ...]) -> bool:
    rel = pkg.joinpath(*module[1:])
    return rel.with_suffix(".py").is_file() or (rel / "__init__.py").is_file()


def _import_time_nodes(tree: ast.AST):
    """Import statements that run when the module is imported: not inside a function (lazy imports in functions
    and methods are the documented exception, e.g. ``AmplificationReport.plot`` importing the plotting module)."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(pkg: pathlib.Path, package: tuple[str, ...], node: ast.Import | ast.ImportFrom):
    """(line, target module, imported name or None) for each name an import statement takes from the package."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            target = tuple(alias.name.split("."))
            if target[0] == pkg.name:
                yield node.lineno, target, None
        return
    if node.level:
        base = package[:len(package) - (node.level - 1)]
        target = base + (tuple(node.module.split(".")) if node.module else ())
    elif node.module and node.module.split(".")[0] == pkg.name:
        target = tuple(node.module.split("."))
    else:
        return
    for alias in node.names:
        if alias.name != "*" and _is_module(pkg, target + (alias.name,)):
            yield node.lineno, target + (alias.name,), None
        else:
            yield node.lineno, target, alias.name


def _package_of(pkg: pathlib.Path, path: pathlib.Path) -> tuple[str, ...]:
    me = _module_name(pkg, path)
    return me if path.name == "__init__.py" else me[:-1]


@functools.lru_cache(maxsize=None)
def _parsed(path: str, mtime_ns: int, size: int) -> ast.AST:
    """The syntax tree of the file at ``path`` (read-only; cached by path, mtime and size: the package's ~180 modules
    were parsed three times by the import tests, ~1.5 s of CPU)."""
    return ast.parse(pathlib.Path(path).read_text(), path)


def _parse(path: pathlib.Path) -> ast.AST:
    stat = path.stat()
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)


def _imports(pkg: pathlib.Path, path: pathlib.Path):
    """(line, target module, imported name or None) for every import of the package at import time."""
    package = _package_of(pkg, path)
    for node in _import_time_nodes(_parse(path)):
        yield from _resolve(pkg, package, node)


def layering_violations(pkg: pathlib.Path) -> list[str]:
    """Every breach of the architecture's import rules in the package at ``pkg``, one message each naming the
    offending import: a module outside the known layers, an import pointing up a layer, a private name (or a
    module inside another folder) imported across folders, and import circles among modules."""
    problems, graph = [], {}
    for path in sorted(pkg.rglob("*.py")):
        me = _module_name(pkg, path)
        where = str(path.relative_to(pkg.parent))
        src_folder = _folder(pkg, me)
        src_layer = _layer(src_folder)
        if src_layer is None:
            problems.append(f"{where} is in no layer of the architecture (folders: {sorted(FOLDER_LAYERS)})")
            continue
        graph.setdefault(me, set())
        for line, target, name in _imports(pkg, path):
            graph[me].add(target)
            dst_folder = _folder(pkg, target)
            dst_layer = _layer(dst_folder)
            what = f"{where}:{line} imports {'.'.join(target)}" + (f".{name}" if name else "")
            if dst_layer is None:
                problems.append(f"{what}: {'.'.join(target)} is in no layer")
            elif dst_layer > src_layer:
                problems.append(f"{what}: layer {dst_layer} ({dst_folder}) is above layer {src_layer} ({src_folder})")
            if dst_folder == src_folder or src_layer == FACADE_LAYER:
                if src_layer == FACADE_LAYER and name and name.startswith("_") and not name.startswith("__"):
                    problems.append(f"{what}: the private name {name} leaves its folder")
                continue
            if len(target) > 2:
                problems.append(f"{what}: import it from {'.'.join(target[:2])} (the folder's __init__), "
                                f"not from a module inside another folder")
            if name and name.startswith("_"):
                problems.append(f"{what}: the private name {name} crosses folders; make it public in "
                                f"{'.'.join(target[:2])}/__init__.py or move it down a layer")
    # circles: depth-first search over the module graph (a package stands for its __init__)
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append("import circle: " + " -> ".join(".".join(m) for m in cycle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return problems


PKG = pathlib.Path(chainamp.__file__).parent


def test_imports_point_down_with_no_circles_and_no_private_names_across_folders():
    assert layering_violations(PKG) == []


def _fake_package(root: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    pkg = root / "chainamp"
    for rel, text in {"__init__.py": "", "errors.py": "", "operators/__init__.py": "", "mixing/__init__.py": "",
                      **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


@pytest.mark.parametrize("files,message", [
    ({"operators/markov.py": "from ..mixing import dobrushin\n"},
     r"operators/markov.py:1 imports chainamp.mixing.dobrushin: layer 3 \(mixing\) is above layer 2"),
    ({"mixing/lp.py": "from ..operators import _as_matrix\n"},
     r"mixing/lp.py:1 imports chainamp.operators._as_matrix: the private name _as_matrix crosses folders"),
    ({"mixing/lp.py": "from ..operators.markov import as_matrix\n", "operators/markov.py": ""},
     r"imports chainamp.operators.markov.as_matrix: import it from chainamp.operators"),
    ({"mixing/a.py": "from .b import x\n", "mixing/b.py": "import chainamp.mixing.a\n"},
     r"import circle: chainamp.mixing.a -> chainamp.mixing.b -> chainamp.mixing.a"),
    ({"mixing/a.py": "if True:\n    from . import helper\n", "mixing/__init__.py": "from .a import *\nhelper = 1\n"},
     r"import circle: chainamp.mixing -> chainamp.mixing.a -> chainamp.mixing"),
    ({"helpers.py": ""}, r"chainamp/helpers.py is in no layer"),
    ({"lp.py": "from .mixing import _hidden\n"}, r"lp.py:1 imports chainamp.mixing._hidden: the private name _hidden"),
], ids=["upward", "private-name", "inside-another-folder", "circle", "circle-through-init", "no-layer",
        "facade-private"])
def test_layering_check_names_the_offending_import(tmp_path, files, message):
    problems = layering_violations(_fake_package(tmp_path, files))
    assert len(problems) == 1 and re.search(message, problems[0]), problems


def test_layering_check_allows_lazy_imports_and_imports_within_a_folder(tmp_path):
    pkg = _fake_package(tmp_path, {
        "operators/markov.py": "from ..errors import E\nfrom .products import _err\n"
                               "def plot():\n    from ..mixing import draw\n",
        "operators/products.py": "", "mixing/core.py": "from ..operators import MarkovOperator\n"})
    assert layering_violations(pkg) == []


def _dynamic_import(node: ast.AST) -> ast.Import | ast.ImportFrom | None:
    """``__import__(...)`` or ``importlib.import_module(...)`` of a name written in the source (a literal, or
    ``f"{__package__}.module"``) as the import statement it stands for; None for anything else."""
    if not (isinstance(node, ast.Call) and node.args and (
            (isinstance(node.func, ast.Name) and node.func.id in ("__import__", "import_module"))
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"))):
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and not arg.value.startswith("."):
        return ast.Import(names=[ast.alias(name=arg.value)], lineno=node.lineno)
    parts = arg.values if isinstance(arg, ast.JoinedStr) else ()
    if (len(parts) == 2 and isinstance(parts[0], ast.FormattedValue) and isinstance(parts[0].value, ast.Name)
            and parts[0].value.id == "__package__" and isinstance(parts[1], ast.Constant)
            and str(parts[1].value).startswith(".")):
        return ast.ImportFrom(module=parts[1].value[1:], names=[ast.alias(name="_")], level=1, lineno=node.lineno)
    return None


def _function_level_imports(tree: ast.AST):
    """(import statement, qualified name of its function) for every import that runs only when a function or
    method is called: the complement of :func:`_import_time_nodes`, with dynamic imports (``__import__``,
    ``importlib.import_module`` of a name in the source) read as the statements they stand for."""
    def walk(node, scope, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                name = getattr(child, "name", "<lambda>")
                yield from walk(child, scope + (name,), in_function or not isinstance(child, ast.ClassDef))
                continue
            if in_function:
                found = child if isinstance(child, (ast.Import, ast.ImportFrom)) else _dynamic_import(child)
                if found is not None:
                    yield found, ".".join(scope)
            yield from walk(child, scope, in_function)

    yield from walk(tree, (), False)


#: Function-level imports that close a circle inside a folder on purpose: (importing file, function, imported
#: module) -> the reason. Only documented conveniences belong here: the entry points of an optional dependency
#: imported on use, and upward conveniences such as a ``.plot()`` method importing the plotting module (as
#: pandas does; today's ``.plot()`` methods import across folders, which this check does not concern, and
#: close no circle). A piece two modules share moves below both instead. An entry that no longer closes a
#: circle fails the test, so the list never outlives its reasons.
FUNCTION_LEVEL_ALLOWED = {
    # MarkovOperator.from_dask / .to_dask: the documented entry points of the optional dask backend
    # (docs/distributed.md); DaskMarkovOperator subclasses MarkovOperator, so dask_backed.py imports markov.py
    # at module level and the base class reaches its dask subclass only when one of these is called.
    ("operators/markov.py", "MarkovOperator.from_dask", "chainamp.operators.dask_backed"):
        "optional dependency (dask): the entry point builds the dask-backed subclass",
    ("operators/markov.py", "MarkovOperator.to_dask", "chainamp.operators.dask_backed"):
        "optional dependency (dask): the conversion lives with the dask-backed subclass",
}


def _function_level_circles(pkg: pathlib.Path):
    """(allow-list key, message) for every function-level import of a sibling module (same folder) that itself,
    at import time and transitively within the folder, imports the importing module."""
    paths = {_module_name(pkg, path): path for path in sorted(pkg.rglob("*.py"))}
    folder = {module: _folder(pkg, module) for module in paths}
    below = {module: sorted({t for _, t, _ in _imports(pkg, path) if t in paths and folder[t] == folder[module]})
             for module, path in paths.items()}

    def chain(start, goal):
        """The first module-level import chain from ``start`` to ``goal`` within the folder, or None."""
        seen, todo = {start}, [(start,)]
        while todo:
            walk = todo.pop(0)
            if walk[-1] == goal:
                return walk
            for nxt in below[walk[-1]]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(walk + (nxt,))
        return None

    for me, path in paths.items():
        where = str(path.relative_to(pkg.parent))
        for node, function in _function_level_imports(_parse(path)):
            for line, target, _ in _resolve(pkg, _package_of(pkg, path), node):
                if target == me or target not in paths or folder[target] != folder[me]:
                    continue
                back = chain(target, me)
                if back is None:
                    continue
                key = (str(path.relative_to(pkg)), function, ".".join(target))
                yield key, (f"{where}:{line} ({function}) imports {'.'.join(target)} inside a function, closing the "
                            f"circle {' -> '.join('.'.join(m) for m in back)}: move the shared "
                            f"piece below both modules (or, for a documented convenience, allow it in "
                            f"FUNCTION_LEVEL_ALLOWED with its reason)")


def function_level_circles(pkg: pathlib.Path, allowed=None) -> list[str]:
    """The import circles inside folders closed by a function-level import, one message each naming the line,
    minus the ``allowed`` ones (a mapping from (file, function, module) to the reason); an allowed entry that no
    longer closes a circle is reported too, so the allow-list never outlives its reason."""
    allowed = FUNCTION_LEVEL_ALLOWED if allowed is None else allowed
    problems, used = [], set()
    for key, message in _function_level_circles(pkg):
        if key in allowed:
            used.add(key)
        else:
            problems.append(message)
    problems += [f"FUNCTION_LEVEL_ALLOWED: {key} closes no circle any more; remove it"
                 for key in sorted(set(allowed) - used)]
    return problems


def test_every_folder_has_a_layer():
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert folders == set(FOLDER_LAYERS) - {"errors"}


def test_cvxpy_only_in_the_lp_modules():
    for path in PKG.rglob("*.py"):
        if not path.stem.lstrip("_").startswith("lp"):
            assert "import cvxpy" not in path.read_text(), path.relative_to(PKG)


def test_public_modules_declare_all():
    for path in PKG.rglob("*.py"):
        if path.name != "__main__.py":
            assert "__all__" in path.read_text(), path.relative_to(PKG)


def test_no_module_above_500_lines():
    long = {str(p.relative_to(PKG)): n for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500}
    assert long == {}


def test_import_chainamp_does_not_import_cvxpy_until_lp_is_used(fresh_import):
    assert "cvxpy" not in fresh_import["import chainamp"]
    assert "cvxpy" in fresh_import["chainamp.lp.doeblin_lp"] and fresh_import["lp in chainamp.__all__"] == {"lp"}


HEAVY_ON_USE = ("cvxpy", "matplotlib", "networkx", "scipy.optimize", "scipy.integrate", "scipy.sparse.csgraph",
                "dask", "distributed", "tqdm", "numba", "dp_accounting", "pandas", "scipy.special")


def test_import_chainamp_imports_no_heavy_dependency(fresh_import):
    """Every CLI call pays `import chainamp` (issue 10: under 0.5 s): the dependencies below are imported where
    they are used, never at import time."""
    assert [m for m in HEAVY_ON_USE if m in fresh_import["import chainamp"]] == []


def test_no_circle_inside_a_folder_is_closed_by_a_function_level_import():
    """Issue 18: a function importing a sibling module that imports it back (at import time, through the
    folder) is an import circle all the same; only the commented FUNCTION_LEVEL_ALLOWED entries may."""
    assert function_level_circles(PKG) == []


@pytest.mark.parametrize("files,message", [
    ({"mixing/a.py": "from .b import x\n", "mixing/b.py": "import math\n\ndef f():\n    from .a import y\n"},
     r"chainamp/mixing/b.py:4 \(f\) imports chainamp.mixing.a inside a function, closing the circle "
     r"chainamp.mixing.a -> chainamp.mixing.b: move the shared piece below"),
    ({"mixing/a.py": "from .c import x\n", "mixing/c.py": "from . import b\n",
      "mixing/b.py": "def f():\n    if True:\n        import chainamp.mixing.a\n"},
     r"mixing/b.py:3 \(f\) imports chainamp.mixing.a .* chainamp.mixing.a -> chainamp.mixing.c -> chainamp.mixing.b"),
    ({"operators/markov.py": "class K:\n    def kron(self):\n        from .kronecker import kron\n",
      "operators/kronecker.py": "from .markov import K\n"},
     r"operators/markov.py:3 \(K.kron\) imports chainamp.operators.kronecker"),
    ({"mixing/__init__.py": "from .a import *\n", "mixing/a.py": "def f():\n    from . import dobrushin\n"},
     r"mixing/a.py:2 \(f\) imports chainamp.mixing inside .* circle chainamp.mixing -> chainamp.mixing.a"),
    ({"mixing/a.py": "from .b import x\n",
      "mixing/b.py": "def f():\n    return __import__(f\"{__package__}.a\", fromlist=['_'])\n"},
     r"mixing/b.py:2 \(f\) imports chainamp.mixing.a"),
    ({"mixing/a.py": "from .b import x\n",
      "mixing/b.py": "import importlib\n\nf = lambda: importlib.import_module('chainamp.mixing.a')\n"},
     r"mixing/b.py:3 \(<lambda>\) imports chainamp.mixing.a"),
], ids=["direct", "transitive", "method", "through-init", "dunder-import", "import-module"])
def test_function_level_circle_check_names_the_offending_import(tmp_path, files, message):
    problems = function_level_circles(_fake_package(tmp_path, files), allowed={})
    assert len(problems) == 1 and re.search(message, problems[0]), problems
    assert layering_violations(_fake_package(tmp_path, files)) == []  # invisible to the import-time check


def test_function_level_circle_check_allows_what_closes_no_circle_and_the_allow_list(tmp_path):
    pkg = _fake_package(tmp_path, {
        # a sibling that does not import back, an upward convenience across folders, an optional dependency
        "mixing/a.py": "from ..operators import K\n\ndef f():\n    from .b import g\n    from . import lp\n",
        "mixing/b.py": "def g():\n    pass\n", "mixing/lp.py": "import cvxpy\n",
        "operators/__init__.py": "class K:\n    def plot(self):\n        from ..mixing import a\n",
        # a circle on purpose, allowed with its reason
        "operators/markov.py": "class M:\n    def to_dask(self):\n        from .dask_backed import to_dask\n",
        "operators/dask_backed.py": "from .markov import M\n"})
    allowed = {("operators/markov.py", "M.to_dask", "chainamp.operators.dask_backed"): "optional dependency"}
    assert function_level_circles(pkg, allowed=allowed) == []
    assert len(function_level_circles(pkg, allowed={})) == 1
    stale = {**allowed, ("mixing/a.py", "f", "chainamp.mixing.b"): "closes nothing"}
    assert function_level_circles(pkg, allowed=stale) == [
        "FUNCTION_LEVEL_ALLOWED: ('mixing/a.py', 'f', 'chainamp.mixing.b') closes no circle any more; remove it"]
