"""Pins the public API and the layering rule of the architecture (imports only point downward)."""

from __future__ import annotations

import ast
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
    "sweep", "spectral_gap_method", "network", "gossip_privacy", "NetworkPrivacy",
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


def _imports(pkg: pathlib.Path, path: pathlib.Path):
    """(line, target module, imported name or None) for every import of the package at import time."""
    me = _module_name(pkg, path)
    package = me if path.name == "__init__.py" else me[:-1]
    for node in _import_time_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = tuple(alias.name.split("."))
                if target[0] == pkg.name:
                    yield node.lineno, target, None
            continue
        if node.level:
            base = package[:len(package) - (node.level - 1)]
            target = base + (tuple(node.module.split(".")) if node.module else ())
        elif node.module and node.module.split(".")[0] == pkg.name:
            target = tuple(node.module.split("."))
        else:
            continue
        for alias in node.names:
            if alias.name != "*" and _is_module(pkg, target + (alias.name,)):
                yield node.lineno, target + (alias.name,), None
            else:
                yield node.lineno, target, alias.name


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
