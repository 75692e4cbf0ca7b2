"""Binomial distributions on their effective support, with a rigorous bound of the mass left out.

Private to ``shuffle/``. The shuffled histogram of n users is a sum of binomials; at n = 1e8 a plain
``q ** n`` underflows and the full support (n + 1 points) is far too long. :func:`binomial_window` keeps
the points ``[lo, hi]`` outside which the Chernoff bound ``P(X <= k) <= exp(-n KL(k/n || p))``
(``k <= np``; the mirror bound above the mean) is at most ``tail / 2`` on each side, computed in log
space (it never underflows), with the exponent rounded down. The kept masses come from
``scipy.stats.binom.pmf`` (Boost's ``ibeta_derivative``), whose relative error we take to be at most
``PMF_RTOL`` (measured below 1.3e-11 against mpmath at n = 1e8; ``tests/shuffle`` checks it).
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import UNIT_ROUNDOFF

__all__: list[str] = []

#: relative error budget of one ``scipy.stats.binom.pmf`` value (Boost; measured <= 1.3e-11 at n = 1e8, so a
#: margin of ~80x; ``tests/shuffle`` checks it is never reached on points up to n = 1e8)
PMF_RTOL = 1e-9
#: the mass a window may leave out of one binomial (added to delta as mass at infinite privacy loss)
WINDOW_TAIL = 1e-40


def _kl(x: float, p: float) -> tuple[float, float]:
    """``KL(Bern(x) || Bern(p))`` in nats (0 log 0 = 0) and the sum of its two terms' magnitudes (their rounding
    scales with it: the terms cancel near ``x = p``)."""
    out = size = 0.0
    if x > 0.0:
        t = x * math.log(x / p)
        out += t
        size += abs(t)
    if x < 1.0:
        t = (1.0 - x) * math.log((1.0 - x) / (1.0 - p))
        out += t
        size += abs(t)
    return max(out, 0.0), size


def chernoff_log_tail(n: int, p: float, k: int, upper: bool) -> float:
    """An upper bound of ``log P(X >= k)`` (``upper``) or ``log P(X <= k)`` for ``X ~ Bin(n, p)``.

    Chernoff-Hoeffding: for ``k >= np``, ``P(X >= k) <= exp(-n KL(k/n || p))``, and the mirror bound for
    ``k <= np``; 0 (probability 1) on the wrong side of the mean. The exponent is lowered by ``n u (8 + 4 S)``
    (``S`` the sum of the two KL terms' magnitudes: their rounding, which matters when they cancel near the mean
    at very large n) and then by a relative ``1e-9``, so the returned log bound is never below the true one.

    >>> round(chernoff_log_tail(100, 0.5, 80, True), 4)
    -19.2745
    """
    if n == 0:
        return 0.0 if ((upper and k <= 0) or (not upper and k >= 0)) else -math.inf
    if upper:
        if k > n:
            return -math.inf
        if k <= n * p:
            return 0.0
    else:
        if k < 0:
            return -math.inf
        if k >= n * p:
            return 0.0
    if p <= 0.0 or p >= 1.0:
        return 0.0
    kl, size = _kl(k / n, p)
    # each term within a few u of its magnitude (k / n, the quotients and logs rounded): an absolute margin of
    # n u (8 + 4 size) on the exponent, beside the relative 1e-9, keeps the bound above the true one when the
    # terms cancel (near the mean at very large n)
    e = n * kl - n * UNIT_ROUNDOFF * (8.0 + 4.0 * size)
    return -(max(e, 0.0) * (1.0 - 1e-9))


def pmf_rtol(n: int, p: float) -> float:
    """The relative error of :func:`binomial_window`'s masses: 0 for a point mass, ``PMF_RTOL`` otherwise."""
    return 0.0 if int(n) == 0 or p in (0.0, 1.0) else PMF_RTOL


#: windows at least this long are filled by the ratio recurrence from one Boost value at the mode
RECURRENCE_MIN = 64


