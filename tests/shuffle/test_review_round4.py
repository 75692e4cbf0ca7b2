"""Review round 4 (issue 19's merge h-binrr): the joint Chernoff bound on extreme inputs, and the exact method's new
paths (windowed circular FFT, halves splitting, queued laws kept) forced at small n against exact worst cases."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from chainamp.shuffle import _binomial, exact


def _exact_log_tail(parts, t, upper):
    mpmath.mp.dps = 60
    dist = [mpmath.mpf(1)]
    for n, p in parts:
        P = mpmath.mpf(p)
        b = [mpmath.binomial(n, k) * P**k * (1 - P)**(n - k) for k in range(n + 1)]
        out = [mpmath.mpf(0)] * (len(dist) + n)
        for i, x in enumerate(dist):
            for j, y in enumerate(b):
                out[i + j] += x * y
        dist = out
    return mpmath.log(mpmath.fsum(dist[t:]) if upper else mpmath.fsum(dist[:t + 1]))


@pytest.mark.parametrize("parts, t, upper", [
    ([(30, 1.3155393577742609e-15)], 5, True),           # tiny variance: the normal start exp(1e14) overflowed
    ([(32, 4.839822859336149e-12), (50, 0.5)], 65, True),  # Newton's step past exp's range
    ([(42, 0.00020862397967154797)], 16, True),
    ([(25, 1.0), (1, 0.9999999170810303)], 7, False),     # a point mass at 1: x = 1 - p + p e^l = 0 divided by
], ids=["tiny-var", "newton-jump", "p2e-4", "lower-point-mass"])
def test_sum_chernoff_is_finite_and_above_exact_on_extreme_parts(parts, t, upper):
    """Any Chernoff parameter of the right sign gives a valid bound: extreme ones must be clamped into exp's range,
    not raise OverflowError / ValueError."""
    v = _binomial.sum_chernoff_log_tail(parts, t, upper)
    assert v <= 0.0
    assert _exact_log_tail(parts, t, upper) <= v
