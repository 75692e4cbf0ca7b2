"""Safety margins of ``chainamp/shuffle/`` (issue 19, round 3), each on inputs built to sit on its rounding edge,
against an exact reference (``fractions.Fraction`` or mpmath at 40+ digits).

Every test names the mutation it catches; each mutation was applied by hand to the worktree, the test run and seen
to FAIL, and the code restored. Where a margin is covered by a larger one (no input reaches its edge), the test
checks the covering margin's edge instead and says so (the argument sits next to the margin in the code).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from chainamp.operators import SymmetricChannel
from chainamp.shuffle import _binomial, _ladder, blanket_delta
from chainamp.shuffle import exact as shx
from chainamp.shuffle._binomial import binomial_window
from chainamp.shuffle.blanket import _ladder_total, _lower_e, _three_classes_Db

U = 2.0**-53


# ---------------------------------------------------------------------------------------------------------------
# 1. _ladder.py: the 2^-53 push of the split weights (covered by the first block's r; its edge is tested)
# ---------------------------------------------------------------------------------------------------------------

def _first_block(monkeypatch, values, probs, zero, cap=512):
    """The ladder's first block (before any sum), captured as it is built."""
    seen = []

    class Recorder(_ladder._Block):
        def __init__(self, *args):
            super().__init__(*args)
            seen.append(self)

    monkeypatch.setattr(_ladder, "_Block", Recorder)
    _ladder._ladder_sum(np.asarray(values, float), np.asarray(probs, float), zero, 1, cap)
    return seen[0]


def _exact_spread(values, probs, zero, cap=512) -> dict:
    """The exact mean-preserving spread of the atoms onto the ladder's lattice (exact weights), in Fractions."""
    vmax, vmin = max(values), min(min(values), 0.0)
    h = Fraction(2) ** math.ceil(math.log2((vmax - vmin) / (cap - 4)))
    out: dict = {0: Fraction(zero)}
    for v, p in zip(values, probs):
        x = Fraction(v) / h
        i = math.floor(x)
        out[i] = out.get(i, 0) + Fraction(p) * (i + 1 - x)
        out[i + 1] = out.get(i + 1, 0) + Fraction(p) * (x - i)
    return out


def _shortfall(blk, exact: dict) -> Fraction:
    """``max_i p_i / c_i - 1`` over the lattice (p exact, c the stored vector); the invariant is ``p <= (1 + r) c``."""
    worst = Fraction(0)
    for i, p in exact.items():
        j = i - blk.off
        c = Fraction(float(blk.c[j])) if 0 <= j < blk.c.size else Fraction(0)
        if p > 0:
            assert c > 0, f"lattice point {i} lost its mass {float(p)}"
            worst = max(worst, p / c - 1)
    return worst


def _weight_edge_atoms(seed):
    """Atoms ``x = v / h`` in (-1/2, 0), where ``x - floor(x) = 1 + x`` is rounded (the only inexact weight; for
    x in (0, 1/2) it is ``1 - x``), down for about half of them, beside one large atom that sets h = 1."""
    rng = np.random.default_rng(seed)
    xs = -rng.uniform(1e-18, 0.5, 8) * rng.choice([1e-15, 1e-10, 1e-3, 1.0], 8)
    xs = np.concatenate((xs, -xs))  # both inexact weights: 1 + x (x < 0) and 1 - x (x > 0)
    vals = np.concatenate(([508.0], xs))
    probs = rng.dirichlet(np.ones(vals.size)) * 0.9
    return vals, probs, 0.1


def _sum_edge_atoms(seed):
    """Sixty atoms on one lattice point (weight exactly 1): the entry is a float sum of sixty masses."""
    rng = np.random.default_rng(seed)
    vals = np.concatenate(([508.0], np.full(60, -3.0)))
    probs = rng.dirichlet(np.ones(vals.size)) * 0.999
    return vals, probs, 0.001


