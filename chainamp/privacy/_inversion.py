"""Inversion of a privacy profile: ``epsilon(delta)``, the smallest eps with ``delta(eps) <= delta``,
by a bracketing search (the body of :meth:`~chainamp.privacy.PrivacyProfile.epsilon`).

Soundness (the conventions of :mod:`.profiles`): the answer is the upper end ``hi`` of a bracket
``[lo, hi]`` with ``delta(lo) > delta >= delta(hi)`` and width at most ``atol + rtol * hi``
(``BISECTION_ATOL``, ``BISECTION_RTOL``), so it is rounded UP and ``delta(answer) <= delta``
always holds; finite eps beyond ``_EPS_SEARCH_MAX`` are not searched (``math.inf`` instead).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__: list[str] = []

_EPS_SEARCH_MAX = 4096.0  # no finite eps beyond this is searched by PrivacyProfile.epsilon


def _search_epsilon(profile: Any, target: float, rtol: float, atol: float) -> float:
    """Smallest eps with ``profile.delta(eps) <= target``, rounded up (see the module docstring)."""
    if target == 0.0:
        return profile._pure_epsilon
    if profile.delta(0.0) <= target:
        return 0.0
    hi = min(profile._pure_epsilon, _EPS_SEARCH_MAX)
    if profile.delta(hi) > target:
        return math.inf
    lo = 0.0
    while hi - lo > atol + rtol * hi:
        grid = np.linspace(lo, hi, 66)[1:-1]
        ok = profile.delta(grid) <= target
        first = int(np.argmax(ok)) if np.any(ok) else grid.size
        new_lo = lo if first == 0 else float(grid[first - 1])
        new_hi = hi if first == grid.size else float(grid[first])
        if (new_lo, new_hi) == (lo, hi):
            break
        lo, hi = new_lo, new_hi
    return hi
