"""The bridge to the accountants users already have: dominating pairs as dp-accounting privacy loss
distributions (PLDs), PLDs back as certified :class:`~chainamp.privacy.PrivacyProfile` objects
(:class:`PLDProfile`), and profiles as OpenDP privacy-profile measures.

A privacy loss distribution of a pair ``(P, Q)`` is the law of ``L = log P(y)/Q(y)`` under ``y ~ P``;
``H_{e^eps}(P || Q) = P[L = inf] + E[(1 - e^{eps - L})_+]`` (Sommer, Meiser and Mohammadi 2019;
Koskela, Jalko and Honkela 2020), and independent composition convolves the distributions.
dp-accounting (Google) stores losses on a grid ``j d`` and convolves them by FFT; chainamp only puts
pairs onto that grid (:func:`pair_to_pld`) and reads the result back with a floating-point error model
(:class:`PLDProfile`). dp-accounting is imported lazily (it is a core dependency, but importing
chainamp does not need it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._numerics import (DIST_SUM_ATOL, PLD_DISCRETIZATION, UNIT_ROUNDOFF, check_epsilon, check_float_array,
                         check_memory, check_positive, round_up, round_up_array)
from ..errors import InvalidDistributionError, InvalidParameterError
from ..privacy import PrivacyProfile

__all__ = ["PLDProfile", "pair_to_pld", "profile_to_pld", "profile_from_pld", "opendp_curve",
           "profile_to_opendp"]

_U = UNIT_ROUNDOFF


def _grid_split(p: np.ndarray, q: np.ndarray, d: float) -> tuple[dict[int, float], float, int, int]:
    """One direction ``P || Q`` on the grid ``j d``: ``({j: upper mass}, mass at infinite loss, lowest j,
    highest j)``; every rounding makes the pair larger (see :func:`pair_to_pld`)."""
    m = p.size
    pos = p > 0
    inf_mass = round_up(float(np.sum(p[pos & (q == 0)])), m, upper=1.0)
    both = pos & (q > 0)
    if not np.any(both):
        return {0: 0.0}, inf_mass, 0, 0
    pb, lp, lq = p[both], np.log(p[both]), np.log(q[both])
    # l_hi >= the exact log-ratio: two logs within 4 ulp each, one subtraction
    loss = (lp - lq) + 8.0 * _U * (np.abs(lp) + np.abs(lq) + 1.0)
    j = np.floor(loss / d)  # then j d < l_hi < (j + 1) d up to a rounding that only moves mass up (clipped)
    x = j * d - loss  # <= 0 up to rounding; push it down by its error so that -expm1(x) is rounded up
    x = np.minimum(x - 4.0 * _U * (np.abs(j * d) + np.abs(loss)), 0.0)
    frac = np.clip(np.expm1(x) / np.expm1(-d) * (1.0 + 8.0 * _U), 0.0, 1.0)
    up = pb * frac
    down = np.maximum(pb - up, 0.0)
    j = j.astype(np.int64)
    # the grid points the outcomes touch (at most 2m), never the whole span (690 / d points for a loss of 690):
    # the same sums as a dense bincount over the span, in the same order, so the same floats
    keys, where = np.unique(np.concatenate([j, j + 1]), return_inverse=True)
    mass = np.bincount(where[:j.size], weights=down, minlength=keys.size)
    mass += np.bincount(where[j.size:], weights=up, minlength=keys.size)
    mass *= 1.0 + (2 * m + 4) * _U  # the summations' rounding, pushed up (scaling a pair up is pessimistic)
    keep = np.flatnonzero(mass > 0)
    table = {int(keys[k]): float(mass[k]) for k in keep} or {0: 0.0}
    return table, inf_mass, min(table), max(table)


def pair_to_pld(p: Any, q: Any, *, value_discretization_interval: float = PLD_DISCRETIZATION) -> Any:
    """A pessimistic dp-accounting ``PrivacyLossDistribution`` of the pair ``(p, q)``, both directions.

    The REMOVE direction of the result is ``p || q`` and the ADD direction ``q || p`` (dp-accounting's
    ``mu_upper`` is the first argument of the hockey-stick divergence, ``sum [mu_upper - e^eps
    mu_lower]_+``); its ``get_delta_for_epsilon`` is the maximum of the two. When the two directions
    put the same masses on the same grid points (up to a relative 1e-9 of rounding) one is kept, with
    the larger mass of each point (dp-accounting's symmetric PLD, half the work).

    Discretisation (connect-the-dots, Doroshenko, Ghazi, Kamath, Kumar and Manurangsi 2022, applied
    to each outcome): an outcome with masses ``(p_y, q_y)`` and loss ``l = log(p_y/q_y)`` between grid
    points ``j d <= l <= (j + 1) d`` is split into two outcomes at those losses with upper masses
    ``p_up = p_y (1 - e^{j d - l})/(1 - e^{-d})`` and ``p_y - p_up``. The two keep both masses:
    ``(p_y - p_up) e^{-j d} + p_up e^{-(j+1) d} = p_y e^{-l} = q_y``, and merging them gives back the
    outcome, so the split pair dominates ``(p, q)`` by the data-processing inequality -- for every real
    eps and whatever ``d`` -- and, unlike rounding every loss up to ``(j + 1) d``, it does not shift the
    composed losses upward (the error is of second order in ``d``). Rounding: ``l`` is pushed up past
    the error of the logarithms (raising a loss only moves lower mass to an outcome where ``p = 0``:
    pessimistic), ``p_up`` is rounded up, and all upper masses are scaled by ``1 + (2m + 4) u`` to
    cover the summations (a scaled-up pair has a larger hockey-stick divergence). Outcomes with
    ``p_y > 0 = q_y`` go to the mass at infinite loss, those with ``p_y = 0`` contribute nothing.

    Examples
    --------
    >>> import math
    >>> pld = pair_to_pld([0.75, 0.25], [0.25, 0.75])
    >>> round(float(pld.get_delta_for_epsilon(0.0)), 6), bool(pld.get_delta_for_epsilon(math.log(3)) < 1e-3)
    (0.5, True)
    """
    from dp_accounting.pld import privacy_loss_distribution as pldm

    P, Q = _check_pair(p, q)
    d = check_positive(value_discretization_interval, "value_discretization_interval")
    if not d <= 1.0:
        raise InvalidParameterError(f"value_discretization_interval must be at most 1 (got {d!r})")
    rem, inf_rem, lo_r, hi_r = _grid_split(P, Q, d)
    add, inf_add, lo_a, hi_a = _grid_split(Q, P, d)
    span = float(hi_r - lo_r + 1) + float(hi_a - lo_a + 1)
    check_memory(PLD_POINT_BYTES * span, f"the privacy loss distribution on a grid of {d:g} ({span:.0f} grid points: "
                                         f"losses from {min(lo_r, lo_a) * d:.4g} to {max(hi_r, hi_a) * d:.4g})",
                 hint="pass a larger value_discretization_interval=")
    if rem.keys() == add.keys() and (math.isclose(inf_rem, inf_add, rel_tol=1e-9, abs_tol=1e-300) and all(
            math.isclose(rem[k], add[k], rel_tol=1e-9, abs_tol=1e-300) for k in rem) or _SAME_MASS_L1 >= abs(
            inf_rem - inf_add) + math.fsum(abs(rem[k] - add[k]) for k in rem)):
        # the same masses up to rounding: the larger of each is pessimistic for both directions (a larger mass
        # at any loss only raises the hockey-stick functional, composed or not); the merge adds at most the
        # masses' differences, within 1e-9 in total either way (per point or summed)
        both = {k: max(rem[k], add[k]) for k in rem}
        return pldm.PrivacyLossDistribution.create_from_rounded_probability(both, max(inf_rem, inf_add), d, True)
    return pldm.PrivacyLossDistribution.create_from_rounded_probability(rem, inf_rem, d, True, add, inf_add,
                                                                        symmetric=False)


def _check_pair(p: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    P = check_float_array(p, "p", ndim=1, finite=True)
    Q = check_float_array(q, "q", ndim=1, finite=True)
    if P.shape != Q.shape or P.size == 0:
        raise InvalidDistributionError(f"p and q must be non-empty and of the same length (got {P.size} and "
                                       f"{Q.size})")
    for name, v in (("p", P), ("q", Q)):
        if np.any(v < 0) or abs(float(v.sum()) - 1.0) > DIST_SUM_ATOL:
            raise InvalidDistributionError(f"{name} must be a probability vector (min {float(v.min())!r}, "
                                           f"sum {float(v.sum())!r})")
    return P, Q


#: Two directions of a pair whose grid masses differ by at most this much in total (and sit on the same grid points)
#: are merged into one symmetric PLD, the larger mass at each point (half the composition work); a pair
#: symmetric up to rounding differs by ulps (the per-point rule: a relative 1e-9 at every point).
_SAME_MASS_L1 = 1e-9

#: Bytes per grid point of a PLD held densely: dp-accounting's list and array of it, and chainamp's reading
#: of it (:class:`_Atoms`: losses, lower masses, three suffix sums and their temporaries), rounded up.
PLD_POINT_BYTES = 160.0
#: Bytes per point of dp-accounting's FFT (``fft.ifft(fft.fft(x, n) ** T)``: the complex input, its transform,
#: the power and the inverse, 16 bytes each; ``np.real`` and ``np.roll`` of the result), rounded up.
PLD_FFT_BYTES = 96.0


def self_compose_bytes(pld: Any, times: int, tail: float, *, truncated: bool = True) -> tuple[float, int]:
    """``(bytes, points)``: what ``pld.self_compose(times, tail)`` will allocate (the FFT of the length
    dp-accounting's own Chernoff truncation bounds give, each direction in turn, and the composed grids, then
    read by chainamp) and the largest number of grid points of a composed direction. ``truncated=False``: the
    same without the truncation (every composed grid of ``(width - 1) times + 1`` points), an upper bound of
    it computed without the bounds' 40 log-sum-exps per direction."""
    from scipy import fft

    pmfs = [pld._pmf_remove] if pld._symmetric else [pld._pmf_remove, pld._pmf_add]
    work, kept, widest = 0.0, 0.0, 0
    for pmf in pmfs:
        if hasattr(pmf, "_loss_probs"):  # sparse: composed sparsely while small, else made dense first
            if pmf.size ** min(times, 64) <= 1000:
                continue
            keys = np.fromiter(pmf._loss_probs.keys(), dtype=np.int64, count=pmf.size)
            vals = np.fromiter(pmf._loss_probs.values(), dtype=float, count=pmf.size)
            pos, width = keys - keys.min(), int(keys.max() - keys.min()) + 1
        else:
            probs = np.asarray(pmf._probs, dtype=float)
            pos = np.flatnonzero(probs)
            vals, width = probs[pos], probs.size
        lo, hi = _self_convolve_bounds(pos, vals, width, times, tail) if truncated else (0, (width - 1) * times)
        points = max(hi - lo + 1, 1)  # the bounds can cross on extreme pairs: dp-accounting then still
        # transforms `width` points (its fast length is never below them)
        work = max(work, PLD_FFT_BYTES * float(fft.next_fast_len(max(points, width))))
        kept += PLD_POINT_BYTES * points
        widest = max(widest, points)
    return work + kept, widest


def _self_convolve_bounds(pos: np.ndarray, vals: np.ndarray, width: int, times: int, tail: float) -> tuple[int, int]:
    """dp-accounting's truncation bounds of a ``times``-fold self-convolution (``common.compute_self_convolve_bounds``:
    Chernoff bounds at the orders ``+-1..20 / width``), from the non-zero entries only (the zeros add nothing to
    its moment generating function), so a sparse grid of 690,000 points is sized in microseconds."""
    from scipy.special import logsumexp

    upper, lower = (width - 1) * times, 0
    if tail == 0:
        return lower, upper
    for order in np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / width:
        bound = (times * float(logsumexp(pos * order, b=vals)) + math.log(2 / tail)) / order
        if not math.isfinite(bound):
            continue
        if order > 0:
            upper = min(upper, math.ceil(bound))
        else:
            lower = max(lower, math.floor(bound))
    return int(lower), int(upper)


def grid_extent(pld: Any, dirs: list | None = None) -> tuple[int, int, bool, int, float]:
    """``(lowest grid index, highest grid index, any mass at infinite loss, largest number of stored grid
    points, largest 2-norm of the stored masses)`` over the directions of a PLD (``dirs``: its
    :func:`_directions`, when already read). The 2-norm is a pairwise sum of squares (relative error at most
    ``(log2 n + 2) u``, far inside the 16/5 margin of the FFT error bound it scales), not a BLAS dot, whose
    threads can stall on a loaded machine."""
    dirs = _directions(pld) if dirs is None else dirs
    lo = min(int(a.lower) for a in dirs)
    hi = max(int(a.lower) + a.probs.size - 1 for a in dirs)
    return (lo, hi, any(a.inf_mass > 0 for a in dirs), max(a.probs.size for a in dirs),
            max(math.sqrt(float(np.sum(np.square(a.probs)))) for a in dirs))


class _Atoms:
    """One direction of a PLD: losses ``(lower + i) d``, their upper masses, the mass at infinity, and
    the suffix sums that answer ``delta(eps)`` for many eps with one binary search each."""

    def __init__(self, lower: int, probs: np.ndarray, inf_mass: float, d: float):
        self.lower, self.probs, self.inf_mass, self.d = lower, probs, inf_mass, d
        self.slack = 0.0  # 2-norm bound on the error of ``probs`` (set by PLDProfile)
        n = probs.size
        self.losses = (lower + np.arange(n)) * d
        # lower masses p_j e^{-l_j}, needed only above eps >= 0 (below, FFT noise times e^{-l} could overflow)
        live = (probs != 0) & (self.losses >= 0)
        lower_mass = np.zeros(n)
        lower_mass[live] = np.sign(probs[live]) * np.exp(np.log(np.abs(probs[live])) - self.losses[live])
        self.suf_p = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])
        self.suf_q = np.concatenate([np.cumsum(lower_mass[::-1])[::-1], [0.0]])
        self.suf_abs = np.concatenate([np.cumsum(np.abs(probs[::-1]))[::-1], [0.0]])
        top = float(np.max(np.abs(self.losses))) if n else 0.0
        # suffix sums (n roundings each), e^{eps - l} (the loss j d, the exp and the product) and the difference
        self.rel_err = (2.0 * n + 16.0 + 2.0 * top) * _U

    def delta(self, eps: np.ndarray) -> np.ndarray:
        k = np.searchsorted(self.losses, eps, side="right")  # first atom with loss > eps
        sp, sq, sa = self.suf_p[k], self.suf_q[k], self.suf_abs[k]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            esq = np.where(sq != 0, np.sign(sq) * np.exp(np.where(np.isinf(eps), 0.0, eps) + np.log(np.abs(sq))), 0.0)
        above = (self.probs.size - k).astype(float)
        return (self.inf_mass + np.maximum(sp - esq, 0.0) + self.rel_err * (sa + self.inf_mass)
                + self.slack * np.sqrt(above))


