"""chainamp.compose and the dp-accounting / OpenDP bridges (chainamp.accounting.composition, .pld)."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from scipy.special import gammaln

from chainamp import DP, MarkovOperator, PrivacyProfile, amplify, privacy_profile
from chainamp.accounting import PLDProfile, compose, opendp_curve, pair_to_pld, profile_from_pld, profile_to_pld
from chainamp.errors import InvalidDistributionError, InvalidParameterError
from chainamp.privacy import DominatingPair

from conftest import krr_matrix, random_stochastic

#: the brute force sums at most 625 products in floating point: "never above" allows this much
BRUTE_ATOL = 1e-12


def grr_chain(k: int = 4, eps_perm: float = 2.0, eps_1: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """multi-freq-ldpy's L-GRR: GRR(eps_perm) then GRR with the second-round parameters L_GRR_Client sets."""
    p1 = math.exp(eps_perm) / (math.exp(eps_perm) + k - 1)
    q1 = (1 - p1) / (k - 1)
    e = math.exp(eps_1)
    p2 = (q1 - e * p1) / (-p1 * e + k * q1 * e - q1 * e - p1 * (k - 1) + q1)
    q2 = (1 - p2) / (k - 1)
    m1, m2 = np.full((k, k), q1), np.full((k, k), q2)
    np.fill_diagonal(m1, p1)
    np.fill_diagonal(m2, p2)
    return m1, m2


