r"""The least-loss n-state operator with a given mixing coefficient: the design for black-box inputs.

Theorem 1 of Balle, Barthe, Gaboardi and Geumlek (2019) amplifies *any* (epsilon, delta)-DP input
through K's Dobrushin coefficient (clause 1: ``delta' = gamma delta``) or Doeblin coefficient (clause
3). For a black-box input the privacy a K buys is therefore set by its coefficient, and the cheapest K
with coefficient at most gamma is a linear program:

* Dobrushin (Definition 1(1); Dobrushin 1956): ``max_{x, x'} TV(K_x, K_x') <= gamma``, with auxiliary
  ``t[p, y] >= K(x, y) - K(x', y)``, ``t >= 0``, ``sum_y t[p, y] <= gamma`` for each pair p = (x, x');
* Doeblin (Definition 1(3)): ``1 - sum_y min_x K(x, y) <= gamma``, with auxiliary
  ``0 <= m_y <= K(x, y)`` for every x and ``sum_y m_y >= 1 - gamma``.

Closed form (0-1 loss, uniform prior, either coefficient): the optimum is
``(n - 1)(1 - gamma) / n``, attained by ``gamma I + (1 - gamma) J / n``. Dobrushin: ``K(x, x) - K(x', x)
<= TV(K_x, K_x') <= gamma``; averaging over ``x' != x`` and summing over x, the trace S satisfies
``S <= n gamma + (n - S)/(n - 1)``, i.e. ``S <= 1 + (n - 1) gamma``, and the loss is ``1 - S/n``.
Doeblin: with ``m_y = min_x K(x, y)`` and ``mu = sum_y m_y >= 1 - gamma``, ``K(x, x) <= 1 - (mu - m_x)``,
so ``S <= n - (n - 1) mu <= 1 + (n - 1) gamma``. The operator ``gamma I + (1 - gamma) J / n`` has both
coefficients equal to gamma and trace ``1 + (n - 1) gamma``.

Doeblin in closed form for *any* loss and prior (no LP). With ``C = diag(prior) loss``, ``c = 1^T C`` (the loss of
each constant output) and ``a = sum_x min_y C[x, y]`` (the loss of the Bayes rule ``D``, ``D(x) = e_{argmin_y C[x,
y]}``), the optimum is ``(1 - gamma) min_y c_y + gamma a``, attained by ``K* = gamma D + (1 - gamma) 1 e_{y*}^T``
(``y*`` a minimiser of c). Proof: write ``K(x) = m + r_x`` with ``m_y = min_x K(x, y)`` and ``r_x >= 0`` of mass
``1 - mu``, ``mu = sum_y m_y >= 1 - gamma``; the loss ``<m, c> + sum_x <r_x, C[x]>`` is at least ``mu min_y c_y +
(1 - mu) a``, which grows with mu since ``a <= min_y c_y``, so it is at least its value at ``mu = 1 - gamma``; K*
has ``m >= (1 - gamma) e_{y*}`` and that loss. (This is the mixture family ``gamma K_1 + (1 - gamma) 1 e_y^T``,
shown here to be optimal for Doeblin; for Dobrushin it is only an upper bound.)

Dobrushin, any loss and prior: the Doeblin optimum certified (``formulation="certify"``, what ``"auto"`` runs). A
Doeblin coefficient bounds the Dobrushin coefficient from above (``TV(K_x, K_x') <= 1 - sum_y min(K(x, y), K(x', y))
<= 1 - sum_y min_z K(z, y)``), so ``K_D = gamma D + (1 - gamma) 1 e_{y*}^T`` is feasible here and its loss ``L_D``
bounds the Dobrushin optimum from above. It is often the optimum (measured on uniform random losses with Dirichlet
priors, gamma = 0.4: 7 of 8 at n = 6, 5 of 6 at n = 12, 4 of 4 at n = 20, every one tried at n = 40-60) but not
always (those exceptions; the Fano-plane loss, where rows uniform on the lines have pairwise TV 2/3 and loss 0). The
certificate is the Lagrangian bound of :func:`chainamp.design.duals.dobrushin_bound`, valid for *any* multipliers
``lambda >= 0`` and so for multipliers on a few pairs only (the others 0). First, complementary slackness with ``K_D``
fixes where each pair's multipliers peak, which leaves a feasibility LP in flow form on a sparse graph of pairs (each
row and its best-scored partners; :mod:`chainamp.design.lp_flow`), solved by HiGHS's first-order PDLP under an
iteration limit; if that does not certify, the pairs of the LP are generated a few per row and round
(:func:`chainamp.design.lp_dobrushin.solve_pairs`). Either way, as soon as the bound, recomputed in numpy and
rounded down, is within ``design_gap_rtol * L_D`` of ``L_D``, ``K_D`` is returned with that bound (optimal up to the
reported gap); the solvers' answers are only candidates for the multipliers. When it is not (the Fano loss), the generation goes on until the relaxation's K
violates no pair; that K is then the LP's optimum and is returned if it beats ``K_D`` (it is repaired and certified
like every LP solution).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._numerics import (DESIGN_GAP_RTOL, DESIGN_MAX_LP_NONZEROS, DESIGN_MAX_REPAIR, LP_FEAS_ATOL, check_choice,
                         check_int, check_positive, check_probability, check_progress,
                         fmt_number, progress_bar, progress_scope)
from ..errors import InvalidParameterError, SolverError
from ..mixing import dobrushin, doeblin
from ..operators import MarkovOperator
from . import duals, lp_dobrushin, lp_flow, symmetric
from .common import (check_flags, check_labels, check_lp_size, check_tables, check_tolerances, check_loss, check_prior,
                     operator, repair, stochastic)
from .result import DesignResult

__all__ = ["optimal_mixing_operator"]

COEFFICIENTS = ("dobrushin", "doeblin")
#: the formulations ``formulation=`` chooses from (see :func:`optimal_mixing_operator`)
FORMULATIONS = ("auto", "lp", "closed_form", "cuts", "certify")


def optimal_mixing_operator(n: int, gamma: float, *, coefficient: str = "dobrushin", loss: Any = None,
                            prior: Any = None, labels: Any = None, solver: str | None = None,
                            lp_feas_atol: float = LP_FEAS_ATOL, design_max_repair: float = DESIGN_MAX_REPAIR,
                            verbose: bool = False,
                            max_lp_nonzeros: int = DESIGN_MAX_LP_NONZEROS, progress: bool | None = None,
                            symmetry: bool = True, formulation: str = "auto",
                            design_gap_rtol: float = DESIGN_GAP_RTOL) -> DesignResult:
    r"""The least-loss n x n Markov operator whose Dobrushin (or Doeblin) coefficient is at most gamma.

    Minimises ``sum_x prior(x) sum_y K(x, y) loss(x, y)`` subject to the coefficient constraint (the
    linear programs of the module docstring; Definition 1 of Balle et al. 2019), solved with cvxpy;
    only an ``OPTIMAL`` status is trusted. The solver's K is clipped and renormalised and its
    coefficient recomputed by chainamp (:func:`chainamp.dobrushin` / :func:`chainamp.doeblin`); if
    rounding puts it above gamma, K is mixed toward the best constant operator, ``(1 - lam) K + lam 1 e_y*^T``
    (``y*`` the output of least expected loss), which scales both coefficients by ``1 - lam`` like uniform rows
    but costs the least (on the closed form it is the closed form at ``gamma (1 - lam)``), with the smallest lam
    (short search) chainamp certifies; when gamma is within chainamp's rounding of 0 and no lam <= design_max_repair
    certifies, the best constant operator itself (coefficient exactly 0).

    ``dual_bound`` is a certified lower bound on every feasible K's loss from the solver's multipliers
    ``lambda >= 0`` of the coupling inequalities (row sums and the auxiliary sets kept hard):
    Dobrushin ``sum_x min_y (C + B)[x, y] - gamma sum_p max_y lambda[p, y]`` with ``B[x] = sum_{p = (x, .)}
    lambda[p] - sum_{p = (., x)} lambda[p]``; Doeblin ``sum_x min_y (C - lambda)[x, y] + (1 - gamma) min_y
    sum_x lambda[x, y]``, with ``C = diag(prior) loss`` (derivations in :mod:`chainamp.design.duals`).

    Parameters
    ----------
    n : int
        Number of states, ``>= 2``.
    gamma : float
        Target coefficient in [0, 1].
    coefficient : {"dobrushin", "doeblin"}
    loss : array_like, optional
        n x n, non-negative, finite; default the 0-1 loss ``[x != y]``.
    prior : array_like, optional
        A distribution over the n inputs; default uniform.
    labels : sequence of labels, optional
        The states (default ``range(n)``).
    solver, lp_feas_atol, design_max_repair, verbose, max_lp_nonzeros :
        As for :func:`~chainamp.design.optimal_post_processing`.
    progress : bool or None
        A tqdm bar over the two stages (the LP, the certificate of K): ``None`` (default) past two seconds,
        ``True`` at once, ``False`` never.
    symmetry : bool
        Use the closed form when the loss and prior are invariant under relabelling (default True: a uniform
        prior and a loss with one value on the diagonal and one off it, e.g. the default 0-1 loss; the optimum is
        then ``a I + b (J - I)``, :mod:`chainamp.design.symmetric`, K a :class:`~chainamp.operators.SymmetricChannel`);
        False always solves the LP.
    formulation : {"auto", "lp", "closed_form", "cuts", "certify"}
        ``"closed_form"`` (Doeblin only; what ``"auto"`` does for Doeblin) the optimum ``gamma D + (1 - gamma) 1
        e_{y*}^T`` of the module docstring, for any loss and prior, in O(n^2) with no LP (n = 200 in milliseconds;
        the LP has 4 n^2 (n - 1) / 2 nonzeros); ``"certify"`` (Dobrushin only; what ``"auto"`` does for Dobrushin
        when highspy can be imported) that closed form certified by multipliers, first from a sparse flow LP
        (:mod:`chainamp.design.lp_flow`, PDLP), then on generated pairs, or the LP's optimum when the certificate falls
        short (module docstring; HiGHS through highspy, no cvxpy). Measured on random losses, gamma = 0.4: n = 40 in
        0.2-0.5 s on most instances and n = 60 in 1-3 s by the flow LP (pair generation alone took 2-16 s and 15-101
        s); n = 100 certified by the flow LP on some instances only (17-56 s) and n = 200 not within its work limit
        (about 45 s spent), after which pair generation gives no answer within minutes: "auto" refuses at once past
        the full LP's ``max_lp_nonzeros`` (n of about 170 by default), as the fallback would; ``"certify"`` tries
        anyway; ``"lp"`` the linear program through cvxpy; ``"cuts"``
        (Dobrushin only) the same LP by constraint generation on its auxiliary entries with HiGHS, warm started
        (:mod:`chainamp.design.lp_dobrushin`; needs highspy, no cvxpy): the same optimum and the same certificates,
        ``max_lp_nonzeros`` capping the rows actually built, not the full LP's (so for ``"certify"``).
    design_gap_rtol : float
        ``"certify"`` returns the closed form once the certified bound is within this fraction of its loss (default
        ``DESIGN_GAP_RTOL`` = 1e-7); it only decides when to stop: ``dual_bound`` and ``gap`` are reported either way.

    Returns
    -------
    DesignResult
        With ``report = None``, ``coefficient``, ``gamma`` and ``certified_gamma`` (chainamp's value for K).

    Examples
    --------
    >>> r = optimal_mixing_operator(2, 0.5)   # optimum (1 - gamma) / 2 at any K with trace 1 + gamma
    >>> round(float(r.K.matrix.trace()), 9), round(r.objective, 9)
    (1.5, 0.25)
    >>> r.certified_gamma <= 0.5 and r.dual_bound <= r.objective <= r.dual_bound + 1e-7
    True
    >>> rng = np.random.default_rng(0)                # a loss and prior not invariant under relabelling
    >>> r = optimal_mixing_operator(6, 0.4, loss=rng.random((6, 6)), prior=rng.dirichlet(np.ones(6)), progress=False)
    >>> r.solver, r.gap <= 1e-7 * r.objective         # the Doeblin closed form, certified optimal
    ('HiGHS PDLP (flow certificate)', True)
    """
    size = check_int(n, "n", minimum=2)
    g = check_probability(gamma, "gamma")
    coef = check_choice(coefficient, "coefficient", COEFFICIENTS)
    feas_atol, max_repair = check_tolerances(lp_feas_atol, design_max_repair)
    labs = range(size) if labels is None else check_labels(labels, "labels")  # a range: O(1) until the LP
    if len(labs) != size:
        raise InvalidParameterError(f"labels must have n = {size} entries (got {len(labs)})")
    pi = check_prior(prior, size)
    if loss is not None:
        loss = check_loss(loss, labs, labs)
    progress = check_progress(progress)
    check_int(max_lp_nonzeros, "max_lp_nonzeros", minimum=1)
    check_flags(verbose, symmetry)
    form = check_choice(formulation, "formulation", FORMULATIONS)
    gap_rtol = check_positive(design_gap_rtol, "design_gap_rtol", strict=False)
    if form == "closed_form" and coef != "doeblin":
        raise InvalidParameterError("formulation='closed_form' exists for coefficient='doeblin' only (got "
                                    f"coefficient={coef!r}): the Dobrushin design is a linear program")
    if form in ("cuts", "certify") and coef != "dobrushin":
        raise InvalidParameterError(f"formulation={form!r} exists for coefficient='dobrushin' only (got "
                                    f"coefficient={coef!r}): the Doeblin design has a closed form")
    closed = coef == "doeblin" and form != "lp"
    cuts = form == "cuts"
    certify = form == "certify" or (form == "auto" and coef == "dobrushin" and lp_dobrushin.available())
    problem = symmetric.mixing_problem(size, labs, loss, pi) if symmetry and g > 0.0 else None
    if problem is None:
        check_tables(size, size, "optimal_mixing_operator")  # before any n-sized label tuple or n x n table
    if solver is not None or (problem is None and not closed and not cuts and not certify):
        from ..mixing import check_lp_solver, check_lp_verbose  # imports cvxpy: only when an LP may be solved

        solver_name, loud = check_lp_solver(solver), check_lp_verbose(verbose)
    if problem is not None:  # invariant under relabelling: closed form (design/symmetric.py)
        with progress_bar(2, "optimal_mixing_operator", unit="stage", progress=progress) as bar, \
                progress_scope(progress):
            bar.set_postfix_str("symmetric closed form", refresh=False)
            try:
                sol = symmetric.solve_mixing(problem, g, coef, max_repair)
            except SolverError:  # gamma below chainamp's rounding of the coefficient: the constant operator
                sol = _symmetric_constant(problem, size, labs, loss, pi, g, coef)
            bar.update(2)
        if not sol["dual_bound"] <= sol["objective"]:
            raise SolverError(f"the dual bound {sol['dual_bound']!r} exceeds the loss {sol['objective']!r} of a "
                              "certified K: inconsistent")
        return DesignResult(K=sol["K"], objective=sol["objective"], dual_bound=sol["dual_bound"], report=None,
                            notes=sol["notes"], kind="mixing", coefficient=coef, gamma=g,
                            certified_gamma=sol["certified"], repair=sol["repair"])
    labs = tuple(labs)
    ell = check_loss(loss, labs, labs)
    loud_cuts = bool(verbose)

    # two stages, shown past two seconds: the LP (built and solved), then chainamp's certificate of K
    with progress_bar(2, "optimal_mixing_operator", unit="stage", progress=progress) as bar, \
            progress_scope(progress):
        bar.set_postfix_str("building and solving the LP", refresh=False)
        C = pi[:, None] * ell
        notes = []
        out = None
        fallback = None
        if closed and g > 0.0:  # Doeblin, any loss and prior: gamma D + (1 - gamma) 1 e_{y*}^T (module docstring)
            K0 = np.zeros((size, size))
            K0[np.arange(size), np.argmin(C, axis=1)] = g
            K0[:, int(np.argmin(C.sum(axis=0)))] += 1.0 - g
            dual = duals.doeblin_closed_bound(C, g)
            notes.append("Doeblin coefficient: for any loss and prior the optimum is gamma D + (1 - gamma) 1 e_y*^T (D "
                         "the Bayes rule, y* the best constant output), loss (1 - gamma) min_y c_y + gamma a; closed "
                         "form, no LP")
        elif g == 0.0:  # both coefficients vanish only for equal rows v; the loss <v, prior @ loss> is linear in v
            c = pi @ ell
            K0 = np.zeros((size, size))
            K0[:, int(np.argmin(c))] = 1.0
            dual = duals.constant_bound(c)
            notes.append("gamma = 0: only operators with equal rows qualify, so the best constant operator is optimal "
                         "(closed form, no LP)")
        elif certify:  # Dobrushin: K_D certified by multipliers on generated pairs, else the LP (module docstring)
            def full_lp_check() -> None:  # the full LP's size still bounds what "auto" takes on
                check_lp_size(4 * (size * (size - 1) // 2) * size, max_lp_nonzeros, "optimal_mixing_operator",
                              hint="pass formulation='certify' (it builds only the pairs it needs: a flow certificate, "
                                   "then pair generation; measured, no n = 200 certified within a minute), or use coefficient='doeblin' (a closed form at any size; a "
                                   "Doeblin coefficient <= gamma implies a Dobrushin coefficient <= gamma, so that K "
                                   "is feasible here too, though not always optimal)", memory=False)
            if form == "auto":  # refuse at once where the fallback would (the flow step alone certified no n = 200)
                full_lp_check()
            K0, dual, out = _certified(C, g, max_lp_nonzeros, gap_rtol, feas_atol, loud_cuts, bar, notes)
            fallback = _closed_form(C, g)  # kept when the LP's K loses more than it once repaired
        elif cuts:  # Dobrushin: the LP by constraint generation with HiGHS (design/lp_dobrushin.py)
            def on_round(rounds: int, entries: int, excess: float) -> None:
                # refresh=False: shown by the bar's own clock (nothing before its delay)
                bar.set_postfix_str(f"constraint generation: round {rounds}, {entries:,} entries, TV excess "
                                    f"{max(excess, 0.0):.2g}", refresh=False)

            out = lp_dobrushin.solve_cuts(C, g, max_lp_nonzeros, verbose=loud_cuts, on_round=on_round)
            K0 = stochastic(out.K, feas_atol)
            dual = duals.dobrushin_bound(C, out.pairs, out.lam, g)
            notes.append(f"the Dobrushin LP was solved by constraint generation ({out.rounds} rounds, "
                         f"{out.entries:,} of {size * size * (size - 1) // 2:,} auxiliary entries kept; HiGHS, "
                         "warm started)")
        else:
            check_lp_size(4 * (size * (size - 1) // 2) * size, max_lp_nonzeros, "optimal_mixing_operator",
                          hint="use coefficient='doeblin' (a closed form at any size; a Doeblin coefficient <= "
                               "gamma implies a Dobrushin coefficient <= gamma, so that K is feasible here too, "
                               "though not always optimal)")
            pairs = np.stack(np.triu_indices(size, 1), axis=1).astype(int)  # (0, 1), (0, 2), ..., row by row
            from .lp import mixing_lp

            s = _power_of_two_scale(C)  # solvers ignore costs far below their tolerances, take 1e20+ for infinite
            out = mixing_lp(C * s, g, coef, pairs, solver_name, loud)
            K0 = stochastic(out.K, feas_atol)
            if coef == "dobrushin":
                dual = duals.dobrushin_bound(C, pairs, out.lam / s, g)
            else:
                dual = duals.doeblin_bound(C, out.lam / s, g)
        bar.update(1)
        bar.set_postfix_str(f"certifying K (chainamp.{coef})", refresh=False)
        measure = dobrushin if coef == "dobrushin" else doeblin

        def certify(K: np.ndarray):
            value = measure(operator(K, labs, labs)).gamma
            return value if value <= g else None

        if g == 0.0:
            K, lam, certified = K0, 0.0, measure(operator(K0, labs, labs)).gamma
            if certified > 0.0:  # chainamp.doeblin rounds its column-minimum sum down even for identical rows
                notes.append(f"K's rows are identical, so its {coef} coefficient is exactly 0 (chainamp.{coef} "
                             f"reports {certified:.3g}: its sum is rounded toward the safe side)")
                certified = 0.0
        else:
            best = _constant(pi @ ell)

            def toward_best(M: np.ndarray, w: float) -> np.ndarray:
                # (1 - w) K + w 1 e_{y*}^T scales every coefficient by 1 - w, like uniform rows, but costs the least:
                # on the closed form it is the closed form at gamma (1 - w), its loss off by about w gamma
                return M if w == 0.0 else (1.0 - w) * M + w * best

            try:
                K, lam, certified = repair(K0, certify, max_repair,
                                           f"chainamp's {coef} coefficient of K exceeds gamma = {g:g}",
                                           mix=toward_best)
            except SolverError:  # gamma below chainamp's rounding of the coefficient: the constant operator
                K, lam, certified = _constant(pi @ ell), 0.0, 0.0
                notes.append(_CONSTANT_NOTE.format(coef=coef, g=g))
            if fallback is not None and lam > 0.0 and not np.array_equal(K0, fallback):
                # the LP's K beat K_D before its repair (mixing toward the best constant operator to absorb the
                # solver's tolerance, up to n times 1e-7 in total variation) but may not after it: K_D, certified the
                # same way, if better
                try:
                    K2, lam2, cert2 = repair(fallback, certify, max_repair, "", mix=toward_best)
                except SolverError:
                    K2 = None
                if K2 is not None and float(np.sum(C * K2)) < float(np.sum(C * K)):
                    K, lam, certified, K0 = K2, lam2, cert2, fallback
                    notes.append("the LP's K, once repaired, lost more than the Doeblin closed form: K is the closed "
                                 "form")
        bar.update(1)
        objective = float(np.sum(C * K))
        if lam > 0.0:
            notes.append(f"K was mixed toward the best constant operator with weight lam = {lam:.3g}, (1 - lam) K + "
                         f"lam 1 e_y*^T, so that chainamp's {coef} coefficient is <= gamma (expected loss "
                         f"+{fmt_number(objective - float(np.sum(C * K0)))})")
        if not dual <= objective:
            raise SolverError(f"the dual bound {dual!r} exceeds the loss {objective!r} of a certified K: inconsistent")
        same = lam == 0.0 and np.array_equal(K, np.eye(size))
        Kop = MarkovOperator.identity(labs) if same else operator(K, labs, labs)
        return DesignResult(K=Kop, objective=objective, dual_bound=dual, report=None, notes=tuple(notes), kind="mixing",
                            coefficient=coef, gamma=g, certified_gamma=float(certified), repair=lam,
                            solver=None if out is None else out.solver, status=None if out is None else out.status)


_CONSTANT_NOTE = ("gamma = {g:g} is below the rounding error of chainamp's {coef} coefficient (about 1e-16), so no "
                  "operator with unequal rows can be certified: K is the best constant operator (equal rows, "
                  "coefficient exactly 0), whose loss exceeds the optimum by at most gamma times the loss's range")


def _constant(c: np.ndarray) -> np.ndarray:
    """The best constant operator ``1 e_{y*}^T``, ``y* = argmin_y c_y`` (``c = prior @ loss``): coefficient exactly
    0."""
    K = np.zeros((c.size, c.size))
    K[:, int(np.argmin(c))] = 1.0
    return K


def _symmetric_constant(problem, size: int, labs, loss, pi: np.ndarray, g: float, coef: str) -> dict:
    """The symmetric route's answer when no K of the form ``a I + b (J - I)`` certifies (gamma within chainamp's
    rounding of 0; its channel with a = 1/k has rows equal only up to rounding): the best constant operator, with the
    symmetric closed form's exact optimum (rounded down) as its bound (every feasible K loses at least that much)."""
    check_tables(size, size, "optimal_mixing_operator")
    ell = check_loss(loss, tuple(labs), tuple(labs))
    K = _constant(pi @ ell)
    bound = symmetric.loss_of(problem, symmetric.best_keep_for_coefficient(problem, Fraction(g), coef))
    return dict(K=operator(K, tuple(labs), tuple(labs)), objective=float(np.sum(pi[:, None] * ell * K)),
                dual_bound=symmetric.float_down(bound), certified=0.0, repair=0.0,
                notes=(_CONSTANT_NOTE.format(coef=coef, g=g),))


