"""The k-RR two-output bound evaluated from compressed per-bin points (chainamp.shuffle._chains, .krr), and the
k-RR lower profile, in exact rational arithmetic."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest

from chainamp.shuffle import _chains, krr
from chainamp.shuffle._pairs import roc_upper


def _support(s, b, a: Fraction) -> Fraction:
    """``max(0, max_k (b_k - a s_k))`` exactly (the points' Fractions made once per point set, each value once per
    slope: the tests query the same original points at every slope and for every rtol)."""
    return _support_of(np.asarray(s, dtype=float).tobytes(), np.asarray(b, dtype=float).tobytes(), a)


@functools.lru_cache(maxsize=4096)
def _support_of(s: bytes, b: bytes, a: Fraction) -> Fraction:
    return max([Fraction(0)] + [y - a * x for x, y in _exact_points(s, b)])


@functools.lru_cache(maxsize=64)
def _exact_points(s: bytes, b: bytes) -> tuple:
    return tuple((Fraction(x), Fraction(y)) for x, y in zip(np.frombuffer(s).tolist(), np.frombuffer(b).tolist()))


SLOPES = [Fraction(0), Fraction(1, 3), Fraction(9, 10), Fraction(1), Fraction(11, 10), Fraction(2), Fraction(5),
          Fraction(40), Fraction(10**6)]


def _chain(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """ROC-like points (s ascending): a smooth concave chain, a noisy one, one with vertical and steep runs, one
    of near-collinear points whose values ``b - sigma s`` cancel (the rounding edge of the margins)."""
    if kind == "smooth":
        P = rng.random(400) + 0.01
        Q = rng.random(400) + 0.01
        order = np.argsort(-(P / Q))
        return roc_upper(P[order], Q[order], 0.0, 0.0, monotone=True)
    if kind == "noisy":
        s = np.sort(rng.random(300))
        return s, np.clip(np.sqrt(s) + rng.normal(0.0, 1e-3, s.size), 0.0, None)
    if kind == "steep":
        ds = np.where(rng.random(300) < 0.3, 0.0, rng.random(300) * 1e-3)
        ds[rng.random(300) < 0.1] = 1e-300
        return np.cumsum(ds), np.cumsum(rng.random(300) * 1e-3)
    # near-collinear with large magnitudes: b ~ sigma s with sigma ~ 3, so b - sigma s cancels
    s = np.cumsum(rng.random(60)) / 50.0
    return s, 3.0 * s * (1.0 + rng.normal(0.0, 1e-15, s.size))


def _edge_slopes(s, b) -> list[Fraction]:
    """The slopes where the support of near-collinear points is decided: each edge's float slope, exactly."""
    out = {Fraction(3)}
    for i in range(len(s) - 1):
        if s[i + 1] > s[i]:
            out.add(Fraction(float((b[i + 1] - b[i]) / (s[i + 1] - s[i]))))
    return sorted(out)


@pytest.mark.parametrize("rtol", [1e-7, 1e-3, 1.0], ids=["rtol1e-7", "rtol1e-3", "rtol1"])
@pytest.mark.parametrize("kind", ["smooth", "noisy", "steep", "collinear"])
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)],
                         ids=lambda s: f"seed{s}")  # seed 0 keeps every family and rtol in the default run
def test_compressed_points_dominate_in_exact_arithmetic(kind, rtol, seed):
    """Every slope's support value of the compressed points is at least the original points' (Fractions)."""
    rng = np.random.default_rng(seed)
    s, b = _chain(kind, rng)
    cs, cb = _chains.compress(s, b, rtol=rtol, atol=1e-30)
    assert np.all(np.diff(cs) >= 0)
    for a in SLOPES + (_edge_slopes(s, b) if kind == "collinear" else []):
        assert _support(cs, cb, a) >= _support(s, b, a)


def test_compression_without_its_margin_on_cancelling_points():
    """The compressed points' own margin (``_ROUND``) is not what holds them up on cancelling inputs: each of
    the three points is also pushed one ulp at its own magnitude, which covers the rounding of ``sigma s``
    there. Without the margin, the near-collinear family (and 4000 constructed three-point segments tried while
    writing this, none short) still dominates; the margin stays as the documented bound. The evaluation's
    margin, by contrast, is needed (next tests)."""
    for seed in range(12):
        rng = np.random.default_rng(seed)
        s, b = _chain("collinear", rng)
        cs, cb = _chains._compress_source(s, b, _chains._cuts(s, b, 1.0, 0.0), 0.0)  # no margin
        for a in _edge_slopes(s, b):
            assert _support(cs, cb, a) >= _support(s, b, a)


