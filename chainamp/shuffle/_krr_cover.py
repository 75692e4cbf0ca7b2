r"""The privacy blanket of shuffled k-ary randomized response, tightened by keeping some users exact (a cover).

Private to ``shuffle/``. k-RR with ``K(x, x) = d``, ``K(x, y) = o`` (``k >= 3``); the changed user holds x0 or x1,
the ``N = n - 1`` others a dataset D: ``a`` users at x0, ``b`` at x1, the rest at third values, the largest group
of them ``c_max`` users at one third value v.

**The bound (ours; the reveal argument of Balle, Bell, Gascon and Nissim 2019 applied to some users only).**
Fix integers ``a1 <= a``, ``b1 <= b``, ``c1 <= c_max``. Every report of k-RR is a blanket mixture,
``K(x, .) = g U + (1 - g) delta_x`` with ``g = k o`` and U uniform on the k values. Give the analyst, for each
of the ``r = N - a1 - b1 - c1`` other users not among a1 users at x0, b1 at x1 and c1 at v, whether it drew from
the blanket and, if not, its report (its value, which the analyst knows). This refines the histogram, so the
hockey-stick divergence of the revealed view is at least the histogram's (at every eps, both orders).
Subtracting the known reports is a bijection; given the number ``U ~ Bin(r, g)`` of blanket draws (the same law
under both hypotheses), what is left is the histogram of the changed user, the kept users and U uniform reports,
whatever D's other values were. By joint convexity,

    delta_D(eps) <= G(a1, b1, c1)(eps) = E_U delta(a1 at x0, b1 at x1, c1 at v, U uniform users)(eps).

``(a1, b1, c1) = (0, 0, 0)`` is the whole blanket. Adding an independent uniform report is a post-processing, so
``delta(..., u)`` does not increase with u, and blocks of u valued at their smallest u keep the bound.

**The cover.** Every dataset lies in a cell, and a cell's triple is one every dataset in it holds, so the largest
of the cells' bounds is certified at each eps. Two kinds (``w = max(1, n // 64)``):
- a *strip* ``max(a, b) in [m_lo, m_hi)``, ``min(a, b) < w`` keeps ``m_lo`` users on the larger side. Swapping the
  labels x0 and x1 swaps the two orders of the pair, and the curves are the larger of both orders, so the triple
  ``(m_lo, 0, c1)`` serves the datasets whose larger side is x1 too;
- a *block* ``a in [a_lo, a_hi)``, ``b in [b_lo, b_hi)`` keeps ``(a_lo, b_lo, c1)``.
Since ``c_max >= (N - a - b) / (k - 2)``, ``c1 = ceil((N - a_max - b_max) / (k - 2))`` with ``a_max + b_max`` the
largest ``a + b`` of the cell (``m_hi - 1 + w - 1`` for a strip). The refinement starts from one strip and one
block and halves the strip (quarters the block) whose bound is largest where the epsilon at the target would
improve. It only decides how tight the curve is, never whether it is sound. ``tests/shuffle/test_krr_cover.py``
checks, in exact arithmetic at small n, every dataset against every triple it holds, the cells' curves against
the exact bound and the refined curve against the worst dataset.

**Numerics (every error toward a larger delta).**
- *Groups.* Each kept group's law on the counts at (x0, x1, v) is a chain of three binomials: scipy's pmf,
  trusted to ``SHUFFLE_SPECIAL_RTOL`` relative, at the float nearest each exact rational parameter (the
  parameter's effect is bounded and added). The windows' left-out mass is bounded by Chernoff's bound at the
  window's extreme conditioning count (a binomial grows stochastically with its count) and charged, as is the mass
  of border slices cut below ``TRIM``.
- *Convolution.* Groups are convolved by an n-D real FFT with the 2-norm error bound of :func:`.exact._fft_conv`
  (an n-D transform is the 1-D transforms along each axis, whose relative errors add up to the 1-D bound at the
  total size). The uniform reports are then added one at a time by a stencil. It is a convex combination, so it
  keeps relative errors (9 u a step) and does not increase the error's 2-norm; the mass it pushes off the grid is
  charged.
- *Tests.* Only the box where the law has mass above ``PRUNE`` enters them; the rest is charged. Each hypothesis is
  pushed by its relative error: up for the one in front, down for the one multiplied by ``e^eps`` (rounded down),
  in each order. ``sum [A - e^eps B]_+`` is read off bins of the log likelihood ratio aligned with the eps grid
  (:func:`_hockey_grid`: no sorting). The FFT's error adds ``(1 + e^eps) sqrt(size) eta``, its 1-norm on the grid.
- *Blocks of U.* Every value of U where most of its mass is, three blocks below; block masses from Boost's pmf
  (``PMF_RTOL``); the mass outside the window is charged.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._numerics import SHUFFLE_SPECIAL_RTOL, UNIT_ROUNDOFF, check_memory, fmt_number, map_blocks, progress_bar
from ..privacy import PrivacyProfile
from ._binomial import binomial_window, chernoff_log_tail

__all__: list[str] = []

_U = UNIT_ROUNDOFF
#: the mass each binomial factor's window may leave out (charged at infinite privacy loss)
COVER_TAIL = 1e-17
#: the cover runs only when the blanket's epsilon is above a concrete dataset's by more than this fraction
COVER_GAP = 5e-3
#: ... and refines until its epsilon is within this fraction of that dataset's (or its cells run out)
COVER_STOP = 3e-3
#: ... and for at most this many users (its cells' histograms grow like n^(3/2); past it the blanket is tight)
COVER_MAX_USERS = 100_000
#: cells evaluated at most per report (about 0.1-0.5 s each at n = 1000)
COVER_MAX_EVALS = 32
#: the largest grid of one cell's histograms (cells); a cell past it is not refined (its parent's bound stays)
COVER_MAX_CELLS = 3_000_000
#: border slices of a group's law with less mass than this are cut (their mass charged)
TRIM = 1e-24
#: outcomes with less mass than this are left out of the sorted tests, their mass charged instead
PRUNE = 1e-22
#: eps values per unit of eps on which a cell's curve is kept (a step curve: each value bounds up to the next)
COVER_GRID_PER_UNIT = 800


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
    # exp(j u' + (n' - j) u'') with u' = u, u'' = u q / (1 - q) relative; bounded over the window
    e2 = 2 * _U * max(qf / (1 - qf), 1.0)
    x = H * 2 * _U + n_hi * e2
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


def _fftn_conv(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """The n-D linear convolution of two non-negative arrays by a real FFT, and a bound of its absolute error in
    every entry (the model and constants of :func:`.exact._fft_conv` with ``n`` the transform's total size)."""
    shape = tuple(x + y - 1 for x, y in zip(a.shape, b.shape))
    fshape = tuple(1 << max(1, (s - 1).bit_length()) for s in shape)
    n = int(np.prod(fshape))
    check_memory(8.0 * 6 * n, f"an FFT of {n} points")
    ax = tuple(range(a.ndim))
    c = np.fft.irfftn(np.fft.rfftn(a, fshape, axes=ax) * np.fft.rfftn(b, fshape, axes=ax), fshape, axes=ax)[
        tuple(slice(0, s) for s in shape)]
    na, nb = float(np.sqrt((a * a).sum())), float(np.sqrt((b * b).sum()))
    sa, sb = float(a.sum()), float(b.sum())
    nc = float(np.sqrt((c * c).sum()))
    eF = 16.0 * _U * (math.log2(n) + 1.0)
    eta = 2.0 * (eF * (na * sb + sa * nb + 2.0 * nc * 1.01) + 3.0 * _U * nc * 1.01)
    return np.maximum(c, 0.0), math.nextafter(eta, math.inf)


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


def _blocks(r: int, g: Fraction, tail: float) -> tuple[list[int], list[float], float]:
    """Blocks of ``U ~ Bin(r, g)``: their smallest values, their masses (pushed up) and the mass below the first
    block (charged at infinite privacy loss)."""
    if r == 0 or g == 0:
        return [0], [1.0], 0.0
    lo, w, dropped = binomial_window(r, float(g), tail)
    _, _, _, _, prel = _factor(r, r, g, tail)
    w = w * (1 + 1e-9 + prel) * (1 + 4 * _U)  # Boost's PMF_RTOL and the parameter's rounding
    mu, sd = r * float(g), math.sqrt(r * float(g) * (1 - float(g)))
    hi = lo + w.size - 1
    # every value of U where most of its mass is (delta changes by tens of percent per uniform report at small
    # blanket counts), three blocks below, one above
    a, b = max(lo, int(mu - 3.5 * sd)), min(hi, int(math.ceil(mu + 3 * sd)))
    edges = [lo + (a - lo) * i // 3 for i in range(3)] + list(range(a, b + 1))
    edges = sorted(set(e for e in edges if lo <= e <= hi))
    masses = []
    for i, e in enumerate(edges):
        end = edges[i + 1] if i + 1 < len(edges) else hi + 1
        masses.append(float(w[e - lo:end - lo].sum()) * (1 + (end - e) * _U))
    return edges, masses, dropped


class Cover:
    """The cover bound of one k-RR (exact rationals ``d, o``) among ``users`` users on a grid of eps values."""

    def __init__(self, users: int, k: int, d: Fraction, o: Fraction, eps_top: float, tail: float = COVER_TAIL):
        self.n, self.N, self.k, self.d, self.o, self.tail = users, users - 1, k, d, o, tail
        self.df, self.of, self.eps_top = float(d), float(o), eps_top
        self.spacing = 1.0 / COVER_GRID_PER_UNIT
        self.grid = np.arange(int(math.ceil(eps_top / self.spacing)) + 1) * self.spacing
        self.ts = np.exp(self.grid) * (1 - 4 * _U)  # e^eps rounded down
        self.cache: dict = {}

    def triple(self, cell: tuple) -> tuple[int, int, int]:
        """The kept users of a cell: ``("strip", m_lo, m_hi, w)`` holds the datasets with ``max(a, b)`` in
        ``[m_lo, m_hi)`` and ``min(a, b) < w`` (the larger side kept: the curve covers both orders, so both mirror
        images); ``("rect", a_lo, a_hi, b_lo, b_hi)`` those with a and b in the ranges."""
        if cell[0] == "strip":
            _, m_lo, m_hi, w = cell
            c1, a1, b1 = self._c1((m_hi - 1) + (w - 1)), m_lo, 0
        else:
            _, a1, a_hi, b1, b_hi = cell
            c1 = self._c1((a_hi - 1) + (b_hi - 1))
        return a1, b1, max(0, min(c1, self.N - a1 - b1))

    def _c1(self, s_max: int) -> int:
        """``ceil((N - s_max) / (k - 2))``, at least 0: the largest group at one third value when ``a + b <= s_max``."""
        return max(0, -(-(self.N - s_max) // (self.k - 2)))

    def curves(self, trips: list, executor: Any = None) -> list:
        """:meth:`curve` of each triple, on ``executor`` when given (each task builds its own cover)."""
        if executor is None:
            return [self.curve(t) for t in trips]
        args = [(self.n, self.k, self.d, self.o, self.eps_top, self.tail, t) for t in trips]
        got = list(map_blocks(_curve_task, args, executor=executor, progress=False))
        self.cache.update(zip(trips, got))
        return got

    def curve(self, trip: tuple[int, int, int]) -> np.ndarray | None:
        """``G(trip)`` at every grid eps (both orders), cached; None when its histograms would pass
        ``COVER_MAX_CELLS``."""
        if trip in self.cache:
            return self.cache[trip]
        a1, b1, c1 = trip
        k, d, o, tail = self.k, self.d, self.o, self.tail
        rows = {"x0": (d, o, o), "x1": (o, d, o), "v": (o, o, d)}
        kept = [_group(a1, rows["x0"], (0, 1, 2), tail), _group(b1, rows["x1"], (1, 0, 2), tail),
                _group(c1, rows["v"], (2, 0, 1), tail)]
        _, K, rel, eta, dropped = _combine(kept)
        r = self.N - a1 - b1 - c1
        edges, masses, below = _blocks(r, k * o, tail)
        out = np.full(self.grid.size, below)
        # the uniform reports one at a time (a stencil: each step a convex combination, so the error's 2-norm stays
        # within eta; 9 u relative per step), on a grid with room for all but a tail of them, whose mass is charged
        pad = 0 if edges[-1] == 0 else int(math.ceil(edges[-1] / k + 7 * math.sqrt(edges[-1] / k) + 4))
        size = float(np.prod([x + pad + 1 for x in K.shape]))
        if size > COVER_MAX_CELLS:
            self.cache[trip] = None
            return None
        check_memory(8.0 * 8 * size, "a cover cell's histograms")
        L = np.pad(K, ((0, pad), (0, pad), (0, pad)))
        lost, u, c_rest, c_one = 0.0, 0, (k - 3) / k, 1.0 / k
        for e, w in zip(edges, masses):
            while u < e:
                lost += (float(L[-1].sum() + L[:, -1].sum() + L[:, :, -1].sum()) * (1 + rel) * (1 + L.size * _U)
                         + 3 * math.sqrt(L.size) * eta) * c_one
                nxt = L * c_rest
                nxt[1:] += L[:-1] * c_one
                nxt[:, 1:] += L[:, :-1] * c_one
                nxt[:, :, 1:] += L[:, :, :-1] * c_one
                L, u = nxt, u + 1
                rel = (1 + rel) * (1 + 9 * _U) - 1
            # only the box where L has mass above PRUNE enters the tests (the mass outside it is charged)
            box, outside = _box(L)
            P0, P1 = _pair(L[box], self.df, self.of, k)
            up, down = (1 + rel) * (1 + 16 * _U), (1 - rel) * (1 - 16 * _U)
            # the FFT's error has 2-norm at most eta on the grid (the stencil and the pair do not increase it), so
            # its 1-norm is at most sqrt(size) eta: [P - t Q]_+ moves by at most (1 + t) of that
            # (each order with its own pushes: the hypothesis in front up, the one multiplied by e^eps down)
            fft = (1.0 + self.ts) * (math.sqrt(P0.size) * eta * (1 + 1e-12))
            h = np.maximum(_hockey_grid(P0 * up, P1 * down, self.ts, self.spacing),
                           _hockey_grid(P1 * up, P0 * down, self.ts, self.spacing)) + fft
            out += w * np.minimum(h + dropped + lost + outside * (1 + rel) + math.sqrt(L.size) * eta, 1.0)
        out = np.minimum(out * (1 + (len(edges) + 4) * _U), 1.0)
        self.cache[trip] = out
        return out


def _curve_task(args: tuple) -> np.ndarray | None:
    """One cell's curve in a worker (picklable)."""
    n, k, d, o, top, tail, trip = args
    return Cover(n, k, d, o, top, tail).curve(trip)


def cover_curve(users: int, k: int, d: Fraction, o: Fraction, eps_top: float, target: float, eps_floor: float = 0.0,
                *, max_cells: int = COVER_MAX_EVALS, progress: bool | None = None,
                executor: Any = None) -> tuple[np.ndarray, np.ndarray | None, int]:
    """``(grid, curve, cells)``: the certified step curve of the best cover found within ``max_cells`` cell
    evaluations (its value at ``grid[i]`` bounds delta on ``[grid[i], grid[i + 1])``; None when even the first
    cell's histograms are too large), refined best first where the epsilon at ``target`` would improve, until it
    is at most ``eps_floor`` (a concrete dataset's epsilon: nothing below it can be certified). ``executor``
    evaluates the cells of each split in parallel (the same curves).

    Examples
    --------
    >>> g, c, cells = cover_curve(30, 3, Fraction(7, 9), Fraction(1, 9), 2.0, 1e-3, max_cells=5)
    >>> cells, bool(c[0] <= 1.0 and c[-1] < c[0])
    (3, True)
    """
    cov = Cover(users, k, d, o, eps_top)
    N = users - 1
    w = max(1, (N + 1) // 64)
    # strips of max(a, b) (the other side below w) and one block with both sides at least w
    cells: list = [("strip", 0, N + 1, w)] + ([("rect", w, N + 1, w, N + 1)] if 2 * w <= N else [])
    curves = dict(zip(cells, cov.curves([cov.triple(c) for c in cells], executor)))
    if any(g is None for g in curves.values()):
        return cov.grid, None, 0
    final: set = set()
    evals = len(cells)
    with progress_bar(max_cells, "k-RR blanket cover cells", unit="cells", progress=progress) as bar:
        bar.update(evals)
        while evals < max_cells:
            env = np.max([curves[c] for c in cells], axis=0)
            ok = np.nonzero(env <= target)[0]
            at = int(ok[0]) - 1 if ok.size else cov.grid.size - 1
            if at < 0 or cov.grid[min(at + 1, cov.grid.size - 1)] <= eps_floor:
                break
            open_cells = [c for c in cells if c not in final]
            if not open_cells:
                break
            worst = max(open_cells, key=lambda c: curves[c][at])
            if curves[worst][at] < max(curves[c][at] for c in cells):  # the bottleneck cannot be split
                break
            kids = _split(worst, N)
            if not kids:
                final.add(worst)
                continue
            if evals + len(kids) > max_cells:
                break
            got = cov.curves([cov.triple(c) for c in kids], executor)
            evals += len(kids)
            bar.update(len(kids))
            if any(g is None for g in got):  # too large to refine: the cell keeps its bound, and is not tried again
                final.add(worst)
                continue
            cells.remove(worst)
            for c, g in zip(kids, got):
                curves[c] = g
                cells.append(c)
    env = np.max([curves[c] for c in cells], axis=0)
    return cov.grid, env, len(cells)


def _split(cell: tuple, N: int) -> list:
    """A cell's parts: a strip in halves, a block in quadrants (those that hold a dataset); [] when it is one
    dataset wide."""
    if cell[0] == "strip":
        _, lo, hi, w = cell
        if hi - lo <= 1:
            return []
        mid = (lo + hi) // 2
        return [("strip", lo, mid, w), ("strip", mid, hi, w)]
    _, a_lo, a_hi, b_lo, b_hi = cell
    if a_hi - a_lo <= 1 and b_hi - b_lo <= 1:
        return []
    am = (a_lo + a_hi) // 2 if a_hi - a_lo > 1 else a_hi
    bm = (b_lo + b_hi) // 2 if b_hi - b_lo > 1 else b_hi
    quads = ((a_lo, am, b_lo, bm), (am, a_hi, b_lo, bm), (a_lo, am, bm, b_hi), (am, a_hi, bm, b_hi))
    return [("rect",) + c for c in quads if c[0] < c[1] and c[2] < c[3] and c[0] + c[2] <= N]


def step_value(grid: np.ndarray, curve: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """The step curve at ``eps``: its value at the largest grid point at most eps (delta does not increase with
    eps), 1 below the grid's start."""
    e = np.asarray(eps, dtype=float)
    i = np.searchsorted(grid, e, side="right") - 1
    return np.where(i < 0, 1.0, curve[np.clip(i, 0, grid.size - 1)])


def step_epsilon(grid: np.ndarray, curve: np.ndarray, delta: float) -> float:
    """The smallest grid epsilon whose value is at most ``delta`` (inf when none)."""
    ok = np.nonzero(curve <= delta)[0]
    return float(grid[ok[0]]) if ok.size else math.inf


def tighten_blanket(users: int, k: int, o: float, eps0: float, target: float, eps: float, blanket: PrivacyProfile,
                    low: float, progress: bool | None = None, executor: Any = None) -> tuple | None:
    """The blanket's profile of k-RR (``o`` its off-diagonal, as :func:`.krr.krr_parameters` rounds it: a channel at
    least as informative as the randomizer's) tightened by the cover: ``(profile, epsilon at target, note)`` with
    the smaller of the two curves at every eps, and a function inverting the cover's curve alone
    (:func:`step_epsilon`); None when the blanket's ``eps`` is within ``COVER_GAP`` of a concrete dataset's ``low``,
    the users are too many, the cells too large or the cover no better."""
    from ._curves import pair_from_curve
    from ._krr_datasets import exact_channel

    if users > COVER_MAX_USERS or not 0.0 < eps0 < math.inf or not eps > low * (1.0 + COVER_GAP):
        return None
    ch = exact_channel(k, o)
    if ch is None:
        return None
    pure = blanket.pure_epsilon
    grid, env, cells = cover_curve(users, k, ch[0], ch[1], min(pure, eps0 * 1.001 + 1e-9), target,
                                   low * (1.0 + COVER_STOP), progress=progress, executor=executor)
    if env is None:
        return None
    new = step_epsilon(grid, env, target)
    if not new < eps:
        return None

    def curve(e: np.ndarray) -> np.ndarray:
        e = np.asarray(e, dtype=float)
        return np.minimum(np.asarray(blanket.delta(e), dtype=float), step_value(grid, env, e))

    def at(e):
        e = np.asarray(e, dtype=float)
        return np.where(e >= pure, 0.0, curve(np.atleast_1d(e)).reshape(np.shape(e)))
    name = f"shuffled reports, n={users} (privacy blanket, {cells} cells of users kept exact)"
    note = (f"k-ary RR: the blanket is tightened by keeping some other users exact in each of {cells} cells of "
            f"datasets (chainamp.shuffle._krr_cover): epsilon {fmt_number(eps)} -> {fmt_number(new)}")
    prof = PrivacyProfile(at, name=name, source="privacy blanket with users kept exact (shuffle._krr_cover)",
                          exact=False, pure_epsilon=pure, pair=lambda: pair_from_curve(curve, pure, None, name))
    return prof, new, note, lambda d: step_epsilon(grid, env, d)
