"""Adversarial soundness tests of amplify for black-box inputs: every certified (eps', delta') against brute force.

M is an (eps, delta)-DP point, a list of them or a privacy profile (Laplace, Gaussian, any curve). Ground truth is
computed in mpmath from the float entries of the matrices (no float rounding in the reference): for a black-box
(eps, delta)-DP input the worst case over ALL such mechanisms, i.e. the canonical 4-point pair of Kairouz, Oh,
Viswanath 2015 sent to every 4-tuple of K's inputs (deterministic post-processings are the extreme points, and the
divergence is convex in the post-processing); for Laplace / Gaussian profiles a binning of the two shifted densities
(exact CDFs), which is a post-processing of the real mechanism. A report is wrong when the truth exceeds ANY bound it
hands out. The references and the adversarial operators are shared with ``test_adversarial_finite_and_audit.py``
(``tests/conftest.py``).

Rows are used as written (a row may sum to 1 +- a few ulps); the reference then allows
``4 * max |row sum - 1|`` (exact), which is 0 for the dyadic matrices used where it matters.
Each bug found is pinned by a regression test named after what it broke (see the comments).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from chainamp import DP, MarkovOperator, PrivacyProfile, amplify, amplify_steps, mechanisms
from conftest import (_INF, _excess, _hs, _mpm, _normalise, adversarial_operators, assert_all_sound, examples,
                      exact_pipeline_delta, worst_black_box_delta)


@pytest.fixture(autouse=True)
def _mp_precision():
    """60 digits for every reference in this module (restored afterwards: mpmath's precision is global)."""
    with mp.workdps(60):
        yield


# ----------------------------------------------------------------------------- black-box inputs
# 20 examples in the default run (30 before the third round of issue 20 §6, 60 before the first; 300 under
# --hypothesis-profile=ci): the same branches of chainamp are reached (coverage.py, branch mode, the whole default run)
@settings(max_examples=examples(20, ci=300), deadline=None)
@given(A=adversarial_operators(), eps0=st.sampled_from([0.0, 1e-12, 0.3, 1.0, 3.0, 20.0]),
       delta0=st.sampled_from([0.0, 1e-300, 1e-12, 1e-3, 0.5, 1.0]),
       target=st.sampled_from([None, 0.0, 1e-12, 1e-3, 0.3]))
def test_black_box_dp_every_bound_above_worst_mechanism(A, eps0, delta0, target):
    rep = amplify(DP(eps0, delta0), MarkovOperator(A), delta=target)
    with mp.workdps(340):  # deltas down to 1e-300 must be resolved exactly
        assert_all_sound(rep, lambda e: worst_black_box_delta(eps0, delta0, A, e), 4 * _excess(A) + mp.mpf("1e-320"),
                         eps_queries=(0.0, eps0 / 2, eps0, 2.0, _INF),
                         delta_queries=(0.0, 1e-300, 1e-12, delta0, 0.1, 0.5))


# Regression (was a strict xfail until fixed): bounds.hockey_stick_order is not rounded down when eps and
# delta are both  tiny: log_expm1(eps) - log(delta) cancels (errors ~1e-13 absolute against  a 4 u |val|
# bump), the order comes out 1.1e-13 too HIGH, gamma too small,  and Theorem 1(2) at the input point
# undercuts the worst mechanism
def test_hockey_stick_order_with_tiny_epsilon_and_delta():
    from chainamp.amplification import hockey_stick_order

    eps, d = 6.669515333366909e-301, 1.1360378921429752e-302
    with mp.workdps(400):
        true_order = mp.log(1 + mp.expm1(mp.mpf(eps)) / mp.mpf(d))
        assert hockey_stick_order(eps, d) <= true_order  # documented as rounded DOWN
        a = 2.0**-7
        K = np.array([[1 - a, a], [a, 1 - a]])
        rep = amplify(DP(eps, d), MarkovOperator(K))
        assert_all_sound(rep, lambda e: worst_black_box_delta(eps, d, K, e), mp.mpf(0),
                         eps_queries=(eps,), delta_queries=(d,))


# Regression (was a strict xfail until fixed): bounds.tight_pure_epsilon cancels: logaddexp(0, a+b) -
# logaddexp(a, b) is  ~ab/2 from two terms ~log 2, but round_up uses scale = a + b; at a = b = 1e-8  it
# returns 2.2e-23 for 5e-17, and amplify_steps' composed LDP level is false
def test_tight_pure_epsilon_small_levels_and_composed_steps():
    from chainamp.amplification import tight_pure_epsilon

    with mp.workdps(60):
        exact = mp.log((1 + mp.e ** mp.mpf(2e-8)) / (2 * mp.e ** mp.mpf(1e-8)))
    assert tight_pure_epsilon(1e-8, 1e-8) >= exact
    K = mechanisms.binary_randomized_response(1.2e-8)
    step = amplify_steps(DP(5.0), K, steps=2, max_product_entries=1).steps[-1]  # composed coefficients
    assert worst_black_box_delta(5.0, 0.0, [K.matrix, K.matrix], step.epsilon) <= step.delta


# Regression (was a strict xfail until fixed): mixing.doeblin assumes rows of mass 1: a row accepted at 1 +
# 9e-10  (ROW_SUM_ATOL) gives gamma = 3e-16 instead of ~9e-10, and the listed  Theorem 1(3) bound (5.7e-16,
# 2.1e-16) undercuts the truth 4.2e-10
def test_doeblin_with_row_sums_off_one():
    t = 9e-10
    K = [[1.0, t], [1.0, 0.0]]
    rep = amplify(DP(1.0), MarkovOperator(K))
    with mp.workdps(60):
        T = mp.mpf(t)
        normalised = [[1 / (1 + T), T / (1 + T)], [mp.mpf(1), mp.mpf(0)]]  # the stochastic rows K stands for
        for b in rep.bounds:
            assert worst_black_box_delta(1.0, 0.0, [normalised], b.epsilon) <= b.delta, b


# Regression (was a strict xfail until fixed): Theorem 1(3)/(4) round delta' (and eps') with round_up, which
# keeps an  exact 0 at 0; a product that UNDERFLOWS to 0 is not exact:  theorem1_doeblin(1.25e-200,
# 5.4e-301, 1e-300) returns (0, 0) for ~1e-500
def test_theorem1_doeblin_and_ultra_underflow_to_zero():
    from chainamp.amplification import theorem1_doeblin, theorem1_ultra_mixing

    b = theorem1_doeblin(1.2474028365688252e-200, 5.393348793174788e-301, 1e-300)
    assert b.epsilon > 0 or b.delta > 0  # the exact pair is (1.2e-500, 1.2e-500): (0, 0) claims perfect privacy
    b = theorem1_ultra_mixing(9.375725191348476e-17, 8.60328269667059e-301, 1e-300)
    assert b.delta > 0  # exact delta' 8.6e-601 > 0


def test_eps_700_and_tiny_delta_black_box():
    K = mechanisms.randomized_response(3, 1.0)
    rep = amplify(DP(700.0, 1e-300), K)
    # K is 1.0-LDP: nothing certified can be worse than that, and 700 must not overflow
    assert rep.best.epsilon <= 1.0 + 1e-9 and rep.best.delta <= 1e-300
    assert_all_sound(rep, lambda e: worst_black_box_delta(700.0, 1e-300, K.matrix, e), mp.mpf(0),
                     eps_queries=(0.0, 0.5, 1.0), delta_queries=(0.0, 1e-300, 0.1))


@pytest.mark.parametrize("points", [[(1.0, 0.0), (0.5, 1e-3)], [(2.0, 1e-9), (0.2, 0.2), (1.0, 0.01)]],
                         ids=["two", "three"])
def test_list_of_points_sound_for_a_mechanism_meeting_them(points):
    """A real mechanism meeting every point (binary RR at the smallest pure level) bounds nothing from below
    that the report may undercut."""
    e_rr = min(e for e, d in points) if any(d == 0 for e, d in points) else 0.2
    R = mechanisms.binary_randomized_response(e_rr).matrix
    prof = PrivacyProfile.randomized_response(2, e_rr)
    assert all(prof.delta(e) <= d for e, d in points)  # R really satisfies every point
    K = _normalise([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]])
    rep = amplify([DP(*p) for p in points], MarkovOperator(K))
    assert_all_sound(rep, lambda e: exact_pipeline_delta(R, K, e), mp.mpf("1e-40"))


