r"""The Dobrushin design LP by lazy constraint generation, solved with HiGHS (highspy) and warm started.

The least-loss n x n operator with Dobrushin coefficient at most gamma (:mod:`chainamp.design.mixing_design`) is

.. math::

    \min_K \langle C, K\rangle \ \text{s.t.}\ K \text{ row-stochastic},\quad
    t_p[y] \ge K(i, y) - K(j, y),\ t_p \ge 0,\ \textstyle\sum_y t_p[y] \le \gamma
    \quad\text{for every pair } p = (i < j),

with ``n + n^2 (n - 1) / 2`` auxiliary variables and as many rows (4.0e6 at n = 200). Keeping only a subset E of the
auxiliary *entries* ``(p, y)`` (the variable ``t_p[y]`` and its row; the pair's sum row once p has an entry) gives a
**relaxation**: a feasible K with any t satisfies the kept rows, since ``sum_{y in E_p} [K(i, y) - K(j, y)]_+ <=
TV(K_i, K_j)``. The relaxation is solved, its K checked against every pair in numpy (``TV(K_i, K_j) =
sum_y [K(i, y) - K(j, y)]_+`` for rows of equal sums, vectorised over pairs in blocks), and for each pair with
``TV > gamma`` the entries ``(p, y)`` with ``K(i, y) > K(j, y)`` not yet in E are added (the separation is exact:
once ``E_p`` holds every y where ``K_i`` exceeds ``K_j`` the pair's constraint is the full one), and the LP is
re-solved from its last basis (dual simplex: the new rows are the only infeasibility). The loop ends when no entry is
added; the last LP's K then satisfies every pair's constraint up to the solver's feasibility tolerance, so the
relaxation's optimum is the LP's. E is finite (at most ``n^2 (n - 1) / 2`` entries), so the loop ends.

This is the classical cutting-plane method for LPs with many constraints (Kelley 1960, "The cutting-plane method for
solving convex programs", J. SIAM 8(4); Dantzig, Fulkerson and Johnson 1954 for its lazy-constraint use); the
auxiliary entries are the disaggregated form of the subset cuts ``sum_{y in S} K(i, y) - K(j, y) <= gamma`` (every
S at once for ``S`` within ``E_p``), which converged far more slowly when added one subset at a time (measured on one
random n = 40 loss and prior, gamma = 0.4: 41 rounds and 169 s against 21 rounds and 80 s).

Cost. The relaxation's rows move to a new output each round until a kept entry blocks that move, so the kept entries
grow to a fixed fraction of all ``n^2 (n - 1) / 2`` (two thirds at n = 40, a third on an easier n = 40 instance that
took 3 s), and the time with them as about n^3 entries re-solved by the dual simplex. At n = 30-40 it is as fast
as the full LP through cvxpy (within 2x either way, depending on the instance); it is not a path to n = 200 in
seconds. A certificate with about n^2 entries does exist (an L1-smallest optimal dual measured at n = 20 kept 465 of
3,800: each active pair penalises its first row's best output, the best constant output and that row's next-cheapest
outputs); finding such a sparse set directly is left open.

Only HiGHS's ``Optimal`` model status is trusted (anything else raises :class:`~chainamp.errors.SolverError`). The
caller clips and renormalises K, has chainamp certify its coefficient (repairing a tolerance-level excess by mixing
toward uniform rows), recomputes the loss in numpy and bounds every K's loss from below with the multipliers of the
kept rows (:func:`chainamp.design.duals.dobrushin_bound`, valid for *any* non-negative multipliers, the missing
entries' multipliers being 0).

**Whole pairs, ordered by score, stopping at a candidate** (:func:`solve_pairs`, what ``formulation="auto"`` runs for
a loss that is not invariant). The same relaxation idea with a pair's constraint kept *whole* (its ``n`` entries and
its sum row at once) instead of entry by entry, a few pairs per row and round: of the pairs whose TV exceeds gamma,
the most violated first and, among equally violated ones (the first round's relaxation is the Bayes rule ``D``, where
every pair with different best outputs is violated by ``1 - gamma``), those with the larger score ``gap_j(d(i)) +
gap_i(d(j))`` (``gap_x(y) = C[x, y] - min C[x]``, ``d(x)`` row x's best output): the pairs whose rows most dislike
each other's best output, the ones whose multipliers price the most. Every round computes the certified bound
:func:`~chainamp.design.duals.dobrushin_bound` of the kept multipliers (valid for any multipliers: the missing pairs'
are 0) and stops as soon as it meets ``target``, the loss of a feasible candidate (the Doeblin closed form ``K_D``):
the candidate is then optimal up to ``rtol``, with that bound as its certificate, and the relaxation need not be
solved to the end. Otherwise the loop ends when the relaxation's K violates no pair (the LP optimum, as above).
Measured (random losses and Dirichlet priors, gamma = 0.4, load 2-4): n = 40, 1.4-16 s (2 rounds, about 220 of 780
pairs, on two instances; the full cvxpy LP took 97 s and the entry cuts 91 s on the second, same run); n = 60, 15-101 s;
n = 100 and 200, no answer in 120 s. The relaxation LPs themselves are slow: the first round at n = 100 (284 pairs,
28,400 entries) takes HiGHS's dual simplex 34,000 iterations and 27 s, its interior-point method 40 s. So this is not
yet a path to n = 200 in seconds. Restricting a pair's entries to its rows' cheapest outputs does not help: the
multipliers of a certificate sit on about a third of the outputs of each pair at n = 12-40. The default route now
tries the sparse flow certificate of :mod:`chainamp.design.lp_flow` first (n = 60 in 1-3 s) and comes here only when
it does not certify.

highspy (HiGHS's Python interface, a dependency of cvxpy >= 1.6) is imported lazily, here and in
:mod:`chainamp._numerics.highs` (its first object made with stdout silenced: HiGHS prints a banner once per process).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._numerics import check_memory, quiet_highs
from ..errors import SolverError
from .duals import dobrushin_bound

__all__: list[str] = []

#: separation tolerance: a pair's entries are added when its TV exceeds gamma by more than this (the solver's own
#: feasibility tolerance is 1e-7 relative; what is left is certified, and repaired if needed, by the caller)
CUT_ATOL = 1e-9
#: rounds of constraint generation before giving up (n = 40 took 14-21 rounds)
MAX_ROUNDS = 200
#: pairs checked per numpy block (a block holds 2 x PAIR_BLOCK x n doubles)
PAIR_BLOCK = 4096
#: bytes held per auxiliary entry: the entry arrays here (p, y, row index: 24), HiGHS's column, row and three
#: nonzeros in its row- and column-wise copies and its simplex work arrays (about 150), rounded up
BYTES_PER_ENTRY = 200.0


@dataclass(frozen=True)
class CutsOutcome:
    """The relaxation's K, the kept pairs and the clipped multipliers of their entries (dense, pairs x n; 0 on the
    entries not kept), the rounds taken and the entries kept."""

    K: np.ndarray
    pairs: np.ndarray
    lam: np.ndarray
    rounds: int
    entries: int
    solver: str = "HiGHS (constraint generation)"
    status: str = "optimal"
    #: :func:`solve_pairs` only: the certified bound of the last round and whether it met the target
    bound: float = 0.0
    certified: bool = False


def available() -> bool:
    """True when highspy can be imported (the constraint-generation path needs it)."""
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return True


def _stochastic_model(C: np.ndarray, verbose: bool):
    """A quiet HiGHS model minimising ``<C, K>`` over the n x n row-stochastic K (columns ``K.ravel()``, rows the n
    row sums), to which both constraint-generation loops add their rows."""
    import highspy

    n = C.shape[0]
    nK = n * n
    i32 = np.int32
    h = quiet_highs(verbose)
    h.addCols(nK, np.ascontiguousarray(C.ravel(), dtype=float), np.zeros(nK), np.full(nK, highspy.kHighsInf), 0,
              np.zeros(nK, dtype=i32), np.zeros(0, dtype=i32), np.zeros(0))
    h.addRows(n, np.ones(n), np.ones(n), nK, np.arange(0, nK, n, dtype=i32), np.arange(nK, dtype=i32), np.ones(nK))
    return h


def violated_entries(K: np.ndarray, gamma: float, have: np.ndarray, tol: float = CUT_ATOL) -> tuple:
    """The entries ``(p, y)`` to add: for every pair ``p = (i < j)`` (``numpy.triu_indices`` order) with
    ``TV(K_i, K_j) > gamma + tol``, the y with ``K(i, y) > K(j, y)`` and ``have[p, y]`` False; also the largest excess.

    Examples
    --------
    >>> K = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> p, y, excess = violated_entries(K, 0.5, np.zeros((1, 2), dtype=bool))
    >>> p.tolist(), y.tolist(), excess
    ([0], [0], 0.5)
    """
    n = K.shape[0]
    iu, ju = np.triu_indices(n, 1)
    ps, ys, worst = [], [], -np.inf
    for start in range(0, iu.size, PAIR_BLOCK):
        sl = slice(start, start + PAIR_BLOCK)
        D = K[iu[sl]] - K[ju[sl]]
        tv = np.maximum(D, 0.0).sum(axis=1)
        worst = max(worst, float((tv - gamma).max()))
        bad = np.nonzero(tv > gamma + tol)[0]
        if bad.size:
            new = (D[bad] > 0.0) & ~have[start + bad]
            r, y = np.nonzero(new)
            ps.append(start + bad[r])
            ys.append(y)
    if not ps:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), worst
    return np.concatenate(ps), np.concatenate(ys), worst


def solve_cuts(C: np.ndarray, gamma: float, max_nonzeros: int, *, tol: float = CUT_ATOL, max_rounds: int = MAX_ROUNDS,
               verbose: bool = False, on_round=None) -> CutsOutcome:
    """Solve the Dobrushin design LP for the cost ``C = diag(prior) loss`` by constraint generation (module
    docstring). ``max_nonzeros`` caps the constraint nonzeros built (checked before every addition, like
    ``max_lp_nonzeros`` for the full LP); ``on_round(round, entries, excess)`` reports progress."""
    import highspy

    n = C.shape[0]
    P = n * (n - 1) // 2
    nK = n * n
    # the pairs x n table of kept entries and one pairs x n block of differences at a time, before building any
    check_memory(float(P) * n * 9.0 + 2.0 * PAIR_BLOCK * n * 8.0 + 64.0 * nK,
                 f"Dobrushin design: the {P:,} x {n} table of kept auxiliary entries", hint="use fewer states")
    inf = highspy.kHighsInf
    h = _stochastic_model(C, verbose)
    i32 = np.int32
    n_rows, n_cols, nonzeros = n, nK, nK
    iu, ju = np.triu_indices(n, 1)
    have = np.zeros((P, n), dtype=bool)
    sum_row = np.full(P, -1, dtype=np.int64)  # HiGHS row of each pair's sum_y t_p[y] <= gamma (-1: not kept yet)
    ent_p, ent_y, ent_row = [], [], []  # kept entries and the HiGHS rows of their t_p[y] >= K_i[y] - K_j[y]
    for rounds in range(1, max_rounds + 1):
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"solver HiGHS returned status {h.modelStatusToString(status)!r} on round {rounds} of "
                              "the Dobrushin design LP; only 'Optimal' is trusted")
        x = np.asarray(h.getSolution().col_value, dtype=float)
        if x.shape != (n_cols,) or not np.all(np.isfinite(x)):
            raise SolverError("solver HiGHS returned a missing or non-finite solution on the Dobrushin design LP")
        K = x[:nK].reshape(n, n)
        p, y, excess = violated_entries(K, gamma, have, tol)
        if on_round is not None:
            on_round(rounds, sum(a.size for a in ent_p), excess)
        if p.size == 0:
            break
        new_pairs = np.unique(p[sum_row[p] < 0])
        m, k = p.size, new_pairs.size
        nonzeros += 4 * m
        if nonzeros > max_nonzeros:
            raise SolverError(f"the Dobrushin design LP needs more than max_lp_nonzeros={max_nonzeros:,} constraint "
                              f"nonzeros after {rounds} rounds of constraint generation ({nonzeros:,}); pass a larger "
                              "max_lp_nonzeros= or use fewer states")
        check_memory(BYTES_PER_ENTRY * (sum(a.size for a in ent_p) + m),
                     f"Dobrushin design: the LP with {sum(a.size for a in ent_p) + m:,} auxiliary entries",
                     hint="use fewer states")
        if k:
            h.addRows(k, np.full(k, -inf), np.full(k, float(gamma)), 0, np.zeros(k, dtype=i32), np.zeros(0, dtype=i32),
                      np.zeros(0))
            sum_row[new_pairs] = n_rows + np.arange(k)
            n_rows += k
        h.addCols(m, np.zeros(m), np.zeros(m), np.full(m, inf), m, np.arange(m, dtype=i32),
                  sum_row[p].astype(i32), np.ones(m))
        t_cols = n_cols + np.arange(m)
        n_cols += m
        idx = np.stack([iu[p] * n + y, ju[p] * n + y, t_cols], axis=1).ravel().astype(i32)
        h.addRows(m, np.full(m, -inf), np.zeros(m), 3 * m, np.arange(0, 3 * m, 3, dtype=i32), idx,
                  np.tile([1.0, -1.0, -1.0], m))
        have[p, y] = True
        ent_p.append(p)
        ent_y.append(y)
        ent_row.append(n_rows + np.arange(m))
        n_rows += m
    else:
        raise SolverError(f"the Dobrushin design LP did not converge in {max_rounds} rounds of constraint generation "
                          f"(largest TV excess {excess:.3g})")
    duals = np.asarray(h.getSolution().row_dual, dtype=float)
    if duals.shape != (n_rows,) or not np.all(np.isfinite(duals)):
        raise SolverError("solver HiGHS returned missing or non-finite multipliers on the Dobrushin design LP")
    kept = np.nonzero(sum_row >= 0)[0]
    lam = np.zeros((kept.size, n))
    if ent_p:
        p_all, y_all, r_all = (np.concatenate(a) for a in (ent_p, ent_y, ent_row))
        slot = np.full(P, -1, dtype=np.int64)
        slot[kept] = np.arange(kept.size)
        # HiGHS's multiplier of a binding "<=" row is <= 0 when minimising; lambda = -dual, clipped at 0
        lam[slot[p_all], y_all] = np.maximum(-duals[r_all], 0.0)
    pairs = np.stack([iu[kept], ju[kept]], axis=1).astype(int)
    return CutsOutcome(K=K, pairs=pairs, lam=lam, rounds=rounds, entries=int(have.sum()))


#: pairs added per row and round by :func:`solve_pairs` (a new pair counts for both its rows; it is added while either
#: row has fewer than this many new pairs this round)
PAIRS_PER_ROW = 3


def pair_excess(K: np.ndarray, gamma: float) -> np.ndarray:
    """``TV(K_i, K_j) - gamma`` for every pair ``i < j`` (``numpy.triu_indices`` order), in blocks of pairs."""
    n = K.shape[0]
    iu, ju = np.triu_indices(n, 1)
    out = np.empty(iu.size)
    for start in range(0, iu.size, PAIR_BLOCK):
        sl = slice(start, start + PAIR_BLOCK)
        out[sl] = np.maximum(K[iu[sl]] - K[ju[sl]], 0.0).sum(axis=1) - gamma
    return out


def choose_pairs(C: np.ndarray, excess: np.ndarray, kept: np.ndarray, tol: float = CUT_ATOL,
                 per_row: int = PAIRS_PER_ROW) -> np.ndarray:
    """The pairs :func:`solve_pairs` adds: not kept, ``excess > tol``, the most violated first (excess rounded to 1e-9)
    and then by the score ``gap_j(d(i)) + gap_i(d(j))``; a pair is taken while one of its rows has fewer than
    ``per_row`` new pairs.

    Examples
    --------
    >>> C = np.array([[0.0, 1.0, 5.0], [2.0, 0.0, 1.0], [1.0, 2.0, 0.0]])   # pair (0, 2) scores 1 + 5, the others 3
    >>> choose_pairs(C, np.array([0.5, 0.5, 0.5]), np.zeros(3, dtype=bool), per_row=1).tolist()  # (0, 2), (0, 1)
    [1, 0]
    """
    n = C.shape[0]
    iu, ju = np.triu_indices(n, 1)
    bad = np.nonzero((excess > tol) & ~kept)[0]
    if bad.size == 0:
        return bad
    best = np.argmin(C, axis=1)
    gap = C - C[np.arange(n), best][:, None]
    i, j = iu[bad], ju[bad]
    score = gap[j, best[i]] + gap[i, best[j]]
    order = bad[np.lexsort((-score, -np.round(excess[bad], 9)))]
    count = np.zeros(n, dtype=np.int64)
    take = []
    for p in order.tolist():
        a, b = iu[p], ju[p]
        if count[a] < per_row or count[b] < per_row:
            count[a] += 1
            count[b] += 1
            take.append(p)
    return np.asarray(take, dtype=np.int64)


def solve_pairs(C: np.ndarray, gamma: float, max_nonzeros: int, *, target: float | None = None, rtol: float = 0.0,
                tol: float = CUT_ATOL, per_row: int = PAIRS_PER_ROW, max_rounds: int = MAX_ROUNDS,
                verbose: bool = False, on_round=None) -> CutsOutcome:
    """The Dobrushin design LP by constraint generation on whole pairs, stopping early when the certified bound meets
    ``target`` within ``rtol * target`` (module docstring). ``max_nonzeros`` caps the constraint nonzeros built
    (``4 n`` per pair); ``on_round(round, pairs, excess, bound)`` reports progress.

    Returns a :class:`CutsOutcome` with ``bound`` (the last round's certified lower bound on every feasible K's loss)
    and ``certified`` (True when it met the target: then ``K`` is the last relaxation's, not an optimum, and the caller
    returns its candidate).

    Examples
    --------
    >>> C = np.array([[0.0, 1.0], [1.0, 0.0]]) / 2       # two rows that prefer different outputs
    >>> out = solve_pairs(C, 0.5, 10**6)
    >>> out.pairs.tolist(), round(out.bound, 9), out.certified  # the optimum (1 - gamma) / 2 = 0.25
    ([[0, 1]], 0.25, False)
    >>> solve_pairs(C, 0.5, 10**6, target=0.25, rtol=1e-9).certified
    True
    """
    import highspy

    n = C.shape[0]
    P = n * (n - 1) // 2
    nK = n * n
    # per pair: the two index arrays of triu_indices here, in pair_excess and in choose_pairs (48 bytes), its excess,
    # the kept flag and choose_pairs' masks and sort keys (about 32): 80 bytes; a block of row differences; K's tables
    check_memory(float(P) * 80.0 + 2.0 * PAIR_BLOCK * n * 8.0 + 64.0 * nK,
                 f"Dobrushin design: the {P:,} pairs' excess and bookkeeping", hint="use fewer states")
    inf = highspy.kHighsInf
    h = _stochastic_model(C, verbose)
    i32 = np.int32
    n_rows, n_cols, nonzeros = n, nK, nK
    iu, ju = np.triu_indices(n, 1)
    kept = np.zeros(P, dtype=bool)
    order: list[np.ndarray] = []  # kept pairs in the order added
    first_row: list[np.ndarray] = []  # HiGHS row of each kept pair's first entry row (its n rows are consecutive)
    bound, certified = 0.0, False
    for rounds in range(1, max_rounds + 1):
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"solver HiGHS returned status {h.modelStatusToString(status)!r} on round {rounds} of "
                              "the Dobrushin design LP; only 'Optimal' is trusted")
        sol = h.getSolution()
        x = np.asarray(sol.col_value, dtype=float)
        row_dual = np.asarray(sol.row_dual, dtype=float)
        if x.shape != (n_cols,) or row_dual.shape != (n_rows,) or not (np.all(np.isfinite(x))
                                                                       and np.all(np.isfinite(row_dual))):
            raise SolverError("solver HiGHS returned a missing or non-finite solution on the Dobrushin design LP")
        K = x[:nK].reshape(n, n)
        kept_idx = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
        rows0 = np.concatenate(first_row) if first_row else np.zeros(0, dtype=np.int64)
        # HiGHS's multiplier of a binding "<=" row is <= 0 when minimising; lambda = -dual, clipped at 0
        lam = np.maximum(-row_dual[rows0[:, None] + np.arange(n)[None, :]], 0.0) if rows0.size else np.zeros((0, n))
        pairs = np.stack([iu[kept_idx], ju[kept_idx]], axis=1).astype(int)
        bound = dobrushin_bound(C, pairs, lam, gamma)
        excess = pair_excess(K, gamma)
        worst = float(excess.max()) if excess.size else -gamma
        if on_round is not None:
            on_round(rounds, int(kept_idx.size), worst, bound)
        if target is not None and target - bound <= rtol * target:
            certified = True
            break
        new = choose_pairs(C, excess, kept, tol, per_row)
        if new.size == 0:
            break
        m = new.size
        nonzeros += 4 * n * m
        if nonzeros > max_nonzeros:
            raise SolverError(f"the Dobrushin design LP needs more than max_lp_nonzeros={max_nonzeros:,} constraint "
                              f"nonzeros after {rounds} rounds of constraint generation on pairs ({nonzeros:,}); "
                              "pass a larger max_lp_nonzeros= or use fewer states")
        check_memory(BYTES_PER_ENTRY * float(n) * (kept_idx.size + m),
                     f"Dobrushin design: the LP with {kept_idx.size + m:,} pairs of {n} auxiliary entries",
                     hint="use fewer states")
        mn = m * n
        # each new pair: its sum row sum_y t_p[y] <= gamma, its n variables t_p[y], its n rows K_i - K_j - t_p <= 0
        h.addRows(m, np.full(m, -inf), np.full(m, float(gamma)), 0, np.zeros(m, dtype=i32), np.zeros(0, dtype=i32),
                  np.zeros(0))
        sum_rows = n_rows + np.arange(m)
        n_rows += m
        h.addCols(mn, np.zeros(mn), np.zeros(mn), np.full(mn, inf), mn, np.arange(mn, dtype=i32),
                  np.repeat(sum_rows, n).astype(i32), np.ones(mn))
        t_cols = n_cols + np.arange(mn)
        n_cols += mn
        ys = np.tile(np.arange(n), m)
        idx = np.stack([np.repeat(iu[new], n) * n + ys, np.repeat(ju[new], n) * n + ys, t_cols], axis=1)
        h.addRows(mn, np.full(mn, -inf), np.zeros(mn), 3 * mn, np.arange(0, 3 * mn, 3, dtype=i32),
                  idx.ravel().astype(i32), np.tile([1.0, -1.0, -1.0], mn))
        first_row.append(n_rows + n * np.arange(m))
        n_rows += mn
        kept[new] = True
        order.append(new)
    else:
        raise SolverError(f"the Dobrushin design LP did not converge in {max_rounds} rounds of constraint generation "
                          f"on pairs (largest TV excess {worst:.3g})")
    return CutsOutcome(K=K, pairs=pairs, lam=lam, rounds=rounds, entries=int(pairs.shape[0]) * n,
                       solver="HiGHS (pair generation)", bound=bound, certified=certified)
