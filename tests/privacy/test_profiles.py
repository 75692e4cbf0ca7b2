"""Tests of chainamp.profiles: closed-form privacy profiles against numerical integration and
brute force, the exact profile of finite mechanisms, and every validation branch."""

from __future__ import annotations

import math

import mpmath
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from chainamp.privacy import hockey_stick
from chainamp.errors import InvalidMechanismError, InvalidOperatorError, InvalidParameterError
from chainamp._numerics import BISECTION_ATOL, BISECTION_RTOL
from chainamp.operators import MarkovOperator
from chainamp.privacy import DP, ExactProfile, PrivacyProfile, neighbor_pairs, privacy_profile
from conftest import examples, krr_matrix, stochastic_matrices

EPS_GRID = [0.0, 0.05, 0.3, 0.7, 1.0, 1.5, 2.5, 4.0]


def _quad_hockey(logp, logq, eps, breaks):
    """``int [p(y) - e^eps q(y)]_+ dy`` over the real line by adaptive quadrature, split at ``breaks``."""
    c = math.exp(eps)

    def f(y):
        return max(math.exp(logp(y)) - c * math.exp(logq(y)), 0.0)

    pts = sorted(set(breaks))
    pieces = [(-math.inf, pts[0])] + list(zip(pts[:-1], pts[1:])) + [(pts[-1], math.inf)]
    return sum(integrate.quad(f, a, b, epsabs=1e-13, epsrel=1e-11, limit=200)[0] for a, b in pieces)


def _laplace_logpdf(loc: float, scale: float):
    """The Laplace log-density in plain floats (scipy.stats' logpdf, ~50 us a call, was most of the quadrature's cost)."""
    return lambda y: -abs(y - loc) / scale - math.log(2.0 * scale)


def _norm_logpdf(loc: float, sigma: float):
    """The Gaussian log-density in plain floats."""
    return lambda y: -0.5 * ((y - loc) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2.0 * math.pi)


def _assert_matches_quadrature(prof, lp, lq, knots):
    """``prof.delta(eps)`` against ``_quad_hockey`` of the log-densities at every eps of EPS_GRID
    (``knots(eps)``: the breakpoints of the integrand): within 1e-9, and an upper bound up to the
    quadrature error."""
    for eps in EPS_GRID:
        ref = _quad_hockey(lambda y: float(lp(y)), lambda y: float(lq(y)), eps, knots(eps))
        got = prof.delta(eps)
        assert got == pytest.approx(ref, abs=1e-9), eps
        assert got >= ref - 1e-12, eps


# ----------------------------------------------------------------------------- Laplace
@pytest.mark.parametrize("scale,sens", [(1.0, 1.0), (0.5, 1.0), (2.0, 3.0), (0.3, 0.1)],
                         ids=["b1-s1", "b0.5-s1", "b2-s3", "b0.3-s0.1"])
def test_laplace_matches_numerical_integration(scale, sens):
    # Brute force: D_{e^eps}(Lap(0, b) || Lap(sens, b)) by quadrature; tolerance 1e-9 absolute
    # (quad's requested accuracy is 1e-11 relative / 1e-13 absolute on each piece).
    prof = PrivacyProfile.laplace(scale, sens)
    # knots: 0, sens and where the log-likelihood ratio crosses eps
    _assert_matches_quadrature(prof, _laplace_logpdf(0.0, scale), _laplace_logpdf(sens, scale),
                               lambda eps: [0.0, sens, (sens - scale * eps) / 2.0])
    assert prof.pure_epsilon >= sens / scale
    assert prof.delta(prof.pure_epsilon) == 0.0 and prof.exact


def test_laplace_closed_form_and_inverse():
    # Balle et al. 2018, Theorem 3: delta(eps) = 1 - exp((eps - eps0)/2); inverse eps0 + 2 log(1 - delta).
    prof = PrivacyProfile.laplace(0.5)
    assert prof.delta(1.0) == pytest.approx(1.0 - math.exp(-0.5), rel=1e-14)
    assert prof.epsilon(0.1) == pytest.approx(2.0 + 2.0 * math.log(0.9), abs=1e-6)
    assert prof.epsilon(0.0) == prof.pure_epsilon


