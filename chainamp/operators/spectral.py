"""Spectral gap and relaxation time of a square Markov operator (floating-point estimates).

Nothing here feeds a privacy bound directly: the spectral gap in particular is
a floating-point estimate, not a certified quantity (the certified TV mixing
time lives in :mod:`chainamp.mixing`). Whether the gap is exactly 0 (several
recurrent classes, a periodic recurrent class) is decided from the exact graph
structure of :mod:`.chain`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._numerics import single_blas_thread
from ..errors import SolverError
from .chain import _check_square, _class_periods, _structure, _Structure
from .markov import MarkovOperator

__all__ = [
    "spectral_gap",
    "spectral_gap_method",
    "relaxation_time",
]

#: Below this many states a sparse operator is densified for eigenvalues (ARPACK needs k < n - 1).
_DENSE_EIG_MAX = 256
#: Relative accuracy requested from ARPACK for the two largest eigenvalues in modulus.
_ARPACK_TOL = 1e-10
#: The methods :func:`spectral_gap_method` and ``ChainAnalysis.spectral_method`` report.
SPECTRAL_METHODS = ("structure", "symmetric", "arpack", "eigvals")


# ------------------------------------------------------------------ spectrum
def _reversible_pi(K: MarkovOperator) -> np.ndarray | None:
    """The stationary distribution of an irreducible K IF K may be reversible, else None.

    A reversible K has a symmetric support and ``pi_j / pi_i = K_ij / K_ji`` on every edge, so pi
    follows from a breadth-first spanning tree (in logs, O(n + nnz)); whether detailed balance
    then holds on every edge is checked by :func:`_reversible_form`."""
    from scipy.sparse import csgraph  # scipy submodules are imported when first needed

    A = sp.csr_matrix(K._data, copy=True)
    A.eliminate_zeros()
    pattern = (A != 0).astype(np.int8)
    if (pattern != pattern.T).nnz:
        return None
    order, pred = csgraph.breadth_first_order(pattern, 0, directed=True, return_predecessors=True)
    if order.size != K.shape[0]:
        return None
    child = order[1:]
    parent = pred[child]
    fwd = np.asarray(A[parent, child]).ravel()
    bwd = np.asarray(A[child, parent]).ravel()
    step = np.log(fwd) - np.log(bwd)
    logpi = np.zeros(K.shape[0])
    for c, p_, w in zip(child.tolist(), parent.tolist(), step.tolist()):  # parents come first in BFS order
        logpi[c] = logpi[p_] + w
    pi = np.exp(logpi - logpi.max())
    return pi / pi.sum()


def _reversible_form(K: MarkovOperator, pi: np.ndarray):
    """``D^1/2 K D^-1/2`` (``D = diag(pi)``), symmetrised, when K satisfies detailed balance
    ``pi_i K_ij = pi_j K_ji`` up to the rounding of pi and of the products (relative
    ``4 (n + 16) u`` entrywise), else None. K is then similar to a symmetric matrix: real spectrum."""
    n = K.shape[0]
    if not np.all(pi > 0):
        return None
    tol = 4.0 * (n + 16) * 2.0**-53
    root = np.sqrt(pi)
    if sp.issparse(K._data):
        A = sp.csr_matrix(K._data)
        F = sp.diags(pi) @ A
        excess = abs(F - F.T) - tol * (abs(F) + abs(F.T))
        if excess.nnz and excess.max() > 0:
            return None
        S = sp.diags(root) @ A @ sp.diags(1.0 / root)
        return ((S + S.T) * 0.5).tocsr()
    A = np.asarray(K._data, dtype=float)
    for i in _probe_rows(n):  # the same test on a few rows first, O(n) each: a non-reversible K fails it at once
        f, g = pi[i] * A[i], pi * A[:, i]
        if np.any(np.abs(f - g) > tol * (f + g) + 1e-300):
            return None
    F = pi[:, None] * A
    if np.any(np.abs(F - F.T) > tol * (F + F.T) + 1e-300):
        return None
    S = root[:, None] * A / root[None, :]
    return 0.5 * (S + S.T)


def _probe_rows(n: int) -> list[int]:
    """A few rows (and their columns) on which detailed balance is tested before the whole matrix: the last, the
    middle and the second (pi comes from a spanning tree, on whose edges balance holds by construction)."""
    return sorted({n - 1, n // 2, min(1, n - 1)})


def _second_modulus(vals: np.ndarray) -> float:
    vals = np.delete(vals, np.argmin(np.abs(vals - 1.0)))  # one copy of the eigenvalue 1
    return float(np.abs(vals).max()) if vals.size else 0.0


def _self_loop_in_one_class(K: MarkovOperator, st: _Structure) -> bool:
    """An irreducible chain with a state that can stay put has period 1 (a cycle of length 1): no BFS needed."""
    if len(st.members) != 1:
        return False
    diag = K._data.diagonal()
    return bool(np.any(diag > 0.0))


def _gap_and_method(K: MarkovOperator, st: _Structure, pi: np.ndarray | None = None) -> tuple[float, str]:
    closed = np.flatnonzero(st.closed)
    if closed.size > 1 or (not _self_loop_in_one_class(K, st) and np.any(_class_periods(st)[closed] > 1)):
        return 0.0, "structure"  # eigenvalue 1 repeated, or a root of unity != 1 on the unit circle
    n = K.shape[0]
    if n == 1:
        return 1.0, "structure"
    if pi is None and len(st.members) == 1:  # irreducible: one stationary distribution, all positive
        pi = _star_pi(K) if st.adjacency is None else _reversible_pi(K)
    S = _reversible_form(K, np.asarray(pi).ravel()) if pi is not None and len(st.members) == 1 else None
    if S is not None and not sp.issparse(S) and n > _DENSE_EIG_MAX and np.count_nonzero(S) <= 0.05 * n * n:
        S = sp.csr_matrix(S)  # a dense array with few non-zeros (a graph walk): sparse products
    with single_blas_thread(n > _DENSE_EIG_MAX):
        vals, method = _eigenvalues(K, S, n)
    return float(min(1.0, max(0.0, 1.0 - _second_modulus(np.asarray(vals))))), method


def _eigenvalues(K: MarkovOperator, S, n: int) -> tuple[np.ndarray, str]:
    import scipy.sparse.linalg as spla

    try:
        if S is not None and n <= _DENSE_EIG_MAX:
            vals, method = np.linalg.eigvalsh(S.toarray() if sp.issparse(S) else S), "symmetric"
        elif S is not None:
            try:  # Lanczos: the extreme eigenvalues of a symmetric matrix, dense or sparse
                vals = spla.eigsh(S, k=2, which="LM", return_eigenvectors=False, tol=_ARPACK_TOL, v0=np.ones(n))
            except spla.ArpackNoConvergence:
                if sp.issparse(S):
                    raise
                vals = np.linalg.eigvalsh(S)
            method = "symmetric"
        elif not K.is_sparse or n <= _DENSE_EIG_MAX:
            vals, method = np.linalg.eigvals(K.matrix), "eigvals"
        else:
            vals = spla.eigs(K.sparse.T, k=2, which="LM", return_eigenvectors=False, tol=_ARPACK_TOL,
                             v0=np.full(n, 1.0 / n))
            method = "arpack"
    except spla.ArpackNoConvergence as exc:
        raise SolverError(f"ARPACK did not converge on the eigenvalues of K ({exc})") from None
    return vals, method


def _positive_structure(K: MarkovOperator) -> _Structure | None:
    """A dense K with every entry positive is one aperiodic class (self-loops): its structure without the graph
    (``adjacency=None``: the CSR copy and the components cost more than the check)."""
    n = K.shape[0]
    if K.is_sparse or n < 2 or getattr(K, "row_stats", None) is not None or not bool(np.all(K._data > 0.0)):
        return None
    return _Structure(np.zeros(n, dtype=np.int64), (np.arange(n),), np.ones(1, dtype=bool), None)


def _star_pi(K: MarkovOperator) -> np.ndarray:
    """:func:`_reversible_pi` of a positive dense K along the star tree from state 0: ``pi_j / pi_0 = K_0j / K_j0``."""
    A = np.asarray(K._data, dtype=float)
    logpi = np.log(A[0]) - np.log(A[:, 0])
    logpi[0] = 0.0
    pi = np.exp(logpi - logpi.max())
    return pi / pi.sum()


def _fast_structure(K: MarkovOperator) -> _Structure:
    return _positive_structure(K) or _structure(K)


def _gap_from_structure(K: MarkovOperator, st: _Structure) -> float:
    return _gap_and_method(K, st)[0]


def spectral_gap_method(K: MarkovOperator) -> tuple[float, str]:
    """:func:`spectral_gap` and the method that computed it (one of ``SPECTRAL_METHODS``).

    Examples
    --------
    >>> gap, method = spectral_gap_method(MarkovOperator([[0.9, 0.1], [0.2, 0.8]]))
    >>> round(gap, 4), method
    (0.3, 'symmetric')
    """
    K = _check_square(K)
    return _gap_and_method(K, _fast_structure(K))


def spectral_gap(K: MarkovOperator) -> float:
    """Absolute spectral gap ``1 - max{|lambda| : lambda eigenvalue of K, lambda != 1}``.

    One copy of the eigenvalue 1 is removed; the gap is exactly 0 when K has several
    recurrent classes (1 is repeated) or a periodic recurrent class (another root of unity
    is an eigenvalue) - both decided from the graph, not from rounded eigenvalues
    (method ``"structure"``). Otherwise, for an irreducible K:

    * ``"symmetric"``: K is reversible (detailed balance ``pi_i K_ij = pi_j K_ji`` holds up to
      the rounding of the stationary distribution pi, e.g. every random walk on an undirected
      graph), so ``D^1/2 K D^-1/2`` (``D = diag(pi)``) is symmetric with the same eigenvalues
      (Levin, Peres and Wilmer, *Markov Chains and Mixing Times*, Lemma 12.2): ``numpy.linalg.eigvalsh``
      up to 256 states, else ARPACK's Lanczos ``scipy.sparse.linalg.eigsh`` (two largest in modulus,
      relative tolerance 1e-10; a dense K falls back to ``eigvalsh`` if it does not converge);
    * ``"arpack"``: a non-reversible sparse K of more than 256 states: ARPACK's Arnoldi
      ``scipy.sparse.linalg.eigs`` (two largest in modulus, relative tolerance 1e-10);
    * ``"eigvals"``: any other non-reversible K: ``numpy.linalg.eigvals`` (Arnoldi with two
      eigenvalues is not reliable for the clustered spectra of dense random chains).

    Reversibility is detected from the support (symmetric), pi from a breadth-first spanning tree
    (``pi_j / pi_i = K_ij / K_ji``) and detailed balance checked on every entry.

    :func:`spectral_gap_method` also returns the method. ARPACK is slow when eigenvalues
    cluster near the second one. A floating-point estimate (eigenvalue errors scale with the
    conditioning of K, and the symmetric form with the rounding of pi), not a certified bound:
    it feeds no privacy guarantee.

    Examples
    --------
    >>> round(spectral_gap(MarkovOperator([[0.9, 0.1], [0.2, 0.8]])), 4)
    0.3
    """
    K = _check_square(K)
    return _gap_from_structure(K, _fast_structure(K))


def relaxation_time(K: MarkovOperator) -> float:
    """Relaxation time ``1 / spectral_gap(K)`` (``inf`` when the gap is 0).

    Examples
    --------
    >>> round(relaxation_time(MarkovOperator([[0.9, 0.1], [0.2, 0.8]])), 4)
    3.3333
    """
    gap = spectral_gap(K)
    return math.inf if gap == 0.0 else 1.0 / gap
