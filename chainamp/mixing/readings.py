"""Argument checks and the normalised-rows reading shared by :mod:`.coefficients` and :mod:`.guarantees` (private).

Rows accepted within ``row_sum_atol`` of mass 1 stand for their normalised rows; with
``normalised=True`` the coefficients are computed for the stored rows and widened here
(:func:`_normalisation`, :func:`_shift`, :func:`_raw_order`, :func:`_widen`) so that they also hold
for the row-normalised operator. Also: the boolean, block-size, eps-grid, executor and progress
checks of the public functions, and the test set of a Dobrushin witness.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .pairwise import _INF_EPS, _U, _row_sums, _rows, _source, _up
from .._numerics import check_executor, check_float_array, check_int, check_progress, scaled_by_exp
from ..errors import InvalidParameterError
from ..operators import MarkovOperator, as_operator, operator_error

__all__: list[str] = []


def _operator(K: Any, inputs: Any = None) -> MarkovOperator:
    K = as_operator(K)
    return K if inputs is None else K.restrict(inputs)


def _normalisation(K: MarkovOperator) -> float:
    """``r`` with ``K(x, y) / s_x`` within ``K(x, y) (1 +- r)`` (``s_x`` the row sums), for rows whose
    computed sum is not 1.0 (accepted within ``row_sum_atol``); 0 when every computed sum is 1.0.

    With ``normalised=True`` the coefficients below are computed for the stored rows and widened by
    ``r`` so that they also hold for the row-normalised operator the rows stand for
    (:func:`chainamp.operators.operator_error`); Doeblin always covers both readings.
    """
    if np.all(_row_sums(_source(K)) == 1.0):
        return 0.0
    return operator_error(K).rel


def _shift(r: float) -> float:
    """``log((1 + r) / (1 - r))`` rounded up: the loss in eps of a relative entrywise error r."""
    return math.nextafter(math.log1p(2.0 * r / (1.0 - r)) * (1.0 + 8 * _U), math.inf) if r else 0.0


def _raw_order(eps: float, r: float) -> float:
    """The order at which the stored rows' divergence bounds the normalised rows' one at ``eps``."""
    return eps if not r or math.isinf(eps) else max(math.nextafter(eps - _shift(r), -math.inf), 0.0)


def _widen(g: float, eps: float, r: float) -> float:
    """A bound on ``D_{e^eps}`` of the normalised rows from ``g``, that of the stored rows at
    :func:`_raw_order`.

    With ``p' = p (1 +- r)`` and ``q' = q (1 +- r)``: ``[p' - c q']_+ <= (1 + r) [p - c'' q]_+`` with
    ``c'' = c (1 - r) / (1 + r) = e^{eps - shift}``; for ``c'' < 1``, ``[p - c'' q]_+ <= [p - q]_+ +
    (1 - c'') q`` and ``sum q <= 1 + r``; at eps = inf the supports do not move: ``(1 + r) D_inf``.
    """
    if not r:
        return g
    low = -math.inf if math.isinf(eps) else math.nextafter(eps - _shift(r), -math.inf)
    if math.isinf(eps) or low >= 0.0:
        return _up(g, r + 4 * _U)
    return _up(g + -math.expm1(low) * (1.0 + r) * (1.0 + 4 * _U), r + 8 * _U)


def _test_set(K: MarkovOperator, i: int, j: int, eps: float) -> tuple:
    p, q = _rows(_source(K), [i])[0], _rows(_source(K), [j])[0]
    if math.isinf(eps) or eps >= _INF_EPS:
        mask = (p > 0) & (q == 0)
    else:
        mask = p > scaled_by_exp(q, eps)
    idx = np.flatnonzero(mask)
    outs = K.outputs
    if isinstance(outs, range) and outs.start == 0 and outs.step == 1:  # integer labels: no per-label lookups
        return tuple(idx.tolist())
    return tuple(outs[y] for y in idx)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def _check_block(block_size: Any) -> int | None:
    return None if block_size is None else check_int(block_size, "block_size", minimum=1)


def _check_epsilons(epsilons: Any, name: str = "epsilons") -> np.ndarray:
    eps = np.atleast_1d(check_float_array(epsilons, name))
    if eps.ndim != 1 or eps.size == 0 or np.any(np.isnan(eps)) or np.any(eps < 0):
        raise InvalidParameterError(f"{name} must be a non-empty 1-D array of values >= 0 (got {epsilons!r})")
    return eps


def _check_run(executor: Any, progress: Any) -> tuple:
    """Validate the ``executor=`` and ``progress=`` keywords of the public functions."""
    return check_executor(executor), check_progress(progress)
