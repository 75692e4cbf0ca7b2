"""Exact ranks of the views' matrices by modular arithmetic (private to :mod:`chainamp.network`).

A gossip matrix given in floating point is a matrix of dyadic rationals: ``W = W_int / 2^s`` with
``W_int`` an integer matrix. The row ``e_w^T W_{t-1} ... W_0`` of a view, times ``2^(s_0 + ... + s_{t-1})``,
is an integer vector, and scaling rows does not change the rank. Modulo a prime ``p`` these rows are
computed exactly in int64 (``p < 2^25``, so a product of two residues is below ``2^50`` and a sum of fewer
than ``2^13`` of them fits).

``rank_p(A) <= rank_Q(A)`` for every prime. Conversely, if ``r = rank_Q(A)`` and ``D`` is a non-zero
``r x r`` minor of the integer matrix, every prime with ``rank_p(A) < r`` divides ``D``; so when the product
of the primes used exceeds Hadamard's bound ``H >= |D|`` (the product of the ``r`` largest row norms), one of
them has ``rank_p(A) = rank_Q(A)``, and ``max_p rank_p(A) = rank_Q(A)``: the exact rank, proved.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.sparse as sp

__all__: list[str] = []

_P_LOW, _P_HIGH = 1 << 24, 1 << 25
#: Largest column count of a gossip matrix the int64 products mod p can take without overflow.
MAX_COLUMN_NNZ = 1 << 12


@functools.lru_cache(maxsize=1)
def _prime_table() -> np.ndarray:
    """The primes of [2^25 - 2^21, 2^25), largest first (about 120,000 of them)."""
    lo = _P_HIGH - (1 << 21)
    limit = int(math.isqrt(_P_HIGH)) + 1
    small = np.ones(limit + 1, bool)
    small[:2] = False
    for i in range(2, int(math.isqrt(limit)) + 1):
        if small[i]:
            small[i * i::i] = False
    seg = np.ones(_P_HIGH - lo, bool)
    for q in np.nonzero(small)[0]:
        q = int(q)
        start = (-lo) % q
        seg[start::q] = False
    return (np.nonzero(seg)[0][::-1] + lo).astype(np.int64)


def primes(count: int) -> np.ndarray:
    table = _prime_table()
    return table[:count]


def dyadic_scale(mat: sp.csr_matrix) -> tuple[int, np.ndarray, np.ndarray]:
    """``(s, num, shift)`` with ``data[i] = num[i] * 2^(shift[i] - s)`` exactly (``num < 2^53``, int64)."""
    mant, expo = np.frexp(mat.data)  # data = mant * 2^expo, 0.5 <= mant < 1: mant * 2^53 is an integer
    num = (mant * 2.0 ** 53).astype(np.int64)
    low = expo.astype(np.int64) - 53  # data = num * 2^low
    s = int(-low.min()) if low.size else 0
    return s, num, low + s


def residues(scale: tuple, p: np.ndarray) -> np.ndarray:
    """``W_int mod p`` entry by entry (rows: primes; columns: the stored entries), exact in int64."""
    _, num, shift = scale
    pp = p.reshape(-1, 1)
    return (num[None, :] % pp) * _modpow2(shift, p) % pp


def _modpow2(e: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``2^e mod p`` for every prime (rows) and exponent (columns)."""
    pp = p.reshape(-1, 1)
    result = np.ones((p.size, e.size), dtype=np.int64)
    base = np.full((p.size, 1), 2, dtype=np.int64) % pp
    e = e.copy()
    while np.any(e > 0):
        bit = (e & 1).astype(bool)[None, :]
        result = np.where(bit, (result * base) % pp, result)
        base = (base * base) % pp
        e >>= 1
    return result


def step_mod(block: np.ndarray, csc: sp.csc_matrix, res: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``block[k] @ W_int mod p[k]`` for stacked int64 row blocks ``(P, r, n)``; ``res`` from :func:`residues`
    in the CSC order of ``csc`` (every column non-empty, fewer than ``MAX_COLUMN_NNZ`` entries)."""
    prod = block[:, :, csc.indices] * res[:, None, :]
    out = np.add.reduceat(prod, csc.indptr[:-1], axis=2)
    return out % p.reshape(-1, 1, 1)


def _modinv(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``x^(p-2) mod p`` elementwise (Fermat), by square and multiply in int64 (residues below 2^25)."""
    result = np.ones_like(x)
    base = x % p
    e = p - 2
    while np.any(e > 0):
        bit = (e & 1).astype(bool)
        result = np.where(bit, (result * base) % p, result)
        base = (base * base) % p
        e = e >> 1
    return result


def rank_mod(M: np.ndarray, p: np.ndarray, stop: int) -> np.ndarray:
    """Ranks of the stacked matrices ``M[k] mod p[k]`` (shape ``(P, m, n)``, int64 residues).

    Gaussian elimination, one column at a time for all primes at once; it stops as soon as some rank
    exceeds ``stop`` (the answers are then lower bounds, enough to know that rank > stop).
    """
    M = np.array(M, dtype=np.int64, copy=True)
    P, m, n = M.shape
    pp = p.reshape(P, 1)
    rank = np.zeros(P, dtype=np.int64)
    used = np.zeros((P, m), bool)
    ar = np.arange(P)
    for j in range(n):
        col = M[:, :, j]
        cand = (col != 0) & ~used
        has = cand.any(axis=1)
        if not has.any():
            continue
        piv = cand.argmax(axis=1)
        prow = M[ar, piv, :]
        inv = _modinv(np.where(has, prow[:, j], 1), p)
        prow = (prow * inv[:, None]) % pp
        factor = np.where(has[:, None], col, 0)
        factor[ar, piv] = 0
        M = (M - (factor[:, :, None] * prow[:, None, :]) % pp[:, :, None]) % pp[:, :, None]
        M[ar[has], piv[has], :] = prow[has]
        used[ar[has], piv[has]] = True
        rank += has
        if rank.max() > stop:
            break
    return rank
