"""The published accounting of gossip with local noise, computed from ``W`` for comparison (never a certificate).

Cyffers, Even, Bellet and Massoulie (NeurIPS 2022, "Muffliato") bound the Renyi divergence of order ``alpha``
of what ``v`` sees about ``u`` by a sum over the messages, each treated as an independent Gaussian release:

    ``eps_{u->v}(alpha) = alpha / (2 sigma^2) * sum_{t=1..T} sum_{w in N(v), w != v} (W^t)_{w,u}^2 / ||(W^t)_{w,.}||^2``

(their public code, ``muffliato.py``, with ``N(v)`` the graph neighbours of ``v``). All messages share one
noise vector, so the sum is not a valid composition: it can be far below the exact value (see
:func:`~chainamp.network.gossip_privacy`). Their random-graph variant (Erdos-Renyi graphs, ``ERsampled.py``):
``alpha / (2 sigma^2)`` for the neighbours of ``u`` and ``min(alpha / (2 sigma^2), alpha T d_v / (sigma^2 (n - d_v)))``
for every other ``v`` (``d_v`` the degree of ``v``). Both are reproduced here as comparison rows only.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._numerics import check_memory, check_order
from .inputs import Schedule

__all__ = ["published_renyi"]


def _neighbours(sched: Schedule) -> sp.csr_matrix:
    pat = None
    for mat in (sched.mats[:1] if sched.fixed else sched.mats):
        cur = (mat != 0).astype(np.int8)
        cur = cur + cur.T
        pat = cur if pat is None else pat + cur
    pat = sp.csr_matrix(pat)
    pat.setdiag(0)
    pat.eliminate_zeros()
    return pat


def published_renyi(sched: Schedule, alpha: float, sigma: np.ndarray, sources: np.ndarray, observers: np.ndarray,
                    variant: str = "per_message") -> np.ndarray:
    """The published Renyi bound ``eps_{u->v}(alpha)`` for ``u`` in ``sources`` (rows), ``v`` in ``observers``.

    ``sigma[u]`` is used for source ``u`` (the papers take one sigma). ``variant`` is ``"per_message"`` or
    ``"random_graph"``. A time-varying schedule uses ``P_t = W_{t-1} ... W_0`` in place of ``W^t`` and the
    union graph's neighbours.

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> from chainamp.network.inputs import as_schedule
    >>> S = as_schedule(nx.cycle_graph(8), 10)
    >>> round(float(published_renyi(S, 2.0, np.ones(8), np.array([0]), np.array([4]))[0, 0]), 3)
    0.749
    """
    a = check_order(alpha, "alpha")
    check_memory(8.0 * (len(sources) * len(observers) + 4 * sched.n),
                 f"a {len(sources)} x {len(observers)} matrix of published bounds")
    nb = _neighbours(sched)
    n = sched.n
    out = np.zeros((len(sources), len(observers)))
    scale = a / (2.0 * sigma[sources] ** 2)
    if variant == "random_graph":
        deg = np.diff(nb.indptr).astype(float)
        T = sched.rounds
        for j, v in enumerate(observers):
            val = np.minimum(scale, a * T * deg[v] / (sigma[sources] ** 2 * max(n - deg[v], 1.0)))
            adj = nb[v].toarray().ravel() > 0
            out[:, j] = np.where(adj[sources], scale, val)
        return out
    for j, v in enumerate(observers):
        senders = nb[v].indices
        if senders.size == 0:
            continue
        block = np.zeros((senders.size, n))
        block[np.arange(senders.size), senders] = 1.0
        total = np.zeros(n)
        if sched.fixed:
            Wt = sched.mats[0].T.tocsr()
            for _ in range(sched.rounds):
                block = np.asarray((Wt @ block.T).T)
                total += np.sum(block ** 2 / np.sum(block ** 2, axis=1, keepdims=True), axis=0)
        else:
            for t in range(1, sched.rounds + 1):
                cur = np.zeros((senders.size, n))
                cur[np.arange(senders.size), senders] = 1.0
                for s in range(t - 1, -1, -1):
                    cur = np.asarray((sched.mats[s].T.tocsr() @ cur.T).T)
                total += np.sum(cur ** 2 / np.sum(cur ** 2, axis=1, keepdims=True), axis=0)
        out[:, j] = scale * total[sources]
    return out
