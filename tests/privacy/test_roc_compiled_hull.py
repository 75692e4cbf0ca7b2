"""The compiled monotone chain of ``_upper_hull`` gives the exact loop's vertices (or defers to it)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from chainamp.privacy import _roc


def _exact_loop(s: np.ndarray, b: np.ndarray, monkeypatch) -> tuple[np.ndarray, np.ndarray]:
    monkeypatch.setattr(_roc, "_COMPILED_MIN", 10**12)
    out = _roc._upper_hull(s, b)
    monkeypatch.undo()
    return out


def _points(kind: str, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    if kind == "concave":
        s = np.sort(rng.random(n))
        return s, np.sqrt(s)
    if kind == "noisy":
        s = np.sort(rng.random(n))
        return s, np.clip(np.sqrt(s) + rng.normal(0.0, 1e-3, n), 0.0, 1.0)
    if kind == "cloud":
        return rng.random(n), rng.random(n)
    if kind == "collinear":  # every sign is 0: the compiled chain defers to the exact loop
        s = np.linspace(0.0, 1.0, n)
        return s, s.copy()
    if kind == "near-collinear":  # signs at the float filter's edge
        s = np.sort(rng.random(n))
        return s, np.clip(s * (1.0 + rng.normal(0.0, 1e-15, n)), 0.0, 1.0)
    # equal s, subnormal and near-1 values
    s = np.round(rng.random(n), 3)
    b = np.where(rng.random(n) < 0.1, 5e-324, np.minimum(1.0, np.sqrt(s) + 1e-16))
    return s, b


@pytest.mark.parametrize("kind", ["concave", "noisy", "cloud", "collinear", "near-collinear", "ties"])
@pytest.mark.parametrize("seed", range(3), ids=lambda s: f"seed{s}")
def test_compiled_chain_equals_exact_loop(kind, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    s, b = _points(kind, rng, 2500)
    hs, hb = _roc._upper_hull(s, b)
    es, eb = _exact_loop(s, b, monkeypatch)
    assert np.array_equal(hs, es) and np.array_equal(hb, eb)


def test_compiled_chain_every_point_below_in_exact_arithmetic():
    rng = np.random.default_rng(7)
    s, b = _points("noisy", rng, 3000)
    hs, hb = _roc._upper_hull(s, b)
    for a in [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(3), Fraction(40)]:
        top = max(Fraction(float(y)) - a * Fraction(float(x)) for x, y in zip(hs, hb))
        assert all(Fraction(float(y)) - a * Fraction(float(x)) <= top for x, y in zip(s[::7], b[::7]))