def test_support_sum_is_exact_sum_of_maxima_rounded_up():
    rng = np.random.default_rng(5)
    parts = [_chain("collinear", rng) for _ in range(3)] + [_chain("smooth", rng)]
    h = _chains.SupportSum(parts)
    for a in SLOPES[:-1]:
        exact = sum(_support(s, b, a) for s, b in parts)
        assert Fraction(float(h(np.array([float(a)]))[0])) >= exact


def test_support_sum_margin_is_needed():
    """Without its rounding margin the compiled evaluation of ``b - a s`` falls below the exact value on
    cancelling points (the margin the test above relies on)."""
    rng = np.random.default_rng(5)
    short = 0
    for _ in range(20):
        s, b = _chain("collinear", rng)
        h = _chains.SupportSum([(s, b)])
        raw = _chains._support_source(h.s, h.b, h.first, np.array([3.0]), 0.0)[0]
        short += Fraction(float(raw)) < _support(s, b, Fraction(3))
    assert short > 0


def _binom(n: int, p: Fraction, j: int) -> Fraction:
    return Fraction(math.comb(n, j)) * p**j * (1 - p) ** (n - j) if 0 <= j <= n else Fraction(0)


def _two_output_exact(n: int, d: Fraction, o: Fraction, a: Fraction) -> Fraction:
    """The two-output pair's curve exactly: weight d + o on the mixture over C ~ Bin(N, 2o) coins of binary RR
    at p' = d / (d + o) among C fair coins (one order; the other is its mirror image)."""
    N = n - 1
    pp = d / (d + o)
    total = Fraction(0)
    half = Fraction(1, 2)
    for c in range(N + 1):
        z = [_binom(c, half, j) for j in range(c + 1)]
        P = [pp * (z[s] if s <= c else 0) + (1 - pp) * (z[s - 1] if s >= 1 else 0) for s in range(c + 2)]
        Q = [(1 - pp) * (z[s] if s <= c else 0) + pp * (z[s - 1] if s >= 1 else 0) for s in range(c + 2)]
        total += _binom(N, 2 * o, c) * sum(max(x - a * y, Fraction(0)) for x, y in zip(P, Q))
    return (d + o) * total


@pytest.mark.parametrize("n,k,eps0", [(2, 3, 1.0), (4, 4, 2.0), (6, 4, 0.5), (9, 10, 3.0)],
                         ids=["n2k3", "n4k4", "n6k4", "n9k10"])
def test_two_output_curve_is_certified_and_tight(n, k, eps0):
    """Above the exact two-output pair at every slope, and within 1e-4 relative (+1e-15) of it: one bin per
    coin count at these sizes, so the only looseness is the compression's rtol and the rounding."""
    t = math.exp(-eps0)
    d = 1.0 / (1.0 + (k - 1) * t)
    o = (1.0 - d) / (k - 1)
    curve = krr.two_output_curve(n, d, o)
    for a in [Fraction(1), Fraction(11, 10), Fraction(3, 2), Fraction(2), Fraction(3)]:
        eps = math.nextafter(math.log(float(a)), -math.inf) - 1e-15
        got = Fraction(float(curve(np.array([eps]))[0]))
        exact = _two_output_exact(n, Fraction(d), Fraction(o), a)
        assert got >= exact
        assert got <= exact * (1 + Fraction(1, 10**4)) + Fraction(1, 10**15)


def _lower_view_exact(n: int, d: Fraction, o: Fraction, a: Fraction) -> Fraction:
    """H_a of the view (T, h_x0) when every other user holds a third value, exactly (both orders)."""
    N = n - 1
    half = Fraction(1, 2)
    r = 1 - d - o
    best = []
    for P0, P1 in ((d, o), (o, d)):
        total = Fraction(0)
        for T in range(N + 2):
            a_in, a_out = _binom(N, 2 * o, T - 1), _binom(N, 2 * o, T)
            for h in range(T + 1):
                z0 = _binom(T - 1, half, h - 1) if T >= 1 else Fraction(0)
                z1 = _binom(T - 1, half, h) if T >= 1 else Fraction(0)
                zo = _binom(T, half, h)
                P = (P0 * z0 + P1 * z1) * a_in + r * zo * a_out
                Q = (P1 * z0 + P0 * z1) * a_in + r * zo * a_out
                total += max(P - a * Q, Fraction(0))
        best.append(total)
    return max(best)


