"""Exact ranks of the views' matrices by modular arithmetic (private to :mod:`chainamp.network`).

A gossip matrix given in floating point is a matrix of dyadic rationals: ``W = W_int / 2^s`` with
``W_int`` an integer matrix. The row ``e_w^T W_{t-1} ... W_0`` of a view, times ``2^(s_0 + ... + s_{t-1})``,
is an integer vector, and scaling rows does not change the rank. Modulo a prime ``p`` these rows are
computed exactly in int64 (primes of up to 31 bits, fewer when the matrices have long columns: a sum of
column-count products of two residues must stay below ``2^63``; :func:`prime_bits`).

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

#: Largest column count of a gossip matrix the int64 products mod p can take without overflow.
MAX_COLUMN_NNZ = 1 << 12


def prime_bits(column_count: int) -> int:
    """Bits of the primes for matrices with at most ``column_count`` entries per column: a sum of that many
    products of two residues, and ``a - b c`` in the elimination, must stay below 2^63."""
    return int(min(31, (62 - math.ceil(math.log2(column_count + 1))) // 2))


@functools.lru_cache(maxsize=8)
def _prime_table(bits: int) -> np.ndarray:
    """The primes of [2^bits - 2^21, 2^bits), largest first (tens of thousands of them)."""
    high = 1 << bits
    lo = high - (1 << 21)
    limit = int(math.isqrt(high)) + 1
    small = np.ones(limit + 1, bool)
    small[:2] = False
    for i in range(2, int(math.isqrt(limit)) + 1):
        if small[i]:
            small[i * i::i] = False
    seg = np.ones(high - lo, bool)
    for q in np.nonzero(small)[0]:
        q = int(q)
        seg[(-lo) % q::q] = False
    return (np.nonzero(seg)[0][::-1] + lo).astype(np.int64)


def primes(count: int, bits: int = 25) -> np.ndarray:
    return _prime_table(bits)[:count]


def primes_for(log2_bound: float, bits: int) -> np.ndarray:
    """The fewest primes of :func:`primes` whose product exceeds ``2^log2_bound``."""
    table = _prime_table(bits)
    logs = np.cumsum(np.log2(table.astype(float)) * (1.0 - 1e-12))
    count = int(np.searchsorted(logs, log2_bound, side="right")) + 1
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
        prow = M[ar, piv, j:]
        inv = _modinv(np.where(has, prow[:, 0], 1), p)
        prow = (prow * inv[:, None]) % pp
        factor = np.where(has[:, None] & ~used, col, 0)
        factor[ar, piv] = 0
        # only the rows not yet used and the columns from j on matter for the rank; one reduction mod p
        # (|a - b c| < p^2 <= 2^62)
        M[:, :, j:] = (M[:, :, j:] - factor[:, :, None] * prow[:, None, :]) % pp[:, :, None]
        used[ar[has], piv[has]] = True
        rank += has
        if rank.max() > stop:
            break
    return rank
