"""Adversarial review of the clone bounds (generic_delta, clone_probability): brute force in exact
arithmetic over every dataset of the other users and every histogram, and the clone decomposition's
premise checked in Fractions."""

from __future__ import annotations

import itertools
import math
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from chainamp.errors import InvalidOperatorError
from chainamp.operators import MarkovOperator, SymmetricChannel
from chainamp.shuffle import clone_probability, generic_delta, generic_epsilon

sys.path.insert(0, str(Path(__file__).parent))
from review_brute import eps0_of, random_R, worst_deltas  # noqa: E402


def _premise_holds(R: list[list[Fraction]], s: float) -> bool:
    """``R(x, y) >= s (R(x0, y) + R(x1, y)) / 2`` for every pair, value and output, exactly."""
    S = Fraction(s)
    k, m = len(R), len(R[0])
    return all(R[x][y] * 2 >= S * (R[a][y] + R[b][y])
               for a, b in itertools.combinations(range(k), 2) for x in range(k) for y in range(m))


@pytest.mark.parametrize("k,d,o", [(3, Fraction(1, 5), Fraction(2, 5)), (4, Fraction(1, 10), Fraction(3, 10)),
                                   (5, Fraction(0), Fraction(1, 4)), (2, Fraction(1, 5), Fraction(4, 5)),
                                   (3, Fraction(3, 5), Fraction(1, 5))],
                         ids=["anti3", "anti4", "anti5-zero-diag", "anti2", "krr3"])
def test_symmetric_channel_closed_form_meets_the_premise(k, d, o):
    """Counterexample found in review: for d < o and k >= 3 the closed form returned 2 d / (d + o)
    (0.6667 for k = 3, d = 0.2, o = 0.4), but the column of a third value gives 2 d / (2 o) = 0.5:
    R(x2, x2) = 0.2 < 0.6667 * (0.4 + 0.4) / 2, so the clone decomposition did not exist."""
    R = [[d if x == y else o for y in range(k)] for x in range(k)]
    s = clone_probability(SymmetricChannel(k, float(d), float(o)))
    assert _premise_holds(R, s)
    dense = clone_probability([[float(v) for v in row] for row in R])
    assert s == pytest.approx(dense, rel=1e-12)


def test_rows_must_be_stochastic():
    """Counterexample found in review: rows [[.6, .4], [.4, .6], [.3, 2.7]] (third row 3 x [.1, .9])
    gave 0.2424, above the 0.2 of the normalised rows."""
    with pytest.raises(InvalidOperatorError, match="rows must sum to 1"):
        clone_probability([[0.6, 0.4], [0.4, 0.6], [0.3, 2.7]])


def test_markov_operator_is_accepted():
    K = MarkovOperator(np.array([[0.6, 0.4], [0.4, 0.6]]))
    assert clone_probability(K) == pytest.approx(0.8, rel=1e-12) and clone_probability(K) <= 0.8


@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
def test_clone_probability_premise_random(seed):
    rng = np.random.default_rng(100 + seed)
    for kind in ("uniform", "zeros", "peaked", "wide"):
        R = random_R(rng, int(rng.integers(2, 6)), int(rng.integers(2, 6)), kind)
        s = clone_probability([[float(v) for v in row] for row in R])
        assert _premise_holds(R, s)
        # and it is the largest such s up to rounding (not needlessly loose)
        assert s == 1.0 or not _premise_holds(R, s * (1 + 1e-9) + 1e-300)