def _directions(pld: Any) -> list[_Atoms]:
    """The dense probability mass functions of a dp-accounting PLD (REMOVE, and ADD when it differs).

    dp-accounting exposes no public accessor of its masses, so this reads its attributes in one
    place (checked against dp-accounting 0.4 to 0.6 by the tests); anything else is a TypeError."""
    try:
        pmfs = [pld._pmf_remove] if pld._symmetric else [pld._pmf_remove, pld._pmf_add]
        out = []
        for pmf in pmfs:
            if not pmf._pessimistic_estimate:
                raise InvalidParameterError("pld must be a pessimistic estimate (pessimistic_estimate=True): an "
                                            "optimistic privacy loss distribution is not an upper bound")
            dense = pmf.to_dense_pmf()
            out.append(_Atoms(int(dense._lower_loss), np.asarray(dense._probs, dtype=float),
                              float(dense._infinity_mass), float(dense._discretization)))
    except AttributeError:
        raise TypeError(f"pld must be a dp_accounting.pld PrivacyLossDistribution (got {type(pld).__name__})") \
            from None
    return out


class PLDProfile(PrivacyProfile):
    """A privacy profile read from a dp-accounting ``PrivacyLossDistribution`` (an upper bound).

    ``delta(eps)`` is the maximum over the PLD's directions of ``P[L = inf] + sum_{l_j > eps} p_j (1 -
    e^{eps - l_j})``, evaluated from suffix sums and raised past its floating-point error
    (``(2n + 16 + 2 max|l|) u`` times the mass above eps, ``u = 2^-53``) plus ``slack sqrt(n_eps)``,
    where ``slack`` bounds the 2-norm of errors made before in the stored masses (the FFT error of a
    composition; 0 for a PLD taken as given) and ``n_eps`` counts the grid points above eps (by
    Cauchy-Schwarz, since the weights ``1 - e^{eps - l}`` lie in [0, 1]). Built by
    :func:`chainamp.compose` and :func:`profile_from_pld`; ``pld`` is the distribution itself, which
    :meth:`to_dp_accounting` returns unchanged.
    """

    __slots__ = ("pld", "slack", "_dirs")

    def __init__(self, pld: Any, *, name: str, source: str, slack: float = 0.0,
                 pure_epsilon: float | None = None, _dirs: list | None = None) -> None:
        dirs = _directions(pld) if _dirs is None else _dirs  # (_dirs: compose's reading of this very PLD)
        if pure_epsilon is None:
            pure_epsilon = math.inf
            if all(a.inf_mass == 0 for a in dirs):
                tops = [float(a.losses[np.flatnonzero(a.probs)[-1]]) for a in dirs if np.any(a.probs)]
                top = max(tops, default=0.0)
                pure_epsilon = max(0.0, math.nextafter(top + 4.0 * _U * abs(top), math.inf))
        super().__init__(self._evaluate_dirs, name=name, source=source, exact=False, pure_epsilon=pure_epsilon)
        for a in dirs:
            a.slack = float(slack)
        for key, value in (("pld", pld), ("slack", float(slack)), ("_dirs", tuple(dirs))):
            object.__setattr__(self, key, value)

    def _evaluate_dirs(self, eps: np.ndarray) -> np.ndarray:
        out = np.zeros(eps.shape)
        for a in self._dirs:
            out = np.maximum(out, a.delta(eps))
        return round_up_array(out, 2, upper=1.0)

    def to_dp_accounting(self, *, value_discretization_interval: float | None = None) -> Any:
        """The PLD this profile was read from (a new one only for another ``value_discretization_interval``)."""
        if value_discretization_interval is None or value_discretization_interval == self._dirs[0].d:
            return self.pld
        return profile_to_pld(self, value_discretization_interval=value_discretization_interval)


