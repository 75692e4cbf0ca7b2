"""Amplification over several post-processing steps: K applied t times, or K1, ..., Kr in order.

For each prefix length t the coefficients of the product ``K1 ... Kt`` are
computed exactly while the product is small enough to form (``max_states``);
beyond that they are bounded through composition rules that hold for any
Markov operators:

- Dobrushin and Doeblin coefficients are sub-multiplicative:
  ``gamma(K1 K2) <= gamma(K1) gamma(K2)`` (for Doeblin: writing
  ``K1 = (1 - g1) K_w + g1 K1~`` and minorising ``K1~ K2`` and ``w K2`` by
  ``(1 - g2) w2`` gives the minorant ``(1 - g1) w K2 + g1 (1 - g2) w2`` of mass
  ``1 - g1 g2``);
- the pure LDP level of ``K1 K2`` is at most the tight pure-DP composition
  ``log((1 + e^(e1 + e2)) / (e^e1 + e^e2))`` (an e1-LDP input followed by an
  e2-LDP operator), which fixes the ultra-mixing coefficient ``1 - e^-eps``.

Each bounded coefficient is at least the exact one, so the bounds stay sound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import check_executor, check_int, check_progress, fmt_number, html_table, progress_bar, text_table
from .bounds import (Bound, theorem1_dobrushin, theorem1_doeblin, theorem1_hockey_stick, theorem1_ultra_mixing,
                     tight_pure_epsilon)
from ..errors import InvalidParameterError
from ..mixing import dobrushin, doeblin, ultra_mixing
from ..operators import MarkovOperator, as_operator, multiply, operator_error
from .amplifier import amplify_operator
from .inputs import Adjust, _is_sequence_of_operators, as_input_mechanism
from .reading import _cite

__all__ = ["amplify_steps", "StepsReport", "StepResult"]

#: Products with more states than this (rows x columns) are bounded, not formed.
MAX_PRODUCT_ENTRIES = 4_000_000


@dataclass(frozen=True)
class StepResult:
    """The certified epsilon' after ``t`` steps at the report's delta, and how it was obtained."""

    t: int
    epsilon: float
    delta: float
    source: str
    exact_coefficients: bool
    dobrushin: float
    doeblin: float
    ultra_mixing: float


@dataclass(frozen=True)
class StepsReport:
    """epsilon'(t) for t = 1..T at a fixed delta (see :func:`amplify_steps`)."""

    mechanism: str
    delta: float
    steps: tuple

    def __repr__(self) -> str:
        first, last = self.steps[0], self.steps[-1]
        return (f"<StepsReport M={self.mechanism}; delta'={fmt_number(self.delta)}; t=1..{last.t}; "
                f"eps'(1)={fmt_number(first.epsilon)} -> eps'({last.t})={fmt_number(last.epsilon)}>")

    @property
    def epsilons(self) -> np.ndarray:
        return np.array([s.epsilon for s in self.steps])

    @property
    def headline(self) -> str:
        """One plain sentence: what is certified after the last step, from which bound, and how
        it relates to the exact (finite M) or worst-case (black-box) value; the text starts with it."""
        last, d = self.steps[-1], fmt_number(self.delta)
        if not math.isfinite(last.epsilon):
            return (f"Nothing is certified at delta' <= {d} after {last.t} post-processing steps of M = "
                    f"{self.mechanism}; M's own guarantee still holds (post-processing never hurts).")
        head = (f"Certified: M = {self.mechanism} followed by {last.t} post-processing steps is "
                f"({fmt_number(last.epsilon)}, {fmt_number(last.delta)})-DP, from "
                f"{_cite(Bound(0.0, 0.0, last.source).reference)}")
        composed = [s.t for s in self.steps if not s.exact_coefficients]
        if composed:
            return head + (f"; from step {composed[0]} on the coefficients are composed (upper bounds of the "
                           "exact ones), so eps'(t) there may be above the exact and worst-case values.")
        if last.source == "exact":
            return head + "; this is the exact value of the pipeline."
        if last.source == "tight":
            return head + "; this is the tight black-box value for that guarantee (Theorem 1(2) along its profile)."
        return head + "; every step uses the exact coefficients of the formed product."

    def _rows(self):
        return [[s.t, s.epsilon, s.delta, s.source, s.dobrushin, s.doeblin, s.ultra_mixing,
                 "exact" if s.exact_coefficients else "composed"] for s in self.steps]

    _HEADER = ["t", "epsilon'", "delta'", "source", "Dobrushin", "Doeblin", "ultra", "coefficients"]

    def __str__(self) -> str:
        return self.headline + "\n\n" + text_table(
            self._HEADER, self._rows(), title=f"K o M over steps, M = {self.mechanism}, delta' <= "
                                              f"{fmt_number(self.delta)}")

    def _repr_html_(self) -> str:
        import html

        return f'<p class="headline"><b>{html.escape(self.headline)}</b></p>' + html_table(self._HEADER, self._rows(),
                          title=f"K o M over steps, M = {self.mechanism}, delta' <= {fmt_number(self.delta)}")

    def to_dict(self) -> dict:
        def j(v):
            return ("inf" if v > 0 else "-inf") if isinstance(v, float) and math.isinf(v) else v
        return {"headline": self.headline, "mechanism": self.mechanism, "delta": self.delta,
                "steps": [{k: j(getattr(s, k)) for k in StepResult.__dataclass_fields__} for s in self.steps]}

    def plot(self, **kwargs):
        """epsilon'(t) over steps (needs matplotlib)."""
        from ..audit import plot_steps

        return plot_steps(self, **kwargs)


