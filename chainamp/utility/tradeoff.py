"""The privacy-utility frontier of post-processing: certified epsilon' beside the estimation error.

Post-processing a local randomizer M by a Markov operator K can only improve privacy (Theorem 1 of Balle,
Barthe, Gaboardi and Geumlek 2019 says by how much) and can only make the input frequencies harder to
estimate. :func:`frontier` puts both numbers side by side over a family K(theta): the certified epsilon'
of M then K(theta) at a fixed delta', from :func:`chainamp.amplify`, and the mean squared error of the
unbiased frequency estimator through the channel M K(theta), from :class:`FrequencyEstimator`.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import (check_choice, check_delta, check_distribution, check_epsilon, check_int, check_real,
                         fmt_number, html_table, jsonable_number, text_table)
from ..amplification import amplify
from ..errors import IncompatibleOperatorsError, InvalidParameterError
from ..operators import MarkovOperator
from .channels import as_operator
from .estimation import FrequencyEstimator

__all__ = ["frontier", "Frontier", "FrontierPoint"]

#: The built-in families of :func:`frontier`.
FAMILIES = ("randomized_response", "lazy_walk", "coarsening")


@dataclass(frozen=True)
class FrontierPoint:
    """One row of a :class:`Frontier`: the parameter, the certified epsilon' and the MSE (``inf`` with a note
    when the channel cannot be inverted)."""

    parameter: Any
    epsilon: float
    mse: float
    note: str = ""


@dataclass(frozen=True)
class Frontier:
    """Certified privacy beside estimation error over a family of post-processings (see :func:`frontier`).

    Attributes
    ----------
    mechanism, family : str
        Descriptions of M and of the family K(theta).
    delta : float
        The delta' at which each epsilon' is certified.
    n_users : int
    frequencies : tuple of float
        The true input frequencies the MSE is computed for.
    rows : tuple of FrontierPoint
        One per parameter, in the order given.
    baseline : FrontierPoint
        M alone (no post-processing; parameter None).
    """

    mechanism: str
    family: str
    delta: float
    n_users: int
    frequencies: tuple
    rows: tuple
    baseline: FrontierPoint

    @property
    def parameters(self) -> list:
        return [r.parameter for r in self.rows]

    @property
    def epsilons(self) -> np.ndarray:
        return np.array([r.epsilon for r in self.rows], dtype=float)

    @property
    def mses(self) -> np.ndarray:
        return np.array([r.mse for r in self.rows], dtype=float)

    _HEADER = ["parameter", "epsilon'", "MSE", "note"]

    def _sentence(self) -> str:
        return (f"Each row post-processes M with {self.family}: choose the row with the smallest estimation "
                f"error (MSE) whose certified epsilon' you can accept (delta' = {fmt_number(self.delta)}, "
                f"{self.n_users} users).")

    def _rows(self):
        return [[r.parameter, r.epsilon, r.mse, r.note] for r in self.rows]

    def _baseline(self) -> str:
        b = self.baseline
        return (f"M alone ({self.mechanism}): epsilon' = {fmt_number(b.epsilon)}, MSE = {fmt_number(b.mse)}"
                + (f" ({b.note})" if b.note else ""))

    def __str__(self) -> str:
        return (self._sentence() + "\n" + self._baseline() + "\n\n"
                + text_table(self._HEADER, self._rows()))

    def __repr__(self) -> str:
        return (f"<Frontier M={self.mechanism}; {len(self.rows)} rows; epsilon' "
                f"{fmt_number(float(np.min(self.epsilons)))}..{fmt_number(float(np.max(self.epsilons)))}>")

    def _repr_html_(self) -> str:
        return (f"<p>{html.escape(self._sentence())}<br>{html.escape(self._baseline())}</p>"
                + html_table(self._HEADER, self._rows()))

    def to_dict(self) -> dict:
        """JSON-safe summary (infinities as ``"inf"``)."""
        def row(r: FrontierPoint) -> dict:
            return {"parameter": r.parameter, "epsilon": jsonable_number(r.epsilon), "mse": jsonable_number(r.mse),
                    "note": r.note}

        return {"mechanism": self.mechanism, "family": self.family, "delta": self.delta,
                "n_users": self.n_users, "frequencies": list(self.frequencies),
                "baseline": row(self.baseline), "rows": [row(r) for r in self.rows]}

    def plot(self, ax=None, *, figsize: tuple = (6.0, 4.0)):
        """Certified epsilon' (x) against MSE (y), each point labelled by its parameter; M alone as a star.

        Rows with an infinite MSE are left out (a line of text says how many). The MSE axis is
        logarithmic, and so is the epsilon' axis when it spans more than a factor 20. Draws on ``ax`` when
        given; returns the Figure (needs matplotlib).
        """
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:  # pragma: no cover - matplotlib is a test dependency
            raise ImportError("Frontier.plot needs matplotlib: pip install 'chainamp[plot]'") from exc
        if ax is None:
            fig = plt.figure(figsize=figsize, layout="constrained")
            plt.close(fig)  # pyplot forgets it: the caller owns the figure
            ax = fig.add_subplot()
        drawn = [r for r in self.rows if math.isfinite(r.mse) and math.isfinite(r.epsilon)]
        x = [r.epsilon for r in drawn]
        y = [r.mse for r in drawn]
        ax.plot(x, y, "o-", color="C0", label="M then K(parameter)")
        step = max(1, math.ceil(len(drawn) / _MAX_LABELS))  # label at most ~8 points: the rest crowd
        for i, r in enumerate(drawn):
            if i % step == 0 or i == len(drawn) - 1:
                ax.annotate(fmt_number(r.parameter, 3), (r.epsilon, r.mse), textcoords="offset points",
                            xytext=(4, 4), fontsize=8)
        b = self.baseline
        if math.isfinite(b.mse) and math.isfinite(b.epsilon):
            ax.plot([b.epsilon], [b.mse], "*", color="C3", markersize=12, label="M alone")
            x, y = x + [b.epsilon], y + [b.mse]
        if y and min(y) > 0:
            ax.set_yscale("log")
        if x and min(x) > 0 and max(x) > 20 * min(x):
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(_NullFormatter())  # 2x10^0, 3x10^0, ... labels overlap
        skipped = len(self.rows) - len(drawn)
        if skipped:
            ax.text(0.02, 0.02, f"{skipped} row(s) with MSE = inf not drawn", transform=ax.transAxes, fontsize=8)
        ax.set_xlabel(f"certified epsilon' (delta' = {fmt_number(self.delta)})")
        ax.set_ylabel(f"MSE of the unbiased estimate ({self.n_users} users)")
        ax.set_title(f"privacy vs accuracy: {self.mechanism}", fontsize=10)
        ax.legend(fontsize=8)
        return ax.figure


_MAX_LABELS = 8


def _NullFormatter():
    from matplotlib.ticker import NullFormatter

    return NullFormatter()


def _builtin(M: MarkovOperator, family: str, graph: Any, laziness: float):
    """``(description, build)`` for a built-in family; ``build(theta, name)`` -> (shown parameter, K)."""
    outs, m = M.outputs, M.shape[1]
    if family == "randomized_response":
        from ..privacy import mechanisms  # the catalogue module: imported where used, as audit/ does

        def build(theta, name):
            eps = check_epsilon(theta, name, allow_inf=False)
            return eps, mechanisms.randomized_response(m, eps, labels=outs)
        return f"a second {m}-ary randomized response on its outputs (parameter: its epsilon)", build
    if family == "lazy_walk":
        import networkx as nx  # imported on use (about 0.1 s)

        if graph is None:
            G, where = nx.cycle_graph(list(outs)), "a cycle over"
        else:
            if not isinstance(graph, nx.Graph):
                raise TypeError(f"graph must be a networkx graph, got {type(graph).__name__}")
            if set(graph.nodes) != set(outs):
                extra = sorted(map(repr, set(graph.nodes) ^ set(outs)))[:4]
                raise IncompatibleOperatorsError(f"graph must have exactly M's outputs as nodes (they differ on "
                                                 f"{', '.join(extra)})")
            G, where = graph, "the given graph on"
        walk = MarkovOperator.random_walk(G, laziness=laziness)

        def build(theta, name):
            t = check_int(theta, name, minimum=0)
            return t, walk ** t
        return f"t steps of a lazy random walk (laziness {fmt_number(laziness)}) on {where} its outputs", build

    def build(theta, name):  # coarsening
        g = check_int(theta, name, minimum=1)
        if g > m:
            raise InvalidParameterError(f"{name} must be at most the number of M's outputs ({m}) (got {g})")
        groups = np.array_split(np.arange(m), g)
        mat = np.zeros((m, g))
        for j, idx in enumerate(groups):
            mat[idx, j] = 1.0
        labels = [tuple(outs[i] for i in idx) for idx in groups]
        return g, MarkovOperator(mat, inputs=outs, outputs=labels)
    return "merging its outputs into g contiguous groups", build


def _custom(M: MarkovOperator, family: Callable):
    def build(theta, name):
        K = family(theta)
        if not isinstance(K, MarkovOperator):
            if not isinstance(K, (np.ndarray, list, tuple)):
                raise TypeError(f"family({theta!r}) must return a MarkovOperator or a 2-D array, got "
                                f"{type(K).__name__}")
            K = MarkovOperator(K, inputs=M.outputs)
        shown = check_real(theta, name) if isinstance(theta, numbers.Real) and not isinstance(theta, bool) \
            else str(theta)
        return shown, K
    return f"the family {getattr(family, '__name__', type(family).__name__)}", build


def _mse(channel: list, f: np.ndarray, n_users: int) -> tuple[float, str]:
    probe = FrequencyEstimator(channel, method="ibu")
    n_in = len(f)
    if probe.rank < n_in:
        return math.inf, (f"rank {probe.rank} < {n_in} inputs: no unbiased estimator "
                          "(method='ibu' still estimates)")
    return FrequencyEstimator(channel).mse(f, n_users), ""


def frontier(mechanism: Any, family: str | Callable[[Any], Any], parameters: Sequence, *, n_users: int,
             frequencies: Any = None, delta: float = 0.0, graph: nx.Graph | None = None,
             laziness: float = 0.5) -> Frontier:
    """Certified epsilon' and estimation MSE of M followed by K(theta), for each theta in ``parameters``.

    Parameters
    ----------
    mechanism : MarkovOperator or 2-D array
        The finite local randomizer M (rows = the users' values).
    family : {"randomized_response", "lazy_walk", "coarsening"} or callable
        The post-processing K(theta) applied to M's outputs:

        * ``"randomized_response"``: a second k-RR over M's k outputs, theta = its epsilon
          (:func:`chainamp.mechanisms.randomized_response` relabelled onto M's outputs);
        * ``"lazy_walk"``: theta = t steps of the lazy random walk (stay with probability ``laziness``)
          on a cycle over M's outputs in their order, or on ``graph``;
        * ``"coarsening"``: merge M's outputs, in their order, into theta = g contiguous groups of sizes
          as equal as possible (a deterministic K; each output label is the tuple of merged labels);
        * a callable theta -> MarkovOperator (or 2-D array) whose inputs are M's outputs.
    parameters : sequence
        The values of theta, one row each, in this order.
    n_users : int
        The number of users whose reports are aggregated.
    frequencies : array_like, optional
        The true frequencies of M's inputs the MSE is computed at (default uniform).
    delta : float
        The delta' at which epsilon' is certified.
    graph : networkx.Graph, optional
        ``"lazy_walk"`` only: the graph whose nodes are M's outputs.
    laziness : float
        ``"lazy_walk"`` only: the holding probability of each step (default 1/2).

    Returns
    -------
    Frontier
        For each theta: ``amplify(M, K(theta), delta=delta).epsilon_at(delta)`` (the best certified
        epsilon', Theorem 1 of Balle, Barthe, Gaboardi and Geumlek 2019 and the exact profile of the
        finite pipeline) and ``FrequencyEstimator([M, K(theta)]).mse(frequencies, n_users)`` (the trace of
        the unbiased least-squares estimator's covariance, users drawing their values i.i.d. from
        ``frequencies``). When M K(theta) has rank below M's number of inputs no unbiased estimator exists:
        the MSE is ``inf`` and the row's note says so. The baseline row is M alone.

    Examples
    --------
    >>> from chainamp import mechanisms
    >>> M = mechanisms.randomized_response(3, 2.0)
    >>> fr = frontier(M, "randomized_response", [4.0, 2.0, 1.0], n_users=1000)
    >>> [round(r.epsilon, 3) for r in fr.rows]
    [1.862, 1.277, 0.687]
    >>> bool(fr.mses[0] < fr.mses[1] < fr.mses[2])
    True
    """
    # one operator, taken as exact by amplify: a pipeline would be a float product whose error amplify
    # does not see, so it is not accepted here (amplify(M, [K1, K2]) tracks the error of K's products)
    M = as_operator(mechanism, None, "mechanism")
    n_in = M.shape[0]
    if isinstance(parameters, (str, bytes)) or not isinstance(parameters, (Sequence, np.ndarray)):
        raise TypeError(f"parameters must be a sequence of parameter values, got {type(parameters).__name__}")
    params = list(np.asarray(parameters).ravel()) if isinstance(parameters, np.ndarray) else list(parameters)
    if not params:
        raise InvalidParameterError("parameters must contain at least one value (got none)")
    users = check_int(n_users, "n_users", minimum=1)
    f = (np.full(n_in, 1.0 / n_in) if frequencies is None
         else check_distribution(frequencies, "frequencies", size=n_in))
    d = check_delta(delta, "delta")
    lazy = check_real(laziness, "laziness")
    if not 0.0 <= lazy <= 1.0:
        raise InvalidParameterError(f"laziness must be in [0, 1] (got {lazy!r})")
    if callable(family):
        if graph is not None:
            raise InvalidParameterError("graph is only used with family='lazy_walk'")
        description, build = _custom(M, family)
    else:
        check_choice(family, "family", FAMILIES)
        if graph is not None and family != "lazy_walk":
            raise InvalidParameterError(f"graph is only used with family='lazy_walk' (got family={family!r})")
        description, build = _builtin(M, family, graph, lazy)
    rows = []
    for i, theta in enumerate(params):
        shown, K = build(theta, f"parameters[{i}]")
        eps = amplify(M, K, delta=d).epsilon_at(d)
        mse, note = _mse([M, K], f, users)
        rows.append(FrontierPoint(shown, float(eps), float(mse), note))
    base_eps = amplify(M, MarkovOperator.identity(M.outputs), delta=d).epsilon_at(d)
    base_mse, base_note = _mse([M], f, users)
    baseline = FrontierPoint(None, float(base_eps), float(base_mse), base_note)
    what = f"finite mechanism {M.shape[0]}x{M.shape[1]}"
    return Frontier(what, description, d, users, tuple(float(v) for v in f), tuple(rows), baseline)
