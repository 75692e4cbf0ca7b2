"""Safety margins of the pair scan's per-pair bounds (:mod:`chainamp.mixing.scan`, ``_hs_bounds`` and ``_tv_bounds``)
and of the exact pair evaluation (:func:`chainamp.mixing.pairwise._hockey_rows`) (issue 18, "Tests that catch
last-ulp mistakes").

References are exact for the stored doubles (mpmath at 60 digits, ``c = e^eps`` real), no slack. The rows are
built on a rounding edge of numpy's pairwise summation (8 interleaved accumulators: the entries at positions
0, 8, 16, ... share one accumulator): 0.5 at position 0 and 15 entries of just under (or just over) half an ulp
of 0.5 at positions 8, 16, ..., 120, so the float sum loses (or gains) about 7.4 units of 2^-53; or on the
cancellation ``p = (1 + alpha) q`` with ``e^eps`` just below ``1 + alpha``, where the rounding of ``c q`` is
the whole error. Each test was checked to fail with its margin removed (see issue 18's report).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from chainamp.mixing.pairwise import _hockey_rows
from chainamp.mixing.scan import pair_bounds

mpmath.mp.dps = 60
M = mpmath.mpf


def exact_D(p, q, eps: float) -> mpmath.mpf:
    c = mpmath.exp(M(eps))
    return sum((max(M(float(a)) - c * M(float(b)), 0) for a, b in zip(p, q)), M(0))


def lane_rows(small: float, tv: bool = False) -> np.ndarray:
    """Two rows of 128 outputs on the edge of numpy's pairwise summation (module docstring). ``tv``: row 1
    shares the small entries and has 0.25 at position 0 (for eps = 0, ``D_1 = s_p - sum min(p, q)``)."""
    m = 128
    lanes = np.arange(8, 121, 8)
    p = np.zeros(m)
    p[0], p[lanes] = 0.5, small
    p[-1] = 0.5 - lanes.size * small
    q = np.zeros(m)
    if tv:
        q[0], q[lanes] = 0.25, small
    else:
        q[0], q[lanes] = 1e-300, 1e-300
    q[-1] = 1.0 - q[:-1].sum()
    return np.array([p, q])


def bounds(K: np.ndarray, eps: float):
    c = 1.0 if eps == 0.0 else math.exp(eps)
    up, low = pair_bounds(K, np.array([0]), np.array([1]), c, K.sum(axis=1), use_numba=False)
    return float(up[0]), float(low[0])


@pytest.mark.parametrize("eps", [0.5, 3.0], ids=["eps0.5", "eps3"])
def test_scan_upper_bound_covers_a_lost_sum(eps):
    """``_hs_bounds``: the relative ``(m + 3) u`` of the upper bound (the sum of the terms lost ~7.4 units)."""
    K = lane_rows(0.99 * 2.0**-54)
    exact = exact_D(K[0], K[1], eps)
    assert exact - M(float(np.maximum(K[0] - math.exp(eps) * K[1], 0.0).sum())) > 7 * 2.0**-53  # on the edge
    up, low = bounds(K, eps)
    assert M(up) >= exact >= M(low)
    _, ups = _hockey_rows(K[:1], K[1:], eps)  # the exact pass: (m + 2) u
    assert M(float(ups[0])) >= exact


@pytest.mark.parametrize("eps", [0.5, 3.0], ids=["eps0.5", "eps3"])
def test_scan_lower_bound_covers_a_gained_sum(eps):
    """``_hs_bounds``: the relative ``(m + 3) u`` of the LOWER bound (used to prune pairs: a lower bound above
    the exact value would drop the maximiser). The float sum gains ~7.4 units here."""
    K = lane_rows(1.01 * 2.0**-54)
    exact = exact_D(K[0], K[1], eps)
    assert M(float(np.maximum(K[0] - math.exp(eps) * K[1], 0.0).sum())) - exact > 7 * 2.0**-53
    up, low = bounds(K, eps)
    assert M(low) <= exact <= M(up)


def cancel_rows(seed: int):
    """``p = (1 + alpha) q`` (row sums within ROW_SUM_ATOL of 1) and an eps with ``math.exp(eps)`` rounded UP
    and just below ``1 + alpha``: every term is active and ``D = s_p - e^eps s_q ~ 1e-13``, so the rounding of
    ``c`` and of each ``c q_y`` (about ``u q_y``) is the whole error."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(6))
    alpha = 1e-12
    p = q * (1 + alpha)
    eps = math.log1p(alpha) * 0.9
    for _ in range(1000):
        if M(math.exp(eps)) > mpmath.exp(M(eps)):
            break
        eps -= 3.7e-17
    else:
        raise AssertionError("no eps with exp rounded up")
    return np.array([p, q]), eps


@pytest.mark.parametrize("seed", range(4))
def test_scan_bounds_cover_the_rounding_of_c_q(seed):
    """``_hs_bounds``: the absolute ``5.2 u s_p`` (the terms' own errors, ``u p + 4.02 u e^eps q`` each) and
    ``_hockey_rows``' ``8 u`` on the mass of near-active outputs."""
    K, eps = cancel_rows(seed)
    exact = exact_D(K[0], K[1], eps)
    up, low = bounds(K, eps)
    assert M(up) >= exact >= M(low)
    _, ups = _hockey_rows(K[:1], K[1:], eps)
    assert M(float(ups[0])) >= exact


def test_tv_bounds_cover_lost_row_sum():
    """``_tv_bounds`` (eps = 0): ``(m + 1) u (s + S)`` with ``s`` the row sum (it loses ~7.4 units) and ``S`` the
    sum of minima."""
    K = lane_rows(0.99 * 2.0**-54, tv=True)
    exact = sum((max(M(float(a)) - M(float(b)), 0) for a, b in zip(K[0], K[1])), M(0))
    up, low = bounds(K, 0.0)
    assert M(up) >= exact >= M(low)


#: (p0, q0, eps): ``p0 > e^eps q0`` exactly while ``p0 < fl(e^eps q0)`` (the product rounded up): a truly
#: positive term computed as 0
HIDDEN_TERMS = [(0.4780466743487869, 0.3756960369332508, 0.24092796876882977),
                (0.4708471022655013, 0.3407778216054374, 0.3233027022859358),
                (0.46306553726810373, 0.3066122837394959, 0.4122845632271896)]


@pytest.mark.parametrize("p0, q0, eps", HIDDEN_TERMS, ids=["a", "b", "c"])
def test_exact_pass_counts_terms_hidden_by_rounding(p0, q0, eps):
    """``_hockey_rows``: outputs with ``p >= c q (1 - 8u)`` count as near-active (``8 u p`` each): a term the
    float product hides is still covered."""
    K = np.array([[p0, 1.0 - p0], [q0, 1.0 - q0]])
    exact = exact_D(K[0], K[1], eps)
    val, ups = _hockey_rows(K[:1], K[1:], eps)
    assert val[0] == 0.0 < exact  # the computed value misses the term
    assert M(float(ups[0])) >= exact
    up, _ = bounds(K, eps)
    assert M(up) >= exact
