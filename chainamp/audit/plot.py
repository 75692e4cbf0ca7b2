"""Figures for reports and operators (matplotlib is optional: ``pip install chainamp[plot]``).

Four functions, each drawing on a new figure or on the ``ax`` it is given:

* :func:`plot_report` -- privacy profiles ``delta'(eps')`` of the input mechanism,
  of every bound source of an :class:`~chainamp.amplification.AmplificationReport` and
  of the exact pipeline (finite M), on a log-scale delta axis;
* :func:`plot_steps` -- the certified ``eps'(t)`` of a
  :class:`~chainamp.amplification.StepsReport` over the number of post-processing steps;
* :func:`plot_operator` -- a Markov operator as a heat map of ``K(x, y)``;
* :func:`plot_graph` -- a square operator as a weighted directed graph (edge
  widths proportional to the transition probabilities).

matplotlib is imported inside each function, so ``import chainamp`` never needs
it. A new figure is a :class:`matplotlib.figure.Figure` that pyplot has already
closed: nothing accumulates in pyplot's figure list and nothing pops up. In a
notebook the returned figure displays as the cell's value; elsewhere save it
with ``fig.savefig(path)``, or pass ``ax=`` to draw on an Axes of your own (the
Axes is returned then, e.g. from ``plt.subplots()`` before ``plt.show()``). No
function calls ``plt.show()``.

The curves drawn are the ones the report certifies: each source's ``delta'``
at a grid of ``eps'`` values (a step source -- a finite set of certified pairs --
is drawn as steps through the exact corners). A ``delta' = 0`` cannot be drawn
on a log axis; where a curve reaches 0 a downward triangle on the bottom edge
marks the first grid point with ``delta' = 0``.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import check_choice, check_epsilon, fmt_number
from ..errors import InvalidOperatorError, InvalidParameterError
from ..operators import MarkovOperator

__all__ = ["plot_report", "plot_steps", "plot_operator", "plot_graph"]

#: Number of eps' grid points :func:`plot_report` evaluates by default.
REPORT_GRID_POINTS = 81
#: Operators with at most this many rows and columns get tick labels in :func:`plot_operator`.
LABEL_LIMIT = 25
#: ... and the value written in each cell when they have at most this many entries.
ANNOTATE_LIMIT = 64
#: Larger operators are drawn as their non-zero pattern, without densifying.
DENSE_LIMIT = 1_000_000
#: Graphs with at most this many nodes get node labels in :func:`plot_graph`.
GRAPH_LABEL_LIMIT = 60

_LAYOUTS = ("spring", "kamada_kawai", "circular", "shell", "spectral")
_EXACT_STYLE = {"color": "black", "lw": 3.0}
_INPUT_STYLE = {"color": "0.45", "lw": 1.8, "ls": "--"}


def _pyplot():
    """Import matplotlib's pyplot lazily, with a clear message naming the ``plot`` extra."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "chainamp plotting needs matplotlib, which is not installed: "
            "pip install 'chainamp[plot]' (or pip install matplotlib)") from exc
    return plt


def _axes(ax, figsize):
    """``(fig_or_None, ax)``: a new Figure with one Axes, or the caller's Axes.

    The figure is made by pyplot (which sets up the notebook display of figures)
    and closed at once: pyplot forgets it, so figures do not accumulate and a
    notebook shows the returned figure exactly once, as the cell's value.
    """
    plt = _pyplot()
    if ax is not None:
        return None, ax
    fig = plt.figure(figsize=figsize, layout="constrained")
    plt.close(fig)
    return fig, fig.add_subplot()


def _finish(fig, ax):
    return ax if fig is None else fig


# --------------------------------------------------------------------------- report
def _report_grid(report, epsilons) -> np.ndarray:
    if epsilons is not None:
        try:
            grid = np.asarray(epsilons, dtype=float).ravel()
        except (TypeError, ValueError):
            raise TypeError(f"epsilons must be an array of real numbers, got {epsilons!r}") from None
        if grid.size == 0:
            raise InvalidParameterError("epsilons must hold at least one value (got an empty array)")
        for e in grid:
            check_epsilon(float(e), "epsilons", allow_inf=False)
        return np.unique(grid)
    prof = report.mechanism.profile
    top = prof.pure_epsilon
    if not math.isfinite(top):
        top = prof.epsilon(max(min(report.target_delta, 1e-3) * 1e-3, 1e-12))
    if not math.isfinite(top) or top <= 0:
        top = max(report.best.epsilon, 1.0) if math.isfinite(report.best.epsilon) else 1.0
    grid = np.linspace(0.0, 1.1 * top, REPORT_GRID_POINTS)
    # the table's points, so that each curve passes through the numbers the report prints
    extra = [b.epsilon for b in (*report.bounds, report.best) if math.isfinite(b.epsilon) and b.epsilon <= grid[-1]]
    return np.unique(np.concatenate([grid, extra]))


