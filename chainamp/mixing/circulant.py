"""The mixing time of a circulant chain from its first row (used by ``mixing_time``).

A chain is circulant when ``K(x, y) = c((y - x) mod n)`` for one row c: a random walk on a cycle or on any Cayley
graph of the cyclic group (rings, circulant graphs, a lazy walk on ``Z_n``). Then every power is circulant,
``K^a K^b = circ(c_a circ(c_b))`` (row 0 of a product of circulants is ``c_a`` times the other factor), and every
pair of rows is a shift of a pair through row 0: ``TV(K^t_x, K^t_x') = TV(c_t, roll(c_t, x' - x))``, itself equal
for the shifts s and n - s. So a power costs one row times an n x n matrix (``O(n^2)``, against ``O(n^3)``) and its
Dobrushin coefficient ``n / 2`` pairs of rows instead of ``n (n - 1) / 2``: the whole search below is ``O(n^2 log t)``
and a few vectors of memory. The lazy walk on the 1000-cycle (t = 164,936 at eps = 0.25) takes about 40 steps of
about a millisecond.

Search: the squares ``c_(2^j)`` until one is certified ``gamma <= eps``, then binary lifting below it: about
``2 log2 t`` decisions, each first on the shift that attained the last full one (``O(n)``: settles most powers above
eps), else on all n / 2 shifts (``O(n^2)``).

Soundness: the same as :mod:`.power_search`. Every row of the stored ``circ(v)`` is a shift of v and every row of
the exact power a shift of its row 0, so one l1 bound ``err`` serves all rows: K's row-sum deviation (the rows of a
circulant K have the same entries, hence the same exact sum), then for each product
:func:`.power_search.product_error` (each entry of ``v circ(w)`` is a sum of n non-negative products, like an entry
of a matrix product). Rows of equal exact sums have ``D_1(p || q) = |p - q|_1 / 2`` in both orders; a power is
``<= eps`` only when its certified gamma plus ``err`` is at most eps, and a decision that cannot be certified counts
as ``> eps``, which only adds steps. The answer is the first t certified ``<= eps`` with ``t - 1`` decided above: it
is never below the exact mixing time and equals it whenever the decision at ``t - 1`` is certified above too.
"""

from __future__ import annotations

import numpy as np

from .pairwise import _U
from .power_search import _up_sum, product_error
from ..errors import InvalidParameterError

__all__: list[str] = []


def circulant_view(c: np.ndarray) -> np.ndarray:
    """The read-only n x n circulant matrix ``circ(c)[x, y] = c[(y - x) mod n]`` as a strided view of ``[c, c]``
    (2n numbers; row x starts at position ``n - x``).

    >>> circulant_view(np.array([0.5, 0.25, 0.25]))
    array([[0.5 , 0.25, 0.25],
           [0.25, 0.5 , 0.25],
           [0.25, 0.25, 0.5 ]])
    """
    n = c.size
    cc = np.concatenate([c, c])
    step = cc.strides[0]
    return np.lib.stride_tricks.as_strided(cc[n:], shape=(n, n), strides=(-step, step), writeable=False)


def circulant_row(A: np.ndarray) -> np.ndarray | None:
    """Row 0 of a dense square A when A is exactly circulant (every stored entry equal to ``A[0, (y - x) mod n]``),
    else None. ``O(n^2)`` comparisons, the second row first (most matrices fail there).

    >>> circulant_row(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]))
    array([0.5, 0.5, 0. ])
    >>> circulant_row(np.array([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])) is None
    True
    """
    n = A.shape[0]
    if A.ndim != 2 or A.shape[1] != n or n < 2:
        return None
    c = np.array(A[0], dtype=float)
    if not np.array_equal(A[1], np.roll(c, 1)):
        return None
    return c if np.array_equal(A, circulant_view(c)) else None


#: shifts whose rows are formed at once in the full decision (a block of this many rows of n numbers)
_BLOCK = 64


