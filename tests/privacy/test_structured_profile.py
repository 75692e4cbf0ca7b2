"""The exact privacy profile of structured k-ary randomized response (per orbit of neighbouring pairs): against
mpmath on the exact normalised rows and against the dense exact profile of the densified matrix (k <= 12);
neighbour relations, witnesses, extreme epsilons, and k = 10^6 without a dense matrix."""

from __future__ import annotations

import math

import mpmath as mp
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainamp as ca
from chainamp import mechanisms
from chainamp.errors import InvalidMechanismError
from chainamp.operators import SymmetricChannel
from chainamp.privacy.structured import StructuredProfile

mp.mp.dps = 60
KS = list(range(2, 13))
EPS = [0.0, 1e-12, 0.5, 3.0, 30.0, 700.0]
TOL = 1e-12


def exact_delta(K, eps):
    """``max over pairs of D_{e^eps}`` of the row-normalised symmetric channel, exactly (eps >= 0 or inf)."""
    d, o, k = mp.mpf(K.diagonal), mp.mpf(K.off_diagonal), K.k
    s = d + (k - 1) * o
    d, o = d / s, o / s
    if math.isinf(eps):
        return d if o == 0 else 0
    c = mp.e ** mp.mpf(eps)
    return max(d - c * o, 0) + max(o - c * d, 0)


def grid(eps):
    top = eps * (1 + 1e-9)
    return np.array([0.0, 1e-13, 0.1, eps / 2, eps * (1 - 1e-9), eps, top, 2 * eps + 1, math.inf])


@pytest.mark.parametrize("k", KS, ids=[f"k{k}" for k in KS])
@pytest.mark.parametrize("eps", EPS, ids=[f"eps{e:g}" for e in EPS])
def test_profile_matches_dense_and_exact(k, eps):
    K = mechanisms.randomized_response(k, eps)
    prof, dense = ca.privacy_profile(K), ca.privacy_profile(K.densify())
    assert isinstance(prof, StructuredProfile) and prof.exact
    E = grid(eps)
    got, ref = prof.delta(E), dense.delta(E)
    tol = TOL * max(1.0, eps)  # near the pure epsilon delta moves by ~ one ulp of eps per ulp of eps
    for e, g in zip(E, got):
        ex = exact_delta(K, e)
        assert ex <= g <= ex + tol, (e, g, ex)
    assert np.all(np.abs(got - ref) <= tol)
    assert abs(prof.pure_epsilon - dense.pure_epsilon) <= 1e-12 * max(1.0, eps)
    assert prof.pure_epsilon >= mp.log(mp.mpf(K.diagonal) / mp.mpf(K.off_diagonal)) if eps else prof.pure_epsilon == 0
    for d in (1e-3, 1e-9):
        assert abs(prof.epsilon(d) - dense.epsilon(d)) <= 1e-9 * max(1.0, eps)
        assert prof.delta(prof.epsilon(d)) <= d
    if eps > 0:
        assert prof.witness(eps / 2) == dense.witness(eps / 2) == (0, 1)
    assert prof.name == dense.name


@pytest.mark.parametrize("neighbors", [[("b", "d")], nx.path_graph(["a", "b", "c"]), [("e", "a"), ("c", "b")]],
                         ids=["one-pair", "graph", "two-pairs"])
def test_neighbour_relations_and_witnesses(neighbors):
    K = mechanisms.randomized_response(5, 1.5, labels=list("abcde"))
    prof, dense = ca.privacy_profile(K, neighbors), ca.privacy_profile(K.densify(), neighbors)
    for e in (0.0, 0.5, 1.0):
        assert abs(prof.delta(e) - dense.delta(e)) <= TOL
        u, v = prof.witness(e)
        pairs = {tuple(p) for p in (neighbors.edges() if isinstance(neighbors, nx.Graph) else neighbors)}
        assert (u, v) in pairs or (v, u) in pairs
    assert prof.name == dense.name


def test_validation_of_the_neighbour_relation():
    K = mechanisms.randomized_response(4, 1.0)
    with pytest.raises(InvalidMechanismError, match="unknown input label 9"):
        ca.privacy_profile(K, [(0, 9)])
    with pytest.raises(InvalidMechanismError, match="self-loop"):
        ca.privacy_profile(K, [(1, 1)])
    with pytest.raises(InvalidMechanismError, match="the neighbour relation is empty"):
        ca.privacy_profile(K.restrict([2]))
    with pytest.raises(TypeError, match="neighbors must be None"):
        ca.privacy_profile(K, 5)