@pytest.mark.parametrize("build", [_weight_edge_atoms, _sum_edge_atoms], ids=["weight-edge", "sum-edge"])
def test_ladder_first_block_covers_exact_spread(monkeypatch, build):
    """The ladder's first lattice vector ``c`` satisfies ``p <= (1 + r) c`` entrywise against the EXACT spread p
    (exact weights ``x - floor(x)``, ``floor(x) + 1 - x``), with ``r = (atoms + 8) u``.

    The ``2^-53`` push of the split weights is covered by this r (argument next to it in ``_ladder.py``): a weight
    is inexact only for x in (-1/2, 1/2), by at most ``2^-54 <= u w`` (w >= 1/2 there), and an entry's sums need at
    most ``(atoms + 2) u``, so r keeps 5u of slack. Checked by hand: with both ``+ 2.0**-53`` removed this test
    still passes (the worst shortfall over these seeds grows from 0.97 u to 2.4 u, against r = 17 u); with
    ``r = (values.size + 8) * _U`` replaced by ``r = 0.0`` it FAILS (the realised shortfall is positive on both
    edges: up to 0.97 u on the weight edge and 2.6 u on the sum edge)."""
    worst = Fraction(0)
    for seed in range(40):
        vals, probs, zero = build(seed)
        blk = _first_block(monkeypatch, vals, probs, zero)
        short = _shortfall(blk, _exact_spread(vals, probs, zero))
        assert short <= Fraction(blk.r), (seed, float(short / Fraction(U)), blk.r / U)
        worst = max(worst, short)
    assert worst > 0  # the inputs sit on the edge: without r the invariant would be broken


# ---------------------------------------------------------------------------------------------------------------
# 2. blanket.py `_ladder_total`: the ladder atoms' 4u margin
# ---------------------------------------------------------------------------------------------------------------

def _exact_ladder_total(lad, e: float, n: int) -> Fraction:
    """``E[(U_1 + ... + U_n)_+] / n``, ``U = (r0 - e r1) / mu`` w.p. ``probs`` (else 0), e and all data exact."""
    r0, r1, mu, probs, zero = lad
    E = Fraction(e)
    atoms = [((Fraction(a) - E * Fraction(b)) / Fraction(m), Fraction(p)) for a, b, m, p in zip(r0, r1, mu, probs)]
    atoms.append((Fraction(0), Fraction(zero)))
    dist = {Fraction(0): Fraction(1)}
    for _ in range(n):
        new: dict = {}
        for s, ps in dist.items():
            for v, p in atoms:
                new[s + v] = new.get(s + v, 0) + ps * p
        dist = new
    return sum((s * p for s, p in dist.items() if s > 0), Fraction(0)) / n


def _cancelling_pair(eps: float, seed: int):
    """Ladder data of a two-row randomizer with one output on the edge: ``r0 = fl(e r1)`` where the product rounds
    UP, so the exact atom ``(r0 - e r1) / mu`` is positive while the computed one is exactly 0; the other outputs'
    atoms are negative. Without the margin every computed atom is <= 0 and the ladder returns 0."""
    e = _lower_e(eps)
    rng = np.random.default_rng(seed)
    best = None
    for r1 in (rng.uniform(0.05, 0.6, 400) / e).tolist():  # r0 = e r1 below 0.6
        up = Fraction(e * r1) - Fraction(e) * Fraction(r1)
        if up > 0 and (best is None or up / Fraction(r1) > best[0]):
            best = (up / Fraction(r1), r1)
    r1a = best[1]
    r0a = e * r1a
    r0 = np.array([r0a, 0.3 * (1 - r0a), 0.7 * (1 - r0a)])
    r1 = np.array([r1a, 0.45 * (1 - r1a), 0.55 * (1 - r1a)])
    mu = np.minimum(r0, r1)
    zero = max(0.0, 1.0 - math.fsum(mu.tolist())) + 2.0**-52
    assert Fraction(r0a) - Fraction(e) * Fraction(r1a) > 0 and r0a - e * r1a == 0.0  # on the edge
    assert np.all((r0[1:] - e * r1[1:]) < 0)
    return (r0, r1, mu, mu.copy(), zero), e


