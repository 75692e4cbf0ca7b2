"""The privacy-profile figure of an amplification report: :func:`plot_report` (re-exported by
:mod:`.plot` and ``chainamp.plot``).

It draws what the report certifies and how it reads (:meth:`AmplificationReport.curves`): each
source's ``delta'(eps')`` next to the input's own profile ``delta_M(eps')``. Post-processing never
hurts, so where a source's ``delta'`` exceeds ``delta_M(eps')`` the input is the better
certificate: the source is drawn there clipped to M's profile and faded ("no better than M
here"), and no curve is ever drawn above the input's profile. A ``delta'`` at rounding level
(``DISPLAY_ZERO_ATOL``) is drawn as 0 -- a downward triangle on the bottom edge where a curve
reaches 0, and "(0 from eps' = x)" (or "(≈ 0 from ...)") in its legend entry -- so that it does
not stretch the log axis to 1e-15. Curves that coincide get distinct dash styles, and their
legend entries say which curve they coincide with.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import DISPLAY_ZERO_ATOL, check_epsilon, check_positive, fmt_number
from ..errors import InvalidParameterError
from .figures import _axes, _finish, _legend

__all__ = ["plot_report"]

#: Number of eps' grid points :func:`plot_report` evaluates by default.
REPORT_GRID_POINTS = 81
#: What the figure's marks mean: the legend's title, and the caption of a standalone report's plot.
PLOT_KEY = ("(0 from eps' = x): the curve's delta' is 0 from eps' = x on (\u25bc on the bottom edge; "
            "\u2248 0: at rounding level). Faded: no better than M here -- the source's delta' exceeds M's "
            "own profile, which is the better certificate, so the curve is drawn clipped to it. "
            "Dashed or dotted: a curve that coincides with the one named after '='.")
_LEGEND_TITLE = ("(0 from eps' = x): the curve reaches delta' = 0 at eps' = x (\u25bc on the bottom edge)\n"
                 "faded: no better than M here (clipped to M's profile)")

_EXACT_STYLE = {"color": "black", "lw": 3.0}
#: M's own profile is dashed and drawn above every other curve (zorder), so that no bound hides it.
_INPUT_STYLE = {"color": "0.45", "lw": 1.8, "ls": "--", "zorder": 3.5}
#: Dash patterns of the second, third, ... curve that coincides with one drawn before it.
_DASHES = ((0, (5, 3)), (0, (1.5, 2.0)), (0, (7, 2, 1.5, 2)), (0, (3, 1.5)), (0, (1, 4)))
_FADED_ALPHA = 0.3


def _grid(epsilons) -> np.ndarray:
    try:
        grid = np.asarray(epsilons, dtype=float).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"epsilons must be an array of real numbers, got {epsilons!r}") from None
    if grid.size == 0:
        raise InvalidParameterError("epsilons must hold at least one value (got an empty array)")
    for e in grid:
        check_epsilon(float(e), "epsilons", allow_inf=False)
    return np.unique(grid)


def _zero_suffix(eps: np.ndarray, delta: np.ndarray, level: float) -> tuple[str, int | None]:
    """``(" (0 from eps' = x)", index)`` at the first eps' where ``delta' <= level``, else ``("", None)``."""
    with np.errstate(invalid="ignore"):
        low = np.flatnonzero(delta <= level)
    if not low.size:
        return "", None
    i = int(low[0])
    what = "0" if delta[i] == 0 else "\u2248 0"
    return f" ({what} from eps' = {fmt_number(eps[i], 3)})", i


def _drawable(delta: np.ndarray, level: float) -> np.ndarray:
    """A curve for a log axis: values at rounding level (and zeros) masked."""
    with np.errstate(invalid="ignore"):
        return np.where(delta > level, delta, np.nan)


def _zero_marker(ax, x: float, color, faded: bool = False) -> None:
    ax.plot([x], [0.0], marker="v", ms=8, color=color, clip_on=False, transform=ax.get_xaxis_transform(),
            ls="none", gid="zero-marker", alpha=_FADED_ALPHA if faded else 1.0)


def plot_report(report, ax=None, epsilons=None, *, display_zero_atol: float = DISPLAY_ZERO_ATOL):
    """Privacy profiles ``delta'(eps')`` of the input, every bound source and the exact pipeline.

    Parameters
    ----------
    report : AmplificationReport
        From :func:`chainamp.amplify`.
    ax : matplotlib Axes, optional
        Draw here instead of on a new figure.
    epsilons : array_like, optional
        The ``eps'`` grid (default: :meth:`AmplificationReport.epsilon_grid`, about
        :data:`REPORT_GRID_POINTS` points from 0 to a little past the input's pure-DP level,
        or past ``eps_M(delta)`` for a tiny delta when the input has none).
    display_zero_atol : float, optional
        A ``delta'`` at most this (and at most 1e-3 of a positive target delta') is drawn as 0
        (default ``DISPLAY_ZERO_ATOL``).

    Returns
    -------
    matplotlib.figure.Figure, or the given Axes

    Notes
    -----
    One line per source that applies at the target (label = source name, as in the
    report's table; a source that does not apply is named in one legend entry, not
    drawn, and so is a source no better than M at any eps', whose curve lies under
    M's), the input profile dashed grey above every other curve, the exact profile
    of a finite pipeline solid black (drawn under the others), the target ``delta'`` as a dotted horizontal
    line and the report's best bound as a star (on the bottom edge when its
    delta' is 0). Where a source is no better than the input it is drawn clipped
    to the input's profile and faded (one legend entry says so). A bound whose
    curve coincides (within relative 1e-3) with the exact profile or with a bound
    listed before it says so in the legend (``tight (= exact)``) and is drawn
    dashed. The delta axis is logarithmic. On a new figure the legend sits below
    the axes; on a given ``ax``, inside it. :data:`PLOT_KEY` explains the marks.

    Examples
    --------
    >>> from chainamp import DP, MarkovOperator, amplify
    >>> r = amplify(DP(1.0, 1e-3), MarkovOperator([[0.75, 0.25], [0.25, 0.75]]))
    >>> fig = plot_report(r)            # the same as r.plot()
    >>> fig.axes[0].get_yscale(), len(fig.axes[0].get_legend().get_texts()) >= 7
    ('log', True)
    """
    from ..amplification import AmplificationReport

    if not isinstance(report, AmplificationReport):
        hint = "; use plot_steps for a StepsReport" if type(report).__name__ == "StepsReport" else ""
        raise TypeError(f"report must be an AmplificationReport (from chainamp.amplify), "
                        f"got {type(report).__name__}{hint}")
    atol = check_positive(display_zero_atol, "display_zero_atol", strict=False)
    grid = report.epsilon_grid() if epsilons is None else _grid(epsilons)
    curves = report.curves(None if epsilons is None else grid)
    level = min(atol, 1e-3 * report.target_delta) if report.target_delta > 0 else atol
    fig, ax = _axes(ax, (8.0, 6.0))

    prof = report.mechanism.profile
    inp = np.minimum(np.asarray(prof.delta(grid), dtype=float).reshape(grid.shape), 1.0)
    suffix, zero = _zero_suffix(grid, inp, level)
    (line,) = ax.plot(grid, _drawable(inp, level), label=f"input M: {report.mechanism.description}{suffix}",
                      **_INPUT_STYLE)
    if zero is not None:
        _zero_marker(ax, grid[zero], line.get_color())

    drawn: list = []  # (name, eps, shown) of the curves drawn so far, for "coincides with"
    exact = [c for c in curves if c.name == "exact"]
    faded_any, n_dashed = False, 0
    listed = {b.source for b in report.bounds}
    absent = [c.name for c in curves if c.name != "exact" and c.name not in listed]
    hidden: list = []  # curves no better than M at every eps': drawn under M's curve, named in one entry
    for c in exact + [c for c in curves if c.name != "exact"]:  # the exact curve first, under the others
        if c.name in absent:  # the table says "does not apply": no curve either
            continue
        shown = c.shown
        same = None if c.name == "exact" else _coincides(c.epsilons, shown, drawn)
        drawn.append((c.name, c.epsilons, shown, c.steps))
        suffix, zero = _zero_suffix(c.epsilons, c.deltas, level)
        if c.name == "exact":
            label, style = "exact (M then K)", dict(_EXACT_STYLE, zorder=1.9)
        else:
            label, style = c.name if same is None else f"{c.name} (= {same})", {"lw": 1.4}
            if same is not None:
                style["ls"] = _DASHES[n_dashed % len(_DASHES)]
                n_dashed += 1
        nb = c.no_better
        main = np.where(nb, np.nan, _drawable(shown, level))
        how = "steps-post" if c.steps else "default"
        if c.name != "exact" and not np.any(np.isfinite(main)):  # nothing of it would be visible
            hidden.append(c.name)
            label = "_" + label
        (line,) = ax.plot(c.epsilons, main, label=label + suffix, drawstyle=how, **style)
        if nb.any():
            faded_any = True
            faded = {k: v for k, v in style.items() if k not in ("zorder", "color")}  # color: the line's
            ax.plot(c.epsilons, _drawable(shown, level), drawstyle=how, color=line.get_color(),
                    alpha=_FADED_ALPHA, zorder=line.get_zorder() - 0.05, label=f"_{c.name} no better than M",
                    gid="no-better", **faded)
        if zero is not None and c.name not in hidden:
            _zero_marker(ax, c.epsilons[zero], line.get_color(), faded=bool(nb[zero]))
    if faded_any:
        ax.plot([], [], color="0.4", alpha=_FADED_ALPHA, lw=3.0, label="faded: no better than M here")
    if hidden:
        ax.plot([], [], ls="none", label=_wrapped(f"under M's curve (no better than M at any eps'): {', '.join(hidden)}"))
    if absent:
        ax.plot([], [], ls="none", label=_wrapped(f"not drawn (does not apply, see the table): {', '.join(absent)}"))
    if report.target_delta > 0:
        ax.axhline(report.target_delta, color="0.6", ls=":", lw=1,
                   label=f"target delta' = {fmt_number(report.target_delta)}")
    best = report.best
    if math.isfinite(best.epsilon):
        # delta' = 0 has no place on a log axis: the star then sits on the bottom edge
        where = {} if best.delta > 0 else {"transform": ax.get_xaxis_transform(), "clip_on": False}
        ax.plot([best.epsilon], [best.delta], marker="*", ms=13, color="crimson", ls="none", zorder=4,
                label=f"best: eps' = {fmt_number(best.epsilon, 4)}, delta' = {fmt_number(best.delta, 3)} "
                      f"({best.source})", **where)
    ax.set_yscale("log")
    ax.set_xlabel("epsilon'")
    ax.set_ylabel("delta'(epsilon')")
    ax.set_title("Privacy profiles of M and of K o M")
    ax.grid(True, which="major", alpha=0.3)
    _legend(fig, ax, title=_LEGEND_TITLE)
    return _finish(fig, ax)


def _wrapped(text: str, width: int = 48) -> str:
    """A legend text on lines of at most ``width`` characters (a long list of names would widen the legend)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False))


def _coincides(eps: np.ndarray, delta: np.ndarray, drawn) -> str | None:
    """The name of an already drawn curve this one hides (or is hidden by), else None.

    Compared at the eps' both curves were evaluated at. Relative 1e-3 on delta:
    closer curves are indistinguishable on a log axis of a few inches, so the
    legend says the curve is there, under another, and it is drawn dashed.
    """
    for name, e2, d2, _ in drawn:
        common, i, j = np.intersect1d(eps, e2, assume_unique=True, return_indices=True)
        if common.size < 2:
            continue
        a, b = delta[i], d2[j]  # on the eps' both were evaluated at (each adds its own corners to the grid)
        if np.array_equal(np.isnan(a), np.isnan(b)):
            ok = ~np.isnan(a)
            if np.allclose(a[ok], b[ok], rtol=1e-3, atol=0.0):  # atol 0: zeros must match exactly
                return name
    return None
