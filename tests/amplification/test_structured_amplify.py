"""amplify on structured k-ary randomized response (k-RR then k-RR): the whole report agrees with the dense path on
the densified matrices (k <= 12), every source is sound against the exact pipeline (an RR with keep a1 a2), and
k = 10^4 and 10^6 run without any dense matrix."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import chainamp as ca
from chainamp import DP, amplify, mechanisms
from chainamp.errors import IncompatibleOperatorsError
from chainamp.operators import SymmetricChannel

mp.mp.dps = 60
KS = [2, 3, 4, 7, 12]
PAIRS = [(5.0, 2.0), (1e-12, 1.0), (30.0, 0.5), (3.0, 3.0)]


def exact_pipeline_delta(M, K, eps):
    """``delta(eps)`` of the exact pipeline M K (normalised rows), both symmetric channels on k values."""
    k = M.k

    def norm(X):
        d, o = mp.mpf(X.diagonal), mp.mpf(X.off_diagonal)
        s = d + (k - 1) * o
        return d / s, o / s

    (d1, o1), (d2, o2) = norm(M), norm(K)
    d = d1 * d2 + (k - 1) * o1 * o2
    o = d1 * o2 + o1 * d2 + (k - 2) * o1 * o2
    c = mp.e ** mp.mpf(eps)
    return max(d - c * o, 0) + max(o - c * d, 0)


def exact_pipeline_epsilon(M, K):
    k = M.k
    d1, o1, d2, o2 = (mp.mpf(v) for v in (M.diagonal, M.off_diagonal, K.diagonal, K.off_diagonal))
    d = d1 * d2 + (k - 1) * o1 * o2
    o = d1 * o2 + o1 * d2 + (k - 2) * o1 * o2
    return abs(mp.log(d / o))


@pytest.mark.parametrize("k", KS, ids=[f"k{k}" for k in KS])
@pytest.mark.parametrize("e1, e2", PAIRS, ids=[f"{a:g}-{b:g}" for a, b in PAIRS])
def test_report_matches_dense_and_is_sound(k, e1, e2):
    M, K = mechanisms.randomized_response(k, e1), mechanisms.randomized_response(k, e2)
    rep, dense = amplify(M, K), amplify(M.densify(), K.densify())
    by_s = {b.source: b for b in rep.bounds}
    by_d = {b.source: b for b in dense.bounds}
    assert set(by_s) == set(by_d)
    for name, b in by_s.items():
        assert abs(b.epsilon - by_d[name].epsilon) <= 1e-9 * max(1.0, b.epsilon), name
    assert abs(rep.best.epsilon - dense.best.epsilon) <= 1e-9 * max(1.0, dense.best.epsilon)
    exact_eps = exact_pipeline_epsilon(M, K)
    assert rep.exact.epsilon >= exact_eps and rep.best.epsilon >= exact_eps - 1e-12 * max(1.0, e1)
    for e in (0.0, 0.5 * float(exact_eps)):
        assert rep.delta_at(e) >= exact_pipeline_delta(M, K, e)
    c, cd = rep.coefficients, dense.coefficients
    for a, b in ((c.dobrushin.gamma, cd.dobrushin.gamma), (c.doeblin.gamma, cd.doeblin.gamma),
                 (c.ultra_mixing.gamma, cd.ultra_mixing.gamma), (c.ldp_epsilon, cd.ldp_epsilon)):
        assert abs(a - b) <= 1e-12 * max(1.0, b)
    assert str(rep).splitlines()[0].split(" is ")[0] == str(dense).splitlines()[0].split(" is ")[0]


@pytest.mark.parametrize("delta", [1e-6, 0.0], ids=["delta1e-6", "pure"])
def test_black_box_input_and_lists_of_structured_steps(delta):
    K = mechanisms.randomized_response(6, 1.0)
    rep = amplify(DP(2.0, delta), [K, K])
    dense = amplify(DP(2.0, delta), [K.densify(), K.densify()])
    assert abs(rep.best.epsilon - dense.best.epsilon) <= 1e-9 * max(1.0, dense.best.epsilon)
    assert isinstance(rep.operator, SymmetricChannel)


def test_incompatible_sizes_are_refused():
    with pytest.raises(IncompatibleOperatorsError, match="outputs of M"):
        amplify(mechanisms.randomized_response(4, 1.0), mechanisms.randomized_response(5, 1.0))


def test_inputs_keyword_with_a_structured_mechanism():
    M, K = mechanisms.randomized_response(5, 2.0), mechanisms.randomized_response(5, 1.0)
    rep = amplify(M, K, inputs=[0, 1, 2, 3, 4])
    assert abs(rep.best.epsilon - amplify(M, K).best.epsilon) <= 1e-12
    with pytest.raises(ca.errors.InvalidMechanismError, match="inputs omits"):
        amplify(M, K, inputs=[0, 1])


@pytest.mark.parametrize("k", [10_000, 1_000_000], ids=["k1e4", "k1e6"])
def test_large_k_report_without_a_dense_matrix(k):
    with ca.resource_limits(memory="200MB"):
        M, K = mechanisms.randomized_response(k, 5.0), mechanisms.randomized_response(k, 2.0)
        rep = amplify(M, K, delta=1e-9)
        text = str(rep)
        exact_eps = exact_pipeline_epsilon(M, K)
        assert exact_eps <= rep.exact.epsilon <= exact_eps * (1 + 1e-9) + 1e-12 or rep.exact.delta > 0
        assert rep.best.epsilon <= rep.exact.epsilon
        assert rep.delta_at(0.0) >= exact_pipeline_delta(M, K, 0.0)
        assert f"{k}x{k}" in text
        assert ca.privacy_profile(M @ K).delta(0.0) >= exact_pipeline_delta(M, K, 0.0)
        with pytest.raises(ca.ResourceLimitError, match="densifying"):
            (M @ K).matrix  # noqa: B018 - the only way to a dense matrix, refused under the limit


def test_large_k_with_a_dp_input():
    with ca.resource_limits(memory="200MB"):
        K = mechanisms.randomized_response(10**6, 8.0)
        rep = amplify(DP(1.0, 1e-6), K)
        assert math.isfinite(rep.best.epsilon) and rep.best.epsilon <= 1.0
        assert np.isfinite(rep.coefficients.ldp_epsilon)