def profile_to_pld(profile: PrivacyProfile, *, value_discretization_interval: float | None = None) -> Any:
    """``profile.dominating_pair()`` as a pessimistic dp-accounting PLD (:func:`pair_to_pld`), to compose
    with the user's other mechanisms in dp-accounting. The PLD's ``get_delta_for_epsilon`` bounds the
    profile from above at every eps (up to the library's own float rounding, of order 1e-15).

    >>> prof = PrivacyProfile.randomized_response(4, 1.0)
    >>> pld = profile_to_pld(prof)
    >>> bool(pld.get_delta_for_epsilon(0.5) >= prof.delta(0.5))
    True
    """
    if not isinstance(profile, PrivacyProfile):
        raise TypeError(f"profile must be a PrivacyProfile (got {type(profile).__name__})")
    d = PLD_DISCRETIZATION if value_discretization_interval is None else value_discretization_interval
    pair = profile.dominating_pair()
    return pair_to_pld(pair.p, pair.q, value_discretization_interval=d)


def profile_from_pld(pld: Any, *, name: str = "dp-accounting privacy loss distribution") -> PLDProfile:
    """A :class:`PLDProfile` of a pessimistic dp-accounting PLD, taken as given (the user's claim, as
    with ``PrivacyProfile.from_callable``): ``delta(eps)`` is the hockey-stick divergence the PLD
    describes (what its ``get_delta_for_epsilon`` computes, here vectorised), raised past the float error
    of the evaluation; ``epsilon(delta)`` is chainamp's rounded-up search on that curve. An optimistic
    PLD (``pessimistic_estimate=False``) is refused.

    >>> from dp_accounting.pld import privacy_loss_distribution as pldm
    >>> pld = pldm.from_laplace_mechanism(1.0, value_discretization_interval=1e-3)
    >>> prof = profile_from_pld(pld)
    >>> bool(prof.delta(0.5) >= pld.get_delta_for_epsilon(0.5)), round(prof.epsilon(0.0), 2)
    (True, 1.0)
    """
    return PLDProfile(pld, name=str(name), source="dp-accounting privacy loss distribution (taken as given)")


