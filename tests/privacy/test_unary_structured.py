"""Unary encodings (OUE / SUE of Wang, Blocki, Li, Jha 2017) as structured k-input mechanisms."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import chainamp
from chainamp import kron, mechanisms, privacy_profile
from chainamp.errors import InvalidParameterError
from chainamp.operators import KroneckerOperator
from tests.conftest import exact_max_low, sixty_digits


def _dense(k, eps, kind):
    bit = mechanisms.optimized_unary_encoding(eps) if kind == "OUE" else mechanisms.symmetric_unary_encoding(eps)
    one_hot = [tuple(1 if j == i else 0 for j in range(k)) for i in range(k)]
    return kron(*[bit] * k, structured=False).restrict(one_hot)


@pytest.mark.parametrize("k", [2, 3, 7, 12], ids=lambda k: f"k{k}")
@pytest.mark.parametrize("kind", ["OUE", "SUE"])
def test_matches_the_dense_kronecker_restriction(k, kind):
    eps = 1.3
    U, D = mechanisms.unary_encoding(k, eps, kind), _dense(k, eps, kind)
    assert isinstance(U, KroneckerOperator) and U.input_family == "one-hot"
    assert U.outputs == D.outputs and tuple(U.inputs) == tuple(range(k))
    assert np.array_equal(U.matrix, D.matrix)  # the same products, bit for bit
    ps, pd = privacy_profile(U), privacy_profile(D)
    assert eps <= ps.pure_epsilon <= eps + 1e-12 and abs(ps.pure_epsilon - pd.pure_epsilon) < 1e-12
    for e in (0.0, 1.0):
        with sixty_digits():  # every pair is alike: two candidate pairs suffice
            assert ps.delta(e) >= exact_max_low(D.matrix, e, top=2)[0]
        assert ps.delta(e) <= pd.delta(e) + 1e-12
    for fn in (chainamp.dobrushin, chainamp.ultra_mixing, chainamp.doeblin):
        s, d = fn(U).gamma, fn(D).gamma
        assert abs(s - d) < 1e-12, fn.__name__


@pytest.mark.parametrize("k", [10_000, 1_000_000], ids=["k1e4", "k1e6"])
@pytest.mark.parametrize("kind", ["OUE", "SUE"])
def test_deployed_sizes(k, kind):
    U = mechanisms.unary_encoding(k, 1.0, kind)
    prof = privacy_profile(U)
    assert 1.0 <= prof.pure_epsilon <= 1.0 + 1e-12
    small = privacy_profile(mechanisms.unary_encoding(4, 1.0, kind))
    assert abs(prof.delta(0.3) - small.delta(0.3)) < 1e-12  # one pair type whatever k
    assert chainamp.ldp_guarantee(U).epsilon <= 1.0 + 1e-9
    assert 0 < chainamp.doeblin(U).gamma < 1


def test_followed_by_a_structured_post_processing():
    """OUE then per-bit randomized response: the pipeline stays a product; amplify against the dense path."""
    k = 6
    U = mechanisms.unary_encoding(k, 2.0)
    K = KroneckerOperator.power(mechanisms.binary_randomized_response(1.0), k)
    P = U @ K
    assert isinstance(P, KroneckerOperator) and P.input_family == "one-hot"
    rs = chainamp.amplify(U, K, delta=1e-6)
    rd = chainamp.amplify(U.densify(), K.densify(), delta=1e-6)
    assert abs(rs.best.epsilon - rd.best.epsilon) < 1e-6
    assert abs(rs.coefficients.dobrushin.gamma - rd.coefficients.dobrushin.gamma) < 1e-12
    big = mechanisms.unary_encoding(10**6, 2.0) @ KroneckerOperator.power(
        mechanisms.binary_randomized_response(1.0), 10**6)
    assert abs(privacy_profile(big).pure_epsilon - privacy_profile(P).pure_epsilon) < 1e-9


def test_labels():
    U = mechanisms.unary_encoding(3, 1.0, "sue", labels=["a", "b", "c"])
    assert tuple(U.inputs) == ("a", "b", "c") and privacy_profile(U).witness(0.0)[0] in "abc"


@pytest.mark.parametrize("args, kwargs, exc, match", [
    ((1, 1.0), {}, InvalidParameterError, "k"),
    ((3, -1.0), {}, InvalidParameterError, "epsilon"),
    ((3, 1.0), dict(kind="GRR"), InvalidParameterError, "kind must be 'OUE' or 'SUE'"),
    ((3, 1.0), dict(kind=2), TypeError, "kind must be a string"),
    ((3, 1.0), dict(labels=["a", "b"]), InvalidParameterError, "labels must have k=3 entries"),
    ((3, 1.0), dict(labels="abc"), TypeError, "not a string"),
], ids=["k", "epsilon", "kind-value", "kind-type", "labels-length", "labels-string"])
def test_validation(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        mechanisms.unary_encoding(*args, **kwargs)


def test_per_bit_channels_unchanged():
    assert mechanisms.optimized_unary_encoding(math.log(3)).matrix.round(4).tolist() == [[0.75, 0.25], [0.5, 0.5]]
    assert not isinstance(mechanisms.symmetric_unary_encoding(1.0), KroneckerOperator)
    assert list(itertools.islice(mechanisms.unary_encoding(3, 1.0).outputs, 2)) == [(0, 0, 0), (0, 0, 1)]


@pytest.mark.parametrize("k", [12, 5_000, 1_000_000], ids=["k12-all-counts", "k5000-window", "k1e6-window"])
def test_doeblin_minorant_closed_form(k):
    """OUE: sum_y min_v K(v, y) = r0 (1 - q^k) + r1 q^k with r_b = B(1, b) / B(0, b) (the minimum over the
    categories picks a coordinate reporting 0 when there is one); the structure's lower bound is within
    1e-7 (the charged error of gammaln(k + 1) ~ 1.3e7 at k = 1e6: 16 u per unit of magnitude)."""
    import mpmath as mp

    U = mechanisms.unary_encoding(k, 1.0)
    B = mechanisms.optimized_unary_encoding(1.0).matrix
    with mp.workdps(40):
        q = mp.mpf(float(B[0, 1]))
        r0, r1 = mp.mpf(float(B[1, 0])) / mp.mpf(float(B[0, 0])), mp.mpf(float(B[1, 1])) / q
        exact = r0 * (1 - q**k) + r1 * q**k  # B[0, 0] + B[0, 1] == 1 exactly for these doubles
        assert mp.mpf(float(B[0, 0])) + q == 1
        mass = U.minorant_mass()
        assert exact * (1 - mp.mpf(1e-7)) <= mass <= exact
