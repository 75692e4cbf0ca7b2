"""mixing_time of circulant chains (:mod:`chainamp.mixing.circulant`, issue 20 item 5): powers and decisions from
row 0 alone. Against exact Fraction powers (brute force, step by step) on small lazy cycles and random circulants,
eps on the rounding edge (one float below the exact gamma of a power) and exactly at it, periodic and reducible
circulants, max_steps, the margins (removing the widening returns a power whose exact gamma is above eps), the
detection, and the dense search on the same chains."""

from __future__ import annotations

import math
from fractions import Fraction as F

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp import MarkovOperator, mixing_time
from chainamp.errors import InvalidParameterError
from chainamp.mixing import circulant, guarantees


def _row(n: int, weights: dict) -> np.ndarray:
    c = np.zeros(n)
    for s, w in weights.items():
        c[s % n] += w
    return c / c.sum()


def _circ(c: np.ndarray) -> np.ndarray:
    return np.array(circulant.circulant_view(np.asarray(c, dtype=float)))


def _exact_gammas(c: np.ndarray, steps: int, until: float = -1.0) -> list[F]:
    """gamma of the exact powers 1..steps of the normalised stored row (Fractions; a circulant's powers are
    circulant, so row 0 of K^t is enough: c_(t+1) = c_t circ(c), and gamma = max_s TV(c_t, roll(c_t, s)))."""
    n = c.size
    row = [F(float(x)) for x in c]
    total = sum(row)
    row = [x / total for x in row]
    cur, out = row, []
    for _ in range(steps):
        out.append(max(sum(abs(cur[y] - cur[(y - s) % n]) for y in range(n)) / 2 for s in range(1, n)))
        if out[-1] <= F(until):
            break
        cur = [sum(cur[i] * row[(y - i) % n] for i in range(n)) for y in range(n)]
    return out


def _exact_time(gammas: list[F], eps: float) -> int:
    return next(t for t, g in enumerate(gammas, start=1) if g <= F(eps))


def _below(g: F) -> float:
    """The largest float strictly below the exact g."""
    e = math.nextafter(float(g), 0.0)
    while F(e) >= g:
        e = math.nextafter(e, 0.0)
    return e


def _dense(P: np.ndarray, eps: float, monkeypatch, **kw) -> int:
    with monkeypatch.context() as m:
        m.setattr(guarantees, "_CIRCULANT", False)
        return mixing_time(MarkovOperator(P), eps, **kw)


def _lazy_cycle(n: int) -> np.ndarray:
    return _row(n, {0: 2, 1: 1, -1: 1})


@pytest.mark.parametrize("n, eps", [(4, 0.3), (5, 0.1), (6, 0.25), (7, 0.02), (8, 0.001)],
                         ids=["4", "5", "6", "7-small-eps", "8-tiny-eps"])
def test_lazy_cycles_match_exact_powers(n, eps):
    c = _lazy_cycle(n)
    gammas = _exact_gammas(c, 400, until=eps)
    assert mixing_time(MarkovOperator(_circ(c)), eps) == _exact_time(gammas, eps)


RANDOM_ROWS = [(3, 1), (4, 2), (5, 3), (6, 4), (9, 5)]


@pytest.mark.parametrize("n, seed", RANDOM_ROWS, ids=[f"n{n}-seed{s}" for n, s in RANDOM_ROWS])
def test_eps_one_float_below_the_exact_gamma(n, seed):
    """eps one float below gamma(K^t) (exact): the answer is above t, and it is the exact mixing time there."""
    rng = np.random.default_rng(seed)
    c = _row(n, {s: int(rng.integers(1, 30)) for s in range(n)})
    c[0] += 2.0  # sticky: gamma decreases slowly enough for several edges
    c /= c.sum()
    gammas = _exact_gammas(c, 12)
    for t, g in enumerate(gammas, start=1):
        e = _below(g)
        if e < 1e-12:
            break
        got = mixing_time(MarkovOperator(_circ(c)), e)
        assert got > t, (t, got)
        assert got == _exact_time(_exact_gammas(c, 60, until=e), e)


def test_eps_equal_to_the_exact_gamma_is_not_certified():
    """c = (1/2, 1/4, 1/4) is (1/4) I + (3/4) uniform: gamma(K^t) = 4^-t exactly, and every stored power is exact.
    At eps = 4^-t the exact mixing time is t, but a decision within the rounding margins counts as above eps: the
    answer is t + 1 (never below the exact time), on both paths."""
    c = np.array([0.5, 0.25, 0.25])
    assert _exact_gammas(c, 4) == [F(1, 4**t) for t in range(1, 5)]
    for t in range(1, 5):
        got = mixing_time(MarkovOperator(_circ(c)), 4.0**-t)
        assert got == t + 1
        saved = guarantees._CIRCULANT
        guarantees._CIRCULANT = False
        try:
            assert mixing_time(MarkovOperator(_circ(c)), 4.0**-t) == t + 1
        finally:
            guarantees._CIRCULANT = saved