@pytest.mark.parametrize("eps,seed", [(1.0, 0), (0.3, 1), (2.5, 2)], ids=["eps1", "eps0.3", "eps2.5"])
@pytest.mark.parametrize("n", [1, 2, 3], ids=lambda n: f"n{n}")
def test_ladder_atoms_margin_at_cancellation(eps, seed, n):
    """``_ladder_total`` (the blanket ladder at a given e) is never below the exact ``E[(U_1+...+U_n)_+] / n`` with
    ``U = (r0 - e r1) / mu``, on an output where ``r0 - fl(e r1)`` cancels to 0 although the exact atom is
    positive (``fl(e r1)`` rounded up by up to ``u e r1``).

    Mutation caught (checked by hand): deleting ``+ 4 * _U * (r0 + e * r1) / mu`` in ``_ladder_total`` makes every
    computed atom <= 0, the ladder returns 0 and this test FAILS for every case (exact values about 1e-17).
    Through ``blanket_delta`` the same edge is also covered by ``_lower_e``'s 4u (e is lowered below e^eps by more
    than the product's rounding); this test holds ``_ladder_total`` to its own contract (e exact)."""
    lad, e = _cancelling_pair(eps, seed)
    got = _ladder_total(lad, e, n)
    exact = _exact_ladder_total(lad, e, n)
    assert exact > 0
    assert Fraction(got) >= exact, (got, float(exact))
    assert got < 1e-12  # and not vacuous: the bound stays at the scale of the rounding


# ---------------------------------------------------------------------------------------------------------------
# 3. blanket.py `_three_classes_Db` (k-RR closed form): the per-term margin
# ---------------------------------------------------------------------------------------------------------------

def _exact_Db(r0c, r1c, omc, b: int, e: float) -> Fraction:
    """``D_b = E[(sum_c h_c l_c)_+] / (b + 1)``, ``h ~ Mult(b + 1, omega)``, ``l_c = (r0_c - e r1_c) / omega_c``,
    every input (the float class data and e) taken as exact."""
    E = Fraction(e)
    l = [(Fraction(x) - E * Fraction(y)) / Fraction(w) for x, y, w in zip(r0c, r1c, omc)]
    om = [Fraction(w) for w in omc]
    N = b + 1
    total = Fraction(0)
    for h0 in range(N + 1):
        for h1 in range(N + 1 - h0):
            h2 = N - h0 - h1
            v = h0 * l[0] + h1 * l[1] + h2 * l[2]
            if v > 0:
                ways = math.factorial(N) // (math.factorial(h0) * math.factorial(h1) * math.factorial(h2))
                total += ways * om[0] ** h0 * om[1] ** h1 * om[2] ** h2 * v
    return total / N


def _krr_classes(k: int, eps0: float):
    ee = math.exp(eps0)
    o = 1.0 / (ee + k - 1)
    d = ee * o
    return np.array([d, o, (k - 2) * o]), np.array([o, d, (k - 2) * o]), np.array([1 / k, 1 / k, (k - 2) / k])


