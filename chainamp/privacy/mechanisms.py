"""A catalogue of finite local randomizers as Markov operators.

Each function returns a :class:`~chainamp.MarkovOperator` whose rows are the
true values and whose columns are the reports, with meaningful labels. Its
docstring gives the matrix, the exact local-DP epsilon (the largest
``log K(x, y) / K(x', y)`` over all pairs of inputs and all outputs) and the
source. Probabilities are computed in a form that neither overflows nor loses
the small entries for large epsilon (``e^-eps`` instead of ``e^eps``).

Used as the namespace ``chainamp.mechanisms``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._rappor_epsilon import _rappor_eps_inf, _rappor_eps_one
from .._numerics import (expit, check_epsilon, check_float_array, check_int, check_positive,
                         check_probability)
from ..errors import InvalidParameterError
from ..operators import KroneckerOperator, MarkovOperator, SymmetricChannel, kron

__all__ = [
    "binary_randomized_response",
    "randomized_response",
    "nu_randomized_response",
    "rappor_permanent",
    "rappor_instantaneous",
    "RapporPipeline",
    "rappor_pipeline",
    "symmetric_unary_encoding",
    "optimized_unary_encoding",
    "exponential_mechanism",
]

#: Largest Bloom-filter length of the dense operators of :func:`rappor_pipeline` (2^m x 2^m matrices);
#: longer filters are kept as Kronecker products (:class:`~chainamp.operators.KroneckerOperator`).
RAPPOR_MAX_BITS = 10

_BITS = (0, 1)


def _bit_channel(p0: float, p1: float, *, not_p0: float | None = None,
                 not_p1: float | None = None) -> MarkovOperator:
    """Binary channel: report 1 w.p. p0 when the bit is 0, w.p. p1 when it is 1 (labels 0, 1).

    ``not_p0`` / ``not_p1`` give ``1 - p0`` / ``1 - p1`` when they are known more accurately
    than the subtraction (``expit(-eps)`` rather than ``1 - expit(eps)``, which is 0 for eps > 37).
    """
    r0 = 1.0 - p0 if not_p0 is None else not_p0
    r1 = 1.0 - p1 if not_p1 is None else not_p1
    return MarkovOperator([[r0, p0], [r1, p1]], _BITS, _BITS)


# ------------------------------------------------------------ randomized response
def binary_randomized_response(epsilon: float) -> SymmetricChannel:
    """Warner's randomized response on one bit, tuned to epsilon.

    ``K = [[e^eps, 1], [1, e^eps]] / (e^eps + 1)`` on labels ``(0, 1)``: the true bit is
    reported with probability ``e^eps / (e^eps + 1)``.

    Exact LDP epsilon: ``epsilon`` (the ratio of the two entries of a column).
    Source: Warner (1965); the epsilon-DP parametrisation is the k = 2 case of
    :func:`randomized_response`.

    Parameters
    ----------
    epsilon : float
        Finite, ``>= 0``.

    Examples
    --------
    >>> binary_randomized_response(math.log(3)).matrix.round(4).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    eps = check_epsilon(epsilon, allow_inf=False)
    keep, flip = float(expit(eps)), float(expit(-eps))  # no cancellation: expit(-eps), not 1 - expit(eps)
    return SymmetricChannel(2, keep, flip, _BITS)  # the 2-ary symmetric channel, structured like k-RR


