"""Exact worst case of n users' shuffled reports, by brute force in Fraction arithmetic (small n and k)."""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

import mpmath


def _convolve(dist: dict, row: list) -> dict:
    out: dict = {}
    for h, pr in dist.items():
        for y, r in enumerate(row):
            if r:
                hh = list(h)
                hh[y] += 1
                hh = tuple(hh)
                out[hh] = out.get(hh, 0) + pr * r
    return out


def _mp(x) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def shuffled_worst_delta(R: list[list[Fraction]], n: int, eps: float, pairs=None) -> mpmath.mpf:
    """``max over neighbouring (x0, x1) and every dataset of the n - 1 others of H_{e^eps}`` of the
    histograms, exact (Fractions; e^eps in 50-digit mpmath)."""
    k = len(R)
    mpmath.mp.dps = 50
    e = mpmath.exp(mpmath.mpf(eps))
    pairs = [(a, b) for a in range(k) for b in range(k) if a != b] if pairs is None else pairs
    best = mpmath.mpf(0)
    for P, Q in _histogram_pairs(tuple(tuple(row) for row in R), n, tuple(pairs)):
        tot = mpmath.mpf(0)
        for p, q in zip(P, Q):
            v = p - e * q
            if v > 0:
                tot += v
        best = max(best, tot)
    return best


@functools.lru_cache(maxsize=8)
def _histogram_pairs(R: tuple, n: int, pairs: tuple) -> tuple:
    """For every dataset of the n - 1 others and every pair (a, b): the exact histogram laws of (x0 = a, others) and
    (x0 = b, others) over the union of their supports, as 50-digit mpf. They do not depend on eps: the calls of a
    test at several eps enumerate them once."""
    k, m = len(R), len(R[0])
    out = []
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        base = {tuple([0] * m): Fraction(1)}
        for x in others:
            base = _convolve(base, R[x])
        for a, b in pairs:
            P, Q = _convolve(base, R[a]), _convolve(base, R[b])
            keys = set(P) | set(Q)
            out.append(([_mp(P.get(h, 0)) for h in keys], [_mp(Q.get(h, 0)) for h in keys]))
    return tuple(out)


def random_randomizer(rng, k: int, m: int, floor: int = 1) -> list[list[Fraction]]:
    """A random k x m row-stochastic matrix of Fractions with entries >= floor / (sum) > 0."""
    rows = []
    for _ in range(k):
        w = [int(rng.integers(floor, 10)) for _ in range(m)]
        s = sum(w)
        rows.append([Fraction(v, s) for v in w])
    return rows


def krr(k: int, num: int, den: int) -> list[list[Fraction]]:
    """k-RR with keep ratio num / den: p / q = num / den."""
    tot = num + (k - 1) * den
    return [[Fraction(num if x == y else den, tot) for y in range(k)] for x in range(k)]
