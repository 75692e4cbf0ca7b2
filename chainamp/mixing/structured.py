"""The coefficients of Definition 1 (Balle et al. 2019) of a structured operator, per orbit of input pairs.

A :class:`~chainamp.operators.StructuredOperator` lists orbits of ordered input pairs
(:meth:`~chainamp.operators.StructuredOperator.pair_orbits`): for each, two small vectors ``(p, q)``
of block masses with the privacy-loss distribution of every pair in the orbit, entrywise within
``1 +- rel_error`` of the exact masses. So (Balle et al. 2019, Definition 1):

* (gamma, eps)-Dobrushin ``max_{x,x'} D_{e^eps}(K_x || K_x')`` is the maximum over the orbits of
  ``max(D(p || q), D(q || p))`` (the reversed pair is also a pair of inputs), each computed by the
  exact dense path on the 2-row operator ``[p; q]`` at the order ``eps - log((1 + r)/(1 - r))`` and widened
  by ``r`` (``r`` = the orbit's ``rel_error``, combined with the normalisation error for
  ``normalised=True``): ``[p* - c q*]_+ <= (1 + r)[p - c (1 - r)/(1 + r) q]_+`` (``_widen``);
* ultra-mixing ``min K(x,y)/K(x',y)`` is the minimum over the orbits' block ratios (a block holds
  outputs of one ratio), widened by ``ratio_error``; the pure LDP level is the largest log-ratio;
* Doeblin ``1 - sum_y min_x K(x, y)`` comes from :meth:`~StructuredOperator.minorant_mass` (a lower
  bound) and the exact row sums (:meth:`~StructuredOperator.row_sum_bounds`), as the dense
  ``top - sum(nu)``.

Work and memory depend on the number of orbits and blocks only (k-ary randomized response: one
orbit of three blocks, whatever k).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .dense import dense_curve, dense_dobrushin, dense_ldp_guarantee, dense_ultra_mixing
from .readings import _check_epsilons, _raw_order, _shift, _widen
from .results import _SRC, DobrushinResult, DoeblinResult, LDPGuarantee, UltraMixingResult
from .pairwise import _prepare
from .pruning import _max_hockey
from .rows import _U
from ..errors import ResourceLimitError
from ..operators import MarkovOperator, PairOrbit, StructuredOperator, operator_error

__all__ = ["structured_dobrushin", "structured_curve", "structured_doeblin", "structured_ultra_mixing",
           "structured_ldp_guarantee", "OutputBlocks"]

#: test sets with at most this many outputs are returned as a tuple of labels, larger ones as :class:`OutputBlocks`
TEST_SET_TUPLE_MAX = 1 << 16


class OutputBlocks(Sequence):
    """A large set of outputs given by blocks of output indices (a test set too big for a tuple)."""

    def __init__(self, labels: Sequence, blocks: Sequence[Iterable[int]], size: int):
        self._labels, self._blocks, self._size = labels, tuple(blocks), int(size)

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return (self._labels[int(i)] for i in itertools.chain.from_iterable(self._blocks))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(itertools.islice(self, *i.indices(self._size)))
        if not -self._size <= i < self._size:
            raise IndexError(i)
        return next(itertools.islice(self, i % self._size, None))

    def __repr__(self) -> str:
        return f"OutputBlocks({self._size} outputs)"


@dataclass(frozen=True)
class _Orbit:
    orbit: PairOrbit
    op: MarkovOperator  # rows p (0) and q (1), columns the blocks
    rel: float          # entrywise relative error covered (orbit rel_error with the normalisation)


def _combine(a: float, b: float) -> float:
    if not a and not b:
        return 0.0
    return math.nextafter(((1.0 + a) * (1.0 + b) - 1.0) * (1.0 + 4 * _U), math.inf)


#: The 2-row operators of the orbits of the last few operators (building them is most of a query's cost).
_ORBIT_CACHE: dict = {}
_ORBIT_CACHE_SIZE = 4  # (an orbit stack of a large product can take tens of MB)
#: Orbits whose approximate value is within this relative distance of the largest are evaluated exactly.
_CANDIDATE_RTOL = 1e-6


def _orbits(K: StructuredOperator, normalised: bool) -> list[_Orbit]:
    key = (id(K), bool(normalised))
    hit = _ORBIT_CACHE.get(key)
    if hit is not None and hit[0] is K:
        return hit[1]
    r = operator_error(K).rel if normalised else 0.0
    out = []
    for orb in K.pair_orbits():
        m = orb.p.size
        op = MarkovOperator._trusted(np.vstack([orb.p, orb.q]), (0, 1), range(m))
        out.append(_Orbit(orb, op, _combine(orb.rel_error, r)))
    if len(_ORBIT_CACHE) >= _ORBIT_CACHE_SIZE:
        _ORBIT_CACHE.pop(next(iter(_ORBIT_CACHE)))
    _ORBIT_CACHE[key] = (K, out)
    return out


def _sorted_sums(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Losses ``log(P/Q)`` in decreasing order with the cumulative masses of P and Q (approximate)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(P) - np.log(Q)
    keep = P > 0
    loss, p, q = loss[keep], P[keep], Q[keep]
    order = np.argsort(-loss, kind="stable")
    return -loss[order], np.cumsum(p[order]), np.cumsum(q[order])


def _approx_values(orbits: list[_Orbit], eps: float) -> np.ndarray:
    """Each orbit's widened ``max(D(p || q), D(q || p))`` at eps, in plain floating point (only used to pick
    the orbits worth an exact evaluation: within ``_CANDIDATE_RTOL`` of the largest)."""
    key = id(orbits)
    hit = _SUMS_CACHE.get(key)
    if hit is None or hit[0] is not orbits:
        rows = [s for o in orbits for s in (_sorted_sums(o.orbit.p, o.orbit.q), _sorted_sums(o.orbit.q, o.orbit.p))]
        width = max(r[0].size for r in rows) + 1
        NL = np.full((len(rows), width), np.inf)  # -loss ascending, padded (never counted)
        CP, CQ = np.zeros((len(rows), width)), np.zeros((len(rows), width))
        for k, (nl, cp, cq) in enumerate(rows):
            NL[k, :nl.size], CP[k, 1:cp.size + 1], CQ[k, 1:cq.size + 1] = nl, cp, cq
        rel = np.repeat([o.rel for o in orbits], 2)
        if len(_SUMS_CACHE) >= _ORBIT_CACHE_SIZE:
            _SUMS_CACHE.pop(next(iter(_SUMS_CACHE)))
        _SUMS_CACHE[key] = hit = (orbits, (NL, CP, CQ, rel))
    NL, CP, CQ, rel = hit[1]
    orders = np.array([_raw_order(eps, float(r)) for r in rel[::2]]).repeat(2)
    j = (NL < -orders[:, None]).sum(axis=1)  # losses > order
    rows = np.arange(NL.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        c = np.exp(np.minimum(orders, 700.0))
        c = np.where(np.isfinite(orders), c, np.inf)
        cq = CQ[rows, j]
        sub = np.where(cq > 0, c * cq, 0.0)
        val = CP[rows, j] - sub
        # the difference of two rounded sums may cancel: its error is at most (width + 8) u (cp + c cq), plus
        # the cost of a loss within rounding of the order being counted on the wrong side
        err = (NL.shape[1] + 8) * 4 * _U * (CP[rows, j] + np.where(np.isfinite(sub), sub, 0.0)) + 1e-300
    val = np.maximum(val, 0.0) * (1.0 + rel) + (1.0 - np.minimum(c, 1.0)) * (1.0 + rel)
    lo_, hi_ = (val - err * (1.0 + rel)).reshape(-1, 2).max(axis=1), (val + err * (1.0 + rel)).reshape(-1, 2).max(axis=1)
    return np.stack([lo_, hi_])


_SUMS_CACHE: dict = {}
_RATIO_CACHE: dict = {}


def _extreme_ratios(orbits: list[_Orbit]) -> tuple[np.ndarray, np.ndarray]:
    """Per orbit, in plain floating point: the smallest ratio ``min(p/q, q/p)`` over its blocks (0 where one
    side is 0) and the largest ``|log(p/q)|`` (inf there); only used to pick candidate orbits."""
    hit = _RATIO_CACHE.get(id(orbits))
    if hit is None or hit[0] is not orbits:
        lo, hi = np.empty(len(orbits)), np.empty(len(orbits))
        for k, o in enumerate(orbits):
            p, q = o.orbit.p, o.orbit.q
            both = (p > 0) | (q > 0)
            p, q = p[both], q[both]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.minimum(p / q, q / p)
                lr = np.abs(np.log(p) - np.log(q))
            lo[k] = float(np.nan_to_num(ratio, nan=0.0).min()) if p.size else 1.0
            hi[k] = float(np.nan_to_num(lr, nan=np.inf).max()) if p.size else 0.0
        if len(_RATIO_CACHE) >= _ORBIT_CACHE_SIZE:
            _RATIO_CACHE.pop(next(iter(_RATIO_CACHE)))
        _RATIO_CACHE[id(orbits)] = hit = (orbits, (lo, hi))
    return hit[1]


def _candidates(values: np.ndarray) -> np.ndarray:
    """The orbits whose value may be the largest: ``values`` holds lower and upper ends of each orbit's
    approximate value (rows); an orbit is dropped only when its upper end is below the largest lower end by
    more than ``_CANDIDATE_RTOL`` relative."""
    lo, hi = values
    top = float(lo.max())
    return np.flatnonzero(hi >= top * (1.0 - _CANDIDATE_RTOL) - 1e-280)


def _pair_labels(K: StructuredOperator, orb: PairOrbit, forward: bool) -> tuple:
    i, j = orb.pair if forward else orb.pair[::-1]
    return K.inputs[int(i)], K.inputs[int(j)]


def _test_set(K: StructuredOperator, orb: PairOrbit, blocks: Sequence[int]) -> Sequence:
    size = sum(int(orb.sizes[b]) for b in blocks) if orb.sizes else None
    members = [orb.members(int(b)) for b in blocks] if orb.members is not None else []
    if size is not None and size > TEST_SET_TUPLE_MAX:
        return OutputBlocks(K.outputs, members, size)
    return tuple(K.outputs[int(y)] for y in itertools.chain.from_iterable(members))


def structured_dobrushin(K: StructuredOperator, eps: float, normalised: bool, source: str) -> DobrushinResult:
    """:func:`chainamp.dobrushin` of a structured operator (method "exact"): the largest orbit value."""
    best = None
    orbits = _orbits(K, normalised)
    if len(orbits) > 2:  # exact values only for the orbits that can attain the maximum
        orbits = [orbits[int(k)] for k in _candidates(_approx_values(orbits, eps))]
    for o in orbits:
        order = _raw_order(eps, o.rel)
        res = dense_dobrushin(o.op, order)
        g = _widen(res.gamma, eps, o.rel)
        if best is None or g > best[0]:
            best = (g, o, res)
    if best is None:  # one input: no pair
        return DobrushinResult(0.0, eps, None, (), "exact", None, None, source)
    g, o, res = best
    forward = res.pair == (0, 1)
    blocks = res.test_set  # block indices of the 2-row operator, read at the raw order
    return DobrushinResult(gamma=g, epsilon=eps, pair=_pair_labels(K, o.orbit, forward),
                           test_set=_test_set(K, o.orbit, blocks), method="exact", certificate=None,
                           pairwise=None, source=source)


def structured_curve(K: StructuredOperator, eps: np.ndarray, normalised: bool) -> np.ndarray:
    """:func:`chainamp.dobrushin_curve` of a structured operator at sorted distinct ``eps`` (not yet made
    monotone): the largest widened orbit value at each eps."""
    out = np.zeros(eps.size)
    orbits = _orbits(K, normalised)
    if eps.size == 1 and len(orbits) <= 2:  # one eps (a bisection step): dense_curve's value without its checks
        e = float(eps[0])
        for o in orbits:
            raw = _max_hockey(_prepare(o.op, None), _raw_order(e, o.rel))[0]
            out[0] = max(out[0], _widen(float(raw), e, o.rel))
        return out
    if len(orbits) > 2:
        keep = set()
        for e in eps:
            keep.update(int(k) for k in _candidates(_approx_values(orbits, float(e))))
        orbits = [orbits[k] for k in sorted(keep)]
    for o in orbits:
        orders = np.array([_raw_order(float(e), o.rel) for e in eps])
        uniq, back = np.unique(orders, return_inverse=True)
        raw = dense_curve(o.op, uniq)[back]
        vals = np.array([_widen(float(g), float(e), o.rel) for g, e in zip(raw, eps)])
        out = np.maximum(out, vals)
    return out


def structured_doeblin(K: StructuredOperator) -> DoeblinResult:
    """:func:`chainamp.doeblin` of a structured operator: ``max(1, max_x s_x) - sum(nu)`` rounded up, with
    ``sum(nu)`` the structure's lower bound (``minorant_mass``) and ``s_x`` the exact row sums."""
    mass = float(K.minorant_mass())
    top = max(1.0, float(K.row_sum_bounds()[1]))
    gap = Fraction(top) - Fraction(mass)  # exact: top is an upper bound of the row sums, mass a lower bound of sum(nu)
    gamma = 1.0 if mass <= 0 else 0.0 if gap <= 0 else min(_round_up(gap), 1.0)
    try:
        nu = K.minorant()
    except ResourceLimitError:  # too many outputs to list: the mass is still certified
        nu = np.zeros(0)
    nu.flags.writeable = False
    witness = None
    if gamma < 1.0 and mass > 0 and nu.size:
        witness = nu / float(nu.sum())
        witness.flags.writeable = False
    return DoeblinResult(gamma=gamma, witness=witness, minorant=nu, method="exact", certificate=None,
                         source=_SRC.format(3))


