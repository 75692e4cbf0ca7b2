"""Renyi DP closed forms, RDP accounting and Theorem 2 on finite spaces (Section 4 of Balle,
Barthe, Gaboardi and Geumlek 2019).

* Closed forms: :func:`gaussian_renyi_divergence`, :func:`laplace_renyi_divergence`
  (through :func:`g_alpha`, Mironov 2017, Corollary 2).
* Accounting: :func:`rdp_to_dp` (Mironov 2017, Proposition 3, or the tighter
  conversion of Canonne, Kamath and Steinke 2020) and :class:`RDPCurve`, an RDP
  guarantee on a grid of orders that composes by addition.
* Theorem 2 on finite spaces: :func:`coupling_bound`.

Examples 1-3 live in :mod:`.examples`, Theorems 4-5 and Algorithm 1 in :mod:`.sgd`;
:mod:`chainamp.renyi` re-exports all three. Every number that feeds a privacy
statement is rounded toward the larger (safe) side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import (DIST_SUM_ATOL, UNIT_ROUNDOFF, check_choice, check_delta, check_distribution, check_epsilon,
                         check_float_array, check_int, check_order, check_positive, check_real, round_up,
                         round_up_array)
from ..privacy import renyi_divergence
from ..errors import IncompatibleOperatorsError, InvalidDistributionError, InvalidParameterError
from ..operators import MarkovOperator

__all__ = [
    "DEFAULT_ORDERS",
    "gaussian_renyi_divergence",
    "g_alpha",
    "laplace_renyi_divergence",
    "RDPConversion",
    "rdp_to_dp",
    "RDPCurve",
    "CouplingBound",
    "coupling_bound",
]

#: Default grid of Renyi orders (dense near 1, then integers, then a few large orders).
DEFAULT_ORDERS = tuple(np.concatenate([1.0 + np.arange(1, 100) / 10.0, np.arange(11, 65),
                                       [80.0, 96.0, 128.0, 256.0, 512.0]]).tolist())

_CONVERSIONS = {
    "mironov": "Mironov 2017, Proposition 3",
    "cks": "Canonne, Kamath and Steinke 2020, Proposition 12 (also Balle et al. 2020, Theorem 21; "
           "Asoodeh et al. 2021)",
}


def _exp_up(log_value: float, n_ops: int = 4) -> float:
    """``exp(log_value)`` pushed up past an absolute error of ``(n_ops+2) u max(1, |log_value|)``
    in ``log_value`` (the error model of a short log-space computation)."""
    if log_value == -math.inf:
        return 0.0
    err = (n_ops + 2) * UNIT_ROUNDOFF * max(1.0, abs(log_value))
    if log_value + err > 709.0:
        return math.inf
    return math.nextafter(math.exp(log_value + err), math.inf)


def _shift_norm(shift: Any, name: str = "shift") -> float:
    """A non-negative distance, given as a number (its absolute value) or a vector (its L2 norm)."""
    if np.ndim(shift) == 0:
        return abs(check_real(shift, name))
    arr = np.asarray(shift, dtype=float)
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} must be a number or a finite 1-D vector (got {shift!r})")
    return round_up(float(np.linalg.norm(arr)), arr.size + 2)


# --------------------------------------------------------------------------- closed forms
def gaussian_renyi_divergence(shift: Any, sigma: float, alpha: float) -> float:
    """``R_alpha(N(m, s^2 I) || N(m', s^2 I)) = alpha ||m - m'||^2 / (2 s^2)`` (Mironov 2017, Proposition 7).

    ``shift`` is ``m - m'`` (a number or a vector); rounded up; ``alpha = inf`` gives ``inf``
    unless the shift is zero.

    Examples
    --------
    >>> gaussian_renyi_divergence(1.0, 2.0, 3.0)
    0.375
    """
    d, s, a = _shift_norm(shift), check_positive(sigma, "sigma"), check_order(alpha)
    if d == 0.0:
        return 0.0
    if math.isinf(a):
        return math.inf
    return round_up(a * d * d / (2.0 * s * s), 5)


def _log_g_alpha(z: float, a: float) -> float:
    """``log g_alpha(z)`` in log space (no overflow for large z or alpha)."""
    return float(np.logaddexp(math.log(a / (2 * a - 1)) + z * (a - 1), math.log((a - 1) / (2 * a - 1)) - z * a))


def g_alpha(z: float, alpha: float) -> float:
    """``g_alpha(z) = alpha/(2 alpha-1) e^{z(alpha-1)} + (alpha-1)/(2 alpha-1) e^{-z alpha}`` (Mironov 2017,
    Corollary 2; the function of Example 2 of Balle et al. 2019), for ``z >= 0`` and finite ``alpha > 1``.

    ``exp((alpha-1) R_alpha)`` of two Laplace laws whose location gap is ``z`` scales; rounded up.

    Examples
    --------
    >>> round(g_alpha(0.0, 2.0), 12), round(g_alpha(1.0, 2.0), 6)
    (1.0, 1.8573)
    """
    z = check_epsilon(check_real(z, "z"), "z", allow_inf=False)
    a = check_order(alpha)
    if math.isinf(a):
        raise InvalidParameterError("alpha must be finite for g_alpha (got inf)")
    return _exp_up(_log_g_alpha(z, a))


def laplace_renyi_divergence(shift: float, scale: float, alpha: float) -> float:
    """``R_alpha(Lap(m, b) || Lap(m', b)) = log g_alpha(|m - m'|/b) / (alpha - 1)`` (Mironov 2017, Corollary 2).

    ``alpha = inf`` gives the pure-DP value ``|m - m'|/b``. Evaluated in log space; rounded up.

    Examples
    --------
    >>> round(laplace_renyi_divergence(1.0, 1.0, 2.0), 6), laplace_renyi_divergence(1.0, 2.0, math.inf)
    (0.619124, 0.5)
    """
    d, b, a = _shift_norm(shift), check_positive(scale, "scale"), check_order(alpha)
    if d == 0.0:
        return 0.0
    if math.isinf(a):
        return round_up(d / b, 1)
    return round_up(max(_log_g_alpha(d / b, a), 0.0) / (a - 1.0), 8, scale=d / b)


# --------------------------------------------------------------------------- RDP -> DP
@dataclass(frozen=True)
class RDPConversion:
    """An ``(epsilon, delta)``-DP guarantee obtained from ``(alpha, rdp)``-RDP."""

    epsilon: float
    delta: float
    alpha: float
    rdp: float
    method: str
    source: str

    def to_dp(self):
        """The guarantee as a :class:`chainamp.DP`."""
        from ..privacy import DP  # layer 4, imported lazily

        return DP(epsilon=self.epsilon, delta=self.delta)


def rdp_to_dp(rdp: float, alpha: float, delta: float, *, method: str = "cks") -> RDPConversion:
    """Convert ``(alpha, rdp)``-RDP to ``(epsilon, delta)``-DP.

    ``method="mironov"`` (Mironov 2017, Proposition 3)::

        epsilon = rdp + log(1/delta) / (alpha - 1)

    ``method="cks"`` (Canonne, Kamath and Steinke 2020, Proposition 12; the same
    formula is Theorem 21 of Balle et al. 2020 and is what current RDP accountants use)::

        epsilon = rdp + log((alpha - 1)/alpha) - (log(delta) + log(alpha)) / (alpha - 1)

    It is never larger than Mironov's (the difference is ``log(1 - 1/alpha) - log(alpha)/(alpha-1) <= 0``).
    A negative value is reported as 0, which is sound because the hockey-stick
    divergence decreases in epsilon. ``alpha = inf`` (pure DP) gives ``epsilon = rdp``.
    The result is rounded up past the error of the few float operations.

    Examples
    --------
    >>> c = rdp_to_dp(0.5, 10.0, 1e-5, method="mironov")
    >>> round(c.epsilon, 6), c.source
    (1.779214, 'Mironov 2017, Proposition 3')
    >>> round(rdp_to_dp(0.5, 10.0, 1e-5).epsilon, 6)
    1.418011
    """
    r = check_epsilon(rdp, "rdp")
    a = check_order(alpha)
    d = check_delta(delta)
    m = check_choice(method, "method", tuple(_CONVERSIONS))
    if not 0.0 < d < 1.0:
        raise InvalidParameterError(f"delta must be in (0, 1) for an RDP conversion (got {d!r})")
    if math.isinf(a) or math.isinf(r):
        eps = r
    else:
        terms = [r, -math.log(d) / (a - 1.0)]
        if m == "cks":
            terms += [math.log1p(-1.0 / a), -math.log(a) / (a - 1.0)]
        total, scale = math.fsum(terms), max(abs(t) for t in terms)
        # a total that is <= 0 even after its error bound is reported as exactly 0 (sound, see above)
        eps = 0.0 if total + 10 * UNIT_ROUNDOFF * scale <= 0.0 else round_up(max(total, 0.0), 8, scale=scale)
    return RDPConversion(epsilon=eps, delta=d, alpha=a, rdp=r, method=m, source=_CONVERSIONS[m])


@dataclass(frozen=True, eq=False)
class RDPCurve:
    """An RDP guarantee on a grid: ``(orders[k], epsilons[k])``-RDP for every k.

    Immutable (read-only arrays, orders strictly increasing and > 1). Curves on
    the same grid compose by adding their epsilons (``curve1 + curve2``,
    :meth:`compose`, ``sum(curves)``), rounded up; :meth:`to_dp` converts at the
    best order of the grid.

    Examples
    --------
    >>> c = RDPCurve.from_slope(0.01, orders=[2, 4, 8, 16, 32])
    >>> c10 = c.repeat(10)
    >>> round(float(c10.epsilons[1]), 6), round(c10.epsilon(1e-5), 4)
    (0.4, 2.0141)
    """

    orders: np.ndarray
    epsilons: np.ndarray

    def __post_init__(self) -> None:
        try:
            orders = np.array(self.orders, dtype=float, copy=True)
            eps = np.array(self.epsilons, dtype=float, copy=True)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"orders and epsilons must be arrays of numbers ({exc})") from None
        if orders.ndim != 1 or orders.size == 0 or eps.shape != orders.shape:
            raise InvalidParameterError(f"orders and epsilons must be non-empty 1-D arrays of one length "
                                        f"(got shapes {orders.shape} and {eps.shape})")
        if np.any(np.isnan(orders)) or np.any(orders <= 1.0) or np.any(np.diff(orders) <= 0):
            raise InvalidParameterError(f"orders must be > 1 and strictly increasing (got {orders.tolist()})")
        if np.any(np.isnan(eps)) or np.any(eps < 0):
            raise InvalidParameterError(f"epsilons must be >= 0 (got {eps.tolist()})")
        orders.setflags(write=False)
        eps.setflags(write=False)
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "epsilons", eps)

    @classmethod
    def from_slope(cls, slope: float, orders: Any = DEFAULT_ORDERS) -> RDPCurve:
        """The curve ``alpha -> slope * alpha`` (Gaussian mechanisms, Theorems 4 and 5), rounded up."""
        s = check_epsilon(slope, "slope", allow_inf=False)
        o = np.asarray(orders, dtype=float)
        return cls(o, round_up_array(s * o, 1))

    @classmethod
    def gaussian(cls, shift: Any, sigma: float, orders: Any = DEFAULT_ORDERS) -> RDPCurve:
        """The Gaussian mechanism with L2 sensitivity ``shift`` and noise ``sigma``."""
        return cls(orders, [gaussian_renyi_divergence(shift, sigma, a) for a in np.asarray(orders, float)])

    @classmethod
    def laplace(cls, shift: float, scale: float, orders: Any = DEFAULT_ORDERS) -> RDPCurve:
        """The Laplace mechanism with L1 sensitivity ``shift`` and scale ``scale``."""
        return cls(orders, [laplace_renyi_divergence(shift, scale, a) for a in np.asarray(orders, float)])

    def compose(self, *others: RDPCurve) -> RDPCurve:
        """Adaptive composition: epsilons add order by order (Mironov 2017, Proposition 1)."""
        total = np.array(self.epsilons)
        for other in others:
            if not isinstance(other, RDPCurve):
                raise TypeError(f"can only compose RDPCurve objects (got {type(other).__name__})")
            if other.orders.shape != self.orders.shape or not np.array_equal(other.orders, self.orders):
                raise IncompatibleOperatorsError("RDP curves must share one grid of orders to compose "
                                                 f"({self.orders.size} vs {other.orders.size} orders)")
            total = total + other.epsilons
        return RDPCurve(self.orders, round_up_array(total, len(others) + 1))

    def __add__(self, other: RDPCurve) -> RDPCurve:
        if not isinstance(other, RDPCurve):
            return NotImplemented
        return self.compose(other)

    def __radd__(self, other: Any) -> RDPCurve:
        if isinstance(other, int) and other == 0:  # lets sum(curves) work
            return self
        return NotImplemented

    def repeat(self, k: int) -> RDPCurve:
        """``k``-fold composition with itself (``k * epsilons``, rounded up)."""
        k = check_int(k, "k", minimum=0)
        if k == 0:  # composing nothing: no privacy loss (avoids 0 * inf)
            return RDPCurve(self.orders, np.zeros_like(self.epsilons))
        return RDPCurve(self.orders, round_up_array(k * self.epsilons, 1))

    def to_dp(self, delta: float, *, method: str = "cks") -> RDPConversion:
        """The smallest converted epsilon over the grid (each candidate rounded up)."""
        best = None
        for a, r in zip(self.orders.tolist(), self.epsilons.tolist()):
            conv = rdp_to_dp(r, a, delta, method=method)
            if best is None or conv.epsilon < best.epsilon:
                best = conv
        return best

    def epsilon(self, delta: float, *, method: str = "cks") -> float:
        """Shorthand for ``self.to_dp(delta, method=method).epsilon``."""
        return self.to_dp(delta, method=method).epsilon

    def __repr__(self) -> str:
        return f"RDPCurve({self.orders.size} orders in [{self.orders[0]:g}, {self.orders[-1]:g}])"


# --------------------------------------------------------------------------- Theorem 2
@dataclass(frozen=True)
class CouplingBound:
    """Right-hand side of eq. (1): ``value = divergence_term + transport_term``."""

    value: float
    divergence_term: float
    transport_term: float
    worst_input: Any
    alpha: float
    source: str = "Theorem 2, eq. (1) of Balle et al. 2019"


def _check_coupling(coupling: Any, omega: np.ndarray, mu: np.ndarray, atol: float) -> np.ndarray:
    pi = check_float_array(coupling, "coupling")
    n = omega.size
    if pi.shape != (n, n):
        raise InvalidDistributionError(f"coupling must be a {n}x{n} matrix (got shape {pi.shape})")
    if not np.all(np.isfinite(pi)):
        raise InvalidDistributionError("coupling has a non-finite entry")
    if np.any(pi < 0):
        i, j = np.unravel_index(int(np.argmin(pi)), pi.shape)
        raise InvalidDistributionError(f"coupling has a negative entry {pi[i, j]!r} at ({i}, {j})")
    for axis, marg, name, which in ((1, omega, "omega", "first (row sums)"), (0, mu, "mu", "second (column sums)")):
        gap = np.abs(pi.sum(axis=axis) - marg)
        if float(gap.max()) > atol:
            k = int(np.argmax(gap))
            raise InvalidDistributionError(f"coupling's {which} marginal must equal {name} within {atol:g} "
                                           f"(off by {float(gap[k]):.3g} at index {k})")
    return pi


def coupling_bound(mu: Any, nu: Any, K: Any, omega: Any, coupling: Any, alpha: float, *,
                   dist_sum_atol: float = DIST_SUM_ATOL) -> CouplingBound:
    """Theorem 2 (eq. (1)) of Balle et al. 2019 on a finite space.

    For any ``omega`` and any coupling ``pi`` in ``C(omega, mu)`` (row marginal
    ``omega``, column marginal ``mu``), with the transport operator
    ``H_pi(x, z) = pi(x, z) / omega(x)`` (so ``omega H_pi = mu``, Lemma 16)::

        R_alpha(mu K || nu K) <= R_alpha(omega || nu) + sup_x R_alpha((H_pi K)(x) || K(x)).

    The supremum runs over the ``x`` with ``nu(x) > 0`` and ``omega(x) > 0``: in the
    proof (Appendix B) the factor of an ``x`` with ``omega(x) = 0`` is multiplied by
    ``p_omega(x)^alpha = 0``, so such ``x`` never count (and ``omega(x) > 0 = nu(x)``
    makes the first term infinite). ``H_pi(x)`` is the row of ``pi`` normalised by its
    own sum. Both terms are rounded up (``renyi_divergence``) and so is their sum.

    The order inside the supremum matters: ``(H_pi K)(x)`` is the first argument, as in the
    proof (the likelihood ratio ``int h_pi(x, dz) k(z, y) / k(x, y)`` is integrated against
    ``K(x, dy)``). With the arguments swapped the right-hand side is not a bound (the tests
    keep a 2-state counterexample).

    Parameters
    ----------
    mu, nu, omega : probability vectors over the inputs of ``K``.
    K : MarkovOperator or row-stochastic matrix.
    coupling : (n, n) matrix, non-negative, marginals ``omega`` (rows) and ``mu`` (columns)
        within ``dist_sum_atol``; else ``InvalidDistributionError`` naming the marginal.
    alpha : order > 1 (``math.inf`` allowed).

    Examples
    --------
    >>> K = [[0.9, 0.1], [0.1, 0.9]]
    >>> mu, nu = [0.8, 0.2], [0.2, 0.8]
    >>> b = coupling_bound(mu, nu, K, mu, [[0.8, 0.0], [0.0, 0.2]], 2.0)  # identity coupling
    >>> round(b.value, 6), round(b.transport_term, 6)
    (1.178655, 0.0)
    """
    K = K if isinstance(K, MarkovOperator) else MarkovOperator(K)
    n = K.shape[0]
    a = check_order(alpha)
    mu = check_distribution(mu, "mu", atol=dist_sum_atol)
    nu = check_distribution(nu, "nu", atol=dist_sum_atol)
    omega = check_distribution(omega, "omega", atol=dist_sum_atol)
    for vec, name in ((mu, "mu"), (nu, "nu"), (omega, "omega")):
        if vec.size != n:
            raise IncompatibleOperatorsError(f"{name} has {vec.size} entries but K has {n} inputs")
    pi = _check_coupling(coupling, omega, mu, dist_sum_atol)
    kmat = np.asarray(K.matrix, dtype=float)
    div = renyi_divergence(omega, nu, a)
    rows = pi.sum(axis=1)
    transport, worst = 0.0, None
    for x in np.flatnonzero((nu > 0) & (omega > 0) & (rows > 0)).tolist():
        hk = (pi[x] / rows[x]) @ kmat
        hk = hk / hk.sum()
        term = renyi_divergence(hk, kmat[x] / kmat[x].sum(), a)
        if worst is None or term > transport:
            transport, worst = term, K.inputs[x]
    value = div + transport if math.isinf(div + transport) else round_up(div + transport, 1)
    return CouplingBound(value=value, divergence_term=div, transport_term=transport, worst_input=worst, alpha=a)
