"""The coefficients of Definition 1 (Balle et al. 2019) of structured k-ary randomized response: per orbit of
input pairs, against exact references (mpmath at 60 digits on the stored doubles) and against the dense path
on the densified matrix (k <= 12), with near ties, extreme epsilons and k = 10^6 (no dense matrix)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainamp as ca
from chainamp import mechanisms
from chainamp.operators import SymmetricChannel

mp.mp.dps = 60
KS = list(range(2, 13))
EPS = [0.0, 1e-12, 0.5, 3.0, 30.0, 700.0]
ORDERS = [0.0, 1e-13, 0.3, 2.999999, 29.9, math.inf]
TOL = 1e-13  # the dense and structured roundings differ by a few ulps (both are upper bounds of the exact value)


def exact_hockey(K, order, normalised=False):
    """``max_{x != x'} D_{e^order}(K_x || K_x')`` of a symmetric channel, exactly (stored or normalised rows)."""
    d, o, k = mp.mpf(K.diagonal), mp.mpf(K.off_diagonal), K.k
    if normalised:
        s = d + (k - 1) * o
        d, o = d / s, o / s
    if math.isinf(order):
        return (d if o == 0 else 0) if K.shape[0] > 1 else 0
    c = mp.e ** mp.mpf(order)
    return max(d - c * o, 0) + max(o - c * d, 0)


def exact_doeblin(K):
    d, o, k = mp.mpf(K.diagonal), mp.mpf(K.off_diagonal), K.k
    return max(mp.mpf(1), d + (k - 1) * o) - k * min(d, o)


def exact_ultra(K):
    d, o = mp.mpf(K.diagonal), mp.mpf(K.off_diagonal)
    return 1 - min(d, o) / max(d, o)


def ids(values, fmt="{:g}"):
    return [fmt.format(v) for v in values]


@pytest.mark.parametrize("k", KS, ids=ids(KS, "k{}"))
@pytest.mark.parametrize("eps", EPS, ids=ids(EPS, "eps{:g}"))
def test_dobrushin_and_curve_match_dense_and_exact(k, eps):
    K = mechanisms.randomized_response(k, eps)
    D = K.densify()
    for order in ORDERS:
        s, dn = ca.dobrushin(K, order), ca.dobrushin(D, order)
        ex = exact_hockey(K, order)
        assert s.gamma >= ex and s.gamma <= ex + TOL, (order, s.gamma, ex)
        assert abs(s.gamma - dn.gamma) <= TOL and s.pair == dn.pair and s.test_set == dn.test_set
    curve = ca.dobrushin_curve(K, ORDERS)
    dense = ca.dobrushin_curve(D, ORDERS)
    assert np.all(np.abs(curve - dense) <= TOL)
    assert all(c >= exact_hockey(K, o) for c, o in zip(curve, ORDERS))
    assert np.all(np.diff(curve) <= 0)


@pytest.mark.parametrize("k", KS, ids=ids(KS, "k{}"))
@pytest.mark.parametrize("eps", EPS, ids=ids(EPS, "eps{:g}"))
def test_doeblin_ultra_and_ldp_match_dense_and_exact(k, eps):
    K = mechanisms.randomized_response(k, eps)
    D = K.densify()
    doe, doe_d = ca.doeblin(K), ca.doeblin(D)
    ex = exact_doeblin(K)
    assert ex <= doe.gamma <= ex + TOL and abs(doe.gamma - doe_d.gamma) <= TOL
    assert np.array_equal(doe.minorant, doe_d.minorant)
    ult, ult_d = ca.ultra_mixing(K), ca.ultra_mixing(D)
    ex = exact_ultra(K)
    assert ex <= ult.gamma <= ex + TOL and abs(ult.gamma - ult_d.gamma) <= TOL
    assert (ult.pair, ult.output, ult.ratio) == (ult_d.pair, ult_d.output, ult_d.ratio)
    g, g_d = ca.ldp_guarantee(K), ca.ldp_guarantee(D)
    true_eps = mp.log(mp.mpf(K.diagonal) / mp.mpf(K.off_diagonal))
    assert true_eps <= g.epsilon <= true_eps + 1e-12 and abs(g.epsilon - g_d.epsilon) <= 1e-12 * max(1, eps)
    for e in (0.0, 0.2, eps / 2):
        assert exact_hockey(K, e) <= g.delta(e) <= exact_hockey(K, e) + TOL
    if eps < 100:  # at eps = 700 the bisection brackets are [0, 700]: both end within xtol of each other
        assert abs(g.epsilon_at(1e-3) - g_d.epsilon_at(1e-3)) <= 1e-8 * max(1.0, eps)
        assert g.delta(g.epsilon_at(1e-3)) <= 1e-3


@pytest.mark.parametrize("k", [3, 7, 12], ids=ids([3, 7, 12], "k{}"))
def test_near_ties_at_the_pure_epsilon(k):
    K = mechanisms.randomized_response(k, 1.0)
    top = float(mp.log(mp.mpf(K.diagonal) / mp.mpf(K.off_diagonal)))
    for order in (top * (1 - 1e-15), top, math.nextafter(top, 0), math.nextafter(top, 2)):
        s, dn = ca.dobrushin(K, order).gamma, ca.dobrushin(K.densify(), order).gamma
        assert s >= exact_hockey(K, order) and abs(s - dn) <= TOL


def test_normalised_rows_are_covered():
    """Rows summing to 1 - 5e-10 (accepted within row_sum_atol) stand for their normalised rows: with
    normalised=True every coefficient covers them; removing the widening makes this fail."""
    K = SymmetricChannel(5, 0.6, 0.1 - 5e-10 / 4, row_sum_atol=1e-9)
    for order in (0.0, 0.5, 1.0):
        ex = exact_hockey(K, order, normalised=True)
        assert ex > exact_hockey(K, order)
        assert ca.dobrushin(K, order, normalised=True).gamma >= ex
        assert ca.dobrushin_curve(K, [order], normalised=True)[0] >= ex
        assert ca.ldp_guarantee(K, normalised=True).delta(order) >= ex
    assert ca.ldp_guarantee(K, normalised=True).epsilon >= math.log(0.6 / (0.1 - 5e-10 / 4))
    assert ca.ultra_mixing(K, normalised=True).gamma >= ca.ultra_mixing(K).gamma
    assert ca.doeblin(K).gamma >= 1 - 5 * (0.1 - 5e-10 / 4) / (1 - 5e-10)  # the normalised rows' Doeblin


@pytest.mark.parametrize("sub", [[3, 1], [0, 4, 2], [5]], ids=["two", "three", "one"])
def test_restricted_inputs_match_dense(sub):
    K = mechanisms.randomized_response(6, 1.3)
    D = K.densify()
    for order in (0.0, 0.7):
        a, b = ca.dobrushin(K, order, inputs=sub), ca.dobrushin(D, order, inputs=sub)
        assert abs(a.gamma - b.gamma) <= TOL and a.pair == b.pair
    a, b = ca.doeblin(K, inputs=sub), ca.doeblin(D, inputs=sub)
    assert abs(a.gamma - b.gamma) <= TOL and np.array_equal(a.minorant, b.minorant)
    a, b = ca.ultra_mixing(K, inputs=sub), ca.ultra_mixing(D, inputs=sub)
    assert abs(a.gamma - b.gamma) <= TOL


def test_lp_and_all_pairs_fall_back_to_the_dense_matrix():
    K = mechanisms.randomized_response(4, 1.0)
    res = ca.dobrushin(K, all_pairs=True)
    assert res.pairwise.shape == (4, 4) and abs(res.gamma - ca.dobrushin(K).gamma) <= TOL


def test_mixing_time_and_conditions_stay_structured():
    K = mechanisms.randomized_response(6, 0.4)
    assert ca.mixing_time(K, 0.01) == ca.mixing_time(K.densify(), 0.01)
    c, cd = ca.mixing_conditions(K, 0.5, epsilon=0.3), ca.mixing_conditions(K.densify(), 0.5, epsilon=0.3)
    assert (c.dobrushin, c.hockey_stick, c.doeblin, c.ultra_mixing) == (cd.dobrushin, cd.hockey_stick,
                                                                        cd.doeblin, cd.ultra_mixing)


def test_a_million_values_without_a_dense_matrix():
    with ca.resource_limits(memory="200MB"):
        K = mechanisms.randomized_response(10**6, 12.0)
        for order in (0.0, 1.0, 11.9, math.inf):
            g = ca.dobrushin(K, order)
            assert exact_hockey(K, order) <= g.gamma <= exact_hockey(K, order) + TOL
        g = ca.dobrushin(K, 1.0)
        assert g.pair == (0, 1) and g.test_set == (0,)
        assert exact_doeblin(K) <= ca.doeblin(K).gamma <= exact_doeblin(K) + TOL
        assert exact_ultra(K) <= ca.ultra_mixing(K).gamma <= exact_ultra(K) + TOL
        g = ca.ldp_guarantee(K)
        e = g.epsilon_at(1e-3)
        assert g.delta(e) <= 1e-3 and e <= 12.0 + 1e-9
        assert ca.mixing_time(K, 0.25) >= 1


@settings(max_examples=60, deadline=None)
@given(k=st.sampled_from([2, 3, 5, 40, 1000, 10**6]), keep=st.floats(-1.0, 1.0),
       order=st.one_of(st.floats(0.0, 50.0), st.just(0.0)))
def test_hypothesis_structured_coefficients_are_sound(k, keep, order):
    K = SymmetricChannel.from_keep(k, max(keep, -1.0 / (k - 1)))
    with ca.resource_limits(memory="200MB"):
        assert ca.dobrushin(K, order).gamma >= exact_hockey(K, order)
        assert ca.dobrushin(K, order, normalised=True).gamma >= exact_hockey(K, order, normalised=True)
        assert ca.doeblin(K).gamma >= exact_doeblin(K)
        if K.off_diagonal > 0 and K.diagonal > 0:
            assert ca.ultra_mixing(K).gamma >= exact_ultra(K)
            assert ca.ldp_guarantee(K).epsilon >= abs(mp.log(mp.mpf(K.diagonal) / mp.mpf(K.off_diagonal)))
        else:
            assert ca.ultra_mixing(K).gamma == 1.0 and ca.ldp_guarantee(K).epsilon == math.inf


@pytest.mark.parametrize("k", [2, 5, 12], ids=ids([2, 5, 12], "k{}"))
@pytest.mark.parametrize("normalised", [False, True], ids=["stored", "normalised"])
def test_one_eps_fast_path_equals_the_curve(k, normalised):
    """A scalar LDP delta (one bisection step: no checks, no curve machinery) is exactly the curve's value at
    that eps taken alone and with other eps (before the monotone envelope), edges included."""
    from chainamp.mixing.structured import structured_curve

    K = mechanisms.randomized_response(k, 1.3)
    if normalised:  # rows off 1 by rounding: a widened curve with a nonzero relative error
        K = SymmetricChannel(k, K.diagonal * (1 + 2.0**-50), K.off_diagonal)
    g = ca.ldp_guarantee(K, normalised=normalised)
    eps = np.array([0.0, 5e-324, 1e-12, 0.4, 1.3, math.nextafter(1.3, 2.0), 2.0, 745.0, math.inf])
    many = structured_curve(K, eps, normalised)
    for i, e in enumerate(eps.tolist()):
        one = structured_curve(K, np.array([e]), normalised)[0]
        assert one == many[i] and g.delta(e) == one == float(g.delta(np.array([e]))[0]), e


@pytest.mark.parametrize("which", ["rr", "rr-normalisable", "kron-20-orbits", "kron-42-orbits"])
def test_curve_at_one_eps_is_the_coefficient(which):
    """``dobrushin_curve(K, [eps])`` (what the amplifier's searches read for a structured K) is exactly
    ``dobrushin(K, eps).gamma``, for one orbit and for products with many orbits (candidate pruning)."""
    from chainamp.operators import kron

    rr = mechanisms.randomized_response
    K = {"rr": lambda: rr(6, 0.8),
         "rr-normalisable": lambda: SymmetricChannel(5, rr(5, 0.8).diagonal * (1 + 2.0**-50), rr(5, 0.8).off_diagonal),
         "kron-20-orbits": lambda: kron(rr(3, 1.0), rr(2, 0.4), structured=True),
         "kron-42-orbits": lambda: kron(rr(3, 1.0), rr(3, 1.0), rr(2, 2.0), structured=True)}[which]()
    for e in [0.0, 1e-12, 0.3, 0.8, math.nextafter(0.8, 1.0), 1.4, 2.9, 50.0, 745.0, math.inf]:
        assert float(ca.dobrushin_curve(K, [e])[0]) == ca.dobrushin(K, e).gamma, e