# ----------------------------------------------------------------------------- Gaussian
@pytest.mark.parametrize("sigma,sens", [(1.0, 1.0), (0.5, 1.0), (3.0, 2.0), (10.0, 1.0)],
                         ids=["s1-D1", "s0.5-D1", "s3-D2", "s10-D1"])
def test_gaussian_matches_numerical_integration(sigma, sens):
    # Same brute force as for Laplace; tolerance 1e-9 absolute.
    prof = PrivacyProfile.gaussian(sigma, sens)
    _assert_matches_quadrature(prof, _norm_logpdf(0.0, sigma), _norm_logpdf(sens, sigma),
                               lambda eps: [sens / 2.0 - eps * sigma**2 / sens, 0.0, sens])


@pytest.mark.parametrize("sigma", [0.05, 1.0, 20.0], ids=["s0.05", "s1", "s20"])
def test_gaussian_is_sound_against_high_precision(sigma):
    # Balle & Wang 2018, Theorem 8 evaluated with 80 digits: our value must never be below it.
    mpmath.mp.dps = 80
    prof = PrivacyProfile.gaussian(sigma)
    for eps in [0.0, 0.01, 0.5, 2.0, 10.0, 50.0, 300.0, 700.0]:
        s, e = mpmath.mpf(sigma), mpmath.mpf(eps)
        ref = mpmath.ncdf(1 / (2 * s) - e * s) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * s) - e * s)
        got = prof.delta(eps)
        assert got >= ref, eps
        if ref > mpmath.mpf("1e-300"):
            assert got <= ref * (1 + mpmath.mpf("1e-6")), eps  # and not loose


def test_gaussian_large_epsilon_finite_and_positive():
    prof = PrivacyProfile.gaussian(1.0)
    vals = prof.delta(np.array([100.0, 700.0, 1e5, 1e200]))
    assert np.all(np.isfinite(vals)) and np.all(vals > 0.0)
    assert prof.delta(math.inf) == 0.0 and prof.pure_epsilon == math.inf
    assert prof.delta(0.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1, rel=1e-12)


# ----------------------------------------------------------------------------- randomized response
@pytest.mark.parametrize("k,eps", [(2, 0.5), (3, 1.0), (5, 2.0), (10, 0.1)], ids=["k2", "k3", "k5", "k10"])
def test_randomized_response_closed_form_matches_matrix(k, eps):
    closed = PrivacyProfile.randomized_response(k, eps)
    exact = privacy_profile(krr_matrix(k, eps))
    grid = np.linspace(0.0, eps * 1.5, 31)
    # both are upper bounds of the same exact value; they agree to rounding (1e-12)
    np.testing.assert_allclose(closed.delta(grid), exact.delta(grid), rtol=0, atol=1e-12)
    assert closed.pure_epsilon == eps
    assert exact.pure_epsilon == pytest.approx(eps, abs=1e-12) and exact.pure_epsilon >= eps


def test_randomized_response_notes_example_value():
    # 5-ary RR at eps = 2 (only the two differing outputs count): delta(1) = (e^2 - e)/(e^2 + 4).
    val = PrivacyProfile.randomized_response(5, 2.0).delta(1.0)
    assert val == pytest.approx((math.exp(2) - math.e) / (math.exp(2) + 4), rel=1e-14)


# ----------------------------------------------------------------------------- canonical pair
def _canonical_pair(eps, delta):
    a = (1 - delta) * math.exp(eps) / (1 + math.exp(eps))
    b = (1 - delta) / (1 + math.exp(eps))
    return [delta, a, b, 0.0], [0.0, b, a, delta]


@pytest.mark.parametrize("eps,delta", [(0.0, 0.0), (1.0, 0.0), (1.0, 1e-3), (3.0, 0.2), (0.2, 1.0)],
                         ids=["0-0", "1-0", "1-1e-3", "3-0.2", "0.2-1"])
