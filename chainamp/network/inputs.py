"""The inputs of :func:`~chainamp.network.gossip_privacy`: gossip matrices, schedules, node sets, noise levels.

Everything is validated here, once, at the boundary; the computation in :mod:`.projection` trusts it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import ROW_SUM_ATOL, check_int, check_memory, check_real
from ..errors import InvalidOperatorError, InvalidParameterError
from ..operators import MarkovOperator

__all__ = ["gossip_matrix", "GOSSIP_RULES"]

#: The named gossip rules of a networkx graph (see :func:`gossip_matrix`).
GOSSIP_RULES = ("metropolis", "lazy")


def gossip_matrix(G: Any, rule: str = "metropolis") -> MarkovOperator:
    """The gossip matrix of an undirected networkx graph under a named rule (symmetric, doubly stochastic).

    * ``"metropolis"``: ``W[a, b] = 1 / (1 + max(d_a, d_b))`` on every edge ``{a, b}`` (``d`` the degree,
      self-loops ignored) and ``W[a, a] = 1 - sum_b W[a, b]``: the Metropolis-Hastings weights (Xiao and
      Boyd 2004), the matrix of the public Muffliato code (Cyffers, Even, Bellet and Massoulie 2022,
      ``gossip_matrix(type_g="hamilton")``, whose degree view counts the added self-loop twice). On a
      d-regular graph it is the uniform average over the closed neighbourhood, ``1/(d + 1)`` each.
    * ``"lazy"``: ``(I + W_metropolis) / 2``, the lazy Metropolis matrix (positive semi-definite).

    Examples
    --------
    >>> import networkx as nx
    >>> gossip_matrix(nx.cycle_graph(4)).matrix.round(4).tolist()[0]
    [0.3333, 0.3333, 0.0, 0.3333]
    >>> gossip_matrix(nx.path_graph(2), "lazy").matrix.tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    import networkx as nx

    if not isinstance(G, nx.Graph):
        raise TypeError(f"G must be a networkx graph, got {type(G).__name__}")
    if G.is_directed():
        raise InvalidOperatorError(f"gossip rule {rule!r} needs an undirected graph (got a {type(G).__name__})")
    if not isinstance(rule, str):
        raise TypeError(f"rule must be a string, one of {GOSSIP_RULES} (got {rule!r})")
    if rule not in GOSSIP_RULES:
        raise InvalidParameterError(f"rule must be one of {GOSSIP_RULES} (got {rule!r})")
    nodes = list(G.nodes)
    if not nodes:
        raise InvalidOperatorError("G has no nodes")
    n = len(nodes)
    check_memory(48.0 * (n + 2 * G.number_of_edges()), f"the gossip matrix of a {n}-node graph")
    index = {x: i for i, x in enumerate(nodes)}
    deg = np.zeros(n)
    rows, cols = [], []
    for a, b in G.edges():
        if a != b:
            rows.append(index[a])
            cols.append(index[b])
    rows_a, cols_a = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)
    np.add.at(deg, rows_a, 1.0)
    np.add.at(deg, cols_a, 1.0)
    w = 1.0 / (1.0 + np.maximum(deg[rows_a], deg[cols_a]))
    off = sp.csr_matrix((np.concatenate([w, w]), (np.concatenate([rows_a, cols_a]), np.concatenate([cols_a, rows_a]))),
                        shape=(n, n))
    off.sum_duplicates()
    diag = 1.0 - np.asarray(off.sum(axis=1)).ravel()
    W = off + sp.diags(diag)
    if rule == "lazy":
        W = 0.5 * (sp.identity(n, format="csr") + W)
    W = sp.csr_matrix(W)
    W.eliminate_zeros()
    return MarkovOperator(W, nodes, nodes)


@dataclass(frozen=True)
class Schedule:
    """A validated gossip schedule: ``mats[t]`` is the CSR matrix of round ``t`` (``y_{t+1} = mats[t] y_t``)."""

    mats: tuple
    labels: tuple
    index: dict
    fixed: bool  # one matrix repeated every round
    cache: dict = field(default_factory=dict, compare=False, repr=False)  # derived matrices, filled on use

    @property
    def distinct(self) -> tuple:
        """The matrices to multiply by: one for a fixed ``W``, one per round for a schedule."""
        return self.mats[:1] if self.fixed else self.mats

    def derived(self, key: str, build):
        """``build()`` once per schedule (transposes, patterns, column counts)."""
        if key not in self.cache:
            self.cache[key] = build()
        return self.cache[key]

    @property
    def n(self) -> int:
        return len(self.labels)

    @property
    def rounds(self) -> int:
        return len(self.mats)


