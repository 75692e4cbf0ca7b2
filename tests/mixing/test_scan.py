"""The blocked pair scan (chainamp.mixing.scan / kernels / anchors, issue 10 items 3-4, issue 11 item 1).

* the per-pair bounds of the tile kernels enclose the exact divergence (mpmath at 60 digits), for the
  numba and the numpy kernels, on pairs whose float sums round both ways (each margin is needed);
* the fast path agrees with the exact all-pairs pass (never below it, within 1e-12) on operators large
  enough for the tiles, the compiled kernels and the kept pair bounds, with near ties;
* any sequence of eps on one operator (the pair bounds kept across eps) stays sound, e.g. on
  randomized response where every pair ties and the divergence is linear in ``e^eps``;
* progress bars appear only when asked; thread and process executors give the serial results.
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import mpmath
import numpy as np
import pytest

import chainamp
from chainamp import MarkovOperator
from chainamp.mixing import dobrushin, dobrushin_curve, doeblin, ldp_guarantee, ultra_mixing
from chainamp.mixing import anchors, kernels, pairwise, scan
from conftest import exact_max_low, random_stochastic, sixty_digits, to_mpf

KERNELS = [pytest.param(False, id="numpy"), pytest.param(True, id="numba")]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    """Every test starts without kept preparations or pair bounds (results may depend on that history)."""
    pairwise._PREP_CACHE.clear()
    yield
    pairwise._PREP_CACHE.clear()


@pytest.fixture
def numba_always(monkeypatch):
    """Compiled kernels even for small scans."""
    monkeypatch.setattr(scan, "_NUMBA_MIN_WORK", 0)


def exact(p, q, eps: float, up: bool) -> mpmath.mpf:
    """``D_{e^eps}(p || q)`` of the stored doubles to 60 digits, ``e^eps`` nudged by 1e-45 so that the
    result is a rigorous upper (``up``) or lower bound."""
    with sixty_digits():
        c = mpmath.exp(mpmath.mpf(eps)) * (1 + (-1 if up else 1) * mpmath.mpf(10) ** -45)
        total = mpmath.mpf(0)
        # a float screen skips the terms certainly <= 0 (dropped anyway, so the value is unchanged): a = 0, or a below
        # fl(fl(e^eps) b) (1 - 1e-9) with that product normal (its error is then far below 1e-9 relative)
        cf = math.exp(eps) if eps < 700.0 else None
        for a, b in zip(p.tolist(), q.tolist()):
            if a <= 0.0 or (cf is not None and cf * b >= 1e-290 and a < (cf * b) * (1.0 - 1e-9)):
                continue
            d = mpmath.mpf(a) - c * mpmath.mpf(b)
            if d > 0:
                total += d
        return total * (1 + (1 if up else -1) * mpmath.mpf(10) ** -50)


# ----------------------------------------------------------------- per-pair bounds of the kernels
@pytest.mark.parametrize("use_numba", KERNELS)
@pytest.mark.parametrize("eps", [0.0, 0.3, 2.0], ids=["eps0", "eps0.3", "eps2"])
def test_tile_bounds_enclose_the_exact_value(use_numba, eps):
    """Rows of 1200 entries of very different sizes, both kernels: the bounds enclose the exact value
    and are tight (the margins themselves are shown necessary below)."""
    rng = np.random.default_rng(7)
    m = 1200
    P = rng.random((4, m)) ** 6
    P /= P.sum(axis=1, keepdims=True)
    sums = pairwise._row_sums(P)
    c = math.exp(eps)
    if eps == 0.0:
        (S,) = kernels.run_kernel("min_sums", use_numba, P, P)
        up, low = scan._tv_bounds(sums[:, None], S, m)
    else:
        F, _ = kernels.run_kernel("hockey_both", use_numba, P, P, c)
        up, low = scan._hs_bounds(F, sums[:, None], m)
    for i in range(4):
        for j in range(4):
            if i != j:
                pq = (P[i].tobytes(), P[j].tobytes(), eps)
                assert mpmath.mpf(float(up[i, j])) >= _exact_of_bytes(*pq, up=False), (i, j)
                assert mpmath.mpf(float(low[i, j])) <= _exact_of_bytes(*pq, up=True), (i, j)
    assert np.all(up - low < 1e-11)  # and the bounds are tight


@functools.lru_cache(maxsize=None)
def _exact_of_bytes(p: bytes, q: bytes, eps: float, up: bool) -> mpmath.mpf:
    """``exact`` of the rows stored as ``p`` and ``q`` (float64 bytes), each computed once: both kernels' tests
    check their bounds on the same rows against the same references."""
    return exact(np.frombuffer(p), np.frombuffer(q), eps, up)


def _absorbing_rows(t_ulps: float, m: int = 4097) -> np.ndarray:
    """Rows whose compiled sums drift: 0.5, then m - 2 entries of ``t_ulps`` ulps of 0.5 (each one alone
    below, or above, half an ulp of the running sum 0.5: dropped, or rounded up, on every addition),
    then the rest of the mass."""
    t = t_ulps * 2.0**-54
    row = np.full(m, t)
    row[0] = 0.5
    row[-1] = 0.5 - (m - 2) * t
    return row


@pytest.mark.parametrize("t_ulps", [0.45, 0.75], ids=["drops", "rounds-up"])
def test_the_bound_margins_are_needed(t_ulps):
    """The compiled sums of these rows are off by hundreds of ulps (the tiny terms that share an
    accumulator with 0.5 are all lost, or all rounded up): the raw value pushed one ulp is on the
    wrong side of the exact one, and only the ``(m + 3) u`` / ``(m + 1) u`` margins of
    :func:`scan._hs_bounds` and :func:`scan._tv_bounds` put the bound back on the right side."""
    p = _absorbing_rows(t_ulps)
    m = p.size
    q_hs = np.zeros(m)
    q_hs[-1] = 1.0  # D_c(p || q) = 1 - p_last for every c >= 1
    q_tv = np.full(m, 0.5 / (m - 1))
    q_tv[0] = 0.5  # min(p, q) = p except on the last output
    P, sums = p[None, :], pairwise._row_sums(p[None, :])
    F, _ = kernels.run_kernel("hockey_both", True, P, q_hs[None, :], math.exp(0.3))
    (S,) = kernels.run_kernel("min_sums", True, P, q_tv[None, :])
    cases = [(F, scan._hs_bounds(F, sums[:, None], m), q_hs, 0.3),
             (sums[:, None] - S, scan._tv_bounds(sums[:, None], S, m), q_tv, 0.0)]
    for raw, (up, low), q, eps in cases:
        hi, lo = exact(p, q, eps, up=True), exact(p, q, eps, up=False)
        assert mpmath.mpf(float(up[0, 0])) >= lo and mpmath.mpf(float(low[0, 0])) <= hi
        # without the margins, one of the two bounds (the raw value pushed one ulp) is on the wrong side
        too_small = mpmath.mpf(float(np.nextafter(raw[0, 0], np.inf))) < lo
        too_large = mpmath.mpf(float(np.nextafter(raw[0, 0], -np.inf))) > hi
        assert too_small or too_large, (t_ulps, eps)


# ----------------------------------------------------------------- fast path against the exact pass
@pytest.mark.parametrize("use_numba", KERNELS)
@pytest.mark.parametrize("eps", [0.0, 0.5, 3.0, 12.0], ids=["0", "0.5", "3", "12"])
def test_fast_path_matches_all_pairs(use_numba, eps, monkeypatch):
    """90 x 120 random operators with a planted near-tie (a row copied with a 1e-13 change): several
    tiles (block_size 16), both kernels, the kept bounds; never below the exact pass, within 1e-12."""
    if use_numba:
        monkeypatch.setattr(scan, "_NUMBA_MIN_WORK", 0)
    else:
        monkeypatch.setenv("CHAINAMP_NUMBA", "0")
    rng = np.random.default_rng(3)
    A = random_stochastic(rng, 90, 120, zero_prob=0.05) ** 3
    A /= A.sum(axis=1, keepdims=True)
    A[17] = A[40]
    A[17, :2] = A[40, :2] * (1 + 1e-13)
    A[17] /= A[17].sum()
    K = MarkovOperator(A)
    ref = dobrushin(K, eps, all_pairs=True).pairwise.max()
    got = dobrushin(K, eps, block_size=16)
    assert got.gamma >= ref - 4e-16 * max(ref, 1e-300)
    assert got.gamma - ref <= 1e-12
    with sixty_digits():
        low, _, _ = exact_max_low(A, eps, extra=[tuple(K.inputs.index(x) for x in got.pair)])
        assert mpmath.mpf(got.gamma) >= to_mpf(low)


@pytest.mark.slow
def test_fast_path_on_a_large_operator_with_compiled_kernels():
    """400 x 400 (above the numba threshold): dobrushin and the curve against the exact pass."""
    rng = np.random.default_rng(11)
    A = random_stochastic(rng, 400, 400) ** 2
    A /= A.sum(axis=1, keepdims=True)
    K = MarkovOperator(A)
    grid = [0.0, 0.05, 0.2, 1.0]
    curve = dobrushin_curve(K, grid)
    for e, v in zip(grid, curve):
        ref = dobrushin(MarkovOperator(A.copy()), e, all_pairs=True).pairwise.max()
        assert ref - 1e-15 <= v <= ref + 1e-12


@pytest.mark.parametrize("order", ["ascending", "descending", "bisection"])
def test_any_sequence_of_eps_on_randomized_response_is_sound(order):
    """k-RR: every pair ties and ``D(e^eps) = b (e^eps0 - e^eps)`` is linear in ``e^eps``, so the chord
    of the kept bounds is exact and the answer is the chord value itself: its rounding margin
    (``tau``) and the Lipschitz margin are what keep it above the exact value."""
    k, e0 = 120, 3.0
    a = math.exp(e0) / (math.exp(e0) + k - 1)
    b = 1.0 / (math.exp(e0) + k - 1)
    R = np.full((k, k), b)
    np.fill_diagonal(R, a)
    K = MarkovOperator(R)
    eps_list = {"ascending": [0.0, 0.4, 1.1, 2.0, 2.9],
                "descending": [2.9, 2.0, 1.1, 0.4, 0.0],
                "bisection": [0.0, 1.5, 0.75, 1.125, 0.9375, 1.03125, 2.99]}[order]
    for e in eps_list:
        got = dobrushin(K, e).gamma
        with sixty_digits():
            ref = exact(R[0], R[1], e, up=False)
            assert mpmath.mpf(got) >= ref, (e, got)
            assert got - ref < 1e-13  # the width of the eps = 0 bounds, (m + 1) u (s_p + S)


def test_kept_bounds_prune_later_eps(monkeypatch):
    """After one scan, nearby eps need no full rescan (the curve reuses the kept bounds)."""
    rng = np.random.default_rng(5)
    A = random_stochastic(rng, 80, 100)
    K = MarkovOperator(A)
    calls = []
    real = anchors.scan_matrix
    monkeypatch.setattr(anchors, "scan_matrix", lambda *a, **k: calls.append(1) or real(*a, **k))
    dobrushin_curve(K, np.linspace(0.0, 0.05, 8))
    assert 1 <= len(calls) < 8


# ----------------------------------------------------------------- progress and executors
def test_progress_bar_only_when_asked(capsys):
    A = random_stochastic(np.random.default_rng(1), 70, 80)
    dobrushin(MarkovOperator(A), 0.5, progress=False)
    assert capsys.readouterr().err == ""
    pairwise._PREP_CACHE.clear()
    dobrushin(MarkovOperator(A.copy()), 0.5, progress=True)
    assert "pairs" in capsys.readouterr().err
    pairwise._PREP_CACHE.clear()
    dobrushin(MarkovOperator(A.copy()), 0.5)  # default: only after 2 s
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("bad, match", [("threads", "executor must be None or a concurrent.futures.Executor"),
                                        (4, "executor must be None")], ids=["str", "int"])
def test_executor_is_checked(bad, match):
    K = MarkovOperator([[0.5, 0.5], [0.25, 0.75]])
    for fn in (lambda: dobrushin(K, executor=bad), lambda: dobrushin_curve(K, [0.0], executor=bad),
               lambda: doeblin(K, executor=bad), lambda: ultra_mixing(K, executor=bad),
               lambda: ldp_guarantee(K, executor=bad)):
        with pytest.raises(TypeError, match=match):
            fn()


def test_progress_is_checked():
    K = MarkovOperator([[0.5, 0.5], [0.25, 0.75]])
    for fn in (lambda: dobrushin(K, progress="yes"), lambda: dobrushin_curve(K, [0.0], progress=1),
               lambda: doeblin(K, progress="no"), lambda: ultra_mixing(K, progress=2),
               lambda: ldp_guarantee(K, progress="x")):
        with pytest.raises(TypeError, match="progress must be None, True or False"):
            fn()


def _everything(A, executor):
    pairwise._PREP_CACHE.clear()
    K = MarkovOperator(A.copy())
    out = [(r.gamma, r.pair, r.test_set) for r in (dobrushin(K, e, block_size=16, executor=executor)
                                                   for e in (0.0, 0.7, 30.0))]
    out.append(tuple(dobrushin_curve(K, [0.0, 0.2, 0.4, 3.0], block_size=16, executor=executor)))
    d, u = doeblin(K, executor=executor), ultra_mixing(K, executor=executor)
    out.append((d.gamma, tuple(d.minorant), u.gamma, u.pair, u.output))
    g = ldp_guarantee(K, executor=executor)
    out.append((g.epsilon, g.delta(0.3), g.epsilon_at(0.05)))
    return out


@pytest.mark.parametrize("kind", ["thread", "process"])
def test_executors_give_the_serial_results(kind):
    """Results and witnesses identical serially, on two threads and on two processes (several tiles)."""
    rng = np.random.default_rng(9)
    A = random_stochastic(rng, 70, 90, zero_prob=0.1)
    A[5] = A[6]  # an exact tie: the witness must still be the same
    serial = _everything(A, None)
    pool = ThreadPoolExecutor(2) if kind == "thread" else ProcessPoolExecutor(2)
    with pool:
        assert _everything(A, pool) == serial


def test_large_dense_column_pass_by_blocks():
    """Doeblin / ultra-mixing read by blocks of rows (on an executor) equal the one-pass values, ties of
    the column minima across blocks going to the first row."""
    rng = np.random.default_rng(2)
    A = rng.random((3000, 400))
    A[100:2900, 7] = A[50, 7] = 1e-3  # a tie of the column minimum across blocks: the first row wins
    A /= A.sum(axis=1, keepdims=True)
    with ThreadPoolExecutor(2) as ex:
        summary = scan.maybe_summary(A, executor=ex)
        assert pairwise._ultra_core(A, summary) == pairwise._ultra_core(A)
        assert np.array_equal(summary[1], A.min(axis=0)) and np.array_equal(summary[2], A.argmin(axis=0))
        assert np.array_equal(summary[3], A.max(axis=0)) and np.array_equal(summary[4], A.argmax(axis=0))
        assert doeblin(MarkovOperator(A), executor=ex).gamma == doeblin(MarkovOperator(A)).gamma
    assert scan.maybe_summary(A) is None  # small and serial: the one whole-matrix pass


# ----------------------------------------------------------------- the rounding margins of the kept bounds
def _up_float(v: mpmath.mpf) -> float:
    f = float(v)
    return f if mpmath.mpf(f) >= v else float(np.nextafter(f, np.inf))


def _anchor_bound(R: np.ndarray, anchors_at: list, eps: float) -> mpmath.mpf:
    """The bound of pair (0, 1) that :func:`anchors._from_anchors` derives at ``eps`` from anchors whose
    entries are the exact values rounded up (the tightest a scan could store)."""
    pairwise._PREP_CACHE.clear()
    prep = pairwise._prepare(MarkovOperator(R), None)
    store = anchors._store(prep)
    for e in anchors_at:
        U = np.full((2, 2), -math.inf)
        U[0, 1] = _up_float(exact(R[0], R[1], e, up=True))
        U[1, 0] = _up_float(exact(R[1], R[0], e, up=True))
        store[e] = U
    return mpmath.mpf(float(anchors._from_anchors(prep, eps, math.exp(eps))[0, 1]))


def test_chord_margin_is_needed():
    """Binary RR at level 5 has ``D(e^eps) = b (e^5 - e^eps)``, linear in ``e^eps``: the chord between two
    anchors is exact up to the rounding of ``t = (c - c_a) / (c_b - c_a)`` (whose floats ``c`` carry 2u
    each) and of the chord's own arithmetic. Its slack ``tau |U_b - U_a| + 4u (U_a + U_b)`` covers both:
    removing the slack, or its ``tau`` part alone, makes some bound fall below the exact value."""
    e0 = 5.0
    R = np.array([[math.exp(e0), 1.0], [1.0, math.exp(e0)]]) / (math.exp(e0) + 1.0)
    rng = np.random.default_rng(0)
    for k in range(80):
        if k % 2:  # close anchors near e0: D small, the error of t dominates (tau)
            ea = 4.95 + rng.random() * 0.04
            eb = ea + 1e-7 * (1 + rng.random())
        else:  # far anchors: t is accurate, the rounding of the chord's own arithmetic dominates
            ea, eb = 1.0 + rng.random(), 4.9 + 0.09 * rng.random()
        e = ea + (eb - ea) * rng.random()
        with sixty_digits():
            assert _anchor_bound(R, [ea, eb], e) >= exact(R[0], R[1], e, up=False), (ea, e, eb)


def test_lipschitz_margin_is_needed():
    """``p = (1 - d, d)``, ``q = (1 - 2d, 2d)``: ``D(c) = (1 - d) - c (1 - 2d)`` near c = 1 has slope
    ``q(S) = 1 - 2d``, almost the ``s_q = 1`` of the Lipschitz bound, so ``U_b + (c_b - c) s_q`` is tight
    and the rounding of ``c_b - c`` (2u on each float ``c``) is what its margin covers."""
    d = 2.0**-30
    R = np.array([[1.0 - d, d], [1.0 - 2 * d, 2 * d]])
    rng = np.random.default_rng(1)
    for _ in range(40):
        e = 1e-12 + rng.random() * 1e-11
        eb = e + 1e-15 * (1 + 20 * rng.random())
        with sixty_digits():
            assert _anchor_bound(R, [eb], e) >= exact(R[0], R[1], e, up=False), (e, eb)


def test_concurrent_queries_on_one_operator():
    """Many eps queried from several threads at once share the kept bounds safely: every value stays
    above the exact one and within 1e-12 of it."""
    A = random_stochastic(np.random.default_rng(8), 70, 90)
    K = MarkovOperator(A)
    grid = np.linspace(0.0, 1.5, 24)
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda e: dobrushin(K, float(e)).gamma, grid))
    for e, g in zip(grid, got):
        ref = dobrushin(MarkovOperator(A.copy()), float(e), all_pairs=True).pairwise.max()
        assert ref - 1e-15 <= g <= ref + 1e-12


def test_amplify_steps_progress(capsys):
    """amplify_steps shows a bar over its steps only when asked, and checks the keyword."""
    from chainamp import DP, amplify_steps, mechanisms

    R = mechanisms.randomized_response(3, 2.0)
    quiet = amplify_steps(DP(1.0, 1e-6), R, steps=3, progress=False)
    assert capsys.readouterr().err == ""
    loud = amplify_steps(DP(1.0, 1e-6), R, steps=3, progress=True)
    assert "steps" in capsys.readouterr().err
    assert np.array_equal(quiet.epsilons, loud.epsilons)
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        amplify_steps(DP(1.0, 1e-6), R, steps=2, progress="on")
