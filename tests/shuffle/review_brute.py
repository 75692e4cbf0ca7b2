"""Exact worst case of n users' shuffled reports at many eps at once (review helpers; Fractions, mpmath)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath


def _convolve(dist: dict, row: list) -> dict:
    out: dict = {}
    for h, pr in dist.items():
        for y, r in enumerate(row):
            if r:
                hh = h[:y] + (h[y] + 1,) + h[y + 1:]
                out[hh] = out.get(hh, 0) + pr * r
    return out


def _mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def worst_deltas(R: list[list[Fraction]], n: int, epss: list[float], pairs=None) -> list[mpmath.mpf]:
    """``max over neighbouring (x0, x1) and every dataset of the n - 1 others`` of the histograms'
    hockey-stick divergence at each eps (exact histograms; 40-digit mpmath for e^eps and the sums)."""
    mpmath.mp.dps = 40
    k, m = len(R), len(R[0])
    es = [mpmath.exp(mpmath.mpf(e)) for e in epss]
    pairs = [(a, b) for a in range(k) for b in range(k) if a != b] if pairs is None else pairs
    best = [mpmath.mpf(0)] * len(epss)
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        base = {tuple([0] * m): Fraction(1)}
        for x in others:
            base = _convolve(base, R[x])
        hists: dict = {}  # x0's histogram and its entries in mpmath, made once per value (not once per pair)
        for a, b in pairs:
            for x in (a, b):
                if x not in hists:
                    H = _convolve(base, R[x])
                    hists[x] = (H, {h: _mp(v) for h, v in H.items()})
            (P, Pmp), (Q, Qmp) = hists[a], hists[b]
            keys = list(set(P) | set(Q))
            Pm = [Pmp[h] if h in Pmp else _mp(Fraction(0)) for h in keys]
            Qm = [Qmp[h] if h in Qmp else _mp(Fraction(0)) for h in keys]
            for i, e in enumerate(es):  # p - e q > 0 exactly when p > e q (e q rounded once, the difference's sign kept)
                t = mpmath.fsum(d for d in (p - e * q for p, q in zip(Pm, Qm)) if d > 0)
                best[i] = max(best[i], t)
    return best


def eps0_of(R: list[list[Fraction]]) -> Fraction:
    """The largest ratio R(a, y) / R(b, y) (an output no value reaches is skipped)."""
    k, m = len(R), len(R[0])
    return max(R[a][y] / R[b][y] for a in range(k) for b in range(k) for y in range(m) if R[b][y] > 0)


def random_R(rng, k: int, m: int, kind: str = "uniform") -> list[list[Fraction]]:
    """A random k x m randomizer of Fractions: ``uniform`` (weights 1..19), ``wide`` (1..999), ``peaked``
    (one heavy output per row: near-deterministic), ``zeros`` (weights 0..5: zeros anywhere)."""
    rows = []
    for _ in range(k):
        if kind == "zeros":
            w = [int(rng.integers(0, 6)) for _ in range(m)]
            if sum(w) == 0:
                w[0] = 1
        elif kind == "peaked":
            w = [int(rng.integers(1, 4)) for _ in range(m)]
            w[int(rng.integers(0, m))] += int(rng.integers(20, 400))
        else:
            w = [int(rng.integers(1, 1000 if kind == "wide" else 20)) for _ in range(m)]
        rows.append([Fraction(v, sum(w)) for v in w])
    return rows
