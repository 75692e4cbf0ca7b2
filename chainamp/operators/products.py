"""Rounding error of operator products that chainamp forms itself.

An operator a user passes is taken as exact: every coefficient is a bound for
the matrix as stored. Products chainamp computes (a list of post-processing
steps, ``K^t`` over steps, the pipeline matrix ``M K``) are not exact, and the
bounds must cover the difference. For non-negative matrices the error has a
simple entrywise form, tracked here:

    true = stored (1 +- rel) +- absolute        (entrywise),

plus whether the non-zero pattern (support) of the stored product is the true one.

Derivation. Entries are sums of non-negative products, so there is no
cancellation: ``fl(sum_k a_k b_k)`` is within ``gamma_n = n u / (1 - n u)``
relative of the exact sum, except for products that underflow (below the
smallest normal double), each of which is off by at most ``2^-1074``. With
factors themselves known to ``(rel_A, abs_A)`` and ``(rel_B, abs_B)`` (entries
at most 1 and rows summing to about 1), the product is known to
``rel = (1 + rel_A)(1 + rel_B)(1 + gamma_n) - 1`` and
``abs <= 2 n (abs_A + abs_B) + n 2^-1074`` (the last term only if some product
of positive entries can underflow). A stored zero is a true zero unless
something underflowed, so the support is exact when the factors' supports are
and no product can underflow, or when the stored pattern equals the Boolean
product of the factors' patterns.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._numerics import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_memory
from .markov import MarkovOperator
from .product_error import EXACT, ProductError  # the result class, below this module and .structured_products
from .structured import StructuredOperator
from .structured_products import structured_multiply, structured_operator_error

__all__ = ["ProductError", "EXACT", "multiply", "smallest_positive", "operator_error"]

_SMALLEST_NORMAL = 2.0**-1022
#: A sparse left factor denser than this is densified before a product (the product is nearly full anyway).
DENSE_FILL = 0.25


def smallest_positive(K: MarkovOperator) -> float:
    """Smallest positive entry of K (1.0 if K has none, which cannot happen for a valid operator)."""
    if getattr(K, "row_stats", None) is not None:  # a dask-backed operator: from its validation pass
        return K.row_stats.min_positive
    if isinstance(K, StructuredOperator):  # from its structure (.structured_products)
        return float(K.smallest_positive())
    data = K.sparse.data if K.is_sparse else K.matrix
    pos = data[data > 0]
    return float(pos.min()) if pos.size else 1.0


def operator_error(K: MarkovOperator) -> ProductError:
    """Error of a stored operator against the Markov operator it stands for: its rows normalised.

    Rows are accepted when they sum to 1 within ``row_sum_atol``; the operator they
    stand for has rows ``K_x / s_x``. With ``rho >= max_x |s_x - 1|`` (the float row
    sums plus their own summation error), normalising moves every entry by a factor
    in ``[1/(1 + rho), 1/(1 - rho)]``: a relative error ``rho / (1 - rho)``.

    >>> operator_error(MarkovOperator([[1.0, 0.0], [0.0, 1.0]])).rel
    0.0
    >>> 0 < operator_error(MarkovOperator([[1.0, 9e-10], [1.0, 0.0]])).rel < 1e-9
    True
    """
    if isinstance(K, StructuredOperator):  # exact row sums, never densified
        return structured_operator_error(K)
    stats = getattr(K, "row_stats", None)  # a dask-backed operator: from its validation pass, never densified
    if stats is not None:
        sums, counts, exact_entries = stats.row_sums, np.full(K.shape[0], K.shape[1]), stats.dyadic
    else:
        data = K.sparse if K.is_sparse else K.matrix
        sums = np.asarray(data.sum(axis=1), dtype=float).ravel()
        counts = np.diff(data.indptr) if K.is_sparse else np.full(K.shape[0], K.shape[1])
        exact_entries = _all_small_dyadic(data)
    # summation error of a float sum of k non-negative terms: at most (k - 1) u times the sum;
    # sums of entries that are multiples of 2^-52 are exact (e.g. 0/1 and halves)
    slack = 0.0 if exact_entries else float(np.max((counts - 1).clip(min=0) * UNIT_ROUNDOFF * sums * 1.01))
    rho = float(np.max(np.abs(sums - 1.0))) + slack
    if rho == 0.0:
        return ProductError(min_positive=smallest_positive(K))
    rel = math.nextafter(rho / (1.0 - rho) * (1.0 + 4 * UNIT_ROUNDOFF), math.inf)
    return ProductError(rel=rel, min_positive=smallest_positive(K))


def _all_small_dyadic(data) -> bool:
    """True when every entry is a multiple of 2^-52 in [0, 1]: their sums are exact in double precision
    for rows of up to 2^52 / 2^1 entries (no bit is lost while partial sums stay below 2)."""
    vals = data.data if sp.issparse(data) else np.asarray(data).ravel()
    scaled = vals * 2.0**52
    return bool(np.all(scaled == np.floor(scaled)))


def _pattern_product(A: MarkovOperator, B: MarkovOperator) -> sp.csr_matrix:
    """Boolean product of the supports (exact: counts of at most n fit in float32 for n < 2^24)."""
    pa = sp.csr_matrix((A.sparse != 0).astype(np.float32))
    pb = sp.csr_matrix((B._aligned_to(A.outputs).sparse != 0).astype(np.float32))
    return sp.csr_matrix(pa @ pb)


def _same_support(C: MarkovOperator, pattern: sp.csr_matrix) -> bool:
    stored = sp.csr_matrix((C.sparse != 0).astype(np.float32))
    return (stored != (pattern != 0)).nnz == 0


def multiply(A: MarkovOperator, err_a: ProductError, B: MarkovOperator,
             err_b: ProductError) -> tuple[MarkovOperator, ProductError]:
    """``A @ B`` and its error against the exact product of the exact factors (see module docstring).

    >>> K = MarkovOperator([[0.5, 0.5], [0.25, 0.75]])
    >>> P, err = multiply(K, EXACT, K, EXACT)
    >>> err.rel > 0, err.absolute, err.support_exact
    (True, 0.0, True)
    """
    if isinstance(A, StructuredOperator) or isinstance(B, StructuredOperator):  # stays structured if it can
        done = structured_multiply(A, err_a, B, err_b)
        if done is not None:
            return done
        A = A.densify() if isinstance(A, StructuredOperator) else A  # size-checked: ResourceLimitError
        B = B.densify() if isinstance(B, StructuredOperator) else B
    if A.is_sparse and A.nnz > DENSE_FILL * A.shape[0] * A.shape[1]:
        # a filled-in sparse product (powers of a walk): dense @ sparse costs rows(A) * nnz(B), while
        # sparse @ sparse with full fill-in is several times slower; same rounding model either way
        check_memory(8.0 * A.shape[0] * (A.shape[1] + B.shape[1]), f"densifying a {A.shape[0]}x{A.shape[1]} "
                     "product that has filled in", hint="multiply fewer operators")
        A = A.to_dense()
    C = A @ B
    n = A.shape[1]
    u = UNIT_ROUNDOFF
    gamma_n = n * u / (1.0 - n * u)
    rel = (1.0 + err_a.rel) * (1.0 + err_b.rel) * (1.0 + gamma_n) - 1.0
    rel = math.nextafter(rel * (1.0 + 4 * u), math.inf)
    min_a = err_a.min_positive if not err_a.is_exact else smallest_positive(A)
    min_b = err_b.min_positive if not err_b.is_exact else smallest_positive(B)
    can_underflow = min_a * min_b < _SMALLEST_NORMAL
    absolute = 2.0 * n * (err_a.absolute + err_b.absolute) + (n * SMALLEST_SUBNORMAL if can_underflow else 0.0)
    if absolute:
        absolute = math.nextafter(absolute * (1.0 + 4 * u), math.inf)
    support = err_a.support_exact and err_b.support_exact
    if support and can_underflow:
        support = _same_support(C, _pattern_product(A, B))
    return C, ProductError(rel, absolute, support, smallest_positive(C))
