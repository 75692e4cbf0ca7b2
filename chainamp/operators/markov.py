"""Finite Markov operators: row-stochastic matrices from inputs X to outputs Y.

A :class:`MarkovOperator` ``K`` stores ``K(x, y) = P[output y | input x]`` as a
dense numpy array or a scipy.sparse CSR matrix (graphs stay sparse), with
optional hashable labels for inputs and outputs. It is immutable: the stored
arrays are read-only and every operation returns a new operator.

Rows are accepted when they sum to 1 within ``row_sum_atol`` and stand for their
normalised rows ``K(x, .) / sum_y K(x, y)``: the stored floats are kept as given, and
the bounds chainamp certifies (:func:`chainamp.amplify`, the audit, ``chainamp
coefficients``; the mixing coefficients with ``normalised=True``, Doeblin always) hold
for the row-normalised operator (and for the rows as written); :func:`as_operator`
coerces arrays and nested lists at the public boundaries.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import ROW_SUM_ATOL, check_int, check_real
from ._guards import check_densify, check_identity, checked_product, row_normalize as _row_normalize
from ..errors import IncompatibleOperatorsError, InvalidOperatorError, InvalidParameterError

__all__ = ["MarkovOperator"]  # kron: in .kronecker (it builds KroneckerOperator, a subclass)


def _check_labels(labels: Iterable[Hashable] | None, n: int, which: str) -> tuple:
    if labels is None:
        return tuple(range(n))
    if isinstance(labels, (str, bytes)):
        raise TypeError(f"{which} must be a sequence of labels, not a string ({labels!r})")
    out = tuple(labels)
    if len(out) != n:
        raise InvalidOperatorError(f"{which} has {len(out)} labels but the matrix has {n} {which}")
    try:
        distinct = len(set(out))
    except TypeError as exc:
        raise TypeError(f"{which} labels must be hashable ({exc})") from None
    if distinct != n:
        seen: set = set()
        dup = next(lab for lab in out if lab in seen or seen.add(lab))
        raise InvalidOperatorError(f"{which} labels must be distinct ({dup!r} repeats)")
    return out


def as_matrix(matrix: Any) -> np.ndarray | sp.csr_matrix:
    """Convert to float64 dense array or CSR matrix, checking shape and entries."""
    if isinstance(matrix, MarkovOperator):
        return matrix._data
    if _is_complex(matrix):  # numpy would silently drop the imaginary parts
        raise TypeError("K must have real entries, got complex numbers")
    if isinstance(matrix, np.ma.MaskedArray):  # numpy would silently use the values under the mask
        raise TypeError("K must not be a masked array: fill or remove the masked entries first "
                        f"({int(np.ma.count_masked(matrix))} masked)")
    if sp.issparse(matrix):
        mat = sp.csr_matrix(matrix, dtype=float, copy=True)
        mat.sum_duplicates()
        mat.eliminate_zeros()
        values = mat.data
        shape = mat.shape
    else:
        try:
            mat = np.array(matrix, dtype=float, copy=True)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"K must be an array-like of numbers or a scipy.sparse matrix ({exc})") from None
        if mat.ndim != 2:
            raise InvalidOperatorError(f"K must be 2-D (got {mat.ndim}-D array of shape {mat.shape})")
        values = mat.ravel()
        shape = mat.shape
    if shape[0] == 0 or shape[1] == 0:
        raise InvalidOperatorError(f"K must have at least one row and one column (got shape {shape})")
    if not np.all(np.isfinite(values)):
        bad = _first_bad(mat, ~np.isfinite(values))
        raise InvalidOperatorError(f"K entries must be finite (entry {bad} is not)")
    if np.any(values < 0):
        bad = _first_bad(mat, values < 0)
        raise InvalidOperatorError(f"K entries must be non-negative (entry {bad} is negative)")
    return mat


def _is_complex(matrix: Any) -> bool:
    try:
        return bool(np.iscomplexobj(matrix))
    except (TypeError, ValueError):  # ragged nested lists: the conversion below says what is wrong
        return False


def as_operator(K: Any, name: str = "K") -> MarkovOperator:
    """``K`` itself when it is a :class:`MarkovOperator`, else ``MarkovOperator(K)``: a numpy array, a
    scipy.sparse matrix or nested lists of numbers, checked (and refused) exactly as the constructor does.

    >>> as_operator([[0.5, 0.5], [0.25, 0.75]]).shape
    (2, 2)
    """
    if isinstance(K, MarkovOperator):
        return K
    if K is None or isinstance(K, (str, bytes, dict, set)) or np.isscalar(K):
        raise TypeError(f"{name} must be a MarkovOperator, a 2-D array or nested lists of numbers, "
                        f"got {type(K).__name__} {K!r}")
    return MarkovOperator(K)


def _first_bad(mat, mask: np.ndarray) -> tuple[int, int]:
    k = int(np.flatnonzero(mask)[0])
    if sp.issparse(mat):
        row = int(np.searchsorted(mat.indptr, k, side="right") - 1)
        return row, int(mat.indices[k])
    return tuple(int(i) for i in np.unravel_index(k, mat.shape))


def check_row_sums(mat, atol: float) -> None:
    sums = np.asarray(mat.sum(axis=1)).ravel()
    err = np.abs(sums - 1.0)
    if np.any(err > atol):
        i = int(np.argmax(err > atol))
        raise InvalidOperatorError(
            f"K rows must sum to 1 within row_sum_atol={atol:g} (row {i} sums to {float(sums[i])!r})"
        )


class MarkovOperator:
    """A finite Markov operator K from inputs X to outputs Y.

    Parameters
    ----------
    matrix : array_like or scipy.sparse matrix, shape (n, m)
        Row-stochastic: non-negative, finite, each row summing to 1 within
        ``row_sum_atol``. Sparse input stays sparse (CSR).
    inputs, outputs : sequence of hashable, optional
        Labels of the rows (X) and columns (Y); default ``range(n)`` / ``range(m)``.
    row_sum_atol : float, optional
        Accepted deviation of a row sum from 1 (default ``ROW_SUM_ATOL = 1e-9``). An accepted
        row stands for the row divided by its sum; certified bounds cover that operator.

    Raises
    ------
    TypeError
        ``matrix`` is not numeric, or labels are not hashable.
    InvalidOperatorError
        Empty or non-2-D matrix, non-finite or negative entry, a row not summing
        to 1, or a label count that does not match.

    Examples
    --------
    >>> K = MarkovOperator([[0.9, 0.1], [0.2, 0.8]], inputs=["a", "b"], outputs=["yes", "no"])
    >>> K.shape, K.inputs, K.outputs
    ((2, 2), ('a', 'b'), ('yes', 'no'))
    >>> (K @ MarkovOperator([[1.0], [1.0]], inputs=["yes", "no"])).matrix.round(3).tolist()
    [[1.0], [1.0]]
    """

    __slots__ = ("_data", "_inputs", "_outputs", "_in_index", "_out_index")
    __array_ufunc__ = None  # numpy defers to us: ``K @ ndarray`` raises TypeError instead of guessing

    def __init__(self, matrix: Any, inputs: Sequence[Hashable] | None = None,
                 outputs: Sequence[Hashable] | None = None, *, row_sum_atol: float = ROW_SUM_ATOL):
        atol = check_real(row_sum_atol, "row_sum_atol")
        mat = as_matrix(matrix)
        if isinstance(matrix, MarkovOperator):
            inputs = matrix.inputs if inputs is None else inputs
            outputs = matrix.outputs if outputs is None else outputs
        else:
            check_row_sums(mat, atol)
        if sp.issparse(mat):
            for arr in (mat.data, mat.indices, mat.indptr):
                arr.flags.writeable = False
        else:
            mat.flags.writeable = False
        self._data = mat
        self._inputs = _check_labels(inputs, mat.shape[0], "inputs")
        self._outputs = _check_labels(outputs, mat.shape[1], "outputs")
        self._in_index = {lab: i for i, lab in enumerate(self._inputs)}
        self._out_index = {lab: j for j, lab in enumerate(self._outputs)}

    # ------------------------------------------------------------------ views
    @property
    def matrix(self) -> np.ndarray:
        """Dense read-only view of K (densifies a sparse operator: use ``.sparse`` to avoid it)."""
        if sp.issparse(self._data):
            check_densify(self.shape, self._data.nnz)  # ResourceLimitError before a dense copy too big to hold
            dense = self._data.toarray()
            dense.flags.writeable = False
            return dense
        return self._data

    @property
    def sparse(self) -> sp.csr_matrix:
        """K as a CSR matrix (a copy for dense operators, the stored matrix for sparse ones)."""
        if sp.issparse(self._data):
            return self._data
        return sp.csr_matrix(self._data)

    @property
    def is_sparse(self) -> bool:
        """True when K is stored as a scipy.sparse matrix."""
        return sp.issparse(self._data)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_inputs, n_outputs)``."""
        return self._data.shape

    @property
    def inputs(self) -> tuple:
        """Labels of the inputs (rows)."""
        return self._inputs

    @property
    def outputs(self) -> tuple:
        """Labels of the outputs (columns)."""
        return self._outputs

    @property
    def is_square(self) -> bool:
        """True when K maps a space to itself: same labels, in the same order, on both sides."""
        return self._inputs == self._outputs

    @property
    def nnz(self) -> int:
        """Number of non-zero entries."""
        return int(self._data.nnz) if self.is_sparse else int(np.count_nonzero(self._data))

    def input_index(self, label: Hashable) -> int:
        """Row index of an input label (``KeyError`` naming the label when unknown)."""
        try:
            return self._in_index[label]
        except KeyError:
            raise KeyError(f"{label!r} is not an input of this operator") from None

    def output_index(self, label: Hashable) -> int:
        """Column index of an output label."""
        try:
            return self._out_index[label]
        except KeyError:
            raise KeyError(f"{label!r} is not an output of this operator") from None

    def row(self, label: Hashable) -> np.ndarray:
        """The distribution K(x, .) of input ``label`` as a dense vector."""
        i = self.input_index(label)
        if self.is_sparse:
            return self._data.getrow(i).toarray().ravel()
        return self._data[i]

    def to_dense(self) -> MarkovOperator:
        """The same operator stored densely."""
        return MarkovOperator._trusted(self.matrix, self._inputs, self._outputs)

    def to_sparse(self) -> MarkovOperator:
        """The same operator stored as CSR."""
        return MarkovOperator._trusted(sp.csr_matrix(self._data), self._inputs, self._outputs)

    @classmethod
    def from_dask(cls, array: Any, inputs=None, outputs=None, *, row_sum_atol: float = ROW_SUM_ATOL,
                  progress: bool | None = None) -> MarkovOperator:
        """K held in a 2-D dask array, validated and scanned block by block (:mod:`.dask_backed`)."""
        from .dask_backed import DaskMarkovOperator  # the entry point of the optional dask backend (a subclass)

        return DaskMarkovOperator(array, inputs, outputs, row_sum_atol=row_sum_atol, progress=progress)

    def to_dask(self, chunks: Any = "auto"):
        """K as a 2-D dask array of float64 in ``chunks`` (labels are not carried): :func:`.dask_backed.to_dask`."""
        from .dask_backed import to_dask  # the entry point of the optional dask backend

        return to_dask(self, chunks)

    # ------------------------------------------------------------ algebra
    @classmethod
    def _trusted(cls, mat, inputs, outputs) -> MarkovOperator:
        """Build without re-checking row sums (for products of valid operators)."""
        obj = cls.__new__(cls)
        if sp.issparse(mat):
            mat = sp.csr_matrix(mat)
            for arr in (mat.data, mat.indices, mat.indptr):
                arr.flags.writeable = False
        else:
            mat = np.array(mat, dtype=float)
            mat.flags.writeable = False
        obj._data = mat
        obj._inputs = tuple(inputs)
        obj._outputs = tuple(outputs)
        obj._in_index = {lab: i for i, lab in enumerate(obj._inputs)}
        obj._out_index = {lab: j for j, lab in enumerate(obj._outputs)}
        return obj

    def apply(self, mu: Any) -> np.ndarray:
        """The distribution ``mu K`` on the outputs, for a distribution ``mu`` on the inputs."""
        from .._numerics import check_distribution

        vec = check_distribution(mu, "mu", size=self.shape[0])
        return np.asarray(self._data.T @ vec).ravel()

    def __matmul__(self, other: MarkovOperator) -> MarkovOperator:
        """Composition ``K1 @ K2``: first K1, then K2 (matrix product).

        The outputs of ``K1`` must be the inputs of ``K2``; when they are the same
        labels in another order, the rows of K2 are permuted to match.
        """
        if not isinstance(other, MarkovOperator):
            return NotImplemented
        right = other._aligned_to(self._outputs)
        prod = self._data @ right._data
        if sp.issparse(prod) and not (self.is_sparse and other.is_sparse):
            prod = prod.toarray()
        return MarkovOperator._trusted(prod, self._inputs, other._outputs)

    def _aligned_to(self, labels: tuple) -> MarkovOperator:
        if labels == self._inputs:
            return self
        if len(labels) != len(self._inputs) or set(labels) != set(self._inputs):
            raise IncompatibleOperatorsError(
                "cannot compose: outputs of the first operator "
                f"({_preview(labels)}) are not the inputs of the second ({_preview(self._inputs)})"
            )
        order = [self._in_index[lab] for lab in labels]
        return MarkovOperator._trusted(self._data[order], labels, self._outputs)

    def __pow__(self, t: int) -> MarkovOperator:
        """``K ** t``: t steps of a square operator (t = 0 gives the identity), by repeated squaring."""
        t = check_int(t, "t")
        if t < 0:
            raise InvalidParameterError(f"t must be >= 0 for K ** t (got {t})")
        if not self.is_square:
            raise IncompatibleOperatorsError(
                f"K ** t needs a square operator with the same input and output labels (shape {self.shape})"
            )
        result = MarkovOperator.identity(self._inputs, sparse=self.is_sparse) if t == 0 else None
        base = self
        while t:
            if t & 1:  # each product's size checked before it is formed; no identity to multiply by
                result = base if result is None else checked_product(result, base)
            t >>= 1
            if t:
                base = checked_product(base, base)
        return result

    def restrict(self, inputs: Iterable[Hashable]) -> MarkovOperator:
        """The operator restricted to a subset of input labels (in the given order).

        Theorem 1 of Balle et al. (2019) only needs the mixing conditions on the
        inputs that M can actually produce; restricting to them is sound and can
        only lower the coefficients.
        """
        labels = tuple(inputs)
        if not labels:
            raise InvalidOperatorError("restrict needs at least one input label")
        idx = [self.input_index(lab) for lab in labels]
        if len(set(idx)) != len(idx):
            raise InvalidOperatorError("restrict got a repeated input label")
        return MarkovOperator._trusted(self._data[idx], labels, self._outputs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MarkovOperator):
            return NotImplemented
        if self.shape != other.shape or self._inputs != other._inputs or self._outputs != other._outputs:
            return False
        diff = self._data - other._data
        return (abs(diff).max() if sp.issparse(diff) else np.abs(diff).max()) == 0

    __hash__ = None  # mutable-looking numpy payload: equality by value, no hashing

    def __repr__(self) -> str:
        kind = "sparse" if self.is_sparse else "dense"
        return (f"MarkovOperator({self.shape[0]}x{self.shape[1]} {kind}, "
                f"inputs={_preview(self._inputs)}, outputs={_preview(self._outputs)})")

    # ------------------------------------------------------ constructors
    @classmethod
    def identity(cls, labels: Sequence[Hashable] | int, *, sparse: bool = False) -> MarkovOperator:
        """The identity operator on ``labels`` (or on ``range(labels)`` for an int)."""
        check_identity(labels, sparse)  # ResourceLimitError before building n labels and an n x n matrix
        labs = tuple(range(labels)) if isinstance(labels, (int, np.integer)) else tuple(labels)
        n = len(labs)
        mat = sp.identity(n, format="csr") if sparse else np.eye(n)
        return cls(mat, labs, labs)

    @classmethod
    def from_graph(cls, G: nx.Graph, weight: str = "weight", normalize: bool = False, *,
                   row_sum_atol: float = ROW_SUM_ATOL) -> MarkovOperator:
        """Operator whose transition probabilities are the out-edge weights of ``G``.

        Parameters
        ----------
        G : networkx.DiGraph (an undirected Graph is read with both directions)
        weight : str
            Edge attribute holding the probability (a missing attribute counts as 1).
        normalize : bool
            Divide each node's out-weights by their sum (weights must be non-negative;
            a node with no out-edge is an error, add a self-loop to keep it absorbing).

        The result is stored sparsely; node order is ``list(G.nodes)``.

        Examples
        --------
        >>> import networkx as nx
        >>> G = nx.DiGraph([("a", "b", {"weight": 1.0}), ("b", "a", {"weight": 0.5}), ("b", "b", {"weight": 0.5})])
        >>> MarkovOperator.from_graph(G).matrix.tolist()
        [[0.0, 1.0], [0.5, 0.5]]
        """
        import networkx as nx  # imported on use: about 0.1 s that `import chainamp` should not pay
        if not isinstance(G, nx.Graph):
            raise TypeError(f"G must be a networkx graph, got {type(G).__name__}")
        if G.number_of_nodes() == 0:
            raise InvalidOperatorError("G has no nodes")
        nodes = list(G.nodes)
        A = nx.to_scipy_sparse_array(G, nodelist=nodes, weight=weight, format="csr", dtype=float)
        A = sp.csr_matrix(A)
        if normalize:
            A = _row_normalize(A, nodes, "G")
        return cls(A, nodes, nodes, row_sum_atol=row_sum_atol)

    @classmethod
    def random_walk(cls, G: nx.Graph, laziness: float = 0.0, *, weight: str | None = None) -> MarkovOperator:
        """The (lazy) random walk on ``G``: stay with probability ``laziness``, else move to a
        uniformly chosen neighbour (weight-proportional when ``weight`` names an edge attribute).

        Directed graphs follow out-edges. Stored sparsely.

        Examples
        --------
        >>> import networkx as nx
        >>> K = MarkovOperator.random_walk(nx.path_graph(3), laziness=0.5)
        >>> K.matrix.round(3).tolist()
        [[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]]
        """
        import networkx as nx  # imported on use: about 0.1 s that `import chainamp` should not pay
        if not isinstance(G, nx.Graph):
            raise TypeError(f"G must be a networkx graph, got {type(G).__name__}")
        lazy = check_real(laziness, "laziness")
        if not 0.0 <= lazy <= 1.0:
            raise InvalidParameterError(f"laziness must be in [0, 1] (got {lazy!r})")
        if G.number_of_nodes() == 0:
            raise InvalidOperatorError("G has no nodes")
        nodes = list(G.nodes)
        A = sp.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=nodes, weight=weight, format="csr", dtype=float))
        walk = _row_normalize(A, nodes, "G") if lazy < 1.0 else sp.csr_matrix(A.shape)
        P = lazy * sp.identity(len(nodes), format="csr") + (1.0 - lazy) * walk
        return cls(sp.csr_matrix(P), nodes, nodes)

    def to_graph(self) -> nx.DiGraph:
        """A weighted DiGraph with an edge for each non-zero entry (attribute ``weight``).

        For a square operator the nodes are its states. Otherwise nodes are
        ``("input", x)`` and ``("output", y)`` with a ``bipartite`` attribute 0 / 1.
        """
        import networkx as nx

        coo = self.sparse.tocoo()
        G = nx.DiGraph()
        if self.is_square:
            G.add_nodes_from(self._inputs)
            G.add_weighted_edges_from(
                (self._inputs[i], self._outputs[j], float(w)) for i, j, w in zip(coo.row, coo.col, coo.data))
            return G
        G.add_nodes_from((("input", x) for x in self._inputs), bipartite=0)
        G.add_nodes_from((("output", y) for y in self._outputs), bipartite=1)
        G.add_weighted_edges_from(
            (("input", self._inputs[i]), ("output", self._outputs[j]), float(w))
            for i, j, w in zip(coo.row, coo.col, coo.data))
        return G


def _preview(labels: tuple, k: int = 4) -> str:
    if len(labels) <= k + 2:
        return repr(list(labels))
    return "[" + ", ".join(repr(x) for x in labels[:k]) + f", ... ({len(labels)} labels)]"
