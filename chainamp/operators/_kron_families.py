"""Input families of Kronecker products and the types of their pairs (private to :mod:`.kronecker`).

The coordinates ``0..d-1`` of a product are laid out in *runs* ``((f, n_f), ...)``: ``n_f`` consecutive
coordinates with factor ``f``. An input is a tuple of factor input indices, one per coordinate. The
*type* of an ordered pair ``(x, x')`` is the multiset of ``(f, x_j, x'_j)`` over the coordinates where
``x_j != x'_j``, stored as a sorted tuple of ``((f, a, b), count)``; the pair's two rows depend on
nothing else up to a permutation of the coordinates (and so of the outputs). Families:

* :class:`AllTuples`: every tuple (the product space), labels the tuples of factor labels;
* :class:`OneHot`: the one-hot vectors of one run (unary encoding), labels the categories;
* :class:`FixedWeight`: the binary tuples of one run with exactly h ones (RAPPOR's Bloom filters);
* :class:`Explicit`: any list of tuples, types found blockwise over the pairs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterator, Sequence

import numpy as np

from .._numerics import check_memory, map_blocks
from ..errors import ResourceLimitError
from ._kron_labels import TupleLabels
from .labels import Labels

__all__: list[str] = []

#: largest number of pair types a family enumerates (the orbits of :meth:`KroneckerOperator.pair_orbits`)
MAX_PAIR_TYPES = 100_000


def run_offsets(runs: tuple) -> list[int]:
    out, pos = [], 0
    for _, n in runs:
        out.append(pos)
        pos += n
    return out


def type_key(groups: dict) -> tuple:
    return tuple(sorted((g, c) for g, c in groups.items() if c))


def _check_types(n_types: int, what: str) -> None:
    if n_types > MAX_PAIR_TYPES:
        raise ResourceLimitError(f"{what} has {n_types} types of input pairs, above {MAX_PAIR_TYPES}: restrict the "
                                 "operator to the inputs that matter (e.g. the outputs a mechanism can produce)")


# ----------------------------------------------------------------- families
class Family:
    """Base: ``n`` inputs; ``labels``; ``coords(i)`` (factor input indices, one per coordinate);
    ``pair_types()`` -> ``{type: (i, j, count)}``; ``type_of(i, j)``."""

    n: int
    labels: Labels
    key: tuple

    def type_of(self, i: int, j: int) -> tuple:
        return _type_from_coords(self.coords(i), self.coords(j), self.factor_ids())

    def factor_ids(self) -> np.ndarray:
        return np.concatenate([np.full(c, f, dtype=np.int64) for f, c in self.runs])


def _type_from_coords(x, y, fids) -> tuple:
    x, y = np.asarray(x), np.asarray(y)
    diff = np.flatnonzero(x != y)
    groups: dict = {}
    for j in diff:
        g = (int(fids[j]), int(x[j]), int(y[j]))
        groups[g] = groups.get(g, 0) + 1
    return type_key(groups)


class AllTuples(Family):
    """Every tuple of factor inputs (the product space)."""

    def __init__(self, runs: tuple, in_axes: Sequence[tuple]):
        self.runs = runs
        self.sizes = [len(a) for a in in_axes]
        self.labels = TupleLabels(in_axes, runs)
        self.n = self.labels.size
        self.key = ("all",)

    def coords(self, i: int) -> list[int]:
        return self.labels.coords(i)

    def n_types(self, mirror: dict | None = None, maximal: bool = False) -> int:
        total = 1
        for f, c in self.runs:
            k = len(_classes(f, self.sizes[f], mirror or {}))
            total *= (math.comb(c + k - 1, k - 1) if maximal else math.comb(c + k, k)) if k else 1
        return total if maximal else total - 1

    def pair_types(self, mirror: dict | None = None, maximal: bool = False) -> dict:
        """``{type: (i, j, count)}``; with ``mirror`` (``(f, a, b) -> (f, b', a')`` for groups equal to another
        up to an output relabelling) the types are counted in canonical groups; with ``maximal`` only the
        types where every coordinate differs (each other type is contained in one of them)."""
        mirror = mirror or {}
        _check_types(self.n_types(mirror, maximal), "the product space")
        per_run = []
        for f, c in self.runs:
            s = self.sizes[f]
            classes = _classes(f, s, mirror)
            opts = []
            vectors = _exact_vectors(len(classes), c) if maximal else _bounded_vectors(len(classes), c)
            for vec in vectors:
                used = sum(vec)
                ways, left = 1, c
                for v in vec:  # the multinomial coefficient c! / (prod v! (c - used)!) as binomials
                    ways *= math.comb(left, v)
                    left -= v
                ways *= math.prod(w ** v for (_, w), v in zip(classes, vec)) * s ** (c - used)
                opts.append(([(g, v) for (g, _), v in zip(classes, vec) if v], ways))
            per_run.append(opts)
        out = {}
        for combo in itertools.product(*per_run):
            groups: dict = {}
            count = 1
            for gs, ways in combo:
                count *= ways
                for g, v in gs:
                    groups[g] = groups.get(g, 0) + v
            key = type_key(groups)
            if key in out:  # a factor on several runs: the same type from several splits
                out[key] = (*out[key][:2], out[key][2] + count)
            elif key:
                out[key] = (*self._witness(key), count)
        return out

    def count_of(self, key: tuple, mirror: dict | None = None) -> int:
        """The number of ordered pairs of type ``key`` (canonical groups under ``mirror``): per factor f on
        ``c_f`` coordinates, choose which coordinates fall in each group g (``v_g`` of them), each in one of
        the ``w_g`` raw (a, b) classes of g, the ``c_f - sum v`` others equal (``s_f`` values each)."""
        mirror = mirror or {}
        per_factor: dict = {}
        for f, c in self.runs:
            per_factor[f] = per_factor.get(f, 0) + c
        total = 1
        for f, c in per_factor.items():
            weights = dict(_classes(f, self.sizes[f], mirror))
            left = c
            for (gf, a, b), v in key:
                if gf == f:
                    total *= math.comb(left, v) * weights[(gf, a, b)] ** v
                    left -= v
            total *= self.sizes[f] ** left
        return total

    def dominating_type(self, key: tuple, mirror: dict) -> tuple:
        """A type where every coordinate differs containing ``key`` (the free coordinates of each factor get
        its first canonical group)."""
        groups = dict(key)
        per_factor: dict = {}
        for f, c in self.runs:
            per_factor[f] = per_factor.get(f, 0) + c
        for f, total in per_factor.items():
            classes = _classes(f, self.sizes[f], mirror)
            free = total - sum(v for (gf, _, _), v in key if gf == f)
            if classes and free > 0:
                g = classes[0][0]
                groups[g] = groups.get(g, 0) + free
        return type_key(groups)

    def _witness(self, key: tuple) -> tuple[int, int]:
        offs = run_offsets(self.runs)
        d = sum(c for _, c in self.runs)
        x = np.zeros(d, dtype=np.int64)
        y = np.zeros(d, dtype=np.int64)
        slots: dict = {}  # factor -> its coordinates, run by run
        for r, (f, c) in enumerate(self.runs):
            slots.setdefault(f, []).append(np.arange(offs[r], offs[r] + c))
        slots = {f: np.concatenate(v) for f, v in slots.items()}
        used = {f: 0 for f in slots}
        for (f, a, b), v in key:
            pos = slots[f][used[f]:used[f] + v]
            x[pos], y[pos] = a, b
            used[f] += v
        return self.labels.index_of_coords(x), self.labels.index_of_coords(y)


def _classes(f: int, s: int, mirror: dict) -> list[tuple[tuple, int]]:
    """The canonical groups ``(f, a, b)`` of factor f with the number of ordered pairs mapped to each."""
    out: dict = {}
    for a in range(s):
        for b in range(s):
            if a != b:
                g = mirror.get((f, a, b), (f, a, b))
                out[g] = out.get(g, 0) + 1
    return list(out.items())


def _exact_vectors(k: int, total: int) -> Iterator[tuple]:
    """Vectors of k non-negative ints with sum == total."""
    if k == 0:
        if total == 0:
            yield ()
        return
    if k == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _exact_vectors(k - 1, total - first):
            yield (first,) + rest


def _bounded_vectors(k: int, total: int) -> Iterator[tuple]:
    """Vectors of k non-negative ints with sum <= total."""
    if k == 0:
        yield ()
        return
    for first in range(total + 1):
        for rest in _bounded_vectors(k - 1, total - first):
            yield (first,) + rest


class OneHot(Family):
    """The k one-hot vectors of a run of k coordinates (one factor): ``hot`` at the category, ``cold`` elsewhere."""

    def __init__(self, k: int, hot: int, cold: int, labels: Labels):
        self.runs = ((0, k),)
        self.n = k
        self.hot, self.cold = hot, cold
        self.labels = labels
        self.key = ("onehot", hot, cold, None if labels.is_range else tuple(labels))

    def coords(self, i: int) -> np.ndarray:
        check_memory(8.0 * self.n, f"a one-hot vector of {self.n} coordinates")
        out = np.full(self.n, self.cold, dtype=np.int64)
        out[i] = self.hot
        return out

    def type_of(self, i: int, j: int) -> tuple:
        return self._key()

    def _key(self) -> tuple:
        return type_key({(0, self.hot, self.cold): 1, (0, self.cold, self.hot): 1})

    def pair_types(self) -> dict:
        return {self._key(): (0, 1, self.n * (self.n - 1))} if self.n > 1 else {}


class FixedWeight(Family):
    """The tuples of a run of m binary coordinates with exactly h at ``one`` (the others ``zero``), in the
    order of :func:`itertools.combinations` of the positions of the ones; labels the tuples of factor labels."""

    def __init__(self, m: int, h: int, one: int, zero: int, axis: tuple):
        self.runs = ((0, m),)
        self.m, self.h, self.one, self.zero = m, h, one, zero
        self.n = math.comb(m, h)
        self.axis = axis
        self.key = ("weight", m, h, one, zero)
        self.labels = _CombinationLabels(self)

    def ones(self, i: int) -> tuple:
        """The positions of the ones of filter ``i`` (unranking in lexicographic order)."""
        out, start, h = [], 0, self.h
        for pos in range(self.m):
            if h == 0:
                break
            c = math.comb(self.m - pos - 1, h - 1)
            if i < c:
                out.append(pos)
                h -= 1
            else:
                i -= c
        return tuple(out)

    def rank(self, ones: Sequence[int]) -> int:
        i, prev, h = 0, -1, self.h
        for pos in ones:
            for skip in range(prev + 1, pos):
                i += math.comb(self.m - skip - 1, h - 1)
            prev, h = pos, h - 1
        return i

    def coords(self, i: int) -> np.ndarray:
        out = np.full(self.m, self.zero, dtype=np.int64)
        out[list(self.ones(i))] = self.one
        return out

    def type_of(self, i: int, j: int) -> tuple:
        a = len(set(self.ones(i)) - set(self.ones(j)))
        return self._key(a)

    def _key(self, a: int) -> tuple:
        return type_key({(0, self.one, self.zero): a, (0, self.zero, self.one): a})

    def pair_types(self) -> dict:
        out = {}
        m, h = self.m, self.h
        for a in range(1, min(h, m - h) + 1):
            x = tuple(range(h))
            y = tuple(range(a, h)) + tuple(range(h, h + a))  # shares h - a ones with x
            out[self._key(a)] = (self.rank(x), self.rank(sorted(y)), self.n * math.comb(h, a) * math.comb(m - h, a))
        return out


class _CombinationLabels(Labels):
    __slots__ = ("_fam",)

    def __init__(self, fam: FixedWeight):
        self._items = None
        self._map = None
        self._fam = fam

    @property
    def is_range(self) -> bool:
        return False

    def __len__(self) -> int:
        return self._fam.n

    def __bool__(self) -> bool:
        return self._fam.n > 0

    def __getitem__(self, i):
        fam = self._fam
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(fam.n)))
        if i < 0:
            i += fam.n
        if not 0 <= i < fam.n:
            raise IndexError("label index out of range")
        ones = set(fam.ones(i))
        return tuple(fam.axis[fam.one] if p in ones else fam.axis[fam.zero] for p in range(fam.m))

    def __iter__(self) -> Iterator:
        return (self[i] for i in range(self._fam.n))

    def index(self, label: Hashable, *args) -> int:
        fam = self._fam
        if not isinstance(label, tuple) or len(label) != fam.m:
            raise KeyError(label)
        ones = [p for p, v in enumerate(label) if v == fam.axis[fam.one]]
        if len(ones) != fam.h or any(v != fam.axis[fam.zero] for p, v in enumerate(label) if p not in set(ones)):
            raise KeyError(label)
        return fam.rank(ones)

    def positions(self, labels) -> np.ndarray:
        return np.fromiter((self.index(lab) for lab in labels), dtype=np.int64)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _CombinationLabels):
            return self._fam.key == other._fam.key and self._fam.axis == other._fam.axis
        if isinstance(other, (Labels, tuple, list, range)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._fam.key, self._fam.axis))

    def __repr__(self) -> str:
        return f"BloomFilters({self._fam.n} filters of {self._fam.m} bits with {self._fam.h} ones)"


class Explicit(Family):
    """An explicit list of tuples (rows of ``X``, factor input indices) with their labels."""

    def __init__(self, runs: tuple, X: np.ndarray, labels: Labels):
        self.runs = runs
        self.X = X
        self.n = X.shape[0]
        self.labels = labels
        self.key = ("explicit", X.tobytes(), tuple(labels))
        self._types: dict | None = None

    def coords(self, i: int) -> np.ndarray:
        return self.X[i]

    def pair_types(self, *, executor=None, progress=None) -> dict:
        if self._types is None:
            self._types = _scan_types(self.X, self.factor_ids(), executor=executor, progress=progress)
        return self._types


def _scan_types(X: np.ndarray, fids: np.ndarray, *, executor=None, progress=None) -> dict:
    """``{type: (i, j, count)}`` over all ordered pairs of rows of X, blockwise (first pair in row-major
    order as the witness; memory O(block x n x groups)). Binary single-factor tuples use packed bits and
    popcounts."""
    n, d = X.shape
    block = max(1, min(256, (1 << 22) // max(1, n * d)))  # block x n x d booleans per comparison
    groups = sorted({(int(f), int(a), int(b)) for f in np.unique(fids) for a in np.unique(X[:, fids == f])
                     for b in np.unique(X[:, fids == f]) if a != b})
    check_memory(8.0 * block * n * (max(len(groups), 1) + d) + 16.0 * n * d,
                 f"scanning the pairs of {n} product inputs")
    blocks = [(X, fids, groups, s, min(n, s + block)) for s in range(0, n, block)]
    out: dict = {}
    total = n * (n - 1)
    for part in map_blocks(_types_block, blocks, total=len(blocks), desc="pair types", unit="blocks",
                           progress=progress, executor=executor):
        for key, (i, j, c) in part.items():
            if key in out:
                out[key] = (*out[key][:2], out[key][2] + c)
            else:
                out[key] = (i, j, c)
    if sum(c for *_, c in out.values()) != total:  # pragma: no cover - internal consistency
        raise AssertionError("pair type scan lost pairs")
    return out


def _types_block(args) -> dict:
    X, fids, groups, s, e = args
    n = X.shape[0]
    A = X[s:e]
    counts = np.zeros((e - s, n, len(groups)), dtype=np.int64)
    for g, (f, a, b) in enumerate(groups):
        cols = fids == f
        counts[:, :, g] = ((A[:, None, :] == a) & (X[None, :, :] == b) & cols[None, None, :]).sum(axis=2)
    flat = counts.reshape(-1, len(groups))
    rows = np.arange(s, e).repeat(n)
    colsj = np.tile(np.arange(n), e - s)
    keep = rows != colsj
    flat, rows, colsj = flat[keep], rows[keep], colsj[keep]
    uniq, first, inv = np.unique(flat, axis=0, return_index=True, return_inverse=True)
    cnt = np.bincount(inv.ravel(), minlength=uniq.shape[0])
    out = {}
    for u, f0, c in zip(uniq, first, cnt):
        key = type_key({groups[g]: int(v) for g, v in enumerate(u)})
        out[key] = (int(rows[f0]), int(colsj[f0]), int(c))
    return out