# ----------------------------------------------------------------------------- profiles vs discretised densities
def _binned_pair(kind: str, scale: float, nbins: int = 40):
    lo, hi = -6 * scale, 1 + 6 * scale
    edges = [-mp.inf] + [mp.mpf(x) for x in np.linspace(lo, hi, nbins + 1)] + [mp.inf]

    def cdf(x, mu):
        if x in (-mp.inf, mp.inf):
            return mp.mpf(0 if x < 0 else 1)
        z = (x - mu) / scale
        if kind == "gaussian":
            return mp.ncdf(z)
        return mp.e ** z / 2 if z < 0 else 1 - mp.e ** (-z) / 2

    P = [cdf(edges[i + 1], 0) - cdf(edges[i], 0) for i in range(len(edges) - 1)]
    Q = [cdf(edges[i + 1], 1) - cdf(edges[i], 1) for i in range(len(edges) - 1)]
    return P, Q


# 12 examples in the default run (25 before issue 20 §6; 120 under --hypothesis-profile=ci, 25 before): the same
# branches of chainamp are reached (coverage.py, branch mode, seeds 1-3)
@settings(max_examples=examples(12), deadline=None)
@given(A=adversarial_operators(min_n=2), kind=st.sampled_from(["laplace", "gaussian"]),
       scale=st.sampled_from([0.2, 1.0, 3.0, 0.3]), seed=st.integers(0, 2**32 - 1),
       target=st.sampled_from([1e-12, 1e-6, 1e-3, 0.1]))
