"""The neighbour relation over a mechanism's input labels: the pairs ``(u, u')`` that the privacy
profile ``delta(eps) = sup over neighbouring (u, u') of D_{e^eps}(M_u || M_u')`` (Balle, Barthe,
Gaboardi 2018) ranges over (all pairs for local DP, the edges of a graph otherwise).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

import sys

import numpy as np

from .._numerics import check_memory
from ..errors import InvalidMechanismError
from ..operators import Labels

__all__ = ["neighbor_pairs"]


#: Bytes per label of the tuple and index dictionary built from a sequence of labels, and per ordered pair
#: of all pairs (the meshgrid's two int64 grids, the mask, the selected indices and the stacked result).
_LABEL_BYTES = 160.0
_PAIR_BYTES = 48.0


class _LazyIndex:
    """``label in index`` and ``index[label]`` over lazy :class:`~chainamp.operators.Labels` by lookup."""

    def __init__(self, labels: Labels):
        self.labels = labels

    def __contains__(self, label: Hashable) -> bool:
        try:
            self.labels.index(label)
        except (KeyError, TypeError, ValueError):
            return False
        return True

    def __getitem__(self, label: Hashable) -> int:
        return self.labels.index(label)


def neighbor_pairs(labels: Iterable[Hashable], neighbors: Any = None) -> np.ndarray:
    """Index pairs ``(i, j)`` of neighbouring inputs, both directions, sorted, no self-pairs.

    ``neighbors``: None (all ordered pairs: local DP), a networkx Graph over the labels
    (its edges; a DiGraph's edges count in both directions too), or an iterable of label
    pairs. An unknown label, a self-loop or an empty relation raises
    InvalidMechanismError naming the label.

    >>> neighbor_pairs(["a", "b", "c"], [("a", "b")]).tolist()
    [[0, 1], [1, 0]]
    """
    if isinstance(labels, Labels) and neighbors is not None and not (
            sys.modules.get("networkx") is not None and isinstance(neighbors, sys.modules["networkx"].Graph)):
        # lazy labels (range(k), the tuples of a 2^30-input product): looked up, never listed
        index: Any = _LazyIndex(labels)
    else:
        n_labels = float(len(labels)) if hasattr(labels, "__len__") else 0.0
        check_memory(_LABEL_BYTES * n_labels + (_PAIR_BYTES * n_labels * n_labels if neighbors is None else 0.0),
                     f"the {n_labels:.0f} input labels" + (" and all their ordered pairs" if neighbors is None else ""),
                     hint="pass the neighbouring pairs (neighbors=[...])" if neighbors is None else "")
        labs = tuple(labels)
        index = {lab: i for i, lab in enumerate(labs)}
    if neighbors is None:
        n = len(labs)
        ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        mask = ii != jj
        out = np.stack([ii[mask], jj[mask]], axis=1)
        if out.size == 0:
            raise InvalidMechanismError(f"the neighbour relation is empty: only {n} input label(s) {labs!r}")
        return out
    nx = sys.modules.get("networkx")  # a networkx graph exists only once networkx is imported
    if nx is not None and isinstance(neighbors, nx.Graph):
        for node in neighbors.nodes:
            if node not in index:
                raise InvalidMechanismError(f"neighbour graph has node {node!r} that is not an input label")
        edges: Iterable = neighbors.edges()
    elif isinstance(neighbors, (str, bytes)) or not isinstance(neighbors, Iterable):
        raise TypeError(f"neighbors must be None, a networkx Graph or an iterable of label pairs, got {neighbors!r}")
    else:
        edges = neighbors
    found: set[tuple[int, int]] = set()
    for edge in edges:
        try:
            a, b = edge
        except (TypeError, ValueError):
            raise InvalidMechanismError(f"each neighbour pair must be a pair of labels, got {edge!r}") from None
        for lab in (a, b):
            try:
                known = lab in index
            except TypeError:
                known = False
            if not known:
                raise InvalidMechanismError(f"neighbour pair {edge!r} has unknown input label {lab!r}")
        if index[a] == index[b]:
            raise InvalidMechanismError(f"neighbour pair {edge!r} is a self-loop on label {a!r}")
        found.add((index[a], index[b]))
        found.add((index[b], index[a]))
    if not found:
        raise InvalidMechanismError("the neighbour relation is empty (no pair of input labels given)")
    return np.array(sorted(found), dtype=np.intp).reshape(-1, 2)
