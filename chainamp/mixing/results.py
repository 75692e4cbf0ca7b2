"""The results of the mixing coefficients: one home below the dense and the structured paths (private).

:class:`DobrushinResult`, :class:`DoeblinResult`, :class:`UltraMixingResult` (Definition 1 of Balle et al.
2019) and :class:`LDPGuarantee` (K read as a local randomizer) are returned by the dense paths
(:mod:`.dense`) and by the structured ones (:mod:`.structured`), and dispatched to by the public functions
of :mod:`.coefficients` and :mod:`.guarantees`, which re-export them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .pairwise import _INF_EPS, _eval_pairs
from .pruning import _curve_values, _max_hockey
from .readings import _check_epsilons, _raw_order, _widen
from .rows import _Prep
from .._numerics import check_probability, check_real
from ..errors import InvalidParameterError
from ..operators import MarkovOperator

__all__ = ["DobrushinResult", "DoeblinResult", "UltraMixingResult", "LDPGuarantee"]

_METHODS = ("exact", "lp")
_SRC = "Definition 1({}) of Balle et al. 2019"


@dataclass(frozen=True)
class DobrushinResult:
    """``max_{x,x'} D_{e^eps}(K_x || K_x')`` (Definition 1(1)/(2)), rounded up, with its witness."""

    gamma: float
    epsilon: float
    pair: tuple | None
    test_set: tuple
    method: str
    certificate: object | None = None
    pairwise: np.ndarray | None = field(default=None, repr=False)
    source: str = ""


@dataclass(frozen=True)
class DoeblinResult:
    """``1 - sum_y min_x K(x, y)`` (Definition 1(3)) with the minorant and ``omega``."""

    gamma: float
    witness: np.ndarray | None = field(repr=False)
    minorant: np.ndarray = field(repr=False)
    method: str = "exact"
    certificate: object | None = None
    source: str = ""


@dataclass(frozen=True)
class UltraMixingResult:
    """``1 - min_{x,x',y} K(x,y)/K(x',y)`` (Definition 1(4)); 1 when the supports differ."""

    gamma: float
    pair: tuple | None
    output: object | None
    ratio: float
    method: str = "exact"
    certificate: object | None = None
    source: str = ""


@dataclass(frozen=True)
class LDPGuarantee:
    """K read as a local randomizer whose neighbours are all pairs of inputs (the LDP table).

    ``epsilon`` is the pure-LDP level ``eps_K = log(1 / (1 - gamma_ultra))`` = the
    largest log-likelihood ratio ``max log K(x,y)/K(x',y)`` (inf when supports differ),
    rounded up. ``delta(eps)`` is the (gamma, eps)-Dobrushin coefficient: K is
    ``(eps, delta(eps))``-LDP for every eps, so post-processing anything by K is
    ``(eps, delta(eps))``-DP. ``epsilon_at(delta)`` inverts it by bisection.
    """

    epsilon: float
    ultra: UltraMixingResult
    dobrushin: DobrushinResult
    operator: MarkovOperator = field(repr=False, compare=False)
    _prep: _Prep = field(repr=False, compare=False, default=None)
    _r: float = field(repr=False, compare=False, default=0.0)  # normalisation error covered (normalised=True)
    source: str = "Balle et al. 2019, Definition 1 read as local DP (all input pairs neighbours)"
    _run: dict = field(repr=False, compare=False, default_factory=dict)  # executor= and progress= of the scans

    def __repr__(self) -> str:
        u = self.ultra
        return (f"LDPGuarantee(epsilon={self.epsilon:.6g}, from ultra-mixing gamma={u.gamma:.6g}, "
                f"pair {u.pair!r}, output {u.output!r})")

    def delta(self, eps: Any) -> float | np.ndarray:
        """``max_{x,x'} D_{e^eps}(K_x || K_x')``, rounded up; a float for a scalar eps.

        >>> from chainamp.mixing import ldp_guarantee
        >>> g = ldp_guarantee(MarkovOperator([[0.75, 0.25], [0.25, 0.75]]))
        >>> round(g.delta(0.0), 6), g.delta([0.0, math.log(2)]).round(6).tolist()
        (0.5, [0.5, 0.25])
        """
        scalar = np.ndim(eps) == 0
        arr = _check_epsilons(eps, "eps")
        uniq, back = np.unique(arr, return_inverse=True)
        if self._r:  # the normalised rows, as dobrushin(normalised=True)
            orders = [_raw_order(float(e), self._r) for e in uniq]
            raw = dict(zip(orders, _curve_values(self._prep, np.array(sorted(set(orders))), **self._run).tolist()))
            vals = np.array([_widen(raw[o], float(e), self._r) for o, e in zip(orders, uniq)])
        else:
            vals = _curve_values(self._prep, uniq, **self._run)
        vals = np.minimum.accumulate(vals)[back]
        return float(vals[0]) if scalar else vals

    def epsilon_at(self, delta: float, *, xtol: float = 1e-9) -> float:
        """Smallest eps (up to ``xtol`` relative, rounded up) with ``delta(eps) <= delta``;
        ``inf`` when even eps = inf needs more. The returned eps is a verified point.

        Search: the pair (x, x') attaining ``delta(0)`` is inverted alone (its exact divergence,
        bisected to ``xtol``), then ``delta`` is evaluated once at that eps; if another pair is above
        ``delta`` there, that pair is inverted in turn from there. Only when rounding blurs the
        answer does a bisection of ``delta`` itself finish the search. Each ``delta`` evaluation after
        the first reuses the pair bounds kept across eps (:func:`chainamp.mixing.dobrushin`).

        >>> from chainamp.mixing import ldp_guarantee
        >>> g = ldp_guarantee(MarkovOperator([[0.75, 0.25], [0.25, 0.75]]))
        >>> round(g.epsilon_at(0.25), 6), g.epsilon_at(0.0) == g.epsilon
        (0.693147, True)
        """
        d = check_probability(delta, "delta")
        tol = _check_xtol(xtol, "xtol")
        if self.delta(0.0) <= d:
            return 0.0
        if math.isfinite(self.epsilon):
            lo, hi = 0.0, self.epsilon
        else:
            if self.delta(math.inf) > d:
                return math.inf
            lo, hi = 0.0, 1.0
            while hi < _INF_EPS and self.delta(hi) > d:
                lo, hi = hi, min(2.0 * hi, _INF_EPS)
        if self._prep is not None and type(self).delta is LDPGuarantee.delta and self._prep.n > 1:
            found, verified = self._pair_guided(d, tol, lo, hi)
            if verified:
                return found
            lo = found  # delta(found) > d: the plain bisection finishes from there
        while hi - lo > tol * max(1.0, hi):
            mid = 0.5 * (lo + hi)
            if self.delta(mid) <= d:
                hi = mid
            else:
                lo = mid
        return hi

    def _pair_value(self, i: int, j: int, e: float) -> float:
        """Rigorous upper bound of ``D_{e^e}`` of the pair (i, j) as :meth:`delta` reads it (normalised rows)."""
        order = _raw_order(e, self._r)
        _, ups = _eval_pairs(self._prep.data, np.array([i]), np.array([j]), order)
        return _widen(min(float(ups[0]), 1.0), e, self._r)

    def _pair_guided(self, d: float, tol: float, lo: float, hi: float):
        """(eps, done): done with a verified eps, or not done with a lower end for the plain bisection."""
        _, i, j = _max_hockey(self._prep, _raw_order(0.0, self._r), **self._run)
        for _ in range(8):
            a, b = lo, hi  # the pair's own crossing in [a, b]
            while b - a > tol * max(1.0, b):
                mid = 0.5 * (a + b)
                if self._pair_value(i, j, mid) <= d:
                    b = mid
                else:
                    a = mid
            if self.delta(b) <= d:
                return b, True
            _, i2, j2 = _max_hockey(self._prep, _raw_order(b, self._r), **self._run)
            lo = b  # delta(b) > d
            if (i2, j2) == (i, j) or self._pair_value(i2, j2, b) <= d:
                return lo, False  # rounding, not another pair: bisect delta itself
            i, j = i2, j2
        return lo, False


def _check_xtol(value: Any, name: str) -> float:
    x = check_real(value, name)
    if not 0.0 < x < 1.0:
        raise InvalidParameterError(f"{name} must be in (0, 1) (got {x!r})")
    return x
