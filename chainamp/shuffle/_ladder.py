"""A certified upper bound of ``E[(U_1 + ... + U_n)_+]`` for n iid copies of a finite real variable U.

Private to ``shuffle/`` (the blanket pair, :mod:`.blanket`). Every step replaces the distribution by one that
is larger in the *increasing convex order* (``E f`` grows for every convex non-decreasing f, in particular
``f(x) = x_+``), an order preserved by sums of independent variables, so the final value bounds the exact one:

* atom values are upper bounds of the exact ones (an increase);
* each atom, and later every lattice point of a block sum, is split between its two neighbours on a coarser
  lattice with the weights that keep its mean (a mean-preserving spread; Jensen);
* the mass of a block sum far below its window is moved up to the window's first point (an increase); the
  mass far above it is moved to the largest value the block can take (an increase), tracked as an
  *overflow* mass whose whole contribution to the final expectation is bounded by ``q * n * max U``.

The sum of ``n`` copies is formed by repeated squaring (``n``'s binary digits), each block a vector of at
most ``LADDER_POINTS`` lattice points: a mean-preserving spread onto spacing ``h`` adds at most ``h^2 / 4``
to a block's variance, and the lattice spacing of a block of ``s`` users stays a small fraction of its
standard deviation ``sqrt(s) sigma``, so the added variance is a small fixed fraction per level.

Rounding: lattice positions are integers times a power of two (exact), the spread weights are exact dyadic
fractions (the first one is pushed up by ``2^-53``); every stored vector ``c`` satisfies ``p <= (1 + r) c``
entrywise against the exact vector ``p`` of the modified process, with ``r`` grown by ``(k + 2) u`` per sum
of ``k`` non-negative terms (``np.convolve`` sums directly, never by FFT) and doubled by each squaring
(``r`` is about ``n * LADDER_POINTS * u``, below ``1e-4`` at ``n = 1e8``).
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import UNIT_ROUNDOFF

__all__: list[str] = []

_U = UNIT_ROUNDOFF
#: lattice points of one block (the cost of a level is about LADDER_POINTS^2 multiply-adds)
LADDER_POINTS = 512
#: bound of each level's overflow contribution to the final value (its mass is chosen from it)
_OVERFLOW = 1e-22


def _grow(r: float, *terms: float) -> float:
    """``(1 + r) prod (1 + t) - 1`` rounded up (all small and non-negative)."""
    acc = r
    for t in terms:
        acc = acc + t + acc * t
    return acc * (1.0 + 1e-9) + 1e-300


def _coarsen(c: np.ndarray, off: int, a: int, a_new: int) -> tuple[np.ndarray, int, float]:
    """Spread lattice points ``off + i 2^a`` onto the lattice of spacing ``2^a_new`` keeping each mean;
    returns the new vector, its offset and the relative error added."""
    if a_new <= a:
        return c, off, 0.0
    t = a_new - a
    p = off + (np.arange(c.size, dtype=np.int64) << a)
    lo = p >> a_new  # floor division by 2^a_new (arithmetic shift)
    rem = (p - (lo << a_new)).astype(float)
    w_hi = rem / float(2 ** a_new)  # exact: rem < 2^a_new is an integer
    w_lo = 1.0 - w_hi  # exact: a dyadic fraction with at most 52 bits
    base = int(lo[0])
    idx = lo - base
    size = int(idx[-1]) + 2
    out = np.bincount(idx, weights=c * w_lo, minlength=size) + np.bincount(idx + 1, weights=c * w_hi, minlength=size)
    # each new point sums at most 2^(t+1) + 2 products (one rounding each) and one more addition
    return out, base << a_new, float(2 ** (t + 1) + 6) * _U


class _Block:
    """The (modified) distribution of a block sum: ``c[i]`` at position ``(off + i 2^a) h`` (h: the base spacing),
    ``p <= (1 + r) c`` entrywise, ``q``: its overflow mass (at most), ``top``: the largest position it can take."""

    __slots__ = ("c", "off", "a", "r", "q", "top", "users")

    def __init__(self, c, off, a, r, q, top, users):
        self.c, self.off, self.a, self.r, self.q, self.top, self.users = c, off, a, r, q, top, users

    def mass(self) -> float:
        return float(self.c.sum()) * (1.0 + self.r) * (1.0 + (self.c.size + 2) * _U)


def _trim(blk: _Block, n: int, vmax: float, cap: int) -> _Block:
    """Clamp the far left mass up, send the far right mass to overflow, then coarsen to at most ``cap`` points."""
    c = blk.c
    frac = blk.users / n
    tau_right = _OVERFLOW * frac / max(vmax, 1e-300)
    tau_left = _OVERFLOW * frac
    cl = np.cumsum(c)
    i0 = int(np.searchsorted(cl, tau_left, side="right"))
    cr = np.cumsum(c[::-1])
    j = int(np.searchsorted(cr, tau_right, side="right"))  # the last j entries go to overflow
    i1 = c.size - 1 - j
    if i0 >= c.size:
        i0 = c.size - 1
    if i1 < i0:
        i1 = i0
    r, q = blk.r, blk.q
    if i1 < c.size - 1:
        q = q + float(c[i1 + 1:].sum()) * (1.0 + r) * (1.0 + (c.size + 4) * _U)
    if i0 > 0:
        head = float(cl[i0 - 1])
        c = c[i0:i1 + 1].copy()
        c[0] += head
        r = _grow(r, (i0 + i1 + 4) * _U)
    else:
        c = c[: i1 + 1]
    off = blk.off + (i0 << blk.a)
    a = blk.a
    if c.size > cap:
        a_new = a + max(1, math.ceil(math.log2(c.size / (cap - 2))))
        c, off, err = _coarsen(c, off, a, a_new)
        r = _grow(r, err)
        a = a_new
    top = -((-blk.top) >> a) << a  # ceil to the lattice: a spread never moves mass above it
    return _Block(c, off, a, r, q, top, blk.users)


def _combine(x: _Block, y: _Block, n: int, vmax: float, cap: int) -> _Block:
    a = max(x.a, y.a)
    cx, ox, ex = _coarsen(x.c, x.off, x.a, a)
    cy, oy, ey = (cx, ox, ex) if y is x else _coarsen(y.c, y.off, y.a, a)
    conv = np.convolve(cx, cy)
    r = _grow(x.r, ex, y.r, ey, (min(cx.size, cy.size) + 2) * _U)
    mx, my = x.mass(), y.mass()
    q = (x.q * (my + y.q) + mx * y.q) * (1.0 + 4 * _U)
    top = (-((-x.top) >> a) << a) + (-((-y.top) >> a) << a)  # each block's largest value on the lattice 2^a
    blk = _Block(conv, ox + oy, a, r, q, top, x.users + y.users)
    return _trim(blk, n, vmax, cap)


def sum_positive_part(values: np.ndarray, probs: np.ndarray, zero: float, n: int, *,
                      cap: int = LADDER_POINTS) -> float:
    """An upper bound of ``E[(U_1 + ... + U_n)_+] / n`` where ``U`` takes ``values[i]`` with probability
    ``probs[i]`` and 0 with probability ``zero``. ``values`` must be upper bounds of the exact values and
    ``probs``, ``zero`` upper bounds of the exact probabilities (module docstring).

    When the atoms spread over far more than U's standard deviation sigma (rare outputs of extreme ratio), one
    lattice over all of them is coarse; the smaller of two bounds is returned then, the second on the window
    ``mean +- 32 sigma``: atoms above it and above 0 are split off (``(a + b)_+ <= a_+ + b_+``, and the split part
    is non-negative, so it adds its mean ``sum p_i v_i`` exactly; a negative atom above ``mean + 32 sigma < 0``
    stays in the lattice, since ``b_+ > b`` there), atoms below it are raised to its lower end.

    >>> v = sum_positive_part(np.array([1.0, -1.0]), np.array([0.5, 0.5]), 0.0, 2)  # E[(+-1 +-1)_+] / 2 = 0.25
    >>> 0.25 <= v < 0.2501
    True
    """
    values = np.asarray(values, dtype=float)
    probs = np.asarray(probs, dtype=float)
    keep = probs > 0
    values, probs = values[keep], probs[keep]
    if values.size == 0 or float(values.max()) <= 0.0:
        return 0.0  # the sum is never positive
    best = _ladder_sum(values, probs, zero, n, cap)
    mean = float(np.dot(probs, values))
    sd = math.sqrt(max(float(np.dot(probs, values * values)) - mean * mean, 0.0))
    span = float(values.max()) - min(float(values.min()), 0.0)
    if sd > 0.0 and span > 128.0 * sd:
        lo_w, hi_w = mean - 32.0 * sd, mean + 32.0 * sd
        far = values > max(hi_w, 0.0)  # only non-negative atoms may be split off at their mean (hi_w < 0 happens)
        k = int(far.sum())
        split = math.fsum((probs[far] * values[far]).tolist()) * (1.0 + (k + 4) * _U)  # all terms positive
        zero_in = (zero + math.fsum(probs[far].tolist())) * (1.0 + 4 * _U)
        alt = _ladder_sum(np.maximum(values[~far], lo_w), probs[~far], zero_in, n, cap) + split
        best = min(best, math.nextafter(alt, math.inf))
    return best


def _ladder_sum(values: np.ndarray, probs: np.ndarray, zero: float, n: int, cap: int) -> float:
    """:func:`sum_positive_part` on one lattice over every atom (``probs > 0``)."""
    if values.size == 0 or float(values.max()) <= 0.0:
        return 0.0
    vmax = float(values.max())
    vmin = min(float(values.min()), 0.0)
    h_exp = math.ceil(math.log2((vmax - vmin) / (cap - 4)))
    h = math.ldexp(1.0, h_exp)
    x = values / h  # exact: a power of two
    i = np.floor(x)
    # x - floor(x) is exact except for x in (-1/2, 0), floor(x) + 1 - x except for x in (0, 1/2): half an ulp of
    # 1 (2^-54 <= u w, the weight w >= 1/2 there). The 2^-53 push is belt and braces: r below leaves 5u of slack
    # (an entry's sums need at most (atoms + 2) u), which covers the weight's u without it
    # (tests/shuffle/test_margins_round3.py checks p <= (1 + r) c exactly on both edges)
    w_hi = np.minimum(x - i + 2.0**-53, 1.0)
    w_lo = np.minimum((i + 1.0) - x + 2.0**-53, 1.0)
    ii = i.astype(np.int64)
    base = min(int(ii.min()), 0)
    idx = ii - base
    size = max(int(idx.max()) + 2, 1 - base)
    c = np.bincount(idx, weights=probs * w_lo, minlength=size) + np.bincount(idx + 1, weights=probs * w_hi,
                                                                             minlength=size)
    c[-base] += zero
    r = (values.size + 8) * _U
    blk = _Block(c, base, 0, r, 0.0, int(ii.max()) + 1, 1)
    blk = _trim(blk, n, vmax, cap) if c.size > cap else blk
    acc = None
    k = int(n)
    while True:
        if k & 1:
            acc = blk if acc is None else _combine(acc, blk, n, vmax, cap)
        k >>= 1
        if not k:
            break
        blk = _combine(blk, blk, n, vmax, cap)
    pos = (acc.off + (np.arange(acc.c.size, dtype=np.int64) << acc.a)).astype(float) * h
    pos_c = np.maximum(pos, 0.0) * acc.c
    total = float(pos_c.sum()) * (1.0 + acc.r) * (1.0 + (acc.c.size + 4) * _U)
    total += acc.q * max(acc.top, 0) * h * (1.0 + 4 * _U)
    return math.nextafter(total / n * (1.0 + 4 * _U), math.inf)
