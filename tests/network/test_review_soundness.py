"""Adversarial review of chainamp.network: counterexamples found in review, and soundness properties against an
independent exact reference (tests/network/_review_reference.py: the protocol run in Fractions, the view's mean
shift and covariance built from scratch, mu^2 = s^T Sigma^+ s by an exact solve, mpmath at 60 digits)."""

from __future__ import annotations

import math

import mpmath
import networkx as nx
import numpy as np
import pytest

from chainamp.network import gossip_matrix, gossip_privacy

from _review_reference import exact_mu_all

# A 10-node graph (node 0 a leaf of node 1), lazy Metropolis, T = 5, observer 0: 5 rows of rank 5 on 9 columns.
EDGES_CX = [(1, 0), (1, 3), (1, 5), (1, 6), (1, 9), (2, 7), (2, 8), (2, 9), (3, 4), (3, 7), (4, 6), (5, 6), (6, 7),
            (7, 9), (8, 9)]


def _cx_matrix():
    G = nx.Graph()
    G.add_nodes_from(range(10))
    G.add_edges_from(EDGES_CX)
    return gossip_matrix(G, "lazy").matrix


@pytest.mark.parametrize("scale", [1.0, 1e-180, 2.0 ** -1000, 1e180], ids=["1", "1e-180", "2^-1000", "1e180"])
def test_noise_scale_does_not_change_the_certificate(scale):
    """Counterexample of the review: with sigma = sensitivity = 1e-180 the squares in ||B||_F underflowed to 0,
    every rounding margin vanished (margin 0.0, rank 5 'certified') and mu(2 -> 0) = 0.6882536502833005 fell below
    the exact 0.68825365028332815 (also nodes 4 and 8). mu is invariant when sigma and sensitivity are scaled
    together, so the exact value is the one at scale 1; the certificate must not depend on the scale."""
    W = _cx_matrix()
    res = gossip_privacy(W, 5, sigma=scale, sensitivity=scale, observers=[0], progress=False)
    ref = exact_mu_all([W] * 5, {0}, 1.0, "received")
    assert res.status == ("certified projection",) and res.ranks == (5,)
    assert res.margins[0] > 0.0
    for i, u in enumerate(res.sources):
        if u == 0:
            continue
        got = mpmath.mpf(float(res.mu_matrix[i, 0]))
        assert got >= ref[u], (u, float(got), ref[u])
        assert (got - ref[u]) / ref[u] < 1e-9


@pytest.mark.parametrize("mu, alpha", [(2.8463178893335015, 3.0), (0.5594121667363561, 10.0),
                                       (1.0482850977782032, 1.5)], ids=["a3", "a10", "a1.5"])
def test_renyi_is_rounded_up(mu, alpha):
    """Counterexample of the review: alpha mu^2 / 2 rounded with one nextafter after two roundings fell below the
    exact value: mu = 2.8463178893335015 exactly (sigma = 1, a neighbour's y_0 received), alpha = 3 gave
    12.152288290709878, 3.6e-16 below 3 mu^2 / 2."""
    from fractions import Fraction

    res = gossip_privacy(nx.path_graph(3), 1, sigma=1.0, sensitivity=mu, sources=[1], observers=[0], progress=False)
    assert res.mu(1, 0) == mu  # full rank: mu = sensitivity / sigma exactly
    got = float(res.renyi(alpha)[0, 0])
    assert Fraction(got) >= Fraction(alpha) * Fraction(mu) ** 2 / 2
    assert got <= alpha * mu ** 2 / 2 * (1 + 1e-14)


@pytest.mark.parametrize("rounds", [10 ** 11, 10 ** 15], ids=["1e11", "1e15"])
def test_huge_rounds_are_refused_before_allocating(rounds):
    """Counterexample of the review: rounds = 10**9 built a tuple of 10**9 references (8 GB) and a per-round plan
    before any memory check (a bare MemoryError under ``ulimit -v``, the machine's memory without it)."""
    from chainamp.errors import ResourceLimitError

    with pytest.raises(ResourceLimitError, match="rounds"):
        gossip_privacy(nx.cycle_graph(5), rounds, sigma=1.0, progress=False)


def test_rounds_within_the_limit_still_run():
    res = gossip_privacy(nx.cycle_graph(5), 40, sigma=1.0, observers=[0], progress=False, memory_limit="1GiB")
    assert res.rounds == 40


def test_a_tuple_label_is_one_node():
    """Counterexample of the review: nodes 0, 1, 2 and (0, 1); observers=(0, 1) silently meant the two observers 0 and
    1, not the node (0, 1) (and on a grid graph it raised 'observers contains 0'). A label is taken as one node first,
    as networkx's nbunch does."""
    G = nx.Graph([(0, 1), (1, 2), (2, (0, 1)), ((0, 1), 0)])
    res = gossip_privacy(G, 3, sigma=1.0, observers=(0, 1), sources=(0, 1), colluders=(0, 1), progress=False)
    assert res.observers == ((0, 1),) and res.sources == ((0, 1),) and res.colluders == ((0, 1),)
    assert gossip_privacy(G, 3, sigma=1.0, observers=[0, 1], progress=False).observers == (0, 1)
    grid = gossip_privacy(nx.grid_2d_graph(2, 3), 3, sigma=1.0, observers=(0, 1), progress=False)
    assert grid.observers == ((0, 1),)


def _gauss_delta(mu, eps):
    """delta(eps) of the Gaussian mechanism with parameter mu (Balle and Wang 2018), mpmath at 60 digits."""
    mpmath.mp.dps = 60
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