@pytest.mark.parametrize("k", [3, 5], ids=lambda k: f"k{k}")
def test_krr_closed_form_per_term_margin(k):
    """k-RR at eps0 = 1e-12 (d and o agree to 12 digits), e swept up to ``e^eps0``: every ``l_c`` is a near-total
    cancellation (about 1e-15 against terms near 1/k), so its rounding (``fl(e o)``, within ``u e o``) is a relative
    1e-4..1e-1 of l, far beyond the 1e-6 of ``SHUFFLE_SPECIAL_RTOL`` on the tails it multiplies. The closed form's
    ``D_b`` must stay above the exact one (Fractions, e and the class data exact) for every b.

    Mutation caught (checked by hand): ``margin = 32 * _U * lam * (a1 + N * b_hi) + 8 * _U * (...)`` replaced by
    ``margin = 0.0`` makes this test FAIL (k = 3: D_2 4.9 % below the exact value at e = exp(0.999 eps0); k = 5:
    D_4 0.19 % below at e = exp(0.794 eps0)). With the margin the worst case is 1.5 % above. (Through
    ``blanket_delta``, e is ``_lower_e(eps)``, 4u below e^eps, which covers this cancellation too: see
    :func:`test_krr_blanket_delta_at_the_top_against_mpmath`.)"""
    eps0 = 1e-12
    r0c, r1c, omc = _krr_classes(k, eps0)
    bs = np.arange(0, 5)
    edge = False
    for frac in np.linspace(0.0, 0.999, 40).tolist():
        e = math.exp(eps0 * frac)
        l0 = (r0c[0] - e * r1c[0]) / omc[0]
        l0_exact = (Fraction(r0c[0]) - Fraction(e) * Fraction(r1c[0])) / Fraction(omc[0])
        edge |= abs(Fraction(l0) / l0_exact - 1) > Fraction(1, 10**5)  # rounding far above the 1e-6 margins
        got = _three_classes_Db(r0c.copy(), r1c.copy(), omc.copy(), bs, e)
        for b in bs.tolist():
            exact = _exact_Db(r0c, r1c, omc, b, e)
            assert Fraction(float(got[b])) >= exact, (k, frac, b, float(got[b]), float(exact))
    assert edge


def _exact_krr_blanket(k: int, d: float, o: float, n: int, eps: float) -> mpmath.mpf:
    """The blanket pair's delta of k-RR (entries d, o as given) at eps, by mpmath at 60 digits (e^eps exact)."""
    with mpmath.workdps(60):
        d, o = mpmath.mpf(d), mpmath.mpf(o)
        E = mpmath.exp(mpmath.mpf(eps))
        om = [mpmath.mpf(1) / k, mpmath.mpf(1) / k, mpmath.mpf(k - 2) / k]
        l = [(d - E * o) * k, (o - E * d) * k, (k - 2) * o * (1 - E) / om[2]]
        g = k * o
        total = mpmath.mpf(0)
        for b in range(n):
            N = b + 1
            Db = mpmath.mpf(0)
            for h0 in range(N + 1):
                for h1 in range(N + 1 - h0):
                    h2 = N - h0 - h1
                    v = h0 * l[0] + h1 * l[1] + h2 * l[2]
                    if v > 0:
                        ways = mpmath.factorial(N) / (mpmath.factorial(h0) * mpmath.factorial(h1) * mpmath.factorial(h2))
                        Db += ways * om[0] ** h0 * om[1] ** h1 * om[2] ** h2 * v
            total += mpmath.binomial(n - 1, b) * g ** b * (1 - g) ** (n - 1 - b) * Db / N
        return total


@pytest.mark.parametrize("k,eps0", [(3, 1e-12), (5, 1e-9)], ids=["k3-1e-12", "k5-1e-9"])
def test_krr_blanket_delta_at_the_top_against_mpmath(k, eps0):
    """Through ``blanket_delta`` (e lowered by ``_lower_e``) at eps within 1e-4 relative of the channel's own
    ``log(d / o)`` and on the neighbouring floats, where every ``l_c`` cancels: never below the exact blanket delta
    (mpmath, e^eps at 60 digits). The closed form's early return (``lmax <= 0``: zeros without the margin) is
    sound here only because ``_lower_e`` lowers e by 4u; this test would catch a change of that."""
    R = SymmetricChannel.from_epsilon(k, eps0)
    d, o = R.diagonal, R.off_diagonal
    top = math.log(d / o)
    for n in (2, 3):
        for j in (-3, -1, 0, 1):
            eps = top * (1 + j * 1e-4)
            for x in (eps, math.nextafter(eps, 0.0), math.nextafter(eps, 1.0)):
                got = float(blanket_delta(R, n, [x])[0])
                assert mpmath.mpf(got) >= _exact_krr_blanket(k, d, o, n, x), (n, j, x, got)