def _window_pmf(n: int, p: float, lo: int, hi: int, pmf_fn) -> np.ndarray:
    """``Bin(n, p)`` at ``lo..hi``: Boost at every point for short windows; for long ones one Boost value at the
    mode and the exact ratios ``pmf(k + 1) / pmf(k) = (n - k) / (k + 1) * p / q`` multiplied outward.

    Error: each computed ratio is within ``4u`` of the exact one (``n - k`` and ``k + 1`` are exact integers,
    one division, ``q = 1 - p`` rounded once when ``p < 1/2``, ``p / q`` once more, one product), and
    ``np.cumprod`` adds one rounding per step and the final scaling one, so a point ``j >= 1`` steps from the
    mode is within ``(1 + u)^(5 j + 1) - 1 <= 6 j u`` of the exact product times the mode's value.
    Used only while ``6 (hi - lo) u <= PMF_RTOL / 2``: with the mode's Boost error (measured below 1.3e-11, see
    ``tests/shuffle``) every mass stays within ``PMF_RTOL``. The recurrence never underflows inside the window
    (its masses are at least about ``tail / n``)."""
    width = hi - lo
    if width + 1 < RECURRENCE_MIN or 6.0 * width * UNIT_ROUNDOFF > PMF_RTOL / 2.0:
        return np.asarray(pmf_fn(np.arange(lo, hi + 1), n, p), dtype=float)
    q = 1.0 - p
    mode = min(max(int(math.floor((n + 1) * p)), lo), hi)
    r = p / q
    ks = np.arange(mode, hi, dtype=float)  # pmf(k + 1) / pmf(k) for k = mode..hi - 1
    up = np.cumprod((n - ks) / (ks + 1.0) * r)
    ks = np.arange(mode - 1, lo - 1, -1, dtype=float)  # pmf(k) / pmf(k + 1) for k = mode - 1 down to lo
    down = np.cumprod((ks + 1.0) / (n - ks) / r)
    centre = float(pmf_fn(mode, n, p))
    return np.concatenate((centre * down[::-1], [centre], centre * up))


def _largest_true(pred, a: int, b: int, guess: int) -> int:
    """The largest ``k`` in ``[a, b]`` with ``pred(k)`` (``a`` when there is none above it), for ``pred`` true then
    false as k grows: a gallop from ``guess`` then a bisection (the same answer as a bisection of ``[a, b]``)."""
    g = min(max(int(guess), a), b)
    if g == a or pred(g):
        lo, step = g, 1
        while True:
            nxt = lo + step
            if nxt > b:
                hi = b
                break
            if pred(nxt):
                lo, step = nxt, step * 2
            else:
                hi = nxt - 1
                break
    else:
        hi, step = g - 1, 1
        while True:
            nxt = g - step
            if nxt <= a:
                lo = a
                break
            if pred(nxt):
                lo = nxt
                break
            hi, step = nxt - 1, step * 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def binomial_window(n: int, p: float, tail: float = WINDOW_TAIL) -> tuple[int, np.ndarray, float]:
    """``(lo, pmf, dropped)``: the masses of ``Bin(n, p)`` at ``lo, lo + 1, ..., lo + len(pmf) - 1`` and a
    rigorous upper bound ``dropped <= tail`` of the mass outside (Chernoff, both sides).

    ``p`` in [0, 1] (``Bin(n, 0)`` is the point 0). Masses carry a relative error of at most ``PMF_RTOL``.

    >>> lo, w, out = binomial_window(10, 0.5)
    >>> lo, w.size, out
    (0, 11, 0.0)
    """
    n = int(n)
    if n == 0 or p == 0.0:
        return 0, np.ones(1), 0.0
    if p == 1.0:
        return n, np.ones(1), 0.0
    try:  # Boost's binomial pmf, the ufunc behind scipy.stats.binom.pmf (without importing scipy.stats)
        from scipy.special._ufuncs import _binom_pmf as pmf_fn
    except ImportError:  # pragma: no cover - a scipy without the private ufunc
        from scipy.stats import binom

        pmf_fn = binom.pmf

    lt = math.log(tail / 2.0)
    mu = n * p
    reach = math.sqrt(2.0 * max(-lt, 1.0) * n * p * (1.0 - p))  # the normal approximation: only a starting guess
    # largest lo in [0, floor(mu)] with P(X <= lo - 1) <= tail / 2 (the Chernoff bound is monotone in lo)
    lo = _largest_true(lambda k: chernoff_log_tail(n, p, k - 1, False) <= lt, 0, int(math.floor(mu)),
                       int(mu - reach))
    # smallest hi in [ceil(mu), n] with P(X >= hi + 1) <= tail / 2
    a = int(math.ceil(mu))
    hi = min(_largest_true(lambda k: k < a or chernoff_log_tail(n, p, k + 1, True) > lt, a - 1, n,
                           int(mu + reach)) + 1, n)
    hi = max(hi, lo)
    dropped = 0.0
    for v in (chernoff_log_tail(n, p, lo - 1, False), chernoff_log_tail(n, p, hi + 1, True)):
        if v > -math.inf:
            dropped += math.exp(v) * (1.0 + 4 * UNIT_ROUNDOFF)
    pmf = _window_pmf(n, p, lo, hi, pmf_fn)
    return lo, pmf, math.nextafter(dropped, math.inf) if dropped else 0.0


