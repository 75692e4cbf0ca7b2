"""The lattice ladder of the blanket pair (chainamp.shuffle._ladder), against exact arithmetic: the n-user sum
E[(U_1 + ... + U_n)_+] / n in Fractions, and the blanket pair in the histogram form of Balle et al. 2019."""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from chainamp.shuffle import _ladder, blanket_delta, blanket_epsilon
from chainamp.shuffle._ladder import sum_positive_part


def _exact_sum(values, probs, zero, n) -> Fraction:
    """E[(U_1 + ... + U_n)_+] / n in exact rationals (the atoms as the floats given)."""
    atoms = [(Fraction(v), Fraction(p)) for v, p in zip(values, probs)] + [(Fraction(0), Fraction(zero))]
    dist = {Fraction(0): Fraction(1)}
    for _ in range(n):
        new: dict = {}
        for s, ps in dist.items():
            for v, p in atoms:
                new[s + v] = new.get(s + v, 0) + ps * p
        dist = new
    return sum(max(s, 0) * p for s, p in dist.items()) / n


def _random_atoms(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 5))
    v = rng.normal(size=m) * rng.choice([1e-3, 1.0, 50.0]) - 0.2 * rng.random()
    p = rng.dirichlet(np.ones(m + 1))
    return v, p[:m], float(1.0 - math.fsum(p[:m].tolist())) + 2.0**-52, int(rng.integers(1, 8))


@pytest.mark.parametrize("cap", [8, 64, 512], ids=lambda c: f"cap{c}")
@pytest.mark.parametrize("seed", range(8), ids=lambda s: f"seed{s}")
def test_ladder_is_above_the_exact_sum(seed, cap):
    v, p, z, n = _random_atoms(seed)
    exact = _exact_sum(v, p, z, n)
    got = sum_positive_part(v, p, z, n, cap=cap)
    assert Fraction(got) >= exact
    if cap == 512:  # a fine lattice: tight
        assert got <= float(exact) * (1 + 1e-4) + 1e-300


def test_ladder_integer_atoms_large_n_is_tight():
    """Integer atoms: the exact sum by full convolution (no lattice error) at n = 1000, against the ladder."""
    vals, probs, zero, n = np.array([3.0, -2.0, -1.0]), np.array([0.1, 0.1, 0.4]), 0.4, 1000
    base = np.zeros(6)
    for v, p in zip(vals, probs):
        base[int(v) + 2] += p
    base[2] += zero
    dist, b, k = np.array([1.0]), base, n
    while k:
        if k & 1:
            dist = np.convolve(dist, b)
        k >>= 1
        if k:
            b = np.convolve(b, b)
    ref = float((np.maximum(np.arange(dist.size) - 2 * n, 0) * dist).sum()) / n
    got = sum_positive_part(vals, probs, zero + 2.0**-52, n)
    assert ref * (1 - 1e-9) <= got <= ref * 1.02


def test_overflow_mass_is_added(monkeypatch):
    """With a huge overflow allowance most of the right tail leaves the lattice: only its accounting
    (q * n * max U) keeps the bound above the exact value (remove it and this test fails)."""
    monkeypatch.setattr(_ladder, "_OVERFLOW", 0.2)
    v, p, z = np.array([1.0, -0.25]), np.array([0.3, 0.6]), 0.1
    for n in (3, 6):
        assert Fraction(sum_positive_part(v, p, z, n, cap=8)) >= _exact_sum(v, p, z, n)


def test_all_atoms_non_positive_give_zero():
    assert sum_positive_part(np.array([-1.0, 0.0]), np.array([0.5, 0.5]), 0.0, 10) == 0.0


