r"""k-ary randomized response (k >= 3) shuffled among n users: a bound valid for every dataset of the other
users, and the exact profile of a view of one concrete dataset below it.

**The two-output reveal (an upper bound for every dataset).** Every other user's report lands on user 1's
two candidate values ``{x0, x1}`` with a "coin" of probability ``2o`` (uniform on the two) whatever its value
(a user holding x0 lands there with ``d + o = 2o + (d - o)``, the extra ``d - o`` on the known x0); user 1
lands there with probability ``d + o`` under both hypotheses, as a binary RR with keep probability
``p' = d / (d + o)``. Revealing every report that is not a coin (and user 1's landing) is a refinement of the
histogram, so every dataset is dominated by the mixture over ``C ~ Bin(N, 2o)`` coins of binary RR at ``p'``
among ``C`` fair coins, with weight ``d + o`` (the rest of user 1's mass is identical under both hypotheses
and adds nothing at eps >= 0). C is cut into at most ``bins`` bins, each replaced by its smallest count (a
coin more is a post-processing) and revealed, so the curve is the SUM over bins of each bin's curve; each
bin's pair is log-concave (monotone ratio), its ROC points are prefix sums (:func:`._pairs.roc_upper`), and
the sum is evaluated from a few points per bin (:mod:`._chains`: sound for every eps, within about
``1 + 1e-7`` of the uncompressed points). No sort of all outcomes is needed: at n = 1e8 the 6.4 million
outcomes of 64 bins become about 10^4 points.

That is a sound bound for every dataset, but NOT the exact worst case (a further reveal than the
blanket's, which the "auto" method also computes).

**The lower profile.** The exact profile of a concrete dataset of the others is below the worst case, and so
is the larger of two at each epsilon: "every other user holds one third value v" and "every other user holds
x0" (closed forms in :mod:`._krr_datasets`). The first is PROVED the worst among datasets with no other user at
x0 or x1 (a garbling, in that module). For the rest, exhaustive search at n <= 9 found the worst dataset always
of the form "a users at x0, the rest at one third value", but a can lie strictly between 0 and N (an exact
counterexample at n = 6 beats both datasets here), so the lower may sit further below the truth than its rounding;
none of this is used for the certificate. Past ``lower_outcomes`` outcomes the first is computed exactly at a grid of
epsilons refined at the target delta (its optimal tests there) while its pairs ``(T, h_x0)`` fit the budget, and
else replaced by a view of its histogram (a post-processing, so below it): ``(T, h_x0)`` with
``T = h_x0 + h_x1``, the values T of the count of reports on ``{x0, x1}`` times a window of h_x0 (past the budget
only a block of T values is kept: outcomes left out only lower it), or at large n ``h_x0 - h_x1``.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Callable

import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_memory, progress_bar
from ..errors import InvalidParameterError
from ..privacy import DominatingPair
from ._binomial import PMF_RTOL, WINDOW_TAIL, binomial_window, pmf_rtol
from ._chains import SupportSum, compress, delta_of
from ._clones import invert_delta
from ._curves import pair_from_curve
from ._krr_datasets import (ALL_FIRST, ALL_THIRD, all_first_lower, all_third_at_slopes, all_third_lower, envelope,
                            points_epsilon)
from ._pairs import both_orders, roc_lower, roc_upper, thin
from .exact import LOWER_TAIL, ShuffledPairs, _conv_any, _user_pair, _widen

__all__ = ["krr_shuffle"]

_U = UNIT_ROUNDOFF
#: relative looseness allowed when a bin's ROC points are compressed (:func:`._chains.compress`)
CHAIN_RTOL = 1e-4
#: and the absolute looseness per bin (at most ``bins`` times this is added to a delta)
CHAIN_ATOL = 1e-18
#: below this off-diagonal (eps0 above about 690) Boost's binomial pmf overflows on subnormal probabilities: the
#: upper bound leaves the coins out (fewer coins only raise it), the lower and the skip estimate are not computed
COIN_MIN = 1e-300
#: the lower's off-diagonal is pushed up by this share (more private than the caller's rounded eps0, see
#: :func:`_krr_lower_any`)
LOWER_O_PUSH = 2.0**-40


def _bin_chains(L: int, gamma: float, p: float, q: float, weight: float, tail: float, bins: int):
    """Compressed ROC points, in both orders, of each bin of the revealed mixture over ``C ~ Bin(L, gamma)``
    fair coins (each bin at its smallest C) of binary RR at keep probability ``p`` among C coins, every mass
    times ``weight``; and the dropped mass (window tails)."""
    parts1, parts2 = [], []

    def add(P: np.ndarray, Q: np.ndarray, rel: float, P2: np.ndarray | None = None,
            Q2: np.ndarray | None = None) -> None:
        """``(P, Q)`` widened for ``H(P || Q)`` (P up, Q down); ``(P2, Q2)`` for ``H(Q || P)`` (Q up, P down)."""
        P2, Q2 = (P, Q) if P2 is None else (P2, Q2)
        for parts, (A, B) in ((parts1, (P, Q)), (parts2, (Q2[::-1], P2[::-1]))):
            s, b = roc_upper(A, B, rel, 0.0, monotone=True)
            parts.append(compress(s, b, rtol=CHAIN_RTOL, atol=CHAIN_ATOL))

    if L == 0:
        P, Q = _user_pair(np.ones(1), p, q)
        add(P * weight, Q * weight, 8 * _U)
        return parts1, parts2, 0.0
    lo, w, dropped = binomial_window(L, gamma, tail)
    cuts = np.unique(np.linspace(0, w.size, min(bins, w.size) + 1).astype(int))
    z, rel, eta, have = np.ones(1), 0.0, 0.0, 0
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
        Pc, Qc = _user_pair(z, p, q)
        P, Q = _widen(Pc, Qc, eta * (1.0 + 4 * _U))      # the first order: P up, Q down
        Q2, P2 = _widen(Qc, Pc, eta * (1.0 + 4 * _U))    # the second order (Q || P): Q up, P down
        # the bin's weight: a sum of at most len(w) masses, each within PMF_RTOL; times weight: one more rounding
        rel_j = rel + PMF_RTOL + (w.size + 4) * _U + 8 * _U
        f = wj * weight
        add(P * f, Q * f, rel_j, P2 * f, Q2 * f)
    return parts1, parts2, dropped


def two_output_curve(users: int, d: float, o: float, *, tail: float = WINDOW_TAIL,
                     bins: int = 64) -> Callable[[np.ndarray], np.ndarray]:
    """The certified delta curve (an array of eps in, deltas out) of the two-output reveal bound of k-RR with
    ``K(x, x) = d`` and ``K(x, y) = o`` among ``users`` users (module docstring), maximised over both orders.

    >>> curve = two_output_curve(3, 0.5, 1 / 6)
    >>> bool(0.0 < curve(np.array([0.5]))[0] < 0.5)
    True
    """
    N = int(users) - 1
    pp = min(1.0, math.nextafter(d / (d + o), math.inf))
    qq = 1.0 - pp
    inn = min(1.0, (d + o) * (1 + 4 * _U))
    parts1, parts2, dropped = _bin_chains(N if o > COIN_MIN else 0, 2 * o, pp, qq, inn, tail, bins)
    h1, h2 = SupportSum(parts1), SupportSum(parts2)
    extra = math.nextafter(dropped, math.inf) if dropped > 0.0 else 0.0

    def curve(eps: np.ndarray) -> np.ndarray:
        e = np.atleast_1d(np.asarray(eps, dtype=float))
        top = np.maximum(delta_of(h1, e), delta_of(h2, e))
        return np.minimum(np.nextafter(top + extra, np.inf), 1.0)
    return curve


def krr_shuffle(users: int, k: int, d: float, o: float, *, tail: float = WINDOW_TAIL, bins: int = 64,
                lower_outcomes: float = 3e5, target_delta: float | None = None, lower_o: float | None = None,
                progress: bool | None = None) -> ShuffledPairs:
    """Certified bound for k-ary RR (``K(x, x) = d``, ``K(x, y) = o``, ``k >= 3``) shuffled among ``users`` users,
    valid for every dataset of the others (the two-output reveal of the module docstring), and the exact profile
    of a post-processed view of one concrete dataset as ``lower``.

    ``curve``: the certified curve, evaluated directly (``epsilon_at`` inverts it); ``upper``: the pessimistic
    pair through a grid of its points (for ``compose``: it dominates every mechanism meeting those points, so
    it is certified too, but between grid points it may lie above or below ``curve``).
    ``lower``: the larger at each epsilon of two concrete datasets' exact profiles (every other user at one third
    value; every other user at x0), each below the worst case; past ``lower_outcomes`` outcomes the first is a
    view of its histogram (module docstring). ``lower_dataset`` says which, and with ``target_delta`` which of
    the two is the larger at that delta. ``lower_o``: the off-diagonal the lower is computed at (default ``o``;
    a caller whose channel is known only within a band passes its most private end, ``d`` then follows).

    >>> res = krr_shuffle(3, 4, 0.5, 1 / 6)
    >>> up, low = res.curve(np.array([0.5]))[0], res.lower.delta(0.5)   # both certify the truth: between them
    >>> bool(up >= low and res.upper.delta(0.5) >= low)
    True
    """
    N = int(users) - 1
    if lower_o is not None and not (isinstance(lower_o, numbers.Real) and float(lower_o) >= o):
        # a smaller o is a LESS private channel than the certificate's: its "lower" could pass the truth (a larger
        # one is capped at 1/k, no information)
        raise InvalidParameterError(f"lower_o must be a number >= o = {o!r} (the band's most private end; got "
                                    f"{lower_o!r})")
    pure = math.nextafter(math.log(d / o) * (1.0 + 4 * _U), math.inf) if o > 0.0 else math.inf
    with progress_bar(2, "shuffle exact k-RR", unit="part", progress=progress) as bar:
        curve = two_output_curve(users, d, o, tail=tail, bins=bins)
        name = f"{k}-ary RR shuffled among {users} users (two-output reveal bound)"
        upper = pair_from_curve(curve, pure, None, name)
        bar.update(1)
        # windows at 1e-15 for the lower: outcomes left out only lower it (by at most their mass), and every T
        # value then fits the outcome budget at deployed sizes instead of being subsampled
        lo_o = o if lower_o is None else lower_o
        lo_d = d if lower_o is None else 1.0 - (k - 1) * lo_o
        lower, what = _krr_lower_any(N, k, lo_d, lo_o, max(tail, LOWER_TAIL), lower_outcomes, target_delta)
        bar.update(1)
    return ShuffledPairs(upper, lower, False, (), (), what, curve)


def two_output_lower_estimate(users: int, d: float, o: float, eps: float, quantile: float = 0.9) -> float:
    """A float estimate from below of the two-output bound's delta at ``eps`` (no certificate: "auto" uses it to
    skip computing a bound that cannot win). The curve is ``(d + o) E_C H_C`` with ``H_C`` non-increasing in
    the coin count C (a coin more is a post-processing), so it is at least ``(d + o) P(C <= c) H_c`` at the
    ``quantile`` c of C.

    >>> bool(two_output_lower_estimate(1000, 0.5, 1 / 6, 0.3) <= two_output_curve(1000, 0.5, 1 / 6)(np.array([0.3]))[0])
    True
    """
    N = int(users) - 1
    if N <= 0 or o <= COIN_MIN:
        return 0.0
    lo, w, _ = binomial_window(N, 2 * o, LOWER_TAIL)
    cdf = np.cumsum(w)
    i = min(int(np.searchsorted(cdf, quantile)), w.size - 1)
    _, z, _ = binomial_window(lo + i, 0.5, LOWER_TAIL)
    pp = d / (d + o)
    P, Q = _user_pair(z, pp, 1.0 - pp)
    e = math.exp(eps) if eps < 709.0 else math.inf  # a larger e only lowers the estimate (no overflow)
    with np.errstate(invalid="ignore"):
        h = float(np.where(Q > 0.0, np.maximum(P - e * Q, 0.0), P).sum())
    return (d + o) * float(cdf[i]) * h * (1.0 - 1e-9)


def krr_parameters(k: int, eps0: float) -> tuple[int, float, float]:
    """``(k, d, o)`` of k-RR at ``eps0``, rounded so that ``d / o >= e^eps0`` (eps0 rounded up)."""
    if math.isinf(eps0):
        return k, 1.0, 0.0
    if eps0 == 0.0:
        return k, 1.0 / k, 1.0 / k
    t = math.exp(-eps0) * (1 - 2.0**-50)  # e^-eps0 rounded down: eps0 rounded up
    d = 1.0 / (1.0 + (k - 1) * t)
    return k, d, t * d * (1 - 2.0**-50)


def skip_two_output(users: int, k: int, eps0: float, eps: float, target: float,
                    lower: tuple[float, float] | None = None) -> tuple | None:
    """For "auto" on k-RR: when :func:`two_output_lower_estimate` at ``eps`` (the best certified epsilon so far)
    is over ``target`` (by 1 %), the two-output bound's epsilon is larger and it need not be computed; returns
    ``(lower pair or None, description)`` of the concrete dataset then (cheap), else None. ``lower``: the ``(d,
    o)`` the lower is computed at (default: k-RR at ``eps0``)."""
    if not 0.0 < eps0 < math.inf or not math.isfinite(eps):
        return None
    _, d, o = krr_parameters(k, eps0)
    if two_output_lower_estimate(users, d, o, eps) <= target * 1.01:
        return None
    ld, lo = (d, o) if lower is None else lower
    return krr_lower_profile(users, k, ld, lo, target_delta=target)


def krr_lower_profile(users: int, k: int, d: float, o: float, tail: float = WINDOW_TAIL,
                      lower_outcomes: float = 3e5, target_delta: float | None = None) -> tuple:
    """``(pair or None, description)``: the lower of :func:`krr_shuffle` alone."""
    return _krr_lower_any(int(users) - 1, k, d, o, max(tail, LOWER_TAIL), lower_outcomes, target_delta)


def krr_epsilon(curve: Callable[[np.ndarray], np.ndarray], delta: float, pure: float) -> float:
    """The certified epsilon of a k-RR curve at ``delta`` (its own inversion, rounded up)."""
    return invert_delta(lambda e: float(curve(np.array([e]))[0]), delta, pure, rtol=1e-9)


def _krr_lower_any(N: int, k: int, d: float, o: float, tail: float, budget: float,
                   target: float | None = None) -> tuple:
    """``(pair, description)`` of the lower: the larger at each epsilon of two concrete datasets' exact profiles
    (:mod:`._krr_datasets`: every other user at one third value v, or every other user at x0). Past ``budget``
    outcomes the first is computed at a grid of slopes refined at ``target`` while its pairs ``(T, h_x0)`` fit,
    else replaced by a view of it: ``(T, h_x0)`` when every count T fits, else
    ``h_x0 - h_x1`` (:func:`_krr_lower_difference`, every count at once), else a block of T; the second is left
    out. ``target``: the report's delta, to say which dataset is the larger there."""
    if N == 0 or 0.0 < o <= COIN_MIN:
        return None, "every other user holds one third value"
    # the lower is computed for a randomizer at least as private as the one (d, o) stands for: callers pass eps0
    # rounded UP (o a few ulps below the true o*, e.g. 2^-48 relative from amplify_shuffled), and a larger o is a
    # garbling of every report (a post-processing of the histogram), so its profile stays below the truth's
    o = min(o * (1.0 + LOWER_O_PUSH), 1.0 / k)
    d = 1.0 - (k - 1) * o
    n = N + 1
    found = []  # (ROC points or pair, plain description)
    third = all_third_lower(n, k, o, tail, budget)
    if third is not None:
        found.append((third, ALL_THIRD + " (full histogram)"))
    else:
        view = _third_view(N, k, d, o, tail, budget)
        third = all_third_at_slopes(n, k, o, tail, budget, target) if target is not None else None
        # the full histogram's best tests carry three binomial factors' rounding against the view's two: at tiny
        # epsilons (large n) that can cost more than the view loses, so the larger at the target is kept
        if third is not None and (view[0] is None or
                                  points_epsilon(*third, target) >= points_epsilon(*view[0], target)):
            view = (third, ALL_THIRD + " (full histogram, its best tests at a grid of epsilons refined at the target "
                    "delta)")
        found.append(view)
    first = all_first_lower(n, k, o, tail, budget)
    if first is not None:
        found.append((first, ALL_FIRST + " (full histogram)"))
    found = [(x, w) for x, w in found if x is not None]
    if not found:
        return None, ALL_THIRD
    if len(found) == 1:
        return envelope([found[0][0]], f"k-RR, {found[0][1]}"), found[0][1]
    what = f"the larger at each epsilon of two datasets: (a) {found[0][1]}; (b) {found[1][1]}"
    if target is not None:
        eps = [points_epsilon(*x, target) for x, _ in found]
        what += f"; the larger at delta = {target:.3g}: ({'ab'[int(eps[1] > eps[0])]})"
    return envelope([x for x, _ in found], "k-RR, two concrete datasets of the other users"), what


