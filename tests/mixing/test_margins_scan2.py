"""Safety margins of the pair scan's pruning (:func:`chainamp.mixing.scan.scan_max`, the ``dropped`` bound of
:func:`chainamp.mixing.scan._tile`) and of its large-eps threshold (``_SCAN_MAX_EPS`` of
:mod:`chainamp.mixing.pruning`) (issue 18, "Tests that catch last-ulp mistakes").

References are exact for the stored doubles (mpmath at 60 digits, ``c = e^eps`` real), no slack.

The dropped bound matters only on a near-tie: a tile keeps its ``_TILE_KEEP`` = 256 candidates with the
largest upper bounds (ties in row-major order, forward pairs before backward ones) and covers the rest by the
largest bound it drops. A kept pair is then refined exactly, down to ``D (1 + (m + 10) u)``, while the scan's
bound carries the absolute ``5.2 u s_p`` (``s_p ~ 1``). So pairs whose values ``D ~ 1e-20`` differ by far less
than one ulp of ``5.2 u`` get the SAME scan bound, and a pair of the dropped group can exceed every refined
kept value. Each test was checked to fail with its margin removed (see the report on branch h-mut2).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from chainamp import MarkovOperator
from chainamp.mixing import pruning
from chainamp.mixing.pairwise import _INF_EPS, _prepare_uncached
from chainamp.mixing.scan import _TILE_KEEP, run_tiles, scan_max

mpmath.mp.dps = 60
M = mpmath.mpf


def exact_max(K: np.ndarray, eps: float) -> mpmath.mpf:
    """``max_{x != x'} D_{e^eps}(K_x || K_x')`` of the stored doubles, exactly (real ``e^eps``)."""
    c = mpmath.exp(M(eps))
    n = K.shape[0]
    best = M(0)
    for i in range(n):
        for j in range(n):
            if i != j:
                best = max(best, sum((max(M(float(a)) - c * M(float(b)), 0) for a, b in zip(K[i], K[j])
                                      if a > 0), M(0)))
    return best


def tie_operator(t: float, n: int = 24, m: int = 128) -> np.ndarray:
    """Every row: 0.5, 0.5 and ``t`` in a column of its own; the last row's own entry ``t (1 + 2^-40)``.
    For eps > 0, ``D(x || x') = t`` exactly except ``D(n-1 || x') = t (1 + 2^-40)`` (backward pairs only);
    the n (n - 1) / 2 = 276 forward pairs fill the tile's 256 kept candidates, all with the same bound."""
    K = np.zeros((n, m))
    K[:, 0] = K[:, 1] = 0.5
    K[np.arange(n), 2 + np.arange(n)] = t
    K[n - 1, 2 + n - 1] = t * (1 + 2.0**-40)
    return K


@pytest.mark.parametrize("t, eps", [(1e-20, 1.0), (4e-21, 0.25), (1e-22, 4.0)], ids=["t1e-20", "t4e-21", "t1e-22"])
def test_dropped_bound_covers_the_maximiser_of_a_tie(t, eps):
    """``scan_max``: ``if dropped > U[k]`` (the largest bound a tile dropped) — the maximiser is a dropped
    pair whose exact value exceeds every refined kept value."""
    K = tie_operator(t)
    prep = _prepare_uncached(MarkovOperator(K), None)
    assert prep.block >= K.shape[0]  # one tile
    c = math.exp(eps)
    ((low, I, J, U, dropped, _),) = list(run_tiles(prep, c, keep=_TILE_KEEP))
    assert I.size == _TILE_KEEP and np.all(I < J) and np.all(U == dropped)  # on the edge: a tie, forward kept
    exact = exact_max(K, eps)
    assert exact == M(t * (1 + 2.0**-40))
    kept_exact = M(t)
    assert exact > kept_exact * (1 + 200 * M(2) ** -53)  # beyond the refinement's own margin
    value, i, j = scan_max(prep, eps, c)
    assert M(value) >= exact


def threshold_operator(n: int = 24, m: int = 128) -> np.ndarray:
    """Rows with overlapping supports (no shortcut applies), ``n^2 m > 2^16`` (not the small exact pass):
    a shared 0.5, an own column, and 0.25 against the smallest subnormal in column 1 (an active term
    ``0.25 - e^eps 2^-1074`` up to eps ~ 743)."""
    K = np.zeros((n, m))
    K[:, 0] = 0.5
    K[np.arange(n), 2 + np.arange(n)] = 0.25
    K[::2, 1] = 0.25
    K[1::2, 1] = 5e-324
    odd = np.arange(1, n, 2)
    K[odd, 2 + odd] = 0.5  # row sum 1 + 2^-1074, stored as 1
    return K


@pytest.mark.parametrize("eps", [705.0, 720.0, 740.0], ids=["eps705", "eps720", "eps740"])
def test_scan_max_eps_guards_the_float_exp(eps):
    """``_SCAN_MAX_EPS`` (700): beyond it the search never forms the float ``exp(eps)`` (it overflows past
    709.78); the enumeration of active terms answers instead, exactly rounded up."""
    K = threshold_operator()
    prep = _prepare_uncached(MarkovOperator(K), None)
    assert prep.disjoint is None and not prep.ultra.shared and eps < _INF_EPS and K.size * K.shape[0] > 2**16
    value, i, j = pruning._max_hockey(prep, eps)
    exact = exact_max(K, eps)
    assert M(value) >= exact
    c = mpmath.exp(M(eps))
    pair = sum((max(M(float(a)) - c * M(float(b)), 0) for a, b in zip(K[i], K[j]) if a > 0), M(0))
    assert M(value) >= pair
