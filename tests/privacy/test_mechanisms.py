"""Tests for chainamp.mechanisms: each randomizer's matrix and its exact local-DP epsilon."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from chainamp import MarkovOperator, kron
from chainamp import mechanisms as mech
from chainamp.errors import InvalidOperatorError, InvalidParameterError

EPSILONS = [0.0, 0.1, 1.0, math.log(3), 5.0, 50.0]
EPS_IDS = ["0", "0.1", "1", "ln3", "5", "50"]


def exact_ldp_epsilon(P: np.ndarray) -> float:
    """max over input pairs (x, x') and outputs y of log P[x, y] / P[x', y] (inf if P[x', y] = 0 < P[x, y])."""
    worst = 0.0
    for x, xp in itertools.permutations(range(P.shape[0]), 2):
        for y in range(P.shape[1]):
            a, b = P[x, y], P[xp, y]
            if a > 0 and b == 0:
                return math.inf
            if a > 0:
                worst = max(worst, math.log(a) - math.log(b))
    return worst


def assert_row_stochastic(K: MarkovOperator) -> None:
    M = K.matrix
    assert np.all(M >= 0)
    # each row is a handful of correctly rounded terms: a few ulps from 1
    np.testing.assert_allclose(M.sum(axis=1), 1.0, rtol=0, atol=1e-14)


# the reference epsilon is a max of logs of ratios of floats: relative error ~ a few ulps / eps
def assert_eps(actual: float, expected: float) -> None:
    assert actual == pytest.approx(expected, rel=1e-12, abs=1e-13)


# ---------------------------------------------------------- randomized response
@pytest.mark.parametrize("eps", EPSILONS, ids=EPS_IDS)
def test_binary_randomized_response(eps):
    K = mech.binary_randomized_response(eps)
    assert_row_stochastic(K)
    e = math.exp(eps)
    np.testing.assert_allclose(K.matrix, [[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]], rtol=1e-14, atol=0)
    assert K.inputs == K.outputs == (0, 1)
    assert_eps(exact_ldp_epsilon(K.matrix), eps)


@pytest.mark.parametrize("k", [2, 3, 5, 10], ids=lambda k: f"k{k}")
@pytest.mark.parametrize("eps", EPSILONS, ids=EPS_IDS)
def test_k_randomized_response(k, eps):
    K = mech.randomized_response(k, eps)
    assert_row_stochastic(K)
    e = math.exp(eps)
    expected = np.full((k, k), 1 / (e + k - 1))
    np.fill_diagonal(expected, e / (e + k - 1))
    np.testing.assert_allclose(K.matrix, expected, rtol=1e-13, atol=0)
    assert_eps(exact_ldp_epsilon(K.matrix), eps)
    # k-ary RR closed form: Dobrushin gamma = max TV between rows = (e^eps - 1) / (e^eps + k - 1)
    tv = max(0.5 * np.abs(K.matrix[0] - K.matrix[j]).sum() for j in range(1, k))
    assert tv == pytest.approx(-math.expm1(-eps) / (1 + (k - 1) / e), rel=1e-12, abs=1e-15)


def test_k_randomized_response_labels_and_binary_case():
    K = mech.randomized_response(3, 1.0, labels=["x", "y", "z"])
    assert K.inputs == K.outputs == ("x", "y", "z")
    # k = 2 is binary randomized response
    np.testing.assert_allclose(mech.randomized_response(2, 0.7).matrix,
                               mech.binary_randomized_response(0.7).matrix, rtol=1e-15, atol=0)


@pytest.mark.parametrize("nu", [0.0, 0.2, 0.5, 0.9, 0.999], ids=str)
def test_nu_randomized_response(nu):
    K = mech.nu_randomized_response(nu)
    assert_row_stochastic(K)
    # definition: P(report 1 | x) = (1 - nu)/2 + nu x
    np.testing.assert_allclose(K.matrix[:, 1], [(1 - nu) / 2, (1 - nu) / 2 + nu], rtol=1e-15, atol=0)
    eps = math.log((1 + nu) / (1 - nu))
    assert_eps(exact_ldp_epsilon(K.matrix), eps)
    assert eps <= 2 * nu / (1 - nu) + 1e-15  # log(1 + 2nu/(1-nu)) <= 2nu/(1-nu)
    # nu = tanh(eps / 2) is binary randomized response at eps
    np.testing.assert_allclose(mech.binary_randomized_response(eps).matrix, K.matrix, rtol=1e-12, atol=0)


def test_nu_randomized_response_warner_and_truthful():
    # Warner's survey with a fair first coin is log(3)-DP
    assert_eps(exact_ldp_epsilon(mech.nu_randomized_response(0.5).matrix), math.log(3))
    assert exact_ldp_epsilon(mech.nu_randomized_response(1.0).matrix) == math.inf


# ------------------------------------------------------------------------ RAPPOR
@pytest.mark.parametrize("f", [0.0, 0.25, 0.5, 1.0], ids=str)
def test_rappor_permanent_per_bit(f):
    K = mech.rappor_permanent(f)
    assert_row_stochastic(K)
    np.testing.assert_array_equal(K.matrix, [[1 - f / 2, f / 2], [f / 2, 1 - f / 2]])
    expected = math.inf if f == 0 else math.log((1 - f / 2) / (f / 2))
    assert_eps(exact_ldp_epsilon(K.matrix), expected)


@pytest.mark.parametrize("p,q", [(0.5, 0.75), (0.25, 0.75), (0.9, 0.1), (0.0, 1.0)], ids=str)
def test_rappor_instantaneous_per_bit(p, q):
    K = mech.rappor_instantaneous(p, q)
    assert_row_stochastic(K)
    np.testing.assert_array_equal(K.matrix, [[1 - p, p], [1 - q, q]])


def test_rappor_permanent_on_bloom_filters_matches_paper():
    # RAPPOR paper (Erlingsson, Pihur, Korolova 2014, Section 3): f = 0.5, h = 2 gives
    # eps_inf = 2h ln((1 - f/2)/(f/2)) = 4 ln 3 = 4.394, reported there as 4.39.
    f, h, m = 0.5, 2, 6
    R = mech.rappor_pipeline(m, h, f)
    M = R.mechanism
    assert M.shape == (math.comb(m, h), 2**m)
    assert all(sum(b) == h for b in M.inputs) and len(M.outputs[0]) == m
    assert_row_stochastic(M)
    assert_eps(exact_ldp_epsilon(M.matrix), 2 * h * math.log((1 - f / 2) / (f / 2)))
    assert_eps(R.epsilon_inf, 4 * math.log(3))
    assert round(R.epsilon_inf, 2) == 4.39


def test_rappor_per_bit_composition_gives_q_star_p_star():
    f, p, q = 0.5, 0.5, 0.75
    R = mech.rappor_pipeline(2, 1, f, p, q)
    one_bit = (mech.rappor_permanent(f) @ mech.rappor_instantaneous(p, q)).matrix
    # q* = P[report 1 | true bit 1], p* = P[report 1 | true bit 0] (paper's definitions)
    assert one_bit[1, 1] == pytest.approx(R.q_star, rel=1e-15) == pytest.approx(0.6875, rel=1e-15)
    assert one_bit[0, 1] == pytest.approx(R.p_star, rel=1e-15) == pytest.approx(0.5625, rel=1e-15)


@pytest.mark.parametrize("m", [4, 6, 8], ids=lambda m: f"m{m}")
def test_rappor_one_report_exact_epsilon(m):
    # published defaults f = 0.5, p = 0.5, q = 0.75 with h = 2: eps_1 = h ln(q*(1-p*)/(p*(1-q*)))
    # with q* = 0.6875, p* = 0.5625, i.e. 2 ln(0.30078125 / 0.17578125) = 1.0743 (our arithmetic)
    f, p, q, h = 0.5, 0.5, 0.75, 2
    R = mech.rappor_pipeline(m, h, f, p, q)
    P = (R.mechanism @ R.instantaneous).matrix  # M_perm @ K_inst on the Bloom filters
    qs, ps = 0.5 * f * (p + q) + (1 - f) * q, 0.5 * f * (p + q) + (1 - f) * p
    formula = h * math.log(qs * (1 - ps) / (ps * (1 - qs)))
    assert_eps(exact_ldp_epsilon(P), formula)
    assert_eps(R.epsilon_one, formula)
    assert round(formula, 4) == 1.0743
    np.testing.assert_array_equal(P, R.one_report.matrix)
    # post-processing never hurts privacy: eps_1 <= eps_inf
    assert R.epsilon_one < R.epsilon_inf


@settings(max_examples=25, deadline=None)
@given(f=st.floats(0.05, 0.95), p=st.floats(0.05, 0.95), q=st.floats(0.05, 0.95), h=st.integers(1, 2))
def test_rappor_one_report_formula_property(f, p, q, h):
    if abs(p - q) < 1e-3:
        return  # the formula is exact but both sides are ~0: nothing to compare relatively
    R = mech.rappor_pipeline(2 * h, h, f, p, q)
    assert exact_ldp_epsilon(R.one_report.matrix) == pytest.approx(R.epsilon_one, rel=1e-9, abs=1e-12)
    assert exact_ldp_epsilon(R.mechanism.matrix) == pytest.approx(R.epsilon_inf, rel=1e-9, abs=1e-12)


def test_rappor_formulas_are_upper_bounds_when_filters_overlap():
    # m = 3 < 2h = 4: any two filters with 2 ones share a bit, so only 2 bits differ
    R = mech.rappor_pipeline(3, 2)
    assert exact_ldp_epsilon(R.mechanism.matrix) == pytest.approx(R.epsilon_inf / 2, rel=1e-12)
    assert exact_ldp_epsilon(R.one_report.matrix) <= R.epsilon_one


def test_rappor_custom_bloom_filters_and_labels():
    R = mech.rappor_pipeline(4, 2, bloom_filters=[(1, 1, 0, 0), [0, 0, 0, 1]])
    assert R.bloom_filters == ((1, 1, 0, 0), (0, 0, 0, 1))
    assert R.mechanism.inputs == R.bloom_filters == R.values
    assert R.permanent.inputs == tuple(itertools.product((0, 1), repeat=4))
    assert R.instantaneous.is_square and R.permanent.is_square
    # the product is kron of the per-bit steps
    assert R.instantaneous == kron(*[mech.rappor_instantaneous(0.5, 0.75)] * 4)
    # three bits differ between the two filters: 3 ln 3
    assert_eps(exact_ldp_epsilon(R.mechanism.matrix), 3 * math.log(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        R.h = 3
    one = mech.rappor_pipeline(1, 1)
    assert one.permanent.inputs == ((0,), (1,)) and one.mechanism.inputs == ((1,),)


# --------------------------------------------------------------- unary encoding
def _one_hot_product(K: MarkovOperator, d: int) -> np.ndarray:
    onehots = [tuple(int(i == j) for i in range(d)) for j in range(d)]
    return kron(*[K] * d).restrict(onehots).matrix


@pytest.mark.parametrize("eps", EPSILONS, ids=EPS_IDS)
def test_symmetric_unary_encoding(eps):
    K = mech.symmetric_unary_encoding(eps)
    assert_row_stochastic(K)
    pr, qr = math.exp(eps / 2) / (math.exp(eps / 2) + 1), 1 / (math.exp(eps / 2) + 1)  # q = 1 - p, no cancellation
    np.testing.assert_allclose(K.matrix, [[pr, qr], [qr, pr]], rtol=1e-14, atol=0)
    assert_eps(exact_ldp_epsilon(K.matrix), eps / 2)  # one bit alone
    if eps <= 5:  # 4 one-hot bits: two differ, eps in total (Wang et al. 2017)
        assert_eps(exact_ldp_epsilon(_one_hot_product(K, 4)), eps)


@pytest.mark.parametrize("eps", EPSILONS, ids=EPS_IDS)
def test_optimized_unary_encoding(eps):
    K = mech.optimized_unary_encoding(eps)
    assert_row_stochastic(K)
    qr = 1 / (math.exp(eps) + 1)
    np.testing.assert_allclose(K.matrix, [[math.exp(eps) * qr, qr], [0.5, 0.5]], rtol=1e-14, atol=0)
    assert_eps(exact_ldp_epsilon(K.matrix), math.log((math.exp(eps) + 1) / 2))
    if eps <= 5:
        assert_eps(exact_ldp_epsilon(_one_hot_product(K, 4)), eps)


# -------------------------------------------------------- exponential mechanism
def test_exponential_mechanism_matches_formula():
    u = np.array([[0.0, 1.0, 3.0], [2.0, 2.0, 0.0], [1.0, 0.0, 1.0]])
    eps = 1.3
    K = mech.exponential_mechanism(u, eps, inputs=["a", "b", "c"], outputs=["r", "s", "t"])
    assert K.inputs == ("a", "b", "c") and K.outputs == ("r", "s", "t")
    delta = 3.0  # all-pairs sensitivity: column 2 ranges over [0, 3]
    w = np.exp(eps * u / (2 * delta))
    np.testing.assert_allclose(K.matrix, w / w.sum(axis=1, keepdims=True), rtol=1e-14, atol=0)
    assert exact_ldp_epsilon(K.matrix) <= eps
    K2 = mech.exponential_mechanism(u, eps, sensitivity=6.0)
    w2 = np.exp(eps * u / 12.0)
    np.testing.assert_allclose(K2.matrix, w2 / w2.sum(axis=1, keepdims=True), rtol=1e-14, atol=0)


def test_exponential_mechanism_identity_is_half_eps_and_stable():
    # equal normalisers: only the numerator ratio e^{eps/2} remains (McSherry-Talwar is loose by 2 here)
    K = mech.exponential_mechanism(np.eye(4), 2.0)
    assert_eps(exact_ldp_epsilon(K.matrix), 1.0)
    # utilities of size 1e4 with eps = 1 would overflow exp() without the row-max shift
    u = 1e4 * np.array([[1.0, 0.9, 0.0], [0.0, 0.5, 1.0]])
    K = mech.exponential_mechanism(u, 1000.0)
    np.testing.assert_allclose(K.matrix, softmax(1000.0 * u / (2 * 1e4), axis=1), rtol=1e-12, atol=0)
    assert_row_stochastic(K)
    # zero sensitivity: every row is the same distribution
    np.testing.assert_array_equal(mech.exponential_mechanism([[1.0, 2.0]], 5.0).matrix, [[0.5, 0.5]])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 5), m=st.integers(1, 5), eps=st.floats(0.0, 20.0))
def test_exponential_mechanism_is_eps_ldp(seed, n, m, eps):
    u = np.random.default_rng(seed).normal(size=(n, m))
    K = mech.exponential_mechanism(u, eps)
    assert_row_stochastic(K)
    # McSherry & Talwar 2007: every log-ratio <= eps (allowing a few ulps of log rounding)
    assert exact_ldp_epsilon(K.matrix) <= eps * (1 + 1e-12) + 1e-12


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize("func", [
    mech.binary_randomized_response, mech.symmetric_unary_encoding, mech.optimized_unary_encoding,
    lambda e: mech.randomized_response(3, e), lambda e: mech.exponential_mechanism([[0.0, 1.0]], e),
], ids=["rr", "sue", "oue", "krr", "exp"])
def test_epsilon_validation(func):
    with pytest.raises(InvalidParameterError, match=r"epsilon must be >= 0 \(got -0.5\)"):
        func(-0.5)
    with pytest.raises(InvalidParameterError, match=r"epsilon must be finite \(got inf\)"):
        func(math.inf)
    with pytest.raises(InvalidParameterError, match="epsilon must not be NaN"):
        func(math.nan)
    with pytest.raises(TypeError, match="epsilon must be a real number, got str"):
        func("1")


def test_randomized_response_validation():
    with pytest.raises(InvalidParameterError, match=r"k must be >= 2 \(got 1\)"):
        mech.randomized_response(1, 1.0)
    with pytest.raises(TypeError, match="k must be an integer, got float"):
        mech.randomized_response(2.5, 1.0)
    with pytest.raises(InvalidParameterError, match=r"labels must have k=3 entries \(got 2\)"):
        mech.randomized_response(3, 1.0, labels=["a", "b"])
    with pytest.raises(TypeError, match="labels must be a sequence of labels, not a string"):
        mech.randomized_response(3, 1.0, labels="abc")
    with pytest.raises(InvalidOperatorError, match="labels must be distinct"):
        mech.randomized_response(2, 1.0, labels=["a", "a"])


@pytest.mark.parametrize("call,match", [
    (lambda: mech.nu_randomized_response(1.5), r"nu must be in \[0, 1\] \(got 1.5\)"),
    (lambda: mech.nu_randomized_response(-0.1), r"nu must be in \[0, 1\] \(got -0.1\)"),
    (lambda: mech.rappor_permanent(2.0), r"f must be in \[0, 1\] \(got 2.0\)"),
    (lambda: mech.rappor_instantaneous(1.2, 0.5), r"p must be in \[0, 1\] \(got 1.2\)"),
    (lambda: mech.rappor_instantaneous(0.5, -1.0), r"q must be in \[0, 1\] \(got -1.0\)"),
    (lambda: mech.rappor_instantaneous(0.5, 0.5), r"p and q must differ.*p = q = 0.5"),
    (lambda: mech.rappor_pipeline(4, 2, p=0.3, q=0.3), r"p and q must differ"),
    (lambda: mech.rappor_pipeline(0, 1), r"m must be >= 1 \(got 0\)"),
    (lambda: mech.rappor_pipeline(11, 2, structured=False), r"m must be <= 10 for dense"),
    (lambda: mech.rappor_pipeline(4, 0), r"h must be >= 1 \(got 0\)"),
    (lambda: mech.rappor_pipeline(4, 5), r"h must be <= m=4 \(got 5\)"),
    (lambda: mech.rappor_pipeline(4, 2, f=1.5), r"f must be in \[0, 1\]"),
    (lambda: mech.rappor_pipeline(3, 2, bloom_filters=[(1, 1)]), r"bloom_filters\[0\] must be 3 bits 0/1"),
    (lambda: mech.rappor_pipeline(3, 2, bloom_filters=[(1, 2, 0)]), r"bloom_filters\[0\] must be 3 bits 0/1"),
    (lambda: mech.rappor_pipeline(3, 2, bloom_filters=[(1, 0.5, 0)]), r"bloom_filters\[0\] must be 3 bits"),
    (lambda: mech.rappor_pipeline(3, 1, bloom_filters=[(1, 0, 0), (1, 1, 0)]),
     r"bloom_filters\[1\] must have between 1 and h=1 ones \(got 2"),
    (lambda: mech.rappor_pipeline(3, 2, bloom_filters=[(0, 0, 0)]), r"between 1 and h=2 ones \(got 0"),
    (lambda: mech.rappor_pipeline(3, 2, bloom_filters=[(1, 0, 0), (1, 0, 0)]), "bloom_filters must be distinct"),
    (lambda: mech.rappor_pipeline(3, 2, bloom_filters=[]), "bloom_filters must not be empty"),
    (lambda: mech.exponential_mechanism([1.0, 2.0], 1.0), r"non-empty 2-D array \(got shape \(2,\)\)"),
    (lambda: mech.exponential_mechanism([[1.0, math.inf]], 1.0), "utility entries must be finite"),
    (lambda: mech.exponential_mechanism([[0.0, 1.0]], 1.0, sensitivity=0.0), r"sensitivity must be > 0 \(got 0.0\)"),
    (lambda: mech.exponential_mechanism([[0.0, 1e308], [1e308, 0.0]], 10.0, sensitivity=1e-300),
     "overflows"),
], ids=["nu-high", "nu-low", "f", "p", "q", "p=q", "pipeline-p=q", "m0", "m11", "h0", "h>m", "pipeline-f",
        "bf-length", "bf-bit", "bf-frac", "bf-ones", "bf-zero", "bf-dup", "bf-empty", "u-1d", "u-inf",
        "sens-0", "overflow"])
def test_parameter_validation(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call()


@pytest.mark.parametrize("call,match", [
    (lambda: mech.nu_randomized_response(None), "nu must be a real number"),
    (lambda: mech.rappor_pipeline(4, 2, bloom_filters="1100"), "bloom_filters must be a sequence of bit vectors"),
    (lambda: mech.rappor_pipeline(4, 2, bloom_filters=[5]), r"bloom_filters\[0\] must be a sequence of bits"),
    (lambda: mech.exponential_mechanism([["a", "b"]], 1.0), "utility must be a 2-D array of numbers"),
    (lambda: mech.exponential_mechanism([[0.0, 1.0]], 1.0, sensitivity="1"), "sensitivity must be a real number"),
], ids=["nu-none", "bf-str", "bf-int", "u-str", "sens-str"])
def test_type_validation(call, match):
    with pytest.raises(TypeError, match=match):
        call()