#: the Chernoff parameter is kept in ``[-_LAM_MAX, _LAM_MAX]`` (``exp`` overflows past 709.78; any l is valid)
_LAM_MAX = 700.0


def sum_chernoff_log_tail(parts: list[tuple[int, float]], t: int, upper: bool) -> float:
    """An upper bound of ``log P(Z >= t)`` (``upper``) or ``log P(Z <= t)`` for ``Z`` a sum of independent
    ``Bin(n_i, p_i)`` (``parts``).

    Chernoff: ``P(Z >= t) <= exp(K(l) - l t)`` for every ``l >= 0`` (``l <= 0`` for the lower tail), with the
    cumulant generating function ``K(l) = sum_i n_i log(1 - p_i + p_i e^l)``. Any ``l`` gives a valid bound; it is
    chosen by Newton's method on ``K'(l) = t`` from the normal approximation, kept within ``|l| <= 700`` (inside
    ``exp``'s range); parts with ``p_i = 1`` are point masses that shift t. The float exponent is raised by a
    bound of its rounding: ``x_i = fl(1 - p_i + p_i e^l)`` is within ``7u`` relative (``exp`` within ``4u``, one
    product, one sum of non-negative terms, ``1 - p_i`` within u), so ``fl(log x_i)`` is within
    ``8u + 2u |log x_i|`` of ``log`` of the exact value and the product with ``n_i`` adds ``u |n_i log x_i|``;
    the sum of the terms and ``l t`` adds at most ``6u`` of the sum of their magnitudes. 0 (probability 1) on the
    wrong side of the mean.

    >>> round(sum_chernoff_log_tail([(100, 0.5)], 80, True), 4) == round(chernoff_log_tail(100, 0.5, 80, True), 4)
    True
    """
    parts = [(int(n), float(p)) for n, p in parts if int(n) > 0 and p > 0.0]
    t -= sum(n for n, p in parts if p >= 1.0)  # a point mass shifts t (its e^l term would vanish at e^l = 0)
    parts = [(n, p) for n, p in parts if p < 1.0]
    mu = sum(n * p for n, p in parts)
    var = sum(n * p * (1.0 - p) for n, p in parts)
    top = sum(n for n, p in parts)
    if upper and t > top or (not upper and t < 0):
        return -math.inf
    if (upper and t <= mu) or (not upper and t >= mu) or var <= 0.0:
        return 0.0
    lam = min(max((t - mu) / var, -_LAM_MAX), _LAM_MAX)
    for _ in range(4):  # Newton on K'(l) = t (any l is valid: this only tightens)
        e = math.exp(lam)
        d1 = d2 = 0.0
        for n, p in parts:
            x = 1.0 - p + p * e
            d1 += n * p * e / x
            d2 += n * p * (1.0 - p) * e / (x * x)
        if d2 <= 0.0 or not math.isfinite(d1):
            break
        step = (d1 - t) / d2
        new = min(max(lam - step, -_LAM_MAX), _LAM_MAX)  # inside exp's range (any l is valid)
        if (new > 0.0) != (lam > 0.0) or not math.isfinite(new):
            break
        lam = new
    return _cgf_exponent_up(parts, lam, t)


def _cgf_exponent_up(parts: list[tuple[int, float]], lam: float, t: int) -> float:
    """``K(l) - l t`` in floats, raised by the bound of its rounding (:func:`sum_chernoff_log_tail`), capped at 0."""
    e = math.exp(lam)
    total = -lam * float(t)
    size = abs(total)
    err = 0.0
    for n, p in parts:
        x = 1.0 - p + p * e
        lx = math.log(x)
        term = n * lx
        total += term
        size += abs(term)
        err += n * (8.0 + 2.0 * abs(lx)) * UNIT_ROUNDOFF + abs(term) * UNIT_ROUNDOFF
    bound = total + err + 6.0 * UNIT_ROUNDOFF * size
    return min(0.0, bound + abs(bound) * 2 * UNIT_ROUNDOFF)
