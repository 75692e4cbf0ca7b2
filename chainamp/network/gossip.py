"""``gossip_privacy``: the exact pairwise network privacy of gossip averaging with local Gaussian noise."""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._numerics import ROW_SUM_ATOL, check_choice, check_int, check_memory, progress_bar
from ..errors import InvalidOperatorError, InvalidParameterError
from .inputs import as_schedule, as_sigma, node_indices, sensitivity_value
from .projection import RANK_PRIMES_LIMIT, VIEWS, observer_mu
from .result import NetworkPrivacy

__all__ = ["gossip_privacy"]


def gossip_privacy(W: Any, rounds: int, *, sigma: Any, sensitivity: float = 1.0, observers: Any = None,
                   sources: Any = None, colluders: Any = None, view: str = "received", rule: str | None = None,
                   rank_primes_limit: int = RANK_PRIMES_LIMIT, row_sum_atol: float = ROW_SUM_ATOL,
                   allow_disconnected: bool = False, memory_limit: Any = None,
                   progress: bool | None = None) -> NetworkPrivacy:
    """Exact privacy of every node ``u`` towards every observer ``v`` of a gossip protocol with local noise.

    The protocol (Cyffers, Even, Bellet and Massoulie 2022, "Muffliato"): every node adds Gaussian noise
    to its value once, ``y_0 = x + N(0, diag(sigma^2))``, then for ``T = rounds`` rounds
    ``y_{t+1} = W_t y_t`` (``W_t = W``, or the t-th matrix of a public schedule). ``x_u`` changes by at most
    ``sensitivity`` between neighbouring datasets.

    What an observer ``v`` sees (``view``):

    * ``"received"``: the messages sent to it, ``y_t[w]`` for every round ``t < T`` and every ``w != v``
      with ``W_t[v, w] != 0``; its own values ``y_t[v]`` follow from them and its own ``y_0[v]``.
    * ``"neighbourhood"``: the values of all its neighbours in the (union) graph at every round ``t <= T``,
      the final values included: the observation set of Cyffers et al. (2022), a superset of the messages
      their per-message sum counts.

    ``colluders``: nodes that pool their views with every observer (each observer's coalition is itself
    plus the colluders; a coalition knows its members' values and noise). ``mu(u, v)`` is ``NaN`` for ``u``
    in ``v``'s coalition.

    The view is a linear function of ``y_0``, so ``u``'s privacy towards ``v`` is exactly a Gaussian
    mechanism with ``mu = (sensitivity / sigma_u) ||Pi e_u||``, ``Pi`` the orthogonal projection onto the
    row space of the view's matrix scaled by ``diag(sigma)``. Every ``(eps, delta)`` pair and every Renyi
    order follow from ``mu``: ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle and
    Wang 2018) and ``D_alpha = alpha mu^2 / 2``.

    Soundness: the reported ``mu`` is never below the exact one (derivation in
    :mod:`chainamp.network.projection`). Per observer, the rows ``(P_t)_{w,.}`` are computed in floating
    point with an entrywise error bound (non-negative products); the SVD's output is then checked a
    posteriori with worst-case rounding bounds: a lower bound on the r-th singular value of the exact view
    matrix proves its rank is at least r, ranks modulo enough primes (Hadamard) prove it is at most r, and a
    computed residual bounds the angle between the exact row space and the computed one. ``||P e_u||`` is
    widened by that angle and the basis's loss of orthonormality, rounded up and capped at
    ``sensitivity / sigma_u`` (``||Pi e_u|| <= 1``). When no proof is within reach (directions below double
    precision, more than ``rank_primes_limit`` primes), the observer's ``mu`` is that trivial cap for every
    node its view touches, flagged ``"capped"`` in :attr:`NetworkPrivacy.status` (an upper bound, not the exact value).
    Nodes the view never touches have ``mu = 0`` exactly.

    Parameters
    ----------
    W : MarkovOperator, array, scipy.sparse matrix, networkx graph, or a list of ``rounds`` of them
        The gossip matrix: row- and doubly stochastic within ``row_sum_atol``, used exactly as given (its
        floats are the protocol's weights). A networkx graph uses ``rule`` (default ``"metropolis"``; see
        :func:`~chainamp.network.gossip_matrix`). A list is a time-varying public schedule.
    rounds : int >= 1
    sigma : float, sequence or dict by node label
        The standard deviation of each node's noise.
    observers, sources : node labels (default: all nodes)
    allow_disconnected : bool
        A graph in several pieces is refused (gossip never averages across them; usually a mistake in W)
        unless this is True; then ``mu = 0`` between pieces.
    rank_primes_limit : int
        Largest number of primes an exact-rank proof may use per observer (beyond it, ``mu`` is the trivial
        bound ``sensitivity / sigma_u`` for the touched nodes: sound, maybe loose).

    Examples
    --------
    >>> import networkx as nx
    >>> res = gossip_privacy(nx.cycle_graph(8), 10, sigma=1.0, sources=[0], observers=[4])
    >>> round(float(res.renyi(2.0)[0, 0]), 6)    # the exact Renyi divergence of order 2: as if v saw x_u + noise
    1.0
    >>> round(float(res.published(2.0)[0, 0]), 3)   # the published per-message sum
    0.749
    """
    sched = as_schedule(W, rounds, rule, row_sum_atol, memory_limit=memory_limit)
    sig = as_sigma(sigma, sched)
    delta_ = sensitivity_value(sensitivity)
    view = check_choice(view, "view", VIEWS)
    limit = check_int(rank_primes_limit, "rank_primes_limit", minimum=0)
    obs = node_indices(observers, sched, "observers")
    src = node_indices(sources, sched, "sources")
    col = node_indices(colluders, sched, "colluders", default_all=False)
    col = np.zeros(0, np.int64) if col is None else col
    _check_connected(sched, obs, allow_disconnected)
    check_memory(8.0 * (3 * len(src) * len(obs) + 4 * sched.n), f"a {len(src)} x {len(obs)} matrix of mu",
                 memory_limit=memory_limit)
    cap = sensitivity_cap(delta_, sig)
    if not np.all(np.isfinite(cap)):
        i = int(np.argmin(np.isfinite(cap)))
        raise InvalidParameterError(
            f"sensitivity / sigma overflows for node {sched.labels[i]!r} (sensitivity={delta_!r}, sigma={float(sig[i])!r}): "
            "rescale both (mu depends on their ratio only)")
    mu = np.empty((len(src), len(obs)))
    status, ranks, margins = [], [], []
    with progress_bar(len(obs), "gossip_privacy", unit="observers", progress=progress) as bar, _one_blas_thread():
        for j, v in enumerate(obs.tolist()):
            coalition = np.union1d(col, [v]).astype(np.int64)
            if coalition.size == sched.n:
                raise InvalidParameterError(
                    f"observer {sched.labels[v]!r} with colluders {[sched.labels[c] for c in col]!r} is every node: "
                    "nobody is left to protect")
            res = observer_mu(sched, coalition, sig, view, rank_primes_limit=limit, memory_limit=memory_limit)
            rel = res.mu_rel[src]
            with np.errstate(invalid="ignore"):
                out = np.where(rel == 1.0, cap[src], np.nextafter(cap[src] * rel, np.inf))
            out = np.where(rel == 0.0, 0.0, out)
            mu[:, j] = out
            status.append(res.status)
            ranks.append(res.rank)
            margins.append(res.margin)
            bar.update(1)
    mu.setflags(write=False)
    dist = _distances(sched, src, obs)
    return NetworkPrivacy(labels=sched.labels, sources=tuple(sched.labels[i] for i in src),
                          observers=tuple(sched.labels[i] for i in obs), mu_matrix=mu, status=tuple(status),
                          ranks=tuple(ranks), margins=tuple(margins), rounds=sched.rounds, view=view,
                          sensitivity=delta_, sigma=sig,
                          colluders=tuple(sched.labels[i] for i in col), distance=dist, schedule=sched)


