r"""Designs invariant under relabelling: one parameter instead of an LP over k x k operators.

Let a group G of permutations act on the values, and suppose the design problem is invariant: M
(for :func:`~chainamp.design.optimal_post_processing`), the loss and the prior are unchanged when the
inputs, M's outputs and K's outputs are relabelled by the same g in G, and so is the constraint set
(all pairs of inputs, or a coefficient of K). The problem is a *convex* program (a linear objective
over a convex feasible set), so averaging any optimal K over the group,
``K_bar = (1 / |G|) sum_g P_g K P_g^T``, keeps it feasible and keeps its loss: there is an optimal K that
commutes with every ``P_g``. For the full symmetric group S_k that leaves only
``K = a I + b (J - I)``, ``a + (k - 1) b = 1``: a k-ary symmetric channel, one parameter ``a``.

This is the argument of Kairouz, Oh and Viswanath (2016), "Extremal mechanisms for local differential
privacy" (JMLR 17), Section 4 and Gaboardi et al.'s use of symmetry in LPs for privacy; here it is
applied to the post-processing LP of Ghosh, Roughgarden and Sundararajan (2012) and to the mixing
designs of :mod:`chainamp.design.mixing_design`.

Reduced problems (derivations in the functions): with uniform prior and a loss equal to ``l0`` on the
diagonal and ``l1`` off it, the loss of a symmetric K is ``l1 + (l0 - l1) P`` where P is the
probability that the pipeline reports the true value; the constraints cut P to an interval; a linear
function of P is smallest at an end of it. Both ends are exact rational functions of the stored
doubles and e^eps, so the optimum is known in closed form and the dual bound (a certified lower bound
on the loss of every K, not only the symmetric ones, by the averaging argument) is computed in
fractions with e^eps rounded toward the larger feasible set, then rounded down. The K returned is
certified by chainamp's own code (``amplify``, ``dobrushin``, ``doeblin``) and, if the last ulp of its
parameter makes that certificate miss the target, mixed toward the uniform channel as in
:func:`~chainamp.design.common.repair`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._numerics import check_float_array
from ..amplification import amplify
from ..mixing import dobrushin, doeblin
from ..operators import MarkovOperator, SymmetricChannel
from .common import repair

__all__: list[str] = []


@dataclass(frozen=True)
class SymmetricProblem:
    """An invariant design: k values with their labels, the diagonal and off-diagonal loss, and M's two entries
    (normalised rows, as fractions) when there is an M."""

    k: int
    labels: Any
    loss_same: Fraction
    loss_other: Fraction
    m_diag: Fraction | None = None
    m_off: Fraction | None = None


def _loss_pair(loss: Any, k: int) -> tuple[Fraction, Fraction] | None:
    """``(l0, l1)`` when the loss is constant on the diagonal and off it (None: the 0-1 loss); else None."""
    if loss is None:
        return Fraction(0), Fraction(1)
    arr = check_float_array(loss, "loss")
    if arr.shape != (k, k) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        return None  # the general path validates and words the error
    l0, l1 = float(arr[0, 0]), float(arr[0, 1]) if k > 1 else 0.0
    off = arr.copy()
    np.fill_diagonal(off, l1)
    if not (np.all(np.diagonal(arr) == l0) and np.all(off == l1)):
        return None
    return Fraction(l0), Fraction(l1)


def _uniform(prior: Any, k: int) -> bool:
    if prior is None:
        return True
    arr = np.asarray(prior)
    return arr.shape == (k,) and arr.dtype.kind in "fiu" and bool(np.all(arr == arr[0])) and float(arr[0]) > 0


def _same_labels(outputs: Any, labels: Any, k: int) -> bool:
    if outputs is None:
        return True
    if isinstance(outputs, (int, np.integer)) and not isinstance(outputs, bool):
        return int(outputs) == k and tuple(labels) == tuple(range(k))
    try:
        return len(outputs) == k and tuple(outputs) == tuple(labels)
    except TypeError:
        return False


def post_processing_problem(M: MarkovOperator, loss: Any, prior: Any, outputs: Any,
                            neighbors: Any) -> SymmetricProblem | None:
    """The invariant problem behind ``optimal_post_processing(M, ...)``, or None when it is not one.

    Invariant: all pairs are neighbours, M is k-ary randomized response on k >= 2 values with its outputs
    labelled as its inputs (a :class:`SymmetricChannel` on all its values, or a dense matrix whose diagonal
    entries are equal and whose off-diagonal entries are equal), K's outputs are those values, the prior is
    uniform and the loss is ``l0`` on the diagonal and ``l1`` off it. M's rows stand for their normalised rows.
    """
    if neighbors is not None:
        return None
    n, k = M.shape
    if n != k or k < 2:
        return None
    if isinstance(M, SymmetricChannel):
        if M.positions is not None:
            return None
        d, o = M.diagonal, M.off_diagonal
    elif type(M) is MarkovOperator and not M.is_sparse and M.inputs == M.outputs:
        mat = M.matrix
        d, o = float(mat[0, 0]), float(mat[0, 1])
        off = mat.copy()
        np.fill_diagonal(off, o)
        if not (np.all(np.diagonal(mat) == d) and np.all(off == o)):
            return None
    else:
        return None
    if not (_uniform(prior, k) and _same_labels(outputs, M.inputs, k)):
        return None
    pair = _loss_pair(loss, k)
    if pair is None:
        return None
    s = Fraction(d) + (k - 1) * Fraction(o)
    return SymmetricProblem(k, M.inputs, pair[0], pair[1], Fraction(d) / s, Fraction(o) / s)


def mixing_problem(n: int, labels: Any, loss: Any, prior: Any) -> SymmetricProblem | None:
    """The invariant problem behind ``optimal_mixing_operator(n, ...)`` (uniform prior, loss ``l0`` / ``l1``)."""
    if n < 2 or not _uniform(prior, n):
        return None
    pair = _loss_pair(loss, n)
    return None if pair is None else SymmetricProblem(n, labels, pair[0], pair[1])


def exp_bounds(eps: float) -> tuple[Fraction, Fraction]:
    """Fractions ``lo <= e^eps <= hi`` (``math.exp`` is within 1 ulp; two ulps each way)."""
    if eps == 0.0:
        return Fraction(1), Fraction(1)
    e = math.exp(eps)
    lo = math.nextafter(math.nextafter(e, 0.0), 0.0)
    hi = math.nextafter(math.nextafter(e, math.inf), math.inf)
    return Fraction(max(lo, 1.0)), Fraction(hi)


def report_interval(k: int, c: Fraction, delta: Fraction) -> tuple[Fraction, Fraction]:
    r"""The reporting probabilities P for which k-ary RR ``(P, Q = (1 - P)/(k - 1))`` is (eps, delta)-LDP, c = e^eps.

    For two values x, x' the rows differ only at x and x', so ``D_c = [P - c Q]_+ + [Q - c P]_+`` and the
    target holds iff ``P - c Q <= delta`` and ``Q - c P <= delta``, i.e.

    .. math::

        \frac{1 - \delta (k - 1)}{1 + c (k - 1)} \le P \le \frac{\delta (k - 1) + c}{k - 1 + c}.

    The upper end grows with c and the lower end falls: with c an upper bound on e^eps the interval
    contains the true one (used for the dual bound).

    Examples
    --------
    >>> report_interval(3, Fraction(2), Fraction(0))    # 3-RR is ln(2)-LDP for P in [1/5, 1/2]
    (Fraction(1, 5), Fraction(1, 2))
    """
    lo = (1 - delta * (k - 1)) / (1 + c * (k - 1))
    hi = (delta * (k - 1) + c) / (k - 1 + c)
    return max(lo, Fraction(0)), min(hi, Fraction(1))


def best_report_probability(prob: SymmetricProblem, c: Fraction, delta: Fraction) -> Fraction:
    r"""The P of the least-loss symmetric K: the end of ``reachable ∩ feasible`` that minimises
    ``l1 + (l0 - l1) P``. Reachable: ``P(a) = m_o + (m_d - m_o) a`` for ``a`` in [0, 1] (K = aI + (1 - a)(J - I)/(k - 1)).
    P = 1/k (the uniform K) is always in both, so the intersection is never empty."""
    lo_f, hi_f = report_interval(prob.k, c, delta)
    lo_r, hi_r = sorted((prob.m_off, prob.m_diag))
    lo, hi = max(lo_f, lo_r), min(hi_f, hi_r)
    return lo if prob.loss_same > prob.loss_other else hi


def keep_for(prob: SymmetricProblem, P: Fraction) -> Fraction:
    """K's diagonal a with ``m_o + (m_d - m_o) a = P`` (a = 1, the identity, when M's rows are all equal)."""
    if prob.m_diag == prob.m_off:
        return Fraction(1)
    return min(max((P - prob.m_off) / (prob.m_diag - prob.m_off), Fraction(0)), Fraction(1))


def channel(prob: SymmetricProblem, a: float) -> SymmetricChannel:
    """``a I + (1 - a)(J - I)/(k - 1)`` on the problem's values (the identity at a = 1)."""
    k = prob.k
    off = float((1 - Fraction(a)) / (k - 1))
    return SymmetricChannel(k, a, off, prob.labels)