# ---------------------------------------------------------------------------------------------------------------
# 4. _binomial.py `_window_pmf`: the `6 j u` guard of the ratio recurrence
# ---------------------------------------------------------------------------------------------------------------

def _drifting_p(seed: int = 1) -> float:
    """A p near 1/3 whose computed ``p / (1 - p)`` is off by about 1.7 u: every step of the recurrence drifts the same
    way, the worst case of its error (the per-step roundings of ``(n - k) / (k + 1)`` only add a random walk)."""
    rng = np.random.default_rng(seed)
    best = None
    for p in rng.uniform(0.25, 0.35, 4000).tolist():
        r = p / (1.0 - p)
        exact = Fraction(p) / (1 - Fraction(p))
        dr = abs(Fraction(r) / exact - 1)
        if best is None or dr > best[0]:
            best = (dr, p)
    assert best[0] > Fraction(3, 2) * Fraction(U)
    return best[1]


class _ExactPmf:
    """``Bin(n, p)`` at integer points, correctly rounded (mpmath at 40 digits by exact ratios from one point)."""

    def __init__(self, n: int, p: float, lo: int, hi: int):
        self.n, self.p, self.lo = n, p, lo
        with mpmath.workdps(40):
            P = mpmath.mpf(p)  # exact: a double
            Q = 1 - P
            v = mpmath.binomial(n, lo) * P ** lo * Q ** (n - lo)
            vals = [v]
            for k in range(lo, hi):
                v = v * (n - k) / (k + 1) * P / Q
                vals.append(v)
        self.mp = vals
        self.float = np.array([float(x) for x in vals])

    def __call__(self, k, n, p):
        assert n == self.n and p == self.p
        idx = np.asarray(k, dtype=np.int64) - self.lo
        return self.float[idx]


@pytest.mark.parametrize("width", [80, 100, 500, 2000], ids=lambda w: f"w{w}")
@pytest.mark.parametrize("side", ["up", "down"])
def test_binomial_recurrence_guard(monkeypatch, width, side):
    """``_window_pmf`` keeps every mass within ``PMF_RTOL`` given a pmf accurate to ``PMF_RTOL / 2``: the ratio
    recurrence only while ``6 j u <= PMF_RTOL / 2``. ``PMF_RTOL`` (1e-9) puts the guard's edge at a window of
    750,599 points, reached only at ``n p q`` above about 7e8 (n > 3e9, past the 1e8 users the package targets),
    so the budget is scaled down here to ``1200 u``: the edge is a window of 100 points. The pmf handed in is
    correctly rounded (mpmath), so every error measured is the recurrence's; p is chosen so ``p / q`` is off by
    1.7 u (a systematic drift of 1.7 u per step, 169 u at the edge against the guard's 600 u) and the window runs
    one way from the mode (j up to the width).

    Mutation caught (checked by hand): dropping ``or 6.0 * width * UNIT_ROUNDOFF > PMF_RTOL / 2.0`` makes the
    widths 500 and 2000 FAIL (835 u and 3,380 u against the 600 u budget); weakening the guard to ``1.0 * width``
    makes width 500 fail."""
    monkeypatch.setattr(_binomial, "PMF_RTOL", 1200 * U)
    n, p = 10**6, _drifting_p()
    mode = int(math.floor((n + 1) * p))
    lo, hi = (mode, mode + width) if side == "up" else (mode - width, mode)
    ref = _ExactPmf(n, p, lo, hi)
    got = _binomial._window_pmf(n, p, lo, hi, ref)
    budget = _binomial.PMF_RTOL / 2.0 + 2 * U  # the recurrence's share, plus the reference's own rounding
    with mpmath.workdps(40):
        worst = max(abs(mpmath.mpf(float(g)) / e - 1) for g, e in zip(got.tolist(), ref.mp))
    assert worst <= budget, (float(worst) / U, budget / U)
    if width <= 100:  # inside the guard: the recurrence was used and its drift is visible (the input is on the edge)
        assert worst > 50 * U


