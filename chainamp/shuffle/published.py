"""Published closed-form shuffle bounds, kept as comparisons (not certificates): the Hoeffding and
Bennett relaxations of the privacy blanket (Balle, Bell, Gascon and Nissim 2019, Theorems 3.1 and 3.2
with the parameters of their Section 5 for k-ary randomized response and for a generic eps0-LDP
randomizer). They are evaluated in floating point exactly as published; chainamp's own certified
value for the same pair is :func:`chainamp.shuffle.blanket_delta`.
"""

from __future__ import annotations

import math
from typing import Any

from .._numerics import check_delta, check_int, check_real
from ..errors import InvalidParameterError

__all__ = ["balle_hoeffding_delta", "balle_bennett_delta", "balle_hoeffding_epsilon", "balle_bennett_epsilon"]


def _params(eps: float, eps0: float, k: int | None) -> tuple[float, float, float, float]:
    """``(gamma, range, max, variance)`` of the privacy amplification variable at eps."""
    if k is None:  # any eps0-LDP randomizer: gamma >= e^-eps0 (their generic bounds, gamma_ub = 1)
        g = math.exp(-eps0)
        rng = (math.exp(eps) + 1) * (math.exp(eps0) - math.exp(-eps0))
        mx = math.exp(eps0) * (1 - math.exp(eps - 2 * eps0))
        var = math.exp(eps0) * (math.exp(2 * eps) + 1) - 2 * g * math.exp(eps - 2 * eps0)
        return g, rng, mx, var
    g = k / (math.exp(eps0) + k - 1)
    rng = (1 - g) * k * (math.exp(eps) + 1)
    mx = g * (1 - math.exp(eps)) + (1 - g) * k
    var = g * (2 - g) * (math.exp(eps) - 1) ** 2 + (1 - g) ** 2 * k * (math.exp(2 * eps) + 1)
    return g, rng, mx, var


def _check(eps0: Any, users: Any, k: Any) -> tuple[float, int, int | None]:
    e0 = check_real(eps0, "eps0")
    if not e0 > 0:
        raise InvalidParameterError(f"eps0 must be > 0 (got {e0!r})")
    n = check_int(users, "users", minimum=1)
    kk = None if k is None else check_int(k, "k", minimum=2)
    return e0, n, kk


def balle_hoeffding_delta(eps: float, eps0: float, users: int, *, k: int | None = None) -> float:
    """Balle et al. 2019's Hoeffding bound ``delta <= b^2 / (4 a gamma n) (1 - gamma (1 - e^{-2 a^2 / b^2}))^n``
    (``a = e^eps - 1``, ``b`` the range of the amplification variable); ``k=None``: generic eps0-LDP.

    Examples
    --------
    >>> f"{balle_hoeffding_delta(0.02398, 0.4, 5000, k=2):.2e}"
    '1.00e-06'
    """
    e0, n, kk = _check(eps0, users, k)
    if eps >= e0:
        return 0.0
    g, b, _, _ = _params(eps, e0, kk)
    a = math.expm1(eps)
    return min(1.0, b * b / (4 * a * g * n) * (1 - g * (1 - math.exp(-2 * a * a / (b * b)))) ** n)


def balle_bennett_delta(eps: float, eps0: float, users: int, *, k: int | None = None) -> float:
    """Balle et al. 2019's Bennett bound ``delta <= E_{m ~ Bin(n, gamma), m >= 1}[e^{-m c phi(beta)}] /
    (gamma n eta log(1 + beta))`` with ``phi(u) = (1 + u) log(1 + u) - u``, ``c = var / b_+^2``,
    ``beta = a b_+ / var``, ``eta = 1 / b_+``.

    Examples
    --------
    >>> f"{balle_bennett_delta(0.02428, 0.4, 5000, k=2):.2e}"
    '1.00e-06'
    """
    import numpy as np
    import scipy.stats as st

    e0, n, kk = _check(eps0, users, k)
    if eps >= e0:
        return 0.0
    g, _, bp, var = _params(eps, e0, kk)
    a = math.expm1(eps)
    alpha, beta, eta = var / bp**2, a * bp / var, 1.0 / bp
    phi = (1 + beta) * math.log1p(beta) - beta
    m = np.arange(1, n + 1, dtype=float)
    expect = float(np.sum(st.binom.pmf(m, n, g) * np.exp(-m * alpha * phi))) / (eta * math.log1p(beta))
    return min(1.0, expect / (g * n))


def _invert(fn, delta: float, eps0: float) -> float:
    d = check_delta(delta)
    if not 0.0 < d < 1.0:
        raise InvalidParameterError(f"delta must be in (0, 1) (got {d!r})")
    lo, hi = 1e-9, eps0
    if fn(hi * (1 - 1e-12)) > d:
        return eps0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if fn(mid) > d:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    return hi


def balle_hoeffding_epsilon(eps0: float, users: int, delta: float, *, k: int | None = None) -> float:
    """eps of :func:`balle_hoeffding_delta` at ``delta`` (bisection; eps0 when no smaller eps reaches it).

    Examples
    --------
    >>> round(balle_hoeffding_epsilon(0.4, 5000, 1e-6, k=2), 5), round(balle_hoeffding_epsilon(0.4, 5000, 1e-6), 5)
    (0.02398, 0.05746)
    """
    return _invert(lambda x: balle_hoeffding_delta(x, eps0, users, k=k), delta, _check(eps0, users, k)[0])


def balle_bennett_epsilon(eps0: float, users: int, delta: float, *, k: int | None = None) -> float:
    """eps of :func:`balle_bennett_delta` at ``delta`` (bisection).

    Examples
    --------
    >>> round(balle_bennett_epsilon(0.4, 5000, 1e-6, k=2), 5)
    0.02428
    """
    return _invert(lambda x: balle_bennett_delta(x, eps0, users, k=k), delta, _check(eps0, users, k)[0])
