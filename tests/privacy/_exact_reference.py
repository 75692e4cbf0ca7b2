"""The exact profile as it was before streaming (per-pair sorted arrays kept for every pair), kept here as the
reference the streamed implementation must reproduce bit for bit (same rounding rules, same witness)."""

from __future__ import annotations

import math

import numpy as np

from chainamp._numerics import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, round_up_array

__all__ = ["ReferenceProfile"]


class ReferenceProfile:
    """``ReferenceProfile(P, rows)``: ``rows`` the unordered pairs ``(i, j)``, ``i < j``, in lexicographic order."""

    def __init__(self, P: np.ndarray, rows: np.ndarray) -> None:
        self.rows = rows
        P = np.asarray(P, dtype=float)
        used = np.unique(rows)
        P = P[:, np.any(P[used] > 0, axis=0)]
        m = self.m = P.shape[1]
        pos = P[used][P[used] > 0]
        self.llr_err = 32.0 * UNIT_ROUNDOFF * float(np.max(np.abs(np.log(pos))))
        with np.errstate(divide="ignore"):
            logP = np.log(P)
        ri, rj = rows[:, 0], rows[:, 1]
        with np.errstate(invalid="ignore"):
            neg = logP[rj] - logP[ri]
        neg[np.isnan(neg)] = 0.0
        order = np.argsort(neg, axis=1)
        a = self.a = np.take_along_axis(neg, order, axis=1)
        ps, qs = P[ri[:, None], order], P[rj[:, None], order]
        k = rows.shape[0]
        self.pre_u, self.pre_v, self.suf_u, self.suf_v = (np.zeros((k, m + 1)) for _ in range(4))
        np.cumsum(ps, axis=1, out=self.pre_u[:, 1:])
        np.cumsum(qs, axis=1, out=self.pre_v[:, 1:])
        np.cumsum(ps[:, ::-1], axis=1, out=self.suf_u[:, m - 1::-1])
        np.cumsum(qs[:, ::-1], axis=1, out=self.suf_v[:, m - 1::-1])
        n_lo, n_hi = np.count_nonzero(a == -math.inf, axis=1), np.count_nonzero(a == math.inf, axis=1)
        idx = np.arange(k)
        self.inf_u = round_up_array(self.pre_u[idx, n_lo], m, upper=1.0)
        self.inf_v = round_up_array(self.suf_v[idx, m - n_hi], m, upper=1.0)
        top = math.inf if (np.any(n_lo > 0) or np.any(n_hi > 0)) else float(max(np.max(-a[:, 0]), np.max(a[:, -1])))
        # the exact deviation of the row sums from 1 (fsum), rounded up: 0 only for rows summing exactly to 1
        dev = max(abs(math.fsum(list(row) + [-1.0])) for row in P[used])
        same = all(np.array_equal(P[i], P[j]) for i, j in rows)
        self.row_dev = math.nextafter(dev * (1.0 + 2.0 * UNIT_ROUNDOFF), math.inf) if dev > 0.0 and not same else 0.0
        if self.row_dev > 0.0 and math.isfinite(top):
            top += math.log1p(2.0 * self.row_dev / (1.0 - self.row_dev))
        if math.isinf(top):
            self.pure = math.inf
        elif top <= 0.0 and all(np.array_equal(P[i], P[j]) for i, j in rows):
            self.pure = 0.0
        else:
            self.pure = math.nextafter(max(top, 0.0) + 2.0 * self.llr_err, math.inf)

    def values(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, E, m, d = self.rows.shape[0], eps.size, self.m, self.llr_err
        vu, vv = np.empty((k, E)), np.empty((k, E))
        inf = np.isinf(eps)
        vu[:, inf], vv[:, inf] = self.inf_u[:, None], self.inf_v[:, None]
        e = eps[~inf]
        if e.size:
            left_q = np.concatenate([-e, -(e + d), -(e - d)])
            right_q = np.concatenate([e, e + d, e - d])
            L = np.array([np.searchsorted(r, left_q, side="left") for r in self.a])
            R = np.array([np.searchsorted(r, right_q, side="right") for r in self.a])
            n = e.size
            vu[:, ~inf] = self._direction(self.pre_u, self.pre_v, L[:, :n], L[:, n:2 * n], L[:, 2 * n:], e)
            vv[:, ~inf] = self._direction(self.suf_v, self.suf_u, R[:, :n], R[:, n:2 * n], R[:, 2 * n:], e)
        return vu, vv

    def _direction(self, num, den, k, k_lo, k_hi, e):
        u, m = UNIT_ROUNDOFF, self.m
        offs = (np.arange(k.shape[0]) * (m + 1))[:, None]
        P, Q = num.ravel()[k + offs], den.ravel()[k + offs]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            logQ = np.log(Q)
            cQ = np.exp(e + logQ)
            shrink = 1.0 - u * (2.0 * e + 10.0 * np.abs(np.where(Q > 0, logQ, 0.0)) + m + 16)
            B = np.maximum(cQ * np.maximum(shrink, 0.0) - 2.0 * SMALLEST_SUBNORMAL, 0.0)
            B[shrink <= 0] = 0.0
            X = np.maximum(P * (1.0 + (m + 4) * u) - B, 0.0)
        band = k_hi != k_lo
        if np.any(band):
            hi, lo = num.ravel()[(k_hi + offs)[band]], num.ravel()[(k_lo + offs)[band]]
            X[band] += 2.0 * self.llr_err * (np.abs(hi - lo) + (m + 2) * u * hi)
        return X

    def _stored(self, eps: np.ndarray) -> np.ndarray:
        vu, vv = self.values(eps)
        return round_up_array(np.maximum(vu.max(axis=0), vv.max(axis=0)), 6, upper=1.0)

    def delta(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        out = np.zeros(eps.size)
        live = eps < self.pure if math.isfinite(self.pure) else np.ones(eps.size, bool)
        e = eps[live]
        rho = self.row_dev
        if e.size and rho == 0.0:
            out[live] = self._stored(e)
        elif e.size:
            shifted = e - math.log1p(2.0 * rho / (1.0 - rho))
            neg = shifted < 0.0
            val = self._stored(np.where(neg, 0.0, shifted))
            val = np.where(neg, val + (-np.expm1(np.minimum(shifted, 0.0))) * (1.0 + rho), val)
            out[live] = round_up_array(val / (1.0 - rho), 4, upper=1.0)
        return out

    def witness(self, eps: float) -> tuple[int, int]:
        vu, vv = self.values(np.array([eps]))
        ru, rv = int(np.argmax(vu[:, 0])), int(np.argmax(vv[:, 0]))
        i, j = self.rows[ru] if vu[ru, 0] >= vv[rv, 0] else self.rows[rv][::-1]
        return int(i), int(j)