def loss_of(prob: SymmetricProblem, P: Fraction) -> Fraction:
    """``l1 + (l0 - l1) P``: the expected loss under the uniform prior when the true value is reported w.p. P."""
    return prob.loss_other + (prob.loss_same - prob.loss_other) * P


def pipeline_report_probability(prob: SymmetricProblem, K: SymmetricChannel) -> Fraction:
    """P of ``M K`` in fractions, with K's rows normalised."""
    d, o = Fraction(K.diagonal), Fraction(K.off_diagonal)
    s = d + (prob.k - 1) * o
    a = d / s
    if prob.m_diag is None:
        return a
    return prob.m_diag * a + prob.m_off * (1 - a)


def float_down(x: Fraction) -> float:
    f = float(x)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


def best_keep_for_coefficient(prob: SymmetricProblem, gamma: Fraction, coefficient: str) -> Fraction:
    r"""K's diagonal a for the least-loss symmetric K with coefficient <= gamma.

    With ``b = (1 - a)/(k - 1)``: Dobrushin ``TV(K_x, K_x') = |a - b|``; Doeblin ``1 - k min(a, b)``. Larger a
    (``a >= b``): both read ``a <= gamma + (1 - gamma)/k``. Smaller a (``a <= b``, i.e. ``a <= 1/k``): Dobrushin
    ``a >= (1 - gamma (k - 1))/k`` (and ``a >= 0``), Doeblin ``a >= (1 - gamma)/k``. The loss ``l1 + (l0 - l1) a``
    is linear in a, smallest at one end.
    """
    k = prob.k
    if prob.loss_same <= prob.loss_other:
        return gamma + (1 - gamma) / k
    if coefficient == "dobrushin":
        return max((1 - gamma * (k - 1)) / k, Fraction(0))
    return (1 - gamma) / k


