"""mu of gossip_privacy against an independent exact computation (rational simulation, mpmath at 50 digits)."""

from __future__ import annotations

import math

import mpmath
import networkx as nx
import numpy as np
import pytest

import chainamp.network.projection as projection
from chainamp.network import gossip_matrix, gossip_privacy

from _gossip_reference import exact_mu


def _dense(G, rule="metropolis"):
    return gossip_matrix(G, rule).matrix


def _random_doubly_stochastic(n, seed, k=3):
    """A sparse symmetric doubly stochastic matrix with dyadic entries (a mix of transpositions)."""
    rng = np.random.default_rng(seed)
    W = np.zeros((n, n))
    perms = [np.arange(n)]
    for _ in range(k):
        p = np.arange(n)
        i, j = rng.choice(n, 2, replace=False)
        p[i], p[j] = j, i
        perms.append(p)
    for p in perms:
        W[np.arange(n), p] += 1.0 / len(perms)
    return W


CASES = {
    "cycle6-T3-received": ([_dense(nx.cycle_graph(6))] * 3, 0, 1.0, "received", ()),
    "cycle7-T2-neighbourhood": ([_dense(nx.cycle_graph(7))] * 2, 3, 1.0, "neighbourhood", ()),
    "path6-lazy-T3": ([_dense(nx.path_graph(6), "lazy")] * 3, 0, 1.0, "received", ()),
    "hypercube3-T2": ([_dense(nx.hypercube_graph(3))] * 2, 0, 1.0, "received", ()),
    "hypercube4-T3": ([_dense(nx.hypercube_graph(4))] * 3, 0, 1.0, "received", ()),
    "florentine-T2-sigma": ([_dense(nx.florentine_families_graph())] * 2, 3,
                            np.linspace(0.5, 2.0, 15), "received", ()),
    "star-sigma": ([_dense(nx.star_graph(3))] * 2, 1, np.array([1.0, 1.5, 0.7, 1.2]), "received", ()),
    "star20-T3-wide": ([_dense(nx.star_graph(20))] * 3, 1, np.linspace(0.5, 1.5, 21), "received", ()),
    "schedule": ([_random_doubly_stochastic(7, s) for s in range(3)], 2, 1.0, "received", ()),
    "schedule-neighbourhood": ([_random_doubly_stochastic(7, s) for s in range(3, 5)], 2, 1.0, "neighbourhood", ()),
    "karate-T1-colluders": ([_dense(nx.karate_club_graph())], 0, 1.0, "received", (5, 6)),
    "hypercube4-T2-colluders": ([_dense(nx.hypercube_graph(4))] * 2, 0, 1.0, "received", (15,)),
}


def _run(mats, v, sigma, view, colluders):
    T = len(mats)
    W = mats[0] if all(np.array_equal(m, mats[0]) for m in mats) else list(mats)
    res = gossip_privacy(W, T, sigma=sigma, observers=[v], colluders=list(colluders) or None, view=view,
                         progress=False, allow_disconnected=True)
    return res, exact_mu(mats, {v, *colluders}, sigma, view)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_mu_is_exact_and_never_below(case):
    mats, v, sigma, view, colluders = CASES[case]
    res, ref = _run(mats, v, sigma, view, colluders)
    assert res.status[0] != "capped"
    for i, u in enumerate(res.sources):
        got = res.mu_matrix[i, 0]
        if ref[i] is None:
            assert math.isnan(got)
            continue
        assert mpmath.mpf(float(got)) >= ref[i], (u, got, ref[i])
        if ref[i] == 0:
            assert got == 0.0
        else:
            assert (mpmath.mpf(float(got)) - ref[i]) / ref[i] <= 1e-10, (u, got, ref[i])


