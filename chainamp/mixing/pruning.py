"""Certified pruning search for ``max_{x != x'} D_{e^eps}(K_x || K_x')`` (Definition 1(2); private).

The search behind :func:`chainamp.mixing.dobrushin` and
:func:`chainamp.mixing.dobrushin_curve` for operators too large to evaluate every pair
exactly: shortcuts, the exact small-operator pass, the L1-form candidate search with
exact re-evaluation (:func:`_max_hockey`, :func:`_resolve`), the enumeration of active
terms at large eps (:func:`_enumerate_hockey`) and the bound reuse across eps
(:func:`_curve_values`). Rows, preparation and exact pair evaluation come from
:mod:`.pairwise`. Every value is rounded toward the safe (larger) side and is never
below the exact value for the stored matrix.

Floating-point error model (used by every rounding below): a sum of m
non-negative doubles has relative error at most ``(m - 1) u`` in any order;
``math.exp`` and ``math.log`` are within one ulp (relative ``2u``), numpy's
vectorised ``log`` within four; ``u = 2**-53``.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from .pairwise import (_INF_EPS, _TINY, _U, _WORKERS, _Prep, _eval_pairs, _hockey_rows, _max_inf, _rows,
                       _up)
from .._numerics import scaled_by_exp, L1_FORM_MAX_ERR, TIE_BUDGET, TIE_ERR

__all__ = []


def _approx_error(prep: _Prep, c: float) -> float:
    """Bound on ``|v - D_c|`` for the L1 form ``v = (c ||p/c - q||_1 + s_p - c s_q) / 2``:
    every rounding is relative to ``s_p + c s_q`` (terms, sum, row sums, scalings, and
    the one-ulp error of ``c = e^eps``), plus underflow of ``p / c``."""
    smax = float(prep.sums.max()) * (1.0 + 4 * _U)
    # 1.25: headroom so that the float comparisons against +- err cannot cut a candidate
    return 1.25 * ((2 * prep.m + 16) * _U * (1.0 + c) * smax + (prep.m + 2) * c * _TINY)


#: Columns per cdist call: rows of this many doubles stay in the L1 cache (about 1.6x faster).
_COL_CHUNK = 384


def _l1_block(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``sum_y |P_iy - Q_jy|`` for every row pair, by cdist on column chunks (a sum of
    non-negative partial sums: the same ``(m - 1) u`` relative error as one cdist)."""
    m = P.shape[1]
    if m <= 2 * _COL_CHUNK:
        return cdist(P, Q, "cityblock")
    out = None
    for c0 in range(0, m, _COL_CHUNK):
        part = cdist(np.ascontiguousarray(P[:, c0:c0 + _COL_CHUNK]),
                     np.ascontiguousarray(Q[:, c0:c0 + _COL_CHUNK]), "cityblock")
        out = part if out is None else np.add(out, part, out=out)
    return out