def shift_divergences(v: np.ndarray, shifts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Certified lower and upper bounds on ``D_1(circ(v)_0 || circ(v)_s) = sum_y [v_y - v_(y - s)]_+`` for each shift s.

    Each term ``fl(p - q)`` is within ``u |p - q|`` of the exact one (a difference never underflows inexactly) and
    the clipping is exact; a sum of m non-negative terms has relative error at most ``(m - 1) u``: the bounds are
    the computed sum times ``1 -+ (m + 2) u``, pushed one float outward (a computed 0 is exact: every term's
    difference rounded to at most 0 is exactly at most 0). By blocks of shifts (no n x n array).

    >>> lo, up = shift_divergences(np.array([0.5, 0.25, 0.25]), np.array([1]))
    >>> bool(lo[0] <= 0.25 <= up[0])
    True
    """
    n = v.size
    V = circulant_view(v)
    vals = np.empty(shifts.size)
    for a in range(0, shifts.size, _BLOCK):
        W = V[shifts[a:a + _BLOCK]]  # a copy: rows roll(v, s)
        np.subtract(v, W, out=W)
        np.maximum(W, 0.0, out=W)
        vals[a:a + W.shape[0]] = W.sum(axis=1)
    rel = (n + 2) * _U
    # a computed sum 0 is exact: every fl(p - q) <= 0 means p <= q (a rounded difference keeps its sign)
    up = np.where(vals > 0.0, np.nextafter(vals * (1.0 + rel), np.inf), 0.0)
    return np.nextafter(vals * (1.0 - rel), -np.inf), up


def sparse_circulant_row(A) -> np.ndarray | None:
    """Row 0 (dense) of a square scipy.sparse A when A is exactly circulant (explicit zeros ignored), else None:
    every row holds row 0's non-zeros shifted by its index. ``O(nnz log w)`` for w non-zeros per row.

    >>> import scipy.sparse as sp
    >>> sparse_circulant_row(sp.csr_matrix([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]))
    array([0.5, 0.5, 0. ])
    """
    import scipy.sparse as sp

    n = A.shape[0]
    if A.ndim != 2 or A.shape[1] != n or n < 2:
        return None
    A = sp.csr_matrix(A, copy=True)
    A.sum_duplicates()  # duplicates summed, indices sorted
    A.eliminate_zeros()
    counts = np.diff(A.indptr)
    w = int(counts[0])
    if w == 0 or np.any(counts != w):
        return None
    cols = A.indices.reshape(n, w).astype(np.int64)
    vals = A.data.reshape(n, w)
    want = (cols[0][None, :] + np.arange(n, dtype=np.int64)[:, None]) % n  # row x: row 0's columns + x
    order = np.argsort(want, axis=1, kind="stable")
    if not np.array_equal(np.take_along_axis(want, order, axis=1), cols):
        return None
    back = np.argsort(order, axis=1)  # row x's k-th stored value must be row 0's value at that column
    if not np.array_equal(np.broadcast_to(vals[0], (n, w)), np.take_along_axis(vals, back, axis=1)):
        return None
    c = np.zeros(n)
    c[cols[0]] = vals[0]
    return c


def _above(v: np.ndarray, err: float, eps: float, witness: list) -> bool:
    """False only when ``gamma(exact power) <= eps`` is certified from its stored row 0 ``v`` (l1 error ``err``):
    the largest certified ``D_1`` over the shifts s <= n / 2, plus err. First the shift that attained the last full
    decision (``witness[0]``): its certified lower bound minus 2 err above eps settles True in O(n)."""
    n = v.size
    if err > 0.0 and eps - err < 0.0:
        return True
    low, _ = shift_divergences(v, np.array(witness))
    if float(np.nextafter(low[0] - 2.0 * err, -np.inf)) > eps:
        return True
    shifts = np.arange(1, n // 2 + 1)
    lows, ups = shift_divergences(v, shifts)
    witness[0] = int(shifts[np.argmax(lows)])
    return _up_sum(min(float(ups.max()), 1.0), err) > eps


def circulant_mixing_time(c: np.ndarray, eps: float, limit: int, err0: float, bar) -> int:
    """Smallest t with ``gamma(exact K^t) <= eps`` for the circulant K with row 0 ``c`` (n > 2, K itself ``> eps``
    already known to the caller or decided here), certified as the module says; ``err0`` bounds K's rows' l1
    distance to their normalised rows, ``bar`` counts the products (row times circulant).

    Examples
    --------
    >>> from chainamp._numerics import progress_bar
    >>> c = np.zeros(8)
    >>> c[[7, 0, 1]] = 0.25, 0.5, 0.25  # the lazy walk on the 8-cycle
    >>> with progress_bar(None, "mixing time", progress=False) as bar:
    ...     circulant_mixing_time(c, 0.25, 2**40, 0.0, bar)
    10
    """
    n = c.size
    c = np.asarray(c, dtype=float)

    def times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        bar.update(1)
        return a @ circulant_view(b)

    squares, errs = [c], [err0]   # squares[j] = stored row 0 of K^(2^j)
    witness = [n // 2]            # the shift of the last full decision's best pair
    while _above(squares[-1], errs[-1], eps, witness):
        if 2 ** (len(squares) - 1) >= limit:
            raise InvalidParameterError(
                f"K does not mix to eps={eps!r} within max_steps={limit} steps "
                f"(gamma(K^{2 ** (len(squares) - 1)}) > eps); it may be periodic or reducible")
        squares.append(times(squares[-1], squares[-1]))
        errs.append(product_error(errs[-1], errs[-1], n))
    j = len(squares) - 1
    if j == 0:
        if limit < 1:
            raise InvalidParameterError(f"K does not mix to eps={eps!r} within max_steps={limit} steps (needs 1)")
        return 1
    lo, v, err = 2 ** (j - 1), squares[j - 1], errs[j - 1]  # K^lo counted above; K^(2^j) certified <= eps
    for b in range(j - 2, -1, -1):
        w = times(v, squares[b])
        w_err = product_error(err, errs[b], n)
        if _above(w, w_err, eps, witness):
            lo, v, err = lo + 2**b, w, w_err
    if lo + 1 > limit:
        raise InvalidParameterError(f"K does not mix to eps={eps!r} within max_steps={limit} steps (needs {lo + 1})")
    return lo + 1
