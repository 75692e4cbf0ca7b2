"""Safety margin of the streamed exact profile's pruning band (:func:`chainamp.privacy._exact_stream.chord_upper`
with :func:`~chainamp.privacy._exact_stream.value_margin`) (issue 18, "Tests that catch last-ulp mistakes").

A later query recomputes only the units (or classes) whose chord bound reaches a computed value; the bound's
contract is that it is at least EVERY computed value of the unit at that eps (so that a pruned query returns
the full evaluation's maxima and witnesses) and at least the exact divergence. The chord of the computed grid
values alone is not: a computed value is the exact one plus a rounding that is not convex in ``e^eps`` (the
roundings of ``exp``, of ``log Q`` and of the chord's weight), and lands up to about 2 u above the bare chord
(found by the sweeps below). The reference for the exact divergence is mpmath at 60 digits, no slack. The test
was checked to fail with ``value_margin`` returning 0 (see the report on branch h-mut2); the exact values stay
below even the bare chord, because every computed grid value already carries its own inflation (``(m + 4) u P``
and the shrink of ``e^eps Q``), so the margin guards the pruned queries' equality with the full evaluation.

The pure levels (``pure_epsilon`` and each unit's ``unit_pure``, both ``computed largest log-ratio + 2 llr_err``,
:func:`chainamp.privacy.exact.privacy_profile`) are checked on a pair whose computed log-ratio (a difference of two
numpy logarithms) is 3.5 ulps below the exact one: just above it the exact profile is still positive. Both tests
were checked to fail with the ``2 llr_err`` removed (the pure epsilon then lies below the exact largest log-ratio,
and a pruned query returns delta = 0 where the exact value is positive).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from chainamp import privacy_profile
from chainamp.privacy import _exact_stream as st

mpmath.mp.dps = 60
M = mpmath.mpf
U = 2.0**-53


def exact_pair(p, q, eps: float) -> mpmath.mpf:
    """``max(H(p || q), H(q || p))`` at ``e^eps`` for the stored doubles (rows summing to 1 exactly)."""
    a = mpmath.exp(M(eps))
    fwd = sum((max(M(float(x)) - a * M(float(y)), 0) for x, y in zip(p, q)), M(0))
    bwd = sum((max(M(float(y)) - a * M(float(x)), 0) for x, y in zip(p, q)), M(0))
    return max(fwd, bwd)


def pair_rows(seed: int, m: int) -> np.ndarray:
    """Two rows of m outputs whose stored entries sum to 1 exactly (the last entry absorbs the rest: checked)."""
    R = np.random.default_rng(seed).dirichlet(np.full(m, 0.3), size=2)
    R = np.maximum(R, 1e-300)
    for r in R:
        r[-1] = 0.0
        r[-1] = 1.0 - math.fsum(r)
        assert math.fsum(r) == 1.0
    return R


@pytest.mark.parametrize("seed, m", [(3, 3), (11, 3), (199, 3), (5, 6)], ids=["s3m3", "s11m3", "s199m3", "s5m6"])
def test_chord_bound_covers_every_computed_value(seed, m):
    """``chord_upper(..., value_margin(...))`` >= the computed value and the exact divergence at 400 eps of the
    grid's range; on these rows some computed value is above the bare chord (the edge)."""
    R = pair_rows(seed, m)
    with np.errstate(divide="ignore"):
        logR = np.log(R)
    block = st._sorted_block(R, logR, np.array([0]), np.array([1]), m)
    top = float(np.max(np.abs(logR[0] - logR[1])))
    grid = np.linspace(0.0, top, st.GRID_POINTS)
    step = float(grid[1] - grid[0])
    llr_err = 32.0 * U * float(np.max(np.abs(logR)))
    gu, gv = st._values(block, grid, llr_err, m)
    summary = np.maximum(gu, gv)
    es = np.random.default_rng(seed + 1).uniform(0.0, top, 400)
    vu, vv = st._values(block, es, llr_err, m)
    computed = np.maximum(vu, vv)[0]
    pure = np.array([math.inf])
    above_bare = 0
    for e, v in zip(es, computed):
        bare = st.chord_upper(grid, summary, pure, float(e), 0.0)[0]
        ub = st.chord_upper(grid, summary, pure, float(e), st.value_margin(float(e), llr_err, m, step))[0]
        above_bare += bool(v > bare)
        assert ub >= v, (e, v, ub)
    assert above_bare > 0  # on the edge: the chord without its margin misses computed values
    for e in es[:: 40]:  # the exact divergence too (a few points: mpmath)
        ub = st.chord_upper(grid, summary, pure, float(e), st.value_margin(float(e), llr_err, m, step))[0]
        assert M(float(ub)) >= exact_pair(R[0], R[1], float(e))