#: the repair's screen asks for this much relative room inside the reduced constraint: chainamp's certificate of
#: the product M K is rounded up by its error model (a relative ~1e-14), so a screen without room would pass a K
#: that the certificate rejects (the final word is always the certificate's)
_SCREEN_ROOM = 2.0**-36
#: with delta > 0 the certificate's eps' at delta' comes from a search bracketed to a relative 1e-7 (BISECTION_RTOL):
#: a K whose exact eps' sits 2^-23 = 1.19e-7 below the target is reported below it
_SCREEN_ROOM_DELTA = 2.0**-23


def _mix_keep(k: int):
    """The repair's mixture on the diagonal parameter: ``(1 - lam) a + lam / k`` is K mixed with the uniform
    constant operator (every entry of ``(1 - lam) K + lam J / k``)."""
    def mix(a: float, lam: float) -> float:
        return a if lam == 0.0 else float((1 - Fraction(lam)) * Fraction(a) + Fraction(lam) / k)
    return mix


def solve_post_processing(prob: SymmetricProblem, M: MarkovOperator, eps: float, delta: float,
                          max_repair: float) -> dict:
    """The least-loss K for an invariant post-processing design (module docstring), certified by ``amplify``.

    Returns the pieces of a :class:`DesignResult`: K (a :class:`SymmetricChannel`), its loss, the dual bound
    (the reduced optimum over the interval of P computed with e^eps rounded up: every feasible K, symmetric or
    not, loses at least that much), the report, the repair weight and notes.
    """
    d = Fraction(delta)
    hi_c = exp_bounds(eps)[1]
    a_star = keep_for(prob, best_report_probability(prob, Fraction(math.exp(eps)), d))
    bound = loss_of(prob, best_report_probability(prob, hi_c, d))
    k = prob.k

    def certify(a: float):
        rep = amplify(M, channel(prob, a), delta=delta)
        # eps' at delta' = delta, as optimal_post_processing promises; at eps = 0 the product's error model keeps
        # every certified eps' a few ulps above 0, and delta'(0) <= delta is the same guarantee
        ok = rep.epsilon_at(delta) <= eps or (eps == 0.0 and delta > 0.0 and rep.delta_at(eps) <= delta)
        return rep if ok else None

    room = Fraction(_SCREEN_ROOM if delta == 0.0 else _SCREEN_ROOM_DELTA)
    # the screen's e^eps: rounded down, and for delta > 0 at eps (1 - room), since the certificate's eps' at delta'
    # is the upper end of a search bracket
    c = exp_bounds(eps if delta == 0.0 else float(Fraction(eps) * (1 - room)))[0]

    def screen(a: float) -> bool:  # the reduced constraint with room to spare: guides the repair, decides nothing
        P = pipeline_report_probability(prob, channel(prob, a))
        Q = (1 - P) / (k - 1)
        if delta == 0.0:
            return P == Q or (P <= c * Q * (1 - room) and Q <= c * P * (1 - room))
        return max(P - c * Q, Fraction(0)) + max(Q - c * P, Fraction(0)) <= d * (1 - room)

    what = f"chainamp certifies no eps' <= {eps:g} at delta' = {delta:g} for the symmetric K o M"
    a, lam, report = repair(float(a_star), certify, max_repair, what, screen=screen, mix=_mix_keep(k))
    K = channel(prob, a)
    objective = loss_of(prob, pipeline_report_probability(prob, K))
    notes = [f"symmetric design: M is {k}-ary randomized response and the loss and prior do not change when the "
             "values are relabelled, so averaging any optimal K over the relabellings gives an optimal K of the "
             "form a I + b (J - I); the LP reduces to the one parameter a (closed form, no LP)"]
    if a == 1.0 and lam == 0.0:
        notes.insert(0, "M already meets the target: K is the identity (the privacy constraint is slack)")
    if lam > 0.0:
        notes.append(f"K's parameter was mixed with weight lam = {lam:.3g} of the uniform channel so that chainamp's "
                     "rounded-up certificate meets the target")
    return dict(K=K, objective=float(objective), dual_bound=float_down(bound), report=report,
                repair=lam, notes=tuple(notes), exact_objective=objective)


