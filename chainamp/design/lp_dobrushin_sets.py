r"""A quick certificate for the Doeblin closed form of the Dobrushin design: one subset cut per ordered pair.

The Dobrushin constraint of a pair, ``TV(K_x, K_x') <= gamma``, is the family of *subset cuts*
``K(x, S) - K(x', S) <= gamma`` over every set of outputs S (equality for ``S = {y : K(x, y) > K(x', y)}``). One cut
per pair is a relaxation of the design LP (:mod:`chainamp.design.lp_dobrushin`) with a single row of ``2 |S|``
nonzeros and no auxiliary variable, and its multipliers ``mu_{p,S} >= 0`` are multipliers of the full LP:
``lambda_p[y] = sum_S mu_{p,S} [y in S]`` in :func:`chainamp.design.duals.dobrushin_bound`, whose bound holds for any
non-negative multipliers (its ``max_y lambda_p[y] <= sum_S mu_{p,S}``). So nothing about the cuts' choice can make
the bound unsound; the choice only decides whether it reaches the candidate's loss.

The choice. With ``gap_x(y) = C[x, y] - min C[x]`` and ``d(x)`` row x's best output, the first cut of the ordered pair
``(x, x')`` takes ``S = {y : gap_x'(y) > gap_x(y)}`` plus ``d(x)``, minus ``d(x')``: a multiplier on it raises row x's
prices where x' dislikes the output more than x does and lowers row x''s prices there, which is where the Lagrangian
``sum_x min_y (C + B)[x, y]`` gains and loses least. (The derivation of this reading: ``B[x] = sum_{p = (x, .)}
lambda_p - sum_{p = (., x)} lambda_p``; at the Doeblin closed form ``K_D = gamma D + (1 - gamma) 1 e_{y*}^T`` every
pair with different best outputs is tight with ``S`` containing ``d(x)`` and not ``d(x')``, so by complementary
slackness an optimal multiplier lives on such sets.) The relaxation is solved with HiGHS (only ``Optimal`` trusted);
if its multipliers' bound, recomputed and rounded down by ``dobrushin_bound``, does not yet meet the target, the
violated pairs of its K get the exact separating cut ``S = {y : K(x, y) > K(x', y)}`` and the LP is re-solved from
its basis, for at most ``max_rounds`` rounds. Then the caller falls back to :func:`~.lp_dobrushin.solve_pairs`.

Measured (random losses and Dirichlet priors, gamma = 0.4, idle): n = 12-40 certified to 1e-12 in 0.01-0.5 s in one
or two rounds (the pair route: 1.4-16 s at n = 40); n = 60 in 2.7 s on one instance, and on another 13 rounds and
109 s (about 3,500 pairs stayed violated round after round), which is why the rounds and the cuts' nonzeros are
capped (a failed attempt costs a few seconds at n = 60); at n = 100 the first round alone took 60 s. The first cut set has
about ``n^3`` nonzeros (8e6 at n = 200, over the default cap ``SETS_MAX_NONZEROS``): this is not a path to n = 200.

highspy is imported lazily, in this module's function (its first object made quiet by :mod:`chainamp._numerics`).
"""

from __future__ import annotations

import numpy as np

from .._numerics import check_memory, quiet_highs
from ..errors import ResourceLimitError
from .duals import dobrushin_bound
from .lp_dobrushin import CUT_ATOL, CutsOutcome

__all__ = ["certify_by_sets", "first_sets", "SETS_MAX_NONZEROS", "SETS_MAX_ROUNDS"]

#: the cuts' nonzeros (all rounds) above which :func:`certify_by_sets` stops (the first set alone: about n^3, so n up
#: to about 75; a second round up to about n = 45): past them a round costs more than the pair route saves
SETS_MAX_NONZEROS = 500_000
#: separation rounds before :func:`certify_by_sets` gives up and the caller takes the pair route
SETS_MAX_ROUNDS = 3
#: HiGHS's memory per constraint nonzero, its row- and column-wise copies and factor included (a generous estimate)
BYTES_PER_NONZERO = 64.0


