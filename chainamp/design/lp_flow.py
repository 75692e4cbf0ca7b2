r"""A sparse certificate that the Doeblin closed form solves the Dobrushin design: a flow LP on a few pairs, by PDLP.

The Dobrushin design (:mod:`chainamp.design.mixing_design`) minimises ``<C, K>`` over row-stochastic K with
``TV(K_x, K_x') <= gamma`` for every pair, ``C = diag(prior) loss``. Its Lagrangian bound
(:func:`chainamp.design.duals.dobrushin_bound`; weak duality, Boyd and Vandenberghe 2004, *Convex Optimization*,
Section 5.1.3) holds for *any* multipliers ``lam[p] >= 0`` on any set of pairs:

.. math::

    \mathrm{OPT} \ge \sum_x \min_y (C + B)[x, y] - \gamma \sum_p \max_y \lambda_p[y],
    \qquad B[i_p] \mathrel{+}= \lambda_p,\ B[j_p] \mathrel{-}= \lambda_p .

Adding a constant to ``lam[p]`` moves row ``i_p`` of ``C + B`` up and row ``j_p`` down by it, so the bound depends on
``lam[p]`` only through a free vector ``f_p`` (``lam[p] = f_p - min f_p``) and its oscillation ``max f_p - min f_p``;
fix ``f_p[y*] = 0`` (``y*`` the best constant output). Write ``D(x)`` for row x's best output, ``gap_x = C[x, y*] -
C[x, D(x)] >= 0`` and ``a[x, y] = C[x, y*] - C[x, y]``. The candidate ``K_D = gamma D + (1 - gamma) 1 e_{y*}^T`` (the
Doeblin optimum, feasible here) loses ``sum_x C[x, y*] - gamma sum_x gap_x``. Complementary slackness between
``K_D`` and an optimal dual (derivation ours) says what such a dual looks like when ``K_D`` is optimal:

* a pair with ``D(x) = D(x')`` has ``TV(K_D) = 0 < gamma``, so its multiplier vanishes: only pairs with different
  best outputs carry one;
* on pair ``(x, x')`` the largest entry of ``f`` sits at ``D(x)`` (call it ``U_{x->x'} >= 0``) and the smallest at
  ``D(x')`` (``-U_{x'->x}``), since ``K_D(x) - K_D(x')`` is positive only at ``D(x)``;
* every row's ``(C + F)[x]``, ``F_x = sum_{x'} f_{xx'}`` (antisymmetric), is smallest at both ``y*`` and ``D(x)``
  (``K_D`` puts mass on both): ``F_x[y] >= a[x, y]`` for every y, with equality at ``D(x)``.

Conversely any such ``f`` makes the bound equal ``L_D`` (the oscillations add up to ``sum_x gap_x``): a
**feasibility LP** in the ``f_p[y]`` and ``U`` (per output y a network flow in which node x sends at least ``a[x,
y]``, edge ``x -> x'`` carrying at most ``U_{x->x'}``). Kept on *all* pairs it is as large as the design LP; kept on
a sparse graph (each row joined to its ``degree`` best partners by the score ``gap_z(D(x)) + gap_x(D(z))``,
``gap_x(y) = C[x, y] - min C[x]``: the rows that most dislike each other's best output) it has ``6 |E| (n - 1)``
nonzeros and is solved by HiGHS's PDLP (the primal-dual hybrid gradient method of Applegate et al. 2021, "Practical
large-scale linear programming using primal-dual hybrid gradient", NeurIPS) under a fixed **iteration** limit (so that
the outcome never depends on the machine's speed). The graph is grown (``DEGREES``) when the LP is not solved.

Soundness does not rest on the solver: whatever point PDLP returns (optimal or stopped at its iteration limit), its
``f`` is turned into ``lam >= 0`` and :func:`~chainamp.design.duals.dobrushin_bound` recomputes the bound in numpy,
rounded down; the caller accepts ``K_D`` only when that bound is within ``design_gap_rtol`` of ``L_D``. A graph too
sparse, or an instance where ``K_D`` is not optimal (the Fano-plane loss), only means no certificate: the caller
falls back to :func:`chainamp.design.lp_dobrushin.solve_pairs`.

Measured (uniform random losses, Dirichlet priors, gamma = 0.4, load 1-2, 2 cores): n = 40, seeds 0-2, certified in
0.2-0.5 s (degree 6-8), but the benchmark's n = 40 instance (seed 40) not at any degree 8-24 within 5,000 iterations
(3.3 s lost before pair generation certified it); n = 60, seeds 0-3 and 60, certified in 1.2-2.4 s (degree 8-12;
pair generation alone: 15 s in the same run); n = 100, two of four seeds certified at degree 12 (17-56 s), the others
not within 20,000 iterations; n = 200 (2,200 pairs, 2.6e6 nonzeros, about 40 ms per iteration) not within the work
limit (1,150 iterations, 47 s). Simplex and interior point (without crossover) were 4-10 s at n = 40 and over 140 s at
n = 100. So this is the fast path up to about n = 60-100, not yet n = 200; the iteration and work limits bound what a
failed attempt costs before the fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._numerics import check_memory, quiet_highs
from ..errors import ResourceLimitError
from .duals import dobrushin_bound

__all__: list[str] = []

#: partners per row tried in turn (each row joined to its best-scored ones; m = 12 certified n = 60 on seeds 0-3)
DEGREES = (8, 12)
#: PDLP iterations per attempt (n = 60 took at most 2,120; n = 100 up to 14,840)
ITERATION_LIMIT = 5000
#: PDLP's relative optimality (feasibility) tolerance: tighter than HiGHS's 1e-7 so that the recomputed bound sits
#: within about 1e-9 of the target, not 1e-7 (n = 60: 1,100-2,100 iterations either way)
PDLP_TOLERANCE = 1e-10
#: iterations times nonzeros per attempt: bounds the work (and the time wasted before the fallback) at large n
WORK_LIMIT = 3.0e9
#: bytes held per nonzero: the COO triplets (24), the CSC copy (12), HiGHS's copies and PDLP's vectors (about 60)
BYTES_PER_NONZERO = 100.0


@dataclass(frozen=True)
class FlowOutcome:
    """The pairs and multipliers of the last attempt, their certified bound, whether it met the target, the
    degree and PDLP's iterations and status of that attempt."""

    pairs: np.ndarray
    lam: np.ndarray
    bound: float
    certified: bool
    degree: int
    iterations: int
    status: str
    solver: str = "HiGHS PDLP (flow certificate)"


