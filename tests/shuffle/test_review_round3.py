"""Adversarial review of the third shuffle round (k-RR two-output curve, compressed chains, the k-RR lowers, the
auto path), against exact brute force over every dataset of the other users (Fractions, mpmath)."""

from __future__ import annotations

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


def _krr_worst(k: int, d: Fraction, o: Fraction, n: int, epss: list[float]) -> tuple[list, list]:
    """(worst case over every dataset of the others and both orders, the dataset 'every other user at one third
    value') of H at a = e^eps (60 digits) for each eps."""
    mpmath.mp.dps = 60
    alist = [mpmath.exp(mpmath.mpf(e)) for e in epss]
    worst = [mpmath.mpf(0)] * len(alist)
    third = None
    N = n - 1
    for c0 in range(N + 1):
        for c1 in range(N + 1 - c0):
            for lam in _partitions(N - c0 - c1, N, k - 2):
                P, Q = (_mp(x) for x in _dataset_pair(k, d, o, c0, c1, lam))
                vals = [max(_hockey(P, Q, a), _hockey(Q, P, a)) for a in alist]
                worst = [max(w, v) for w, v in zip(worst, vals)]
                if c0 == c1 == 0 and len(lam) <= 1:
                    third = vals
    return worst, third


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