def _round_up(x: Fraction) -> float:
    f = float(x)  # correctly rounded
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def _ratio_widen(gamma: float, e: float) -> float:
    """Ultra-mixing gamma when every ratio is known within a factor ``[1 - e, 1 + e]`` of the computed one."""
    if not e or not 0.0 < gamma < 1.0:
        return gamma
    kept = (1.0 - gamma) * (1.0 - e) / (1.0 + e) * (1.0 - 8 * _U)
    return min(math.nextafter(1.0 - kept, math.inf), 1.0)


def structured_ultra_mixing(K: StructuredOperator, normalised: bool) -> UltraMixingResult:
    """:func:`chainamp.ultra_mixing` of a structured operator: the smallest block ratio over the orbits."""
    r = operator_error(K).rel if normalised else 0.0
    best = None
    orbits = _orbits(K, False)
    if len(orbits) > 2:  # exact values only for the orbits whose smallest ratio can be the smallest
        lo, _ = _extreme_ratios(orbits)
        err = np.array([o.orbit.ratio_error for o in orbits])
        top = float(np.min(lo * (1.0 + 2.0 * err)))
        orbits = [orbits[int(k)] for k in np.flatnonzero(lo * (1.0 - 2.0 * err) <= top * (1.0 + _CANDIDATE_RTOL))]
    for o in orbits:
        res = dense_ultra_mixing(o.op)
        # the orbit's ratios are within [1 - e, 1 + e]; normalising moves a ratio by [(1 - r)/(1 + r), (1 + r)/(1 - r)]
        g = _ratio_widen(_ratio_widen(res.gamma, o.orbit.ratio_error), r)
        if best is None or (g, -res.ratio) > (best[0], -best[1].ratio):
            best = (g, res, o)
    if best is None:
        return UltraMixingResult(gamma=0.0, pair=None, output=None, ratio=1.0, method="exact", certificate=None,
                                 source=_SRC.format(4))
    g, res, o = best
    pair = None if res.pair is None else _pair_labels(K, o.orbit, res.pair == (0, 1))
    out = None
    if res.output is not None and o.orbit.members is not None:
        first = next(iter(o.orbit.members(int(res.output))), None)
        out = None if first is None else K.outputs[int(first)]
    return UltraMixingResult(gamma=g, pair=pair, output=out, ratio=res.ratio, method="exact", certificate=None,
                             source=_SRC.format(4))


