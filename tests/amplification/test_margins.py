"""Safety margins of the amplification layer (issue 14, item 5), each against a reference exact to far
below one ulp, with no slack: a certified value one float below the truth fails.

* Theorem 1's outputs (Balle, Barthe, Gaboardi, Geumlek 2019): ``eps' = log(1 + gamma (e^eps - 1))``
  of clauses (3)/(4), the products ``gamma delta`` of clauses (1)/(2) and the delta' of clauses (3)/(4)
  on deterministic grids of a few thousand points; a correctly rounded float is below the exact value
  about half the time, so dropping the final outward rounding fails at once.
* The exact profile of a finite mechanism (:func:`chainamp.privacy_profile`): every delta against the
  exact maximum over pairs, and never above 1.
* Products chainamp forms itself: operators whose rows sum to ``1 +- 1e-10`` (accepted, and standing for
  their normalised rows), lists of them, and a 40-step product whose rounding reaches 1e-15. The
  widening of the Dobrushin coefficient and the order shift ``log((1 + r)/(1 - r))`` of the hockey-stick
  coefficient are what keeps the certified bounds above the truth of the normalised operator there.

References: ``fractions.Fraction`` for products of doubles, mpmath at 60 digits elsewhere, lowered by a
relative ``1e-40`` so that they are rigorous lower bounds (their error is about ``1e-58``).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from chainamp import DP, MarkovOperator, amplify, privacy_profile
from chainamp.amplification import (theorem1_dobrushin, theorem1_doeblin, theorem1_hockey_stick,
                                    theorem1_ultra_mixing)


def low(x) -> mp.mpf:
    """A 60-digit value lowered by a relative 1e-40: a rigorous lower bound of what it approximates."""
    return x * (1 - mp.mpf(10) ** -40)


@pytest.fixture(autouse=True, scope="module")
def _sixty_digits():
    with mp.workdps(60):
        yield


# ----------------------------------------------------------------------------- Theorem 1 on plain numbers
def _grid(size: int, seed: int) -> list[tuple[float, float, float]]:
    """(eps, delta, gamma): eps log-uniform on [1e-12, 800] plus 0 and a few large values; delta
    log-uniform on [1e-6, 1] (30 %: on [1e-300, 1]), gamma on [1e-12, 1] and within 1e-15 .. 0.1 of 1;
    some exact 0 and 1."""
    rng = np.random.default_rng(seed)
    eps = np.concatenate([10.0 ** rng.uniform(-12, math.log10(800), size - 6), [0.0, 1.0, 30.0, 699.9, 700.1, 800]])
    delta = np.where(rng.random(size) < 0.3, 10.0 ** rng.uniform(-300, 0, size), 10.0 ** rng.uniform(-6, 0, size))
    gamma = 10.0 ** rng.uniform(-12, 0, size)
    gamma[::17] = 1.0 - 10.0 ** rng.uniform(-15, -1, gamma[::17].size)
    delta[::23], gamma[::29] = 0.0, 1.0
    return [(float(e), float(d), float(g)) for e, d, g in zip(eps, delta, gamma)]


GRID = _grid(1500, 14)


def amplified_epsilon(eps: float, gamma: float) -> mp.mpf:
    e = mp.mpf(eps)
    return mp.log1p(mp.mpf(gamma) * mp.expm1(e))


def test_theorem1_amplified_epsilon_never_below_exact():
    """Clauses (3) and (4): the certified eps' is at least the exact ``log(1 + gamma (e^eps - 1))``."""
    for eps, delta, gamma in GRID:
        exact = low(amplified_epsilon(eps, gamma))
        for clause in (theorem1_doeblin, theorem1_ultra_mixing):
            got = clause(eps, delta, gamma).epsilon
            assert mp.mpf(got) >= exact, (clause.__name__, eps, gamma, got, float(exact))


@pytest.mark.parametrize("clause", [theorem1_dobrushin, theorem1_hockey_stick], ids=["dobrushin", "hockey_stick"])
def test_theorem1_gamma_delta_product_never_below_exact(clause):
    """Clauses (1) and (2): delta' is at least the exact product ``gamma delta`` of the two doubles."""
    for eps, delta, gamma in GRID:
        got = clause(eps, delta, gamma).delta
        assert Fraction(got) >= Fraction(gamma) * Fraction(delta), (eps, delta, gamma, got)


