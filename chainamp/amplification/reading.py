"""How an :class:`~chainamp.amplification.AmplificationReport` reads: the headline sentence, each
source's curve next to the input's own profile, and the status of a source that does not apply.

Presentation only: nothing here changes a certified number; the report's ``best`` and its
envelope (``delta_at``, ``epsilon_at``) already take the minimum over every source.

*No better than the input.* Post-processing never hurts (Dwork and Roth 2014, Proposition 2.1;
for profiles, Balle et al. 2019 §2): K o M satisfies every ``(eps', delta_M(eps'))`` that M
satisfies. So at each eps' a source's ``delta'`` is compared with ``delta_M(eps')`` -- the
canonical profile of a black-box ``DP(eps, delta)`` input (``delta_M(eps') = [1 - e^(eps' - eps)
(1 - delta)]_+`` below eps, the profile of its canonical pair, Kairouz, Oh and Viswanath 2015),
the upper envelope of a list of points, the given profile, or the exact profile of a finite M.
Where the source's ``delta'`` exceeds it, M's own value is the better certificate: the report
says so ("no better than M here"), the plot draws the source clipped to M's profile and faded
there, and ``to_dict`` lists those eps' ranges per source.

*Rounding level.* A ``delta'`` in ``(0, DISPLAY_ZERO_ATOL]`` (at most 1e-3 of a positive target)
prints as "≈ 0" and is drawn as 0; a "vs exact" gap within the resolution of the epsilon searches
(``2 (BISECTION_RTOL eps + BISECTION_ATOL)``: both ends are upper ends of brackets of that width)
prints as "≈ 0".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._numerics import BISECTION_ATOL, BISECTION_RTOL, DISPLAY_ZERO_ATOL, fmt_number

__all__: list[str] = []

#: Number of eps' points of the default grid on which curves are drawn and compared with M.
GRID_POINTS = 81

NO_BETTER = "no better than M here"
ABSENT = "does not apply (see below)"
ABOVE_TARGET = "delta' above the target"
ABOVE_TARGET_KEY = ("delta' above the target: the source certifies no delta' at or below the target at any "
                    "epsilon'; its row is the (epsilon', delta') pair it does certify, shown for comparison and "
                    "not used for the best bound at the target.")
VS_EXACT_KEY = ("vs exact: the source's epsilon' minus the exact epsilon' of the finite pipeline M K at the "
                "same delta' (0 = the bound is tight for this pipeline; \u2248 0 = within the search and "
                "rounding resolution).")
NO_BETTER_KEY = ("no better than M here: the source's delta' at that epsilon' is not below M's own "
                 "delta_M(epsilon'); post-processing never hurts, so M's own guarantee is the better "
                 "certificate there (the best bound already takes it into account).")


def zero_level(target_delta: float, display_zero_atol: float = DISPLAY_ZERO_ATOL) -> float:
    """The largest delta' shown as "≈ 0": ``display_zero_atol``, at most 1e-3 of a positive target."""
    return min(display_zero_atol, 1e-3 * target_delta) if target_delta > 0 else display_zero_atol


def fmt_delta(delta, level: float) -> str:
    """``fmt_number`` with a delta' at rounding level (``0 < delta' <= level``) written "≈ 0"."""
    if delta is not None and not isinstance(delta, str) and 0.0 < float(delta) <= level:
        return "\u2248 0"
    return fmt_number(delta)


def gap_is_noise(gap: float, epsilon: float) -> bool:
    """True when an epsilon' difference is within the resolution of the epsilon searches."""
    return math.isfinite(gap) and abs(gap) <= 2.0 * (BISECTION_RTOL * abs(epsilon) + BISECTION_ATOL)


def fmt_gap(gap, epsilon: float) -> str:
    if gap is None:
        return fmt_number(None)
    return "\u2248 0" if gap_is_noise(gap, epsilon) else fmt_number(gap)