@contextlib.contextmanager
def _one_blas_thread():
    """Many small SVDs: BLAS threads only contend (measured 40x slower on a loaded 2-core machine for a
    200 x 999 SVD). threadpoolctl is optional: without it the BLAS keeps its own setting."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn and most scientific stacks
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def sensitivity_cap(delta_: float, sigma: np.ndarray) -> np.ndarray:
    """``Delta / sigma_u`` rounded up (exact when the division is)."""
    out = np.empty(sigma.shape)
    for s in np.unique(sigma):
        q = delta_ / float(s)
        if math.isfinite(q) and Fraction(q) * Fraction(float(s)) != Fraction(delta_):
            q = float(np.nextafter(q, np.inf))
        out[sigma == s] = q
    out.setflags(write=False)
    return out


def _union_pattern(sched) -> sp.csr_matrix:
    pat = None
    for mat in (sched.mats[:1] if sched.fixed else sched.mats):
        cur = (mat != 0).astype(np.int8)
        pat = cur + cur.T if pat is None else pat + cur + cur.T
    return sp.csr_matrix(pat)


def _check_connected(sched, obs: np.ndarray, allow: bool) -> None:
    from scipy.sparse.csgraph import connected_components  # imported on use

    if not isinstance(allow, bool):
        raise TypeError(f"allow_disconnected must be True or False (got {allow!r})")
    count, comp = connected_components(_union_pattern(sched), directed=False)
    if count > 1 and not allow:
        v = int(obs[0])
        far = int(np.nonzero(comp != comp[v])[0][0])
        raise InvalidOperatorError(
            f"W's graph is disconnected ({count} components: node {sched.labels[far]!r} never exchanges with "
            f"observer {sched.labels[v]!r}); fix W or pass allow_disconnected=True (then mu = 0 between components)")


def _distances(sched, src: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Hop distances between sources and observers in the union graph of the schedule (``inf``: unreachable)."""
    from scipy.sparse.csgraph import shortest_path  # imported on use (import chainamp stays light)

    pat = _union_pattern(sched)
    check_memory(8.0 * len(obs) * sched.n, f"the hop distances of {len(obs)} observers")
    d = shortest_path(pat, unweighted=True, directed=False, indices=obs)
    out = np.ascontiguousarray(d[:, src].T)
    out.setflags(write=False)
    return out
