"""The channel a frequency estimator inverts, the observed counts it is given, and the support statistic.

Private helpers of :mod:`.estimation` and :mod:`.frontier`:

* ``as_operator``: one step (an operator, or a 2-D array read as one) as a :class:`~chainamp.MarkovOperator`;
* ``compose_channel``: a finite mechanism or pipeline (a :class:`~chainamp.MarkovOperator`, a 2-D array,
  or a list / tuple of them applied in order) as one operator, by a plain floating-point product. An
  estimator only needs the channel's probabilities to a few digits; nothing here certifies privacy, so
  the product's rounding error is not tracked (:func:`chainamp.amplify` tracks it for certificates).
* ``counts_vector``: observed output counts (an array over the outputs or a mapping from output labels)
  checked once, as a float vector in output order.
* ``support_statistic``: the per-bit support rates of a channel whose outputs are bit tuples (the
  "pure" protocols of Wang, Blocki, Li and Jha 2017).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._numerics import check_float_array
from ..errors import IncompatibleOperatorsError, InvalidMechanismError, InvalidParameterError
from ..operators import MarkovOperator

__all__: list[str] = []


def _is_pipeline(channel: Any) -> bool:
    """A list / tuple of operators or 2-D ndarrays (a nested list of numbers is one matrix)."""
    return (isinstance(channel, (list, tuple)) and len(channel) > 0
            and all(isinstance(c, MarkovOperator) or (isinstance(c, np.ndarray) and c.ndim == 2) for c in channel))


def as_operator(step: Any, inputs: tuple | None, name: str) -> MarkovOperator:
    if isinstance(step, MarkovOperator):
        return step
    if isinstance(step, (str, bytes)) or step is None or isinstance(step, Mapping):
        raise TypeError(f"{name} must be a MarkovOperator or a 2-D array, got {type(step).__name__} {step!r}")
    op = MarkovOperator(step)
    if inputs is not None and op.shape[0] == len(inputs):
        # a bare matrix after a labelled step reads its rows as that step's outputs
        op = MarkovOperator(op, inputs=inputs)
    return op


def compose_channel(channel: Any, name: str = "channel") -> MarkovOperator:
    """One operator from a channel or a pipeline of them (a plain float product, not a certificate)."""
    if isinstance(channel, (list, tuple)) and len(channel) == 0:
        raise TypeError(f"{name} must be a MarkovOperator, a 2-D array or a non-empty list of them (got [])")
    if not _is_pipeline(channel):
        return as_operator(channel, None, name)
    out = as_operator(channel[0], None, f"{name}[0]")
    for i, step in enumerate(channel[1:], start=1):
        op = as_operator(step, out.outputs, f"{name}[{i}]")
        try:
            out = out @ op
        except IncompatibleOperatorsError as exc:
            raise IncompatibleOperatorsError(f"{name}[{i}] does not follow {name}[{i - 1}]: {exc}") from None
    return out


def check_counts_array(counts: Any, m: int, name: str = "counts") -> np.ndarray:
    """A 1-D float array of m finite counts >= 0 (vectorised: the first bad entry is named)."""
    vec = check_float_array(counts, name, ndim=1)
    if vec.size != m:
        raise InvalidParameterError(f"{name} must have one entry per output of the channel ({m}), "
                                    f"got {vec.size}")
    bad = ~(np.isfinite(vec) & (vec >= 0.0))
    if np.any(bad):
        j = int(np.flatnonzero(bad)[0])
        _count(float(vec[j]), f"{name}[{j}]")
    return np.array(vec, dtype=float)


def counts_vector(counts: Any, channel: MarkovOperator, name: str = "counts", *,
                  check_support: bool = True) -> np.ndarray:
    """Observed output counts as a float vector over ``channel.outputs``: finite, >= 0, total > 0,
    and zero on every output the channel never produces (``check_support=False``: the caller knows every
    output is possible, and the channel's matrix is not formed)."""
    m = channel.shape[1]
    if isinstance(counts, Mapping):
        vec = np.zeros(m)
        for label, value in counts.items():
            try:
                j = channel.output_index(label)
            except (KeyError, TypeError):
                raise InvalidParameterError(f"{name} has the label {label!r}, which is not an output of the "
                                            "channel") from None
            vec[j] = _count(value, f"{name}[{label!r}]")
    else:
        vec = check_counts_array(counts, m, name)
    total = float(vec.sum())
    if not total > 0.0:
        raise InvalidParameterError(f"{name} must have a positive total (got {total!r})")
    if not check_support:
        return vec
    impossible = (vec > 0) & (channel.matrix.sum(axis=0) == 0.0)
    if np.any(impossible):
        j = int(np.flatnonzero(impossible)[0])
        raise InvalidParameterError(f"{name} has {vec[j]:g} reports of output {channel.outputs[j]!r}, which the "
                                    "channel never produces")
    return vec


def _count(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    x = float(value)
    if not math.isfinite(x) or x < 0.0:
        raise InvalidParameterError(f"{name} must be a finite count >= 0 (got {x!r})")
    return x


def bit_matrix(channel: MarkovOperator) -> np.ndarray:
    """The k x m matrix ``B[v, y] = y[v]`` of a channel whose m outputs are bit tuples of length k,
    with k the number of inputs (bit v is the support indicator of input v, in input order)."""
    k = channel.shape[0]
    rows = []
    for y in channel.outputs:
        if not (isinstance(y, tuple) and len(y) == k
                and all(not isinstance(b, float) and b in (0, 1) for b in y)):
            raise InvalidMechanismError(
                f"statistic='support' needs outputs that are bit tuples of length {k} (one bit per input, as "
                f"chainamp.kron labels them); output {y!r} is not")
        rows.append([int(b) for b in y])
    return np.array(rows, dtype=float).T


def support_rates(channel: MarkovOperator, *, atol: float, rank_rtol: float) -> tuple[np.ndarray, np.ndarray,
                                                                                    np.ndarray]:
    """``(B, p, q)``: the bit matrix and, per bit v, ``p_v = P[bit v = 1 | input v]`` and
    ``q_v = P[bit v = 1 | input x]`` for the inputs x != v (which must agree within ``atol``)."""
    B = bit_matrix(channel)
    k = channel.shape[0]
    if k < 2:
        raise InvalidMechanismError(f"statistic='support' needs at least 2 inputs (got {k})")
    Q = channel.matrix @ B.T  # Q[x, v] = P[bit v = 1 | input x]
    p = np.diag(Q).copy()
    off = ~np.eye(k, dtype=bool)
    q = np.empty(k)
    for v in range(k):
        others = Q[off[:, v], v]
        spread = float(others.max() - others.min())
        if spread > atol:
            raise InvalidMechanismError(
                f"statistic='support' needs a pure protocol (Wang et al. 2017): P[bit {v} = 1 | input x] must "
                f"be the same for every input x != {channel.inputs[v]!r}, but it ranges over "
                f"[{others.min():.6g}, {others.max():.6g}] (support_rate_atol={atol:g}); are the inputs in "
                "the order of the bits?")
        q[v] = float(others.mean())
    flat = np.abs(p - q) <= rank_rtol
    if np.any(flat):
        v = int(np.flatnonzero(flat)[0])
        raise InvalidMechanismError(
            f"bit {v} carries no information about input {channel.inputs[v]!r}: p = q = {p[v]:.6g}; the support "
            "estimator cannot be formed")
    return B, p, q


def dense_covariance(A: np.ndarray, P: np.ndarray, f: np.ndarray, n: float, population: str):
    """``A Sigma A^T`` of an affine estimator on a dense channel, never forming an m x m matrix:
    ``A diag(pi) A^T = (A * pi) A^T``, minus ``(A pi)(A pi)^T`` (sampled) or ``(A P^T) diag(f) (A P^T)^T``
    (fixed), over n; as a :class:`~chainamp.utility.StructuredCovariance` with a zero diagonal."""
    from .lowrank import StructuredCovariance
    pi = P.T @ f
    cov = (A * pi) @ A.T
    if population == "sampled":
        u = A @ pi
        cov -= np.outer(u, u)
    elif A.shape[0] ** 3 * P.shape[1] <= _CENTERED_WORK:
        cov = _fixed_covariance_centered(A, P, f, n)
        k = cov.shape[0]
        return StructuredCovariance(np.zeros(k), cov, np.eye(k))
    else:
        AP = A @ P.T
        cov -= (AP * f) @ AP.T
    cov = 0.5 * (cov + cov.T) / n
    k = cov.shape[0]
    return StructuredCovariance(np.zeros(k), cov, np.eye(k))


#: The largest ``k^3 m`` (k inputs, m outputs) for which the fixed-population covariance is summed in its
#: cancellation-free form (each term a k x m block times its transpose).
_CENTERED_WORK = 1 << 28


def _fixed_covariance_centered(A: np.ndarray, P: np.ndarray, f: np.ndarray, n: float) -> np.ndarray:
    """``A (diag(pi) - P^T diag(f) P) A^T / n`` without cancellation.

    With the rows ``w = P_x`` normalised (the stored rows stand for them), ``diag(w) - w w^T`` is the covariance
    of a one-hot draw from w, so ``A (diag(w) - w w^T) A^T = sum_y w_y (a_y - m)(a_y - m)^T`` with ``a_y``
    column y of A and ``m = A w = sum_z w_z a_z``: a sum of positive semi-definite terms. Each
    ``a_y - m = sum_{z != y} w_z (a_y - a_z)`` is formed as ``r_y a_y - (m - w_y a_y)`` with
    ``r_y = sum_{z != y} w_z``; for the one y where ``w_y > 1/2`` (the only place ``a_y`` and ``m`` can nearly
    coincide) both ``r_y`` and ``m - w_y a_y`` are summed over ``z != y`` directly, never as differences of
    nearly equal numbers. The result is then ``sum_x f_x`` of those terms, over n.
    """
    k = P.shape[0]
    At = A.T  # row y: a_y
    out = np.zeros((k, k))
    for x in range(k):
        if f[x] == 0.0:
            continue
        w = P[x] / P[x].sum()
        total = float(w.sum())
        rest = total - w
        mean = At.T @ w
        partial = mean[None, :] - w[:, None] * At  # m - w_y a_y
        big = int(np.argmax(w))
        if w[big] > 0.5 * total:
            others = np.arange(w.size) != big
            rest[big] = float(w[others].sum())
            partial[big] = At[others].T @ w[others]
        D = rest[:, None] * At - partial
        out += f[x] * ((D * w[:, None]).T @ D)
    out /= n
    return 0.5 * (out + out.T)

