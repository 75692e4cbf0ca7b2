"""Pair bounds kept across eps for repeated (gamma, eps)-Dobrushin queries on one operator (private).

Searches over eps (``ldp_guarantee(K).epsilon_at``, the bisections of :func:`chainamp.amplify`,
:func:`chainamp.mixing.dobrushin_curve`) ask for ``gamma(eps) = max_{x != x'} D_{e^eps}(K_x || K_x')``
at many eps on the same operator. After a first full scan (:func:`.scan.scan_matrix`) the n x n
matrix ``U`` of rigorous per-pair upper bounds at ``eps_k`` is kept as an *anchor* (at most
``_MAX_ANCHORS``, the least recently used dropped except the smallest eps, memory checked), and a
new eps starts from bounds derived from the anchors, all valid for the TRUE divergences
``D(c) = sum_y [p_y - c q_y]_+`` with ``c = e^eps`` real:

* monotonicity: ``D`` is non-increasing in c, so ``U_a`` bounds ``D(c)`` for ``c_a <= c``;
* Lipschitz: ``[p - c q]_+ <= [p - c_b q]_+ + (c_b - c) q``, so ``D(c) <= U_b + (c_b - c) s_q`` for
  ``c < c_b``;
* convexity: ``D`` is convex in c, so between two anchors ``c_a < c < c_b`` it lies below the chord
  ``(1 - t) U_a + t U_b``, ``t = (c - c_a) / (c_b - c_a)``; when all rows share one support, ``D = 0``
  at ``e^{log_max}`` (the rigorous largest log-ratio) serves as an anchor from above.

Each float evaluation is pushed up by its own rounding: ``c_b - c`` by ``3u (c_b + c)``, the chord by
``tau |U_b - U_a| + 4u (U_a + U_b)`` with ``tau`` a bound on the error of t (``math.exp`` is within
``2u``; the anchors' ``e^{eps_k}`` are rounded up, :func:`_exp_up`). Then the best pairs by these bounds are evaluated with the tile kernels' rigorous bounds;
every pair whose bound is below the best certified lower bound is out; if few pairs remain they are
evaluated, else everything is rescanned. The result is the largest bound left (never below the
exact maximum), the witness its first pair in row-major order. Results may differ in the last
digits with the history of queries on the operator (never below the exact value).

Narrowed pass (:func:`_narrow`, tried first): with an anchor ``U_a`` at ``eps_a <= eps``, the best pairs of
``U_a`` are evaluated at eps for a certified lower bound, and only the pairs whose ``U_a`` reaches it get
derived bounds and evaluations; the others keep ``U_a`` (valid by monotonicity), so a bisection's steps
cost O(candidates) instead of several n x n passes. When a full pass is unavoidable, the caller may
supply one cheaper than the tile scan (the enumeration of active terms at large eps, :mod:`.pruning`),
whose per-pair upper bounds are kept as the anchor like a scan's.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np

from .pairwise import _U, _Prep
from .scan import pair_bounds, refine, scan_matrix, use_numba_for
from .._numerics import TIE_BUDGET, check_memory
from ..errors import ResourceLimitError

__all__: list[str] = []

_LOCK = threading.Lock()
#: At most this many anchors (n x n matrices of doubles) are kept per operator.
_MAX_ANCHORS = 6
#: Anchors are used for n up to this (n x n matrices).
_ANCHOR_MAX_N = 4000
#: Pairs evaluated exactly first, to get a lower bound.
_PROBE = 64
#: Above this fraction of all pairs left after pruning, everything is rescanned (the tiles are faster
#: per pair than the evaluation of a list of pairs).
_RESCAN_FRACTION = 0.03
#: Above this fraction of all pairs that an anchor below cannot exclude, the bounds are derived for every pair.
_NARROW_FRACTION = 0.25


def anchors_allowed(prep: _Prep) -> bool:
    if prep.n > _ANCHOR_MAX_N:
        return False
    try:
        check_memory((_MAX_ANCHORS + 3) * 8.0 * prep.n * prep.n, "pair bounds kept across eps")
    except ResourceLimitError:
        return False
    return True


def _store(prep: _Prep) -> OrderedDict:
    return prep.cache.setdefault("anchors", OrderedDict())


def _snapshot(prep: _Prep, touch=()) -> dict:
    """A copy of the anchors (under the lock: queries on one operator may run in several threads),
    marking ``touch`` as recently used."""
    with _LOCK:
        store = _store(prep)
        for e in touch:
            if e in store:
                store.move_to_end(e)
        return dict(store)


def _exp_up(eps: float) -> float:
    """``e^eps`` rounded up: ``math.exp`` (within one ulp: at most 0.503 ulp measured on glibc) pushed one float up."""
    return math.nextafter(math.exp(eps), math.inf)


def _from_anchors(prep: _Prep, eps: float, c: float, idx: np.ndarray | None = None) -> np.ndarray | None:
    """Per-pair upper bounds of ``D(e^eps)`` from the anchors (module docstring); None without anchors.
    With ``idx`` (flat indices ``x n + x'``), the bounds of those pairs only, as a 1-D array."""
    store = _snapshot(prep)
    if not store:
        return None
    n = prep.n
    below = max((e for e in store if e <= eps), default=None)
    above = min((e for e in store if e > eps), default=None)
    _snapshot(prep, touch=[e for e in (below, above) if e is not None])
    sq = prep.sums * (1.0 + (prep.m + 4) * _U)  # s_q rounded up

    def pick(U: np.ndarray) -> np.ndarray:
        return U if idx is None else U.ravel()[idx]

    sqv = sq[None, :] if idx is None else sq[idx % n]
    B = None
    if below is not None:
        B = store[below].copy() if idx is None else pick(store[below])
    ultra = prep.ultra
    top = None  # (c_b, U_b or None for the zero anchor)
    if above is not None:
        top = (_exp_up(above), pick(store[above]))
    elif ultra.shared and math.isfinite(ultra.log_max) and ultra.log_max <= 700.0 and ultra.log_max > eps:
        top = (_exp_up(ultra.log_max), None)
    if top is not None:
        cb, Ub = top
        if Ub is not None:  # Lipschitz from above
            dc = (cb - c) + 3.0 * _U * (cb + c)
            lip = np.nextafter(Ub + (dc * (1.0 + 4 * _U)) * sqv, np.inf)
            B = lip if B is None else np.minimum(B, lip)
        if below is not None:  # chord between the two anchors
            ca = _exp_up(below)
            den = cb - ca
            if den > 16.0 * _U * (cb + ca):
                t = min(max((c - ca) / den, 0.0), 1.0)
                tau = 6.0 * _U * (c + cb + 2.0 * ca) / den + 4.0 * _U
                Ua = pick(store[below])
                with np.errstate(invalid="ignore"):  # the diagonal (-inf) gives nan: reset below
                    if Ub is None:
                        chord = Ua * ((1.0 - t) + tau + 4.0 * _U)
                    else:
                        chord = Ua + t * (Ub - Ua) + tau * np.abs(Ub - Ua) + 4.0 * _U * (np.abs(Ua) + np.abs(Ub))
                chord = np.nextafter(chord, np.inf)
                B = np.minimum(B, chord)
    if B is not None:
        if idx is None:
            np.fill_diagonal(B, -math.inf)
        else:
            B[idx // n == idx % n] = -math.inf
    return B


def _top_pairs(B: np.ndarray, k: int) -> np.ndarray:
    """Flat indices of k large entries of ``B`` (the k largest up to ties): the k largest of the k rows with
    the largest maxima (a whole-matrix ``argpartition`` is slow on the many equal entries of derived bounds).
    Only chooses which pairs are probed first; any choice is sound."""
    n = B.shape[1]
    rowmax = B.max(axis=1)
    rows = np.argpartition(rowmax, -k)[-k:] if rowmax.size > k else np.arange(rowmax.size)
    sub = B[rows].ravel()
    loc = np.argpartition(sub, -k)[-k:] if sub.size > k else np.arange(sub.size)
    return rows[loc // n] * n + loc % n


def _close(prep: _Prep, top: float) -> float:
    """How far the largest bound may sit above the best certified lower bound and still be the answer:
    a few times the width of the scan's own per-pair bounds (:mod:`.scan`), about 1e-15 absolute."""
    return 4.0 * (prep.m + 8) * _U * abs(top) + 32.0 * _U * float(prep.sums.max()) + prep.m * 2.0**-1074


def _remember(prep: _Prep, eps: float, B: np.ndarray) -> None:
    with _LOCK:
        store = _store(prep)
        store[eps] = B
        store.move_to_end(eps)
        while len(store) > _MAX_ANCHORS:  # the least recently used goes, never the smallest eps (bounds every eps)
            first = min(store)
            del store[next(e for e in store if e != first)]


def _narrow(prep: _Prep, eps: float, c: float) -> tuple[np.ndarray, float, int] | None:
    """Bounds at eps touching only the pairs that can still matter, or None (then the whole-matrix path).

    With an anchor ``U_a`` at ``eps_a <= eps`` (monotonicity: ``U_a`` bounds ``D(e^eps)`` for EVERY pair), the
    best pairs of ``U_a`` are evaluated at eps for a certified lower bound ``low``; only the pairs with
    ``U_a >= low`` can hold the maximum. Their bounds are tightened by the other anchors (:func:`_from_anchors`
    on that subset) and, where still ``>= low``, evaluated; all other pairs keep ``U_a``. Every entry of the
    returned matrix is thus a rigorous upper bound at eps, as on the whole-matrix path. None when the subset
    is a large fraction of the pairs (the whole-matrix passes are then as fast). The third item is the flat
    index of the evaluated pair whose certified lower bound is ``low``."""
    store = _snapshot(prep)
    below = max((e for e in store if e <= eps), default=None)
    if below is None:
        return None
    n = prep.n
    Ua = store[below]
    use_numba = use_numba_for(n, prep.m)
    k = min(_PROBE, n * (n - 1))
    top = _top_pairs(Ua, k)
    top = top[top // n != top % n]
    if not top.size:
        return None
    ups_top, lows = pair_bounds(prep.data, top // n, top % n, c, prep.sums, use_numba)
    low, low_at = float(lows.max()), int(top[int(np.argmax(lows))])
    idx = np.flatnonzero(Ua.ravel() >= low)
    if idx.size > _NARROW_FRACTION * n * n:
        return None
    vals = _from_anchors(prep, eps, c, idx)
    hit = np.isin(idx, top, assume_unique=True)  # the probed pairs: their own evaluation too
    if hit.any():
        pos = np.searchsorted(top, idx[hit], sorter=np.argsort(top))
        vals[hit] = np.minimum(vals[hit], ups_top[np.argsort(top)][pos])
    best = float(vals.max()) if vals.size else -math.inf
    if best > low + _close(prep, best):
        ev = np.flatnonzero(vals >= low)
        if ev.size > _RESCAN_FRACTION * n * n:
            return None
        if ev.size:
            ups, lows = pair_bounds(prep.data, idx[ev] // n, idx[ev] % n, c, prep.sums, use_numba)
            vals[ev] = np.minimum(vals[ev], ups)
            if float(lows.max()) > low:
                low, low_at = float(lows.max()), int(idx[ev][int(np.argmax(lows))])
    B = Ua.copy()
    B.ravel()[idx] = vals
    return B, low, low_at


def anchored_max(prep: _Prep, eps: float, c: float, *, executor=None, progress=None,
                 full=None) -> tuple[float, int, int]:
    """``max_{x != x'} D_{e^eps}(K_x || K_x')`` rounded up, and its pair, reusing and storing anchors.

    ``full``, when given, is tried before a full scan: a callable returning ``(U, low)`` (an n x n matrix of
    rigorous per-pair upper bounds at eps, diagonal -inf, and a certified lower bound of the maximum) or None
    (e.g. the enumeration of active terms of :mod:`.pruning` at large eps)."""
    n = prep.n
    B = _snapshot(prep, touch=[eps]).get(eps)
    witness = prep.cache.get("witnesses", {}).get(eps)
    if B is None:
        narrowed = _narrow(prep, eps, c)
        if narrowed is not None:
            B, low, witness = narrowed
        else:
            B, low, witness = _whole(prep, eps, c, executor=executor, progress=progress, full=full)
        flat = B.ravel()
        cand = np.flatnonzero(flat >= low)
        if cand.size <= TIE_BUDGET:  # more would be near-ties: their own bounds are within (m + 8) u
            cand = cand[np.argsort(-flat[cand], kind="stable")]
            flat[cand] = refine(prep, cand // n, cand % n, flat[cand], low, eps)
            witness = None  # every pair whose bound reaches low was evaluated at eps: the argmax is one of them
        # otherwise the largest bound may be a pair's bound derived from another eps, never evaluated here
        # (its value can be far below): the witness is the evaluated pair of the certified lower bound, within
        # _close of the maximum (the maximum was pinned down) or of near-ties
        with _LOCK:
            prep.cache.setdefault("witnesses", {})[eps] = witness
        _remember(prep, eps, B)
    k = int(np.argmax(B))
    value = min(max(float(B.flat[k]), 0.0), 1.0)
    if witness is not None:
        k = witness
    return value, k // n, k % n


def _whole(prep: _Prep, eps: float, c: float, *, executor=None, progress=None,
           full=None) -> tuple[np.ndarray, float, int | None]:
    """Bounds at eps for every pair: from all anchors, the best pairs evaluated, or a full scan; and the flat
    index of the evaluated pair giving the lower bound (None after a full scan)."""
    n = prep.n
    B = prior = _from_anchors(prep, eps, c)
    low = -math.inf
    if B is not None:
        use_numba = use_numba_for(n, prep.m)
        flat = B.ravel()
        k = min(_PROBE, n * (n - 1))
        best = float(flat.max())
        top = np.flatnonzero(flat >= best - 1e-9 * abs(best))[:k]  # many near-ties: any k of them
        if top.size < k:
            top = _top_pairs(B, k)
        ups, lows = pair_bounds(prep.data, top // n, top % n, c, prep.sums, use_numba)
        flat[top] = np.minimum(flat[top], ups)
        low, low_at = float(lows.max()), int(top[int(np.argmax(lows))])
        cand = np.flatnonzero(flat >= low)
        if float(flat.max()) <= low + _close(prep, float(flat.max())):
            cand = cand[:0]  # the bounds already pin the maximum down (e.g. all pairs tie)
        elif cand.size > _RESCAN_FRACTION * n * n:
            B = None
        elif cand.size:
            ups, lows = pair_bounds(prep.data, cand // n, cand % n, c, prep.sums, use_numba)
            flat[cand] = np.minimum(flat[cand], ups)
            if float(lows.max()) > low:
                low, low_at = float(lows.max()), int(cand[int(np.argmax(lows))])
    if B is None:
        got = full() if full is not None else None
        if got is None:
            got = scan_matrix(prep, c, executor=executor, progress=progress, desc=f"pairs (eps={eps:.4g})")
        U, low = got
        B = U if prior is None else np.minimum(U, prior, out=U)  # prior: only tightened where evaluated
        low_at = None  # every pair was bounded at eps: the largest bound is within its width of its value
    return B, low, low_at
