"""RAPPOR's one-report epsilon in closed form, evaluated in log space and rounded up (private).

``eps_1 = h |log(q* (1 - p*) / (p* (1 - q*)))|`` of Erlingsson, Pihur and Korolova (2014), used by
:func:`chainamp.privacy.mechanisms.rappor_pipeline`.
"""

from __future__ import annotations

import math

from .._numerics import UNIT_ROUNDOFF

__all__: list[str] = []


def _log_add(x: float, y: float) -> float:
    """``log(e^x + e^y)`` for log values, ``-inf`` allowed."""
    if x == -math.inf:
        return y
    if y == -math.inf:
        return x
    hi, lo = max(x, y), min(x, y)
    return hi + math.log1p(math.exp(lo - hi))


def _log(v: float) -> float:
    return math.log(v) if v > 0.0 else -math.inf


def _rappor_eps_one(f: float, p: float, q: float, q_star: float, p_star: float, h: int) -> float:
    """``h |log(q* (1 - p*) / (p* (1 - q*)))|`` (Erlingsson, Pihur, Korolova 2014), rounded up; ``inf``
    when a factor is 0.

    Each factor is a sum of two products, e.g. ``q* = (f/2)(p + q) + (1 - f) q``, evaluated in log space
    (``log(f/2) + log(p + q)`` and ``log1p(-f) + log q``, added by a log-sum-exp), so no product underflows:
    formed directly, ``p*`` at ``f = 1e-16, q = 1e-300`` is subnormal and carries a relative error of 1e-7.
    The complements come from the complements of p and q (``1 - q* = (f/2)(1 - p) + (1 - f/2)(1 - q)``,
    ``1 - p* = (f/2)(1 - q) + (1 - f/2)(1 - p)``; ``1 - p`` is exact for p >= 1/2 by Sterbenz's lemma),
    not as ``1 - q*``, which cancels: at ``p = 1 - 1e-16, q = 1`` ``1 - q*`` rounds to 0 while the value is
    log 3. Every log carries a few roundings, each within ``16 u`` of its magnitude plus ``16 u``: the
    sum is pushed up by all of them.
    """
    a, b = 1.0 - p, 1.0 - q
    lf2, l1f, l1f2 = _log(0.5 * f), math.log1p(-f) if f < 1.0 else -math.inf, math.log1p(-0.5 * f)
    lpq = _log(p + q)
    logs = [_log_add(lf2 + lpq, l1f + _log(q)),          # q*
            _log_add(lf2 + _log(b), l1f2 + _log(a)),     # 1 - p* = (f/2)(1 - q) + (1 - f/2)(1 - p)
            _log_add(lf2 + lpq, l1f + _log(p)),          # p*
            _log_add(lf2 + _log(a), l1f2 + _log(b))]     # 1 - q* = (f/2)(1 - p) + (1 - f/2)(1 - q)
    if min(logs) == -math.inf:  # with p != q a zero factor means a report one bit value never gives
        return math.inf
    value = abs((logs[0] + logs[1]) - (logs[2] + logs[3]))
    parts = [abs(v) for v in (lf2, lpq, l1f, l1f2) if math.isfinite(v)]  # a -inf term adds no rounding
    err = 16 * UNIT_ROUNDOFF * (sum(abs(v) + 1.0 for v in logs) + sum(parts) + 4.0)
    return math.nextafter(h * (value + err) * (1.0 + 4 * UNIT_ROUNDOFF), math.inf)


def _rappor_eps_inf(f: float, h: int) -> float:
    """``2 h log((1 - f/2) / (f/2))`` (the permanent step's epsilon, Erlingsson, Pihur, Korolova 2014), rounded
    UP; ``inf`` at ``f = 0``.

    ``log1p(-f/2)`` and ``log(f/2)`` are each within 1 ulp (``2u`` of their magnitude; ``f/2`` is exact), their
    difference adds ``u`` of the result and the product by ``2h`` another ``u``: the computed value is within
    ``(2u (|a| + |b|) + u |d|) 2h (1 + u)`` of the exact one (``a``, ``b`` the logs, ``d`` their difference),
    which is added and the sum pushed one float up. Near ``f = 1`` the logs nearly cancel and the margin is
    relative to their size, not to the (small) result.

    >>> import math
    >>> _rappor_eps_inf(0.5, 2) >= 4 * math.log(3)
    True
    """
    if f <= 0.0:
        return math.inf
    a, b = math.log1p(-f / 2.0), math.log(f / 2.0)
    d = a - b
    err = (2.0 * UNIT_ROUNDOFF * (abs(a) + abs(b)) + UNIT_ROUNDOFF * abs(d)) * 2.0 * h * (1.0 + UNIT_ROUNDOFF)
    value = 2.0 * h * d
    if value == 0.0 and err == 0.0:
        return 0.0
    return math.nextafter(value + 2.0 * err, math.inf)
