"""Label sequences of structured operators: :class:`Labels`, ``range(n)`` without a tuple or a dictionary.

A structured operator may have 10^6 or 2^128 inputs; its default labels are ``range(n)`` (index
arithmetic, O(1) memory) and given labels a tuple indexed on first use. :class:`Labels` behaves like
the label tuples of a plain :class:`~chainamp.operators.MarkovOperator` (equality with tuples,
concatenation, ``index``) so that code written against those keeps working.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .._numerics import check_memory
from ..errors import InvalidOperatorError
from .markov import _check_labels

__all__ = ["Labels", "same_label_set"]


class Labels(Sequence):
    """An immutable sequence of distinct labels: ``range(n)`` (index arithmetic, O(1) memory) or a tuple
    (index by a dictionary built on first use). Compares equal to any sequence with the same items in the
    same order (a tuple included), like the tuples plain operators use.

    >>> Labels(range(3)) == (0, 1, 2), Labels(range(10**9)).index(12345), len(Labels(("a", "b")))
    (True, 12345, 2)
    """

    __slots__ = ("_items", "_map")

    def __init__(self, items: range | tuple):
        self._items = items
        self._map: dict | None = None

    @classmethod
    def of(cls, labels: Iterable[Hashable] | None, n: int, which: str) -> Labels:
        """``range(n)`` when ``labels`` is None, else the labels checked as plain operators check them."""
        if labels is None:
            return cls(range(n))
        if isinstance(labels, Labels):
            if len(labels) != n:
                raise InvalidOperatorError(f"{which} has {len(labels)} labels but the operator has {n} {which}")
            return labels
        return cls(_check_labels(labels, n, which))

    @property
    def is_range(self) -> bool:
        """True for the default labels ``0, ..., n - 1``."""
        return isinstance(self._items, range) and self._items.start == 0 and self._items.step == 1

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self._items[i])
        return self._items[i]

    def __iter__(self) -> Iterator:
        return iter(self._items)

    def __contains__(self, label: object) -> bool:
        try:
            self.index(label)
        except (KeyError, TypeError):
            return False
        return True

    def index(self, label: Hashable, *args: Any) -> int:  # noqa: D401 - Sequence.index signature
        """Position of ``label`` (``KeyError`` when absent)."""
        items = self._items
        if isinstance(items, range):
            if isinstance(label, (bool, np.bool_)) or not isinstance(label, (numbers.Integral, float, np.floating)):
                raise KeyError(label)
            if isinstance(label, (float, np.floating)):
                if not float(label).is_integer():
                    raise KeyError(label)
            value = int(label)
            if value not in items:
                raise KeyError(label)
            return (value - items.start) // items.step
        if self._map is None:
            self._map = {lab: i for i, lab in enumerate(items)}
        return self._map[label]

    def positions(self, labels: Iterable[Hashable]) -> np.ndarray:
        """Positions of many labels at once (vectorised for integer labels of ``range(n)``)."""
        if self.is_range and isinstance(labels, (Labels, range)) and (
                not isinstance(labels, Labels) or labels.is_range):
            return np.arange(len(labels), dtype=np.int64)
        return np.fromiter((self.index(lab) for lab in labels), dtype=np.int64)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Labels):
            other = other._items
        if isinstance(other, (range, tuple, list)):
            if len(other) != len(self._items):
                return False
            if isinstance(other, range) and isinstance(self._items, range):
                return other == self._items
            return all(a == b for a, b in zip(self._items, other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(tuple(self._items))

    def __add__(self, other: Any) -> tuple:
        """Concatenation gives a tuple, as for the plain operators' label tuples."""
        if isinstance(other, (Labels, tuple, range, list)):
            return tuple(self._items) + tuple(other)
        return NotImplemented

    def __radd__(self, other: Any) -> tuple:
        if isinstance(other, (tuple, range, list)):
            return tuple(other) + tuple(self._items)
        return NotImplemented

    def __repr__(self) -> str:
        n = len(self._items)
        if n <= 6:
            return repr(tuple(self._items))
        head = ", ".join(repr(x) for x in self._items[:4])
        return f"({head}, ... ({n} labels))"


class _IndexMap(Mapping):
    """``label -> position`` over :class:`Labels`, for code written against the plain operators' dicts."""

    __slots__ = ("_labels",)

    def __init__(self, labels: Labels):
        self._labels = labels

    def __getitem__(self, label: Hashable) -> int:
        return self._labels.index(label)

    def __iter__(self) -> Iterator:
        return iter(self._labels)

    def __len__(self) -> int:
        return len(self._labels)


#: Bytes per label of a set built to compare two label sequences (the slot, and the label object itself when
#: a lazy sequence makes it on the fly), rounded up.
_SET_LABEL_BYTES = 100.0


def same_label_set(a: Any, b: Any, what: str) -> bool:
    """Whether two label sequences hold the same labels, in any order, without listing lazy ones: equal
    ``range`` labels and equal Kronecker label spaces compare by their description; other sequences as two
    sets, sized first (``ResourceLimitError`` naming ``what``)."""
    try:
        n_a, n_b = len(a), len(b)
    except OverflowError:  # more than sys.maxsize labels: only lazy label spaces get there
        return type(a) is type(b) and a == b
    if n_a != n_b:
        return False
    if a is b or (isinstance(a, Labels) and isinstance(b, Labels) and type(a) is type(b)
                  and (type(a) is not Labels or (a.is_range and b.is_range)) and a == b):
        return True
    check_memory(_SET_LABEL_BYTES * (float(n_a) + float(n_b)), f"{what}: comparing two sets of {n_a} labels",
                 hint="give both operators the default labels 0..k-1")
    return set(a) == set(b)
