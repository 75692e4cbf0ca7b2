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

**Numerics (rounded the safe way for a lower).** Each factor is Boost's binomial pmf (through
:func:`._binomial.binomial_window` for the outer count, directly on a frame for the inner ones) at the float
nearest its exact rational parameter (the smaller of ``p`` and ``1 - p``, so ``1 - p`` is accurate too), with
relative error ``PMF_RTOL`` plus the parameter's rounding (:func:`parameter_rtol`); the brackets and products add
a few units of roundoff (``MASS_ARITH``). Outcomes outside the windows and frames are left out of every test,
which only lowers a lower curve; their mass is NOT charged: each kept outcome's mass is the product of its own
factors' pmf values (not read off a truncated recurrence or convolution), so a test made of kept outcomes has
exactly the masses computed, up to the relative error (charging ``1e-15`` on the false-alarm side would cap the
lower's epsilon near ``log(1e-15 / delta)``, 28 at delta = 1e-6, where the truth at large eps0 is near eps0).
Each test is a prefix in the computed likelihood-ratio order: any set of outcomes is a test, so the order only
decides how tight the points are, never whether they are achievable. The masses enter
:func:`._pairs.roc_lower` (detection side down, false-alarm side up).

The datasets are computed only while their outcomes fit ``budget`` (the count grows like ``n^{3/2}`` for the
first and ``n`` for the second); past it the first is left to the caller's cheaper views and the second is left
out (at such sizes it is far below the first: it wins only where ``n o`` is small).

**What is proved about the worst dataset.** *Among the datasets in which no other user holds x0 or x1, the first
dataset is the worst at every epsilon >= 0, in both orders.* Negative epsilons follow too, through
``H_t(P || Q) = 1 - t + t H_{1/t}(Q || P)``. Proof (a garbling, checked in exact arithmetic by
``tests/shuffle/test_krr_third_values.py``). Let the N others hold third values ``v_1 .. v_m`` with ``c_i`` users
each (``c = N``), let ``V`` be that set and ``s`` the number of reports on V (a function of the histogram).
Compare with all N users at ``v_1``.
- *Off V nothing differs.* Every third user, whichever value in V it holds, lands on V with probability
  ``d + (m - 1) o`` and otherwise on each value outside V with ``o``. The changed user lands on V with ``m o``,
  uniformly there, under both hypotheses. So which users land on V, and every report outside V, have the same joint
  law in both datasets.
- *On V only the centres differ.* A landed third user is at its own value with ``d / (d + (m - 1) o)`` and at each
  other value of V with ``o / (d + (m - 1) o)``.
- *The kernel, for s <= c.* Draw group sizes ``r ~ MultiHyp(c; c_1..c_m; s)``. Cut the s reports on V into groups
  of those sizes uniformly at random (it needs only the counts). In group i swap the labels ``v_1`` and ``v_i``.
  - A landed third user centred at ``v_1`` becomes centred at ``v_i``, and a uniform report stays uniform.
  - The number of landed third users per group is a J-subsample of an s-subsample of c users, so
    ``MultiHyp(c; c_1..c_m; J)``. That is how the J landed users of the split dataset divide among the values.
  - The kernel depends neither on the hypothesis nor on J. On ``s <= c`` it therefore maps the concentrated
    dataset's histogram law onto the split one's, under both hypotheses.
- *For s = c + 1.* Every other user and the changed user landed on V, and the changed user's report there has the
  same law under both hypotheses. Both give each such histogram the same probability, so that part of any test
  adds ``(1 - e^eps) P <= 0``.
- *Hence.* For every test S, ``P0(S) - e^eps P1(S)`` of the split dataset is at most its value on
  ``S' = S ∩ {s <= c}``, which is ``sum_h [P0(h) - e^eps P1(h)] K(h, S')`` over the concentrated dataset's
  histograms h. That is at most ``sum_h [P0(h) - e^eps P1(h)]_+``, the concentrated profile. The same holds in
  both orders, since the kernel is the same for both.

