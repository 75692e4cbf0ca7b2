r"""Randomized response read off a channel, and the rounding band of its parameters (private to ``shuffle/``).

A channel that is exactly k-RR (:func:`_rr_parameters`) stands for an exact k-RR whose entries ``d*, o*`` are only
known to lie in a band around the stored ``d, o`` when its error model is not exact (a product chainamp formed,
or rows that sum to 1 only within ``row_sum_atol``: ``true = stored (1 +- rel) +- absolute``). The certified
upper bound reads the band's LEAST private end (eps0 rounded up, :func:`rr_epsilons`); a lower bound (the
profile of a concrete dataset) must read its MOST private end (eps0 rounded down): k-RR at a smaller eps0 is the
exact one followed by a symmetric channel, a post-processing of every report, so its shuffled profile is below
the truth's, whereas the least private end may exceed the truth by the whole band.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..operators import MarkovOperator, StructuredOperator, SymmetricChannel

__all__ = ["rr_epsilons", "lower_keep_probability", "lower_krr_parameters"]


def _rr_parameters(op: MarkovOperator) -> tuple[int, Fraction, Fraction] | None:
    """``(k, d, o)`` when ``op`` is exactly k-ary RR (structured, or a dense matrix with one value on the
    diagonal and one off it, ``d > o``), else None."""
    if isinstance(op, SymmetricChannel):
        return op.k, Fraction(op.diagonal), Fraction(op.off_diagonal)
    n, m = op.shape
    if n != m or n < 2 or isinstance(op, StructuredOperator) or n > 4096:
        return None  # (a dense k-RR with k > 4096 is not looked for: pass a SymmetricChannel)
    mat = op.matrix
    if hasattr(mat, "toarray"):
        mat = mat.toarray()
    mat = np.asarray(mat, dtype=float)
    d = mat[0, 0]
    off = mat[~np.eye(n, dtype=bool)]
    if not (np.all(np.diag(mat) == d) and np.all(off == off[0])):
        return None
    return n, Fraction(float(d)), Fraction(float(off[0]))


def rr_epsilons(d: Fraction, o: Fraction, err: Any) -> tuple[float, float]:
    """``(eps0, lower_eps0)`` of the k-RR with stored entries ``d >= o`` and error model ``err``: ``log(d / o)`` at
    the band's least private end rounded up (the certified upper's), and at its most private end rounded down
    (the lower's; :func:`_most_private_end`). Both are ``log(d / o)`` (rounded each way) when ``err`` is exact.

    >>> from chainamp.operators import ProductError
    >>> up, low = rr_epsilons(Fraction(3, 4), Fraction(1, 4), ProductError(rel=1e-6))
    >>> bool(low < math.log(3) < up)
    True
    """
    d_low, o_high = _most_private_end(d, o, err)
    if not err.is_exact:  # the exact ratio is within (1 +- r)^2
        r = Fraction(err.rel) + Fraction(err.absolute) / (o if o > 0 else 1)
        d, o = d * (1 + r), max(o * (1 - r), Fraction(0))
    eps0 = math.inf if o == 0 else 0.0 if d == o else _log_up(d / o)
    return eps0, math.inf if o_high == 0 else 0.0 if d_low <= o_high else _log_down(d_low / o_high)


def _most_private_end(d: Fraction, o: Fraction, err: Any) -> tuple[Fraction, Fraction]:
    """``(d', o')`` with ``d' <= d*`` and ``o' >= o*`` for the exact entries ``d*, o*`` the stored ``d, o`` stand
    for (``true = stored (1 +- rel) +- absolute``; a stored zero is a true zero when the support is exact): the
    most private end of the band, where the lower profile is computed (the upper reads the least private end).

    Why: the exact k-RR the randomizer stands for has ``d* / o* >= d' / o'``, so k-RR at ``log(d' / o')`` (rounded
    down) is the exact one followed by a symmetric channel (``o`` only grows along the k-RR family), a
    post-processing of every report: its shuffled profile, hence the lower computed for it, is below the truth's.
    The upper's ``eps0`` (the least private end, rounded up) is the wrong side for a lower: it may exceed the truth
    by the whole band (``4 r`` relative on the ratio, 9.1e-13 for a product forming 2049-ary RR, over the 2^-40
    the k-RR lower's own push absorbs).

    >>> from chainamp.operators import ProductError
    >>> _most_private_end(Fraction(3, 4), Fraction(1, 4), ProductError(rel=0.5, absolute=0.125))
    (Fraction(1, 4), Fraction(1, 2))
    """
    if err.is_exact:
        return d, o
    rel, ab = Fraction(err.rel), Fraction(err.absolute)
    o_high = o * (1 + rel) + ab if o > 0 or not err.support_exact else Fraction(0)
    return max(d * (1 - rel) - ab, Fraction(0)), o_high


def _down(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


def _log_down(x: Fraction) -> float:
    """A lower bound of ``log(x)`` for a rational ``x >= 1``, at least 0 (the mirror of :func:`_log_up`)."""
    try:
        v = math.log(_down(x))
    except OverflowError:
        a, b = math.log(x.numerator), math.log(x.denominator)
        return max(math.nextafter(a - b - 4e-16 * (abs(a) + abs(b) + 1.0), -math.inf), 0.0)
    return max(math.nextafter(v - 4e-16 * (abs(v) + 1.0), -math.inf), 0.0)


#: the lower's eps0 is capped here: ``e^-eps`` stays a normal float (within an ulp), where past 745 it underflows to
#: 0 (an infinitely LESS private RR); a smaller eps0 is a more private RR, so the lower stays below the truth
LOWER_EPS_CAP = 700.0


def _exp_minus_up(eps: float) -> Fraction:
    """``e^-min(eps, LOWER_EPS_CAP)``, at least ``e^-eps``, rounded up exactly as a rational (``math.exp`` is within
    an ulp, and ``2^-50`` is a few)."""
    return Fraction(math.exp(-min(eps, LOWER_EPS_CAP))) * (1 + Fraction(1, 2**50))


def lower_keep_probability(eps0: float) -> float:
    """The keep probability ``1 / (1 + e^-eps0)`` of binary RR rounded DOWN (for a lower bound at ``eps0``, itself
    rounded down: a more private RR than the truth's, whose profile is below it).

    >>> lower_keep_probability(math.log(3.0)) <= 0.75
    True
    """
    if math.isinf(eps0):
        return 1.0
    return max(0.5, _down(1 / (1 + _exp_minus_up(eps0)))) if eps0 > 0.0 else 0.5


def lower_krr_parameters(k: int, eps0: float) -> tuple[int, float, float]:
    """``(k, d, o)`` of k-RR at ``eps0`` with o rounded UP (``d / o <= e^eps0``: at least as private; for the lower
    profile at a rounded-down ``eps0``); the mirror of :func:`~chainamp.shuffle.krr.krr_parameters`.

    >>> k, d, o = lower_krr_parameters(3, math.log(4.0))
    >>> Fraction(d) / Fraction(o) <= 4
    True
    """
    if math.isinf(eps0):
        return k, 1.0, 0.0
    if eps0 <= 0.0:
        return k, 1.0 / k, 1.0 / k
    t = _exp_minus_up(eps0)
    o = t / (1 + (k - 1) * t)
    return k, _down(1 - (k - 1) * o), _up(o)


def _up(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _log_up(x: Fraction) -> float:
    """An upper bound of ``log(x)`` for a positive rational (beyond the largest float: the logs of its integer
    numerator and denominator, each within a few units of its own magnitude)."""
    try:
        v = math.log(_up(x))
    except OverflowError:
        a, b = math.log(x.numerator), math.log(x.denominator)
        return math.nextafter(a - b + 4e-16 * (abs(a) + abs(b) + 1.0), math.inf)
    return math.nextafter(v + 4e-16 * (abs(v) + 1.0), math.inf)
