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

from .._numerics import UNIT_ROUNDOFF, check_memory, fmt_number, map_blocks, progress_bar
from ..privacy import PrivacyProfile
from . import _cover_laws as laws
from ._binomial import PMF_RTOL, binomial_window
from ._cover_laws import _box, _combine, _factor, _group, _hockey_grid, _pair, _TooLarge

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
#: ... and only when its most favourable cell gains at least this fraction of the blanket's epsilon
COVER_GAIN = 1e-3
#: cells evaluated at most per report (about 0.1-0.5 s each at n = 1000)
COVER_MAX_EVALS = 32
#: the most work one cell may take (grid points times stencil steps and tests; about 1e8 a second here)
COVER_MAX_WORK = 4e8
#: eps values per unit of eps on which a cell's curve is kept (a step curve: each value bounds up to the next)
COVER_GRID_PER_UNIT = 800


def _blocks(r: int, g: Fraction, tail: float) -> tuple[list[int], list[float], float]:
    """Blocks of ``U ~ Bin(r, g)``: their smallest values, their masses (pushed up) and the mass below the first
    block (charged at infinite privacy loss)."""
    if r == 0 or g == 0:
        return [0], [1.0], 0.0
    lo, w, dropped = binomial_window(r, float(g), tail)
    _, _, _, _, prel = _factor(r, r, g, tail)
    w = w * ((1 + PMF_RTOL) * (1 + prel) * (1 + 4 * _U))  # Boost's PMF_RTOL and the parameter's rounding
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
        ``COVER_MAX_CELLS`` points or its work (points times stencil steps and tests) ``COVER_MAX_WORK``, or its
        error bounds are too large to use (the cell then keeps its parent's bound, or the blanket stays)."""
        if trip in self.cache:
            return self.cache[trip]
        a1, b1, c1 = trip
        k, d, o, tail = self.k, self.d, self.o, self.tail
        rows = {"x0": (d, o, o), "x1": (o, d, o), "v": (o, o, d)}
        r = self.N - a1 - b1 - c1
        edges, masses, below = _blocks(r, k * o, tail)
        steps = edges[-1] - edges[0]
        # the first block's uniform reports join the kept groups by FFT, the others one at a time by a stencil (a
        # convex combination: the error's 2-norm stays within eta; 9 u relative a step) on a grid with room for all
        # but a tail of them, whose mass is charged
        pad = 0 if steps == 0 else int(math.ceil(steps / k + 7 * math.sqrt(steps / k) + 4))
        uni = Fraction(1, k)
        try:
            kept = [_group(a1, rows["x0"], (0, 1, 2), tail), _group(b1, rows["x1"], (1, 0, 2), tail),
                    _group(c1, rows["v"], (2, 0, 1), tail), _group(edges[0], (uni, uni, uni), (0, 1, 2), tail)]
            _, K, rel, eta, dropped = _combine(kept)
        except _TooLarge:
            self.cache[trip] = None
            return None
        if not (rel < 0.5 and math.isfinite(eta) and dropped < 1.0):  # bounds the pushes below cannot carry (a
            self.cache[trip] = None  # keep probability so close to 1 that its float is not bounded): declined
            return None
        size = float(np.prod([x + pad + 1 for x in K.shape]))
        if size > laws.COVER_MAX_CELLS or size * (steps + 8 * len(edges)) > COVER_MAX_WORK:
            self.cache[trip] = None
            return None
        out = np.full(self.grid.size, below)
        check_memory(8.0 * 8 * size, "a cover cell's histograms")
        L = np.pad(K, ((0, pad), (0, pad), (0, pad)))
        lost, u, c_rest, c_one = 0.0, edges[0], (k - 3) / k, 1.0 / k
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
                *, eps_hint: float | None = None, max_cells: int = COVER_MAX_EVALS, progress: bool | None = None,
                executor: Any = None) -> tuple[np.ndarray, np.ndarray | None, int]:
    """``(grid, curve, cells)``: the certified step curve of the best cover found within ``max_cells`` cell
    evaluations (its value at ``grid[i]`` bounds delta on ``[grid[i], grid[i + 1])``; None when even the first
    cell's histograms are too large), refined best first where the epsilon at ``target`` would improve, until it
    is at most ``eps_floor`` (a concrete dataset's epsilon: nothing below it can be certified). With ``eps_hint``
    (the epsilon to beat) it first evaluates the most favourable triple any cell can have and gives up (None)
    unless that gains ``COVER_GAIN``. ``executor`` evaluates the cells of each split in parallel (the same
    curves).

    Examples
    --------
    >>> g, c, cells = cover_curve(30, 3, Fraction(7, 9), Fraction(1, 9), 2.0, 1e-3, max_cells=5)
    >>> cells, bool(c[0] <= 1.0 and c[-1] < c[0])
    (3, True)
    """
    cov = Cover(users, k, d, o, eps_top)
    N = users - 1
    if eps_hint is not None:
        # no cell keeps more than ceil(N / (k - 2)) users at a third value and G only grows as fewer are kept, so
        # the cover's epsilon is at least this probe's (a dataset with none at x0 or x1): stop if it cannot gain
        probe = cov.curve((0, 0, min(N, -(-N // (k - 2)))))
        if probe is None or step_epsilon(cov.grid, probe, target) >= eps_hint * (1.0 - COVER_GAIN):
            return cov.grid, None, 0
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
                                   low * (1.0 + COVER_STOP), eps_hint=eps, progress=progress, executor=executor)
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
    # the pair for compose through every 8th grid point and the headline epsilon (48 points left it 50 % above
    # the curve there)
    points = np.unique(np.concatenate((grid[::8], [new])))
    name = f"shuffled reports, n={users} (privacy blanket, {cells} cells of users kept exact)"
    note = (f"k-ary RR: the blanket is tightened by keeping some other users exact in each of {cells} cells of "
            f"datasets (chainamp.shuffle._krr_cover): epsilon {fmt_number(eps)} -> {fmt_number(new)}")
    prof = PrivacyProfile(at, name=name, source="privacy blanket with users kept exact (shuffle._krr_cover)",
                          exact=False, pure_epsilon=pure, pair=lambda: pair_from_curve(curve, pure, points, name))
    return prof, new, note, lambda d: step_epsilon(grid, env, d)
