"""chainamp.shuffle.generic: the clone bound of Feldman, McMillan and Talwar 2021, evaluated exactly."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from chainamp.errors import InvalidParameterError
from chainamp.shuffle import clone_probability, fmt_closed_form_epsilon, generic_delta, generic_epsilon
from chainamp.shuffle._clones import clone_pair_delta

sys.path.insert(0, str(Path(__file__).parent))
from brute_histograms import krr, random_randomizer, shuffled_worst_delta  # noqa: E402


def _eps0(R) -> float:
    """The exact LDP level of a Fraction randomizer, as a float rounded up."""
    k, m = len(R), len(R[0])
    r = max(R[a][y] / R[b][y] for a in range(k) for b in range(k) for y in range(m))
    return math.nextafter(math.log(float(r)) * (1 + 1e-15), math.inf) + 1e-15


def _pair_exact(N: int, s: float, w: float, eps: float) -> mpmath.mpf:
    """The clone pair's divergence summed over EVERY clone count and count of kinds, in mpmath."""
    mpmath.mp.dps = 40
    e, s, w = mpmath.exp(eps), mpmath.mpf(s), mpmath.mpf(w)
    tot = mpmath.mpf(0)
    for c in range(N + 1):
        pc = mpmath.binomial(N, c) * s**c * (1 - s) ** (N - c)
        W = [mpmath.binomial(c, a) / mpmath.mpf(2) ** c for a in range(c + 1)]
        for a in range(c + 2):
            lo = W[a - 1] if a >= 1 else 0
            hi = W[a] if a <= c else 0
            P, Q = w * lo + (1 - w) * hi, (1 - w) * lo + w * hi
            tot += pc * max(0, P - e * Q)
    return tot


def test_readme_example_of_fmt_2021():
    eps = generic_epsilon(4.0, 100_000, 1e-6)
    assert 0.1675 <= eps <= 0.1728
    assert generic_delta(4.0, 100_000, [eps])[0] <= 1e-6


@pytest.mark.parametrize("n,eps0,lo,hi", [(1000, 2.0, 0.545, 0.563), (10_000, 4.0, 0.593, 0.621)],
                         ids=["n1e3", "n1e4"])
def test_issue_table_within_fmt_numerical_bracket(n, eps0, lo, hi):
    assert lo <= generic_epsilon(eps0, n, 1e-6) <= hi


def test_stronger_clones_for_binary_rr_match_the_2023_value():
    e = math.exp(2.0)
    R = [[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]]
    s = clone_probability(R)
    assert s == pytest.approx(2 / (e + 1), rel=1e-12) and s <= 2 / (e + 1)
    assert generic_epsilon(2.0, 1000, 1e-6, clone_probability=s) == pytest.approx(0.397, abs=1e-3)


@pytest.mark.parametrize("N,s,w,eps", [(12, 0.3, 0.8, 0.2), (25, 0.1, 0.9, 0.5), (8, 0.9, 0.7, 0.05)],
                         ids=["a", "b", "c"])
def test_pair_value_is_an_upper_bound_of_the_exact_sum(N, s, w, eps):
    exact = _pair_exact(N, s, w, eps)
    got = clone_pair_delta(N, s, w, 1.0, np.array([eps]))[0]
    assert got >= exact
    assert got <= exact * (1 + 1e-5) + 1e-12


def test_tail_margin_is_needed():
    """The window of C leaves out mass; the returned tail must cover it (fails when it is dropped: the
    window alone, even with its pmf pushed up, holds less than 1)."""
    from chainamp.shuffle._clones import clone_window
    mpmath.mp.dps = 40
    N, s = 2000, 0.3
    c, pc, tail = clone_window(N, s, 0.01)
    exact = [mpmath.binomial(N, int(x)) * mpmath.mpf(s) ** int(x) * (1 - mpmath.mpf(s)) ** (N - int(x)) for x in c]
    assert all(float(a) >= b * (1 - 1e-15) for b, a in zip(exact, pc))
    assert mpmath.fsum(pc) < 1  # the window alone misses mass
    assert mpmath.fsum(pc) + tail >= 1


@pytest.mark.parametrize("seed", [0, 1, 2], ids=lambda s: f"seed{s}")
def test_brute_force_random_randomizers(seed):
    rng = np.random.default_rng(seed)
    R = random_randomizer(rng, 3, 3)
    n = 4
    e0 = _eps0(R)
    s = clone_probability([[float(v) for v in row] for row in R])
    for eps in (0.0, 0.1, 0.3):
        exact = shuffled_worst_delta(R, n, eps)
        assert generic_delta(e0, n, [eps])[0] >= exact
        assert generic_delta(e0, n, [eps], clone_probability=s)[0] >= exact


def test_brute_force_krr():
    R = krr(3, 3, 1)
    for eps in (0.2, 0.5):
        exact = shuffled_worst_delta(R, 5, eps, pairs=[(0, 1)])
        s = clone_probability([[float(v) for v in row] for row in R])
        assert generic_delta(math.log(3.0) * (1 + 1e-15), 5, [eps], clone_probability=s)[0] >= exact


def test_scale_1e8_users():
    eps = generic_epsilon(4.0, 10**8, 1e-6)
    assert 0.003 < eps < 0.005


def test_closed_form_is_looser():
    assert fmt_closed_form_epsilon(4.0, 100_000, 1e-6) > generic_epsilon(4.0, 100_000, 1e-6)
    assert fmt_closed_form_epsilon(4.0, 100, 1e-6) == 4.0  # outside its range: no claim


@pytest.mark.parametrize("call,exc,match", [
    (lambda: generic_delta(0.0, 10, [0.1]), InvalidParameterError, "eps0 must be > 0"),
    (lambda: generic_delta("a", 10, [0.1]), TypeError, "eps0"),
    (lambda: generic_delta(1.0, 0, [0.1]), ValueError, "users"),
    (lambda: generic_delta(1.0, 10, [-0.1]), InvalidParameterError, "epsilons must be >= 0"),
    (lambda: generic_delta(1.0, 10, object()), TypeError, "epsilons must be a real number"),
    (lambda: generic_delta(1.0, 10, [0.1], clone_probability=0.9), InvalidParameterError, "clone_probability"),
    (lambda: generic_epsilon(1.0, 10, 1.0), ValueError, "delta"),
    (lambda: fmt_closed_form_epsilon(1.0, 10, 0.0), ValueError, "delta"),
    (lambda: clone_probability([[1.0, 0.0]]), InvalidParameterError, "R must be a 2-d array"),
], ids=["eps0", "eps0-type", "users", "neg-eps", "eps-type", "clone", "delta", "delta-closed", "R"])
def test_validation(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_dominating_pair_composes():
    from chainamp import compose
    from chainamp.shuffle import generic_dominating_pair
    pair = generic_dominating_pair(4.0, 100_000)
    grid = np.linspace(0.0, 0.4, 9)
    assert np.all(pair.delta(grid) >= generic_delta(4.0, 100_000, grid))
    assert pair.delta(4.0 * (1 + 1e-9)) == 0.0
    two = compose([pair], [2])
    assert float(np.asarray(two.delta(np.array([0.3])))[0]) >= pair.delta(0.3)