@pytest.mark.parametrize("n,k,eps0", [(2, 3, 1.0), (3, 4, 2.0), (7, 4, 0.5), (12, 6, 1.5)],
                         ids=["n2k3", "n3k4", "n7k4", "n12k6"])
def test_krr_lower_is_its_view_exactly(n, k, eps0):
    """The lower profile equals its dataset's view (T, h_x0) up to rounding: never above it, and within 1e-8
    of it (its masses carry 2 PMF_RTOL; a wrong coin array, e.g. the Pascal rule started one count off, moves it
    by percents)."""
    t = math.exp(-eps0)
    d = 1.0 / (1.0 + (k - 1) * t)
    o = (1.0 - d) / (k - 1)
    low = krr._krr_lower(n - 1, d, o, 1e-15, 1e6)
    for a in [Fraction(1), Fraction(6, 5), Fraction(2), Fraction(4)]:
        exact = _lower_view_exact(n, Fraction(d), Fraction(o), a)
        got = low.delta(math.nextafter(math.log(float(a)), math.inf) + 1e-12)
        assert got <= float(exact) + 1e-12
        assert got >= float(exact) - 4e-9 * (1 + float(a))  # each test's sides move by 2 PMF_RTOL


def test_lower_block_keeps_the_most_likely_counts():
    """Past the outcome budget the lower keeps a contiguous block of counts T around the mode (the curve stays
    below the full view's, and above a tenth of it at eps = 0 with a quarter of the outcomes)."""
    t = math.exp(-1.0)
    d = 1.0 / (1.0 + 3 * t)
    o = (1.0 - d) / 3
    full = krr._krr_lower(399, d, o, 1e-15, 1e7)
    part = krr._krr_lower(399, d, o, 1e-15, 2e3)
    for e in (0.0, 0.1, 0.3):
        assert part.delta(e) <= full.delta(e) + 1e-15
    assert part.delta(0.0) >= 0.1 * full.delta(0.0)


def _difference_view_exact(n: int, k: int, beta: float, a: Fraction) -> Fraction:
    """H_a of the view h_x0 - h_x1 (others at a third value) for k-RR with o' = beta (1 - beta), both orders."""
    N = n - 1
    o = Fraction(beta) * (1 - Fraction(beta))
    d = 1 - (k - 1) * o
    r = 1 - d - o
    Z: dict = {0: Fraction(1)}
    for _ in range(N):
        new: dict = {}
        for v, w in Z.items():
            for step, pr in ((1, o), (-1, o), (0, 1 - 2 * o)):
                new[v + step] = new.get(v + step, 0) + w * pr
        Z = new
    out = []
    for x, y in ((d, o), (o, d)):
        total = Fraction(0)
        for D in range(-N - 1, N + 2):
            P = x * Z.get(D - 1, 0) + y * Z.get(D + 1, 0) + r * Z.get(D, 0)
            Q = y * Z.get(D - 1, 0) + x * Z.get(D + 1, 0) + r * Z.get(D, 0)
            total += max(P - a * Q, Fraction(0))
        out.append(total)
    return max(out)


@pytest.mark.parametrize("n,k,eps0", [(2, 4, 1.0), (5, 4, 2.0), (9, 10, 0.7), (30, 5, 3.0)],
                         ids=["n2k4", "n5k4", "n9k10", "n30k5"])
