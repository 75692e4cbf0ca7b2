"""Log-space helpers and outward rounding.

The amplification formulas of Theorem 1 involve ``e^eps - 1`` and
``log(1 + gamma (e^eps - 1))``; for eps beyond about 709 the exponential
overflows in double precision. The helpers here evaluate those expressions
in log space so that every eps up to (and beyond) 700 works, and ``round_up``
pushes a float result to the safe (larger) side of the exact value.
"""

from __future__ import annotations

import math

import numpy as np

from .tolerances import UNIT_ROUNDOFF

__all__ = [
    "scaled_by_exp",
    "log_expm1",
    "log1p_gamma_expm1",
    "logsubexp",
    "round_up",
    "round_down",
    "round_up_array",
]


def log_expm1(x: float) -> float:
    """Return ``log(e^x - 1)`` for ``x > 0`` without overflow.

    >>> round(log_expm1(1.0), 6), round(log_expm1(800.0), 6)
    (0.541325, 800.0)
    """
    if x <= 0.0:
        return -math.inf if x == 0.0 else math.nan
    if math.isinf(x):
        return math.inf
    if x > 30.0:
        return x + math.log1p(-math.exp(-x))
    return math.log(math.expm1(x))


def logsubexp(a: float, b: float) -> float:
    """Return ``log(e^a - e^b)`` for ``a >= b`` (``-inf`` when equal).

    >>> round(logsubexp(2.0, 1.0), 6)
    1.541325
    """
    if b > a:
        raise ValueError(f"logsubexp needs a >= b (got a={a}, b={b})")
    if b == -math.inf:
        return a
    if a == b:
        return -math.inf
    return a + math.log(-math.expm1(b - a))


def log1p_gamma_expm1(gamma: float, eps: float) -> float:
    """Return ``log(1 + gamma (e^eps - 1))``: the amplified epsilon of Theorem 1(3)/(4).

    Computed as ``log1p(gamma * expm1(eps))`` for moderate eps and through
    ``logaddexp(0, log(gamma) + log(e^eps - 1))`` when ``e^eps`` would overflow.

    >>> round(log1p_gamma_expm1(0.5, 1.0), 6), round(log1p_gamma_expm1(0.5, 800.0), 6)
    (0.620115, 799.306853)
    """
    if gamma <= 0.0 or eps == 0.0:
        return 0.0
    if math.isinf(eps):
        return math.inf
    if eps < 700.0:
        return math.log1p(gamma * math.expm1(eps))
    return float(np.logaddexp(0.0, math.log(gamma) + log_expm1(eps)))


def round_up(value: float, n_ops: int = 1, *, upper: float | None = None,
             scale: float = 0.0) -> float:
    """Push a non-negative float result up past its rounding error.

    A sum or product of ``n_ops`` correctly rounded double operations on
    non-negative terms has relative error at most about ``n_ops * u``
    (``u = 2**-53``). We return ``value * (1 + (n_ops + 2) u)`` rounded to the
    next float above; capped at ``upper`` when given. When the result came
    from a difference of larger quantities, pass their size as ``scale``: the
    error bound is then relative to ``max(|value|, scale)``. Zero stays zero: a sum
    of non-negative float terms is zero only when every term is exactly zero.
    Infinite and NaN values are returned unchanged.

    >>> round_up(0.5) > 0.5
    True
    >>> round_up(1.0, upper=1.0)
    1.0
    """
    if not math.isfinite(value):
        return value
    bumped = max(abs(value), scale) * (n_ops + 2) * UNIT_ROUNDOFF
    if value == 0.0 and scale == 0.0:
        return 0.0
    out = math.nextafter(value + bumped, math.inf)
    if upper is not None:
        out = min(out, upper)
    return out


def round_down(value: float, n_ops: int = 1, *, lower: float | None = None) -> float:
    """Mirror of :func:`round_up`: push a result down past its rounding error.

    >>> round_down(0.5) < 0.5
    True
    """
    if not math.isfinite(value):
        return value
    bumped = abs(value) * (n_ops + 2) * UNIT_ROUNDOFF
    out = math.nextafter(value - bumped, -math.inf)
    if lower is not None:
        out = max(out, lower)
    return out


def round_up_array(values: np.ndarray, n_ops: int = 1, *, scale: np.ndarray | float = 0.0,
                   upper: float | None = None) -> np.ndarray:
    """Vectorised :func:`round_up` (same error model), for arrays of non-negative results.

    >>> bool(np.all(round_up_array(np.array([0.0, 0.25])) >= [0.0, 0.25]))
    True
    """
    vals = np.asarray(values, dtype=float)
    size = np.maximum(np.abs(vals), scale)
    out = np.nextafter(vals + size * ((n_ops + 2) * UNIT_ROUNDOFF), np.inf)
    out = np.where(size == 0.0, vals, out)
    out = np.where(np.isfinite(vals), out, vals)
    if upper is not None:
        out = np.minimum(out, upper)
    return out


#: Above this eps, ``e^eps * q`` exceeds the largest double for every positive double q
#: (``2**-1074 * e^1456 = e^711.56 > 1.8e308 ~ e^709.78``): :func:`scaled_by_exp` returns inf there.
EXP_SATURATES = 1456.0


def scaled_by_exp(q: np.ndarray, eps: float) -> np.ndarray:
    """``e^eps * q`` elementwise with relative error at most 6 units of roundoff (12 above eps = 1400).

    ``e^eps`` itself overflows beyond eps ~ 709; there we multiply by ``e^(eps/2)``
    twice (``eps/2`` is exact), and above eps = 1400, where ``e^(eps/2)`` overflows too, by
    ``e^(eps/4)`` four times (``eps/4`` exact; four roundings of ``exp`` and four products, each
    at most 2u and u, give the 12u). Above :data:`EXP_SATURATES` every positive q gives more than
    the largest double (the smallest one, ``2**-1074 ~ e^-744.44``, times ``e^1456``), so the
    result is ``inf`` exactly where ``q > 0``. Entries that overflow become ``inf`` (right: they
    exceed any probability). ``eps = inf`` maps 0 to 0 and anything positive to ``inf``.
    The callers' 6u margins stay valid above 1400: they compare ``e^eps q`` with probabilities
    ``p <= 1``, and there every positive q gives ``e^eps q >= e^(1400 - 744.44) >> 1``, so no
    rounding of that size decides the sign of ``p - e^eps q``.

    >>> scaled_by_exp(np.array([0.0, 1e-320, 0.5]), 1e4).tolist()
    [0.0, inf, inf]
    """
    q = np.asarray(q, dtype=float)
    if math.isinf(eps) or eps > EXP_SATURATES:
        return np.where(q > 0, math.inf, 0.0)
    with np.errstate(over="ignore"):
        if eps <= 700.0:
            return q * math.exp(eps)
        if eps <= 1400.0:
            half = math.exp(0.5 * eps)
            return (q * half) * half
        quarter = math.exp(0.25 * eps)
        return (((q * quarter) * quarter) * quarter) * quarter