@pytest.fixture(scope="module")
def florentine():
    G = nx.florentine_families_graph()
    return gossip_privacy(G, 3, sigma=np.linspace(0.5, 3.0, 15), sensitivity=0.7, observers=list(G.nodes)[:4],
                          progress=False)


def test_profile_epsilon_renyi_against_the_gaussian_formula(florentine):
    res = florentine
    vals = sorted({float(x) for x in res.mu_matrix.ravel() if x > 0 and not math.isnan(x)})
    assert len(vals) >= 5
    picks = vals[:: max(1, len(vals) // 6)]
    for mu in picks:
        i, j = map(int, np.argwhere(res.mu_matrix == mu)[0])
        u, v = res.sources[i], res.observers[j]
        prof = res.profile(u, v)
        for eps in (0.0, 0.3, 1.0, 3.0):
            assert mpmath.mpf(prof.delta(eps)) >= _gauss_delta(mu, eps)
            assert prof.delta(eps) <= float(_gauss_delta(mu, eps)) * (1 + 1e-6) + 1e-300
        for delta in (1e-3, 1e-6, 1e-10):
            e = float(res.epsilon(delta)[i, j])
            assert _gauss_delta(mu, e) <= delta  # the reported eps is enough
            assert _gauss_delta(mu, e * (1 - 1e-6) - 1e-12) > delta or e == 0.0  # and not far above
        for alpha in (1.5, 2.0, 7.0):
            from fractions import Fraction
            got = float(res.renyi(alpha)[i, j])
            assert Fraction(got) >= Fraction(alpha) * Fraction(mu) ** 2 / 2
            assert got == pytest.approx(alpha * mu ** 2 / 2, rel=1e-14)
    # zero and coalition entries
    assert np.all(np.isnan(res.renyi(2.0)) == np.isnan(res.mu_matrix))
    assert np.all((res.renyi(2.0) == 0) == (res.mu_matrix == 0))


@pytest.mark.slow  # 3 s; test_gossip.py checks compose in the default run
def test_compose_of_profiles_is_the_gaussian_at_sqrt_k_mu(florentine):
    import chainamp

    res = florentine
    i, j = map(int, np.argwhere((res.mu_matrix > 0.2) & (res.mu_matrix < 2.0))[0])
    mu = float(res.mu_matrix[i, j])
    prof = res.profile(res.sources[i], res.observers[j])
    composed = chainamp.compose([prof, prof], counts=[2, 2])  # four independent runs
    for eps in (0.5, 2.0):
        exact = _gauss_delta(2 * mu, eps)
        assert mpmath.mpf(composed.delta(eps)) >= exact
        assert composed.delta(eps) <= float(exact) * 1.05 + 1e-12


def test_renyi_of_a_tiny_mu_is_not_zero():
    """Counterexample of the review: sensitivity 1e-300 and sigma 1e100 give mu = 5e-324 for the neighbours, and
    renyi(2) reported 0.0 (mu^2 underflowed; 'zeros stay zero' then kept it), below the exact 2.5e-647... rounded
    up it is the smallest positive double. With alpha = 1e6 the underflowed mu^2 also hid a factor alpha."""
    from fractions import Fraction

    res = gossip_privacy(nx.cycle_graph(4), 2, sigma=1e100, sensitivity=1e-300, observers=[0], progress=False)
    for alpha in (2.0, 1e6):
        ren = res.renyi(alpha)
        for i in range(1, 4):
            mu = float(res.mu_matrix[i, 0])
            assert mu > 0
            assert Fraction(float(ren[i, 0])) >= Fraction(alpha) * Fraction(mu) ** 2 / 2


def test_overflowing_local_mu_is_a_clear_error():
    """Review: sensitivity / sigma above the largest double crashed with 'OverflowError: cannot convert Infinity to
    integer ratio'."""
    from chainamp.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=r"sensitivity / sigma.*overflows.*node 0"):
        gossip_privacy(nx.cycle_graph(4), 2, sigma=1e-10, sensitivity=1e300, progress=False)


def test_hadamard_bound_covers_rows_summing_above_one():
    """Review: the Hadamard bound of the rank proof took every row of P_t to have 2-norm at most 2 (one bit per
    row); rows accepted within a user's row_sum_atol can sum to more than 1, and P_t's rows then grow like the row
    sum to the power t (W = 0.5 everywhere on 3 nodes, row_sum_atol = 0.6, T = 12: log2 bound 1168 < 1177.28 exact).
    The bound must cover the exact integer rows' norms."""
    from fractions import Fraction

    from chainamp.network import projection
    from chainamp.network.inputs import as_schedule

    W = np.full((3, 3), 0.5)
    T = 12
    sched = as_schedule(W, T, row_sum_atol=0.6)
    plan = [(t, s) for t, s in projection.view_rows(sched, np.array([0]), "received") if len(s)]
    s_int = projection.modular.dyadic_scale(sched.mats[0])[0]
    Wf = [[Fraction(float(x)) for x in row] for row in W]
    norms2 = []
    cur = [[Fraction(int(i == j)) for j in range(3)] for i in range(3)]
    for t in range(T):
        for _, snd in plan[t:t + 1]:
            for w in snd:
                norms2.append(sum(x * x for x in cur[w]) * 4 ** (s_int * t))
        cur = [[sum(Wf[i][k] * cur[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
    norms2.sort(reverse=True)
    q = 2
    exact_log2 = sum((math.log2(x.numerator) - math.log2(x.denominator)) / 2 for x in norms2[:q])
    assert projection._rank_log2_bound(sched, plan, q) >= exact_log2