def test_some_cases_are_rank_deficient_and_not_all_ones():
    """The reference cases reach the certified-projection path with values strictly inside (0, 1)."""
    mats, v, sigma, view, colluders = CASES["hypercube4-T3"]
    res, _ = _run(mats, v, sigma, view, colluders)
    assert res.status[0] == "certified projection"
    inner = res.mu_matrix[(res.mu_matrix > 0) & (res.mu_matrix < 0.999)]
    assert inner.size >= 4


def test_the_margin_is_needed(monkeypatch):
    """Without the certified margins, some computed mu falls below the exact value (the float projection
    is as often below as above): the margins are what makes the result an upper bound."""
    monkeypatch.setattr(projection, "_MARGIN_SCALE", 0.0)
    below = 0
    for case in ("hypercube4-T3", "hypercube3-T2", "florentine-T2-sigma", "hypercube4-T2-colluders", "star-sigma",
                 "schedule", "cycle7-T2-neighbourhood"):
        mats, v, sigma, view, colluders = CASES[case]
        res, ref = _run(mats, v, sigma, view, colluders)
        for i in range(len(res.sources)):
            if ref[i] is not None and ref[i] > 0 and mpmath.mpf(float(res.mu_matrix[i, 0])) < ref[i]:
                below += 1
    assert below > 0


@pytest.mark.parametrize("power", [460, 600], ids=["below-2^-900", "underflow"])
@pytest.mark.parametrize("schedule", [False, True], ids=["fixed", "schedule"])
def test_underflowing_weights_are_capped_not_trusted(schedule, power):
    """Weights of 2^-600 make the rows' entries underflow after two rounds: the float zeros are no longer
    structural, so nothing is trusted and every node outside the coalition gets the trivial bound."""
    tiny = 2.0 ** -power
    W = np.array([[1 - tiny, tiny, 0, 0], [tiny, 1 - 2 * tiny, tiny, 0], [0, tiny, 1 - 2 * tiny, tiny],
                  [0, 0, tiny, 1 - tiny]])
    mats = [W] * 3
    res = gossip_privacy(list(mats) if schedule else W, 3, sigma=1.0, observers=[0], progress=False)
    ref = exact_mu(mats, {0}, 1.0, "received")
    assert res.status == ("capped",)
    for i in range(1, 4):
        assert mpmath.mpf(float(res.mu_matrix[i, 0])) >= ref[i]
    assert np.all(res.mu_matrix[1:, 0] == 1.0)


def test_without_a_rank_proof_the_bound_is_the_trivial_one():
    """rank_primes_limit=0 forbids the modular proof: a rank-deficient view (Q4, T = 6: 24 rows of rank 13) is
    capped, never below; with the proof it is certified."""
    mats, v = [_dense(nx.hypercube_graph(4))] * 6, 0
    res = gossip_privacy(mats[0], 6, sigma=1.0, observers=[v], rank_primes_limit=0, progress=False)
    assert gossip_privacy(mats[0], 6, sigma=1.0, observers=[v], progress=False).status == ("certified projection",)
    ref = exact_mu(mats, {v}, 1.0, "received")
    assert res.status == ("capped",)
    for i in range(len(res.sources)):
        if ref[i] is not None:
            assert mpmath.mpf(float(res.mu_matrix[i, 0])) >= ref[i]
            assert res.mu_matrix[i, 0] == (1.0 if ref[i] > 0 else 0.0)


def test_compensated_product_bound_in_exact_arithmetic():
    from fractions import Fraction

    rng = np.random.default_rng(3)
    X = rng.random((3, 700)) * np.logspace(0, -12, 700)
    Y = rng.standard_normal((700, 2))
    Z, c = projection._compensated_product(X, Y)
    u = 2.0 ** -53
    for i in range(3):
        for j in range(2):
            exact = sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(X[i], Y[:, j]))
            slack = c * float(np.abs(X[i]) @ np.abs(Y[:, j])) + u * abs(Z[i, j])
            assert abs(Fraction(float(Z[i, j])) - exact) <= Fraction(slack) * (1 + 1e-12)
