"""Issue 14, item 2: ``amplify`` accepts numpy arrays and nested lists as well as MarkovOperator."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import chainamp as ca
from chainamp import DP, MarkovOperator, amplify
from chainamp.errors import InvalidOperatorError

RR = [[0.75, 0.25], [0.25, 0.75]]


@pytest.mark.parametrize("make", [lambda: RR, lambda: np.array(RR), lambda: sp.csr_matrix(np.array(RR))],
                         ids=["nested-list", "ndarray", "sparse"])
def test_amplify_accepts_arrays_as_k(make):
    ref = amplify(DP(1.0), MarkovOperator(RR)).best.epsilon
    assert amplify(DP(1.0), make()).best.epsilon == ref
    two = amplify(DP(1.0), [make(), MarkovOperator(RR)]).best.epsilon
    assert two == amplify(DP(1.0), [MarkovOperator(RR), MarkovOperator(RR)]).best.epsilon


def test_amplify_accepts_a_numpy_array_as_finite_mechanism():
    M = ca.mechanisms.randomized_response(2, 1.0)
    got = amplify(np.array(M.matrix), RR)
    assert got.mechanism.kind == "finite"
    # the same matrix as a plain operator (M itself is a structured SymmetricChannel: rounded differently, in ulps)
    assert got.best.epsilon == amplify(MarkovOperator(M.matrix), MarkovOperator(RR)).best.epsilon


def test_points_are_dp_objects_and_the_two_way_nested_list_is_refused():
    """Issue 18.6: [[1.0, 0.0], [0.5, 1e-3]] is (eps, delta) points or a 2-column matrix: refused, both spellings
    shown; points as DP objects (or PrivacyProfile.from_points), a matrix as an array or MarkovOperator."""
    assert amplify([ca.DP(1.0, 0.0), ca.DP(0.5, 1e-3)], RR, delta=1e-3).mechanism.kind == "points"
    with pytest.raises(TypeError, match=r"mechanism is a nested list of pairs of numbers, \[\[1.0, 0.0\], "
                                        r"\[0.5, 0.001\]\], which reads two ways: write \(epsilon, delta\) points as "
                                        r"\[DP\(1.0, 0.0\), DP\(0.5, 0.001\)\] or PrivacyProfile.from_points\(.*"
                                        r"MarkovOperator\(\[\[1.0, 0.0\], \[0.5, 0.001\]\]\) or np.array"):
        amplify([[1.0, 0.0], [0.5, 1e-3]], RR, delta=1e-3)
    with pytest.raises(TypeError, match=r"mechanism mixes DP points with other values .* write every point as DP"):
        amplify([ca.DP(1.0, 0.0), (0.5, 1e-3)], RR, delta=1e-3)
    three = [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]]  # rows of 3 numbers read only one way: a matrix
    assert amplify(three, np.eye(3)).mechanism.kind == "finite"


@pytest.mark.parametrize("K, err, match", [
    ([[0.7, 0.25], [0.25, 0.75]], InvalidOperatorError, r"K rows must sum to 1 within row_sum_atol=1e-09"),
    ([RR, [[0.7, 0.25], [0.25, 0.75]]], InvalidOperatorError, r"K rows must sum to 1"),
    ([[0.5, 0.5], [0.5]], TypeError, "K must be an array-like of numbers"),
    (np.array(RR, dtype=complex), TypeError, "K must have real entries"),
    ([], TypeError, "got an empty list"),
    ([MarkovOperator(RR), "K.csv"], TypeError, r"K\[1\] must be a MarkovOperator"),
], ids=["row-sum", "second-row-sum", "ragged", "complex", "empty", "string-in-list"])
def test_amplify_coercion_errors(K, err, match):
    with pytest.raises(err, match=match):
        amplify(DP(1.0), K)


def test_masked_arrays_are_refused():
    """A masked array's hidden values would be certified silently: refuse it."""
    K = np.ma.array([[0.5, 0.5], [1.0, 0.0]], mask=[[0, 0], [0, 1]])
    with pytest.raises(TypeError, match=r"K must not be a masked array.*1 masked"):
        ca.dobrushin(K)
