"""The exact expectation behind the privacy blanket of Balle, Bell, Gascon and Nissim (2019).

R(x) = g omega + (1 - g) R'(x) with ``g = sum_y min_x R(x, y)`` (``g = 1 -`` the Doeblin coefficient of
:func:`chainamp.doeblin`, ``omega`` its witness). Each other user's report is, with probability g, a
draw from omega that does not depend on its value; revealing which users drew from the blanket and the
others' remaining reports is extra information, so the pair ``(R(x0) + H_B, R(x1) + H_B)`` with
``H_B ~ Mult(B, omega)``, ``B ~ Bin(n - 1, g)``, dominates the shuffled reports (their Section 3).
Balle et al. bound its divergence by Hoeffding's and Bennett's inequalities; we evaluate it.

Per blanket size b, with outputs grouped into classes on which ``(R(x0, y), R(x1, y), omega_y)`` are
proportional (the likelihood depends only on the class counts), ``P_b(h) = sum_y R(x0, y)
Mult(b, omega)(h - e_y)``; outputs outside omega's support reveal the changing user's report and add
``[R(x0, y) - e^eps R(x1, y)]_+``. ``D_b(eps) = sum_h [P_b(h) - e^eps Q_b(h)]_+`` is enumerated over
every histogram of the classes. ``D_b`` does not increase with b (one more blanket draw is a
post-processing of both sides), so blanket sizes are summed exactly in a window when that is cheap and
otherwise in blocks valued at their smallest b (an upper bound); the mass of B below the first summed
size is added with ``D <= 1``.

Rounding: log-multinomial terms carry a relative error below ``BLANKET_TERM_RTOL`` (P pushed up, Q
down); block masses are pushed up; the total is rounded up. Applies to any finite R whose classes
(at most 4 in practice) keep the enumeration within ``max_histograms`` per blanket size.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from .._numerics import SHUFFLE_SPECIAL_RTOL, UNIT_ROUNDOFF, check_delta, check_int, check_memory, round_up
from ..errors import InvalidMechanismError, InvalidParameterError
from ..mixing import doeblin
from ..operators import MarkovOperator
from ._clones import invert_delta
from .generic import _check_epsilons, _check_users

__all__ = ["blanket_delta", "blanket_epsilon"]

_U = UNIT_ROUNDOFF
BLANKET_TERM_RTOL = 1e-9  # relative error allowed per log-multinomial term (lgamma sums of small counts)


def _dense(R: Any) -> np.ndarray:
    K = R if isinstance(R, MarkovOperator) else MarkovOperator(R)
    if K.shape[0] < 2:
        raise InvalidMechanismError(f"R must have at least 2 values (rows), got shape {K.shape}")
    check_memory(8.0 * K.shape[0] * K.shape[1], f"the dense {K.shape[0]} x {K.shape[1]} randomizer")
    M = K.matrix
    return np.asarray(M.toarray() if hasattr(M, "toarray") else M, dtype=float)


def _classes(r0: np.ndarray, r1: np.ndarray, om: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge outputs of omega's support on which (r0, r1) / omega agree (exactly, as floats)."""
    keys: dict = {}
    for y in np.flatnonzero(om > 0):
        key = (r0[y] / om[y], r1[y] / om[y])
        keys.setdefault(key, []).append(y)
    groups = list(keys.values())
    return (np.array([r0[g].sum() for g in groups]), np.array([r1[g].sum() for g in groups]),
            np.array([om[g].sum() for g in groups]))


def _compositions(total: int, parts: int) -> np.ndarray:
    rows = [np.array(c) - np.arange(parts - 1) - 1 for c in itertools.combinations(range(total + parts - 1), parts - 1)]
    if parts == 1:
        return np.array([[total]])
    cuts = np.array([np.array(c) for c in itertools.combinations(range(total + parts - 1), parts - 1)])
    bounds = np.hstack((np.full((cuts.shape[0], 1), -1), cuts, np.full((cuts.shape[0], 1), total + parts - 1)))
    del rows
    return np.diff(bounds, axis=1) - 1


def _pair_Db(r0c, r1c, omc, b: int, e: float) -> float:
    """``sum_h [P_b(h) - e Q_b(h)]_+`` over histograms of b + 1 draws on the classes (upper bound)."""
    m = omc.size
    H = _compositions(b + 1, m).astype(float)
    lg = math.lgamma(b + 2) - np.sum([np.vectorize(math.lgamma)(H[:, i] + 1) for i in range(m)], axis=0) \
        + H @ np.log(omc)
    base = np.exp(lg) / (b + 1)
    P = base * (H @ (r0c / omc))
    Q = base * (H @ (r1c / omc))
    r = BLANKET_TERM_RTOL
    return float(np.sum(np.maximum(0.0, P * (1 + r) - e * Q * (1 - r))))