def _source_curve(source, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(eps, delta, steps)`` for one source; a finite pair source adds its corners to the grid."""
    pairs = getattr(source, "bounds", None)
    is_steps = pairs is not None
    eps = grid
    if is_steps:
        corners = [b.epsilon for b in pairs if math.isfinite(b.epsilon) and grid[0] <= b.epsilon <= grid[-1]]
        eps = np.unique(np.concatenate([grid, corners]))
    delta = np.empty(eps.size)
    for i, e in enumerate(eps):
        b = source.bound_at_epsilon(float(e))
        delta[i] = math.nan if b is None else min(b.delta, 1.0)
    return eps, delta, is_steps


def _zero_epsilon(source) -> float | None:
    """The eps' at which the source certifies delta' = 0, when it has one (else None).

    Added to the default grid, so that the legend's "0 from eps' = ..." and the
    marker give that value rather than the next grid point.
    """
    b = source.bound_at_delta(0.0)
    return None if b is None or b.delta != 0 else b.epsilon


def _with_zeros(grid: np.ndarray, points) -> np.ndarray:
    extra = [e for e in points if e is not None and math.isfinite(e) and grid[0] <= e <= grid[-1]]
    return np.unique(np.concatenate([grid, extra])) if extra else grid


def _draw_profile(ax, eps, delta, label, steps=False, **style):
    """A delta(eps) curve on a log axis: zeros are masked and marked on the bottom edge."""
    shown = np.where(delta > 0, delta, np.nan)
    zero = np.flatnonzero(delta == 0)
    if zero.size:
        label = f"{label} (0 from eps' = {fmt_number(eps[zero[0]], 3)})"
    (line,) = ax.plot(eps, shown, label=label, drawstyle="steps-post" if steps else "default", **style)
    if zero.size:
        ax.plot([eps[zero[0]]], [0.0], marker="v", ms=8, color=line.get_color(), clip_on=False,
                transform=ax.get_xaxis_transform(), ls="none", gid="zero-marker")
    return line


def plot_report(report, ax=None, epsilons=None):
    """Privacy profiles ``delta'(eps')`` of the input, every bound source and the exact pipeline.

    Parameters
    ----------
    report : AmplificationReport
        From :func:`chainamp.amplify`.
    ax : matplotlib Axes, optional
        Draw here instead of on a new figure.
    epsilons : array_like, optional
        The ``eps'`` grid (default: :data:`REPORT_GRID_POINTS` points from 0 to a
        little past the input's pure-DP level, or past ``eps_M(delta)`` for a tiny
        delta when the input has none).

    Returns
    -------
    matplotlib.figure.Figure, or the given Axes

    Notes
    -----
    One line per source (label = source name, as in the report's table), the
    input profile dashed grey, the exact profile of a finite pipeline solid
    black (drawn under the others), the target ``delta'`` as a dotted horizontal
    line and the report's best bound as a star (on the bottom edge when its
    delta' is 0). A bound whose curve coincides (within relative 1e-3) with the
    exact profile or with a bound listed before it says so in the legend:
    ``tight (= exact)``. The delta axis is logarithmic. On a new figure the
    legend sits below the axes; on a given ``ax``, inside it.

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
    grid = _report_grid(report, epsilons)
    fig, ax = _axes(ax, (8.0, 6.0))
    prof = report.mechanism.profile
    if epsilons is None:  # where each curve reaches delta' = 0, so that the legend and markers give those eps'
        grid = _with_zeros(grid, [prof.pure_epsilon] + [_zero_epsilon(src) for src in report.sources])
    _draw_profile(ax, grid, np.minimum(np.asarray(prof.delta(grid), dtype=float), 1.0),
                  f"input M: {report.mechanism.description}", **_INPUT_STYLE)
    curves = [(src.name, *_source_curve(src, grid)) for src in report.sources]
    # a bound equal to the exact profile says "= exact"; else one equal to a bound drawn before it names that one
    exact = [c for c in curves if c[0] == "exact"]
    for i, (name, eps, delta, steps) in enumerate(curves):
        same = None if name == "exact" else _coincides(eps, delta, exact + curves[:i])
        label = "exact (M then K)" if name == "exact" else name if same is None else f"{name} (= {same})"
        if name == "exact":
            # under the other curves, so that a bound equal to the exact profile stays visible on top of it
            _draw_profile(ax, eps, delta, label, steps, zorder=1.9, **_EXACT_STYLE)
        else:
            _draw_profile(ax, eps, delta, label, steps, lw=1.4)
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
    _legend(fig, ax)
    return _finish(fig, ax)


def _coincides(eps: np.ndarray, delta: np.ndarray, drawn) -> str | None:
    """The name of an already drawn curve this one hides (or is hidden by), else None.

    Compared at the eps' both curves were evaluated at. Relative 1e-3 on delta:
    closer curves are indistinguishable on a log axis of a few inches, so the
    legend says the curve is there, under another.
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


def _legend(fig, ax) -> None:
    """On a new figure the legend goes below the axes, where it hides no curve; on the caller's Axes, inside."""
    if fig is None:
        ax.legend(fontsize=8, loc="best", framealpha=0.85)
    else:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=2, framealpha=0.85)


