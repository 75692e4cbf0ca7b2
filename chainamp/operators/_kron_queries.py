"""The structural queries of :class:`~chainamp.operators.KroneckerOperator` (a mixin, private).

* :meth:`pair_orbits`: one orbit per pair type of the input family (:mod:`._kron_families`), its rows
  compressed exactly to count vectors (:mod:`._kron_kernels`);
* :meth:`row_sum_bounds`, :meth:`minorant_mass`, :meth:`smallest_positive`: products over the coordinates
  of the factors' exact row sums, column minima and smallest entries, evaluated in log space and rounded
  outward. The Doeblin minorant of a product over all tuples is the product of the factors' minorants
  (``min_x prod_j F(x_j, y_j) = prod_j min_a F(a, y_j)``); over the tuples with h ones (one-hot: h = 1) the
  minimum over the inputs picks, for each output, the h coordinates with the smallest ratio
  ``F(one, y_j) / F(zero, y_j)``, and only the counts of the output values matter (a multinomial sum).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._numerics import gammaln, SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_memory
from ..errors import IncompatibleOperatorsError
from ._kron_families import AllTuples, Explicit, FixedWeight, OneHot, type_key
from ._kron_kernels import _compositions, combine_groups, group_log_pmfs, likelihood_classes, n_compositions
from .structured import PairOrbit

__all__: list[str] = []

_U = UNIT_ROUNDOFF
#: beyond this many pair types of the product space, only the types where every coordinate differs are listed
MAX_ALL_TYPES = 64
#: bytes per outcome of the pair orbits, kept for the operator's lifetime (p and q), and what the scans build
#: from them (each orbit as a 2-row operator: a stacked copy and an outcome label with its index entry)
ORBIT_OUTCOME_BYTES = 256.0
#: bytes per outcome of the largest orbit while it is computed (log-masses, errors, masks and exponentials)
ORBIT_WORK_BYTES = 128.0
#: largest number of output count vectors summed by the closed-form minorant of fixed-weight inputs
_MAX_MINORANT_TERMS = 1 << 22


class KroneckerQueries:
    """Mixin: the :class:`~chainamp.operators.StructuredOperator` queries from the factors."""

    # ------------------------------------------------------------ pair orbits
    def pair_orbits(self) -> tuple[PairOrbit, ...]:
        """One orbit per type of ordered input pair (see :mod:`chainamp.operators.kronecker`): ``p``, ``q`` are
        the masses of the count vectors of the differing coordinates (each a block of outputs of equal
        likelihood ratio; coordinates with equal inputs cancel), rounded as in :mod:`._kron_kernels`.

        >>> from chainamp.operators import MarkovOperator, KroneckerOperator
        >>> F = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
        >>> orbit = KroneckerOperator.fixed_weight(F, 4, 1).pair_orbits()[0]
        >>> orbit.p.round(4).tolist(), orbit.count
        ([0.1875, 0.0625, 0.5625, 0.1875], 12)
        """
        if self._orbits is None:
            types = self._pair_types()
            keys = sorted(types)
            cache: dict = {}
            orbits = []
            # the operator stands for the exact product of its factors; its densified matrix rounds each entry
            # d - 1 times, which is charged too whenever a dense matrix can exist (so dense and structured
            # answers on the same operator are comparable); beyond 2^40 entries only the exact product exists
            rounded = self._rounded_products()
            self._check_orbit_memory(keys)
            for key in keys:
                i, j, count = types[key]
                orbits.append(self._orbit_for(key, i, j, count, cache, rounded))
            self._orbits = tuple(orbits)
            self._orbit_index = {key: k for k, key in enumerate(keys)}
        return self._orbits

    def _rounded_products(self) -> int:
        """Roundings per entry the densified matrix carries (charged whenever a dense matrix can exist)."""
        n, m = self._shape
        return self.n_coordinates - 1 if n.bit_length() + m.bit_length() <= 41 else 0

    def _orbit_for(self, key: tuple, i: int, j: int, count: int, cache: dict, rounded: int) -> PairOrbit:
        """The orbit of the pair type ``key`` (witness pair ``(i, j)``): its count vectors, rounded as in
        :mod:`._kron_kernels`."""
        groups = []
        for (f, a, b), c in key:
            if (f, a, b, c) not in cache:
                M = self._mats[f]
                cache[(f, a, b, c)] = group_log_pmfs(c, M[a], M[b])
            if cache[(f, a, b, c)] is not None:
                groups.append(cache[(f, a, b, c)])
        P, Q, rel, n_tiny = combine_groups(groups, rounded)
        if groups and rel and np.array_equal(P, Q):
            # the rows differ exactly (some group has two likelihood classes) but rounded to the same
            # floats: move one entry inside the error band, so that no reader takes the pair for two
            # equal rows (a pure epsilon of 0); the band doubles to cover the move
            b = int(np.argmax(P))
            P = P.copy()
            P[b] = math.nextafter(P[b] * (1.0 + rel / 2.0), math.inf)
            rel = math.nextafter(2.0 * rel * (1.0 + 4 * _U) + 4 * _U, math.inf)
        ratio = math.nextafter(2.0 * rel / (1.0 - rel), math.inf) if rel < 0.5 else math.inf
        members = self._members_fn(i, j, key, groups) if not n_tiny else None
        return PairOrbit(p=P, q=Q, pair=(int(i), int(j)), count=int(count), rel_error=rel,
                         ratio_error=ratio, sizes=(), members=members)

    def pair_orbit(self, i: int, j: int) -> tuple[Any, PairOrbit]:
        """``(key, orbit)``: the orbit whose divergences are exactly those of the ordered pair ``(i, j)``, with a
        key naming it (equal keys, equal orbits).

        :meth:`orbit_of` may name a larger orbit when only the types where every coordinate differs are listed
        (:attr:`orbits_are_exact` False); this builds the pair's own type (its differing coordinates only:
        the equal ones cancel) and keeps it, so a neighbour list gets each pair's exact divergences.

        >>> from chainamp.operators import MarkovOperator, KroneckerOperator
        >>> K = KroneckerOperator.power(MarkovOperator([[0.3, 0.7], [0.6, 0.4]]), 10)
        >>> K.orbits_are_exact, K.pair_orbit(0, 1)[1].p.size, K.pair_orbits()[K.orbit_of(0, 1)].p.size
        (False, 2, 11)
        """
        t = self.orbit_of(i, j)  # validates the pair and builds the listed orbits
        key = canonical(self._family.type_of(int(i), int(j)), self._mirror)
        if key in self._orbit_index:
            return t, self._orbits[t]
        extra = self.__dict__.setdefault("_exact_orbits", {})
        if key not in extra:
            extra[key] = self._orbit_for(key, i, j, self._family.count_of(key, self._mirror), {},
                                         self._rounded_products())
        return ("type", key), extra[key]

    def _check_orbit_memory(self, keys: list) -> None:
        """Before the orbits are computed: their compressed pairs (a group of c coordinates with k likelihood
        classes has C(c + k - 1, k - 1) count vectors; a pair the product over its groups), sized with
        :data:`ORBIT_OUTCOME_BYTES` an outcome. A Kronecker power of a 2 x 2 factor with 1000 coordinates has
        1001 pair types and 1.7e8 outcomes in all: refused in milliseconds instead of 28 s into a MemoryError."""
        classes: dict = {}
        total, largest = 0.0, 0.0
        for key in keys:
            size = 1.0
            for (f, a, b), c in key:
                if (f, a, b) not in classes:
                    M = self._mats[f]
                    classes[(f, a, b)] = likelihood_classes(M[a], M[b])[0].size
                k = classes[(f, a, b)]
                if k > 1 and c > 0:
                    size *= float(math.comb(c + k - 1, k - 1))
            total += size
            largest = max(largest, size)
        check_memory(ORBIT_OUTCOME_BYTES * total + ORBIT_WORK_BYTES * largest,
                     f"the {len(keys)} pair orbits of a Kronecker product of {self.n_coordinates} coordinates "
                     f"({total:.3g} outcomes of compressed pairs in all)",
                     hint="use fewer coordinates, or factors whose rows are mirror images (one orbit per type)")

    @property
    def orbits_are_exact(self) -> bool:
        """True when :meth:`pair_orbits` lists the type of every pair (then ``orbit_of(i, j)`` has exactly the
        pair's divergences); False when the product space has too many types and only those where every
        coordinate differs are listed (``orbit_of`` then names an orbit whose divergences bound the pair's).

        >>> from chainamp.operators import MarkovOperator, KroneckerOperator
        >>> KroneckerOperator([MarkovOperator([[0.5, 0.5], [0.2, 0.8]])], [3]).orbits_are_exact
        True
        """
        self.pair_orbits()
        return not self._maximal

    def orbit_of(self, i: int, j: int) -> int:
        n = self._shape[0]
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise IncompatibleOperatorsError(f"({i}, {j}) is not an ordered pair of distinct inputs of {n}")
        self.pair_orbits()
        key = canonical(self._family.type_of(int(i), int(j)), self._mirror)
        if key not in self._orbit_index:  # maximal types only: an orbit whose pair contains this one
            key = self._family.dominating_type(key, self._mirror)
        return self._orbit_index[key]

    def _pair_types(self) -> dict:
        """The family's pair types, in canonical groups for operators too large to list block members (a
        binary factor whose rows are each other's mirror image, like randomized response, has one group for
        both directions: ``(F_b, F_a)`` is ``(F_a, F_b)`` with the two outputs swapped, which changes no
        divergence); for the product space with more than :data:`MAX_ALL_TYPES` types, only the types where
        every coordinate differs (every other pair's rows are a marginal of such a pair's, so each pair's
        divergences are at most its orbit's and every maximum over pairs is unchanged)."""
        self._mirror = _mirror_groups(self._mats) if self._shape[1] > 1 << 16 else {}
        fam = self._family
        if isinstance(fam, AllTuples):
            maximal = fam.n_types(self._mirror) > MAX_ALL_TYPES
            self._maximal = maximal
            return fam.pair_types(self._mirror, maximal)
        out: dict = {}
        for key, (i, j, count) in fam.pair_types().items():
            ckey = canonical(key, self._mirror)
            out[ckey] = (*out[ckey][:2], out[ckey][2] + count) if ckey in out else (i, j, count)
        return out

    def _members_fn(self, i: int, j: int, key: tuple, groups: list):
        """``b -> output indices of block b`` for the witness pair, by brute force over the outputs (only for
        operators with at most 2^16 outputs; None otherwise)."""
        if self._shape[1] > 1 << 16:
            return None
        cache: list = []

        def members(b: int):
            if not cache:  # the block of every output, on first use
                cache.append(self._block_of_outputs(i, j, key, groups))
            return (int(y) for y in np.flatnonzero(cache[0] == b))

        return members

    def _block_of_outputs(self, i: int, j: int, key: tuple, groups: list) -> np.ndarray:
        x, y = np.asarray(self._family.coords(i)), np.asarray(self._family.coords(j))
        fids = self._coord_factor()
        used = [g for (g, _), grp in zip(key, [group_log_pmfs(c, self._mats[f][a], self._mats[f][b])
                                                for (f, a, b), c in key]) if grp is not None]
        out_sizes = [self._mats[f].shape[1] for f in fids]
        outs = np.indices(out_sizes).reshape(len(out_sizes), -1).T  # every output tuple (row-major = label order)
        block = np.zeros(outs.shape[0], dtype=np.int64)
        valid = np.ones(outs.shape[0], dtype=bool)
        for g, grp in zip(used, groups):
            f, a, b = g
            cols = np.flatnonzero((fids == f) & (x == a) & (y == b))
            classes = grp[4]
            cls_of = np.full(self._mats[f].shape[1], -1)
            for c_idx, members in enumerate(classes):
                cls_of[members] = c_idx
            cls = cls_of[outs[:, cols]]
            valid &= np.all(cls >= 0, axis=1)
            cnt = np.stack([(cls == c).sum(axis=1) for c in range(len(classes))], axis=1)
            lookup = {tuple(r): k for k, r in enumerate(grp[3].tolist())}
            idx = np.array([lookup.get(tuple(r), 0) for r in cnt.tolist()], dtype=np.int64)
            block = block * grp[3].shape[0] + idx
        block[~valid] = -1
        return block

    # ------------------------------------------------------------ products of per-factor quantities
    def _per_input_log(self, per_factor: list[np.ndarray]) -> tuple[float, float]:
        """``(min, max)`` over the family's inputs of ``sum_j v_{f_j}(x_j)`` for per-factor vectors ``v_f``
        (logs of per-row quantities), exactly as floats summed with counts (error charged by callers)."""
        fam = self._family
        if isinstance(fam, AllTuples):
            lo = sum(c * float(np.min(per_factor[f])) for f, c in self._runs)
            hi = sum(c * float(np.max(per_factor[f])) for f, c in self._runs)
            return lo, hi
        v = per_factor[0]
        if isinstance(fam, OneHot):
            val = float(v[fam.hot]) + (fam.n - 1) * float(v[fam.cold])
            return val, val
        if isinstance(fam, FixedWeight):
            val = fam.h * float(v[fam.one]) + (fam.m - fam.h) * float(v[fam.zero])
            return val, val
        fids = self._coord_factor()
        vals = [float(sum(per_factor[f][x] for f, x in zip(fids, fam.coords(i)))) for i in range(fam.n)]
        return min(vals), max(vals)

    def _densified_rounding(self) -> float:
        """``(d - 1) u`` (slightly more) when a densified matrix can exist (<= 2^40 entries): its entries are
        float products of d factor entries, within that relative error of the exact product the operator
        stands for; every structural bound covers both readings. 0 beyond (only the exact product exists)."""
        n, m = self._shape
        if n.bit_length() + m.bit_length() > 41 or self.n_coordinates < 2:
            return 0.0
        return (self.n_coordinates - 1) * _U * (1.0 + 1e-9)

    def row_sum_bounds(self) -> tuple[float, float]:
        """Exact row sums of products of the factors' exact row sums, bounded outward in log space (and widened
        by the rounding of a densified matrix, :meth:`_densified_rounding`)."""
        lo, hi = self._row_sum_bounds_exact()
        r = self._densified_rounding()
        if not r:
            return lo, hi
        return math.nextafter(lo * (1.0 - r), -math.inf), math.nextafter(hi * (1.0 + r), math.inf)

    def _row_sum_bounds_exact(self) -> tuple[float, float]:
        sums = [[sum((Fraction(float(v)) for v in row), Fraction(0)) for row in M] for M in self._mats]
        if all(s == 1 for row in sums for s in row):
            return 1.0, 1.0
        logs = [np.array([math.log1p(float(s - 1)) for s in row]) for row in sums]
        lo, hi = self._per_input_log(logs)
        # each log within 4u of its magnitude, times its count (one rounding), summed (one per run)
        scale = sum(c * float(np.max(np.abs(logs[f]))) for f, c in self._runs)
        err = 8 * _U * (len(self._runs) + 2) * scale
        return (math.nextafter(math.exp(lo - err) * (1 - 4 * _U), -math.inf),
                math.nextafter(math.exp(hi + err) * (1 + 4 * _U), math.inf))

    def _log_smallest_positive(self) -> float:
        logs = []
        for M in self._mats:
            pos = np.where(M > 0, M, np.inf).min(axis=1)
            logs.append(np.log(np.where(np.isfinite(pos), pos, 1.0)))
        lo, _ = self._per_input_log(logs)
        return lo * (1.0 + 16 * _U) - 16 * _U

    def smallest_positive(self) -> float:
        """A lower bound of the smallest positive stored entry (at least the smallest subnormal)."""
        lo = self._log_smallest_positive()
        r = self._densified_rounding()
        return max(math.exp(lo) * (1.0 - 4 * _U - r), SMALLEST_SUBNORMAL) if lo > -746 else SMALLEST_SUBNORMAL

    def minorant(self, memory_limit: Any = None) -> np.ndarray:
        m = self._shape[1]
        check_memory(16.0 * m if m.bit_length() < 1000 else math.inf, f"the Doeblin minorant over {m} outputs",
                     memory_limit=memory_limit)
        if isinstance(self._family, AllTuples):
            nu = np.ones(1)
            for f, c in self._runs:
                for _ in range(c):
                    nu = np.kron(nu, self._mats[f].min(axis=0))
            return nu
        return np.asarray(self.densify(memory_limit).matrix.min(axis=0), dtype=float)

    def minorant_mass(self) -> float:
        """A lower bound of ``sum_y min_x K(x, y)`` (see the module docstring), rounded down (and covering a
        densified matrix's rounding, :meth:`_densified_rounding`)."""
        r = self._densified_rounding()
        return max(0.0, self._minorant_mass() * (1.0 - r - 4 * _U)) if r else self._minorant_mass()

    def _minorant_mass(self) -> float:
        fam = self._family
        if isinstance(fam, (OneHot, FixedWeight)):
            m, h = (fam.n, 1) if isinstance(fam, OneHot) else (fam.m, fam.h)
            one, zero = (fam.hot, fam.cold) if isinstance(fam, OneHot) else (fam.one, fam.zero)
            if fam.n == 1:
                return self._row_sum_bounds_exact()[0]
            t = self._mats[0].shape[1]
            if n_compositions(m, t) <= _MAX_MINORANT_TERMS:
                return _weight_minorant(self._mats[0][one], self._mats[0][zero], m, h)
        elif isinstance(fam, Explicit) and fam.n * self._shape[1] <= 1 << 22:
            nu = self.minorant()
            return max(0.0, float(nu.sum()) * (1.0 - (nu.size + 2) * _U))
        # all tuples, or a lower bound for any subset of them: prod_f (sum_y min_a F_f(a, y))^{n_f}
        log_mass = 0.0
        for f, c in self._runs:
            mass = sum((Fraction(float(v)) for v in self._mats[f].min(axis=0)), Fraction(0))
            if mass == 0:
                return 0.0
            term = c * math.log(float(mass) * (1 - 2 * _U))  # float(mass) * (1 - 2u) <= mass
            log_mass += term - 8 * _U * abs(term)  # the log (4 ulps) and the product by c
        log_mass -= 8 * _U * (abs(log_mass) + 1.0) * (len(self._runs) + 1)  # the sums
        return max(0.0, math.exp(log_mass) * (1.0 - 4 * _U)) if log_mass > -745 else 0.0


def canonical(key: tuple, mirror: dict) -> tuple:
    """The type ``key`` with its groups mapped to their canonical groups (counts merged)."""
    if not mirror:
        return key
    groups: dict = {}
    for g, c in key:
        g = mirror.get(g, g)
        groups[g] = groups.get(g, 0) + c
    return type_key(groups)


def _mirror_groups(mats: tuple) -> dict:
    """``(f, b, a) -> (f, a, b)`` (a < b) for the two-output factors whose rows a and b differ and are each
    other's mirror image (``F[b] = F[a][::-1]``)."""
    out = {}
    for f, M in enumerate(mats):
        if M.shape[1] != 2:
            continue
        for a in range(M.shape[0]):
            for b in range(a + 1, M.shape[0]):
                if M[b, 0] == M[a, 1] and M[b, 1] == M[a, 0] and M[a, 0] != M[b, 0]:
                    out[(f, b, a)] = (f, a, b)
    return out


def _weight_minorant(r1: np.ndarray, r0: np.ndarray, m: int, h: int) -> float:
    """``sum_y min_{|S| = h} prod_{j in S} r1(y_j) prod_{j not in S} r0(y_j)`` over y in ``{0..t-1}^m``, rounded
    down: a sum over the counts ``n_v`` of each output value v, with multinomial weights; for each count vector
    the minimum takes the h coordinates of smallest ratio ``r1 / r0`` (greedy; a zero makes the product 0)."""
    t = r1.size
    with np.errstate(divide="ignore"):
        ratio = np.where(r0 > 0, r1 / np.where(r0 > 0, r0, 1.0), np.where(r1 > 0, np.inf, 0.0))
        l1, l0 = np.log(r1), np.log(r0)
    order = np.argsort(ratio, kind="stable")
    if t == 2 and m > 4096:
        # every term is >= 0, so any subset of them sums to a lower bound: keep the count vectors within
        # 40 sqrt(m) + 2h of the mean number of outputs 0 under the zero row (the rest carry less than
        # e^-3000 of the mass, Hoeffding, times at most the largest ratio^h)
        centre, width = m * float(r0[0]) / max(float(r0.sum()), 1e-300), 40.0 * math.sqrt(m) + 2 * h
        k = np.arange(max(0, int(centre - width)), min(m, int(centre + width) + 1) + 1, dtype=np.int64)
        counts = np.stack([k, m - k], axis=1)
    else:
        counts = _compositions(m, t)  # (N, t)
    left = np.full(counts.shape[0], h, dtype=np.int64)
    s = np.zeros_like(counts)
    for v in order:
        take = np.minimum(left, counts[:, v])
        s[:, v] = take
        left -= take
    log_w = gammaln(m + 1.0) - gammaln(counts + 1.0).sum(axis=1)
    err = 16 * _U * (abs(float(gammaln(m + 1.0))) + np.abs(gammaln(counts + 1.0)).sum(axis=1) + t + 1)
    total = log_w.copy()
    for v in range(t):
        for k, lg in ((s[:, v], l1[v]), (counts[:, v] - s[:, v], l0[v])):
            term = np.where(k > 0, k * lg if np.isfinite(lg) else -np.inf, 0.0)
            total = total + term
            err = err + 16 * _U * (np.abs(np.where(np.isfinite(term), term, 0.0)) + 1.0)
    vals = np.exp(total - err * (1.0 + 4 * _U)) * (1.0 - 4 * _U)
    vals[total - err < -740] = 0.0  # below the normal range: drop (the sum only gets smaller)
    return max(0.0, float(vals.sum()) * (1.0 - (vals.size + 2) * _U))
