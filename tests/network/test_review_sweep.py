"""Random adversarial sweep of gossip_privacy against the review's independent exact reference.

Cases (tests/network/_review_cases.py): connected graphs of 3-12 nodes, Metropolis and lazy rules, non-symmetric
doubly stochastic mixtures of permutations, weights of 1e-12, 1e-200 and 2^-1000, time-varying schedules,
colluders, per-node sigma from 1e-8 to 1e8, sensitivities from 1e-6 to 1e6, 1-40 rounds, both views. Each checks:
no mu below the exact one, zero exactly for untouched nodes (and only for them), a 'full rank' claim true, a
certified value within its reported margin of the exact one.
"""

from __future__ import annotations

import numpy as np
import pytest

from _review_cases import compare, random_case, run_case


def _check(seed, **kw):
    case = random_case(np.random.default_rng(seed), **kw)
    res, ref = run_case(case)
    problems = compare(res, ref, case["sens"], case["sigma"])
    assert not problems, (seed, case["n"], case["T"], case["view"], case["sched"], case["col"], problems)


@pytest.mark.parametrize("seed", range(12), ids=[f"seed{s}" for s in range(12)])
def test_random_small_cases(seed):
    _check(seed, max_rows=10, max_n=7)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1300), ids=[f"seed{s}" for s in range(1000, 1300)])
def test_random_cases_sweep(seed):
    _check(seed, max_rows=20)


# ------------------------------------------------------------------ symmetric graphs: rank-deficient views
import networkx as nx  # noqa: E402

from chainamp.network import gossip_matrix, gossip_privacy  # noqa: E402

from _review_reference import exact_mu_all  # noqa: E402

_GRAPHS = {"Q3": nx.hypercube_graph(3), "C8": nx.cycle_graph(8), "K33": nx.complete_bipartite_graph(3, 3),
           "petersen": nx.petersen_graph()}


def _sigma(kind, n, T):
    rng = np.random.default_rng(T * 10 + kind)
    return [np.ones(n), np.where(np.arange(n) % 2 == 0, 1e-8, 1e8),
            np.exp(rng.uniform(np.log(1e-8), np.log(1e8), n)), rng.uniform(0.5, 2.0, n)][kind]


def _symmetric(name, rule, T, kind, view, collude):
    G = nx.convert_node_labels_to_integers(_GRAPHS[name])
    n = G.number_of_nodes()
    W = gossip_matrix(G, rule).matrix
    sigma = _sigma(kind, n, T)
    col = [n - 1] if collude else []
    sens = 1e-6 if kind == 1 else 3.0
    res = gossip_privacy(W, T, sigma=sigma, sensitivity=sens, observers=[0], colluders=col or None, view=view,
                         progress=False)
    ref = exact_mu_all([W] * T, {0, *col}, sigma, view, sens)
    problems = compare(res, ref, sens, sigma)
    assert not problems, problems
    return res


FAST = [("petersen", "lazy", 2, 3, "received", False), ("K33", "metropolis", 6, 2, "neighbourhood", False),
        ("petersen", "metropolis", 6, 0, "neighbourhood", False), ("Q3", "lazy", 4, 3, "received", True),
        ("C8", "metropolis", 4, 1, "received", False), ("K33", "lazy", 2, 3, "received", True)]


@pytest.mark.parametrize("case", FAST, ids=["-".join(map(str, c)) for c in FAST])
def test_symmetric_rank_deficient_views(case):
    _symmetric(*case)


def test_the_fast_symmetric_cases_reach_the_certified_path():
    statuses = {_symmetric(*case).status[0] for case in FAST[:3]}
    assert "certified projection" in statuses


GRID = [(g, r, T, k, view, c) for g in _GRAPHS for r in ("metropolis", "lazy") for T in (2, 4, 6) for k in range(4)
        for view in ("received", "neighbourhood") for c in (False, True)]


@pytest.mark.slow
@pytest.mark.parametrize("case", GRID, ids=["-".join(map(str, c)) for c in GRID])
def test_symmetric_grid(case):
    _symmetric(*case)