def input_deltas(report, epsilons: np.ndarray) -> np.ndarray:
    """M's own ``delta_M(eps')`` (capped at 1) at each eps' of ``epsilons``."""
    eps = np.asarray(epsilons, dtype=float)
    return np.minimum(np.asarray(report.mechanism.profile.delta(eps), dtype=float).reshape(eps.shape), 1.0)


@dataclass(frozen=True, eq=False)
class Curve:
    """One source's certified ``delta'(eps')`` on a grid, next to the input's own ``delta_M(eps')``.

    ``deltas`` is NaN where the source certifies nothing; ``steps`` is True for a finite set of
    certified pairs (drawn as steps). ``no_better`` marks the eps' where ``delta' > delta_M(eps')``.
    """

    name: str
    epsilons: np.ndarray
    deltas: np.ndarray
    input_deltas: np.ndarray
    steps: bool

    @property
    def no_better(self) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.isfinite(self.deltas) & (self.deltas > self.input_deltas)

    @property
    def shown(self) -> np.ndarray:
        """The curve as drawn: clipped to the input's profile where it is no better."""
        return np.where(self.no_better, self.input_deltas, self.deltas)

    @property
    def no_better_ranges(self) -> tuple:
        """``((lo, hi), ...)``: the runs of grid points where the source is no better than M."""
        return runs(self.epsilons, self.no_better)


def runs(epsilons: np.ndarray, mask: np.ndarray) -> tuple:
    """The maximal runs of consecutive True entries of ``mask``, as ``(eps_first, eps_last)``."""
    out, start = [], None
    for i, flag in enumerate(mask):
        if flag and start is None:
            start = i
        if start is not None and (not flag or i == len(mask) - 1):
            end = i if flag else i - 1
            out.append((float(epsilons[start]), float(epsilons[end])))
            start = None
    return tuple(out)


#: The default grid ends at most this many times past the best eps' (at least 1): an input whose eps is
#: far larger (1e4, 1e308) would otherwise stretch the axis, or overflow it, past every curve's shape.
GRID_SPAN_OF_BEST = 20.0


def default_grid(report, points: int = GRID_POINTS) -> np.ndarray:
    """eps' from 0 to a little past the input's pure-DP level (or ``eps_M`` at a tiny delta; at most
    :data:`GRID_SPAN_OF_BEST` times the best eps' or 1, whichever is larger), plus the
    table's eps' and the eps' at which each curve reaches 0 (so that curves pass through those numbers)."""
    prof = report.mechanism.profile
    top = prof.pure_epsilon
    if not math.isfinite(top):
        top = prof.epsilon(max(min(report.target_delta, 1e-3) * 1e-3, 1e-12))
    if not math.isfinite(top) or top <= 0:
        top = max(report.best.epsilon, 1.0) if math.isfinite(report.best.epsilon) else 1.0
    if math.isfinite(report.best.epsilon):
        # a huge input eps (1e4, 1e308) after a K that bounds it: the figure shows where K o M lives
        top = min(top, GRID_SPAN_OF_BEST * max(report.best.epsilon, 1.0))
    grid = np.linspace(0.0, 1.1 * top, points)
    extra = [b.epsilon for b in (*report.bounds, report.best)]
    extra.append(prof.pure_epsilon)
    for src in report.sources:
        b = src.bound_at_delta(0.0)
        if b is not None and b.delta == 0:
            extra.append(b.epsilon)
    extra = [e for e in extra if math.isfinite(e) and 0.0 <= e <= grid[-1]]
    return np.unique(np.concatenate([grid, extra]))


def source_curve(report, source, grid: np.ndarray) -> Curve:
    """A source on ``grid``; a finite pair source adds its corners, so that its steps are exact."""
    pairs = getattr(source, "bounds", None)
    eps = grid
    if pairs is not None:
        corners = [b.epsilon for b in pairs if math.isfinite(b.epsilon) and grid[0] <= b.epsilon <= grid[-1]]
        eps = np.unique(np.concatenate([grid, corners]))
    delta = np.empty(eps.size)
    for i, e in enumerate(eps):
        b = source.bound_at_epsilon(float(e))
        delta[i] = math.nan if b is None else min(b.delta, 1.0)
    return Curve(source.name, eps, delta, input_deltas(report, eps), pairs is not None)