def test_canonical_profile_matches_four_point_pair(eps, delta):
    P, Q = _canonical_pair(eps, delta)
    prof = DP(eps, delta).profile
    for e2 in [0.0, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, math.inf]:
        ref = max(hockey_stick(P, Q, e2), hockey_stick(Q, P, e2))
        assert prof.delta(e2) == pytest.approx(ref, abs=1e-14), e2
    assert prof.exact and prof.dp_points == (DP(eps, delta),)


def test_canonical_profile_in_log_space():
    prof = DP(700.0, 1e-9).profile
    assert prof.delta(0.0) == pytest.approx(1.0, abs=1e-12)
    assert prof.delta(699.0) == pytest.approx(1e-9 + (1 - 1e-9) * (1 - math.exp(-1.0)), rel=1e-12)
    assert prof.delta(800.0) == 1e-9 and prof.delta(math.inf) == 1e-9


def test_from_points_lower_envelope():
    # issue 12: the profile of a point list is the intersection's exact profile, at most the envelope of the
    # single-point profiles (it was that envelope before; tests/privacy/test_dominating.py shows it was loose)
    pts = [(0.5, 0.05), (1.0, 1e-3), (2.0, 0.0), (2.5, 0.01)]  # the last is dominated by (2.0, 0)
    prof = PrivacyProfile.from_points(pts)
    grid = np.linspace(0.0, 3.0, 61)
    env = np.min([DP(e, d).profile.delta(grid) for e, d in pts], axis=0)
    assert np.all(prof.delta(grid) <= env)
    assert prof.dp_points == (DP(0.5, 0.05), DP(1.0, 1e-3), DP(2.0, 0.0))
    assert prof.pure_epsilon == 2.0 and prof.exact
    assert PrivacyProfile.from_points([DP(1.0), (1.0, 0.0)]).exact  # duplicates collapse


def test_pure_is_canonical_and_from_points_sound_for_rr():
    # k-RR at eps is (eps, 0)-DP: its exact profile lies below the pure-DP canonical profile.
    grid = np.linspace(0.0, 2.0, 41)
    assert np.all(PrivacyProfile.randomized_response(4, 1.5).delta(grid) <= PrivacyProfile.pure(1.5).delta(grid))
    np.testing.assert_array_equal(PrivacyProfile.pure(1.5).delta(grid), DP(1.5).profile.delta(grid))


# ----------------------------------------------------------------------------- exact profiles
def _random_chain(rng, n, m, zeros=0.2):
    P = rng.random((n, m)) ** 3
    P[rng.random((n, m)) < zeros] = 0.0
    P[:, 0] += 1e-3
    return P / P.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(6), ids=[f"seed{s}" for s in range(6)])
def test_privacy_profile_matches_double_loop(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(2, 7))
    P = _random_chain(rng, n, m)
    prof = privacy_profile(P)
    eps = [0.0, 0.2, 0.9, 1.7, 3.0, 6.0, math.inf]
    ref = [max(hockey_stick(P[i], P[j], e) for i in range(n) for j in range(n) if i != j) for e in eps]
    # both sides are rounded-up upper bounds of the same exact value: agree within 1e-12
    np.testing.assert_allclose(prof.delta(eps), ref, rtol=0, atol=1e-12)
    assert isinstance(prof, ExactProfile) and prof.exact


# 20 examples in the default run (40 before issue 20 §6; 200 under --hypothesis-profile=ci, 40
# before): the same branches of chainamp are reached (coverage.py, branch mode, seeds 1-3)
@settings(max_examples=examples(20), deadline=None)
@given(P=stochastic_matrices(max_n=4, max_m=5), eps=st.floats(0.0, 8.0))
def test_privacy_profile_matches_double_loop_property(P, eps):
    prof = privacy_profile(P)
    n = P.shape[0]
    ref = max(hockey_stick(P[i], P[j], eps) for i in range(n) for j in range(n) if i != j)
    assert prof.delta(eps) == pytest.approx(ref, abs=1e-12)  # two rounded-up bounds of one value
    u, v = prof.witness(eps)
    assert hockey_stick(P[u], P[v], eps) == pytest.approx(prof.delta(eps), abs=1e-12)


