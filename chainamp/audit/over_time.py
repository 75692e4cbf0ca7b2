"""Audits over time: the certified epsilon' after T reports of a pipeline file (``reports``, ``memoized``).

A pipeline file with ``reports = [1, 2, 5, 10]`` is certified once per number of reports T, at the
audit's delta' (:func:`certify_reports`, called by :func:`chainamp.io.audit`); the result,
:class:`ReportsOverTime`, prints a small table (T, certified epsilon', exact epsilon', the bound it
came from), has ``to_dict`` and ``_repr_html_``, and plots epsilon' against T
(:func:`chainamp.audit.plot_reports.plot_reports_over_time`).

What is memoized (``memoized = true``, the default). The output of everything before the last
step -- the input mechanism M followed by K1, ..., K_{r-1} -- is drawn once per user (RAPPOR's
permanent randomized response, Erlingsson, Pihur and Korolova 2014); each of the T reports applies
the last step K_r afresh and independently to that one draw. Given the memoized value b the reports
are i.i.d. with law ``K_r(b, .)``, so the counts of the report values are a sufficient statistic
and the T-report channel is the count channel of :func:`chainamp.accounting.memoized_steps`. The
audit certifies ``M, K1, ..., K_{r-1}, <count-channel steps>`` with :func:`chainamp.amplify`, the
steps passed as a list so that every product is formed under chainamp's error model (no product
is folded into M outside it). With one step this is exactly
``chainamp.amplify_reports(M, K, T, memoized=True)``. No number of memoized reports reveals more
than the memoized value itself, so epsilon' never exceeds M's own epsilon (shown as the limit).

``memoized = false``: each report is a fresh draw of the whole pipeline, and T reports are the
T-fold independent composition of the one-report certificate (the audit's main report), computed
by :func:`chainamp.compose` (dp-accounting's pessimistic privacy loss distributions) -- what
``amplify_reports(..., memoized=False)`` does -- and read at the audit's delta'.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

from .._numerics import fmt_number, html_table, text_table
from ..accounting import compose, memoized_steps
from ..amplification import AmplificationReport, amplify
from ..operators import MarkovOperator

__all__ = ["ReportsRow", "ReportsOverTime", "certify_reports"]

#: The ``from`` column of a fresh report's row: the composed one-report certificate.
COMPOSITION_SOURCE = "composition (dp-accounting PLD)"


@dataclass(frozen=True)
class ReportsRow:
    """The certificate after ``reports`` reports: epsilon' at the audit's delta', the exact value
    (finite M, memoized) and the bound it came from; ``report`` is the full amplification report and
    ``steps`` the operators applied after M (what a claim's refutation chains)."""

    reports: int
    epsilon: float
    exact: float | None
    source: str
    report: AmplificationReport = field(repr=False, compare=False)
    steps: tuple = field(default=(), repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"reports": self.reports, "epsilon": _json(self.epsilon), "exact": _json(self.exact),
                "source": self.source}


@dataclass(frozen=True)
class ReportsOverTime:
    """epsilon' at ``delta`` after each number of reports of a pipeline (see :func:`certify_reports`).

    Attributes
    ----------
    memoized : bool
        One draw of everything before the last step, the last step applied T times (True), or T fresh
        draws of the whole pipeline (False).
    delta : float
        The audit's delta'.
    rows : tuple of ReportsRow
        One per number of reports, in increasing order.
    limit : float or None
        Memoized reports only: M's own epsilon at ``delta``, which no number of reports exceeds.
    """

    memoized: bool
    delta: float
    rows: tuple
    limit: float | None = None

    def row(self, reports: int) -> ReportsRow:
        """The row of ``reports`` reports (KeyError when it was not audited)."""
        for r in self.rows:
            if r.reports == reports:
                return r
        raise KeyError(f"{reports} reports were not audited (audited: {[r.reports for r in self.rows]})")

    @property
    def mode(self) -> str:
        return "memoized" if self.memoized else "fresh"

    @property
    def headline(self) -> str:
        """One plain sentence: the guarantee after the most reports audited, and how it grows."""
        last, first = self.rows[-1], self.rows[0]
        d = fmt_number(self.delta)
        what = (f"After {last.reports} {self.mode} report{'s' if last.reports != 1 else ''} the pipeline is "
                f"certified ({fmt_number(last.epsilon)}, {d})-DP")
        if first.reports != last.reports:
            what += f" (after {first.reports}: {fmt_number(first.epsilon)})"
        if self.memoized:
            limit = "" if self.limit is None else f" = {fmt_number(self.limit)}"
            return (what + f"; the reports re-randomise one memoized value, so no number of them exceeds "
                           f"M's own epsilon{limit}.")
        return what + "; each report is a fresh draw, so the guarantee composes and keeps growing with T."

    def _note(self) -> str:
        if self.memoized:
            return ("memoized: everything before the last step is drawn once; the last step is applied T times, "
                    "independently, to that draw")
        return "fresh: T independent draws of the whole pipeline, the one-report certificate composed T times"

    def _header(self) -> list:
        return ["T", f"certified eps' (delta' = {fmt_number(self.delta)})", "exact eps'", "from"]

    def _rows(self) -> list:
        return [[r.reports, r.epsilon, r.exact, r.source] for r in self.rows]

    def _title(self) -> str:
        return f"epsilon' after T {self.mode} reports"

    def __str__(self) -> str:
        lines = [self.headline, text_table(self._header(), self._rows(), title=self._title()), self._note()]
        if self.limit is not None:
            lines.append(f"limit: M alone is {fmt_number(self.limit)}-DP at delta' = {fmt_number(self.delta)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        out = f"<p>{html.escape(self.headline)}</p>"
        out += html_table(self._header(), self._rows(), title=self._title())
        out += f"<p><small>{html.escape(self._note())}</small></p>"
        return out

    def to_dict(self) -> dict:
        """JSON-safe (infinities as ``"inf"``)."""
        return {"memoized": self.memoized, "delta": self.delta, "headline": self.headline,
                "limit": _json(self.limit), "rows": [r.to_dict() for r in self.rows]}

    def plot(self, **kwargs):
        """epsilon' against T (needs matplotlib; see :func:`chainamp.audit.plot_reports.plot_reports_over_time`)."""
        from .plot_reports import plot_reports_over_time

        return plot_reports_over_time(self, **kwargs)


def _json(v):
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def certify_reports(mechanism: Any, operators: tuple, one: AmplificationReport, reports: tuple, *,
                    memoized: bool = True, neighbors: Any = None, progress=None) -> ReportsOverTime:
    """Certify T reports of the pipeline ``mechanism, *operators`` for each T in ``reports``.

    ``memoized=True``: ``amplify(mechanism, [*operators[:-1], *memoized_steps(operators[-1], T)])``
    (see the module docstring: the output of everything before the last step is memoized, the last
    step applied T times), the same channel as :func:`chainamp.amplify_reports`. ``memoized=False``:
    the T-fold composition of ``one`` (:func:`chainamp.compose`). T = 1 is ``one`` itself, the
    audit's main report. Every row is read at ``one.target_delta``.

    Raises what :func:`chainamp.accounting.memoized_steps` and :func:`chainamp.amplify` raise (an
    ``InvalidParameterError`` when the count channel of T reports is too large).

    Examples
    --------
    >>> from chainamp import mechanisms
    >>> M, K = mechanisms.rappor_permanent(0.5), mechanisms.rappor_instantaneous(0.5, 0.75)
    >>> over = certify_reports(M, (K,), amplify(M, K), (1, 2, 10))
    >>> [(r.reports, round(r.epsilon, 4)) for r in over.rows], round(over.limit, 4)
    ([(1, 0.3365), (2, 0.619), (10, 1.096)], 1.0986)
    """
    say = progress or (lambda text: None)
    delta = one.target_delta
    ops = list(operators)
    rows = []
    for T in sorted(reports):
        if T == 1:
            rows.append(ReportsRow(1, one.best.epsilon, _exact(one), one.best.source, one, tuple(ops)))
            continue
        say(f"{T} {'memoized' if memoized else 'fresh'} reports")
        if memoized:
            steps = tuple(ops[:-1]) + tuple(memoized_steps(ops[-1], T))
            rep = amplify(mechanism, list(steps), neighbors=neighbors, delta=delta)
            rows.append(ReportsRow(T, rep.best.epsilon, _exact(rep), rep.best.source, rep, steps))
        else:
            identity = MarkovOperator.identity(2)
            rep = amplify(compose([one], counts=[T]), identity, delta=delta)
            rows.append(ReportsRow(T, rep.best.epsilon, None, COMPOSITION_SOURCE, rep, (identity,)))
    limit = float(one.mechanism.profile.epsilon(delta)) if memoized else None
    if limit is not None and not math.isfinite(limit):
        limit = None
    return ReportsOverTime(memoized, delta, tuple(rows), limit)


def _exact(report: AmplificationReport) -> float | None:
    return None if report.exact is None else report.exact.epsilon
