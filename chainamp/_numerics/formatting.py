"""Plain-text and HTML tables for the report objects' ``__str__`` and ``_repr_html_``."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

__all__ = ["fmt_number", "text_table", "html_table", "preview_labels", "jsonable_number"]


def fmt_number(x, digits: int = 6) -> str:
    """Compact number formatting: ``inf``, fixed for moderate values, scientific for tiny ones.

    >>> [fmt_number(v) for v in (None, 0.0, 1e-6, 2.5e-7, 0.735326, float("inf"), 3.2e7)]
    ['-', '0', '1e-06', '2.5e-07', '0.735326', 'inf', '3.2e+07']
    """
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if abs(x) < 1e-3 or abs(x) >= 1e6:  # scientific, without trailing zeros: 1e-06, 2.5e-07, 9.9992e-07
        return f"{x:.{max(digits - 1, 3)}g}"
    return f"{x:.{digits}g}"


def preview_labels(labels: Sequence, k: int = 4) -> str:
    """The first ``k`` labels, as their reprs in parentheses, with ``...`` when there are more (for messages).

    >>> preview_labels(("a", "b")), preview_labels(range(6))
    ("('a', 'b')", '(0, 1, 2, 3, ...)')
    """
    labels = tuple(labels)
    shown = ", ".join(repr(lab) for lab in labels[:k])
    return f"({shown}{', ...' if len(labels) > k else ''})"


def jsonable_number(x):
    """``x`` for JSON, which has no infinity: a float infinity becomes ``"inf"`` or ``"-inf"``, anything else is
    returned unchanged.

    >>> [jsonable_number(v) for v in (float("inf"), -float("inf"), 0.5, None)]
    ['inf', '-inf', 0.5, None]
    """
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def text_table(header: Sequence[str], rows: Sequence[Sequence], title: str | None = None) -> str:
    """An aligned text table: columns of numbers (formatted ones, "-" and "\u2248 0" included) right-aligned,
    text columns left-aligned."""
    cells = [[fmt_number(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    numeric = [all(_looks_numeric(r[i]) for r in rows) for i in range(len(header))]

    def line(vals):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()

    out = [title] if title else []
    out += [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)


def _looks_numeric(value) -> bool:
    """A number, a missing value, or a formatted number ("0.5", "inf", "-", "\u2248 0") in a table cell."""
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    if type(value).__module__ == "numpy" and isinstance(value, (int, float)) or hasattr(value, "dtype"):
        return True
    text = str(value).strip()
    if text in ("", "-", "\u2248 0"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def html_table(header: Sequence[str], rows: Sequence[Sequence], title: str | None = None) -> str:
    """The same table as HTML (escaped); columns of numbers carry ``class="num"`` (right-aligned by the
    reports' style sheet), text columns are left as text (left-aligned).

    >>> html_table(["source", "eps"], [["tight", 0.5]])
    '<table><thead><tr><th>source</th><th class="num">eps</th></tr></thead><tbody><tr><td>tight</td><td class="num">0.5</td></tr></tbody></table>'
    """
    numeric = [bool(rows) and all(_looks_numeric(r[i]) for r in rows) for i in range(len(header))]

    def cls(i: int) -> str:
        return ' class="num"' if numeric[i] else ""

    head = "".join(f"<th{cls(i)}>{html.escape(h)}</th>" for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td{cls(i)}>{html.escape(fmt_number(c))}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    cap = f"<caption>{html.escape(title)}</caption>" if title else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
