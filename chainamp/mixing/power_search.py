"""The mixing time of a dense stored chain: squares, then a bisection on a few rows (used by ``mixing_time``).

``mixing_time`` needs the smallest t with ``gamma(K^t) <= eps`` for the EXACT powers. Since ``gamma(K^t)`` is
non-increasing in t (``gamma(K^{t+1}) <= gamma(K^t) gamma(K)``, Dobrushin 1956), it suffices to certify two
facts: ``gamma(K^{t-1}) > eps`` and ``gamma(K^t) <= eps``. The first needs only ONE pair of rows of
``K^{t-1}`` whose certified total variation exceeds eps; the second needs all of ``K^t``. So:

1. the squares ``K^(2^j)`` are formed while a known pair (or a pair found by reference rows, a k-center sweep)
   certifies ``gamma > eps`` on them;
2. below the first square not so certified, t is located by binary lifting on the ROWS of the known pairs only
   (a few rows times a stored square per step: ``O(k n^2)`` instead of ``n^3``), every accepted step certified
   by a pair;
3. only ``K^t`` itself is formed (one product per binary digit of t, from the stored squares) and decided in
   full (:func:`.tv_bounds.tv_decide`, else the pair scan of :func:`.coefficients.dobrushin`). When it is not
   ``<= eps``, its attaining pair joins the known pairs and the search resumes above t (from the formed
   ``K^t``: one product per binary digit of the difference).

Products: about ``log2 t`` squares plus ``popcount(t) - 1`` for the candidate (the row blocks of the bisection
cost a few per cent of one), against one per bisection step before. A square with few non-zeros is a CSR right
factor; an exactly symmetric square (lazy walks on regular graphs) is squared by BLAS ``dsyrk`` (half the
multiplications, mirrored: the same dot products, hence the same error bound).

Soundness. Every power or row block formed carries an l1 bound per row on its distance to the exact power
(``err``): K's own rows stand for their normalised rows (``|s_x - 1|``), and a product of stored factors with
errors ``t_a``, ``t_b`` (inner dimension n) has error at most ``t_a (1 + t_b) + t_b + (n + 2) u (1 + t_a)(1 + t_b)``,
``u = 2^-53``, widened by ``1 + 8u`` (the same rule as ``mixing_time``'s products, :mod:`.guarantees`). Two
rows off by at most ``err`` each in l1 have a total variation within ``err`` of the exact one, so a pair
certifies ``gamma(exact) > eps`` only when its certified lower bound minus err exceeds eps, and a power is
``<= eps`` only when its certified gamma plus err is at most eps. The answer is therefore never below the exact
mixing time, and equals it whenever both certificates succeed (a decision that cannot be certified counts as
``> eps``, which only adds steps).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .coefficients import dobrushin
from .pairwise import _U, _eval_pairs
from .tv_bounds import _distances, _doeblin_bound, tv_decide
from .._numerics import check_memory, single_blas_thread
from ..errors import InvalidParameterError
from ..operators import MarkovOperator

__all__: list[str] = []

#: known pairs kept (the most recent first); their rows are what the bisection multiplies
_MAX_PAIRS = 48
#: reference rows of the cheap pair search on a formed square (mean row, then farthest-first)
_SEARCH_REFERENCES = 4
#: each reference row's farthest rows taken as candidate partners
_FARTHEST = 8
#: above this fraction of all pairs left open by the mean row, :func:`.tv_decide` is skipped for the full scan
_FLAT_FRACTION = 0.5
#: square a stored power with few non-zeros as CSR @ CSR (each entry the same sum of its non-zero terms as the dense
#: product's: the same error bound); False: dense @ CSR, as before issue 20's second round (benchmarks compare)
_SPARSE_SQUARES = True
#: candidates decided above eps before the search falls back to plain bisection (bounded: one product and one full
#: decision per binary digit of the interval left)
_MAX_CANDIDATES = 3


def product_error(ta: float, tb: float, n: int) -> float:
    """l1 bound per row of ``fl(A B)`` against the exact product of the exact factors, from the factors' bounds
    ``ta`` and ``tb`` (rows of non-negative entries summing to about 1, inner dimension n).

    >>> product_error(0.0, 0.0, 1000) > 1000 * 2.0**-53
    True
    """
    u = _U
    return (ta * (1.0 + tb) + tb + (n + 2) * u * (1.0 + ta) * (1.0 + tb)) * (1.0 + 8 * u)


class _Search:
    """State of one search: the stored squares with their errors and the known pairs."""

    def __init__(self, K: MarkovOperator, eps: float, limit: int, err0: float, bar) -> None:
        self.K, self.e, self.limit, self.bar = K, eps, limit, bar
        self.n = K.shape[0]
        self.squares = [np.asarray(K._data)]   # squares[j] = stored K^(2^j)
        self.errs = [err0]                     # their l1 error bounds per row
        self.thin: dict = {}                   # j -> CSR copy of a square with few non-zeros (cheap right factor)
        self.pairs: list[tuple[int, int]] = []
        self._note_thin(0)
        A = self.squares[0]
        self.symmetric = bool(np.array_equal(A, A.T))  # then its squares by dsyrk are symmetric too (mirrored)

    # ------------------------------------------------------------------ products
    def _note_thin(self, j: int) -> None:
        A = self.squares[j]
        if np.count_nonzero(A) <= 0.1 * A.size:
            self.thin[j] = sp.csr_matrix(A)

    def times(self, X: np.ndarray, err: float, j: int, count: bool = True) -> tuple[np.ndarray, float]:
        """``X K^(2^j)`` with its error bound (a CSR right factor when the square has few non-zeros)."""
        right = self.thin.get(j)
        if X.shape[0] == self.n:  # the squares held, the factor and the product
            check_memory(8.0 * self.n * self.n * (len(self.squares) + 2), f"the dense {self.n} x {self.n} powers of K")
        out = np.asarray(X @ right) if right is not None else X @ self.squares[j]
        if count:
            self.bar.update(1)
        return out, product_error(err, self.errs[j], self.n)

    def square(self) -> None:
        j = len(self.squares) - 1
        S = self.squares[j]
        if self.symmetric and j not in self.thin and np.array_equal(S, S.T):  # exactly (a sparse product may not be)
            A, err = self._symmetric_square(j)
        elif j in self.thin and _SPARSE_SQUARES:  # CSR @ CSR: O(n w^2) for w non-zeros per row, not O(n^2 w)
            check_memory(8.0 * self.n * self.n * (len(self.squares) + 2), f"the dense {self.n} x {self.n} powers of K")
            A = self.thin[j] @ self.thin[j]
            A = A.toarray() if sp.issparse(A) else np.asarray(A)
            err = product_error(self.errs[j], self.errs[j], self.n)
            self.bar.update(1)
        else:
            A, err = self.times(self.squares[j], self.errs[j], j)
        self.squares.append(A)
        self.errs.append(err)
        self._note_thin(j + 1)

    def _symmetric_square(self, j: int) -> tuple[np.ndarray, float]:
        """``S S`` for an exactly symmetric stored S (every square of a symmetric K is one): BLAS ``dsyrk`` forms the
        upper triangle only (half the multiplications), mirrored. Each entry is the same length-n dot product of
        non-negative terms as in ``S @ S``, so the product's error bound is unchanged."""
        from scipy.linalg import blas

        S = self.squares[j]
        check_memory(8.0 * self.n * self.n * (len(self.squares) + 3), f"the dense {self.n} x {self.n} powers of K")
        U = blas.dsyrk(1.0, S.T, trans=1)  # (S^T)^T S^T = S S^T = S S; S.T is Fortran-ordered: no copy
        out = _mirror_lower(U.T)  # U is Fortran-ordered with its upper triangle set: U.T is C-ordered, lower set
        self.bar.update(1)
        return out, product_error(self.errs[j], self.errs[j], self.n)

    def power(self, t: int, base: tuple | None = None) -> tuple[np.ndarray, float]:
        """Stored ``K^t`` (t >= 1) from the squares, largest first (the sparse small ones as right factors), or from
        ``base = (s, K^s, err)`` (s < t) times the squares of ``t - s`` when that takes fewer products."""
        bits = [j for j in range(t.bit_length()) if t >> j & 1]
        A, err = self.squares[bits[-1]], self.errs[bits[-1]]
        rest = bits[:-1]
        if base is not None and 0 < base[0] < t:
            d = t - base[0]
            more = [j for j in range(d.bit_length()) if d >> j & 1]
            if len(more) < len(rest) + 1:
                A, err, rest = base[1], base[2], more
        for j in reversed(rest):
            A, err = self.times(A, err, j)
        return A, err

    # ------------------------------------------------------------------ certificates
    def _lows(self, rows: np.ndarray, I: np.ndarray, J: np.ndarray, err: float) -> np.ndarray:
        """Certified lower bounds on the exact total variations of pairs (I, J) of the rows given."""
        vals, ups = _eval_pairs(rows, I, J, 0.0)
        # D_1 of stored rows is |A_i - A_j|_1 / 2 + (s_i - s_j) / 2, |s_i - s_j| <= 2 err: minus err for that, err more
        # for the rows' distance to the exact ones
        return np.nextafter(vals - (ups - vals) - 2.0 * err, -np.inf)

    def add_pair(self, pair) -> None:
        pair = (int(pair[0]), int(pair[1]))
        if pair[0] == pair[1]:
            return
        if pair in self.pairs:
            self.pairs.remove(pair)
        self.pairs.insert(0, pair)
        del self.pairs[_MAX_PAIRS:]

    def block(self):
        """The row indices of the known pairs and the pairs in block coordinates."""
        rows = np.array(sorted({i for p in self.pairs for i in p}), dtype=np.intp)
        where = {int(r): k for k, r in enumerate(rows)}
        I = np.array([where[p[0]] for p in self.pairs], dtype=np.intp)
        J = np.array([where[p[1]] for p in self.pairs], dtype=np.intp)
        return rows, I, J

    def pairs_above(self, rows: np.ndarray, I: np.ndarray, J: np.ndarray, err: float) -> bool:
        return bool(I.size) and float(self._lows(rows, I, J, err).max()) > self.e

    def search_pairs(self, A: np.ndarray, err: float, known: bool = True) -> tuple[bool, np.ndarray | None]:
        """Known pairs, then reference rows' farthest partners (k-center): ``(above, d)`` with above True when a
        pair certifies ``gamma(exact) > eps`` on the formed power A (the best candidates join the known pairs) and
        d the rows' rounded-up distances to the mean row (None when the known pairs settled it)."""
        if known and self.pairs:
            rows, I, J = self.block()
            if self.pairs_above(A[rows], I, J, err):
                return True, None
        mean_d = _distances(A, A.mean(axis=0))
        nearest = mean_d.copy()
        cand = []
        for _ in range(min(_SEARCH_REFERENCES, self.n)):
            r = int(np.argmax(nearest))
            d = _distances(A, A[r])
            far = np.argpartition(d, -_FARTHEST)[-_FARTHEST:] if self.n > _FARTHEST else np.arange(self.n)
            cand.extend((r, int(f)) for f in far if f != r)
            np.minimum(nearest, d, out=nearest)
        if not cand:
            return False, mean_d
        lows = self._lows(A, np.array([c[0] for c in cand]), np.array([c[1] for c in cand]), err)
        for k in np.argsort(lows):
            self.add_pair(cand[k])  # the best last: first in the list
        return float(lows.max()) > self.e, mean_d

    def next_square_above(self, j: int) -> bool:
        """Whether the known pairs certify ``gamma(exact K^(2^(j+1))) > eps`` from their rows of the formed
        ``K^(2^j)`` times it (after one refresh of the pairs by :meth:`search_pairs` on ``K^(2^j)``)."""
        A = self.squares[j]
        for attempt in range(2):
            if self.pairs:
                rows, I, J = self.block()
                with single_blas_thread():
                    Y, err = self.times(A[rows], self.errs[j], j, count=False)
                if self.pairs_above(Y, I, J, err):
                    return True
            if attempt == 0:
                known = list(self.pairs)
                self.search_pairs(A, self.errs[j], known=False)
                if self.pairs == known:
                    return False
        return False

    def decide(self, A: np.ndarray, err: float) -> tuple[bool, float]:
        """``(above, upper)``: above False only when ``gamma(exact) <= eps`` is certified (``upper`` is then a
        certified bound on it); True otherwise, the attaining pair joining the known pairs.

        Cheapest first: the known pairs and the k-center candidates (above), the Doeblin bound and the mean row
        (``TV(i, j) <= d(i, nu) + d(j, nu)``, below); then :func:`.tv_decide` unless the mean row leaves most
        pairs open (a flat power, all rows alike far apart: its references would too), then the full scan."""
        e = self.e
        e_low = math.nextafter(e - err, -math.inf) if err > 0.0 else e
        if e_low < 0.0:  # eps below the rows' error: identical stored rows do not make the exact ones identical
            return True, 1.0
        doeblin = min(_doeblin_bound(A), 1.0)
        if doeblin <= e_low:
            return False, _up_sum(doeblin, err)
        above, d = self.search_pairs(A, err)
        if above:
            return True, 1.0
        d = np.sort(d)
        top = float(np.nextafter((d[-1] + d[-2]) * (1.0 + 2.0 * _U), np.inf))
        if top <= e_low:
            return False, _up_sum(top, err)
        # how many pairs i < j the mean row leaves open (d_i + d_j > e_low; d sorted): only chooses the route
        n = d.size
        partner = np.searchsorted(d, e_low - d, side="right")
        open_pairs = (int(np.maximum(n - np.maximum(partner, np.arange(n) + 1), 0).sum()))
        if open_pairs <= _FLAT_FRACTION * n * (n - 1) / 2:
            found = tv_decide(A, e_low)
            if found is not None:
                verdict, got, pair = found
                if verdict is not None:
                    if verdict:
                        self.add_pair(pair)
                    return bool(verdict), _up_sum(got, err)
        res = dobrushin(MarkovOperator._trusted(A, self.K.inputs, self.K.outputs), progress=False)
        self.add_pair((self.K.inputs.index(res.pair[0]), self.K.inputs.index(res.pair[1])))
        bound = _up_sum(res.gamma, err)
        return bound > e, bound

    def bisect(self, lo: int, lo_rows: np.ndarray, lo_err: float, hi: int):
        """Binary lifting in ``(lo, hi)`` with every trial ``K^lo K^(2^b)`` formed and decided in full (one product
        and one decision per binary digit of ``hi - lo``): ``(lo, K^lo, err, hi, settled)``, settled True when
        ``hi = lo + 1`` was itself decided ``<= eps``."""
        settled = False
        for b in range(max(hi - lo - 1, 1).bit_length() - 1, -1, -1):
            if lo + 2**b >= hi:
                continue
            T, err = self.times(lo_rows, lo_err, b)
            above, _ = self.decide(T, err)
            if above:
                lo, lo_rows, lo_err = lo + 2**b, T, err
            else:
                hi, settled = lo + 2**b, True
        return lo, lo_rows, lo_err, hi, settled and hi == lo + 1

    # ------------------------------------------------------------------ the search
    def run(self) -> int:
        e, limit = self.e, self.limit
        lo, lo_rows = 0, None   # gamma(K^lo) > eps certified (K^0 = I); rows of K^lo at the known pairs
        while True:
            # 1. squares while a pair certifies them above eps; the next square is probed on the pairs' rows
            # first (``rows @ square``) and formed only when they certify it above eps too
            j = len(self.squares) - 1
            known = lo == 2**j  # K^lo is certified above (formed, the last square)
            while True:
                if not known and not self.search_pairs(self.squares[j], self.errs[j])[0]:
                    hi, hi_j = 2**j, j  # tentative: not certified above (formed)
                    break
                lo = 2**j
                if lo >= limit:
                    raise InvalidParameterError(
                        f"K does not mix to eps={e!r} within max_steps={limit} steps (gamma(K^{lo}) > eps); "
                        "it may be periodic or reducible")
                if not self.next_square_above(j):
                    hi, hi_j = 2**(j + 1), None  # tentative, not formed
                    break
                self.square()
                j, known = j + 1, True
            lo_j = j if hi_j is None else j - 1
            lo_rows = self.squares[lo_j] if lo_j >= 0 else None
            lo_err = self.errs[lo_j] if lo_j >= 0 else 0.0
            failed = 0
            while True:
                if failed >= _MAX_CANDIDATES and lo_rows is not None and hi - lo > 1:
                    # the known pairs keep missing: plain bisection, every step formed and decided in full
                    lo, lo_rows, lo_err, hi, settled = self.bisect(lo, lo_rows, lo_err, hi)
                    if settled:
                        if hi > limit:
                            raise InvalidParameterError(
                                f"K does not mix to eps={e!r} within max_steps={limit} steps (needs {hi})")
                        return hi
                # 2. binary lifting on the known pairs' rows: the largest t < hi they certify above eps
                t, err_t = lo, lo_err
                if lo_rows is not None and self.pairs:
                    idx, I, J = self.block()
                    X = lo_rows[idx]
                    with single_blas_thread():  # a few rows times n x n: BLAS threads only wait on a shared machine
                        for b in range(max(hi - lo - 1, 1).bit_length() - 1, -1, -1):
                            if t + 2**b >= hi:
                                continue
                            Y, err_y = self.times(X, err_t, b, count=False)
                            if self.pairs_above(Y, I, J, err_y):
                                t, X, err_t = t + 2**b, Y, err_y
                cand = t + 1
                # 3. the candidate in full
                if cand == hi:
                    if hi_j is None:
                        self.square()
                        hi_j = len(self.squares) - 1
                    A, err = self.squares[hi_j], self.errs[hi_j]
                else:
                    A, err = self.power(cand, None if lo_rows is None else (lo, lo_rows, lo_err))
                above, upper = self.decide(A, err)
                if not above:
                    if cand > limit:
                        raise InvalidParameterError(
                            f"K does not mix to eps={e!r} within max_steps={limit} steps (needs {cand})")
                    return cand
                lo, lo_rows, lo_err = cand, A, err
                failed += 1
                if cand == hi:
                    break  # the square hi is above too: more squares


