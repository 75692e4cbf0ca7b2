r"""The "exact" method: the worst case over the other users' data of the shuffled histogram of randomized response.

n users each report through binary randomized response (keep the bit with probability ``p > 1/2``); the
analyst sees the number s of reported ones. Neighbouring datasets differ in user 1's bit; the other
``N = n - 1`` bits are arbitrary. With m of them equal to 1, the others' count is
``Z_m = Bin(m, p) + Bin(N - m, q)`` (``q = 1 - p``) and user 1 holding b gives

    P_0(s) = p Z_m(s) + q Z_m(s - 1),        P_1(s) = q Z_m(s) + p Z_m(s - 1).

The dataset with m ones is the mirror image of the one with ``N - m`` ones (swap the bit labels), so the
profile over both orders of the neighbouring pair, maximised over ``m in [0, N/2]``, is the exact worst case.

**Which datasets are worst (what is proved, and what is not).** The maximum is NOT always at m = 0: exact
rational arithmetic shows interior m winning (e.g. N = 2, p = 2/3 at eps = 0: m = 1 gives 5/27 against
4/27), and at n = 1000, eps0 = 2 the maximising m jumps between 0, 1 and 2 from one eps to the next
(lattice effects of the discrete histogram). So nothing is assumed: the certified profile is a sound
maximum over EVERY m, built from two facts proved here.

* *Exact components.* For each m in a set E the pair ``(P_0, P_1)`` is computed on its effective support;
  its curve, widened by the rounding and tail bounds of :mod:`._pairs`, is an upper bound for dataset m.
* *Interval components (reveal argument).* Fix ``m1 <= m <= m2`` and call the ``L = m2 - m1`` users that are
  neither among the first m1 ones nor among the last ``N - m2`` zeros "middle". Binary RR is a blanket
  mixture: ``Bern(p) = (1 - 2q) delta_1 + 2q Bern(1/2)`` and ``Bern(q) = (1 - 2q) delta_0 + 2q Bern(1/2)``.
  Give the analyst, for every middle user, whether it drew from the blanket: its report is then either a
  fair coin or its (known) value, whatever that value is. Subtracting the known values (a bijection given
  what is revealed) leaves ``user 1 + Bin(m1, p) + Bin(N - m2, q) + Bin(C, 1/2)`` with ``C ~ Bin(L, 2q)`` the
  number of coins, a distribution that does not depend on m; the revealed view refines s, so by joint
  convexity ``H_a(dataset m) <= E_C H_a(pair_C)``. Adding an independent fair coin is a post-processing, so
  ``H_a(pair_C) <= H_a(pair_c)`` for ``C >= c``, and ``H_a <= 1`` always: with ``c`` the largest count such that
  ``P(C < c) <= tau`` (a Chernoff bound), ``H_a(dataset m) <= tau + H_a(pair_c)`` for every m in the interval
  and every a at once. ``pair_c`` is a single log-concave pair (so its optimal tests are prefixes) and ``tau`` is
  added to its dropped mass. An interval costs about ``L (p - 1/2) / (N p)`` of the noise variance, so the
  bound is tight only for short intervals near the worst datasets and for intervals where the exact profile is
  well below the worst (it decreases slowly as m moves towards ``N/2`` at large N).
* *Refinement (best first).* The first ``min_exact`` datasets are exact and geometric intervals cover the rest
  (at large N none wider than ``MAX_SPAN N``: the profile barely depends on the dataset there, so a wider one
  would only be split later).
  With a target delta, ``eps*`` is the largest epsilon at that delta among the exact datasets so far (a lower
  bound of the truth); an interval whose float hockey-stick at ``eps* (1 + tolerance)`` exceeds the target is
  queued, and the queued interval with the largest value is split (in four, in halves when wide, or into
  single datasets when short) until none is left or the work budget is spent; what is left is kept unsplit.
  Splitting only decides where work is spent: every component kept is a sound bound for its datasets, so the
  certificate is sound whatever the heuristic; within the budget the certified epsilon at the target is within
  ``1 + tolerance`` of the exact worst case (plus rounding), and past it the report's ``lower`` shows the gap.

The certified pair is the ROC hull of all components in both orders (:meth:`DominatingPair.from_roc`), so
its curve is at least every component's at every eps: a finite dominating pair that ``compose`` takes.
When every m is an exact component the certified curve is the exact worst case (up to outward rounding);
otherwise intervals cover the rest and the report's ``lower`` (the envelope of the exact components, each
a concrete dataset) shows the gap.

**k-ary randomized response (k >= 3)** is in :mod:`.krr` (a sound bound for every dataset, with a concrete
dataset below it); it shares this module's convolutions and pairs.

Numerics: binomials on their effective support with Chernoff bounds of the dropped mass
(:mod:`._binomial`), which is added to delta as mass at infinite privacy loss; direct convolutions (every
entry a sum of non-negative products, relative error ``len * u``), and for the largest interval components an
FFT with an absolute error bound per entry (:func:`_fft_conv`), circular on a window around the count's mean
when that is shorter (:func:`_fft_conv3_window`: the wrapped terms and the mass outside bounded by a Chernoff
bound of the sum of binomials); all errors widen the pair outward (P up, Q down). The ROC points of both orders
and their merge into the hull are compiled passes (:mod:`._pairs`); queued intervals keep their count law. Z is a
sum of independent Bernoulli counts, hence log-concave, so the likelihood ratio of each exact
component is monotone in s and its optimal tests are prefixes (no sorting, no tie band).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_memory, progress_bar
from ..errors import InvalidParameterError
from ..privacy import DominatingPair
from ._binomial import (PMF_RTOL, WINDOW_TAIL, binomial_window, chernoff_log_tail, pmf_rtol,
                        sum_chernoff_log_tail)
from ._fftconv import fft_conv_error
from ._pairs import (HullAccumulator, both_orders, hockey_both, roc_lower, roc_upper_widened,
                     user_pair_widened)

__all__ = ["ShuffledPairs", "binary_rr_shuffle", "EXACT_TOLERANCE"]

#: every dataset of the other users is computed exactly when there are at most this many (up to mirror images)
MAX_EXACT_ALL = 512
#: otherwise the first datasets m = 0, 1, ... (this many) are, and intervals cover the rest
MIN_EXACT = 4
#: an interval of datasets is split while its bound at ``eps* (1 + EXACT_TOLERANCE)`` exceeds the target delta
EXACT_TOLERANCE = 1e-7
#: an interval's middle users are credited with at least the coins they draw except with this probability
COIN_TAIL = 1e-20
#: a queued interval is split into this many parts (single datasets when it holds at most 8; in halves when it holds
#: more than SPLIT_HALVES: wide intervals at large n are seldom split down to single datasets, and halving every
#: widest one costs half as much as quartering it)
SPLIT = 4
SPLIT_HALVES = 100_000
#: the window tail of the k-RR lower profile's binomials (mass left out only lowers a lower bound)
LOWER_TAIL = 1e-15
#: the work (outcomes of all components computed; the cost per outcome is about flat, 40-100 ns on this machine
#: from n = 1e6 to 1e8) spent splitting intervals; past it, the intervals left are kept unsplit (sound, looser).
#: About 0.3-0.4 s of CPU on this machine (measured at load 3.5)
EXACT_WORK_BUDGET = 5e6
#: the fixed cost of a component in outcomes (windows, bisections, calls: about 0.15 ms)
COMPONENT_OVERHEAD = 2500
#: queued intervals keep their arrays (instead of being recomputed when the budget leaves them unsplit) up to this
#: many outcomes in all (8 bytes each: the count law)
KEEP_QUEUED = 3_000_000
#: the first interval after the exact datasets reaches this share of the other users (then geometric growth)
FIRST_SPAN = 1e-3
#: no interval of the first cover spans more than this share of the other users (its reveal costs about that share
#: of the noise variance times ``(p - 1/2) / p``; the profile barely depends on the dataset at large n, so wider
#: intervals would only be split later)
MAX_SPAN = 1 / 64
_U = UNIT_ROUNDOFF


@dataclass(frozen=True, eq=False)
class ShuffledPairs:
    """What the exact method returns: the certified pair, the pair of the concrete datasets computed exactly
    (``lower``: its curve is below the worst case), and what the components were."""

    upper: DominatingPair
    lower: DominatingPair | None
    exact_all: bool
    exact_datasets: tuple
    intervals: tuple
    lower_dataset: str
    curve: Any = None  # the certified delta curve (an array of eps in) when the method evaluates one directly


def _conv(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """Direct convolution and its relative error bound (non-negative terms: ``(min len + 1) u``)."""
    out = np.convolve(a, b)
    return out, (min(a.size, b.size) + 2) * _U


#: above this many multiply-adds an interval component convolves by FFT (with an absolute error bound)
FFT_MIN_WORK = 3e6


def _fft_conv(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """Convolution by real FFT and a bound of its absolute error in every entry.

    Error model (Higham 2002, Thm 24.2: a computed radix-2 FFT of x is within ``5 u log2(n) ||F x||_2`` in the
    2-norm, ``||F x||_2 = sqrt(n) ||x||_2``): products of the transforms and the inverse give
    ``||c~ - c||_2 <= e_F (||a||_2 ||b||_1 + ||a||_1 ||b||_2 + 2 ||c||_2) + 3u ||c||_2`` with ``e_F`` the
    relative FFT error; we take ``e_F = 16 u (log2 n + 1)`` (a factor 3 above Higham's constant) and double the
    result. Every entry's error is at most the 2-norm of the error vector. Negative entries (true values are
    >= 0) are set to 0, which only reduces the error."""
    L = a.size + b.size - 1
    n = 1 << max(1, (L - 1).bit_length())
    c = np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n), n)[:L]
    return np.maximum(c, 0.0), fft_conv_error(a, b, c, n)


def _fft_conv3(a: np.ndarray, b: np.ndarray, c: np.ndarray, size: int | None = None) -> tuple[np.ndarray, float]:
    """The convolution of three non-negative vectors by one product of real FFTs, and a bound of its absolute
    error in every entry (the model of :func:`_fft_conv`).

    With ``a~ = F a + e_a``, ``||e_a||_2 <= e_F ||F a||_2 = e_F sqrt(n) ||a||_2`` and ``||F x||_inf <= ||x||_1``:
    ``a~ b~ c~ - Fa Fb Fc = e_a b~ c~ + Fa e_b c~ + Fa Fb e_c``, of 2-norm at most
    ``e_F sqrt(n) (||a||_2 ||b||_1 ||c||_1 + ||a||_1 ||b||_2 ||c||_1 + ||a||_1 ||b||_1 ||c||_2) g`` with
    ``g = (1 + e_F sqrt(n))^2`` (the computed transforms' sup norms); the inverse divides a 2-norm by
    ``sqrt(n)`` and adds ``e_F ||r||_2``, the two complex products at most ``12 u`` of ``||r||_2`` more (the
    transforms' product has 2-norm ``sqrt(n) ||r||_2`` up to the errors above). We double the sum, as there.

    >>> x = np.array([0.25, 0.5, 0.25])
    >>> r, eta = _fft_conv3(x, x, x)
    >>> bool(np.all(np.abs(r - np.convolve(np.convolve(x, x), x)) <= eta) and eta < 1e-12)
    True
    """
    L = a.size + b.size + c.size - 2
    n = 1 << max(1, (L - 1).bit_length())
    if size is not None:  # a circular convolution of this length (a power of two, at least each input's length)
        n = L = int(size)
    r = np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n) * np.fft.rfft(c, n), n)[:L]
    na, nb, nc = (float(np.sqrt((x * x).sum())) for x in (a, b, c))  # pairwise sums, not a threaded BLAS dot
    sa, sb, sc = float(a.sum()), float(b.sum()), float(c.sum())
    nr = float(np.sqrt((r * r).sum()))
    eF = 16.0 * _U * (math.log2(n) + 1.0)
    g = (1.0 + eF * math.sqrt(n)) ** 2 * 1.01
    eta = 2.0 * (eF * (na * sb * sc + sa * nb * sc + sa * sb * nc) * g + (2.0 * eF + 12.0 * _U) * nr * 1.01)
    return np.maximum(r, 0.0), math.nextafter(eta, math.inf)


#: the mass of an interval component's count law left outside the window of a shorter (circular) FFT, and the
#: mass each of its binomial windows may leave out (both far below the coin tail its delta already carries)
CONV_TAIL = 1e-20
INTERVAL_TAIL = 1e-21


def _fft_conv3_window(a: np.ndarray, b: np.ndarray, c: np.ndarray, parts: list, lo: int,
                      tail: float = CONV_TAIL) -> tuple[np.ndarray, float, float] | None:
    """``(z, eta, out)``: the law of ``Z = A + B + C`` (windows ``a, b, c`` of the independent binomials ``parts``,
    the sum's outcome ``lo`` at index 0 of their linear convolution) on the ``n`` outcomes around its mean only,
    by a circular convolution of length ``n``; None when no power of two below the full length leaves at most
    ``tail`` of Z's mass outside such a window.

    The sum of the three windows' lengths grows like the sum of their deviations, Z's spread like the root of the
    sum of their variances, so ``n`` is often half the full length. The computed circular convolution is within
    :func:`_fft_conv3`'s ``eta`` of the exact circular one (its error model holds at any ``n`` at least each
    input's length), which is the exact linear one on the window plus, at each entry, terms from outside it
    (non-negative, at most the linear convolution's mass outside the window, which is at most
    ``(1 + 4 PMF_RTOL)`` times Z's: the windows' masses are within ``PMF_RTOL`` of Z's factors). So every entry is
    within ``eta + out`` of the exact one, and ``out`` (a Chernoff bound of Z's mass outside the window,
    :func:`._binomial.sum_chernoff_log_tail`) is also mass the window leaves out (the caller adds it to the
    dropped mass)."""
    L = a.size + b.size + c.size - 2
    full = 1 << max(1, (L - 1).bit_length())
    n = 1 << max(1, (max(a.size, b.size, c.size) - 1).bit_length())
    mu = sum(k * r for k, r in parts)
    sd = math.sqrt(sum(k * r * (1.0 - r) for k, r in parts))
    n = max(n, 1 << max(1, int(math.ceil(2.0 * sd * math.sqrt(2.0 * math.log(2.0 / tail)))) - 1).bit_length())
    while n < full:
        w0 = min(max(int(round(mu)) - n // 2, lo), lo + L - n)
        out = sum(math.exp(v) for v in (sum_chernoff_log_tail(parts, w0 - 1, False),
                                         sum_chernoff_log_tail(parts, w0 + n, True)) if v > -math.inf)
        out = math.nextafter(out * (1.0 + 4.0 * PMF_RTOL) * (1.0 + 8 * _U), math.inf)
        if out <= tail:
            r, eta = _fft_conv3(a, b, c, n)
            return np.roll(r, -(w0 - lo)), math.nextafter(eta + out, math.inf), out
        n *= 2
    return None


def _conv_any(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(c, rel, absolute)``: direct convolution for small work (relative error), FFT above ``FFT_MIN_WORK``
    (absolute error)."""
    if float(a.size) * float(b.size) <= FFT_MIN_WORK:
        c, r = _conv(a, b)
        return c, r, 0.0
    c, eta = _fft_conv(a, b)
    return c, 0.0, eta


def _user_pair(Z: np.ndarray, p: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """``P_0(s) = p Z(s) + q Z(s - 1)``, ``P_1(s) = q Z(s) + p Z(s - 1)`` (each entry within 3u)."""
    z0 = np.concatenate((Z, [0.0]))
    z1 = np.concatenate(([0.0], Z))
    return p * z0 + q * z1, q * z0 + p * z1


def _width(n: int, p: float) -> int:
    """A cheap estimate of the effective support length of Bin(n, p) (for the memory check)."""
    return int(2 * 14 * math.sqrt(n * p * (1 - p))) + 2


def _coin_floor(L: int, gamma: float, tail: float) -> tuple[int, float]:
    """``(c, tau)``: the largest ``c`` with ``P(Bin(L, gamma) < c) <= tau <= tail`` (Chernoff, rounded up)."""
    if L == 0 or gamma <= 0.0:
        return 0, 0.0
    lt = math.log(tail)
    a, b = 0, int(math.floor(L * gamma))
    while a < b:  # the bound on P(C <= c - 1) grows with c
        mid = (a + b + 1) // 2
        if chernoff_log_tail(L, gamma, mid - 1, False) <= lt:
            a = mid
        else:
            b = mid - 1
    if a == 0:
        return 0, 0.0
    tau = math.exp(chernoff_log_tail(L, gamma, a - 1, False)) * (1.0 + 4 * _U)
    return a, math.nextafter(tau, math.inf)


def _component_law(N: int, m1: int, m2: int, p: float, q: float, tail: float, coin_tail: float = COIN_TAIL):
    """``(z, rel, dropped, eta)``: the law of the others' count behind the pair ``(P, Q)`` covering the datasets
    ``m1..m2`` of the others (module docstring), with the pair's relative error ``rel`` and the absolute error
    ``eta`` of each of its entries (:func:`._pairs.user_pair_widened` widens by it): exactly dataset
    m1 when ``m1 == m2``; otherwise ``Z = Bin(m1, p) + Bin(N - m2, q) + Bin(c, 1/2)``, the ``L = m2 - m1`` middle
    users' blanket draws revealed and at least ``c`` of them coins except with probability ``tau`` (added to
    ``dropped``). ``P, Q`` bound the exact arrays up to the relative error ``rel`` (absolute FFT errors are
    widened outward first), and the exact ratio ``P/Q`` is non-increasing along them (Z is log-concave). When
    both convolutions are large, the three windows are convolved by one FFT product (:func:`_fft_conv3`)."""
    c, tau = _coin_floor(m2 - m1, 2.0 * q, coin_tail) if m2 > m1 else (0, 0.0)
    if m2 > m1:  # an interval's delta already carries tau: windows that leave out far less cost nothing
        tail = max(tail, INTERVAL_TAIL)
    lo_a, a, da = binomial_window(m1, p, tail)
    lo_b, b, db = binomial_window(N - m2, q, tail)
    rel = pmf_rtol(m1, p) + pmf_rtol(N - m2, q) + 8 * _U
    dropped = da + db
    coin = None
    if c:
        lo_c, coin, dc = binomial_window(c, 0.5, tail)
        rel += pmf_rtol(c, 0.5)
        dropped += dc + tau
    if coin is not None and min(float(a.size) * b.size, float(a.size + b.size) * coin.size) > FFT_MIN_WORK:
        win = _fft_conv3_window(a, b, coin, [(m1, p), (N - m2, q), (c, 0.5)], lo_a + lo_b + lo_c)
        if win is None:
            z, eta = _fft_conv3(a, b, coin)
        else:
            z, eta, out = win
            dropped += out
    else:
        z, r, eta = _conv_any(a, b)
        rel += r
        if coin is not None:
            z, r, e2 = _conv_any(z, coin)
            rel += r
            eta = eta * (1.0 + rel) + e2  # a convolution with a probability vector keeps a sup-norm error
    return z, rel + 4 * _U, dropped, eta * (1.0 + 4 * _U)


def _component(N: int, m1: int, m2: int, p: float, q: float, tail: float, coin_tail: float = COIN_TAIL):
    """``(P, Q, rel, dropped, raw)`` covering the datasets ``m1..m2`` (:func:`_component_law`): the pair widened by
    the law's absolute error for ``H(P || Q)`` only (the certificate widens each order its own way:
    :func:`._pairs.roc_upper_widened`), and for an exact dataset (``m1 == m2``) ``raw = (Pc, Qc, eta)``, the unwidened
    pair."""
    z, rel, dropped, eta = _component_law(N, m1, m2, p, q, tail, coin_tail)
    P, Q = user_pair_widened(z, p, q, eta)
    raw = None
    if m1 == m2:  # the exact datasets' lower points read the unwidened masses
        Pc, Qc = _user_pair(z, p, q)
        raw = (Pc, Qc, eta)
    return P, Q, rel, dropped, raw


def _lower_points(raw: tuple, rel: float, dropped: float) -> tuple[np.ndarray, np.ndarray]:
    """ROC points of actual tests of an exact dataset (both orders), every side rounded the safe way for a LOWER
    curve: masses within ``eta`` (FFT) moved the other way than for the certificate (P down, Q up), and each
    test's false-alarm side raised by the mass the windows left out (``dropped``: it may belong to any
    outcome)."""
    Pc, Qc, eta = raw
    if eta > 0.0:  # each order: its detection side down, its false-alarm side up
        lo_p, lo_q = (np.maximum(np.nextafter(x - eta, -np.inf), 0.0) for x in (Pc, Qc))
        hi_p, hi_q = (np.nextafter(x + eta, np.inf) for x in (Pc, Qc))
        s1, b1 = roc_lower(lo_p, hi_q, rel, monotone=True)
        s2, b2 = roc_lower(lo_q[::-1], hi_p[::-1], rel, monotone=True)
        s, b = np.concatenate((s1, s2)), np.concatenate((b1, b2))
    else:
        s, b = both_orders(roc_lower, Pc, Qc, rel, monotone=True)
    if dropped > 0.0:
        s = np.minimum(np.nextafter(s + dropped * (1.0 + 4 * _U), np.inf), 1.0)
    return s, b


def _epsilon_of(P: np.ndarray, Q: np.ndarray, delta: float, hi: float) -> float:
    """The float epsilon at which a component's curve crosses ``delta`` (a heuristic only). The exact ratio
    ``P/Q`` is non-increasing along the arrays, so each order's curve is ``max_k (cP_k - a cQ_k)`` over prefix
    sums, and ``delta(a) <= delta`` exactly when ``a >= (cP_k - delta) / cQ_k`` for every k: one pass."""
    best = 1.0
    for A, B in ((P, Q), (Q[::-1], P[::-1])):
        cP, cQ = np.cumsum(A), np.cumsum(B)
        over = cP > delta
        if not over.any():
            continue
        if np.any(over & (cQ <= 0.0)):
            return hi
        best = max(best, float(np.max((cP[over] - delta) / cQ[over])))
    return min(hi, math.log(best)) if best > 1.0 else 0.0


def binary_rr_shuffle(users: int, p: float, *, tail: float = WINDOW_TAIL, target_delta: float | None = None,
                      tolerance: float = EXACT_TOLERANCE, growth: float = 1.5,
                      budget: float = EXACT_WORK_BUDGET, max_exact_all: int = MAX_EXACT_ALL,
                      min_exact: int = MIN_EXACT, coin_tail: float = COIN_TAIL, lower_p: float | None = None,
                      progress: bool | None = None) -> ShuffledPairs:
    """Certified worst case over the other users' bits of binary RR (keep probability ``p``) shuffled among
    ``users`` users, as a finite dominating pair (derivation in the module docstring).

    ``p`` is the keep probability (``1/2 <= p < 1``; a larger p is less private, so callers round it up).
    Every dataset m (number of ones among the others, up to ``N/2`` by mirror symmetry) is covered by a
    component: the exact pair of dataset m, or the revealed pair of an interval ``[m1, m2]`` of datasets (sound
    for each of them at every epsilon; module docstring). With at most ``max_exact_all`` datasets each is
    computed exactly. Otherwise the first ``min_exact`` are, intervals growing geometrically (``growth``, at most
    ``MAX_SPAN N`` wide beyond 4096) cover the rest, and with ``target_delta`` (the API always passes one) they
    are refined best first until each one's bound at ``eps* (1 + tolerance)`` is at most the target or
    ``budget`` (outcomes computed, about 0.35 s) is spent. ``coin_tail`` is the probability ``tau`` an
    interval's coin count may fall below the count it is credited with (added to its delta at every epsilon).

    Within the budget the certified epsilon at the target is within ``1 + tolerance`` of the exact worst case
    (plus rounding); past it the result stays sound and ``lower`` (the exact datasets) shows the gap.

    ``lower_p`` (in ``[1/2, p]``, default p): the true keep probability is only known to be in ``[lower_p, p]``; the
    lower's datasets are computed again at lower_p (the truth's RR then a flip: below the truth).

    Examples
    --------
    >>> res = binary_rr_shuffle(4, 0.75)
    >>> res.exact_all, round(res.upper.delta(0.0), 6)   # 3 others: m = 1 one (0.257813) beats m = 0 (0.210938)
    (True, 0.257813)
    """
    N = int(users) - 1
    q = 1.0 - p  # exact (Sterbenz) for p in [1/2, 1]
    lower_p = p if lower_p is None else lower_p
    if not 0.5 <= lower_p <= p:
        raise InvalidParameterError(f"lower_p must be in [1/2, p = {p!r}] (got {lower_p!r})")
    half = N // 2
    if q == 0.0:  # no noise: the others' count is known, so s reveals user 1's bit (delta = 1 at every eps)
        pair = DominatingPair([1.0, 0.0], [0.0, 1.0], name=f"binary RR with p = 1 among {users} users", exact=True)
        low = pair if lower_p == 1.0 else binary_rr_shuffle(users, lower_p, tail=tail, min_exact=min_exact).lower
        return ShuffledPairs(pair, low, True, (0,), (), "any dataset of the other users")
    check_memory(160.0 * (_width(N, q) + _width(half, p) + 64), "the shuffled histogram's distributions")
    up, lo = HullAccumulator(), HullAccumulator()
    exact_ms: list[int] = []
    intervals: list[tuple[int, int]] = []
    pending: list[tuple[float, int, int]] = []  # a heap of intervals to split, the largest bound first
    eps_hi = math.log(p / q)
    state = {"eps": 0.0, "work": 0.0, "count": 0, "kept": 0, "iwork": 0.0, "icount": 0}
    if half + 1 <= max_exact_all:
        first = [(m, m) for m in range(half + 1)]
    else:
        min_exact = max(1, min(int(min_exact), half + 1))
        first, start = [(m, m) for m in range(min_exact)], min_exact
        lead = int(N * FIRST_SPAN)
        if lead > start:  # one interval up to FIRST_SPAN * N (its reveal costs about that share of the noise)
            first.append((start, min(lead, half)))
            start = min(lead, half) + 1
        cap = max(4096, int(N * MAX_SPAN))  # (only large n: the profile barely depends on the dataset there)
        while start <= half:
            end = min(start + min(max(1, int(start * (growth - 1.0))), cap) - 1, half)
            first.append((start, end))
            start = end + 1

    with progress_bar(half + 1, "shuffle exact", unit="dataset", progress=progress) as bar:

        def accept(z, eta, rel, dropped, m1, m2, pair):  # each order widened its own way (roc_upper_widened)
            s, b = roc_upper_widened(z, p, q, eta, rel, dropped, pair)
            up.add_runs(s, b, z.size + 2)
            bar.update(m2 - m1 + 1)

        def visit(m1: int, m2: int, final: bool = False, kept: tuple | None = None) -> None:
            if kept is not None:  # its law was computed when it was queued
                z, rel, dropped, eta = kept
                state["kept"] -= z.size
            else:
                z, rel, dropped, eta = _component_law(N, m1, m2, p, q, tail, coin_tail)
                state["work"] += z.size + COMPONENT_OVERHEAD
                state["count"] += 1
                if m1 != m2:
                    state["iwork"] += z.size + COMPONENT_OVERHEAD
                    state["icount"] += 1
            P, Q = user_pair_widened(z, p, q, eta)
            if m1 == m2:
                exact_ms.append(m1)
                zl, rl, dl, el = (z, rel, dropped, eta) if lower_p == p else (  # the lower at the most private end
                    _component_law(N, m1, m2, lower_p, 1.0 - lower_p, tail, coin_tail))
                lo.add_runs(*_lower_points((*_user_pair(zl, lower_p, 1.0 - lower_p), el), rl, dl), zl.size + 2)
                if target_delta is not None:
                    state["eps"] = max(state["eps"], _epsilon_of(P, Q, target_delta, eps_hi))
            elif target_delta is not None and not final:
                h = hockey_both(P, Q, math.exp(state["eps"] * (1.0 + tolerance))) * (1.0 + 1e-9) + dropped
                if h > target_delta:
                    keep = state["kept"] + z.size <= KEEP_QUEUED
                    if keep:
                        state["kept"] += z.size
                    heapq.heappush(pending, (-h, m1, m2, (z, rel, dropped, eta) if keep else None))
                    return
            if m1 != m2:
                intervals.append((m1, m2))
            accept(z, eta, rel, dropped, m1, m2, (P, Q))

        def left() -> float:  # the work still needed to finish the queue: its components not kept are recomputed
            return sum(1 for t in pending if t[3] is None) * state["work"] / max(state["count"], 1)

        for i, (m1, m2) in enumerate(first):
            # an interval of a first cover that by itself leaves no budget to split is final at once (not queued)
            full = state["icount"] > 0 and m1 != m2 and (
                state["work"] + (len(first) - i) * state["iwork"] / state["icount"]
                + SPLIT * state["work"] / state["count"] >= budget)
            visit(m1, m2, final=full)
        while pending and state["work"] + left() + SPLIT * state["work"] / max(state["count"], 1) < budget:
            _, m1, m2, _kept = heapq.heappop(pending)
            if _kept is not None:
                state["kept"] -= _kept[0].size
            del _kept
            L = m2 - m1 + 1
            step = 1 if L <= 8 else -(-L // (2 if L > SPLIT_HALVES else SPLIT))
            for a in range(m1, m2 + 1, step):
                visit(a, min(a + step - 1, m2))
        for _, m1, m2, kept in sorted(pending, key=lambda t: t[1]):  # the budget is spent: kept unsplit (sound)
            visit(m1, m2, final=True, kept=kept)
        pending.clear()
    s, b = up.points()
    exact_all = not intervals
    upper = DominatingPair.from_roc(s, b, name=f"binary RR shuffled among {users} users (worst case of the others)",
                                    exact=exact_all)
    s, b = lo.points()
    lower = DominatingPair.from_roc(s, b, name=f"binary RR shuffled among {users} users ({len(exact_ms)} datasets "
                                    "computed exactly)", exact=True)
    shown = sorted(exact_ms)
    listed = ", ".join(map(str, shown[:6])) + (", ..." if len(shown) > 6 else "")
    what = (f"the other users hold m ones for {len(shown)} values of m ({listed}; and their mirror images): the "
            "largest exact profile among those datasets at each epsilon")
    return ShuffledPairs(upper, lower, exact_all, tuple(shown), tuple(intervals), what)


def _widen(P: np.ndarray, Q: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """Arrays bounding the exact ones from the safe side when each entry is within ``eta`` (absolute)."""
    if eta == 0.0:
        return P, Q
    return np.nextafter(P + eta, np.inf), np.maximum(np.nextafter(Q - eta, -np.inf), 0.0)

