"""Dominating pairs (issue 12, item 1): exact for finite mechanisms and point lists, pessimistic on a grid
otherwise, at every real eps (negative included); products of pairs against brute-force compositions;
point lists against an LP over every pair of distributions meeting all the points."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from chainamp import amplify
from chainamp.errors import InvalidDistributionError, InvalidMechanismError, InvalidParameterError
from chainamp.operators import MarkovOperator
from chainamp.privacy import DP, DominatingPair, PrivacyProfile, hockey_stick, privacy_profile

EPS = np.array([-6.0, -2.0, -1.0, -0.5, -0.1, 0.0, 0.05, 0.3, 0.7, 1.0, 1.6, 2.5, 4.0, 8.0])


def _h(p, q, eps: float) -> float:
    """Brute-force ``sum_y [p_y - e^eps q_y]_+`` (plain floats, any real eps)."""
    a = math.exp(eps)
    return math.fsum(max(float(x) - a * float(y), 0.0) for x, y in zip(p, q))


def _profile_brute(rows, pairs, eps: float) -> float:
    return max(_h(rows[i], rows[j], eps) for i, j in pairs)


def _random_mechanism(rng, n, m, zeros=0.25):
    M = rng.random((n, m)) ** 3
    M[rng.random((n, m)) < zeros] = 0.0
    M[:, 0] += 1e-3
    return M / M.sum(axis=1, keepdims=True)


# ----------------------------------------------------------------------------- finite mechanisms: exact
@pytest.mark.parametrize("seed", range(8), ids=[f"seed{s}" for s in range(8)])
def test_finite_mechanism_pair_equals_profile_at_every_eps(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(2, 7))
    M = _random_mechanism(rng, n, m)
    prof = privacy_profile(M)
    pair = prof.dominating_pair()
    assert pair.exact and pair is prof.dominating_pair()  # memoised
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    for e in EPS:
        ref = _profile_brute(M, pairs, float(e))
        got = pair.delta(float(e))
        assert ref <= got <= ref + 1e-12 + 1e-12 * ref, e
    grid = np.linspace(0.0, 5.0, 101)
    np.testing.assert_allclose(pair.delta(grid), prof.delta(grid), rtol=1e-12, atol=1e-15)
    assert pair.infinity_mass == pytest.approx(float(prof.delta(math.inf)), rel=1e-13, abs=1e-16)


def test_finite_mechanism_with_neighbour_graph_and_pure_level():
    M = np.array([[0.6, 0.3, 0.1], [0.3, 0.4, 0.3], [0.1, 0.3, 0.6]])
    prof = privacy_profile(M, neighbors=[(0, 1), (1, 2)])
    pair = prof.dominating_pair()
    for e in EPS:
        assert pair.delta(float(e)) >= _profile_brute(M, [(0, 1), (1, 0), (1, 2), (2, 1)], float(e))
    # the largest ratio over neighbours is 0.3 / 0.1 (0 and 2, ratio 6, are not neighbours)
    assert pair.pure_epsilon == pytest.approx(math.log(3.0), rel=1e-12) and pair.pure_epsilon >= math.log(3.0)
    assert pair.delta(math.log(3.0) + 1e-9) == 0.0 and pair.infinity_mass == 0.0 and pair.delta(math.log(2.5)) > 0


@pytest.mark.parametrize("k, eps", [(2, 1.0), (4, 0.5), (7, 3.0)], ids=["2-1", "4-0.5", "7-3"])
def test_randomized_response_pair_is_exact_and_small(k, eps):
    prof = PrivacyProfile.randomized_response(k, eps)
    pair = prof.dominating_pair()
    M = np.full((k, k), 1.0) + np.diag(np.full(k, math.exp(eps) - 1.0))
    M /= M.sum(axis=1, keepdims=True)
    assert pair.exact and pair.size == (2 if k == 2 else 3)
    for e in EPS:
        ref = _profile_brute(M, [(0, 1)], float(e))
        assert ref - 1e-15 <= pair.delta(float(e)) <= ref + 1e-13, e


# ----------------------------------------------------------------------------- products of pairs
@pytest.mark.parametrize("factors", [2, 3], ids=["two", "three"])
def test_products_dominate_brute_force_compositions(factors):
    rng = np.random.default_rng(40 + factors)
    mechs = [_random_mechanism(rng, 3, int(rng.integers(2, 4)), zeros=0.0) for _ in range(factors)]
    pairs = [privacy_profile(M).dominating_pair() for M in mechs]
    prod = pairs[0].compose(*pairs[1:])
    assert prod.size == math.prod(p.size for p in pairs) and prod.exact
    rows = []
    for x in range(3):  # the composition answers every query on the same input x
        row = np.array([1.0])
        for M in mechs:
            row = np.kron(row, M[x])
        rows.append(row)
    ordered = [(i, j) for i in range(3) for j in range(3) if i != j]
    for e in EPS:
        assert prod.delta(float(e)) >= _profile_brute(rows, ordered, float(e)) - 1e-15, e
    # symmetric mechanisms: the product of exact pairs is attained by a real composition
    rr = PrivacyProfile.randomized_response(2, 1.0).dominating_pair()
    R = np.array([[math.e, 1.0], [1.0, math.e]]) / (1.0 + math.e)
    both = [np.kron(R[0], R[0]), np.kron(R[1], R[1])]
    for e in EPS:
        assert rr.compose(rr).delta(float(e)) == pytest.approx(_h(both[0], both[1], float(e)), abs=1e-13)


# ----------------------------------------------------------------------------- point lists
def _lp_worst(points, n, eps: float) -> float:
    """Brute force: max over pairs (P, Q) on n outcomes meeting every point in both orders of H_{e^eps}(P || Q).

    Outcomes are exchangeable, so the optimal set can be taken as the first t outcomes (an LP per t)."""
    A, b = [], []
    for r in range(1, n):
        for S in itertools.combinations(range(n), r):
            ind = np.zeros(n)
            ind[list(S)] = 1.0
            for e, d in points:
                A.append(np.concatenate([ind, -math.exp(e) * ind]))
                b.append(d)
                A.append(np.concatenate([-math.exp(e) * ind, ind]))
                b.append(d)
    eq = [np.concatenate([np.ones(n), np.zeros(n)]), np.concatenate([np.zeros(n), np.ones(n)])]
    best = 0.0
    for t in range(1, n + 1):
        ind = np.zeros(n)
        ind[:t] = 1.0
        res = linprog(-np.concatenate([ind, -math.exp(eps) * ind]), A_ub=np.array(A), b_ub=b, A_eq=np.array(eq),
                      b_eq=[1.0, 1.0], bounds=(0, None), method="highs")
        assert res.status == 0
        best = max(best, -res.fun)
    return best


POINT_LISTS = [[(0.5, 0.05), (1.0, 1e-3)], [(0.3, 0.1), (1.0, 0.01), (2.0, 0.0)], [(1.0, 0.0), (0.2, 0.2)]]


@pytest.mark.parametrize("points", POINT_LISTS, ids=["two", "three", "pure+loose"])
def test_point_list_profile_is_the_brute_force_worst_case(points):
    pair = DominatingPair.from_points(points)
    prof = PrivacyProfile.from_points(points)
    assert prof.exact and pair.exact
    # the pair meets every point in both orders (so it is one of the mechanisms the list allows) ...
    for e, d in points:
        assert max(hockey_stick(pair.p, pair.q, e), hockey_stick(pair.q, pair.p, e)) <= d + 1e-12
    single = lambda e: min(float(DP(a, d).profile.delta(e)) for a, d in points)  # noqa: E731
    for e in (-1.0, -0.2, 0.0, 0.1, 0.4, 0.75, 1.2, 2.5):
        worst = _lp_worst(points, pair.size, e)  # ... and no allowed pair on that many outcomes does worse
        assert pair.delta(e) == pytest.approx(worst, abs=1e-8), e
        if e >= 0:
            assert prof.delta(e) <= single(e) and prof.delta(e) == pytest.approx(worst, abs=1e-8)
    # more outcomes do not help the adversary either (the chain's own size plus two)
    assert _lp_worst(points, pair.size + 2, 0.4) == pytest.approx(pair.delta(0.4), abs=1e-8)


def test_point_list_profile_is_below_the_old_envelope():
    # Before issue 12, from_points returned min_i of the single-point profiles and this test asserted equality with
    # that envelope. It was loose: between eps = 0.5 and 1 the (0.5, 0.05) point alone allows 0.05, but a
    # profile is convex in e^eps, so meeting (1.0, 1e-3) too caps it at the chord (0.0285 at eps = 0.75).
    pts = [(0.5, 0.05), (1.0, 1e-3), (2.0, 0.0), (2.5, 0.01)]  # the last is dominated by (2.0, 0)
    prof = PrivacyProfile.from_points(pts)
    grid = np.linspace(0.0, 3.0, 61)
    env = np.min([DP(e, d).profile.delta(grid) for e, d in pts], axis=0)
    assert np.all(prof.delta(grid) <= env)
    for e, d in pts[:3]:
        assert prof.delta(e) == pytest.approx(d, abs=1e-15)
    assert prof.delta(0.75) == pytest.approx(_lp_worst(pts[:3], 6, 0.75), abs=1e-8) and prof.delta(0.75) < 0.6 * 0.05
    assert prof.dp_points == (DP(0.5, 0.05), DP(1.0, 1e-3), DP(2.0, 0.0))
    assert prof.pure_epsilon == 2.0 and prof.exact


def _old_envelope(points):
    return PrivacyProfile.from_callable(lambda e: min(float(DP(a, d).profile.delta(e)) for a, d in points),
                                        name="min of single points", pure_epsilon=min(a for a, d in points if d == 0))


def test_amplify_point_list_tight_bound_is_the_worst_case():
    # found by a random search: the tight bound along the old envelope was 1.22x the worst case over every M
    # meeting the three points; along the intersection's exact profile it equals that worst case (an LP over
    # all pairs of distributions on K's 4 inputs, for each set of K's outputs)
    pts = [(0.48, 0.021961500188416323), (1.27, 0.018403540405397937), (1.4, 0.0)]
    K = np.array([[0.8033152294915265, 0.19668477050847355], [0.25373143717545066, 0.7462685628245493],
                  [0.9904780610576417, 0.009521938942358336], [0.41560067772855647, 0.5843993222714435]])
    K /= K.sum(axis=1, keepdims=True)
    target = 4.982763504667687e-06
    new = amplify([DP(*p) for p in pts], MarkovOperator(K), delta=target).source_epsilon("tight")
    old = amplify(_old_envelope(pts), MarkovOperator(K), delta=target).source_epsilon("tight")
    assert old / new > 1.2

    def worst(eps):  # max over (P, Q) on K's inputs meeting every point of H_{e^eps}(PK || QK)
        best = 0.0
        for T in ([0], [1]):
            kt = K[:, T].sum(axis=1)
            A, b = [], []
            for r in range(1, 4):
                for S in itertools.combinations(range(4), r):
                    ind = np.zeros(4)
                    ind[list(S)] = 1.0
                    for e, d in pts:
                        A += [np.concatenate([ind, -math.exp(e) * ind]), np.concatenate([-math.exp(e) * ind, ind])]
                        b += [d, d]
            eq = [np.r_[np.ones(4), np.zeros(4)], np.r_[np.zeros(4), np.ones(4)]]
            res = linprog(-np.concatenate([kt, -math.exp(eps) * kt]), A_ub=np.array(A), b_ub=b, A_eq=np.array(eq),
                          b_eq=[1.0, 1.0], bounds=(0, None), method="highs")
            assert res.status == 0
            best = max(best, -res.fun)
        return best

    assert worst(new) <= target * (1 + 1e-6)  # never below the worst case (sound) ...
    assert worst(new * (1 - 1e-5)) > target  # ... and equal to it up to the search bracket


# ----------------------------------------------------------------------------- grid pairs
@pytest.mark.parametrize("prof", [PrivacyProfile.laplace(1.0), PrivacyProfile.gaussian(0.8),
                                  PrivacyProfile.from_callable(lambda e: max(0.0, 0.5 - e / 4), name="toy",
                                                               pure_epsilon=2.0)],
                         ids=["laplace", "gaussian", "callable"])
def test_connect_the_dots_pair_dominates_between_grid_points(prof):
    pair = prof.dominating_pair(num=64)
    assert not pair.exact
    dense = np.linspace(0.0, 12.0, 2001)
    assert np.all(pair.delta(dense) >= prof.delta(dense))
    for e in dense[::50]:
        a = math.exp(-e)  # eps < 0: the profile of a symmetric relation is 1 - a + a delta(-eps)
        assert pair.delta(-e) >= 1 - a + a * float(prof.delta(e)) - 1e-15
    finer = prof.dominating_pair(num=127)  # the grid of 64 points plus every midpoint
    assert np.all(finer.delta(dense) <= pair.delta(dense) * (1 + 1e-12) + 1e-300)  # more points: never looser
    custom = prof.dominating_pair(epsilons=[0.0, 0.5, 1.0, 2.0])
    assert np.all(custom.delta(dense[dense <= 2.0]) >= prof.delta(dense[dense <= 2.0]))


def test_gaussian_grid_pair_keeps_the_floor_as_infinite_loss():
    pair = PrivacyProfile.gaussian(1.0).dominating_pair(delta_floor=1e-12)
    assert 0.0 < pair.infinity_mass <= 1.01e-12 and math.isinf(pair.pure_epsilon)


# ----------------------------------------------------------------------------- the class itself
def test_epsilon_inverts_delta():
    pair = privacy_profile(_random_mechanism(np.random.default_rng(3), 4, 5, zeros=0.0)).dominating_pair()
    for d in (0.5, 0.1, 1e-3, pair.delta(1.0)):
        e = pair.epsilon(d)
        assert pair.delta(e) <= d and (e == 0.0 or pair.delta(e - 1e-6) > d)
    assert pair.epsilon(1.0) == 0.0
    assert math.isinf(DominatingPair([0.5, 0.5], [1.0, 0.0]).epsilon(0.1))  # infinite-loss mass 0.5


def test_exact_rationals_and_extremes():
    pair = DominatingPair([0.5, 0.5, 0.0], [0.25, 0.25, 0.5])
    # exactly 0 at the largest ratio: only the padding for an outcome on the cut (log-ratio error) remains
    assert 0.0 <= pair.delta(math.log(2)) <= 1e-13 and pair.delta(math.log(2) * (1 + 1e-9)) == 0.0
    assert pair.delta(-math.inf) == 1.0 and pair.delta(-2000.0) == 1.0 and pair.delta(2000.0) == 0.0
    assert pair.delta(math.inf) == 0.0 and pair.pure_epsilon == pytest.approx(math.log(2.0))
    big = DP(700.0, 1e-9).profile.dominating_pair()
    assert big.infinity_mass == pytest.approx(1e-9, rel=1e-12) and big.delta(0.0) == pytest.approx(1.0, abs=1e-12)
    assert np.shape(pair.delta([[0.0, 1.0]])) == (1, 2)


def test_display_and_to_dict():
    pair = PrivacyProfile.randomized_response(3, 1.0).dominating_pair()
    text = str(pair)
    assert text.startswith("A dominating pair of 3 outcomes for 3-ary randomized response")
    assert "<pre>" in pair._repr_html_() and "DominatingPair(" in repr(pair)
    d = json.loads(json.dumps(pair.to_dict()))
    assert d["exact"] and d["size"] == 3 and d["p"] == pair.p.tolist()
    with pytest.raises(ValueError, match="read-only"):
        pair.p[0] = 0.0
    with pytest.raises(AttributeError):
        pair.name = "x"


@pytest.mark.parametrize("make, exc, match", [
    (lambda: DominatingPair([0.5, 0.6], [0.5, 0.5]), InvalidDistributionError, "sum to 1"),
    (lambda: DominatingPair([1.0], [0.5, 0.5]), InvalidDistributionError, "entries"),
    (lambda: DominatingPair([1.5, -0.5], [0.5, 0.5]), InvalidDistributionError, "negative"),
    (lambda: DominatingPair([1.0], [1.0], name=3), TypeError, "name"),
    (lambda: DominatingPair([1.0], [1.0]).delta(float("nan")), InvalidParameterError, "NaN"),
    (lambda: DominatingPair([1.0], [1.0]).delta("x"), TypeError, "real number"),
    (lambda: DominatingPair([1.0], [1.0]).epsilon(2.0), InvalidParameterError, "delta"),
    (lambda: DominatingPair([1.0], [1.0]).compose("x"), TypeError, "DominatingPair"),
    (lambda: DominatingPair.from_points([]), InvalidMechanismError, "at least one"),
    (lambda: DominatingPair.from_points(DP(1.0)), TypeError, "iterable"),
    (lambda: DominatingPair.from_points([(1.0,)]), InvalidMechanismError, "pair"),
    (lambda: DominatingPair.from_points([("a", 0.1)]), TypeError, "real numbers"),
    (lambda: DominatingPair.from_points([(-1.0, 0.1)]), InvalidParameterError, "epsilon"),
    (lambda: DominatingPair.from_points([(math.inf, 0.1)]), InvalidParameterError, "epsilon"),
    (lambda: DominatingPair.from_points([(1.0, 1.5)]), InvalidParameterError, "delta"),
    (lambda: DominatingPair.from_roc([0.1, 0.2], [0.3]), InvalidParameterError, "same length"),
    (lambda: DominatingPair.from_roc([1.5], [0.3]), InvalidParameterError, "ROC point 0"),
    (lambda: PrivacyProfile.laplace(1.0).dominating_pair(num=1), InvalidParameterError, "num"),
    (lambda: PrivacyProfile.laplace(1.0).dominating_pair(delta_floor=0.0), InvalidParameterError, "delta_floor"),
    (lambda: PrivacyProfile.laplace(1.0).dominating_pair(epsilons=[-1.0]), InvalidParameterError, "epsilons"),
], ids=["sum", "size", "negative", "name", "nan", "type", "epsilon-delta", "compose", "empty", "dp-not-list",
        "short", "text", "neg-eps", "inf-eps", "big-delta", "roc-len", "roc-range", "num", "floor", "grid"])
def test_validation(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize("rows", [
    [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]],
    [[0.5, 0.3, 0.2, 0.0], [0.0, 0.2, 0.3, 0.5]],
], ids=["flat-half", "decreasing-to-half"])
def test_a_profile_that_levels_off_keeps_its_level_as_mass_at_infinite_loss(rows):
    """delta never falls to the floor (mass at infinite loss): the grid ends where the profile has levelled
    off and the pair keeps delta(eps_max) as mass at infinite loss, so it still dominates the mechanism (here
    a finite one whose profile is handed over as a plain curve, so the grid path is taken)."""
    exact = privacy_profile(rows)
    curve = PrivacyProfile.from_callable(lambda e: float(exact.delta(e)), name="levels off")
    pair = curve.dominating_pair()
    assert not pair.exact and pair.delta(math.inf) >= exact.delta(700.0)
    eps = np.linspace(0.0, 30.0, 301)
    assert np.all(pair.delta(eps) >= exact.delta(eps))
