"""Pins the public API and the layering rule of the architecture (imports only point downward)."""

from __future__ import annotations

import ast
import importlib
import pathlib

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
}

NAMESPACES = {
    "mechanisms": {"binary_randomized_response", "randomized_response", "nu_randomized_response", "rappor_permanent",
                   "rappor_instantaneous", "RapporPipeline", "rappor_pipeline", "symmetric_unary_encoding",
                   "optimized_unary_encoding", "exponential_mechanism"},
    "lp": {"LPSolution", "LP_SOLVERS", "DEFAULT_LP_SOLVER", "doeblin_lp", "ultra_mixing_lp", "hockey_stick_lp",
           "hockey_stick_lp_pairs"},
    "plot": {"plot_report", "plot_steps", "plot_operator", "plot_graph"},
    "report": {"write_report"},
    "cli": {"main", "build_parser"},
}

# names an issue spells out: the public contract
CONTRACT = {
    "renyi": {"noisy_sgd_rdp", "coupling_bound", "rdp_to_dp", "RDPCurve"},
    "diffusion": {"BrownianMotion", "OrnsteinUhlenbeck", "ou_condition"},
    "io": {"load_pipeline", "load_operator", "audit"},
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


LAYERS = {
    "errors": 1, "_validation": 1, "_logmath": 1, "_tolerances": 1, "_table": 1, "_progress": 1,
    "operators": 2, "chain": 2, "_products": 2,
    "divergences": 3, "mixing": 3, "_pairwise": 3, "lp": 3,
    "mechanisms": 4, "profiles": 4,
    "bounds": 5, "amplify": 5, "steps": 5, "calibration": 5, "renyi": 5, "_renyi_sgd": 5, "_renyi_examples": 5,
    "diffusion": 5,
    "report": 6, "plot": 6, "io": 6, "_pipeline": 6, "cli": 6, "__main__": 6, "__init__": 7,
}


def _module_level_imports(path: pathlib.Path) -> set[str]:
    """chainamp modules imported at module level (function-level lazy imports are the documented
    exception: e.g. ``AmplificationReport.plot`` delegates to :mod:`chainamp.plot`)."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("chainamp."):
            found.add(node.module.split(".")[1])
    return found


def test_every_module_has_a_layer_and_imports_only_downward():
    pkg = pathlib.Path(chainamp.__file__).parent
    for path in sorted(pkg.glob("*.py")):
        name = path.stem
        assert name in LAYERS, f"{name}.py has no layer in the architecture"
        for dep in _module_level_imports(path):
            assert LAYERS[dep] <= LAYERS[name], f"{name} (layer {LAYERS[name]}) imports {dep} (layer {LAYERS[dep]})"


def test_cvxpy_only_in_lp():
    pkg = pathlib.Path(chainamp.__file__).parent
    for path in pkg.glob("*.py"):
        if path.stem != "lp":
            assert "import cvxpy" not in path.read_text(), path.name


def test_public_modules_declare_all():
    pkg = pathlib.Path(chainamp.__file__).parent
    for path in pkg.glob("*.py"):
        if not path.stem.startswith("_"):
            assert "__all__" in path.read_text(), path.name
