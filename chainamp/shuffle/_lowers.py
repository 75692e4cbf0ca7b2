"""Lower profiles (exact profiles of concrete datasets' views) evaluated from below.

Private to ``shuffle/``. A lower pair's own :meth:`~chainamp.privacy.DominatingPair.delta` rounds UP (an upper
bound's rounding); a lower must never be above the truth, so its curve is evaluated here with every rounding
toward a smaller delta.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._numerics import UNIT_ROUNDOFF
from ..privacy import DominatingPair, PrivacyProfile

__all__: list[str] = []


def lower_delta(pair: DominatingPair) -> Callable[[np.ndarray], np.ndarray]:
    """``H_{e^eps}`` of a LOWER pair (outcomes of concrete datasets' tests), rounded DOWN (its own ``delta`` rounds
    up, an upper bound's rounding, ~1e-14 above at eps = 0).

    Every set of the pair's outcomes is a test whose point lies on or below the chain of achievable points the
    pair came from, so ``max_k (P_k - a Q_k)`` over prefixes in any order is below the dataset's curve. The pair's
    masses were rounded outward (P up, Q down, 2u each), the prefix sums add ``k u``: ``P_k`` is shrunk and
    ``Q_k`` grown by ``(n + 8) u``, ``a = e^eps`` rounded up, and each difference lowered by ``4u`` of its terms
    (a product and a difference) and one unit 1e-300 (underflow).

    >>> pair = DominatingPair([1.0], [1.0])  # identical outcomes: exactly 0 (its own delta reads ~7e-15)
    >>> float(lower_delta(pair)(np.array([0.0]))[0]), pair.delta(0.0) > 0.0
    (0.0, True)
    """
    p, q = np.asarray(pair.p, dtype=float), np.asarray(pair.q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = np.where(q > 0, np.log(p) - np.log(q), np.inf)
    order = np.argsort(-llr, kind="stable")
    u = UNIT_ROUNDOFF
    P = np.cumsum(p[order]) * (1.0 - (p.size + 8) * u)
    Q = np.cumsum(q[order]) * (1.0 + (p.size + 8) * u)

    def fn(eps: np.ndarray) -> np.ndarray:
        e = np.atleast_1d(np.asarray(eps, dtype=float))
        out = np.zeros(e.size)
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.exp(e) * (1.0 + 4 * u)
            for i, x in enumerate(a.tolist()):
                aq = np.where(Q > 0, x * Q, 0.0)
                v = (P - aq) - 4 * u * (P + aq) - 1e-300
                out[i] = max(0.0, float(np.max(v, initial=0.0)))
        return out
    return fn


def profile_of_lower(pair: DominatingPair, *, name: str, source: str) -> PrivacyProfile:
    """The profile of a lower pair (concrete datasets), evaluated from below (:func:`lower_delta`).

    >>> prof = profile_of_lower(DominatingPair([0.75, 0.25], [0.25, 0.75]), name="RR", source="exact")
    >>> 0.5 - 1e-14 <= prof.delta(0.0) <= 0.5
    True
    """
    fn = lower_delta(pair)
    return PrivacyProfile(lambda eps: fn(eps).reshape(np.shape(eps)), name=name, source=source, exact=True,
                          pure_epsilon=pair.pure_epsilon, pair=lambda: pair)
