"""Issue 14, items 2 and 4: the oracle's edge cases of the mixing coefficients, and arrays accepted.

Each value is compared with an exact reference (``fractions.Fraction`` on the stored doubles) and
must be sound (never below it) and as tight as stated.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

import chainamp as ca
from chainamp import MarkovOperator
from chainamp.errors import InvalidOperatorError


def F(rows):
    return [[Fraction(x) for x in r] for r in rows]


def normalised(rows):
    return [[x / sum(r) for x in r] for r in F(rows)]


def doeblin_exact(R):
    return 1 - sum(min(col) for col in zip(*R))


def tv_exact(R):
    return max(sum(max(a - b, 0) for a, b in zip(p, q)) for p in R for q in R)


def hockey_exact(R, eps_fraction):
    return max(sum(max(a - eps_fraction * b, 0) for a, b in zip(p, q)) for p in R for q in R)


def ultra_exact(R):
    ratios = [min(p[y] / q[y] for p in R for q in R) for y in range(len(R[0]))]
    return 1 - min(ratios)


# ---------------------------------------------------------------- Doeblin: the LP covers the normalised rows
@pytest.mark.parametrize("rows", [
    [[0.5000000001, 0.5], [0.5, 0.5]],
    [[0.3, 0.7 + 5e-10], [0.6, 0.4 - 5e-10]],
    [[0.333333, 0.333333, 0.333333], [0.5, 0.25, 0.249999]],
], ids=["issue", "mixed", "six-decimals"])
def test_doeblin_lp_covers_normalised_rows_like_exact(rows):
    K = MarkovOperator(rows, row_sum_atol=1e-5)
    truth = doeblin_exact(normalised(rows))
    as_written = max(max(sum(r) for r in F(rows)), 1) - sum(min(c) for c in zip(*F(rows)))
    lp, ex = ca.doeblin(K, method="lp").gamma, ca.doeblin(K).gamma
    for g in (lp, ex):
        assert Fraction(g) >= truth and Fraction(g) >= as_written  # sound for both readings
    assert abs(lp - ex) <= 1e-15  # the LP agrees with the exact path (it was 5.6e-16 vs 1e-10 before)
    dev = max(abs(sum(r) - 1) for r in F(rows))
    assert Fraction(lp) - truth <= 2 * dev + Fraction(1e-15)  # loose only by the rows' own deviation


def test_doeblin_issue_example_numbers():
    K = MarkovOperator([[0.5000000001, 0.5], [0.5, 0.5]])
    truth = doeblin_exact(normalised([[0.5000000001, 0.5], [0.5, 0.5]]))
    assert float(truth) == pytest.approx(5.0e-11, rel=1e-3)
    assert ca.doeblin(K, method="lp").gamma >= 5.0e-11  # was 5.6e-16: below the truth


# ---------------------------------------------------------------- ultra-mixing LP on a subnormal entry
@pytest.mark.parametrize("rows", [
    [[1 - 5e-324, 5e-324], [1.0, 0.0]],
    [[0.5, 0.5 - 1e-320, 1e-320], [0.5, 0.5, 0.0]],
], ids=["issue", "three-columns"])
def test_ultra_mixing_lp_with_subnormal_entries_is_one_without_warnings(rows):
    K = MarkovOperator(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow / invalid value warnings
        res = ca.ultra_mixing(K, method="lp")
    assert res.gamma == 1.0 == ca.ultra_mixing(K).gamma  # supports differ: the exact value is 1
    assert res.certificate.lower == res.certificate.upper == 0.0


def test_ultra_mixing_lp_tiny_shared_column():
    rows = [[0.5, 0.5 - 1e-320, 1e-320], [0.25, 0.75 - 2e-320, 2e-320]]
    K = MarkovOperator(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lp = ca.ultra_mixing(K, method="lp").gamma
    truth = ultra_exact(F(rows))
    assert Fraction(lp) >= truth and lp - float(truth) <= 1e-8


# ---------------------------------------------------------------- normalised=True: certified for K(x, .) / s_x
ROUNDED = [[0.333333, 0.333333, 0.333333], [0.5, 0.25, 0.249999], [0.2, 0.3, 0.5]]


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.7, math.inf], ids=["tv", "0.1", "0.7", "inf"])
def test_dobrushin_normalised_is_sound_and_tight(eps):
    K = MarkovOperator(ROUNDED, row_sum_atol=1e-5)
    R = normalised(ROUNDED)
    if math.isinf(eps):
        truth = max(sum(a for a, b in zip(p, q) if b == 0) for p in R for q in R)
    else:
        c = Fraction(math.exp(eps)) * (1 - Fraction(1, 10**15))  # e^eps taken low: a larger reference
        truth = hockey_exact(R, c) if eps else tv_exact(R)
    got = ca.dobrushin(K, eps, normalised=True).gamma
    assert Fraction(got) >= truth
    assert got - float(truth) <= 1e-5  # widened by the rows' deviation (1e-6) only
    curve = ca.dobrushin_curve(K, [eps], normalised=True)[0]
    assert curve == pytest.approx(got, abs=1e-12)


def test_ultra_mixing_and_ldp_normalised_are_sound():
    K = MarkovOperator(ROUNDED, row_sum_atol=1e-5)
    R = normalised(ROUNDED)
    truth = ultra_exact(R)
    got = ca.ultra_mixing(K, normalised=True).gamma
    assert Fraction(got) >= truth and got - float(truth) <= 1e-5
    assert ca.ultra_mixing(K, normalised=True, method="lp").gamma >= float(truth)
    eps_true = max(math.log(p[y] / q[y]) for p in R for q in R for y in range(3))
    ldp = ca.ldp_guarantee(K, normalised=True)
    assert ldp.epsilon >= eps_true and ldp.epsilon - eps_true <= 1e-5
    assert ldp.delta(0.0) >= float(tv_exact(R))


def test_normalised_changes_nothing_for_rows_summing_to_one():
    K = ca.mechanisms.randomized_response(4, 1.0)
    assert ca.dobrushin(K, 0.3, normalised=True).gamma == ca.dobrushin(K, 0.3).gamma
    assert ca.ultra_mixing(K, normalised=True).gamma == ca.ultra_mixing(K).gamma


def test_normalised_must_be_a_bool():
    with pytest.raises(TypeError, match="normalised must be a bool"):
        ca.dobrushin(ca.mechanisms.randomized_response(3, 1.0), normalised=1)


# ---------------------------------------------------------------- arrays and nested lists
RR = [[0.75, 0.25], [0.25, 0.75]]


@pytest.mark.parametrize("make", [lambda: RR, lambda: np.array(RR), lambda: sp.csr_matrix(np.array(RR))],
                         ids=["nested-list", "ndarray", "sparse"])
def test_coefficients_accept_arrays(make):
    K = MarkovOperator(RR)
    assert ca.dobrushin(make()).gamma == ca.dobrushin(K).gamma
    assert ca.doeblin(make()).gamma == ca.doeblin(K).gamma
    assert ca.ultra_mixing(make()).gamma == ca.ultra_mixing(K).gamma
    assert ca.privacy_profile(make()).delta(0.0) == ca.privacy_profile(K).delta(0.0)


@pytest.mark.parametrize("bad, err, match", [
    ([[0.7, 0.25], [0.25, 0.75]], InvalidOperatorError, r"rows must sum to 1 within row_sum_atol=1e-09"),
    ([[0.5, 0.5], [0.5]], TypeError, "K must be an array-like of numbers"),
    (np.array([[1 + 0j, 0], [0, 1]]), TypeError, "K must have real entries, got complex numbers"),
    ([[1.0, -0.5, 0.5]], InvalidOperatorError, r"non-negative \(entry \(0, 1\) is negative\)"),
    ("K.csv", TypeError, "K must be a MarkovOperator, a 2-D array or nested lists of numbers, got str"),
], ids=["row-sum", "ragged", "complex", "negative", "string"])
def test_coercion_has_the_constructors_messages(bad, err, match):
    for fn in (ca.dobrushin, ca.doeblin, ca.ultra_mixing, ca.privacy_profile):
        with pytest.raises(err, match=match.replace("K must be a Markov", "[KM] must be a Markov")):
            fn(bad)
    if not isinstance(bad, str):
        with pytest.raises(err, match=match):
            MarkovOperator(bad)
