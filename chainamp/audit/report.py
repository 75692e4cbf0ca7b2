"""Standalone reports: one HTML or Markdown file for an amplification result, with its plots.

:func:`write_report` accepts an :class:`~chainamp.amplification.AmplificationReport`,
a :class:`~chainamp.amplification.StepsReport`, or any object with ``to_dict()`` and
``__str__`` (an audit result, say); when such an object has an attribute
``reports`` holding amplification or steps reports (or Markov operators, drawn
as heat maps), each of them gets its own section with its plot, and its table
unless the object's own text (or HTML) already contains it.

Formats, chosen by the file's suffix:

``.html`` (or ``.htm``)
    One self-contained file: each section's ``_repr_html_`` table (the plain
    text in ``<pre>`` when the object has none), the plots as base64 PNG
    ``<img>`` elements, and the ``to_dict()`` data as a JSON appendix. No
    external resources.
``.md``
    Markdown: each section's text in a fenced block, the plots written as PNG
    files *next to* the Markdown file (``<stem>-plot-1.png``, ...) and linked
    relatively, and the JSON appendix in a fenced block. Image files keep the
    Markdown readable on any viewer that refuses data URIs (GitHub does).

Every report starts, under its title, with the result's one plain sentence (its
``headline``: what is certified, for which pipeline, from which theorem, and how far
from the exact or worst-case value); each profile plot has a caption saying what its
marks mean (:data:`chainamp.audit.plot_profiles.PLOT_KEY`).

When matplotlib is not installed the report is still written, without plots,
says so, and :func:`write_report` warns (a ``UserWarning``; the command line prints
it on stderr). The output is deterministic (no timestamps).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import pathlib
import warnings
from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from ..operators import MarkovOperator

__all__ = ["write_report"]

_CSS = ("body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:1em 0;font-size:.9em}"
        "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}th{background:#f3f3f3}"
        ".num{text-align:right;font-variant-numeric:tabular-nums}"
        "pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.85em}"
        "img{max-width:100%;height:auto}details{margin-top:2em}")


def _json_safe(value: Any) -> Any:
    """Recursively JSON-safe: infinities and NaN as strings, numpy scalars and arrays as Python values."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return _json_safe(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if value is None or isinstance(value, (int, str)):
        return value
    return str(value)


def _plot_of(obj):
    """The default figure for a known result type, else None (no plotting attempted)."""
    from ..amplification import AmplificationReport
    from ..amplification import StepsReport

    if isinstance(obj, AmplificationReport):
        from .plot import plot_report

        return plot_report(obj)
    if isinstance(obj, StepsReport):
        from .plot import plot_steps

        return plot_steps(obj)
    if isinstance(obj, MarkovOperator):
        from .plot import plot_operator

        return plot_operator(obj)
    from .over_time import ReportsOverTime

    if isinstance(obj, ReportsOverTime):  # an audit with reports = T: epsilon' against T
        from .plot_reports import plot_reports_over_time

        return plot_reports_over_time(obj)
    from ..shuffle import ShuffleReport

    if isinstance(obj, ShuffleReport):  # an audit with shuffle = {users = n}: its profile and the lower one
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 4.0))
        obj.plot(fig.add_subplot())
        return fig
    return None


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def _sections(result) -> list[tuple[str, Any]]:
    """``(heading, object)`` pairs: the result itself, then each report it holds."""
    out = [("", result)]
    held = getattr(result, "reports", None)
    if held is not None and not isinstance(result, str):
        items = held.items() if isinstance(held, dict) else enumerate(held, start=1)
        for key, rep in items:
            out.append((f"report {key}" if isinstance(key, int) else str(key), rep))
    return out


def _default_title(result) -> str:
    mech = getattr(result, "mechanism", None) or getattr(getattr(result, "report", None), "mechanism", None)
    desc = getattr(mech, "description", mech)
    if isinstance(desc, str):
        return f"chainamp report: K o M with M = {desc}"
    return f"chainamp report: {type(result).__name__}"


def _figures(sections) -> tuple[list[list[bytes]], str | None]:
    """PNG bytes per section; a note instead when matplotlib is missing."""
    pngs: list[list[bytes]] = []
    for _, obj in sections:
        try:
            fig = _plot_of(obj)
        except ImportError as exc:
            return [[] for _ in sections], f"plots omitted: {exc}"
        pngs.append([] if fig is None else [_png(fig)])
    return pngs, None


def _caption(obj) -> str | None:
    """What the marks of the object's plot mean (profile plots only)."""
    from ..amplification import AmplificationReport

    if isinstance(obj, AmplificationReport):
        from .plot_profiles import PLOT_KEY

        return PLOT_KEY
    from .over_time import ReportsOverTime

    if isinstance(obj, ReportsOverTime):
        from .plot_reports import REPORTS_PLOT_KEY

        return REPORTS_PLOT_KEY
    return None


