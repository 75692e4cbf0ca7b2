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
from conftest import CROSS_EDGES

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
        s, b = kernel(P, Q, P, Q, 1.0 - rel, 1.0 + rel, 0.0, 0.0)
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


@pytest.mark.parametrize("s0, b0, s1, b1, s2, b2", CROSS_EDGES, ids=["a", "b", "c"])
def test_chain_filter_keeps_exact_vertices(s0, b0, s1, b1, s2, b2):
    """The chain's ``64 u (|t1| + |t2|)`` filter (one chain, :func:`_pairs._chain_source`, for ``thin`` and the
    merge): on these near-collinear points the float cross product alone pops an exact hull vertex."""
    exact_cross = (Fraction(s1) - Fraction(s0)) * (Fraction(b2) - Fraction(b0)) - \
        (Fraction(b1) - Fraction(b0)) * (Fraction(s2) - Fraction(s0))
    assert exact_cross < 0  # a right turn: (s1, b1) is a vertex of the exact hull
    assert (s1 - s0) * (b2 - b0) - (b1 - b0) * (s2 - s0) > 0  # the float predicate alone calls it a left turn
    s, b = np.array([s0, s1, s2]), np.array([b0, b1, b2])
    assert np.array_equal(_pairs.thin(s, b)[0], s)
    acc = _pairs.HullAccumulator()
    acc.add_runs(s, b, 3)
    assert np.array_equal(acc.s, s) and np.array_equal(acc.b, b)
    acc = _pairs.HullAccumulator()  # the same points as two runs, merged with a hull below them
    acc.add_runs(np.array([0.0, 1.0]), np.array([0.0, 1.0]) * b0, 1)
    acc.add_runs(np.array([s0, s2, s1]), np.array([b0, b2, b1]), 2)
    assert all(x in acc.s for x in s)


@pytest.mark.parametrize("eta", [0.0, 1e-17, 3.3e-12, 1e-3], ids=["0", "1e-17", "3e-12", "1e-3"])
def test_user_pair_widened_in_fractions(eta):
    """P raised and Q lowered by at least eta from the plain float pair (exact rational comparison), the plain
    pair's values when eta = 0; the plain ``fl(P + eta)`` alone is below ``P + eta`` on some of these entries."""
    rng = np.random.default_rng(3)
    z = rng.random(300) ** 3
    z /= z.sum()
    z[:5] = [1e-3, 1e-300, 5e-324, 0.0, 2e-16]
    p = 0.7310585786300049
    P, Q = _pairs.user_pair_widened(z, p, 1 - p, eta)
    Pc, Qc = exact._user_pair(z, p, 1 - p)
    if eta == 0.0:
        assert np.array_equal(P, Pc) and np.array_equal(Q, Qc)
        return
    fe = Fraction(eta)
    assert all(Fraction(float(x)) >= Fraction(float(y)) + fe for x, y in zip(P, Pc))
    assert all(Fraction(float(x)) <= max(Fraction(float(y)) - fe, Fraction(0)) for x, y in zip(Q, Qc))
    assert any(Fraction(float(y + eta)) < Fraction(float(y)) + fe for y in Pc)  # the margin is needed


# ---------------------------------------------------------------- the count law's window (a shorter circular FFT)
def _exact_sum_law(parts) -> list[Fraction]:
    law = [Fraction(1)]
    for n, p in parts:
        fp = Fraction(p)
        row = [math.comb(n, k) * fp**k * (1 - fp) ** (n - k) for k in range(n + 1)]
        out = [Fraction(0)] * (len(law) + n)
        for i, x in enumerate(law):
            for j, y in enumerate(row):
                out[i + j] += x * y
        law = out
    return law


@pytest.mark.parametrize("parts", [[(40, 0.3)], [(30, 0.7), (25, 0.2)], [(20, 0.9), (15, 0.35), (12, 0.5)]],
                         ids=["one", "two", "three"])
