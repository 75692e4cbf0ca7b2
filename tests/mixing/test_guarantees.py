"""chainamp.mixing guarantees: Lemma 9's implications between the conditions of Definition 1
(Balle et al. 2019), the local-DP reading of K and the worst-start mixing time."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp.errors import InvalidParameterError
from chainamp.mixing import (LDPGuarantee, MixingConditions, dobrushin, dobrushin_curve, doeblin, ldp_guarantee,
                             mixing_conditions, mixing_time, ultra_mixing)
from chainamp.operators import MarkovOperator
from conftest import random_stochastic, stochastic_matrices

#: Agreement of a reported (rounded-up) value with an exact reference on small chains.
CLOSE = 1e-12


def krr(k: int, eps: float) -> MarkovOperator:
    """k-ary randomized response: keep w.p. e^eps / (e^eps + k - 1), else a uniform other value."""
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    mat = np.full((k, k), (1.0 - keep) / (k - 1))
    np.fill_diagonal(mat, keep)
    return MarkovOperator(mat)


# ---------------------------------------------------------------- Lemma 9
@settings(max_examples=40, deadline=None)
@given(stochastic_matrices(max_n=5, max_m=5), st.floats(0.0, 5.0))
def test_lemma9_implications(A, eps):
    """Figure 1: ultra-mixing => Doeblin => Dobrushin => (gamma, eps)-Dobrushin (D_{e^eps} <= TV)."""
    K = MarkovOperator(A)
    dob, hs = dobrushin(K).gamma, dobrushin(K, eps).gamma
    doe, ult = doeblin(K).gamma, ultra_mixing(K).gamma
    assert hs <= dob
    assert dob <= doe + CLOSE
    assert doe <= ult + CLOSE
    for g in (dob, doe, ult, 0.5):
        c = mixing_conditions(K, g, eps)
        assert not c.ultra_mixing or c.doeblin
        assert not c.doeblin or c.dobrushin
        assert not c.dobrushin or c.hockey_stick


# ---------------------------------------------------------------- LDP reading, conditions
def test_ldp_guarantee():
    K = krr(4, 1.3)
    g = ldp_guarantee(K)
    assert isinstance(g, LDPGuarantee)
    assert g.epsilon >= 1.3 and g.epsilon - 1.3 <= 1e-12
    assert g.delta(g.epsilon) == 0.0
    np.testing.assert_allclose(g.delta([0.0, 0.5]), dobrushin_curve(K, [0.0, 0.5]), rtol=0, atol=0)  # same path
    for d in (0.3, 0.05, 1e-4):
        e = g.epsilon_at(d)
        assert g.delta(e) <= d
        assert g.delta(max(0.0, e * (1 - 1e-6) - 1e-9)) > d or e == 0.0
    assert g.epsilon_at(0.0) <= g.epsilon
    assert g.epsilon_at(1.0) == 0.0
    # differing supports: eps_K = inf; delta below footnote-3 mass -> inf
    A = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.2, 0.3, 0.5]])
    h = ldp_guarantee(MarkovOperator(A))
    assert h.epsilon == math.inf
    assert h.epsilon_at(0.1) == math.inf
    e = h.epsilon_at(0.6)  # footnote-3 mass is 0.5 (rounded up): a finite eps suffices
    assert math.isfinite(e) and h.delta(e) <= 0.6


def test_mixing_conditions_fields():
    K = krr(3, 1.0)
    c = mixing_conditions(K, 0.7)
    assert isinstance(c, MixingConditions) and c.hockey_stick is None and c.hockey_stick_gamma is None
    assert c.ultra_mixing and c.doeblin and c.dobrushin and c.implied == ()
    tight = mixing_conditions(K, 0.3)  # Doeblin = Dobrushin = 0.3642 > 0.3; ultra 0.632
    assert not (tight.doeblin or tight.dobrushin or tight.ultra_mixing)
    # (gamma, eps)-Dobrushin does NOT imply gamma-Dobrushin: k-RR at its own eps has
    # hockey-stick coefficient 0 but TV coefficient 0.36 (the proof of Lemma 9 states the
    # converse; only gamma-Dobrushin => (gamma, eps)-Dobrushin follows from D <= TV)
    at_eps = mixing_conditions(K, 0.01, epsilon=1.0 + 1e-9)
    assert at_eps.hockey_stick and not at_eps.dobrushin and not at_eps.doeblin
    weak = mixing_conditions(K, 0.5, epsilon=0.0)
    assert weak.dobrushin and weak.hockey_stick
    # Lemma 9 supplies Doeblin from ultra-mixing at a gamma equal to the ultra coefficient
    g = ultra_mixing(K).gamma
    assert mixing_conditions(K, g).doeblin


# ---------------------------------------------------------------- mixing time
def brute_mixing_time(K: MarkovOperator, eps: float) -> int:
    P = MarkovOperator.identity(K.inputs)
    t = 0
    while dobrushin(P).gamma > eps:
        P, t = P @ K, t + 1
    return t


@pytest.mark.parametrize("seed", range(4), ids=[f"seed{s}" for s in range(4)])
@pytest.mark.parametrize("eps", [0.5, 0.25, 0.01], ids=["0.5", "0.25", "0.01"])
def test_mixing_time_matches_brute_force(seed, eps):
    rng = np.random.default_rng(400 + seed)
    n = 3 + seed
    A = 0.9 * np.eye(n) + 0.1 * random_stochastic(rng, n, n)
    K = MarkovOperator(A)
    assert mixing_time(K, eps) == brute_mixing_time(K, eps)


def test_mixing_time_edge_cases():
    assert mixing_time(MarkovOperator([[1.0]])) == 0
    assert mixing_time(krr(3, 1.0), 1.0) == 0
    assert mixing_time(MarkovOperator([[0.5, 0.5], [0.5, 0.5]])) == 1
    with pytest.raises(InvalidParameterError, match="does not mix"):
        mixing_time(MarkovOperator([[0.0, 1.0], [1.0, 0.0]]), max_steps=1000)
    with pytest.raises(InvalidParameterError, match="does not mix"):
        mixing_time(MarkovOperator([[0.99, 0.01], [0.01, 0.99]]), 0.01, max_steps=10)