def test_theorem1_doeblin_and_ultra_mixing_delta_never_below_exact():
    """Clause (3): ``delta' = gamma (1 - e^(eps' - eps)(1 - delta))``; clause (4): ``gamma delta e^(eps' - eps)``,
    with the exact eps' (a larger certified eps' only weakens the pair)."""
    for eps, delta, gamma in GRID:
        g, d, e = mp.mpf(gamma), mp.mpf(delta), mp.mpf(eps)
        # e^(eps' - eps) = (1 + gamma (e^eps - 1)) e^-eps = 1 - (1 - gamma)(1 - e^-eps): the complement
        # without cancellation, as 60 digits cannot hold delta = 1e-300 beside 1
        complement = (1 - g) * -mp.expm1(-e)
        doeblin = low(min(g * (d + (1 - d) * complement), 1))
        ultra = low(min(g * d * (1 - complement), 1))
        assert mp.mpf(theorem1_doeblin(eps, delta, gamma).delta) >= doeblin, (eps, delta, gamma)
        assert mp.mpf(theorem1_ultra_mixing(eps, delta, gamma).delta) >= ultra, (eps, delta, gamma)


# ----------------------------------------------------------------------------- exact profile of a finite M
def _hs(p, q, c) -> mp.mpf:
    return mp.fsum(max(a - c * b, 0) for a, b in zip(p, q))


def _mp_rows(A: np.ndarray, normalise: bool = False) -> list:
    rows = [[mp.mpf(float(x)) for x in row] for row in np.asarray(A, dtype=float)]
    return [[x / mp.fsum(row) for x in row] for row in rows] if normalise else rows


def exact_profile_low(rows: list, eps: float) -> mp.mpf:
    """max over ordered pairs of ``D_{e^eps}`` (eps = inf: mass where the other row vanishes), rigorous low."""
    pairs = [(p, q) for p, q in itertools.permutations(rows, 2)]
    if math.isinf(eps):
        return low(max(mp.fsum(a for a, b in zip(p, q) if b == 0) for p, q in pairs))
    c = mp.exp(mp.mpf(eps)) * (1 + mp.mpf(10) ** -45)
    return low(max(_hs(p, q, c) for p, q in pairs))


def _random_mechanisms() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = []
    for k in range(40):
        n, m = int(rng.integers(2, 5)), int(rng.integers(2, 6))
        A = rng.random((n, m)) ** (1 + 3 * rng.random())
        if k % 3 == 0:
            A[rng.random((n, m)) < 0.3] = 0.0
            A[np.arange(n), rng.integers(0, m, n)] += 0.5
        out.append(A / A.sum(axis=1, keepdims=True))
    return out


PROFILE_EPS = [0.0, 1e-9, 0.05, 0.3, 1.0, 2.5, 7.0, 30.0, math.inf]


def test_exact_profile_never_below_exact_maximum():
    """40 random finite mechanisms (some with structural zeros), 9 orders each: no slack at all."""
    for A in _random_mechanisms():
        prof = privacy_profile(A)
        rows = _mp_rows(A)
        for eps in PROFILE_EPS:
            got = float(prof.delta(eps))
            assert mp.mpf(got) >= exact_profile_low(rows, eps), (A.tolist(), eps, got)


