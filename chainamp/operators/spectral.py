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
import scipy.sparse.linalg as spla

from ..errors import SolverError
from .chain import _check_square, _class_periods, _structure, _Structure
from .markov import MarkovOperator

__all__ = [
    "spectral_gap",
    "relaxation_time",
]

#: Below this many states a sparse operator is densified for eigenvalues (ARPACK needs k < n - 1).
_DENSE_EIG_MAX = 256
#: Relative accuracy requested from ARPACK for the two largest eigenvalues in modulus.
_ARPACK_TOL = 1e-10


# ------------------------------------------------------------------ spectrum
def _gap_from_structure(K: MarkovOperator, st: _Structure) -> float:
    closed = np.flatnonzero(st.closed)
    if closed.size > 1 or np.any(_class_periods(st)[closed] > 1):
        return 0.0  # eigenvalue 1 repeated, or a root of unity != 1 on the unit circle
    n = K.shape[0]
    if n == 1:
        return 1.0
    if not K.is_sparse or n <= _DENSE_EIG_MAX:
        vals = np.linalg.eigvals(K.matrix)
    else:
        try:
            vals = spla.eigs(K.sparse.T, k=2, which="LM", return_eigenvectors=False,
                             tol=_ARPACK_TOL, v0=np.full(n, 1.0 / n))
        except spla.ArpackNoConvergence as exc:
            raise SolverError(f"ARPACK did not converge on the eigenvalues of K ({exc})") from None
    vals = np.delete(vals, np.argmin(np.abs(vals - 1.0)))  # one copy of the eigenvalue 1
    return float(min(1.0, max(0.0, 1.0 - np.abs(vals).max()))) if vals.size else 1.0


def spectral_gap(K: MarkovOperator) -> float:
    """Absolute spectral gap ``1 - max{|lambda| : lambda eigenvalue of K, lambda != 1}``.

    One copy of the eigenvalue 1 is removed; the gap is exactly 0 when K has several
    recurrent classes (1 is repeated) or a periodic recurrent class (another root of unity
    is an eigenvalue) - both decided from the graph, not from rounded eigenvalues. Otherwise
    eigenvalues come from ``numpy.linalg.eigvals`` for dense K (and sparse K of at most 256
    states) and from ARPACK (``scipy.sparse.linalg.eigs``: the two largest in modulus, relative
    tolerance 1e-10) for larger sparse K; ARPACK is slow when eigenvalues cluster near the second
    one (tens of seconds on a 100,000-node graph). A floating-point estimate (eigenvalue errors
    scale with the conditioning of K), not a certified bound: it feeds no privacy guarantee.

    Examples
    --------
    >>> round(spectral_gap(MarkovOperator([[0.9, 0.1], [0.2, 0.8]])), 4)
    0.3
    """
    K = _check_square(K)
    return _gap_from_structure(K, _structure(K))


def relaxation_time(K: MarkovOperator) -> float:
    """Relaxation time ``1 / spectral_gap(K)`` (``inf`` when the gap is 0).

    Examples
    --------
    >>> round(relaxation_time(MarkovOperator([[0.9, 0.1], [0.2, 0.8]])), 4)
    3.3333
    """
    gap = spectral_gap(K)
    return math.inf if gap == 0.0 else 1.0 / gap
