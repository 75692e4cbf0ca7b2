"""The variation-ratio bound of Wang et al. 2024, with the changing user's third component revealed.

Wang, Peng, Li, Huang, Liu and Yang 2024 ("Privacy amplification via shuffling: unified, simplified,
and tightened") parameterise a randomizer R by ``p`` (``R(x0) <= p R(x1)`` for neighbours), ``beta``
(``TV(R(x0), R(x1)) <= beta``) and ``q`` (``R(x0) <= q R(x)`` for every value x). With
``a = beta / (p - 1)``, ``P0 = (R(x0) - R(x1))_+ / beta`` and ``P1 = (R(x1) - R(x0))_+ / beta``:
``R(x0) = p a P0 + a P1 + (1 - a - p a) Q`` and ``R(x1) = a P0 + p a P1 + (1 - a - p a) Q`` with one
and the same Q >= 0 (because ``R(x0) <= p R(x1)`` and back), and every other user's
``R(x) >= (p a / q) (P0 + P1)`` (on the support of P0, ``R(x) >= R(x0) / q >= p a P0 / q`` since
``R(x0) <= p R(x1)``). So every other user is a clone of kind 0 or 1 with probability ``p a / q`` each.

Their pair keeps the changing user's Q draw among the other users' non-clone reports. We do not:
given the observer's counts of the two kinds, the chance that the changing user drew Q differs
between x0 and x1, so the counts alone are not a sufficient post-processing. Revealing whether the
changing user drew Q is extra information (an upper bound); when it did, both sides are the same
(divergence 0 at eps >= 0); otherwise it is a clone of kind 0 with probability ``p / (p + 1)``. Hence
``delta(eps) <= (1 + p) a * D_eps(clone pair with s = 2 p a / q, w = p / (p + 1))`` (:mod:`._clones`).
Tests compare it with brute force over every dataset of the other users. At n = 7, k = 4, eps0 = 2,
eps = 1 their public code gives 0.15644, and their pair's divergence summed exactly (mpmath, every
count) is the same 0.156443, below the exact worst case of shuffled 4-RR (0.157355 by brute force): the
gap comes from the reduction, not from their numerics. For k-RR the blanket pair
(:mod:`.blanket`) keeps the other users' third component and is the tighter sound bound.

Soundness: p and q are rounded up (the decomposition stays valid for any larger p, q); the factor
``(1 + p) a`` uses an upper bound of the pairs' total variation and the clone probability a lower one
(the pair's divergence falls as clones become more likely).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import UNIT_ROUNDOFF, check_delta, check_memory
from ..errors import InvalidMechanismError, InvalidParameterError
from ..mixing import dobrushin, ldp_guarantee
from ..operators import MarkovOperator, StructuredOperator, SymmetricChannel
from ._clones import clone_pair_delta, clone_window, invert_delta
from ._curves import pair_from_curve
from .generic import _check_epsilons, _check_users

__all__ = ["VariationRatio", "variation_ratio_parameters", "variation_ratio_delta", "variation_ratio_epsilon",
           "variation_ratio_dominating_pair"]

_U = UNIT_ROUNDOFF


@dataclass(frozen=True)
class VariationRatio:
    """The (p, beta, q) of a randomizer: ``p`` and ``q`` upper bounds, ``beta`` bracketed by
    ``[beta_low, beta]`` (the smallest and largest total variation over neighbouring pairs)."""

    p: float
    beta: float
    q: float
    beta_low: float | None = None

    def __post_init__(self) -> None:
        for name in ("p", "q"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not v >= 1.0:
                raise InvalidParameterError(f"{name} must be a real number >= 1 (got {v!r})")
        b = self.beta
        if not isinstance(b, (int, float)) or not 0.0 <= b <= 1.0:
            raise InvalidParameterError(f"beta must be in [0, 1] (got {b!r})")
        lo = b if self.beta_low is None else self.beta_low
        if not isinstance(lo, (int, float)) or not 0.0 <= lo <= b:
            raise InvalidParameterError(f"beta_low must be in [0, beta] (got {lo!r})")
        if self.p < math.inf and b > (self.p - 1.0) / (self.p + 1.0) * (1.0 + 1e-12):
            raise InvalidParameterError(
                f"beta={b!r} is above (p - 1) / (p + 1) = {(self.p - 1.0) / (self.p + 1.0)!r}: no randomizer has "
                "these parameters")
        object.__setattr__(self, "beta_low", float(lo))


def _normalised(K: MarkovOperator) -> MarkovOperator:
    """K with its rows normalised when a computed row sum is not 1.0: rows accepted within a loose ``row_sum_atol``
    stand for their normalised rows (chainamp's convention, :func:`chainamp.operators.operator_error`), and the
    coefficients of the rows as written can be far below theirs (rows summing to 0.84 and 0.90 gave eps_R = 1.68
    for a channel at 1.75). Structured operators have exact rows and are kept; any other (dense, sparse or
    dask-backed) is read through its size-checked dense ``matrix``."""
    if isinstance(K, StructuredOperator):
        return K
    mat = K.matrix
    sums = np.asarray(mat.sum(axis=1), dtype=float).ravel()
    if np.all(sums == 1.0):
        return K
    mat = sp.diags(1.0 / sums) @ mat if sp.issparse(mat) else np.asarray(mat, dtype=float) / sums[:, None]
    return MarkovOperator(mat, K.inputs, K.outputs)


def variation_ratio_parameters(R: Any) -> VariationRatio:
    """``(p, beta, q)`` of a finite randomizer R (rows = values, all pairs of values neighbours), from
    chainamp's own coefficients: ``p = q = e^eps_R`` with ``eps_R`` of :func:`chainamp.ldp_guarantee`
    (rounded up), ``beta`` = the Dobrushin coefficient (:func:`chainamp.dobrushin`, rounded up) and
    ``beta_low`` the smallest total variation over pairs (rounded down; closed form for a
    :class:`~chainamp.operators.SymmetricChannel`, a pair scan for small dense R).

    Examples
    --------
    >>> vr = variation_ratio_parameters(SymmetricChannel.from_epsilon(4, 2.0))
    >>> round(vr.p, 6), round(vr.beta, 6)
    (7.389056, 0.614979)
    """
    K = R if isinstance(R, MarkovOperator) else MarkovOperator(R)
    if K.shape[0] < 2:
        raise InvalidMechanismError(f"R must have at least 2 values (rows), got shape {K.shape}")
    K = _normalised(K)
    eps = ldp_guarantee(K).epsilon
    p = math.inf if eps > 709.0 else math.nextafter(math.exp(eps) * (1.0 + 4 * _U), math.inf)  # e^709.8 overflows
    beta = float(dobrushin(K).gamma)
    if isinstance(K, SymmetricChannel):
        low = max(0.0, abs(K.diagonal - K.off_diagonal) * (1.0 - 8 * _U))
    else:
        n, m = K.shape
        check_memory(8.0 * n * m * 3, f"the {n * (n - 1) // 2} pairwise total variations of R")
        M = np.asarray(K.matrix.toarray() if hasattr(K.matrix, "toarray") else K.matrix, dtype=float)
        low = math.inf
        for i in range(n - 1):
            tv = 0.5 * np.abs(M[i + 1:] - M[i]).sum(axis=1)
            low = min(low, float(tv.min()))
        low = max(0.0, low * (1.0 - (m + 4) * _U) - (m + 4) * _U)
    return VariationRatio(p=p, beta=min(1.0, beta), q=p, beta_low=min(low, beta))


def _params(R_or_params: Any) -> VariationRatio:
    if isinstance(R_or_params, VariationRatio):
        return R_or_params
    if isinstance(R_or_params, tuple) and len(R_or_params) == 3:
        p, b, q = R_or_params
        return VariationRatio(p=float(p), beta=float(b), q=float(q))
    return variation_ratio_parameters(R_or_params)


def _pieces(vr: VariationRatio) -> tuple[float, float, float] | None:
    """``(lam, s, w)`` of the clone pair, or None when the randomizer reveals nothing (beta = 0)."""
    p, q = vr.p, vr.q
    if vr.beta == 0.0:
        return None
    if math.isinf(p):
        return 1.0, 0.0, 1.0  # some output pins the value down: no clone decomposition
    lam = min(1.0, vr.beta * (p + 1.0) / (p - 1.0) * (1.0 + 8 * _U))
    s = max(0.0, 2.0 * p * vr.beta_low / ((p - 1.0) * q) * (1.0 - 8 * _U))
    w = min(1.0, p / (p + 1.0) * (1.0 + 8 * _U))  # rounded up: the divergence grows with it
    return lam, min(s, 1.0), w


def variation_ratio_delta(R_or_params: Any, users: int, epsilons: Any) -> np.ndarray:
    """Certified ``delta(eps)`` of n users' shuffled reports from the variation-ratio decomposition
    (module docstring): ``(1 + p) a * sum_c Bin(n - 1, 2 p a / q)(c) D_c(eps)``, ``a = beta / (p - 1)``.

    ``R_or_params`` is a finite randomizer (anything :class:`~chainamp.MarkovOperator` accepts, or a
    :class:`~chainamp.operators.SymmetricChannel` for k-RR at any k), a :class:`VariationRatio`, or a
    tuple ``(p, beta, q)`` (then ``beta`` must be the exact total variation of every neighbouring pair).

    Examples
    --------
    >>> d = variation_ratio_delta(SymmetricChannel.from_epsilon(4, 2.0), 7, [1.0])
    >>> bool(d[0] >= 0.15736)
    True
    """
    vr = _params(R_or_params)
    n = _check_users(users)
    eps = _check_epsilons(epsilons)
    pieces = _pieces(vr)
    if pieces is None:
        return np.zeros(eps.size)
    lam, s, w = pieces
    return clone_pair_delta(n - 1, s, w, lam, eps)


def variation_ratio_epsilon(R_or_params: Any, users: int, delta: float, *, rtol: float = 1e-6) -> float:
    """Certified eps of :func:`variation_ratio_delta` at ``delta`` (the upper end of a search bracket of
    relative width ``rtol``; at most log p rounded up, where delta is 0: inf only when p is).

    Examples
    --------
    >>> eps = variation_ratio_epsilon(SymmetricChannel.from_epsilon(2, 2.0), 1000, 1e-6)
    >>> 0.39 < eps < 0.40
    True
    """
    vr = _params(R_or_params)
    n = _check_users(users)
    d = check_delta(delta)
    if not 0.0 < d < 1.0:
        raise InvalidParameterError(f"delta must be in (0, 1) (got {d!r})")
    pieces = _pieces(vr)
    if pieces is None:
        return 0.0
    lam, s, w = pieces
    if lam <= d:
        return 0.0
    tail = 1e-4 * d
    hi = math.nextafter(math.log(vr.p), math.inf) if math.isfinite(vr.p) else math.inf
    win = clone_window(n - 1, s, tail)
    eps = invert_delta(lambda x: float(clone_pair_delta(n - 1, s, w, lam, np.array([x]), window=win)[0]), d, hi,
                       rtol=rtol)
    return min(eps, hi)  # R is log(p)-LDP for neighbours, so the shuffled reports are (log p, 0)-DP


def variation_ratio_dominating_pair(R_or_params: Any, users: int, *, epsilons: Any = None):
    """A :class:`~chainamp.privacy.DominatingPair` of :func:`variation_ratio_delta` on a grid of eps (as
    :func:`chainamp.shuffle.generic_dominating_pair`), with ``(log p, 0)``.

    Examples
    --------
    >>> pair = variation_ratio_dominating_pair(SymmetricChannel.from_epsilon(4, 2.0), 1000)
    >>> bool(pair.delta(0.5) >= variation_ratio_delta(SymmetricChannel.from_epsilon(4, 2.0), 1000, [0.5])[0])
    True
    """
    vr = _params(R_or_params)
    n = _check_users(users)
    pure = math.log(vr.p) if math.isfinite(vr.p) else math.inf
    return pair_from_curve(lambda x: variation_ratio_delta(vr, n, x), math.nextafter(pure, math.inf), epsilons,
                           f"shuffled reports, n={n} (variation ratio)")