**Datasets with other users at x0 or x1 are NOT covered.**
- *The kernel still works on s <= c.* Those users land on V uniformly, like the changed user. So with them the
  split dataset's divergence is at most the concentrated one's plus ``P(s > c)``, which is
  ``P(Bin(a + b + 1, m o) > Bin(c, (k - m) o))``.
- *That error term is useful only for a few such users.* At n = 1000, k = 10, eps0 = 5, with V all eight third values
  (m = k - 2, the largest), it is 1.2e-5 for a + b = 10 and 0.04 for 100. For smaller V it is far smaller.
- *No relabelling of the reports on V can do better.* With a + b >= 2, exact Farkas certificates rule out a
  kernel on the counts on V in every case tried (k = 4: (a, b, c_v, c_w) = (2,0,1,1), (1,1,1,1), (2,0,2,1),
  (3,0,2,2) and seven more, at d / o = 3 and 55). In one case (a = 1, b = 3) they also rule out a kernel that sees
  the rest of the histogram. A proof would have to move reports between V and the other values.
- *The two datasets here are not always the worst.* At n = 6, k = 4, d / o = 7 and e^eps = 4, three users at x0
  and two at one third value give delta 0.06237. That is above every other user at v (0.05933) and every other
  user at x0 (0.05042); the tests check it exactly.
- *Open.* Exhaustive search at n <= 9 found every worst dataset of the form "a users at x0, the rest at one third
  value" for some a in 0..N. A proof, and the maximum over a, are both open.
- *At n = 1000.* Scans of a (k = 3, 4, 10, 100; eps0 = 5, 6) found the worst a to be one of this module's two
  datasets at delta = 1e-6, or within 3e-4 of it in delta (k = 4: a = 2).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_memory, compiled
from ..privacy import DominatingPair
from ._binomial import _window_pmf, binomial_window, pmf_rtol
from ._pairs import roc_lower, thin

__all__: list[str] = []

_U = UNIT_ROUNDOFF
#: relative error of one outcome's mass beyond its binomial factors: the bracket (two coefficient roundings, two
#: products, three sums of non-negative terms), two products of factors, the product with the bracket and the
#: division by n (at most 11 u; a margin for the first-order composition of relative errors)
MASS_ARITH = 16 * _U
#: outcomes whose computed mass is below this are left out of every test (which only lowers a lower curve): the
#: factors and products of the kept ones are then normal floats (above 2.2e-308), each within its relative error
#: bound (the masses of the informative outcomes at eps0 near 690 are about e^-690 = 1e-300: kept)
TINY = 1e-305
#: the slope method keeps the frames of hv (three suffix sums each, one frame per count T) up to this many times the
#: outcome budget (its work per slope is the pairs (T, h0), at most the budget)
HV_SHARE = 8.0

ALL_THIRD = "every other user holds the same third value v"
ALL_FIRST = "every other user holds x0, the changed user's value before the change"


def rational_parameter(p: Fraction) -> tuple[float, bool, float, float, float]:
    """``(pf, mirror, e1, e2, dp)`` for an exact rational ``p`` in (0, 1): ``pf`` the float nearest the smaller side
    ``p* = min(p, 1 - p)`` (``mirror``: it is ``1 - p``), ``dp >= |pf - p*|``, ``e1 >= dp / p*``,
    ``e2 >= dp / (1 - p*)`` (each computed in rationals, rounded up)."""
    mirror = p > Fraction(1, 2)
    ps = 1 - p if mirror else p
    pf = float(ps)
    delta = abs(Fraction(pf) - ps)

    def up(x: Fraction) -> float:
        f = float(x)
        return f if Fraction(f) >= x else math.nextafter(f, math.inf)
    return pf, mirror, up(delta / ps), up(delta / (1 - ps)), up(delta)