def _operator_sequence(K, steps) -> list[MarkovOperator]:
    """The operators of each step; arrays and nested lists are checked as ``MarkovOperator(...)`` does (a list
    of rows of numbers is one matrix, as in :func:`chainamp.amplify`)."""
    if not isinstance(K, MarkovOperator) and K is not None and not _is_sequence_of_operators(K) \
            and not (isinstance(K, (list, tuple)) and not K):
        K = as_operator(K, "K")
    if isinstance(K, MarkovOperator):
        T = check_int(steps, "steps", minimum=1)
        return [K] * T
    if steps is not None:
        raise InvalidParameterError("steps is only used with a single operator K (a list already fixes the steps)")
    if not isinstance(K, (list, tuple)) or not K:
        raise TypeError(f"K must be a MarkovOperator or a non-empty list of them, got {type(K).__name__}")
    return [as_operator(op, f"K[{i}]") for i, op in enumerate(K)]


def amplify_steps(mechanism: Any, K: MarkovOperator | Sequence[MarkovOperator], steps: int | None = None, *,
                  delta: float | None = None, neighbors: Any = None,
                  max_product_entries: int = MAX_PRODUCT_ENTRIES, executor: Any = None,
                  progress: bool | None = None) -> StepsReport:
    """Certified epsilon'(t) at a fixed delta' for t = 1..T post-processing steps.

    Parameters
    ----------
    mechanism : as for :func:`chainamp.amplify`
    K : MarkovOperator (applied ``steps`` times) or list of operators (applied in order)
    steps : int
        Number of repetitions of a single K.
    delta : float, optional
        The delta' (default as in :func:`chainamp.amplify`).
    max_product_entries : int
        Products larger than this are not formed; their coefficients are bounded by
        the composition rules of this module's docstring (never below the exact ones).
    executor : concurrent.futures.Executor, optional
        Where the pair scans of every step run (passed to :func:`chainamp.amplify` and the coefficient
        functions); the report is identical to the serial one.
    progress : bool, optional
        A progress bar over the steps (``None``: shown once the run has taken 2 s; ``True``: at
        once; ``False``: never).

    While products are formed, each step is a full :func:`chainamp.amplify`
    (exact coefficients, tight and, for a finite M, exact bounds). After that,
    each step applies Theorem 1 and the tight pure/black-box closed forms to the
    composed coefficients.

    Examples
    --------
    >>> from chainamp import DP, mechanisms
    >>> r = amplify_steps(DP(1.0, 1e-6), mechanisms.randomized_response(3, 2.0), steps=3)
    >>> [round(float(e), 3) for e in r.epsilons]
    [0.735, 0.534, 0.382]
    """
    ops = _operator_sequence(K, steps)
    executor = check_executor(executor)
    mech = as_input_mechanism(mechanism, neighbors)
    results: list[StepResult] = []
    product: MarkovOperator | None = None
    err = None  # rounding error of the formed product (see chainamp._products)
    coeffs = None  # (dobrushin, doeblin, eps_ldp) of the product, when bounded by composition
    target = None
    bar = progress_bar(len(ops), "steps", unit="steps", progress=check_progress(progress))
    for t, op in enumerate(ops, start=1):
        if t > 1:
            bar.update(1)  # the previous step is done
        can_form = product is None or (coeffs is None and product.shape[0] * op.shape[1] <= max_product_entries)
        if can_form:
            product, err = (op, operator_error(op)) if product is None else multiply(product, err, op,
                                                                                      operator_error(op))
            rep = amplify_operator(mech, product, err, delta=delta, executor=executor)
            target = rep.target_delta
            b = rep.best
            c = rep.coefficients
            results.append(StepResult(t, b.epsilon, b.delta, b.source, True, c.dobrushin_gamma, c.doeblin_gamma,
                                      c.ultra_mixing_gamma))
            continue
        if coeffs is None:
            prev = results[-1]
            coeffs = (prev.dobrushin, prev.doeblin, _ultra_to_eps(prev.ultra_mixing))
        d1, g1, e1 = coeffs
        # the new operator's coefficients, widened for rows that sum to 1 only within row_sum_atol
        adj = Adjust(operator_error(op), op.shape[1])
        d2, g2 = adj.tv(dobrushin(op, executor=executor).gamma), adj.doeblin(doeblin(op).gamma)
        e2 = _ultra_to_eps(adj.ultra(ultra_mixing(op).gamma))
        # the rules hold for the exact products of the gammas: round the float products up
        coeffs = (min(math.nextafter(d1 * d2, 2.0), 1.0), min(math.nextafter(g1 * g2, 2.0), 1.0),
                  tight_pure_epsilon(e1, e2))
        b = _composed_best(mech, coeffs, target)
        results.append(StepResult(t, b.epsilon, b.delta, b.source, False, coeffs[0], coeffs[1],
                                  -math.expm1(-coeffs[2]) if math.isfinite(coeffs[2]) else 1.0))
    bar.update(1)
    bar.close()
    return StepsReport(mech.description, target, tuple(results))


