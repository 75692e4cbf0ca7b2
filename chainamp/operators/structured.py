"""Operators known by their structure, never densified unless asked: :class:`StructuredOperator`.

A structured operator (k-ary randomized response, a Kronecker product of small channels, ...) is a
:class:`~chainamp.operators.MarkovOperator` whose entries follow from a few numbers. It answers the
questions chainamp asks of an operator (the coefficients of Definition 1 of Balle et al. 2019, the
exact privacy profile, products) from its structure, in time and memory independent of its size,
and forms its dense matrix only on request (:meth:`StructuredOperator.densify`, guarded by
:func:`chainamp._numerics.check_memory`). Every dense code path still works on a small structured
operator: ``K._data`` (and so ``K.matrix``) densifies on first use, size-checked and cached; on a
large one it raises :class:`~chainamp.ResourceLimitError` instead of exhausting memory.

The structural contract used by :mod:`chainamp.mixing` and :mod:`chainamp.privacy` is
:meth:`StructuredOperator.pair_orbits` (see :class:`PairOrbit`), with :meth:`~StructuredOperator.orbit_of`,
:meth:`~StructuredOperator.row_sum_bounds`, :meth:`~StructuredOperator.minorant_mass` and
:meth:`~StructuredOperator.output_support`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numerics import check_memory, check_memory_limit
from ..errors import InvalidOperatorError
from .labels import Labels, _IndexMap
from .markov import MarkovOperator

__all__ = ["StructuredOperator", "PairOrbit", "Labels"]


# ----------------------------------------------------------------- pair orbits
@dataclass(frozen=True)
class PairOrbit:
    """A class of ordered pairs of distinct inputs ``(x, x')`` whose two rows look alike.

    ``p`` and ``q`` are small dense vectors: the masses ``K_x(B_b)`` and ``K_x'(B_b)`` of blocks
    ``B_0, B_1, ...`` partitioning the outputs, for EVERY pair of the orbit (with its own blocks).
    Outputs share a block only when they have the same likelihood ratio ``K_x(y) / K_x'(y)`` (both
    zero counts as one ratio), so the pair's privacy-loss distribution in both directions is that of
    ``(p, q)``: every hockey-stick divergence ``D_c`` (any c > 0), total variation, Renyi divergence and
    log-ratio of ``(K_x, K_x')`` equals that of ``(p, q)``.

    Attributes
    ----------
    p, q : ndarray of float
        Block masses of the stored rows (the densified matrix): each exact mass lies within a factor
        ``[1 - rel_error, 1 + rel_error]`` of the float given here.
    pair : (int, int)
        Input indices of a representative ordered pair of the orbit (the witness).
    count : int
        Number of ordered pairs in the orbit (a Python int: it may exceed 2^63).
    rel_error : float
        Entrywise relative error of ``p`` and ``q`` (0 when they are exact).
    ratio_error : float
        Every ``p_b / q_b`` (computed exactly from the two floats) is within a factor
        ``[1 - ratio_error, 1 + ratio_error]`` of the exact ratio (often 0 while ``rel_error`` is not,
        since a common rounding cancels).
    sizes : tuple of int
        Number of outputs in each block (Python ints).
    members : callable ``b -> iterable of int``
        The output indices of block ``b`` for the representative pair (witness test sets).
    """

    p: np.ndarray
    q: np.ndarray
    pair: tuple[int, int]
    count: int
    rel_error: float = 0.0
    ratio_error: float = 0.0
    sizes: tuple = ()
    members: Callable[[int], Iterable[int]] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("p", "q"):
            arr = np.array(getattr(self, name), dtype=float)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        if self.p.shape != self.q.shape or self.p.ndim != 1:
            raise InvalidOperatorError(f"a pair orbit needs p and q of one 1-D shape (got {self.p.shape}, "
                                       f"{self.q.shape})")


# ----------------------------------------------------------------- the base class
class StructuredOperator(MarkovOperator):
    """Base class of operators represented by their structure (see the module docstring).

    Contract for subclasses. The constructor calls ``StructuredOperator.__init__(self, n, m, inputs,
    outputs)`` (labels default to ``range``); a subclass implements

    * ``_dense_matrix()``: the dense ``n x m`` float array (called by :meth:`densify` after the size check);
    * ``_row(i)``: row ``i`` as a dense vector of length m;
    * ``_apply(vec)``: ``vec K`` for a length-n vector;
    * ``_nnz()``: the number of non-zero entries (a Python int);
    * ``_key()``: a hashable structural description; two operators of the same class with equal keys
      and labels are equal;
    * ``_restrict(idx, labels)``: the operator on inputs ``idx`` (an int64 array of distinct input
      positions), relabelled ``labels``; return ``NotImplemented`` to fall back to densifying;
    * ``_compose(other)``: ``self @ other`` for another structured operator whose inputs are this
      operator's outputs in the same order, or ``NotImplemented``; ``_power(t)`` likewise for ``K ** t``;
    * ``pair_orbits()``, ``orbit_of(i, j)``, ``row_sum_bounds()``, ``minorant_mass()`` and
      ``output_support()``: the structural queries below.

    Entries are those of the stored (densified) matrix; as for plain operators, rows summing to 1 within
    ``row_sum_atol`` stand for their normalised rows (``row_sum_bounds`` gives the exact sums).

    Examples
    --------
    >>> from chainamp.mechanisms import randomized_response
    >>> K = randomized_response(10**6, 2.0)
    >>> isinstance(K, StructuredOperator), K.shape, len(K.pair_orbits())
    (True, (1000000, 1000000), 1)
    """

    # ------------------------------------------------------------ construction
    def __init__(self, n: int, m: int, inputs: Iterable[Hashable] | None = None,
                 outputs: Iterable[Hashable] | None = None) -> None:
        # no super().__init__: the matrix is never formed here
        if n < 1 or m < 1:
            raise InvalidOperatorError(f"an operator needs at least one input and one output (got {n} x {m})")
        object.__setattr__(self, "_shape", (int(n), int(m)))
        object.__setattr__(self, "_in_labels", Labels.of(inputs, int(n), "inputs"))
        object.__setattr__(self, "_out_labels", Labels.of(outputs, int(m), "outputs"))
        object.__setattr__(self, "_dense", None)

    def __getstate__(self) -> dict:
        """Pickle the structure only (never the dense cache; the plain operator's slots are properties here)."""
        state = dict(self.__dict__)
        state["_dense"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    # ------------------------------------------------------------ the plain operator's storage, on demand
    @property
    def _data(self) -> np.ndarray:
        """The dense matrix, formed on first use (size-checked: ResourceLimitError when too large)."""
        return self.densify()._data

    @property
    def _inputs(self) -> Labels:
        return self._in_labels

    @property
    def _outputs(self) -> Labels:
        return self._out_labels

    @property
    def _in_index(self) -> Mapping:
        return _IndexMap(self._in_labels)

    @property
    def _out_index(self) -> Mapping:
        return _IndexMap(self._out_labels)

    def densify(self, memory_limit: Any = None) -> MarkovOperator:
        """The same operator as a plain dense :class:`MarkovOperator` (cached).

        Raises :class:`~chainamp.ResourceLimitError` before allocating when the ``n x m`` matrix (8 bytes
        an entry, plus its labels) exceeds the memory limit (``memory_limit``, else
        :func:`chainamp.resource_limits`, else half the available memory).

        >>> from chainamp.mechanisms import randomized_response
        >>> randomized_response(3, 0.0).densify().matrix.round(3).tolist()[0]
        [0.333, 0.333, 0.333]
        """
        cached = self._dense
        if cached is not None:
            return cached
        limit = check_memory_limit(memory_limit)
        n, m = self._shape
        check_memory(8.0 * n * m + 200.0 * (n + m), f"densifying a {n} x {m} {type(self).__name__}",
                     memory_limit=limit, hint="use the structured operator's own methods instead")
        mat = np.asarray(self._dense_matrix(), dtype=float)
        dense = MarkovOperator._trusted(mat, tuple(self._in_labels), tuple(self._out_labels))
        object.__setattr__(self, "_dense", dense)
        return dense

    # ------------------------------------------------------------ views
    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    @property
    def inputs(self) -> Labels:
        """Labels of the inputs (a :class:`Labels` sequence; equal to the tuple of the same labels)."""
        return self._in_labels

    @property
    def outputs(self) -> Labels:
        """Labels of the outputs."""
        return self._out_labels

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def nnz(self) -> int:
        return int(self._nnz())

    def input_index(self, label: Hashable) -> int:
        try:
            return self._in_labels.index(label)
        except (KeyError, TypeError):
            raise KeyError(f"{label!r} is not an input of this operator") from None

    def output_index(self, label: Hashable) -> int:
        try:
            return self._out_labels.index(label)
        except (KeyError, TypeError):
            raise KeyError(f"{label!r} is not an output of this operator") from None

    def row(self, label: Hashable) -> np.ndarray:
        """Row ``K(x, .)`` as a dense vector (length m, size-checked)."""
        i = self.input_index(label)
        check_memory(8.0 * self._shape[1], f"a row of a {self._shape[0]} x {self._shape[1]} operator")
        out = np.asarray(self._row(i), dtype=float)
        out.flags.writeable = False
        return out

    def apply(self, mu: Any) -> np.ndarray:
        from .._numerics import check_distribution

        vec = check_distribution(mu, "mu", size=self._shape[0])
        return np.asarray(self._apply(vec), dtype=float)

    def to_dense(self) -> MarkovOperator:
        return self.densify()

    # ------------------------------------------------------------ algebra
    def restrict(self, inputs: Iterable[Hashable]) -> MarkovOperator:
        """The operator on a subset of its inputs (in the given order); structured when the subclass allows."""
        if inputs is self._in_labels or (isinstance(inputs, (Labels, range)) and inputs == self._in_labels):
            return self
        labels = tuple(inputs)
        if not labels:
            raise InvalidOperatorError("restrict needs at least one input label")
        # positions of a product space of 2^64 inputs and more (RAPPOR's m = 128 bits) exceed int64: Python ints
        wide = self._shape[0] > np.iinfo(np.int64).max
        idx = np.fromiter((self.input_index(lab) for lab in labels), dtype=object if wide else np.int64,
                          count=len(labels))
        if len(set(idx.tolist())) != idx.size:
            raise InvalidOperatorError("restrict got a repeated input label")
        out = self._restrict(idx, labels)
        if out is NotImplemented:
            return self.densify().restrict(labels)
        return out

    def _aligned_to(self, labels: Sequence) -> MarkovOperator:
        if labels is self._in_labels or labels == self._in_labels:
            return self
        if len(labels) == self._shape[0] and all(lab in self._in_labels for lab in labels):
            return self.restrict(labels)
        return MarkovOperator._aligned_to(self.densify(), tuple(labels))

    def __matmul__(self, other: MarkovOperator) -> MarkovOperator:
        """``self @ other``: structured when both are and the algebra allows, else the dense product
        (size-checked)."""
        if not isinstance(other, MarkovOperator):
            return NotImplemented
        if isinstance(other, StructuredOperator):
            right = other._aligned_to(self._out_labels)
            if isinstance(right, StructuredOperator):
                out = self._compose(right)
                if out is not NotImplemented:
                    return out
            other = right
        n, m = self._shape[0], other.shape[1]
        check_memory(8.0 * n * m, f"the dense product of a {n} x {self._shape[1]} {type(self).__name__} and a "
                     f"{other.shape[0]} x {m} operator", hint="compose operators whose product stays structured")
        return MarkovOperator.__matmul__(self.densify(), other.densify() if isinstance(
            other, StructuredOperator) else other)

    def __pow__(self, t: int) -> MarkovOperator:
        from .._numerics import check_int

        t = check_int(t, "t")
        out = self._power(t) if t >= 0 and self.is_square else NotImplemented
        if out is not NotImplemented:
            return out
        return MarkovOperator.__pow__(self.densify(), t)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MarkovOperator):
            return NotImplemented
        if self.shape != other.shape or self.inputs != other.inputs or self.outputs != other.outputs:
            return False
        if type(other) is type(self):
            return self._key() == other._key()
        return MarkovOperator.__eq__(self.densify(), other.densify() if isinstance(
            other, StructuredOperator) else other)

    __hash__ = None

    def __repr__(self) -> str:
        n, m = self._shape
        return (f"{type(self).__name__}({n}x{m} structured {self._describe()}, inputs={self._in_labels!r}, "
                f"outputs={self._out_labels!r})")

    # ------------------------------------------------------------ subclass hooks (defaults)
    def _describe(self) -> str:
        return repr(self._key())

    def _restrict(self, idx: np.ndarray, labels: tuple) -> MarkovOperator:
        return NotImplemented

    def _compose(self, other: StructuredOperator) -> MarkovOperator:
        return NotImplemented

    def _power(self, t: int) -> MarkovOperator:
        return NotImplemented

    def _compose_with_error(self, other: StructuredOperator):
        """``(self @ other, rel, absolute, support_exact)``: the structured product and the error of its stored
        entries against the exact product of the stored factors (``exact = stored (1 +- rel) +- absolute``;
        ``support_exact``: a stored zero is an exact zero), or ``NotImplemented`` (then the product is formed
        densely and :func:`chainamp.operators.multiply`'s dense error model applies)."""
        return NotImplemented

    def _dense_matrix(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _row(self, i: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _apply(self, vec: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _nnz(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _key(self) -> Hashable:  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------ the structural queries
    def pair_orbits(self) -> tuple[PairOrbit, ...]:  # pragma: no cover - abstract
        """Orbits covering every ordered pair of distinct inputs (empty for one input); see :class:`PairOrbit`.

        Every ordered pair ``(i, j)``, ``i != j``, belongs to the orbit ``orbit_of(i, j)``, whose ``(p, q)``
        has the privacy-loss distribution of ``(K_i, K_j)``. The maximum of any pairwise divergence over
        all pairs is therefore its maximum over the orbits' ``(p, q)`` (widened by ``rel_error``).
        """
        raise NotImplementedError

    def orbit_of(self, i: int, j: int) -> int:  # pragma: no cover - abstract
        """Index in :meth:`pair_orbits` of the orbit of the ordered input pair ``(i, j)``, ``i != j``."""
        raise NotImplementedError

    def pair_orbit(self, i: int, j: int) -> tuple[Hashable, PairOrbit]:
        """``(key, orbit)``: an orbit whose divergences are exactly those of the ordered pair ``(i, j)`` and a key
        naming it (equal keys, equal orbits). Default: the listed orbit :meth:`orbit_of` names; a subclass whose
        :meth:`orbit_of` may name a larger orbit (a product with only its maximal pair types listed) builds the
        pair's own."""
        t = self.orbit_of(i, j)
        return t, self.pair_orbits()[t]

    def row_sum_bounds(self) -> tuple[float, float]:  # pragma: no cover - abstract
        """``(low, high)`` with ``low <= sum_y K(x, y) <= high`` exactly for every stored row x."""
        raise NotImplementedError

    def minorant_mass(self) -> float:  # pragma: no cover - abstract
        """A lower bound of ``sum_y min_x K(x, y)`` (the Doeblin minorant's mass) of the stored rows."""
        raise NotImplementedError

    def minorant(self, memory_limit: Any = None) -> np.ndarray:  # pragma: no cover - abstract
        """``nu(y) = min_x K(x, y)`` as a dense vector of length m (size-checked)."""
        raise NotImplementedError

    def smallest_positive(self) -> float:  # pragma: no cover - abstract
        """The smallest positive stored entry (1.0 when there is none)."""
        raise NotImplementedError

    def output_support(self) -> Sequence:
        """Labels of the outputs some input reaches with positive probability (default: all of them;
        a subclass with structural zero columns overrides it)."""
        return self._out_labels
