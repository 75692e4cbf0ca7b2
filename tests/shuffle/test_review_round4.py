"""Review round 4 (issue 19's merge h-binrr): the joint Chernoff bound on extreme inputs, and the exact method's new
paths (windowed circular FFT, halves splitting, queued laws kept) forced at small n against exact worst cases."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp.shuffle import _binomial, exact


def _exact_log_tail(parts, t, upper):
    mpmath.mp.dps = 60
    dist = [mpmath.mpf(1)]
    for n, p in parts:
        P = mpmath.mpf(p)
        b = [mpmath.binomial(n, k) * P**k * (1 - P)**(n - k) for k in range(n + 1)]
        out = [mpmath.mpf(0)] * (len(dist) + n)
        for i, x in enumerate(dist):
            for j, y in enumerate(b):
                out[i + j] += x * y
        dist = out
    return mpmath.log(mpmath.fsum(dist[t:]) if upper else mpmath.fsum(dist[:t + 1]))


@pytest.mark.parametrize("parts, t, upper", [
    ([(30, 1.3155393577742609e-15)], 5, True),           # tiny variance: the normal start exp(1e14) overflowed
    ([(32, 4.839822859336149e-12), (50, 0.5)], 65, True),  # Newton's step past exp's range
    ([(42, 0.00020862397967154797)], 16, True),
    ([(25, 1.0), (1, 0.9999999170810303)], 7, False),     # a point mass at 1: x = 1 - p + p e^l = 0 divided by
], ids=["tiny-var", "newton-jump", "p2e-4", "lower-point-mass"])
def test_sum_chernoff_is_finite_and_above_exact_on_extreme_parts(parts, t, upper):
    """Any Chernoff parameter of the right sign gives a valid bound: extreme ones must be clamped into exp's range,
    not raise OverflowError / ValueError."""
    v = _binomial.sum_chernoff_log_tail(parts, t, upper)
    assert v <= 0.0
    assert _exact_log_tail(parts, t, upper) <= v


def _exact_worst(n: int, p: float, epss: list[float]) -> list:
    """The exact worst case over the others' datasets m of binary RR shuffled among n users (50 digits; the float p
    and q = 1 - p are exact in mpmath)."""
    mpmath.mp.dps = 50
    P = mpmath.mpf(p)
    Q = 1 - P
    N = n - 1
    es = [mpmath.exp(mpmath.mpf(e)) for e in epss]
    best = [mpmath.mpf(0)] * len(epss)
    for m in range(N // 2 + 1):
        A = [mpmath.binomial(m, j) * P**j * Q**(m - j) for j in range(m + 1)]
        B = [mpmath.binomial(N - m, j) * Q**j * P**(N - m - j) for j in range(N - m + 1)]
        Z = [mpmath.mpf(0)] * (N + 1)
        for i, x in enumerate(A):
            for j, y in enumerate(B):
                Z[i + j] += x * y
        z0, z1 = Z + [mpmath.mpf(0)], [mpmath.mpf(0)] + Z
        P0 = [P * a + Q * b for a, b in zip(z0, z1)]
        P1 = [Q * a + P * b for a, b in zip(z0, z1)]
        for i, e in enumerate(es):
            for X, Y in ((P0, P1), (P1, P0)):
                best[i] = max(best[i], mpmath.fsum(x - e * y for x, y in zip(X, Y) if x > e * y))
    return best


class _HeapCount:
    """``heapq`` for the exact module, counting the queued intervals that keep their law and those popped."""

    def __init__(self):
        import heapq

        self.hq, self.kept, self.popped = heapq, 0, 0

    def heappush(self, h, item):
        self.kept += item[3] is not None
        self.hq.heappush(h, item)

    def heappop(self, h):
        item = self.hq.heappop(h)
        self.popped += item[3] is not None
        return item


def _forced(monkeypatch, conv_tail):
    """The windowed circular FFT, halves splitting and every interval through FFTs at small n; returns counters."""
    seen = {"win": 0, "laws": [], "heap": _HeapCount()}
    window = exact._fft_conv3_window
    law = exact._component_law

    def win(*args):
        r = window(*args, tail=conv_tail)
        seen["win"] += r is not None
        return r

    def component_law(N, m1, m2, *rest):
        seen["laws"].append((m1, m2))
        return law(N, m1, m2, *rest)

    monkeypatch.setattr(exact, "_fft_conv3_window", win)
    monkeypatch.setattr(exact, "_component_law", component_law)
    monkeypatch.setattr(exact, "FFT_MIN_WORK", 0.0)
    monkeypatch.setattr(exact, "SPLIT_HALVES", 2)
    monkeypatch.setattr(exact, "heapq", seen["heap"])
    return seen


#: (n, eps0, window tails, coin tail, circular window tail, budget, target delta, what must run): large tails make a
#: mass accounted on the wrong side show at the 1e-3 scale; a small budget leaves queued intervals unsplit (kept laws)
CASES = [
    (40, 0.1, 1e-4, 1e-3, 0.1, 1e9, 1e-3, "win halves"),
    (40, 0.1, 1e-4, 1e-3, 0.3, 800, 1e-3, "win kept"),
    (40, 1.0, 1e-4, 1e-3, 0.1, 800, 1e-3, "win kept"),
    (40, 0.5, 1e-2, 1e-1, 0.1, 1e9, 1e-3, "halves"),
    (33, 2.0, 1e-8, 1e-6, 0.1, 1500, 0.1, ""),
]


@pytest.mark.parametrize("n, eps0, tail, coin, conv, budget, target, runs", CASES,
                         ids=[f"n{c[0]}-e{c[1]}-{c[7].replace(' ', '-') or 'plain'}" for c in CASES])
def test_forced_new_paths_are_above_the_exact_worst_case(monkeypatch, n, eps0, tail, coin, conv, budget, target,
                                                         runs):
    """The new paths (circular windowed FFT, halves, queued laws kept) forced at small n: the certified curve is
    above the exact worst case over every dataset at each eps, and the lower (exact datasets) below it."""
    seen = _forced(monkeypatch, conv)
    p = math.exp(eps0) / (1 + math.exp(eps0))
    res = exact.binary_rr_shuffle(n, p, tail=tail, coin_tail=coin, target_delta=target, budget=budget,
                                  max_exact_all=1, min_exact=1, growth=3.0, progress=False)
    epss = [0.0, eps0 / 4, eps0 / 2, 0.9 * eps0, eps0]
    truth = _exact_worst(n, p, epss)
    up, low = res.upper.delta(np.array(epss)), res.lower.delta(np.array(epss))
    for e, x, u, lw in zip(epss, truth, up, low):
        assert mpmath.mpf(float(u)) >= x, (e, float(x), u)
        assert mpmath.mpf(float(lw)) <= x * (1 + mpmath.mpf(10) ** -30), (e, float(x), lw)
    laws = set(seen["laws"])
    assert any(a < b for a, b in laws)  # interval components were computed (split to single datasets when affordable)
    if "win" in runs:
        assert seen["win"] > 0
    if "halves" in runs:
        assert any((a, a + -(-(b - a + 1) // 2) - 1) in laws for a, b in laws if b - a + 1 > 8)
    if "kept" in runs:  # some queued interval's law was reused unsplit
        assert seen["heap"].kept > seen["heap"].popped


def _exact_revealed_curve(N, m1, m2, c, p, epss):
    """Exact hockey-stick curve (both orders) of the revealed pair of the datasets m1..m2: user 1 plus
    ``Bin(m1, p) + Bin(N - m2, q) + Bin(c, 1/2)`` (mpmath, 50 digits)."""
    mpmath.mp.dps = 50
    P, half = mpmath.mpf(p), mpmath.mpf(1) / 2
    Q = 1 - P
    dist = [mpmath.mpf(1)]
    for k, r in ((m1, P), (N - m2, Q), (c, half)):
        b = [mpmath.binomial(k, j) * r**j * (1 - r)**(k - j) for j in range(k + 1)]
        out = [mpmath.mpf(0)] * (len(dist) + k)
        for i, x in enumerate(dist):
            for j, y in enumerate(b):
                out[i + j] += x * y
        dist = out
    z0, z1 = dist + [mpmath.mpf(0)], [mpmath.mpf(0)] + dist
    P0 = [P * a + Q * b for a, b in zip(z0, z1)]
    P1 = [Q * a + P * b for a, b in zip(z0, z1)]
    res = []
    for e in epss:
        a = mpmath.exp(mpmath.mpf(e))
        res.append(max(mpmath.fsum(x - a * y for x, y in zip(X, Y) if x > a * y) for X, Y in ((P0, P1), (P1, P0))))
    return res


@pytest.mark.parametrize("N, m1, m2, eps0, conv", [(200, 10, 150, 0.5, 0.2), (300, 20, 200, 0.5, 0.3),
                                                  (250, 30, 200, 0.3, 0.2)], ids=["N200", "N300", "N250"])
def test_windowed_interval_component_is_above_its_revealed_pair(monkeypatch, N, m1, m2, eps0, conv):
    """An interval component through the circular window (its window tail raised to ``conv`` so that the mass left
    out is large) against the exact curve of the revealed pair it stands for (the coin count credited, tau not
    needed): the wrapped terms and the mass outside the window must be carried into eta and the dropped mass (the
    test fails when either is left out)."""
    from chainamp.privacy import DominatingPair
    from chainamp.shuffle import _pairs

    calls = []
    window = exact._fft_conv3_window

    def win(*args):
        r = window(*args, tail=conv)
        calls.append(r)
        return r

    monkeypatch.setattr(exact, "_fft_conv3_window", win)
    monkeypatch.setattr(exact, "FFT_MIN_WORK", 0.0)
    p = math.exp(eps0) / (1 + math.exp(eps0))
    q = 1 - p
    z, rel, dropped, eta = exact._component_law(N, m1, m2, p, q, conv, 1e-20)  # binomial windows short too
    assert calls and calls[0] is not None and calls[0][2] > 1e-4  # the window ran and left out visible mass
    c, tau = exact._coin_floor(m2 - m1, 2 * q, 1e-20)
    windows = sum(_binomial.binomial_window(k, r, conv)[2] for k, r in ((m1, p), (N - m2, q), (c, 0.5)))
    assert dropped >= (windows + tau + calls[0][2]) * (1 - 1e-12)  # the mass the window leaves out is dropped
    assert eta >= calls[0][1] >= calls[0][2]  # and its wrapped terms are in the entries' error
    epss = [0.0, eps0 / 8, eps0 / 4, eps0 / 2, eps0]
    cert = DominatingPair.from_roc(*_pairs.roc_upper_widened(z, p, q, eta, rel, dropped)).delta(np.array(epss))
    for e, x, u in zip(epss, _exact_revealed_curve(N, m1, m2, c, p, epss), cert):
        assert mpmath.mpf(float(u)) >= x, (e, float(x), u)


@pytest.mark.parametrize("n, eps0, claimed", [(5, 0.3, 1e-6), (5, 0.3, 1e-8), (30, 1.0, 1e-4)],
                         ids=["n5-1e-6", "n5-1e-8", "n30-1e-4"])
def test_an_overclaimed_convolution_error_never_lowers_the_certificate(monkeypatch, n, eps0, claimed):
    """Every convolution claims an absolute error ``claimed`` larger than its true one (a valid, loose bound): the
    certificate must stay above the exact worst case in BOTH orders. The second order ``H(Q || P)`` reads Q as the
    detection side and P as the false alarm, so it needs Q raised and P lowered; widening P up and Q down once for
    both orders (as ``user_pair_widened`` did) put that order's curve about ``claimed * len`` below the exact one."""
    conv_any = exact._conv_any

    def loose(a, b):
        c, r, eta = conv_any(a, b)
        return c, r, eta + claimed

    monkeypatch.setattr(exact, "_conv_any", loose)
    p = math.exp(eps0) / (1 + math.exp(eps0))
    res = exact.binary_rr_shuffle(n, p, progress=False)
    assert res.exact_all
    epss = list(np.linspace(0.0, eps0, 9))  # n = 5, eps0 = 0.3, 1e-6: 6.1e-6 below the exact worst case before the fix
    for e, x, u in zip(epss, _exact_worst(n, p, epss), res.upper.delta(np.array(epss))):
        assert mpmath.mpf(float(u)) >= x, (e, float(x), u)