def _headline(result) -> str | None:
    lead = getattr(result, "headline", None)
    return lead if isinstance(lead, str) and lead else None


def write_report(result: Any, path: str | pathlib.Path, *, title: str | None = None) -> pathlib.Path:
    """Write ``result`` as a standalone HTML or Markdown report with its plots.

    Parameters
    ----------
    result : AmplificationReport, StepsReport, or an object with ``to_dict()`` and ``__str__``
        An object with a ``reports`` attribute (list or dict of reports) gets a
        section per report held.
    path : str or pathlib.Path
        ``.html``/``.htm`` (self-contained) or ``.md`` (PNG files written next to it).
    title : str, optional
        The report's heading (default: from the input mechanism, or the type name).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    InvalidParameterError
        For any other suffix.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from chainamp import DP, MarkovOperator, amplify
    >>> r = amplify(DP(1.0), MarkovOperator([[0.75, 0.25], [0.25, 0.75]]))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_report(r, pathlib.Path(tmp) / "r.html")
    ...     text = out.read_text()
    >>> text.startswith("<!DOCTYPE html>"), "<table>" in text
    (True, True)
    """
    if not isinstance(path, (str, pathlib.Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    out = pathlib.Path(path)
    kind = out.suffix.lower()
    if kind not in (".html", ".htm", ".md"):
        raise InvalidParameterError(
            f"path {str(out)!r}: the report format comes from the suffix, which must be .html, .htm or .md "
            f"(got {out.suffix!r})")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    heading = title if title is not None else _default_title(result)
    sections = _sections(result)
    pngs, note = _figures(sections)
    if note:
        warnings.warn(f"{out}: {note}", UserWarning, stacklevel=2)
    data = _json_safe(result.to_dict()) if callable(getattr(result, "to_dict", None)) else None
    if kind == ".md":
        text = _markdown(heading, sections, pngs, note, data, out)
    else:
        text = _html(heading, sections, pngs, note, data)
    out.write_text(text, encoding="utf-8")
    return out


def _html(heading, sections, pngs, note, data) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(heading)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(heading)}</h1>"]
    top, top_text = "", str(sections[0][1])
    for (name, obj), figs in zip(sections, pngs):
        if name:
            parts.append(f"<h2>{html.escape(name)}</h2>")
        rich = getattr(obj, "_repr_html_", None)
        body = rich() if callable(rich) else f"<pre>{html.escape(str(obj))}</pre>"
        if not name:
            top = body
        # a held report's table already in the result's own is not repeated, nor a plain text already in its text
        if not name and not callable(rich) and _headline(obj):  # the plain sentence first, as a paragraph
            parts.append(f'<p class="headline"><b>{html.escape(_headline(obj))}</b></p>')
        core = body.split("</p>", 1)[-1].lstrip("\n") if body.startswith('<p class="headline">') else body
        if not name or (core not in top and (callable(rich) or str(obj) not in top_text)):
            parts.append(body)
        if not name and note:  # after the result's own sentence, which every report starts with
            parts.append(f"<p><i>{html.escape(note)}</i></p>")
        for k, png in enumerate(figs, start=1):
            b64 = base64.b64encode(png).decode("ascii")
            parts.append(f'<p><img alt="{html.escape(name or "result")} plot {k}" '
                         f'src="data:image/png;base64,{b64}"></p>')
            if _caption(obj):
                parts.append(f"<p><small>{html.escape(_caption(obj))}</small></p>")
    if data is not None:
        dumped = json.dumps(data, indent=2, sort_keys=False)
        parts.append(f"<details><summary>JSON data</summary><pre>{html.escape(dumped)}</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _fence(text: str, lang: str = "text") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _markdown(heading, sections, pngs, note, data, out: pathlib.Path) -> str:
    parts = [f"# {heading}", ""]
    lead = _headline(sections[0][1])
    if lead:  # the plain sentence as a paragraph, not inside the fenced text
        parts += [lead, ""]
    if note:
        parts += [f"*{note}*", ""]
    count = 0
    top = str(sections[0][1])
    for (name, obj), figs in zip(sections, pngs):
        if name:
            parts += [f"## {name}", ""]
        text = str(obj)
        if not name or text not in top:  # a held report's text already in the result's own is not repeated
            body = text
            if not name and lead and body.startswith(lead):
                body = body[len(lead):].lstrip("\n")
            parts += [_fence(body), ""]
        for png in figs:
            count += 1
            img = out.with_name(f"{out.stem}-plot-{count}.png")
            img.write_bytes(png)
            parts += [f"![{name or 'result'} plot]({img.name})", ""]
            if _caption(obj):
                parts += [f"*{_caption(obj)}*", ""]
    if data is not None:
        parts += ["## JSON data", "", _fence(json.dumps(data, indent=2), "json"), ""]
    return "\n".join(parts)