def blanket_delta(R: Any, users: int, epsilons: Any, *, neighbors: Any = None,
                  max_histograms: int = 2_000_000) -> np.ndarray:
    """Certified ``delta(eps)`` of the blanket pair of Balle et al. 2019 (module docstring), the maximum
    over neighbouring pairs of values (``neighbors``: pairs of row indices; default every pair).

    Examples
    --------
    >>> e = math.exp(1.0)
    >>> R = [[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]]
    >>> bool(blanket_delta(R, 50, [0.5])[0] < 0.3)
    True
    """
    M = _dense(R)
    n = _check_users(users)
    eps = _check_epsilons(epsilons)
    budget = check_int(max_histograms, "max_histograms", minimum=1)
    k = M.shape[0]
    pairs = [(i, j) for i in range(k) for j in range(k) if i != j] if neighbors is None else \
        [p for a, b in neighbors for p in ((a, b), (b, a))]
    res = doeblin(M)
    g = max(0.0, 1.0 - res.gamma)  # gamma is rounded up: g down (fewer blanket users: a larger delta)
    om = np.zeros(M.shape[1]) if res.witness is None else np.asarray(res.witness, dtype=float)
    out = np.zeros(eps.size)
    import scipy.stats as st
    N = n - 1
    # blanket sizes summed: a window of B, or blocks valued at their smallest size
    if g <= 0.0 or N == 0:
        sizes, masses, below = np.array([0]), np.array([1.0]), 0.0
    else:
        mean, sd = N * g, math.sqrt(N * g * (1 - g))
        lo = max(0, int(mean - 8 * sd - 8))
        hi = min(N, int(mean + 8 * sd + 64) + 1)
        m_cls = max(1, len(set(zip(*(M[:, om > 0] / np.where(om > 0, om, 1)[om > 0]).tolist()))) if om.any() else 1)
        cap = lo
        while cap < hi and math.comb(cap + 1 + m_cls - 1, m_cls - 1) <= budget // 64:
            cap += 1
        sizes = np.arange(lo, max(cap, lo) + 1)
        cdf_lo = float(st.binom.cdf(lo - 1, N, g)) if lo > 0 else 0.0
        below = cdf_lo * (1 + SHUFFLE_SPECIAL_RTOL) + 1e-300
        masses = st.binom.pmf(sizes, N, g) * (1 + SHUFFLE_SPECIAL_RTOL)
        masses[-1] = float(st.binom.sf(sizes[-1] - 1, N, g)) * (1 + SHUFFLE_SPECIAL_RTOL) + 1e-300  # all b >= cap
    for a, b in pairs:
        r0, r1 = M[a], M[b]
        outside = om <= 0
        r0c, r1c, omc = _classes(r0, r1, om) if om.any() else (np.zeros(0), np.zeros(0), np.zeros(0))
        for i, x in enumerate(eps.tolist()):
            e = math.exp(x) * (1 - 4 * _U) if math.isfinite(x) else math.inf
            rev = float(np.sum(np.maximum(0.0, r0[outside] - (e * r1[outside] if math.isfinite(e) else
                                                             np.where(r1[outside] > 0, np.inf, 0.0)))))
            if math.isinf(e):
                out[i] = max(out[i], rev)
                continue
            total = 0.0
            if omc.size:
                Ds = np.array([_pair_Db(r0c, r1c, omc, int(bb), e) for bb in sizes])
                total = float(np.dot(masses, Ds))
            val = round_up(total + below + rev, sizes.size + 8, upper=1.0)
            out[i] = max(out[i], val)
    return out


def blanket_epsilon(R: Any, users: int, delta: float, *, neighbors: Any = None, rtol: float = 1e-6) -> float:
    """Certified eps of :func:`blanket_delta` at ``delta`` (upper end of a search bracket).

    Examples
    --------
    >>> e = math.exp(1.0)
    >>> eps = blanket_epsilon([[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]], 50, 0.01)
    >>> 0.0 < eps < 1.0
    True
    """
    d = check_delta(delta)
    if not 0.0 < d < 1.0:
        raise InvalidParameterError(f"delta must be in (0, 1) (got {d!r})")
    return invert_delta(lambda x: float(blanket_delta(R, users, [x], neighbors=neighbors)[0]), d, math.inf,
                        rtol=rtol)
