"""Safety margins of ``chainamp/shuffle/`` that were argued only in docstrings (round 5), each on inputs built to sit
on its rounding edge, against an exact reference (``fractions.Fraction``; mpmath at 300 bits for e^eps).

Every test names the mutation it catches; each mutation was applied by hand to the worktree, the test run and seen
to FAIL, and the code restored. Where two margins cover each other (no input reaches the edge of one alone), the
tests check each one's own contract at the function that owns it, and the composition with both removed.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

from chainamp.shuffle import _chains

U = 2.0**-53


def _mp_fraction(x: mpmath.mpf) -> F:
    man, exp = x.man_exp
    return F(int(man)) * F(2) ** int(exp)


def _exact_exp(e: float) -> F:
    """e^e to 300 bits, as a Fraction (its error, below 2^-290 relative, cannot flip a comparison with a float that
    differs from it by more than that)."""
    with mpmath.workprec(300):
        return _mp_fraction(mpmath.exp(mpmath.mpf(e)))


def _exp_rounds_up(count: int = 400) -> list[float]:
    """The eps in a fixed sample where numpy's e^eps is ABOVE the exact value (about half of them, but which ones
    depends on the platform's exp: chosen here, at run time)."""
    eps = np.random.default_rng(5).random(count) * 3.0
    return [float(e) for e in eps if F(float(np.exp(e))) > _exact_exp(float(e))]


# ---------------------------------------------------------------------------------------------------------------
# _chains.py: delta_of's (1 - 4u) rounding of e^eps down, and _ROUND = 4u in the support kernel
# ---------------------------------------------------------------------------------------------------------------

def test_delta_of_hands_a_slope_at_most_the_exact_e_eps():
    """``delta_of`` evaluates H at ``a <= e^eps`` exactly (H is non-increasing in a), on eps where numpy's exp rounds
    UP. Removing ``* (1.0 - 4 * _U)`` from ``delta_of`` makes this test FAIL (a above e^eps by up to 0.94 u)."""
    seen: list[float] = []

    def record(a):
        seen.extend(float(x) for x in np.atleast_1d(a))
        return np.zeros(np.size(a))

    edge = _exp_rounds_up()
    assert len(edge) > 20  # the edge is reached on this platform
    _chains.delta_of(record, np.array(edge))
    assert len(seen) == len(edge)
    for e, a in zip(edge, seen):
        assert F(a) <= _exact_exp(e), (e, a)


def _cancelling_points(rng, slope: float, m: int):
    """``m`` points with ``b`` within a few ulps of ``slope * s`` (so ``b - a s`` cancels to a few ulps)."""
    s = np.sort(rng.random(m)) * 10.0 ** int(rng.integers(-3, 2))
    b = slope * s * (1.0 + rng.integers(-4, 5, m) * 2.0**-52)
    return s, b


def _exact_support(parts, a: F) -> F:
    return sum((max([F(0)] + [F(float(y)) - a * F(float(x)) for x, y in zip(s, b)]) for s, b in parts), F(0))


def _support_cases(count: int = 60):
    rng = np.random.default_rng(839)
    for _ in range(count):
        a = float(rng.random() * 10.0 ** int(rng.integers(-2, 3)))
        parts = [_cancelling_points(rng, a, int(rng.integers(1, 5))) for _ in range(int(rng.integers(1, 3)))]
        yield a, parts


def _support_shortfall(monkeypatch, rnd: float) -> int:
    """How many of the cases have ``SupportSum(parts)(a) < H(a)`` exactly with the kernel's margin ``rnd``."""
    monkeypatch.setattr(_chains, "_ROUND", rnd)
    short = 0
    for a, parts in _support_cases():
        short += F(float(_chains.SupportSum(parts)(np.array([a]))[0])) < _exact_support(parts, F(a))
    monkeypatch.setattr(_chains, "_ROUND", 4.0 * U)
    return short


def test_support_sum_is_above_the_exact_support_at_its_float_slope(monkeypatch):
    """``SupportSum(parts)(a) >= sum_j max(0, max_k (b_jk - a s_jk))`` exactly at the float a, on points where
    ``b - a s`` cancels to a few ulps (the float product's rounding is then far above one ulp of the result).
    Replacing ``_ROUND`` by 0 in the call of ``_support_source`` makes this test FAIL (22 of the 60 cases are
    below the exact support, by up to 1e-16); the second assertion checks that edge here."""
    assert _support_shortfall(monkeypatch, 4.0 * U) == 0
    assert _support_shortfall(monkeypatch, 0.0) > 5  # without the margin the cases fall below: they sit on the edge