@pytest.mark.parametrize("seed", range(4), ids=[f"seed{s}" for s in range(4)])
def test_privacy_profile_never_below_exact_value(seed):
    # Soundness against 50-digit arithmetic, including eps exactly at a log-likelihood ratio.
    mpmath.mp.dps = 50
    rng = np.random.default_rng(100 + seed)
    P = _random_chain(rng, 4, 5)
    prof = privacy_profile(P)
    with np.errstate(divide="ignore", invalid="ignore"):
        ties = (np.log(P[0]) - np.log(P[1]))
    eps = [0.0, 0.4, 2.0] + [float(t) for t in ties if np.isfinite(t) and t >= 0]
    for e in eps:
        c = mpmath.exp(mpmath.mpf(e))
        ref = max(sum(max(mpmath.mpf(a) - c * mpmath.mpf(b), 0) for a, b in zip(P[i], P[j]))
                  for i in range(4) for j in range(4) if i != j)
        assert prof.delta(e) >= ref, e


def test_privacy_profile_neighbor_forms():
    labels = ["a", "b", "c", "d"]
    rng = np.random.default_rng(7)
    M = MarkovOperator(_random_chain(rng, 4, 6, zeros=0.0), inputs=labels)
    G = nx.path_graph(labels)
    by_graph = privacy_profile(M, G)
    by_list = privacy_profile(M, [("a", "b"), ("c", "b"), ("c", "d")])
    all_pairs = privacy_profile(M)
    grid = np.linspace(0.0, 3.0, 13)
    np.testing.assert_array_equal(by_graph.delta(grid), by_list.delta(grid))
    assert np.all(by_graph.delta(grid) <= all_pairs.delta(grid))
    ref = [max(hockey_stick(M.row(u), M.row(v), e) for u, v in G.edges for u, v in ((u, v), (v, u)))
           for e in grid]
    np.testing.assert_allclose(by_graph.delta(grid), ref, rtol=0, atol=1e-12)
    assert by_graph.pairs.shape == (6, 2) and all_pairs.pairs.shape == (12, 2)


def test_witness_attains_delta():
    P = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    prof = privacy_profile(MarkovOperator(P, inputs=["x", "y", "z"]))
    idx = {"x": 0, "y": 1, "z": 2}
    for e in [0.0, 0.5, 1.5, math.inf]:
        u, v = prof.witness(e)
        assert hockey_stick(P[idx[u]], P[idx[v]], e) == pytest.approx(prof.delta(e), abs=1e-12)


