"""mixing_time's search for dense chains (issue 20 item 5, :mod:`chainamp.mixing.power_search`): squares, binary
lifting on the known pairs' rows, one full decision per candidate. Against exact Fraction powers on small chains
(sticky and lazy ones with mixing times in the tens, eps on the rounding edge one float below gamma(K^t)), against
the product search it replaces (still the path of sparse chains), and on every route of the full decision."""

from __future__ import annotations

import math
from fractions import Fraction as F

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp import MarkovOperator
from chainamp.errors import InvalidParameterError
from chainamp.mixing import guarantees, mixing_time, power_search


def _chain(n: int, stay: float, seed: int) -> np.ndarray:
    """``stay I + (1 - stay) R``, R with integer weights (exact in floats after normalisation is not needed:
    the exact reference normalises the stored rows)."""
    rng = np.random.default_rng(seed)
    R = rng.integers(1, 50, size=(n, n)).astype(float)
    R /= R.sum(axis=1, keepdims=True)
    return stay * np.eye(n) + (1.0 - stay) * R


def _exact_gammas(P: np.ndarray, steps: int, until: float = 0.0) -> list[F]:
    """gamma of the exact powers 1..steps of the normalised stored rows (Fractions), stopping at the first one
    at most ``until``."""
    n = P.shape[0]
    K = [[F(float(x)) for x in row] for row in P]
    K = [[x / sum(row) for x in row] for row in K]
    # K = N / D with integers N and one common denominator D, so K^t = N^t / D^t: the powers in integers (exact, and
    # without a Fraction's gcd at every operation)
    D = math.lcm(*(x.denominator for row in K for x in row))
    N = [[x.numerator * (D // x.denominator) for x in row] for row in K]
    out, A, scale = [], N, D
    for _ in range(steps):
        out.append(F(max(sum(abs(A[i][y] - A[j][y]) for y in range(n)) for i in range(n) for j in range(i + 1, n)),
                     2 * scale))
        if out[-1] <= F(until):
            break
        A = [[sum(A[i][z] * N[z][y] for z in range(n)) for y in range(n)] for i in range(n)]
        scale *= D
    return out


def _exact_mixing_time(gammas: list[F], eps: float) -> int:
    return next(t for t, g in enumerate(gammas, start=1) if g <= F(eps))


def _old(P: np.ndarray, eps: float, monkeypatch) -> int:
    with monkeypatch.context() as m:
        m.setattr(guarantees, "_DENSE_SEARCH_MIN_N", 10**9)
        return mixing_time(MarkovOperator(P), eps)


@pytest.mark.parametrize("n, stay, seed, eps", [(3, 0.9, 1, 0.25), (4, 0.8, 2, 0.1), (4, 0.95, 3, 0.3),
                                                (3, 0.97, 4, 0.05), (5, 0.5, 5, 0.01)],
                         ids=["3-sticky", "4-sticky", "4-stickier", "3-small-eps", "5-lazy"])
def test_matches_exact_powers(n, stay, seed, eps):
    P = _chain(n, stay, seed)
    gammas = _exact_gammas(P, 200, until=eps)
    assert mixing_time(MarkovOperator(P), eps) == _exact_mixing_time(gammas, eps)


@pytest.mark.parametrize("n, stay, seed", [(3, 0.9, 11), (4, 0.8, 12), (3, 0.95, 13)], ids=["3", "4", "3-stickier"])
def test_eps_one_float_below_the_exact_gamma(n, stay, seed):
    """At eps one float below gamma(K^t) (exact) the answer is above t (the margins); it is exactly t + 1 when
    gamma(K^(t+1)) is clearly below eps. Without the widening by the rows' error some of these return t."""
    P = _chain(n, stay, seed)
    gammas = _exact_gammas(P, 31)
    checked = 0
    for t in range(3, 31, 3):
        g = gammas[t - 1]
        e = math.nextafter(float(g), 0.0)
        while F(e) >= g:
            e = math.nextafter(e, 0.0)
        got = mixing_time(MarkovOperator(P), e)
        assert got > t, (t, got)
        assert got == _exact_mixing_time(gammas, e)
        checked += 1
    assert checked == 10


def test_widening_is_what_keeps_the_edge(monkeypatch):
    """The margin test of the new path: with product errors set to zero, eps one float below the exact gamma of a
    power returns that power for some of these chains (so the tests above would catch its removal)."""
    monkeypatch.setattr(power_search, "product_error", lambda *a: 0.0)
    early = 0
    for seed in range(20, 40):
        P = _chain(3, 0.0, seed)
        gammas = _exact_gammas(P, 8)
        for t, g in enumerate(gammas, start=1):
            e = math.nextafter(float(g), 0.0)
            while F(e) >= g:
                e = math.nextafter(e, 0.0)
            if e < 1e-12:
                break
            early += mixing_time(MarkovOperator(P), e) <= t
        if early:
            break
    assert early > 0


CHAINS = {
    "sticky-60": lambda: _chain(60, 0.98, 0),
    "lazy-cycle-40": lambda: MarkovOperator.random_walk(nx.cycle_graph(40), laziness=0.5).matrix,
    "lazy-grid-6x8": lambda: MarkovOperator.random_walk(nx.grid_2d_graph(6, 8), laziness=0.5).matrix,
    "random-50": lambda: _chain(50, 0.0, 1),
    "two-clusters-40": lambda: _clusters(40),
    "lazy-regular-40": lambda: MarkovOperator.random_walk(nx.random_regular_graph(8, 40, seed=1), laziness=0.5).matrix,
}


def _clusters(n: int) -> np.ndarray:
    """Two blocks joined weakly: a metastable chain whose rows sit near two centres."""
    rng = np.random.default_rng(7)
    A = rng.random((n, n)) + 0.05
    h = n // 2
    A[:h, h:] *= 0.002
    A[h:, :h] *= 0.002
    return A / A.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("name", list(CHAINS))
@pytest.mark.parametrize("eps", [0.25, 0.01], ids=["eps0.25", "eps0.01"])
def test_same_answers_as_the_product_search(name, eps, monkeypatch):
    P = CHAINS[name]()
    assert mixing_time(MarkovOperator(P), eps) == _old(P, eps, monkeypatch)


def test_symmetric_chains_square_by_dsyrk(monkeypatch):
    """An exactly symmetric K (a lazy walk on a regular graph) has exactly symmetric squares: formed by dsyrk (upper
    triangle, mirrored), with the same answers as the product search."""
    P = CHAINS["lazy-regular-40"]()
    assert np.array_equal(P, P.T)
    used = []
    original = power_search._Search._symmetric_square
    monkeypatch.setattr(power_search._Search, "_symmetric_square",
                        lambda self, j: used.append(j) or original(self, j))
    for eps in (0.25, 1e-3, 1e-6):
        assert mixing_time(MarkovOperator(P), eps) == _old(P, eps, monkeypatch)
    assert used


@pytest.mark.parametrize("route", ["scan", "tv_decide", "one-pair", "no-references", "bisection",
                                   "bisection-after-misses"])
@pytest.mark.parametrize("eps", [0.2, 0.003])
def test_every_route_of_the_search_gives_the_same_answer(route, eps, monkeypatch):
    """The full decision by the scan only or by the reference rows first; a single known pair (candidates fail
    and the search resumes above them); no reference rows at all (pairs only from the full decisions); plain
    bisection with every step decided in full, from the start or after one missed candidate."""
    P = _chain(40, 0.97, 3)
    want = _old(P, eps, monkeypatch)
    settings_ = {"scan": [("_FLAT_FRACTION", -1.0)], "tv_decide": [("_FLAT_FRACTION", 2.0)],
                 "one-pair": [("_MAX_PAIRS", 1)], "no-references": [("_SEARCH_REFERENCES", 0)],
                 "bisection": [("_MAX_CANDIDATES", 0)],
                 "bisection-after-misses": [("_MAX_CANDIDATES", 1), ("_MAX_PAIRS", 1), ("_SEARCH_REFERENCES", 0)]}
    for name, value in settings_[route]:
        monkeypatch.setattr(power_search, name, value)
    assert mixing_time(MarkovOperator(P), eps) == want


@settings(max_examples=30, deadline=None)
@given(n=st.integers(3, 9), stay=st.sampled_from([0.0, 0.5, 0.9, 0.99]), seed=st.integers(0, 10**6),
       eps=st.floats(0.001, 0.9))
def test_property_same_as_the_product_search(n, stay, seed, eps):
    P = _chain(n, stay, seed)
    new = mixing_time(MarkovOperator(P), eps)
    saved = guarantees._DENSE_SEARCH_MIN_N
    guarantees._DENSE_SEARCH_MIN_N = 10**9
    try:
        old = mixing_time(MarkovOperator(P), eps)
    finally:
        guarantees._DENSE_SEARCH_MIN_N = saved
    assert new == old


def test_periodic_and_too_slow_chains_are_refused():
    cycle = np.roll(np.eye(4), 1, axis=1)  # a rotation: periodic, gamma(K^t) = 1 for every t
    with pytest.raises(InvalidParameterError, match=r"does not mix to eps=0.25 within max_steps=1000 steps"):
        mixing_time(MarkovOperator(cycle), max_steps=1000)
    P = _chain(4, 0.99, 0)
    t = mixing_time(MarkovOperator(P), 0.01)
    with pytest.raises(InvalidParameterError, match=rf"does not mix to eps=0.01 within max_steps={t - 1} steps"):
        mixing_time(MarkovOperator(P), 0.01, max_steps=t - 1)
    assert mixing_time(MarkovOperator(P), 0.01, max_steps=t) == t


def test_products_are_counted_on_the_bar(capsys):
    mixing_time(MarkovOperator(_chain(30, 0.95, 2)), 0.1, progress=True)
    assert "mixing time" in capsys.readouterr().err


@pytest.mark.parametrize("n", [300, 200], ids=["numpy-bound", "fsum"])
def test_row_sum_deviation_covers_rows_whose_float_sum_is_one(n):
    """K's rows stand for their normalised rows at an l1 cost of ``|s_x - 1|``. Rows [0.5, 0.5, 2^-60, ...] sum to
    1.0 in floats and to 1 + 2^-60 exactly: above 256 rows the float sums' error term must cover it (without it
    the deviation would be 0), below the fsum is exact."""
    rows = np.zeros((n, n))
    rows[:, 0] = rows[:, 1] = 0.5
    rows[:, 2] = 2.0**-60
    assert rows.sum(axis=1).max() == 1.0
    got = guarantees._row_sum_tv(MarkovOperator(rows))
    exact = max(abs(sum(F(float(x)) for x in r) - 1) for r in rows[:3])
    assert F(got) >= exact > 0


def test_tv_decide_evaluates_both_orders_of_an_open_pair(monkeypatch):
    """Rows p, q = p + (-0.1, 0.1, 0.001) (q sums to 1.001) and their midpoint, without reference rows (only the mean
    row's bounds, which leave every pair open): D_1(p || q) = 0.1 but D_1(q || p) = 0.101 and |p - q|_1 / 2 = 0.1005.
    At eps = 0.1002 "gamma <= eps" must not be certified; from one order of each pair it was."""
    from chainamp.mixing import tv_bounds

    monkeypatch.setattr(tv_bounds, "_REFERENCES", 0)
    p = np.array([0.3, 0.3, 0.4])
    q = p + np.array([-0.1, 0.1, 0.001])
    A = np.vstack([p, q, (p + q) / 2])
    verdict, upper, pair = tv_bounds.tv_decide(A, 0.1002)
    half_l1 = sum(abs(F(float(a)) - F(float(b))) for a, b in zip(A[0], A[1])) / 2
    assert verdict is True and pair == (1, 0) and F(upper) >= half_l1


def test_the_held_powers_are_checked_against_the_memory_limit():
    from chainamp import resource_limits
    from chainamp.errors import ResourceLimitError

    P = _chain(300, 0.99, 0)
    with resource_limits(memory="3MB"), pytest.raises(ResourceLimitError, match=r"the dense 300 x 300 powers of K"):
        mixing_time(MarkovOperator(P))
    with resource_limits(memory="512MB"):
        assert mixing_time(MarkovOperator(P)) > 100


@pytest.mark.parametrize("err", [0.0, 1e-13], ids=["exact-rows", "rows-with-error"])
def test_identical_stored_rows_certify_eps_zero_only_without_error(err):
    """Identical stored rows have gamma 0; the exact power's rows are within err of them, so eps = 0 (or any eps
    below err) is certified only when err = 0 (before, eps - err was clamped at 0 and certified)."""
    from chainamp._numerics import progress_bar

    A = np.full((4, 4), 0.25)
    with progress_bar(None, "test", progress=False) as bar:
        search = power_search._Search(MarkovOperator(A), 0.0, 2**40, err, bar)
        above, _ = search.decide(A, err)
    assert above is (err > 0.0)


@pytest.mark.parametrize("n, block", [(1, 128), (5, 2), (130, 128), (300, 64)],
                         ids=["1", "5-small-blocks", "130", "300"])
def test_mirror_by_blocks_copies_the_lower_triangle(n, block):
    """dsyrk's triangle is mirrored in place by blocks: the result is the symmetric matrix of the lower triangle,
    for sizes that are and are not multiples of the block."""
    rng = np.random.default_rng(n)
    L = np.tril(rng.random((n, n)))
    want = L + np.tril(L, -1).T
    assert np.array_equal(power_search._mirror_lower(L.copy(), block), want)


def test_thin_squares_by_csr_products_give_the_same_answers(monkeypatch):
    """A sparse square (a lazy cycle's first powers) is squared as CSR @ CSR; the dense @ CSR route gives the same
    answers (the same non-negative terms per entry)."""
    from chainamp.mixing import guarantees as g

    monkeypatch.setattr(g, "_CIRCULANT", False)  # a cycle would take the circulant path
    P = MarkovOperator.random_walk(nx.grid_2d_graph(6, 9), laziness=0.5).matrix
    for eps in (0.25, 1e-4):
        new = mixing_time(MarkovOperator(P), eps)
        with monkeypatch.context() as m:
            m.setattr(power_search, "_SPARSE_SQUARES", False)
            assert mixing_time(MarkovOperator(P), eps) == new == _old(P, eps, monkeypatch)