def graph(C: np.ndarray, degree: int) -> np.ndarray:
    """The pairs ``(x, z)``, ``x < z``, joining each row to its ``degree`` best partners by the score ``gap_z(D(x)) +
    gap_x(D(z))``, pairs with equal best outputs left out (module docstring).

    Examples
    --------
    >>> C = np.array([[0.0, 1.0, 5.0], [2.0, 0.0, 1.0], [1.0, 2.0, 0.0]])
    >>> graph(C, 1).tolist()
    [[0, 1], [0, 2]]
    """
    n = C.shape[0]
    D = np.argmin(C, axis=1)
    G = C - C.min(axis=1, keepdims=True)
    with np.errstate(over="ignore"):  # a score past the largest float is +inf: still the strongest pair, kept
        S = G[:, D].T + G[:, D]
    S[D[:, None] == D[None, :]] = -np.inf
    k = min(int(degree), n - 1)
    near = np.argpartition(-S, k - 1, axis=1)[:, :k]
    x = np.repeat(np.arange(n), k)
    z = near.ravel()
    ok = S[x, z] > -np.inf  # leaves out the pairs with equal best outputs only
    x, z = x[ok], z[ok]
    if x.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    return np.unique(np.stack([np.minimum(x, z), np.maximum(x, z)], axis=1), axis=0).astype(np.int64)


def build(C: np.ndarray, E: np.ndarray) -> dict:
    """The feasibility LP on the pairs ``E`` (module docstring), as a column-wise sparse matrix with row and column
    bounds. Columns: ``U_out[e]``, ``U_in[e]``, then ``f[e, k]`` for the outputs ``y != y*`` (``k`` their index)."""
    import scipy.sparse as sp

    n = C.shape[0]
    D = np.argmin(C, axis=1)
    ys = int(np.argmin(C.sum(axis=0)))
    ycols = np.delete(np.arange(n), ys)
    ny = n - 1
    pos = np.full(n, -1)
    pos[ycols] = np.arange(ny)
    ne = E.shape[0]
    xe, ze = E[:, 0], E[:, 1]
    nf = ne * ny
    e_idx = np.repeat(np.arange(ne), ny)
    k_idx = np.tile(np.arange(ny), ne)
    fcol = 2 * ne + np.arange(nf)
    r1 = 2 * np.arange(nf)  # f[e, k] - U_out[e] <= 0
    r2 = r1 + 1  # -f[e, k] - U_in[e] <= 0
    nr_e = 2 * nf  # then the node rows nr_e + x ny + k: F_x[k] = sum_{e at x} (+-) f[e, k]
    one = np.ones(nf)
    rows = np.concatenate([r1, r1, r2, r2, nr_e + xe[e_idx] * ny + k_idx, nr_e + ze[e_idx] * ny + k_idx])
    cols = np.concatenate([fcol, e_idx, fcol, ne + e_idx, fcol, fcol])
    vals = np.concatenate([one, -one, -one, -one, one, -one])
    nrow, ncol = nr_e + n * ny, 2 * ne + nf
    A = sp.csc_array((vals, (rows, cols)), shape=(nrow, ncol))
    rlo = np.full(nrow, -np.inf)
    rhi = np.zeros(nrow)
    px = pos[D[xe]]  # f[e, D(x)] = U_out[e], f[e, D(z)] = -U_in[e]: equalities (lower bound 0 as well)
    okx = px >= 0
    rlo[r1[np.nonzero(okx)[0] * ny + px[okx]]] = 0.0
    pz = pos[D[ze]]
    okz = pz >= 0
    rlo[r2[np.nonzero(okz)[0] * ny + pz[okz]]] = 0.0
    lo = np.zeros(ncol)
    lo[2 * ne:] = -np.inf
    hi = np.full(ncol, np.inf)
    hi[np.nonzero(D[xe] == ys)[0]] = 0.0  # a row whose best output is y* sends nothing
    hi[ne + np.nonzero(D[ze] == ys)[0]] = 0.0
    a = C[:, [ys]] - C
    rlo[nr_e:] = a[:, ycols].ravel()
    rhi[nr_e:] = np.inf
    eq = np.nonzero(D != ys)[0]
    at = nr_e + eq * ny + pos[D[eq]]
    gap = C[eq, ys] - C[eq, D[eq]]
    rlo[at] = gap
    rhi[at] = gap
    return dict(A=A, rlo=rlo, rhi=rhi, lo=lo, hi=hi, ne=ne, ny=ny, ycols=ycols)


