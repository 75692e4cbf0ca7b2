"""The laws and tests behind the k-RR blanket cover (private to ``shuffle/``; :mod:`._krr_cover` has the bound).

Each kept group's law on the counts at (x0, x1, v) as a chain of binomials, their convolution by an n-D FFT with a
2-norm error bound, the two hypotheses' histograms and their hockey-stick divergences on a grid of eps read off
log-ratio bins; :mod:`._krr_cover`'s docstring gives the error model of each.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._numerics import SHUFFLE_SPECIAL_RTOL, UNIT_ROUNDOFF, check_memory
from ._binomial import chernoff_log_tail
from ._fftconv import fft_conv_error

__all__: list[str] = []

_U = UNIT_ROUNDOFF
#: border slices of a group's law with less mass than this are cut (their mass charged)
TRIM = 1e-24
#: outcomes with less mass than this are left out of the sorted tests, their mass charged instead
PRUNE = 1e-22
#: the largest grid of one cell's histograms (cells); a cell past it is not refined (its parent's bound stays)
COVER_MAX_CELLS = 1_000_000
#: the largest FFT of a cell's groups (points; with its transforms about 100 bytes a point)
COVER_MAX_FFT = 2**21


def _factor(n_lo: int, n_hi: int, q: Fraction, tail: float) -> tuple[int, int, float, float, float]:
    """``(L, H, qf, dropped, prel)`` for ``Bin(n', q)`` at every count ``n_lo <= n' <= n_hi``: a window ``[L, H]``,
    the float parameter, a bound of the mass outside the window (at the extreme counts) and a bound of the relative
    change of any mass in the window between ``qf`` and the exact ``q``."""
    qf = float(q)
    if q == 0 or n_hi == 0:
        return 0, 0, 0.0, 0.0, 0.0
    if q == 1:
        return n_lo, n_hi, 1.0, 0.0, 0.0
    sd = math.sqrt(n_hi * qf * (1 - qf))
    z = math.sqrt(2.0 * math.log(2.0 / tail))
    L = max(0, int(math.floor(n_lo * qf - z * sd - 8)))
    H = min(n_hi, int(math.ceil(n_hi * qf + z * sd + 8)))
    lt = math.log(tail / 2.0)
    step = max(1, int(sd / 4))
    while L > 0 and chernoff_log_tail(n_lo, qf, L - 1, False) > lt:
        L = max(0, L - step)
    while H < n_hi and chernoff_log_tail(n_hi, qf, H + 1, True) > lt:
        H = min(n_hi, H + step)
    dropped = 0.0  # Chernoff at the parameter rounded the safe way (a tail grows on its side with q)
    for v in ((chernoff_log_tail(n_lo, math.nextafter(qf, 0.0), L - 1, False) if L > 0 else -math.inf),
              (chernoff_log_tail(n_hi, math.nextafter(qf, 1.0), H + 1, True) if H < n_hi else -math.inf)):
        if v > -math.inf:
            dropped += math.exp(v) * (1.0 + 4 * _U)
    # |qf - q| <= u q (and u (1 - q) for 1 - qf): the mass at j changes by a factor within
    # exp(j u' + (n' - j) u'') with u' = u, u'' = u q / (1 - q) relative; bounded over the window, where
    # j <= H and n' - j <= n_hi - L (u'' is large when q is close to 1, and then the window is close to n_hi)
    e2 = 2 * _U * max(qf / (1 - qf), 1.0) if qf < 1.0 else math.inf
    x = H * 2 * _U + ((n_hi - L) * e2 if n_hi > L else 0.0) if math.isfinite(e2) else math.inf
    prel = x * (1.0 + x) * (1 + 16 * _U) if x < 0.5 else math.inf
    return L, H, qf, dropped, prel


def _group(m: int, probs: tuple[Fraction, Fraction, Fraction], order: tuple[int, int, int],
           tail: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``(offsets, law, rel, dropped)``: the counts on (x0, x1, v) of m iid reports with those probabilities (the
    rest of the mass on the other values), as a 3-D array from ``offsets``, a chain of binomials in ``order``."""
    import scipy.stats as st

    if m == 0:
        return np.zeros(3, dtype=np.int64), np.ones((1, 1, 1)), 0.0, 0.0
    p1, p2, p3 = (probs[i] for i in order)
    L1, H1, q1, d1, e1 = _factor(m, m, p1, tail)
    L2, H2, q2, d2, e2 = _factor(m - H1, m - L1, p2 / (1 - p1) if p1 < 1 else Fraction(0), tail)
    L3, H3, q3, d3, e3 = _factor(max(0, m - H1 - H2), m - L1 - L2,
                                 p3 / (1 - p1 - p2) if p1 + p2 < 1 else Fraction(0), tail)
    x1 = np.arange(L1, H1 + 1, dtype=float)
    x2 = np.arange(L2, H2 + 1, dtype=float)
    x3 = np.arange(L3, H3 + 1, dtype=float)
    if x1.size * x2.size * x3.size > COVER_MAX_CELLS:
        raise _TooLarge
    check_memory(8.0 * 3 * x1.size * x2.size * x3.size, f"a group's law of {x1.size * x2.size * x3.size} counts")
    f1 = st.binom.pmf(x1, m, q1)
    n2 = m - x1[:, None]
    f2 = np.where(x2[None, :] <= n2, st.binom.pmf(x2[None, :], np.maximum(n2, 0), q2), 0.0)
    n3 = n2[:, :, None] - x2[None, :, None]
    f3 = np.where((x3[None, None, :] <= n3) & (n3 >= 0), st.binom.pmf(x3[None, None, :], np.maximum(n3, 0), q3),
                  0.0)
    law = f1[:, None, None] * f2[:, :, None] * f3
    r = SHUFFLE_SPECIAL_RTOL
    rel = (1 + r) ** 3 * (1 + e1) * (1 + e2) * (1 + e3) * (1 + 4 * _U) - 1
    inv = np.argsort(order)
    offs = np.array([L1, L2, L3], dtype=np.int64)[inv]
    law = np.ascontiguousarray(np.transpose(law, axes=tuple(inv)))
    # trim border slices of negligible mass (their computed mass, pushed up, is charged as left out)
    cut = 0.0
    for ax in range(3):
        sums = law.sum(axis=tuple(i for i in range(3) if i != ax))
        big = np.nonzero(sums > TRIM)[0]
        lo, hi = (int(big[0]), int(big[-1])) if big.size else (0, 0)
        if lo > 0 or hi < law.shape[ax] - 1:
            cut += float(sums[:lo].sum() + sums[hi + 1:].sum())
            law = np.take(law, np.arange(lo, hi + 1), axis=ax)
            offs[ax] += lo
    cut = cut * (1 + rel) * (1 + law.size * _U) if cut else 0.0
    return offs, np.ascontiguousarray(law), rel, d1 + d2 + d3 + cut


class _TooLarge(Exception):
    """A cell's histograms would pass the cover's size limits (it is then not refined: its parent's bound stays)."""


def _fftn_conv(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """The n-D linear convolution of two non-negative arrays by a real FFT, and a bound of its absolute error in
    every entry (the model and constants of :func:`.exact._fft_conv` with ``n`` the transform's total size)."""
    shape = tuple(x + y - 1 for x, y in zip(a.shape, b.shape))
    fshape = tuple(1 << max(1, (s - 1).bit_length()) for s in shape)
    n = int(np.prod(fshape))
    if n > COVER_MAX_FFT:
        raise _TooLarge
    check_memory(8.0 * 6 * n, f"an FFT of {n} points")
    ax = tuple(range(a.ndim))
    c = np.fft.irfftn(np.fft.rfftn(a, fshape, axes=ax) * np.fft.rfftn(b, fshape, axes=ax), fshape, axes=ax)[
        tuple(slice(0, s) for s in shape)]
    return np.maximum(c, 0.0), fft_conv_error(a, b, c, n)


def _combine(parts: list) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """``(offsets, law, rel, eta, dropped)`` of the sum of independent groups (``_group`` results): masses within
    ``(1 + rel)`` relative and ``eta`` absolute of the exact law's, ``dropped`` of its mass outside."""
    offs, law, rel, dropped = parts[0]
    eta = 0.0
    for o2, l2, r2, d2 in parts[1:]:
        if l2.size == 1:
            offs = offs + o2
            law = law * float(l2.ravel()[0])
        else:
            s2 = float(l2.sum())
            law, e = _fftn_conv(law, l2)
            eta = eta * s2 * (1 + r2) + e  # the earlier absolute error spread by the new (sub-stochastic) group
            offs = offs + o2
        rel = (1 + rel) * (1 + r2) * (1 + 4 * _U) - 1
        dropped += d2
    return offs, law, rel, eta, dropped


def _pair(law: np.ndarray, d: float, o: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(P0, P1)``: the changed user at x0 and at x1 on the grid of all n reports (``law``'s grid plus one on each
    axis), ``P_x(h) = sum_y K(x, y) law(h - e_y)``, each entry within ``16 u`` relative of the exact combination
    of ``law``'s entries (four products and four sums of non-negative terms, ``d - o`` rounded once). The absolute
    error of ``law`` passes through with 2-norm at most its own (the coefficients sum to 1)."""
    shape = tuple(x + 1 for x in law.shape)
    P0, P1 = np.zeros(shape), np.zeros(shape)
    base = (slice(0, -1),) * 3
    shifted = [tuple(slice(1, None) if i == ax else slice(0, -1) for i in range(3)) for ax in range(3)]
    P0[base] += (k - 3) * o * law
    ol = o * law
    for ax in range(3):
        P0[shifted[ax]] += ol
    P1[...] = P0
    dl = (d - o) * law  # d = o + (d - o): the shares at x0 and x1 beyond the common o
    P0[shifted[0]] += dl
    P1[shifted[1]] += dl
    return P0, P1


def _box(L: np.ndarray) -> tuple[tuple[slice, ...], float]:
    """The smallest box holding every entry of ``L`` above ``PRUNE`` (by its marginal sums) and the computed mass
    outside it (rounding included)."""
    box, out = [], 0.0
    for ax in range(3):
        sums = L.sum(axis=tuple(i for i in range(3) if i != ax))
        big = np.nonzero(sums > PRUNE)[0]
        lo, hi = (int(big[0]), int(big[-1]) + 1) if big.size else (0, 1)
        out += float(sums[:lo].sum() + sums[hi:].sum())
        box.append(slice(lo, hi))
    return tuple(box), out * (1 + L.size * _U)


def _hockey_grid(A: np.ndarray, B: np.ndarray, ts: np.ndarray, spacing: float) -> np.ndarray:
    """``sum_h [A - t_i B]_+`` at ``t_i ~ e^(i spacing)`` (``ts``, rounded down), upper bounds, without sorting.

    Each outcome goes to bin ``floor((log(A / B) + 1e-9) / spacing)``: every outcome with ``A > e^(i spacing) B``
    (its computed log ratio is within far less than 1e-9 of the exact one) lands in a bin ``>= i``, so the suffix
    of bins from i holds the optimal test at ``t_i``, plus outcomes within 1e-9 below it, for which ``t B - A <=
    1e-9 t B``: adding ``1e-9 t`` times the suffix's B covers them. The suffix sums' rounding (at most ``(m + 2) u``
    of the sums of magnitudes) and the outcomes left out below ``PRUNE`` (``[A - t B]_+ <= A``) are added too."""
    a, b = A.ravel(), B.ravel()
    keep = a > PRUNE
    pruned = float(a[~keep].sum()) * (1 + a.size * _U) if not keep.all() else 0.0
    a, b = a[keep], b[keep]
    G = ts.size
    with np.errstate(divide="ignore"):
        lr = np.log(a) - np.log(b)  # +inf where b = 0
    idx = np.floor((lr + 1e-9) / spacing)
    idx = np.where(idx < 0, -1, np.minimum(idx, G - 1)).astype(np.int64) + 1  # 0: below every t (ratio < 1)
    sa = np.cumsum(np.bincount(idx, weights=a, minlength=G + 1)[::-1])[::-1][1:]  # suffix sums from bin i
    sb = np.cumsum(np.bincount(idx, weights=b, minlength=G + 1)[::-1])[::-1][1:]
    err = (a.size + G + 8) * _U * (sa + ts * sb) * 1.01 + 1e-9 * ts * sb * 1.01
    return np.minimum((np.maximum(sa - ts * sb, 0.0) + err + pruned) * (1 + 8 * _U), 1.0)
