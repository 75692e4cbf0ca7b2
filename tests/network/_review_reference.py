"""A second, independent exact reference for the review tests of chainamp.network.

Written from the protocol's definition only (no code shared with chainamp.network or _gossip_reference):

* the protocol ``y_{t+1} = W_t y_t`` is run symbolically in Fractions on ``y_0`` (each value a linear form in
  the n coordinates of ``y_0``);
* the view is the list of (round, node) values the coalition is given: ``"received"``: ``y_t[w]`` for
  ``t < T`` and ``w`` outside the coalition with ``W_t[c, w] != 0`` for a member ``c``; ``"neighbourhood"``:
  ``y_t[w]`` for ``t <= T`` and ``w`` outside the coalition adjacent (either direction, any round) to a member;
* the coalition knows ``y_0[c]`` of its members, so the view given the coalition's values is Gaussian with
  mean shift ``s = Delta * M e_u`` (``M``: the forms without the coalition's columns) and covariance
  ``Sigma = M diag(sigma^2) M^T``;
* ``mu^2 = s^T Sigma^+ s`` is computed as ``s^T z`` for ANY exact solution ``z`` of ``Sigma z = s`` (``s`` lies in
  the range of ``Sigma``, so the null-space part of ``z`` is orthogonal to ``s``), by exact Gaussian elimination.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np


def simulate(mats) -> list:
    """``forms[t][i]``: ``y_t[i]`` as a list of n Fraction coefficients of ``y_0``, for ``t = 0..T``."""
    n = len(mats[0])
    cur = [[Fraction(1) if i == j else Fraction(0) for j in range(n)] for i in range(n)]
    forms = [cur]
    for W in mats:
        nxt = []
        for i in range(n):
            row = [Fraction(0)] * n
            for k in range(n):
                if W[i][k] != 0:
                    w = W[i][k]
                    for j in range(n):
                        if cur[k][j]:
                            row[j] += w * cur[k][j]
            nxt.append(row)
        cur = nxt
        forms.append(cur)
    return forms


def observed(mats, coalition: set, view: str) -> list:
    """The (t, w) pairs whose values the coalition sees."""
    n, T = len(mats[0]), len(mats)
    if view == "received":
        return [(t, w) for t in range(T) for w in range(n)
                if w not in coalition and any(mats[t][c][w] != 0 for c in coalition)]
    nb = sorted({w for w in range(n) if w not in coalition
                 for W in mats for c in coalition if W[c][w] != 0 or W[w][c] != 0})
    return [(t, w) for t in range(T + 1) for w in nb]


def _solve_many(S: list, bs: list) -> list:
    """Some exact solution of each consistent system ``S z = b``, ``b`` in ``bs`` (free variables set to 0): one
    elimination with every right-hand side appended (the same row operations, so the same exact solutions, as one
    elimination per right-hand side)."""
    m, r = len(S), len(bs)
    M = [list(S[i]) + [b[i] for b in bs] for i in range(m)]
    piv_cols, row = [], 0
    for c in range(m):
        p = next((i for i in range(row, m) if M[i][c] != 0), None)
        if p is None:
            continue
        M[row], M[p] = M[p], M[row]
        inv = 1 / M[row][c]
        M[row] = [x * inv for x in M[row]]
        for i in range(m):
            if i != row and M[i][c] != 0:
                f = M[i][c]
                M[i] = [x - f * y for x, y in zip(M[i], M[row])]
        piv_cols.append(c)
        row += 1
    out = []
    for k in range(r):
        for i in range(row, m):
            assert M[i][m + k] == 0, "inconsistent: the mean shift is not in the covariance's range"
        z = [Fraction(0)] * m
        for i, c in enumerate(piv_cols):
            z[c] = M[i][m + k]
        out.append(z)
    return out


def exact_mu_all(mats_float, coalition, sigma, view: str, sensitivity=1.0, dps: int = 60) -> dict:
    """``{u: mu_{u -> coalition}}`` for every u outside the coalition (mpmath numbers at ``dps`` digits)."""
    mats = [[[Fraction(float(x)) for x in row] for row in np.asarray(W, dtype=float)] for W in mats_float]
    n = len(mats[0])
    coalition = set(coalition)
    sig = [Fraction(float(s)) for s in np.broadcast_to(np.asarray(sigma, dtype=float), (n,))]
    forms = simulate(mats)
    obs = observed(mats, coalition, view)
    free = [j for j in range(n) if j not in coalition]
    M = [[forms[t][w][j] for j in free] for t, w in obs]
    Sigma = [[sum((a[k] * b[k] * sig[free[k]] ** 2 for k in range(len(free))), Fraction(0)) for b in M] for a in M]
    mpmath.mp.dps = dps
    out = {}
    shifts = {u: [Fraction(sensitivity) * r[pos] for r in M] for pos, u in enumerate(free)}
    moved = [u for u in free if any(shifts[u])]
    solutions = dict(zip(moved, _solve_many(Sigma, [shifts[u] for u in moved]))) if moved else {}
    for u in free:
        s = shifts[u]
        if not any(s):
            out[u] = mpmath.mpf(0)
            continue
        z = solutions[u]
        q = sum((a * b for a, b in zip(s, z)), Fraction(0))
        out[u] = mpmath.sqrt(mpmath.mpf(q.numerator) / q.denominator)
    return out