def parameter_rtol(m: int, lo: int, hi: int, pf: float, e1: float, e2: float, dp: float) -> float:
    """A bound of the relative change of ``Bin(m, .)``'s masses at ``lo..hi`` between the float ``pf`` and the exact
    ``p*`` (:func:`rational_parameter`; indices on the side of ``pf``, ``pf <= 1/2``).

    The ratio of the two masses at j is ``exp(j log(pf / p*) + (m - j) log((1 - pf) / (1 - p*)))`` (the
    coefficients cancel); with ``|log(1 + t) - t| <= t^2`` (``|t| <= 1/2``) its exponent is
    ``(pf - p*) (j - m p*) / (p* (1 - p*))`` up to ``j e1^2 + (m - j) e2^2``. On the window ``|j - m p*| <=
    max(|lo - m pf|, |hi - m pf|) + m dp`` (the float ``m pf`` and the difference add at most ``2u (hi + m pf)``)
    and ``p* (1 - p*) >= pf (1 - pf) (1 - e1 - e2)``. The exponent's bound x gives ``e^x - 1 <= x (1 + x)``
    (``x <= 1/2``, else inf); the float evaluation of this bound (about ten roundings of positive terms) is
    covered by a final ``1 + 16u``."""
    if dp == 0.0 or m == 0:
        return 0.0
    c = m * pf
    dev = max(abs(lo - c), abs(hi - c)) + m * dp + 2 * _U * (hi + c)
    lin = dp * dev / (pf * (1.0 - pf) * (1.0 - e1 - e2 - 4 * _U))
    x = lin + hi * e1 * e1 + (m - lo) * e2 * e2
    if not x <= 0.5:
        return math.inf
    return x * (1.0 + x) * (1.0 + 16 * _U)


def binomial_exact_rational(m: int, p: Fraction, tail: float) -> tuple[int, np.ndarray, float, float]:
    """``(lo, w, dropped, rel)``: ``Bin(m, p)`` at ``lo .. lo + len(w) - 1`` for an EXACT rational ``p``, every mass
    within relative ``rel`` of the exact one, and a bound ``dropped`` of the mass outside
    (:func:`._binomial.binomial_window` at the float nearest the smaller of ``p`` and ``1 - p``, then mirrored, so
    ``1 - pf`` is accurate too): Boost's ``PMF_RTOL`` and :func:`parameter_rtol`, composed.

    >>> lo, w, out, rel = binomial_exact_rational(10, Fraction(1, 2), 1e-15)
    >>> lo, w.size, rel == 1e-9    # 1/2 is a float: only Boost's PMF_RTOL
    (0, 11, True)
    """
    m = int(m)
    if m == 0 or p == 0:
        return 0, np.ones(1), 0.0, 0.0
    if p == 1:
        return m, np.ones(1), 0.0, 0.0
    pf, mirror, e1, e2, dp = rational_parameter(p)
    lo, w, dropped = binomial_window(m, pf, tail)
    hi = lo + w.size - 1
    rel = _compose(pmf_rtol(m, pf), parameter_rtol(m, lo, hi, pf, e1, e2, dp))
    if mirror:
        lo, w = m - hi, w[::-1].copy()
    return lo, w, dropped, rel


def _compose(a: float, b: float) -> float:
    """The relative error of a product of two factors within relative a and b (rounded up)."""
    if a == 0.0 or b == 0.0:
        return a + b
    return math.nextafter((a + b + a * b) * (1.0 + 4 * _U), math.inf)


def frame(m: int, param: tuple, tail: float) -> tuple[int, np.ndarray, float]:
    """``(lo, w, rel)``: ``Bin(m, p)`` (``param`` from :func:`rational_parameter`) on the frame
    ``|j - m pf| <= t`` with Bernstein's ``t = L/3 + sqrt(L^2/9 + 2 var L) + 1``, ``L = log(2 / tail)`` (outside it
    at most ``tail`` of the mass), each mass from Boost's pmf as :func:`._binomial.binomial_window` computes it
    (Boost at every point, or for long frames one Boost value at the mode and the exact ratios multiplied outward:
    within ``PMF_RTOL`` at ``pf``, :func:`._binomial._window_pmf`) and :func:`parameter_rtol`. The inner factors of
    the datasets need no Chernoff search (any frame is valid for a lower; outcomes outside it are left out)."""
    pf, mirror, e1, e2, dp = param
    m = int(m)
    if m == 0:
        return 0, np.ones(1), 0.0
    L = math.log(2.0 / tail)
    c = m * pf
    t = L / 3.0 + math.sqrt(L * L / 9.0 + 2.0 * c * (1.0 - pf) * L) + 1.0
    lo, hi = max(0, int(math.floor(c - t))), min(m, int(math.ceil(c + t)))
    try:  # Boost's binomial pmf, the ufunc behind scipy.stats.binom.pmf (as in ._binomial)
        from scipy.special._ufuncs import _binom_pmf as pmf_fn
    except ImportError:  # pragma: no cover - a scipy without the private ufunc
        from scipy.stats import binom

        pmf_fn = binom.pmf
    w = np.asarray(_window_pmf(m, pf, lo, hi, pmf_fn), dtype=float)
    rel = _compose(pmf_rtol(m, pf), parameter_rtol(m, lo, hi, pf, e1, e2, dp))
    if mirror:
        lo, w = m - hi, w[::-1].copy()
    return lo, w, rel


