"""Kronecker products of small channels kept as their factors: :class:`KroneckerOperator`.

``K = F_1 (x) F_2 (x) ... (x) F_d`` maps an input tuple ``(x_1, ..., x_d)`` to the output tuple drawn
coordinate by coordinate: ``K(x, y) = prod_j F_j(x_j, y_j)``. RAPPOR's permanent and instantaneous
randomized responses on m-bit Bloom filters (Erlingsson, Pihur, Korolova 2014) and the unary encodings
OUE/SUE (Wang, Blocki, Li, Jha 2017) are such products, with ``2^m`` outputs: far too many for a dense
matrix at deployed sizes (m = 128), while the structure answers every question chainamp asks:

* two rows differ only through the coordinates where their inputs differ, and those compress exactly to
  counts (:mod:`._kron_kernels`), so every pair of inputs is one of a few *pair types* (:mod:`._kron_families`),
  each a :class:`~chainamp.operators.PairOrbit` of a few hundred outcomes;
* the Doeblin minorant of a product of independent coordinates is the product of the factors' minorants,
  the ratios of ultra-mixing multiply, and ``(A_1 (x) A_2) (B_1 (x) B_2) = A_1 B_1 (x) A_2 B_2``
  (the mixed-product property), so RAPPOR's two steps compose into one product.

The inputs can be every tuple (:func:`chainamp.kron`), the one-hot vectors of a unary encoding, the
filters with exactly h ones, or any explicit list (:meth:`KroneckerOperator.restrict`). Labels are the
tuples of factor labels in :func:`itertools.product` order (the last coordinate fastest), as for
:func:`chainamp.kron`; one-hot inputs are labelled by their categories.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import UNIT_ROUNDOFF, check_int, check_memory
from ..errors import InvalidOperatorError, InvalidParameterError, ResourceLimitError
from ._kron_families import AllTuples, Explicit, FixedWeight, OneHot, TupleLabels
from ._kron_queries import KroneckerQueries
from .markov import MarkovOperator
from .labels import Labels
from .structured import StructuredOperator

__all__ = ["KroneckerOperator", "kron"]

_U = UNIT_ROUNDOFF


def _plain(op: MarkovOperator, k: int) -> MarkovOperator:
    if not isinstance(op, MarkovOperator):
        raise TypeError(f"factor {k} must be a MarkovOperator, got {type(op).__name__}")
    if isinstance(op, KroneckerOperator) or (isinstance(op, StructuredOperator) and op.shape[0] * op.shape[1] > 4096):
        raise TypeError(f"factor {k} must be a small plain operator (got {op!r}); pass its own factors instead")
    if isinstance(op, StructuredOperator):
        op = op.densify()
    return op if not op.is_sparse else op.to_dense()


class KroneckerOperator(KroneckerQueries, StructuredOperator):
    """A Kronecker product ``F_1 (x) ... (x) F_d`` of small channels, kept as its factors.

    Parameters
    ----------
    factors : sequence of MarkovOperator
        The factors, one per run of coordinates (small plain operators).
    repeats : sequence of int, optional
        How many consecutive coordinates each factor covers (default 1 each): ``KroneckerOperator([F],
        [128])`` is ``F`` on each of 128 coordinates, with 2^128 rows, never enumerated.

    The inputs are all tuples; :meth:`restrict` keeps the structure (and recognises the one-hot vectors
    and the tuples with a fixed number of ones, whose pair types have closed forms), ``@`` with another
    product on the same coordinates is the product of the factor products. :meth:`densify` (and every
    dense code path, through ``K.matrix``) forms ``numpy.kron`` of the factors after a memory check.

    Examples
    --------
    >>> F = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
    >>> K = KroneckerOperator([F], [128])
    >>> K.shape == (2**128, 2**128), K.n_coordinates, K.inputs[1][-2:]
    (True, 128, (0, 1))
    >>> small = KroneckerOperator([F], [2])
    >>> bool(np.array_equal(small.matrix, np.kron(F.matrix, F.matrix)))
    True
    """

    def __init__(self, factors: Sequence[MarkovOperator], repeats: Sequence[int] | None = None) -> None:
        if isinstance(factors, MarkovOperator) or isinstance(factors, (str, bytes)):
            raise TypeError(f"factors must be a sequence of MarkovOperator, got {type(factors).__name__}")
        ops = [_plain(op, k) for k, op in enumerate(factors)]
        if not ops:
            raise InvalidParameterError("KroneckerOperator needs at least one factor")
        if repeats is None:
            reps = [1] * len(ops)
        else:
            if isinstance(repeats, (str, bytes)) or not hasattr(repeats, "__len__"):
                raise TypeError(f"repeats must be a sequence of ints, got {type(repeats).__name__}")
            reps = [check_int(r, f"repeats[{k}]", minimum=1) for k, r in enumerate(repeats)]
            if len(reps) != len(ops):
                raise InvalidParameterError(f"repeats must have one entry per factor ({len(ops)}), got {len(reps)}")
        distinct: list[MarkovOperator] = []
        runs: list[list[int]] = []
        for op, r in zip(ops, reps):
            fid = next((i for i, g in enumerate(distinct) if g is op or (g.inputs == op.inputs and g.outputs
                       == op.outputs and np.array_equal(g.matrix, op.matrix))), None)
            if fid is None:
                distinct.append(op)
                fid = len(distinct) - 1
            if runs and runs[-1][0] == fid:
                runs[-1][1] += r
            else:
                runs.append([fid, r])
        runs_t = tuple((f, c) for f, c in runs)
        self._setup(tuple(distinct), runs_t, AllTuples(runs_t, [tuple(op.inputs) for op in distinct]))

    # ------------------------------------------------------------ construction
    def _setup(self, factors: tuple, runs: tuple, family: Any) -> None:
        self._factors = factors
        self._runs = runs
        self._family = family
        self._mats = tuple(np.asarray(op.matrix, dtype=float) for op in factors)
        out_labels = TupleLabels([tuple(op.outputs) for op in factors], runs)
        n, m = family.n, out_labels.size
        if n < 1 or m < 1:  # pragma: no cover - factors are valid operators
            raise InvalidOperatorError("a Kronecker product needs at least one input and one output")
        # StructuredOperator.__init__ would call len() on the labels, which overflows beyond 2^63 labels
        object.__setattr__(self, "_shape", (_size(n), _size(m)))
        object.__setattr__(self, "_in_labels", family.labels)
        object.__setattr__(self, "_out_labels", out_labels)
        object.__setattr__(self, "_dense", None)
        self._orbits = None
        self._orbit_index = None
        self._mirror: dict = {}
        self._maximal = False

    @classmethod
    def _make(cls, factors: tuple, runs: tuple, family: Any) -> KroneckerOperator:
        obj = cls.__new__(cls)
        obj._setup(factors, runs, family)
        return obj

    @classmethod
    def power(cls, factor: MarkovOperator, m: int) -> KroneckerOperator:
        """``factor`` on each of ``m`` coordinates (``m`` may be huge: nothing is enumerated).

        >>> KroneckerOperator.power(MarkovOperator([[0.5, 0.5], [0.25, 0.75]]), 10**6).n_coordinates
        1000000
        """
        return cls([factor], [check_int(m, "m", minimum=1)])

    @classmethod
    def one_hot(cls, factor: MarkovOperator, k: int, *, hot: Hashable = 1, cold: Hashable = 0,
                labels: Sequence[Hashable] | None = None) -> KroneckerOperator:
        """``factor`` on each of ``k`` coordinates, restricted to the k one-hot inputs (``hot`` at the
        category, ``cold`` elsewhere), labelled by the categories (default ``range(k)``): a unary encoding.

        >>> F = MarkovOperator([[0.75, 0.25], [0.5, 0.5]])
        >>> U = KroneckerOperator.one_hot(F, 10**6)
        >>> U.shape[0], len(U.pair_orbits())
        (1000000, 1)
        """
        k = check_int(k, "k", minimum=1)
        base = cls.power(factor, k)
        F = base._factors[0]
        a, b = F.input_index(hot), F.input_index(cold)
        if a == b:
            raise InvalidParameterError(f"hot and cold must be different inputs of the factor (got {hot!r} twice)")
        labs = Labels.of(labels, k, "labels")
        return cls._make(base._factors, base._runs, OneHot(k, a, b, labs))

    @classmethod
    def fixed_weight(cls, factor: MarkovOperator, m: int, h: int, *, one: Hashable = 1,
                     zero: Hashable = 0) -> KroneckerOperator:
        """``factor`` on each of ``m`` coordinates, restricted to the tuples with exactly ``h`` coordinates
        at ``one`` and the others at ``zero`` (RAPPOR's Bloom filters), in the order of the positions of the
        ones (:func:`itertools.combinations`).

        >>> F = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
        >>> R = KroneckerOperator.fixed_weight(F, 128, 2)
        >>> R.shape[0], R.inputs[0][:3], len(R.pair_orbits())
        (8128, (1, 1, 0), 2)
        """
        m = check_int(m, "m", minimum=1)
        h = check_int(h, "h", minimum=0)
        if h > m:
            raise InvalidParameterError(f"h must be <= m={m} (got {h})")
        base = cls.power(factor, m)
        F = base._factors[0]
        a, b = F.input_index(one), F.input_index(zero)
        if a == b:
            raise InvalidParameterError(f"one and zero must be different inputs of the factor (got {one!r} twice)")
        return cls._make(base._factors, base._runs, FixedWeight(m, h, a, b, tuple(F.inputs)))

    # ------------------------------------------------------------ parameters
    @property
    def factors(self) -> tuple:
        """The runs ``((F, count), ...)``: factor F on ``count`` consecutive coordinates."""
        return tuple((self._factors[f], c) for f, c in self._runs)

    @property
    def n_coordinates(self) -> int:
        """Number of coordinates d."""
        return sum(c for _, c in self._runs)

    @property
    def input_family(self) -> str:
        """``"all"``, ``"one-hot"``, ``"fixed-weight"`` or ``"explicit"``."""
        return {AllTuples: "all", OneHot: "one-hot", FixedWeight: "fixed-weight", Explicit: "explicit"}[
            type(self._family)]

    def input_coordinates(self, i: int) -> np.ndarray:
        """The factor-input indices, coordinate by coordinate, of input ``i`` (never enumerates the inputs).

        >>> F = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
        >>> KroneckerOperator.fixed_weight(F, 5, 2).input_coordinates(0).tolist()
        [1, 1, 0, 0, 0]
        """
        n = self._shape[0]
        if not 0 <= int(i) < n:
            raise IndexError(f"input index {i} out of range for {n} inputs")
        return np.asarray(self._family.coords(int(i)), dtype=np.int64)

    def _coord_factor(self) -> np.ndarray:
        return self._family.factor_ids()

    # ------------------------------------------------------------ StructuredOperator hooks
    def _key(self):
        return (tuple((op.matrix.tobytes(), tuple(op.inputs), tuple(op.outputs)) for op in self._factors),
                self._runs, self._family.key)

    def _describe(self) -> str:
        runs = ", ".join(f"{self._factors[f].shape[0]}x{self._factors[f].shape[1]}^{c}" for f, c in self._runs)
        return f"Kronecker product [{runs}] on {self.input_family} inputs"

    def __repr__(self) -> str:
        n, m = (_fmt_size(v) for v in self._shape)
        return f"KroneckerOperator({n}x{m} structured {self._describe()}, inputs={self._in_labels!r})"

    def densify(self, memory_limit: Any = None) -> MarkovOperator:
        """The dense operator (``numpy.kron`` of the factors, or its rows over the inputs), cached; refused
        with :class:`~chainamp.ResourceLimitError` before allocating when too large (however large).

        >>> F = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
        >>> KroneckerOperator([F], [2]).densify().shape
        (4, 4)
        """
        n, m = self._shape
        if self._dense is None:
            check_memory(nbytes(8, n, m), f"densifying a {n} x {m} KroneckerOperator", memory_limit=memory_limit,
                         hint="use the structured operator's own methods instead")
            self._check_factor_count("densifying")
        return StructuredOperator.densify(self, memory_limit)

    def _dense_matrix(self) -> np.ndarray:
        if isinstance(self._family, AllTuples):
            mat = np.ones((1, 1))
            for f, c in self._runs:
                for _ in range(c):
                    mat = np.kron(mat, self._mats[f])
            return mat
        return np.stack([self._row(i) for i in range(self._shape[0])])

    def _check_factor_count(self, what: str) -> None:
        if self.n_coordinates > MAX_DENSE_FACTORS:
            raise ResourceLimitError(f"{what} a Kronecker product of {self.n_coordinates} factors needs one dense "
                                     f"product per factor, above {MAX_DENSE_FACTORS}; use the structured operator's "
                                     "own methods instead")

    def _row(self, i: int) -> np.ndarray:
        check_memory(nbytes(8, self._shape[1]), f"a row of {self._shape[1]} outputs")
        self._check_factor_count("a row of")
        row = np.ones(1)
        for f, x in zip(self._coord_factor(), self._family.coords(i)):
            row = np.kron(row, self._mats[f][x])
        return row

    def _apply(self, vec: np.ndarray) -> np.ndarray:
        m = self._shape[1]
        check_memory(nbytes(16, m) + nbytes(16, self._shape[0]), f"a distribution over {m} outputs")
        if isinstance(self._family, AllTuples):
            shape = [self._mats[f].shape[0] for f in self._coord_factor()]
            t = np.asarray(vec, dtype=float).reshape(shape)
            for ax, f in enumerate(self._coord_factor()):
                t = np.moveaxis(np.tensordot(t, self._mats[f], axes=([ax], [0])), -1, ax)
            return t.ravel()
        out = np.zeros(m)
        for i in np.flatnonzero(vec):
            out += vec[i] * self._row(int(i))
        return out

    def _nnz(self) -> int:
        nz = [np.count_nonzero(M, axis=1) for M in self._mats]
        fids = self._coord_factor()
        if isinstance(self._family, AllTuples):
            return math.prod(int(nz[f].sum()) ** c for f, c in self._runs)
        if isinstance(self._family, OneHot):
            f = nz[0]
            return self._shape[0] * int(f[self._family.hot]) * int(f[self._family.cold]) ** (self._shape[0] - 1)
        if isinstance(self._family, FixedWeight):
            fam, f = self._family, nz[0]
            return fam.n * int(f[fam.one]) ** fam.h * int(f[fam.zero]) ** (fam.m - fam.h)
        return sum(math.prod(int(nz[f][x]) for f, x in zip(fids, self._family.coords(i)))
                   for i in range(self._family.n))

    def _restrict(self, idx: np.ndarray, labels: tuple) -> KroneckerOperator:
        d = self.n_coordinates
        check_memory(8.0 * idx.size * d, f"the input tuples of {idx.size} inputs of {d} coordinates")
        X = np.stack([np.asarray(self._family.coords(int(i)), dtype=np.int64) for i in idx])
        family = _recognise(self, X, labels)
        return KroneckerOperator._make(self._factors, self._runs, family)

    def _compose_parts(self, other: StructuredOperator):
        """The factor products of ``self @ other`` when other is a product on the same coordinates over all
        tuples (each factor's outputs the next's inputs), else None."""
        if not isinstance(other, KroneckerOperator) or not isinstance(other._family, AllTuples):
            return None
        if other.n_coordinates != self.n_coordinates:
            return None
        if other._runs == self._runs:
            pairs = [(f, f) for f in range(len(self._factors))]
            mapping = {f: g for f, g in pairs}
        elif len(other._factors) == 1:
            mapping = {f: 0 for f in range(len(self._factors))}
        else:
            return None
        prods = []
        for f in range(len(self._factors)):
            A, B = self._factors[f], other._factors[mapping[f]]
            if tuple(A.outputs) != tuple(B.inputs):
                return None
            prods.append(A @ B)
        return tuple(prods)

    def _compose(self, other: StructuredOperator):
        prods = self._compose_parts(other)
        if prods is None:
            return NotImplemented
        return KroneckerOperator._make(prods, self._runs, self._family)

    def _compose_with_error(self, other: StructuredOperator):
        prods = self._compose_parts(other)
        if prods is None:
            return NotImplemented
        out = KroneckerOperator._make(prods, self._runs, self._family)
        # each factor entry is a float dot product of t non-negative terms (relative gamma_t), and the
        # operator stands for the exact product of its factors: d of them multiply. A factor entry below
        # 2^-1022 (or a positive one rounded to 0) is only known absolutely: 2^-1074 per term.
        t = max(op.shape[1] for op in self._factors)
        gamma_t = t * _U / (1.0 - t * _U)
        d = self.n_coordinates
        n, m = out._shape
        dense = n.bit_length() + m.bit_length() <= 41  # a densified matrix can exist: it rounds d - 1 times
        log_rel = d * math.log1p(gamma_t) + (d * math.log1p(_U) if dense else 0.0)
        rel = math.nextafter(math.expm1(log_rel * (1.0 + 8 * _U)) * (1.0 + 8 * _U), math.inf)
        factor_tiny = any(bool(np.any((P.matrix > 0) & (P.matrix < 2.0**-1022))) or bool(np.any(
            (P.matrix == 0) & ((A.matrix > 0).astype(float) @ (B.matrix > 0).astype(float) > 0)))
            for P, A, B in zip(prods, self._factors, [other._factors[0]] * len(prods)
                               if len(other._factors) == 1 else other._factors))
        tiny = factor_tiny or (dense and out._log_smallest_positive() < math.log(2.0**-1022) + 1.0)
        return out, rel, (float(d * t) * 2.0**-1074 if tiny else 0.0), not tiny

    def _power(self, t: int):
        return NotImplemented


class _Size(int):
    """An int that prints as ``2^b`` (or ``~2^b``): sizes like 2^1000000 exceed Python's int-to-string limit
    of 4300 digits, and messages that format ``K.shape`` must not fail on them."""

    def __repr__(self) -> str:
        return _fmt_size(int(self))

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return _fmt_size(int(self)) if not spec else format(int(self), spec)

    def __mul__(self, other):  # ``m * 0.0`` and ``m * 8.0`` (byte and error estimates) without OverflowError
        if isinstance(other, float):
            return 0.0 if other == 0.0 else math.copysign(math.inf, other) if self.bit_length() > 1000 else \
                float(self) * other
        return int.__mul__(self, other)

    __rmul__ = __mul__


def nbytes(*factors: int) -> float:
    """The product of ``factors`` as a float, ``inf`` beyond the float range (sizes like 2^1000000)."""
    total = math.prod(int(f) for f in factors)
    return float(total) if total.bit_length() < 1000 else math.inf


def _size(v: int) -> int:
    return _Size(v) if v >= 10**15 else int(v)


def _fmt_size(v: int) -> str:
    """``v`` in digits, or as a power of two / in scientific notation beyond 10^12."""
    if v < 10**12:
        return str(v)
    b = v.bit_length() - 1
    return f"2^{b}" if v == 1 << b else f"~2^{b}"


def _recognise(op: KroneckerOperator, X: np.ndarray, labels: tuple):
    """The family of the rows ``X`` of ``op``: fixed-weight when X is exactly the binary tuples with h ones
    in :func:`itertools.combinations` order (and the labels are those tuples), else explicit."""
    runs = op._runs
    if len(runs) == 1 and op._mats[0].shape[0] == 2 and isinstance(op._family, (AllTuples, FixedWeight)):
        m = runs[0][1]
        h = int(X[0].sum())
        if np.all(X.sum(axis=1) == h) and X.shape[0] == math.comb(m, h):
            fam = FixedWeight(m, h, 1, 0, tuple(op._factors[0].inputs))
            ranks = [fam.rank(tuple(np.flatnonzero(row))) for row in X]
            if ranks == list(range(X.shape[0])) and fam.labels == labels:
                return fam
    return Explicit(runs, X, Labels.of(labels, X.shape[0], "inputs"))


#: ``kron`` keeps the factors (by default) when the product matrix would have more entries than this
KRON_DENSE_MAX_ENTRIES = 1 << 24
#: largest number of factors multiplied out densely (a dense product of 1 x 1 factors is still a loop)
MAX_DENSE_FACTORS = 1 << 12


def kron(*operators: MarkovOperator, structured: bool | None = None) -> MarkovOperator:
    """Product operator for independent coordinates: ``K1 (x) K2 (x) ...``.

    The input ``(x1, x2, ...)`` is mapped coordinate-wise. Labels are tuples with one entry
    per factor, ``(x1, x2, ...)`` with ``x1`` a label of ``K1``, in lexicographic order of
    the factors' label orders (``itertools.product``: the last factor varies fastest), which
    is the row and column order of ``numpy.kron``. Sparse when any factor is sparse.
    ``structured=True`` keeps the factors (:class:`~chainamp.operators.KroneckerOperator`, never
    densified unless asked), ``False`` forms the matrix (size-checked first); by default the factors
    are kept when the matrix would have more than 2^24 entries. Sizes are estimated in floats before any
    big-integer arithmetic or allocation, so a huge product is refused (or kept structured) at once.

    Examples
    --------
    >>> K = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
    >>> KK = kron(K, K)
    >>> KK.shape, KK.inputs[1], round(float(KK.matrix[0, 3]), 4)
    ((4, 4), (0, 1), 0.0625)
    >>> kron(*[K] * 64).shape == (2**64, 2**64)
    True
    """
    if not operators:
        raise InvalidParameterError("kron needs at least one operator")
    same = operators.count(operators[0]) == len(operators)  # one factor repeated (C speed: identity first)
    for k, op in enumerate(operators[:1] if same else operators):
        if not isinstance(op, MarkovOperator):
            raise TypeError(f"kron argument {k} must be a MarkovOperator, got {type(op).__name__}")
    if structured is not None and not isinstance(structured, (bool, np.bool_)):
        raise TypeError(f"structured must be None or a bool, got {type(structured).__name__} {structured!r}")
    if len(operators) == 1 and not structured:
        return operators[0]
    if same:
        distinct = {id(operators[0]): operators[0]}
    else:
        distinct = {id(op): op for op in operators}
    log2 = {i: math.log2(op.shape[0]) + math.log2(op.shape[1]) for i, op in distinct.items()}
    log2_entries = (len(operators) * log2[id(operators[0])] if len(distinct) == 1
                    else sum(log2[id(op)] for op in operators))
    small = all(op.shape[0] * op.shape[1] <= 1 << 16 for op in distinct.values())
    if structured is None:  # large products, and long lists of factors (the dense loop is one kron per factor)
        structured = small and (log2_entries > math.log2(KRON_DENSE_MAX_ENTRIES) or len(operators) > MAX_DENSE_FACTORS)
    if structured:
        if len(distinct) == 1:
            return KroneckerOperator([operators[0]], [len(operators)])
        factors, repeats = [], []
        for op in operators:
            if factors and factors[-1] is op:
                repeats[-1] += 1
            else:
                factors.append(op)
                repeats.append(1)
        return KroneckerOperator(factors, repeats)
    if len(operators) > MAX_DENSE_FACTORS:
        raise ResourceLimitError(f"the dense Kronecker product of {len(operators)} operators needs one product "
                                 f"per factor, above {MAX_DENSE_FACTORS}; pass structured=True to keep the factors")
    sparse = any(op.is_sparse for op in operators)
    if sparse:
        log2_bytes = sum(math.log2(max(op.nnz, 1)) for op in operators) + math.log2(12.0)
    else:
        log2_bytes = log2_entries + 3.0
    check_memory(2.0 ** min(log2_bytes, 1023.0), f"the {'sparse' if sparse else 'dense'} Kronecker product of "
                 f"{len(operators)} operators", hint="pass structured=True to keep the factors")
    mat = operators[0]._data
    for op in operators[1:]:
        mat = sp.kron(mat, op._data, format="csr") if sparse else np.kron(mat, op._data)
    ins = tuple(itertools.product(*(op.inputs for op in operators)))
    outs = tuple(itertools.product(*(op.outputs for op in operators)))
    return MarkovOperator._trusted(mat, ins, outs)