def _blanket_pair_exact(R, a, b, n, eps):
    """The blanket pair's delta in its histogram form (Balle et al. 2019, Section 3): sum over B ~ Bin(n - 1, g)
    of sum_h [P_B(h) - e^eps Q_B(h)]_+, plus the revealing outputs; exact rationals, e^eps in 40 digits."""
    mpmath.mp.dps = 40
    e = mpmath.exp(mpmath.mpf(eps))
    m = len(R[0])
    mu = [min(row[y] for row in R) for y in range(m)]
    g = sum(mu)
    sup = [y for y in range(m) if mu[y] > 0]
    om = [mu[y] / g for y in sup] if g > 0 else []
    total = mpmath.mpf(0)
    blanket = {tuple([0] * len(sup)): Fraction(1)}
    for bb in range(n):
        pb = Fraction(math.comb(n - 1, bb)) * g**bb * (1 - g) ** (n - 1 - bb)
        d = mpmath.mpf(0)
        keys: dict = {}
        for h, pr in blanket.items():
            for j, y in enumerate(sup):
                hh = h[:j] + (h[j] + 1,) + h[j + 1:]
                p0, p1 = keys.get(hh, (0, 0))
                keys[hh] = (p0 + pr * R[a][y], p1 + pr * R[b][y])
        for p0, p1 in keys.values():
            d += max(mpmath.mpf(0), mpmath.mpf(Fraction(p0).numerator) / Fraction(p0).denominator
                     - e * mpmath.mpf(Fraction(p1).numerator) / Fraction(p1).denominator)
        total += mpmath.mpf(pb.numerator) / pb.denominator * d
        new: dict = {}
        for h, pr in blanket.items():
            for j in range(len(sup)):
                hh = h[:j] + (h[j] + 1,) + h[j + 1:]
                new[hh] = new.get(hh, 0) + pr * om[j]
        blanket = new
    for y in range(m):
        if mu[y] == 0:
            x0, x1 = R[a][y], R[b][y]
            total += max(mpmath.mpf(0), mpmath.mpf(x0.numerator) / x0.denominator
                         - e * mpmath.mpf(x1.numerator) / x1.denominator)
    return total


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_ladder_equals_the_blanket_pair_histogram_form(seed):
    """Five outputs (beyond the closed form's three classes): the ladder is above the blanket pair's exact
    value and within 1e-4 relative of it (the derivation of the one-sum form, checked)."""
    rng = np.random.default_rng(70 + seed)
    k, m, n = 3, 5, int(rng.integers(2, 5))
    raw = rng.integers(1 if seed % 2 else 0, 9, size=(k, m)) + np.eye(k, m, dtype=int) * 6
    R = [[Fraction(int(x), int(row.sum())) for x in row] for row in raw]
    Rf = [[float(x) for x in row] for row in R]
    for eps in (0.0, 0.2, 0.7):
        exact = max(_blanket_pair_exact(R, a, b, n, eps) for a in range(k) for b in range(k) if a != b)
        got = blanket_delta(Rf, n, [eps], progress=False)[0]
        assert mpmath.mpf(got) >= exact
        assert got <= float(exact) * (1 + 1e-4) + 1e-15


def test_unary_encoding_scales_and_falls_with_n():
    """The 8-category OUE (256 outputs): minutes at n = 1000 and an epsilon flat in n before the ladder."""
    from chainamp.mechanisms import unary_encoding
    M = np.asarray(unary_encoding(8, 2.0).matrix)
    t = time.perf_counter()
    eps = [blanket_epsilon(M, n, 1e-6) for n in (10**3, 10**5, 10**8)]
    assert time.perf_counter() - t < 20.0
    assert eps[0] > 3 * eps[1] > 9 * eps[2] > 0  # about 1 / sqrt(n)
    for n, e in zip((10**3, 10**5), eps):
        assert blanket_delta(M, n, [e], progress=False)[0] <= 1e-6


def test_executor_gives_the_same_result():
    rng = np.random.default_rng(5)
    R = rng.dirichlet(np.ones(6), size=4)
    plain = blanket_delta(R, 10**4, [0.05, 0.2, 1.0], progress=False)
    e_plain = blanket_epsilon(R, 10**4, 1e-6)
    with ThreadPoolExecutor(2) as ex:
        par = blanket_delta(R, 10**4, [0.05, 0.2, 1.0], progress=False, executor=ex)
        e_par = blanket_epsilon(R, 10**4, 1e-6, executor=ex)
    assert np.array_equal(plain, par)
    assert e_par == e_plain


@pytest.mark.parametrize("k,eps0,n", [(4, 2.0, 1000), (10, 3.0, 10**4), (2, 2.0, 1000)], ids=["k4", "k10", "k2"])
def test_krr_profile_does_not_rise_near_eps0(k, eps0, n):
    """Review finding: the closed form's rounding margin (16 u max|l| N per term, whatever the tail it multiplied)
    was a floor near 1e-14 growing with e^eps, so the certified k-RR profile rose with eps up to eps0. Each eps
    evaluated on its own (no running minimum across a call)."""
    from chainamp.operators import SymmetricChannel
    S = SymmetricChannel.from_epsilon(k, eps0)
    grid = np.linspace(0.3 * eps0, eps0 * 0.999, 60)
    d = np.array([blanket_delta(S, n, [x], progress=False)[0] for x in grid])
    above = d > 1e-18  # the ladder (used where the closed form would block sizes) has a floor near 1e-21
    first_floor = int(np.argmin(above)) if not above.all() else d.size
    assert np.all(above[:first_floor]) and not np.any(above[first_floor:])
    assert np.all(np.diff(d[:first_floor]) <= 0.0)
    assert d[-1] < 1e-18
    whole = blanket_delta(S, n, grid, progress=False)  # one call: non-increasing throughout
    assert np.all(np.diff(whole) <= 0.0) and np.all(whole >= 0.0)