def exact_channel(k: int, o: float) -> tuple[Fraction, Fraction] | None:
    """``(d*, o*)``: the exact k-RR whose off-diagonal is the float ``o`` (``d* = 1 - (k - 1) o*``), or None when
    ``o* >= 1/k`` (then ``d* <= o*``: no information, or not a garbling of a k-RR with ``d > o``)."""
    fo = Fraction(o)
    fd = 1 - (k - 1) * fo
    if fd <= fo:
        return None
    return fd, fo


def _usable_channel(k: int, o: float, users: int) -> tuple[Fraction, Fraction] | None:
    """:func:`exact_channel` for ``users`` users, or None when there is nothing to compute: no information, fewer
    than two users, or a ratio ``d / o`` so large that ``n d / o`` overflows a float."""
    ch = exact_channel(k, o)
    if ch is None or int(users) < 2 or float(ch[0] / ch[1]) * int(users) > 1e306:
        return None
    return ch


def _estimate(m: float, p: float, tail: float) -> float:
    """About the length of :func:`frame` at ``m`` (its Bernstein reach, unclipped): only decides whether to try at
    all; the loops count exactly and stop at the budget."""
    L = math.log(2.0 / tail)
    return 2.0 * (L / 3.0 + math.sqrt(L * L / 9.0 + 2.0 * m * p * (1.0 - p) * L) + 1.0) + 1.0


def _finish(P: np.ndarray, Q: np.ndarray, key: np.ndarray, rel: float, both: bool):
    """ROC points of the prefixes of the outcomes in decreasing computed ``key`` (the likelihood ratio ``P / Q``),
    rounded for a lower (:func:`._pairs.roc_lower`), and of the reversed order for ``H(Q || P)`` when ``both``.
    Outcomes with a mass below ``TINY`` are left out of every test (no computed factor or product of a kept one is
    then subnormal, so every kept mass has a relative error bound)."""
    keep = (P > TINY) & (Q > TINY)  # (the callers zero P where a factor product is tiny)
    order = np.argsort(-key[keep], kind="stable")
    P, Q = P[keep][order], Q[keep][order]
    s, b = roc_lower(P, Q, rel, monotone=True)  # any order's prefixes are tests: "monotone" only skips the sort
    if both:
        s2, b2 = roc_lower(Q[::-1], P[::-1], rel, monotone=True)
        s, b = np.concatenate((s, s2)), np.concatenate((b, b2))
    return thin(s, b)