def randomized_response(k: int, epsilon: float, labels: Sequence[Hashable] | None = None) -> SymmetricChannel:
    """k-ary (generalized) randomized response, k-RR / GRR.

    ``K(x, x) = e^eps / (e^eps + k - 1)``, ``K(x, y) = 1 / (e^eps + k - 1)`` for ``y != x``;
    inputs and outputs are ``labels`` (default ``range(k)``). Returned as a structured
    :class:`~chainamp.operators.SymmetricChannel` (two numbers, whatever k): coefficients, exact
    profiles and products with other k-RRs never form the k x k matrix; ``.matrix`` forms it on
    request (size-checked), so k = 10^6 works as well as k = 4.

    Exact LDP epsilon: ``epsilon`` (``K(x, x) / K(x', x) = e^eps``, all other ratios 1).
    Source: Kairouz, Oh, Viswanath (2016), "Discrete distribution estimation under local
    privacy"; Wang et al. (2017), "Locally differentially private protocols for frequency
    estimation" (GRR / direct encoding).

    Parameters
    ----------
    k : int
        Number of values, ``>= 2``.
    epsilon : float
        Finite, ``>= 0``.
    labels : sequence of hashable, optional
        ``k`` distinct labels.

    Examples
    --------
    >>> randomized_response(3, math.log(2), labels=["a", "b", "c"]).matrix.round(4).tolist()
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]
    """
    k = check_int(k, "k", minimum=2)
    eps = check_epsilon(epsilon, allow_inf=False)
    if labels is not None:
        if isinstance(labels, (str, bytes)):
            raise TypeError(f"labels must be a sequence of labels, not a string ({labels!r})")
        labels = tuple(labels)
        if len(labels) != k:
            raise InvalidParameterError(f"labels must have k={k} entries (got {len(labels)})")
    # divide by e^eps: 1 / (1 + (k-1) e^-eps) and e^-eps / (1 + (k-1) e^-eps) never overflow
    return SymmetricChannel.from_epsilon(k, eps, labels)


def nu_randomized_response(nu: float) -> MarkovOperator:
    """nu-randomized response: with probability nu tell the truth, else answer a fair coin.

    ``P[report 1 | x] = (1 - nu) / 2 + nu x``, so ``K = [[(1 + nu)/2, (1 - nu)/2],
    [(1 - nu)/2, (1 + nu)/2]]`` on labels ``(0, 1)``; nu = 1/2 is Warner's coin-flip survey.

    Exact LDP epsilon: ``log((1 + nu) / (1 - nu))`` (infinite for nu = 1), which is at most
    ``2 nu / (1 - nu)``; equivalently nu = tanh(eps / 2) gives :func:`binary_randomized_response`.
    Source: Warner (1965) with the truth-telling probability as a parameter, the form in which
    randomized response is usually taught in differential-privacy courses.

    Parameters
    ----------
    nu : float
        Probability of answering truthfully, in ``[0, 1]``.

    Examples
    --------
    >>> nu_randomized_response(0.5).matrix.round(4).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    nu = check_probability(nu, "nu")
    return _bit_channel((1.0 - nu) / 2.0, (1.0 + nu) / 2.0)


# ------------------------------------------------------------------------ RAPPOR
def rappor_permanent(f: float = 0.5) -> MarkovOperator:
    """RAPPOR's permanent randomized response on one Bloom-filter bit.

    The bit b is kept with probability ``1 - f``, else replaced by a fair random bit:
    ``K = [[1 - f/2, f/2], [f/2, 1 - f/2]]`` on labels ``(0, 1)`` (the published default is
    f = 0.5).

    Exact LDP epsilon of one bit: ``log((1 - f/2) / (f/2))``. A value whose Bloom filter has h
    ones differs from another in at most 2h bits, hence ``eps_inf = 2 h log((1 - f/2) / (f/2))``
    for the m-bit product (exact when two filters with disjoint ones exist, m >= 2h).
    Source: Erlingsson, Pihur, Korolova (2014), RAPPOR, Section 3.

    Parameters
    ----------
    f : float
        In ``[0, 1]``.

    Examples
    --------
    >>> rappor_permanent(0.5).matrix.round(4).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    f = check_probability(f, "f")
    return _bit_channel(f / 2.0, 1.0 - f / 2.0)