def _delta_cases():
    rng = np.random.default_rng(2738)
    for e in _exp_rounds_up(160):
        X = _exact_exp(e)
        m = int(rng.integers(1, 4))
        s = np.sort(rng.random(m)) * 10.0 ** int(rng.integers(-3, 2))
        b = np.array([float(X * F(float(x))) for x in s]) * (1.0 + rng.integers(-2, 3, m) * 2.0**-52)
        yield e, X, [(s, b)]


def _delta_of_without_push(h, eps):
    """:func:`_chains.delta_of` with its ``(1 - 4u)`` removed (e^eps as numpy rounds it)."""
    a = np.exp(np.asarray(eps, dtype=float))
    return h(np.where(np.isfinite(a), a, math.inf))


def _delta_shortfall(monkeypatch, rnd: float, push: bool) -> int:
    monkeypatch.setattr(_chains, "_ROUND", rnd)
    delta = _chains.delta_of if push else _delta_of_without_push
    short = 0
    for e, X, parts in _delta_cases():
        short += F(float(delta(_chains.SupportSum(parts), np.array([e]))[0])) < _exact_support(parts, X)
    monkeypatch.setattr(_chains, "_ROUND", 4.0 * U)
    return short


@pytest.mark.parametrize("rnd, push, short", [(4.0 * U, True, False), (0.0, True, False), (4.0 * U, False, False),
                                              (0.0, False, True)],
                         ids=["both-margins", "push-only", "kernel-margin-only", "neither"])
def test_delta_of_is_above_the_exact_curve_at_e_eps(monkeypatch, rnd, push, short):
    """``delta_of(h, eps) >= H(e^eps)`` exactly, on points where ``b - e^eps s`` cancels and eps where numpy's exp
    rounds up. The two margins cover each other here: the push lowers a by at least 2.5 u relative, more than the
    kernel's product rounding (u/2 of a s); the kernel's 4u of ``|b| + a s`` exceeds the exp's error (below 1 u of
    a s) plus its own. Each alone keeps the curve above (ids push-only, kernel-margin-only); with neither, 35 of
    these 61 cases fall below (id neither). Removing the push from ``delta_of`` FAILS the push-only case, removing
    ``_ROUND`` from the kernel's call FAILS the kernel-margin-only case, and each is checked alone at its own
    function above."""
    assert (_delta_shortfall(monkeypatch, rnd, push) > 0) == short


# ---------------------------------------------------------------------------------------------------------------
# _chains.py: _ROUND = 4u in the compression kernel
# ---------------------------------------------------------------------------------------------------------------

COMPRESS_EDGE = {
    # nearly collinear points (b = g s + c in floats): the lines through the segment's top sit within a float
    # product's rounding of the other points, far more than one ulp of the small intercepts c_t
    "seed1763-rtol1": ([
        "0x1.206dbce0eaed0p+0", "0x1.76c015951ee4bp+1", "0x1.7f1ad320086b2p+2", "0x1.8fe85c09ddb97p+2",
        "0x1.d1f0090b304a2p+2", "0x1.e99dde0a57f91p+2", "0x1.2341a8983e9eep+3"], [
        "0x1.a9222752d35d1p-5", "0x1.142ba51b128f2p-3", "0x1.1a52a1b59623ep-2", "0x1.26b487680c463p-2",
        "0x1.575d39d14911bp-2", "0x1.68d05353d0e8bp-2", "0x1.ad4568707e2bep-2"], 1.0),
    "seed2185-rtol0.1": ([
        "0x1.6029d4248b5a0p+2", "0x1.22e4acc97b839p+4", "0x1.a80ef1e367ca3p+5", "0x1.de9222a378670p+5",
        "0x1.12a8e3c17e543p+6", "0x1.1465abc6164cfp+6", "0x1.29da1138c1201p+6", "0x1.7a79d97909676p+6"], [
        "0x1.1785df18d23d8p+8", "0x1.cdb9fd87d93d2p+9", "0x1.50894d899c935p+11", "0x1.7bcc10293c96ep+11",
        "0x1.b3f15c88fab52p+11", "0x1.b6b3503799cb3p+11", "0x1.d8c0c85ae94a4p+11", "0x1.2c5c017e841a1p+12"], 0.1),
}


