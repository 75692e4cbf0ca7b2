"""The privacy-utility frontier: certified epsilon' of M then K(theta) beside the estimation MSE."""

from __future__ import annotations

import json
import math

import matplotlib
import networkx as nx
import numpy as np
import pytest

from chainamp import MarkovOperator, amplify, mechanisms
from chainamp.errors import (IncompatibleOperatorsError, InvalidDistributionError, InvalidOperatorError,
                             InvalidParameterError)
from chainamp.utility import FrequencyEstimator, Frontier, FrontierPoint, frontier
from conftest import random_stochastic

matplotlib.use("Agg")

M3 = mechanisms.randomized_response(3, 2.0, labels=["a", "b", "c"])


def test_randomized_response_family_trades_privacy_for_accuracy():
    fr = frontier(mechanisms.randomized_response(4, 2.0), "randomized_response", [8.0, 4.0, 2.0, 1.0, 0.5],
                  n_users=1000)
    eps, mse = fr.epsilons, fr.mses
    assert np.all(np.diff(eps) < 0) and np.all(np.diff(mse) > 0)
    # post-processing never beats M alone, on either axis
    assert np.all(eps <= fr.baseline.epsilon + 1e-12) and np.all(mse >= fr.baseline.mse)
    assert fr.baseline.epsilon == pytest.approx(2.0, rel=1e-6) and fr.baseline.parameter is None


def _family_operator(family, theta, M):
    outs = M.outputs
    if family == "randomized_response":
        return mechanisms.randomized_response(len(outs), theta, labels=outs)
    if family == "lazy_walk":
        return MarkovOperator.random_walk(nx.cycle_graph(list(outs)), laziness=0.5) ** theta
    g = theta
    mat = np.zeros((len(outs), g))
    for j, idx in enumerate(np.array_split(np.arange(len(outs)), g)):
        mat[idx, j] = 1.0
    return MarkovOperator(mat, inputs=outs)


@pytest.mark.parametrize("delta", [0.0, 1e-3], ids=["pure", "approx"])
@pytest.mark.parametrize("family,params", [("randomized_response", [3.0, 1.0]), ("lazy_walk", [0, 1, 3]),
                                           ("coarsening", [4, 3])], ids=["rr", "walk", "coarsening"])
def test_each_row_is_amplify_and_the_estimator(family, params, delta, rng):
    M = MarkovOperator(random_stochastic(rng, 3, 4))
    f = [0.5, 0.3, 0.2]
    fr = frontier(M, family, params, n_users=250, frequencies=f, delta=delta)
    assert fr.parameters == params and fr.delta == delta and fr.frequencies == tuple(f)
    for theta, row in zip(params, fr.rows):
        K = _family_operator(family, theta, M)
        assert row.epsilon == amplify(M, K, delta=delta).epsilon_at(delta)
        assert row.mse == pytest.approx(FrequencyEstimator([M, K]).mse(f, 250), rel=1e-12)
        assert row.note == ""


def test_a_callable_family_and_an_array_it_returns(rng):
    M = MarkovOperator(random_stochastic(rng, 3, 3))
    mix = lambda t: (1 - t) * np.eye(3) + t * np.full((3, 3), 1 / 3)  # noqa: E731
    fr = frontier(M, mix, [0.0, 0.5], n_users=100)
    for t, row in zip([0.0, 0.5], fr.rows):
        K = MarkovOperator(mix(t))
        assert row.epsilon == amplify(M, K).epsilon_at(0.0)
        assert row.mse == pytest.approx(FrequencyEstimator([M, K]).mse([1 / 3] * 3, 100), rel=1e-12)
    assert "the family <lambda>" in str(fr)
    assert frontier(M, lambda name: mechanisms.randomized_response(3, 1.0), ["x"], n_users=10).parameters == ["x"]


def test_coarsening_below_the_number_of_inputs_is_not_invertible():
    fr = frontier(M3, "coarsening", [3, 2, 1], n_users=100)
    assert math.isfinite(fr.rows[0].mse)
    for row, rank in zip(fr.rows[1:], (2, 1)):
        assert row.mse == math.inf and f"rank {rank} < 3 inputs" in row.note
    assert fr.rows[2].epsilon == 0.0  # one group: the output says nothing
    assert "no unbiased estimator" in str(fr)


def test_lazy_walk_on_a_given_graph():
    G = nx.path_graph(["a", "b", "c"])
    fr = frontier(M3, "lazy_walk", [0, 2], n_users=100, graph=G, laziness=0.25)
    K = MarkovOperator.random_walk(G, laziness=0.25) ** 2
    assert fr.rows[0].epsilon == pytest.approx(fr.baseline.epsilon) and fr.rows[0].mse == pytest.approx(
        fr.baseline.mse)
    assert fr.rows[1].epsilon == amplify(M3, K).epsilon_at(0.0)
    assert "laziness 0.25" in fr.family and "given graph" in fr.family


