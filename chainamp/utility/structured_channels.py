"""Closed forms of frequency estimation on structured channels: k-ary randomized response and unary encodings.

Private helpers of :mod:`.estimation`. Nothing here forms a k x k or k x 2^k array.

**k-RR** (:class:`~chainamp.SymmetricChannel` over all k values): ``P = a I + o J`` with ``a = d - o``,
``J = 1 1^T`` and row sum ``s = d + (k - 1) o``. Its singular values are ``|a|`` (k - 1 times) and ``s``, its
inverse ``P^-1 = (I - (o / s) J) / a`` (check: ``(a I + o J)(I - (o/s) J) = a I + o J - (a o / s + k o^2 / s) J
= a I``), so the least-squares estimator is ``f^ = (w - (o / s) sum(w)) / a`` (``w = c / n``), Wang et al.'s
``(c_v / n - q) / (p - q)`` when ``s = 1``. Its covariance is diagonal plus rank <= 6 (:mod:`.lowrank`).

**Unary encodings** (a :class:`~chainamp.operators.KroneckerOperator` on one-hot inputs with a 2 x 2 bit
channel F; ``F[h, .]`` the hot row, ``F[c, .]`` the cold one): a report y (k bits) has
``P(v, y) = prod_j F(x_vj, y_j) = base(y) r(y_v)`` with ``base(y) = F(c, 1)^|y| F(c, 0)^(k - |y|)`` and
``r(b) = F(h, b) / F(c, b)``: the likelihood of y given v depends only on y_v and the number |y| of ones
(checked against the dense matrix by brute force in the tests). Hence

* the support counts ``C_v`` (reports with bit v set) have, for a fixed population, independent bits given
  each user's value, so ``Cov(C / n) = diag(sum_x f_x Q_xv (1 - Q_xv)) / n`` with ``Q_xv = P[bit v | x]``:
  the support estimator's covariance is DIAGONAL, ``(f_v p (1 - p) + (1 - f_v) q (1 - q)) / (n (p - q)^2)``,
  which is Wang et al.'s ``q (1 - q) / (n (p - q)^2) + f_v (1 - p - q) / (n (p - q))`` (since
  ``p (1 - p) - q (1 - q) = (p - q)(1 - p - q)``);
* the least-squares inverse of all 2^k output counts, ``(P P^T)^-1 P``, has ``P P^T = s_cc^k (alpha I + beta J)``
  and ``P diag(pi) P^T`` diagonal plus rank 3 in closed form (:meth:`UnaryModel.ls_covariance`); its variance
  grows like ``(t_ccc / s_cc^2)^k`` (403 against the support counts' 0.074 at OUE k = 100, eps = 2, n = 1000);
* the iterative Bayesian update needs only the observed reports: with ``pi~(y) = sum_v f_v r(y_v)
  = r(0) + (r(1) - r(0)) sum_{v: y_v = 1} f_v`` the factor base(y) cancels from the update
  ``f_v <- f_v sum_y w_y r(y_v) / pi~(y)``, which costs O(number of ones in the observed reports).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import check_memory
from ..errors import InvalidMechanismError, InvalidParameterError
from ..operators import KroneckerOperator, MarkovOperator, SymmetricChannel
from . import lowrank as lr

__all__: list[str] = []


def model_of(channel: MarkovOperator):
    """The closed-form model of a structured channel, or None (then the dense code path is used)."""
    if isinstance(channel, SymmetricChannel) and channel.positions is None and channel.k >= 2:
        return SymmetricModel(channel)
    if isinstance(channel, KroneckerOperator) and channel.input_family == "one-hot" and channel.shape[0] >= 2:
        F, _ = channel.factors[0]
        fam = getattr(channel, "_family", None)
        if F.shape == (2, 2) and set(F.outputs) == {0, 1} and not any(isinstance(b, float) for b in F.outputs) \
                and fam is not None:
            return UnaryModel(channel, F, fam.hot, fam.cold)
    return None


def _rank(values: list[tuple[float, int]], rtol: float) -> int:
    """Rank from singular values given as (value, multiplicity)."""
    top = max(v for v, _ in values)
    if not top > 0.0:
        return 0
    return sum(m for v, m in values if v > rtol * top)


# ------------------------------------------------------------------------------------------------ k-RR
class SymmetricModel:
    """``P = a I + o J`` over k values."""

    kind = "symmetric"

    def __init__(self, channel: SymmetricChannel):
        self.k = channel.k
        self.d, self.o = channel.diagonal, channel.off_diagonal
        self.a = self.d - self.o
        self.s = self.d + (self.k - 1) * self.o

    def rank(self, rtol: float) -> int:
        return _rank([(abs(self.a), self.k - 1), (abs(self.s), 1)], rtol)

    # the least-squares estimator  A = P^-1 = I / a - (o / (a s)) J
    def estimate(self, w: np.ndarray) -> np.ndarray:
        return (w - (self.o / self.s) * float(w.sum())) / self.a

    def matrix(self) -> np.ndarray:
        k = self.k
        check_memory(8.0 * k * k, f"the {k} x {k} estimator matrix", hint="use estimate(), variances() or mse()")
        A = np.full((k, k), -self.o / (self.a * self.s))
        A[np.diag_indices(k)] += 1.0 / self.a
        return A

    def covariance(self, f: np.ndarray, n: float, population: str) -> lr.Terms:
        """``A Sigma A^T`` in closed form, without cancellation (fixed population; sampled users add
        ``(diag f - f f^T) / n``).

        With the normalised rows ``p = d / s``, ``q = o / s`` (``s = d + (k - 1) o``), the counts of a fixed
        population have ``n Var(c_v / n) = f_v p (1 - p) + (sigma - f_v) q (1 - q)`` and, for ``v != w``,
        ``n Cov = -(q (p - q) (f_v + f_w) + q^2 sigma)``, ``sigma = sum f``, with ``1 - p = (k - 1) q`` and
        ``1 - q = p + (k - 2) q`` and ``p - q = a / s`` (``a = d - o``): every term a sum of non-negative
        products. Their rows sum to 0 (the number of reports is fixed), so ``J Sigma = 0`` and with
        ``A = (I - beta J) / a`` the covariance is ``Sigma / a^2``: a diagonal and three rank-one terms in
        ``f`` and ``1``. (The expansion through ``pi - a^2 f`` lost up to 1e-5 relative when ``1 - a`` is tiny,
        e.g. eps = 25.)"""
        a, o, s, k = self.a, self.o, self.s, self.k
        sigma = float(f.sum())
        p, q, gap = self.d / s, o / s, a / s
        scale = 1.0 / (a * a * n)
        var = (f * p * ((k - 1) * q) + (sigma - f) * q * (p + (k - 2) * q)) * scale
        c1, c2 = q * gap * scale, q * q * sigma * scale
        ones = np.ones(k)
        out = lr.Terms(var + 2.0 * c1 * f + c2)
        out.add(-c1, f, ones).add(-c1, ones, f).add(-c2, ones, ones)
        if population == "sampled":
            out.d = out.d + f / n
            out.add(-1.0 / n, f, f)
        return out

    # IBU: pi = P^T f = a f + o sum(f),  g = P (w / pi) = a ratio + o sum(ratio)
    def gradient(self, f: np.ndarray, data) -> tuple[np.ndarray, float]:
        w, obs = data
        pi = self.a * f + self.o * float(f.sum())
        ratio = np.zeros_like(w)
        ratio[obs] = w[obs] / pi[obs]
        loglik = float(np.sum(w[obs] * np.log(pi[obs])))
        return self.a * ratio + self.o * float(ratio.sum()), loglik

    def ibu_data(self, w: np.ndarray):
        return w, w > 0


# ----------------------------------------------------------------------------------- unary encodings
class UnaryModel:
    """k independent bits through F on one-hot inputs: ``P(v, y) = base(y) r(y_v)``."""

    kind = "unary"

    def __init__(self, channel: KroneckerOperator, F: MarkovOperator, hot: int, cold: int):
        self.channel = channel
        self.k = channel.shape[0]
        M = np.asarray(F.matrix, dtype=float)
        self.one = F.output_index(1)           # the factor's column of the bit value 1
        self.zero = 1 - self.one
        self.hot_row, self.cold_row = M[hot], M[cold]
        self.p = float(self.hot_row[self.one])   # P[bit v = 1 | v]
        self.q = float(self.cold_row[self.one])  # P[bit v = 1 | x], x != v

    def rank(self, rtol: float) -> int:
        """``P P^T = alpha I + beta J`` with, divided by ``s_cc^k`` (``s_xy = sum_b F(x, b) F(y, b)``),
        ``alpha + beta = s_hh / s_cc`` and ``beta = (s_hc / s_cc)^2``: singular values ``sqrt(alpha)`` (k - 1
        times) and ``sqrt(alpha + k beta)`` up to the common factor."""
        h, c = self.hot_row, self.cold_row
        shh, scc, shc = float(h @ h), float(c @ c), float(h @ c)
        beta = (shc / scc) ** 2
        alpha = max(shh / scc - beta, 0.0)
        return _rank([(math.sqrt(alpha), self.k - 1), (math.sqrt(alpha + self.k * beta), 1)], rtol)

    # ---- support statistic
    def check_support(self, rtol: float) -> None:
        if abs(self.p - self.q) <= rtol:
            raise InvalidMechanismError(f"bit 0 carries no information about input {self.channel.inputs[0]!r}: "
                                        f"p = q = {self.p:.6g}; the support estimator cannot be formed")

    def support_matrix(self) -> np.ndarray:
        k, m = self.k, self.channel.shape[1]
        check_memory(8.0 * k * m, f"the {k} x {m} estimator matrix over all outputs",
                     hint="use estimate_support(), variances() or mse()")
        bits = np.array(self.channel.outputs, dtype=float).T
        return bits / (self.p - self.q)

    def support_covariance(self, f: np.ndarray, n: float, population: str) -> lr.Terms:
        """Diagonal for a fixed population (independent bits, module notes); sampled adds ``(diag f - f f^T) / n``."""
        p, q = self.p, self.q
        diag = (f * p * (1.0 - p) + (1.0 - f) * q * (1.0 - q)) / (n * (p - q) ** 2)
        out = lr.Terms(diag)
        if population == "sampled":
            out.d = diag + f / n
            out.add(-1.0 / n, f, f)
        return out

    # ---- least squares over all 2^k outputs (statistic="counts")
    def positive(self) -> bool:
        return bool(np.all(self.cold_row > 0) and np.all(self.hot_row > 0))

    def _gram(self) -> tuple[float, float, float]:
        """``P P^T = s_cc^k (alpha I + beta J)`` (:meth:`rank`); returns alpha, beta and
        ``gamma = beta / (alpha + k beta)`` with ``(alpha I + beta J)^-1 = (I - gamma J) / alpha``."""
        h, c = self.hot_row, self.cold_row
        beta = (float(h @ c) / float(c @ c)) ** 2
        alpha = float(h @ h) / float(c @ c) - beta
        return alpha, beta, beta / (alpha + self.k * beta)

    def ls_estimate(self, Y: sp.csr_matrix, c: np.ndarray) -> np.ndarray:
        """``(P P^T)^-1 P w``: ``(P w)_v / s_cc^k = sum_y w_y b_y r(y_v)`` with ``b_y = prod_j F(c, y_j) / s_cc``
        (in logs; it may overflow to inf for large k, as the estimator itself does)."""
        alpha, _, gamma = self._gram()
        h, cold = self.hot_row, self.cold_row
        scc = float(cold @ cold)
        w = c / float(c.sum())
        ones = np.asarray(Y.sum(axis=1)).ravel()
        with np.errstate(over="ignore"):
            b = np.exp(ones * math.log(cold[self.one] / scc) + (self.k - ones) * math.log(cold[self.zero] / scc))
            wb = w * b
            r1, r0 = h[self.one] / cold[self.one], h[self.zero] / cold[self.zero]
            x = r0 * float(wb.sum()) + (r1 - r0) * np.asarray(Y.T @ wb).ravel()
            return (x - gamma * float(x.sum())) / alpha

    def ls_covariance(self, f: np.ndarray, n: float, population: str) -> lr.Terms:
        """``n Cov = kappa G^-1 M G^-1 - f f^T`` (sampled) or ``- diag(f)`` (fixed), where ``G = alpha I + beta J``,
        ``M = P diag(pi) P^T / t_ccc^k``, ``kappa = t_ccc^k / s_cc^(2k)`` (``t_xyz = sum_b F(x,b) F(y,b) F(z,b)``,
        ``A P^T = I`` and ``A pi = f``). ``M[v, v] = f_v t_hhh + (sigma - f_v) t_hhc t_hcc`` and, for v != w,
        ``M[v, w] = (f_v + f_w) t_hhc t_hcc + (sigma - f_v - f_w) t_hcc^3`` (divided by t_ccc; coordinate by
        coordinate, the hot ones of v, w and the user's value u): ``M = diag(m) + c1 (f 1^T + 1 f^T) + c2 J``.
        With ``X = I - gamma J``: ``X 1 = lam 1``, ``lam = 1 - gamma k``, and the expansion of k-RR's
        :meth:`SymmetricModel.covariance`. kappa may overflow to inf at large k (the variance is that large)."""
        alpha, _, gamma = self._gram()
        h, c = self.hot_row, self.cold_row
        t = {key: float(np.sum(a * b_ * d)) for key, (a, b_, d) in
             {"hhh": (h, h, h), "hhc": (h, h, c), "hcc": (h, c, c), "ccc": (c, c, c)}.items()}
        thhh, thhc, thcc = t["hhh"] / t["ccc"], t["hhc"] / t["ccc"], t["hcc"] / t["ccc"]
        k = self.k
        try:
            kappa = math.exp(k * (math.log(t["ccc"]) - 2.0 * math.log(float(c @ c))))
        except OverflowError:
            kappa = math.inf
        if not kappa < math.inf:  # every variance is beyond the doubles (kappa is the dominant factor)
            return lr.Terms(np.full(self.k, math.inf))
        sigma = float(f.sum())
        c1, c2 = thhc * thcc - thcc ** 3, sigma * thcc ** 3
        m = f * thhh + (sigma - f) * thhc * thcc - c2 - 2.0 * c1 * f
        lam = 1.0 - gamma * k
        Xf = f - gamma * sigma
        ones = np.ones(k)
        s = kappa / (alpha * alpha * n)
        out = lr.Terms(s * m)
        out.add(-s * gamma, m, ones).add(-s * gamma, ones, m)
        out.add(s * (gamma * gamma * float(m.sum()) + c2 * lam * lam), ones, ones)
        out.add(s * c1 * lam, Xf, ones).add(s * c1 * lam, ones, Xf)
        if population == "sampled":
            out.add(-1.0 / n, f, f)
        else:
            out.d = out.d - f / n
        return out

    def ls_matrix(self) -> np.ndarray:
        k, m = self.k, self.channel.shape[1]
        check_memory(16.0 * k * m, f"the {k} x {m} estimator matrix over all outputs",
                     hint="use estimate(), variances() or mse()")
        alpha, _, gamma = self._gram()
        P = np.asarray(self.channel.matrix, dtype=float) / float(self.cold_row @ self.cold_row) ** k
        return (P - gamma * P.sum(axis=0)) / alpha

    # ---- observed reports
    def reports(self, counts: Any, name: str = "counts"):
        """``(Y, c)``: a CSR matrix of the observed reports' ones (rows = distinct reports with a positive count,
        columns = bits) and their counts. ``counts`` is a mapping {bit tuple: count} (any size) or an array over
        all 2^k outputs (size-checked first)."""
        from .channels import _count
        k = self.k
        rows: list[np.ndarray] = []
        vals: list[float] = []
        fast = self._fast_reports(counts) if isinstance(counts, Mapping) and counts else None
        if fast is not None:
            bits, c = fast
            keep = c > 0
            if not np.any(keep):
                raise InvalidParameterError(f"{name} must have a positive total (got 0.0)")
            return sp.csr_matrix(bits[keep] == 1, dtype=float), c[keep]
        if isinstance(counts, Mapping):
            for label, value in counts.items():
                x = _count(value, f"{name}[{label!r}]")
                bits = self._bits_of(label, name)
                if x > 0:
                    rows.append(bits)
                    vals.append(x)
        else:
            m = self.channel.shape[1]
            check_memory(8.0 * m, f"a vector of counts over the {m} outputs",
                         hint="pass the counts as a mapping {report (a bit tuple): count} of the observed reports")
            from .channels import check_counts_array
            vec = check_counts_array(counts, m, name)
            for j in np.flatnonzero(vec):
                j = int(j)
                col = [(j >> (k - 1 - v)) & 1 for v in range(k)]  # factor column per coordinate (last fastest)
                rows.append(np.flatnonzero(np.array(col) == self.one))
                vals.append(float(vec[j]))
        c = np.array(vals, dtype=float)
        if not float(c.sum()) > 0.0:
            raise InvalidParameterError(f"{name} must have a positive total (got {float(c.sum())!r})")
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([r.size for r in rows])
        indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        Y = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(len(rows), k))
        return Y, c

    def _fast_reports(self, counts: Mapping):
        """``(bits, counts)`` in one vectorised pass when every label is a tuple of k ints 0 / 1 and every count a
        finite number >= 0; else None (the per-report loop then names the first bad entry)."""
        k = self.k
        if not all(type(y) is tuple and len(y) == k for y in counts):
            return None
        values = list(counts.values())
        if not all(type(v) in (int, float) or isinstance(v, (np.integer, np.floating)) for v in values):
            return None
        c = np.array(values, dtype=float)
        if not np.all(np.isfinite(c) & (c >= 0.0)):
            return None
        check_memory(8.0 * len(values) * k, f"{len(values)} reports of {k} bits")
        bits = np.array(list(counts))
        if bits.dtype.kind not in "iu" or bits.shape != (len(values), k) or not np.all((bits == 0) | (bits == 1)):
            return None
        return bits, c

    def _bits_of(self, label: Any, name: str) -> np.ndarray:
        k = self.k
        if not isinstance(label, tuple) or len(label) != k:
            raise InvalidParameterError(f"{name} has the label {_short(label)}, which is not an output of the "
                                        f"channel (a tuple of {k} bits)")
        arr = np.asarray(label)
        if arr.dtype == object or arr.dtype.kind not in "iub" or not np.all((arr == 0) | (arr == 1)):
            raise InvalidParameterError(f"{name} has the label {_short(label)}, which is not an output of the "
                                        f"channel (a tuple of {k} bits 0 / 1)")
        return np.flatnonzero(arr == 1)

    def support_counts(self, Y: sp.csr_matrix, c: np.ndarray) -> np.ndarray:
        return np.asarray(Y.T @ c).ravel()

    # ---- IBU on the observed reports
    def ibu_data(self, Y: sp.csr_matrix, c: np.ndarray):
        if not (np.all(self.cold_row > 0) and np.all(self.hot_row > 0)):
            return None  # a zero likelihood somewhere: the dense path handles the support exactly
        w = c / float(c.sum())
        r1 = self.hot_row[self.one] / self.cold_row[self.one]
        r0 = self.hot_row[self.zero] / self.cold_row[self.zero]
        ones = np.asarray(Y.sum(axis=1)).ravel()
        logbase = ones * math.log(self.cold_row[self.one]) + (self.k - ones) * math.log(self.cold_row[self.zero])
        return Y.tocsr(), Y.T.tocsr(), w, r0, r1, float(w @ logbase)

    def gradient(self, f: np.ndarray, data) -> tuple[np.ndarray, float]:
        Y, Yt, w, r0, r1, wlogbase = data
        pit = r0 * float(f.sum()) + (r1 - r0) * (Y @ f)
        ratio = w / pit
        g = r0 * float(ratio.sum()) + (r1 - r0) * (Yt @ ratio)
        return g, float(w @ np.log(pit)) + wlogbase


def _short(label: Any) -> str:
    text = repr(label)
    return text if len(text) <= 60 else text[:57] + "..."
