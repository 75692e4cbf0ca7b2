"""Calibration: the largest input epsilon such that K o M meets a target (epsilon, delta)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._numerics import BISECTION_ATOL, BISECTION_RTOL, check_delta, check_epsilon, check_positive, fmt_number
from .amplifier import amplify
from .report import AmplificationReport
from ..privacy import DP
from ..errors import InvalidParameterError
from ..operators import MarkovOperator

__all__ = ["calibrate", "Calibration"]


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    Attributes
    ----------
    input_epsilon : float
        The calibrated parameter: K o family(input_epsilon) is certified
        (target_epsilon, target_delta)-DP. ``inf`` when K alone already certifies
        the target for every input (its own LDP guarantee suffices).
    achieved_epsilon, achieved_delta : float
        The certified guarantee at ``input_epsilon`` (<= the target).
    report : AmplificationReport or None
        The report at ``input_epsilon`` (None when ``input_epsilon`` is 0 and nothing
        is certified, or infinite).
    evaluations : int
        Number of amplification reports computed.
    """

    input_epsilon: float
    achieved_epsilon: float
    achieved_delta: float
    target_epsilon: float
    target_delta: float
    report: AmplificationReport | None
    evaluations: int

    def __str__(self) -> str:
        return (f"largest input epsilon {fmt_number(self.input_epsilon)} gives certified "
                f"({fmt_number(self.achieved_epsilon)}, {fmt_number(self.achieved_delta)})-DP "
                f"<= target ({fmt_number(self.target_epsilon)}, {fmt_number(self.target_delta)}) "
                f"[{self.evaluations} evaluations]")


def calibrate(family: Callable[[float], Any], K: MarkovOperator | Sequence[MarkovOperator], epsilon: float,
              delta: float = 0.0, *, neighbors: Any = None, max_epsilon: float = 50.0) -> Calibration:
    """Largest input epsilon0 for which K o family(epsilon0) is certified (epsilon, delta)-DP.

    For a family whose certified epsilon' grows with epsilon0 (every catalogue family,
    black-box DP) this is the largest such epsilon0 up to the bisection tolerance; for
    any other family it is a verified point, not necessarily the largest.

    Parameters
    ----------
    family : callable
        epsilon0 -> input mechanism, e.g. ``lambda e: mechanisms.randomized_response(4, e)``
        (a finite randomizer) or ``chainamp.DP`` itself (a black-box epsilon0-DP input).
    K : operator or list of operators
    epsilon, delta : float
        The target guarantee for K o M.
    max_epsilon : float
        Search range for epsilon0.

    The certified epsilon' is found for each candidate epsilon0 with
    :meth:`AmplificationReport.epsilon_at`. A bisection over epsilon0 keeps the
    largest value *verified* to meet the target, so the result is rounded to the
    safe (smaller) side and is certified even if the family were not monotone.
    If K's own LDP guarantee already meets the target, every input works and
    ``input_epsilon = inf``.

    Examples
    --------
    >>> from chainamp import DP, mechanisms
    >>> K = mechanisms.randomized_response(4, 1.0)
    >>> c = calibrate(DP, K, epsilon=0.5)
    >>> round(c.input_epsilon, 4), c.achieved_epsilon <= 0.5
    (1.1803, True)
    """
    if not callable(family):
        raise TypeError(f"family must be a callable epsilon -> mechanism, got {type(family).__name__}")
    target_eps = check_epsilon(epsilon, "epsilon", allow_inf=False)
    target_delta = check_delta(delta, "delta")
    top = check_positive(max_epsilon, "max_epsilon")
    evaluations = 0

    def certified(e0: float) -> AmplificationReport | None:
        nonlocal evaluations
        evaluations += 1
        rep = amplify(family(e0), K, neighbors=neighbors, delta=target_delta)
        return rep if rep.epsilon_at(target_delta) <= target_eps else None

    # K's own LDP guarantee over ALL its inputs (a black-box input reaches every one; a family may reach
    # different inputs at different epsilons): if it meets the target, every input epsilon works
    black_box = amplify(DP(top), K, delta=target_delta)
    ldp = {s.name: s for s in black_box.sources}["ldp"].bound_at_delta(target_delta)
    if ldp is not None and ldp.epsilon <= target_eps:
        return Calibration(math.inf, ldp.epsilon, ldp.delta, target_eps, target_delta, None, 1)
    probe = amplify(family(top), K, neighbors=neighbors, delta=target_delta)
    evaluations += 1
    if probe.epsilon_at(target_delta) <= target_eps:
        b = probe.bound_for(target_delta)
        return Calibration(top, b.epsilon, b.delta, target_eps, target_delta, probe, evaluations)
    lo, lo_rep = 0.0, certified(0.0)
    if lo_rep is None:
        raise InvalidParameterError(
            f"no input epsilon in [0, {top:g}] certifies ({target_eps:g}, {target_delta:g}) for K o M")
    hi = top
    while hi - lo > max(BISECTION_ATOL, BISECTION_RTOL * hi):
        mid = 0.5 * (lo + hi)
        rep = certified(mid)
        if rep is None:
            hi = mid
        else:
            lo, lo_rep = mid, rep
    b = lo_rep.bound_for(target_delta)
    return Calibration(lo, b.epsilon, b.delta, target_eps, target_delta, lo_rep, evaluations)