def _one_matrix(W: Any, name: str, rule: str | None, row_sum_atol: float) -> tuple[sp.csr_matrix, tuple]:
    import networkx as nx

    if isinstance(W, nx.Graph):
        op = gossip_matrix(W, "metropolis" if rule is None else rule)
    elif rule is not None:
        raise InvalidParameterError(f"rule={rule!r} applies to a networkx graph only (W is a {type(W).__name__})")
    elif isinstance(W, MarkovOperator):
        op = W
    elif isinstance(W, (np.ndarray, list, tuple)) or sp.issparse(W):
        try:
            op = MarkovOperator(W, row_sum_atol=row_sum_atol)
        except InvalidOperatorError as exc:
            raise InvalidOperatorError(f"{name} is not a stochastic matrix: {exc}") from None
    else:
        raise TypeError(f"{name} must be a MarkovOperator, a numpy or scipy.sparse array, a networkx graph "
                        f"or a list of matrices (got {type(W).__name__})")
    if not op.is_square or op.inputs != op.outputs:
        raise InvalidOperatorError(f"{name} must be square with the same input and output labels (shape {op.shape})")
    mat = sp.csr_matrix(op.sparse, dtype=float, copy=True)
    mat.eliminate_zeros()
    col = np.asarray(mat.sum(axis=0)).ravel()
    row = np.asarray(mat.sum(axis=1)).ravel()
    if np.any(np.abs(row - 1.0) > row_sum_atol):
        i = int(np.argmax(np.abs(row - 1.0)))
        raise InvalidOperatorError(f"{name} must be row-stochastic: row {op.inputs[i]!r} sums to {float(row[i])!r}")
    if np.any(np.abs(col - 1.0) > row_sum_atol):
        i = int(np.argmax(np.abs(col - 1.0)))
        raise InvalidOperatorError(
            f"{name} must be doubly stochastic (gossip averaging keeps the mean): column {op.inputs[i]!r} sums to "
            f"{float(col[i])!r}")
    return mat, op.inputs


def as_schedule(W: Any, rounds: Any, rule: str | None = None, row_sum_atol: float = ROW_SUM_ATOL,
                memory_limit: Any = None) -> Schedule:
    """Validate ``W`` (one matrix, or a list of per-round matrices) and ``rounds``."""
    T = check_int(rounds, "rounds")
    if T < 1:
        raise InvalidParameterError(f"rounds must be >= 1 (got {T})")
    # one reference per round here and a (round, senders) entry per round in every view's plan, before any view
    # is sized: refuse absurd round counts first
    check_memory(128.0 * T, f"a schedule of rounds={T} rounds", memory_limit=memory_limit)
    if isinstance(W, (list, tuple)) and W and not isinstance(W[0], numbers.Number) and not (
            isinstance(W[0], (list, tuple)) and W[0] and isinstance(W[0][0], numbers.Number)):
        if len(W) != T:
            raise InvalidParameterError(f"W is a schedule of {len(W)} matrices but rounds={T}: give one per round")
        pairs = [_one_matrix(m, f"W[{t}]", rule, row_sum_atol) for t, m in enumerate(W)]
        labels = pairs[0][1]
        for t, (_, lab) in enumerate(pairs):
            if lab != labels:
                raise InvalidOperatorError(f"W[{t}] has node labels different from W[0]'s")
        mats = tuple(m for m, _ in pairs)
        fixed = False
    else:
        mat, labels = _one_matrix(W, "W", rule, row_sum_atol)
        mats = (mat,) * T
        fixed = True
    for m in mats:
        m.data.setflags(write=False)
    return Schedule(mats, tuple(labels), {x: i for i, x in enumerate(labels)}, fixed)


def node_indices(nodes: Any, sched: Schedule, name: str, *, default_all: bool = True) -> np.ndarray | None:
    """Indices of the node labels in ``nodes`` (``None``: all nodes, or ``None`` when not ``default_all``)."""
    if nodes is None:
        return np.arange(sched.n) if default_all else None
    try:
        one_label = nodes in sched.index  # a label first (a tuple label is one node), as networkx's nbunch
    except TypeError:  # unhashable: a list or set of labels
        one_label = False
    if one_label or isinstance(nodes, (str, bytes)) or not isinstance(nodes, Iterable):
        nodes = [nodes]
    out = []
    for x in nodes:
        try:
            out.append(sched.index[x])
        except (KeyError, TypeError):
            preview = ", ".join(repr(v) for v in sched.labels[:4]) + (", ..." if sched.n > 4 else "")
            raise InvalidParameterError(f"{name} contains {x!r}, which is not a node of W (nodes: {preview})") from None
    if not out:
        raise InvalidParameterError(f"{name} must name at least one node (got {list(nodes)!r})")
    return np.array(sorted(set(out)), dtype=np.int64)


def as_sigma(sigma: Any, sched: Schedule) -> np.ndarray:
    """Per-node noise standard deviations: a positive scalar, or one per node (a sequence or a dict by label)."""
    if isinstance(sigma, dict):
        missing = [x for x in sched.labels if x not in sigma]
        if missing:
            raise InvalidParameterError(f"sigma has no value for node {missing[0]!r}")
        values = [sigma[x] for x in sched.labels]
    elif isinstance(sigma, (numbers.Real, np.floating, np.integer)) and not isinstance(sigma, bool):
        values = [sigma] * sched.n
    elif isinstance(sigma, bool) or isinstance(sigma, (str, bytes)):
        raise TypeError(f"sigma must be a positive number, a sequence or a dict of them (got {sigma!r})")
    else:
        try:
            values = list(sigma)
        except TypeError:
            raise TypeError(f"sigma must be a positive number, a sequence or a dict of them (got {sigma!r})") from None
        if len(values) != sched.n:
            raise InvalidParameterError(f"sigma has {len(values)} values but W has {sched.n} nodes")
    out = np.empty(sched.n)
    for i, s in enumerate(values):
        x = check_real(s, "sigma")
        if not (x > 0.0 and math.isfinite(x)):
            raise InvalidParameterError(f"sigma must be positive and finite (got {x!r} for node {sched.labels[i]!r})")
        out[i] = x
    return out


def sensitivity_value(value: Any) -> float:
    x = check_real(value, "sensitivity")
    if not (x > 0.0 and math.isfinite(x)):
        raise InvalidParameterError(f"sensitivity must be positive and finite (got {x!r})")
    return x

