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

The input side lives in :mod:`.inputs`, the bound sources in :mod:`.sources` and the report in
:mod:`.report`; ``amplify_operator`` (amplify for an already normalised input) is shared with
:mod:`.steps`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from .._numerics import fmt_number
from .bounds import (BOUND_SOURCES, Bound, doeblin_amplifies_delta, doeblin_frontier, hockey_stick_order, ldp_bound,
                     theorem1_dobrushin, theorem1_doeblin, theorem1_hockey_stick, theorem1_ultra_mixing)
from ..errors import InvalidMechanismError
from ..mixing import dobrushin, dobrushin_curve, doeblin, ldp_guarantee, ultra_mixing
from ..operators import EXACT, MarkovOperator, multiply, operator_error, ProductError
from ..privacy import DP, privacy_profile  # noqa: F401 (DP: the doctest of amplify)
from .inputs import (Adjust, InputMechanism, as_input_mechanism, compose_with_error, normalised_profile,
                     reachable_inputs)
from .report import AmplificationReport, Coefficients
from .sources import CurveSource, PairSource, first_finite, profile_points, target_delta_for

__all__ = ["amplify"]

_FRONTIER_POINTS = 9


def amplify(mechanism: Any, K: MarkovOperator | Sequence[MarkovOperator], *, neighbors: Any = None,
            delta: float | None = None, inputs: Iterable | None = None) -> AmplificationReport:
    """Certify (epsilon', delta') for K o M with every applicable bound.

    Parameters
    ----------
    mechanism :
        ``DP(eps, delta)`` or an ``(eps, delta)`` tuple; a list of them (M satisfies
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
    return amplify_operator(mech, Kop, err, delta=delta, inputs=inputs)


def amplify_operator(mech: InputMechanism, Kop: MarkovOperator, err: ProductError, *, delta=None,
                      inputs=None) -> AmplificationReport:
    """:func:`amplify` for a normalised input and an operator whose rounding error is ``err``."""
    profile = mech.profile
    err_m = EXACT
    if mech.kind == "finite":
        err_m = operator_error(mech.matrix)
        profile = normalised_profile(profile, Adjust(err_m, mech.matrix.shape[1]))
    target = target_delta_for(mech, profile, delta)
    used = reachable_inputs(mech, Kop, inputs)
    if not used:
        raise InvalidMechanismError("M puts no mass on any input of K")
    Kr = Kop.restrict(used) if used != Kop.inputs else Kop
    adj = Adjust(err, Kr.shape[1])

    dob, doe, ult = dobrushin(Kr), doeblin(Kr), ultra_mixing(Kr)
    ldp = ldp_guarantee(Kr)
    g_tv, g_doe, g_ult = adj.tv(dob.gamma), adj.doeblin(doe.gamma), adj.ultra(ult.gamma)
    coeffs = Coefficients(dob, doe, ult, adj.pure_epsilon(ldp.epsilon), len(used), g_tv, g_doe, g_ult, err)
    raw_cache: dict[float, float] = {}

    def raw_at(order: float) -> float:
        if order not in raw_cache:
            raw_cache[order] = dobrushin(Kr, epsilon=order).gamma
        return raw_cache[order]

    def dob_at(order: float) -> float:
        return adj.hockey(raw_at, order)

    notes: list[str] = []
    sources: list = []

    # ---- Theorem 1 at the input's points
    if mech.kind in ("dp", "points"):
        points = [(p.epsilon, p.delta) for p in mech.points]
    else:
        points = profile_points(profile, target, [g_tv, g_doe, g_ult])
    # all Theorem 1(2) orders at once: one pass over the pairs of K (dobrushin_curve)
    orders = sorted({adj.raw_order(hockey_stick_order(e, d)) for e, d in points} - set(raw_cache))
    if orders:
        raw_cache.update(zip(orders, (float(g) for g in dobrushin_curve(Kr, orders))))
    t1 = {name: [] for name in BOUND_SOURCES[:4]}
    for e, d in points:
        t1["theorem1.dobrushin"].append(theorem1_dobrushin(e, d, g_tv))
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
            upper=lambda d: profile.epsilon(min(d / g_tv, 1.0)) if g_tv > 0 else 0.0,
            epsilon_for=lambda d: profile.epsilon(min(d / g_tv, 1.0)) if g_tv > 0 else 0.0)

    # ---- LDP table and the tight black-box bound
    def ldp_bracket(d: float) -> float:
        return adj.epsilon_bracket(ldp.epsilon_at, d)

    sources.append(CurveSource("ldp", lambda e: ldp_bound(e, dob_at(e)), upper=ldp_bracket,
                                epsilon_for=ldp_bracket))

    def tight(e: float, name: str = "tight") -> Bound:
        alpha = min(float(profile.delta(e)), 1.0)
        order = hockey_stick_order(e, alpha)
        return theorem1_hockey_stick(e, alpha, dob_at(order), source=name, gamma_epsilon=order)

    # at eps' = epsilon_M(d) the input itself has alpha <= d, so tight <= alpha <= d there
    sources.append(CurveSource("tight", tight, upper=lambda d: first_finite(lambda: profile.epsilon(d),
                                                                               lambda: ldp_bracket(d))))
    if mech.kind in ("profile", "finite"):
        sources[1] = CurveSource("theorem1.hockey_stick", lambda e: tight(e, "theorem1.hockey_stick"),
                                  upper=lambda d: profile.epsilon(d))

    # ---- exact profile of the finite pipeline
    exact_bound = None
    if mech.kind == "finite":
        P, err_p = multiply(mech.matrix, err_m, Kop, err)
        exact_prof = privacy_profile(P, mech.neighbors)
        adj_p = Adjust(err_p, P.shape[1])

        def exact_delta(e: float) -> float:
            return adj_p.hockey(lambda o: min(float(exact_prof.delta(o)), 1.0), e)

        def exact_bracket(d: float) -> float:
            return adj_p.epsilon_bracket(exact_prof.epsilon, d)

        exact_src = CurveSource("exact", lambda e: Bound(e, exact_delta(e), "exact"),
                                 upper=exact_bracket, epsilon_for=exact_bracket)
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
