"""The exact privacy profile of a structured mechanism, per orbit of neighbouring pairs.

For a :class:`~chainamp.operators.StructuredOperator` M, every ordered pair of inputs belongs to an
orbit whose two small vectors ``(p, q)`` of block masses have the pair's privacy-loss distribution
(:class:`~chainamp.operators.PairOrbit`). So ``delta(eps) = max over neighbouring (u, u') of
D_{e^eps}(M_u || M_u')`` (Balle, Barthe, Gaboardi 2018) is the maximum over the orbits met by the
neighbour relation of ``D_{e^eps}(p || q)`` and ``D_{e^eps}(q || p)`` (both directions of every
neighbouring pair count). It is computed by the dense exact machinery (:func:`.exact.exact_profile`) on
the small *orbit mechanism*: two rows ``p``, ``q`` per orbit, on disjoint blocks of outputs, the pairs
``(p, q)`` its neighbours. The orbit entries are within ``1 +- rel_error`` of the exact masses and the
stored rows stand for their normalised rows (exact row sums from
:meth:`~chainamp.operators.StructuredOperator.row_sum_bounds`); the curve is widened by both
(:func:`chainamp.operators.widen_hockey`), so every delta is rounded UP.

k-ary randomized response has one orbit of three blocks: the profile costs the same at k = 10^6 as
at k = 3, and nothing of size k is formed (unless a neighbour list names k labels).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_epsilon
from ..operators import MarkovOperator, StructuredOperator, hockey_shift, operator_error, widen_hockey
from .exact import exact_profile
from .neighbors import neighbor_pairs
from .profiles import PrivacyProfile

__all__ = ["StructuredProfile", "structured_profile"]


class StructuredProfile(PrivacyProfile):
    """Exact privacy profile of a structured mechanism (built by :func:`chainamp.privacy_profile`).

    ``labels`` are the mechanism's input labels; ``orbit_profile`` the exact profile of the orbit
    mechanism (rows ``2t``, ``2t + 1`` = ``p``, ``q`` of the t-th orbit met); ``rel`` the entrywise
    relative error the curve is widened by.
    """

    __slots__ = ("labels", "orbit_profile", "rel", "_reps")

    def __init__(self, *, inner: PrivacyProfile, labels: Any, reps: list, rel: float, name: str) -> None:
        shift = hockey_shift(rel)
        pure = inner.pure_epsilon
        if rel and 0.0 < pure < math.inf:
            pure = math.nextafter((pure + shift) * (1.0 + 4 * UNIT_ROUNDOFF), math.inf)

        def value_at(o: np.ndarray) -> np.ndarray:  # (one eps: the inner profile's scalar query and memo)
            return np.array([inner.delta(float(o[0]))]) if o.size == 1 else np.asarray(inner.delta(o), dtype=float)

        def evaluate(eps: np.ndarray) -> np.ndarray:
            return widen_hockey(value_at, np.asarray(eps, dtype=float), rel)

        pair = (lambda: inner.dominating_pair().widened(rel)) if inner.exact else None  # (exact pair, widened)
        super().__init__(evaluate, name=name, source="exact: max over neighbouring pairs of the hockey-stick "
                         "divergence, per orbit of pairs of a structured mechanism", exact=True, pure_epsilon=pure,
                         pair=pair)
        for key, value in (("labels", labels), ("orbit_profile", inner), ("rel", rel), ("_reps", reps)):
            object.__setattr__(self, key, value)

    def witness(self, epsilon: float) -> tuple:
        """A neighbouring pair ``(u, u')`` of input labels attaining ``delta(epsilon)`` (up to the widening).

        >>> from chainamp.mechanisms import randomized_response
        >>> from chainamp.privacy import privacy_profile
        >>> privacy_profile(randomized_response(10**6, 1.0)).witness(0.5)
        (0, 1)
        """
        eps = check_epsilon(epsilon)
        at = eps if not self.rel or math.isinf(eps) else max(eps - hockey_shift(self.rel), 0.0)
        a, b = self.orbit_profile.witness(at)
        i, j = self._reps[int(a) // 2]
        if int(a) % 2:  # the q row first: the reversed pair
            i, j = j, i
        return self.labels[int(i)], self.labels[int(j)]


def structured_profile(M: StructuredOperator, neighbors: Any = None, name: str | None = None) -> StructuredProfile:
    """:func:`chainamp.privacy_profile` of a structured mechanism (see the module docstring)."""
    labels = M.inputs
    n = M.shape[0]
    if neighbors is None or n < 2:
        pairs = None
        if n < 2:
            neighbor_pairs(labels, neighbors)  # raises: the relation is empty
        # all pairs: the listed orbits (for a large product, its maximal types, which attain the maximum)
        chosen = list(M.pair_orbits())
        reps = [tuple(int(v) for v in o.pair) for o in chosen]
    else:
        pairs = neighbor_pairs(labels, neighbors)
        first: dict = {}  # each listed pair's own orbit (its exact divergences), once per key
        for i, j in pairs.tolist():
            key, orbit = M.pair_orbit(i, j)
            if key not in first:
                first[key] = (orbit, (i, j))
        chosen = [o for o, _ in first.values()]
        reps = [r for _, r in first.values()]
    sizes = [o.p.size for o in chosen]
    mat = np.zeros((2 * len(chosen), int(sum(sizes))))
    col = 0
    for row, (o, size) in enumerate(zip(chosen, sizes)):
        mat[2 * row, col:col + size] = o.p
        mat[2 * row + 1, col:col + size] = o.q
        col += size
    # the orbit rows sum to the stored rows' sums (accepted when M was built): no second row-sum check
    orbit_mech = MarkovOperator(mat, row_sum_atol=1.0)
    inner = exact_profile(orbit_mech, [(2 * r, 2 * r + 1) for r in range(len(chosen))])
    rel_norm = operator_error(M).rel
    rel = max((o.rel_error for o in chosen), default=0.0)
    if rel or rel_norm:
        rel = math.nextafter(((1.0 + rel) * (1.0 + rel_norm) - 1.0) * (1.0 + 4 * UNIT_ROUNDOFF), math.inf)
    if name is None:
        what = "all pairs" if neighbors is None else f"{len(pairs) // 2 if pairs is not None else 0} neighbour pairs"
        name = f"finite mechanism ({n} inputs x {M.shape[1]} outputs, {what})"
    return StructuredProfile(inner=inner, labels=labels, reps=reps, rel=rel, name=name)