def test_difference_view_lower_is_its_view_and_below_the_worst_case(n, k, eps0):
    """The lower of large populations (view h_x0 - h_x1, at o' >= o by one rounding) equals its view's exact
    profile at o' up to rounding, and (n <= 5) is below the brute-force worst case at o."""
    from test_shuffle_exact import _worst  # noqa: PLC0415 - the brute force of the exact method's tests

    t = math.exp(-eps0)
    d = 1.0 / (1.0 + (k - 1) * t)
    o = (1.0 - d) / (k - 1)
    low = krr._krr_lower_difference(n - 1, k, d, o, 1e-15)
    beta = krr._beta_for(o)
    assert Fraction(beta) * (1 - Fraction(beta)) >= Fraction(o)
    R = [[Fraction(d) if x == y else Fraction(o) for y in range(k)] for x in range(k)] if n <= 5 else None
    for a in [Fraction(1), Fraction(6, 5), Fraction(2), Fraction(4)]:
        eps = math.nextafter(math.log(float(a)), math.inf) + 1e-12
        exact = _difference_view_exact(n, k, beta, a)
        assert float(exact) - 4e-9 * (1 + float(a)) <= low.delta(eps) <= float(exact) + 1e-12
        if R is not None:
            assert low.delta(eps) <= float(_worst(n, R, a)) + 1e-12


@pytest.mark.parametrize("o", [0.25, 0.2500000000000001, 0.3, 1e-300], ids=["quarter", "above", "0.3", "tiny"])
def test_beta_for_edges(o):
    beta = krr._beta_for(o)
    if o > 0.25:
        assert beta is None
    else:
        fb = Fraction(beta)
        assert fb <= Fraction(1, 2) and fb * (1 - fb) >= Fraction(o)


@pytest.mark.parametrize("k,eps0", [(3, 1.0), (4, 2.0), (10, 0.5), (100, 4.0), (4, 8.0)],
                         ids=["k3e1", "k4e2", "k10e0.5", "k100e4", "k4e8"])
@pytest.mark.parametrize("n", [7, 300, pytest.param(20000, marks=pytest.mark.slow)], ids=lambda n: f"n={n}")
def test_auto_skips_the_two_output_bound_only_when_it_cannot_win(n, k, eps0):  # n = 300 skips in the default run
    """"auto" leaves the two-output bound out only when its own epsilon is larger than the one chosen (computed
    here with method="exact"), and the report keeps a concrete dataset's lower profile either way."""
    from chainamp import amplify_shuffled, mechanisms

    rr = mechanisms.randomized_response(k, eps0)
    rep = amplify_shuffled(rr, n, progress=False)
    exact = amplify_shuffled(rr, n, method="exact", progress=False)
    assert exact.epsilon >= rep.epsilon
    if not isinstance(rep.methods["exact"], float):
        assert rep.methods["exact"].startswith("not computed")
    else:
        assert rep.methods["exact"] == exact.epsilon
    assert rep.lower is not None and rep.lower_epsilon <= rep.epsilon


@pytest.mark.parametrize("sizes", [(60, 50, 40), (5, 90, 33), (1, 1, 70)], ids=["60-50-40", "5-90-33", "1-1-70"])
@pytest.mark.parametrize("kind", ["binomial", "spiky"])
def test_three_factor_fft_error_bound_in_exact_arithmetic(sizes, kind):
    """Every entry of the one-FFT convolution of three windows is within its bound of the exact convolution
    (Fractions), including vectors of very different scales (the bound's first-order terms)."""
    from chainamp.shuffle import exact

    rng = np.random.default_rng(sum(sizes))
    vecs = []
    for m in sizes:
        if kind == "binomial":
            v = np.array([math.comb(m - 1, j) for j in range(m)], dtype=float) / 2.0 ** (m - 1)
        else:
            v = rng.random(m) ** 8
            v[rng.integers(0, m)] = 1.0
        vecs.append(v)
    r, eta = exact._fft_conv3(*vecs)
    fr = [[Fraction(float(x)) for x in v] for v in vecs]
    ab = [Fraction(0)] * (len(fr[0]) + len(fr[1]) - 1)
    for i, x in enumerate(fr[0]):
        for j, y in enumerate(fr[1]):
            ab[i + j] += x * y
    out = [Fraction(0)] * (len(ab) + len(fr[2]) - 1)
    for i, x in enumerate(ab):
        for j, y in enumerate(fr[2]):
            out[i + j] += x * y
    worst = max(abs(Fraction(float(x)) - y) for x, y in zip(r, out))
    assert worst <= Fraction(eta)
    assert eta < 1e-10


def test_compress_refuses_points_out_of_order():
    with pytest.raises(ValueError, match="ascending"):
        _chains.compress(np.array([0.0, 0.5, 0.2, 0.9]), np.array([0.0, 0.5, 0.6, 1.0]))