def _lowest_gap(s: np.ndarray, b: np.ndarray, rtol: float) -> F:
    """The smallest exact ``polyline(s_k) - b_k`` over the points, the polyline ``A X B`` of each segment of
    :func:`_chains.compress` (the module docstring: every point of a segment lies below it)."""
    ends = _chains._cuts(s, b, rtol, 1e-18)
    cs, cb = _chains.compress(s, b, rtol=rtol, atol=1e-18)
    assert cs.size == 3 * ends.size + 1 and ends.size >= 1
    worst, i = None, 0
    for t, j in enumerate(ends):
        A, X, B = ((F(float(cs[3 * t + r])), F(float(cb[3 * t + r]))) for r in (1, 2, 3))
        for k in range(i, int(j) + 1):
            sk, bk = F(float(s[k])), F(float(b[k]))
            P, Q = (A, X) if sk <= X[0] else (X, B)
            y = max(P[1], Q[1]) if Q[0] == P[0] else P[1] + (Q[1] - P[1]) * (sk - P[0]) / (Q[0] - P[0])
            worst = y - bk if worst is None else min(worst, y - bk)
        i = int(j)
    return worst


@pytest.mark.parametrize("s, b, rtol", COMPRESS_EDGE.values(), ids=COMPRESS_EDGE.keys())
def test_compressed_polyline_is_above_every_point(monkeypatch, s, b, rtol):
    """Every point of a segment lies on or below the compressed polyline ``A X B``, exactly (so the compressed
    support function is at least the points' at every a). Replacing ``_ROUND`` by 0 in ``compress``'s call of
    ``_compress_source`` makes this test FAIL (a point above the polyline by 5e-19 and 1.1e-14); the second
    assertion checks that edge here."""
    s = np.array([float.fromhex(x) for x in s])
    b = np.array([float.fromhex(x) for x in b])
    assert _lowest_gap(s, b, rtol) >= 0
    monkeypatch.setattr(_chains, "_ROUND", 0.0)
    assert _lowest_gap(s, b, rtol) < 0  # the edge: without the margin a point is above the polyline


# ---------------------------------------------------------------------------------------------------------------
# krr.py: LOWER_O_PUSH = 2^-40, the lower computed for a randomizer at least as private as the true one
# ---------------------------------------------------------------------------------------------------------------

def _true_krr(k: int, eps0: float, ulps: int) -> tuple[F, F]:
    """An exact k-RR ``(d*, o*)`` (rows summing exactly to 1) with a float off-diagonal near eps0's."""
    t = math.exp(-eps0)
    o = F(t / (1 + (k - 1) * t) * (1 + ulps * 2.0**-52))
    return 1 - (k - 1) * o, o


def _lower_channels(monkeypatch, users: int, k: int, d: float, o: float, budget: float) -> list[tuple[F, F]]:
    """The exact ``(d', o')`` of the k-RR each lower view is computed for (the (T, h_x0) view: the floats it is
    handed; the h_x0 - h_x1 view: ``o' = beta (1 - beta)`` exactly and ``d' = 1 - (k - 1) o'``; the two exact
    datasets: the float o exactly and ``d' = 1 - (k - 1) o'``)."""
    from chainamp.shuffle import krr

    seen: list[tuple[F, F]] = []

    def view_t(N, d, o, tail, budget, points=False):
        seen.append((F(d), F(o)))

    def view_difference(N, k, d, o, tail, points=False):
        beta = krr._beta_for(o)
        if beta is not None:
            fo = F(beta) * (1 - F(beta))
            seen.append((1 - (k - 1) * fo, fo))

    def dataset(users, k, o, tail, budget):  # the exact datasets (shuffle._krr_datasets) read the float o exactly
        from chainamp.shuffle._krr_datasets import exact_channel

        seen.append(exact_channel(k, o))

    monkeypatch.setattr(krr, "_krr_lower", view_t)
    monkeypatch.setattr(krr, "_krr_lower_difference", view_difference)
    monkeypatch.setattr(krr, "all_third_lower", dataset)  # returning None: the views are asked for too
    monkeypatch.setattr(krr, "all_first_lower", dataset)
    krr.krr_lower_profile(users, k, d, o, lower_outcomes=budget)
    return seen