def all_third_lower(users: int, k: int, o: float, tail: float, budget: float) -> tuple | None:
    """``(s, b)``: ROC points of actual tests of the dataset "every other user holds one third value v" (module
    docstring, closed form 1) for the exact k-RR of :func:`exact_channel`, rounded the safe way for a lower; None
    when its outcomes exceed ``budget`` (or the channel carries no information).

    >>> pair = DominatingPair.from_roc(*all_third_lower(4, 3, 0.2, 1e-15, 1e5))
    >>> round(float(pair.delta(0.0)), 6)   # 4 users, 3-RR at o = 0.2 (exact: 6/25)
    0.24
    """
    ch = _usable_channel(k, o, users)
    if ch is None:
        return None
    fd, fo = ch
    n = int(users)
    two = 2 * fo
    pv = fd / (1 - two)
    lT, wT, _, rT = binomial_exact_rational(n, two, tail)
    t_mid = n * float(two)
    est = wT.size * _estimate(t_mid, 0.5, tail) * (1.0 if k == 3 else _estimate(n - t_mid, float(pv), tail))
    if est > 4.0 * budget:  # (the estimate ignores the frames' clipping at 0: up to 4 times the count at n = 1000)
        return None
    check_memory(8.0 * 8 * min(budget, est), "the lower's outcomes (every other user at a third value)")
    rd, ro = float(fd / fo), float(fo / fd)  # each within u of d*/o*, o*/d*
    half = rational_parameter(Fraction(1, 2))
    vpar = rational_parameter(pv) if 0 < pv < 1 else None
    blocks, count, rel_f = [], 0, 0.0
    for i, T in enumerate(range(lT, lT + wT.size)):
        la, a, ra = frame(T, half, tail)
        lv, c, rv = frame(n - T, vpar, tail) if vpar is not None else (n - T, np.ones(1), 0.0)  # k = 3: hv = n - T
        count += a.size * c.size
        if count > budget:
            return None
        h0 = (la + np.arange(a.size, dtype=float))[:, None]
        hv = (lv + np.arange(c.size, dtype=float))[None, :]
        M = (wT[i] * a)[:, None] * c[None, :]
        common = ro * hv + ((n - T) - hv)
        B0 = rd * h0 + (T - h0) + common
        B1 = h0 + rd * (T - h0) + common
        P, Q = M * B0 / n, M * B1 / n
        P[M <= TINY] = 0.0  # (a tiny M may be subnormal: left out with its P and Q by _finish)
        blocks.append((P, Q, B0 / B1))
        rel_f = max(rel_f, _compose(ra, rv))
    P, Q, key = (np.concatenate([blk[j].ravel() for blk in blocks]) for j in range(3))
    rel = _compose(_compose(rT, rel_f), MASS_ARITH)
    return _finish(P, Q, key, rel, both=False)


def _slope_source(h0, h1, W, nT, lv, ln, of, S0, S1, S2, rd, ro, a, n):  # pragma: no cover - compiled by numba
    """``(P(S), Q(S))`` of the test at slope ``a`` of :func:`all_third_at_slopes`: for each pair ``(T, h0)`` the hv
    above its threshold (an index into the pair's suffix sums), summed in one pass of non-negative terms."""
    g = (1.0 - a) * (ro - 1.0)
    P = 0.0
    Q = 0.0
    for i in range(h0.size):
        # (a r overflows to inf past eps0 ~ 354: its term is then -inf, or 0 when h1 = 0, never inf * 0 = NaN)
        base = (rd - a) * h0[i] + (1.0 - a) * nT[i]
        if h1[i] > 0.0:
            base += (1.0 - a * rd) * h1[i]
        if g > 0.0:
            # hv above -base / g, as an index into the pair's sums in every case (an infinite or NaN threshold
            # would read outside them): any index is a test, the threshold only decides how good
            t = -base / g - lv[i]
            j = ln[i] if not t < ln[i] else (int(math.floor(t)) + 1 if t >= 0.0 else 0)
        else:
            j = 0 if base > 0.0 else ln[i]
        m = of[i] + j
        rest = ro * S1[m] + S2[m]
        P += W[i] * ((rd * h0[i] + h1[i]) * S0[m] + rest)
        Q += W[i] * ((h0[i] + rd * h1[i]) * S0[m] + rest)
    return P / n, Q / n


