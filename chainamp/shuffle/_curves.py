"""Dominating pairs of the shuffle bounds, so that :func:`chainamp.compose` can take shuffled rounds.

Every curve here is a certified upper bound ``delta(eps)`` of a mechanism that is symmetric in its
neighbours (each bound is symmetric in x0 and x1, or a maximum over both orders), so the mechanism is
``(eps_i, delta(eps_i))``-DP for every grid point and ``(eps_pure, 0)``-DP (the shuffled reports are a
post-processing of the reports, and R is eps_pure-LDP). :meth:`chainamp.privacy.DominatingPair.from_points`
turns those points into the worst pair meeting all of them (the pessimistic "connect the dots" pair of
Doroshenko et al. 2022), which dominates the shuffled reports.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..privacy import DominatingPair
from ._clones import invert_delta

__all__: list[str] = []

GRID_POINTS = 48
GRID_DELTA_FLOOR = 1e-12


def pair_from_curve(delta_at: Callable[[np.ndarray], np.ndarray], eps_pure: float, epsilons, name: str) -> DominatingPair:
    """The dominating pair of the points ``(eps, delta_at(eps))`` on a grid, plus ``(eps_pure, 0)``."""
    if epsilons is None:
        top = eps_pure if math.isfinite(eps_pure) else 50.0
        hi = invert_delta(lambda x: float(delta_at(np.array([x]))[0]), GRID_DELTA_FLOOR, top, rtol=1e-3)
        hi = min(hi, top) if math.isfinite(hi) else top
        grid = np.linspace(0.0, hi, GRID_POINTS)
    else:
        grid = np.unique(np.asarray(epsilons, dtype=float))
    deltas = delta_at(grid)
    points = [(float(e), float(min(1.0, d))) for e, d in zip(grid, deltas)]
    if math.isfinite(eps_pure):
        points.append((float(eps_pure), 0.0))
    return DominatingPair.from_points(points, name=name, exact=False)
