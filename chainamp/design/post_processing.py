r"""Optimal post-processing: the least-loss K for which K o M is (epsilon, delta)-LDP, as a linear program.

For a finite mechanism M (inputs X, outputs Z), a loss ``ell(x, y)`` on X x Y and a prior pi on X, the
operator K: Z -> Y with the smallest expected loss ``sum_x pi(x) sum_y (MK)(x, y) ell(x, y)`` among those
whose pipeline M K is (epsilon, delta)-LDP is a linear program in K: the loss and the pipeline
``MK`` are linear in K and so are the privacy constraints,

* pure epsilon: ``(MK)(x, y) <= e^eps (MK)(x', y)`` for every ordered neighbour pair and y;
* delta > 0: ``sum_y [(MK)(x, y) - e^eps (MK)(x', y)]_+ <= delta`` (the hockey-stick divergence of
  Balle et al. 2019, Section 2), with auxiliary ``t >= (MK)(x) - e^eps (MK)(x')``, ``t >= 0``,
  ``sum_y t <= delta`` per ordered pair.

That utility-optimal privatisation is a linear program in the channel is the observation of Ghosh,
Roughgarden and Sundararajan (2012), "Universally utility-maximizing privacy mechanisms" (SIAM J.
Comput. 41(6)), who post-process the geometric mechanism with such an LP, and of Kairouz, Oh and
Viswanath (2016), "Extremal mechanisms for local differential privacy" (JMLR 17); here the channel is
the post-processing K of Balle, Barthe, Gaboardi and Geumlek (2019), and the answer is certified by
chainamp's own :func:`~chainamp.amplify`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._numerics import (DESIGN_MAX_LP_NONZEROS, DESIGN_MAX_REPAIR, LP_FEAS_ATOL, check_choice, check_delta,
                         check_epsilon, check_float_array, check_int, check_progress, fmt_number, progress_bar,
                         progress_scope)
from ..amplification import amplify
from ..errors import InvalidOperatorError, InvalidParameterError, SolverError
from ..operators import MarkovOperator
from ..privacy import neighbor_pairs, privacy_profile
from . import duals, lp_compact, symmetric
from .common import (check_flags, check_labels, check_lp_size, check_tables, check_tolerances, check_loss, check_prior,
                     operator, repair, stochastic)
from .result import DesignResult

__all__ = ["optimal_post_processing"]

#: the LPs ``formulation=`` chooses from (see :func:`optimal_post_processing`)
FORMULATIONS = ("auto", "pairs", "compact")
#: ``formulation="auto"`` solves the compact LP when it applies and the pair LP has more nonzeros than this (the
#: pair LP of 12-ary inputs and outputs, 190,080 nonzeros, about a second with cvxpy and HiGHS)
COMPACT_ABOVE_NONZEROS = 200_000

#: e^eps overflows past this; no finite mechanism needs a larger target
_MAX_EPSILON = 700.0
#: the repair's screen asks for this much relative room below the target: the report widens the stored
#: product's profile by its rounding error (a relative ~1e-15), so a screen without room would pass K_lam
#: that the report then rejects (the final word is always the report's)
_SCREEN_RTOL = 1e-13


def optimal_post_processing(M: Any, epsilon: float, *, delta: float = 0.0, loss: Any = None, prior: Any = None,
                            outputs: Any = None, neighbors: Any = None, solver: str | None = None,
                            lp_feas_atol: float = LP_FEAS_ATOL, design_max_repair: float = DESIGN_MAX_REPAIR,
                            verbose: bool = False,
                            max_lp_nonzeros: int = DESIGN_MAX_LP_NONZEROS, progress: bool | None = None,
                            symmetry: bool = True, formulation: str = "auto") -> DesignResult:
    r"""The least-loss post-processing K of M such that K o M is certified (epsilon, delta)-LDP.

    Minimises ``sum_x prior(x) sum_y (M K)(x, y) loss(x, y)`` over Markov operators K from M's outputs to
    ``outputs`` subject to M K being (epsilon, delta)-LDP over all input pairs (or the ``neighbors``), a
    linear program (module docstring; Ghosh, Roughgarden and Sundararajan 2012; Kairouz, Oh and
    Viswanath 2016), solved with cvxpy. Only an ``OPTIMAL`` status is trusted.

    The returned K is the solver's, clipped and renormalised, and then certified by chainamp: the
    ``report`` is ``chainamp.amplify(M, K, delta=delta)`` and ``report.epsilon_at(delta) <= epsilon``
    always holds. The LP optimum satisfies the constraints exactly, so chainamp's rounded-up certificate
    can miss the target by a few ulps (or, for delta > 0, by the 1e-7 bracket of its epsilon search);
    then K is mixed with the uniform constant operator, ``(1 - lam) K + lam 1 u^T``, which shrinks every
    privacy loss, with the smallest lam (short search) chainamp certifies, and a note says so.

    ``dual_bound`` is a certified lower bound on the loss of every feasible K, computed in numpy from the
    solver's multipliers of the privacy constraints (clipped to >= 0), the row-sum constraints kept hard:

    .. math::

        \mathrm{OPT} \ge \sum_j \min_y \Big(C + A^\top\lambda\Big)[j, y] - \delta \sum_p \max_y \lambda_{p,y},
        \qquad C = M^\top \mathrm{diag}(\pi)\,\ell,\quad A_p = M_{x_p} - e^\varepsilon M_{x'_p}.

    Derivation: for feasible (K, t) and any ``lambda >= 0``, ``<C, K> >= <C, K> + sum lambda (A K - t)``;
    the right side is minimised over K's rows in the simplex at ``sum_j min_y (C + A^T lambda)[j, y]`` and
    over ``{t >= 0, sum_y t[p, y] <= delta}`` at ``-delta sum_p max_y lambda[p, y]`` (see
    :mod:`chainamp.design.duals`). The value is rounded down, so ``dual_bound <= objective``.

    When M alone already meets the target (its exact profile has ``delta_M(epsilon) <= delta``), the
    constraint is slack (post-processing never hurts privacy) and the optimum is the Bayes decoder
    ``K(z) = argmin_y sum_x prior(x) M(x, z) loss(x, y)``; when M's outputs are the chosen outputs and
    that decoder is the identity (k-RR with the 0-1 loss), K is exactly the identity. With
    ``epsilon = delta = 0`` over all pairs every feasible M K has equal rows v, whose loss
    ``sum_y v_y sum_x prior(x) loss(x, y)`` is smallest at the best constant operator, returned in closed form.

    **At scale** (pure epsilon over all pairs), the constraints of all pairs on output y say only that column y of
    ``M K`` has its largest entry at most e^eps times its smallest; the compact LP (``formulation``) states that
    with two variables per output and a dense random 100 x 100 M is designed in seconds (the pair LP has 10^8
    nonzeros). Its ``dual_bound`` is the Lagrangian bound of :func:`chainamp.design.duals.compact_bound` (with
    e^eps rounded up: ``math.exp`` is within one ulp, so the next float up is above the exact value), valid for any
    multipliers the solver returns, and K is certified by ``amplify`` as always.

    **Symmetric designs.** When the problem does not change under relabelling the values (M is k-ary
    randomized response with its outputs labelled as its inputs, all pairs are neighbours, K's outputs are
    those values, the prior is uniform and the loss takes one value on the diagonal and one off it), averaging
    any optimal K over the relabellings gives an optimal K of the form ``a I + b (J - I)`` (the LP is convex
    and invariant; Kairouz, Oh and Viswanath 2016). The LP then reduces to the one parameter a, solved in
    closed form without cvxpy (:mod:`chainamp.design.symmetric`): K is a :class:`~chainamp.operators.SymmetricChannel`
    (never densified, so k = 10^6 works), ``dual_bound`` is the reduced optimum computed in fractions with
    e^eps rounded up (a lower bound on every K's loss by the averaging argument), rounded down, and K is
    certified by ``amplify`` as always. ``symmetry=False`` forces the LP.

    Parameters
    ----------
    M : MarkovOperator or array_like
        The finite mechanism (rows: data values, columns: its outputs = K's inputs).
    epsilon, delta : float
        The target for K o M: epsilon >= 0 finite, delta in [0, 1].
    loss : array_like, optional
        ``n_inputs x n_outputs`` non-negative finite matrix; default 0-1 loss by label equality.
    prior : array_like, optional
        A distribution over M's inputs; default uniform.
    outputs : sequence of labels or int, optional
        K's outputs; default M's inputs (with their labels).
    neighbors : networkx.Graph or list of label pairs, optional
        Neighbouring inputs of M (default: all pairs, local DP).
    solver : str, optional
        A cvxpy LP solver of ``chainamp.lp.LP_SOLVERS``; default ``chainamp.lp.DEFAULT_LP_SOLVER``.
    lp_feas_atol : float
        The solver's K is rejected (SolverError) when an entry is below ``-lp_feas_atol`` or a row sum is
        off by more.
    design_max_repair : float
        The largest mixing weight lam the repair may use before raising SolverError.
    max_lp_nonzeros : int
        Refuse, before building it, an LP with more constraint nonzeros than this (default
        ``DESIGN_MAX_LP_NONZEROS``, about a few GB in the solver).
    verbose : bool
        Show cvxpy's and the solver's log (default False: the solver prints nothing, its banner included).
    progress : bool or None
        A tqdm bar over the three stages (M's exact profile, the LP, the certificate of K): ``None`` (default)
        shows it when the design runs longer than two seconds, ``True`` at once, ``False`` never.
    symmetry : bool
        Use the closed form of a design invariant under relabelling (default True); False always solves the LP.
    formulation : {"auto", "pairs", "compact"}
        The LP solved: ``"pairs"`` one constraint per ordered neighbour pair and output (with cvxpy and
        ``solver``); ``"compact"`` (pure epsilon over all pairs only) per-output bounds ``u_y``, ``l_y`` of the
        columns of ``Q = M K`` with ``u_y <= e^eps l_y``, ``n k (m + 5)`` nonzeros instead of ``n (n - 1) m k``,
        solved by the block interior-point method of :mod:`chainamp.design.block_ipm` (numpy; Clarabel called
        directly if it does not converge, with a note; ``solver`` does not apply). ``"auto"``
        (default) takes the compact form where it applies and the pair LP would have more than
        ``COMPACT_ABOVE_NONZEROS`` nonzeros.

    Returns
    -------
    DesignResult

    Raises
    ------
    InvalidParameterError, InvalidDistributionError, InvalidOperatorError, InvalidMechanismError
        A bad argument (named in the message).
    TypeError
        ``verbose`` not a bool (and other arguments of the wrong type).
    SolverError
        A non-OPTIMAL solver status, a solution far from stochastic, or one no small repair makes certifiable.

    Examples
    --------
    >>> from chainamp import mechanisms
    >>> M = mechanisms.randomized_response(3, 2.0)
    >>> r = optimal_post_processing(M, 1.0)
    >>> r.report.epsilon_at(0.0) <= 1.0, r.dual_bound <= r.objective <= r.dual_bound + 1e-7
    (True, True)
    >>> round(r.objective, 6)   # k-RR at eps = 1 has error 1 - e / (e + 2) = 0.42388
    0.42388
    >>> bool(optimal_post_processing(M, 2.5).K == MarkovOperator.identity(3))
    True
    """
    Mop = _check_mechanism(M)
    eps = check_epsilon(epsilon, "epsilon", allow_inf=False)
    if eps > _MAX_EPSILON:
        raise InvalidParameterError(f"epsilon must be <= {_MAX_EPSILON:g} (e^epsilon overflows; got {eps!r})")
    d = check_delta(delta, "delta")
    feas_atol, max_repair = check_tolerances(lp_feas_atol, design_max_repair)
    pi = check_prior(prior, Mop.shape[0])
    if outputs is not None:
        outputs = check_labels(outputs, "outputs")
    if loss is not None:
        loss = check_loss(loss, Mop.inputs, Mop.inputs if outputs is None else outputs)
    progress = check_progress(progress)
    check_int(max_lp_nonzeros, "max_lp_nonzeros", minimum=1)
    check_flags(verbose, symmetry)
    form = check_choice(formulation, "formulation", FORMULATIONS)
    if form == "compact" and (d > 0.0 or neighbors is not None):
        raise InvalidParameterError(
            f"formulation='compact' needs pure epsilon over all pairs of inputs (delta = 0, neighbors=None); got "
            f"delta={d!r}, neighbors={'None' if neighbors is None else 'a neighbour relation'}: use 'pairs' or 'auto'")
    problem = symmetric.post_processing_problem(Mop, loss, pi, outputs, neighbors) if symmetry else None
    if problem is not None and eps == 0.0 and d == 0.0:
        problem = None  # the best constant operator (below) makes M K's rows exactly equal: eps' = 0 certified
    if problem is None:
        check_tables(max(Mop.shape), len(Mop.inputs if outputs is None else outputs), "optimal_post_processing")
    n_out = len(Mop.inputs if outputs is None else outputs)
    compact = problem is None and _compact(form, d, neighbors, *Mop.shape, n_out)
    if solver is not None or (problem is None and not compact):
        from ..mixing import check_lp_solver, check_lp_verbose  # imports cvxpy: only when an LP may be solved

        solver_name, loud = check_lp_solver(solver), check_lp_verbose(verbose)
    if problem is not None:
        # invariant under relabelling: one parameter, closed form (design/symmetric.py); two stages, shown past
        # two seconds: the closed form, then its certificate
        with progress_bar(2, "optimal_post_processing", unit="stage", progress=progress) as bar, \
                progress_scope(progress):
            bar.set_postfix_str("symmetric closed form", refresh=False)
            sol = symmetric.solve_post_processing(problem, Mop, eps, d, max_repair)
            bar.update(2)
        _check_dual(sol["dual_bound"], sol["objective"])
        return DesignResult(K=sol["K"], objective=sol["objective"], dual_bound=sol["dual_bound"],
                            report=sol["report"], notes=sol["notes"], kind="post_processing", target_epsilon=eps,
                            target_delta=d, certified_epsilon=_certified_epsilon(sol["report"], eps, d),
                            repair=sol["repair"])
    outs = Mop.inputs if outputs is None else outputs
    ell = check_loss(loss, Mop.inputs, outs)
    pairs = neighbor_pairs(Mop.inputs, neighbors)
    # three stages, shown past two seconds: M's exact profile, the LP (built and solved), the certificate of K
    with progress_bar(3, "optimal_post_processing", unit="stage", progress=progress) as bar, \
            progress_scope(progress):
        mat = np.asarray(Mop.matrix, dtype=float)
        # rows accepted within row_sum_atol stand for their normalised rows, which is what amplify certifies:
        # the LP, its dual bound and the objective are for that operator too
        mat = mat / mat.sum(axis=1, keepdims=True)
        C = mat.T @ (pi[:, None] * ell)
        n = mat.shape[0]

        def certify(K: np.ndarray):
            rep = amplify(Mop, operator(K, Mop.outputs, outs), neighbors=neighbors, delta=d)
            return rep if _meets(rep, eps, d) else None

        def screen(K: np.ndarray) -> bool:  # the stored product's exact profile: guides the repair's search only
            prof = privacy_profile(MarkovOperator(mat @ K, inputs=Mop.inputs, row_sum_atol=1.0), neighbors)
            return prof.epsilon(d) <= eps * (1.0 - _SCREEN_RTOL)

        what = f"chainamp certifies no eps' <= {eps:g} at delta' = {d:g} for K o M"
        notes: list[str] = []
        lp_out = None
        bar.set_postfix_str("the exact profile of M", refresh=False)
        delta_m = float(privacy_profile(Mop, neighbors).delta(eps))
        bar.update(1)
        bar.set_postfix_str("building and solving the LP", refresh=False)
        if delta_m <= d:
            K0 = _bayes(C, Mop.outputs, outs)
            identity = Mop.outputs == outs and np.array_equal(K0, np.eye(len(outs)))
            dual = duals.post_processing_bound(C, np.zeros((0, mat.shape[1])), np.zeros((0, mat.shape[1])),
                                               np.zeros((0, len(outs))), np.zeros(0), n)
            notes.append(f"M already meets the target (its exact profile gives delta({fmt_number(eps)}) = "
                         f"{fmt_number(delta_m)} <= {fmt_number(d)}): the privacy constraint is slack and K is the "
                         f"Bayes decoder{' (the identity)' if identity else ''}")
        elif eps == 0.0 and d == 0.0 and neighbors is None:
            c = pi @ ell
            K0 = np.zeros((mat.shape[1], len(outs)))
            K0[:, int(np.argmin(c))] = 1.0
            dual = duals.constant_bound(c)
            notes.append("epsilon = delta = 0: every feasible M K has equal rows, so the best constant operator "
                         "is optimal (closed form, no LP)")
        elif compact:
            check_lp_size(lp_compact.compact_nonzeros(n, mat.shape[1], len(outs)), max_lp_nonzeros,
                          "optimal_post_processing (compact LP)")
            e = math.exp(eps)
            lp_out, fallback = lp_compact.solve_compact(C, mat, e, bool(verbose))
            if fallback is not None:
                notes.append(fallback)
            K0 = stochastic(lp_out.K, feas_atol)
            dual = duals.compact_bound(C, mat, lp_out.alpha, lp_out.beta, lp_out.gamma, math.nextafter(e, math.inf))
        else:
            check_lp_size(int(pairs.shape[0]) * mat.shape[1] * len(outs), max_lp_nonzeros, "optimal_post_processing")
            e = math.exp(eps)
            A = mat[pairs[:, 0]] - e * mat[pairs[:, 1]]
            A_abs = mat[pairs[:, 0]] + e * mat[pairs[:, 1]]
            # pair p's constraint divided by s_p = max_j |A[p, j]| (and its delta budget with it): the same
            # feasible set, well scaled for the solver when e^eps is large
            scale = A_abs.max(axis=1, keepdims=True)
            A, A_abs, budget = A / scale, A_abs / scale, d / scale[:, 0]
            from .lp import post_processing_lp

            lp_out = post_processing_lp(C, A, budget, d > 0.0, solver_name, loud)
            K0 = stochastic(lp_out.K, feas_atol)
            dual = duals.post_processing_bound(C, A, A_abs, lp_out.lam, budget, n)
        bar.update(1)
        bar.set_postfix_str("certifying K (chainamp.amplify)", refresh=False)
        # at eps = 0 the screen (the stored product's profile, eps' <= 0 exactly) fails on any rounding residue
        # of M's rows (a row summing to 1 - 1 ulp): there chainamp's certificate itself guides the repair
        K, lam, report = repair(K0, certify, max_repair, what, screen if eps > 0.0 else None)
        bar.update(1)
        objective = _objective(mat, K, pi, ell)
        if lam > 0.0:
            notes.append(f"the K found was mixed with weight lam = {lam:.3g} of the uniform constant operator, "
                         f"(1 - lam) K + lam 1 u^T, so that chainamp's rounded-up certificate meets the target "
                         f"(expected loss +{fmt_number(objective - _objective(mat, K0, pi, ell))})")
        _check_dual(dual, objective)
        if lam == 0.0 and outs == Mop.outputs and np.array_equal(K, np.eye(len(outs))):
            Kop = MarkovOperator.identity(outs)
        else:
            Kop = operator(K, Mop.outputs, outs)
        return DesignResult(K=Kop, objective=objective, dual_bound=dual, report=report, notes=tuple(notes),
                            kind="post_processing", target_epsilon=eps, target_delta=d,
                            certified_epsilon=_certified_epsilon(report, eps, d), repair=lam,
                            solver=None if lp_out is None else lp_out.solver,
                            status=None if lp_out is None else lp_out.status)


def _compact(form: str, d: float, neighbors: Any, n: int, m: int, k: int) -> bool:
    """Whether the compact LP is solved: asked for, or (auto) pure epsilon over all pairs with a large pair LP."""
    if form != "auto":
        return form == "compact"
    return d == 0.0 and neighbors is None and n * (n - 1) * m * k > COMPACT_ABOVE_NONZEROS


def _check_dual(dual: float, objective: float) -> None:
    if not dual <= objective:
        raise SolverError(f"the dual bound {dual!r} exceeds the loss {objective!r} of a certified K: inconsistent")


def _meets(report: Any, eps: float, d: float) -> bool:
    """Whether the report certifies (eps, d): its eps' at delta' = d is at most eps, or (d > 0) its delta' at
    eps' = eps is at most d. Both are certified statements of the same guarantee; the second is needed at
    eps = 0, where the error model of the product M K keeps every certified eps' a few ulps above 0."""
    return report.epsilon_at(d) <= eps or (d > 0.0 and report.delta_at(eps) <= d)


def _certified_epsilon(report: Any, eps: float, d: float) -> float:
    """The certified eps' at delta' = d, or eps itself when the certificate is delta'(eps) <= d."""
    got = report.epsilon_at(d)
    return got if got <= eps else eps


def _check_mechanism(M: Any) -> MarkovOperator:
    if isinstance(M, MarkovOperator):
        return M
    arr = check_float_array(M, "M", ndim=2)
    if not np.all(np.isfinite(arr)):
        i, j = np.argwhere(~np.isfinite(arr))[0]
        raise InvalidOperatorError(f"M entries must be finite (got {arr[i, j]!r} at ({i}, {j}))")
    try:
        return MarkovOperator(arr)
    except InvalidOperatorError as exc:
        raise InvalidOperatorError(f"M is not a valid mechanism: {exc}") from None


def _bayes(C: np.ndarray, inputs: tuple, outputs: tuple) -> np.ndarray:
    """The Bayes decoder: row z puts mass 1 on a minimiser of ``C[z]``, the output labelled z when it is one."""
    K = np.zeros(C.shape)
    where = {y: j for j, y in enumerate(outputs)}
    for z, row in enumerate(C):
        best = row.min()
        j = where.get(inputs[z])
        K[z, j if j is not None and row[j] == best else int(np.argmin(row))] = 1.0
    return K


def _objective(mat: np.ndarray, K: np.ndarray, prior: np.ndarray, loss: np.ndarray) -> float:
    """``sum_x prior(x) sum_y (M K)(x, y) loss(x, y)`` in numpy."""
    return float(np.sum(prior[:, None] * (mat @ K) * loss))
