"""Calibration: the largest input epsilon such that K o M meets a target (epsilon, delta)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._numerics import (BISECTION_ATOL, BISECTION_RTOL, check_delta, check_epsilon, check_executor, check_positive,
                         check_progress, executor_workers, fmt_number, map_blocks, progress_bar)
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
              delta: float = 0.0, *, neighbors: Any = None, max_epsilon: float = 50.0,
              executor: Any = None, progress: bool | None = None) -> Calibration:
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
    executor : concurrent.futures.Executor, optional
        Where the work runs (default: here). With 3 or more workers the bisection evaluates the midpoints
        of its next ``floor(log2(workers + 1))`` levels at once (speculatively; ``family`` and ``K`` must
        then be picklable by the executor), otherwise each evaluation passes the executor to
        :func:`chainamp.amplify`'s pair scans. Either way the bisection takes the same path, so the result
        is identical to the serial one (``evaluations`` counts the evaluations on that path).
    progress : bool, optional
        A progress bar over the evaluations of the search (shown after 2 s by default; ``False`` turns it and
        the bars of the inner :func:`chainamp.amplify` calls off, ``True`` shows it at once).

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
    executor = check_executor(executor)
    progress = check_progress(progress)
    with progress_bar(None, "calibrate", unit="evaluation", progress=progress) as bar:
        return _calibrate(family, K, target_eps, target_delta, top, neighbors, executor, progress, bar)


def _calibrate(family, K, target_eps: float, target_delta: float, top: float, neighbors, executor, progress,
               bar) -> Calibration:
    evaluations = 0
    # speculation depth: levels of the bisection evaluated at once (the path, hence the result, never depends on it)
    depth = max(1, int(math.log2(executor_workers(executor) + 1)))
    inner = executor if depth == 1 else None  # else each evaluation runs whole on one worker

    def report(e0: float) -> AmplificationReport:
        bar.update(1)
        return amplify(family(e0), K, neighbors=neighbors, delta=target_delta, executor=inner,
                       progress=False if progress is False else None)

    # K's own LDP guarantee over ALL its inputs (a black-box input reaches every one; a family may reach
    # different inputs at different epsilons): if it meets the target, every input epsilon works
    black_box = amplify(DP(top), K, delta=target_delta, executor=inner, progress=False if progress is False else None)
    ldp = {s.name: s for s in black_box.sources}["ldp"].bound_at_delta(target_delta)
    if ldp is not None and ldp.epsilon <= target_eps:
        return Calibration(math.inf, ldp.epsilon, ldp.delta, target_eps, target_delta, None, 1)
    probe = report(top)
    evaluations += 1
    if probe.epsilon_at(target_delta) <= target_eps:
        b = probe.bound_for(target_delta)
        return Calibration(top, b.epsilon, b.delta, target_eps, target_delta, probe, evaluations)
    lo, lo_rep = 0.0, report(0.0)
    evaluations += 1
    if lo_rep.epsilon_at(target_delta) > target_eps:
        raise InvalidParameterError(
            f"no input epsilon in [0, {top:g}] certifies ({target_eps:g}, {target_delta:g}) for K o M")
    hi = top
    while _wide(lo, hi):
        if depth == 1:
            rep = report(0.5 * (lo + hi))
            known = {0.5 * (lo + hi): rep.epsilon_at(target_delta)}
        else:  # the midpoints of the next `depth` levels, at once
            mids = _midpoints(lo, hi, depth)
            tasks = ((family, K, neighbors, target_delta, e0) for e0 in mids)
            known = dict(zip(mids, map_blocks(_certified_epsilon, tasks, executor=executor, total=len(mids),
                                              desc="calibrate", unit="epsilon", progress=False)))
            bar.update(len(mids))
            rep = None
        for _ in range(depth):
            if not _wide(lo, hi):
                break
            mid = 0.5 * (lo + hi)
            evaluations += 1
            if known[mid] <= target_eps:
                lo, lo_rep = mid, rep if depth == 1 else None
            else:
                hi = mid
    if lo_rep is None:  # found on a worker: the same deterministic report, formed here
        lo_rep = report(lo)
    b = lo_rep.bound_for(target_delta)
    return Calibration(lo, b.epsilon, b.delta, target_eps, target_delta, lo_rep, evaluations)


def _wide(lo: float, hi: float) -> bool:
    """The bisection goes on while the bracket is wider than its tolerance."""
    return hi - lo > max(BISECTION_ATOL, BISECTION_RTOL * hi)


def _midpoints(lo: float, hi: float, depth: int) -> list[float]:
    """Every midpoint the bisection can evaluate in its next ``depth`` levels from ``[lo, hi]`` (the same floats)."""
    if depth == 0 or not _wide(lo, hi):
        return []
    mid = 0.5 * (lo + hi)
    return [mid] + _midpoints(lo, mid, depth - 1) + _midpoints(mid, hi, depth - 1)


def _certified_epsilon(task: tuple) -> float:
    """One speculative evaluation (module level, so process pools can run it): the certified epsilon' at delta."""
    family, K, neighbors, delta, e0 = task
    return amplify(family(e0), K, neighbors=neighbors, delta=delta).epsilon_at(delta)