def _mirror_lower(out: np.ndarray, block: int = 128) -> np.ndarray:
    """Copy the lower triangle of a square array onto its upper one, in place, by blocks (no n x n temporary: about
    20x faster than ``triu(U) + triu(U, 1).T`` at n = 1000, whose fresh arrays cost page faults).

    >>> _mirror_lower(np.array([[1.0, 0.0], [2.0, 3.0]]))
    array([[1., 2.],
           [2., 3.]])
    """
    n = out.shape[0]
    for i0 in range(0, n, block):
        diag = out[i0:i0 + block, i0:i0 + block]
        upper = np.triu_indices(diag.shape[0], 1)
        diag[upper] = diag.T[upper]
        for j0 in range(i0 + block, n, block):
            out[i0:i0 + block, j0:j0 + block] = out[j0:j0 + block, i0:i0 + block].T
    return out


def _up_sum(a: float, b: float) -> float:
    """``a + b`` rounded up (capped at 1: a coefficient)."""
    return min(math.nextafter(a + b, math.inf) if b > 0.0 else a, 1.0)


def dense_mixing_time(K: MarkovOperator, eps: float, limit: int, err0: float, bar) -> int:
    """Smallest t with ``gamma(exact K^t) <= eps`` for a dense stored K (n > 2), certified as the module says;
    ``err0`` bounds K's rows' l1 distance to their normalised rows, ``bar`` counts the n x n products.

    Examples
    --------
    >>> from chainamp._numerics import progress_bar
    >>> K = MarkovOperator(0.9 * np.eye(3) + 0.1 / 3)
    >>> with progress_bar(None, "mixing time", progress=False) as bar:
    ...     dense_mixing_time(K, 0.25, 2**40, 0.0, bar)  # gamma(K^t) = 0.9^t
    14
    """
    return _Search(K, eps, limit, err0, bar).run()
