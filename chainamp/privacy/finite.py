"""The exact privacy profile of a finite mechanism, whatever its storage: :func:`privacy_profile`.

It validates its arguments and dispatches: a structured mechanism
(:class:`~chainamp.operators.StructuredOperator`) to :func:`.structured.structured_profile`, per orbit of
neighbouring pairs and never densified, and every other one (dense, sparse, dask-backed) to
:func:`.exact.exact_profile`, which the structured path also uses on its small orbit mechanism. So this
module sits above both and neither imports it.
"""

from __future__ import annotations

from typing import Any

from .._numerics import check_executor, check_progress
from ..operators import StructuredOperator, as_operator
from .exact import ExactProfile, exact_profile
from .structured import structured_profile

__all__ = ["privacy_profile"]


def privacy_profile(M: Any, neighbors: Any = None, *, name: str | None = None, progress: bool | None = None,
                    executor: Any = None) -> ExactProfile:
    """Exact privacy profile of a finite mechanism: ``delta(eps) = max over neighbouring (u, u')
    of D_{e^eps}(M_u || M_u')`` (both orders of every pair count).

    ``M`` is a :class:`~chainamp.operators.MarkovOperator` (a dask-backed one is read by row blocks) or a
    row-stochastic matrix (rows = data values, columns = outputs: a numpy array, a scipy.sparse matrix or
    nested lists, checked as ``MarkovOperator(M)`` does); ``neighbors`` is None (all pairs: local DP, so
    this is an LDP audit of any channel), a networkx Graph over M's input labels, or a list of label pairs.
    ``progress`` (None: a tqdm bar after 2 s; True; False) and ``executor`` (None: serial, or any
    ``concurrent.futures.Executor``) apply to this call and to every later query of the profile; blocks of
    pairs are combined in pair order, so values and witnesses are identical serially and in parallel.

    Method: for each unordered pair the outcomes are sorted by the log-likelihood ratio
    ``l_y = log M_u(y) - log M_u'(y)``; with partial sums ``P, Q`` of ``M_u, M_u'`` in that order,
    ``D_{e^eps}(M_u || M_u')= P_k - e^eps Q_k`` where k counts the outcomes with ``l_y > eps``
    (a prefix), and the reverse direction is the matching suffix. Outputs no compared row can
    produce are dropped first. Memory: pairs are streamed by blocks of about ``2^18`` pair-outcome
    entries (all pairs are enumerated by index, never listed); every requested eps is evaluated in the
    same pass. The first query streams every pair and keeps, per unit of consecutive pairs (at most
    ``2^18`` units), the maximum of the computed values on a grid of 33 eps in ``[0, largest log-ratio]``
    and at ``eps = inf``. A later query recomputes only the units whose certified upper bound reaches a
    computed value: the curve ``H_a`` is convex and non-increasing in ``a = e^eps``, so between grid points it
    lies below the chord of the grid values (weights rounded outward, values raised by 8 units of
    rounding) plus the largest amount a computed value can exceed the exact one (``value_margin``), and
    it is 0 past the unit's pure level. A skipped unit's values are therefore below the maximum: the
    result and the witness are those of the full scan. Pairs whose sorted data are bit-identical (k-RR:
    all of them) form a class; when the classes' data fit in 32 MiB (every pair of a 40 x 500 mechanism
    does), they are kept (the blocks' own sorted arrays) and later queries evaluate one representative per
    class (the first pair of the class, so witnesses are unchanged) instead. A query of one eps then
    evaluates the class whose chord bound is largest, and only the classes whose bound reaches its value (on
    a 40 x 500 product about one class in 780), with the same operations element by element as the array
    kernel: scalar queries give the array query's values, bit for bit, at about its cost per eps.

    Rounding (all toward larger delta): computed log-ratios are within
    ``llr_err = 32 u max|log M(y)|`` of the exact ones (``u = 2^-53``; this allows 4-ulp
    library logarithms); an outcome on the wrong
    side of eps changes the sum by at most ``2 llr_err M_u(y)``, so the mass of the outcomes
    whose computed ratio is within ``llr_err`` of eps is added with that weight. Partial sums
    are inflated by ``(m + 4) u`` relative, ``e^eps Q_k`` (computed as ``exp(eps + log Q_k)``)
    deflated by ``u (2 eps + 10 |log Q_k| + m + 16)`` relative, and the maximum over pairs is
    rounded up once more. ``pure_epsilon`` is the largest computed finite log-ratio plus
    ``2 llr_err`` (0 when all compared rows are equal, inf when a support differs); delta is 0
    from there on.

    Examples
    --------
    >>> rr = [[0.75, 0.25], [0.25, 0.75]]
    >>> prof = privacy_profile(rr)
    >>> round(prof.delta(0.0), 6), round(prof.pure_epsilon, 6)
    (0.5, 1.098612)
    """
    progress = check_progress(progress)
    executor = check_executor(executor)
    op = as_operator(M, "M")
    if isinstance(op, StructuredOperator):  # per orbit of neighbouring pairs, never densified (.structured)
        return structured_profile(op, neighbors, name)
    return exact_profile(op, neighbors, name=name, progress=progress, executor=executor)