def test_sum_chernoff_is_above_exact_tails(parts):
    from chainamp.shuffle._binomial import sum_chernoff_log_tail

    law = _exact_sum_law(parts)
    for t in range(len(law)):
        up, down = sum(law[t:]), sum(law[: t + 1])
        for upper, exact_tail in ((True, up), (False, down)):
            bound = sum_chernoff_log_tail(parts, t, upper)
            assert bound == -math.inf and exact_tail == 0 or Fraction(math.exp(bound)) >= exact_tail * (1 - 1e-15)


def test_sum_chernoff_rounding_margin_at_1e8_against_mpmath():
    """At n = 1e8 the float exponent ``K(l) - l t`` has rounding errors of ~1e-9; the raised exponent is above
    the exact one (mpmath, 50 digits, at the same l), and the plain float sum is below it on some cases."""
    import mpmath

    from chainamp.shuffle import _binomial

    mpmath.mp.dps = 50
    rng = np.random.default_rng(11)
    below = 0
    for _ in range(60):
        parts = [(int(rng.integers(10**6, 10**8)), float(rng.random())) for _ in range(3)]
        mu = sum(n * p for n, p in parts)
        sd = math.sqrt(sum(n * p * (1 - p) for n, p in parts))
        t = int(mu + float(rng.choice([-1, 1])) * float(rng.uniform(3, 15)) * sd)
        lam = (t - mu) / sd**2 * float(rng.uniform(0.9, 1.1))
        exact_val = sum(n * mpmath.log(1 - mpmath.mpf(p) + mpmath.mpf(p) * mpmath.exp(mpmath.mpf(lam)))
                        for n, p in parts) - mpmath.mpf(lam) * t
        up = _binomial._cgf_exponent_up(parts, lam, t)
        assert mpmath.mpf(up) >= exact_val
        plain = sum(n * math.log(1 - p + p * math.exp(lam)) for n, p in parts) - lam * t
        below += mpmath.mpf(plain) < exact_val
    assert below > 0


def _window_case(tail):
    from chainamp.shuffle import _binomial

    parts = [(30, 0.3), (45, 0.6), (24, 0.5)]
    wins = [_binomial.binomial_window(n, p, 1e-6) for n, p in parts]
    lo = sum(w[0] for w in wins)
    res = exact._fft_conv3_window(*(w[1] for w in wins), parts, lo, tail)
    return parts, wins, lo, res


def _fraction_conv(vectors, size=None):
    """The exact linear convolution of float vectors, or the circular one of length ``size``."""
    out = [Fraction(1)]
    for v in vectors:
        new = [Fraction(0)] * (len(out) + len(v) - 1)
        for i, x in enumerate(out):
            for j, y in enumerate(v):
                new[i + j] += x * Fraction(float(y))
        out = new
    if size is None:
        return out
    circ = [Fraction(0)] * size
    for i, x in enumerate(out):
        circ[i % size] += x
    return circ