def test_binomial_guard_edge_is_past_the_deployed_scale():
    """At the real ``PMF_RTOL`` the guard's edge (a window of ``PMF_RTOL / (12 u)`` points) is far beyond the widest
    window at n = 1e8 (p = 1/2, the widest): the recurrence's worst drift there (1.7 u a step, measured above) is
    at most ``1.7 u * width``, within ``PMF_RTOL / 2``."""
    edge = _binomial.PMF_RTOL / (12 * U)
    lo, w, _ = binomial_window(10**8, 0.5)
    assert w.size < edge / 5
    assert 1.7 * U * w.size < _binomial.PMF_RTOL / 2


# ---------------------------------------------------------------------------------------------------------------
# 5. exact.py `_lower_points`: the FFT direction of the binary lower (P down, Q up by eta)
# ---------------------------------------------------------------------------------------------------------------

def _exact_rr_pair(N: int, m: int, p: float):
    """``P_0, P_1`` of binary RR among ``N`` others with m ones (module docstring of exact.py), in Fractions."""
    P, Q = Fraction(p), 1 - Fraction(p)
    z = [Fraction(1)]
    for i in range(N):
        pr = P if i < m else Q
        z = [(z[k] if k < len(z) else 0) * (1 - pr) + (z[k - 1] if k >= 1 else 0) * pr for k in range(len(z) + 1)]
    z0, z1 = z + [Fraction(0)], [Fraction(0)] + z
    return [P * a + Q * b for a, b in zip(z0, z1)], [Q * a + P * b for a, b in zip(z0, z1)]