@pytest.mark.parametrize("A", [
    [[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], [[0.75, 0.25, 0.0], [0.0, 0.0, 1.0], [0.5, 0.0, 0.5]],
], ids=["identity", "disjoint", "partly-disjoint"])
def test_exact_profile_is_a_probability(A):
    """Rows with disjoint supports have delta = 1 at every eps: the inflated partial sums must be capped."""
    prof = privacy_profile(A)
    for eps in PROFILE_EPS:
        assert float(prof.delta(eps)) == 1.0


SUB = 2.0**-1074  # the smallest subnormal double


def _subnormal_pair(a: int, b: int) -> list:
    """Two inputs that differ only in an output of mass ``a`` vs ``b`` subnormals (rows sum to 1 within
    1e-300): ``delta(eps) = (a - e^eps b) 2^-1074`` for ``e^eps < a / b``, where a relative margin is
    worth nothing and only the final rounding of the maximum (one float up) keeps delta above it."""
    return [[a * SUB, 1.0 - a * SUB], [b * SUB, 1.0 - b * SUB]]


@pytest.mark.parametrize("a, b", [(5, 2), (40, 9), (1000, 3)], ids=["5-2", "40-9", "1000-3"])
def test_exact_profile_subnormal_differences(a, b):
    A = _subnormal_pair(a, b)
    prof, rows = privacy_profile(A), _mp_rows(A)
    for ratio in (1.1, 1.3, 1.5, 1.8, 2.0, 2.2):
        eps = math.log(ratio)
        got = float(prof.delta(eps))
        assert mp.mpf(got) >= exact_profile_low(rows, eps), (eps, got / SUB)


@pytest.mark.parametrize("a, b, ratio", [(5, 2, 2.3), (5, 2, 2.4), (7, 3, 2.2)], ids=["5-2-2.3", "5-2-2.4", "7-3-2.2"])
def test_exact_profile_keeps_a_subnormal_difference_positive(a, b, ratio):
    A = _subnormal_pair(a, b)
    eps = math.log(ratio)
    assert mp.mpf(float(privacy_profile(A).delta(eps))) >= exact_profile_low(_mp_rows(A), eps)


# ----------------------------------------------------------------------------- products chainamp forms
def _off_by(A: np.ndarray, offsets) -> np.ndarray:
    """Rows scaled to sum to ``1 + offset`` (within ROW_SUM_ATOL = 1e-9: accepted as written)."""
    A = np.asarray(A, dtype=float)
    return A / A.sum(axis=1, keepdims=True) * (1.0 + np.asarray(offsets, dtype=float))[:, None]


def _mul(A: list, B: list) -> list:
    return [[mp.fsum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]


def exact_operator(factors) -> list:
    """The exact product of the normalised factors (what a list of stored operators stands for)."""
    out = _mp_rows(factors[0], normalise=True)
    for f in factors[1:]:
        out = _mul(out, _mp_rows(f, normalise=True))
    return out


def worst_black_box_low(eps0: float, delta0: float, Kx: list, eps: float) -> mp.mpf:
    """sup over (eps0, delta0)-DP mechanisms M of delta_{K o M}(eps): the canonical pair of Kairouz, Oh,
    Viswanath (2015) mixed over every 4-tuple of rows of K (the divergence is convex in the mixture)."""
    e, d = mp.exp(mp.mpf(eps0)), mp.mpf(delta0)
    a, b = (1 - d) * e / (1 + e), (1 - d) / (1 + e)
    c = mp.exp(mp.mpf(eps)) * (1 + mp.mpf(10) ** -45)
    best = mp.mpf(0)
    m = len(Kx[0])
    for x1, x2, x3, x4 in itertools.product(range(len(Kx)), repeat=4):
        P = [d * Kx[x1][y] + a * Kx[x2][y] + b * Kx[x3][y] for y in range(m)]
        Q = [b * Kx[x2][y] + a * Kx[x3][y] + d * Kx[x4][y] for y in range(m)]
        best = max(best, _hs(P, Q, c))
    return low(best)


def _sound_everywhere(rep, truth, eps_queries, delta_queries, names=None):
    """Every bound a report hands out (table, best, envelope, each source) is at least ``truth(eps)``."""
    handed = list(rep.bounds) + [rep.best]
    for s in rep.sources:
        if names is None or s.name in names:
            handed += [b for b in (s.bound_at_epsilon(e) for e in eps_queries) if b is not None]
            handed += [b for b in (s.bound_at_delta(d) for d in delta_queries) if b is not None]
    handed += [type(rep.best)(e, rep.delta_at(e), "exact") for e in eps_queries]
    cache: dict = {}
    checked = 0
    for b in handed:
        if not math.isfinite(b.epsilon) or b.delta >= 1.0:
            continue
        if b.epsilon not in cache:
            cache[b.epsilon] = truth(b.epsilon)
        assert mp.mpf(b.delta) >= cache[b.epsilon], (b, float(cache[b.epsilon]), float(cache[b.epsilon] - b.delta))
        checked += 1
    assert checked


def _tv_low(Kx: list) -> mp.mpf:
    return low(max(_hs(p, q, 1) for p, q in itertools.permutations(Kx, 2)))


K_RR = np.array([[0.7, 0.2, 0.1], [0.25, 0.5, 0.25], [0.1, 0.3, 0.6]])
OFF = [-1e-10, 1e-10, 0.0]


@pytest.mark.parametrize("factors", [
    [_off_by(K_RR, [-1e-10] * 3)],
    [_off_by(K_RR, OFF), _off_by(K_RR[::-1], [1e-10, 0.0, -1e-10])],
    [_off_by(K_RR[:, ::-1], [-4e-10] * 3), _off_by(K_RR, [-1e-10] * 3)],
], ids=["one-step", "two-steps", "4e-10"])
def test_dobrushin_widening_of_rows_off_by_1e10(factors):
    """Rows summing to ``1 - 1e-10`` are the normalised rows scaled down, and so is their Dobrushin
    coefficient (by about 1e-10; likewise for the products): the coefficient used, and Theorem 1(1)
    with it, must cover the normalised operator."""
    Kx = exact_operator(factors)
    rep = amplify(DP(1.0, 1e-3), [MarkovOperator(f) for f in factors] if len(factors) > 1 else MarkovOperator(factors[0]))
    tv = _tv_low(Kx)
    assert mp.mpf(rep.coefficients.dobrushin_gamma) >= tv
    dob = [b for b in rep.bounds if b.source == "theorem1.dobrushin"]
    assert dob and all(mp.mpf(b.delta) >= tv * mp.mpf(1e-3) for b in dob)


@pytest.mark.parametrize("eps0, delta0", [(1.0, 1e-3), (0.5, 0.05), (2.0, 1e-6)], ids=["1-1e-3", "0.5-0.05", "2-1e-6"])
@pytest.mark.parametrize("factors", [
    [_off_by(K_RR, OFF)],
    [_off_by(K_RR, OFF), _off_by(K_RR[::-1], [1e-10, 0.0, -1e-10])],
], ids=["one-step", "two-steps"])
def test_hockey_stick_order_shift_black_box(factors, eps0, delta0):
    """For a black-box (eps0, delta0) input the tight bound equals the worst case exactly, so the
    coefficient of the normalised operator, at the order shifted by ``log((1 + r)/(1 - r))``, is what keeps
    it (and Theorem 1(2)) above the true worst case of the normalised operator."""
    Kx = exact_operator(factors)
    K = [MarkovOperator(f) for f in factors] if len(factors) > 1 else MarkovOperator(factors[0])
    rep = amplify(DP(eps0, delta0), K)
    _sound_everywhere(rep, lambda e: worst_black_box_low(eps0, delta0, Kx, e), (0.0, 0.1, 0.4, eps0 / 2),
                      (delta0, 2 * delta0, 0.1), names=("tight", "theorem1.hockey_stick", "ldp"))


M_FIN = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.15, 0.15, 0.7]])