def edge_mechanism() -> tuple[np.ndarray, float, float]:
    """Rows 5 and 6 with ``fl(log a) - fl(log b)`` (the computed log-ratio, the pair's largest) 3.5 ulps below
    the exact ``log(a / b)`` (found by a search), five filler rows with smaller log-ratios (they make the edge pair
    the last of 21 pruning units), every row summing to 1 exactly; returns the mechanism, the computed largest
    log-ratio and the float just above it, where the exact profile is still positive."""
    a, b, x = 0.5029585216915491, 0.4585642204592074, 0.47
    r = 1.0 - math.fsum([a, x])
    edge = [[a, x, r], [b, 1.0 - b - r, r]]
    fill = [[0.48 + 0.001 * k, 0.0, r] for k in range(5)]
    for row in fill:
        row[1] = 1.0 - math.fsum([row[0], r])
    K = np.array(fill + edge)
    assert all(math.fsum(row) == 1.0 for row in K)
    top = float(np.max(privacy_profile(K, neighbors=None)._unit_top))  # as the profile computes it
    return K, top, math.nextafter(top, 1.0)


def exact_profile(K: np.ndarray, eps: float) -> mpmath.mpf:
    return max(exact_pair(K[i], K[j], eps) for i in range(len(K)) for j in range(i + 1, len(K)))


def test_pure_level_covers_the_log_ratio_rounding():
    """``pure_epsilon = top + 2 llr_err`` (``privacy_profile``): the computed largest log-ratio is below the exact
    one here, so the profile is still positive just above it; the certified pure epsilon must exceed the exact
    largest log-ratio, and delta there must cover the exact value."""
    K, top, e = edge_mechanism()
    exact_top = mpmath.log(M(K[5, 0]) / M(K[6, 0]))
    assert M(top) < M(e) < exact_top and exact_profile(K, e) > 0  # on the edge
    prof = privacy_profile(K, neighbors=None)
    assert M(prof.pure_epsilon) >= exact_top
    assert M(prof.delta(e)) >= exact_profile(K, e)


def test_unit_pure_level_keeps_the_edge_unit(monkeypatch):
    """``unit_pure = unit_top + 2 llr_err`` (the level from which :func:`chord_upper` sets a unit's bound to 0): a
    later (pruned) query must still recompute the unit whose computed log-ratio is below the exact one. Classes
    are switched off (``CLASS_LIMIT``) so that later queries take the unit-pruned path."""
    monkeypatch.setattr(st, "CLASS_LIMIT", 2)
    K, top, e = edge_mechanism()
    prof = privacy_profile(K, neighbors=None)
    prof.delta(np.linspace(0.0, 0.1, 6))  # the first pass (keeps the unit summaries)
    assert "classes" not in prof._state and "summary" in prof._state
    es = np.array([e, 0.2, 0.3, 0.4, 0.5])  # more than a few eps: the unit-pruned path
    got = prof.delta(es)
    assert M(float(got[0])) >= exact_profile(K, e) > 0
