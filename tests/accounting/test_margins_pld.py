"""Safety margins of the pessimistic split of a dominating pair onto dp-accounting's loss grid
(:func:`chainamp.accounting.pld._grid_split`, used by :func:`chainamp.accounting.pair_to_pld` and ``compose``)
(issue 18, "Tests that catch last-ulp mistakes").

The split puts the P-mass of each outcome on the grid points ``j d`` and ``(j + 1) d`` around its log-ratio; the
discretised pair must dominate the exact pair: ``sum_j mass_j [1 - e^{eps - j d}]_+ + mass_inf >=
sum_y [p_y - e^eps q_y]_+`` for every real eps, checked at 60 digits (mpmath) with no slack, at the grid points
and the log-ratios. The pairs below were found by a random search over log-ratios that sit within a few ulps of a
grid point; each test was checked to fail with its margin removed (see issue 18's report).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from chainamp.accounting.pld import _grid_split

mpmath.mp.dps = 60
M = mpmath.mpf


def first_undercut(p, q, d):
    """The first eps where the discretised pair's curve is below the exact one (None if nowhere checked)."""
    table, inf_mass, lo, hi = _grid_split(np.array(p), np.array(q), d)
    losses = [math.log(a / b) for a, b in zip(p, q) if a > 0 and b > 0]
    eps_list = sorted(set([j * d for j in range(lo - 1, hi + 2)] + losses
                          + [x + s * 1e-13 for x in losses for s in (-1, 1)]))
    for e in eps_list:
        a = mpmath.exp(M(e))
        exact = sum((max(M(x) - a * M(y), 0) for x, y in zip(p, q)), M(0))
        got = sum((M(v) * max(1 - mpmath.exp(M(e) - j * M(d)), 0) for j, v in table.items()), M(0)) + M(inf_mass)
        if got < exact:
            return e
    return None


EDGES = {
    # a log-ratio a few ulps below a grid point: only the 8 u (|log p| + |log q| + 1) on the computed loss
    # keeps its mass on the upper side
    "loss-on-grid": ([0.3878951515300457, 0.1185798547263057, 0.4935249937436486],
                     [0.38698711312099504, 0.11619187635921836, 0.4968210105197866], 1e-3),
    # the masses summed per grid point: the (2 m + 4) u scaling covers the sums' rounding
    "summed-masses": ([0.1379011065758645, 0.8605006071984612, 0.0015982862256743225],
                      [0.13738211467765243, 0.7756828309364362, 0.08693505438591119], 0.1),
}


def lost_infinite_mass():
    """P-mass 0.5 and 15 entries just under half an ulp of 0.5 where Q vanishes, at positions 0, 8, ..., 120 (one
    accumulator of numpy's pairwise sum): the float mass of infinite loss loses ~7.4 units of 2^-53."""
    p, q = np.zeros(128), np.zeros(128)
    p[0], p[8:121:8] = 0.5, 0.99 * 2.0**-54
    p[1] = 0.5 - 15 * 0.99 * 2.0**-54
    q[1], q[2] = 0.5, 0.5
    return p.tolist(), q.tolist(), 0.1


EDGES["infinite-mass"] = lost_infinite_mass()


@pytest.mark.parametrize("name", list(EDGES))
def test_discretised_pair_dominates_the_exact_pair(name):
    p, q, d = EDGES[name]
    assert first_undercut(p, q, d) is None
    assert first_undercut(q, p, d) is None
