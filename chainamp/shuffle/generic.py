"""The generic shuffle bound from eps0 alone: the clones of Feldman, McMillan and Talwar (2021).

``generic_delta`` evaluates the dominating pair of "Hiding among the clones" (Feldman, McMillan and
Talwar 2021, Theorem 3.2 and its numerical analysis) exactly: the sum over every clone count in the
window holding all but 1e-18 of each tail is computed term by term (no blocks of counts), the tails are
added back, and everything is rounded toward a larger delta (see :mod:`._clones`).

The 2023 follow-up of the same authors ("Stronger privacy amplification by shuffling for Renyi and
approximate differential privacy") raised the clone probability from ``e^-eps0`` to ``2 / (e^eps0 + 1)``;
its erratum withdraws that for arbitrary randomizers (the proof of its Lemma 3.5 fails for some of
them). This module therefore uses ``e^-eps0`` for a bare eps0 and accepts a larger clone probability only
when it is certified for the randomizer at hand: :func:`clone_probability` computes the largest ``s`` with
``R(x) >= (s / 2) (R(x0) + R(x1))`` for every value x and every neighbouring pair, which is exactly
what the clone decomposition needs (derivation in its docstring).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._numerics import UNIT_ROUNDOFF, check_delta, check_int, check_real
from ..errors import InvalidParameterError
from ..operators import MarkovOperator, SymmetricChannel
from ._clones import clone_pair_delta, clone_window, invert_delta
from ._curves import pair_from_curve

__all__ = ["generic_delta", "generic_epsilon", "generic_dominating_pair", "fmt_closed_form_epsilon", "clone_probability"]

_U = UNIT_ROUNDOFF


def _check_eps0(eps0: Any) -> float:
    e = check_real(eps0, "eps0")
    if not (e > 0.0) or math.isnan(e):
        raise InvalidParameterError(f"eps0 must be > 0 (got {e!r})")
    return e


def _check_users(users: Any) -> int:
    return check_int(users, "users", minimum=1)


def _check_epsilons(epsilons: Any) -> np.ndarray:
    try:
        arr = np.atleast_1d(np.asarray(epsilons, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(f"epsilons must be a real number or an array of them (got {epsilons!r})") from None
    if arr.ndim != 1 or np.any(np.isnan(arr)) or np.any(arr < 0.0):
        raise InvalidParameterError(f"epsilons must be >= 0 and not NaN (got {epsilons!r})")
    return arr


def _first_weight(eps0: float) -> float:
    """``e^eps0 / (e^eps0 + 1)`` rounded up (the divergence grows with it)."""
    return min(1.0, 1.0 / (1.0 + math.exp(-eps0)) * (1.0 + 8 * _U))


def _check_clone(s: Any, eps0: float) -> float:
    if s is None:
        return math.exp(-eps0) * (1.0 - 4 * _U)
    v = check_real(s, "clone_probability")
    top = 2.0 * math.exp(-eps0) / (1.0 + math.exp(-eps0))  # 2 / (e^eps0 + 1), no overflow at large eps0
    if not (0.0 <= v <= top * (1.0 + 1e-9)):  # 1e-9: eps0 and s each rounded by their producers
        raise InvalidParameterError(
            f"clone_probability must be in [0, 2 / (e^eps0 + 1) = {top:.6g}] (got {v!r})")
    # a smaller clone probability is always valid (R(x) >= s (...) implies it for any s' <= s)
    return min(v, top * (1.0 - 8 * _U), 1.0)


def generic_delta(eps0: float, users: int, epsilons: Any, *, clone_probability: float | None = None) -> np.ndarray:
    """Certified ``delta(eps)`` of n users' shuffled reports, each from an eps0-LDP randomizer.

    Feldman, McMillan and Talwar 2021 (Theorem 3.2): the shuffled reports are a post-processing of
    the counts ``(A + D, C - A + 1 - D)`` against ``(A + 1 - D, C - A + D)`` with
    ``C ~ Bin(n - 1, s)``, ``A ~ Bin(C, 1/2)``, ``D ~ Bern(e^eps0 / (e^eps0 + 1))`` and
    ``s = e^-eps0``. The value returned is ``sum_c P(C = c) D_c(eps)``, every term in closed form
    (:mod:`._clones`), the tails of C outside the window added back, rounded up.

    Parameters
    ----------
    eps0 : float > 0
        The local randomizer's pure LDP level.
    users : int >= 1
        Every user, the one whose value changes included.
    epsilons : float or array of floats >= 0
    clone_probability : float, optional
        ``s``; default ``e^-eps0`` (valid for every eps0-LDP randomizer). A larger value (at most
        ``2 / (e^eps0 + 1)``) must come from :func:`clone_probability` of the randomizer used.

    Returns
    -------
    numpy.ndarray
        Upper bounds of delta, one per eps (never below the pair's exact value).

    Examples
    --------
    >>> d = generic_delta(4.0, 100_000, [0.1675, 0.1728])
    >>> bool(d[0] > 1e-6 > d[1])
    True
    """
    e0 = _check_eps0(eps0)
    n = _check_users(users)
    eps = _check_epsilons(epsilons)
    s = _check_clone(clone_probability, e0)
    return clone_pair_delta(n - 1, s, _first_weight(e0), 1.0, eps)


def generic_epsilon(eps0: float, users: int, delta: float, *, clone_probability: float | None = None,
                    rtol: float = 1e-6) -> float:
    """Certified eps of :func:`generic_delta` at ``delta``: the upper end of a search bracket whose
    width is at most ``rtol`` relative (``generic_delta(eps) <= delta`` holds at the returned eps); at most
    eps0 rounded up (the shuffled reports of eps0-LDP reports are (eps0, 0)-DP), even where the rounded
    ``generic_delta`` has not reached delta.

    Examples
    --------
    >>> eps = generic_epsilon(4.0, 100_000, 1e-6)
    >>> 0.1675 <= eps <= 0.1728
    True
    """
    e0 = _check_eps0(eps0)
    n = _check_users(users)
    d = check_delta(delta)
    if not 0.0 < d < 1.0:
        raise InvalidParameterError(f"delta must be in (0, 1) (got {d!r})")
    s = _check_clone(clone_probability, e0)
    w = _first_weight(e0)
    tail = 1e-4 * d  # the window's left-out mass (added back) stays far below delta
    win = clone_window(n - 1, s, tail)
    top = math.nextafter(e0, math.inf)
    eps = invert_delta(lambda x: float(clone_pair_delta(n - 1, s, w, 1.0, np.array([x]), window=win)[0]), d, top,
                       rtol=rtol)
    return min(eps, top)  # the shuffled reports are a post-processing of eps0-LDP reports: (eps0, 0)-DP


def generic_dominating_pair(eps0: float, users: int, *, epsilons: Any = None,
                            clone_probability: float | None = None):
    """A :class:`~chainamp.privacy.DominatingPair` of :func:`generic_delta` (for :func:`chainamp.compose`):
    the worst pair meeting ``(eps, generic_delta(eps))`` at every grid point (default: 48 points from 0
    to the eps where the bound reaches 1e-12) and ``(eps0, 0)``.

    Examples
    --------
    >>> pair = generic_dominating_pair(4.0, 100_000)
    >>> bool(pair.delta(0.1728) >= generic_delta(4.0, 100_000, [0.1728])[0])
    True
    """
    e0 = _check_eps0(eps0)
    n = _check_users(users)
    s = _check_clone(clone_probability, e0)
    w = _first_weight(e0)
    return pair_from_curve(lambda x: clone_pair_delta(n - 1, s, w, 1.0, _check_epsilons(x)), e0, epsilons,
                           f"shuffled eps0={e0:g} randomizer, n={n} (clones)")


def fmt_closed_form_epsilon(eps0: float, users: int, delta: float) -> float:
    """The closed form of Feldman, McMillan and Talwar 2021 (Theorem 3.1), a published comparison:
    ``log(1 + (1 - e^-eps0) / (1 + e^-(eps0 + e')) * (8 sqrt(e^eps0 log(4/delta)) / sqrt(n) + 8 e^eps0 / n))``
    with ``e' = log(1 + 8 sqrt(e^eps0 log(4/delta) / n) + 8 e^eps0 / n)``, valid for
    ``eps0 <= log(n / (16 log(4 / delta)))``; outside that range it returns eps0 (no amplification
    claimed). Rounded up.

    Examples
    --------
    >>> round(fmt_closed_form_epsilon(4.0, 100_000, 1e-6), 4)
    0.5378
    """
    e0 = _check_eps0(eps0)
    n = _check_users(users)
    d = check_delta(delta)
    if not 0.0 < d < 1.0:
        raise InvalidParameterError(f"delta must be in (0, 1) (got {d!r})")
    if e0 > math.log(n / (16.0 * math.log(4.0 / d))):
        return e0
    a = 8.0 * math.sqrt(math.exp(e0) * math.log(4.0 / d)) / math.sqrt(n)
    c = 8.0 * math.exp(e0) / n
    e = math.log(1.0 + a + c)
    b = 1.0 - math.exp(-e0)
    val = math.log1p(b / (1.0 + math.exp(-e0 - e)) * (a + c))
    return math.nextafter(val * (1.0 + 16 * _U), math.inf)


def clone_probability(R: Any, *, neighbors: Any = None) -> float:
    """The largest certified clone probability ``s`` of a finite randomizer R (rows = values), rounded down:
    ``s = min over neighbouring (x0, x1), every value x and output y of 2 R(x, y) / (R(x0, y) + R(x1, y))``.

    Why it is enough (our derivation of the clone decomposition of Feldman, McMillan and Talwar): with
    ``p = e^eps0`` the pair's ratio bound and ``a = p / (p + 1)``, the distributions
    ``Q0 = (a R(x0) - (1 - a) R(x1)) / (2a - 1)`` and ``Q1`` (x0, x1 swapped) are non-negative and
    ``R(x0) = a Q0 + (1 - a) Q1``, ``R(x1) = (1 - a) Q0 + a Q1``, ``(Q0 + Q1) / 2 = (R(x0) + R(x1)) / 2``.
    So ``R(x) >= s (Q0 + Q1) / 2`` is the condition above, and every other user is a clone with
    probability s. eps0-LDP always gives ``s >= e^-eps0`` (the 2021 reduction); binary and k-ary
    randomized response reach ``2 / (e^eps0 + 1)``, the 2023 value, which is not valid in general.

    Examples
    --------
    >>> e = math.exp(1.0)
    >>> round(clone_probability([[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]]), 6)
    0.537883
    >>> from chainamp.operators import SymmetricChannel
    >>> round(clone_probability(SymmetricChannel.from_epsilon(10**6, 1.0)), 6)  # k-RR, never densified
    0.537883
    """
    if isinstance(R, SymmetricChannel):  # k-RR: every column's minimum is min(d, o) =: m
        d, o = R.diagonal, R.off_diagonal
        if d + o <= 0:
            return 0.0
        m = min(d, o)
        # y in {x0, x1}: 2 m / (d + o); any other y (k >= 3): 2 m / (2 o), smaller when d < o
        best = 2.0 * m / (d + o) if R.shape[0] < 3 else min(2.0 * m / (d + o), m / o)
        return max(0.0, best * (1.0 - 8 * _U))
    accepted = isinstance(R, MarkovOperator)  # an operator's rows were checked when it was built
    if accepted:
        R = R.matrix.toarray() if hasattr(R.matrix, "toarray") else R.matrix
    M = np.asarray(R, dtype=float)
    if M.ndim != 2 or M.shape[0] < 2 or np.any(~np.isfinite(M)) or np.any(M < 0):
        raise InvalidParameterError(f"R must be a 2-d array of >= 2 rows of non-negative numbers (shape "
                                    f"{M.shape})")
    if not accepted:
        MarkovOperator(M)  # rows must sum to 1 (within row_sum_atol); they stand for their normalised rows
    M = M / M.sum(axis=1, keepdims=True)
    k = M.shape[0]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)] if neighbors is None else list(neighbors)
    low = M.min(axis=0)
    best = 1.0
    for i, j in pairs:
        den = M[i] + M[j]
        keep = den > 0
        if np.any(keep):
            best = min(best, float(np.min(2.0 * low[keep] / den[keep])))
    # the normalised rows carry (m + 2) u each (the row sum, the division); the ratio 3 u more
    return max(0.0, best * (1.0 - (2 * M.shape[1] + 16) * _U))
