"""Input checks used once, at the public boundary.

Each checker names the argument it checks and shows the offending value.
Wrong type -> ``TypeError``; wrong value -> a ``ValueError`` subclass from
:mod:`chainamp.errors`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .tolerances import DIST_SUM_ATOL
from ..errors import InvalidDistributionError, InvalidParameterError

__all__ = [
    "check_real",
    "check_epsilon",
    "check_delta",
    "check_probability",
    "check_positive",
    "check_order",
    "check_int",
    "check_distribution",
    "check_choice",
    "check_float_array",
]


def check_real(value: Any, name: str) -> float:
    """Return ``value`` as a float; TypeError for non-numbers (bool included), ValueError for NaN."""
    if type(value) is float:  # the common case, without the abstract-class checks below (same result)
        if value != value:
            raise InvalidParameterError(f"{name} must not be NaN")
        return value
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    out = float(value)
    if math.isnan(out):
        raise InvalidParameterError(f"{name} must not be NaN")
    return out


def check_epsilon(value: Any, name: str = "epsilon", *, allow_inf: bool = True) -> float:
    """An epsilon: a real number >= 0 (``math.inf`` allowed unless ``allow_inf=False``)."""
    eps = check_real(value, name)
    if eps < 0.0:
        raise InvalidParameterError(f"{name} must be >= 0 (got {eps!r})")
    if math.isinf(eps) and not allow_inf:
        raise InvalidParameterError(f"{name} must be finite (got {eps!r})")
    return eps


def check_delta(value: Any, name: str = "delta") -> float:
    """A delta: a real number in [0, 1]."""
    d = check_real(value, name)
    if not 0.0 <= d <= 1.0:
        raise InvalidParameterError(f"{name} must be in [0, 1] (got {d!r})")
    return d


check_probability = check_delta


def check_positive(value: Any, name: str, *, strict: bool = True, allow_inf: bool = False) -> float:
    """A real number > 0 (or >= 0 with ``strict=False``)."""
    x = check_real(value, name)
    if (x <= 0.0) if strict else (x < 0.0):
        bound = "> 0" if strict else ">= 0"
        raise InvalidParameterError(f"{name} must be {bound} (got {x!r})")
    if math.isinf(x) and not allow_inf:
        raise InvalidParameterError(f"{name} must be finite (got {x!r})")
    return x


def check_order(value: Any, name: str = "alpha") -> float:
    """A Renyi order: a real number > 1 (``math.inf`` allowed)."""
    a = check_real(value, name)
    if a <= 1.0:
        raise InvalidParameterError(f"{name} must be > 1 (got {a!r})")
    return a


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """An integer (numpy integers accepted, bools and floats rejected), optionally >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise InvalidParameterError(f"{name} must be >= {minimum} (got {out})")
    return out


def check_float_array(value: Any, name: str, *, ndim: int | None = None, finite: bool = False) -> np.ndarray:
    """``value`` as a float ndarray (no copy when it already is one); TypeError when it is not numbers.

    With ``ndim``: a non-empty array of exactly that many dimensions; with ``finite``: no inf or NaN
    entry (InvalidParameterError for either).
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        what = "an array" if ndim is None else f"a {ndim}-D array"
        raise TypeError(f"{name} must be {what} of numbers ({exc})") from None
    if ndim is not None and (arr.ndim != ndim or arr.size == 0):
        raise InvalidParameterError(f"{name} must be a non-empty {ndim}-D array (got shape {arr.shape})")
    if finite and not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} entries must be finite")
    return arr


def check_distribution(value: Any, name: str, *, size: int | None = None,
                       atol: float = DIST_SUM_ATOL) -> np.ndarray:
    """A probability vector: 1-D, finite, non-negative, summing to 1 within ``atol``."""
    arr = check_float_array(value, name)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidDistributionError(f"{name} must be a non-empty 1-D vector (got shape {arr.shape})")
    if size is not None and arr.size != size:
        raise InvalidDistributionError(f"{name} must have {size} entries (got {arr.size})")
    if not np.all(np.isfinite(arr)):
        raise InvalidDistributionError(f"{name} has a non-finite entry at index {int(np.argmin(np.isfinite(arr)))}")
    if np.any(arr < 0):
        i = int(np.argmin(arr))
        raise InvalidDistributionError(f"{name} has a negative entry {arr[i]!r} at index {i}")
    total = float(arr.sum())
    if abs(total - 1.0) > atol:
        raise InvalidDistributionError(f"{name} must sum to 1 (sums to {total!r})")
    return arr


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """One of a fixed set of string options; never falls through for an unknown one."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {choices}, got {value!r}")
    if value not in choices:
        raise InvalidParameterError(f"{name} must be one of {choices} (got {value!r})")
    return value
