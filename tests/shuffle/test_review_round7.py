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