def _approx_candidates(prep: _Prep, c: float, err: float, cap: int | None):
    """All-pairs approximation by ``cdist`` on row blocks (2 threads; cdist releases the GIL).

    For c = 1 only the upper triangle is computed: one L1 distance gives both orders,
    ``(L1 +- (s_x - s_x')) / 2``. Returns candidate ordered pairs ``(I, J, v)`` with
    ``v >= max(v) - 2 err`` and the largest ``v`` of a candidate dropped by ``cap``
    (``-inf`` if none).
    """
    data, n, b = prep.data, prep.n, prep.block
    sums = prep.sums
    symmetric = c == 1.0
    j_width = max(1, min(n, 2**21 // prep.m)) if sp.issparse(data) else n
    state = {"best": -math.inf}

    def collect(v, rows0, cols0, swap, out):
        vmax = float(v.max())
        state["best"] = max(state["best"], vmax)  # races only keep more candidates
        ii, jj = np.nonzero(v >= state["best"] - 2 * err)
        vals = v[ii, jj]
        dropped = -math.inf
        if cap is not None and vals.size > cap:
            order = np.argpartition(-vals, cap)
            dropped = float(vals[order[cap:]].max())
            sel = order[:cap]
            ii, jj, vals = ii[sel], jj[sel], vals[sel]
        ii, jj = ii + rows0, jj + cols0
        out.append((jj, ii, vals) if swap else (ii, jj, vals))
        return dropped

    def block(i0):
        i1 = min(n, i0 + b)
        P = _rows(data, slice(i0, i1))
        Ps = P if symmetric else P * (1.0 / c)
        out, dropped = [], -math.inf
        for j0 in range(i0 if symmetric else 0, n, j_width):
            j1 = min(n, j0 + j_width)
            Q = data[j0:j1] if not sp.issparse(data) else _rows(data, slice(j0, j1))
            L = _l1_block(Ps, Q)
            if not symmetric:
                L *= c
            fwd = 0.5 * (L + (sums[i0:i1, None] - c * sums[None, j0:j1]))
            r, cc = np.nonzero(np.arange(i0, i1)[:, None] >= np.arange(j0, j1)[None, :]) if symmetric \
                else np.nonzero(np.arange(i0, i1)[:, None] == np.arange(j0, j1)[None, :])
            fwd[r, cc] = -math.inf  # the diagonal (and, when symmetric, the lower triangle)
            dropped = max(dropped, collect(fwd, i0, j0, False, out))
            if symmetric:
                bwd = 0.5 * (L + (sums[None, j0:j1] - sums[i0:i1, None]))
                bwd[r, cc] = -math.inf
                dropped = max(dropped, collect(bwd, i0, j0, True, out))
        return out, dropped

    starts = range(0, n, b)
    if len(starts) > 1 and _WORKERS > 1:
        with ThreadPoolExecutor(_WORKERS) as pool:
            parts = list(pool.map(block, starts))
    else:
        parts = [block(i0) for i0 in starts]
    triples = [t for p in parts for t in p[0]]
    I = np.concatenate([t[0] for t in triples])
    J = np.concatenate([t[1] for t in triples])
    v = np.concatenate([t[2] for t in triples])
    dropped = max(p[1] for p in parts)
    keep = v >= max(float(v.max()), dropped) - 2 * err
    return I[keep], J[keep], v[keep], dropped


#: The enumeration path keeps three n x n accumulators: used for n up to this.
_ENUM_MAX_N = 3000


def _scaled_inv(p: np.ndarray, eps: float) -> np.ndarray:
    """``e^-eps p`` with relative error <= 6u plus 2 ulps of the subnormal range."""
    if eps <= 700.0:
        return p * math.exp(-eps)
    h = math.exp(-0.5 * eps)
    return (p * h) * h


def _enumerate_hockey(prep: _Prep, eps: float, budget: int) -> tuple[float, int, int] | None:
    """All ordered pairs at once by enumerating the ACTIVE terms only (large eps).

    A term ``[K(x,y) - c K(x',y)]_+`` with ``K(x',y) > 0`` is positive only when
    ``K(x',y) < K(x,y) / c``; sorting each column lists those x' for every x. The terms
    with ``K(x',y) = 0`` are ``K @ [K == 0]^T``. Per-pair sums go through ``bincount``;
    the threshold is relaxed by ``32u`` so every term that is, or could truly be,
    positive is enumerated (the others are truly 0).
    Returns None (caller falls back) when about more than ``budget`` terms would be
    needed (estimated from a sample of columns: one term costs about as much as 128
    entries of the L1 pass). The result is rounded up by ``(m + 2) u`` relatively plus
    ``8u max_x sum K_x`` (the terms' own errors), so it may exceed the exact value by
    about 1e-15.
    """
    data, n, m = prep.data, prep.n, prep.m
    if sp.issparse(data) or n > _ENUM_MAX_N:
        return None
    width = max(1, min(m, 2**20 // n))

    def columns():
        """Per column: (values p, sorted column w, sorted row order, first positive z, rows, k)."""
        for y0 in range(0, m, width):
            blk = data[:, y0:y0 + width]
            order = np.argsort(blk, axis=0, kind="stable")
            srt = np.take_along_axis(blk, order, axis=0)
            for t in range(blk.shape[1]):
                w = srt[:, t]
                z = int(np.searchsorted(w, 0.0, side="right"))  # first positive entry
                if z == n:
                    continue
                rows = np.flatnonzero(blk[:, t] > 0)
                thr = _scaled_inv(blk[rows, t], eps) * (1.0 + 32 * _U) + 4 * _TINY
                k = np.maximum(np.searchsorted(w, thr, side="left") - z, 0)
                yield blk[rows, t], w, order[:, t], z, rows, k

    # cost estimate from a sample of columns (only decides the path, never the value)
    sample = np.linspace(0, m - 1, min(m, 48)).astype(int)
    cols = np.sort(data[:, sample], axis=0)
    est = 0
    for t, y in enumerate(sample):
        p = data[data[:, y] > 0, y]
        z = int(np.searchsorted(cols[:, t], 0.0, side="right"))
        est += int(np.maximum(np.searchsorted(cols[:, t], _scaled_inv(p, eps), side="left") - z, 0).sum())
    if est * m / sample.size > budget:
        return None
    nn = n * n
    val = np.zeros(nn)
    parts: list = []
    pending = 0

    def flush():
        idx = np.concatenate([q[0] for q in parts])
        P = np.concatenate([q[1] for q in parts])
        cQ = scaled_by_exp(np.concatenate([q[2] for q in parts]), eps)
        val[:] += np.bincount(idx, weights=np.maximum(P - cQ, 0.0), minlength=nn)
        parts.clear()

    for p, w, order, z, rows, k in columns():
        tot = int(k.sum())
        if not tot:
            continue
        pos = z + np.arange(tot) - np.repeat(np.cumsum(k) - k, k)
        parts.append((np.repeat(rows, k) * n + order[pos], np.repeat(p, k), w[pos]))
        pending += tot
        if pending > 2**22:
            flush()
            pending = 0
    if parts:
        flush()
    zero_cols = np.flatnonzero((data == 0).any(axis=0))
    if zero_cols.size:  # terms with K(x', y) = 0: sums of non-negative products
        sub = data[:, zero_cols]
        val += (sub @ (sub == 0).T.astype(float)).ravel()
    val = val.reshape(n, n)
    np.fill_diagonal(val, -math.inf)
    k = int(np.argmax(val))
    i, j = divmod(k, n)
    best = max(float(val[i, j]), 0.0)
    # terms: 7u p each where (near-)active, so at most 8u s_x per pair in all, plus
    # underflow (2**-1074 per term) and the (m + 2) u of the sums
    slack = 8 * _U * float(prep.sums.max()) * (1.0 + (m + 2) * _U) + m * _TINY
    return min(math.nextafter(best * (1.0 + (m + 2) * _U) + slack, math.inf), 1.0), i, j


#: Below this many entries ``n * n * m``, all pairs are evaluated exactly in one pass.
_SMALL_WORK = 2**16


def _off_diagonal(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the n * (n - 1) ordered pairs x != x'."""
    I, J = np.divmod(np.arange(n * n), n)
    off = I != J
    return I[off], J[off]


def _max_hockey(prep: _Prep, eps: float) -> tuple[float, int, int]:
    """``max_{x != x'} D_{e^eps}(K_x || K_x')``, rounded up, and the pair attaining it.

    Soundness of the fast path: with ``v`` the L1-form approximation and ``err`` its
    rigorous error bound, any pair with ``v < max(v) - 2 err`` has a true value below
    the true value of the pair attaining ``max(v)``, so the maximum is attained among
    the candidates. Candidates are re-evaluated exactly (log-free, with their own
    rounding bound) in decreasing ``v``, stopping once no remaining ``v + err`` can beat
    the best exact lower bound. When ``err`` is tiny (``<= TIE_ERR``) and more than
    ``TIE_BUDGET`` candidates tie, the rest are covered by ``max(v) + err`` instead.
    When ``err`` is not small (large eps) every pair is evaluated exactly.
    """
    n, ultra = prep.n, prep.ultra
    if n < 2:
        return 0.0, 0, 0
    if prep.disjoint is not None:  # disjoint supports: D_c = K_x(Y) = 1 for every c
        return 1.0, prep.disjoint[0], prep.disjoint[1]
    if ultra.identical or (ultra.shared and eps >= ultra.log_max):
        return 0.0, ultra.rows[0], ultra.rows[1]  # every term p - e^eps q <= 0 exactly
    if math.isinf(eps) or eps >= _INF_EPS:
        if ultra.shared:
            return 0.0, ultra.rows[0], ultra.rows[1]
        return _max_inf(prep)
    if n * n * prep.m <= _SMALL_WORK:  # small operator: every pair exactly, one vectorised pass
        I, J = _off_diagonal(n)
        _, ups = _hockey_rows(_rows(prep.data, I), _rows(prep.data, J), eps)
        k = int(np.argmax(ups))
        return min(float(ups[k]), 1.0), int(I[k]), int(J[k])
    c = math.exp(eps) if eps <= 709.0 else math.inf
    err = _approx_error(prep, c) if math.isfinite(c) else math.inf
    if err > L1_FORM_MAX_ERR:  # large eps: few terms are active, enumerate them (exact, no cancellation)
        enumerated = _enumerate_hockey(prep, eps, budget=max(n * n * prep.m // 128, 2**20))
        if enumerated is not None:
            return enumerated
    if err < 0.05:
        cap = TIE_BUDGET if err <= TIE_ERR else None
        I, J, v, dropped = _approx_candidates(prep, c, err, cap)
        order = np.argsort(-v, kind="stable")
        I, J, v = I[order], J[order], v[order]
    else:
        I, J = _off_diagonal(n)
        v, dropped = np.full(I.size, math.inf), -math.inf
    return _resolve(prep, I, J, v, err, dropped, eps)[:3]


def _resolve(prep: _Prep, I, J, v, err: float, dropped: float, eps: float):
    """Exact re-evaluation of candidates sorted by decreasing approximate value ``v``
    (see :func:`_max_hockey`). Returns (gamma, x, x', evaluated I, J, upper bounds)."""
    best_up, best_low, bi, bj = -1.0, -1.0, int(I[0]), int(J[0])
    pos, step = 0, 256
    done_I, done_J, done_up = [], [], []
    while pos < I.size:
        if v[pos] + err < best_low:
            break  # no remaining candidate can be the maximiser
        if err <= TIE_ERR and pos >= TIE_BUDGET:
            break  # near-ties: covered by v + err below
        sl = slice(pos, min(I.size, pos + step))
        vals, ups = _eval_pairs(prep.data, I[sl], J[sl], eps)
        k = int(np.argmax(ups))
        if ups[k] > best_up:
            best_up, bi, bj = float(ups[k]), int(I[sl][k]), int(J[sl][k])
        # a lower bound on the true value: the computed value minus its error allowance
        best_low = max(best_low, float(np.max(vals - (ups - vals))))
        done_I.append(I[sl]), done_J.append(J[sl]), done_up.append(ups)
        pos, step = sl.stop, step * 2
    rest = max(float(v[pos]) if pos < I.size else -math.inf, dropped)
    if rest + err >= best_low and rest > -math.inf:
        best_up = max(best_up, _up(rest + err, 0.0))
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, dtype=int))
    return min(max(best_up, 0.0), 1.0), bi, bj, cat(done_I), cat(done_J), cat(done_up)


def _approx_matrix(prep: _Prep, c: float, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """L1-form approximation of ``D_c(K_x || K_x')`` on the grid rows x cols (diagonal -inf)."""
    data, sums, b = prep.data, prep.sums, prep.block
    Q = _rows(data, cols)

    def block(a):
        r = rows[a:a + b]
        L = _l1_block(_rows(data, r) * (1.0 / c), Q) * c if c != 1.0 else _l1_block(_rows(data, r), Q)
        v = 0.5 * (L + (sums[r, None] - c * sums[None, cols]))
        v[r[:, None] == cols[None, :]] = -math.inf
        return v

    starts = range(0, rows.size, b)
    if len(starts) > 1 and _WORKERS > 1:
        with ThreadPoolExecutor(_WORKERS) as pool:
            return np.vstack(list(pool.map(block, starts)))
    return np.vstack([block(a) for a in starts])


#: Largest n for which dobrushin_curve keeps an n x n matrix of upper bounds across eps.
_CURVE_MAX_N = 3000


def _curve_values(prep: _Prep, eps_sorted: np.ndarray) -> np.ndarray:
    """gamma at each eps (ascending, distinct), reusing bounds across eps.

    ``D_{e^eps}`` is non-increasing in eps, so an upper bound ``V[x, x']`` computed at
    one eps holds at every larger eps. At a new eps, the best few pairs by ``V`` are
    evaluated exactly; their largest lower bound ``LB`` is below gamma(eps), so only pairs
    with ``V >= LB`` can attain the maximum. Only the sub-grid of their rows and columns is
    re-approximated (then resolved exactly as in :func:`_max_hockey`), and V is
    tightened there. Same soundness argument as the single-eps path.
    """
    n = prep.n
    out = np.empty(eps_sorted.size)
    V = None
    idx = np.arange(n)
    for k, e in enumerate(eps_sorted):
        e = float(e)
        c = math.exp(e) if e <= 709.0 else math.inf
        special = (n < 2 or prep.disjoint is not None or prep.ultra.identical or e >= _INF_EPS
                   or (prep.ultra.shared and e >= prep.ultra.log_max))
        err = _approx_error(prep, c) if math.isfinite(c) else math.inf
        if special or err > L1_FORM_MAX_ERR or n > _CURVE_MAX_N or n * n * prep.m <= _SMALL_WORK:
            out[k] = _max_hockey(prep, e)[0]
            continue
        rows = cols = idx
        if V is not None:
            top = np.argpartition(V.ravel(), -min(64, V.size))[-min(64, V.size):]
            tI, tJ = np.divmod(top, n)
            tI, tJ = tI[tI != tJ], tJ[tI != tJ]
            vals, ups = _eval_pairs(prep.data, tI, tJ, e)
            V[tI, tJ] = np.minimum(V[tI, tJ], ups)
            lb = float(np.max(vals - (ups - vals))) if vals.size else -math.inf
            aI, aJ = np.nonzero(V >= lb)
            rows, cols = np.unique(aI), np.unique(aJ)
            if rows.size * cols.size > 0.6 * n * n:
                rows = cols = idx
        v = _approx_matrix(prep, c, rows, cols)
        if V is None:  # first evaluation: the full grid
            V = v + err
        else:
            grid = np.ix_(rows, cols)
            V[grid] = np.minimum(V[grid], v + err)
        cap = TIE_BUDGET if err <= TIE_ERR else None
        vmax = float(v.max())
        ci, cj = np.nonzero(v >= vmax - 2 * err)
        cv = v[ci, cj]
        dropped = -math.inf
        if cap is not None and cv.size > cap:
            order = np.argpartition(-cv, cap)
            dropped = float(cv[order[cap:]].max())
            ci, cj, cv = ci[order[:cap]], cj[order[:cap]], cv[order[:cap]]
        order = np.argsort(-cv, kind="stable")
        gamma, _, _, dI, dJ, dU = _resolve(prep, rows[ci[order]], cols[cj[order]], cv[order], err, dropped, e)
        V[dI, dJ] = np.minimum(V[dI, dJ], dU)
        out[k] = gamma
    return out
