"""mixing_time's cheap decisions (issue 20 item 5): reference-row bounds on gamma(K^t) of a dense power, the
sub-multiplicative skip of products, and the same answers as the plain definition; the rounding margins of the
bounds on inputs built to sit on their edge, in exact arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp import MarkovOperator
from chainamp.mixing import dobrushin, mixing_time
from chainamp.mixing.tv_bounds import submultiplicative, tv_decide


def exact_gamma(A: np.ndarray) -> Fraction:
    rows = [[Fraction(float(x)) for x in r] for r in A]
    return max(sum(abs(a - b) for a, b in zip(p, q)) / 2 for p in rows for q in rows)


def plain_mixing_time(P: np.ndarray, eps: float) -> int:
    power, t = P.copy(), 1
    while dobrushin(MarkovOperator(power)).gamma > eps:
        power, t = power @ P, t + 1
    return t


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 16), m=st.integers(2, 16), seed=st.integers(0, 10**6), eps=st.floats(0.0, 1.0))
def test_verdicts_are_certified(n, m, seed, eps):
    rng = np.random.default_rng(seed)
    A = rng.random((n, m)) ** 3
    A /= A.sum(axis=1, keepdims=True)
    verdict, upper, (i, j) = tv_decide(A, eps)
    gamma = exact_gamma(A)
    assert Fraction(upper) >= gamma
    if verdict is True:
        assert gamma > Fraction(eps)
        assert sum(abs(Fraction(float(a)) - Fraction(float(b))) for a, b in zip(A[i], A[j])) / 2 > Fraction(eps)
    elif verdict is False:
        assert gamma <= Fraction(eps)


@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"seed{s}")
def test_antipodal_rows_on_the_rounding_edge(seed):
    """Rows p, q and their midpoint: the references' bound min_r d(i, r) + d(j, r) equals gamma = TV(p, q) in exact
    arithmetic. At eps just below the exact gamma no verdict may say "gamma <= eps"; without the rounding margins
    of the distances the computed bound rounds below gamma for some of these inputs."""
    rng = np.random.default_rng(seed)
    m = 7
    p, q = rng.random(m) ** 4, rng.random(m) ** 4
    p, q = p / p.sum(), q / q.sum()
    A = np.vstack([p, q, (p + q) / 2])
    gamma = exact_gamma(A)
    eps = float(gamma)
    if Fraction(eps) >= gamma:
        eps = math.nextafter(eps, -math.inf)
    verdict, upper, _ = tv_decide(A, eps)
    assert verdict is not False and Fraction(upper) >= gamma


def test_submultiplicative_covers_the_products_rounding():
    assert submultiplicative(1.0, 1.0, 10) > 1.0 and submultiplicative(0.0, 0.3, 1000) >= 4 * 1002 * 2.0**-53
    assert submultiplicative(0.5, 0.5, 10) > 0.25


@pytest.mark.parametrize("make, eps", [
    (lambda rng: rng.random((60, 60)), 0.25),
    (lambda rng: 0.9 * np.eye(50) + 0.1 * rng.random((50, 50)), 0.25),
    (lambda rng: 0.7 * np.eye(40) + 0.3 * rng.random((40, 40)) ** 8, 0.05),
    (lambda rng: MarkovOperator.random_walk(nx.connected_watts_strogatz_graph(50, 4, 0.2, seed=1),
                                            laziness=0.5).matrix, 0.1),
], ids=["random", "sticky", "sticky-skewed", "lazy-walk-dense"])
def test_dense_chains_match_the_plain_definition(make, eps):
    P = np.array(make(np.random.default_rng(4)), dtype=float)
    P /= P.sum(axis=1, keepdims=True)
    assert mixing_time(MarkovOperator(P), eps) == plain_mixing_time(P, eps)


@pytest.mark.parametrize("lam", [0.3, 0.123456789, 0.7], ids=str)
def test_doeblin_bound_settles_stay_or_mix_chains(lam):
    """``lam I + (1 - lam) 1 pi^T`` has gamma = lam, which the column minima give exactly (1 - (1 - lam))."""
    rng = np.random.default_rng(1)
    pi = rng.dirichlet(np.ones(30))
    A = lam * np.eye(30) + (1 - lam) * pi[None, :]
    gamma = exact_gamma(A)
    assert tv_decide(A, float(gamma) * (1 + 1e-9))[0] is False
    assert tv_decide(A, math.nextafter(float(gamma), -math.inf) if Fraction(float(gamma)) >= gamma
                     else float(gamma))[0] is not False
