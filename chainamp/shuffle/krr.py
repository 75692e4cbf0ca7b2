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

**The lower profile.** Every other user holds one third value v; the analyst's view ``(T, h_x0)`` with
``T = h_x0 + h_x1`` is a post-processing of that dataset's histogram, so its exact profile (rounded the safe
way for a lower curve) is below the worst case. Its outcomes are the values T of the count of reports on
``{x0, x1}`` times a window of h_x0; past ``lower_outcomes`` only every few T values are kept (outcomes left
out only lower it).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_memory, progress_bar
from ..privacy import DominatingPair
from ._binomial import PMF_RTOL, WINDOW_TAIL, binomial_window, pmf_rtol
from ._chains import SupportSum, compress, delta_of
from ._clones import invert_delta
from ._curves import pair_from_curve
from ._pairs import both_orders, roc_lower, roc_upper, thin
from .exact import LOWER_TAIL, ShuffledPairs, _conv_any, _user_pair, _widen

__all__ = ["krr_shuffle"]

_U = UNIT_ROUNDOFF
#: relative looseness allowed when a bin's ROC points are compressed (:func:`._chains.compress`)
CHAIN_RTOL = 1e-4
#: and the absolute looseness per bin (at most ``bins`` times this is added to a delta)
CHAIN_ATOL = 1e-18


def _bin_chains(L: int, gamma: float, p: float, q: float, weight: float, tail: float, bins: int):
    """Compressed ROC points, in both orders, of each bin of the revealed mixture over ``C ~ Bin(L, gamma)``
    fair coins (each bin at its smallest C) of binary RR at keep probability ``p`` among C coins, every mass
    times ``weight``; and the dropped mass (window tails)."""
    parts1, parts2 = [], []

    def add(P: np.ndarray, Q: np.ndarray, rel: float) -> None:
        for parts, (A, B) in ((parts1, (P, Q)), (parts2, (Q[::-1], P[::-1]))):
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
        P, Q = _widen(*_user_pair(z, p, q), eta * (1.0 + 4 * _U))
        # the bin's weight: a sum of at most len(w) masses, each within PMF_RTOL; times weight: one more rounding
        rel_j = rel + PMF_RTOL + (w.size + 4) * _U + 8 * _U
        add(P * (wj * weight), Q * (wj * weight), rel_j)
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
    parts1, parts2, dropped = _bin_chains(N if o > 0.0 else 0, 2 * o, pp, qq, inn, tail, bins)
    h1, h2 = SupportSum(parts1), SupportSum(parts2)
    extra = math.nextafter(dropped, math.inf) if dropped > 0.0 else 0.0

    def curve(eps: np.ndarray) -> np.ndarray:
        e = np.atleast_1d(np.asarray(eps, dtype=float))
        top = np.maximum(delta_of(h1, e), delta_of(h2, e))
        return np.minimum(np.nextafter(top + extra, np.inf), 1.0)
    return curve


def krr_shuffle(users: int, k: int, d: float, o: float, *, tail: float = WINDOW_TAIL, bins: int = 64,
                lower_outcomes: float = 1e6, progress: bool | None = None) -> ShuffledPairs:
    """Certified bound for k-ary RR (``K(x, x) = d``, ``K(x, y) = o``, ``k >= 3``) shuffled among ``users`` users,
    valid for every dataset of the others (the two-output reveal of the module docstring), and the exact profile
    of a post-processed view of one concrete dataset as ``lower``.

    ``curve``: the certified curve, evaluated directly (``epsilon_at`` inverts it); ``upper``: the pessimistic
    pair through a grid of its points (for ``compose``: it dominates every mechanism meeting those points, so
    it is certified too, but between grid points it may lie above or below ``curve``).
    ``lower``: every other user holds one third value; the analyst's view (``T = h_x0 + h_x1``, ``h_x0``) (a
    post-processing of the histogram, so its profile is a lower bound of that dataset's, hence of the worst
    case); outcomes are dropped beyond ``lower_outcomes`` (which only lowers it).

    >>> res = krr_shuffle(3, 4, 0.5, 1 / 6)
    >>> up, low = res.curve(np.array([0.5]))[0], res.lower.delta(0.5)   # both certify the truth: between them
    >>> bool(up >= low and res.upper.delta(0.5) >= low)
    True
    """
    N = int(users) - 1
    pure = math.nextafter(math.log(d / o) * (1.0 + 4 * _U), math.inf) if o > 0.0 else math.inf
    with progress_bar(2, "shuffle exact k-RR", unit="part", progress=progress) as bar:
        curve = two_output_curve(users, d, o, tail=tail, bins=bins)
        name = f"{k}-ary RR shuffled among {users} users (two-output reveal bound)"
        upper = pair_from_curve(curve, pure, None, name)
        bar.update(1)
        # windows at 1e-15 for the lower: outcomes left out only lower it (by at most their mass), and every T
        # value then fits the outcome budget at deployed sizes instead of being subsampled
        lower = _krr_lower(N, d, o, max(tail, LOWER_TAIL), lower_outcomes)
        bar.update(1)
    what = ("every other user holds one third value; the exact profile of the view (h_x0 + h_x1, h_x0), a "
            "post-processing of its histogram")
    return ShuffledPairs(upper, lower, False, (), (), what, curve)


def krr_epsilon(curve: Callable[[np.ndarray], np.ndarray], delta: float, pure: float) -> float:
    """The certified epsilon of a k-RR curve at ``delta`` (its own inversion, rounded up)."""
    return invert_delta(lambda e: float(curve(np.array([e]))[0]), delta, pure, rtol=1e-9)


def _krr_lower(N: int, d: float, o: float, tail: float, budget: float) -> DominatingPair | None:
    """The pair of the view ``(T, h_x0)`` when every other user holds a third value (see :func:`krr_shuffle`).

    T runs over the most likely values of the count (a contiguous block around its mode of at most ``budget /
    width`` values; outcomes with other T are left out of every test, which only lowers the curve). The coins'
    distributions ``Bin(T, 1/2)`` come from one window at the block's start and the Pascal rule
    ``B_T(h) = (B_{T-1}(h) + B_{T-1}(h - 1)) / 2`` on a fixed frame of h (each step one rounding of a sum of
    non-negative terms; mass outside the frame is left out, at most ``tail`` per step, and charged below)."""
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
    return DominatingPair.from_roc(s, b, name="k-RR, every other user holds one third value (view T, h_x0)", exact=True)