@dataclass(frozen=True, repr=False)
class StructuredLDPGuarantee(LDPGuarantee):
    """:class:`~chainamp.LDPGuarantee` of a structured operator: ``delta(eps)`` from the orbits."""

    _normalised: bool = field(repr=False, compare=False, default=False)

    def delta(self, eps):
        scalar = np.ndim(eps) == 0
        if scalar and type(eps) is float and eps >= 0.0:  # (a bisection step: one eps, checked here)
            return float(structured_curve(self.operator, np.array([eps]), self._normalised)[0])
        arr = _check_epsilons(eps, "eps")
        uniq, back = np.unique(arr, return_inverse=True)
        vals = np.minimum.accumulate(structured_curve(self.operator, uniq, self._normalised))[back]
        return float(vals[0]) if scalar else vals


def structured_ldp_guarantee(K: StructuredOperator, normalised: bool) -> LDPGuarantee:
    """:func:`chainamp.ldp_guarantee` of a structured operator: the pure level is the largest orbit log-ratio
    (rounded up, widened by the ratio error and, with ``normalised``, the normalisation), ``delta`` the
    orbit curve."""
    r = operator_error(K).rel if normalised else 0.0
    eps = 0.0
    orbits = _orbits(K, False)
    if len(orbits) > 2:  # exact levels only for the orbits whose largest log-ratio can be the largest
        _, hi = _extreme_ratios(orbits)
        wide = np.array([_shift(_combine(o.orbit.ratio_error, 0.0)) for o in orbits])
        top = float(np.max(hi - wide))
        orbits = [orbits[int(k)] for k in np.flatnonzero(hi + wide >= top - _CANDIDATE_RTOL * (1.0 + abs(top)))]
    for o in orbits:
        e = dense_ldp_guarantee(o.op).epsilon
        wide = _combine(o.orbit.ratio_error, 0.0)
        if wide and 0.0 < e < math.inf:
            e = math.nextafter((e + _shift(wide)) * (1.0 + 4 * _U), math.inf)
        eps = max(eps, e)
    if r and 0.0 < eps < math.inf:
        eps = math.nextafter((eps + _shift(r)) * (1.0 + 4 * _U), math.inf)
    source = _SRC.format(1)
    return StructuredLDPGuarantee(epsilon=eps, ultra=structured_ultra_mixing(K, normalised),
                                  dobrushin=structured_dobrushin(K, 0.0, normalised, source), operator=K, _prep=None,
                                  _r=r, _normalised=normalised)
