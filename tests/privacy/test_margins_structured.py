"""Safety margins of the structured profile's row-normalisation error (:mod:`chainamp.privacy.structured`,
:func:`chainamp.operators.widen_hockey`, :func:`chainamp.operators.hockey_shift`) (issue 18, "Tests that catch
last-ulp mistakes").

k-RR channels stored as two doubles ``d``, ``o`` whose exact row sum ``s = d + (k - 1) o`` is not 1 (it often rounds
to 1.0): the structured profile must bound the exact profile of the NORMALISED channel,
``H_{e^eps} = ([d - e^eps o]_+ + [o - e^eps d]_+) / s`` for eps >= 0 (mpmath, 80 digits, ``s`` a Fraction), with no
slack, at eps on the rounding edges (0, just below and above the pure level ``log(d / o)``). Each test was checked
to fail with its margin removed (see issue 18's report).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from chainamp import privacy_profile
from chainamp.mechanisms import randomized_response
from chainamp.privacy.structured import StructuredProfile

mpmath.mp.dps = 80
M = mpmath.mpf


def mp(x: Fraction) -> mpmath.mpf:
    return M(x.numerator) / M(x.denominator)


def exact_krr(d: float, o: float, k: int, eps: float) -> mpmath.mpf:
    s = mp(Fraction(d) + (k - 1) * Fraction(o))
    a = mpmath.exp(M(eps))
    return (max(M(d) - a * M(o), 0) + max(M(o) - a * M(d), 0)) / s


CASES = [(k, e) for k in (3, 7, 52, 1000, 12345) for e in (0.1, 0.5, 1.0, 1.8957627118644071, 3.7)]


@pytest.mark.parametrize("k, eps0", CASES, ids=[f"k{k}-eps{e:.3g}" for k, e in CASES])
def test_structured_profile_bounds_the_normalised_channel(k, eps0):
    K = randomized_response(k, eps0)
    prof = privacy_profile(K)
    assert isinstance(prof, StructuredProfile)
    d, o = K.diagonal, K.off_diagonal
    top = math.log(d / o)
    grid = [0.0, 1e-12, top * 0.5] + [top * (1 + f) for f in (-1e-9, -1e-13, -1e-15, 0.0)]
    grid += [math.nextafter(top, -math.inf), math.nextafter(math.nextafter(top, -math.inf), -math.inf)]
    vals = prof.delta(np.array(grid))
    for e, v in zip(grid, vals):
        assert M(float(v)) >= exact_krr(d, o, k, e), e
    assert M(prof.pure_epsilon) >= mpmath.log(M(d) / M(o))


def exact_D(P, Q, eps: float) -> mpmath.mpf:
    a = mpmath.exp(M(eps))
    return sum((max(p - a * q, 0) for p, q in zip(P, Q)), M(0))


def up(x: mpmath.mpf) -> float:
    f = float(x)
    return f if M(f) >= x else math.nextafter(f, math.inf)


WIDEN_CASES = [([0.7, 0.3], [0.2, 0.8], 1e-15), ([0.7, 0.3], [0.2, 0.8], 3e-10), ([0.55, 0.45], [0.45, 0.55], 1e-13),
               ([1 / 3, 2 / 3], [1 / 7, 6 / 7], 2.5e-16)]


@pytest.mark.parametrize("P, Q, rel", WIDEN_CASES, ids=["a", "b", "c", "d"])
def test_widen_hockey_covers_the_worst_perturbation(P, Q, rel):
    """``widen_hockey`` (shift ``hockey_shift(rel)`` rounded up, growth ``(1 + rel)(1 + 4u)``, the final float up):
    from the exact curve of the stored (P, Q) (rounded up), a bound on the curve of ``P* = P (1 + rel)``,
    ``Q* = Q (1 - rel)``, the worst entrywise perturbation, at eps where it is tight (the shift moves the edge)."""
    from chainamp.operators import widen_hockey

    Pm = [M(p) for p in P]
    Qm = [M(q) for q in Q]
    Ps, Qs = [p * (1 + M(rel)) for p in Pm], [q * (1 - M(rel)) for q in Qm]

    def value_at(o):
        return np.array([up(exact_D(Pm, Qm, float(x))) for x in np.atleast_1d(o)])

    top = float(mpmath.log(Pm[0] / Qm[0]))
    grid = [0.0, 0.3 * top, 0.9 * top, top, top * (1 + 1e-12), math.nextafter(top, -math.inf)]
    got = widen_hockey(value_at, np.array(grid), rel)
    for e, g in zip(grid, got):
        assert M(float(g)) >= exact_D(Ps, Qs, e), e
