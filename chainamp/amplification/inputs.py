"""The input side of :func:`~chainamp.amplification.amplify`: M normalised, K composed, their stored error.

:func:`as_input_mechanism` turns what ``amplify`` accepts as M into an :class:`InputMechanism`;
:func:`compose_operators` (and ``compose_with_error``, which also returns the rounding error of the
product, see :mod:`chainamp.operators.products`) forms K from a list of operators. ``Adjust``
widens the coefficients of a computed product into bounds for the exact operator, and
``normalised_profile`` widens the profile of a finite M the same way; ``reachable_inputs`` is
the set of K's inputs Theorem 1 is applied on. ``compose_with_error``, ``Adjust``,
``normalised_profile`` and ``reachable_inputs`` are shared with :mod:`.amplifier` and
:mod:`.steps`, not part of the public API.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import fmt_number, round_up
from ..errors import IncompatibleOperatorsError, InvalidMechanismError
from ..operators import (MarkovOperator, StructuredOperator, as_operator, multiply, operator_error, ProductError,
                         same_label_set)
from ..privacy import DP, PrivacyProfile, dp_points_of, privacy_profile

__all__ = ["compose_operators", "as_input_mechanism", "InputMechanism"]


@dataclass(frozen=True)
class InputMechanism:
    """The input mechanism M as the amplifier sees it.

    Attributes
    ----------
    kind : {"dp", "points", "profile", "finite"}
    description : str
    profile : PrivacyProfile
        Upper bound of M's privacy profile (exact for finite M and exact curves).
    points : tuple of DP or None
        The black-box points, for ``dp`` and ``points``.
    matrix : MarkovOperator or None
        The finite mechanism, for ``finite``.
    neighbors : object
        The neighbour relation for a finite mechanism (None = all pairs, local DP).
    """

    kind: str
    description: str
    profile: PrivacyProfile
    points: tuple | None = None
    matrix: MarkovOperator | None = None
    neighbors: Any = None


def as_input_mechanism(mechanism: Any, neighbors: Any = None) -> InputMechanism:
    """Normalise what :func:`amplify` accepts as M (see its docstring)."""
    if isinstance(mechanism, InputMechanism):
        return mechanism
    if isinstance(mechanism, DP):
        return InputMechanism("dp", f"({fmt_number(mechanism.epsilon)}, {fmt_number(mechanism.delta)})-DP",
                              mechanism.profile, points=(mechanism,))
    if isinstance(mechanism, PrivacyProfile):
        return InputMechanism("profile", mechanism.name, mechanism)
    if isinstance(mechanism, np.ndarray) or sp.issparse(mechanism):  # a finite mechanism as an array
        mechanism = as_operator(mechanism, "mechanism")
    if isinstance(mechanism, MarkovOperator):
        prof = privacy_profile(mechanism, neighbors)
        what = "local DP" if neighbors is None else "given neighbours"
        return InputMechanism("finite", f"finite mechanism {mechanism.shape[0]}x{mechanism.shape[1]} ({what})",
                              prof, matrix=mechanism, neighbors=neighbors)
    if isinstance(mechanism, tuple) and len(mechanism) == 2 and all(
            isinstance(v, (int, float, np.floating, np.integer)) for v in mechanism):
        return as_input_mechanism(DP(*mechanism))
    if isinstance(mechanism, (list, tuple)):
        if not mechanism:
            raise InvalidMechanismError("mechanism: an empty list of (epsilon, delta) points")
        pts = dp_points_of(mechanism, "mechanism")  # refuses 2-number rows: points or a 2-column matrix?
        if pts is None:  # rows of numbers of another length: only a matrix
            return as_input_mechanism(as_operator(mechanism, "mechanism"), neighbors)
        if len(pts) == 1:
            return as_input_mechanism(pts[0])
        desc = "DP at " + ", ".join(f"({fmt_number(p.epsilon)}, {fmt_number(p.delta)})" for p in pts)
        return InputMechanism("points", desc, PrivacyProfile.from_points(pts), points=pts)
    raise TypeError("mechanism must be a DP, an (epsilon, delta) tuple, a list of DP, a PrivacyProfile, a "
                    f"MarkovOperator or a 2-D numpy array, got {type(mechanism).__name__}")


def compose_operators(K: MarkovOperator | Sequence[MarkovOperator]) -> MarkovOperator:
    """One operator, or the product ``K1 @ K2 @ ...`` of a sequence applied in order."""
    return compose_with_error(K)[0]


def _is_sequence_of_operators(K: Any) -> bool:
    """A list of operators (MarkovOperators or 2-D arrays / nested lists), not one matrix written as rows."""
    def two_d(op: Any) -> bool:
        try:
            return isinstance(op, MarkovOperator) or sp.issparse(op) or np.ndim(op) == 2
        except ValueError:  # ragged: not a matrix of numbers, as_operator says why
            return False
    if not isinstance(K, (list, tuple)) or not K:
        return False
    return any(isinstance(op, MarkovOperator) or sp.issparse(op) for op in K) or all(two_d(op) for op in K)


def compose_with_error(K) -> tuple[MarkovOperator, ProductError]:
    """The product of a sequence and its rounding error (see :mod:`chainamp._products`). Arrays and nested
    lists are coerced with the checks and messages of ``MarkovOperator(...)``."""
    if isinstance(K, MarkovOperator):
        return K, operator_error(K)
    if _is_sequence_of_operators(K):
        K = [as_operator(op, f"K[{i}]") for i, op in enumerate(K)]
        out, err = K[0], operator_error(K[0])
        for i, op in enumerate(K[1:], start=1):
            try:
                out, err = multiply(out, err, op, operator_error(op))
            except IncompatibleOperatorsError as exc:
                raise IncompatibleOperatorsError(f"K[{i}] does not follow K[{i - 1}]: {exc}") from None
        return out, err
    if isinstance(K, (list, tuple)) and not K:
        raise TypeError("K must be a MarkovOperator, a 2-D array or a non-empty list of them, got an empty list")
    op = as_operator(K, "K")
    return op, operator_error(op)


class Adjust:
    """Coefficients of the exact operator from those of its stored (computed) product.

    With ``true = stored (1 +- r) +- a`` entrywise (``m`` outputs):

    - TV: each row moves by at most ``r + m a`` in L1, so ``gamma <= gamma~ + r + m a``;
    - Doeblin: ``sum_y min_x K >= (1 - r)(1 - gamma~) - m a``;
    - hockey-stick at ``c = e^o``: ``[p - c q]_+ <= (1 + r)[p~ - c' q~]_+ + a (1 + c)`` with
      ``c' = c (1 - r)/(1 + r)``, so ``D_c <= (1 + r) D~_{c'} + m a (1 + c)``; for ``c' < 1``,
      ``D~_{c'} <= D~_1 + (1 - c')``; at ``o = inf``, ``(1 + r) D~_inf + m a``;
    - ratios (ultra-mixing, pure LDP): each positive entry is within a factor ``1 +- e``
      (``e = r + a / min positive entry``), and they need the exact support.
    Every result is rounded up and capped at 1. An exact operator passes through unchanged.
    """

    def __init__(self, err: ProductError, m: int):
        self.err = err
        self.exact = err.is_exact
        self.r = err.rel
        self.ma = m * err.absolute
        self.shift = math.log1p(2 * self.r / (1 - self.r)) if self.r else 0.0  # log((1+r)/(1-r))

    def _up(self, value: float) -> float:
        return min(round_up(value, 8), 1.0)

    def tv(self, g: float) -> float:
        return g if self.exact else self._up(g + self.r + self.ma)

    def doeblin(self, g: float) -> float:
        return g if self.exact else self._up(g + self.r * (1.0 - g) + self.ma)

    def ultra(self, g: float) -> float:
        if self.exact:
            return g
        e = self.err.ratio_error()
        if not self.err.support_exact or e >= 1.0:
            return 1.0
        return self._up(1.0 - (1.0 - g) * (1.0 - e) / (1.0 + e))

    def pure_epsilon(self, eps_k: float) -> float:
        if self.exact or math.isinf(eps_k):
            return eps_k
        e = self.err.ratio_error()
        if not self.err.support_exact or e >= 1.0:
            return math.inf
        return round_up(eps_k + math.log1p(2 * e / (1 - e)), 8)

    def raw_order(self, order: float) -> float:
        """The order at which the stored operator's coefficient is needed."""
        return order if self.exact or math.isinf(order) else max(order - self.shift, 0.0)

    def hockey(self, raw: Callable[[float], float], order: float) -> float:
        if self.exact:
            return raw(order)
        if math.isinf(order):
            return self._up((1.0 + self.r) * raw(order) + self.ma)
        low = order - self.shift
        base = raw(low) if low >= 0.0 else raw(0.0) - math.expm1(low)
        extra = 0.0
        if self.ma:
            extra = self.ma * (1.0 + math.exp(order)) if order < 700.0 else math.inf
        return self._up((1.0 + self.r) * base + extra)

    def epsilon_bracket(self, raw_epsilon_at: Callable[[float], float], d: float) -> float:
        """An eps at which the adjusted curve is likely <= d (verified by the caller)."""
        if self.exact:
            return raw_epsilon_at(d)
        target = max(d - self.ma * 2.0, 0.0) / (1.0 + self.r)
        e = raw_epsilon_at(target)
        # rounded up: the caller's hockey() subtracts the shift again, which must land at or above e
        return round_up(e + self.shift, 1) if math.isfinite(e) else e



