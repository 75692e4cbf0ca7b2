"""Size checks of the operator constructors and products, run before they allocate (private).

Each estimates the extra memory an operation of :class:`~chainamp.operators.MarkovOperator` is about
to allocate -- from the shapes and sparsity patterns alone, in floating point so that no estimate
itself allocates or runs big-integer arithmetic -- and calls :func:`chainamp._numerics.check_memory`,
which raises :class:`~chainamp.ResourceLimitError` above the limit (``memory_limit=``,
:func:`chainamp.resource_limits`, default half the available memory).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import check_memory
from ..errors import InvalidOperatorError

__all__ = ["check_identity", "checked_product", "check_densify", "check_chain_analysis",
           "LABEL_BYTES", "row_normalize"]

#: Bytes per label held by an operator (the label object, its tuple slot and its entry in the index dict),
#: counted once for the inputs and once for the outputs.
LABEL_BYTES = 160.0
#: Bytes per stored entry of a CSR product (value and column index) with the COO/sort slack of scipy.
_SPARSE_ENTRY_BYTES = 16.0


def check_identity(labels: Any, sparse: bool) -> None:
    """Before ``MarkovOperator.identity``: the n x n matrix (dense: 8 n^2 bytes, twice: built, then
    validated as a copy) and 2 n labels; ``labels`` is an int or a sequence with ``len``."""
    if isinstance(labels, (int, np.integer)) and not isinstance(labels, bool):
        n = float(labels)
    elif hasattr(labels, "__len__"):
        n = float(len(labels))
    else:  # an iterator: its length is known only once read; the labels themselves bound the matrix
        return
    entries = 16.0 * n if sparse else 16.0 * n * n
    check_memory(entries + 2 * LABEL_BYTES * n, f"the {int(n)} x {int(n)} {'sparse' if sparse else 'dense'} "
                 "identity operator", hint="" if sparse else "pass sparse=True for a sparse identity")


def checked_product(A: Any, B: Any) -> Any:
    """``A @ B`` for two composable MarkovOperators (a step of ``K ** t``), after checking its size.

    Dense: the product and the copy its operator keeps, 16 n m bytes. Sparse: at most
    ``sum_i min(m, sum_{j in row i of A} nnz(B_j))`` entries (what scipy's symbolic pass counts, an
    upper bound of the product's non-zeros), 16 bytes each.
    """
    n, m = A.shape[0], B.shape[1]
    if A.is_sparse and B.is_sparse:
        a, b = A.sparse, B.sparse
        row_nnz = np.diff(b.indptr).astype(float)
        pattern = sp.csr_matrix((np.ones(a.nnz), a.indices, a.indptr), shape=a.shape)
        bound = float(np.minimum(pattern @ row_nnz, float(m)).sum())
        check_memory(_SPARSE_ENTRY_BYTES * bound + 8.0 * n, f"a sparse {n} x {m} product with up to {bound:.3g} "
                     "non-zeros (a step of K ** t)", hint="use fewer steps or a smaller graph")
    else:
        check_memory(16.0 * n * m, f"the dense {n} x {m} product (a step of K ** t)",
                     hint="use a sparse operator or fewer states")
    return A @ B


def check_densify(shape: tuple, nnz: int) -> None:
    """Before ``.matrix`` densifies a sparse operator: 8 n m bytes."""
    n, m = shape
    check_memory(8.0 * n * m, f"a dense {n} x {m} copy of a sparse operator with {nnz} non-zeros",
                 hint="use .sparse (or K.row(x)) instead of .matrix")


#: Bytes per entry of a dense chain's analysis beyond K itself: its CSR copy for the graph structure
#: (values, indices and the conversion's temporaries), GTH's working copy and LAPACK's eigenvalue problem
#: (a copy, the Hessenberg form and the workspace); measured 63 bytes an entry at n = 3000, rounded up.
_CHAIN_DENSE_BYTES = 80.0
#: Sparse chains: bytes per stored entry (the CSR copy and the class blocks) and per state (labels, ARPACK's
#: Krylov vectors); recurrent classes of up to 2000 states are densified for GTH (2 x 8 bytes an entry).
_CHAIN_SPARSE_BYTES = 48.0
_CHAIN_STATE_BYTES = 400.0
_GTH_CLASS_MAX = 2000


def check_chain_analysis(shape: tuple, nnz: int, sparse: bool) -> None:
    """Before ``analyze_chain``: the structure, stationary distributions and spectral gap of an n-state chain."""
    n = float(shape[0])
    if sparse:
        need = _CHAIN_SPARSE_BYTES * nnz + _CHAIN_STATE_BYTES * n + 16.0 * min(n, _GTH_CLASS_MAX) ** 2
    else:
        need = _CHAIN_DENSE_BYTES * n * n
    check_memory(need, f"the chain analysis of a {'sparse' if sparse else 'dense'} {shape[0]}-state operator "
                       "(its structure, stationary distributions and spectral gap)",
                 hint="use a sparse operator" if not sparse else "use fewer states")


def row_normalize(A: sp.csr_matrix, nodes: list, name: str) -> sp.csr_matrix:
    """The rows of a graph's weight matrix divided by their sums (negative weights and dead ends refused)."""
    if A.nnz and A.data.min() < 0:
        raise InvalidOperatorError(f"{name} has a negative edge weight ({A.data.min()!r})")
    sums = np.asarray(A.sum(axis=1)).ravel()
    if np.any(sums <= 0):
        i = int(np.argmax(sums <= 0))
        raise InvalidOperatorError(
            f"{name}: node {nodes[i]!r} has no out-edge with positive weight (add a self-loop to make it absorbing)")
    return sp.csr_matrix(sp.diags(1.0 / sums) @ A)
