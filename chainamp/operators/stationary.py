"""Stationary distributions of a square Markov operator: one per recurrent class.

Stationary distributions are computed per recurrent class with the GTH algorithm
(Grassmann, Taksar and Heyman 1985), which never subtracts and is accurate to
a small multiple of the unit roundoff entrywise (O'Cinneide 1993); large
classes of sparse operators use a sparse method whose residual is checked.
The recurrent classes come from the exact graph structure of :mod:`.chain`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import STATIONARY_RESIDUAL_ATOL, check_choice, check_positive
from ..errors import InvalidOperatorError, SolverError
from .chain import _check_square, _structure, _Structure
from .markov import MarkovOperator

__all__ = [
    "stationary_distributions",
    "stationary_distribution",
]

#: Recurrent classes up to this size are solved by dense GTH, also when K is sparse.
_GTH_MAX_SPARSE_CLASS = 2000
#: Block size of the blocked GTH elimination (one GEMM per block).
_GTH_BLOCK = 64
#: Power-iteration steps tried by the ``"auto"`` sparse method before the sparse LU solve.
_POWER_MAX_ITER = 1000


# ------------------------------------------------------- stationary distributions
def _gth(P: np.ndarray) -> np.ndarray:
    """Stationary distribution of an irreducible stochastic matrix by blocked GTH elimination.

    State k = n-1, ..., 1 is censored out in turn: with ``s = sum_{j<k} A[k, j]`` (the
    probability of leaving k to a remaining state, computed as a sum, never as ``1 - A[k, k]``),
    ``A[i, k] /= s`` and ``A[i, j] += A[i, k] A[k, j]`` for ``i, j < k``; then
    ``x_0 = 1``, ``x_k = sum_{i<k} x_i A[i, k]``. Every operation adds or multiplies
    non-negative numbers, hence the entrywise relative accuracy. The updates for a block of
    ``_GTH_BLOCK`` states are applied eagerly to the rows and columns of the block only and to
    the rest of the matrix as one matrix product (still subtraction-free).
    """
    A = np.array(P, dtype=float)
    n = A.shape[0]
    hi = n
    while hi > 1:
        lo = max(hi - _GTH_BLOCK, 1)
        for k in range(hi - 1, lo - 1, -1):
            s = A[k, :k].sum()
            if not s > 0.0:
                raise SolverError(
                    f"GTH elimination found no path from state index {k} to the remaining states "
                    "(the class is not irreducible in floating point: a product of probabilities underflowed)")
            A[:k, k] /= s
            A[lo:k, :k] += np.outer(A[lo:k, k], A[k, :k])
            A[:lo, lo:k] += np.outer(A[:lo, k], A[k, lo:k])
        A[:lo, :lo] += A[:lo, lo:hi] @ A[lo:hi, :lo]
        hi = lo
    x = np.zeros(n)
    x[0] = 1.0
    for k in range(1, n):
        x[k] = x[:k] @ A[:k, k]
    return x / x.sum()


def _residual(pi: np.ndarray, P) -> float:
    return float(np.abs(np.asarray(P.T @ pi).ravel() - pi).sum())


def _sparse_stationary(P: sp.csr_matrix, method: str, atol: float) -> np.ndarray:
    """Stationary distribution of an irreducible sparse stochastic matrix, residual <= atol.

    ``"power"``: iterate ``x <- x (I + P) / 2`` (the lazy chain has the same stationary
    distribution and no other eigenvalue of modulus 1) from the uniform distribution until
    ``||x P - x||_1 <= atol``. ``"direct"``: fix ``pi_0 = 1`` and solve the remaining equations
    ``(I - P^T)[1:, 1:] pi[1:] = P^T[1:, 0]`` (a non-singular M-matrix) by sparse LU. ``"auto"``
    tries ``_POWER_MAX_ITER`` power steps (cheap when the chain mixes fast, where LU fill-in is
    worst) and then the LU solve (cheap for planar / banded graphs, where power iteration is slow).
    """
    n = P.shape[0]
    PT = sp.csr_matrix(P.T)
    if method in ("power", "auto"):
        x = np.full(n, 1.0 / n)
        limit = _POWER_MAX_ITER if method == "auto" else 100 * _POWER_MAX_ITER
        for _ in range(limit):
            y = PT @ x
            if np.abs(y - x).sum() <= atol:
                return x / x.sum()
            x = 0.5 * (x + y)
        if method == "power":
            raise SolverError(f"power iteration did not reach residual {atol:g} in {limit} steps "
                              "(try method='direct')")
    A = (sp.identity(n, format="csr") - PT)[1:, 1:].tocsc()
    rhs = PT[1:, 0].toarray().ravel()
    from scipy.sparse.linalg import spsolve  # imported when first needed

    tail = spsolve(A, rhs, permc_spec="COLAMD")
    # the exact solution is >= 0 (inverse M-matrix times a non-negative vector): clip round-off
    x = np.maximum(np.concatenate([[1.0], np.atleast_1d(tail)]), 0.0)
    return x / x.sum()


def stationary_distributions(K: MarkovOperator, *, method: str = "auto",
                             stationary_residual_atol: float = STATIONARY_RESIDUAL_ATOL) -> np.ndarray:
    """All extreme stationary distributions of K: one per recurrent class, supported on it.

    Every stationary distribution of K is a convex combination of the rows returned.

    Parameters
    ----------
    K : MarkovOperator
        Square, dense or sparse.
    method : {"auto", "gth", "power", "direct"}
        How a recurrent class is solved. ``"auto"``: GTH for a dense K and for classes of at most
        2000 states of a sparse K (the class block alone is densified); larger classes of a sparse K
        use power iteration on the lazy chain ``(I + K) / 2`` for up to 1000 steps, then a sparse LU
        solve of ``pi (I - K) = 0`` with ``pi_0 = 1`` fixed. ``"gth"`` forces GTH (dense per class),
        ``"power"`` / ``"direct"`` force one sparse method on every class larger than 2000 states
        of a sparse K. A dense K is always solved by GTH.
    stationary_residual_atol : float
        The sparse methods must reach ``||pi K_C - pi||_1 <= stationary_residual_atol`` on each class
        C (default ``STATIONARY_RESIDUAL_ATOL = 1e-12``); otherwise SolverError. The distance to the
        true distribution is at most this residual times the norm of the class's group inverse
        (about its relaxation time), so slowly mixing classes get fewer correct digits.

    Returns
    -------
    numpy.ndarray, shape (number of recurrent classes, n)
        Row r is the stationary distribution of the r-th class of :func:`recurrent_classes`
        (columns in K's input order); non-negative, summing to 1.

    Notes
    -----
    GTH (Grassmann, Taksar, Heyman 1985) is Gaussian elimination of ``I - P`` in which each pivot
    is recomputed as a sum of off-diagonal probabilities, so no subtraction occurs and every
    entry of the result has a relative error of a modest multiple of the unit roundoff times a
    polynomial in n (O'Cinneide 1993), however small it is. It costs ``n^3 / 3`` flops per class;
    here it is blocked so that most of them are one matrix product per 64 states. Memory is
    ``O(r n)`` for the result with r recurrent classes.

    Examples
    --------
    >>> K = MarkovOperator([[0.9, 0.1], [0.5, 0.5]])
    >>> stationary_distributions(K).round(4).tolist()
    [[0.8333, 0.1667]]
    """
    K = _check_square(K)
    method = check_choice(method, "method", ("auto", "gth", "power", "direct"))
    atol = check_positive(stationary_residual_atol, "stationary_residual_atol")
    return _stationary(K, _structure(K), method, atol)


def _stationary(K: MarkovOperator, st: _Structure, method: str, atol: float) -> np.ndarray:
    n = K.shape[0]
    rec = [m for m, c in zip(st.members, st.closed) if c]
    out = np.zeros((len(rec), n))
    data = K._data
    for r, idx in enumerate(rec):
        if idx.size == 1:
            out[r, idx[0]] = 1.0
            continue
        if K.is_sparse:
            block = data[idx][:, idx]
            big = idx.size > _GTH_MAX_SPARSE_CLASS
            if method == "gth" or not big:
                out[r, idx] = _gth(block.toarray())
            else:
                pi = _sparse_stationary(sp.csr_matrix(block), method, atol)
                res = _residual(pi, block)
                if res > atol:
                    raise SolverError(f"stationary distribution of a class of {idx.size} states has "
                                      f"residual {res:.3g} > stationary_residual_atol={atol:g}")
                out[r, idx] = pi
        else:
            out[r, idx] = _gth(data[np.ix_(idx, idx)])
    out.flags.writeable = False
    return out


def stationary_distribution(K: MarkovOperator, **kwargs: Any) -> np.ndarray:
    """The unique stationary distribution of K (K must have exactly one recurrent class).

    Keyword arguments are those of :func:`stationary_distributions`.

    Raises
    ------
    InvalidOperatorError
        K has several recurrent classes (the stationary distribution is not unique).

    Examples
    --------
    >>> stationary_distribution(MarkovOperator([[0.0, 1.0], [0.5, 0.5]])).round(4).tolist()
    [0.3333, 0.6667]
    """
    pis = stationary_distributions(K, **kwargs)
    if pis.shape[0] != 1:
        raise InvalidOperatorError(
            f"K has {pis.shape[0]} recurrent classes, so its stationary distribution is not unique "
            "(use stationary_distributions(K))")
    return pis[0]
