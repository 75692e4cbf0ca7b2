"""Independent composition of many reports: :func:`compose`, a certified privacy profile of T
mechanisms run on the same data with fresh randomness, through dp-accounting's privacy loss
distributions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import reduce
from typing import Any

import numpy as np

from .._numerics import (PLD_DISCRETIZATION, PLD_TAIL_MASS, UNIT_ROUNDOFF, check_int, check_memory, check_positive,
                         check_progress, memory_limit, progress_bar, progress_scope)
from ..amplification import AmplificationReport
from ..errors import InvalidParameterError
from ..operators import MarkovOperator
from ..privacy import DP, DominatingPair, PrivacyProfile, dp_points_of, privacy_profile
from .pld import (PLD_FFT_BYTES, PLD_POINT_BYTES, PLDProfile, _directions, grid_extent, pair_to_pld,
                  self_compose_bytes)

__all__ = ["compose"]

#: the constant of the FFT error model in :func:`compose` (Higham 2002, Thm 24.2 gives about 5 per level)
_FFT_ERROR_FACTOR = 16.0


def _fft_error(length: int, powers: int, norm2: float = 1.0) -> float:
    """2-norm bound on the error of the masses after a convolution of ``powers`` sub-probability vectors by
    an FFT of ``length`` points (``norm2``: the 2-norm of the vector raised to a power, else 1).

    The computed FFT of ``x`` is within ``a ||F x||_2`` of the exact one, ``a = 5 u log2 N`` (Higham,
    *Accuracy and Stability of Numerical Algorithms*, 2002, Thm 24.2), and ``||F x||_2 = sqrt(N) ||x||_2``;
    every coefficient has modulus at most ``||x||_1 <= 1``, so the T-th power (or a product) of the
    coefficients is within ``(T + 1)(a + u) sqrt(N) ||x||_2``; the inverse transform adds ``a`` of its
    size and divides by ``N``: the masses are within ``(T + 2)(a + u) ||x||_2`` in the 2-norm. Later
    convolutions with sub-probability vectors do not increase a 2-norm error (Young's inequality),
    so the bounds of successive operations add up. The factor 16 instead of 5 is a safety margin.
    """
    n = max(int(length), 2)
    return _FFT_ERROR_FACTOR * UNIT_ROUNDOFF * (powers + 2) * math.log2(n) * float(norm2)


def _item_profile(item: Any, index: int) -> PrivacyProfile | DominatingPair:
    """The privacy profile (or dominating pair) standing for one item of :func:`compose`."""
    if isinstance(item, (PrivacyProfile, DominatingPair)):
        return item
    if isinstance(item, DP):
        return item.profile
    if isinstance(item, AmplificationReport):
        for src in item.sources:  # a finite M: the exact source's own dominating pair (its curve bounds the
            make = getattr(src, "dominating_pair", None)  # certified profile of K o M), no envelope sampled
            if src.name == "exact" and callable(make):
                pair = make()
                p, q = np.asarray(pair.p), np.asarray(pair.q)
                if not np.any((p > 0) != (q > 0)):  # (a one-sided outcome, from rounding at the ends of the
                    return pair  # ROC chain, would cost the composition its pure level: the envelope keeps it)

        def envelope(e: float) -> float:  # delta(inf) <= delta(700): sound for the limit
            return item.delta_at(min(e, 700.0))

        return PrivacyProfile.from_callable(envelope, name=f"amplified {item.mechanism.description}",
                                            source="certified envelope of an AmplificationReport")
    if isinstance(getattr(item, "profile", None), PrivacyProfile) and hasattr(item, "epsilon_at"):
        return item.profile  # a report of a higher layer carrying its certified profile (chainamp.ShuffleReport)
    if isinstance(item, (MarkovOperator, np.ndarray)) or type(item).__module__.startswith("scipy.sparse"):
        return privacy_profile(item)
    points = dp_points_of(item, f"items[{index}]")  # a list of DP; refuses 2-number rows (points or a matrix?)
    if points is not None:  # M satisfies each point, as amplify reads a list of DP
        return PrivacyProfile.from_points(points)
    if isinstance(item, (list, tuple)) and item and all(isinstance(r, (list, tuple, np.ndarray)) for r in item):
        return privacy_profile(np.asarray(item, dtype=float))  # rows of another length: only a matrix
    raise TypeError(f"items[{index}] must be a PrivacyProfile, an AmplificationReport, a DP point, a list of DP "
                    f"points or a finite mechanism (MarkovOperator or row-stochastic matrix), got "
                    f"{type(item).__name__} {item!r:.60}")


def _no_finite_loss(pair: DominatingPair) -> bool:
    """Whether one direction of the pair has all its mass at infinite privacy loss (no outcome with both
    p > 0 and q > 0): then delta(eps) = 1 for every eps."""
    return not np.any((np.asarray(pair.p) > 0) & (np.asarray(pair.q) > 0))


def _item_name(prof: Any) -> str:
    return str(getattr(prof, "name", type(prof).__name__))


def compose(items: Iterable[Any], counts: Iterable[int] | None = None, *,
            value_discretization_interval: float = PLD_DISCRETIZATION,
            pld_tail_mass: float = PLD_TAIL_MASS, progress: bool | None = None) -> PLDProfile:
    """Certified privacy profile of the independent composition of ``items``, item i run ``counts[i]`` times.

    Each item is a :class:`~chainamp.privacy.PrivacyProfile`, an
    :class:`~chainamp.amplification.AmplificationReport` (its certified envelope ``delta_at``), a
    :class:`~chainamp.privacy.DP` point, a list of ``DP`` points (M meets each: :meth:`PrivacyProfile.from_points`) or a finite mechanism (a ``MarkovOperator`` or a row-stochastic
    matrix, all inputs neighbours: pass ``privacy_profile(M, neighbors)`` for another relation), or a
    :class:`~chainamp.privacy.DominatingPair` itself.
    ``counts`` defaults to one of each; a count of 0 drops the item.

    Method. Each item's profile gives a dominating pair ``(P_i, Q_i)``
    (``PrivacyProfile.dominating_pair``): ``H_{e^eps}(M(D) || M(D')) <= H_{e^eps}(P_i || Q_i)`` for every
    real eps and both orders of every neighbouring pair. Then the product pair dominates the
    composition, adaptive composition included (Zhu, Dong and Wang 2022, Thm 10):
    ``delta(eps) <= H_{e^eps}(prod_i P_i^{n_i} || prod_i Q_i^{n_i})``. That divergence is the
    hockey-stick functional of the convolution of the pairs' privacy loss distributions, which
    dp-accounting computes: each pair is put on the loss grid of step ``value_discretization_interval``
    by the pessimistic connect-the-dots split of :func:`~chainamp.accounting.pair_to_pld`, repeated
    by ``self_compose``, combined by ``compose``, with ``pessimistic_estimate=True`` throughout (the
    tails cut, at most ``pld_tail_mass`` per operation, go to the mass at infinite loss). Both
    directions ``P || Q`` and ``Q || P`` are composed (dp-accounting's REMOVE and ADD distributions,
    or one when the pair is symmetric) and the larger is reported: one direction would do for a
    pair that covers both orders, the other costs little and keeps the result a symmetric profile
    (``delta`` at eps >= 0 for both orders, which fixes it at negative eps too).

    Certification. The returned :class:`~chainamp.accounting.PLDProfile` adds a bound on the FFT
    rounding (``_fft_error``: a 2-norm bound ``s`` on the error of the composed masses, which moves
    delta(eps) by at most ``s sqrt(n)`` for the n grid points above eps: about 5e-9 for T = 1000
    reports of the longitudinal GRR chain), rounds
    its evaluation up, and searches ``epsilon(delta)`` with chainamp's rounded-up bracketing; it is
    exactly 0 from the sum of the items' largest grid losses on when no item has mass at infinite
    loss. Nothing optimistic is added, so ``delta``/``epsilon`` are upper bounds.

    ``progress`` (``None``: a tqdm bar over the items and the final composition, shown when it runs
    longer than two seconds; ``True`` at once; ``False`` never).

    Examples
    --------
    >>> prof = compose([DP(1.0)], counts=[2])          # two pure 1-DP releases: 2-DP
    >>> prof.delta(2.0 + 2e-3)
    0.0
    >>> round(prof.epsilon(1e-6), 2)
    2.0
    """
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(f"items must be a list of items to compose, got {type(items).__name__}")
    items = list(items)
    if not items:
        raise InvalidParameterError("items must not be empty")
    if counts is None:
        reps = [1] * len(items)
    else:
        if isinstance(counts, (str, bytes)) or not isinstance(counts, Iterable):
            raise TypeError(f"counts must be a list of integers, got {type(counts).__name__}")
        reps = [check_int(c, f"counts[{i}]", minimum=0) for i, c in enumerate(counts)]
        if len(reps) != len(items):
            raise InvalidParameterError(f"counts must have one entry per item ({len(items)}), got {len(reps)}")
        if sum(reps) == 0:
            raise InvalidParameterError(f"counts must include a positive count (got {reps})")
    d = check_positive(value_discretization_interval, "value_discretization_interval")
    tail = check_positive(pld_tail_mass, "pld_tail_mass", strict=False)
    progress = check_progress(progress)
    with progress_bar(sum(n > 0 for n in reps) + 1, "compose", unit="item", progress=progress) as bar, \
            progress_scope(progress):
        return _compose(items, reps, d, tail, bar)


def _compose(items: list, reps: list, d: float, tail: float, bar: Any) -> PLDProfile:
    """The body of :func:`compose` on checked arguments; ``bar.update(1)`` after each item and at the end."""
    profiles = [_item_profile(it, i) for i, it in enumerate(items)]

    parts, slack, any_inf, top, size = [], 0.0, False, 0, 1
    names = []
    dirs: dict = {}  # each part's directions, read once (by id: the parts stay alive here)
    for prof, n in zip(profiles, reps):
        if n == 0:
            continue
        pair = prof if isinstance(prof, DominatingPair) else prof.dominating_pair()
        if _no_finite_loss(pair):  # P and Q disjoint: delta = 1 at every eps, and so for the composition
            return PrivacyProfile.from_callable(
                lambda e: 1.0, name="composition of " + ", ".join(_item_name(q) for q in profiles),
                source=f"items[{profiles.index(prof)}] has disjoint output distributions: delta = 1 at every eps")
        pld = pair_to_pld(pair.p, pair.q, value_discretization_interval=d)
        lo, hi, has_inf, width, norm2 = grid_extent(pld)
        if n > 1:
            # the untruncated size first (no Chernoff bounds to compute): only past the limit the exact estimate
            if self_compose_bytes(pld, n, tail, truncated=False)[0] > memory_limit():
                need, _ = self_compose_bytes(pld, n, tail)
                check_memory(need, f"items[{profiles.index(prof)}] composed {n} times (dp-accounting's FFT over "
                                   f"the loss grid of step {d:g})",
                             hint="pass a larger value_discretization_interval= or fewer counts")
            pld = pld.self_compose(n, tail_mass_truncation=tail)
        dirs[id(pld)] = read = _directions(pld)
        points = grid_extent(pld, read)[3]
        if n > 1:
            slack += _fft_error(2 * max(n * width, points), n, norm2)
        if parts:
            size += points
            slack += _fft_error(2 * size, 2)
        else:
            size = points
        parts.append(pld)
        any_inf |= has_inf
        top += n * hi
        label = getattr(prof, "name", None) or "dominating pair"
        names.append(label if n == 1 else f"{n} x {label}")
        bar.update(1)
    if len(parts) > 1:  # each step an FFT convolution over the sum of the grids so far (scipy.signal)
        check_memory((PLD_FFT_BYTES + PLD_POINT_BYTES) * 2.0 * size, f"the composition of {len(parts)} items "
                     f"(FFT convolutions over up to {size} grid points of step {d:g})",
                     hint="pass a larger value_discretization_interval=")
    total = reduce(lambda a, b: a.compose(b, tail_mass_truncation=tail), parts)
    bar.update(1)
    pure = math.inf if any_inf else max(0.0, math.nextafter(top * d * (1.0 + 4.0 * UNIT_ROUNDOFF), math.inf))
    label = names[0] if len(names) == 1 else f"composition of {len(names)} items ({'; '.join(names)})"
    return PLDProfile(total, name=f"composition: {label}" if len(names) == 1 else label,
                      source=f"dp-accounting PLD composition of dominating pairs (grid {d:g}, connect-the-dots)",
                      slack=slack, pure_epsilon=pure, _dirs=dirs.get(id(total)) if len(parts) == 1 else None)