def row_no_better(report, bound) -> bool:
    """A table row certifies nothing M does not: ``delta' >= delta_M(eps')`` at its own eps'."""
    if not math.isfinite(bound.epsilon):
        return False
    return bound.delta >= float(input_deltas(report, np.array([bound.epsilon]))[0])


def absent_reason(report, source) -> str:
    """Why a source has no row in the report's table."""
    t = fmt_number(report.target_delta)
    b = source.bound_at_delta(report.target_delta)
    if b is None:
        if source.name == "ldp":
            return (f"K is not (epsilon', delta')-LDP with delta' <= {t} at any finite epsilon' "
                    "(rows of K with different supports)")
        return f"it certifies no delta' <= {t} at any finite epsilon'"
    if source.name == "theorem1.doeblin":
        g = report.coefficients.doeblin_gamma
        return (f"at delta' <= {t} it only restates M's own guarantee (gamma_Doeblin = "
                f"{fmt_number(g)} is too large for Theorem 1(3) to lower delta; see the condition after "
                "Theorem 1)")
    return f"at delta' <= {t} it only restates M's own guarantee"


def _pipeline(report) -> str:
    n, m = report.operator.shape
    return f"M = {report.mechanism.description} followed by K ({n}x{m})"


def _pair(b) -> str:
    return f"({fmt_number(b.epsilon)}, {fmt_number(b.delta)})-DP"


def _cite(reference: str) -> str:
    """A bound's reference as the object of "from": "Theorem 1(2) of ...", "the exact privacy profile ..."."""
    return reference if reference.startswith("Theorem") else f"the {reference}"


def headline(report) -> str:
    """One plain sentence: what is certified, for which pipeline, from which theorem, how far from the
    exact value (finite M) or from the worst case over every M with the input's guarantee (black box)."""
    b, t = report.best, fmt_number(report.target_delta)
    if not math.isfinite(b.epsilon):
        return (f"Nothing is certified at delta' <= {t} for {_pipeline(report)}: no bound reaches that delta', "
                "and M's own guarantee still holds (post-processing never hurts).")
    head = f"Certified: {_pipeline(report)} is {_pair(b)}, from {_cite(b.reference)}"
    exact = report.exact
    if exact is not None:
        gap = b.epsilon - exact.epsilon
        if b.source == "exact" or gap_is_noise(gap, exact.epsilon):
            general = [x for x in report.bounds if x.source != "exact" and x.delta <= report.target_delta]
            if not general:
                return head + "; this is the exact value of the pipeline, and no general bound reaches it."
            g = min(general, key=lambda x: x.epsilon)
            how = ("matches it" if gap_is_noise(g.epsilon - exact.epsilon, exact.epsilon) else
                   f"gives epsilon' = {fmt_number(g.epsilon)}, {fmt_number(g.epsilon - exact.epsilon)} above it")
            return head + f"; this is the exact value of the pipeline, and the best general bound ({g.reference}) {how}."
        return head + f"; the exact value of the pipeline is {fmt_number(exact.epsilon)}, {fmt_number(gap)} below."
    worst = report.source_epsilon("tight")
    attained = report.mechanism.kind == "dp" or (report.mechanism.kind in ("profile", "points")
                                                 and report.mechanism.profile.exact)
    if attained and (b.source == "tight" or gap_is_noise(b.epsilon - worst, worst)):
        return head + "; this is the worst case over every M with that guarantee, so no black-box analysis can " \
                      "certify less."
    if attained:
        return head + (f"; the worst case over every M with that guarantee is {fmt_number(worst)}, "
                       f"{fmt_number(b.epsilon - worst)} below.")
    return head + (f"; the worst case over every M with that guarantee is at most this (the tight bound, "
                   f"{fmt_number(worst)}, is an upper bound of it for this input).")