def _third_view(N: int, k: int, d: float, o: float, tail: float, budget: float) -> tuple:
    """``(pair, description)``: a view of the dataset "every other user at one third value" when its full histogram
    has too many outcomes (see :func:`_krr_lower_any`)."""
    what = ALL_THIRD + " (the view h_x0 + h_x1, h_x0 of the histogram"
    lo, w, _ = binomial_window(N, 2 * o, tail)
    width = int(2 * math.sqrt(2.0 * math.log(2.0 / tail)) * math.sqrt(max(lo + w.size, 1) / 4.0)) + 2
    if (w.size + 1) * width > budget:
        low = _krr_lower_difference(N, k, d, o, tail, points=True)
        if low is not None:
            return low, ALL_THIRD + " (the view h_x0 - h_x1 of the histogram)"
        what += f", only the {int(budget // width)} most likely values of h_x0 + h_x1"
    return _krr_lower(N, d, o, tail, budget, points=True), what + ")"


def _beta_for(o: float) -> float | None:
    """A float ``beta <= 1/2`` with ``beta (1 - beta) >= o`` exactly and within a few ulps of equality (None when
    ``o > 1/4``: no such beta)."""
    if o > 0.25:
        return None
    beta = 2.0 * o / (1.0 + math.sqrt(1.0 - 4.0 * o))  # the smaller root, without cancellation
    fo = Fraction(o)
    for _ in range(64):
        fb = Fraction(beta)
        if fb <= Fraction(1, 2) and fb * (1 - fb) >= fo:
            return beta
        beta = math.nextafter(beta, 1.0)
    return None


