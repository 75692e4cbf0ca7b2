r"""Exact profiles of two concrete datasets of k-ary randomized response shuffled among n users (lower bounds).

Private to ``shuffle/``. k-RR with ``K(x, x) = d``, ``K(x, y) = o`` (``d = 1 - (k - 1) o``, ``k >= 3``); the
changed user holds x0 or x1, the ``N = n - 1`` others a fixed dataset; the analyst sees the histogram h of all
n reports. The exact profile of ANY concrete dataset is below the worst case over datasets, and so is the
larger of two such profiles at each epsilon (the hull of both point sets).

**Closed forms.** Let the others be i.i.d. with report law ``pi`` (one dataset: every other user holds the
same value, so their reports are i.i.d.) and let the changed user report with law ``K(x, .)``. With
``M(h; m, pi)`` the multinomial pmf, ``M(h - e_y; n - 1, pi) = M(h; n, pi) h_y / (n pi_y)`` (the multinomial
coefficient loses the factor ``n / h_y``, the product one factor ``pi_y``), so

    P(h | x) = sum_y K(x, y) M(h - e_y; n - 1, pi) = M(h; n, pi) / n * sum_y h_y K(x, y) / pi_y.

Every value that is neither x0, x1 nor (for the first dataset) v has ``K(x, y) / pi_y = 1`` under both
hypotheses: the bracket depends on those counts only through their sum ``h_rest``, and summing M over the
ways ``h_rest`` splits gives the multinomial of the lumped law. So the lumped counts are a sufficient
statistic with the SAME profile as the full histogram (no information is lost by lumping).

1. *Every other user holds one third value v* (:func:`all_third_lower`): ``pi = (o, o, d, (k - 3) o)`` on
   ``(x0, x1, v, rest)`` and, with ``r = d / o``,

       P(h | x0) = M(h) / n [r h0 + h1 + hv / r + h_rest],   P(h | x1) = M(h) / n [h0 + r h1 + hv / r + h_rest].

   M factors as ``Bin(n, 2o)(T) Bin(T, 1/2)(h0) Bin(n - T, d / (1 - 2o))(hv)`` with ``T = h0 + h1`` (first how
   many reports land on {x0, x1}, then how they split, then how the rest split between v and the others);
   for k = 3 there is no rest and ``hv = n - T``. The pair is symmetric (swap x0 and x1), so one order suffices.
2. *Every other user holds x0* (:func:`all_first_lower`): ``pi = (d, o, (k - 2) o)`` on ``(x0, x1, rest)``;
   user 1 at x0 makes the n reports i.i.d., so ``P(h | x0) = M(h)`` and
   ``P(h | x1) = M(h) / n [h0 / r + r h1 + h_rest]``. M factors as ``Bin(n, (k - 1) o)(g) Bin(g, 1/(k - 1))(h1)``
   with ``g = n - h0`` the reports off x0. Not symmetric: both orders are kept.

**Numerics (rounded the safe way for a lower).** Each factor comes from :func:`._binomial.binomial_window` at
the float nearest its exact rational parameter (the smaller of ``p`` and ``1 - p``, so ``1 - p`` is accurate
too), with relative error ``PMF_RTOL`` plus the parameter's rounding (:func:`binomial_exact_rational`); the
brackets and products add a few units of roundoff. Outcomes outside the windows are left out of every test
(which only lowers a lower curve), and a test's false-alarm side is raised by the windows' dropped-mass bounds
anyway (a precaution: each kept outcome's mass is computed directly, not from a truncated recurrence). Each
test is a prefix in the computed likelihood-ratio order: any set of outcomes is a test, so the order only
decides how tight the points are, never whether they are achievable. The masses enter
:func:`._pairs.roc_lower` (detection side down, false-alarm side up).

The datasets are computed only while their outcomes fit ``budget`` (the count grows like ``n^{3/2}`` for the
first and ``n`` for the second); past it the first is left to the caller's cheaper views and the second keeps
its most likely values of g (outcomes left out only lower it).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_memory
from ..privacy import DominatingPair
from ._binomial import binomial_window, pmf_rtol
from ._pairs import roc_lower, thin

__all__: list[str] = []

_U = UNIT_ROUNDOFF
#: relative error of one outcome's mass beyond its binomial factors: the bracket (two coefficient roundings, two
#: products, three sums of non-negative terms), two products of factors, the product with the bracket and the
#: division by n (at most 11 u; a margin for the first-order composition of relative errors)
MASS_ARITH = 16 * _U
#: an absolute charge per outcome on the false-alarm side: a mass that is subnormal carries an absolute rounding
#: error (at most 2^-1074 per operation) instead of a relative one
SUBNORMAL = 1e-300

ALL_THIRD = "every other user holds the same third value v (neither of the changed user's two values)"
ALL_FIRST = "every other user holds x0 (the changed user's own value before the change)"


def binomial_exact_rational(m: int, p: Fraction, tail: float) -> tuple[int, np.ndarray, float, float]:
    """``(lo, w, dropped, rel)``: ``Bin(m, p)`` at ``lo .. lo + len(w) - 1`` for an EXACT rational ``p``, every mass
    within relative ``rel`` of the exact one, and a bound ``dropped`` of the mass outside.

    The window is computed at ``pf``, the float nearest the smaller of ``p`` and ``1 - p`` (then mirrored), so both
    ``pf`` and ``1 - pf`` are within a relative ``e1 = |pf - p*| / p*`` and ``e2 = |pf - p*| / (1 - p*)`` of the
    exact ones (``p*`` the smaller side). Boost's masses are within ``PMF_RTOL`` of the binomial at ``pf``; that one
    differs from the binomial at ``p*`` by the factor ``exp(j log(pf / p*) + (m - j) log((1 - pf) / (1 - p*)))``,
    whose exponent is ``(pf - p*) (j / p* - (m - j) / (1 - p*))`` up to ``j e1^2 + (m - j) e2^2`` (``|log(1 + t) -
    t| <= t^2`` for ``|t| <= 1/2``). The first term is linear in j: its largest magnitude on the window is at an
    end, computed exactly in rationals. The exponent's bound x gives a relative error ``e^x - 1 <= x (1 + x)``.

    >>> lo, w, out, rel = binomial_exact_rational(10, Fraction(1, 2), 1e-15)
    >>> lo, w.size, rel == 1e-9    # 1/2 is a float: only Boost's PMF_RTOL
    (0, 11, True)
    """
    m = int(m)
    if m == 0 or p == 0:
        return 0, np.ones(1), 0.0, 0.0
    if p == 1:
        return m, np.ones(1), 0.0, 0.0
    mirror = p > Fraction(1, 2)
    ps = 1 - p if mirror else p
    pf = float(ps)
    lo, w, dropped = binomial_window(m, pf, tail)
    hi = lo + w.size - 1
    rel = pmf_rtol(m, pf)
    delta = Fraction(pf) - ps
    if delta:
        lin = max(abs(delta * (Fraction(j) / ps - Fraction(m - j) / (1 - ps))) for j in (lo, hi))
        e1, e2 = abs(delta) / ps, abs(delta) / (1 - ps)
        x = lin + hi * e1 * e1 + (m - lo) * e2 * e2
        if x > Fraction(1, 2):
            return lo, w, dropped, math.inf
        x = x * (1 + x)
        rel = math.nextafter(float(rel + x + rel * x) * (1.0 + 4 * _U), math.inf)
    if mirror:
        lo, w = m - hi, w[::-1].copy()
    return lo, w, dropped, rel


def exact_channel(k: int, o: float) -> tuple[Fraction, Fraction] | None:
    """``(d*, o*)``: the exact k-RR whose off-diagonal is the float ``o`` (``d* = 1 - (k - 1) o*``), or None when
    ``o* >= 1/k`` (then ``d* <= o*``: no information, or not a garbling of a k-RR with ``d > o``)."""
    fo = Fraction(o)
    fd = 1 - (k - 1) * fo
    if fd <= fo:
        return None
    return fd, fo


def _estimate(m: int, p: float, tail: float) -> float:
    """A rough length of ``Bin(m, p)``'s window (normal approximation: only decides whether to try at all; the
    loops count exactly and stop at the budget)."""
    return 2.0 * math.sqrt(2.0 * math.log(2.0 / tail) * m * p * (1.0 - p)) + 2.0


def _finish(P: np.ndarray, Q: np.ndarray, key: np.ndarray, rel: float, dropped: float, both: bool):
    """ROC points of the prefixes of the outcomes in decreasing computed ``key`` (the likelihood ratio ``P / Q``),
    rounded for a lower (:func:`._pairs.roc_lower`), and of the reversed order for ``H(Q || P)`` when ``both``; each
    false-alarm side raised by ``dropped`` and the subnormal charge."""
    order = np.argsort(-key, kind="stable")
    P, Q = P[order], Q[order]
    s, b = roc_lower(P, Q, rel, monotone=True)  # any order's prefixes are tests: "monotone" only skips the sort
    if both:
        s2, b2 = roc_lower(Q[::-1], P[::-1], rel, monotone=True)
        s, b = np.concatenate((s, s2)), np.concatenate((b, b2))
    missing = dropped + SUBNORMAL * P.size
    s = np.minimum(np.nextafter(s + missing * (1.0 + 8 * _U), np.inf), 1.0)
    s[0] = 0.0  # the empty test (0, 0) is always achievable
    return thin(s, b)


def all_third_lower(users: int, k: int, o: float, tail: float, budget: float) -> tuple | None:
    """``(s, b)``: ROC points of actual tests of the dataset "every other user holds one third value v" (module
    docstring, closed form 1) for the exact k-RR of :func:`exact_channel`, rounded the safe way for a lower; None
    when its outcomes exceed ``budget`` (or the channel carries no information).

    >>> pair = DominatingPair.from_roc(*all_third_lower(4, 3, 0.2, 1e-15, 1e5))
    >>> round(float(pair.delta(0.0)), 6)   # 4 users, 3-RR at o = 0.2 (exact: 6/25)
    0.24
    """
    ch = exact_channel(k, o)
    n = int(users)
    if ch is None or n < 2:
        return None
    fd, fo = ch
    two = 2 * fo
    pv = fd / (1 - two)
    lT, wT, dropped, rT = binomial_exact_rational(n, two, tail)
    t_hi = lT + wT.size - 1
    t_mid = n * float(two)
    est = wT.size * _estimate(t_mid, 0.5, tail) * (1.0 if k == 3 else _estimate(n - t_mid, float(pv), tail))
    if est > 4.0 * budget:
        return None
    rd, ro = float(fd / fo), float(fo / fd)  # each within u of d*/o*, o*/d*
    blocks, count, rel_f = [], 0, 0.0
    for i, T in enumerate(range(lT, t_hi + 1)):
        la, a, da, ra = binomial_exact_rational(T, Fraction(1, 2), tail)
        lv, c, dv, rv = binomial_exact_rational(n - T, pv, tail)
        count += a.size * c.size
        if count > budget:
            return None
        h0 = (la + np.arange(a.size, dtype=float))[:, None]
        hv = (lv + np.arange(c.size, dtype=float))[None, :]
        M = (wT[i] * a)[:, None] * c[None, :]
        rest = (n - T) - hv
        common = ro * hv + rest
        B0 = rd * h0 + (T - h0) + common
        B1 = h0 + rd * (T - h0) + common
        blocks.append((M * B0 / n, M * B1 / n, B0 / B1))
        rel_f = max(rel_f, ra + rv)
        dropped += da + dv
    check_memory(8.0 * 6 * count, "the lower's outcomes (every other user at a third value)")
    P, Q, key = (np.concatenate([blk[j].ravel() for blk in blocks]) for j in range(3))
    rel = (rT + rel_f + MASS_ARITH) * (1.0 + 1e-6)
    return _finish(P, Q, key, rel, dropped, both=False)


def all_first_lower(users: int, k: int, o: float, tail: float, budget: float) -> tuple | None:
    """``(s, b, complete)``: ROC points of actual tests (both orders) of the dataset "every other user holds x0"
    (module docstring, closed form 2) for the exact k-RR of :func:`exact_channel`, rounded the safe way for a
    lower; past ``budget`` outcomes only the most likely counts g off x0 are kept (``complete`` False). None when
    the channel carries no information, or when even the most likely count does not fit.

    >>> s, b, complete = all_first_lower(4, 3, 0.2, 1e-15, 1e5)
    >>> complete, bool(b.max() <= 1.0)
    (True, True)
    """
    ch = exact_channel(k, o)
    n = int(users)
    if ch is None or n < 2:
        return None
    fd, fo = ch
    lg, wg, dropped, rg = binomial_exact_rational(n, (k - 1) * fo, tail)
    per = _estimate(n * float((k - 1) * fo), 1.0 / (k - 1), tail)
    if per > budget or wg.size * per > 4.0 * budget:  # the counts kept would carry too little of the mass
        return None
    rd, ro = float(fd / fo), float(fo / fd)
    order = np.argsort(-wg, kind="stable")  # the most likely counts first
    blocks, count, rel_f, complete = [], 0, 0.0, True
    split = Fraction(1, k - 1)
    for i in order.tolist():
        g = lg + i
        la, a, da, ra = binomial_exact_rational(g, split, tail)
        if count + a.size > budget:
            complete = False
            break
        count += a.size
        h1 = la + np.arange(a.size, dtype=float)
        M = wg[i] * a
        B1 = ro * (n - g) + rd * h1 + (g - h1)
        blocks.append((M, M * B1 / n, B1))
        rel_f = max(rel_f, ra)
        dropped += da
    if not blocks:
        return None
    P, Q, B1 = (np.concatenate([blk[j] for blk in blocks]) for j in range(3))
    rel = (rg + rel_f + MASS_ARITH) * (1.0 + 1e-6)
    s, b = _finish(P, Q, -B1, rel, dropped, both=True)  # P / Q = n / B1: decreasing in B1
    return s, b, complete


def envelope(points: list[tuple[np.ndarray, np.ndarray]], name: str) -> DominatingPair:
    """The lower pair whose curve is the largest of several concrete datasets' curves at each epsilon: the hull
    of the union of their achievable points (``max_S P(S) - a Q(S)`` over the union is the larger maximum)."""
    s = np.concatenate([p[0] for p in points])
    b = np.concatenate([p[1] for p in points])
    s, b = thin(s, b)
    return DominatingPair.from_roc(s, b, name=name, exact=True)