def test_windowed_fft_within_eta_and_out_in_fractions():
    """Every entry within the FFT's bound of the exact circular convolution, which is within ``out`` of the exact
    linear one on the window (the wrapped terms: present here, so the aliasing term is needed), and ``out`` is above
    the exact mass of the sum outside the window."""
    parts, wins, lo, res = _window_case(1e-2)
    assert res is not None
    z, eta, out = res
    vecs = [w[1] for w in wins]
    lin = _fraction_conv(vecs)
    n = z.size
    assert n < len(lin)
    circ = _fraction_conv(vecs, n)
    mu = sum(k * r for k, r in parts)
    w0 = min(max(int(round(mu)) - n // 2, lo), lo + len(lin) - n)
    o = w0 - lo
    rolled = [circ[(o + i) % n] for i in range(n)]
    window = lin[o:o + n]
    assert max(abs(Fraction(float(x)) - y) for x, y in zip(z, rolled)) <= Fraction(eta - out)
    wrapped = max(abs(x - y) for x, y in zip(rolled, window))
    assert 0 < wrapped <= Fraction(out)
    assert max(abs(Fraction(float(x)) - y) for x, y in zip(z, window)) <= Fraction(eta)
    exact_law = _exact_sum_law(parts)
    assert Fraction(out) >= sum(exact_law[:w0]) + sum(exact_law[w0 + n:]) > 0


def test_windowed_fft_is_none_when_no_shorter_window_holds_the_mass():
    assert _window_case(1e-300)[3] is None


@pytest.mark.parametrize("eps0", [0.5, 2.0], ids=["e0.5", "e2"])
def test_windowed_component_at_1e8_matches_the_full_transform(monkeypatch, eps0):
    """A wide interval at n = 1e8: the windowed law is shorter and its certified delta at the target's epsilon is
    within 1e-3 of the full transform's (below it: fewer entries widened by the FFT's error)."""
    N, p = 10**8 - 1, math.exp(eps0) / (1 + math.exp(eps0))
    win = exact._component(N, 29192899, 43789347, p, 1 - p, 1e-40)
    monkeypatch.setattr(exact, "_fft_conv3_window", lambda *args: None)
    full = exact._component(N, 29192899, 43789347, p, 1 - p, 1e-40)
    assert win[0].size < full[0].size
    from chainamp.privacy import DominatingPair

    pairs = [DominatingPair.from_roc(*_pairs.roc_upper_both(*c[:4])) for c in (win, full)]
    e = pairs[1].epsilon(1e-6)
    d = [pair.delta(e) for pair in pairs]
    assert d[1] * (1 - 1e-3) <= d[0] <= d[1] and d[0] > 1e-7


@pytest.mark.parametrize("seed", range(3), ids=lambda s: f"seed{s}")
def test_gallop_finds_the_bisection_answer(seed):
    """``_largest_true`` (gallop from a guess, then bisect) against a scan, for monotone predicates, every guess
    inside, below and above the range; the windows it sets keep their Chernoff guarantee (checked at the ends)."""
    from chainamp.shuffle._binomial import _largest_true, binomial_window, chernoff_log_tail

    rng = np.random.default_rng(seed)
    for _ in range(200):
        a = int(rng.integers(-5, 50))
        b = a + int(rng.integers(0, 300))
        cut = int(rng.integers(a, b + 2))  # pred true below cut
        expect = max(a, min(b, cut - 1))
        for g in (a - 7, a, (a + b) // 2, cut, b, b + 9, int(rng.integers(a - 3, b + 4))):
            assert _largest_true(lambda k: k < cut, a, b, g) == expect
    for n, p in [(10**8, 0.6224593312018546), (12345, 0.01), (7, 0.5), (10**6, 1e-7)]:
        lo, w, dropped = binomial_window(n, p)
        lt = math.log(1e-40 / 2)
        assert chernoff_log_tail(n, p, lo - 1, False) <= lt and chernoff_log_tail(n, p, lo + w.size, True) <= lt
        assert lo == 0 or chernoff_log_tail(n, p, lo, False) > lt  # the largest such lo (a tight window)


@pytest.mark.parametrize("fft", [False, True], ids=["direct", "fft"])
def test_lower_points_are_two_sorted_runs(monkeypatch, fft):
    """The lower's points of an exact dataset are two runs sorted by s (each order's prefixes), so the merge keeps
    what ``add`` keeps."""
    if fft:
        monkeypatch.setattr(exact, "FFT_MIN_WORK", 0.0)
    N, p = 3000, math.exp(2.0) / (1 + math.exp(2.0))
    a, c = _pairs.HullAccumulator(), _pairs.HullAccumulator()
    for m in (0, 1, 7):
        z, rel, dropped, eta = exact._component_law(N, m, m, p, 1 - p, 1e-40)
        assert (eta > 0) == fft
        s, b = exact._lower_points((*exact._user_pair(z, p, 1 - p), eta), rel, dropped)
        n1 = z.size + 2
        assert np.all(np.diff(s[:n1]) >= 0) and np.all(np.diff(s[n1:]) >= 0)
        a.add(s, b)
        c.add_runs(s, b, n1)
        assert np.array_equal(a.s, c.s) and np.array_equal(a.b, c.b)
