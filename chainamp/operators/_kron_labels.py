"""Lazy labels of product spaces (private to :mod:`.kronecker`): the tuples of factor labels in
:func:`itertools.product` order, by mixed-radix arithmetic (quasi-linear in the number of coordinates)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterator, Sequence

import numpy as np

from .labels import Labels

__all__: list[str] = []


class TupleLabels(Labels):
    """Lazy labels ``(l_1[x_1], ..., l_d[x_d])`` of the product space in :func:`itertools.product` order (the
    last coordinate fastest), by mixed-radix arithmetic: O(d) per label, no list of all of them."""

    __slots__ = ("_axes", "_runs", "_n", "_index_maps")

    def __init__(self, axes: Sequence[tuple], runs: tuple):
        self._items = None
        self._map = None
        self._axes = tuple(tuple(a) for a in axes)
        self._runs = runs
        self._n = math.prod(len(self._axes[f]) ** c for f, c in runs)
        self._index_maps = [{lab: i for i, lab in enumerate(a)} for a in self._axes]

    @property
    def size(self) -> int:
        return self._n

    @property
    def is_range(self) -> bool:
        return False

    def __len__(self) -> int:
        return self._n  # OverflowError beyond sys.maxsize, as for range

    def __bool__(self) -> bool:
        return self._n > 0

    def coords(self, i: int) -> list[int]:
        """Factor indices of label ``i`` (a Python int), run by run (divide and conquer: quasi-linear in d)."""
        out: list[int] = []
        for f, c in reversed(self._runs):
            s = len(self._axes[f])
            i, low = divmod(i, s ** c)
            out.extend(reversed(_to_digits(low, s, c)))
        return out[::-1]

    def index_of_coords(self, coords: Sequence[int]) -> int:
        i, pos = 0, 0
        for f, c in self._runs:
            s = len(self._axes[f])
            i = i * s ** c + _from_digits(coords[pos:pos + c], s)
            pos += c
        return i

    def _factor_of(self) -> Iterator[int]:
        for f, c in self._runs:
            yield from itertools.repeat(f, c)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(self._n)))
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("label index out of range")
        coords = np.asarray(self.coords(i), dtype=np.int64)
        out, pos = [], 0
        for f, c in self._runs:
            axis = np.empty(len(self._axes[f]), dtype=object)
            axis[:] = self._axes[f]
            out.extend(axis[coords[pos:pos + c]].tolist())
            pos += c
        return tuple(out)

    def __iter__(self) -> Iterator:
        per = [self._axes[f] for f in self._factor_of()]
        return itertools.product(*per)

    def index(self, label: Hashable, *args) -> int:
        if not isinstance(label, tuple):
            raise KeyError(label)
        d = sum(c for _, c in self._runs)
        if len(label) != d:
            raise KeyError(label)
        try:
            coords = [self._index_maps[f][x] for f, x in zip(self._factor_of(), label)]
        except (KeyError, TypeError):
            raise KeyError(label) from None
        return self.index_of_coords(coords)

    def positions(self, labels) -> np.ndarray:
        return np.fromiter((self.index(lab) for lab in labels), dtype=np.int64)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TupleLabels):
            return self._axes == other._axes and self._runs == other._runs
        if isinstance(other, (Labels, tuple, list, range)):
            try:
                if len(other) != self._n:
                    return False
            except OverflowError:
                return False
            return all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._axes, self._runs))

    def __repr__(self) -> str:
        d = sum(c for _, c in self._runs)
        n = str(self._n) if self._n < 10**12 else f"~2^{self._n.bit_length() - 1}"
        return f"TupleLabels({n} tuples of {d} coordinates)"


def _from_digits(digits: Sequence[int], s: int) -> int:
    """The integer with base-s digits ``digits`` (most significant first), in O(M(n) log n)."""
    n = len(digits)
    if n <= 64:
        v = 0
        for x in digits:
            v = v * s + int(x)
        return v
    if s & (s - 1) == 0 and s > 1:  # a power of two: bit packing
        b = s.bit_length() - 1
        bits = (np.asarray(digits, dtype=np.int64)[:, None] >> np.arange(b - 1, -1, -1)) & 1
        return int.from_bytes(np.packbits(bits.astype(np.uint8).ravel(), bitorder="big").tobytes(), "big") >> (
            (-n * b) % 8)
    mid = n // 2
    return _from_digits(digits[:mid], s) * s ** (n - mid) + _from_digits(digits[mid:], s)


def _to_digits(v: int, s: int, n: int) -> list[int]:
    """The n base-s digits of v (most significant first)."""
    if n <= 64:
        out = []
        for _ in range(n):
            v, r = divmod(v, s)
            out.append(r)
        return out[::-1]
    if s & (s - 1) == 0 and s > 1:
        b = s.bit_length() - 1
        raw = np.frombuffer(v.to_bytes((n * b + 7) // 8, "big"), dtype=np.uint8)
        bits = np.unpackbits(raw, bitorder="big")[(-n * b) % 8:].reshape(n, b).astype(np.int64)
        return (bits @ (1 << np.arange(b - 1, -1, -1))).tolist()
    mid = n // 2
    hi, lo = divmod(v, s ** (n - mid))
    return _to_digits(hi, s, mid) + _to_digits(lo, s, n - mid)