def test_profile_inputs_sound_against_binned_densities(A, kind, scale, seed, target):
    prof = PrivacyProfile.laplace(scale) if kind == "laplace" else PrivacyProfile.gaussian(scale)
    rep = amplify(prof, MarkovOperator(A), delta=target)
    P, Q = _binned_pair(kind, scale)
    rng = np.random.default_rng(seed)
    n, Km = A.shape[0], _mpm(A)
    outs = []
    for t in range(5):  # bins -> K's inputs: threshold maps (the likelihood ratio is monotone) and one random map
        if t < 4:
            cuts = np.sort(rng.integers(0, len(P), n - 1))
            perm = rng.permutation(n)
            T = [int(perm[np.searchsorted(cuts, i, side="right")]) for i in range(len(P))]
        else:
            T = [int(x) for x in rng.integers(0, n, len(P))]
        pair = []
        for dist in (P, Q):
            x = [mp.mpf(0)] * n
            for w, to in zip(dist, T):
                x[to] += w
            pair.append([mp.fsum(x[i] * Km[i][y] for i in range(n)) for y in range(len(Km[0]))])
        outs.append(pair)

    def truth(e):
        return max(max(_hs(p, q, e), _hs(q, p, e)) for p, q in outs)

    with mp.workdps(40):
        assert_all_sound(rep, truth, _excess(A) * 4 + mp.mpf("1e-35"), eps_queries=(0.0, 0.1, 1.0, 3.0),
                         delta_queries=(1e-12, 1e-6, 1e-3, 0.1, 0.5))


@pytest.mark.parametrize("scale,sens", [(3.0, 1.0), (0.3, 3.0), (7.0, 2.0), (3.0, 0.1), (1.0, 1.0), (0.5, 1.0)],
                         ids=["3", "0.3x3", "7x2", "3x0.1", "1", "0.5"])