def _product_pairs(mechs: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The product distributions of every ordered pair of rows (u, v), u != v, of independent uses of ``mechs``."""
    n = mechs[0].shape[0]
    out = []
    for u, v in itertools.permutations(range(n), 2):
        a, b = np.ones(1), np.ones(1)
        for M in mechs:
            a, b = np.kron(a, M[u]), np.kron(b, M[v])
        out.append((a, b))
    return out


def brute_delta(mechs: list[np.ndarray], eps: np.ndarray, pairs=None) -> np.ndarray:
    """Exact profile of independent uses of the mechanisms on one input: max over ordered pairs of rows of
    the hockey-stick divergence of the product distributions (``pairs``: those of ``_product_pairs(mechs)``)."""
    out = np.zeros(eps.size)
    for a, b in _product_pairs(mechs) if pairs is None else pairs:
        vals = np.maximum(a[None, :] - np.exp(eps)[:, None] * b[None, :], 0.0).sum(axis=1)
        out = np.maximum(out, vals)
    return out


def brute_epsilon(mechs: list[np.ndarray], delta: float) -> float:
    pairs = _product_pairs(mechs)  # formed once, not at each of the 80 steps of the bisection
    lo, hi = 0.0, 60.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if brute_delta(mechs, np.array([mid]), pairs)[0] > delta else (lo, mid)
    return lo


def worst_pair_epsilon(P: np.ndarray, T: int, delta: float) -> float:
    """Exact eps(delta) of T uses of a GRR-shaped P (rows (a, b, ..., b) permuted): the loss is
    L (n1 - n2) with (n1, n2, rest) trinomial, so the T-fold pair is summed in closed form."""
    a, b = P[0, 0], P[0, 1]
    rest = 1.0 - a - b
    L = math.log(a / b)
    n1, n2 = np.arange(T + 1)[:, None], np.arange(T + 1)[None, :]
    ok = n1 + n2 <= T
    n3 = np.where(ok, T - n1 - n2, 0)
    logp = (gammaln(T + 1) - gammaln(n1 + 1) - gammaln(n2 + 1) - gammaln(n3 + 1) + n1 * math.log(a)
            + n2 * math.log(b) + n3 * math.log(rest))
    # the loss takes the 2T + 1 values L d, d = n1 - n2: the probability of each is summed once (not at each of the
    # 60 bisection steps over the (T + 1)^2 grid, ~0.9 s of CPU at T = 1000)
    d = (n1 - n2)[ok] + T
    weight = np.bincount(d, weights=np.exp(logp[ok]), minlength=2 * T + 1)
    loss = L * (np.arange(2 * T + 1) - T)

    def delta_at(e: float) -> float:
        above = loss > e
        return float(np.sum(weight[above] * -np.expm1(e - loss[above])))

    lo, hi = 0.0, T * L
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delta_at(mid) > delta else (lo, mid)
    return lo


# ----------------------------------------------------------------------------- brute force, T <= 4
@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
def test_composition_never_below_brute_force_on_random_pipelines(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    P = random_stochastic(rng, n, 3) @ random_stochastic(rng, 3, m)
    T = int(rng.integers(1, 5)) if n * m <= 16 else int(rng.integers(1, 4))
    eps = np.linspace(0.0, 3.0, 31)
    prof = compose([P], counts=[T])
    assert np.all(prof.delta(eps) >= brute_delta([P] * T, eps) - BRUTE_ATOL)


def test_composition_of_two_different_pipelines_never_below_brute_force():
    rng = np.random.default_rng(7)
    A, B = random_stochastic(rng, 3, 4), random_stochastic(rng, 3, 2) @ random_stochastic(rng, 2, 5)
    eps = np.linspace(0.0, 3.0, 31)
    prof = compose([A, MarkovOperator(B)], counts=[2, 1])
    assert np.all(prof.delta(eps) >= brute_delta([A, A, B], eps) - BRUTE_ATOL)


@pytest.mark.parametrize("mech, T", [
    (krr_matrix(2, 1.0), 4), (krr_matrix(3, 2.0), 3), (krr_matrix(5, 0.7), 2),
    (grr_chain()[0] @ grr_chain()[1], 4), (grr_chain(3, 1.5, 0.5)[0] @ grr_chain(3, 1.5, 0.5)[1], 3),
], ids=["rr2-T4", "krr3-T3", "krr5-T2", "grr4-chain-T4", "grr3-chain-T3"])
def test_symmetric_mechanisms_within_one_percent_of_brute_force(mech, T):
    prof = compose([mech], counts=[T])
    for delta in (1e-2, 1e-4, 1e-6):
        exact = brute_epsilon([mech] * T, delta)
        got = prof.epsilon(delta)
        assert exact - 1e-9 <= got <= 1.01 * exact + 1e-9, (delta, exact, got)


# ----------------------------------------------------------------------------- closed forms for DP points
def test_two_pure_points_compose_to_twice_epsilon():
    eps = 1.0
    prof = compose([DP(eps), DP(eps)])
    a = math.exp(eps) / (1 + math.exp(eps))
    grid = np.array([0.0, 0.5, 1.0, 1.5, 1.9])
    exact = a * a * -np.expm1(grid - 2 * eps)  # the canonical pair squared: losses 2 eps, 0, -2 eps
    got = prof.delta(grid)
    assert np.all(got >= exact) and np.all(got <= exact + 1e-6)
    # the losses +-eps sit within rounding of a grid point: a sliver of mass goes one step up (pessimistic)
    assert prof.delta(2 * eps + 3e-3) == 0.0 and prof.pure_epsilon <= 2 * eps + 2.1e-3


def test_approximate_points_compose_with_the_optimal_composition_at_k_eps():
    # Kairouz, Oh and Viswanath 2015, Thm 3.3 (i = 0): k-fold (eps, delta) is (k eps, 1 - (1 - delta)^k)
    prof = compose([DP(0.5, 1e-3)], counts=[3])
    expected = 1 - (1 - 1e-3) ** 3
    assert expected <= prof.delta(1.5) <= expected + 1e-9
    assert prof.pure_epsilon == math.inf


def test_counts_default_to_one_and_zero_drops_an_item():
    a = compose([DP(1.0), DP(2.0)], counts=[1, 0])
    b = compose([DP(1.0)])
    grid = np.linspace(0.0, 1.0, 11)
    assert np.allclose(a.delta(grid), b.delta(grid), rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- the goals of issue 12
@pytest.mark.parametrize("T, goal", [(100, 19.2), (1000, 97.0)], ids=["T100", "T1000"])
def test_longitudinal_grr_goals(T, goal):
    m1, m2 = grr_chain()
    P = m1 @ m2
    assert privacy_profile(P).pure_epsilon == pytest.approx(0.428, abs=1e-3)
    start = time.perf_counter()
    eps = compose([P], counts=[T]).epsilon(1e-6)
    elapsed = time.perf_counter() - start
    assert worst_pair_epsilon(P, T, 1e-6) <= eps <= goal
    assert elapsed < 2.0


def test_amplification_report_item_uses_its_certified_envelope():
    m1, m2 = grr_chain()
    report = amplify(m1, m2, delta=1e-6)
    prof = compose([report], counts=[10])
    exact = compose([m1 @ m2], counts=[10])
    assert exact.epsilon(1e-6) - 1e-6 <= prof.epsilon(1e-6) <= exact.epsilon(1e-6) * 1.01


def test_profiles_and_pairs_are_items():
    pair = DominatingPair([0.75, 0.25], [0.25, 0.75])
    a, b = compose([pair], counts=[3]), compose([PrivacyProfile.randomized_response(2, math.log(3))], counts=[3])
    grid = np.linspace(0.0, 3.0, 13)
    assert np.allclose(a.delta(grid), b.delta(grid), rtol=0, atol=1e-9)
    assert "3 x" in a.name


# ----------------------------------------------------------------------------- dp-accounting round trip
def test_pair_to_pld_direction_on_an_asymmetric_pair():
    p, q = np.array([0.6, 0.4, 0.0]), np.array([0.2, 0.3, 0.5])
    pld = pair_to_pld(p, q)
    for e in (0.0, 0.3, 1.0):
        forward = np.maximum(p - math.exp(e) * q, 0).sum()
        backward = np.maximum(q - math.exp(e) * p, 0).sum()
        assert max(forward, backward) <= pld.get_delta_for_epsilon(e) <= max(forward, backward) + 1e-6
    # q puts 0.5 where p puts nothing: only the q || p direction has that infinite loss
    assert pld.get_delta_for_epsilon(math.inf) == pytest.approx(0.5)
    # dp-accounting's own route with mu_upper = p, mu_lower = q (one direction, losses rounded up) is p || q
    from dp_accounting.pld import privacy_loss_distribution as pldm

    with np.errstate(divide="ignore"):
        lp, lq = dict(enumerate(np.log(p))), dict(enumerate(np.log(q)))
    theirs = pldm.from_two_probability_mass_functions(lq, lp, pessimistic_estimate=True)
    assert theirs.get_delta_for_epsilon(math.inf) == 0.0
    assert theirs.get_delta_for_epsilon(0.3) == pytest.approx(np.maximum(p - math.exp(0.3) * q, 0).sum(), abs=1e-4)


@pytest.mark.parametrize("profile", [
    PrivacyProfile.randomized_response(4, 1.0), privacy_profile(krr_matrix(3, 1.0) @ krr_matrix(3, 0.5)),
    PrivacyProfile.from_points([(1.0, 1e-4)]),
], ids=["krr4", "chain3", "point"])
def test_round_trip_through_dp_accounting(profile):
    pld = profile.to_dp_accounting()
    back = PrivacyProfile.from_dp_accounting(pld)
    assert isinstance(back, PLDProfile) and back.to_dp_accounting() is pld
    grid = np.linspace(0.0, 2.0, 41)
    assert np.all(back.delta(grid) >= profile.delta(grid))
    assert np.all(back.delta(grid) <= profile.delta(grid) + 1e-5)
    assert np.all(back.delta(grid) >= pld.get_delta_for_epsilon(grid))


def test_composed_profile_goes_on_in_dp_accounting():
    prof = compose([DP(1.0)], counts=[2])
    pld = prof.to_dp_accounting()
    assert pld is prof.pld
    further = pld.compose(PrivacyProfile.pure(1.0).to_dp_accounting())
    assert profile_from_pld(further).delta(3.0 + 4e-3) <= 1e-15  # dp-accounting's truncated tail mass
    coarse = prof.to_dp_accounting(value_discretization_interval=1e-2)
    # dp-accounting evaluates in plain floating point: equal up to rounding, not rounded up
    assert coarse is not pld and coarse.get_delta_for_epsilon(1.0) >= prof.delta(1.0) - 1e-12


def test_from_dp_accounting_refuses_optimistic_and_foreign_objects():
    from dp_accounting.pld import privacy_loss_distribution as pldm

    optimistic = pldm.from_laplace_mechanism(1.0, pessimistic_estimate=False)
    with pytest.raises(InvalidParameterError, match="pessimistic"):
        PrivacyProfile.from_dp_accounting(optimistic)
    with pytest.raises(TypeError, match="PrivacyLossDistribution"):
        PrivacyProfile.from_dp_accounting(object())


# ----------------------------------------------------------------------------- OpenDP
def test_opendp_curve_is_the_profile():
    prof = PrivacyProfile.laplace(1.0)
    curve = opendp_curve(prof)
    assert curve(0.5) == prof.delta(0.5)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        curve(-1.0)
    with pytest.raises(TypeError, match="PrivacyProfile"):
        opendp_curve("laplace")


def test_to_opendp():
    pytest.importorskip("opendp")
    prof = compose([DP(1.0)], counts=[2])
    measure = prof.to_opendp()
    assert measure.delta(epsilon=1.0) == pytest.approx(prof.delta(1.0), rel=1e-12)
    assert measure.epsilon(delta=1e-3) <= prof.epsilon(1e-3) + 1e-6


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("kwargs, exc, match", [
    ({"items": [DP(1.0)], "counts": [1, 2]}, InvalidParameterError, "one entry per item"),
    ({"items": [DP(1.0)], "counts": [-1]}, InvalidParameterError, r"counts\[0\] must be >= 0"),
    ({"items": [DP(1.0)], "counts": [1.5]}, TypeError, r"counts\[0\] must be an integer"),
    ({"items": [DP(1.0)], "counts": [0]}, InvalidParameterError, "positive count"),
    ({"items": [DP(1.0)], "counts": 3}, TypeError, "counts must be a list"),
    ({"items": []}, InvalidParameterError, "must not be empty"),
    ({"items": "DP"}, TypeError, "items must be a list"),
    ({"items": [DP(1.0), "laplace"]}, TypeError, r"items\[1\] must be a PrivacyProfile"),
    ({"items": [{"eps": 1.0}]}, TypeError, r"items\[0\] must be"),
    ({"items": [1.0]}, TypeError, r"items\[0\] must be"),
    ({"items": [DP(1.0)], "value_discretization_interval": 0.0}, InvalidParameterError,
     "value_discretization_interval"),
], ids=["counts-length", "counts-negative", "counts-float", "counts-zero", "counts-scalar", "empty", "string",
        "unknown-str", "unknown-dict", "unknown-float", "grid-zero"])
def test_compose_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        compose(**kwargs)


@pytest.mark.parametrize("p, q, kwargs, exc, match", [
    ([0.5, 0.5], [1.0], {}, InvalidDistributionError, "same length"),
    ([0.5, 0.6], [0.5, 0.5], {}, InvalidDistributionError, "p must be a probability vector"),
    ([0.5, 0.5], [0.5, 0.5], {"value_discretization_interval": 2.0}, InvalidParameterError, "at most 1"),
], ids=["length", "not-distribution", "grid-too-coarse"])
def test_pair_to_pld_validation(p, q, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pair_to_pld(p, q, **kwargs)


def test_profile_to_pld_needs_a_profile():
    with pytest.raises(TypeError, match="PrivacyProfile"):
        profile_to_pld(DP(1.0))


# ------------------------------------------------------------------ regressions from the adversarial review
@pytest.mark.parametrize("items, counts", [
    ([np.array([[1.0, 0.0], [0.0, 1.0]])], [2]),
    ([DP(1.0, 0.0), MarkovOperator([[1.0, 0.0], [0.0, 1.0]])], None),
], ids=["disjoint-twice", "with-a-dp-point"])
def test_disjoint_supports_compose_to_delta_one(items, counts):
    """A mechanism whose rows have disjoint supports has delta = 1 at every eps; so has any composition
    with it (dp-accounting crashed on the empty finite part)."""
    prof = compose(items, counts)
    assert all(prof.delta(e) == 1.0 for e in (0.0, 1.0, 50.0))


def test_reports_whose_envelope_keeps_mass_at_infinite_loss_compose():
    """A finite pipeline with a zero another row lacks keeps delta > 0 at every eps: its report envelope's
    grid pair keeps that level as mass at infinite loss instead of refusing."""
    M, K = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.5, 0.5]])
    prof = compose([amplify(MarkovOperator(M), MarkovOperator(K), delta=0.8)], counts=[2])
    P = M @ K
    p2, q2 = np.outer(P[0], P[0]).ravel(), np.outer(P[1], P[1]).ravel()
    for e in (0.0, 0.5, 2.0):
        exact = max(np.maximum(p2 - np.exp(e) * q2, 0).sum(), np.maximum(q2 - np.exp(e) * p2, 0).sum())
        assert prof.delta(e) >= exact - 1e-12


def test_a_list_of_dp_is_read_as_points_as_amplify_reads_it():
    pts = [DP(0.5, 0.5), DP(0.9, 0.1)]
    assert compose([pts]).delta(0.0) == compose([PrivacyProfile.from_points(pts)]).delta(0.0)


def test_the_fft_rounding_bound_is_carried_into_the_profile():
    """The FFT's rounding cannot be seen against brute force at these sizes (about 1e-11), so check the
    margin itself: a composition carries a positive 2-norm bound, a single uncomposed pair none, and every
    delta includes at least that bound where the composed mass above eps is positive."""
    one, many = compose([DP(1.0, 1e-6)]), compose([DP(1.0, 1e-6)], counts=[50])
    assert one.slack == 0.0 and many.slack > 0.0
    raw = PLDProfile(many.pld, name="same masses, no slack", source="test")
    for e in (0.0, 5.0, 20.0):
        assert many.delta(e) >= raw.delta(e) + many.slack


def test_compose_takes_a_list_of_dp_points_as_amplify_does():
    """Issue 18.5: a list of DP is one item meeting each point (PrivacyProfile.from_points), as in amplify."""
    pts = [DP(1.0, 0.0), DP(0.5, 1e-3)]
    got = compose([pts], progress=False)
    ref = compose([PrivacyProfile.from_points(pts)], progress=False)
    for eps in (0.0, 0.3, 0.7, 1.0):
        assert got.delta(eps) == ref.delta(eps)
    assert got.delta(0.0) <= PrivacyProfile.from_points(pts).delta(0.0) + 1e-6


def test_compose_refuses_rows_of_two_numbers_that_read_two_ways():
    """Issue 18.6: [[0.9, 0.1], [0.1, 0.9]] gave 0.480 as points where the binary mechanism's delta(0) is 0.8."""
    with pytest.raises(TypeError, match=r"items\[0\] is a nested list of pairs of numbers, \[\[0.9, 0.1\], "
                                        r"\[0.1, 0.9\]\], which reads two ways: write \(epsilon, delta\) points as "
                                        r"\[DP\(0.9, 0.1\), DP\(0.1, 0.9\)\] .* MarkovOperator\(\[\[0.9, 0.1\]"):
        compose([[[0.9, 0.1], [0.1, 0.9]]])
    matrix = compose([np.array([[0.9, 0.1], [0.1, 0.9]])], progress=False)
    assert 0.8 <= matrix.delta(0.0) <= 0.8 + 1e-6  # the explicit matrix spelling: TV distance of the rows
    points = compose([[DP(0.9, 0.1), DP(0.1, 0.9)]], progress=False)
    assert points.delta(0.0) < 0.5  # the explicit points spelling is another mechanism altogether


def _directions_delta(p, q, eps):
    return np.array([max(np.maximum(p - math.exp(e) * q, 0).sum(), np.maximum(q - math.exp(e) * p, 0).sum())
                     for e in eps])


def test_pair_to_pld_merges_a_pair_symmetric_up_to_rounding():
    """The dominating pair of a symmetric pipeline's report is a mirror image up to rounding: its near-zero
    losses put tiny grid masses (1e-11) that differ relatively by far more than 1e-9 but by less than 1e-9 in
    total. It becomes one symmetric PLD (half the composition work), which dominates both directions, alone and
    composed ten times (the brute-force product of the pair)."""
    from chainamp.accounting import pld as pld_mod
    from chainamp.mechanisms import randomized_response

    rep = amplify(randomized_response(4, 1.0), randomized_response(4, 0.5))
    pair = [s for s in rep.sources if s.name == "exact"][0].dominating_pair()
    p, q = np.asarray(pair.p), np.asarray(pair.q)
    rem, inf_r, _, _ = pld_mod._grid_split(p, q, 1e-3)
    add, inf_a, _, _ = pld_mod._grid_split(q, p, 1e-3)
    assert rem.keys() == add.keys() and not all(math.isclose(rem[k], add[k], rel_tol=1e-9) for k in rem)
    assert sum(abs(rem[k] - add[k]) for k in rem) <= pld_mod._SAME_MASS_L1
    pld = pair_to_pld(p, q, value_discretization_interval=1e-3)
    assert pld._symmetric
    eps = np.linspace(0.0, 1.0, 21)
    assert np.all(np.array([pld.get_delta_for_epsilon(float(e)) for e in eps]) >= _directions_delta(p, q, eps))
    prof = compose([DominatingPair(p, q)], counts=[4])
    assert np.all(prof.delta(eps) >= brute_delta([np.vstack([p, q])] * 4, eps) - BRUTE_ATOL)


def test_pair_to_pld_keeps_both_directions_beyond_the_tolerance():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3 + 2e-9, 0.5 - 2e-9])  # 4e-9 off its mirror image
    assert not pair_to_pld(p, q)._symmetric
    assert pair_to_pld(p, np.array([0.2, 0.3, 0.5]))._symmetric


@pytest.mark.parametrize("times", [2, 10, 300], ids=["T2", "T10", "T300"])
def test_untruncated_size_bounds_the_truncated_one(times):
    """compose checks the memory of a self-composition against its untruncated size first (no Chernoff
    bounds): that size is never below dp-accounting's truncated one, so the cheap check only passes when the
    exact one would."""
    from chainamp.accounting.pld import self_compose_bytes

    rng = np.random.default_rng(times)
    for _ in range(5):
        p, q = rng.dirichlet(np.full(6, 0.5)), rng.dirichlet(np.full(6, 0.5))
        pld = pair_to_pld(p, q)
        exact, pts = self_compose_bytes(pld, times, 1e-15)
        cheap, top = self_compose_bytes(pld, times, 1e-15, truncated=False)
        assert cheap >= exact and top >= pts