def rappor_instantaneous(p: float = 0.5, q: float = 0.75) -> MarkovOperator:
    """RAPPOR's instantaneous randomized response on one bit of the permanent report.

    Report 1 with probability q when the permanent bit is 1 and with probability p when it is
    0: ``K = [[1 - p, p], [1 - q, q]]`` on labels ``(0, 1)`` (published defaults p = 0.5,
    q = 0.75). It is a Markov operator applied to the output of :func:`rappor_permanent`:
    privacy amplification by post-processing in its plainest form.

    Exact LDP epsilon of one bit on its own: ``max(|log(q/p)|, |log((1-q)/(1-p))|)``.
    Source: Erlingsson, Pihur, Korolova (2014), RAPPOR, Section 3.

    Parameters
    ----------
    p, q : float
        In ``[0, 1]`` and different (p = q makes the report independent of the bit).

    Examples
    --------
    >>> rappor_instantaneous(0.5, 0.75).matrix.round(4).tolist()
    [[0.5, 0.5], [0.25, 0.75]]
    """
    p, q = _check_pq(p, q)
    return _bit_channel(p, q)


def _check_pq(p: Any, q: Any) -> tuple[float, float]:
    p = check_probability(p, "p")
    q = check_probability(q, "q")
    if p == q:
        raise InvalidParameterError(f"p and q must differ, or the report ignores the bit (got p = q = {p!r})")
    return p, q


@dataclass(frozen=True)
class RapporPipeline:
    """RAPPOR on m-bit Bloom filters as two Markov operators (see :func:`rappor_pipeline`).

    Labels: a Bloom filter or a report is the m-tuple of its bits ``(b_0, ..., b_{m-1})``, bit i at
    position i; rows and columns run through all 2^m tuples in lexicographic order (``(0, ..., 0)``,
    ``(0, ..., 0, 1)``, ..., ``(1, ..., 1)``: the last bit varies fastest, as in :func:`kron`).

    Attributes
    ----------
    permanent : MarkovOperator
        ``rappor_permanent(f)`` on each of the m bits (Kronecker product), 2^m x 2^m over bit tuples
        (a :class:`~chainamp.operators.KroneckerOperator` when ``structured``).
    instantaneous : MarkovOperator
        ``rappor_instantaneous(p, q)`` on each bit, 2^m x 2^m over bit tuples.
    bloom_filters : sequence of tuple
        The possible true Bloom filters (the inputs of ``mechanism``); by default every filter
        with h ones, ordered by the positions of its ones (``itertools.combinations``; a lazy
        sequence when ``structured``).
    epsilon_inf, epsilon_one : float
        The paper's bounds for the permanent report and for one instantaneous report, rounded up.
    q_star, p_star : float
        ``P[report 1 | true bit 1]`` and ``P[report 1 | true bit 0]`` of one report.
    structured : bool
        The operators are Kronecker products kept as their factors (no 2^m matrix is formed).
    """

    m: int
    h: int
    f: float
    p: float
    q: float
    permanent: MarkovOperator
    instantaneous: MarkovOperator
    bloom_filters: tuple
    epsilon_inf: float
    epsilon_one: float
    q_star: float
    p_star: float
    structured: bool = False
    _mechanism: MarkovOperator | None = field(default=None, repr=False, compare=False)

    @property
    def values(self) -> tuple:
        """The possible true inputs: the same tuple as ``bloom_filters``."""
        return self.bloom_filters

    @property
    def mechanism(self) -> MarkovOperator:
        """The permanent step restricted to the Bloom filters: the input mechanism M."""
        if self._mechanism is not None:
            return self._mechanism
        return self.permanent.restrict(self.bloom_filters)

    @property
    def one_report(self) -> MarkovOperator:
        """``mechanism @ instantaneous``: the distribution of one report given the true filter."""
        return self.mechanism @ self.instantaneous