def test_the_widening_is_what_keeps_the_edge(monkeypatch):
    """The margin test: with the products' error bound and the sums' relative margin set to zero, eps one float
    below the exact gamma of a power returns that power for some of these chains (so the test above catches the
    removal of either)."""
    monkeypatch.setattr(circulant, "product_error", lambda *a: 0.0)
    monkeypatch.setattr(circulant, "_U", 0.0)
    early = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        c = _row(3, {s: int(rng.integers(1, 997)) for s in range(3)})
        for t, g in enumerate(_exact_gammas(c, 6), start=1):
            e = _below(g)
            if e < 1e-12:
                break
            early += mixing_time(MarkovOperator(_circ(c)), e) <= t
        if early:
            break
    assert early > 0


@pytest.mark.parametrize("name, c", [("rotation", _row(5, {1: 1})), ("two-step rotation", _row(6, {2: 1})),
                                     ("parity classes", _row(6, {0: 1, 2: 1})),
                                     ("bipartite walk", _row(6, {1: 1, -1: 1}))],
                         ids=["rotation", "rotation-2", "reducible", "periodic"])
def test_periodic_and_reducible_circulants_are_refused(name, c, monkeypatch):
    with pytest.raises(InvalidParameterError, match=r"does not mix to eps=0.25 within max_steps=1000 steps"):
        mixing_time(MarkovOperator(_circ(c)), max_steps=1000)
    with pytest.raises(InvalidParameterError, match=r"does not mix to eps=0.25 within max_steps=1000 steps"):
        _dense(_circ(c), 0.25, monkeypatch, max_steps=1000)


def test_max_steps_boundary():
    P = _circ(_lazy_cycle(40))
    t = mixing_time(MarkovOperator(P), 0.01)
    with pytest.raises(InvalidParameterError, match=rf"within max_steps={t - 1} steps \(needs {t}\)"):
        mixing_time(MarkovOperator(P), 0.01, max_steps=t - 1)
    assert mixing_time(MarkovOperator(P), 0.01, max_steps=t) == t
    P = _circ(np.array([0.5, 0.25, 0.25]))  # gamma(K) = 1/4: one step
    with pytest.raises(InvalidParameterError, match=r"within max_steps=0 steps \(needs 1\)"):
        mixing_time(MarkovOperator(P), 0.3, max_steps=0)
    assert mixing_time(MarkovOperator(P), 0.3, max_steps=1) == 1


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 24), seed=st.integers(0, 10**6), stay=st.sampled_from([0.0, 0.5, 0.9]),
       eps=st.floats(1e-4, 0.9))
def test_property_same_as_the_dense_search(n, seed, stay, eps):
    rng = np.random.default_rng(seed)
    c = rng.random(n) * (rng.random(n) < 0.5)
    c[0] += stay * 10 + 0.1
    c[1] += 0.1  # aperiodic and irreducible: shifts 0 and 1
    P = _circ(c / c.sum())
    new = mixing_time(MarkovOperator(P), eps)
    saved = guarantees._CIRCULANT
    guarantees._CIRCULANT = False
    try:
        assert new == mixing_time(MarkovOperator(P), eps)
    finally:
        guarantees._CIRCULANT = saved


@pytest.mark.parametrize("n", [40, 101])
@pytest.mark.parametrize("eps", [0.25, 1e-4])
def test_walks_on_circulant_graphs_take_the_path(n, eps, monkeypatch):
    """Lazy walks on a cycle and on a circulant graph (shifts 1 and 7) stored dense: the circulant path is taken and
    agrees with the dense search."""
    used = []
    original = circulant.circulant_mixing_time
    monkeypatch.setattr(guarantees, "circulant_mixing_time", lambda *a: used.append(1) or original(*a))
    for G in (nx.cycle_graph(n), nx.circulant_graph(n, [1, 7])):
        P = MarkovOperator.random_walk(G, laziness=0.5).matrix
        P = P.toarray() if hasattr(P, "toarray") else np.asarray(P)
        assert mixing_time(MarkovOperator(P), eps) == _dense(P, eps, monkeypatch)
    assert len(used) == 2


def test_detection():
    c = _lazy_cycle(6)
    P = _circ(c)
    assert np.array_equal(circulant.circulant_row(P), c)
    Q = P.copy()
    Q[[3, 4]] = Q[[4, 3]]  # rows 0 and 1 still a circulant's
    assert circulant.circulant_row(Q) is None
    assert circulant.circulant_row(P[:, ::-1]) is None
    R = P.copy()
    R[5, 0] = math.nextafter(R[5, 0], 1.0)  # one ulp off
    assert circulant.circulant_row(R) is None
    assert circulant.circulant_row(np.ones((2, 3)) / 3) is None
    import scipy.sparse as sp

    # CSR with a duplicate entry (row 0's 0.5 stored as 0.25 + 0.25) and unsorted indices: the same row 0
    data, cols, ptr = [0.25, 0.25, 0.25, 0.25], [0, 1, 0, 5], [0, 4]
    for x in range(1, 6):
        data += [0.25, 0.5, 0.25]
        cols += [(x + 1) % 6, x, (x - 1) % 6]
        ptr.append(ptr[-1] + 3)
    D = sp.csr_matrix((data, cols, ptr), shape=(6, 6))
    assert np.array_equal(D.toarray(), P)
    assert np.array_equal(circulant.sparse_circulant_row(D), c)