# --------------------------------------------------------------------------- steps
def plot_steps(steps_report, ax=None, label=None):
    """Certified ``eps'(t)`` over ``t`` post-processing steps, at the report's delta'.

    Parameters
    ----------
    steps_report : StepsReport
        From :func:`chainamp.amplify_steps`.
    ax : matplotlib Axes, optional
        Draw here (e.g. to overlay several reports: pass each its own ``label``).
    label : str, optional
        Legend entry of the curve (default ``"M = <mechanism>"``).

    Filled markers: coefficients of the formed product (exact); hollow markers:
    coefficients bounded by composition (see :mod:`chainamp.amplification.steps`). A step where
    nothing is certified (infinite epsilon) gets a cross on the top edge. The
    epsilon axis is logarithmic when every value is positive and they span more
    than a factor 20. The title and axis labels are set only on an Axes that has
    none yet.

    Returns
    -------
    matplotlib.figure.Figure, or the given Axes

    Examples
    --------
    >>> from chainamp import DP, MarkovOperator, amplify_steps
    >>> steps = amplify_steps(DP(1.0), MarkovOperator([[0.75, 0.25], [0.25, 0.75]]), steps=3)
    >>> fig = plot_steps(steps)         # the same as steps.plot()
    >>> fig.axes[0].get_lines()[0].get_xdata().tolist(), fig.axes[0].get_lines()[0].get_label()
    ([1, 2, 3], 'M = (1, 0)-DP')
    """
    from ..amplification import StepsReport

    if not isinstance(steps_report, StepsReport):
        hint = "; use plot_report for an AmplificationReport" \
            if type(steps_report).__name__ == "AmplificationReport" else ""
        raise TypeError(f"steps_report must be a StepsReport (from chainamp.amplify_steps), "
                        f"got {type(steps_report).__name__}{hint}")
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")
    fig, ax = _axes(ax, (6.5, 4.0))
    t = np.array([s.t for s in steps_report.steps])
    eps = np.array([s.epsilon if math.isfinite(s.epsilon) else math.nan for s in steps_report.steps])
    exact = np.array([s.exact_coefficients for s in steps_report.steps], dtype=bool)
    (line,) = ax.plot(t, np.where(exact, eps, np.nan), "o-", ms=4, lw=1.4,
                      label=label if label is not None else f"M = {steps_report.mechanism}")
    if (~exact).any():
        # the composed part continues the same curve (from the last exact point) with hollow markers
        first = int(np.argmin(exact)) - 1
        idx = np.arange(max(first, 0), t.size)
        ax.plot(t[idx], eps[idx], "o-", mfc="none", ms=4, lw=1.4, color=line.get_color(),
                label="composed coefficients")
    finite = eps[np.isfinite(eps)]
    if finite.size and finite.min() > 0 and finite.max() / finite.min() > 20:
        ax.set_yscale("log")
    none = np.isnan(eps)
    if none.any():  # nothing certified at this delta': a cross on the top edge
        ax.plot(t[none], np.ones(int(none.sum())), "x", color="crimson", ms=7, ls="none", clip_on=False,
                transform=ax.get_xaxis_transform(), label="nothing certified")
    if not ax.get_xlabel():
        ax.set_xlabel("steps t")
    if not ax.get_ylabel():
        ax.set_ylabel(f"certified epsilon' at delta' = {fmt_number(steps_report.delta)}")
    if not ax.get_title():
        ax.set_title("Amplification over post-processing steps", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _finish(fig, ax)


# --------------------------------------------------------------------------- operators
def _check_operator(K) -> MarkovOperator:
    if not isinstance(K, MarkovOperator):
        raise TypeError(f"K must be a MarkovOperator, got {type(K).__name__}")
    return K


def plot_operator(K, ax=None):
    """The operator as a heat map of ``K(x, y)`` (rows = inputs, columns = outputs).

    Tick labels are the operator's labels when it has at most :data:`LABEL_LIMIT`
    rows and columns, and each cell shows its value when it has at most
    :data:`ANNOTATE_LIMIT` entries. Operators with more than :data:`DENSE_LIMIT`
    entries are drawn as their non-zero pattern (``spy``) without densifying.

    Returns
    -------
    matplotlib.figure.Figure, or the given Axes

    Examples
    --------
    >>> fig = plot_operator(MarkovOperator([[0.75, 0.25], [0.25, 0.75]]))
    >>> [t.get_text() for t in fig.axes[0].texts]
    ['0.75', '0.25', '0.25', '0.75']
    """
    K = _check_operator(K)
    n, m = K.shape
    fig, ax = _axes(ax, (min(2.0 + 0.35 * m, 9.0), min(1.6 + 0.35 * n, 8.0)))
    if n * m > DENSE_LIMIT:
        ax.spy(K.sparse if K.is_sparse else K.matrix, markersize=0.5, aspect="auto")
        ax.set_title(f"non-zero pattern of K ({n}x{m})")
    else:
        A = K.matrix
        im = ax.imshow(A, cmap="viridis", vmin=0.0, vmax=max(float(A.max()), 1e-300), aspect="auto",
                       interpolation="nearest")
        ax.figure.colorbar(im, ax=ax, label="K(x, y)")
        ax.set_title(f"K ({n}x{m})")
        if n * m <= ANNOTATE_LIMIT:
            cut = 0.6 * float(A.max())
            for i in range(n):
                for j in range(m):
                    ax.text(j, i, f"{A[i, j]:.3g}", ha="center", va="center", fontsize=8,
                            color="black" if A[i, j] > cut else "white")
    if n <= LABEL_LIMIT and m <= LABEL_LIMIT:
        ax.set_xticks(range(m), [str(y) for y in K.outputs], rotation=90 if m > 8 else 0)
        ax.set_yticks(range(n), [str(x) for x in K.inputs])
    ax.set_xlabel("output y")
    ax.set_ylabel("input x")
    return _finish(fig, ax)


def plot_graph(K, ax=None, layout: str = "spring"):
    """A square operator as a directed graph, edge widths proportional to ``K(x, y)``.

    Parameters
    ----------
    K : MarkovOperator
        Square (same input and output labels), e.g. :meth:`MarkovOperator.random_walk`.
    ax : matplotlib Axes, optional
    layout : {"spring", "kamada_kawai", "circular", "shell", "spectral"}
        networkx layout (``spring`` is seeded, so the drawing is reproducible).

    Self-loops (the laziness of a walk) are not drawn as edges: node colours show
    ``K(x, x)``. Nodes are labelled when there are at most :data:`GRAPH_LABEL_LIMIT`.

    Returns
    -------
    matplotlib.figure.Figure, or the given Axes

    Examples
    --------
    >>> import networkx as nx
    >>> fig = plot_graph(MarkovOperator.random_walk(nx.path_graph(3), laziness=0.5))
    >>> sum(type(p).__name__ == "FancyArrowPatch" for p in fig.axes[0].patches)  # 0-1, 1-0, 1-2, 2-1
    4
    """
    K = _check_operator(K)
    layout = check_choice(layout, "layout", _LAYOUTS)
    if not K.is_square:
        raise InvalidOperatorError(
            f"plot_graph needs a square operator with the same input and output labels (shape {K.shape}); "
            "use plot_operator for a rectangular one")
    import networkx as nx

    fig, ax = _axes(ax, (7.0, 6.0))
    G = K.to_graph()
    pos = {"spring": lambda g: nx.spring_layout(g, seed=0), "kamada_kawai": nx.kamada_kawai_layout,
           "circular": nx.circular_layout, "shell": nx.shell_layout, "spectral": nx.spectral_layout}[layout](
        G.to_undirected())
    edges = [(u, v) for u, v in G.edges if u != v]
    weights = np.array([G[u][v]["weight"] for u, v in edges])
    top = float(weights.max()) if weights.size else 1.0
    stay = [G[x][x]["weight"] if G.has_edge(x, x) else 0.0 for x in G.nodes]
    nodes = nx.draw_networkx_nodes(G, pos, ax=ax, node_size=220 if len(G) <= GRAPH_LABEL_LIMIT else 40,
                                   node_color=stay, cmap="Blues", vmin=0.0, vmax=1.0, edgecolors="0.3")
    nx.draw_networkx_edges(G, pos, edgelist=edges, ax=ax, width=list(0.3 + 3.5 * weights / top),
                           arrows=True, arrowstyle="-|>", arrowsize=8, connectionstyle="arc3,rad=0.12",
                           edge_color="0.35", alpha=0.8,
                           node_size=220 if len(G) <= GRAPH_LABEL_LIMIT else 40)
    if len(G) <= GRAPH_LABEL_LIMIT:
        nx.draw_networkx_labels(G, pos, ax=ax, font_size=7)
    ax.figure.colorbar(nodes, ax=ax, label="K(x, x) (stay)", shrink=0.7)
    ax.set_title(f"K as a graph ({len(G)} states, {len(edges)} moves; width ~ probability)")
    ax.set_axis_off()
    return _finish(fig, ax)