@pytest.mark.parametrize("factors", [
    [_off_by(K_RR, OFF)],
    [_off_by(K_RR, OFF), _off_by(K_RR[::-1], [1e-10, 0.0, -1e-10])],
], ids=["one-step", "two-steps"])
@pytest.mark.parametrize("m_off", [[0.0, 0.0, 0.0], [2e-10, -2e-10, 0.0]], ids=["M-exact", "M-off"])
def test_exact_pipeline_profile_widened(factors, m_off):
    """A finite M: the exact source profiles the float product M K1 K2; its widening (the shifted order
    and the relative factor) must cover the exact profile of the normalised pipeline."""
    M = _off_by(M_FIN, m_off)
    P = _mul(_mp_rows(M, normalise=True), exact_operator(factors))
    K = [MarkovOperator(f) for f in factors] if len(factors) > 1 else MarkovOperator(factors[0])
    rep = amplify(MarkovOperator(M), K)
    _sound_everywhere(rep, lambda e: exact_profile_low(P, e), (0.0, 0.05, 0.2, 0.5, 1.0), (0.0, 1e-3, 0.05, 0.2))


def test_long_product_rounding_1e15():
    """K^40 formed by chainamp from 40 copies of a 3 x 3 operator: the product's rounding (about 1e-15)
    is covered by the widened coefficients (exact product in mpmath)."""
    K = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6]])
    K = _off_by(K, [0.0, 0.0, 0.0])
    Kx = exact_operator([K] * 40)
    rep = amplify(DP(1.0, 1e-3), [MarkovOperator(K)] * 40)
    assert mp.mpf(rep.coefficients.dobrushin_gamma) >= _tv_low(Kx)
    _sound_everywhere(rep, lambda e: worst_black_box_low(1.0, 1e-3, Kx, e), (0.0, 0.1, 0.5), (1e-3, 0.1))
