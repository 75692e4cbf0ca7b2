"""Input adapters: the randomizers of pure-ldp and multi-freq-ldpy as chainamp finite mechanisms.

:func:`from_pure_ldp` reads the attributes of a pure-ldp client object (direct encoding, unary
encoding, RAPPOR) and returns the :class:`~chainamp.MarkovOperator` its ``privatise`` method
samples from. :func:`from_multi_freq_ldpy` rebuilds a multi-freq-ldpy protocol (GRR, SUE, OUE)
or longitudinal chain (L-GRR, L-SUE, L-OUE, L-OSUE, L-SOUE) from its name and epsilons, with the
parameters the library derives, as an operator or a :class:`LongitudinalPipeline` (first stage,
meant to be memoized - the library's own clients redraw it at every call -, then the second stage).

Neither library is imported: the adapters read attributes and re-derive the library's published
formulas, so both stay test-only peers. The adapters model what the libraries' samplers do, which
is checked in ``tests/privacy/test_adapters.py`` against samples drawn from the libraries' own
clients; ``chainamp.ldp_guarantee`` / ``chainamp.privacy_profile`` of the result then certify the
epsilon the library states, or show where it differs.

Used through the namespace ``chainamp.mechanisms``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from .._numerics import expit, check_choice, check_int, check_positive, check_probability
from ..errors import InvalidParameterError
from ..operators import MarkovOperator, SymmetricChannel
from .mechanisms import RAPPOR_MAX_BITS, _bit_channel, _bitwise

__all__ = ["LongitudinalPipeline", "from_pure_ldp", "from_multi_freq_ldpy", "MULTI_FREQ_LDPY_PROTOCOLS"]

#: Protocol names :func:`from_multi_freq_ldpy` accepts (multi-freq-ldpy's module names, dash after ``L``).
MULTI_FREQ_LDPY_PROTOCOLS = ("GRR", "SUE", "OUE", "L-GRR", "L-SUE", "L-OUE", "L-OSUE", "L-SOUE")

#: pure-ldp client classes :func:`from_pure_ldp` understands (subclasses included).
_PURE_LDP_CLIENTS = ("DEClient", "UEClient", "RAPPORClient")


@dataclass(frozen=True)
class LongitudinalPipeline:
    """A multi-freq-ldpy longitudinal protocol as two Markov operators (see :func:`from_multi_freq_ldpy`).

    The protocols are designed so that the first stage is drawn once per user and memoized (RAPPOR's
    permanent randomized response) and each report applies the second stage to it afresh.
    ``mechanism`` is the input mechanism M and ``instantaneous`` the post-processing K of
    ``chainamp.amplify(M, K)``.

    Warning: multi-freq-ldpy's own clients (``L_GRR_Client`` and the other ``L_*_Client``) draw BOTH stages
    at every call: they do not keep the first-stage draw, so T calls of the library are T fresh
    draws of the whole chain (checked by sampling: P(y1 == y2) matches the fresh model, 17 standard
    errors from the memoized one). The protocols are designed to be memoized (Arcolezi et al. 2022);
    memoization is the caller's job. Certify what you deploy: ``amplify_reports(...,
    memoized=False)`` for the library's clients as shipped, ``memoized=True`` only if you store the
    first-stage draw.

    Attributes
    ----------
    protocol : str
        One of ``"L-GRR"``, ``"L-SUE"``, ``"L-OUE"``, ``"L-OSUE"``, ``"L-SOUE"``.
    k : int
        Domain size; the inputs are multi-freq-ldpy's values ``0, ..., k-1``.
    eps_perm, eps_1 : float
        The library's stated guarantees: ``eps_perm`` for the permanent report (any number of
        reports), ``eps_1`` for one report.
    p1, q1, p2, q2 : float
        The library's parameters: for L-GRR the probabilities of keeping the value and of each
        other value; for the unary encodings ``P[bit reported 1 | bit 1]`` and ``P[... | bit 0]``,
        stage 1 then stage 2.
    mechanism : MarkovOperator
        Stage 1, rows the k values; columns the k values (L-GRR) or the 2^k bit tuples
        ``(b_0, ..., b_{k-1})``, bit i for value i, last bit fastest as in :func:`chainamp.kron`.
    instantaneous : MarkovOperator
        Stage 2, square on the outputs of stage 1.
    """

    protocol: str
    k: int
    eps_perm: float
    eps_1: float
    p1: float
    q1: float
    p2: float
    q2: float
    mechanism: MarkovOperator
    instantaneous: MarkovOperator

    @property
    def values(self) -> tuple:
        """The true values ``0, ..., k-1`` (the rows of ``mechanism``)."""
        return self.mechanism.inputs

    @property
    def steps(self) -> tuple[MarkovOperator, MarkovOperator]:
        """``(mechanism, instantaneous)``: the operators in the order they are applied."""
        return (self.mechanism, self.instantaneous)

    @property
    def one_report(self) -> MarkovOperator:
        """``mechanism @ instantaneous``: the distribution of one report given the true value."""
        return self.mechanism @ self.instantaneous


# ------------------------------------------------------------------ shared builders
def _grr(k: int, keep: float, other: float, labels: Sequence[Hashable]) -> MarkovOperator:
    """k x k operator with ``keep`` on the diagonal and ``other`` elsewhere, kept by its structure
    (:class:`~chainamp.operators.SymmetricChannel`: two doubles; coefficients, profiles and reports per orbit
    of input pairs, and ``.matrix`` densifies on request)."""
    return SymmetricChannel(k, keep, other, labels)


def _check_bits(n: int, name: str) -> int:
    if n > RAPPOR_MAX_BITS:
        raise InvalidParameterError(
            f"{name} must be <= {RAPPOR_MAX_BITS} (the reports are {name}-bit vectors, 2^{name} outputs; got {n})")
    return n


def _bit_rows(ones: Sequence[Sequence[int]], bit: MarkovOperator, n: int) -> np.ndarray:
    """Rows ``prod_j bit(b_j -> s_j)`` over all n-bit reports s (last bit fastest), one per bit vector b."""
    return np.array([reduce(np.kron, [bit.matrix[b[j]] for j in range(n)]) for b in ones])


def _one_hot(k: int) -> list[tuple[int, ...]]:
    return [tuple(int(j == i) for j in range(k)) for i in range(k)]


def _bit_labels(n: int) -> list[tuple[int, ...]]:
    return list(itertools.product((0, 1), repeat=n))


# ---------------------------------------------------------------------- pure-ldp
def _pure_ldp_kind(client: Any) -> str:
    for cls in type(client).__mro__:
        if cls.__module__.split(".")[0] == "pure_ldp" and cls.__qualname__ in _PURE_LDP_CLIENTS:
            return cls.__qualname__
    raise TypeError(f"client must be a pure-ldp DEClient, UEClient or RAPPORClient (or a subclass), "
                    f"got {type(client).__module__}.{type(client).__qualname__}")


def _values(client: Any, values: Any, d: int | None) -> tuple:
    if values is None:
        if d is None:
            raise InvalidParameterError(
                "values must be given: this client has no domain size d (pass the data items it privatises)")
        return tuple(range(1, d + 1))  # pure-ldp's default index_mapper maps x to x - 1
    if isinstance(values, (str, bytes)):
        raise TypeError(f"values must be a sequence of data items, not a string ({values!r})")
    values = tuple(values)
    if not values:
        raise InvalidParameterError("values must not be empty")
    return values


def _indices(client: Any, values: tuple, d: int) -> list[int]:
    out = []
    for v in values:
        i = client.index_mapper(v)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < d:
            raise InvalidParameterError(
                f"values: client.index_mapper({v!r}) = {i!r} is not an index in 0..{d - 1} (pass the data items "
                "the client privatises; its default index_mapper takes 1..d)")
        out.append(int(i))
    return out


def from_pure_ldp(client: Any, values: Sequence[Hashable] | None = None) -> MarkovOperator:
    """The finite mechanism a pure-ldp client's ``privatise`` samples from.

    Rows are the data items ``values`` (default ``1, ..., d``, which pure-ldp's default
    ``index_mapper`` maps to ``0, ..., d-1``); columns are what ``privatise`` returns.

    - ``DEClient`` (direct encoding, k-RR; Wang et al. 2017): ``K(x, j) = p`` if ``j`` is the index
      of x, else ``q = (1 - p) / (d - 1)`` (its attributes ``p``, ``q``); outputs the indexes
      ``0, ..., d-1``. Exact LDP epsilon: ``log(p / q) = client.epsilon``.
    - ``UEClient`` (unary encoding; SUE, or OUE when ``use_oue``; Wang et al. 2017): the one-hot
      vector of the index, each bit reported 1 with probability ``p`` if set, ``q`` if not;
      outputs the d-bit tuples (last bit fastest, as :func:`chainamp.kron`). Exact LDP epsilon:
      ``log(p (1 - q) / ((1 - p) q)) = client.epsilon``.
    - ``RAPPORClient`` (Erlingsson, Pihur, Korolova 2014, permanent randomized response only, as
      pure-ldp implements it): a uniform cohort c, the Bloom filter of the index under the cohort's
      hash functions (``func(str(index))``), then each bit randomized; outputs ``(c, bits)``.
      pure-ldp's ``_perturb`` only ever *sets* bits: a 0 becomes 1 with probability ``f/2``, but
      a 1 stays 1 (the paper turns it into 0 with probability ``f/2``). The per-bit channel sampled is
      ``[[1 - f/2, f/2], [0, 1]]``, so two values whose filters differ in a cohort are not
      epsilon-LDP for any finite epsilon, whatever the stated ``2 h log((1 - f/2) / (f/2))``.
      The published mechanism is :func:`chainamp.mechanisms.rappor_pipeline` with the filters of
      one cohort as ``bloom_filters``.

    Parameters
    ----------
    client : pure_ldp DEClient, UEClient or RAPPORClient
        Read, never called except ``index_mapper`` and the RAPPOR hash functions.
    values : sequence of hashable, optional
        The data items (distinct); required for RAPPOR clients (which have no ``d``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> DEClient = type("DEClient", (), {"__module__": "pure_ldp.frequency_oracles"})
    >>> c = DEClient(); c.d, c.p, c.q, c.index_mapper = 3, 0.5, 0.25, lambda x: x - 1
    >>> from_pure_ldp(c).matrix.tolist()
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]
    """
    kind = _pure_ldp_kind(client)
    if kind == "RAPPORClient":
        return _pure_ldp_rappor(client, values)
    d = check_int(client.d, "client.d", minimum=2)
    p = check_probability(client.p, "client.p")
    q = check_probability(client.q, "client.q")
    vals = _values(client, values, d)
    idx = _indices(client, vals, d)
    if kind == "DEClient":
        mat = np.full((len(vals), d), q)
        mat[np.arange(len(vals)), idx] = p
        return MarkovOperator(mat, vals, range(d))
    _check_bits(d, "d")  # UEClient
    rows = _bit_rows([_one_hot(d)[i] for i in idx], _bit_channel(q, p), d)
    return MarkovOperator(rows, vals, _bit_labels(d))


def _pure_ldp_rappor(client: Any, values: Any) -> MarkovOperator:
    m = _check_bits(check_int(client.m, "client.m", minimum=1), "m")
    f = check_probability(client.f, "client.f")
    cohorts = check_int(client.num_of_cohorts, "client.num_of_cohorts", minimum=1)
    family = client.hash_family
    if family is None or len(family) < cohorts:
        raise InvalidParameterError(
            f"client.hash_family must hold num_of_cohorts={cohorts} lists of hash functions "
            f"(got {None if family is None else len(family)})")
    vals = _values(client, values, client.d)
    bit = MarkovOperator([[1.0 - f / 2.0, f / 2.0], [0.0, 1.0]], (0, 1), (0, 1))  # as pure-ldp samples
    blocks = []
    for c in range(cohorts):
        filters = []
        for v in vals:
            b = [0] * m
            for func in family[c]:
                h = func(str(client.index_mapper(v)))
                if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 0 <= h < m:
                    raise InvalidParameterError(f"client.hash_family[{c}] maps {v!r} to {h!r}, not a bit in 0..{m - 1}")
                b[int(h)] = 1
            filters.append(b)
        blocks.append(_bit_rows(filters, bit, m) / cohorts)
    labels = [(c, s) for c in range(cohorts) for s in _bit_labels(m)]
    return MarkovOperator(np.hstack(blocks), vals, labels)


# ---------------------------------------------------------------- multi-freq-ldpy
def _ue_params(family: str, eps: float) -> tuple[float, float]:
    """``(p, q)`` of SUE (``p = e^{eps/2} / (e^{eps/2} + 1)``, ``q = 1 - p``) or OUE (``1/2``, ``1/(e^eps + 1)``)."""
    if family == "SUE":
        return float(expit(eps / 2.0)), float(expit(-eps / 2.0))
    return 0.5, float(expit(-eps))


def _ue_mechanism(k: int, p: float, q: float) -> MarkovOperator:
    return MarkovOperator(_bit_rows(_one_hot(k), _bit_channel(q, p), k), range(k), _bit_labels(k))


def _l_ue_second(p1: float, q1: float, second: str, eps_1: float) -> float:
    """The free stage-2 parameter t of a longitudinal unary encoding (``q2`` for OUE, ``p2`` for SUE).

    One report has ``P = P[1 | bit 1] = p1 p2 + (1 - p1) q2`` and ``Q = P[1 | bit 0] =
    q1 p2 + (1 - q1) q2``, affine in t (``P = a0 + a1 t``, ``Q = b0 + b1 t``), and multi-freq-ldpy
    chooses t so that the unary-encoding epsilon of one report is eps_1 (Arcolezi et al. 2022,
    ALLOMFREE analysis): ``g(t) = P (1 - Q) - e^{eps_1} (1 - P) Q = c2 t^2 + c1 t + c0 = 0``, with
    ``c2 = a1 b1 (e^{eps_1} - 1)``, ``c1 = a1 (1 - b0) - a0 b1 - e^{eps_1} ((1 - a0) b1 - a1 b0)``,
    ``c0 = a0 (1 - b0) - e^{eps_1} (1 - a0) b0``. The library's root is the one that stays finite
    as ``c2 -> 0`` (L-OSUE, where ``a1 = 2 p1 - 1 = 0``, is linear), ``2 c0 / (-c1 - sign(c1) sqrt(D))``,
    written without cancellation; the library's expanded closed forms agree with it to about
    ``1e-5`` relative at very small epsilons (their own cancellation) and to ``1e-13`` elsewhere.
    The certificate is for this root: where the library's floats differ, the mechanism it really
    runs differs too (L-SUE at eps_perm = 0.05, eps_1 = 0.001: its one report is 0.00100092-LDP,
    the exact root's 0.001), so at such tiny epsilons audit the library's own parameters.
    """
    if second == "OUE":  # p2 = 1/2, q2 = t
        a0, a1, b0, b1 = p1 / 2.0, 1.0 - p1, q1 / 2.0, 1.0 - q1
    else:  # SUE: p2 = t, q2 = 1 - t
        a0, a1, b0, b1 = 1.0 - p1, 2.0 * p1 - 1.0, 1.0 - q1, 2.0 * q1 - 1.0
    e = math.exp(eps_1)
    c2 = a1 * b1 * (e - 1.0)
    c1 = a1 * (1.0 - b0) - a0 * b1 - e * ((1.0 - a0) * b1 - a1 * b0)
    c0 = a0 * (1.0 - b0) - e * (1.0 - a0) * b0
    disc = c1 * c1 - 4.0 * c2 * c0
    den = -c1 - math.copysign(math.sqrt(max(disc, 0.0)), c1)
    return 2.0 * c0 / den if disc >= 0.0 and den != 0.0 else math.nan


def _longitudinal(protocol: str, k: int, eps_perm: float, eps_1: float) -> LongitudinalPipeline:
    e1 = math.exp(eps_1)
    if protocol == "L-GRR":
        t = math.exp(-eps_perm)
        p1, q1 = 1.0 / (1.0 + (k - 1) * t), t / (1.0 + (k - 1) * t)
        # multi-freq-ldpy's L_GRR_Client, verbatim: the root of (p1 p2 + q1 q2) = e^eps_1 (p1 q2 + q1 p2)
        p2 = (q1 - e1 * p1) / ((-p1 * e1) + k * q1 * e1 - q1 * e1 - p1 * (k - 1) + q1)
        q2 = (1.0 - p2) / (k - 1)
    else:
        first, second = {"L-SUE": ("SUE", "SUE"), "L-OUE": ("OUE", "OUE"),
                         "L-OSUE": ("OUE", "SUE"), "L-SOUE": ("SUE", "OUE")}[protocol]
        p1, q1 = _ue_params(first, eps_perm)
        t = _l_ue_second(p1, q1, second, eps_1)
        p2, q2 = (0.5, t) if second == "OUE" else (t, 1.0 - t)
    if not (0.0 <= q2 < p2 <= 1.0):
        raise InvalidParameterError(
            f"{protocol} has no valid second stage for epsilon={eps_perm!r}, eps_1={eps_1!r} (p2={p2!r}, "
            f"q2={q2!r}; multi-freq-ldpy rejects these too): choose eps_1 further below epsilon")
    if protocol == "L-GRR":
        labels = range(k)
        mech, inst = _grr(k, p1, q1, labels), _grr(k, p2, q2, labels)
    else:
        mech, inst = _ue_mechanism(k, p1, q1), _bitwise(_bit_channel(q2, p2), k)
    return LongitudinalPipeline(protocol=protocol, k=k, eps_perm=eps_perm, eps_1=eps_1, p1=p1, q1=q1, p2=p2,
                                q2=q2, mechanism=mech, instantaneous=inst)


def from_multi_freq_ldpy(protocol: str, k: int, epsilon: float,
                         eps_1: float | None = None) -> MarkovOperator | LongitudinalPipeline:
    """A multi-freq-ldpy frequency oracle (Arcolezi et al.) as a finite mechanism or a two-stage pipeline.

    Inputs are the library's values ``0, ..., k-1``; outputs are what its client returns: a value
    (GRR, L-GRR) or the k-bit vector as a tuple (unary encodings, last bit fastest as
    :func:`chainamp.kron`). Parameters are those the library derives:

    - ``"GRR"`` (``GRR_Client``): ``p = e^eps / (e^eps + k - 1)``, every other value
      ``(1 - p) / (k - 1)``. Exact LDP epsilon: ``epsilon``.
    - ``"SUE"``, ``"OUE"`` (``UE_Client`` with ``optimal`` False / True; Wang et al. 2017):
      ``p = e^{eps/2} / (e^{eps/2} + 1), q = 1 - p`` or ``p = 1/2, q = 1 / (e^eps + 1)``.
      Exact LDP epsilon: ``epsilon``.
    - ``"L-GRR"``, ``"L-SUE"``, ``"L-OUE"``, ``"L-OSUE"``, ``"L-SOUE"`` (``long_freq_est``; Arcolezi,
      Couchot, Al Bouna, Xiao 2022, "Improving the utility of locally differentially private
      protocols for longitudinal and multidimensional frequency estimates"): a first stage with
      ``epsilon`` (the library's ``eps_perm``, the guarantee after any number of reports when it is
      memoized), then a second stage chosen so that one report is stated ``eps_1``-LDP. Returns a
      :class:`LongitudinalPipeline`. The library's clients do not memoize the first stage (see
      :class:`LongitudinalPipeline`): their T reports are T fresh draws of the chain.

    What the stated eps_1 means. For the unary encodings the second stage solves the exact
    one-report equation (see ``_l_ue_second``) and ``ldp_guarantee(pipeline.one_report)`` certifies
    ``eps_1``. For L-GRR the library's p2 solves ``p1 p2 + q1 q2 = e^{eps_1} (p1 q2 + q1 p2)``, the
    two-value (k = 2) chain, while the k-ary chain keeps the value with probability
    ``p1 p2 + (k - 1) q1 q2`` and moves to a given other value with ``p1 q2 + q1 p2 + (k - 2) q1 q2``:
    both extra terms push the ratio down, so eps_1 is exact for k = 2 and an upper bound above it
    (eps_perm = 2, eps_1 = 0.5: exact 0.428 for k = 4, 0.0549 for k = 100).

    Parameters
    ----------
    protocol : str
        One of :data:`MULTI_FREQ_LDPY_PROTOCOLS`.
    k : int
        Domain size, ``>= 2`` (``<= 10`` for unary encodings: 2^k outputs).
    epsilon : float
        Finite, ``> 0``; ``eps_perm`` of the longitudinal protocols.
    eps_1 : float, optional
        Longitudinal protocols only (required there): ``0 < eps_1 < epsilon``.

    Examples
    --------
    >>> L = from_multi_freq_ldpy("L-GRR", 4, 2.0, eps_1=0.5)
    >>> L.one_report.shape, round(math.log(L.one_report.matrix.max() / L.one_report.matrix.min()), 3)
    ((4, 4), 0.428)
    """
    protocol = check_choice(protocol, "protocol", MULTI_FREQ_LDPY_PROTOCOLS)
    k = check_int(k, "k", minimum=2)
    eps = check_positive(epsilon, "epsilon")
    if protocol != "GRR" and protocol != "L-GRR":
        _check_bits(k, "k")
    if not protocol.startswith("L-"):
        if eps_1 is not None:
            raise InvalidParameterError(f"eps_1 is only for the longitudinal protocols (protocol={protocol!r}, "
                                        f"eps_1={eps_1!r})")
        if protocol == "GRR":
            t = math.exp(-eps)
            return _grr(k, 1.0 / (1.0 + (k - 1) * t), t / (1.0 + (k - 1) * t), range(k))
        return _ue_mechanism(k, *_ue_params(protocol, eps))
    if eps_1 is None:
        raise InvalidParameterError(f"eps_1 is required for {protocol} (the one-report guarantee, < epsilon)")
    e1 = check_positive(eps_1, "eps_1")
    if e1 >= eps:
        raise InvalidParameterError(f"eps_1 must be < epsilon={eps!r} (got {e1!r})")
    return _longitudinal(protocol, k, eps, e1)