def test_laplace_pure_epsilon_is_rounded_up(scale, sens):
    """Regression: Laplace(scale=3).pure_epsilon was 0.3333333333333333 < 1/3 (the float test eps0 * b != s
    cannot see a division rounded down), so delta(pure_epsilon) = 0 < the exact 9e-18."""
    prof = PrivacyProfile.laplace(scale, sens)
    assert Fraction(prof.pure_epsilon) >= Fraction(sens) / Fraction(scale)
    e = math.nextafter(prof.pure_epsilon, 0.0)
    exact = 1 - mp.e ** ((mp.mpf(e) - mp.mpf(sens) / mp.mpf(scale)) / 2)
    assert prof.delta(e) >= exact


@pytest.mark.parametrize("sigma,sens,eps", [(1e-300, 1.0, 1.0), (1e-155, 1.0, 0.0), (1.0, 1e160, 5.0),
                                             (1e-300, 1e300, 0.0), (1e-8, 1.0, 1e-3), (1e300, 1.0, 0.0)],
                         ids=["no-noise", "mu-4e154", "huge-sensitivity", "mu-inf", "tiny-sigma", "huge-sigma"])
def test_gaussian_profile_with_almost_no_noise(sigma, sens, eps):
    """Regression: with mu = sensitivity/sigma above ~4e154, log_ndtr of the second argument is -inf, the error
    term became inf and delta(eps) came out as 5e-324 (an almost noiseless Gaussian 'certified' (0, 1e-6)-DP)."""
    prof = PrivacyProfile.gaussian(sigma, sens)
    with mp.workdps(60):
        mu = mp.mpf(sens) / mp.mpf(sigma)
        if mu > 1e6:  # mp.ncdf overflows there; Phi(mu/2 - eps/mu) > 1 - 1e-9 and e^eps Phi(-mu/2) < 1e-9
            exact = mp.mpf("0.99")
        else:
            exact = mp.ncdf(mu / 2 - eps / mu) - mp.e ** mp.mpf(eps) * mp.ncdf(-mu / 2 - eps / mu)
    assert prof.delta(eps) >= exact
    if exact > 1e-6:
        assert prof.epsilon(1e-6) > eps


# ----------------------------------------------------------------------------- odd but valid inputs
@pytest.mark.parametrize("mech,K,kw", [
    (DP(1.0, 0.1), MarkovOperator([[0.3, 0.7]]), {}),
    (DP(1.0, 0.1), MarkovOperator([[1.0], [1.0]]), {}),
    (DP(0.0), MarkovOperator(np.eye(2)), {}),
    (DP(1.0, 1.0), mechanisms.randomized_response(3, 1.0), {}),
    ((DP(1.0, 0.0), DP(0.5, 1e-3)), mechanisms.randomized_response(3, 1.0), {}),
    (DP(1.0), MarkovOperator(np.eye(2), inputs=[(0, 1), (1, 0)]), {"inputs": [(0, 1)]}),
    (PrivacyProfile.from_callable(lambda e: math.exp(-e), name="exp"), mechanisms.randomized_response(3, 1.0),
     {"delta": 1e-3}),
    (PrivacyProfile.gaussian(1e-3), mechanisms.randomized_response(3, 1.0), {"delta": 1e-12}),
    (PrivacyProfile.laplace(1e-3), mechanisms.randomized_response(3, 1.0), {}),
    (DP(1.0), [MarkovOperator(sp.csr_matrix(np.eye(3))), mechanisms.randomized_response(3, 1.0)], {}),
], ids=["one-row", "one-column", "eps0-zero", "delta-one", "tuple-of-points", "tuple-labels", "callable",
        "gaussian-tiny-sigma", "laplace-eps-1000", "sparse-list"])
def test_odd_valid_inputs_do_not_crash_and_stay_sound_at_inf(mech, K, kw):
    rep = amplify(mech, K, **kw)
    assert 0.0 <= rep.best.delta <= max(rep.target_delta, 0.0) or rep.best.epsilon == _INF
    for e in (0.0, 1.0, _INF):
        assert 0.0 <= rep.delta_at(e) <= 1.0
    assert rep.epsilon_at(1.0) == 0.0
    assert rep.delta_at(_INF) <= rep.delta_at(0.0)
