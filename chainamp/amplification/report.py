"""The result of :func:`~chainamp.amplification.amplify`: :class:`AmplificationReport` and the
:class:`Coefficients` of K it used, with the envelope queries over the report's bound sources and
the text / HTML / JSON presentation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numerics import check_delta, check_epsilon, fmt_number, html_table, text_table
from .bounds import Bound
from ..errors import InvalidMechanismError
from ..operators import EXACT, MarkovOperator, ProductError
from .inputs import InputMechanism
from .sources import best_bound

__all__ = ["AmplificationReport", "Coefficients"]


@dataclass(frozen=True)
class Coefficients:
    """The mixing coefficients of K (restricted to the inputs M can produce) that the bounds used."""

    dobrushin: Any
    doeblin: Any
    ultra_mixing: Any
    ldp_epsilon: float
    inputs_used: int
    dobrushin_gamma: float = math.nan
    doeblin_gamma: float = math.nan
    ultra_mixing_gamma: float = math.nan
    product_error: ProductError = EXACT

    def __post_init__(self) -> None:
        # the gammas the bounds use: the results' own, unless K is a computed product (then widened)
        for name in ("dobrushin", "doeblin", "ultra_mixing"):
            if math.isnan(getattr(self, f"{name}_gamma")):
                object.__setattr__(self, f"{name}_gamma", getattr(self, name).gamma)

    def to_dict(self) -> dict:
        return {"dobrushin": self.dobrushin_gamma, "dobrushin_pair": _jsonable(self.dobrushin.pair),
                "doeblin": self.doeblin_gamma, "ultra_mixing": self.ultra_mixing_gamma,
                "ldp_epsilon": _jsonable(self.ldp_epsilon), "inputs_used": self.inputs_used,
                "product_rel_error": self.product_error.rel}


@dataclass(frozen=True)
class AmplificationReport:
    """Every certified guarantee for K o M, the recommended one, and the evidence.

    Attributes
    ----------
    mechanism : InputMechanism
    operator : MarkovOperator
        The post-processing K (the product, for a list of operators).
    target_delta : float
        The delta at which ``bounds`` and ``best`` are reported.
    bounds : tuple of Bound
        For each source: the paper's clause applied at the input's point(s), and the
        source's smallest epsilon' with delta' <= target_delta.
    best : Bound
        The smallest certified epsilon' with delta' <= target_delta.
    exact : Bound or None
        The exact (epsilon', delta') of M K at target_delta, for a finite M.
    coefficients : Coefficients
    notes : tuple of str
    """

    mechanism: InputMechanism
    operator: MarkovOperator
    target_delta: float
    bounds: tuple
    best: Bound
    exact: Bound | None
    coefficients: Coefficients
    notes: tuple = ()
    sources: tuple = field(default=(), repr=False, compare=False)

    def __repr__(self) -> str:
        return (f"<AmplificationReport M={self.mechanism.description}; K {self.operator.shape[0]}x"
                f"{self.operator.shape[1]}; best ({fmt_number(self.best.epsilon)}, {fmt_number(self.best.delta)})"
                f" from {self.best.source}>")

    def bound_at(self, epsilon: float) -> Bound:
        """The certified bound with the smallest delta' at ``epsilon`` (lower envelope over sources)."""
        eps = check_epsilon(epsilon, "epsilon")
        return best_bound(self.sources, "bound_at_epsilon", eps) or Bound(eps, 1.0, "ldp", reference="trivial")

    def delta_at(self, epsilon: float) -> float:
        """Smallest certified delta' at ``epsilon'`` over every source (1.0 if none applies)."""
        return self.bound_at(epsilon).delta

    def bound_for(self, delta: float) -> Bound:
        """The certified bound with the smallest epsilon' among those with delta' <= ``delta``."""
        d = check_delta(delta, "delta")
        return best_bound(self.sources, "bound_at_delta", d) or Bound(math.inf, d, "ldp", reference="none certified")

    def epsilon_at(self, delta: float) -> float:
        """Smallest certified epsilon' with delta' <= ``delta`` (``inf`` if no source reaches it)."""
        return self.bound_for(delta).epsilon

    def source_epsilon(self, source: str, delta: float | None = None) -> float:
        """Smallest epsilon' the given source certifies at ``delta`` (default: the target delta)."""
        d = self.target_delta if delta is None else check_delta(delta, "delta")
        for s in self.sources:
            if s.name == source:
                b = s.bound_at_delta(d)
                return math.inf if b is None else b.epsilon
        raise InvalidMechanismError(f"source must be one of {[s.name for s in self.sources]} (got {source!r})")

    def gaps(self) -> dict[str, float]:
        """epsilon' of each source minus the exact epsilon' at the target delta (finite M only)."""
        if self.exact is None:
            return {}
        return {s.name: self.source_epsilon(s.name) - self.exact.epsilon for s in self.sources
                if s.name != "exact"}

    # ------------------------------------------------------------- presentation
    def _rows(self):
        rows = []
        for b in self.bounds:
            gap = None
            if self.exact is not None and b.delta <= self.target_delta and b.source != "exact":
                gap = b.epsilon - self.exact.epsilon
            gamma = None if b.source == "ldp" else b.gamma  # the LDP bound uses K's curve, not one gamma
            row = [b.source, b.epsilon, b.delta, gamma, b.input_epsilon, b.input_delta]
            if self.exact is not None:
                row.append(gap)
            rows.append(row + ["*" if b == self.best else ""])
        return rows

    @property
    def _header(self) -> list[str]:
        head = ["source", "epsilon'", "delta'", "gamma", "from eps", "from delta"]
        return head + (["vs exact"] if self.exact is not None else []) + ["best"]

    def __str__(self) -> str:
        c = self.coefficients
        head = [
            f"K o M with M = {self.mechanism.description}",
            f"K: {self.operator.shape[0]}x{self.operator.shape[1]} operator "
            f"({c.inputs_used} inputs reachable by M)",
            f"coefficients: Dobrushin {fmt_number(c.dobrushin_gamma)}, Doeblin {fmt_number(c.doeblin_gamma)}, "
            f"ultra-mixing {fmt_number(c.ultra_mixing_gamma)}, K is {fmt_number(c.ldp_epsilon)}-LDP",
            "",
        ]
        table = text_table(self._header, self._rows(), title=f"certified bounds (target delta' <= "
                                                             f"{fmt_number(self.target_delta)})")
        tail = [f"best: ({fmt_number(self.best.epsilon)}, {fmt_number(self.best.delta)})-DP from "
                f"{self.best.source} [{self.best.reference}]"]
        tail += [f"note: {n}" for n in self.notes]
        return "\n".join(head) + table + "\n\n" + "\n".join(tail)

    def _repr_html_(self) -> str:
        c = self.coefficients
        import html

        lines = [f"<p><b>K o M</b> with M = {html.escape(self.mechanism.description)}; K "
                 f"{self.operator.shape[0]}&times;{self.operator.shape[1]}. Dobrushin "
                 f"{fmt_number(c.dobrushin_gamma)}, Doeblin {fmt_number(c.doeblin_gamma)}, ultra-mixing "
                 f"{fmt_number(c.ultra_mixing_gamma)}.</p>",
                 html_table(self._header, self._rows()),
                 f"<p><b>best</b>: ({fmt_number(self.best.epsilon)}, {fmt_number(self.best.delta)})-DP "
                 f"from {html.escape(self.best.source)}</p>"]
        lines += [f"<p><i>note:</i> {html.escape(n)}</p>" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-safe summary (infinities as ``"inf"``)."""
        return {
            "mechanism": {"kind": self.mechanism.kind, "description": self.mechanism.description},
            "operator_shape": list(self.operator.shape),
            "target_delta": self.target_delta,
            "coefficients": self.coefficients.to_dict(),
            "bounds": [b.to_dict() for b in self.bounds],
            "best": self.best.to_dict(),
            "exact": None if self.exact is None else self.exact.to_dict(),
            "gaps": {k: _jsonable(v) for k, v in self.gaps().items()},
            "notes": list(self.notes),
        }

    def plot(self, **kwargs):
        """Plot the input profile, each source's bound and the exact profile (needs matplotlib)."""
        from ..audit import plot_report

        return plot_report(self, **kwargs)


def _jsonable(v):
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v
