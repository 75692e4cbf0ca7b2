"""The figure of an audit over time: certified epsilon' against the number of reports T
(:func:`plot_reports_over_time`; matplotlib is imported lazily, as in :mod:`.plot`).

Each call draws one curve -- the certified epsilon' of a :class:`~chainamp.audit.over_time.ReportsOverTime`
at its delta' -- and, for memoized reports, M's own epsilon as a dashed horizontal line of the same
colour: the limit no number of memoized reports exceeds. Pass the same ``ax`` to overlay memoized and
fresh reports of one pipeline.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import fmt_number
from .figures import _axes, _finish

__all__ = ["plot_reports_over_time"]

#: What the figure shows: the caption of its plot in a standalone report.
REPORTS_PLOT_KEY = ("Certified epsilon' at the audit's delta' after T reports (one marker per audited T). Dashed: "
                    "M's own epsilon, which memoized reports never exceed; fresh reports compose and keep growing.")


def plot_reports_over_time(over_time, ax=None, label=None):
    """Certified ``eps'`` after T reports, against T.

    Parameters
    ----------
    over_time : ReportsOverTime
        From :func:`chainamp.io.audit` (``result.over_time``) or
        :func:`chainamp.audit.over_time.certify_reports`.
    ax : matplotlib Axes, optional
        Draw here (e.g. memoized and fresh reports on one plot, each with its ``label``).
    label : str, optional
        Legend entry (default ``"memoized reports"`` or ``"fresh reports"``).

    Filled markers are the certified values; for memoized reports a dashed line of the same colour
    marks M's own epsilon (``over_time.limit``). Where nothing is certified (infinite epsilon') a
    cross sits on the top edge. The T axis is logarithmic when T spans more than a factor 20. The
    title and axis labels are set only on an Axes that has none yet.

    Returns
    -------
    matplotlib.figure.Figure, or the given Axes

    Examples
    --------
    >>> from chainamp import amplify, mechanisms
    >>> from chainamp.audit.over_time import certify_reports
    >>> M, K = mechanisms.rappor_permanent(0.5), mechanisms.rappor_instantaneous(0.5, 0.75)
    >>> fig = plot_reports_over_time(certify_reports(M, (K,), amplify(M, K), (1, 2, 3)))
    >>> line = fig.axes[0].get_lines()[0]
    >>> line.get_xdata().tolist(), line.get_label()
    ([1, 2, 3], 'memoized reports')
    """
    from .over_time import ReportsOverTime

    if not isinstance(over_time, ReportsOverTime):
        raise TypeError(f"over_time must be a ReportsOverTime (AuditResult.over_time), got {type(over_time).__name__}")
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")
    fig, ax = _axes(ax, (6.5, 4.0))
    t = np.array([r.reports for r in over_time.rows])
    eps = np.array([r.epsilon if math.isfinite(r.epsilon) else math.nan for r in over_time.rows])
    (line,) = ax.plot(t, eps, "o-", ms=5, lw=1.6, label=label if label is not None else f"{over_time.mode} reports")
    if over_time.limit is not None:
        ax.axhline(over_time.limit, color=line.get_color(), ls="--", lw=1.0, alpha=0.8,
                   label=f"M alone: eps = {fmt_number(over_time.limit, 4)} (the memoized limit)")
    none = np.isnan(eps)
    if none.any():
        ax.plot(t[none], np.ones(int(none.sum())), "x", color="crimson", ms=7, ls="none", clip_on=False,
                transform=ax.get_xaxis_transform(), label="nothing certified")
    if t.size and t.max() / max(t.min(), 1) > 20:
        ax.set_xscale("log")
    else:  # T is a count: whole-number ticks
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if not ax.get_xlabel():
        ax.set_xlabel("number of reports T")
    if not ax.get_ylabel():
        ax.set_ylabel(f"certified epsilon' at delta' = {fmt_number(over_time.delta)}")
    if not ax.get_title():
        ax.set_title("Privacy over time: epsilon' after T reports", fontsize=10)
    ax.update_datalim([[float(t.min()), 0.0]])  # epsilon' = 0 in view; autoscaling stays on for overlays
    ax.autoscale_view()
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _finish(fig, ax)