def test_identical_rows_and_disjoint_supports():
    same = privacy_profile([[0.5, 0.5], [0.5, 0.5]])
    assert same.pure_epsilon == 0.0 and same.delta(0.0) == 0.0
    disjoint = privacy_profile([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    assert disjoint.pure_epsilon == math.inf
    assert disjoint.delta(math.inf) == pytest.approx(0.5, abs=1e-15) and disjoint.delta(700.0) >= 0.5


def test_exact_profile_epsilon_inverse_and_large_eps():
    prof = privacy_profile(krr_matrix(3, 1.0))
    d = prof.delta(0.5)
    e = prof.epsilon(d)
    assert prof.delta(e) <= d and e == pytest.approx(0.5, abs=1e-6)
    assert prof.delta(700.0) == 0.0


# ----------------------------------------------------------------------------- properties
_PROFILES = [
    PrivacyProfile.laplace(0.7),
    PrivacyProfile.gaussian(1.3),
    PrivacyProfile.randomized_response(4, 1.2),
    PrivacyProfile.from_points([(0.5, 0.05), (1.5, 1e-6)]),
    DP(2.0, 1e-3).profile,
    PrivacyProfile.from_callable(lambda e: math.exp(-e) / 2, name="exp"),
]


@settings(max_examples=60, deadline=None)
@given(i=st.integers(0, len(_PROFILES) - 1), d=st.floats(1e-12, 1.0))
def test_epsilon_is_a_sound_inverse(i, d):
    prof = _PROFILES[i]
    e = prof.epsilon(d)
    if math.isfinite(e):
        assert prof.delta(e) <= d
        if e > 0:  # and tight: below the final bracket (width <= atol + rtol e) eps no longer suffices
            assert prof.delta(max(0.0, e - 2.0 * (BISECTION_ATOL + BISECTION_RTOL * e))) > d
    else:
        assert prof.delta(4096.0) > d


@pytest.mark.parametrize("prof", _PROFILES + [privacy_profile(krr_matrix(3, 0.8))],
                         ids=["laplace", "gaussian", "rr", "points", "dp", "callable", "exact"])
def test_profiles_are_non_increasing_and_in_range(prof):
    grid = np.concatenate([np.linspace(0.0, 5.0, 101), [50.0, 700.0, math.inf]])
    vals = prof.delta(grid)
    assert np.all(np.diff(vals) <= 0.0) and np.all((vals >= 0.0) & (vals <= 1.0))
    assert prof.delta(grid.reshape(8, 13)).shape == (8, 13)
    assert isinstance(prof.delta(1.0), float)


def test_from_callable_vectorized_and_pure():
    prof = PrivacyProfile.from_callable(lambda e: np.maximum(0.0, 0.5 - e / 4), name="lin",
                                        pure_epsilon=2.0, vectorized=True, exact=True)
    assert prof.delta([0.0, 1.0, 2.0, 9.0]).tolist() == [0.5, 0.25, 0.0, 0.0]
    assert prof.epsilon(0.25) == pytest.approx(1.0, abs=1e-6) and prof.exact
    assert prof.epsilon(0.0) == 2.0


def test_repr_and_immutability():
    prof = PrivacyProfile.laplace(1.0)
    assert "Laplace" in repr(prof) and "exact" in repr(prof)
    assert "ExactProfile" in repr(privacy_profile(krr_matrix(2, 1.0)))
    with pytest.raises(AttributeError, match="immutable"):
        prof.name = "x"
    with pytest.raises(AttributeError, match="immutable"):
        del prof.name
    with pytest.raises(AttributeError):
        DP(1.0).epsilon = 2.0


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("args,err,match", [
    ((-1.0,), InvalidParameterError, "epsilon must be >= 0"),
    ((math.inf,), InvalidParameterError, "epsilon must be finite"),
    ((math.nan,), InvalidParameterError, "epsilon must not be NaN"),
    ((1.0, 1.5), InvalidParameterError, "delta must be in"),
    ((1.0, math.nan), InvalidParameterError, "delta must not be NaN"),
    (("1",), TypeError, "epsilon must be a real number"),
], ids=["neg", "inf", "nan", "delta>1", "delta-nan", "type"])
def test_dp_validation(args, err, match):
    with pytest.raises(err, match=match):
        DP(*args)


@pytest.mark.parametrize("call,err,match", [
    (lambda: PrivacyProfile.from_points([]), InvalidMechanismError, "at least one"),
    (lambda: PrivacyProfile.from_points([(1.0,)]), InvalidMechanismError, "pair"),
    (lambda: PrivacyProfile.from_points(DP(1.0)), TypeError, "iterable"),
    (lambda: PrivacyProfile.from_points([(1.0, 2.0)]), InvalidParameterError, "delta"),
    (lambda: PrivacyProfile.from_callable(3, name="x"), TypeError, "callable"),
    (lambda: PrivacyProfile.from_callable(abs, name=""), TypeError, "name"),
    (lambda: PrivacyProfile.from_callable(lambda e: 0.1, name="x", pure_epsilon=1.0),
     InvalidMechanismError, "pure_epsilon"),
    (lambda: PrivacyProfile.from_callable(lambda e: 2.0, name="x").delta(0.0), InvalidMechanismError,
     r"not in \[0, 1\]"),
    (lambda: PrivacyProfile.from_callable(lambda e: 0.1, name="x", vectorized=True).delta([0.0, 1.0]),
     InvalidMechanismError, "shape"),
    (lambda: PrivacyProfile.laplace(0.0), InvalidParameterError, "scale must be > 0"),
    (lambda: PrivacyProfile.laplace(1.0, -1.0), InvalidParameterError, "sensitivity must be > 0"),
    (lambda: PrivacyProfile.gaussian(math.inf), InvalidParameterError, "sigma must be finite"),
    (lambda: PrivacyProfile.randomized_response(1, 1.0), InvalidParameterError, "k must be >= 2"),
    (lambda: PrivacyProfile.randomized_response(2.0, 1.0), TypeError, "k must be an integer"),
    (lambda: PrivacyProfile.randomized_response(3, math.inf), InvalidParameterError, "finite"),
    (lambda: PrivacyProfile.laplace(1.0).delta(-0.1), InvalidParameterError, "epsilon must be >= 0"),
    (lambda: PrivacyProfile.laplace(1.0).delta([0.1, math.nan]), InvalidParameterError, "NaN"),
    (lambda: PrivacyProfile.laplace(1.0).delta([0.1, -1.0]), InvalidParameterError, ">= 0"),
    (lambda: PrivacyProfile.laplace(1.0).delta(["a"]), TypeError, "array"),
    (lambda: PrivacyProfile.laplace(1.0).delta(None), TypeError, "real number"),
    (lambda: PrivacyProfile.laplace(1.0).epsilon(1.5), InvalidParameterError, "delta must be in"),
    (lambda: PrivacyProfile.laplace(1.0).epsilon(0.1, bisection_atol=0.0), InvalidParameterError,
     "bisection_atol must be > 0"),
    (lambda: PrivacyProfile.laplace(1.0).epsilon(0.1, bisection_rtol=-1.0), InvalidParameterError,
     "bisection_rtol must be >= 0"),
    (lambda: privacy_profile([[0.5, 0.6], [0.5, 0.5]]), InvalidOperatorError, "sum"),
    (lambda: privacy_profile([[1.0, 0.0]]), InvalidMechanismError, "empty"),
    (lambda: privacy_profile(krr_matrix(2, 1.0)).witness(-1.0), InvalidParameterError, "epsilon"),
], ids=["points-empty", "points-bad", "points-type", "points-delta", "callable-type", "callable-name",
        "callable-pure", "callable-range", "callable-shape", "laplace-scale", "laplace-sens",
        "gauss-sigma", "rr-k", "rr-k-type", "rr-eps", "delta-neg", "delta-nan", "delta-arr-neg",
        "delta-type", "delta-none", "epsilon-delta", "epsilon-atol", "epsilon-rtol", "matrix", "one-input", "witness"])
def test_profile_validation(call, err, match):
    with pytest.raises(err, match=match):
        call()


@pytest.mark.parametrize("neighbors,err,match", [
    ([("a", "z")], InvalidMechanismError, "unknown input label 'z'"),
    ([("a", "a")], InvalidMechanismError, "self-loop on label 'a'"),
    ([], InvalidMechanismError, "empty"),
    ([("a", "b", "c")], InvalidMechanismError, "pair of labels"),
    (nx.Graph([("a", "q")]), InvalidMechanismError, "node 'q'"),
    (nx.Graph([("a", "a")]), InvalidMechanismError, "self-loop on label 'a'"),
    (nx.empty_graph(["a", "b"]), InvalidMechanismError, "empty"),
    ("ab", TypeError, "neighbors must be"),
    (5, TypeError, "neighbors must be"),
], ids=["unknown", "self", "empty", "triple", "graph-unknown", "graph-self", "graph-empty", "str", "int"])
def test_neighbor_pairs_validation(neighbors, err, match):
    with pytest.raises(err, match=match):
        neighbor_pairs(["a", "b", "c"], neighbors)


def test_neighbor_pairs_forms():
    assert neighbor_pairs([0, 1, 2], None).tolist() == [[0, 1], [0, 2], [1, 0], [1, 2], [2, 0], [2, 1]]
    assert neighbor_pairs("xyz", nx.path_graph("xyz")).tolist() == [[0, 1], [1, 0], [1, 2], [2, 1]]
    assert neighbor_pairs([0, 1], [(1, 0), (0, 1)]).tolist() == [[0, 1], [1, 0]]
    with pytest.raises(InvalidMechanismError, match="empty"):
        neighbor_pairs([0], None)