def all_third_at_slopes(users: int, k: int, o: float, tail: float, budget: float, target: float | None = None,
                        slopes: int = 32) -> tuple | None:
    """``(s, b)``: ROC points of the OPTIMAL tests of the dataset "every other user holds one third value v" at a
    grid of slopes ``a = e^eps`` (``slopes`` values of eps on ``[0, log(d/o)]``, and with ``target`` the eps where
    its delta crosses the target, by bisection), rounded the safe way for a lower; for sizes where the full
    histogram has too many outcomes but the pairs ``(T, h0)`` fit ``budget``. None otherwise.

    At slope a, ``P(h | x0) - a P(h | x1) = M(h) / n [(r - a) h0 + (1 - a r) h1 + (1 - a)(n - T)
    + (1 - a)(1/r - 1) hv]`` is increasing in hv for ``a >= 1`` (``r >= 1``), so for each ``(T, h0)`` the optimal
    test takes hv above a threshold: its masses are suffix sums over the frame of hv, of ``c``, ``hv c`` and
    ``(n - T - hv) c`` (``c = Bin(n - T, d/(1 - 2o))``), all of non-negative terms, combined with non-negative
    coefficients (no cancellation). The threshold is computed in floats: a wrong one gives another test, still
    achievable. Each test's sides carry the masses' relative error, the suffix sums' and the sum over the pairs'
    (``(len + V + 32) u``). Between grid slopes the hull is below
    the exact curve by at most the grid step times the change in s (hence the refinement at the target).

    >>> s, b = all_third_at_slopes(300, 4, 0.05, 1e-15, 1e5, target=1e-6)
    >>> bool(s.size > 10 and np.all((0.0 <= s) & (s <= 1.0) & (b <= 1.0)))
    True
    """
    ch = _usable_channel(k, o, users)
    if ch is None or k == 3:
        return None  # (k = 3: hv = n - T, the full histogram is the pairs (T, h0) themselves)
    fd, fo = ch
    n = int(users)
    two = 2 * fo
    pv = fd / (1 - two)
    lT, wT, _, rT = binomial_exact_rational(n, two, tail)
    t_mid = n * float(two)
    est, est_v = wT.size * _estimate(t_mid, 0.5, tail), wT.size * _estimate(n - t_mid, float(pv), tail)
    if est > budget or est_v > HV_SHARE * budget:
        return None
    check_memory(8.0 * (9 * est + 3 * est_v), "the lower's pairs (T, h_x0) (every other user at a third value)")
    rd, ro = float(fd / fo), float(fo / fd)
    half, vpar = rational_parameter(Fraction(1, 2)), rational_parameter(pv)
    pairs, sums, count, off, longest, rel_f = [], [], 0, 0, 0, 0.0
    for i, T in enumerate(range(lT, lT + wT.size)):
        la, a, ra = frame(T, half, tail)
        lv, c, rv = frame(n - T, vpar, tail)
        count += a.size
        if count > budget or off + c.size > HV_SHARE * budget:  # the pairs, and the frames of hv (three sums each)
            return None
        hv = lv + np.arange(c.size, dtype=float)
        for x in (c, hv * c, ((n - T) - hv) * c):
            sums.append(np.concatenate((np.cumsum(x[::-1])[::-1], [0.0])))  # suffix sums, 0 past the frame
        h0 = la + np.arange(a.size, dtype=float)
        pairs.append((h0, T - h0, wT[i] * a, np.full(a.size, float(n - T)), np.full(a.size, lv),
                      np.full(a.size, c.size), np.full(a.size, off)))
        off += c.size + 1
        longest = max(longest, c.size)
        rel_f = max(rel_f, _compose(ra, rv))
    h0, h1, W, nT, lv, ln, of = (np.concatenate([p[j] for p in pairs]) for j in range(7))
    S0, S1, S2 = (np.concatenate(sums[j::3]) for j in range(3))
    del sums
    rel = _compose(_compose(_compose(rT, rel_f), MASS_ARITH), (longest + count + 32) * _U)

    kernel = compiled(_slope_source)
    ln, of = ln.astype(np.int64), of.astype(np.int64)

    def test(eps: float) -> tuple[float, float]:
        return kernel(h0, h1, W, nT, lv, ln, of, S0, S1, S2, rd, ro, math.exp(eps), float(n))

    hi = math.log(rd)
    grid = list(np.linspace(0.0, hi, slopes))
    if target is not None:
        lo_e, hi_e = 0.0, hi
        for _ in range(80):  # to a relative 1e-10 (the epsilon may be tiny at large n)
            if hi_e - lo_e <= 1e-10 * hi_e:
                break
            mid = 0.5 * (lo_e + hi_e)
            P, Q = test(mid)
            lo_e, hi_e = (mid, hi_e) if P - math.exp(mid) * Q > target else (lo_e, mid)
        grid += [lo_e, hi_e] + [lo_e * (1.0 + f) for f in (-1e-3, -1e-4, 1e-4, 1e-3)]
    pts = [test(e) for e in grid if 0.0 <= e <= hi]
    P = np.array([p for p, _ in pts])
    Q = np.array([q for _, q in pts])
    # terms that underflow carry an absolute error instead of a relative one (at most 2^-1074 per operation, about
    # 8 operations a term): 2^-1070 per term, charged on both sides
    tiny = count * 2.0**-1070
    b = np.maximum(np.nextafter(P * (1.0 - rel) - tiny, -np.inf), 0.0)
    s = np.minimum(np.nextafter(Q * (1.0 + rel) + tiny * (1.0 + 8 * _U), np.inf), 1.0)
    return thin(np.concatenate(([0.0], s)), np.concatenate(([0.0], b)))


