"""Diagonal-plus-low-rank matrices: the covariance of an estimator on a structured channel without a k x k array.

The covariances of the estimators of :mod:`.structured_channels` are a diagonal plus a few rank-one terms in the
directions ``1``, ``f`` and one or two more (k-ary randomized response) or a diagonal plus ``-f f^T / n`` (unary
encodings). :class:`StructuredCovariance` is the public result (its diagonal, its trace and its dense form on
request, size-checked); ``Terms`` is the private form that shares its vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._numerics import check_memory

__all__ = ["StructuredCovariance"]


@dataclass(frozen=True, eq=False)
class StructuredCovariance:
    """A k x k covariance matrix ``diag(diagonal) + left @ right.T`` kept in O(k r) memory.

    Attributes
    ----------
    diagonal : numpy.ndarray
        The diagonal part (k entries).
    left, right : numpy.ndarray
        k x r factors of the low-rank part (r is a small constant: at most 4 here).

    Examples
    --------
    >>> c = StructuredCovariance(np.ones(3), np.ones((3, 1)), -0.1 * np.ones((3, 1)))
    >>> c.variances().tolist(), round(c.trace(), 6), c.toarray()[0].round(6).tolist()
    ([0.9, 0.9, 0.9], 2.7, [0.9, -0.1, -0.1])
    """

    diagonal: np.ndarray
    left: np.ndarray
    right: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        k = int(self.diagonal.size)
        return (k, k)

    @property
    def rank(self) -> int:
        """The number of columns of the low-rank factors (an upper bound on the low-rank part's rank)."""
        return int(self.left.shape[1])

    def variances(self) -> np.ndarray:
        """The diagonal of the matrix, in O(k r)."""
        return self.diagonal + np.einsum("ij,ij->i", self.left, self.right)

    def trace(self) -> float:
        """The trace (the mean squared error of an unbiased estimator), in O(k r)."""
        return float(np.sum(self.diagonal) + np.sum(self.left * self.right))

    def toarray(self, memory_limit=None) -> np.ndarray:
        """The dense k x k matrix, symmetrised; refused with :class:`~chainamp.ResourceLimitError` before
        allocating when it would not fit."""
        k = self.shape[0]
        check_memory(16.0 * k * k, f"a dense {k} x {k} covariance matrix", memory_limit=memory_limit,
                     hint="use variances(), trace() or the structured form (diagonal, left, right)")
        out = self.left @ self.right.T
        out[np.diag_indices(k)] += self.diagonal
        return 0.5 * (out + out.T)


# --------------------------------------------------------------------------- private form
class Terms:
    """``diag(d) + sum_i c_i u_i v_i^T`` with the vectors shared, not copied (k-RR's terms all lie in the span of a
    few vectors: ``1``, ``f`` and two others), so the variances and the trace cost O(k) time and a few k-vectors of
    memory; :meth:`structured` forms the k x r factors only when asked."""

    __slots__ = ("d", "terms")

    def __init__(self, d: np.ndarray, terms: list | None = None):
        self.d = d
        self.terms = list(terms or [])

    def add(self, c: float, u: np.ndarray, v: np.ndarray) -> Terms:
        self.terms.append((float(c), u, v))
        return self

    def variances(self) -> np.ndarray:
        out = np.array(self.d, dtype=float)
        for c, u, v in self.terms:
            out += c * (u * v)
        return out

    def trace(self) -> float:
        return float(np.sum(self.d) + sum(c * float(u @ v) for c, u, v in self.terms))

    def structured(self) -> StructuredCovariance:
        """The k x r factors, one column per distinct left vector (terms sharing one are summed)."""
        k = self.d.size
        groups: dict[int, list] = {}
        for c, u, v in self.terms:
            groups.setdefault(id(u), [u]).append((c, v))
        left = np.empty((k, len(groups)))
        right = np.zeros((k, len(groups)))
        for i, (u, *pairs) in enumerate(groups.values()):
            left[:, i] = u
            for c, v in pairs:
                right[:, i] += c * v
        for a in (self.d, left, right):
            a.flags.writeable = False
        return StructuredCovariance(self.d, left, right)
