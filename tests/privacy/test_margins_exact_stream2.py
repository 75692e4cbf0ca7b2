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
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

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