KRR_EDGE = [(3, 0.5, 3), (5, 30.0, -7), (3, 680.0, 5), (64, 689.0, -2)]


@pytest.mark.parametrize("budget", [3e5, 1.0], ids=["view-T-h", "view-difference"])
@pytest.mark.parametrize("k, eps0, ulps", KRR_EDGE, ids=[f"k{k}-eps{e:g}" for k, e, _ in KRR_EDGE])
def test_krr_lower_is_computed_for_a_garbling_of_the_true_randomizer(monkeypatch, k, eps0, ulps, budget):
    """The chain the callers use (the randomizer's eps0 rounded up by ``api._log_up``, then
    :func:`krr.krr_parameters`, then the lower) computes the lower for a k-RR whose ratio ``d' / o'`` is at most
    the true ``d* / o*``, exactly: a garbling of the true randomizer (a post-processing of every report), so its
    profile stays below the truth's. Without the push the lower's o is the rounded-up eps0's, strictly below the
    true one: removing ``LOWER_O_PUSH`` (setting it to 0) makes every case FAIL.

    The edge is at large eps0: ``_log_up`` adds ``4e-16 (eps0 + 1)`` to the log, so the rounded o falls short of
    the true one by up to ``0.38 * 2^-40`` relative at eps0 = 689 (the largest before ``COIN_MIN``); the last
    assertion checks that the cases reach past ``2^-42`` there, so the push cannot be made 4 times smaller.

    Why no test against the exact profile: o moves by under ``2^-40`` relative, so an outcome's mass moves by about
    ``N 2^-40`` relative (N other users) while the lower rounds its masses the safe way by ``2 PMF_RTOL = 2e-9``:
    at the sizes an exact reference can reach (N of a few thousand) the unpushed lower cannot exceed the exact
    profile, and such a test could not fail. The push matters at deployed sizes (N = 1e8: ``1e8 2^-40 = 1e-4``).
    With ``LOWER_O_PUSH = 2.0**-42`` the four cases at eps0 >= 680 fail."""
    from chainamp.shuffle import krr
    from chainamp.shuffle.api import _log_up

    d_true, o_true = _true_krr(k, eps0, ulps)
    _, d, o = krr.krr_parameters(k, _log_up(d_true / o_true))
    channels = _lower_channels(monkeypatch, 40, k, d, o, budget)
    assert channels
    for d_used, o_used in channels:
        assert d_used / o_used <= d_true / o_true, float((d_true / o_true) / (d_used / o_used) - 1)
    shortfall = (o_true - F(o)) / o_true
    assert shortfall > 0  # the caller's o is below the truth: the lower needs the push
    if eps0 > 600:
        assert shortfall > F(2) ** -42


def test_krr_lower_of_a_formed_product_is_a_garbling_of_it(monkeypatch):
    """A randomizer formed as a product (``amplify_shuffled`` reads its (d, o) widened by the product's error bound
    r, then rounds eps0 up): here 1025-RR with dyadic entries squared, so the float product IS the exact one and
    the widening (``2 r = 2.3e-13`` relative on the ratio) is pure pessimism the push must absorb on top of the
    rounding. The lower's channel must still be a garbling of the exact product: ``d' / o' <= d* / o*``. Removing
    ``LOWER_O_PUSH`` makes this test FAIL (the caller's o is 1.3e-13 relative below the exact one)."""
    from chainamp.shuffle import krr
    from chainamp.shuffle.api import _compose, _rr_parameters, read_randomizer

    k, o = 1025, 2.0**-12
    A = np.full((k, k), o)
    np.fill_diagonal(A, 1.0 - (k - 1) * o)
    rz = read_randomizer([A, A])
    product, err = _compose([A, A])
    _, d_true, o_true = _rr_parameters(product)
    assert rz.kind == "rr" and not err.is_exact and d_true + (k - 1) * o_true == 1  # dyadic: the product is exact
    _, d, o_caller = krr.krr_parameters(k, rz.epsilon0)
    assert F(o_caller) < o_true  # the widening and the rounding both lower o: the lower needs the push
    for budget in (3e5, 1.0):  # both views: (T, h_x0), and h_x0 - h_x1 (forced by a budget of one outcome)
        channels = _lower_channels(monkeypatch, 40, k, d, o_caller, budget)
        assert channels
        for d_used, o_used in channels:
            assert d_used / o_used <= d_true / o_true, float((d_true / o_true) / (d_used / o_used) - 1)
