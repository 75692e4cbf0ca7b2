"""The compiled paths of the binary exact method at scale (issue 19, "Scale"): the one-pass ROC points and the
linear-time hull merge, checked in exact rational arithmetic against the bounds they must meet, and the queue of
intervals that keeps its arrays instead of recomputing them."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from chainamp._numerics import UNIT_ROUNDOFF, compiled
from chainamp.shuffle import _pairs, binary_rr_shuffle, exact

U = Fraction(UNIT_ROUNDOFF)


def _monotone_pair(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A pair whose exact ratio P/Q is non-increasing (a sorted random likelihood ratio)."""
    Q = rng.random(n) + 1e-3
    ratio = np.sort(rng.random(n) * 5)[::-1]
    P = Q * ratio
    return P / P.sum(), Q / Q.sum()


def _check_points(P, Q, rel, tau, s, b) -> tuple[bool, bool]:
    """Whether every point meets ``s <= (1 - rel) Q~(S)`` and ``b >= (1 + rel) P~(S) + tau`` (roc_upper's derivation,
    with the computed arrays' exact prefix sums, both orders) in Fractions."""
    n = P.size
    s_ok = b_ok = True
    fr, ft = Fraction(rel), Fraction(tau)
    for order, (A, B) in enumerate(((P, Q), (Q[::-1], P[::-1]))):
        cp = cq = Fraction(0)
        base = order * (n + 1)
        for k in range(n + 1):
            if k:
                cp += Fraction(float(A[k - 1]))
                cq += Fraction(float(B[k - 1]))
            s_ok &= Fraction(float(s[base + k])) <= (1 - fr) * cq
            b_ok &= Fraction(float(b[base + k])) >= min((1 + fr) * cp + ft, Fraction(1)) or (k == 0 and tau == 0)
    return s_ok, b_ok


@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
def test_roc_upper_both_is_outward_in_fractions(seed):
    rng = np.random.default_rng(seed)
    P, Q = _monotone_pair(rng, int(rng.integers(1, 40)))
    rel = [0.0, 1e-9, float(rng.random()) * 1e-6][seed % 3]
    tau = [0.0, 1e-12, float(rng.random()) * 1e-3][(seed // 3) % 3]
    s, b = _pairs.roc_upper_both(P, Q, rel, tau)
    assert s.size == 2 * P.size + 2
    assert _check_points(P, Q, rel, tau, s, b) == (True, True)
    # never less far out than the numpy reference (its nextafter after each product)
    s0, b0 = _pairs.both_orders(_pairs.roc_upper, P, Q, rel, tau, monotone=True)
    assert np.all(s <= s0) and np.all(b >= b0)


def test_roc_upper_both_margins_are_needed():
    """With the required factors alone (no ``(1 -+ 4u)(1 -+ 8u)`` margins, no (n + 4) u: one-point arrays, where the
    prefix sums are exact), some products round the wrong way: the margins are what keeps the points outward."""
    kernel = compiled(_pairs._roc_both_source)
    rng = np.random.default_rng(7)
    bad_s = bad_b = 0
    for _ in range(400):
        P, Q = np.array([float(rng.random())]), np.array([float(rng.random())])
        rel = float(rng.random()) * 1e-3
        s, b = kernel(P, Q, 1.0 - rel, 1.0 + rel, 0.0, 0.0)
        ok_s, ok_b = _check_points(P, Q, rel, 0.0, s, b)
        bad_s += not ok_s
        bad_b += not ok_b
        s, b = _pairs.roc_upper_both(P, Q, rel, 0.0)
        assert _check_points(P, Q, rel, 0.0, s, b) == (True, True)
    assert bad_s > 0 and bad_b > 0


def test_roc_upper_both_subnormal_ends():
    """Subnormal masses: s is set to 0 (safe), b stays above the exact prefix sums."""
    P = np.array([5e-324, 1e-310, 0.5, 0.5 - 1e-310])
    Q = np.array([1e-320, 2e-310, 0.25, 0.75])
    s, b = _pairs.roc_upper_both(P, Q, 0.0, 0.0)
    assert _check_points(P, Q, 0.0, 0.0, s, b) == (True, True)


def _runs(rng, n1: int, n2: int, ties: bool):
    """Two runs of points, each sorted by s with b non-decreasing (as ROC prefix sums are), with repeated s and b."""
    out = []
    for n in (n1, n2):
        s = np.sort(rng.random(n))
        b = np.sort(rng.random(n))
        if ties and n > 3:
            s[1::3] = s[0:-1:3][: s[1::3].size]
            b[2::4] = b[1:-1:4][: b[2::4].size]
        out.append((np.concatenate(([0.0], s)), np.concatenate(([float(rng.random()) * 0.1], b))))
    return np.concatenate((out[0][0], out[1][0])), np.concatenate((out[0][1], out[1][1])), n1 + 1


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_merge_keeps_the_same_points_as_add(seed, ties):
    rng = np.random.default_rng(seed)
    a, c = _pairs.HullAccumulator(), _pairs.HullAccumulator()
    for _ in range(5):
        s, b, n1 = _runs(rng, int(rng.integers(0, 60)), int(rng.integers(0, 60)), ties)
        a.add(s, b)
        c.add_runs(s, b, n1)
        assert np.array_equal(a.s, c.s) and np.array_equal(a.b, c.b)


def test_merge_on_real_components_matches_add():
    N, p = 10**6 - 1, math.exp(1.0) / (1 + math.exp(1.0))
    a, c = _pairs.HullAccumulator(), _pairs.HullAccumulator()
    for m1, m2 in [(0, 0), (5, N // 100), (1, 1), (N // 3, N // 2)]:
        P, Q, rel, dropped, _ = exact._component(N, m1, m2, p, 1 - p, 1e-40)
        s, b = _pairs.roc_upper_both(P, Q, rel, dropped)
        a.add(s, b)
        c.add_runs(s, b, P.size + 1)
        assert np.array_equal(a.s, c.s) and np.array_equal(a.b, c.b)


def test_kept_queue_gives_the_certificate_of_recomputing(monkeypatch):
    """A budget that leaves intervals queued: keeping their arrays or recomputing them gives the same pair."""
    p = math.exp(2.0) / (1 + math.exp(2.0))
    kw = dict(target_delta=1e-6, budget=2e5, progress=False)
    kept = binary_rr_shuffle(10**6, p, **kw)
    monkeypatch.setattr(exact, "KEEP_QUEUED", 0)
    again = binary_rr_shuffle(10**6, p, **kw)
    assert kept.intervals == again.intervals and len(kept.intervals) > 0
    assert np.array_equal(kept.upper.p, again.upper.p) and np.array_equal(kept.upper.q, again.upper.q)
