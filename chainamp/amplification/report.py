"""The result of :func:`~chainamp.amplification.amplify`: :class:`AmplificationReport` and the
:class:`Coefficients` of K it used, with the envelope queries over the report's bound sources and
the text / HTML / JSON presentation (how it reads -- the headline, the comparison of each source
with the input's own profile, values at rounding level -- is in :mod:`.reading`).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numerics import check_delta, check_epsilon, fmt_number, html_table, text_table
from .bounds import BOUND_SOURCES, Bound
from ..errors import InvalidMechanismError
from ..operators import EXACT, MarkovOperator, ProductError
from .inputs import InputMechanism
from . import reading
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

    # ------------------------------------------------------------- how it reads
    @property
    def headline(self) -> str:
        """One plain sentence: what is certified, for which pipeline, from which theorem, and how far
        it is from the exact value (finite M) or from the worst case over every M with the input's
        guarantee (black box). Every presentation of the report starts with it."""
        return reading.headline(self)

    def curves(self, epsilons=None) -> tuple:
        """Each source's certified ``delta'(eps')`` next to the input's own ``delta_M(eps')``.

        On ``epsilons`` (default: a grid from 0 to a little past the input's pure-DP level, with the
        table's eps' and the eps' where each curve reaches 0; computed once and kept). Each item has
        ``name``, ``epsilons``, ``deltas``, ``input_deltas``, ``steps``, ``no_better`` (the eps' where
        ``delta' > delta_M(eps')``, where M's own guarantee is the better certificate),
        ``no_better_ranges`` and ``shown`` (the curve clipped to the input's profile, as plotted).
        """
        if epsilons is not None:
            grid = np.unique(np.asarray(epsilons, dtype=float).ravel())
            return tuple(reading.source_curve(self, s, grid) for s in self.sources)
        cached = self.__dict__.get("_curves")
        if cached is None:
            grid = self.epsilon_grid()
            cached = tuple(reading.source_curve(self, s, grid) for s in self.sources)
            object.__setattr__(self, "_curves", cached)
        return cached

    def epsilon_grid(self) -> np.ndarray:
        """The default eps' grid of :meth:`curves` and of the plot (computed once and kept)."""
        grid = self.__dict__.get("_grid")
        if grid is None:
            grid = reading.default_grid(self)
            grid.setflags(write=False)
            object.__setattr__(self, "_grid", grid)
        return grid

    def no_better_than_input(self, epsilons=None) -> dict[str, tuple]:
        """Per source, the eps' ranges ``((lo, hi), ...)`` (grid points of :meth:`curves`) where the
        source's delta' exceeds M's own ``delta_M(eps')``: post-processing never hurts, so there the
        input's guarantee is the better certificate (presentation only; ``delta_at`` and ``best``
        already take the minimum over every source)."""
        return {c.name: c.no_better_ranges for c in self.curves(epsilons)}

    # ------------------------------------------------------------- presentation
    def _rows(self, aligned: bool = True):
        level = reading.zero_level(self.target_delta)
        rows = []
        for b in self.bounds:
            gap = None
            if self.exact is not None and b.delta <= self.target_delta and b.source != "exact":
                gap = b.epsilon - self.exact.epsilon
            gamma = None if b.source == "ldp" else b.gamma  # the LDP bound uses K's curve, not one gamma
            row = [b.source, b.epsilon, reading.fmt_delta(b.delta, level), gamma, b.input_epsilon,
                   reading.fmt_delta(b.input_delta, level)]
            if self.exact is not None:
                row.append(reading.fmt_gap(gap, self.exact.epsilon))
            notes = [reading.NO_BETTER] if b.source != "exact" and reading.row_no_better(self, b) else []
            if b.delta > self.target_delta and not 0.0 < b.delta <= level:  # not a bound at the target: say so
                notes.append(reading.ABOVE_TARGET)
            rows.append(row + ["*" if b == self.best else "", "; ".join(notes)])
        listed = {b.source for b in self.bounds}
        for src in self.sources:  # a source that does not apply is listed too, with the reason below the table
            if src.name not in listed:
                rows.append([src.name] + [None] * (len(self._header) - 3) + ["", reading.ABSENT])
        order = {name: i for i, name in enumerate(BOUND_SOURCES)}
        rows.sort(key=lambda r: order.get(r[0], len(order)))  # stable: the bounds keep their order
        header, rows = _aligned(rows, self._header, numeric=range(1, len(self._header) - 2))
        return (header, rows) if aligned else rows

    def _absent(self) -> list[str]:
        listed = {b.source for b in self.bounds}
        return [f"{s.name} does not apply: {reading.absent_reason(self, s)}." for s in self.sources
                if s.name not in listed]

    @property
    def _header(self) -> list[str]:
        head = ["source", "epsilon'", "delta'", "gamma", "from eps", "from delta"]
        return head + (["vs exact"] if self.exact is not None else []) + ["best", "note"]

    def _keys(self, rows) -> list[str]:
        """What the table's less obvious entries mean (only those that appear), and the sources that
        do not apply with the reason."""
        keys = self._absent()
        keys += [reading.VS_EXACT_KEY] if self.exact is not None else []
        if any(reading.NO_BETTER in r[-1] for r in rows):
            keys.append(reading.NO_BETTER_KEY)
        if any(reading.ABOVE_TARGET in r[-1] for r in rows):
            keys.append(reading.ABOVE_TARGET_KEY)
        if any("\u2248 0" in str(r[i]) for r in rows for i in (2, 5)):  # delta' and from delta
            keys.append(f"\u2248 0: a value at rounding level (at most "
                        f"{fmt_number(reading.zero_level(self.target_delta))}), printed as zero.")
        return keys

    def __str__(self) -> str:
        c = self.coefficients
        head = [
            self.headline,
            "",
            f"K o M with M = {self.mechanism.description}",
            f"K: {self.operator.shape[0]}x{self.operator.shape[1]} operator "
            f"({c.inputs_used} inputs reachable by M)",
            f"coefficients: Dobrushin {fmt_number(c.dobrushin_gamma)}, Doeblin {fmt_number(c.doeblin_gamma)}, "
            f"ultra-mixing {fmt_number(c.ultra_mixing_gamma)}, K is {fmt_number(c.ldp_epsilon)}-LDP",
            "",
        ]
        header, rows = self._rows()
        table = text_table(header, rows, title=f"certified bounds (target delta' <= "
                                                     f"{fmt_number(self.target_delta)})")
        table += "".join("\n" + textwrap.fill(k, 110, subsequent_indent="    ") for k in self._keys(rows))
        tail = [f"best: ({fmt_number(self.best.epsilon)}, {fmt_number(self.best.delta)})-DP from "
                f"{self.best.source} [{self.best.reference}]"]
        tail += [f"note: {n}" for n in self.notes]
        return "\n".join(head) + table + "\n\n" + "\n".join(tail)

    def _repr_html_(self) -> str:
        c = self.coefficients
        import html

        rows = self._rows(aligned=False)
        lines = [f'<p class="headline"><b>{html.escape(self.headline)}</b></p>',
                 f"<p><b>K o M</b> with M = {html.escape(self.mechanism.description)}; K "
                 f"{self.operator.shape[0]}&times;{self.operator.shape[1]}. Dobrushin "
                 f"{fmt_number(c.dobrushin_gamma)}, Doeblin {fmt_number(c.doeblin_gamma)}, ultra-mixing "
                 f"{fmt_number(c.ultra_mixing_gamma)}.</p>",
                 html_table(self._header, rows),
                 *(f"<p><small>{html.escape(k)}</small></p>" for k in self._keys(rows)),
                 f"<p><b>best</b>: ({fmt_number(self.best.epsilon)}, {fmt_number(self.best.delta)})-DP "
                 f"from {html.escape(self.best.source)}</p>"]
        lines += [f"<p><i>note:</i> {html.escape(n)}</p>" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-safe summary (infinities as ``"inf"``).

        ``sources`` has one entry per bound source: its reference, whether it has a row at the target
        delta' (``applies``, else the ``reason``) and ``no_better_than_input``, the eps' ranges where
        its delta' exceeds M's own ``delta_M(eps')`` (see :meth:`no_better_than_input`)."""
        listed = {b.source for b in self.bounds}
        ranges = self.no_better_than_input()
        sources = []
        for src in self.sources:
            applies = src.name in listed
            sources.append({"name": src.name, "reference": Bound(0.0, 0.0, src.name).reference,
                            "applies": applies, "reason": None if applies else reading.absent_reason(self, src),
                            "no_better_than_input": [list(r) for r in ranges.get(src.name, ())]})
        return {
            "headline": self.headline,
            "mechanism": {"kind": self.mechanism.kind, "description": self.mechanism.description},
            "operator_shape": list(self.operator.shape),
            "target_delta": self.target_delta,
            "coefficients": self.coefficients.to_dict(),
            "bounds": [b.to_dict() for b in self.bounds],
            "best": self.best.to_dict(),
            "exact": None if self.exact is None else self.exact.to_dict(),
            "gaps": {k: _jsonable(v) for k, v in self.gaps().items()},
            "notes": list(self.notes),
            "sources": sources,
        }

    def plot(self, **kwargs):
        """Plot the input profile, each source's bound and the exact profile (needs matplotlib)."""
        from ..audit import plot_report

        return plot_report(self, **kwargs)


def _aligned(rows, header, numeric) -> list:
    """Rows with the ``numeric`` columns pre-formatted and right-aligned (so that a cell such as
    "\u2248 0" does not turn a number column into a left-aligned text column)."""
    cols = set(numeric)
    cells = [[fmt_number(c) if i in cols else c for i, c in enumerate(r)] for r in rows]
    head = list(header)
    for i in cols:
        width = max([len(header[i])] + [len(r[i]) for r in cells])
        head[i] = head[i].rjust(width)
        for r in cells:
            r[i] = r[i].rjust(width)
    return head, cells


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
