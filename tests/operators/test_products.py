"""The rounding-error model of operator products chainamp forms (chainamp.operators.products), against mpmath."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import chainamp as ca
from chainamp import DP, MarkovOperator, amplify
from chainamp.operators.products import EXACT, multiply
from conftest import examples, random_stochastic

mp.mp.dps = 50


def exact_product(*mats):
    out = [[mp.mpf(float(x)) for x in row] for row in mats[0]]
    for B in mats[1:]:
        Bm = [[mp.mpf(float(x)) for x in row] for row in B]
        out = [[mp.fsum(out[i][k] * Bm[k][j] for k in range(len(Bm))) for j in range(len(Bm[0]))]
               for i in range(len(out))]
    return out


@given(st.integers(0, 2**32 - 1), st.integers(2, 4), st.booleans())
@settings(max_examples=80, deadline=None)
def test_entrywise_error_model_holds(seed, factors, tiny):
    rng = np.random.default_rng(seed)
    mats = [random_stochastic(rng, 3, 3, 0.3) for _ in range(factors)]
    if tiny:  # entries whose products underflow
        mats[0][0] = [1.0 - 1e-200, 1e-200, 0.0]
        mats[1][1] = [1e-200, 1.0 - 1e-200, 0.0]
    ops = [MarkovOperator(m) for m in mats]
    P, err = ops[0], EXACT
    for op in ops[1:]:
        P, err = multiply(P, err, op, EXACT)
    truth = exact_product(*mats)
    for i in range(3):
        for j in range(3):
            stored = mp.mpf(float(P.matrix[i, j]))
            slack = stored * mp.mpf(err.rel) + mp.mpf(err.absolute)
            assert abs(truth[i][j] - stored) <= slack, (i, j, truth[i][j], stored, err)
            if err.support_exact:
                assert (truth[i][j] > 0) == (stored > 0)


def test_underflow_is_detected():
    K1 = MarkovOperator([[1.0, 1e-200], [1.0, 0.0]], row_sum_atol=1e-9)
    K2 = MarkovOperator([[1.0, 0.0], [1.0, 1e-200]], row_sum_atol=1e-9)
    _, err = multiply(K1, EXACT, K2, EXACT)
    assert not err.support_exact and err.absolute > 0
    # K1 K1: a product of positive entries could underflow (1e-200 * 1e-200), so an absolute slack is
    # kept, but no stored zero hides a positive true entry: the Boolean-product check keeps the support
    _, clean = multiply(K1, EXACT, K1, EXACT)
    assert clean.absolute > 0 and clean.support_exact


def test_exact_operator_passes_through():
    """Rows of dyadic entries sum to 1 exactly: the operator is taken as it is, unchanged."""
    K = MarkovOperator([[0.5, 0.25, 0.25], [0.125, 0.75, 0.125]])
    r = amplify(DP(1.0, 1e-6), K)
    assert r.coefficients.product_error.is_exact
    assert r.coefficients.dobrushin_gamma == r.coefficients.dobrushin.gamma


def test_row_sums_off_one_are_normalised_soundly():
    """Rows accepted within row_sum_atol stand for their normalised rows: [[1, 9e-10], [1, 0]] has
    Doeblin gamma ~9e-10 after normalising, and the bounds must use at least that."""
    K = MarkovOperator([[1.0, 9e-10], [1.0, 0.0]])
    r = amplify(DP(1.0, 1e-6), K)
    assert 0 < r.coefficients.product_error.rel < 1e-9
    assert r.coefficients.doeblin_gamma >= 9e-10 / (1 + 9e-10)


# 20 examples in the default run (40 before issue 20 §6; 200 under --hypothesis-profile=ci, 40
# before): the same branches of chainamp are reached (coverage.py, branch mode, seeds 1-3)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.5, 2.0]), st.sampled_from([0.0, 1e-6]))
@settings(max_examples=examples(20), deadline=None)
def test_list_bounds_dominate_the_true_product(seed, eps, delta):
    """Coefficients used for a list of operators are >= those of the exact (mpmath) product."""
    rng = np.random.default_rng(seed)
    mats = [random_stochastic(rng, 3, 3, 0.3) for _ in range(3)]
    r = amplify(DP(eps, delta), [MarkovOperator(m) for m in mats])
    P = exact_product(*mats)
    tv = max(mp.fsum(max(P[i][y] - P[j][y], 0) for y in range(3)) for i in range(3) for j in range(3))
    doe = 1 - mp.fsum(min(P[i][y] for i in range(3)) for y in range(3))
    c = r.coefficients
    assert c.dobrushin_gamma >= tv and c.doeblin_gamma >= doe


def test_coefficients_to_dict_reports_product_error():
    K = MarkovOperator(random_stochastic(np.random.default_rng(0), 3, 3))
    d = amplify(DP(1.0), [K, K]).coefficients.to_dict()
    assert d["product_rel_error"] > 0 and math.isfinite(d["dobrushin"])


@pytest.mark.parametrize("inputs", [[0, 1], [2]], ids=["omits-2", "omits-0-1"])
def test_finite_mechanism_inputs_must_cover_its_reach(inputs):
    M = ca.mechanisms.randomized_response(3, 1.0)
    K = MarkovOperator([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ca.InvalidMechanismError, match="inputs omits .* which the finite mechanism M"):
        amplify(M, K, inputs=inputs)


@pytest.mark.parametrize("rows", [
    [[1.0, 9e-10], [1.0, 0.0]],
    [[0.5, 0.5 - 8e-10], [0.25, 0.75]],
    [[0.3, 0.7 + 5e-10], [0.6, 0.4 - 5e-10]],
], ids=["heavy-row", "light-row", "mixed"])
def test_standalone_doeblin_covers_both_readings_of_rows_off_one(rows):
    """doeblin(K) >= the Doeblin coefficient of the rows as written and of the normalised rows (exact)."""
    from fractions import Fraction

    K = MarkovOperator(rows)
    F = [[Fraction(x) for x in r] for r in rows]
    as_written = max(sum(r) for r in F) - sum(min(col) for col in zip(*F))
    normalised = 1 - sum(min(col) for col in zip(*[[x / sum(r) for x in r] for r in F]))
    g = Fraction(ca.doeblin(K).gamma)
    assert g >= as_written and g >= normalised


def test_composed_steps_widen_each_operator_for_rows_off_one():
    """Past max_product_entries each new operator's coefficients also carry its row-sum error."""
    from chainamp import amplify_steps

    K = MarkovOperator([[1.0, 9e-10], [1.0, 0.0]])
    composed = amplify_steps(DP(1.0, 1e-6), K, steps=3, max_product_entries=1)
    g = 9e-10 / (1 + 9e-10)  # Doeblin (= Dobrushin) coefficient of the normalised rows
    for s in composed.steps:
        assert s.doeblin >= g ** s.t and s.dobrushin >= g ** s.t


def test_tight_pure_epsilon_never_underflows_to_zero():
    from chainamp.amplification import tight_pure_epsilon

    # exact value ~ a b / 2 = 5e-341 (subnormal): must stay positive, never 0
    assert tight_pure_epsilon(1e-170, 1e-170) > 0
    assert tight_pure_epsilon(0.0, 1.0) == 0.0