def _check_bloom_filters(values: Any, m: int, h: int) -> tuple:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"bloom_filters must be a sequence of bit vectors, not a string ({values!r})")
    out = []
    for i, v in enumerate(values):
        try:
            bits = tuple(int(b) for b in v)
        except (TypeError, ValueError):
            raise TypeError(f"bloom_filters[{i}] must be a sequence of bits 0/1 (got {v!r})") from None
        if len(bits) != m or any(b not in (0, 1) for b in bits) or any(b != x for b, x in zip(bits, v)):
            raise InvalidParameterError(f"bloom_filters[{i}] must be {m} bits 0/1 (got {v!r})")
        if not 1 <= sum(bits) <= h:
            raise InvalidParameterError(
                f"bloom_filters[{i}] must have between 1 and h={h} ones (got {sum(bits)} in {v!r})")
        out.append(bits)
    if not out:
        raise InvalidParameterError("bloom_filters must not be empty")
    if len(set(out)) != len(out):
        raise InvalidParameterError("bloom_filters must be distinct")
    return tuple(out)


def _bitwise(op: MarkovOperator, m: int) -> MarkovOperator:
    """The per-bit operator applied to each of m bits, labels m-tuples of bits (also for m = 1)."""
    if m == 1:
        labels = [(0,), (1,)]
        return MarkovOperator(op.matrix, labels, labels)
    return kron(*[op] * m)


def rappor_pipeline(m: int, h: int, f: float = 0.5, p: float = 0.5, q: float = 0.75, *,
                    bloom_filters: Sequence[Sequence[int]] | None = None,
                    structured: bool | None = None) -> RapporPipeline:
    """RAPPOR (Erlingsson, Pihur, Korolova 2014) on m-bit Bloom filters with h hash functions.

    A value is encoded as a Bloom filter B (m bits, h of them set); the permanent randomized
    response ``B -> B'`` flips to a fair random bit with probability f on each bit, and each
    report draws ``S`` from ``B'`` bit by bit, ``P[S_i = 1] = q`` if ``B'_i = 1`` else p.
    Both steps are Kronecker products (:func:`chainamp.kron`) of the per-bit operators
    :func:`rappor_permanent` and :func:`rappor_instantaneous`; labels are m-tuples of bits.
    Published defaults: f = 0.5, p = 0.5, q = 0.75 (the paper's experiments use h = 2).

    Privacy (Section 3 of the paper), with neighbouring values any two Bloom filters:

    - permanent report: ``eps_inf = 2 h log((1 - f/2) / (f/2))``;
    - one report: ``eps_1 = h log(q* (1 - p*) / (p* (1 - q*)))``, where one report has
      ``q* = P[S_i = 1 | B_i = 1] = f (p + q) / 2 + (1 - f) q`` and
      ``p* = P[S_i = 1 | B_i = 0] = f (p + q) / 2 + (1 - f) p``: composing the two per-bit
      matrices gives ``(1 - f/2) q + (f/2) p`` and ``(f/2) q + (1 - f/2) p``, i.e. these.
      Two filters with disjoint ones differ in h bits each way; each contributes the larger
      column ratio ``q*/p*`` or ``(1 - p*)/(1 - q*)`` of its direction, whose product is the
      formula (absolute value when q < p).

    Both are exact for the set of all filters with h ones when ``m >= 2 h``; with fewer bits or
    a custom list of filters they are upper bounds.

    Beyond ``m = 10`` (or with ``structured=True``) the operators are Kronecker products kept as
    factors (:class:`~chainamp.operators.KroneckerOperator`; ``one_report`` too): profiles, coefficients
    and :func:`chainamp.amplify` work per type of pair of filters (a bits differ each way, a <= h), so
    at the deployed m = 128, h = 2 the exact profile's pure epsilon is eps_1 / eps_inf in milliseconds.

    Parameters
    ----------
    m : int
        Bloom filter length, ``>= 1`` (``<= 10`` for the dense operators, 2^m x 2^m).
    h : int
        Number of hash functions, ``1 <= h <= m``.
    f, p, q : float
        Probabilities in ``[0, 1]``, ``p != q``.
    bloom_filters : sequence of bit sequences, optional
        The possible true filters (each of length m with between 1 and h ones: hash collisions
        can merge bits); default every filter with exactly h ones.
    structured : bool, optional
        Keep the operators as Kronecker products (default: when ``m > 10``; False is refused then).

    Examples
    --------
    >>> R = rappor_pipeline(4, 2)
    >>> len(R.bloom_filters), R.one_report.shape, round(R.epsilon_inf, 4), round(R.epsilon_one, 4)
    (6, (6, 16), 4.3944, 1.0743)
    >>> from chainamp import privacy_profile
    >>> big = rappor_pipeline(128, 2)
    >>> big.one_report.shape[0], privacy_profile(big.one_report).pure_epsilon - big.epsilon_one < 1e-12
    (8128, True)
    """
    m = check_int(m, "m", minimum=1)
    if structured is not None and not isinstance(structured, (bool, np.bool_)):
        raise TypeError(f"structured must be None or a bool, got {type(structured).__name__} {structured!r}")
    structured = m > RAPPOR_MAX_BITS if structured is None else bool(structured)
    if m > RAPPOR_MAX_BITS and not structured:
        raise InvalidParameterError(f"m must be <= {RAPPOR_MAX_BITS} for dense 2^m x 2^m operators (got {m}); "
                                    "leave structured=None (or True) to keep them as Kronecker products")
    h = check_int(h, "h", minimum=1)
    if h > m:
        raise InvalidParameterError(f"h must be <= m={m} (got {h})")
    f = check_probability(f, "f")
    p, q = _check_pq(p, q)
    mech = None
    if structured:
        permanent = KroneckerOperator.power(rappor_permanent(f), m)
        instantaneous = KroneckerOperator.power(rappor_instantaneous(p, q), m)
        if bloom_filters is None:
            mech = KroneckerOperator.fixed_weight(rappor_permanent(f), m, h)
            filters = mech.inputs
        else:
            filters = _check_bloom_filters(bloom_filters, m, h)
    else:
        permanent, instantaneous = _bitwise(rappor_permanent(f), m), _bitwise(rappor_instantaneous(p, q), m)
        if bloom_filters is None:
            filters = tuple(tuple(1 if i in ones else 0 for i in range(m))
                            for ones in itertools.combinations(range(m), h))
        else:
            filters = _check_bloom_filters(bloom_filters, m, h)
    q_star = 0.5 * f * (p + q) + (1.0 - f) * q
    p_star = 0.5 * f * (p + q) + (1.0 - f) * p
    eps_inf = _rappor_eps_inf(f, h)  # rounded up, like every epsilon chainamp reports
    eps_one = _rappor_eps_one(f, p, q, q_star, p_star, h)
    return RapporPipeline(
        m=m, h=h, f=f, p=p, q=q, permanent=permanent, instantaneous=instantaneous,
        bloom_filters=filters, epsilon_inf=eps_inf,
        epsilon_one=eps_one if math.isfinite(eps_one) else math.inf,
        q_star=q_star, p_star=p_star, structured=structured, _mechanism=mech,
    )