def test_krr_chains_widen_each_order_its_own_way(monkeypatch):
    """k-RR's two-output chains (:func:`chainamp.shuffle.krr._bin_chains`) with a convolution error claimed: the first
    order's arrays bound ``(P, Q)`` from the safe side (P up, Q down) and the second order's ``(Q, P)`` from ITS safe
    side (Q up, P down); before the fix the second order read Q lowered and P raised."""
    from chainamp.shuffle import krr

    conv_any = krr._conv_any
    monkeypatch.setattr(krr, "_conv_any", lambda a, b: (lambda r: (r[0], r[1], r[2] + 1e-6))(conv_any(a, b)))
    seen = []
    roc_upper = krr.roc_upper

    def spy(A, B, rel, tau, monotone=False):
        seen.append((np.array(A), np.array(B)))
        return roc_upper(A, B, rel, tau, monotone=monotone)

    monkeypatch.setattr(krr, "roc_upper", spy)
    p = 0.8
    krr._bin_chains(200, 0.5, p, 1 - p, 1.0, 1e-3, 1)  # one bin at C = its window's first count (> 0)
    assert len(seen) == 2
    (A1, B1), (A2, B2) = seen
    # the unwidened masses: A1 is P raised, so P = A1 - eta about; compare the two orders' arrays entrywise
    P_hi, Q_lo = A1, B1
    Q_hi, P_lo = A2[::-1], B2[::-1]
    assert np.all(Q_hi > Q_lo) and np.all(P_lo <= P_hi)
    assert np.all(Q_hi - Q_lo >= 1.9e-6 * (Q_lo > 0)) and np.all(P_hi - P_lo >= 1.9e-6 * (P_lo > 0))


