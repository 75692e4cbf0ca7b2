"""Certified (epsilon', delta') for K o M: every applicable bound, the tightest one, and evidence.

:func:`amplify` turns an input mechanism M (a black-box ``DP`` point, a list of
points, a :class:`~chainamp.profiles.PrivacyProfile`, or a finite mechanism
given as a :class:`~chainamp.operators.MarkovOperator`) and a post-processing
operator K into an :class:`AmplificationReport`. Each *source* of guarantees is
a family of valid ``(eps', delta')`` pairs:

``theorem1.dobrushin`` / ``theorem1.hockey_stick`` / ``theorem1.doeblin`` / ``theorem1.ultra_mixing``
    Theorem 1(1)-(4) of Balle et al. 2019 at every point of the input's profile.
``ldp``
    K's own local-DP guarantee (K is (eps, gamma_K(eps))-LDP), valid for any M.
``tight``
    Theorem 1(2) along the whole input profile: ``alpha D_{1+(e^eps'-1)/alpha}``-Dobrushin
    of K times ``alpha = delta_M(eps')``; the worst case over all mechanisms
    with that profile; attained by the canonical pair for a single (eps, delta) point and for
    exact profiles (tested by brute force), a list of points included: it describes the
    intersection of the points' regions, whose exact profile is that of a finite dominating pair.
``exact``
    For a finite M: the exact profile of the matrix ``M K``.

The report's ``delta_at`` / ``epsilon_at`` take the lower envelope over all
sources. An operator passed in is taken as exact (every coefficient is a bound
for the matrix as stored); products chainamp forms itself (a list of operators,
the steps of :func:`chainamp.amplify_steps`, the pipeline matrix ``M K``) carry
their rounding and underflow error into every coefficient (see
:mod:`chainamp.operators.products` and ``Adjust`` in :mod:`.inputs`). Every number
is rounded toward the safe side; a search over epsilon returns the upper end of a
bracket at which the bound was *evaluated* and found to hold, so it is certified
even where a curve is not monotone.

The searches of ``tight`` and ``theorem1.hockey_stick`` are guided: a step whose delta' exceeds the target
already with a certified LOWER bound of K's coefficient (the pairs that attained earlier coefficients,
evaluated exactly at the new order) is refuted without a scan, and the steps left open are certified once
at the end of the bracket (:class:`.sources.CurveSource`, ``guided=True``).

The input side lives in :mod:`.inputs`, the bound sources in :mod:`.sources` and the report in
:mod:`.report`; ``amplify_operator`` (amplify for an already normalised input) is shared with
:mod:`.steps`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._numerics import (SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_executor, check_progress, fmt_number,
                        scaled_by_exp)
from .bounds import (BOUND_SOURCES, Bound, doeblin_amplifies_delta, doeblin_frontier, hockey_stick_order, ldp_bound,
                     theorem1_dobrushin, theorem1_doeblin, theorem1_hockey_stick, theorem1_ultra_mixing)
from ..errors import InvalidMechanismError
from ..mixing import dobrushin, dobrushin_curve, doeblin, ldp_guarantee, ultra_mixing
from ..operators import EXACT, MarkovOperator, multiply, operator_error, ProductError, StructuredOperator
from ..privacy import DP, ExactProfile, privacy_profile  # noqa: F401 (DP: the doctest of amplify)
from .inputs import (Adjust, InputMechanism, as_input_mechanism, compose_with_error, normalised_profile,
                     reachable_inputs)
from .report import AmplificationReport, Coefficients
from .sources import CurveSource, PairSource, first_finite, profile_points, target_delta_for

__all__ = ["amplify"]

_FRONTIER_POINTS = 9
#: Pairs of inputs that attained a coefficient of K, kept to refute bisection steps of the tight bound cheaply.
_WITNESSES = 4
#: Witness rows are kept (densely) only for operators with at most this many outputs.
_WITNESS_MAX_OUTPUTS = 2**22
#: The guided search (see the module docstring) is used when a coefficient of K costs a pair scan, i.e.
#: ``n^2 m`` above this (and K is not structured); otherwise coefficients are one exact pass (or per orbit)
#: and the plain bisection is kept as it is.
_GUIDED_MIN_WORK = 2**16


def _pairs_lower(witnesses, order: float) -> float:
    """A certified LOWER bound of ``max_{x != x'} D_{e^order}(K_x || K_x')`` for the stored K from the pairs
    ``witnesses`` (rows p, q): ``val = sum_y [p_y - c q_y]_+`` with ``c q`` from ``scaled_by_exp`` (relative
    error <= 6u, plus ``2**-1074`` where it underflows) is within ``8u p_y + 2**-1074`` of each exact term where
    the term is or may be active (exactly 0 elsewhere), and the sum adds ``(m - 1) u``; so the exact value is
    at least ``val (1 - (m + 8) u) - 16 u sum(p) - m 2**-1074``, pushed one float down. 0 at ``order = inf``
    (only used to refute a step, where 0 decides nothing)."""
    if not witnesses or not math.isfinite(order) or order > 1400.0:  # (e^order beyond the floats: decides nothing)
        return 0.0
    best = 0.0
    for p, q, _ in witnesses:
        m = p.size
        val = float(np.maximum(p - scaled_by_exp(q, order), 0.0).sum())
        low = val * (1.0 - (m + 8) * UNIT_ROUNDOFF) - 16.0 * UNIT_ROUNDOFF * float(p.sum()) - m * SMALLEST_SUBNORMAL
        best = max(best, math.nextafter(low, -math.inf))
    return best


def amplify(mechanism: Any, K: MarkovOperator | Sequence[MarkovOperator], *, neighbors: Any = None,
            delta: float | None = None, inputs: Iterable | None = None, progress: bool | None = None,
            executor: Any = None) -> AmplificationReport:
    """Certify (epsilon', delta') for K o M with every applicable bound.

    Parameters
    ----------
    mechanism :
        ``DP(eps, delta)`` or an ``(eps, delta)`` tuple; a list of ``DP`` (M satisfies
        each); a :class:`PrivacyProfile`; or a finite mechanism as a
        :class:`MarkovOperator` (or a 2-D numpy array) from data values to K's inputs.
    K : MarkovOperator or list of MarkovOperator
        The post-processing, applied in order (``K1`` first). Each operator may also be a
        numpy array, a scipy.sparse matrix or nested lists of numbers, checked as
        ``MarkovOperator(K)`` does (a list of rows of numbers is one matrix).
    neighbors : networkx.Graph or list of pairs, optional
        Neighbouring data values of a finite M (default: all pairs, i.e. local DP).
    delta : float, optional
        The delta' at which ``bounds`` and ``best`` are reported. Default: the
        input's delta (the smallest one for a list); 0 for a finite M or a
        profile whose own profile has a pure-DP level; required otherwise (an
        InvalidMechanismError asks for it).
    inputs : iterable of labels, optional
        The inputs of K that M can produce (Theorem 1 only needs the conditions
        on those). Default: all of K's inputs, or the support of a finite M.
    progress : bool, optional
        Progress bars of the long computations (pair scans of K, exact profiles): None shows one
        after 2 s, True at once, False never.
    executor : concurrent.futures.Executor, optional
        Runs the blocks of those pair scans (any Executor, e.g. a ``ProcessPoolExecutor`` or a dask
        client's ``get_executor()``); results and witnesses are identical to the serial ones.

    Returns
    -------
    AmplificationReport

    Examples
    --------
    >>> from chainamp import mechanisms
    >>> K = mechanisms.randomized_response(5, 1.0)
    >>> r = amplify(DP(2.0), K)
    >>> round(r.source_epsilon("theorem1.ultra_mixing"), 3), round(r.source_epsilon("tight"), 3)
    (1.617, 0.735)
    >>> round(amplify(mechanisms.randomized_response(5, 2.0), K).best.epsilon, 3)
    0.608
    """
    mech = as_input_mechanism(mechanism, neighbors)
    Kop, err = compose_with_error(K)
    return amplify_operator(mech, Kop, err, delta=delta, inputs=inputs, progress=progress, executor=executor)


def amplify_operator(mech: InputMechanism, Kop: MarkovOperator, err: ProductError, *, delta=None,
                      inputs=None, progress=None, executor=None) -> AmplificationReport:
    """:func:`amplify` for a normalised input and an operator whose rounding error is ``err``."""
    progress, executor = check_progress(progress), check_executor(executor)
    run = {"progress": progress, "executor": executor}
    profile = mech.profile
    if isinstance(profile, ExactProfile) and (progress is not None or executor is not None):
        profile = profile.using(**run)
    err_m = EXACT
    invert = None  # how profile_points inverts the input profile
    if mech.kind == "finite":
        err_m = operator_error(mech.matrix)
        raw_profile, adj_m = profile, Adjust(err_m, mech.matrix.shape[1])
        profile = normalised_profile(profile, adj_m)
        if not adj_m.exact:  # the widened profile's own inversion evaluates it point by point
            def invert(d: float) -> float:
                return adj_m.epsilon_bracket(raw_profile.epsilon, d)
    target = target_delta_for(mech, profile, delta)
    used = reachable_inputs(mech, Kop, inputs)
    if not used:
        raise InvalidMechanismError("M puts no mass on any input of K")
    Kr = Kop.restrict(used) if used != Kop.inputs else Kop
    adj = Adjust(err, Kr.shape[1])

    dob, doe, ult = dobrushin(Kr, **run), doeblin(Kr), ultra_mixing(Kr)
    ldp = ldp_guarantee(Kr, **run)
    g_tv, g_doe, g_ult = adj.tv(dob.gamma), adj.doeblin(doe.gamma), adj.ultra(ult.gamma)
    coeffs = Coefficients(dob, doe, ult, adj.pure_epsilon(ldp.epsilon), Kr.shape[0], g_tv, g_doe, g_ult, err)
    raw_cache: dict[float, float] = {}
    witnesses: list[tuple[np.ndarray, np.ndarray]] = []  # rows of pairs that attained a coefficient

    def remember(res) -> None:
        if isinstance(Kr, StructuredOperator) or Kr.shape[1] > _WITNESS_MAX_OUTPUTS:  # (structured: exact per
            return  # orbit already, and a dense row may not even fit in memory)
        if res.pair is not None and len(witnesses) < _WITNESSES and not any(w[2] == res.pair for w in witnesses):
            rows = [np.asarray(Kr.row(x), dtype=float) for x in res.pair]
            witnesses.append((rows[0], rows[1], res.pair))

    remember(dob)

    def raw_at(order: float) -> float:
        if order not in raw_cache:
            if isinstance(Kr, StructuredOperator):  # its gamma alone (no witness rows are kept for it)
                raw_cache[order] = float(dobrushin_curve(Kr, [order], **run)[0])
            else:
                res = dobrushin(Kr, epsilon=order, **run)
                raw_cache[order] = res.gamma
                remember(res)
        return raw_cache[order]

    def dob_at(order: float) -> float:
        return adj.hockey(raw_at, order)

    notes: list[str] = []
    sources: list = []

    # ---- Theorem 1 at the input's points
    if mech.kind in ("dp", "points"):
        points = [(p.epsilon, p.delta) for p in mech.points]
    else:
        points = profile_points(profile, target, [g_tv, g_doe, g_ult], invert)
    # brackets for the searches below (each verified where used: any eps is sound)
    inv = profile.epsilon if invert is None else invert
    # all Theorem 1(2) orders at once: one pass over the pairs of K (dobrushin_curve)
    # a profile's Theorem 1(1)/(2) are curves (below): its points only feed the Doeblin and ultra-mixing clauses
    pointwise = mech.kind in ("dp", "points")
    orders = sorted({adj.raw_order(hockey_stick_order(e, d)) for e, d in points} - set(raw_cache)) if pointwise \
        else []
    if 0 < len(orders) <= _WITNESSES:  # one coefficient each (in ascending order: as the curve), with its pair
        for o in orders:
            raw_at(o)
    elif orders:
        raw_cache.update(zip(orders, (float(g) for g in dobrushin_curve(Kr, orders, **run))))
    t1 = {name: [] for name in BOUND_SOURCES[:4]}
    for e, d in points:
        t1["theorem1.dobrushin"].append(theorem1_dobrushin(e, d, g_tv))
        if pointwise:
            t1["theorem1.hockey_stick"].append(theorem1_hockey_stick(e, d, dob_at(hockey_stick_order(e, d))))
        t1["theorem1.doeblin"].extend(doeblin_frontier(e, d, g_doe, num=_FRONTIER_POINTS))
        t1["theorem1.ultra_mixing"].append(theorem1_ultra_mixing(e, d, g_ult))
    for name, bs in t1.items():
        sources.append(PairSource(name, bs))
    if mech.kind in ("dp", "points"):
        for p in mech.points:
            if not doeblin_amplifies_delta(p.epsilon, p.delta, g_doe):
                notes.append(f"Theorem 1(3) does not amplify delta at ({fmt_number(p.epsilon)}, "
                             f"{fmt_number(p.delta)}): gamma_Doeblin = {fmt_number(g_doe)} exceeds "
                             "delta e^eps / ((1 - delta)(e^eps - 1))")

    # ---- Theorem 1(1)/(2) along a whole profile are curves
    if mech.kind in ("profile", "finite"):
        sources[0] = CurveSource(
            "theorem1.dobrushin", lambda e: theorem1_dobrushin(e, min(profile.delta(e), 1.0), g_tv),
            upper=lambda d: inv(min(d / g_tv, 1.0)) if g_tv > 0 else 0.0,
            epsilon_for=lambda d: inv(min(d / g_tv, 1.0)) if g_tv > 0 else 0.0)

    # ---- LDP table and the tight black-box bound
    def ldp_bracket(d: float) -> float:
        return adj.epsilon_bracket(ldp.epsilon_at, d)

    sources.append(CurveSource("ldp", lambda e: ldp_bound(e, dob_at(e)), upper=ldp_bracket,
                                epsilon_for=ldp_bracket))

    def tight(e: float, name: str = "tight") -> Bound:
        alpha = min(float(profile.delta(e)), 1.0)
        order = hockey_stick_order(e, alpha)
        return theorem1_hockey_stick(e, alpha, dob_at(order), source=name, gamma_epsilon=order)

    def dob_bounds(order: float) -> tuple[float, float]:
        """Upper and lower bounds of ``dob_at(order)`` from the orders computed so far: the coefficient is
        non-increasing in its order, so the value at the nearest computed order below (above) bounds it from
        above (below); 1 and 0 when there is none."""
        def below(o: float) -> float:
            known = [k for k in raw_cache if k <= o]
            return raw_cache[max(known)] if known else 1.0

        def above(o: float) -> float:
            known = [k for k in raw_cache if k >= o]
            return max(raw_cache[min(known)] if known else 0.0, _pairs_lower(witnesses, o))
        return adj.hockey(below, order), adj.hockey(above, order)

    def tight_quick(e: float, d: float, name: str = "tight"):
        """Settle a bisection step of the tight bound without a new coefficient of K when the bounds of
        ``dob_bounds`` decide it (Theorem 1(2) holds with any gamma at least K's coefficient at the order)."""
        alpha = min(float(profile.delta(e)), 1.0)
        order = hockey_stick_order(e, alpha)
        up, low = dob_bounds(order)
        held = theorem1_hockey_stick(e, alpha, up, source=name, gamma_epsilon=order)
        if held.delta <= d:
            return held
        if theorem1_hockey_stick(e, alpha, low, source=name, gamma_epsilon=order).delta > d:
            return False
        return None

    # at eps' = epsilon_M(d) the input itself has alpha <= d, so tight <= alpha <= d there
    guided = not isinstance(Kr, StructuredOperator) and Kr.shape[0] ** 2 * Kr.shape[1] > _GUIDED_MIN_WORK
    sources.append(CurveSource("tight", tight, upper=lambda d: first_finite(lambda: inv(d),
                                                                               lambda: ldp_bracket(d)),
                               quick=tight_quick, guided=guided))
    if mech.kind in ("profile", "finite"):
        sources[1] = CurveSource("theorem1.hockey_stick", lambda e: tight(e, "theorem1.hockey_stick"),
                                  upper=lambda d: inv(d),
                                  quick=lambda e, d: tight_quick(e, d, "theorem1.hockey_stick"), guided=guided)

    # ---- exact profile of the finite pipeline
    exact_bound = None
    if mech.kind == "finite":
        P, err_p = multiply(mech.matrix, err_m, Kop, err)
        exact_prof = privacy_profile(P, mech.neighbors, **run)
        adj_p = Adjust(err_p, P.shape[1])

        def exact_delta(e: float) -> float:
            return adj_p.hockey(lambda o: min(float(exact_prof.delta(o)), 1.0), e)

        def exact_bracket(d: float) -> float:
            return adj_p.epsilon_bracket(exact_prof.epsilon, d)

        exact_src = CurveSource("exact", lambda e: Bound(e, exact_delta(e), "exact"),
                                 upper=exact_bracket, epsilon_for=exact_bracket)
        if not adj_p.ma:  # a dominating pair of the exact source's curve, for compose (no envelope sampled)
            exact_src.dominating_pair = lambda: exact_prof.dominating_pair().widened(adj_p.r)
        sources.append(exact_src)
        exact_bound = exact_src.bound_at_delta(target)

    # ---- the table: each clause at the input points, and each source's best at the target delta
    listed: list[Bound] = []
    if mech.kind in ("dp", "points"):
        for name in ("theorem1.dobrushin", "theorem1.hockey_stick", "theorem1.ultra_mixing"):
            listed.extend(t1[name])
        listed.extend(theorem1_doeblin(p.epsilon, p.delta, g_doe) for p in mech.points)
    for s in sources:
        b = s.bound_at_delta(target)
        # the gamma = 1 end of the Doeblin freedom only restates an input point: not worth a row
        if b is None or b in listed:
            continue
        if b.source == "theorem1.doeblin" and b.gamma == 1.0 and g_doe < 1.0:
            continue
        listed.append(b)
    order_key = {name: i for i, name in enumerate(BOUND_SOURCES)}
    listed.sort(key=lambda b: (order_key[b.source], b.epsilon, b.delta))
    at_target = [b for b in listed if b.delta <= target]
    best = min(at_target, key=lambda b: (b.epsilon, order_key[b.source])) if at_target else \
        Bound(math.inf, target, "ldp", reference="none certified")
    return AmplificationReport(mech, Kop, target, tuple(listed), best, exact_bound, coeffs, tuple(notes),
                               tuple(sources))
