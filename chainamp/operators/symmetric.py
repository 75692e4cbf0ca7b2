"""The k-ary symmetric channel (k-ary randomized response) as a structured operator.

``K(x, y) = d`` when ``y = x`` and ``o`` otherwise, ``d + (k - 1) o = 1``: "keep the input with
probability ``a = d - o``, else report a uniformly random value" (``a`` may be negative down to
``-1 / (k - 1)``). k-ary randomized response (Kairouz, Oh, Viswanath 2016; Wang et al. 2017) is
``d = e^eps / (e^eps + k - 1)``. Products stay symmetric: with ``K_i = a_i I + (1 - a_i) J / k``,
``K_1 K_2 = a_1 a_2 I + (1 - a_1 a_2) J / k``, i.e. (no subtraction, every term non-negative)

    d_12 = d_1 d_2 + (k - 1) o_1 o_2,        o_12 = d_1 o_2 + o_1 d_2 + (k - 2) o_1 o_2,

computed exactly from the stored doubles (fractions) and rounded once to nearest: a relative error of
at most ``u = 2^-53`` per entry (an absolute ``2^-1075`` in the subnormal range).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .._numerics import ROW_SUM_ATOL, UNIT_ROUNDOFF, check_epsilon, check_int, check_memory, check_real
from ..errors import IncompatibleOperatorsError, InvalidOperatorError, InvalidParameterError
from .structured import Labels, PairOrbit, StructuredOperator

__all__ = ["SymmetricChannel"]


def _down(x: Fraction) -> float:
    """The largest double <= x (x >= 0)."""
    f = float(x)  # int / int true division: correctly rounded
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


def _up(x: Fraction) -> float:
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


class SymmetricChannel(StructuredOperator):
    """k-ary symmetric channel: ``K(x, x) = d``, ``K(x, y) = o`` for ``y != x``, stored as the two doubles.

    Parameters
    ----------
    k : int
        Number of values (inputs = outputs), ``>= 1``.
    diagonal, off_diagonal : float
        ``d`` and ``o``: finite, ``>= 0``, with ``d + (k - 1) o`` within ``row_sum_atol`` of 1 (checked
        exactly). As for any operator, the rows stand for their normalised rows.
    labels : sequence of hashable, optional
        ``k`` distinct labels of the values (default ``range(k)``, kept as a range: O(1) memory).
    row_sum_atol : float, optional

    Restricting to a subset of inputs keeps the structure (rows are inputs, columns all k values);
    ``@`` of two symmetric channels on the same values is one (closed form in the module docstring);
    every other product is formed densely after the memory check.

    Examples
    --------
    >>> K = SymmetricChannel.from_epsilon(4, math.log(3))
    >>> K.diagonal, K.off_diagonal, K.matrix[0].tolist()
    (0.5, 0.16666666666666666, [0.5, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666])
    >>> KK = K @ K
    >>> isinstance(KK, SymmetricChannel), round(KK.diagonal, 6)
    (True, 0.333333)
    """

    def __init__(self, k: int, diagonal: float, off_diagonal: float, labels: Sequence[Hashable] | None = None, *,
                 row_sum_atol: float = ROW_SUM_ATOL) -> None:
        k = check_int(k, "k", minimum=1)
        d, o = check_real(diagonal, "diagonal"), check_real(off_diagonal, "off_diagonal")
        atol = check_real(row_sum_atol, "row_sum_atol")
        for name, v in (("diagonal", d), ("off_diagonal", o)):
            if not math.isfinite(v) or v < 0.0:
                raise InvalidOperatorError(f"{name} must be finite and >= 0 (got {v!r})")
        s = Fraction(d) + (k - 1) * Fraction(o)
        if abs(s - 1) > Fraction(atol):
            raise InvalidOperatorError(f"rows must sum to 1 within row_sum_atol={atol:g}: diagonal + (k - 1) "
                                       f"off_diagonal = {float(s)!r} (k={k})")
        self._setup(k, d, o, Labels.of(labels, k, "labels"), None, None)

    def _setup(self, k: int, d: float, o: float, out_labels: Labels, pos: np.ndarray | None,
               in_labels: Any) -> None:
        n = k if pos is None else int(pos.size)
        StructuredOperator.__init__(self, n, k, out_labels if pos is None else in_labels, out_labels)
        if pos is not None:
            pos.flags.writeable = False
        self._k, self._d, self._o, self._pos = k, d, o, pos

    @classmethod
    def _make(cls, k: int, d: float, o: float, out_labels: Labels, pos: np.ndarray | None = None,
              in_labels: Any = None) -> SymmetricChannel:
        obj = cls.__new__(cls)
        if pos is not None and pos.size == k and np.array_equal(pos, np.arange(k)):
            pos, in_labels = None, None
        obj._setup(k, d, o, out_labels, pos, in_labels)
        return obj

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_epsilon(cls, k: int, epsilon: float, labels: Sequence[Hashable] | None = None) -> SymmetricChannel:
        """k-ary randomized response: ``d = 1 / (1 + (k - 1) e^-eps)``, ``o = e^-eps d`` (no overflow).

        >>> SymmetricChannel.from_epsilon(2, math.log(3)).matrix.tolist()
        [[0.75, 0.25], [0.25, 0.75]]
        """
        k = check_int(k, "k", minimum=2)
        eps = check_epsilon(epsilon, allow_inf=False)
        t = math.exp(-eps)
        denom = 1.0 + (k - 1) * t
        return cls(k, 1.0 / denom, t / denom, labels)

    @classmethod
    def from_keep(cls, k: int, keep: float, labels: Sequence[Hashable] | None = None) -> SymmetricChannel:
        """Keep the value with probability ``keep``, else report a uniform one: ``o = (1 - keep) / k``,
        ``d = keep + o`` (``keep`` in ``[-1 / (k - 1), 1]``).

        >>> SymmetricChannel.from_keep(4, 0.5).matrix[0].tolist()
        [0.625, 0.125, 0.125, 0.125]
        """
        k = check_int(k, "k", minimum=2)
        a = check_real(keep, "keep")
        if not -1.0 / (k - 1) <= a <= 1.0:
            raise InvalidParameterError(f"keep must be in [-1/(k-1), 1] = [{-1.0 / (k - 1)!r}, 1] (got {a!r})")
        o = (1.0 - a) / k
        return cls(k, max(0.0, float(Fraction(1) - (k - 1) * Fraction(o))), o, labels)

    # ------------------------------------------------------------ parameters
    @property
    def k(self) -> int:
        """Number of values (outputs)."""
        return self._k

    @property
    def diagonal(self) -> float:
        """``d = K(x, x)`` as stored."""
        return self._d

    @property
    def off_diagonal(self) -> float:
        """``o = K(x, y)``, ``y != x``, as stored."""
        return self._o

    @property
    def positions(self) -> np.ndarray | None:
        """Output position of each input (None when the inputs are all the values, in the outputs' order)."""
        return self._pos

    def _input_pos(self, i: int) -> int:
        return i if self._pos is None else int(self._pos[i])

    # ------------------------------------------------------------ StructuredOperator hooks
    def _key(self):
        return (self._k, self._d, self._o, None if self._pos is None else self._pos.tobytes())

    def _describe(self) -> str:
        return f"symmetric channel d={self._d!r}, o={self._o!r}"

    def _dense_matrix(self) -> np.ndarray:
        n, k = self.shape
        mat = np.full((n, k), self._o)
        pos = np.arange(n) if self._pos is None else self._pos
        mat[np.arange(n), pos] = self._d
        return mat

    def _row(self, i: int) -> np.ndarray:
        out = np.full(self._k, self._o)
        out[self._input_pos(i)] = self._d
        return out

    def _apply(self, vec: np.ndarray) -> np.ndarray:
        check_memory(8.0 * self._k, f"a distribution over {self._k} outputs")
        out = np.full(self._k, self._o * float(vec.sum()))
        pos = np.arange(vec.size) if self._pos is None else self._pos
        np.add.at(out, pos, (self._d - self._o) * vec)
        return np.maximum(out, 0.0)

    def _nnz(self) -> int:
        n, k = self.shape
        if self._o > 0.0:
            return n * k - (n if self._d == 0.0 else 0)
        return n if self._d > 0.0 else 0

    def _restrict(self, idx: np.ndarray, labels: tuple) -> SymmetricChannel:
        pos = idx if self._pos is None else self._pos[idx]
        return SymmetricChannel._make(self._k, self._d, self._o, self.outputs, np.array(pos, dtype=np.int64),
                                      labels)

    def _compose(self, other: StructuredOperator):
        if not isinstance(other, SymmetricChannel) or other.shape[0] != other._k or other._k != self._k:
            return NotImplemented
        return self._compose_exact(other)[0]

    def _compose_exact(self, other: SymmetricChannel) -> tuple[SymmetricChannel, Fraction, Fraction]:
        """``self @ other`` (other aligned: its inputs are self's outputs in order) and the exact entries."""
        k = self._k
        d1, o1, d2, o2 = (Fraction(v) for v in (self._d, self._o, other._d, other._o))
        d12 = d1 * d2 + (k - 1) * o1 * o2
        o12 = d1 * o2 + o1 * d2 + (k - 2) * o1 * o2
        # row i keeps its value at output position pos2[pos1[i]]
        p1 = np.arange(self.shape[0]) if self._pos is None else self._pos
        pos = p1 if other._pos is None else other._pos[p1]
        in_labels = None if self._pos is None and other._pos is None else tuple(self.inputs)
        out = SymmetricChannel._make(k, float(d12), float(o12), other.outputs,
                                     None if in_labels is None else np.array(pos, dtype=np.int64), in_labels)
        return out, d12, o12

    def _compose_with_error(self, other: StructuredOperator):
        if not isinstance(other, SymmetricChannel) or other.shape[0] != other._k or other._k != self._k:
            return NotImplemented
        out, d12, o12 = self._compose_exact(other)
        # each entry is the exact value rounded to nearest once: within u/(1 - u) < 2u of the stored double when
        # normal; in the subnormal range within 2^-1075 absolute (and a positive value may round to 0)
        tiny = any(0 < x < 2.0**-1022 for x in (d12, o12))
        lost = any(x > 0 and float(x) == 0.0 for x in (d12, o12))
        return out, 2.0 * UNIT_ROUNDOFF, (2.0**-1074 if tiny else 0.0), not lost

    def _power(self, t: int):
        if self._pos is not None:
            return NotImplemented
        result = SymmetricChannel._make(self._k, 1.0, 0.0, self.outputs)
        base = self
        while t:
            if t & 1:
                result = result._compose_exact(base)[0]
            t >>= 1
            if t:
                base = base._compose_exact(base)[0]
        return result

    # ------------------------------------------------------------ structural queries
    def pair_orbits(self) -> tuple[PairOrbit, ...]:
        """One orbit: every ordered pair ``(x, x')`` has blocks ``{x}``, ``{x'}`` and the other ``k - 2`` values,
        ``p = (d, o, (k - 2) o)``, ``q = (o, d, (k - 2) o)`` (the last block has ratio 1; ``(k - 2) o`` is
        one rounded product: ``rel_error`` u unless it is exact; the ratios are exact).

        >>> SymmetricChannel.from_epsilon(4, math.log(3)).pair_orbits()[0].p.tolist()
        [0.5, 0.16666666666666666, 0.3333333333333333]
        """
        n, k = self.shape
        if n < 2:
            return ()
        d, o = self._d, self._o
        i0, i1 = self._input_pos(0), self._input_pos(1)
        if k == 2:
            p, q, sizes, rel = [d, o], [o, d], (1, 1), 0.0
        else:
            rest = (k - 2) * o
            rel = 0.0 if Fraction(rest) == (k - 2) * Fraction(o) else 2.0 * UNIT_ROUNDOFF
            p, q, sizes = [d, o, rest], [o, d, rest], (1, 1, k - 2)

        def members(b: int, i0: int = i0, i1: int = i1, k: int = k):
            if b == 0:
                return (i0,)
            if b == 1:
                return (i1,)
            return (y for y in range(k) if y != i0 and y != i1)

        return (PairOrbit(p=np.array(p), q=np.array(q), pair=(0, 1), count=n * (n - 1), rel_error=rel,
                          ratio_error=0.0, sizes=sizes, members=members),)

    def orbit_of(self, i: int, j: int) -> int:
        n = self.shape[0]
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise IncompatibleOperatorsError(f"({i}, {j}) is not an ordered pair of distinct inputs of {n}")
        return 0

    def row_sum_bounds(self) -> tuple[float, float]:
        s = Fraction(self._d) + (self._k - 1) * Fraction(self._o)
        return _down(s), _up(s)

    def minorant_mass(self) -> float:
        n, k = self.shape
        d, o = Fraction(self._d), Fraction(self._o)
        if n == 1:
            return _down(d + (k - 1) * o)
        return _down(n * min(d, o) + (k - n) * o)

    def minorant(self, memory_limit: Any = None) -> np.ndarray:
        n, k = self.shape
        check_memory(8.0 * k, f"the Doeblin minorant over {k} outputs", memory_limit=memory_limit)
        nu = np.full(k, self._o)
        pos = np.arange(n) if self._pos is None else self._pos
        nu[pos] = self._d if n == 1 else min(self._d, self._o)
        return nu

    def smallest_positive(self) -> float:
        """Smallest positive entry (1.0 when there is none)."""
        pos = [v for v in ((self._d,) + ((self._o,) if self._k > 1 else ())) if v > 0.0]
        return min(pos) if pos else 1.0

    def output_support(self):
        if self._o > 0.0 and (self._k > 1 or self._d > 0.0):
            return self.outputs
        n = self.shape[0]
        pos = np.arange(n) if self._pos is None else self._pos
        if self._d > 0.0 and n == self._k:
            return self.outputs
        return tuple(self.outputs[int(p)] for p in np.sort(pos)) if self._d > 0.0 else ()