def solve_mixing(prob: SymmetricProblem, gamma: float, coefficient: str, max_repair: float) -> dict:
    """The least-loss K with Dobrushin or Doeblin coefficient <= gamma for an invariant problem (closed form in
    :func:`best_keep_for_coefficient`), certified by chainamp's own coefficient."""
    g = Fraction(gamma)
    a_star = best_keep_for_coefficient(prob, g, coefficient)
    bound = loss_of(prob, a_star)
    measure = dobrushin if coefficient == "dobrushin" else doeblin

    def certify(a: float):
        value = measure(channel(prob, a)).gamma
        return value if value <= gamma else None

    a, lam, certified = repair(float(a_star), certify, max_repair,
                               f"chainamp's {coefficient} coefficient of the symmetric K exceeds gamma = {gamma:g}",
                               mix=_mix_keep(prob.k))
    K = channel(prob, a)
    objective = loss_of(prob, pipeline_report_probability(prob, K))
    notes = [f"symmetric design: the loss and prior do not change when the {prob.k} values are relabelled, so an "
             "optimal K has the form a I + b (J - I) (average any optimum over the relabellings); closed form, no LP"]
    if lam > 0.0:
        notes.append(f"K's parameter was mixed with weight lam = {lam:.3g} of the uniform channel so that chainamp's "
                     f"{coefficient} coefficient is <= gamma")
    return dict(K=K, objective=float(objective), dual_bound=float_down(bound),
                certified=float(certified), repair=lam, notes=tuple(notes))
