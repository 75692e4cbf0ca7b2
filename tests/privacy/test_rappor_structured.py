"""RAPPOR at deployed sizes: structured operators, checked against the paper's formulas and the dense pipeline."""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

import chainamp
from chainamp import mechanisms, privacy_profile
from chainamp.errors import InvalidParameterError
from chainamp.operators import KroneckerOperator
from tests.conftest import exact_max_low, sixty_digits


def _exact_eps(f, p, q, h):
    """eps_1 and eps_inf of Erlingsson et al. (2014) in 60-digit arithmetic from the stored parameters."""
    with mp.workdps(60):
        f, p, q = mp.mpf(f), mp.mpf(p), mp.mpf(q)
        qs = f * (p + q) / 2 + (1 - f) * q
        ps = f * (p + q) / 2 + (1 - f) * p
        return h * abs(mp.log(qs * (1 - ps) / (ps * (1 - qs)))), 2 * h * mp.log((1 - f / 2) / (f / 2))


@pytest.mark.parametrize("m, h, f, p, q", [
    (128, 2, 0.5, 0.5, 0.75),
    (128, 4, 0.25, 0.3, 0.9),
    (256, 2, 0.5, 0.75, 0.5),
    (64, 1, 0.1, 0.05, 0.95),
], ids=["deployed-128-2", "128-4", "256-q<p", "64-1"])
def test_pure_epsilon_is_the_papers_formula(m, h, f, p, q):
    R = mechanisms.rappor_pipeline(m, h, f, p, q)
    assert R.structured and isinstance(R.one_report, KroneckerOperator)
    one, perm = privacy_profile(R.one_report), privacy_profile(R.mechanism)
    eps_1, eps_inf = _exact_eps(f, p, q, h)
    # never below the exact value; above it by the documented outward rounding only
    assert eps_1 <= one.pure_epsilon <= eps_1 + 1e-12
    assert eps_inf <= perm.pure_epsilon <= eps_inf + 1e-12
    assert abs(one.pure_epsilon - R.epsilon_one) < 1e-12 and abs(perm.pure_epsilon - R.epsilon_inf) < 1e-12
    assert one.delta(one.pure_epsilon) == 0.0 and one.delta(0.5 * eps_1) > 0


def test_deployed_size_is_fast_and_never_densified():
    import time

    t = time.perf_counter()
    R = mechanisms.rappor_pipeline(128, 2)
    prof = privacy_profile(R.one_report)
    assert prof.pure_epsilon < 1.08 and privacy_profile(R.mechanism).pure_epsilon < 4.4
    assert time.perf_counter() - t < 5.0  # < 0.1 s on an idle machine; generous for loaded CI
    assert R.one_report.shape == (8128, 2**128) and R.one_report._dense is None
    assert len(R.bloom_filters) == 8128 and R.bloom_filters[0][:3] == (1, 1, 0)


@pytest.mark.parametrize("m, h, f, p, q", [
    (3, 1, 0.5, 0.5, 0.75), (4, 2, 0.5, 0.5, 0.75), (5, 2, 0.3, 0.2, 0.9), (6, 2, 0.5, 0.5, 0.75),
    (5, 3, 0.5, 0.5, 0.75), (6, 3, 0.8, 0.9, 0.1),
], ids=["3-1", "4-2", "5-2", "6-2", "5-3-m<2h", "6-3-q<p"])
def test_structured_matches_dense(m, h, f, p, q):
    S = mechanisms.rappor_pipeline(m, h, f, p, q, structured=True)
    D = mechanisms.rappor_pipeline(m, h, f, p, q)
    assert not D.structured and S.bloom_filters == D.bloom_filters
    assert S.permanent.inputs == D.permanent.inputs and S.permanent.outputs == D.permanent.outputs
    assert np.array_equal(S.permanent.matrix, D.permanent.matrix)
    assert np.array_equal(S.mechanism.matrix, D.mechanism.matrix)
    np.testing.assert_allclose(S.one_report.matrix, D.one_report.matrix, rtol=1e-13)
    for sm, dm in ((S.mechanism, D.mechanism), (S.one_report, D.one_report)):
        ps, pd = privacy_profile(sm), privacy_profile(dm)
        assert abs(ps.pure_epsilon - pd.pure_epsilon) < 1e-12
        for eps in (0.0, 0.5, 1.5):
            with sixty_digits():
                assert ps.delta(eps) >= exact_max_low(dm.matrix, eps, top=6)[0]
            assert ps.delta(eps) <= pd.delta(eps) + 1e-12
    # the instantaneous step on the outputs of the permanent one: coefficients and the amplify report
    K, Kd = S.instantaneous, D.instantaneous
    for fn in (chainamp.dobrushin, chainamp.ultra_mixing):
        assert abs(fn(K).gamma - fn(Kd).gamma) < 1e-12
    assert abs(chainamp.doeblin(K).gamma - chainamp.doeblin(Kd).gamma) < 1e-12
    rs, rd = chainamp.amplify(S.mechanism, K, delta=1e-6), chainamp.amplify(D.mechanism, Kd, delta=1e-6)
    assert abs(rs.best.epsilon - rd.best.epsilon) < 1e-6


