"""Instances shared by the Dobrushin design tests: an exact total-variation coefficient, seeded random losses and
priors, and the Fano-plane loss (rows uniform on the lines have pairwise TV 2/3 and loss 0: the Doeblin closed form
is not optimal there)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def exact_tv(K: np.ndarray) -> Fraction:
    rows = [[Fraction(float(v)) for v in row] for row in K]
    return max(sum((max(a - b, 0) for a, b in zip(r, s)), Fraction(0)) for r in rows for s in rows)


def instance(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.random((n, n)), rng.dirichlet(np.ones(n)), float(rng.uniform(0.1, 0.9))


def fano_loss() -> np.ndarray:
    lines = [(0, 1, 2), (0, 3, 4), (0, 5, 6), (1, 3, 5), (1, 4, 6), (2, 3, 6), (2, 4, 5)]
    loss = np.ones((7, 7))
    for x, line in enumerate(lines):
        loss[x, list(line)] = 0.0
    return loss
