"""Bounds kept across eps, second round (issue 10 item 3): the narrowed pass and enumerated anchors.

* :func:`chainamp.mixing.anchors._from_anchors` on a subset of pairs gives bitwise the entries of the whole
  matrix (the narrowed pass derives the same bounds, only for fewer pairs);
* sequences of eps that take the narrowed pass (:func:`anchors._narrow`) and the enumerated anchors of
  large eps (``_enumerate_hockey(..., matrix=True)``) stay sound against the exact all-pairs pass;
* every entry of an enumerated anchor is above the exact divergence of its pair (mpmath at 60 digits), on
  rows built so that many terms nearly cancel (removing the absolute part of the slack, which covers the
  terms' own rounding, makes some entry fall below the exact value).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from chainamp import MarkovOperator
from chainamp.mixing import dobrushin, anchors, pairwise, pruning
from conftest import exact_max_low, random_stochastic, sixty_digits, to_mpf


@pytest.fixture(autouse=True)
def _fresh():
    pairwise._PREP_CACHE.clear()
    yield
    pairwise._PREP_CACHE.clear()


def _exact_low(p, q, eps: float) -> mpmath.mpf:
    """A rigorous lower bound (60 digits) of ``D_{e^eps}(p || q)`` for the stored doubles."""
    with sixty_digits():
        c = mpmath.exp(mpmath.mpf(eps)) * (1 + mpmath.mpf(10) ** -45)
        total = mpmath.mpf(0)
        for a, b in zip(p.tolist(), q.tolist()):
            d = mpmath.mpf(a) - c * mpmath.mpf(b)
            if d > 0:
                total += d
        return total * (1 - mpmath.mpf(10) ** -50)


@pytest.mark.parametrize("seed", [0, 1, 2], ids=["s0", "s1", "s2"])
def test_subset_bounds_equal_the_whole_matrix(seed):
    rng = np.random.default_rng(seed)
    A = random_stochastic(rng, 40, 50)
    prep = pairwise._prepare(MarkovOperator(A), None)
    store = anchors._store(prep)
    for e in (0.0, 0.4, 1.3):  # anchors: the exact all-pairs values rounded up (any valid bounds would do)
        U = pairwise._all_pairs(prep.data, e, prep.n).astype(float)
        np.fill_diagonal(U, -math.inf)
        store[e] = U
    for eps in (0.2, 0.9, 2.0):
        whole = anchors._from_anchors(prep, eps, math.exp(eps)).ravel()
        idx = np.sort(rng.choice(40 * 40, 300, replace=False))
        idx = np.union1d(idx, [0, 41, 5 * 40 + 5])  # diagonal entries too
        part = anchors._from_anchors(prep, eps, math.exp(eps), idx)
        assert np.array_equal(part, whole[idx])


def _spread_rows(rng, n: int, m: int) -> np.ndarray:
    """Rows whose entries span many orders of magnitude: at large eps only a few terms stay active."""
    A = rng.random((n, m)) ** 25 + 1e-300
    return A / A.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("sequence", [[0.0, 0.3, 0.2, 0.25, 0.22, 0.21], [0.0, 16.0, 18.0, 17.0, 16.5, 16.2]],
                         ids=["small-eps", "large-eps"])
def test_sequences_through_the_narrowed_pass_are_sound(sequence, monkeypatch):
    """A bisection-like sequence on one operator (anchors kept, n x n m large enough): each value is never
    below the exact maximum (mpmath) and within 1e-12 of the all-pairs pass, and the narrowed pass or the
    enumeration is used."""
    rng = np.random.default_rng(11)
    A = random_stochastic(rng, 90, 100) if sequence[1] < 1 else _spread_rows(rng, 90, 100)
    K = MarkovOperator(A)
    used = {"narrow": 0, "enumerated": 0}
    real_narrow, real_enum = anchors._narrow, pruning._enumerate_hockey

    def narrow(*a, **k):
        out = real_narrow(*a, **k)
        used["narrow"] += out is not None
        return out

    def enum(*a, **k):
        out = real_enum(*a, **k)
        used["enumerated"] += out is not None and k.get("matrix", False)
        return out

    monkeypatch.setattr(anchors, "_narrow", narrow)
    monkeypatch.setattr(pruning, "_enumerate_hockey", enum)
    for e in sequence:
        got = dobrushin(K, e).gamma
        ref = dobrushin(MarkovOperator(A.copy()), e, all_pairs=True).pairwise.max()
        with sixty_digits():
            truth = to_mpf(exact_max_low(A, e)[0])
            assert mpmath.mpf(got) >= truth, (e, got)
        assert got <= ref + 1e-12, (e, got, ref)
    assert used["narrow"] + used["enumerated"] >= 1


def _near_cancelling_rows(rng, eps: float, n: int = 10, m: int = 64) -> np.ndarray:
    """Row pairs with ``p_y ~ e^eps q_y`` on many outputs (the terms nearly cancel, so each term's
    rounding is large relative to the term)."""
    rows = []
    base = rng.random(m) + 0.5
    for _ in range(n):
        r = base * (1.0 + 1e-13 * rng.standard_normal(m))
        r[rng.integers(0, m, 6)] *= math.exp(-eps) / (1.0 + 1e-9 * rng.random())  # p = e^eps q (1 + ~1e-9)
        rows.append(r / r.sum())
    return np.array(rows)


@pytest.mark.parametrize("eps", [1e-9, 3e-9], ids=["1e-9", "3e-9"])
def test_enumerated_anchor_entries_enclose_the_exact_values(eps):
    """Every entry of ``_enumerate_hockey(matrix=True)`` is above the exact divergence of its pair, and the
    lower bound it returns is below the exact maximum."""
    rng = np.random.default_rng(3)
    A = _near_cancelling_rows(rng, eps)
    prep = pairwise._prepare(MarkovOperator(A), None)
    got = pruning._enumerate_hockey(prep, eps, budget=10**9, matrix=True)
    assert got is not None
    U, low = got
    n = A.shape[0]
    best = mpmath.mpf(0)
    with sixty_digits():
        for i in range(n):
            assert U[i, i] == -math.inf
            for j in range(n):
                if i != j:
                    ex = _exact_low(A[i], A[j], eps)
                    best = max(best, ex)
                    assert mpmath.mpf(float(U[i, j])) >= ex, (i, j, float(U[i, j]), ex)
        assert mpmath.mpf(low) <= best * (1 + mpmath.mpf(10) ** -40)
