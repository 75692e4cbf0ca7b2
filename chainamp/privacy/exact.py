"""The exact privacy profile of a finite mechanism: :func:`exact_profile` (the body of
:func:`chainamp.privacy_profile` for every mechanism that is not structured) builds an
:class:`ExactProfile`, ``delta(eps) = max over neighbouring (u, u') of D_{e^eps}(M_u || M_u')``
(the profile of Balle, Barthe, Gaboardi 2018 that Theorem 1 of Balle, Barthe, Gaboardi, Geumlek
2019 consumes), from the outcomes of each pair sorted by log-likelihood ratio.

Pairs are streamed by blocks (:mod:`._exact_stream`): beyond the per-pair data kept while it fits a budget
(``CLASS_BYTES``: the sorted data of one pair per class of identical pairs), nothing per pair is stored but a
few numbers per unit of consecutive pairs (a certified upper bound of their curves), so later queries
recompute only the pairs that can attain the maximum. Every delta is an upper bound of the exact value, rounded UP past
its floating-point error (the error model is in :func:`chainamp.privacy_profile`, :mod:`.finite`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._numerics import (UNIT_ROUNDOFF, check_epsilon, check_executor, check_memory, check_progress, map_blocks,
                         round_up_array)
from ..operators import as_operator, row_source
from . import _exact_stream as st
from .neighbors import neighbor_pairs
from .dominating import DominatingPair
from .profiles import PrivacyProfile

__all__ = ["ExactProfile"]  # privacy_profile: in .finite, which dispatches to exact_profile

#: Queries of at most this many eps on more than ``_FEW_CLASSES`` stored classes are pruned class by class.
_FEW_EPS = 4
_FEW_CLASSES = 16


class ExactProfile(PrivacyProfile):
    """Exact privacy profile of a finite mechanism (a row-stochastic matrix; ``exact=True``).

    Built by :func:`privacy_profile`. ``labels`` are the mechanism's input labels,
    ``pairs`` the ``(k, 2)`` index pairs of neighbours considered (both directions; built on request).
    """

    __slots__ = ("labels", "_neighbors", "_space", "_data", "_cols", "_llr_err", "_m", "_row_dev", "_unit",
                 "_block", "_logs", "_unit_top", "_grid", "_state", "_executor", "_progress")

    def __init__(self, **state: Any) -> None:
        super().__init__(self._eval_max, name=state.pop("name"), source=state.pop("source"), exact=True,
                         pure_epsilon=state.pop("pure_epsilon"))
        for key, value in state.items():
            if isinstance(value, np.ndarray) and key not in ("_data", "_logs"):
                value.setflags(write=False)
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_pair", self._roc_pair)

    @property
    def pairs(self) -> np.ndarray:
        """The ``(k, 2)`` index pairs of neighbours (both directions), materialised on request."""
        check_memory(16.0 * 2 * self._space.count, f"the list of {2 * self._space.count} neighbour pairs",
                     hint="the profile itself never lists them")
        return neighbor_pairs(self.labels, self._neighbors)

    def using(self, *, executor: Any = None, progress: bool | None = None) -> ExactProfile:
        """The same profile (sharing its data and pruning summaries) whose later computations run on
        ``executor`` with ``progress`` (see :func:`privacy_profile`); values and witnesses are unchanged.

        >>> from chainamp.privacy import privacy_profile
        >>> prof = privacy_profile([[0.75, 0.25], [0.25, 0.75]]).using(progress=False)
        >>> round(prof.delta(0.0), 6)
        0.5
        """
        state = {key: getattr(self, key) for key in ExactProfile.__slots__}
        state.update(_executor=check_executor(executor), _progress=check_progress(progress))
        return ExactProfile(name=self.name, source=self.source, pure_epsilon=self.pure_epsilon, **state)

    # ------------------------------------------------------------------ blocks of pairs
    def _local(self) -> bool:
        ex = self._executor
        return ex is not None and "Thread" not in type(ex).__name__

    def _tasks_range(self, eps: np.ndarray | None, units: int | None, scan: bool = False, live: list | None = None):
        """Kernel tasks over all pairs, in pair order (blocks of whole units)."""
        sp, bp = self._space, self._block
        for p0 in range(0, sp.count, bp):
            p1 = min(sp.count, p0 + bp)
            i, j = sp.pairs(p0, p1)
            data, rows, li, lj = st._task(self._data, self._logs, i, j, self._local())
            starts = np.arange(0, p1 - p0, self._unit)
            if scan:
                yield data, rows, li, lj, self._cols, starts
            else:
                yield (data, rows, li, lj, p0, self._cols, self._llr_err, self._m, eps,
                       None if units is None else (starts, units), self._class_cap() if live and live[0] else 0)

    def _class_cap(self) -> int:
        """At most this many classes of identical pairs are kept (their sorted data within CLASS_BYTES)."""
        return int(min(st.CLASS_LIMIT, st.CLASS_BYTES // (40 * (self._m + 1))))

    def _tasks_at(self, pidx: np.ndarray, eps: np.ndarray):
        for k in range(0, pidx.size, self._block):
            sel = pidx[k:k + self._block]
            i, j = self._space.at(sel)
            data, rows, li, lj = st._task(self._data, self._logs, i, j, self._local())
            yield data, rows, li, lj, sel, self._cols, self._llr_err, self._m, eps

    def _map(self, fn, tasks, total: int, desc: str):
        return map_blocks(fn, tasks, executor=self._executor, total=total, desc=desc, unit="pairs",
                          progress=self._progress, weight=lambda t: int(t[2].size))

    # ------------------------------------------------------------------ evaluation
    def _query(self, eps: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per eps: the largest computed ``D(M_u || M_v)`` over pairs and the first pair attaining it, and the
        same for ``D(M_v || M_u)``. The first query streams every pair (and keeps the unit summaries);
        later ones recompute only the units whose certified upper bound reaches a computed value."""
        if "summary" not in self._state:
            return self._first_pass(eps)
        if "classes" in self._state:  # few classes of identical pairs: their representatives only
            reps, data = self._state["classes"]
            if eps.size <= _FEW_EPS and reps.size > _FEW_CLASSES and self._grid.size >= 2 \
                    and 8.0 * reps.size * self._grid.size <= st.CLASS_BYTES:
                return self._classes_pruned(eps, reps, data)
            if eps.size <= _FEW_EPS and reps.size <= _FEW_CLASSES and np.all(np.isfinite(eps)):
                out = [self._best(reps, data, np.arange(reps.size), float(e)) for e in eps]
                return tuple(np.array(col) for col in zip(*out))
            vu, vv = data.values(eps, self._llr_err, self._m)
            ru, rv = np.argmax(vu, axis=0), np.argmax(vv, axis=0)
            cols = np.arange(eps.size)
            return vu[ru, cols], reps[ru], vv[rv, cols], reps[rv]
        U = self._unit_top.size
        chunk = max(1, (1 << 22) // max(U, 1))
        parts = [self._pruned(eps[k:k + chunk]) for k in range(0, eps.size, chunk)]
        return tuple(np.concatenate([p[c] for p in parts]) for c in range(4))

    def _best(self, reps: np.ndarray, data: tuple, cand: np.ndarray, e: float, known: dict | None = None):
        """``(vu, rep, vv, rep)`` at one finite eps over the classes ``cand`` (ascending): the largest computed
        value of each direction and the first class attaining it (``known``: values already computed)."""
        order = [int(c) for c in cand]
        vals = dict(known or {})
        todo = [c for c in order if c not in vals]
        if len(todo) > _FEW_CLASSES:
            vu, vv = data.values(np.array([e]), self._llr_err, self._m, rows=todo)
            vu, vv = vu[:, 0].tolist(), vv[:, 0].tolist()
        elif todo:
            vu, vv = data.values_few(todo, e, self._llr_err, self._m)
        else:
            vu = vv = []
        vals.update(zip(todo, zip(vu, vv)))
        cu = max(order, key=lambda c: vals[c][0])  # (max: the first of equal maxima, as argmax)
        cv = max(order, key=lambda c: vals[c][1])
        return vals[cu][0], int(reps[cu]), vals[cv][1], int(reps[cv])

    def _classes_pruned(self, eps: np.ndarray, reps: np.ndarray, data: tuple) -> tuple[np.ndarray, ...]:
        """:meth:`_query` on the stored class data for a few eps: per class, the computed values on the pruning
        grid (kept) bound every later value by their chord (:func:`~._exact_stream.chord_upper`, no pure level
        used); the class with the largest bound is evaluated first, and only the classes whose bound reaches
        its value (and the first class, which a full evaluation returns when every value is 0) are evaluated
        after it. A class left out has every value below one computed, so the maxima and their first attaining
        pairs are those of the full evaluation (values per class are computed row by row, whatever the subset).
        """
        summ = self._state.get("class_grid")
        G = self._grid.size
        if summ is None:
            if self._unit == 1:  # the first pass kept every pair's values on the grid: the classes' rows
                summ = np.array(self._state["summary"][reps, :G])
            else:
                gu, gv = data.values(self._grid, self._llr_err, self._m)
                summ = np.maximum(gu, gv)
            summ.setflags(write=False)
            self._state["class_grid"] = summ
        no_pure = np.full(reps.size, math.inf)
        step = float(self._grid[1] - self._grid[0])
        out = []
        for e in eps.tolist():
            if math.isinf(e):
                vu, vv = data.values(np.array([e]), self._llr_err, self._m)
                ru, rv = int(np.argmax(vu[:, 0])), int(np.argmax(vv[:, 0]))
                out.append((vu[ru, 0], int(reps[ru]), vv[rv, 0], int(reps[rv])))
                continue
            margin = st.value_margin(e, self._llr_err, self._m, step)
            ub = st.chord_upper(self._grid, summ, no_pure, e, margin)
            c0 = int(np.argmax(ub))
            fu, fv = data.values_few([c0], e, self._llr_err, self._m)
            v0 = max(fu[0], fv[0])
            if v0 > 0:
                cand = np.flatnonzero(ub >= v0).tolist()  # (c0 among them: its bound is at least its value)
            else:  # every value may be 0: the first class too (a full evaluation's argmax of all-equal values)
                cand = sorted({0, c0, *np.flatnonzero(ub > 0).tolist()})
            out.append(self._best(reps, data, cand, e, {c0: (fu[0], fv[0])}))
        return tuple(np.array(col) for col in zip(*out))

    def _first_pass(self, eps: np.ndarray) -> tuple[np.ndarray, ...]:
        G = self._grid.size
        allq = np.concatenate([self._grid, [math.inf], eps])
        best = _Best(allq.size)
        unit_parts = []
        classes: dict | None = {}
        parts: list = []  # each block's class data
        count = 0
        live = [True]  # classes still possible: later blocks skip them once abandoned (values never depend on it)
        for part in self._map(st._kernel, self._tasks_range(allq, G + 1, live=live), self._space.count,
                              "exact profile"):
            best.add(*part[:4])
            unit_parts.append(part[4])
            if classes is not None and part[5] is None:
                classes = live[0] = None
            elif classes is not None:
                keys, firsts, data = part[5]
                q, new = len(parts), []  # this block's part (if it keeps a row) and its rows that start a class
                for r, (key, idx) in enumerate(zip(keys, firsts.tolist())):
                    known = classes.setdefault(key, [])
                    # bit-identical data: the same class (compared only when two keys collide)
                    if not any(st.same_rows(data, r, parts[p] if p < q else data, r0) for _, p, r0 in known):
                        known.append((idx, q, r))
                        new.append(r)
                        count += 1
                if new and len(new) < data[0].shape[0]:  # only the rows of new classes are kept
                    data = tuple(x[new] for x in data)
                    at = {r: j for j, r in enumerate(new)}
                    for key in set(keys):
                        classes[key] = [(i, p, at[r] if p == q else r) for i, p, r in classes[key]]
                if new:
                    parts.append(data)
                if count > self._class_cap():
                    classes = live[0] = None
                    parts = []
        if classes is not None:  # representatives in pair order: the first of each class
            found = sorted((item for group in classes.values() for item in group), key=lambda t: t[0])
            reps = np.array([idx for idx, _, _ in found], dtype=np.int64)
            self._state["classes"] = (reps, _gather_classes(parts, found, self._m))
        summary = np.concatenate(unit_parts, axis=0)
        summary.setflags(write=False)
        self._state["summary"] = summary
        return tuple(x[G + 1:] for x in best.result())

    def _pruned(self, eps: np.ndarray) -> tuple[np.ndarray, ...]:
        summary, E = self._state["summary"], eps.size
        G = self._grid.size
        unit_pure = self._state["unit_pure"]
        ub = np.empty((summary.shape[0], E))
        step = float(self._grid[1] - self._grid[0])
        for k, e in enumerate(eps):
            if math.isinf(e):
                ub[:, k] = summary[:, G]  # the computed values at eps = inf are exact; no rounding to cover
            else:
                ub[:, k] = st.chord_upper(self._grid, summary[:, :G], unit_pure, float(e),
                                          st.value_margin(float(e), self._llr_err, self._m, step))
        best = _Best(E)
        first = np.unique(np.argmax(ub, axis=0))  # the most promising unit of each eps: a computed value
        pidx = self._unit_pairs(first)
        for part in self._map(st._kernel_at, self._tasks_at(pidx, eps), pidx.size, "exact profile (pruned)"):
            best.add(*part)
        vstar = np.maximum(best.vu, best.vv)
        # units that may reach the computed value (or may be positive when it is 0) are recomputed
        need = np.where(vstar > 0, ub >= vstar, ub > 0).any(axis=1)
        need[first] = False
        pidx = self._unit_pairs(np.flatnonzero(need))
        if pidx.size:
            for part in self._map(st._kernel_at, self._tasks_at(pidx, eps), pidx.size, "exact profile (pruned)"):
                best.add(*part)
        return best.result()

    def _unit_pairs(self, units: np.ndarray) -> np.ndarray:
        """The pair indices of the given units (ascending)."""
        unit, count = self._unit, self._space.count
        if units.size == 0:
            return np.zeros(0, dtype=np.int64)
        idx = (units.astype(np.int64)[:, None] * unit + np.arange(unit)[None, :]).ravel()
        return idx[idx < count]

    def _eval_max(self, eps: np.ndarray) -> np.ndarray:
        """The profile of the row-normalised mechanism. Stored rows whose exact sums are not 1
        (``rho`` = the largest exact deviation, rounded up) stand for their normalised rows
        ``P / s`` with ``s`` in ``[1 - rho, 1 + rho]``, so ``sum [P_u / s_u - a P_v / s_v]_+ <= (1 / (1 - rho))
        sum [P_u - a r P_v]_+`` with ``r = (1 - rho) / (1 + rho)``: the stored rows' value at
        ``eps - log(1 / r)``, divided by ``1 - rho``; below 0 that shifted eps uses ``H_a <= delta(0) + (1 - a)
        (1 + rho)``. Rows whose exact sum is 1 are used as stored (``rho = 0``); ``rho`` is the exact largest
        deviation rounded up (:func:`._exact_stream._row_stats_kernel`), never a float sum's."""
        rho = self._row_dev
        if rho == 0.0:
            return self._eval_stored(eps)
        shift = math.log1p(2.0 * rho / (1.0 - rho))
        if eps.size == 1:  # (one eps: the operations below on floats, numpy's expm1 on one entry)
            x = float(eps.ravel()[0])
            low = x - shift
            v = float(self._eval_stored(np.array([max(low, 0.0)]))[0])
            if low < 0.0:
                v = v + float(-np.expm1(np.array([low]))[0]) * (1.0 + rho)
            w = v / (1.0 - rho)
            if w != 0.0 and math.isfinite(w):
                w = math.nextafter(w + abs(w) * (6 * UNIT_ROUNDOFF), math.inf)
            return np.full(eps.shape, min(w, 1.0))
        shifted = eps - shift
        neg = shifted < 0.0
        out = self._eval_stored(np.where(neg, 0.0, shifted))
        out = np.where(neg, out + (-np.expm1(np.minimum(shifted, 0.0))) * (1.0 + rho), out)
        return round_up_array(out / (1.0 - rho), 4, upper=1.0)

    def _eval_stored(self, eps: np.ndarray) -> np.ndarray:
        # the subtraction in X and the band addition each add one relative rounding
        if eps.size == 1:  # (one eps: as below without the unique pass, round_up_array's operations on a float)
            bu, _, bv, _ = self._query(eps.ravel())
            v = max(float(bu[0]), float(bv[0]))
            if v != 0.0 and math.isfinite(v):
                v = min(math.nextafter(v + abs(v) * (8 * UNIT_ROUNDOFF), math.inf), 1.0)
            return np.full(eps.shape, min(v, 1.0))
        uniq, back = np.unique(eps, return_inverse=True)
        bu, _, bv, _ = self._query(uniq)
        return round_up_array(np.maximum(bu, bv), 6, upper=1.0)[back.ravel()]

    def witness(self, epsilon: float) -> tuple:
        """The neighbouring pair ``(u, u')`` of input labels attaining ``delta(epsilon)``
        (the first pair in input order attaining the maximum of the computed bounds; the first pair when
        delta is 0).

        >>> from chainamp.privacy import privacy_profile
        >>> prof = privacy_profile([[0.75, 0.25], [0.5, 0.5]], neighbors=None)
        >>> prof.witness(0.1)  # D(M_1 || M_0) = 0.5 - e^0.1 0.25 beats D(M_0 || M_1)
        (1, 0)
        """
        eps = check_epsilon(epsilon)
        bu, iu, bv, iv = (x[0] for x in self._query(np.array([eps])))
        if bu <= 0.0 and bv <= 0.0:
            i, j = self._space.at(np.array([0]))
        elif bu >= bv:
            i, j = self._space.at(np.array([iu]))
        else:
            j, i = self._space.at(np.array([iv]))
        return (self.labels[int(i[0])], self.labels[int(j[0])])

    def _roc_pair(self) -> DominatingPair:
        """The exact dominating pair: the upper concave hull of the ROC points ``(Q(S), P(S))`` of every
        ordered neighbouring pair, S ranging over the prefix sets in likelihood-ratio order.

        Derivation: ``H_a(M_u || M_v) = max_S M_u(S) - a M_v(S)`` for every ``a > 0`` (negative eps
        included), attained at the set of outcomes whose ratio exceeds ``a``, a prefix of the pair's
        sorted order (``(u, v)``: prefixes, ``(v, u)``: suffixes). So the profile's curve over every real
        eps is ``max`` over all these points of ``b - a s``, which only depends on their upper hull,
        and the hull's chain is a pair with exactly that curve (:meth:`DominatingPair.from_roc`).
        Rows are normalised (a stored row stands for its normalised row). Rounding: with computed
        log-ratios within ``d = llr_err`` of the exact ones, the computed order is exact for ``q~_y =
        p_y e^{-llr~_y}`` and ``q_y >= e^{-d} q~_y``, so ``H_a(p || q) <= max_k P_k - a e^{-2d} Q_k``: each
        point's s is deflated by ``2d`` relative; the prefix sums and the normalisation by ``(2m + 8) u``
        relative more (s down, b up; b capped at 1). Every true value therefore lies below the pair's
        curve, which equals the profile up to these relative roundings. Streamed: each block of pairs
        is reduced to its exact hull, and the hull of the union of the blocks' hulls is the hull of all.
        """
        tasks = ((data, rows, li, lj, self._cols, self._llr_err, self._m)
                 for data, rows, li, lj, *_ in self._tasks_range(None, None))
        hs, hb = [], []
        for s, b in self._map(st._roc_kernel, tasks, self._space.count, "dominating pair"):
            hs.append(s)
            hb.append(b)
        return DominatingPair.from_roc(np.concatenate(hs), np.concatenate(hb), name=self.name, exact=True)


def _gather_classes(parts: list, found: list, m: int) -> st.ClassData:
    """The sorted data of the class representatives ``found`` (``(pair, part, row)`` in pair order) from the
    blocks' class data ``parts`` (each holds the rows of the classes its block started: kept as it is)."""
    pieces = []
    for q, data in enumerate(parts):
        rows = [r for _, p, r in found if p == q]
        if rows:
            pieces.append(data if len(rows) == data[0].shape[0] else tuple(x[rows] for x in data))
    if not pieces:
        pieces = [(np.zeros((0, m)),) + tuple(np.zeros((0, m + 1)) for _ in range(4))]
    return st.ClassData(pieces)


class _Best:
    """Running per-eps maxima of the two directions with the first pair index attaining each."""

    def __init__(self, E: int) -> None:
        self.vu, self.vv = np.full(E, -math.inf), np.full(E, -math.inf)
        self.iu, self.iv = np.zeros(E, dtype=np.int64), np.zeros(E, dtype=np.int64)

    def add(self, vu, iu, vv, iv) -> None:
        for val, idx, side in ((vu, iu, "u"), (vv, iv, "v")):
            cur, cur_i = getattr(self, "v" + side), getattr(self, "i" + side)
            take = (val > cur) | ((val == cur) & (idx < cur_i))
            cur[take], cur_i[take] = val[take], idx[take]

    def result(self) -> tuple[np.ndarray, ...]:
        return self.vu, self.iu, self.vv, self.iv


def _prepare(op, space: st.PairSpace, data) -> dict:
    """Rows passes (kept columns, ``llr_err``, row sums) and the cheap pair pass (per unit: largest log-ratio)."""
    used = space.used_rows()
    n_out = op.shape[1]
    step = max(1, (st.BLOCK_ENTRIES * 4) // max(n_out, 1))
    keep = np.zeros(n_out, dtype=bool)
    for k in range(0, used.size, step):
        keep |= st._row_kernel((data, used[k:k + step]))
    cols = None if keep.all() else np.flatnonzero(keep)
    m = int(keep.sum())
    big, devs = 0.0, []
    for k in range(0, used.size, step):
        b, d = st._row_stats_kernel((data, used[k:k + step], cols))
        big = max(big, b)
        devs.append(d)
    return {"cols": cols, "m": m, "big": big, "devs": np.concatenate(devs)}


def exact_profile(M: Any, neighbors: Any = None, *, name: str | None = None, progress: bool | None = None,
                  executor: Any = None) -> ExactProfile:
    """:func:`chainamp.privacy_profile` of a mechanism that is not structured: the method, memory and rounding
    are documented there; the same arguments, validation and result."""
    progress = check_progress(progress)
    executor = check_executor(executor)
    op = as_operator(M, "M")
    labels = op.inputs
    if neighbors is None:
        if len(labels) < 2:
            neighbor_pairs(labels, None)  # raises: the relation is empty
        space = st.PairSpace(len(labels))
    else:
        pairs = neighbor_pairs(labels, neighbors)
        space = st.PairSpace(len(labels), pairs[pairs[:, 0] < pairs[:, 1]])
    n_out = op.shape[1]
    data = row_source(op)
    if data is None:
        check_memory(8.0 * op.shape[0] * n_out, f"the dense {op.shape[0]} x {n_out} mechanism matrix")
        data = np.asarray(op.matrix, dtype=float)
    prep = _prepare(op, space, data)
    m, cols = prep["m"], prep["cols"]
    logs = None
    if isinstance(data, np.ndarray):  # in memory: the kept columns and the logarithms once (log is elementwise)
        check_memory(8.0 * op.shape[0] * max(m, 1) * (1 if cols is None else 2),
                     f"the logarithms of the {op.shape[0]} x {m} mechanism")
        if cols is not None:
            data, cols = np.ascontiguousarray(data[:, cols]), None
        with np.errstate(divide="ignore"):
            logs = np.log(data)
    llr_err = 32.0 * UNIT_ROUNDOFF * prep["big"]
    unit = max(1, -(-space.count // st.MAX_UNITS))
    block = max(1, (st.BLOCK_ENTRIES // max(m, 1)) // unit) * unit
    n_units = -(-space.count // unit)
    check_memory(8.0 * 16 * block * max(m, 1) + 8.0 * n_units * (st.GRID_POINTS + 3),
                 f"the exact profile's blocks ({block} pairs x {m} outputs) and pruning summaries ({n_units} units)",
                 hint="pass neighbors= to compare fewer pairs")
    state = dict(labels=labels, _neighbors=neighbors, _space=space, _data=data, _cols=cols, _llr_err=llr_err,
                 _m=m, _unit=unit, _block=block, _logs=logs, _executor=executor, _progress=progress)
    tops, equal = [], True
    scan = ExactProfile.__new__(ExactProfile)
    for key, value in state.items():
        object.__setattr__(scan, key, value)
    for unit_top, eq in scan._map(st._scan_kernel, scan._tasks_range(None, 0, scan=True), space.count,
                                  "exact profile (scan)"):
        tops.append(unit_top)
        equal = equal and eq
    unit_top = np.concatenate(tops)
    top = float(unit_top.max())
    # the exact deviation of the row sums from 1 (fsum: correctly rounded, 0 only for exact sums of 1), rounded
    # up; a deviation "within rounding" of a float sum still changes the normalised rows by up to (m - 1) u
    dev = float(np.max(np.abs(prep["devs"])))
    # (identical compared rows stay identical once normalised: their profile is 0 for every eps >= 0)
    row_dev = math.nextafter(dev * (1.0 + 2.0 * UNIT_ROUNDOFF), math.inf) if dev > 0.0 and not equal else 0.0
    if row_dev > 0.0 and math.isfinite(top):
        top += math.log1p(2.0 * row_dev / (1.0 - row_dev))  # the widening of _eval_max shifts eps by this
    if math.isinf(top):
        pure = math.inf
    elif top <= 0.0 and equal:
        pure = 0.0  # every compared pair of rows is identical
    else:
        pure = math.nextafter(max(top, 0.0) + 2.0 * llr_err, math.inf)
    # a unit's computed values are exactly 0 from eps >= its largest log-ratio + 2 llr_err on
    unit_pure = np.nextafter(unit_top + 2.0 * llr_err, math.inf)
    finite = unit_top[np.isfinite(unit_top)]
    g_top = float(finite.max()) if finite.size else 2.0 * prep["big"]
    grid = np.linspace(0.0, max(g_top, 1e-300), st.GRID_POINTS)
    label = name if name is not None else f"finite mechanism ({len(labels)} inputs x {n_out} outputs, " \
        f"{'all pairs' if neighbors is None else f'{space.count} neighbour pairs'})"
    return ExactProfile(name=label, source="exact: max over neighbouring pairs of the hockey-stick divergence",
                        pure_epsilon=pure, **state, _row_dev=row_dev, _unit_top=unit_top, _grid=grid,
                        _state={"unit_pure": unit_pure})