def _check_generic(R, n, eps_list):
    e0 = math.log(float(eps0_of(R))) * (1 + 1e-14) + 1e-14
    Rf = [[float(v) for v in row] for row in R]
    s = min(clone_probability(Rf), 2.0 / (math.exp(e0) + 1.0))
    epss = [e for e in eps_list] + [0.5 * e0, 0.9 * e0, 0.999 * e0, e0, 1.2 * e0]
    exact = worst_deltas(R, n, epss)
    plain = generic_delta(e0, n, epss)
    strong = generic_delta(e0, n, epss, clone_probability=s)
    for e, x, a, b in zip(epss, exact, plain, strong):
        assert a >= x, (e, float(x), a)
        assert b >= x, (e, float(x), b)
        assert a >= b * (1 - 1e-9)  # a larger clone probability never loosens the bound


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_generic_brute_force_random(seed):
    rng = np.random.default_rng(seed)
    kind = ("uniform", "peaked", "wide", "uniform")[seed]
    R = random_R(rng, 3, 3, kind)
    _check_generic(R, 4, [0.0, 1e-12, 1e-4, 0.1])


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(200), ids=lambda s: f"seed{s}")
def test_generic_brute_force_sweep_slow(seed):
    rng = np.random.default_rng(1000 + seed)
    k, m = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    n = int(rng.integers(1, 7 if k * m <= 9 else 5))
    R = random_R(rng, k, m, ("uniform", "peaked", "wide")[seed % 3])
    _check_generic(R, n, [0.0, 1e-12, 1e-6, 1e-3, 0.05, 0.3, 1.0])


def test_epsilon_inversion_meets_delta():
    rng = np.random.default_rng(7)
    for _ in range(6):
        eps0 = float(np.exp(rng.uniform(math.log(0.01), math.log(10.0))))
        n = int(np.exp(rng.uniform(0, math.log(1e6))))
        delta = float(10 ** rng.uniform(-12, -1))
        e = generic_epsilon(eps0, n, delta)
        if math.isfinite(e):
            assert generic_delta(eps0, n, [e])[0] <= delta
            if e > 0:
                assert generic_delta(eps0, n, [e * (1 - 1e-4)])[0] > delta * (1 - 1e-3) or e < 1e-9


@pytest.mark.parametrize("eps0,users", [(10.0, 1), (10.0, 2), (8.0, 3)], ids=["n1", "n2", "n3"])
def test_epsilon_is_at_most_eps0(eps0, users):
    """Found in review: generic_epsilon(10, 2, 1e-12) was inf (the rounded delta at eps0 is 3e-11, not 0)
    although eps0-LDP reports give (eps0, 0)-DP shuffled reports."""
    e = generic_epsilon(eps0, users, 1e-12)
    assert eps0 <= e <= eps0 * (1 + 1e-12)


def test_variation_epsilon_is_at_most_log_p():
    from chainamp.shuffle import variation_ratio_epsilon
    S = SymmetricChannel.from_epsilon(3, 10.0)
    e = variation_ratio_epsilon(S, 5, 1e-12)
    assert 10.0 <= e <= 10.0 * (1 + 1e-12)


@pytest.mark.parametrize("k,eps0", [(2, 2.0), (5, 4.0), (3, 10.0)], ids=["rr", "5rr", "3rr-eps10"])
def test_clone_probability_of_krr_accepted_with_its_ldp_level(k, eps0):
    """Found in review: clone_probability(SymmetricChannel.from_epsilon(2, 2.0)) with eps0 from
    chainamp.ldp_guarantee (rounded up by 1.8e-15) was refused: 0.2384058440442349 > 0.23840584404423476."""
    from chainamp import ldp_guarantee
    S = SymmetricChannel.from_epsilon(k, eps0)
    e0 = ldp_guarantee(S).epsilon
    s = clone_probability(S)
    d = generic_delta(e0, 1000, [0.1], clone_probability=s)[0]
    assert d == pytest.approx(generic_delta(eps0, 1000, [0.1], clone_probability=2 / (math.exp(eps0) + 1))[0],
                              rel=1e-6)


def test_large_eps0_with_a_clone_probability_does_not_overflow():
    """Found in review: generic_delta(800, 10, [0.1], clone_probability=0.0) raised OverflowError."""
    assert generic_delta(800.0, 10, [0.1], clone_probability=0.0)[0] == pytest.approx(1.0)
