"""The result of a design: :class:`DesignResult`, with its text, HTML and JSON presentation."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import fmt_number, html_table, jsonable_number, preview_labels, text_table
from ..operators import MarkovOperator

__all__ = ["DesignResult"]


@dataclass(frozen=True)
class DesignResult:
    """An optimal operator K, its expected loss, a certified lower bound on every K's loss, and evidence.

    Attributes
    ----------
    K : MarkovOperator
        The designed operator (rows renormalised, negatives clipped, repaired if chainamp's certificate
        needed it).
    objective : float
        The expected loss of the returned K, recomputed in numpy.
    dual_bound : float
        A certified lower bound on the loss of *every* feasible K (see :mod:`chainamp.design.duals`),
        rounded down: ``dual_bound <= objective``.
    report : AmplificationReport or None
        ``chainamp.amplify(M, K, delta=delta)`` for :func:`~chainamp.design.optimal_post_processing`;
        None for :func:`~chainamp.design.optimal_mixing_operator`.
    notes : tuple of str
    kind : str
        ``"post_processing"`` or ``"mixing"``.
    target_epsilon, target_delta : float or None
        The (epsilon, delta)-LDP target of a post-processing design.
    certified_epsilon : float or None
        ``report.epsilon_at(target_delta)``, at most ``target_epsilon``.
    coefficient : str or None
        ``"dobrushin"`` or ``"doeblin"`` for a mixing design.
    gamma, certified_gamma : float or None
        The target coefficient, and chainamp's own recomputation for K (at most ``gamma``).
    repair : float
        The weight lam of the uniform constant operator mixed into the LP's K (0 when none was needed).
    solver, status : str or None
        The solver and its status (always ``"optimal"``): a cvxpy solver name, ``"block-IPM"`` (the compact
        post-processing LP's interior-point method) or ``"CLARABEL"`` (called directly); None when no LP was solved
        (closed form).
    """

    K: MarkovOperator
    objective: float
    dual_bound: float
    report: Any
    notes: tuple = ()
    kind: str = "post_processing"
    target_epsilon: float | None = None
    target_delta: float | None = None
    certified_epsilon: float | None = None
    coefficient: str | None = None
    gamma: float | None = None
    certified_gamma: float | None = None
    repair: float = 0.0
    solver: str | None = None
    status: str | None = None

    @property
    def gap(self) -> float:
        """``objective - dual_bound``: how far the returned K can be from the best possible one."""
        return self.objective - self.dual_bound

    @property
    def headline(self) -> str:
        """The first line of the text: what K achieves and what no K can beat."""
        if self.kind == "mixing":
            name = "Dobrushin" if self.coefficient == "dobrushin" else "Doeblin"
            return (f"K has {name} coefficient <= {fmt_number(self.certified_gamma)} (certified) with expected loss "
                    f"{fmt_number(self.objective)}; no K can do better than {fmt_number(self.dual_bound)}.")
        at = f", delta' = {fmt_number(self.target_delta)}" if self.target_delta else ""
        return (f"K keeps the pipeline at eps' <= {fmt_number(self.certified_epsilon)} (certified{at}) with expected "
                f"loss {fmt_number(self.objective)}; no K can do better than {fmt_number(self.dual_bound)}.")

    def _rows(self) -> list[list]:
        rows = [["expected loss of K", self.objective], ["lower bound for every K", self.dual_bound],
                ["gap", self.gap]]
        if self.kind == "mixing":
            rows += [[f"target {self.coefficient} coefficient", self.gamma],
                     [f"{self.coefficient} coefficient of K (chainamp)", self.certified_gamma]]
        else:
            rows += [["target epsilon", self.target_epsilon], ["target delta", self.target_delta],
                     ["certified epsilon' of K o M", self.certified_epsilon]]
        rows += [["repair weight", self.repair], ["solver", self.solver or "closed form"]]
        return rows

    def __str__(self) -> str:
        K = self.K
        lines = [self.headline, f"K: {K.shape[0]}x{K.shape[1]} operator from {preview_labels(K.inputs)} to "
                                f"{preview_labels(K.outputs)}", ""]
        table = text_table(["quantity", "value"], self._rows())
        return "\n".join(lines) + table + "".join(f"\nnote: {n}" for n in self.notes)

    def _repr_html_(self) -> str:
        K = self.K
        parts = [f"<p><b>{html.escape(self.headline)}</b></p>",
                 f"<p>K: {K.shape[0]}&times;{K.shape[1]} operator from {html.escape(preview_labels(K.inputs))} to "
                 f"{html.escape(preview_labels(K.outputs))}</p>",
                 html_table(["quantity", "value"], self._rows())]
        parts += [f"<p><i>note:</i> {html.escape(n)}</p>" for n in self.notes]
        return "\n".join(parts)

    def to_dict(self) -> dict:
        """JSON-safe summary (labels that are not str/int/float become their repr; infinities ``"inf"``)."""
        return {
            "kind": self.kind,
            "summary": self.headline,
            "K": {"inputs": [_label(x) for x in self.K.inputs], "outputs": [_label(y) for y in self.K.outputs],
                  "matrix": np.asarray(self.K.matrix, dtype=float).tolist()},
            "objective": self.objective,
            "dual_bound": self.dual_bound,
            "gap": self.gap,
            "target_epsilon": jsonable_number(self.target_epsilon),
            "target_delta": self.target_delta,
            "certified_epsilon": jsonable_number(self.certified_epsilon),
            "coefficient": self.coefficient,
            "gamma": self.gamma,
            "certified_gamma": self.certified_gamma,
            "repair": self.repair,
            "solver": self.solver,
            "status": self.status,
            "notes": list(self.notes),
            "report": None if self.report is None else self.report.to_dict(),
        }


def _label(v):
    if isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return repr(v)