# -------------------------------------------------------------- unary encoding
def symmetric_unary_encoding(epsilon: float) -> MarkovOperator:
    """Symmetric unary encoding (SUE, basic one-time RAPPOR), the channel on one bit.

    A value in ``{1..d}`` is one-hot encoded and each bit reported independently:
    ``P[1 | bit 1] = p = e^{eps/2} / (e^{eps/2} + 1)``, ``P[1 | bit 0] = q = 1 - p``;
    ``K = [[1 - q, q], [1 - p, p]]`` on labels ``(0, 1)``.

    Exact LDP epsilon: ``epsilon`` for the d-bit product on one-hot inputs (two one-hot
    vectors differ in two bits, each contributing ``log(p/q) = eps/2``); the per-bit channel
    alone is ``eps/2``-LDP. Source: Wang, Blocki, Li, Jha (2017), "Locally differentially
    private protocols for frequency estimation", Section 4.

    Parameters
    ----------
    epsilon : float
        Finite, ``>= 0``.

    Examples
    --------
    >>> symmetric_unary_encoding(2 * math.log(3)).matrix.round(4).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    eps = check_epsilon(epsilon, allow_inf=False)
    p, q = float(expit(eps / 2.0)), float(expit(-eps / 2.0))
    return _bit_channel(q, p, not_p0=p, not_p1=q)


def optimized_unary_encoding(epsilon: float) -> MarkovOperator:
    """Optimized unary encoding (OUE), the channel on one bit.

    ``P[1 | bit 1] = p = 1/2``, ``P[1 | bit 0] = q = 1 / (e^eps + 1)``;
    ``K = [[1 - q, q], [1/2, 1/2]]`` on labels ``(0, 1)``.

    Exact LDP epsilon: ``epsilon`` for the d-bit product on one-hot inputs
    (``log(p (1 - q) / ((1 - p) q)) = log((1 - q)/q) = eps``); the per-bit channel alone is
    ``log((e^eps + 1) / 2)``-LDP. Source: Wang, Blocki, Li, Jha (2017), Section 4.

    Parameters
    ----------
    epsilon : float
        Finite, ``>= 0``.

    Examples
    --------
    >>> optimized_unary_encoding(math.log(3)).matrix.round(4).tolist()
    [[0.75, 0.25], [0.5, 0.5]]
    """
    eps = check_epsilon(epsilon, allow_inf=False)
    return _bit_channel(float(expit(-eps)), 0.5, not_p0=float(expit(eps)))



# ------------------------------------------------------------ exponential mechanism
def exponential_mechanism(utility: Any, epsilon: float, sensitivity: float | None = None, *,
                          inputs: Sequence[Hashable] | None = None,
                          outputs: Sequence[Hashable] | None = None) -> MarkovOperator:
    """The exponential mechanism of a utility matrix (rows = data values, columns = outputs).

    ``K(x, y) = exp(eps u(x, y) / (2 Delta)) / sum_y' exp(eps u(x, y') / (2 Delta))``, computed
    with the row maximum subtracted first (no overflow, no underflow of the largest entry).

    Exact LDP epsilon: at most ``epsilon`` for neighbouring values whose utilities differ by at
    most Delta in every column (McSherry & Talwar 2007, Theorem 6): the numerator ratio is at
    most ``e^{eps/2}`` and the normaliser ratio at most ``e^{eps/2}``. It can be smaller, e.g.
    ``eps/2`` when every row has the same normaliser (such as ``u = identity``).

    Parameters
    ----------
    utility : array_like, shape (n, m)
        Finite utilities.
    epsilon : float
        Finite, ``>= 0``.
    sensitivity : float, optional
        Delta. Default: the all-pairs sensitivity ``max_y (max_x u(x, y) - min_x u(x, y))``, for
        which every pair of inputs is neighbouring (local DP). A smaller value given here is the
        caller's claim for a sparser neighbour relation, and the epsilon guarantee holds only for
        pairs whose utilities differ by at most it. When Delta = 0 all rows are equal and ``K`` is
        0-LDP whatever epsilon.
    inputs, outputs : sequence of hashable, optional
        Labels (default ``range(n)`` / ``range(m)``).

    Examples
    --------
    >>> exponential_mechanism([[1.0, 0.0], [0.0, 1.0]], 2 * math.log(3)).matrix.round(4).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    u = check_float_array(utility, "utility", ndim=2, finite=True)
    eps = check_epsilon(epsilon, allow_inf=False)
    spread = float(np.max(u.max(axis=0) - u.min(axis=0)))
    delta_u = spread if sensitivity is None else check_positive(sensitivity, "sensitivity")
    if delta_u == 0.0:
        scores = np.zeros_like(u)
    else:
        with np.errstate(over="ignore"):
            scores = (eps / (2.0 * delta_u)) * u
        if not np.all(np.isfinite(scores)):
            raise InvalidParameterError(
                f"epsilon * utility / (2 * sensitivity) overflows (sensitivity={delta_u!r} is too small "
                "for utilities of this size)")
    scores -= scores.max(axis=1, keepdims=True)
    w = np.exp(scores)
    return MarkovOperator(w / w.sum(axis=1, keepdims=True), inputs, outputs)
