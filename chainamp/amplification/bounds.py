"""Amplification bounds: one pure function per theorem, on plain numbers.

Each function takes the input mechanism's guarantee ``(epsilon, delta)`` and a
mixing coefficient of K (computed by :mod:`chainamp.mixing`) and returns a
:class:`Bound` for K o M. Nothing here looks at matrices; :mod:`chainamp.amplify`
combines these functions into a report.

Soundness
---------
Every condition of Definition 1 is monotone in gamma (a gamma0-Doeblin operator
is gamma-Doeblin for every gamma >= gamma0, and likewise for the others), so a
coefficient rounded up still satisfies the theorem's hypothesis. The output
epsilon' and delta' are then computed in forms free of cancellation (all terms
non-negative) and rounded up; a larger epsilon' or delta' is always a valid,
weaker guarantee.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from .._numerics import check_delta, check_epsilon, check_probability, log1p_gamma_expm1, log_expm1, round_up

__all__ = [
    "Bound",
    "BOUND_SOURCES",
    "theorem1_dobrushin",
    "theorem1_hockey_stick",
    "theorem1_doeblin",
    "theorem1_ultra_mixing",
    "hockey_stick_order",
    "doeblin_amplifies_delta",
    "doeblin_frontier",
    "ldp_bound",
    "tight_pure_epsilon",
]

#: The values ``Bound.source`` takes, in the order a report lists them.
BOUND_SOURCES = (
    "theorem1.dobrushin",
    "theorem1.hockey_stick",
    "theorem1.doeblin",
    "theorem1.ultra_mixing",
    "ldp",
    "tight",
    "exact",
)

_REFERENCES = {
    "theorem1.dobrushin": "Theorem 1(1) of Balle et al. 2019",
    "theorem1.hockey_stick": "Theorem 1(2) of Balle et al. 2019",
    "theorem1.doeblin": "Theorem 1(3) of Balle et al. 2019",
    "theorem1.ultra_mixing": "Theorem 1(4) of Balle et al. 2019",
    "ldp": "post-processing by K as a local randomizer (LDP table)",
    "tight": "tight black-box bound: Theorem 1(2) along the input profile",
    "exact": "exact privacy profile of the finite pipeline M K",
}


@dataclass(frozen=True)
class Bound:
    """A certified guarantee: K o M is ``(epsilon, delta)``-DP.

    Attributes
    ----------
    epsilon, delta : float
        The certified pair (both already rounded up).
    source : str
        One of :data:`BOUND_SOURCES`.
    gamma : float or None
        The mixing coefficient the bound used (None for ``exact``).
    gamma_epsilon : float or None
        For hockey-stick coefficients, the order ``eps~`` at which gamma was taken.
    input_epsilon, input_delta : float or None
        The point of the input's privacy profile the bound started from.
    reference : str
        Where the bound comes from.
    """

    epsilon: float
    delta: float
    source: str
    gamma: float | None = None
    gamma_epsilon: float | None = None
    input_epsilon: float | None = None
    input_delta: float | None = None
    reference: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.source not in BOUND_SOURCES:
            raise ValueError(f"source must be one of {BOUND_SOURCES} (got {self.source!r})")
        if not self.reference:
            object.__setattr__(self, "reference", _REFERENCES[self.source])

    def to_dict(self) -> dict:
        """JSON-safe dict (infinities become the string ``"inf"``)."""
        def clean(v):
            if isinstance(v, float) and math.isinf(v):
                return "inf" if v > 0 else "-inf"
            return v
        return {k: clean(getattr(self, k)) for k in (
            "source", "epsilon", "delta", "gamma", "gamma_epsilon", "input_epsilon", "input_delta", "reference")}


def _product_up(a: float, b: float) -> float:
    """``a * b`` rounded up: one correctly rounded multiplication is at most one float below
    the exact product, and a product with an exact 0 or 1 factor is exact."""
    prod = a * b
    if a in (0.0, 1.0) or b in (0.0, 1.0):
        return prod
    return math.nextafter(prod, math.inf)


def _positive_up(value: float, n_ops: int, truly_positive: bool) -> float:
    """Round a non-negative result up; if it is truly positive but underflowed to 0, return the
    smallest positive double (round_up alone keeps an exact 0)."""
    if value == 0.0:
        return 5e-324 if truly_positive else 0.0
    return round_up(value, n_ops, upper=1.0) if value > 5e-300 else min(
        math.nextafter(value * (1 + (n_ops + 2) * 2.0**-53), math.inf) + 5e-324 * (n_ops + 2), 1.0)


def _eps_delta(epsilon: float, delta: float) -> tuple[float, float]:
    return check_epsilon(epsilon, "epsilon"), check_delta(delta, "delta")


def theorem1_dobrushin(epsilon: float, delta: float, gamma: float) -> Bound:
    """Theorem 1(1) of Balle et al. 2019: a gamma-Dobrushin K maps (eps, delta)-DP to
    ``(eps, gamma * delta)``-DP (strong Markov contraction of the hockey-stick divergence).

    Examples
    --------
    >>> b = theorem1_dobrushin(1.0, 1e-3, 0.5)
    >>> round(b.epsilon, 6), round(b.delta, 9)
    (1.0, 0.0005)
    """
    eps, d = _eps_delta(epsilon, delta)
    g = check_probability(gamma, "gamma")
    return Bound(eps, min(_product_up(g, d), 1.0), "theorem1.dobrushin", gamma=g, gamma_epsilon=0.0,
                 input_epsilon=eps, input_delta=d)


def hockey_stick_order(epsilon: float, delta: float) -> float:
    """The order ``eps~ = log(1 + (e^eps - 1) / delta)`` of Theorem 1(2) (Balle et al. 2019).

    ``delta = 0`` gives ``inf`` (footnote 3); ``epsilon = 0`` gives 0. Computed in
    log space, so eps up to 700 and beyond works. Rounded *down*: the
    (gamma, eps)-Dobrushin coefficient is non-increasing in eps, so a smaller
    order can only give a larger (safe) gamma.

    >>> round(hockey_stick_order(1.0, 0.1), 6), hockey_stick_order(1.0, 0.0)
    (2.900477, inf)
    """
    eps, d = _eps_delta(epsilon, delta)
    if eps == 0.0:
        return 0.0
    if d == 0.0:
        return math.inf
    a, b = log_expm1(eps), math.log(d)
    val = float(np.logaddexp(0.0, a - b))
    # the difference a - b carries an absolute error of a few ulps of |a| + |b| (it may cancel),
    # and logaddexp has slope <= 1: round down by that, plus a few ulps of the result
    err = 8 * 2.0**-53 * (abs(a) + abs(b) + abs(val))
    return max(0.0, math.nextafter(val - err, -math.inf))


def theorem1_hockey_stick(epsilon: float, delta: float, gamma: float, *, source: str = "theorem1.hockey_stick",
                          gamma_epsilon: float | None = None) -> Bound:
    """Theorem 1(2) of Balle et al. 2019: if K is (gamma, eps~)-Dobrushin with
    ``eps~ = hockey_stick_order(eps, delta)``, K o M is ``(eps, gamma * delta)``-DP.

    ``gamma`` must be the (gamma, eps~)-Dobrushin coefficient of K at that order
    (or any larger number, e.g. one taken at a smaller order). Applied at every
    point ``(eps', delta_M(eps'))`` of the input's privacy profile this is the
    tight black-box bound (``source="tight"``).

    Examples
    --------
    >>> round(theorem1_hockey_stick(1.0, 0.1, 0.2).delta, 9)
    0.02
    """
    eps, d = _eps_delta(epsilon, delta)
    g = check_probability(gamma, "gamma")
    order = hockey_stick_order(eps, d) if gamma_epsilon is None else gamma_epsilon
    return Bound(eps, min(_product_up(g, d), 1.0), source, gamma=g, gamma_epsilon=order,
                 input_epsilon=eps, input_delta=d)


def _amplified_epsilon(eps: float, gamma: float) -> float:
    """``log(1 + gamma (e^eps - 1))`` rounded up."""
    val = log1p_gamma_expm1(gamma, eps)
    if val == 0.0 and gamma > 0.0 and eps > 0.0:  # truly positive but underflowed
        return min(5e-324, eps)
    return min(round_up(val, 6), eps) if val < eps else eps


def theorem1_doeblin(epsilon: float, delta: float, gamma: float) -> Bound:
    """Theorem 1(3) of Balle et al. 2019 for a gamma-Doeblin K:
    ``eps' = log(1 + gamma (e^eps - 1))``, ``delta' = gamma (1 - e^(eps' - eps) (1 - delta))``.

    Since ``e^(eps' - eps) = 1 - (1 - gamma)(1 - e^-eps)``, delta' is evaluated as
    ``gamma (delta + (1 - delta)(1 - gamma)(1 - e^-eps))``: a sum of non-negative
    terms, without cancellation, then rounded up. Note delta' > 0 even for
    delta = 0 when gamma < 1 (see :func:`doeblin_amplifies_delta`).

    Examples
    --------
    >>> b = theorem1_doeblin(1.0, 0.0, 0.5)
    >>> round(b.epsilon, 6), round(b.delta, 6)
    (0.620115, 0.15803)
    """
    eps, d = _eps_delta(epsilon, delta)
    return _doeblin(eps, d, check_probability(gamma, "gamma"))


def _doeblin(eps: float, d: float, g: float) -> Bound:
    """:func:`theorem1_doeblin` of checked floats."""
    if g == 1.0:  # every operator is 1-Doeblin: plain post-processing, exactly (eps, delta)
        return Bound(eps, d, "theorem1.doeblin", gamma=g, input_epsilon=eps, input_delta=d)
    eps_p = _amplified_epsilon(eps, g)
    tail = -math.expm1(-eps) if math.isfinite(eps) else 1.0
    delta_p = g * (d + (1.0 - d) * (1.0 - g) * tail)
    return Bound(eps_p, _positive_up(delta_p, 8, g > 0 and (d > 0 or tail > 0) and g < 1), "theorem1.doeblin", gamma=g,
                 input_epsilon=eps, input_delta=d)


def theorem1_ultra_mixing(epsilon: float, delta: float, gamma: float) -> Bound:
    """Theorem 1(4) of Balle et al. 2019 for a gamma-ultra-mixing K:
    ``eps' = log(1 + gamma (e^eps - 1))``, ``delta' = gamma delta e^(eps' - eps)``.

    ``e^(eps' - eps)`` is evaluated as ``e^-eps + gamma (1 - e^-eps)`` (non-negative
    terms); the result is rounded up.

    Examples
    --------
    >>> b = theorem1_ultra_mixing(2.0, 1e-5, 1 - math.exp(-1))
    >>> round(b.epsilon, 3), round(b.delta, 9)
    (1.617, 4.31e-06)
    """
    eps, d = _eps_delta(epsilon, delta)
    g = check_probability(gamma, "gamma")
    if g == 1.0:  # plain post-processing: exactly (eps, delta)
        return Bound(eps, d, "theorem1.ultra_mixing", gamma=g, input_epsilon=eps, input_delta=d)
    eps_p = _amplified_epsilon(eps, g)
    e_neg = math.exp(-eps)
    beta = e_neg + g * (1.0 - e_neg)
    return Bound(eps_p, _positive_up(g * d * beta, 6, g > 0 and d > 0), "theorem1.ultra_mixing", gamma=g,
                 input_epsilon=eps, input_delta=d)


def doeblin_amplifies_delta(epsilon: float, delta: float, gamma: float) -> bool:
    """The condition stated after Theorem 1 (Balle et al. 2019): the Doeblin clause gives
    ``delta' <= delta`` exactly when ``gamma <= delta e^eps / ((1 - delta)(e^eps - 1))``.

    Evaluated as ``gamma (1 - delta)(1 - e^-eps) <= delta`` (same inequality divided by e^eps).

    >>> doeblin_amplifies_delta(1.0, 0.1, 0.1), doeblin_amplifies_delta(1.0, 0.0, 0.5)
    (True, False)
    """
    eps, d = _eps_delta(epsilon, delta)
    g = check_probability(gamma, "gamma")
    if eps == 0.0:
        return True
    return g * (1.0 - d) * (-math.expm1(-eps)) <= d


def doeblin_frontier(epsilon: float, delta: float, gamma0: float, num: int = 65) -> list[Bound]:
    """Theorem 1(3) over the whole freedom of its gamma (Balle et al. 2019).

    A gamma0-Doeblin operator is gamma-Doeblin for every gamma in [gamma0, 1]:
    eps'(gamma) increases with gamma while delta'(gamma) is not monotone, so each
    gamma gives a different valid pair. Returns the Pareto-optimal bounds among
    ``num`` gammas spaced in [gamma0, 1], both ends included. With
    ``x = 1 - e^-eps``, ``delta'(gamma) = gamma delta + (1 - delta) x (gamma - gamma^2)``
    is concave, so its minimum over the interval is at an end point (gamma = 1
    gives back ``(eps, delta)``). Every listed pair is valid; the grid only
    decides which of the valid pairs are shown.

    >>> [(round(b.epsilon, 3), round(b.delta, 3)) for b in doeblin_frontier(1.0, 0.0, 0.5, num=3)]
    [(0.62, 0.158), (0.828, 0.119), (1.0, 0.0)]
    """
    eps, d = _eps_delta(epsilon, delta)
    g0 = check_probability(gamma0, "gamma0")
    cands = [_doeblin(eps, d, g) for g in _frontier_gammas(g0, max(int(num), 2))]
    cands.sort(key=lambda b: (b.epsilon, b.delta))
    front: list[Bound] = []
    for b in cands:
        if not front or b.delta < front[-1].delta:
            front.append(b)
    return front


@functools.lru_cache(maxsize=64)
def _frontier_gammas(g0: float, num: int) -> tuple[float, ...]:
    """The gammas of :func:`doeblin_frontier`: ``num`` spaced in [g0, 1], both ends included, ascending."""
    return tuple(float(g) for g in np.unique(np.concatenate((np.linspace(g0, 1.0, num), [g0, 1.0]))))


def ldp_bound(epsilon: float, gamma: float) -> Bound:
    """K's own local-DP guarantee carried to K o M (post-processing; the LDP table).

    If K is (gamma, eps)-Dobrushin it is (eps, gamma)-LDP over all input pairs,
    so K o M is ``(eps, gamma)``-DP for ANY input mechanism M.

    >>> ldp_bound(1.0, 0.25).delta
    0.25
    """
    eps = check_epsilon(epsilon, "epsilon")
    g = check_probability(gamma, "gamma")
    return Bound(eps, g, "ldp", gamma=g, gamma_epsilon=eps)


def tight_pure_epsilon(epsilon: float, epsilon_k: float) -> float:
    """Tight pure-DP bound for an eps-DP input followed by an eps_K-LDP operator K:
    ``eps' = log((1 + e^(eps + eps_K)) / (e^eps + e^eps_K))``.

    Derivation: with delta' = 0 the tight black-box bound needs
    ``max D_{c~}(K_x || K_x') = 0`` at ``c~ = 1 + (e^eps' - 1) / alpha``, where the
    canonical pure pair has ``alpha(eps') = (e^eps - e^eps') / (1 + e^eps)``; the
    worst pair is zero exactly when ``c~ >= e^eps_K``, and solving
    ``1 + (e^eps' - 1)(1 + e^eps) / (e^eps - e^eps') = e^eps_K`` for eps' gives the
    formula. It is symmetric in (eps, eps_K) and below both. Computed with
    logaddexp; rounded up.

    >>> round(tight_pure_epsilon(2.0, 1.0), 4)
    0.7353
    """
    eps = check_epsilon(epsilon, "epsilon")
    ek = check_epsilon(epsilon_k, "epsilon_k")
    if math.isinf(eps) or math.isinf(ek):
        return min(eps, ek)
    if max(eps, ek) < 300.0:
        # (1 + e^(a+b)) - (e^a + e^b) = (e^a - 1)(e^b - 1): a cancellation-free form, all terms >= 0
        x = math.expm1(eps) * math.expm1(ek) / (math.exp(eps) + math.exp(ek))
        val = math.log1p(x)
        if val < 1e-290:  # x may have underflowed (subnormal or 0): absolute slack, and 0 only if exact
            return min(val + 8 * 5e-324, eps, ek) if eps > 0.0 and ek > 0.0 else 0.0
        return min(round_up(val, 10), eps, ek)
    val = float(np.logaddexp(0.0, eps + ek) - np.logaddexp(eps, ek))
    return min(round_up(max(val, 0.0), 8, scale=eps + ek), eps, ek)