def test_normalisation_is_covered():
    """Rows summing to 1 - 5e-10 stand for their normalised rows: the profile covers them (removing the
    normalisation widening fails this test: the stored rows' values are lower)."""
    K = SymmetricChannel(5, 0.6, 0.1 - 5e-10 / 4, row_sum_atol=1e-9)
    prof = ca.privacy_profile(K)
    for e in (0.0, 0.5, 1.5):
        d, o = mp.mpf(K.diagonal), mp.mpf(K.off_diagonal)
        assert exact_delta(K, e) > max(d - mp.e ** e * o, 0)
        assert prof.delta(e) >= exact_delta(K, e)


def test_restricted_mechanism_profile():
    K = mechanisms.randomized_response(9, 2.0).restrict([7, 2, 4])
    prof, dense = ca.privacy_profile(K), ca.privacy_profile(K.densify())
    assert abs(prof.delta(0.7) - dense.delta(0.7)) <= TOL and prof.witness(0.7) in {(7, 2), (2, 7)}


def test_a_million_values_without_a_dense_matrix():
    with ca.resource_limits(memory="200MB"):
        K = mechanisms.randomized_response(10**6, 14.0)
        prof = ca.privacy_profile(K)
        for e in (0.0, 1.0, 13.99, math.inf):
            assert exact_delta(K, e) <= prof.delta(e) <= exact_delta(K, e) + TOL
        assert prof.witness(1.0) == (0, 1) and 14.0 <= prof.pure_epsilon <= 14.0 + 1e-12
        assert prof.delta(prof.epsilon(1e-6)) <= 1e-6
        # a neighbour list names only a few labels: still no dense matrix
        assert abs(ca.privacy_profile(K, [(5, 999_999)]).delta(1.0) - prof.delta(1.0)) <= TOL


@settings(max_examples=50, deadline=None)
@given(k=st.sampled_from([2, 3, 7, 100, 10**5]), keep=st.floats(-1.0, 1.0), eps=st.floats(0.0, 40.0))
def test_hypothesis_profile_is_sound(k, keep, eps):
    K = SymmetricChannel.from_keep(k, max(keep, -1.0 / (k - 1)))
    with ca.resource_limits(memory="100MB"):
        assert ca.privacy_profile(K).delta(eps) >= exact_delta(K, eps)


def _mp_hockey(p, q, eps) -> "mp.mpf":
    c = mp.exp(mp.mpf(eps))
    return mp.fsum(max(mp.mpf(a) - c * mp.mpf(b), 0) for a, b in zip(p, q))


@pytest.mark.parametrize("m", [9, 10, 12], ids=["m9-all-types", "m10-maximal-types", "m12"])
def test_kronecker_neighbour_list_uses_each_pairs_own_orbit(m):
    """Issue 18.7: past 64 pair types only the types where every coordinate differs are listed; a neighbour pair
    at Hamming distance 1 or 2 got that orbit (0.6677 where the exact delta(0.1) is 0.2684 at m = 10). Exact:
    the pair's rows are the product over its differing coordinates of F's rows (the others cancel)."""
    from chainamp.operators import KroneckerOperator

    F = ca.MarkovOperator([[0.3, 0.7], [0.6, 0.4]])
    K = KroneckerOperator.power(F, m)
    zero, one, two = (0,) * m, (1,) + (0,) * (m - 1), (1, 1) + (0,) * (m - 2)
    f0, f1 = [mp.mpf(x) for x in (0.3, 0.7)], [mp.mpf(x) for x in (0.6, 0.4)]
    pair2 = ([a * b for a in f0 for b in f0], [a * b for a in f1 for b in f1])
    for neighbours, rows in (([(zero, one)], [(f0, f1)]), ([(zero, two)], [pair2]),
                             ([(zero, one), (zero, two)], [(f0, f1), pair2])):
        prof = ca.privacy_profile(K, neighbours)
        assert prof.exact
        for eps in (0.0, 0.1, 0.5):
            ref = max(max(_mp_hockey(p, q, eps), _mp_hockey(q, p, eps)) for p, q in rows)
            got = prof.delta(eps)
            assert ref <= got <= ref * (1 + mp.mpf(1e-12)), (neighbours, eps, got, ref)
