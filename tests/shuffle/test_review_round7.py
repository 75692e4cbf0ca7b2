"""Adversarial review, round 7: the k-RR shuffle lower's concrete datasets (chainamp.shuffle._krr_datasets), the
operator checks of shuffle/api.py and the shared monotone chain, against exact references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chainamp.shuffle import _krr_datasets as kd
from chainamp.shuffle import krr


def _slope_inputs(eps0: float, h1: float):
    """One pair (T, h0) of :func:`kd._slope_source` for 4-RR at eps0 (its hv frame of two values, suffix sums)."""
    o = krr.krr_parameters(4, eps0)[2]
    d, oo = kd.exact_channel(4, o)
    rd, ro = float(d / oo), float(oo / d)
    one = lambda x: np.array([x], dtype=float)  # noqa: E731
    S = np.array([1.0, 0.5, 0.0])
    return (one(1.0 - h1), one(h1), one(1.0), one(2.0), one(1.0), np.array([2]), np.array([0]), S, S, S, rd, ro,
            rd, 3.0)


@pytest.mark.parametrize("h1", [0.0, 1.0], ids=["h1_0", "h1_1"])
def test_slope_threshold_at_overflowing_slopes_is_an_index(h1):
    """Past eps0 ~ 354 the product ``a r`` (slope times d/o) overflows to inf: with ``h1 = 0`` the term
    ``(1 - a r) h1`` was ``-inf * 0 = NaN``, the threshold NaN, and ``int(NaN)`` raised ValueError in plain Python
    and read outside the suffix sums when compiled (garbage masses: b = 2074 or 1.8e308 at eps0 = 400..700,
    crashing points_epsilon with OverflowError, or any value). Now the term is left out when h1 = 0 and -inf
    otherwise: the test takes every hv (h1 = 0: P - a Q grows with hv) or none."""
    P, Q = kd._slope_source(*_slope_inputs(400.0, h1))  # the plain-Python kernel
    assert math.isfinite(P) and math.isfinite(Q) and 0.0 <= P and 0.0 <= Q


@pytest.mark.parametrize("eps0", [400.0, 690.0], ids=["e400", "e690"])
def test_krr_shuffle_small_outcome_budget_at_large_eps0(eps0):
    """krr_shuffle(lower_outcomes=200) sends the third-value dataset to the slope method; at eps0 = 400 and 690 this
    raised OverflowError (points_epsilon on garbage points read past the suffix sums; the garbage varies from run to
    run, the plain-Python test above is the deterministic one). Its lower now reaches eps0 (user 1 alone on x0 and
    the others on v has ratio e^eps0 and probability about 1) and never passes it."""
    from chainamp.shuffle._lowers import lower_delta

    _, d, o = krr.krr_parameters(4, eps0)
    res = krr.krr_shuffle(50, 4, d, o, lower_outcomes=200, target_delta=1e-6, progress=False)
    assert "best tests at a grid" in res.lower_dataset
    f = lower_delta(res.lower)
    assert f(np.array([eps0 - 1e-3]))[0] > 1e-6 >= f(np.array([eps0 + 1e-9]))[0]


@pytest.mark.parametrize("lower_o,match", [(1e-5, "lower_o must be a number >= o"), (float("nan"), "got nan"),
                                           (-1.0, "lower_o must"), ("0.3", "lower_o must")],
                         ids=["less_private", "nan", "negative", "string"])
def test_krr_shuffle_lower_o_below_o_is_refused(lower_o, match):
    """krr_shuffle(lower_o=) is the band's MOST private end: a smaller off-diagonal than o is a less private channel,
    and its 'lower' passed the certified curve (0.913 against 0.016 at eps = 0.2, 50 users, 4-RR at eps0 = 1, lower_o
    = o / 100); NaN and -1 failed inside with ValueError from Fraction / math. binary_rr_shuffle(lower_p=) already
    refused its mirror."""
    from chainamp.errors import InvalidParameterError

    _, d, o = krr.krr_parameters(4, 1.0)
    with pytest.raises(InvalidParameterError, match=match):
        krr.krr_shuffle(50, 4, d, o, lower_o=lower_o, progress=False)


def test_krr_shuffle_lower_o_at_or_past_the_private_end_is_accepted():
    """lower_o = o (the exact channel) and lower_o past 1/k (capped: no information, a zero lower) are both sound."""
    from chainamp.shuffle._lowers import lower_delta

    _, d, o = krr.krr_parameters(4, 1.0)
    eps = np.array([0.2, 0.5])
    same = krr.krr_shuffle(20, 4, d, o, lower_o=o, progress=False)
    assert np.all(lower_delta(same.lower)(eps) <= same.curve(eps))
    assert np.all(lower_delta(same.lower)(eps) > 0.0)
    flat = krr.krr_shuffle(20, 4, d, o, lower_o=0.3, progress=False)
    assert flat.lower is None or np.all(lower_delta(flat.lower)(eps) == 0.0)


# a 2x2 channel whose rows sum to 0.843 and 0.902, accepted by a user at row_sum_atol = 0.24: it stands for its
# normalised rows (chainamp's convention, operators.operator_error). Since the methods stopped checking rows again
# (to let a drifting product through), its blanket, variation and generic bounds were computed for the rows as
# written: eps = 1.680 at delta = 1e-6 for 5 users, where the normalised channel's worst case has delta 0.0124
LOOSE = np.array([[0.23932491, 0.60340928], [0.78975312, 0.11244054]])


def _binary_worst_delta(rows, users: int, eps: float):
    """The exact worst case over the other users' data of the shuffled binary-output channel ``rows`` (normalised,
    in Fractions): the count of output 1, the changed user at value 0 or 1, both orders, at ``a = e^eps``."""
    from fractions import Fraction

    B = [[Fraction(float(x)) for x in r] for r in rows]
    B = [[x / sum(r) for x in r] for r in B]

    def law(values):
        out = {0: Fraction(1)}
        for v in values:
            new: dict = {}
            for c, w in out.items():
                new[c + 1] = new.get(c + 1, 0) + w * B[v][1]
                new[c] = new.get(c, 0) + w * B[v][0]
            out = new
        return out

    a, worst = Fraction(math.exp(eps)), Fraction(0)
    for m in range(users):
        others = [1] * m + [0] * (users - 1 - m)
        P, Q = law([0] + others), law([1] + others)
        for X, Y in ((P, Q), (Q, P)):
            worst = max(worst, sum(max(X[c] - a * Y.get(c, 0), Fraction(0)) for c in X))
    return worst


@pytest.mark.parametrize("method", ["blanket", "variation", "generic", "auto"])
def test_loose_rows_are_certified_for_their_normalised_rows(method):
    from chainamp import MarkovOperator, amplify_shuffled

    rep = amplify_shuffled(MarkovOperator(LOOSE, row_sum_atol=0.24), 5, method=method, progress=False)
    assert _binary_worst_delta(LOOSE, 5, rep.epsilon) <= rep.delta


def test_public_blanket_and_variation_read_loose_rows_normalised():
    """The public functions too: blanket_delta of the loose operator at eps = 1.68 read 3.6e-5 (the truth: 0.0124) and
    variation_ratio_parameters gave p = e^1.680 (the normalised rows: e^1.748)."""
    from chainamp import MarkovOperator
    from chainamp.shuffle import blanket_delta, variation_ratio_parameters

    loose, norm = MarkovOperator(LOOSE, row_sum_atol=0.24), MarkovOperator(LOOSE / LOOSE.sum(1, keepdims=True))
    got = blanket_delta(loose, 5, [1.68])[0]
    assert got >= _binary_worst_delta(LOOSE, 5, 1.68) * (1 - 1e-12)
    assert got == pytest.approx(blanket_delta(norm, 5, [1.68])[0], rel=1e-9)
    assert variation_ratio_parameters(loose).p >= variation_ratio_parameters(norm).p * (1 - 1e-12)


def test_dask_backed_loose_rows_are_read_normalised_too():
    """variation_ratio_parameters normalised only plain operators: a dask-backed operator accepted within a loose
    row_sum_atol was read as written (beta 0.36 against the normalised channel's 0.381)."""
    da = pytest.importorskip("dask.array")
    from chainamp import MarkovOperator
    from chainamp.shuffle import variation_ratio_parameters

    A = np.array([[0.6, 0.24], [0.3, 0.6]])
    lazy = MarkovOperator.from_dask(da.from_array(A, chunks=1), row_sum_atol=0.2)
    norm = variation_ratio_parameters(MarkovOperator(A / A.sum(axis=1, keepdims=True)))
    got = variation_ratio_parameters(lazy)
    assert got.beta >= norm.beta * (1 - 1e-12) and got.p >= norm.p * (1 - 1e-12)
