"""T reports of a product pipeline, certified coordinate by coordinate.

When M and K are Kronecker products on the same coordinates (RAPPOR: the permanent then the
instantaneous randomized response, bit by bit; unary encodings), M's output ``b`` and every report
are drawn coordinate by coordinate, independently. Per coordinate, the channel from M's coordinate
input ``x_i`` to the counts of the T reports' values on that coordinate is

* memoized (``b_i`` drawn once, each report ``y_{t,i} ~ F(b_i, .)``):
  ``G(x, n) = sum_b M_f(x, b) multinomial(T; n) prod_y F(b, y)^{n_y}``;
* fresh (each report redraws ``b_i``): ``G(x, n) = multinomial(T; n) prod_y (M_f F)(x, y)^{n_y}``,

with ``n`` the count vector over F's outputs (``T + 1`` outcomes for bits). The counts are sufficient
for the report sequence on the coordinate (the sequence's probability depends on it only through
them; :mod:`.reports`), so the whole T-report pipeline is the product channel ``G (x) ... (x) G``
restricted to M's inputs, with the same privacy profile as the sequences (Balle, Barthe, Gaboardi
and Geumlek 2019, Section 2: each is a post-processing of the other). Two inputs that differ on a set
S of coordinates give a pair whose rows are products over S of the pairs ``(G(x_i, .), G(x'_i, .))``
(equal coordinates cancel), so its hockey-stick curve is that of the product pair, composed
exactly by :mod:`.loss_atoms`. Which pairs are worst: a pair that differs on more coordinates is a
post-processing (a marginal) of none smaller, but every smaller pair is a marginal of a larger one,
so for Bloom filters with h ones out of m (RAPPOR) the worst pairs differ on ``a = min(h, m - h)``
ones each way, and one-hot inputs (h = 1) on two coordinates; over all tuples every type of pair
that differs everywhere is listed.

Exactness. The entries of G are computed in integer arithmetic from the stored floats (each a dyadic
rational; rows normalised exactly), their logarithms rounded outward, so the atoms are upper atoms
of the exact pair; the profile is exact up to that rounding, or, when a half of the product has more
than :data:`~.loss_atoms.MAX_HALF_ATOMS` atoms, up to losses rounded up to a grid (``exact`` False).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .._numerics import UNIT_ROUNDOFF
from ..errors import InvalidParameterError
from ..operators import KroneckerOperator, MarkovOperator
from ..privacy import PrivacyProfile
from .loss_atoms import MAX_HALF_ATOMS, LossAtoms, atoms_of_pair, hockey_stick_of_halves, product_atoms

__all__ = ["count_channel", "product_reports_profile", "product_plan", "dense_product_plan", "MAX_COORDINATE_OUTCOMES"]

_U = UNIT_ROUNDOFF
#: Largest number of count vectors of one coordinate's T-report channel.
MAX_COORDINATE_OUTCOMES = 1 << 16
#: Largest number of pair types (over all tuples) listed.
MAX_PAIR_TYPES = 64


def _dyadic_rows(A: np.ndarray) -> list[list[int]]:
    """Each row of ``A`` as integers over a common power of two (every float is a dyadic rational)."""
    rows = []
    for r in np.asarray(A, dtype=float):
        fr = [float(x).as_integer_ratio() for x in r]
        D = max(d for _, d in fr)
        rows.append([n * (D // d) for n, d in fr])
    return rows


def _compositions(T: int, w: int):
    if w == 1:
        yield (T,)
        return
    for first in range(T, -1, -1):
        for rest in _compositions(T - first, w - 1):
            yield (first,) + rest


def _log_interval(N: int, D: int) -> tuple[float, float]:
    """``[lo, hi]`` around ``log(N / D)`` for non-negative integers ``N`` and positive ``D``: the quotient is first
    reduced to an integer ``q`` of 64 bits with ``q <= 2^s N / D < q + 1`` (exact integer arithmetic), so
    ``log(N / D)`` lies in ``[log q - s log 2, log(q + 1) - s log 2]``; ``math.log`` of ``q`` (converted with
    relative error u) and ``s log 2`` are each within ``2u`` of their magnitudes, hence the margin
    ``4u (|log q| + |s| log 2 + 2)`` plus ``2^-62`` for ``log((q + 1)/q)``.

    Examples
    --------
    >>> lo, hi = _log_interval(1, 3)
    >>> lo < -math.log(3) < hi and hi - lo < 1e-13
    True
    """
    if N == 0:
        return -math.inf, -math.inf
    s = D.bit_length() - N.bit_length() + 64
    q = (N << s) // D if s >= 0 else N // (D << -s)
    lq = math.log(q)
    v = lq - s * _LN2
    err = 4 * _U * (abs(lq) + abs(s) * _LN2 + 2.0)
    return math.nextafter(v - err, -math.inf), math.nextafter(v + err + 2.0**-62, math.inf)


_LN2 = math.log(2.0)


@functools.lru_cache(maxsize=32)
def _channel_cached(mf: bytes, mshape: tuple, f: bytes, fshape: tuple, T: int, memoized: bool):
    Mf = np.frombuffer(mf, dtype=float).reshape(mshape)
    F = np.frombuffer(f, dtype=float).reshape(fshape)
    m_rows, f_rows = _dyadic_rows(Mf), _dyadic_rows(F)
    s, w = F.shape
    if memoized:  # components b of each row x: coefficient M_f(x, b) (common denominators), base F(b, .)
        S = [sum(r) for r in f_rows]
        W = [math.prod(S[c] ** T for c in range(s) if c != b) for b in range(s)]
        comps = [[(m_rows[x][b] * W[b], b) for b in range(s) if m_rows[x][b]] for x in range(len(m_rows))]
        bases = f_rows
    else:
        S = [sum(r) for r in f_rows]
        W1 = [math.prod(S[c] for c in range(s) if c != b) for b in range(s)]
        bases = [[sum(m_rows[x][b] * W1[b] * f_rows[b][y] for b in range(s)) for y in range(w)]
                 for x in range(len(m_rows))]
        comps = [[(1, x)] for x in range(len(m_rows))]
    used = sorted({b for row in comps for _, b in row})
    pows = {}
    for b in used:
        table = []
        for y in range(w):
            col = [1]
            for _ in range(T):
                col.append(col[-1] * bases[b][y])
            table.append(col)
        pows[b] = table
    outcomes = tuple(_compositions(T, w))
    nums = [[0] * len(outcomes) for _ in comps]
    for k, n in enumerate(outcomes):
        mult, left = 1, T
        for c in n:
            mult *= math.comb(left, c)
            left -= c
        terms = {b: math.prod(pows[b][y][n[y]] for y in range(w)) for b in used}
        for x, row in enumerate(comps):
            nums[x][k] = mult * sum(coef * terms[b] for coef, b in row)
    lo = np.empty((len(comps), len(outcomes)))
    hi = np.empty_like(lo)
    for x, row in enumerate(nums):
        D = sum(row)
        for k, N in enumerate(row):
            lo[x, k], hi[x, k] = _log_interval(N, D)
    lo.flags.writeable = False
    hi.flags.writeable = False
    return outcomes, lo, hi


def count_channel(Mf: Any, F: Any, reports: int, *, memoized: bool = True,
                  max_outcomes: int = MAX_COORDINATE_OUTCOMES) -> tuple[tuple, np.ndarray, np.ndarray]:
    """One coordinate's T-report channel: outcomes (count vectors over F's outputs) and intervals
    ``[lo, hi]`` of ``log G(x, n)`` for each of M_f's inputs x (see the module docstring). The entries are
    computed exactly in integers from the stored floats (each row normalised exactly), then their logarithms
    rounded outward.

    Examples
    --------
    >>> Mf = [[0.75, 0.25], [0.25, 0.75]]; F = [[0.5, 0.5], [0.25, 0.75]]
    >>> outs, lo, hi = count_channel(Mf, F, 2)
    >>> outs, np.exp(hi[1]).round(6).tolist()  # bit 1: 3/4 (1/4)^n... mixed with 1/4 (1/2)^n...
    (((2, 0), (1, 1), (0, 2)), [0.109375, 0.40625, 0.484375])
    """
    Mf = np.ascontiguousarray(np.asarray(Mf, dtype=float))
    F = np.ascontiguousarray(np.asarray(F, dtype=float))
    if Mf.ndim != 2 or F.ndim != 2 or Mf.shape[1] != F.shape[0]:
        raise InvalidParameterError(f"M_f's outputs must be F's inputs (shapes {Mf.shape} and {F.shape})")
    n_out = math.comb(reports + F.shape[1] - 1, F.shape[1] - 1)
    if n_out > max_outcomes:
        raise InvalidParameterError(f"reports={reports}: one coordinate's count channel has {n_out} outcomes "
                                    f"(count vectors over {F.shape[1]} values), above max_outcomes={max_outcomes}")
    return _channel_cached(Mf.tobytes(), Mf.shape, F.tobytes(), F.shape, int(reports), bool(memoized))


def product_plan(mechanism: Any, K: Any):
    """``(M_f, F, types)`` when M and K are Kronecker products that :func:`product_reports_profile` handles
    (one factor each, K over all tuples, M's coordinate outputs K's coordinate inputs; M's inputs one-hot,
    fixed-weight or all tuples), else None. ``types`` lists the worst pair types: tuples of
    ``((x, x'), count)`` (M_f's input indices on a differing coordinate, and how many coordinates)."""
    if not (isinstance(mechanism, KroneckerOperator) and isinstance(K, KroneckerOperator)):
        return None
    if len(mechanism.factors) != 1 or len(K.factors) != 1 or K.input_family != "all":
        return None
    (Mf, d), (F, dk) = mechanism.factors[0], K.factors[0]
    if d != dk or tuple(Mf.outputs) != tuple(F.inputs) or mechanism.shape[0] < 2:
        return None
    fam = mechanism.input_family
    if fam in ("fixed-weight", "one-hot"):
        c0 = np.asarray(mechanism.input_coordinates(0))
        one, zero = int(c0[0]), int(c0[-1])
        h = int(np.count_nonzero(c0 == one))
        a = min(h, d - h)
        if a < 1 or one == zero:
            return None
        types = [(((one, zero), a), ((zero, one), a))]
    elif fam == "all":
        r = Mf.shape[0]
        ordered = [(x, y) for x in range(r) for y in range(r) if x != y]
        n_types = math.comb(d + len(ordered) - 1, len(ordered) - 1)
        if n_types > MAX_PAIR_TYPES:
            return None
        types = []
        for counts in _compositions(d, len(ordered)):
            types.append(tuple((o, c) for o, c in zip(ordered, counts) if c))
    else:
        return None
    return Mf.matrix, F.matrix, types


#: A dense M is searched for a product structure up to this many entries, and pair types up to this many
#: (pairs x coordinates).
_DENSE_ENTRIES = 1 << 16
_DENSE_PAIR_WORK = 1 << 20


def dense_product_plan(mechanism: Any, k_factors: Any):
    """:func:`product_plan` for a dense M over tuples whose K is exactly a Kronecker power (``k_factors``, the
    exact factors of K: ``[(inputs_i, outputs_i, F_i), ...]``, all equal): M is a product too when every entry is
    exactly (rational arithmetic) ``prod_i M_f(x_i, y_i)`` for one factor M_f read off M's row marginals; then
    its inputs are an explicit list of tuples and the pair types are listed pair by pair. None otherwise.

    Examples
    --------
    >>> from chainamp import mechanisms
    >>> from chainamp.accounting.reports import _kron_factors
    >>> R = mechanisms.rappor_pipeline(4, 2)
    >>> plan = dense_product_plan(R.mechanism, _kron_factors(R.instantaneous))
    >>> sorted(plan[2])[-1]  # the worst type: two bits one way, two the other
    (((0, 1), 2), ((1, 0), 2))
    """
    from fractions import Fraction

    if k_factors is None or not isinstance(mechanism, MarkovOperator) or isinstance(mechanism, KroneckerOperator):
        return None
    f_in, f_out, F = k_factors[0]
    if any(tuple(i) != tuple(f_in) or tuple(o) != tuple(f_out) or not np.array_equal(G, F) for i, o, G in k_factors):
        return None
    d = len(k_factors)
    n, m = mechanism.shape
    if n < 2 or n * m > _DENSE_ENTRIES or n * n * d > _DENSE_PAIR_WORK:
        return None
    ins, outs = tuple(mechanism.inputs), tuple(mechanism.outputs)
    if not all(isinstance(x, tuple) and len(x) == d for x in ins + outs):
        return None
    out_index = {v: k for k, v in enumerate(f_in)}
    if any(v not in out_index for y in outs for v in y):
        return None
    values = list(dict.fromkeys(v for x in ins for v in x))
    in_index = {v: k for k, v in enumerate(values)}
    X = np.array([[in_index[v] for v in x] for x in ins], dtype=np.int64)
    Y = np.array([[out_index[v] for v in y] for y in outs], dtype=np.int64)
    A = np.asarray(mechanism.matrix, dtype=float)
    Mf = np.zeros((len(values), len(f_in)))
    for v in range(len(values)):  # M_f(v, .): the marginal of coordinate i of a row whose input has v there
        r, i = map(int, np.argwhere(X == v)[0])
        for w in range(len(f_in)):
            Mf[v, w] = float(A[r, Y[:, i] == w].sum())
    fr = [[Fraction(float(x)) for x in row] for row in Mf]
    for r in range(n):
        for c in range(m):
            if math.prod((fr[X[r, i]][Y[c, i]] for i in range(d)), start=Fraction(1)) != Fraction(float(A[r, c])):
                return None
    types = set()
    for r in range(n):
        diff = X[r] != X
        for j in np.flatnonzero(diff.any(axis=1)):
            cols = np.flatnonzero(diff[j])
            counts: dict = {}
            for i in cols:
                key = (int(X[r, i]), int(X[j, i]))
                counts[key] = counts.get(key, 0) + 1
            types.add(tuple(sorted(counts.items())))
    return Mf, F, sorted(types)


def _halves(parts: list[LossAtoms], budget: int) -> tuple[LossAtoms, LossAtoms]:
    parts = sorted(parts, key=lambda a: a.size)
    A, B = parts[0::2], parts[1::2]
    one = LossAtoms(np.zeros(1), np.ones(1))
    return (product_atoms(A, budget=budget) if A else one), (product_atoms(B, budget=budget) if B else one)


def product_reports_profile(Mf: Any, F: Any, types: list, reports: int, *, memoized: bool = True,
                            budget: int = MAX_HALF_ATOMS, max_outcomes: int = MAX_COORDINATE_OUTCOMES,
                            name: str | None = None) -> PrivacyProfile:
    """The privacy profile of T reports of a product pipeline over the pair types ``types`` (see
    :func:`product_plan`): the pointwise maximum, over the types and both orders of each pair, of the hockey-stick
    curve of the product of per-coordinate count-channel pairs (:func:`count_channel`), each composed exactly
    (:mod:`.loss_atoms`). Every delta is rounded up; ``exact`` is False when a grid was needed.

    Examples
    --------
    >>> from chainamp import mechanisms
    >>> Mf = mechanisms.rappor_permanent(0.5).matrix; F = mechanisms.rappor_instantaneous(0.5, 0.75).matrix
    >>> prof = product_reports_profile(Mf, F, [(((1, 0), 1),)], 1)  # one bit, one report
    >>> round(prof.pure_epsilon, 4), prof.exact
    (0.3365, True)
    """
    outcomes, lo, hi = count_channel(Mf, F, reports, memoized=memoized, max_outcomes=max_outcomes)
    cache: dict = {}

    def pair(x: int, y: int) -> LossAtoms:
        if (x, y) not in cache:
            cache[(x, y)] = atoms_of_pair((lo[x], hi[x]), (lo[y], hi[y]))
        return cache[(x, y)]

    directions = {}
    for t in types:
        for key in (tuple(sorted(t)), tuple(sorted(((b, a), c) for (a, b), c in t))):
            directions.setdefault(key, None)
    halves = []
    for key in directions:
        parts = [pair(a, b) for (a, b), c in key for _ in range(c)]
        halves.append(_halves(parts, budget))
    pure = 0.0
    for A, B in halves:
        top = float(A.loss[-1]) + float(B.loss[-1])
        pure = max(pure, math.inf if math.isinf(top) else math.nextafter(top + abs(top) * 2 * _U, math.inf))
    grid = max([max(A.grid, B.grid) for A, B in halves] + [0.0])

    def evaluate(eps: np.ndarray) -> np.ndarray:
        out = np.zeros(eps.size)
        for A, B in halves:
            out = np.maximum(out, hockey_stick_of_halves(A, B, eps))
        return out

    label = name or (f"{reports} {'memoized' if memoized else 'fresh'} report(s) of a product pipeline, per coordinate")
    src = "exact composition of per-coordinate count channels" + (
        f" (losses rounded up to a grid of {grid:.3g})" if grid else "")
    return PrivacyProfile(evaluate, name=label, source=src, exact=not grid, pure_epsilon=max(pure, 0.0))
