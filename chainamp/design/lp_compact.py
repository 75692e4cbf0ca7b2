r"""Compact linear programs of :mod:`chainamp.design` at scale, built as sparse matrices and solved without cvxpy.

**Post-processing, pure epsilon over all pairs** (:func:`post_processing_compact`). Every ordered pair of
inputs x, x' and output y gives a constraint ``(MK)(x, y) <= e^eps (MK)(x', y)``: ``n (n - 1) k`` rows of m
nonzeros each, 10^8 for a dense 100 x 100 M. Over *all* pairs they say, for each output y, that the largest
entry of column y of ``Q = M K`` is at most e^eps times its smallest. With the column's bounds as variables,

.. math::

    Q = M K,\quad Q(x, y) \le u_y,\quad \ell_y \le Q(x, y),\quad u_y \le e^\varepsilon \ell_y,\quad
    \textstyle\sum_y K(z, y) = 1,\quad K \ge 0,

the same feasible set of K (project out Q, u, l: for a feasible K take ``u_y = max_x Q(x, y)``, ``l_y = min_x
Q(x, y)``; conversely the chain ``Q(x, y) <= u_y <= e^eps l_y <= e^eps Q(x', y)`` is every pair's constraint).
It has ``n k (m + 1)`` nonzeros in ``Q = M K`` and 2-nonzero rows otherwise (10^6 at n = m = k = 100): a
block-angular LP (one block per output y, linked only by K's row sums) that an interior-point method with a
sparse direct factorisation solves fast. It is solved with Clarabel (Goulart and Chen 2024, the interior-point
solver cvxpy ships with) called directly, so cvxpy's canonicalisation of a 10^6-nonzero problem is skipped;
HiGHS's simplex and IPX were measured 4-8x slower on this structure (dense ``M`` blocks). Only the status
``Solved`` is trusted (anything else raises :class:`~chainamp.errors.SolverError`); the caller clips and
renormalises K, recomputes the loss in numpy, bounds it from below with the multipliers (in
:mod:`chainamp.design.duals`, valid for *any* non-negative multipliers) and has ``amplify`` certify K.

Clarabel is imported lazily, in this module only (like cvxpy in :mod:`chainamp.design.lp`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SolverError

__all__: list[str] = []

#: Clarabel's status that is trusted (``AlmostSolved``, iteration limits and the rest raise)
_TRUSTED = "Solved"
#: solver settings: Clarabel's default tolerances (1e-8; tightening them to 1e-10 cost 50% more time at n = 100, and
#: the repair and the certificate absorb the residual), its supernodal factorisation (faer) for the dense M blocks
_SETTINGS = {"direct_solve_method": "faer"}


@dataclass(frozen=True)
class CompactOutcome:
    """The solver's K and the clipped multipliers of ``Q <= u 1^T`` (alpha), ``l 1^T <= Q`` (beta), ``u <= e l``
    (gamma), each n x k (gamma: k)."""

    K: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    solver: str
    status: str


def compact_nonzeros(n: int, m: int, k: int) -> int:
    """Constraint nonzeros of the compact post-processing LP (for the size check before building it)."""
    return n * k * (m + 1) + 4 * n * k + 2 * k + m * k + m * k


def solve_compact(C: np.ndarray, M: np.ndarray, e: float, verbose: bool = False) -> tuple[CompactOutcome, str | None]:
    """The compact LP solved by the block interior-point method (:mod:`chainamp.design.block_ipm`), or, when that
    does not converge, by Clarabel (:func:`post_processing_compact`); returns the outcome and a note on a fallback."""
    from . import block_ipm

    try:
        out = block_ipm.solve(C, M, e)
    except SolverError as exc:
        note = f"the block interior-point method failed ({exc}); the compact LP was solved with Clarabel instead"
        return post_processing_compact(C, M, e, verbose), note
    if not all(np.all(np.isfinite(out[name])) for name in ("K", "alpha", "beta", "gamma")):
        raise SolverError("the block interior-point method returned a non-finite solution")  # pragma: no cover
    return CompactOutcome(K=out["K"], alpha=np.maximum(out["alpha"], 0.0), beta=np.maximum(out["beta"], 0.0),
                          gamma=np.maximum(out["gamma"], 0.0), solver="block-IPM", status="optimal"), None


def post_processing_compact(C: np.ndarray, M: np.ndarray, e: float, verbose: bool = False) -> CompactOutcome:
    """Solve ``min <C, K>`` over row-stochastic K (m x k) with ``max_x (MK)(x, y) <= e min_x (MK)(x, y)`` for every
    y, in the compact form of the module docstring, with Clarabel."""
    import clarabel
    import scipy.sparse as sp

    n, m = M.shape
    k = C.shape[1]
    nK, nQ = m * k, n * k
    nv = nK + nQ + 2 * k  # K (z * k + y), Q (x * k + y), u (k), l (k)
    K_cols, Q_cols = np.arange(nK), nK + np.arange(nQ)
    u_cols, l_cols = nK + nQ + np.arange(k), nK + nQ + k + np.arange(k)
    blocks = []  # (rows, cols, values) of each constraint block, stacked row by row
    row = 0

    def add(r, c, v, count):
        nonlocal row
        blocks.append((row + np.asarray(r), np.asarray(c), np.asarray(v, dtype=float)))
        row += count

    # zero cone: Q - (M kron I) K = 0, then K's row sums = 1
    MI = sp.kron(sp.csr_matrix(M), sp.identity(k, format="csr"), format="coo")
    add(MI.row, MI.col, -MI.data, 0)
    add(np.arange(nQ), Q_cols, np.ones(nQ), nQ)
    add(np.repeat(np.arange(m), k), K_cols, np.ones(nK), m)
    n_zero = row
    # non-negative cone (A x <= b): Q(x, y) - u_y, l_y - Q(x, y), u_y - e l_y, -K
    y_of_q = np.tile(np.arange(k), n)
    add(np.repeat(np.arange(nQ), 2), np.stack([Q_cols, u_cols[y_of_q]], 1).ravel(), np.tile([1.0, -1.0], nQ), nQ)
    add(np.repeat(np.arange(nQ), 2), np.stack([l_cols[y_of_q], Q_cols], 1).ravel(), np.tile([1.0, -1.0], nQ), nQ)
    add(np.repeat(np.arange(k), 2), np.stack([u_cols, l_cols], 1).ravel(), np.tile([1.0, -e], k), k)
    add(np.arange(nK), K_cols, -np.ones(nK), nK)
    rows, cols, vals = (np.concatenate(parts) for parts in zip(*blocks))
    A = sp.csc_matrix((vals, (rows, cols)), shape=(row, nv))
    b = np.zeros(row)
    b[nQ:n_zero] = 1.0
    c = np.zeros(nv)
    c[:nK] = C.ravel()
    settings = clarabel.DefaultSettings()
    settings.verbose = bool(verbose)
    for name, value in _SETTINGS.items():
        setattr(settings, name, value)
    cones = [clarabel.ZeroConeT(n_zero), clarabel.NonnegativeConeT(row - n_zero)]
    try:
        sol = clarabel.DefaultSolver(sp.csc_matrix((nv, nv)), c, A, b, cones, settings).solve()
    except Exception as exc:  # pragma: no cover - Clarabel raises only on malformed input
        raise SolverError(f"solver CLARABEL failed on the compact post-processing LP: {exc}") from exc
    status = str(sol.status).rsplit(".", 1)[-1]
    if status != _TRUSTED:
        raise SolverError(f"solver CLARABEL returned status {status!r} on the compact post-processing LP; only "
                          f"{_TRUSTED!r} is trusted")
    x, z = np.asarray(sol.x, dtype=float), np.asarray(sol.z, dtype=float)
    if x.shape != (nv,) or z.shape != (row,) or not (np.all(np.isfinite(x)) and np.all(np.isfinite(z))):
        raise SolverError("solver CLARABEL returned a missing or non-finite solution on the compact post-processing LP")
    mult = np.maximum(z[n_zero:], 0.0)
    return CompactOutcome(K=x[:nK].reshape(m, k), alpha=mult[:nQ].reshape(n, k), beta=mult[nQ:2 * nQ].reshape(n, k),
                          gamma=mult[2 * nQ:2 * nQ + k], solver="CLARABEL", status="optimal")
