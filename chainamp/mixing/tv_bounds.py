"""Deciding ``gamma(A) <= eps`` for a dense stored matrix without scanning every pair (used by ``mixing_time``).

``gamma(A) = max_{i, j} TV(A_i, A_j)``. For any vector nu the triangle inequality gives
``TV(A_i, A_j) <= d(i, nu) + d(j, nu)`` with ``d(i, nu) = |A_i - nu|_1 / 2``; with a few references (the mean row
and rows chosen farthest from the references so far, a k-center sweep) the bound ``min_r d(i, r) + d(j, r)``
settles almost every pair of a power ``K^t`` near mixing (its rows cluster around pi) in O(n (n + m) R) work;
the pairs it cannot settle are evaluated exactly with certified bounds (:func:`.pairwise._eval_pairs`). The
reference rows' farthest partners are certified lower bounds: a power far from mixing is settled by them.

Rounding. Each ``d`` is a sum of m rounded terms ``|fl(a - nu)|``: the exact value is at most the computed one
over ``(1 - u)(1 - gamma_m)``, which ``1 + 4 (m + 2) u`` covers (m u < 0.01 here), rounded up once more; the sum
of two rounded-up distances is rounded up by ``1 + 2 u``. Every decision is therefore about the stored matrix
exactly, as the full scan's is.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import check_memory
from ..errors import ResourceLimitError
from .pairwise import _U, _eval_pairs

__all__: list[str] = []

#: reference rows of the k-center sweep (besides the mean row)
_REFERENCES = 8
#: at most this many unsettled pairs per row are evaluated exactly; beyond, the caller scans every pair
_CANDIDATES_PER_ROW = 32


def _distances(A: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Upper bounds on ``|A_i - ref|_1 / 2`` for every row i (by blocks of 64 rows: the work array stays in cache,
    about 5x one whole-matrix temporary)."""
    n, m = A.shape
    d = np.empty(n)
    work = np.empty((min(64, n), m))
    for i in range(0, n, work.shape[0]):
        blk = A[i:i + work.shape[0]]
        w = work[:blk.shape[0]]
        np.subtract(blk, ref, out=w)
        np.abs(w, out=w)
        d[i:i + blk.shape[0]] = w.sum(axis=1)
    d *= 0.5
    return np.nextafter(d * (1.0 + 4.0 * (A.shape[1] + 2) * _U), np.inf)


def tv_decide(A: np.ndarray, eps: float) -> tuple[bool | None, float, tuple[int, int]] | None:
    """``(verdict, upper, pair)``: verdict True when ``gamma(A) > eps`` is certified (``pair`` attains a certified
    lower bound above eps), False when ``gamma(A) <= eps`` is (``upper`` >= gamma(A), certified), None when
    neither could be settled cheaply (``upper`` is still a certified bound). None when the work arrays (a few
    n x max(n, m) arrays) do not fit in memory. For rows that do not sum to exactly 1, False certifies
    ``max_{i,j} |A_i - A_j|_1 / 2 <= eps`` (the quantity ``mixing_time`` widens by the rows' error); a pair left
    open by the references is evaluated in both orders (each bounds it from above only through the larger).

    Examples
    --------
    >>> A = np.array([[0.5, 0.5, 0.0], [0.4, 0.5, 0.1], [0.45, 0.45, 0.1]])
    >>> verdict, upper, pair = tv_decide(A, 0.05)
    >>> verdict, upper >= 0.1, sorted(pair) in ([0, 1], [0, 2])  # both pairs have TV 0.1
    (True, True, True)
    >>> tv_decide(A, 0.2)[0]
    False
    """
    n, m = A.shape
    try:
        check_memory(24.0 * n * max(n, m), f"the reference-row bounds of {n} rows")
    except ResourceLimitError:
        return None
    dists = [_distances(A, A.mean(axis=0))]
    nearest = dists[0].copy()
    I, J = [], []
    r = int(np.argmax(nearest))
    for _ in range(min(_REFERENCES, n)):
        d = _distances(A, A[r])
        dists.append(d)
        far = int(np.argmax(d))
        if far != r:
            I.append(r)
            J.append(far)
        nearest = np.minimum(nearest, d)
        r = int(np.argmax(nearest))
    pair, low = (0, 1), -math.inf
    if I:
        vals, ups = _eval_pairs(A, np.array(I), np.array(J), 0.0)
        lows = vals - (ups - vals)
        k = int(np.argmax(lows))
        pair, low = (I[k], J[k]), float(lows[k])
    U = np.full((n, n), np.inf)
    for d in dists:
        np.minimum(U, d[:, None] + d[None, :], out=U)
    U = np.nextafter(U * (1.0 + 2.0 * _U), np.inf)
    np.minimum(U, _doeblin_bound(A), out=U)
    np.fill_diagonal(U, 0.0)
    upper = min(1.0, float(U.max()))
    if low > eps:
        return True, upper, pair
    ci, cj = np.nonzero(np.triu(U > eps, 1))
    if ci.size == 0:
        return False, upper, pair
    if ci.size > _CANDIDATES_PER_ROW * n:
        return None, upper, pair
    # both orders: D_1(A_i || A_j) - D_1(A_j || A_i) = s_i - s_j, so with rows not summing to exactly 1 one order
    # alone can be below |A_i - A_j|_1 / 2 (and below gamma, a maximum over ordered pairs)
    vals, ups = _eval_pairs(A, np.concatenate([ci, cj]), np.concatenate([cj, ci]), 0.0)
    lows = vals - (ups - vals)
    ups = np.maximum(ups[:ci.size], ups[ci.size:])
    k = int(np.argmax(lows))
    if lows[k] > eps:
        pair = (int(ci[k]), int(cj[k])) if k < ci.size else (int(cj[k - ci.size]), int(ci[k - ci.size]))
        return True, upper, pair
    if float(ups.max()) <= eps:
        U[ci, cj] = 0.0
        U[cj, ci] = 0.0
        return False, min(1.0, max(float(U.max()), float(ups.max()))), pair
    return None, upper, pair


def _doeblin_bound(A: np.ndarray) -> float:
    """``gamma(A) <= 1 - sum_y min_x A(x, y)`` (every pair shares the column minima; rows summing to 1 - the
    stored rows sum to 1 within ``m u``, which the margin covers): the computed sum of minima (exact terms) is at
    most ``1 / (1 - gamma_m)`` times the exact one, so ``1 - S (1 - 4 (m + 2) u)``, rounded up, is an upper
    bound. Tight for a chain that stays put with probability lam^t and is otherwise mixed."""
    m = A.shape[1]
    S = float(A.min(axis=0).sum())
    row = float(A.sum(axis=1).max())
    return math.nextafter(row - S * (1.0 - 4.0 * (m + 2) * _U) + 4.0 * (m + 2) * _U * row, math.inf)


def submultiplicative(g1: float, g2: float, n: int) -> float:
    """An upper bound on ``gamma(fl(A B))`` from ``gamma(A) <= g1`` and ``gamma(B) <= g2`` (n x n, rows summing to
    about 1): ``gamma(AB) <= gamma(A) gamma(B)`` (Dobrushin 1956), plus the product's rounding, which moves each
    row by at most ``gamma_n`` times its sum in l1 (non-negative terms), rounded up.

    >>> submultiplicative(0.5, 0.5, 10) > 0.25
    True
    """
    return math.nextafter(g1 * g2 * (1.0 + 2 * _U) + 4.0 * (n + 2) * _U, math.inf)
