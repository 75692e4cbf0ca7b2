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
  fair coin or its (known) value, whatever that value is. The analyst's view becomes (the set of blanket
  middle users, the count s minus known values); its distribution given the set does not depend on m, and
  it is a refinement of s, so ``H_a(dataset m) <= E_C H_a(pair_C)`` with ``C ~ Bin(L, 2q)`` and
  ``pair_C`` the pair for ``Z = Bin(m1, p) + Bin(N - m2, q) + Bin(C, 1/2)`` (the revealed mixture over C is
  itself a finite pair on outcomes (C, s)). Adding an independent coin is a post-processing, so
  ``H_a(pair_C) <= H_a(pair_c)`` for ``C >= c``: C's effective support is cut into bins, each replaced by its
  smallest C, and the mass below the support is added to delta. The same reveal applied to all but ``keep``
  of the m1 base ones (large m1, to bound the work) covers the interval too, more loosely. All of it holds at
  every eps at once (one post-processing argument, not a per-eps one).

The certified pair is the ROC hull of all components in both orders (:meth:`DominatingPair.from_roc`), so
its curve is at least every component's at every eps: a finite dominating pair that ``compose`` takes.
When every m is an exact component the certified curve is the exact worst case (up to outward rounding);
otherwise intervals cover the rest and the report's ``lower`` (the envelope of the exact components, each
a concrete dataset) shows the gap.