def first_sets(C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ordered pairs ``(x, x')`` with different best outputs and their first cut sets (module docstring).

    Examples
    --------
    >>> C = np.array([[0.0, 1.0, 5.0], [2.0, 0.0, 1.0], [1.0, 2.0, 0.0]])
    >>> X, Xp, S = first_sets(C)
    >>> X.tolist(), Xp.tolist(), S[0].astype(int).tolist()   # pair (0, 1): S = {0} (its best), minus 1 (row 1's)
    ([0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 0, 1], [1, 0, 0])
    """
    n = C.shape[0]
    best = np.argmin(C, axis=1)
    gap = C - C[np.arange(n), best][:, None]
    X, Xp = np.nonzero(best[:, None] != best[None, :])
    S = gap[Xp] > gap[X]
    S[np.arange(X.size), best[Xp]] = False
    S[np.arange(X.size), best[X]] = True
    return X, Xp, S


def certify_by_sets(C: np.ndarray, gamma: float, target: float, rtol: float, *,
                    max_nonzeros: int = SETS_MAX_NONZEROS, max_rounds: int = SETS_MAX_ROUNDS,
                    tol: float = CUT_ATOL, verbose: bool = False, on_round=None) -> CutsOutcome | None:
    """Try to certify ``target`` (a feasible K's loss) as the Dobrushin design's optimum with one subset cut per pair.

    Returns a :class:`~.lp_dobrushin.CutsOutcome` with ``certified=True`` and the bound (``target - bound <= rtol *
    target``), or None when the first cut set would exceed ``max_nonzeros``, the solver does not report ``Optimal``,
    or ``max_rounds`` rounds do not reach the target (the caller then solves the LP another way). ``on_round(round,
    cuts, excess, bound)`` reports progress.

    Examples
    --------
    >>> C = np.array([[0.0, 1.0], [1.0, 0.0]]) / 2       # optimum (1 - gamma) / 2 at gamma = 0.5
    >>> out = certify_by_sets(C, 0.5, 0.25, 1e-9)
    >>> out.certified, round(out.bound, 9)
    (True, 0.25)
    """
    n = C.shape[0]
    if n < 2:
        return None
    best = np.argmin(C, axis=1)
    # a quick attempt: skipped (the caller's route then checks its own size) when n^3 cut booleans and HiGHS's copies
    # of up to max_nonzeros entries (about BYTES_PER_NONZERO each) do not fit the memory limit
    try:
        check_memory(float(n) ** 3 * 2.0 + BYTES_PER_NONZERO * min(float(max_nonzeros), float(n) ** 3 + n * n),
                     "Dobrushin design: the subset cuts")
    except ResourceLimitError:
        return None
    X, Xp, S = first_sets(C)
    if X.size == 0:
        return None
    if 2 * int(S.sum()) + n * n > max_nonzeros:
        return None
    import highspy

    inf = highspy.kHighsInf
    h = quiet_highs(verbose)
    nK = n * n
    i32 = np.int32
    h.addCols(nK, np.ascontiguousarray(C.ravel(), dtype=float), np.zeros(nK), np.full(nK, inf), 0,
              np.zeros(nK, dtype=i32), np.zeros(0, dtype=i32), np.zeros(0))
    h.addRows(n, np.ones(n), np.ones(n), nK, np.arange(0, nK, n, dtype=i32), np.arange(nK, dtype=i32), np.ones(nK))
    cut_x: list[np.ndarray] = []
    cut_xp: list[np.ndarray] = []
    cut_s: list[np.ndarray] = []

    def add(x: np.ndarray, xp: np.ndarray, sets: np.ndarray) -> None:
        r, y = np.nonzero(sets)
        counts = np.bincount(r, minlength=x.size)
        starts = np.concatenate([[0], np.cumsum(2 * counts)[:-1]]).astype(i32)
        idx = np.empty(2 * r.size, dtype=np.int64)
        val = np.empty(2 * r.size)
        first = starts[r] + (np.arange(r.size) - np.concatenate([[0], np.cumsum(counts)[:-1]])[r])
        idx[first], val[first] = x[r] * n + y, 1.0
        second = first + counts[r]
        idx[second], val[second] = xp[r] * n + y, -1.0
        h.addRows(x.size, np.full(x.size, -inf), np.full(x.size, float(gamma)), idx.size, starts, idx.astype(i32), val)
        cut_x.append(x)
        cut_xp.append(xp)
        cut_s.append(sets)

    add(X, Xp, S)
    for rounds in range(1, max_rounds + 1):
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        sol = h.getSolution()
        K = np.asarray(sol.col_value, dtype=float)[:nK].reshape(n, n)
        dual = np.asarray(sol.row_dual, dtype=float)[n:]
        if not (np.all(np.isfinite(K)) and np.all(np.isfinite(dual))):
            return None
        mu = np.maximum(-dual, 0.0)  # a binding "<= gamma" row's multiplier is <= 0 when minimising
        xs, xps, sets = np.concatenate(cut_x), np.concatenate(cut_xp), np.concatenate(cut_s)
        key, inv = np.unique(xs * n + xps, return_inverse=True)
        lam = np.zeros((key.size, n))
        np.add.at(lam, inv, mu[:, None] * sets)
        pairs = np.stack([key // n, key % n], axis=1)
        live = lam.max(axis=1) > 0.0
        bound = dobrushin_bound(C, pairs[live], lam[live], gamma) if live.any() else float(np.sum(C.min(axis=1)))
        diff_max = 0.0
        bad_x, bad_xp = [], []
        for x in range(n):  # violated pairs of the relaxation's K, one row against all at a time
            tv = np.maximum(K[x][None, :] - K, 0.0).sum(axis=1)
            over = np.nonzero(tv > gamma + tol)[0]
            if over.size:
                diff_max = max(diff_max, float(tv[over].max()) - gamma)
                bad_x.append(np.full(over.size, x))
                bad_xp.append(over)
        if on_round is not None:
            on_round(rounds, int(xs.size), diff_max, bound)
        if target - bound <= rtol * target:
            return CutsOutcome(K=K, pairs=pairs[live], lam=lam[live], rounds=rounds, entries=int(xs.size),
                               solver="HiGHS (subset cuts)", bound=bound, certified=True)
        if not bad_x or rounds == max_rounds:
            return None
        bx, bxp = np.concatenate(bad_x), np.concatenate(bad_xp)
        if 2 * (int(sets.sum()) + bx.size * n) + nK > max_nonzeros:
            return None
        add(bx, bxp, K[bx] > K[bxp])
    return None