def _ultra_to_eps(gamma: float) -> float:
    return math.inf if gamma >= 1.0 else -math.log1p(-gamma)


def _composed_best(mech, coeffs, target: float) -> Bound:
    """Best bound from composed coefficients: Theorem 1 at the input's points and the
    tight bound with the TV coefficient standing in for every (gamma, eps)-Dobrushin
    coefficient (D_c <= TV)."""
    dob, doe, eps_k = coeffs
    ult = -math.expm1(-eps_k) if math.isfinite(eps_k) else 1.0
    if mech.points is not None:
        pts = [(p.epsilon, p.delta) for p in mech.points]
    else:
        e = mech.profile.epsilon(target) if target > 0 else mech.profile.pure_epsilon
        pts = [(e, target)] if math.isfinite(e) else []
    cands = [Bound(eps_k, 0.0, "ldp", gamma=ult)] if math.isfinite(eps_k) else []
    for e, d in pts:
        cands += [theorem1_dobrushin(e, d, dob), theorem1_hockey_stick(e, d, dob, gamma_epsilon=0.0),
                  theorem1_doeblin(e, d, doe), theorem1_ultra_mixing(e, d, ult)]
        if d == 0.0 and math.isfinite(eps_k):
            cands.append(Bound(tight_pure_epsilon(e, eps_k), 0.0, "tight", gamma=ult, input_epsilon=e,
                               input_delta=0.0))
    ok = [b for b in cands if b.delta <= target]
    if not ok:
        return Bound(math.inf, target, "ldp", reference="none certified")
    return min(ok, key=lambda b: b.epsilon)