def _krr_lower_difference(N: int, k: int, d: float, o: float, tail: float, points: bool = False):
    """The pair of the view ``D = h_x0 - h_x1`` when every other user holds a third value, for k-RR with
    ``o' = beta (1 - beta) >= o`` (exact), hence a lower bound of the worst case at o: a larger o' is a garbling
    of every report by one symmetric channel, a post-processing of the histogram.

    Each other user adds +1 (report x0, probability o'), -1 (x1, o') or 0 to D: that is ``B1 - B2`` for two
    independent Bernoulli(beta), so the others' D is ``Bin(N, beta) - Bin(N, beta)``: one correlation of a
    binomial window with itself. User 1 adds +1, -1 or 0 with probabilities (d', o', r') under x0 and (o', d',
    r') under x1, ``d' = 1 - (k - 1) o'``. The ratio of the two is monotone in D (Z is log-concave), so each
    order's tests are prefixes. Masses are rounded the safe way for a lower curve (detection side down, false
    alarm side up, plus the mass the window leaves out). ``points``: its ROC points ``(s, b)`` instead of the pair."""
    beta = _beta_for(o)
    if beta is None:
        return None
    fo = Fraction(beta) * (1 - Fraction(beta))
    fd = 1 - (k - 1) * fo
    if fd < fo:
        return None
    of, df, rf = float(fo), float(fd), float(1 - fd - fo)  # each within u of the exact rational
    _, a, dropped = binomial_window(N, beta, tail)
    check_memory(8.0 * 12 * (2 * a.size + 4), "the lower profile's outcomes (h_x0 - h_x1)")
    z, rel, eta = _conv_any(a, a[::-1].copy())
    rel += 2 * PMF_RTOL
    zz = np.concatenate(([0.0, 0.0], z, [0.0, 0.0]))
    P0 = df * zz[:-2] + of * zz[2:] + rf * zz[1:-1]  # index i: D = i - (len(a) - 1) - 1, user 1 at x0
    P1 = of * zz[:-2] + df * zz[2:] + rf * zz[1:-1]
    rel += 8 * _U  # three coefficients within u each, three products and two sums of non-negative terms
    if eta > 0.0:
        eta = math.nextafter(eta * (1.0 + 4 * _U), math.inf)
    lo0, lo1 = (np.maximum(np.nextafter(x - eta, -np.inf), 0.0) if eta else x for x in (P0, P1))
    hi0, hi1 = (np.nextafter(x + eta, np.inf) if eta else x for x in (P0, P1))
    s1, b1 = roc_lower(lo0[::-1].copy(), hi1[::-1].copy(), rel, monotone=True)  # P0 / P1 increases with D
    s2, b2 = roc_lower(lo1, hi0, rel, monotone=True)
    s, b = np.concatenate((s1, s2)), np.concatenate((b1, b2))
    # the others' D misses at most the mass the two windows leave out: raise every false-alarm side by it
    missing = math.nextafter(2.0 * dropped * (1.0 + 8 * _U), math.inf)
    s = np.minimum(s + missing, 1.0)
    s, b = thin(s, b)
    if points:
        return s, b
    return DominatingPair.from_roc(s, b, name="k-RR, every other user holds one third value (view h_x0 - h_x1)",
                                   exact=True)


