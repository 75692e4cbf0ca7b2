"""The guided search of the tight bound (issue 10 item 3): refuting bisection steps by witness pairs.

* ``_pairs_lower`` is a rigorous LOWER bound of a pair's divergence (mpmath at 60 digits), on pairs whose
  float sums round both ways: dropping its margin makes some value exceed the exact one;
* ``CurveSource`` with ``guided=True`` returns a certified bound (its delta' at most the target, evaluated by
  ``make``) within the bisection tolerance of the plain bisection's answer, also when ``quick`` never refutes
  or when the guess is wrong (another pair is worse);
* full reports with the guided search agree with the plain bisection within that tolerance and stay
  certified (``tight`` and ``theorem1.hockey_stick`` for a DP point, a finite M, a list of points), also on
  an operator large enough for the kept pair bounds and the enumeration of active terms.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from chainamp import DP, MarkovOperator, amplify
from chainamp._numerics import BISECTION_ATOL, BISECTION_RTOL
from chainamp.amplification import amplifier, sources
from chainamp.amplification.bounds import Bound
from conftest import random_stochastic, sixty_digits


def _exact_up(p, q, eps: float) -> mpmath.mpf:
    """A rigorous UPPER bound (60 digits) of ``D_{e^eps}(p || q)`` for the stored doubles."""
    c = mpmath.exp(mpmath.mpf(eps)) * (1 - mpmath.mpf(10) ** -45)
    cf = math.exp(eps)  # a float screen skips the terms certainly <= 0 (a below fl(e^eps b) (1 - 1e-9), that
    total = mpmath.mpf(0)  # product normal: its error is far below 1e-9), which the exact sum drops anyway
    for a, b in zip(p.tolist(), q.tolist()):
        if a <= 0.0 or (cf * b >= 1e-290 and a < (cf * b) * (1.0 - 1e-9)):
            continue
        d = mpmath.mpf(a) - c * mpmath.mpf(b)
        if d > 0:
            total += d
    return total * (1 + mpmath.mpf(10) ** -50)


@pytest.mark.parametrize("eps", [0.0, 0.05, 1.0, 9.0], ids=["0", "0.05", "1", "9"])
def test_pairs_lower_is_below_the_exact_value(eps):
    rng = np.random.default_rng(4)
    with sixty_digits():
        for _ in range(150):
            m = int(rng.integers(2, 300))
            p = rng.random(m) ** 3
            q = p * math.exp(-eps) * (1.0 + 1e-3 * rng.standard_normal(m))  # many near-cancelling terms
            q = np.abs(q) / np.abs(q).sum()
            p = p / p.sum()
            low = amplifier._pairs_lower([(p, q, None)], eps)
            assert mpmath.mpf(low) <= _exact_up(p, q, eps), (m, low)


def test_pairs_lower_of_nothing_is_zero():
    p = np.array([0.5, 0.5])
    assert amplifier._pairs_lower([], 1.0) == 0.0
    assert amplifier._pairs_lower([(p, p, None)], math.inf) == 0.0


def _tol(x: float) -> float:
    return max(BISECTION_ATOL, BISECTION_RTOL * x)


def _source(threshold: float, quick, guided: bool):
    """A curve that holds exactly from ``threshold`` on (delta' = 0 there, 1 below)."""
    calls = []

    def make(e: float) -> Bound:
        calls.append(e)
        return Bound(e, 0.0 if e >= threshold else 1.0, "tight")

    return sources.CurveSource("tight", make, upper=lambda d: 2.0, quick=quick, guided=guided), calls


@pytest.mark.parametrize("case", ["never-refutes", "right-pair", "wrong-pair"])
def test_guided_search_is_certified_and_close_to_the_bisection(case):
    """``quick`` refuting below a guess ``g``: the true threshold 0.7 (right), or below it (a wrong
    witness); or never refuting. The result holds by ``make`` and is within tolerance of 0.7."""
    guess = {"never-refutes": None, "right-pair": 0.7, "wrong-pair": 0.3}[case]

    def quick(e, d):
        return None if guess is None or e >= guess else False

    src, calls = _source(0.7, quick, guided=True)
    b = src.bound_at_delta(0.5)
    assert b.delta <= 0.5 and b.epsilon >= 0.7 and b.epsilon - 0.7 <= 2 * _tol(0.7)
    plain, plain_calls = _source(0.7, quick, guided=False)
    p = plain.bound_at_delta(0.5)
    assert abs(b.epsilon - p.epsilon) <= 2 * _tol(0.7)
    if case == "right-pair":  # one certification instead of one per holding step
        assert len(calls) < len(plain_calls)


def _reports(mech, K, monkeypatch):
    monkeypatch.setattr(amplifier, "_GUIDED_MIN_WORK", 0)  # guided even for this small K
    guided = amplify(mech, K, delta=1e-6, progress=False)
    monkeypatch.setattr(sources, "_GUIDED_ROUNDS", 0)
    plain = amplify(mech, K, delta=1e-6, progress=False)
    return guided, plain


@pytest.mark.parametrize("kind", ["dp", "finite", "points"])
def test_reports_agree_with_the_plain_bisection(kind, monkeypatch):
    rng = np.random.default_rng(9)
    K = MarkovOperator(random_stochastic(rng, 40, 30))
    mech = {"dp": DP(1.0, 1e-6), "finite": MarkovOperator(random_stochastic(rng, 6, 40)),
            "points": [DP(1.0, 1e-6), DP(0.5, 1e-3)]}[kind]
    guided, plain = _reports(mech, K, monkeypatch)
    for name in ("tight", "theorem1.hockey_stick"):
        g, p = guided.source_epsilon(name), plain.source_epsilon(name)
        assert abs(g - p) <= 2 * _tol(max(g, p)) + 1e-12, (name, g, p)
    for b in guided.bounds:
        if b.source in ("tight", "theorem1.hockey_stick"):  # certified at that eps': re-evaluated fresh
            src = {s.name: s for s in guided.sources}[b.source]
            if isinstance(src, sources.CurveSource):
                src._cache.clear()
                assert src.bound_at_epsilon(b.epsilon).delta <= b.delta * (1 + 1e-12)


def test_guided_report_on_a_large_operator(monkeypatch):
    """K 150 x 120 (pair scans, kept bounds): the guided report is certified and within tolerance of the
    plain one; every value of the tight source re-evaluated from scratch holds."""
    rng = np.random.default_rng(12)
    A = rng.random((150, 120)) ** 6
    K = MarkovOperator(A / A.sum(axis=1, keepdims=True))
    guided, plain = _reports(DP(1.0, 1e-6), K, monkeypatch)
    g, p = guided.source_epsilon("tight"), plain.source_epsilon("tight")
    assert abs(g - p) <= 2 * _tol(max(g, p)) + 1e-12
    b = {x.source: x for x in guided.bounds}["tight"]
    fresh = amplify(DP(1.0, 1e-6), MarkovOperator(np.array(K.matrix)), delta=1e-6, progress=False)
    src = {s.name: s for s in fresh.sources}["tight"]
    assert src.bound_at_epsilon(b.epsilon).delta <= 1e-6