@settings(max_examples=12, deadline=None)
@given(n=st.integers(3, 28), eps0=st.sampled_from([0.05, 0.3, 1.0, 2.5, 6.0]),
       claimed=st.sampled_from([0.0, 1e-9, 1e-6]), conv=st.sampled_from([1e-6, 0.1, 0.3]),
       budget=st.sampled_from([0.0, 300.0, 1e9]), target=st.sampled_from([1e-6, 1e-2]))
def test_property_forced_paths_with_loose_errors_stay_above_the_exact_worst_case(n, eps0, claimed, conv, budget,
                                                                                  target):
    """Hypothesis: intervals everywhere (max_exact_all = 1), every convolution through FFTs and the circular window
    (its tail raised), halves splitting, queued laws kept, and every convolution claiming an extra error (a looser
    but valid bound): the certificate stays above the exact worst case at each eps, the lower below it."""
    with pytest.MonkeyPatch.context() as mp:
        _forced(mp, conv)
        conv_any, fft3 = exact._conv_any, exact._fft_conv3
        mp.setattr(exact, "_conv_any", lambda a, b: (lambda r: (r[0], r[1], r[2] + claimed))(conv_any(a, b)))
        mp.setattr(exact, "_fft_conv3", lambda *a, **k: (lambda r: (r[0], r[1] + claimed))(fft3(*a, **k)))
        p = math.exp(eps0) / (1 + math.exp(eps0))
        res = exact.binary_rr_shuffle(n, p, tail=1e-6, coin_tail=1e-6, target_delta=target, budget=budget,
                                      max_exact_all=1, min_exact=1, growth=3.0, progress=False)
    epss = list(np.linspace(0.0, eps0, 6))
    up, low = res.upper.delta(np.array(epss)), res.lower.delta(np.array(epss))
    for e, x, u, lw in zip(epss, _exact_worst(n, p, epss), up, low):
        assert mpmath.mpf(float(u)) >= x, (e, float(x), u)
        assert mpmath.mpf(float(lw)) <= x * (1 + mpmath.mpf(10) ** -30), (e, float(x), lw)
