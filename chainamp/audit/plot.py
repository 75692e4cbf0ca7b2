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

:func:`plot_report` lives in :mod:`.plot_profiles` (what it draws: each source's
certified ``delta'`` on a grid of ``eps'``, clipped to and faded along the input's own
profile where it is no better than M, values at rounding level drawn as 0, coinciding
curves dashed); the shared matplotlib plumbing in :mod:`.figures`.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import check_choice, fmt_number
from ..errors import InvalidOperatorError
from ..operators import MarkovOperator
from .figures import _axes, _finish, _legend, _pyplot  # noqa: F401 (_legend, _pyplot: used by tests and callers)
from .plot_profiles import REPORT_GRID_POINTS, PLOT_KEY, _coincides, plot_report  # noqa: F401

__all__ = ["plot_report", "plot_steps", "plot_operator", "plot_graph"]

#: Operators with at most this many rows and columns get tick labels in :func:`plot_operator`.
LABEL_LIMIT = 25
#: ... and the value written in each cell when they have at most this many entries.
ANNOTATE_LIMIT = 64
#: Larger operators are drawn as their non-zero pattern, without densifying.
DENSE_LIMIT = 1_000_000
#: Graphs with at most this many nodes get node labels in :func:`plot_graph`.
GRAPH_LABEL_LIMIT = 60

_LAYOUTS = ("spring", "kamada_kawai", "circular", "shell", "spectral")


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
