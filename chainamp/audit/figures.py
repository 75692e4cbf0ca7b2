"""Shared matplotlib plumbing of the figure modules (:mod:`.plot`, :mod:`.plot_profiles`): the lazy
pyplot import naming the ``plot`` extra, new figures that pyplot has already closed, and the legend
placement. Private to :mod:`chainamp.audit`.
"""

from __future__ import annotations

__all__: list[str] = []


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


def _legend(fig, ax, title: str | None = None) -> None:
    """On a new figure the legend goes below the axes, where it hides no curve; on the caller's Axes, inside."""
    extra = {} if title is None else {"title": title, "title_fontsize": 7.5, "alignment": "left"}
    if fig is None:
        ax.legend(fontsize=8, loc="best", framealpha=0.85, **extra)
    else:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=2, framealpha=0.85, **extra)