def test_frontier_prints_plots_and_serialises():
    fr = frontier(M3, "coarsening", [3, 2], n_users=100)
    assert isinstance(fr, Frontier) and isinstance(fr.rows[0], FrontierPoint)
    text = str(fr)
    assert text.splitlines()[0].startswith("Each row post-processes M with merging its outputs")
    assert "M alone (finite mechanism 3x3)" in text and "parameter" in text and "inf" in text
    assert "<table>" in fr._repr_html_() and "Each row" in fr._repr_html_()
    d = json.loads(json.dumps(fr.to_dict()))
    assert d["rows"][1]["mse"] == "inf" and d["baseline"]["parameter"] is None
    assert repr(fr).startswith("<Frontier M=finite mechanism 3x3; 2 rows")
    fig = fr.plot()
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "certified epsilon'" in ax.get_xlabel()
    assert any("not drawn" in t.get_text() for t in ax.texts)
    assert {t.get_text() for t in ax.texts} >= {"3"}
    import matplotlib.pyplot as plt

    own_fig, own_ax = plt.subplots()
    assert fr.plot(ax=own_ax) is own_fig
    plt.close(own_fig)
    wide = frontier(mechanisms.randomized_response(3, 4.0), "randomized_response", [6.0, 0.05], n_users=10)
    assert wide.plot().axes[0].get_xscale() == "log"


@pytest.mark.parametrize("kwargs,error,match", [
    ({"family": "shuffle"}, InvalidParameterError, "family must be one of"),
    ({"family": 3}, TypeError, "family must be a string"),
    ({"parameters": []}, InvalidParameterError, "at least one value"),
    ({"parameters": "123"}, TypeError, "parameters must be a sequence"),
    ({"parameters": {1.0}}, TypeError, "parameters must be a sequence"),
    ({"n_users": 0}, InvalidParameterError, "n_users must be >= 1"),
    ({"n_users": 10.5}, TypeError, "n_users must be an integer"),
    ({"frequencies": [0.5, 0.5]}, InvalidDistributionError, "frequencies must have 3 entries"),
    ({"delta": 1.5}, InvalidParameterError, r"delta must be in \[0, 1\]"),
    ({"laziness": 2.0}, InvalidParameterError, r"laziness must be in \[0, 1\]"),
    ({"graph": nx.path_graph(3)}, InvalidParameterError, "graph is only used with family='lazy_walk'"),
    ({"parameters": [1.0, -1.0]}, InvalidParameterError, r"parameters\[1\] must be >= 0"),
    ({"parameters": [math.inf]}, InvalidParameterError, r"parameters\[0\] must be finite"),
    ({"family": "lazy_walk", "parameters": [1.5]}, TypeError, r"parameters\[0\] must be an integer"),
    ({"family": "lazy_walk", "parameters": [-1]}, InvalidParameterError, r"parameters\[0\] must be >= 0"),
    ({"family": "lazy_walk", "graph": "abc"}, TypeError, "graph must be a networkx graph"),
    ({"family": "lazy_walk", "graph": nx.path_graph(3)}, IncompatibleOperatorsError,
     "graph must have exactly M's outputs"),
    ({"family": "coarsening", "parameters": [4]}, InvalidParameterError, r"at most the number of M's outputs \(3\)"),
    ({"family": "coarsening", "parameters": [0]}, InvalidParameterError, r"parameters\[0\] must be >= 1"),
    ({"family": lambda t: "K"}, TypeError, "must return a MarkovOperator or a 2-D array"),
    ({"family": lambda t: np.eye(3), "graph": nx.path_graph(3)}, InvalidParameterError, "graph is only used"),
], ids=["family", "family-type", "no-parameters", "string-parameters", "set-parameters", "n_users",
        "n_users-type", "frequencies", "delta", "laziness", "graph-with-rr", "rr-negative", "rr-inf",
        "walk-float", "walk-negative", "graph-type", "graph-nodes", "coarsening-too-many", "coarsening-zero",
        "callable-bad-return", "graph-with-callable"])
def test_validation(kwargs, error, match):
    args = {"family": "randomized_response", "parameters": [1.0], "n_users": 100, **kwargs}
    with pytest.raises(error, match=match):
        frontier(M3, args.pop("family"), args.pop("parameters"), **args)


def test_mechanism_validation():
    with pytest.raises(TypeError, match="mechanism must be a MarkovOperator or a 2-D array"):
        frontier("M", "randomized_response", [1.0], n_users=10)
    with pytest.raises(InvalidOperatorError, match="must be 2-D"):  # a pipeline is not taken as M (not exact)
        frontier([np.eye(2), np.eye(2)], "randomized_response", [1.0], n_users=10)
    fr = frontier(np.array([[0.75, 0.25], [0.25, 0.75]]), "randomized_response", np.array([1.0]), n_users=10)
    assert fr.rows[0].epsilon < math.log(3) + 1e-9
