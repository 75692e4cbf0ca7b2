"""Structured operators: the base class's contract (labels, densify guard, algebra) and the k-ary symmetric
channel (closed-form products and their error model, against exact fractions and the dense matrices)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainamp as ca
from chainamp import mechanisms
from chainamp.errors import IncompatibleOperatorsError, InvalidOperatorError, InvalidParameterError, ResourceLimitError
from chainamp.operators import (EXACT, Labels, MarkovOperator, StructuredOperator, SymmetricChannel, multiply,
                                operator_error, smallest_positive)

KS = list(range(2, 13))
EPS = [0.0, 1e-12, 0.5, 3.0, 30.0, 700.0]


def old_rr_matrix(k, eps):
    """The dense k-RR exactly as chainamp built it before the structured operator."""
    t = math.exp(-eps)
    mat = np.full((k, k), t / (1.0 + (k - 1) * t))
    np.fill_diagonal(mat, 1.0 / (1.0 + (k - 1) * t))
    return mat


# ----------------------------------------------------------------- labels
def test_labels_range_behaves_like_the_tuple():
    lab = Labels(range(5))
    assert lab == (0, 1, 2, 3, 4) and (0, 1, 2, 3, 4) == lab and lab == range(5) and lab == [0, 1, 2, 3, 4]
    assert lab != (0, 1, 2, 3) and lab != (0, 1, 2, 3, 5)
    assert lab.index(3) == 3 and lab.index(np.int64(2)) == 2 and lab.index(4.0) == 4
    assert 3 in lab and "a" not in lab and 7 not in lab and 2.5 not in lab
    assert lab[1:3] == (1, 2) and lab[-1] == 4 and list(lab) == [0, 1, 2, 3, 4]
    assert lab + ("x",) == (0, 1, 2, 3, 4, "x") and ("x",) + lab == ("x", 0, 1, 2, 3, 4)
    assert hash(lab) == hash((0, 1, 2, 3, 4))


@pytest.mark.parametrize("bad", ["a", 2.5, 7, -1, None, (1,)], ids=["str", "frac", "past", "neg", "none", "tuple"])
def test_labels_range_index_refuses_non_labels(bad):
    with pytest.raises(KeyError):
        Labels(range(5)).index(bad)


def test_labels_tuple_and_large_range():
    lab = Labels(("a", "b", "c"))
    assert lab.index("c") == 2 and lab == ("a", "b", "c") and repr(lab) == "('a', 'b', 'c')"
    big = Labels(range(10**12))
    assert len(big) == 10**12 and big.index(10**12 - 1) == 10**12 - 1 and "labels" in repr(big)


def test_labels_of_checks_like_plain_operators():
    with pytest.raises(InvalidOperatorError, match="labels must be distinct"):
        SymmetricChannel(3, 0.5, 0.25, labels=["a", "a", "b"])
    with pytest.raises(InvalidOperatorError, match="has 2 labels but"):
        SymmetricChannel(3, 0.5, 0.25, labels=["a", "b"])
    with pytest.raises(TypeError, match="not a string"):
        SymmetricChannel(3, 0.5, 0.25, labels="abc")


# ----------------------------------------------------------------- construction and validation
@pytest.mark.parametrize("k", KS, ids=[f"k{k}" for k in KS])
@pytest.mark.parametrize("eps", EPS, ids=[f"eps{e:g}" for e in EPS])
def test_randomized_response_is_structured_and_bitwise_the_old_matrix(k, eps):
    K = mechanisms.randomized_response(k, eps)
    assert isinstance(K, StructuredOperator) and isinstance(K, SymmetricChannel) and isinstance(K, MarkovOperator)
    assert np.array_equal(K.matrix, old_rr_matrix(k, eps))
    assert K == MarkovOperator(old_rr_matrix(k, eps)) and MarkovOperator(old_rr_matrix(k, eps)) == K
    assert K.inputs == tuple(range(k)) and K.is_square and K.shape == (k, k)


@pytest.mark.parametrize("args, exc, match", [
    ((0, 1.0, 0.0), InvalidParameterError, "k must be >= 1"),
    ((3, -0.1, 0.55), InvalidOperatorError, "diagonal must be finite and >= 0"),
    ((3, 0.5, math.inf), InvalidOperatorError, "off_diagonal must be finite"),
    ((3, 0.5, 0.3), InvalidOperatorError, "rows must sum to 1 within row_sum_atol"),
    ((3, "a", 0.3), TypeError, "diagonal must be a real number"),
    ((3, 0.5, math.nan), InvalidParameterError, "off_diagonal must not be NaN"),
], ids=["k0", "negative", "inf", "rowsum", "type", "nan"])
def test_symmetric_channel_validation(args, exc, match):
    with pytest.raises(exc, match=match):
        SymmetricChannel(*args)


def test_from_keep_and_from_epsilon_validation():
    K = SymmetricChannel.from_keep(4, 0.5)
    assert K.diagonal == 0.625 and K.off_diagonal == 0.125
    assert SymmetricChannel.from_keep(3, -0.5).diagonal == 0.0  # the most anti-correlated channel
    with pytest.raises(InvalidParameterError, match=r"keep must be in \[-1/\(k-1\), 1\]"):
        SymmetricChannel.from_keep(3, 1.5)
    with pytest.raises(InvalidParameterError, match="epsilon must be finite"):
        SymmetricChannel.from_epsilon(3, math.inf)
    with pytest.raises(InvalidParameterError, match="k must be >= 2"):
        SymmetricChannel.from_epsilon(1, 1.0)
    with pytest.raises(InvalidParameterError, match="labels must have k=3 entries"):
        mechanisms.randomized_response(3, 1.0, labels=["a", "b"])


# ----------------------------------------------------------------- views, densify guard
def test_views_row_apply_nnz_on_labels():
    K = mechanisms.randomized_response(4, math.log(3), labels=["a", "b", "c", "d"])
    D = K.densify()
    assert type(D) is MarkovOperator and D.inputs == ("a", "b", "c", "d")
    assert np.array_equal(K.row("c"), D.row("c")) and K.input_index("d") == 3 and K.output_index("b") == 1
    mu = np.array([0.1, 0.2, 0.3, 0.4])
    assert np.allclose(K.apply(mu), D.apply(mu), rtol=1e-15, atol=1e-16)
    assert K.nnz == 16 and SymmetricChannel(3, 1.0, 0.0).nnz == 3 and not K.is_sparse
    with pytest.raises(KeyError, match="'z' is not an input"):
        K.row("z")
    with pytest.raises(KeyError, match="'z' is not an output"):
        K.output_index("z")
    assert "structured symmetric channel" in repr(K)


def test_densify_of_a_huge_channel_is_refused_before_allocating():
    K = mechanisms.randomized_response(10**6, 2.0)
    with pytest.raises(ResourceLimitError, match=r"densifying a 1000000 x 1000000 SymmetricChannel needs about 7\.2"):
        K.densify()
    with ca.resource_limits(memory="100MB"), pytest.raises(ResourceLimitError, match="structured operator's own"):
        K.matrix  # noqa: B018 - every dense code path goes through the guarded _data
    with pytest.raises(ResourceLimitError, match="above the memory limit of 1 KiB"):
        mechanisms.randomized_response(30, 1.0).densify(memory_limit=1024)


def test_densify_is_cached():
    K = mechanisms.randomized_response(5, 1.0)
    assert K.densify() is K.densify() and K._data is K.densify()._data


# ----------------------------------------------------------------- restrict
def test_restrict_stays_structured_and_matches_dense():
    K = mechanisms.randomized_response(6, 1.5, labels=list("abcdef"))
    R = K.restrict(["e", "b", "c"])
    assert isinstance(R, SymmetricChannel) and R.inputs == ("e", "b", "c") and R.outputs == tuple("abcdef")
    assert np.array_equal(R.matrix, K.densify().restrict(["e", "b", "c"]).matrix)
    assert R.restrict(["c"]).matrix.tolist() == [K.row("c").tolist()]
    assert K.restrict(K.inputs) is K and K.restrict(list("abcdef")) == K
    with pytest.raises(InvalidOperatorError, match="repeated input label"):
        K.restrict(["a", "a"])
    with pytest.raises(InvalidOperatorError, match="at least one input label"):
        K.restrict([])
    with pytest.raises(KeyError, match="'z' is not an input"):
        K.restrict(["z"])


def test_restrict_at_a_million_is_cheap():
    with ca.resource_limits(memory="50MB"):
        R = mechanisms.randomized_response(10**6, 1.0).restrict([5, 999_999, 17])
        assert R.shape == (3, 10**6) and R.row(999_999)[999_999] == R.diagonal


# ----------------------------------------------------------------- products: closed form and error model
def exact_product(A, B):
    k = A.k
    d1, o1, d2, o2 = (Fraction(v) for v in (A.diagonal, A.off_diagonal, B.diagonal, B.off_diagonal))
    return d1 * d2 + (k - 1) * o1 * o2, d1 * o2 + o1 * d2 + (k - 2) * o1 * o2


@pytest.mark.parametrize("k", KS, ids=[f"k{k}" for k in KS])
@pytest.mark.parametrize("e1, e2", [(0.5, 2.0), (1e-12, 30.0), (700.0, 3.0), (0.0, 0.0)], ids=str)
def test_product_is_the_correctly_rounded_closed_form(k, e1, e2):
    A, B = mechanisms.randomized_response(k, e1), mechanisms.randomized_response(k, e2)
    C = A @ B
    assert isinstance(C, SymmetricChannel)
    d12, o12 = exact_product(A, B)
    assert C.diagonal == float(d12) and C.off_diagonal == float(o12)  # one rounding to nearest
    assert np.allclose(C.matrix, A.matrix @ B.matrix, rtol=k * 2.0**-52, atol=0)
    P, err = multiply(A, operator_error(A), B, operator_error(B))
    assert P == C and err.rel > 0 and err.support_exact


def test_product_error_covers_the_exact_normalised_product():
    """The error model of a structured product, checked in exact arithmetic: the normalised exact factors'
    product lies within stored (1 +- rel) entrywise. Factors whose rows sum to 1 - 4e-10 make the
    normalisation visible: dropping it from structured_operator_error fails this test."""
    k = 7
    A = SymmetricChannel(k, 0.4, 0.1 - 4e-10 / 6, row_sum_atol=1e-9)
    B = SymmetricChannel.from_epsilon(k, 2.0)
    ea, eb = operator_error(A), operator_error(B)
    assert ea.rel > 3.9e-10
    C, err = multiply(A, ea, B, eb)

    def normalised(X):
        s = Fraction(X.diagonal) + (k - 1) * Fraction(X.off_diagonal)
        return Fraction(X.diagonal) / s, Fraction(X.off_diagonal) / s

    (da, oa), (db, ob) = normalised(A), normalised(B)
    true_d = da * db + (k - 1) * oa * ob
    true_o = da * ob + oa * db + (k - 2) * oa * ob
    for true, stored in ((true_d, C.diagonal), (true_o, C.off_diagonal)):
        assert abs(true - Fraction(stored)) <= Fraction(err.rel) * Fraction(stored) + Fraction(err.absolute)


def test_subnormal_products_report_absolute_error():
    A = SymmetricChannel(2, 1.0, 2.0**-600)
    C, err = multiply(A, EXACT, A, EXACT)
    # o12 = 2 * 2^-600 exactly, d12 = 1 + 2^-1200 rounds to 1: normal results, relative error only
    assert isinstance(C, SymmetricChannel) and err.support_exact and C.off_diagonal == 2.0**-599
    assert err.absolute == 0.0
    # d12 = 0 * 1 + 1 * 2^-1074 is subnormal: an absolute error is reported
    C, err = multiply(SymmetricChannel(2, 0.0, 1.0), EXACT, SymmetricChannel(2, 1.0, 2.0**-1074), EXACT)
    assert C.diagonal == 2.0**-1074 and err.absolute >= 2.0**-1074 and err.support_exact


def test_mixed_products_are_dense_and_size_checked():
    K = mechanisms.randomized_response(4, 1.0)
    D = MarkovOperator(np.full((4, 2), 0.5))
    assert np.array_equal((K @ D).matrix, K.matrix @ D.matrix)
    assert np.array_equal((K.densify() @ K).matrix, K.matrix @ K.matrix)
    P, err = multiply(K, EXACT, D, EXACT)
    P2, err2 = multiply(K.densify(), EXACT, D, EXACT)
    assert P == P2 and err == err2
    big = mechanisms.randomized_response(10**6, 1.0)
    with pytest.raises(ResourceLimitError, match="densifying a 1000000 x 1000000"):
        big @ MarkovOperator(np.ones((10**6, 1)))
    with pytest.raises(IncompatibleOperatorsError):
        K @ mechanisms.randomized_response(5, 1.0)


def test_product_with_permuted_labels_and_restricted_left_factor():
    A = mechanisms.randomized_response(5, 1.0, labels=list("abcde"))
    B = mechanisms.randomized_response(5, 2.0, labels=list("ecabd"))
    C = A.restrict(["d", "a"]) @ B
    assert isinstance(C, SymmetricChannel) and C.outputs == tuple("ecabd")
    dense = A.densify().restrict(["d", "a"]) @ B.densify()
    assert np.allclose(C.matrix, dense.matrix, rtol=1e-15, atol=0) and C.inputs == ("d", "a")


@pytest.mark.parametrize("t", [0, 1, 2, 5, 13], ids=str)
def test_power_stays_structured(t):
    K = mechanisms.randomized_response(6, 0.7)
    P = K ** t
    assert isinstance(P, SymmetricChannel)
    assert np.allclose(P.matrix, np.linalg.matrix_power(K.matrix, t), rtol=1e-13, atol=0)
    with pytest.raises(InvalidParameterError, match="t must be >= 0"):
        K ** -1


def test_structured_error_and_smallest_positive_need_no_matrix():
    with ca.resource_limits(memory="20MB"):
        K = mechanisms.randomized_response(10**6, 3.0)
        err = operator_error(K)
        assert err.rel < 1e-15 and smallest_positive(K) == K.off_diagonal
        C, e = multiply(K, err, K, err)
        assert isinstance(C, SymmetricChannel) and e.rel < 1e-15


@settings(max_examples=60, deadline=None)
@given(k=st.integers(2, 40), a=st.floats(-1.0, 1.0), b=st.floats(0.0, 1.0))
def test_hypothesis_products_bound_the_exact_product(k, a, b):
    A = SymmetricChannel.from_keep(k, max(a, -1.0 / (k - 1)))
    B = SymmetricChannel.from_keep(k, b)
    C, err = multiply(A, operator_error(A), B, operator_error(B))
    d12, o12 = exact_product(A, B)
    for true, stored in ((d12, C.diagonal), (o12, C.off_diagonal)):
        assert abs(true - Fraction(stored)) <= Fraction(err.rel) * Fraction(stored) + Fraction(err.absolute)
    dense = A.matrix @ B.matrix
    assert np.allclose(C.matrix, dense, rtol=2 * k * 2.0**-52, atol=1e-300)


def test_pickle_keeps_the_structure_and_never_the_dense_cache():
    import copy
    import pickle

    K = mechanisms.randomized_response(10**6, 1.0).restrict([3, 5])
    assert pickle.loads(pickle.dumps(K)) == K and copy.deepcopy(K) == K
    small = mechanisms.randomized_response(4, 1.0, labels=list("abcd"))
    small.densify()
    back = pickle.loads(pickle.dumps(small))
    assert back == small and back._dense is None and len(pickle.dumps(small)) < 2000


# ----------------------------------------------------------------- the base class's generic fallbacks
class ConstantRows(StructuredOperator):
    """A toy structured operator: every input has the same output distribution w (one orbit, p = q)."""

    def __init__(self, n, w):
        self._w = np.asarray(w, dtype=float)
        super().__init__(n, self._w.size)

    def _dense_matrix(self):
        return np.tile(self._w, (self.shape[0], 1))

    def _row(self, i):
        return self._w.copy()

    def _apply(self, vec):
        return vec.sum() * self._w

    def _nnz(self):
        return self.shape[0] * int(np.count_nonzero(self._w))

    def _key(self):
        return tuple(self._w)

    def pair_orbits(self):
        from chainamp.operators import PairOrbit

        if self.shape[0] < 2:
            return ()
        total = float(self._w.sum())
        return (PairOrbit(p=[total], q=[total], pair=(0, 1), count=self.shape[0] * (self.shape[0] - 1),
                          rel_error=self.shape[1] * 2.0**-53, sizes=(self.shape[1],),
                          members=lambda b: range(self.shape[1])),)

    def orbit_of(self, i, j):
        return 0

    def row_sum_bounds(self):
        total = float(self._w.sum())
        return total * (1 - 2.0**-50), total * (1 + 2.0**-50)

    def minorant_mass(self):
        return float(self._w.sum()) * (1 - 2.0**-50)

    def minorant(self, memory_limit=None):
        return self._w.copy()

    def smallest_positive(self):
        return float(self._w[self._w > 0].min())


def test_a_toy_subclass_gets_every_coefficient_and_the_fallbacks():
    K = ConstantRows(5, [0.2, 0.3, 0.5])
    D = K.densify()
    # the orbit's rel_error widens the exact 0 by a few ulps (the orbit cannot say that p* = q* exactly)
    assert 0.0 <= ca.dobrushin(K).gamma <= 1e-14 and ca.dobrushin(D).gamma == 0.0
    assert ca.ultra_mixing(K).gamma == 0.0 and ca.ldp_guarantee(K).epsilon == 0.0
    assert ca.doeblin(K).gamma <= 1e-14 and ca.privacy_profile(K).delta(0.0) <= 1e-14
    R = K.restrict([4, 1])  # no _restrict: the dense operator
    assert type(R) is MarkovOperator and R.inputs == (4, 1) and np.array_equal(R.matrix, D.restrict([4, 1]).matrix)
    assert np.array_equal((K @ MarkovOperator(np.eye(3))).matrix, D.matrix)
    assert K == ConstantRows(5, [0.2, 0.3, 0.5]) and K != ConstantRows(5, [0.5, 0.3, 0.2])
    assert "ConstantRows(5x3 structured" in repr(K)


def test_pair_orbit_validation():
    from chainamp.operators import PairOrbit

    with pytest.raises(InvalidOperatorError, match="p and q of one 1-D shape"):
        PairOrbit(p=[0.5, 0.5], q=[1.0], pair=(0, 1), count=2)
    orbit = PairOrbit(p=[0.5, 0.5], q=[0.25, 0.75], pair=(0, 1), count=2)
    with pytest.raises(ValueError):
        orbit.p[0] = 1.0  # read-only


@pytest.mark.parametrize("k", [3, 5, 7, 12, 10**6], ids=["k3", "k5", "k7", "k12", "k1e6"])
@pytest.mark.parametrize("eps", [0.3, 1.0, 30.0], ids=["eps0.3", "eps1", "eps30"])
def test_pair_orbit_masses_are_within_their_stated_error(k, eps):
    """The contract of PairOrbit, in exact arithmetic: each exact block mass is within rel_error of the float
    (the last block, (k - 2) o, is one rounded product; declaring rel_error = 0 fails this test)."""
    K = mechanisms.randomized_response(k, eps)
    (orbit,) = K.pair_orbits()
    d, o = Fraction(K.diagonal), Fraction(K.off_diagonal)
    exact_p = [d, o, (k - 2) * o]
    exact_q = [o, d, (k - 2) * o]
    for exact, stored in zip(exact_p + exact_q, list(orbit.p) + list(orbit.q)):
        assert abs(exact - Fraction(stored)) <= Fraction(orbit.rel_error) * Fraction(stored)
        if exact:
            assert abs(exact - Fraction(stored)) / exact <= Fraction(orbit.rel_error)
    assert orbit.ratio_error == 0.0 and orbit.p[0] / orbit.q[0] == K.diagonal / K.off_diagonal
    assert orbit.count == k * (k - 1) and orbit.sizes == (1, 1, k - 2)
    assert list(orbit.members(0)) == [0] and list(orbit.members(1)) == [1]
    if k < 100:
        assert sorted(orbit.members(2)) == list(range(2, k))
    inexact = any(Fraction(float((k - 2) * o)) != (k - 2) * o for _ in [0])
    assert orbit.rel_error > 0 or not inexact


class PerturbedOrbit(StructuredOperator):
    """Two inputs with exact rows (0.6, 0.4) and (0.4, 0.6), whose single orbit reports masses moved by a
    relative 1e-6 toward "more private" (the floats a structure might compute), declaring the error. Every
    consumer must widen by the declared errors to stay above the exact (dense) values."""

    SHIFT = 1e-6

    def __init__(self):
        super().__init__(2, 2)

    def _dense_matrix(self):
        return np.array([[0.6, 0.4], [0.4, 0.6]])

    def _row(self, i):
        return self._dense_matrix()[i]

    def _apply(self, vec):
        return vec @ self._dense_matrix()

    def _nnz(self):
        return 4

    def _key(self):
        return "perturbed"

    def pair_orbits(self):
        from chainamp.operators import PairOrbit

        s = self.SHIFT
        return (PairOrbit(p=[0.6 * (1 - s), 0.4 * (1 + s)], q=[0.4 * (1 + s), 0.6 * (1 - s)], pair=(0, 1), count=2,
                          rel_error=1.01 * s, ratio_error=2.02 * s, sizes=(1, 1), members=lambda b: (b,)),)

    def orbit_of(self, i, j):
        return 0

    def row_sum_bounds(self):
        return 1.0, 1.0

    def minorant_mass(self):
        return 0.8

    def minorant(self, memory_limit=None):
        return np.array([0.4, 0.4])

    def smallest_positive(self):
        return 0.4


@pytest.mark.parametrize("order", [0.0, 0.2, math.log(1.5) * (1 - 1e-9), math.inf], ids=["0", "0.2", "tie", "inf"])
def test_declared_orbit_errors_are_widened_by_every_consumer(order):
    K = PerturbedOrbit()
    D = K.densify()
    assert ca.dobrushin(K, order).gamma >= ca.dobrushin(D, order).gamma
    assert ca.dobrushin_curve(K, [order])[0] >= ca.dobrushin(D, order).gamma
    assert ca.ldp_guarantee(K).delta(order) >= ca.dobrushin(D, order).gamma
    assert ca.privacy_profile(K).delta(order) >= ca.privacy_profile(D).delta(order)
    assert ca.ultra_mixing(K).gamma >= ca.ultra_mixing(D).gamma
    assert ca.ldp_guarantee(K).epsilon >= math.log(1.5)
    assert ca.privacy_profile(K).pure_epsilon >= math.log(1.5)


def test_widen_hockey_covers_adversarial_perturbations():
    from chainamp.operators import widen_hockey

    rng = np.random.default_rng(3)
    for _ in range(200):
        p, q = rng.random(5), rng.random(5)
        p, q = p / p.sum(), q / q.sum()
        rel = float(10.0 ** rng.uniform(-12, -2))
        eps = float(rng.choice([0.0, rng.uniform(0, 3)]))
        # the true vectors: p up by rel where p is large relative to q, q down there (and the reverse elsewhere)
        sign = np.where(p > q, 1.0, -1.0)
        p_true, q_true = p * (1 + sign * rel), q * (1 - sign * rel)

        def hockey(a, b, e):
            return float(np.maximum(a - math.exp(e) * b, 0.0).sum())

        bound = widen_hockey(lambda o: np.array([hockey(p, q, float(x)) * (1 + 1e-12) for x in np.atleast_1d(o)]),
                             eps, rel)
        assert bound >= hockey(p_true, q_true, eps)


@pytest.mark.parametrize("rel", [1e-16, 2.0**-40, 1e-6, 0.3], ids=["1e-16", "2^-40", "1e-6", "0.3"])
def test_widen_hockey_one_eps_equals_the_array_path(rel):
    """One eps (the scalar path, floats) gives exactly the array path's entry: around the shift (eps - shift one
    float either side of 0), at 0, at inf and on a grid; for a float and for a one-entry array."""
    from chainamp.operators import hockey_shift, widen_hockey

    curve = lambda o: np.where(np.isinf(o), 0.125, 0.6 * np.exp(-np.minimum(o, 700.0)) / 3.0)  # noqa: E731
    s = hockey_shift(rel)
    eps = np.array([0.0, 5e-324, s, math.nextafter(s, 0.0), math.nextafter(s, 1.0), s / 2, 0.5, 3.0, 745.0,
                    math.inf])
    many = widen_hockey(curve, eps, rel)
    for i, e in enumerate(eps.tolist()):
        assert widen_hockey(curve, e, rel) == many[i]
        assert widen_hockey(curve, np.array([e]), rel).tolist() == [many[i]]