def _krr_lower(N: int, d: float, o: float, tail: float, budget: float, points: bool = False):
    """The pair of the view ``(T, h_x0)`` when every other user holds a third value (see :func:`krr_shuffle`).

    T runs over the most likely values of the count (a contiguous block around its mode of at most ``budget /
    width`` values; outcomes with other T are left out of every test, which only lowers the curve). The coins'
    distributions ``Bin(T, 1/2)`` come from one window at the block's start and the Pascal rule
    ``B_T(h) = (B_{T-1}(h) + B_{T-1}(h - 1)) / 2`` on a fixed frame of h (each step one rounding of a sum of
    non-negative terms; mass outside the frame is left out, at most ``tail`` per step, and charged below).
    ``points``: its ROC points ``(s, b)`` instead of the pair."""
    if N == 0:
        return None
    lo, w, w_out = binomial_window(N, 2 * o, tail)
    t_last = lo + w.size  # T = others' in-count + user 1's: lo .. lo + w.size
    width = int(2 * math.sqrt(2.0 * math.log(2.0 / tail)) * math.sqrt(max(t_last, 1) / 4.0)) + 2  # Chernoff width
    count = max(1, min(w.size + 1, int(budget // width)))
    centre = lo + int(np.argmax(w))
    t_a = min(max(lo, centre - count // 2), t_last + 1 - count)
    t_b = t_a + count - 1
    l_a, cw_a, _ = binomial_window(max(t_a - 1, 0), 0.5, tail)
    l_b, cw_b, _ = binomial_window(t_b, 0.5, tail)
    h0, h1 = max(0, l_a - 1), max(l_b + cw_b.size, l_a + cw_a.size)  # the frame h0..h1 of every B_T
    check_memory(8.0 * 6 * count * (h1 - h0 + 2), "the lower profile's outcomes (T, h_x0)")
    prev = np.zeros(h1 - h0 + 2)  # B_{T-1} at h = h0 - 1 .. h1
    prev[l_a - h0 + 1:l_a - h0 + 1 + cw_a.size] = cw_a
    r = 1.0 - d - o

    def wpmf(c: int) -> float:
        i = c - lo
        return float(w[i]) if 0 <= i < w.size else 0.0

    Ps, Qs = [], []
    if t_a == 0:  # T = 0: user 1 out and no coins (prev holds B_0, the start of the Pascal rule from T = 1)
        Ps.append(r * prev[1:] * wpmf(0))
        Qs.append(r * prev[1:] * wpmf(0))
        t_a = 1
    for T in range(t_a, t_b + 1):
        z0, z1 = prev[:-1], prev[1:]  # B_{T-1}(h - 1), B_{T-1}(h) at h = h0 .. h1
        zout = 0.5 * (z0 + z1)        # B_T(h)
        a_in, a_out = wpmf(T - 1), wpmf(T)
        Ps.append((d * z0 + o * z1) * a_in + r * zout * a_out)
        Qs.append((o * z0 + d * z1) * a_in + r * zout * a_out)
        prev = np.concatenate(([0.5 * prev[0]], zout))  # B_T at h = h0 - 1 .. h1 (below h0 - 1 left out)
    P, Q = np.concatenate(Ps), np.concatenate(Qs)
    s, b = both_orders(roc_lower, P, Q, 2 * PMF_RTOL + (count + 64) * _U)
    # an outcome's mass may miss what the windows and the frame left out (the count's tail; each coin array at
    # most ``tail`` at the start and ``2 tail`` per Pascal step): a test's false-alarm side is raised by that
    # much, so every point stays achievable (its detection side, left low, only lowers the curve)
    missing = math.nextafter((w_out + 3.0 * (2 * count + 2) * tail) * (1.0 + 8 * _U), math.inf)
    s = np.minimum(s + missing, 1.0)
    s, b = thin(s, b)
    if points:
        return s, b
    return DominatingPair.from_roc(s, b, name="k-RR, every other user holds one third value (view T, h_x0)", exact=True)