def _pdlp(P: dict, iterations: int, verbose: bool) -> tuple:
    """Solve the LP ``P`` (zero objective) with HiGHS's PDLP under an iteration limit; (column values or None, status
    string, iterations)."""
    import highspy

    inf = highspy.kHighsInf
    h = quiet_highs(verbose)
    h.setOptionValue("solver", "pdlp")
    h.setOptionValue("pdlp_iteration_limit", int(iterations))
    h.setOptionValue("pdlp_optimality_tolerance", PDLP_TOLERANCE)
    A = P["A"]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = np.zeros(A.shape[1])
    lp.col_lower_, lp.col_upper_ = np.clip(P["lo"], -inf, inf), np.clip(P["hi"], -inf, inf)
    lp.row_lower_, lp.row_upper_ = np.clip(P["rlo"], -inf, inf), np.clip(P["rhi"], -inf, inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    x = np.asarray(h.getSolution().col_value, dtype=float)
    done = int(h.getInfo().pdlp_iteration_count)
    if x.shape != (A.shape[1],) or not np.all(np.isfinite(x)):
        return None, status, done
    return x, status, done


def certify_flow(C: np.ndarray, gamma: float, target: float, rtol: float, max_nonzeros: int, *,
                 degrees: tuple = DEGREES, iteration_limit: int = ITERATION_LIMIT, work_limit: float = WORK_LIMIT,
                 scale: float = 1.0, verbose: bool = False) -> FlowOutcome | None:
    """Try to certify ``K_D`` (loss ``target``) with multipliers on sparse graphs of growing degree (module docstring).

    The LP is solved on ``C * scale`` (a power of two: HiGHS loses costs far below its tolerances); the bound is
    recomputed on ``C`` with the multipliers scaled back. An attempt is skipped when its LP exceeds ``max_nonzeros``
    or the memory limit. Returns the first certifying attempt, else the last one tried (``certified`` False), or
    None when none could be tried.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> loss = rng.random((12, 12)); C = rng.dirichlet(np.ones(12))[:, None] * loss
    >>> KD = 0.4 * (C == C.min(axis=1, keepdims=True)); KD[:, np.argmin(C.sum(axis=0))] += 0.6
    >>> out = certify_flow(C, 0.4, float(np.sum(C * KD)), 1e-7, 10**7)
    >>> out.certified, out.bound <= float(np.sum(C * KD))
    (True, True)
    """
    n = C.shape[0]
    out = None
    last = None
    for degree in degrees:
        E = graph(C, degree)
        if E.shape[0] == 0:
            return None
        if last is not None and np.array_equal(E, last):  # small n: a larger degree gives the same pairs
            continue
        last = E
        nonzeros = 6.0 * E.shape[0] * (n - 1)
        if nonzeros > max_nonzeros:
            break
        try:
            check_memory(BYTES_PER_NONZERO * nonzeros, f"Dobrushin design: the flow certificate on {E.shape[0]:,} pairs")
        except ResourceLimitError:
            break
        P = build(C * scale, E)
        iters = max(1, min(int(iteration_limit), int(work_limit // nonzeros)))
        x, status, done = _pdlp(P, iters, verbose)
        if x is None:
            continue
        ne, ny = P["ne"], P["ny"]
        F = np.zeros((ne, n))
        F[:, P["ycols"]] = x[2 * ne:].reshape(ne, ny)
        lam = (F - F.min(axis=1, keepdims=True)) / scale  # any lam >= 0 gives a valid bound (module docstring)
        bound = dobrushin_bound(C, E, lam, gamma)
        out = FlowOutcome(pairs=E, lam=lam, bound=bound, certified=target - bound <= rtol * target, degree=int(degree),
                          iterations=done, status=status)
        if out.certified:
            return out
    return out
