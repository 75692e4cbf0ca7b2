"""Adversarial review of the third shuffle round (k-RR two-output curve, compressed chains, the k-RR lowers, the
auto path), against exact brute force over every dataset of the other users (Fractions, mpmath)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from chainamp import amplify_shuffled, mechanisms
from chainamp.privacy._roc import _upper_hull
from chainamp.shuffle import _chains, krr
from chainamp.shuffle._pairs import roc_upper


# ------------------------------------------------------------------ exact k-RR worst case (lumped outputs)
def _partitions(n: int, top: int, parts: int):
    """Partitions of n into at most ``parts`` parts, each at most ``top``."""
    if n == 0:
        yield ()
        return
    if parts == 0:
        return
    for p in range(min(n, top), 0, -1):
        for rest in _partitions(n - p, p, parts - 1):
            yield (p,) + rest


def _conv(dist: dict, row: list) -> dict:
    out: dict = {}
    for h, w in dist.items():
        for y, r in enumerate(row):
            if r:
                g = h[:y] + (h[y] + 1,) + h[y + 1:]
                out[g] = out.get(g, 0) + w * r
    return out


def _dataset_pair(k: int, d: Fraction, o: Fraction, c0: int, c1: int, thirds: tuple) -> tuple[dict, dict]:
    """Histograms when user 1 holds x0 (P) or x1 (Q); c0 others hold x0, c1 hold x1, ``thirds`` the multiplicities
    of distinct third values. The outputs no one holds are one lumped cell (each lands there with the same
    probability under both hypotheses, and given their count the split among them is the same: sufficient)."""
    m = len(thirds)
    rest = (k - 2 - m) * o

    def row(v: int) -> list:
        r = [o] * (2 + m) + [rest]
        r[v] = d
        return r

    base = {tuple([0] * (3 + m)): Fraction(1)}
    for v in [0] * c0 + [1] * c1 + [2 + j for j, c in enumerate(thirds) for _ in range(c)]:
        base = _conv(base, row(v))
    return _conv(base, row(0)), _conv(base, row(1))


def _mp(D: dict) -> dict:
    return {h: mpmath.mpf(w.numerator) / w.denominator for h, w in D.items()}


def _hockey(P: dict, Q: dict, a) -> mpmath.mpf:
    return mpmath.fsum(max(P.get(h, 0) - a * Q.get(h, 0), 0) for h in set(P) | set(Q))


@functools.lru_cache(maxsize=None)
def _dataset_value(k: int, d: Fraction, o: Fraction, c0: int, c1: int, lam: tuple, eps: float, prec: int):
    """``max(H_a(P || Q), H_a(Q || P))`` at ``a = e^eps`` of one dataset's pair (at the working precision ``prec``),
    computed once: the budgets of test_krr_lowers_below_their_dataset and the methods of
    test_api_against_every_dataset query the same datasets at the same eps."""
    P, Q = _dataset_mp(k, d, o, c0, c1, lam, prec)
    a = mpmath.exp(mpmath.mpf(eps))
    return max(_hockey(P, Q, a), _hockey(Q, P, a))


@functools.lru_cache(maxsize=None)
def _dataset_mp(k: int, d: Fraction, o: Fraction, c0: int, c1: int, lam: tuple, prec: int) -> tuple[dict, dict]:
    return tuple(_mp(x) for x in _dataset_pair(k, d, o, c0, c1, lam))


def _krr_worst(k: int, d: Fraction, o: Fraction, n: int, epss: list[float], worst: bool = True) -> tuple[list, list]:
    """(worst case over every dataset of the others and both orders, the dataset 'every other user at one third
    value') of H at a = e^eps (60 digits) for each eps; ``worst=False``: only the second (the first is None)."""
    mpmath.mp.dps = 60
    prec = mpmath.mp.prec
    top = [mpmath.mpf(0)] * len(epss) if worst else None
    third = None
    N = n - 1
    for c0 in range(N + 1):
        for c1 in range(N + 1 - c0):
            for lam in _partitions(N - c0 - c1, N, k - 2):
                is_third = c0 == c1 == 0 and len(lam) <= 1
                if not (worst or is_third):
                    continue
                vals = [_dataset_value(k, d, o, c0, c1, lam, float(e), prec) for e in epss]
                if worst:
                    top = [max(w, v) for w, v in zip(top, vals)]
                if is_third:
                    third = vals
    return top, third


def _rr(k: int, eps0: float):
    rr = mechanisms.randomized_response(k, eps0)
    return rr, Fraction(rr.diagonal), Fraction(rr.off_diagonal)


# ------------------------------------------------------------------ findings (each failed before its fix)
def test_blanket_does_not_certify_zero_when_e_over_omega_overflows():
    """FINDING (fixed): k-RR with k = 1e6, eps0 = 700, n = 2: the blanket's closed form divided ``e^eps r1`` by
    omega = 1/k, which overflowed to inf; the infinities turned into a certified delta of 0 at eps = 695.97 (and
    "auto" picked it: epsilon 695.97 at delta 1e-6) where the exact delta is 0.98 (one other user at most adds
    little: H = 1 - e^(eps - 700) for the user's own report)."""
    rr = mechanisms.randomized_response(10**6, 700.0)
    rep = amplify_shuffled(rr, 2, progress=False)
    with np.errstate(all="ignore"):
        blanket = amplify_shuffled(rr, 2, method="blanket", progress=False)
    exact = 1.0 - math.exp(695.97 - 700.0)  # H of user 1's own report alone: a lower bound of the truth
    assert blanket.delta_at(695.97) >= exact
    assert rep.epsilon >= 699.0 and rep.delta_at(695.97) >= exact


@pytest.mark.parametrize("eps0", [709.0, 709.9, 740.0], ids=["709", "709.9", "740"])
@pytest.mark.parametrize("k", [3, 1000], ids=lambda k: f"k={k}")
def test_huge_eps0_does_not_crash(k, eps0):
    """FINDING (fixed): read_randomizer's ``_log_up(d / o)`` turned the Fraction d / o into a float; past e^709.8
    that raised OverflowError (amplify_shuffled crashed for any k at eps0 = 740); then the skip estimate's
    ``math.exp(eps)`` overflowed, and Boost's binomial pmf overflows on a subnormal coin probability 2 o (eps0 =
    709.9, n = 3): the coins are left out below ``krr.COIN_MIN`` (the upper bound only grows)."""
    rr = mechanisms.randomized_response(k, eps0)
    with np.errstate(all="ignore"):
        rep = amplify_shuffled(rr, 3, progress=False)
    assert rep.epsilon >= 700.0
    assert rep.delta_at(600.0) >= 1.0 - math.exp(600.0 - 700.0)


def test_krr_lower_is_not_above_its_dataset_when_the_truth_is_tiny():
    """FINDING (fixed): the lower profile was evaluated by DominatingPair.delta, which rounds UP (an upper bound's
    rounding: the band of outcomes near the cut adds ~1e-14): at k = 1e6, eps0 = 1e-9, n = 2 its delta at eps = 0
    was 7.1e-15 against the exact 1.0e-15 of its own dataset (and of the worst case), and the report read
    epsilon = 0 with a "lower" epsilon of 3.6e-15 above it (delta = 5e-15)."""
    rr, d, o = _rr(10**6, 1e-9)
    rep = amplify_shuffled(rr, 2, delta=5e-15, method="exact", progress=False)
    worst, third = _krr_worst(10**6, d, o, 2, [0.0, 1e-12])
    for e, w, t in zip([0.0, 1e-12], worst, third):
        assert rep.lower.delta(e) <= t <= w
    assert rep.lower_epsilon <= rep.epsilon


def test_lower_epsilon_is_not_above_the_certified_epsilon():
    """FINDING (fixed): lower_epsilon returned the upper end of the profile search's bracket (rtol 1e-7), so for
    binary RR (lower = the exact worst case) it read 3.97490687 above the certified 3.97490670 (k = 2, eps0 = 4,
    n = 50, delta = 0.01). It now returns the bracket's lower end, where the lower's delta (rounded down) is still
    above delta."""
    rep = amplify_shuffled(mechanisms.randomized_response(2, 4.0), 50, delta=0.01, progress=False)
    assert rep.lower_epsilon <= rep.epsilon
    assert rep.lower.delta(rep.lower_epsilon) > 0.01


# ------------------------------------------------------------------ the API against brute force (every dataset)
API_CASES = [  # (n, k, eps0, delta)
    (1, 3, 1.0, 1e-3), (2, 3, 1e-9, 1e-6), (3, 3, 0.37, 1e-2), (4, 4, 2.0, 1e-3), (5, 3, 3.0, 1e-6),
    (4, 5, 0.7, 1e-1), (3, 4, 30.0, 1e-10), (3, 5, 700.0, 1e-6), (3, 3, 709.9, 1e-6), (2, 10**6, 5.0, 1e-6),
    (3, 10**6, 1e-9, 1e-15), (3, 1000, 13.0, 1e-3),
]


@pytest.mark.parametrize("method", ["exact", "auto"])
@pytest.mark.parametrize("n,k,eps0,delta", API_CASES, ids=[f"n{c[0]}-k{c[1]}-e{c[2]:g}-d{c[3]:g}" for c in API_CASES])
def test_api_against_every_dataset(n, k, eps0, delta, method):
    """Certified profile, its dominating pair and its epsilon above the exact worst case over every dataset of
    the others (60-digit e^eps); the lower below its own datasets (every other user at one third value, every
    other user at x0: the larger of the two at each eps), its epsilon below the true epsilon."""
    rr, d, o = _rr(k, eps0)
    with np.errstate(all="ignore"):
        rep = amplify_shuffled(rr, n, delta=delta, method=method, progress=False)
    grid = sorted({0.0, 0.01, 0.3, eps0 * 0.2, eps0 * 0.5, eps0 * 0.9, eps0 * 0.999})
    epss = grid + [rep.epsilon] + ([rep.lower_epsilon] if rep.lower is not None else [])
    epss = [e for e in epss if math.isfinite(e)]
    worst, third = _krr_worst(k, d, o, n, epss)
    mpmath.mp.dps = 60
    first = [_dataset_value(k, d, o, n - 1, 0, (), float(e), mpmath.mp.prec) for e in epss]  # all others at x0
    pair = rep.profile.dominating_pair()
    for e, w, t, f in zip(epss, worst, third, first):
        assert rep.profile.delta(e) >= w and rep.delta_at(e) >= w and pair.delta(e) >= w, e
        if rep.lower is not None:
            assert rep.lower.delta(e) <= max(t, f) and max(t, f) <= w, e
    if math.isfinite(rep.epsilon):
        assert worst[len(grid)] <= delta
    if rep.lower is not None and rep.lower_epsilon > 0.0:
        assert worst[-1] >= delta and rep.lower_epsilon <= rep.epsilon
    with np.errstate(all="ignore"):
        assert rep.epsilon_at(delta) == rep.epsilon


# ------------------------------------------------------------------ compress: every slope, exactly
def _hull_slopes(s, b) -> set:
    """The slopes where ``a -> max_k (b_k - a s_k)`` bends (the upper hull's edge slopes), exactly."""
    best: dict = {}
    for x, y in zip(s, b):
        fx, fy = Fraction(float(x)), Fraction(float(y))
        best[fx] = max(best.get(fx, fy), fy)
    h: list = []
    for p in sorted(best.items()):
        while len(h) >= 2 and (h[-1][0] - h[-2][0]) * (p[1] - h[-2][1]) - (h[-1][1] - h[-2][1]) * (p[0] - h[-2][0]) >= 0:
            h.pop()
        h.append(p)
    return {(y2 - y1) / (x2 - x1) for (x1, y1), (x2, y2) in zip(h, h[1:])}


def _support(s, b, a: Fraction) -> Fraction:
    return max(y - a * x for x, y in _as_fractions(s, b))


def _as_fractions(s, b) -> list:
    """The points as exact Fractions (converted once per array, not at each slope)."""
    s, b = np.asarray(s, dtype=float), np.asarray(b, dtype=float)
    return _fraction_points(s.tobytes(), b.tobytes())


@functools.lru_cache(maxsize=8)
def _fraction_points(s: bytes, b: bytes) -> list:
    return [(Fraction(x), Fraction(y)) for x, y in zip(np.frombuffer(s).tolist(), np.frombuffer(b).tolist())]


U = 2.0**-53
TINY = 5e-324


def _adversarial(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = 120
    if kind == "duplicates":
        return np.sort(rng.choice(np.linspace(0, 1, 7), n)), np.sort(rng.random(n))
    if kind == "vertical-runs":
        ds = np.where(rng.random(n) < 0.5, 0.0, rng.random(n))
        db = np.where(ds == 0, rng.random(n), 0.0)
        return np.cumsum(ds) / ds.sum(), np.cumsum(db) / db.sum()
    if kind == "threshold-slopes":  # edges at, just under and just over the 1e12 steep threshold
        ds = rng.random(n) * 1e-13
        sl = rng.choice([1e12, np.nextafter(1e12, 0), np.nextafter(1e12, 2e12), 1e11, 1e13, 0.0, 1.0], n)
        return np.cumsum(ds), np.cumsum(ds * sl)
    if kind == "subnormal":
        return np.cumsum(rng.integers(0, 5, n) * TINY), np.cumsum(rng.integers(0, 50, n) * TINY)
    if kind == "zeros":
        return np.zeros(n), np.sort(rng.random(n))
    if kind == "b-decreasing":
        return np.sort(rng.random(n)), np.sort(rng.random(n))[::-1].copy()
    if kind == "near-one":
        return np.sort(1.0 - rng.integers(0, 40, n) * U), np.sort(1.0 - rng.integers(0, 40, n) * U)
    if kind == "log-uniform":
        ds, sl = 10.0 ** rng.uniform(-300, 0, n), 10.0 ** rng.uniform(-20, 20, n)
        s, b = np.cumsum(ds), np.cumsum(ds * sl)
        return s / s[-1], b / b[-1]
    if kind == "cancelling":
        s = np.sort(rng.random(n))
        return s, 10.0 ** rng.uniform(-3, 3) * s * (1 + rng.normal(0, 4e-16, n))
    if kind == "mixed-scales":
        return (np.sort(np.concatenate(([0.0], 10.0 ** rng.uniform(-320, 0, n - 1)))),
                np.sort(np.concatenate(([0.0], 10.0 ** rng.uniform(-320, 0, n - 1)))))
    if kind == "lattice":  # exactly collinear: b - 3 s is exactly 0
        s = np.arange(n) / 1024.0
        return s, 3.0 * s
    P, Q = rng.random(n) ** 4, rng.random(n) ** 4  # "roc": a concave chain of prefix sums
    order = np.argsort(-(P / Q))
    return roc_upper(P[order] / P.sum(), Q[order] / Q.sum(), 1e-9, 0.0, monotone=True)


KINDS = ["duplicates", "vertical-runs", "threshold-slopes", "subnormal", "zeros", "b-decreasing", "near-one",
         "log-uniform", "cancelling", "mixed-scales", "lattice", "roc"]


@pytest.mark.parametrize("rtol", [1e-4, 1e6], ids=["rtol1e-4", "rtol1e6"])
@pytest.mark.parametrize("kind", KINDS)
def test_compress_dominates_at_every_slope(kind, rtol):
    """The compressed points' support function is at least the original's at EVERY a >= 0: both are convex
    piecewise linear, so checking every breakpoint of either (and beyond the last) covers all a; then the
    compiled sum (0-floored) at the same slopes (a rounded down to a float)."""
    rng = np.random.default_rng(KINDS.index(kind))
    s, b = _adversarial(kind, rng)
    cs, cb = _chains.compress(s, b, rtol=rtol, atol=1e-18 if rtol < 1 else 0.0)
    assert cs[0] == s[0] and cb[0] == b[0] and np.all(np.diff(cs) >= 0)
    slopes = {a for a in _hull_slopes(s, b) | _hull_slopes(cs, cb) if a >= 0} | {Fraction(0)}
    top = max(slopes) * 2 + 1
    slopes |= {top, top * 10**6}
    h = _chains.SupportSum([(cs, cb)])
    for a in sorted(slopes):
        exact = _support(s, b, a)
        assert _support(cs, cb, a) >= exact, float(a)
        af = float(a)
        af = af if Fraction(af) <= a else math.nextafter(af, 0.0)
        assert Fraction(float(h(np.array([af]))[0])) >= max(exact, Fraction(0)), float(a)


# ------------------------------------------------------------------ the exact hull of from_roc on long chains
HULL_KINDS = ["noisy-sqrt", "lattice-equal-s", "near-diagonal", "near-one", "subnormal", "alternating"]


def _hull_points(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = 2500
    if kind == "noisy-sqrt":
        s = rng.random(n)
        return s, np.clip(np.sqrt(s) + rng.normal(0, 1e-3, n), 0, 1)
    if kind == "lattice-equal-s":  # many points per s, exactly collinear vertices
        s = rng.integers(0, 500, n) / 512.0
        return s, np.minimum(2 * s, 1.0) - rng.integers(0, 2, n) / 1024.0
    if kind == "near-diagonal":
        s = rng.random(n)
        return s, np.clip(s * (1 + rng.normal(0, 1e-15, n)), 0, 1)
    if kind == "near-one":
        return 1 - rng.integers(0, 3000, n) * U, 1 - rng.integers(0, 3000, n) * U * 0.5
    if kind == "subnormal":
        return rng.integers(0, 3000, n) * TINY, rng.integers(0, 3000, n) * TINY * 3
    t = np.sort(rng.random(n))
    b = 1 - (1 - t) ** 2
    return t, np.where(rng.random(n) < 0.5, b, b * (1 - 1e-16))


@pytest.mark.parametrize("kind", HULL_KINDS)
def test_upper_hull_on_long_chains_is_exact(kind):
    """``_upper_hull`` (the compiled chain for 2000+ points when it is in, the exact loop otherwise) gives the
    vertices of the exact hull: every input point on or below it (Fractions), every vertex an input point (or
    (0, 0), (1, 1)) strictly above the chord of its neighbours."""
    rng = np.random.default_rng(HULL_KINDS.index(kind))
    s, b = _hull_points(kind, rng)
    hs, hb = _upper_hull(s, b)
    V = [(Fraction(float(x)), Fraction(float(y))) for x, y in zip(hs, hb)]
    given = set(zip(s.tolist(), b.tolist())) | {(0.0, 0.0), (1.0, 1.0)}
    assert all((float(x), float(y)) in given for x, y in V)
    for (x0, y0), (x1, y1), (x2, y2) in zip(V, V[1:], V[2:]):
        assert (x1 - x0) * (y2 - y0) - (y1 - y0) * (x2 - x0) < 0  # a strict turn: no collinear vertex
    xs = [v[0] for v in V]
    import bisect
    for x, y in zip(s.tolist(), b.tolist()):
        fx, fy = Fraction(x), Fraction(y)
        j = min(max(bisect.bisect_right(xs, fx), 1), len(V) - 1)
        (x0, y0), (x1, y1) = V[j - 1], V[j]
        if fx < x0:
            assert fy <= y0
            continue
        assert (x1 - x0) * (fy - y0) <= (y1 - y0) * (fx - x0)


# ------------------------------------------------------------------ the lowers' blocks and the curve's bins at their edges
@pytest.mark.parametrize("budget,tail", [(1, 1e-15), (5, 1e-3), (20, 1e-15), (40, 1e-3), (1e6, 1e-15)],
                         ids=["b1", "b5-tail1e-3", "b20", "b40-tail1e-3", "all"])
@pytest.mark.parametrize("n,k,eps0", [(3, 3, 0.5), (6, 4, 1.5), (5, 3, 1e-9), (4, 4, 12.0)],
                         ids=["n3k3", "n6k4", "n5k3-tiny", "n4k4-e12"])
def test_krr_lowers_below_their_dataset(n, k, eps0, budget, tail):
    """The T-block lower (any budget, even one count; a window tail of 1e-3 charged to the false-alarm side) and
    the difference lower (at o' >= o), evaluated from below, never above the exact profile of their dataset."""
    from chainamp.shuffle._lowers import lower_delta

    rr, d, o = _rr(k, eps0)
    _, dd, oo = krr.krr_parameters(k, eps0)
    epss = [0.0, 0.05, 0.3 * eps0, 0.7 * eps0]
    _, third = _krr_worst(k, d, o, n, epss, worst=False)
    lows = [krr._krr_lower(n - 1, dd, oo, tail, budget)]
    if budget == 1e6:
        lows.append(krr._krr_lower_difference(n - 1, k, dd, oo, 1e-15))
    for low in lows:
        if low is None:
            continue
        f = lower_delta(low)
        for e, t in zip(epss, third):
            assert float(f(np.array([e]))[0]) <= t, e


@pytest.mark.parametrize("bins,tail", [(1, 1e-40), (2, 1e-2), (3, 1e-6), (1000, 1e-2)],
                         ids=["bins1", "bins2-tail1e-2", "bins3", "bins1000-tail1e-2"])
@pytest.mark.parametrize("n,k,eps0", [(5, 3, 0.5), (6, 4, 2.0)], ids=["n5k3", "n6k4"])
def test_two_output_curve_any_bins_and_tail(n, k, eps0, bins, tail):
    """Any number of bins (each at its smallest coin count) and any window tail (its mass added) keep the curve
    above the exact two-output pair (Fractions, test_krr_chains._two_output_exact)."""
    from test_krr_chains import _two_output_exact  # noqa: PLC0415

    rr, d, o = _rr(k, eps0)
    curve = krr.two_output_curve(n, float(d), float(o), bins=bins, tail=tail)
    for a in [Fraction(1), Fraction(6, 5), Fraction(2)]:
        eps = math.nextafter(math.log(float(a)), -math.inf) - 1e-15
        assert Fraction(float(curve(np.array([eps]))[0])) >= _two_output_exact(n, d, o, a)


@pytest.mark.parametrize("n,k,eps0,delta", [(3000, 10**6, 8.0, 1e-6), (300, 4, 0.1, 1e-10), (100000, 3, 4.0, 1e-6),
                                            (10, 100, 2.0, 1e-10), (3000, 3, 0.5, 1e-3)],
                         ids=["n3000-k1e6-e8", "n300-k4-e0.1", "n1e5-k3-e4", "n10-k100-e2", "n3000-k3-e0.5"])
def test_auto_is_never_worse_than_exact(n, k, eps0, delta):
    """The skip only leaves out a two-output bound that cannot win (240 configurations swept in review: 178
    skipped, auto never above method='exact')."""
    rr = mechanisms.randomized_response(k, eps0)
    auto = amplify_shuffled(rr, n, delta=delta, progress=False)
    exact = amplify_shuffled(rr, n, delta=delta, method="exact", progress=False)
    assert auto.epsilon <= exact.epsilon and auto.lower is not None
    assert auto.lower_epsilon <= auto.epsilon


THIRD_CLASS = [  # rows that sum to 1 EXACTLY (as rationals): the exact worst case is meaningful at any eps
    [[0.125, 0.5, 0.375], [2.0**-53 - 2.0**-80, 1 - 2.0**-53, 2.0**-80]],
    [[0.25, 0.25, 0.5], [2.0**-52 - 2.0**-75, 1 - 2.0**-52, 2.0**-75]],
]


@pytest.mark.parametrize("R", THIRD_CLASS, ids=["2^-80", "2^-75"])
@pytest.mark.parametrize("n", [2, 3], ids=lambda n: f"n={n}")
def test_blanket_keeps_a_third_class_below_unit_roundoff(R, n):
    """FINDING (fixed): the blanket's closed form for three classes took ``pi = omega_0 + omega_1``, which rounds
    to 1 when the third class's blanket mass is below u; it then dropped that class, whose ``omega_2 l_2 =
    r0_2 - e r1_2`` is not small. R = [[1/8, 1/2, 3/8], [2^-53 - 2^-80, 1 - 2^-53, 2^-80]], n = 2: "auto" (the
    blanket) reported epsilon 34.66 at delta 1e-6 where the exact delta is 0.375 (found on [[0.1, 0.6, 0.3],
    [1e-20, 1, 2e-20]]: 0.100 at eps = 20 against the exact 0.400). The count outside classes 0 and 1 is now
    ``Bin(N, omega_2)``, omega_2 itself."""
    from review_brute import worst_deltas  # noqa: PLC0415 - the brute force of the earlier reviews

    RF = [[Fraction(x) for x in row] for row in R]
    assert all(sum(row) == 1 for row in RF)
    rep = amplify_shuffled(np.array(R), n, progress=False)
    blanket = amplify_shuffled(np.array(R), n, method="blanket", progress=False)
    epss = [5.0, 20.0, 30.0, rep.epsilon]
    worst = worst_deltas(RF, n, epss)
    for e, w in zip(epss, worst):
        assert blanket.delta_at(e) >= w and rep.delta_at(e) >= w, e
    assert worst[-1] <= 1e-6


@pytest.mark.parametrize("R", [[[1.1566e-308, 1.0], [5.615e-308, 1.0]], [[6.40696456e-309, 1.0], [4.05001529e-18, 1.0]]],
                         ids=["both-tiny", "subnormal"])
def test_blanket_does_not_crash_on_subnormal_class_masses(R):
    """FINDING (fixed): a blanket class probability (rho) below 1e-300 made Boost's binomial pmf raise
    OverflowError, so "auto" crashed on a 2 x 2 randomizer that ``amplify_shuffled`` accepts; it now falls back to
    the trivial bound for that pair (the other methods certify)."""
    rep = amplify_shuffled(np.array(R), 3, progress=False)
    assert rep.epsilon >= 0.0 and rep.delta_at(0.0) >= 0.0
