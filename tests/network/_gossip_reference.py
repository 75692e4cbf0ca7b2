"""Independent exact references for tests/network: the protocol simulated in rational arithmetic.

Nothing here calls chainamp.network's row selection or projection: the view is rebuilt by running the
protocol on the unit noise vectors with Fractions, and ||Pi e_u||^2 is computed exactly from a rational
basis of the row space (normal equations are fine in exact arithmetic), then mu at 50 digits in mpmath.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np


def exact_matrix(W) -> list[list[Fraction]]:
    W = np.asarray(W, dtype=float)
    return [[Fraction(float(x)) for x in row] for row in W]


def view_map(mats: list, v_set: set, view: str) -> list[list[Fraction]]:
    """Rows (over all n coordinates of y_0) of what the coalition sees, by simulating y_{t+1} = W_t y_t."""
    n = len(mats[0])
    T = len(mats)
    # state[t][i] = row of y_t[i] as a linear form of y_0
    cur = [[Fraction(int(i == j)) for j in range(n)] for i in range(n)]
    states = [cur]
    for t in range(T):
        W = mats[t]
        cur = [[sum((W[i][k] * cur[k][j] for k in range(n) if W[i][k]), Fraction(0)) for j in range(n)]
               for i in range(n)]
        states.append(cur)
    rows = []
    if view == "received":
        for t in range(T):
            for c in sorted(v_set):
                for w in range(n):
                    if w not in v_set and mats[t][c][w] != 0:
                        rows.append(states[t][w])
    else:
        nb = {w for c in v_set for W in mats for w in range(n)
              if w not in v_set and (W[c][w] != 0 or W[w][c] != 0)}
        for t in range(T + 1):
            for w in sorted(nb):
                rows.append(states[t][w])
    return rows


def _row_basis(rows: list[list[Fraction]]) -> list[list[Fraction]]:
    basis: list[list[Fraction]] = []
    pivots: list[int] = []
    for r in rows:
        r = list(r)
        for b, p in zip(basis, pivots):
            if r[p]:
                f = r[p] / b[p]
                r = [x - f * y for x, y in zip(r, b)]
        nz = next((j for j, x in enumerate(r) if x), None)
        if nz is not None:
            for i, (b, p) in enumerate(zip(basis, pivots)):
                if b[nz]:
                    f = b[nz] / r[nz]
                    basis[i] = [x - f * y for x, y in zip(b, r)]
            basis.append(r)
            pivots.append(nz)
    return basis


def _solve(G: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    n = len(G)
    M = [list(G[i]) + [b[i]] for i in range(n)]
    for c in range(n):
        p = next(i for i in range(c, n) if M[i][c])
        M[c], M[p] = M[p], M[c]
        for i in range(n):
            if i != c and M[i][c]:
                f = M[i][c] / M[c][c]
                M[i] = [x - f * y for x, y in zip(M[i], M[c])]
    return [M[i][n] / M[i][i] for i in range(n)]


def exact_mu(mats_float: list, v_set: set, sigma, view: str, sensitivity: float = 1.0) -> list:
    """mu_{u -> coalition} for every u (None inside the coalition), as mpmath numbers at 50 digits."""
    mats = [exact_matrix(W) for W in mats_float]
    n = len(mats[0])
    sig = [Fraction(float(s)) for s in np.broadcast_to(np.asarray(sigma, float), (n,))]
    rows = view_map(mats, v_set, view)
    keep = [j for j in range(n) if j not in v_set]
    B = [[r[j] * sig[j] for j in keep] for r in rows]
    R = _row_basis(B)
    mpmath.mp.dps = 50
    out: list = [None] * n
    if not R:
        for j in keep:
            out[j] = mpmath.mpf(0)
        return out
    G = [[sum(a * b for a, b in zip(r1, r2)) for r2 in R] for r1 in R]
    for pos, j in enumerate(keep):
        bvec = [r[pos] for r in R]
        if not any(bvec):
            out[j] = mpmath.mpf(0)
            continue
        c = _solve(G, bvec)
        val = sum(x * y for x, y in zip(bvec, c))  # e_u^T B^T (B B^T)^+ B e_u restricted to a basis
        frac = mpmath.mpf(val.numerator) / mpmath.mpf(val.denominator)
        out[j] = mpmath.mpf(sensitivity) / mpmath.mpf(float(sig[j])) * mpmath.sqrt(frac)
    return out