def test_explicit_filters_stay_structured():
    filters = [(1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1),
               (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    R = mechanisms.rappor_pipeline(12, 2, bloom_filters=filters)
    assert R.structured and R.mechanism.input_family == "explicit"
    prof = privacy_profile(R.one_report)
    # the first two filters differ in 2 bits each way, the largest type: eps_1 exactly
    assert abs(prof.pure_epsilon - R.epsilon_one) < 1e-12
    assert prof.witness(0.0) in (((1, 1) + (0,) * 10, (0, 0, 1) + (0,) * 8 + (1,)),
                                 ((0, 0, 1) + (0,) * 8 + (1,), (1, 1) + (0,) * 10))


def test_dense_behaviour_unchanged_for_small_filters():
    R = mechanisms.rappor_pipeline(4, 2)
    assert not R.structured and type(R.permanent) is chainamp.MarkovOperator
    assert R.bloom_filters == tuple(tuple(1 if i in ones else 0 for i in range(4))
                                    for ones in itertools.combinations(range(4), 2))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(m=11, h=2, structured=False), InvalidParameterError, "m must be <= 10 for dense"),
    (dict(m=4, h=2, structured="yes"), TypeError, "structured must be None or a bool"),
    (dict(m=128, h=129), InvalidParameterError, "h must be <= m=128"),
], ids=["dense-too-long", "structured-type", "h-too-big"])
def test_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        mechanisms.rappor_pipeline(**kwargs)


@pytest.mark.parametrize("m", [63, 64, 128], ids=["m63", "m64", "m128"])
def test_custom_bloom_filters_past_int64(m):
    """Issue 18.4: custom filter lists at m >= 64 (2^m inputs, past int64) give the m = 8 profile: the extra
    coordinates are 0 in every filter, so they add nothing to any pair's divergence."""
    ones = [(0, 5), (3, 7), (6,)]
    big = mechanisms.rappor_pipeline(m, 2, bloom_filters=[tuple(int(i in s) for i in range(m)) for s in ones])
    small = mechanisms.rappor_pipeline(8, 2, bloom_filters=[tuple(int(i in s) for i in range(8)) for s in ones])
    assert big.mechanism.shape[0] == 3 and big.mechanism.inputs == tuple(
        tuple(int(i in s) for i in range(m)) for s in ones)
    got, ref = privacy_profile(big.one_report), privacy_profile(small.one_report)
    for eps in (0.0, 0.5, 1.0):
        assert got.delta(eps) == pytest.approx(ref.delta(eps), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("f", [0.5, 0.25, 0.75, 0.1, 0.01, 1 - 1e-9, 1.0], ids=lambda f: f"f{f:g}")
@pytest.mark.parametrize("h", [1, 2, 3], ids=["h1", "h2", "h3"])
def test_epsilon_inf_is_rounded_up(f, h):
    """Issue 18: epsilon_inf was 1 ulp BELOW the exact 2h log((1 - f/2)/(f/2)) (f = 0.5, h = 2 among others)."""
    got = mechanisms.rappor_pipeline(4, h, f=f).epsilon_inf
    with mp.workdps(60):
        half = mp.mpf(f) / 2
        exact = 2 * h * mp.log((1 - half) / half)
        assert exact <= got
        assert got - exact <= mp.mpf(2) ** -40 * max(exact, mp.mpf(2) ** -40) + 64 * mp.mpf(2) ** -53 * 2 * h
