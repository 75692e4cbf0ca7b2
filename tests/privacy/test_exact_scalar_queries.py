"""Scalar queries of an exact profile answer from the stored per-pair data, pruned by the grid summaries:
the same values and witnesses as one array query, at a fraction of the cost."""

from __future__ import annotations

import numpy as np
import pytest

from chainamp.privacy import privacy_profile
from chainamp.privacy import exact as exact_mod


def _mechanism(seed: int, n: int, m: int, alpha: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(m, alpha), size=n)
    if seed % 2:  # some zeros: infinite losses
        P[rng.random(P.shape) < 0.2] = 0.0
        P[:, 0] += 1e-3
        P /= P.sum(axis=1, keepdims=True)
    return P


@pytest.mark.parametrize("seed,n,m,alpha", [(0, 12, 60, 0.5), (1, 9, 80, 0.3), (2, 20, 30, 2.0)],
                         ids=["dirichlet", "with-zeros", "flat"])
def test_scalar_queries_equal_array_query(seed, n, m, alpha):
    P = _mechanism(seed, n, m, alpha)
    eps = np.concatenate([np.linspace(0.0, 6.0, 41), [np.inf]])
    arr = privacy_profile(P, progress=False).delta(eps)
    prof = privacy_profile(P, progress=False)
    prof.delta(0.3)  # the first query streams every pair and keeps their data
    assert "classes" in prof._state
    scalar = np.array([prof.delta(float(e)) for e in eps])
    assert np.array_equal(scalar, arr)
    # the pruned path was taken (its grid summary exists) and witnesses agree with a fresh profile's
    assert "class_grid" in prof._state
    fresh = privacy_profile(P, progress=False)
    fresh.delta(eps)
    for e in (0.0, 0.7, 2.5):
        assert prof.witness(e) == fresh.witness(e)


def test_pruning_skips_classes(monkeypatch):
    """A query near the top of the profile evaluates a few classes, not all of them."""
    P = _mechanism(0, 30, 50, 0.5)
    prof = privacy_profile(P, progress=False)
    prof.delta(0.1)
    seen = []
    real = exact_mod.st._values

    def counting(data, eps, llr_err, m):
        seen.append(data[0].shape[0])
        return real(data, eps, llr_err, m)

    monkeypatch.setattr(exact_mod.st, "_values", counting)
    prof.delta(3.0)
    n_classes = prof._state["classes"][0].size
    assert sum(seen[1:]) < n_classes  # (the first call builds the grid summary of every class)