def all_first_lower(users: int, k: int, o: float, tail: float, budget: float) -> tuple | None:
    """``(s, b)``: ROC points of actual tests (both orders) of the dataset "every other user holds x0" (module
    docstring, closed form 2) for the exact k-RR of :func:`exact_channel`, rounded the safe way for a lower; None
    when its outcomes exceed ``budget`` (or the channel carries no information).

    >>> s, b = all_first_lower(4, 3, 0.2, 1e-15, 1e5)
    >>> round(float(DominatingPair.from_roc(s, b).delta(0.0)), 6)   # exact: 0.2048
    0.2048
    """
    ch = _usable_channel(k, o, users)
    if ch is None:
        return None
    fd, fo = ch
    n = int(users)
    lg, wg, _, rg = binomial_exact_rational(n, (k - 1) * fo, tail)
    est = wg.size * _estimate(n * float((k - 1) * fo), 1.0 / (k - 1), tail)
    if est > budget:
        return None
    check_memory(8.0 * 8 * min(budget, est), "the lower's outcomes (every other user at x0)")
    rd, ro = float(fd / fo), float(fo / fd)
    split = rational_parameter(Fraction(1, k - 1))
    blocks, count, rel_f = [], 0, 0.0
    for i in range(wg.size):
        g = lg + i
        la, a, ra = frame(g, split, tail)
        count += a.size
        if count > budget:
            return None
        h1 = la + np.arange(a.size, dtype=float)
        M = wg[i] * a
        B1 = ro * (n - g) + rd * h1 + (g - h1)
        blocks.append((M, M * B1 / n, B1))
        rel_f = max(rel_f, ra)
    P, Q, B1 = (np.concatenate([blk[j] for blk in blocks]) for j in range(3))
    rel = _compose(_compose(rg, rel_f), MASS_ARITH)
    return _finish(P, Q, -B1, rel, both=True)  # P / Q = n / B1: decreasing in B1


def envelope(points: list[tuple[np.ndarray, np.ndarray]], name: str) -> DominatingPair:
    """The lower pair whose curve is the largest of several concrete datasets' curves at each epsilon: the hull
    of the union of their achievable points (``max_S P(S) - a Q(S)`` over the union is the larger maximum)."""
    s = np.concatenate([p[0] for p in points])
    b = np.concatenate([p[1] for p in points])
    s, b = thin(s, b)
    return DominatingPair.from_roc(s, b, name=name, exact=True)


def points_epsilon(s: np.ndarray, b: np.ndarray, delta: float) -> float:
    """A float estimate of the epsilon where the points' curve ``max_k b_k - e^eps s_k`` crosses ``delta`` (only to
    say which dataset is the larger there; no certificate): a bisection on ``[0, 800]``."""
    lo, hi = 0.0, 800.0
    if float(np.max(b - s)) <= delta:
        return 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        with np.errstate(over="ignore", invalid="ignore"):
            v = float(np.max(b - math.exp(mid) * s))
        lo, hi = (mid, hi) if v > delta else (lo, mid)
    return lo