def test_profile_calls_are_non_increasing():
    from chainamp.mechanisms import unary_encoding
    M = np.asarray(unary_encoding(4, 1.0).matrix)
    eps = np.linspace(0.0, 1.0, 101)[::-1]  # any order
    d = blanket_delta(M, 300, eps, progress=False)
    assert np.all(np.diff(d[::-1]) <= 0.0)


def test_amplify_shuffled_executor_is_identical():
    """amplify_shuffled's executor: the blanket method maps its distinct pairs on it; every number is the same."""
    import chainamp as ca
    R = np.random.default_rng(11).dirichlet(np.ones(5), size=4)
    plain = ca.amplify_shuffled(R, 5000, method="blanket", progress=False)
    with ThreadPoolExecutor(2) as ex:
        par = ca.amplify_shuffled(R, 5000, method="blanket", progress=False, executor=ex)
        assert par.epsilon == plain.epsilon
        assert par.epsilon_at(1e-8) == plain.epsilon_at(1e-8)
        grid = np.linspace(0.0, 1.0, 7)
        assert np.array_equal(par.profile.delta(grid), plain.profile.delta(grid))


@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
def test_wide_atoms_window_is_above_the_exact_sum(seed):
    """Atoms spread over far more than sigma (one rare extreme output): the windowed bound (split above, raised
    below) is taken; still above the exact value."""
    rng = np.random.default_rng(90 + seed)
    v = np.concatenate((rng.normal(size=3) * 0.1 - 0.02, [rng.choice([300.0, -300.0])]))
    p = np.concatenate((rng.dirichlet(np.ones(3)) * 0.999, [1e-3]))
    n = int(rng.integers(2, 6))
    got = sum_positive_part(v, p * (1 - 1e-3), 1e-3 * 0.999 + 2.0**-52, n, cap=64)
    assert Fraction(got) >= _exact_sum(v, p * (1 - 1e-3), 1e-3 * 0.999 + 2.0**-52, n)


def test_wide_atoms_window_is_used():
    """A rare atom far below (value -5000, sigma about 5): one lattice over all atoms is 500x coarser than the bulk."""
    v, p = np.array([0.05, -0.1, -5000.0]), np.array([0.5, 0.499999, 1e-6])
    full = _ladder._ladder_sum(v, p, 2.0**-52, 10**4, 512)
    windowed = sum_positive_part(v, p, 2.0**-52, 10**4)
    assert windowed < 1e-6 * full
    assert Fraction(sum_positive_part(v, p, 2.0**-52, 3, cap=64)) >= _exact_sum(v, p, 2.0**-52, 3)


@pytest.mark.parametrize("k,n,ratio", [(2, 5, (7, 3)), (3, 4, (7, 3)), (4, 4, (2, 5))], ids=["k2", "k3", "anti-k4"])
def test_krr_ladder_where_sizes_would_be_blocked(k, n, ratio):
    """max_terms=1 makes the closed form block its blanket sizes, so k-RR (structured and dense) goes through the
    ladder: above the blanket pair's exact value, within 1e-2 of it (a 512-point lattice on a handful of atoms)."""
    from chainamp.operators import SymmetricChannel
    e0 = Fraction(*ratio)
    R = [[(e0 if x == y else 1) / (e0 + k - 1) for y in range(k)] for x in range(k)]
    S = SymmetricChannel(k, float(R[0][0]), float(R[0][1]))
    for eps in (0.0, 0.1, 0.4):
        exact = _blanket_pair_exact(R, 0, 1, n, eps)
        for got in (blanket_delta(S, n, [eps], max_terms=1, progress=False)[0],
                    blanket_delta([[float(x) for x in row] for row in R], n, [eps], max_terms=1, progress=False)[0]):
            assert mpmath.mpf(got) >= exact
            assert got <= float(exact) * (1 + 1e-2) + 1e-15
