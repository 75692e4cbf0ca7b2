"""Unary encodings of k categories as whole structured mechanisms (OUE and SUE of Wang, Blocki, Li, Jha 2017).

The per-bit channels are :func:`~chainamp.mechanisms.optimized_unary_encoding` and
:func:`~chainamp.mechanisms.symmetric_unary_encoding`; :func:`unary_encoding` is the k-input mechanism
on one-hot inputs, a :class:`~chainamp.operators.KroneckerOperator`. Re-exported by
:mod:`chainamp.mechanisms`.
"""

from __future__ import annotations

import math  # noqa: F401  (doctests)
from collections.abc import Hashable, Sequence

from .._numerics import check_epsilon, check_int
from ..errors import InvalidParameterError
from ..operators import KroneckerOperator
from .mechanisms import optimized_unary_encoding, symmetric_unary_encoding

__all__ = ["unary_encoding"]


_UE_KINDS = ("OUE", "SUE")


def unary_encoding(k: int, epsilon: float, kind: str = "OUE",
                   labels: Sequence[Hashable] | None = None) -> KroneckerOperator:
    """Unary encoding of k categories (OUE or SUE): the whole k-input mechanism, kept structured.

    A category ``v`` is one-hot encoded as k bits and every bit goes through the per-bit channel
    independently (:func:`optimized_unary_encoding` for ``kind="OUE"``, :func:`symmetric_unary_encoding`
    for ``"SUE"``): ``K(v, y) = prod_j B(1[j = v], y_j)`` over the ``2^k`` bit vectors ``y`` (tuples,
    the last bit fastest). Returned as a :class:`~chainamp.operators.KroneckerOperator` on the one-hot
    inputs: every pair of categories differs in two bits, so the exact profile, the coefficients and
    :func:`chainamp.amplify` cost the same at k = 10^6 as at k = 3, and no 2^k vector is formed
    (``.matrix`` densifies on request, size-checked).

    Exact LDP epsilon: ``epsilon`` for both kinds (the two differing bits contribute
    ``log(p (1 - q) / ((1 - p) q)) = epsilon``). Source: Wang, Blocki, Li, Jha (2017), "Locally
    differentially private protocols for frequency estimation", Section 4.

    Parameters
    ----------
    k : int
        Number of categories, ``>= 2``.
    epsilon : float
        Finite, ``>= 0``.
    kind : {"OUE", "SUE"}
        Optimized (``p = 1/2``, ``q = 1/(e^eps + 1)``) or symmetric (``p = e^{eps/2}/(e^{eps/2} + 1)``,
        ``q = 1 - p``) unary encoding.
    labels : sequence of hashable, optional
        ``k`` distinct labels of the categories (default ``range(k)``).

    Examples
    --------
    >>> U = unary_encoding(10**6, 1.0)
    >>> U.shape[0], U.n_coordinates
    (1000000, 1000000)
    >>> unary_encoding(2, math.log(3), "SUE").matrix.round(4).tolist()[0]
    [0.2321, 0.134, 0.4019, 0.2321]
    """
    k = check_int(k, "k", minimum=2)
    eps = check_epsilon(epsilon, allow_inf=False)
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a string, 'OUE' or 'SUE', got {type(kind).__name__} {kind!r}")
    if kind.upper() not in _UE_KINDS:
        raise InvalidParameterError(f"kind must be 'OUE' or 'SUE' (got {kind!r})")
    if isinstance(labels, (str, bytes)):
        raise TypeError(f"labels must be a sequence of labels, not a string ({labels!r})")
    if labels is not None:
        labels = tuple(labels)
        if len(labels) != k:
            raise InvalidParameterError(f"labels must have k={k} entries (got {len(labels)})")
    bit = optimized_unary_encoding(eps) if kind.upper() == "OUE" else symmetric_unary_encoding(eps)
    return KroneckerOperator.one_hot(bit, k, hot=1, cold=0, labels=labels)