@pytest.mark.parametrize("users,p", [(30, 0.99), (40, 0.9), (25, 0.999)], ids=["n30-p.99", "n40-p.9", "n25-p.999"])
def test_binary_lower_fft_direction(monkeypatch, users, p):
    """With the FFT forced (``FFT_MIN_WORK = 0``: eta about 5e-14), every ROC point of the lower of an exact
    dataset is dominated by the test it stands for: ``b <= P(S)`` and ``s >= Q(S)`` exactly (Fractions), S the
    prefix (or suffix, second order) of the window's outcomes. The tails of these pairs are far below eta (down to
    1e-75), so an entry's FFT error dwarfs it: the edge of the eta margin.

    Mutations caught (checked by hand): swapping the direction (``roc_lower(hi_p, lo_q, ...)`` and
    ``roc_lower(hi_q[::-1], lo_p[::-1], ...)``) FAILS every case (b above P(S) and s below Q(S) on most points);
    dropping eta (``if eta > 0.0`` -> ``if False``, the raw FFT values) FAILS every case (noise above the tails)."""
    monkeypatch.setattr(shx, "FFT_MIN_WORK", 0.0)
    N, q = users - 1, 1.0 - p
    for m in range(0, N // 2 + 1, 3):
        P, Q, rel, dropped, raw = shx._component(N, m, m, p, q, shx.WINDOW_TAIL)
        assert raw[2] > 0.0  # the FFT path
        s, b = shx._lower_points(raw, rel, dropped)
        Pe, Qe = _exact_rr_pair(N, m, p)
        off = binomial_window(m, p)[0] + binomial_window(N - m, q)[0]
        Pe, Qe = Pe[off:off + raw[0].size], Qe[off:off + raw[0].size]
        zero = [Fraction(0)]
        es = zero + list(itertools.accumulate(Qe)) + zero + list(itertools.accumulate(Pe[::-1]))
        eb = zero + list(itertools.accumulate(Pe)) + zero + list(itertools.accumulate(Qe[::-1]))
        assert len(es) == s.size
        for i in range(s.size):
            assert Fraction(float(b[i])) <= eb[i], (m, i, float(b[i]), float(eb[i]))
            assert Fraction(float(s[i])) >= es[i], (m, i, float(s[i]), float(es[i]))


def test_binary_lower_fft_curve_at_the_pure_end(monkeypatch):
    """The lower pair of ``binary_rr_shuffle`` with the FFT forced, as a curve: ``H_a(lower) <= max over datasets
    and orders of H_a(exact)`` in Fractions, for a up to ``p / q`` (where the exact curve reaches 0 and only the
    eta-sized tails remain). Mutation caught (checked by hand): swapping the direction FAILS at ``a = p / q``
    (8.5e-11 against 0); dropping eta survives at the curve level (the pointwise test above catches it)."""
    monkeypatch.setattr(shx, "FFT_MIN_WORK", 0.0)
    users, p = 25, 0.999
    N = users - 1
    res = shx.binary_rr_shuffle(users, p)
    assert res.exact_all
    pairs = [_exact_rr_pair(N, m, p) for m in range(N // 2 + 1)]

    def H(P, Q, a):
        return sum((x - a * y for x, y in zip(P, Q) if x > a * y), Fraction(0))

    lp = [Fraction(x) for x in res.lower.p.tolist()]
    lq = [Fraction(x) for x in res.lower.q.tolist()]
    top = Fraction(p) / (1 - Fraction(p))
    for a in (Fraction(1), Fraction(math.exp(0.5 * math.log(p / (1 - p)))), top * Fraction(999, 1000), top):
        exact = max(max(H(P, Q, a), H(Q, P, a)) for P, Q in pairs)
        assert H(lp, lq, a) <= exact, (float(a), float(H(lp, lq, a)), float(exact))


# ---------------------------------------------------------------------------------------------------------------
# 3b. blanket.py, dense randomizers: a class of many outputs (a real bug, fixed)
# ---------------------------------------------------------------------------------------------------------------

def _salted_rr(eps0: float, m: int) -> np.ndarray:
    """Binary RR whose report carries a uniform tag among m values (2m outputs, two blanket classes of m each)."""
    p = math.exp(eps0) / (1.0 + math.exp(eps0))
    a, c = p / m, (1.0 - p) / m
    return np.array([[a] * m + [c] * m, [c] * m + [a] * m])


def _exact_salted_blanket(R: np.ndarray, m: int, n: int, eps: float) -> mpmath.mpf:
    """The blanket pair's delta of :func:`_salted_rr` (entries as given), exactly: its m outputs of a class are
    identical, so the class sums are ``m a`` and ``m c`` (mpmath, 60 digits, e^eps exact)."""
    with mpmath.workdps(60):
        A, C = mpmath.mpf(float(R[0, 0])) * m, mpmath.mpf(float(R[0, m])) * m
        g = 2 * min(A, C)
        E = mpmath.exp(mpmath.mpf(eps))
        lA, lB = (A - E * C) * 2, (C - E * A) * 2  # omega = 1/2 on each class
        total = mpmath.mpf(0)
        for b in range(n):
            N = b + 1
            Db = mpmath.fsum(mpmath.binomial(N, h) * mpmath.mpf(2) ** -N * (h * lA + (N - h) * lB)
                             for h in range(N + 1) if h * lA + (N - h) * lB > 0)
            total += mpmath.binomial(n - 1, b) * g ** b * (1 - g) ** (n - 1 - b) * Db / N
        return total


@pytest.mark.parametrize("eps0,m", [(1.0, 61), (0.5, 100), (1.0, 1000), (1e-6, 61)],
                         ids=["eps1-m61", "eps0.5-m100", "eps1-m1000", "eps1e-6-m61"])
@pytest.mark.parametrize("n", [2, 3, 10], ids=lambda n: f"n{n}")
def test_blanket_class_of_many_outputs_at_the_top(eps0, m, n):
    """A REAL BUG (found in this round, fixed): the closed form took a class's summed ``(r0, r1, omega)`` as exact,
    but each sum of m outputs is rounded (relative ``(m - 1) u``); at eps near the channel's own level every
    ``l_c`` cancels, the rounding made the computed ``l`` of the positive class negative, the closed form returned 0
    (``lmax <= 0``) and ``blanket_delta`` gave 1e-300 where the exact blanket delta is up to 9.7e-17 (above the
    documented 1e-18 floor). Fixed by an error bound ``kappa u lam`` per l that counts the class's outputs
    (``4 + 2m`` for m > 1), used by the early return, the tails and the per-term margin.

    Checked by hand: this test FAILS on the base commit (bf4e44a; 9 of its cases at eps = eps_R and its
    predecessor float) and with ``kappa`` forced back to 4."""
    R = _salted_rr(eps0, m)
    top = math.log(float(R[0, 0]) / float(R[0, m]))
    xs = [top, math.nextafter(top, 0.0), math.nextafter(math.nextafter(top, 0.0), 0.0), top * (1 - 1e-12), 0.5 * top]
    got = blanket_delta(R, n, xs)
    for x, v in zip(xs, got.tolist()):
        assert mpmath.mpf(v) >= _exact_salted_blanket(R, m, n, x), (x, v)


def _exact_three_class_blanket(R0, R1, W, g, n: int, eps: float) -> mpmath.mpf:
    """The blanket delta of one ordered pair whose outputs form at most three classes of identical outputs (class
    sums R0, R1, class omega W, blanket mass g; mpmath, e^eps exact): the multinomial over the classes."""
    E = mpmath.exp(mpmath.mpf(eps))
    cls = [i for i in range(3) if W[i] > 0]
    l = [(R0[i] - E * R1[i]) / W[i] for i in cls]
    total = mpmath.mpf(0)
    for b in range(n):
        N = b + 1
        Db = mpmath.mpf(0)
        for h in itertools.product(range(N + 1), repeat=len(cls)):
            v = sum(hh * ll for hh, ll in zip(h, l))
            if sum(h) == N and v > 0:
                c = mpmath.factorial(N)
                for hh, i in zip(h, cls):
                    c = c * W[i] ** hh / mpmath.factorial(hh)
                Db += c * v
        total += mpmath.binomial(n - 1, b) * g ** b * (1 - g) ** (n - 1 - b) * Db / N
    return total


@pytest.mark.parametrize("seed", range(12), ids=lambda s: f"seed{s}")
def test_blanket_tagged_three_output_randomizer(seed):
    """A random 2 x 3 randomizer whose report carries a uniform tag among m in {1, 7, 61, 200} values (3m outputs, 3
    classes of m identical outputs), through ``blanket_delta`` at eps up to the channel's own level: never below the
    exact blanket delta (mpmath). Without the class-size kappa (forced back to 4) seeds 0 (m = 61), 2 and 8
    (m = 200) FAIL at eps_R (1e-300 against 7.6e-18, 7.0e-18 and 1.9e-17); checked by hand."""
    rng = np.random.default_rng(5)
    for _ in range(seed + 1):  # the seed-th draw of one stream (the cases probed while the bug was found)
        base = rng.dirichlet(np.ones(3), size=2)
        m = int(rng.choice([1, 7, 61, 200]))
    R = np.repeat(base / m, m, axis=1)
    mu = np.minimum(R[0], R[1])
    with mpmath.workdps(60):
        R0 = [mpmath.mpf(float(R[0, i * m])) * m for i in range(3)]
        R1 = [mpmath.mpf(float(R[1, i * m])) * m for i in range(3)]
        MU = [mpmath.mpf(float(mu[i * m])) * m for i in range(3)]
        g = mpmath.fsum(MU)
        W = [x / g for x in MU]
        top = float(max(mpmath.log(R0[i] / R1[i]) for i in range(3)))
        for n in (2, 3):
            xs = [top, math.nextafter(top, 0.0), top * (1 - 1e-14), 0.9 * top, 0.3 * top]
            got = blanket_delta(R, n, xs, neighbors=[(0, 1)])
            for x, v in zip(xs, got.tolist()):
                exact = max(_exact_three_class_blanket(R0, R1, W, g, n, x), _exact_three_class_blanket(R1, R0, W, g, n, x))
                assert mpmath.mpf(v) >= exact, (m, n, x, v, float(exact))