def _power_of_two_scale(C: np.ndarray) -> float:
    """A power of two s with ``max C * s`` in [0.5, 1) (exact scaling; 1 for an all-zero C): the LP is solved on ``C s``
    and its multipliers divided by s (the bounds are recomputed on C and hold for any multipliers)."""
    top = float(C.max())
    return math.ldexp(1.0, -math.frexp(top)[1]) if 0.0 < top < math.inf else 1.0


def _closed_form(C: np.ndarray, g: float) -> np.ndarray:
    """The Doeblin closed form ``K_D = gamma D + (1 - gamma) 1 e_{y*}^T`` (D the Bayes rule of ``C``)."""
    n = C.shape[0]
    K_D = np.zeros((n, n))
    K_D[np.arange(n), np.argmin(C, axis=1)] = g
    K_D[:, int(np.argmin(C.sum(axis=0)))] += 1.0 - g
    return K_D


def _certified(C: np.ndarray, g: float, max_nonzeros: int, gap_rtol: float, feas_atol: float, verbose: bool, bar,
               notes: list) -> tuple:
    """``formulation="certify"``: the Doeblin closed form ``K_D`` with a certified bound from generated pairs, or the
    LP's optimum when the bound falls short of ``K_D``'s loss (module docstring). First the sparse flow certificate
    (:mod:`chainamp.design.lp_flow`), then pair generation. Returns (K, bound, outcome)."""
    n = C.shape[0]
    K_D = _closed_form(C, g)
    target = float(np.sum(C * K_D))

    def on_round(rounds: int, pairs: int, excess: float, bound: float) -> None:
        bar.set_postfix_str(f"certificate: round {rounds}, {pairs:,} pairs, bound {bound:.6g} of {target:.6g}",
                            refresh=False)  # shown by the bar's own clock (none before its delay)

    # HiGHS takes costs of 1e20 and more for infinite (status 'Unknown') and loses costs far below its tolerances: it
    # solves C scaled by a power of two to a largest entry in [0.5, 1); the bound is recomputed on C itself with the
    # multipliers scaled back (valid for any multipliers, so whatever the scaled entries lost to underflow)
    s = _power_of_two_scale(C)
    total = n * (n - 1) // 2
    # first the sparse flow certificate (design/lp_flow.py): PDLP on a few pairs per row; only the numpy bound decides
    bar.set_postfix_str("certificate: flow LP on a sparse graph (PDLP)", refresh=False)
    flow = lp_flow.certify_flow(C, g, target, gap_rtol, max_nonzeros, scale=s, verbose=verbose)
    if flow is not None and flow.certified:
        notes.append(f"the Doeblin closed form gamma D + (1 - gamma) 1 e_y*^T (feasible: its Dobrushin coefficient is "
                     f"at most its Doeblin coefficient) is optimal: multipliers on {flow.pairs.shape[0]:,} of {total:,} "
                     f"pairs (a flow LP on each row's {flow.degree} best partners, HiGHS PDLP, {flow.iterations:,} "
                     f"iterations, status {flow.status!r}; the bound recomputed in numpy) certify that no K loses less "
                     f"than its loss, within design_gap_rtol = {gap_rtol:g}")
        out = lp_dobrushin.CutsOutcome(K=K_D, pairs=flow.pairs, lam=flow.lam, rounds=0, entries=flow.pairs.size,
                                       solver=flow.solver, status="certified", bound=flow.bound, certified=True)
        return K_D, flow.bound, out
    out = lp_dobrushin.solve_pairs(C * s, g, max_nonzeros, target=target * s, rtol=gap_rtol, verbose=verbose,
                                   on_round=on_round)
    if s != 1.0:
        out = dataclasses.replace(out, lam=out.lam / s, bound=duals.dobrushin_bound(C, out.pairs, out.lam / s, g))
    if out.certified:
        notes.append(f"the Doeblin closed form gamma D + (1 - gamma) 1 e_y*^T (feasible: its Dobrushin coefficient is "
                     f"at most its Doeblin coefficient) is optimal: multipliers on {out.pairs.shape[0]:,} of {total:,} "
                     f"pairs ({out.rounds} rounds of pair generation, HiGHS) certify that no K loses less than its "
                     f"loss, within design_gap_rtol = {gap_rtol:g}")
        return K_D, out.bound, out
    K_lp = stochastic(out.K, feas_atol)
    if float(np.sum(C * K_lp)) < target:
        notes.append(f"the Doeblin closed form is not optimal here: the Dobrushin LP, solved by pair generation "
                     f"({out.rounds} rounds, {out.pairs.shape[0]:,} of {total:,} pairs; HiGHS), does better")
        return K_lp, out.bound, out
    notes.append(f"the Doeblin closed form was kept; pair generation ({out.rounds} rounds, {out.pairs.shape[0]:,} of "
                 f"{total:,} pairs) solved the LP to its optimum without a better K")
    return K_D, out.bound, out