def normalised_profile(profile: PrivacyProfile, adj: "Adjust") -> PrivacyProfile:
    """Profile of a finite mechanism whose stored rows are normalised (see :func:`operator_error`):
    the stored matrix's exact profile widened by the entrywise error model of ``Adjust``."""
    if adj.exact:
        return profile

    def fn(e: float) -> float:
        return adj.hockey(lambda o: min(float(profile.delta(o)), 1.0), e)

    pure = adj.pure_epsilon(profile.pure_epsilon)
    for _ in range(16):  # the widened curve is 0 from the widened pure level on; make sure of it in floats
        if not math.isfinite(pure) or fn(pure) == 0.0:
            break
        pure = math.nextafter(pure, math.inf) * (1 + 2.0**-50)
    return PrivacyProfile.from_callable(fn, name=profile.name, exact=False, source=profile.source,
                                        pure_epsilon=pure if math.isfinite(pure) and fn(pure) == 0.0 else None)


def reachable_inputs(mech: InputMechanism, K: MarkovOperator, inputs) -> tuple:
    reach = K.inputs
    if mech.kind == "finite" and isinstance(mech.matrix, StructuredOperator) and mech.matrix.outputs == K.inputs:
        reach = mech.matrix.output_support()  # from the structure: no column sums of a dense M
    elif mech.kind == "finite":
        M = mech.matrix
        if not same_label_set(M.outputs, K.inputs, "the outputs of M and the inputs of K"):
            raise IncompatibleOperatorsError(
                f"the outputs of M ({len(M.outputs)} labels) must be the inputs of K ({len(K.inputs)} labels)")
        mass = np.asarray(M.sparse.sum(axis=0)).ravel() if M.is_sparse else M.matrix.sum(axis=0)
        reach = tuple(lab for lab, w in zip(M.outputs, mass) if w > 0)
    if inputs is None:
        return reach
    labels = tuple(inputs)
    for lab in labels:
        K.input_index(lab)
    given = set(labels)
    missing = [lab for lab in reach if lab not in given] if mech.kind == "finite" else []
    if missing:
        raise InvalidMechanismError(
            f"inputs omits {missing[:4]!r}{' ...' if len(missing) > 4 else ''}, which the finite mechanism M "
            "can produce: Theorem 1 needs every input M reaches")
    return labels
