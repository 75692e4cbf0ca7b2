"""Review round 4 (merge h-mixtime): mixing_time's circulant path against exact Fraction powers and the dense and
sparse routes with the path switched off, on dyadic circulants (rows summing exactly to 1, so the exact chain is the
stored one) at eps on the float edges of the exact gammas (the float nearest, one float below and above)."""

from __future__ import annotations

import math
import random
from fractions import Fraction as F

import numpy as np
import pytest
import scipy.sparse as sp

from chainamp import MarkovOperator
from chainamp.errors import InvalidParameterError
from chainamp.mixing import guarantees
from chainamp.mixing.guarantees import mixing_time


def _gammas(c: list, steps: int) -> list:
    """gamma of K^1..K^steps (exact: row 0 of each power, the max over shifts of the total variation)."""
    n, v, out = len(c), list(c), []
    for t in range(steps):
        if t:
            v = [sum(v[k] * c[(y - k) % n] for k in range(n)) for y in range(n)]
        out.append(max(sum(max(v[y] - v[(y - s) % n], 0) for y in range(n)) for s in range(1, n)))
    return out


def _routes(K: np.ndarray, eps: float, steps: int, monkeypatch) -> list:
    out = []
    for circ in (True, False):
        monkeypatch.setattr(guarantees, "_CIRCULANT", circ)
        for sparse in (False, True):
            try:
                out.append(mixing_time(MarkovOperator(sp.csr_matrix(K) if sparse else K), eps, max_steps=steps))
            except InvalidParameterError:
                out.append(None)
    return out


@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
def test_circulant_routes_agree_and_never_undercut_the_exact_time(seed, monkeypatch):
    rng = random.Random(seed)
    n, m = rng.choice([3, 4, 5, 7, 8]), rng.choice([3, 4, 6])
    w = [rng.choice([0, 0, 1, 2, 3]) for _ in range(n)]
    w[0] += 2**m - sum(w) if sum(w) <= 2**m else 0
    if sum(w) != 2**m:
        w = [2**m - (n - 1)] + [1] * (n - 1)
    rng.shuffle(w)
    c = [F(x, 2**m) for x in w]
    steps = 40
    gs = _gammas(c, steps)
    K = np.array([[float(c[(y - x) % n]) for y in range(n)] for x in range(n)])
    for t in rng.sample(range(1, steps), 3):
        mid = float((gs[t] + gs[t - 1]) / 2)  # off the edges: the exact time is certified
        for eps in (float(gs[t]), math.nextafter(float(gs[t]), 0.0), math.nextafter(float(gs[t]), 1.0), mid):
            if not 0.0 <= eps < 1.0:
                continue
            exact = next((k + 1 for k in range(steps) if gs[k] <= eps), None)
            got = _routes(K, eps, steps, monkeypatch)
            assert len(set(got)) == 1, (eps, got)
            # never below the exact time; None (not certified within max_steps) is conservative, and forced when the
            # exact time is past max_steps or eps is below the products' rounding (e.g. eps = 2e-22 at t = 40)
            assert (got[0] is None) if exact is None else (got[0] is None or got[0] >= exact), (eps, exact, got)
            if eps == mid and gs[t - 1] - gs[t] > 1e-9:
                assert got[0] == exact, (eps, exact, got)  # certified at the exact time away from the edges