def test_rows_off_their_sums_are_widened():
    """A circulant K whose rows sum to 1 - 5e-10 (stored gammas below the normalised ones): the row-sum deviation is
    the first power's error, so eps one float below the exact gamma of the normalised power is still not certified
    at that power (fails without K's error bound passed to the circulant search)."""
    c = _row(5, {0: 5, 1: 2, -1: 1, 2: 1}) * (1.0 - 5e-10)
    gammas = _exact_gammas(c, 40)
    for t in (1, 5, 20):
        e = _below(gammas[t - 1])
        assert mixing_time(MarkovOperator(_circ(c)), e) > t


def _exact_row(n: int, seed: int) -> np.ndarray:
    """A row of random floats summing to exactly 1 (so K's own error bound is 0: the first decision rests on the
    rounding margin of the sums alone)."""
    rng = np.random.default_rng(seed)
    v = rng.random(n - 1) / n
    c = np.append(v, 1.0 - math.fsum(v))
    assert sum(F(float(x)) for x in c) == 1
    return c


EXACT_ROWS = [(16, 29), (16, 97), (16, 178), (16, 253), (7, 298)]


@pytest.mark.parametrize("n, seed", EXACT_ROWS, ids=[f"n{n}-seed{s}" for n, s in EXACT_ROWS])
def test_the_sums_margin_at_the_first_power(n, seed):
    """Rows summing exactly to 1 and eps one float below the exact gamma(K): K itself must not be certified. These
    rows' computed sums of clipped differences round down to eps or below: without the margin of
    :func:`chainamp.mixing.circulant.shift_divergences` the answer is 1 (checked below)."""
    c = _exact_row(n, seed)
    e = _below(_exact_gammas(c, 1)[0])
    assert mixing_time(MarkovOperator(_circ(c)), e) > 1


def test_without_the_sums_margin_the_edge_is_lost(monkeypatch):
    def computed(v, shifts):
        W = v - circulant.circulant_view(v)[shifts]
        np.maximum(W, 0.0, out=W)
        s = W.sum(axis=1)
        return s, s

    monkeypatch.setattr(circulant, "shift_divergences", computed)
    early = [mixing_time(MarkovOperator(_circ(c)), _below(_exact_gammas(c, 1)[0])) <= 1
             for c in (_exact_row(n, seed) for n, seed in EXACT_ROWS)]
    assert sum(early) >= 3


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 30), seed=st.integers(0, 10**6), zeros=st.floats(0.0, 0.9), flip=st.booleans())
def test_property_sparse_and_dense_detection_agree(n, seed, zeros, flip):
    """circulant_row (dense) and sparse_circulant_row (CSR, explicit zeros dropped) find the same row 0; one entry
    moved (when that breaks the circulant) is refused by both."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    c = rng.random(n) * (rng.random(n) >= zeros)
    c[rng.integers(n)] += 0.5
    P = _circ(c / c.sum())
    if flip:
        x, y = rng.integers(n), rng.integers(n)
        P[x, y] = P[x, y] + 0.25
    dense = circulant.circulant_row(P)
    sparse = circulant.sparse_circulant_row(sp.csr_matrix(P))
    assert (dense is None) == (sparse is None)
    if dense is not None:
        assert np.array_equal(dense, sparse)
        assert np.array_equal(np.array(circulant.circulant_view(dense)), P)
    else:
        assert flip


@pytest.mark.parametrize("n, want", [(4, 1), (8, 1), (3, None)], ids=["quarter", "eighth", "third"])
def test_eps_zero_on_identical_rows(n, want, monkeypatch):
    """K = J / n: every row the same, gamma(K) = 0. With entries 1/4 or 1/8 the rows sum exactly to 1 and eps = 0 is
    certified at t = 1 on both paths; with entries fl(1/3) they sum to 1 - 2^-54 exactly, the normalised rows are
    only within that of the stored ones, and eps = 0 is never certified (refused by both paths)."""
    P = np.full((n, n), 1.0 / n)
    if want is None:
        with pytest.raises(InvalidParameterError, match="does not mix to eps=0.0"):
            mixing_time(MarkovOperator(P), 0.0, max_steps=64)
        with pytest.raises(InvalidParameterError, match="does not mix to eps=0.0"):
            _dense(P, 0.0, monkeypatch, max_steps=64)
    else:
        assert mixing_time(MarkovOperator(P), 0.0) == want == _dense(P, 0.0, monkeypatch)