def opendp_curve(profile: PrivacyProfile) -> Callable[[float], float]:
    """The callback ``eps -> delta`` that :func:`profile_to_opendp` hands to OpenDP: ``profile.delta`` as a
    float, refusing eps that is negative or NaN (OpenDP's contract for a privacy curve).

    >>> curve = opendp_curve(PrivacyProfile.laplace(1.0))
    >>> round(curve(0.0), 6)
    0.393469
    """
    if not isinstance(profile, PrivacyProfile):
        raise TypeError(f"profile must be a PrivacyProfile (got {type(profile).__name__})")

    def curve(epsilon: float) -> float:
        return float(min(profile.delta(check_epsilon(epsilon, "epsilon")), 1.0))

    return curve


def profile_to_opendp(profile: PrivacyProfile) -> Any:
    """An OpenDP ``PrivacyProfile`` (``opendp.measures.new_privacy_profile``) with chainamp's curve.

    OpenDP marks user-defined curves ``contrib`` and ``honest-but-curious``; this call enables both
    features in OpenDP's (process-wide) feature set, since the curve is chainamp's certified one.
    OpenDP can query it (``.delta(epsilon=...)``, ``.epsilon(delta=...)``) but not compose it: compose
    with :func:`chainamp.compose` or in dp-accounting (:meth:`PrivacyProfile.to_dp_accounting`) first.
    Needs the optional package ``opendp`` (``pip install opendp``).
    """
    curve = opendp_curve(profile)
    try:
        import opendp.prelude as dp
    except ImportError:
        raise ImportError("PrivacyProfile.to_opendp needs the optional package opendp (pip install opendp)") \
            from None
    dp.enable_features("contrib", "honest-but-curious")
    return dp.new_privacy_profile(curve)
