"""The exact privacy profile of a finite mechanism: :func:`privacy_profile` builds an
:class:`ExactProfile`, ``delta(eps) = max over neighbouring (u, u') of D_{e^eps}(M_u || M_u')``
(the profile of Balle, Barthe, Gaboardi 2018 that Theorem 1 of Balle, Barthe, Gaboardi, Geumlek
2019 consumes), from the outcomes of each pair sorted once by log-likelihood ratio.

Every delta is an upper bound of the exact value, rounded UP past its floating-point error (the
error model is in :func:`privacy_profile`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._numerics import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_epsilon, round_up_array
from ..operators import as_operator
from .neighbors import neighbor_pairs
from .dominating import DominatingPair
from .profiles import PrivacyProfile

__all__ = ["ExactProfile", "privacy_profile"]


class ExactProfile(PrivacyProfile):
    """Exact privacy profile of a finite mechanism (a row-stochastic matrix; ``exact=True``).

    Built by :func:`privacy_profile`. ``labels`` are the mechanism's input labels,
    ``pairs`` the ``(k, 2)`` index pairs of neighbours considered (both directions).
    """

    __slots__ = ("labels", "pairs", "_rows", "_a", "_pre_u", "_pre_v", "_suf_u", "_suf_v",
                 "_llr_err", "_inf_u", "_inf_v", "_m", "_row_dev")

    def __init__(self, **state: Any) -> None:
        super().__init__(self._eval_max, name=state.pop("name"), source=state.pop("source"), exact=True,
                         pure_epsilon=state.pop("pure_epsilon"))
        for key, value in state.items():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_pair", self._roc_pair)

    def _roc_pair(self) -> DominatingPair:
        """The exact dominating pair: the upper concave hull of the ROC points ``(Q(S), P(S))`` of every
        ordered neighbouring pair, S ranging over the prefix sets in likelihood-ratio order.

        Derivation: ``H_a(M_u || M_v) = max_S M_u(S) - a M_v(S)`` for every ``a > 0`` (negative eps
        included), attained at the set of outcomes whose ratio exceeds ``a``, a prefix of the pair's
        sorted order (``(u, v)``: prefixes, ``(v, u)``: suffixes). So the profile's curve over every real
        eps is ``max`` over all these points of ``b - a s``, which only depends on their upper hull,
        and the hull's chain is a pair with exactly that curve (:meth:`DominatingPair.from_roc`).
        Rows are normalised (a stored row stands for its normalised row). Rounding: with computed
        log-ratios within ``d = llr_err`` of the exact ones, the computed order is exact for ``q~_y =
        p_y e^{-llr~_y}`` and ``q_y >= e^{-d} q~_y``, so ``H_a(p || q) <= max_k P_k - a e^{-2d} Q_k``: each
        point's s is deflated by ``2d`` relative; the prefix sums and the normalisation by ``(2m + 8) u``
        relative more (s down, b up; b capped at 1). Every true value therefore lies below the pair's
        curve, which equals the profile up to these relative roundings.
        """
        m, u = self._m, UNIT_ROUNDOFF
        rel = (2 * m + 8) * u
        tot_u, tot_v = self._pre_u[:, m:], self._pre_v[:, m:]
        shrink = (1.0 - rel) * (1.0 - 2.0 * self._llr_err) * (1.0 - 2 * u)
        s = np.concatenate([(self._pre_v / tot_v).ravel(), (self._suf_u / tot_u).ravel()]) * shrink
        b = np.concatenate([(self._pre_u / tot_u).ravel(), (self._suf_v / tot_v).ravel()]) * (1.0 + rel)
        s = np.maximum(np.nextafter(s, -np.inf), 0.0)
        b = np.minimum(np.where(b > 0, np.nextafter(b, np.inf), 0.0), 1.0)
        return DominatingPair.from_roc(s, b, name=self.name, exact=True)

    def _values(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per unordered pair (rows) and eps (columns): upper bounds of ``D_{e^eps}(M_u || M_v)``
        and ``D_{e^eps}(M_v || M_u)``. See :func:`privacy_profile` for the error model."""
        nrows, E = self._rows.shape[0], eps.size
        vu, vv = np.empty((nrows, E)), np.empty((nrows, E))
        inf = np.isinf(eps)
        vu[:, inf] = self._inf_u[:, None]
        vv[:, inf] = self._inf_v[:, None]
        e = eps[~inf]
        if e.size:
            fin = ~inf
            d = self._llr_err
            left_q = np.concatenate([-e, -(e + d), -(e - d)])
            right_q = np.concatenate([e, e + d, e - d])
            # a[r] ascending: count(llr > t) = count(a < -t) = searchsorted(a, -t, "left")
            if nrows * self._m * left_q.size <= 1 << 15:  # small: one broadcast comparison
                L = np.count_nonzero(self._a[:, None, :] < left_q[None, :, None], axis=2)
                R = np.count_nonzero(self._a[:, None, :] <= right_q[None, :, None], axis=2)
            else:
                L = np.empty((nrows, 3 * e.size), dtype=np.intp)
                R = np.empty((nrows, 3 * e.size), dtype=np.intp)
                for r in range(nrows):
                    L[r] = np.searchsorted(self._a[r], left_q, side="left")
                    R[r] = np.searchsorted(self._a[r], right_q, side="right")
            n = e.size
            vu[:, fin] = self._direction(self._pre_u, self._pre_v, L[:, :n], L[:, n:2 * n], L[:, 2 * n:], e)
            vv[:, fin] = self._direction(self._suf_v, self._suf_u, R[:, :n], R[:, n:2 * n], R[:, 2 * n:], e)
        return vu, vv

    def _direction(self, num: np.ndarray, den: np.ndarray, k: np.ndarray, k_lo: np.ndarray,
                   k_hi: np.ndarray, e: np.ndarray) -> np.ndarray:
        """``[P_S - e^eps Q_S]_+`` over the computed set S (index k into the partial sums ``num``,
        ``den``), made an upper bound of the exact divergence up to one final relative rounding
        (applied by the caller after the maximum; rounding up is monotone, so it commutes with it);
        ``k_lo``/``k_hi`` index the band of outcomes whose computed log-ratio is within
        ``llr_err`` of eps."""
        u, m = UNIT_ROUNDOFF, self._m
        offs = (np.arange(k.shape[0]) * (m + 1))[:, None]
        flat_num, flat_den = num.ravel(), den.ravel()
        P, Q = flat_num[k + offs], flat_den[k + offs]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            logQ = np.log(Q)  # -inf where Q = 0
            cQ = np.exp(e + logQ)  # 0 where Q = 0, inf on overflow
            shrink = 1.0 - u * (2.0 * e + 10.0 * np.abs(np.where(Q > 0, logQ, 0.0)) + m + 16)
            # relative shrink for normal results; in the subnormal range exp and the product each round by
            # up to one absolute unit 2^-1074 that no relative factor covers, so subtract two of them
            B = np.maximum(cQ * np.maximum(shrink, 0.0) - 2.0 * SMALLEST_SUBNORMAL, 0.0)
            B[shrink <= 0] = 0.0  # no usable lower bound of e^eps Q: drop it (also avoids inf * 0)
            X = np.maximum(P * (1.0 + (m + 4) * u) - B, 0.0)
        # X is exact up to one relative rounding of the subtraction (covered by the caller's round-up)
        band = k_hi != k_lo
        if np.any(band):
            hi, lo = flat_num[(k_hi + offs)[band]], flat_num[(k_lo + offs)[band]]
            X[band] += 2.0 * self._llr_err * (np.abs(hi - lo) + (m + 2) * u * hi)
        return X

    def _eval_max(self, eps: np.ndarray) -> np.ndarray:
        """The profile of the row-normalised mechanism. Stored rows whose sums are off 1 by more than rounding
        (``rho`` = the largest deviation, plus the sums' own rounding) stand for their normalised rows
        ``P / s`` with ``s`` in ``[1 - rho, 1 + rho]``, so ``sum [P_u / s_u - a P_v / s_v]_+ <= (1 / (1 - rho))
        sum [P_u - a r P_v]_+`` with ``r = (1 - rho) / (1 + rho)``: the stored rows' value at
        ``eps - log(1 / r)``, divided by ``1 - rho``; below 0 that shifted eps uses ``H_a <= delta(0) + (1 - a)
        (1 + rho)``. Rows summing to 1 within rounding are used as stored (``rho = 0``)."""
        rho = self._row_dev
        if rho == 0.0:
            return self._eval_stored(eps)
        shift = math.log1p(2.0 * rho / (1.0 - rho))
        shifted = eps - shift
        neg = shifted < 0.0
        out = self._eval_stored(np.where(neg, 0.0, shifted))
        out = np.where(neg, out + (-np.expm1(np.minimum(shifted, 0.0))) * (1.0 + rho), out)
        return round_up_array(out / (1.0 - rho), 4, upper=1.0)

    def _eval_stored(self, eps: np.ndarray) -> np.ndarray:
        out = np.empty(eps.size)
        step = max(1, (1 << 20) // max(1, self._rows.shape[0]))  # bounds the (pairs x eps) temporaries
        for start in range(0, eps.size, step):
            vu, vv = self._values(eps[start:start + step])
            out[start:start + step] = np.maximum(vu.max(axis=0), vv.max(axis=0))
        # the subtraction in X and the band addition each add one relative rounding
        return round_up_array(out, 6, upper=1.0)

    def witness(self, epsilon: float) -> tuple:
        """The neighbouring pair ``(u, u')`` of input labels attaining ``delta(epsilon)``
        (some pair attaining the maximum of the computed bounds; any pair when delta is 0).

        >>> prof = privacy_profile([[0.75, 0.25], [0.5, 0.5]], neighbors=None)
        >>> prof.witness(0.1)  # D(M_1 || M_0) = 0.5 - e^0.1 0.25 beats D(M_0 || M_1)
        (1, 0)
        """
        eps = check_epsilon(epsilon)
        vu, vv = self._values(np.array([eps]))
        ru, rv = int(np.argmax(vu[:, 0])), int(np.argmax(vv[:, 0]))
        i, j = self._rows[ru] if vu[ru, 0] >= vv[rv, 0] else self._rows[rv][::-1]
        return (self.labels[int(i)], self.labels[int(j)])


def _row_chunks(n_rows: int, m: int, budget: int = 1 << 17) -> Iterable[slice]:
    step = max(1, budget // max(m, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


def privacy_profile(M: Any, neighbors: Any = None, *, name: str | None = None) -> ExactProfile:
    """Exact privacy profile of a finite mechanism: ``delta(eps) = max over neighbouring (u, u')
    of D_{e^eps}(M_u || M_u')`` (both orders of every pair count).

    ``M`` is a :class:`~chainamp.operators.MarkovOperator` or a row-stochastic matrix (rows =
    data values, columns = outputs: a numpy array, a scipy.sparse matrix or nested lists, checked
    as ``MarkovOperator(M)`` does); ``neighbors`` is None (all pairs: local DP, so this is an
    LDP audit of any channel), a networkx Graph over M's input labels, or a list of label pairs.

    Method: for each unordered pair the outcomes are sorted once by the log-likelihood ratio
    ``l_y = log M_u(y) - log M_u'(y)``; with partial sums ``P, Q`` of ``M_u, M_u'`` in that order,
    ``D_{e^eps}(M_u || M_u') = P_k - e^eps Q_k`` where k counts the outcomes with ``l_y > eps``
    (a prefix), and the reverse direction is the matching suffix. Each eps then costs a binary
    search per pair. Memory: ``40 * outputs`` bytes per unordered pair, kept for later queries
    (about 200 MB for 100 inputs x 1000 outputs, all pairs). Outputs no compared row can
    produce are dropped first.

    Rounding (all toward larger delta): computed log-ratios are within
    ``llr_err = 32 u max|log M(y)|`` of the exact ones (``u = 2^-53``; this allows 4-ulp
    library logarithms); an outcome on the wrong
    side of eps changes the sum by at most ``2 llr_err M_u(y)``, so the mass of the outcomes
    whose computed ratio is within ``llr_err`` of eps is added with that weight. Partial sums
    are inflated by ``(m + 4) u`` relative, ``e^eps Q_k`` (computed as ``exp(eps + log Q_k)``)
    deflated by ``u (2 eps + 10 |log Q_k| + m + 16)`` relative, and the maximum over pairs is
    rounded up once more. ``pure_epsilon`` is the largest computed finite log-ratio plus
    ``2 llr_err`` (0 when all compared rows are equal, inf when a support differs); delta is 0
    from there on.

    Examples
    --------
    >>> rr = [[0.75, 0.25], [0.25, 0.75]]
    >>> prof = privacy_profile(rr)
    >>> round(prof.delta(0.0), 6), round(prof.pure_epsilon, 6)
    (0.5, 1.098612)
    """
    op = as_operator(M, "M")
    labels = op.inputs
    pairs = neighbor_pairs(labels, neighbors)
    rows = pairs[pairs[:, 0] < pairs[:, 1]]
    P = np.asarray(op.matrix, dtype=float)
    used = np.unique(rows)
    P = P[:, np.any(P[used] > 0, axis=0)]
    m = P.shape[1]
    pos = P[used][P[used] > 0]
    llr_err = 32.0 * UNIT_ROUNDOFF * float(np.max(np.abs(np.log(pos))))
    nrows = rows.shape[0]
    a = np.empty((nrows, m))
    pre_u, pre_v, suf_u, suf_v = (np.zeros((nrows, m + 1)) for _ in range(4))
    inf_u, inf_v = np.empty(nrows), np.empty(nrows)
    top = -math.inf
    with np.errstate(divide="ignore"):
        logP = np.log(P)
    for sl in _row_chunks(nrows, m):
        ri, rj = rows[sl, 0], rows[sl, 1]
        with np.errstate(invalid="ignore"):
            neg = logP[rj] - logP[ri]  # -log(M_u/M_v); NaN where both vanish
        neg[np.isnan(neg)] = 0.0
        order = np.argsort(neg, axis=1)
        a[sl] = np.take_along_axis(neg, order, axis=1)
        ps, qs = P[ri[:, None], order], P[rj[:, None], order]
        np.cumsum(ps, axis=1, out=pre_u[sl, 1:])
        np.cumsum(qs, axis=1, out=pre_v[sl, 1:])
        np.cumsum(ps[:, ::-1], axis=1, out=suf_u[sl, m - 1::-1])
        np.cumsum(qs[:, ::-1], axis=1, out=suf_v[sl, m - 1::-1])
        # outcomes only M_u produces sort first (a = -inf), only M_v produces last (a = +inf)
        n_lo = np.count_nonzero(a[sl] == -math.inf, axis=1)
        n_hi = np.count_nonzero(a[sl] == math.inf, axis=1)
        idx = np.arange(n_lo.size)
        inf_u[sl] = round_up_array(pre_u[sl][idx, n_lo], m, upper=1.0)
        inf_v[sl] = round_up_array(suf_v[sl][idx, m - n_hi], m, upper=1.0)
        if np.any(n_lo > 0) or np.any(n_hi > 0):
            top = math.inf
        elif top < math.inf:  # largest finite log-ratio, either direction
            top = max(top, float(np.max(-a[sl, 0])), float(np.max(a[sl, m - 1])))
    sums = np.asarray(P[used].sum(axis=1), dtype=float)
    dev = float(np.max(np.abs(sums - 1.0)))
    row_dev = dev + (m + 2) * UNIT_ROUNDOFF if dev > 2.0 * (m + 2) * UNIT_ROUNDOFF else 0.0
    if row_dev > 0.0 and math.isfinite(top):
        top += math.log1p(2.0 * row_dev / (1.0 - row_dev))  # the widening of _eval_max shifts eps by this
    if math.isinf(top):
        pure = math.inf
    elif top <= 0.0 and all(np.array_equal(P[i], P[j]) for i, j in rows):
        pure = 0.0  # every compared pair of rows is identical
    else:
        pure = math.nextafter(max(top, 0.0) + 2.0 * llr_err, math.inf)
    label = name if name is not None else f"finite mechanism ({len(labels)} inputs x {op.shape[1]} outputs, " \
        f"{'all pairs' if neighbors is None else f'{pairs.shape[0] // 2} neighbour pairs'})"
    return ExactProfile(name=label, source="exact: max over neighbouring pairs of the hockey-stick divergence",
                        pure_epsilon=pure, labels=labels, pairs=pairs, _rows=rows, _a=a, _pre_u=pre_u,
                        _pre_v=pre_v, _suf_u=suf_u, _suf_v=suf_v, _llr_err=llr_err, _inf_u=inf_u,
                        _inf_v=inf_v, _m=m, _row_dev=row_dev)