**k-ary randomized response (k >= 3).** Every other user's report lands on user 1's two candidate values
``{x0, x1}`` with a "coin" of probability ``2o`` (uniform on the two) whatever its value (a user holding x0
lands there with ``d + o = 2o + (d - o)``, the extra ``d - o`` on the known x0); user 1 lands there with
probability ``d + o`` under both hypotheses, as a binary RR with keep probability ``p' = d / (d + o)``.
Revealing every report that is not a coin (and user 1's landing) is a refinement of the histogram, so
every dataset is dominated by the mixture over ``C ~ Bin(N, 2o)`` coins of binary RR at ``p'`` among
``C`` fair coins, with weight ``d + o`` (the rest of user 1's mass is identical under both hypotheses).
That is a sound bound for every dataset, but NOT the exact worst case: the report's ``lower`` is the exact
profile of the concrete dataset "every other user holds one third value" (sufficient statistics: the
counts at x0, x1 and that value), and it states the gap.

Numerics: binomials on their effective support with Chernoff bounds of the dropped mass
(:mod:`._binomial`), which is added to delta as mass at infinite privacy loss; direct convolutions (every
entry a sum of non-negative products, relative error ``len * u``), and for the largest interval components an
FFT with an absolute error bound per entry (:func:`_fft_conv`); all errors widen the pair outward (P up, Q
down). Z is a sum of independent Bernoulli counts, hence log-concave, so the likelihood ratio of each exact
component is monotone in s and its optimal tests are prefixes (no sorting, no tie band).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_memory, progress_bar
from ..privacy import DominatingPair
from ._binomial import PMF_RTOL, WINDOW_TAIL, binomial_window, pmf_rtol
from ._pairs import HullAccumulator, both_orders, roc_lower, roc_upper, thin

__all__ = ["ShuffledPairs", "binary_rr_shuffle", "krr_shuffle", "EXACT_WORK_BUDGET"]

#: multiply-adds of direct convolution the exact method spends before covering the remaining datasets of the
#: other users by one coarse interval (sound, looser); about 1 s on this machine
EXACT_WORK_BUDGET = 4e8
#: every dataset of the other users is computed exactly when there are at most this many (up to mirror images)
MAX_EXACT_ALL = 1024
#: otherwise the first datasets m = 0, 1, ... (at most this many) are, and intervals cover the rest
MAX_EXACT_DATASETS = 64
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


def _conv(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """Direct convolution and its relative error bound (non-negative terms: ``(min len + 1) u``)."""
    out = np.convolve(a, b)
    return out, (min(a.size, b.size) + 2) * _U


#: above this many multiply-adds an interval component convolves by FFT (with an absolute error bound)
FFT_MIN_WORK = 3e7


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
    na, nb = float(np.sqrt(np.dot(a, a))), float(np.sqrt(np.dot(b, b)))
    sa, sb = float(a.sum()), float(b.sum())
    nc = float(np.sqrt(np.dot(c, c)))
    eF = 16.0 * _U * (math.log2(n) + 1.0)
    eta = 2.0 * (eF * (na * sb + sa * nb + 2.0 * nc * 1.01) + 3.0 * _U * nc * 1.01)
    return np.maximum(c, 0.0), math.nextafter(eta, math.inf)


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


def _dataset_z(N: int, m: int, p: float, q: float, tail: float, extra: int = 0):
    """``Z = Bin(m, p) + Bin(N - m, q) [+ Bin(extra, 1/2)]`` on its effective support: (Z, rel, dropped)."""
    _, a, da = binomial_window(m, p, tail)
    _, b, db = binomial_window(N - m, q, tail)
    z, r = _conv(a, b)
    rel = r + pmf_rtol(m, p) + pmf_rtol(N - m, q)
    dropped = da + db
    if extra:
        _, c, dc = binomial_window(extra, 0.5, tail)
        z, r2 = _conv(z, c)
        rel += r2 + pmf_rtol(extra, 0.5)
        dropped += dc
    return z, rel + 8 * _U, dropped


def _width(n: int, p: float) -> int:
    """A cheap estimate of the effective support length of Bin(n, p) (for the work budget)."""
    return int(2 * 14 * math.sqrt(n * p * (1 - p))) + 2


def _binary_component(z: np.ndarray, rel: float, dropped: float, p: float, q: float, lower: bool):
    """ROC points (upper, and lower when asked) of the pair of user 1 added to the others' count Z.

    Z is a sum of independent Bernoulli counts, hence log-concave, so ``Z(s) / Z(s - 1)`` and with it
    ``P_0(s) / P_1(s) = (p r + q) / (q r + p)`` are non-increasing in s: the natural order is the ratio order."""
    P, Q = _user_pair(z, p, q)
    up = both_orders(roc_upper, P, Q, rel + 4 * _U, dropped, monotone=True)
    lo = both_orders(roc_lower, P, Q, rel + 4 * _U, monotone=True) if lower else None
    return up, lo


def _plan_exact(N: int, p: float, q: float, budget: float) -> tuple[int, bool]:
    """How many datasets m = 0, 1, ... to compute exactly, and whether each costs its own pmf (all m) or a
    shared big factor (``Bin(N - M0 + 1, q)``, the first M0 only)."""
    half = N // 2
    wB = _width(N, q)
    if half + 1 <= MAX_EXACT_ALL and (half + 1) * (_width(half, p) + 1) * wB <= budget:
        return half + 1, True
    m0 = int(max(2, min(half + 1, MAX_EXACT_DATASETS, math.sqrt(budget / (2.0 * wB)))))
    return m0, False


def binary_rr_shuffle(users: int, p: float, *, tail: float = WINDOW_TAIL, budget: float = EXACT_WORK_BUDGET,
                      growth: float = 1.1, target_delta: float | None = None, max_intervals: int = 1500,
                      progress: bool | None = None) -> ShuffledPairs:
    """Certified worst case over the other users' bits of binary RR (keep probability ``p``) shuffled among
    ``users`` users, as a finite dominating pair (derivation in the module docstring).

    ``p`` is the keep probability (``1/2 <= p < 1``; a larger p is less private, so callers round it up).
    Every dataset m (number of ones among the others) up to ``N/2`` is a component of its own when the work
    budget (multiply-adds of direct convolution) allows; otherwise the first ``M0`` are, and intervals
    ``[m1, m2]`` with ``m2 - m1 = (growth - 1) m1`` cover the rest. With ``target_delta``, an interval whose
    bound at the exact datasets' epsilon for that delta exceeds the delta is split in five and recomputed (up to
    ``max_intervals`` intervals in all), so the certificate is tight where the report reads it; every interval
    kept is sound whatever the splitting. An interval reveals the blanket draws of its middle users (module
    docstring) and, when ``m1`` is large, of all but ``keep`` of its base ones too (a larger reveal: sound,
    looser, and its convolution stays within the budget).

    Examples
    --------
    >>> res = binary_rr_shuffle(4, 0.75)
    >>> res.exact_all, round(res.upper.delta(0.0), 6)   # 3 others: m = 1 one (0.257813) beats m = 0 (0.210938)
    (True, 0.257813)
    """
    N = int(users) - 1
    q = 1.0 - p  # exact (Sterbenz) for p in [1/2, 1]
    half = N // 2
    if q == 0.0:  # no noise: the others' count is known, so s reveals user 1's bit (delta = 1 at every eps)
        pair = DominatingPair([1.0, 0.0], [0.0, 1.0], name=f"binary RR with p = 1 among {users} users", exact=True)
        return ShuffledPairs(pair, pair, True, (0,), (), "any dataset of the other users")
    up, lo = HullAccumulator(), HullAccumulator()
    intervals: list[tuple[int, int]] = []
    wB = _width(N, q)
    check_memory(96.0 * (wB + 2 * _width(N, 0.5) + 64), "the shuffled histogram's distributions")
    m0, each = _plan_exact(N, p, q, budget)
    spent = 0.0
    with progress_bar(half + 1, "shuffle exact", unit="dataset", progress=progress) as bar:
        if each:
            for m in range(m0):
                z, rel, dropped = _dataset_z(N, m, p, q, tail)
                (s, b), (s2, b2) = _binary_component(z, rel, dropped, p, q, True)
                up.add(s, b)
                lo.add(s2, b2)
                bar.update(1)
        else:
            _, w, dw = binomial_window(N - (m0 - 1), q, tail)
            for m in range(m0):
                _, a, da = binomial_window(m, p, tail)
                _, c, dc = binomial_window(m0 - 1 - m, q, tail)
                y, r1 = _conv(a, c)
                z, r2 = _conv(w, y)
                rel = r1 + r2 + pmf_rtol(N - m0 + 1, q) + pmf_rtol(m, p) + pmf_rtol(m0 - 1 - m, q) + 8 * _U
                (s, b), (s2, b2) = _binary_component(z, rel, dw + da + dc, p, q, True)
                up.add(s, b)
                lo.add(s2, b2)
                bar.update(1)
        spent = m0 * (m0 + 1) * wB
        # base ones kept unrevealed: at most keep_cap (so each base convolution costs about ``budget / 8``)
        keep_cap = max(1, int(((budget / 8.0) / max(wB, 1) / 28.0) ** 2 / max(p * q, 1e-300)))
        a_star = None
        if target_delta is not None and m0 <= half:
            ls, lb = lo.points()
            e_star = DominatingPair.from_roc(ls, lb, exact=True).epsilon(target_delta)
            a_star = math.exp(e_star) * (1 - 1e-9) if math.isfinite(e_star) else None
        todo = []
        start = m0
        while start <= half:
            end = min(start + max(1, int(start * (growth - 1.0))) - 1, half)
            todo.append((start, end))
            start = end + 1
        todo.reverse()
        while todo:
            start, end = todo.pop()
            keep = min(start, keep_cap)
            z, rel, dropped, eta = _interval_base(keep, N - end, p, q, tail)
            if end - keep == 0:
                P, Q = _widen(*_user_pair(z, p, q), eta)
                rel += 4 * _U
            else:
                P, Q, rel, dropped = _coin_masses(z, rel, dropped, end - keep, 2 * q, p, q, tail, 24, eta)
            if (a_star is not None and end > start and len(todo) + len(intervals) < max_intervals
                    and _hockey_upper(P, Q, rel, dropped, a_star) > target_delta):
                step = max(1, (end - start + 1) // 5)
                parts = [(s0, min(s0 + step - 1, end)) for s0 in range(start, end + 1, step)]
                todo.extend(reversed(parts))
                continue
            s, b = both_orders(roc_upper, P, Q, rel, dropped, monotone=(end - keep == 0))
            intervals.append((start, end))
            up.add(s, b)
            bar.update(end - start + 1)
    s, b = up.points()
    exact_all = not intervals
    upper = DominatingPair.from_roc(s, b, name=f"binary RR shuffled among {users} users (worst case of the others)",
                                    exact=exact_all)
    s, b = lo.points()
    lower = DominatingPair.from_roc(s, b, name=f"binary RR shuffled among {users} users (datasets m <= {m0 - 1})",
                                    exact=True)
    what = (f"the other users hold m ones, m = 0..{m0 - 1} (and their mirror images): the largest exact profile "
            "among those datasets at each epsilon")
    return ShuffledPairs(upper, lower, exact_all, tuple(range(m0)), tuple(intervals), what)


def _widen(P: np.ndarray, Q: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """Arrays bounding the exact ones from the safe side when each entry is within ``eta`` (absolute)."""
    if eta == 0.0:
        return P, Q
    return np.nextafter(P + eta, np.inf), np.maximum(np.nextafter(Q - eta, -np.inf), 0.0)


def _coin_mixture(base: np.ndarray, rel: float, dropped: float, L: int, gamma: float, p: float, q: float,
                  tail: float, bins: int = 24, eta: float = 0.0):
    """ROC points (both orders) of :func:`_coin_masses` (``eta``: the base's absolute error per entry)."""
    if L == 0:
        P, Q = _widen(*_user_pair(base, p, q), eta)
        return both_orders(roc_upper, P, Q, rel + 4 * _U, dropped, monotone=True)
    P, Q, rel, dropped = _coin_masses(base, rel, dropped, L, gamma, p, q, tail, bins, eta)
    return both_orders(roc_upper, P, Q, rel, dropped)


def _coin_masses(base: np.ndarray, rel: float, dropped: float, L: int, gamma: float, p: float, q: float,
                 tail: float, bins: int = 48, eta: float = 0.0):
    """ROC points of the revealed mixture over ``C ~ Bin(L, gamma)`` coins added to ``base``, each bin of C
    values replaced by its smallest (a coin more is a post-processing), the mass below the window added to the
    dropped tail. Outcomes (bin, s) are sorted by their computed ratio (no monotone shortcut across bins)."""
    if L == 0:
        P, Q = _user_pair(base, p, q)
        return both_orders(roc_upper, P, Q, rel + 4 * _U, dropped, monotone=True)
    lo, w, dw = binomial_window(L, gamma, tail)
    cuts = np.unique(np.linspace(0, w.size, min(bins, w.size) + 1).astype(int))
    Ps, Qs = [], []
    z = base
    have = 0
    for j in range(cuts.size - 1):
        c = lo + int(cuts[j])
        if c > have:
            _, coin, dc = binomial_window(c - have, 0.5, tail)
            z, r, e2 = _conv_any(z, coin)
            rel += r + pmf_rtol(c - have, 0.5)
            eta = eta * (1.0 + rel) + e2  # a convolution with a probability vector keeps a sup-norm error
            dropped += dc
            have = c
        wj = float(w[cuts[j]:cuts[j + 1]].sum()) if j < cuts.size - 2 else float(w[cuts[j]:].sum())
        P, Q = _widen(*_user_pair(z, p, q), eta * (1.0 + 4 * _U))
        Ps.append(wj * P)
        Qs.append(wj * Q)
    rel += PMF_RTOL + (w.size + 4) * _U
    return np.concatenate(Ps), np.concatenate(Qs), rel + 8 * _U, dropped + dw


def _hockey_upper(P: np.ndarray, Q: np.ndarray, rel: float, dropped: float, a: float) -> float:
    """A quick upper estimate of the component's ``H_a`` in both orders (only used to decide a split)."""
    f = float(np.maximum(P * (1 + rel) - a * (1 - rel) * Q, 0.0).sum())
    r = float(np.maximum(Q * (1 + rel) - a * (1 - rel) * P, 0.0).sum())
    return max(f, r) * (1 + 1e-9) + dropped


def _interval_base(ones: int, zeros: int, p: float, q: float, tail: float):
    """``Bin(ones, p) + Bin(zeros, q)``: (Z, rel, dropped, absolute)."""
    _, a, da = binomial_window(ones, p, tail)
    _, b, db = binomial_window(zeros, q, tail)
    z, r, eta = _conv_any(a, b)
    return z, r + pmf_rtol(ones, p) + pmf_rtol(zeros, q) + 8 * _U, da + db, eta


def krr_shuffle(users: int, k: int, d: float, o: float, *, tail: float = WINDOW_TAIL, bins: int = 64,
                lower_outcomes: float = 1e6, progress: bool | None = None) -> ShuffledPairs:
    """Certified bound for k-ary RR (``K(x, x) = d``, ``K(x, y) = o``, ``k >= 3``) shuffled among ``users`` users,
    valid for every dataset of the others (the two-output reveal of the module docstring), and the exact profile
    of a post-processed view of one concrete dataset as ``lower``.

    ``upper``: weight ``d + o`` on the mixture over ``C ~ Bin(N, 2o)`` coins (in at most ``bins`` bins, each
    replaced by its smallest C) of binary RR at ``p' = d / (d + o)`` among C fair coins, plus an outcome of mass
    ``1 - d - o`` identical under both hypotheses.
    ``lower``: every other user holds one third value; the analyst's view (``T = h_x0 + h_x1``, ``h_x0``) (a
    post-processing of the histogram, so its profile is a lower bound of that dataset's, hence of the worst
    case); outcomes are dropped beyond ``lower_outcomes`` (which only lowers it).

    >>> res = krr_shuffle(3, 4, 0.5, 1 / 6)
    >>> bool(res.upper.delta(0.5) >= res.lower.delta(0.5))
    True
    """
    N = int(users) - 1
    pp = d / (d + o)
    pp = min(1.0, math.nextafter(pp, math.inf))
    qq = 1.0 - pp
    inn = min(1.0, (d + o) * (1 + 4 * _U))
    with progress_bar(2, "shuffle exact k-RR", unit="part", progress=progress) as bar:
        if N == 0 or o == 0.0:
            P, Q = _user_pair(np.ones(1), pp, qq)
            rel, dropped = 4 * _U, 0.0
        else:
            P, Q, rel, dropped = _coin_masses(np.ones(1), 4 * _U, 0.0, N, 2 * o, pp, qq, tail, bins)
        rest = max(0.0, 1.0 - d - o)
        P = np.concatenate((P * inn, [rest]))
        Q = np.concatenate((Q * inn, [rest]))
        s, b = both_orders(roc_upper, P, Q, rel + 4 * _U, dropped)
        s, b = thin(s, b)
        upper = DominatingPair.from_roc(s, b, name=f"{k}-ary RR shuffled among {users} users (two-output reveal bound)",
                                        exact=False)
        bar.update(1)
        lower = _krr_lower(N, d, o, pp, qq, tail, lower_outcomes)
        bar.update(1)
    what = ("every other user holds one third value; the exact profile of the view (h_x0 + h_x1, h_x0), a "
            "post-processing of its histogram")
    return ShuffledPairs(upper, lower, False, (), (), what)


def _krr_lower(N: int, d: float, o: float, pp: float, qq: float, tail: float, budget: float) -> DominatingPair | None:
    """The pair of the view ``(T, h_x0)`` when every other user holds a third value (see :func:`krr_shuffle`)."""
    if N == 0:
        return None
    lo, w, _ = binomial_window(N, 2 * o, tail)
    Ts = np.arange(lo, lo + w.size + 1)  # T = others' in-count + user 1's
    width = int(2 * 14 * math.sqrt(max(Ts[-1], 1) / 4.0)) + 2
    step = max(1, int(math.ceil(Ts.size * width / budget)))
    centre = int(np.argmax(w))
    pick = Ts[(Ts - lo - centre) % step == 0]
    check_memory(8.0 * 6 * pick.size * width, "the lower profile's outcomes (T, h_x0)")
    Ps, Qs = [], []

    def coins(c: int, lo_h: int, hi_h: int) -> np.ndarray:
        """``Bin(c, 1/2)`` at ``lo_h..hi_h`` (zeros outside its window)."""
        out = np.zeros(hi_h - lo_h + 1)
        if c < 0:
            return out
        l0, cw, _ = binomial_window(c, 0.5, tail)
        a0, a1 = max(l0, lo_h), min(l0 + cw.size - 1, hi_h)
        if a0 <= a1:
            out[a0 - lo_h:a1 - lo_h + 1] = cw[a0 - l0:a1 - l0 + 1]
        return out

    def wpmf(c: int) -> float:
        i = c - lo
        return float(w[i]) if 0 <= i < w.size else 0.0

    for T in pick.tolist():
        a_in, a_out = wpmf(T - 1), wpmf(T)
        l0, cw, _ = binomial_window(max(T - 1, 0), 0.5, tail)
        lo_h, hi_h = max(0, l0 - 1), min(T, l0 + cw.size + 1)
        z0 = coins(T - 1, lo_h - 1, hi_h - 1)  # the others' coins at h0 - 1 (user 1 reported x0)
        z1 = coins(T - 1, lo_h, hi_h)          # at h0 (user 1 reported x1)
        zout = coins(T, lo_h, hi_h)            # user 1 out: T others' coins
        P = (d * z0 + o * z1) * a_in + (1 - d - o) * zout * a_out
        Q = (o * z0 + d * z1) * a_in + (1 - d - o) * zout * a_out
        Ps.append(P)
        Qs.append(Q)
    P, Q = np.concatenate(Ps), np.concatenate(Qs)
    s, b = both_orders(roc_lower, P, Q, 2 * PMF_RTOL + 64 * _U)
    s, b = thin(s, b)
    return DominatingPair.from_roc(s, b, name="k-RR, every other user holds one third value (view T, h_x0)", exact=True)
