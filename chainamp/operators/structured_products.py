"""The entrywise error model of :mod:`.products` for structured operators, without densifying them.

* :func:`structured_operator_error`: normalising the stored rows. With the exact row sums in
  ``[low, high]`` (:meth:`~chainamp.operators.StructuredOperator.row_sum_bounds`), ``rho = max(1 - low,
  high - 1)`` and the relative error is ``rho / (1 - rho)``, as for a plain operator (whose bound also
  pays for the float summation of its rows; here the sums are exact).
* :func:`structured_multiply`: a product that stays structured reports the error of its stored entries
  against the exact product of the stored factors (``rel_own``, ``abs_own``, exact support or not); with
  the factors known to ``(rel_A, abs_A)`` and ``(rel_B, abs_B)`` the product is known to
  ``rel = (1 + rel_A)(1 + rel_B)(1 + rel_own) - 1`` (non-negative sums: no cancellation) and
  ``abs = 2 n (abs_A + abs_B) + abs_own`` (n the inner dimension, as in the dense model). A product that
  does not stay structured is formed densely (size-checked) and the dense model applies.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._numerics import UNIT_ROUNDOFF
from .markov import MarkovOperator
from .product_error import ProductError
from .structured import StructuredOperator

__all__ = ["structured_operator_error", "structured_multiply", "structured_smallest_positive", "widen_hockey",
           "hockey_shift"]


def structured_smallest_positive(K: StructuredOperator) -> float:
    """Smallest positive stored entry of a structured operator."""
    return float(K.smallest_positive())


def structured_operator_error(K: StructuredOperator) -> ProductError:
    """Error of the stored structured operator against its row-normalised one (exact row sums).

    >>> from chainamp.mechanisms import randomized_response
    >>> structured_operator_error(randomized_response(10**6, 1.0)).rel < 1e-15
    True
    """
    low, high = K.row_sum_bounds()
    rho = max(1.0 - low, high - 1.0, 0.0)
    if rho == 0.0:
        return ProductError(min_positive=structured_smallest_positive(K))
    rho = math.nextafter(rho, math.inf)  # the subtractions above round
    rel = math.nextafter(rho / (1.0 - rho) * (1.0 + 4 * UNIT_ROUNDOFF), math.inf)
    return ProductError(rel=rel, min_positive=structured_smallest_positive(K))


def structured_multiply(A: MarkovOperator, err_a: ProductError, B: MarkovOperator,
                        err_b: ProductError) -> tuple[MarkovOperator, ProductError] | None:
    """``A @ B`` and its error when the product stays structured; None otherwise (the caller densifies)."""
    if not (isinstance(A, StructuredOperator) and isinstance(B, StructuredOperator)):
        return None
    right = B._aligned_to(A.outputs)
    if not isinstance(right, StructuredOperator):
        return None
    res = A._compose_with_error(right)
    if res is NotImplemented:
        return None
    C, rel_own, abs_own, support_own = res
    u = UNIT_ROUNDOFF
    rel = (1.0 + err_a.rel) * (1.0 + err_b.rel) * (1.0 + rel_own) - 1.0
    rel = math.nextafter(rel * (1.0 + 4 * u), math.inf)
    n = A.shape[1]
    inherited = err_a.absolute + err_b.absolute  # n can exceed the float range (2^k outputs): no 2.0 * n then
    absolute = ((2.0 * n if n < 2**1000 else math.inf) * inherited if inherited else 0.0) + abs_own
    if absolute:
        absolute = math.nextafter(absolute * (1.0 + 4 * u), math.inf)
    support = bool(err_a.support_exact and err_b.support_exact and support_own)
    return C, ProductError(rel, absolute, support, structured_smallest_positive(C))


def widen_hockey(value_at: Callable[[np.ndarray], np.ndarray], eps: Any, rel: float) -> np.ndarray | float:
    """A bound on ``D_{e^eps}(P* || Q*)`` from bounds ``value_at(o) >= D_{e^o}(P || Q)`` of stored vectors with
    ``P* = P (1 +- rel)`` and ``Q* = Q (1 +- rel)`` entrywise (``sum Q* <= 1``); ``value_at`` takes and returns
    arrays (one call), ``eps`` is a float or an array (eps >= 0, inf allowed).

    ``[p* - c q*]_+ <= (1 + rel) [p - c' q]_+`` with ``c' = c (1 - rel) / (1 + rel) = e^(eps - shift)``,
    ``shift = log((1 + rel) / (1 - rel))`` (rounded up, :func:`hockey_shift`); for ``c' < 1``, ``D_c'(P || Q) <=
    D_1(P || Q) + (1 - c') sum Q`` with ``sum Q <= (1 + rel) / (1 - rel)``; at eps = inf the supports do not move:
    ``(1 + rel) D_inf``. Rounded up, capped at 1; ``rel = 0`` returns ``value_at(eps)``.

    >>> f = lambda o: np.full(np.shape(o), 0.25)
    >>> float(widen_hockey(f, 1.0, 0.0)), float(widen_hockey(f, 1.0, 1e-12)) > 0.25
    (0.25, True)
    """
    scalar = np.ndim(eps) == 0
    e = np.atleast_1d(np.asarray(eps, dtype=float))
    if not rel:
        out = np.minimum(np.asarray(value_at(e), dtype=float), 1.0)
        return float(out[0]) if scalar else out
    u = UNIT_ROUNDOFF
    shift = hockey_shift(rel)
    if e.size == 1:  # one eps (a search step): the same operations on floats (numpy's expm1, on one entry)
        x = float(e.ravel()[0])
        low = math.nextafter(x - shift, -math.inf) if math.isfinite(x) else math.inf
        v = float(np.asarray(value_at(np.array([max(low, 0.0)])), dtype=float).ravel()[0])
        if low < 0.0:
            total_q = (1.0 + rel) / (1.0 - rel) * (1.0 + 4 * u)
            v = v + float(-np.expm1(np.array([low]))[0]) * (1.0 + 4 * u) * total_q
        grow = (1.0 + rel) * (1.0 + 4 * u) if math.isfinite(x) else (1.0 + rel) * (1.0 + 2 * u)
        one = min(math.nextafter(v * grow, math.inf), 1.0) if v > 0 else 0.0
        return one if scalar else np.full(e.shape, one)
    finite = np.isfinite(e)
    low = np.where(finite, np.nextafter(e - shift, -np.inf), np.inf)
    neg = low < 0.0
    vals = np.asarray(value_at(np.where(neg, 0.0, low)), dtype=float)
    total_q = (1.0 + rel) / (1.0 - rel) * (1.0 + 4 * u)
    vals = np.where(neg, vals + -np.expm1(np.minimum(low, 0.0)) * (1.0 + 4 * u) * total_q, vals)
    grow = np.where(finite, (1.0 + rel) * (1.0 + 4 * u), (1.0 + rel) * (1.0 + 2 * u))
    out = np.where(vals > 0, np.minimum(np.nextafter(vals * grow, np.inf), 1.0), 0.0)
    return float(out[0]) if scalar else out


def hockey_shift(rel: float) -> float:
    """``log((1 + rel) / (1 - rel))`` rounded up: how far :func:`widen_hockey` moves eps (0 for rel = 0)."""
    if not rel:
        return 0.0
    return math.nextafter(math.log1p(2.0 * rel / (1.0 - rel)) * (1.0 + 8 * UNIT_ROUNDOFF), math.inf)
