"""``chainamp.amplify_shuffled``: the central privacy of n users' local reports after a shuffler.

The randomizer R is read once (:func:`read_randomizer`): a finite channel (anything ``amplify`` accepts as
a finite M: a ``MarkovOperator``, an array, a list applied in order, the structured k-RR, unary encodings,
RAPPOR) or a black-box ``DP(eps0)``. Its local-DP level and its blanket (Doeblin) decomposition come from
chainamp's own coefficients. Each method of :data:`METHODS` maps the read randomizer and the number of users
to a certified :class:`ShuffleBound` or None when it does not apply; ``"auto"`` keeps the smallest certified
epsilon at the report's delta among the methods that apply.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral, Real
from typing import Any

import numpy as np

from .._numerics import BLANKET_MAX_TERMS, check_delta, check_executor, check_progress, fmt_number
from ..errors import ChainampError, IncompatibleOperatorsError, InvalidMechanismError, InvalidParameterError
from ..mixing import doeblin, ldp_guarantee
from ..operators import (MarkovOperator, StructuredOperator, SymmetricChannel, as_operator, multiply,
                         operator_error)
from ..privacy import DP, DominatingPair, PrivacyProfile
from ._lowers import profile_of_lower
from ._rr_band import (_log_up, _rr_parameters, _up, lower_keep_probability,  # noqa: F401 (_log_up: the tests')
                       lower_krr_parameters, rr_epsilons)
from .exact import binary_rr_shuffle
from .krr import krr_epsilon, krr_parameters, krr_shuffle, skip_two_output
from .report import ShuffleReport

__all__ = ["amplify_shuffled", "ShuffleMethodError", "METHODS"]

#: the delta of the headline when none is given
DEFAULT_DELTA = 1e-6


class ShuffleMethodError(ChainampError, NotImplementedError):
    """No method of :func:`amplify_shuffled` that is available applies to this randomizer."""


@dataclass(frozen=True)
class Randomizer:
    """The randomizer as the methods see it. ``kind``: ``"rr"`` (k-ary randomized response, ``k``, keep
    ratio ``e^eps0``), ``"finite"`` (any other channel) or ``"dp"`` (a black box)."""

    kind: str
    description: str
    operator: MarkovOperator | None
    local_epsilon: float
    k: int = 0
    epsilon0: float = math.inf  # RR: log(d / o), rounded up (the least private end of a product's band)
    lower_epsilon0: float = math.inf  # RR: log(d / o) at the band's most private end, rounded down (the lower)
    blanket_gamma: float | None = None
    blanket_omega: np.ndarray | None = None
    dp: DP | None = None
    error: Any = None  # the ProductError of a product chainamp formed (a list of steps), None when exact


@dataclass(frozen=True)
class ShuffleBound:
    """What a method returns: the certified profile, an optional lower profile (concrete datasets) and notes."""

    profile: PrivacyProfile
    lower: PrivacyProfile | None = None
    lower_dataset: str = ""
    exact: bool = False
    notes: tuple = ()
    #: the method's own certified inversion eps(delta) (a windowed search, faster than the profile's), or None
    invert: Callable[[float], float] | None = None


def profile_of_pair(pair: DominatingPair, *, name: str, source: str, exact: bool) -> PrivacyProfile:
    """A :class:`PrivacyProfile` whose curve is the pair's and whose ``dominating_pair()`` is the pair itself."""
    return PrivacyProfile(lambda eps: np.asarray(pair.delta(eps), dtype=float), name=name, source=source,
                          exact=exact, pure_epsilon=pair.pure_epsilon, pair=lambda: pair)


def profile_of_deltas(fn: Callable[[np.ndarray], np.ndarray], *, name: str, source: str) -> PrivacyProfile:
    """Wrap a method that returns certified delta upper bounds on an array of eps (the blanket and generic
    modules); its ``dominating_pair()`` is the pessimistic connect-the-dots pair."""
    return PrivacyProfile.from_callable(fn, name=name, source=source, vectorized=True)


# ------------------------------------------------------------------ reading the randomizer
def _compose(randomizer: Any):
    """One operator, or the product of a list applied in order, with the product's rounding error."""
    def two_d(op: Any) -> bool:
        try:
            return isinstance(op, MarkovOperator) or np.ndim(op) == 2 or hasattr(op, "tocsr")
        except ValueError:
            return False

    if isinstance(randomizer, (list, tuple)) and not randomizer:
        raise InvalidMechanismError("randomizer: an empty list of steps")
    if isinstance(randomizer, (list, tuple)) and all(two_d(op) for op in randomizer):
        steps = [as_operator(op, f"randomizer[{i}]") for i, op in enumerate(randomizer)]
        out, err = steps[0], operator_error(steps[0])
        for i, op in enumerate(steps[1:], start=1):
            if op.shape[0] != out.shape[1]:
                raise IncompatibleOperatorsError(f"randomizer[{i}] has {op.shape[0]} inputs but randomizer[{i - 1}] "
                                                 f"has {out.shape[1]} outputs")
            out, err = multiply(out, err, op, operator_error(op))
        return out, err
    op = as_operator(randomizer, "randomizer")
    return op, operator_error(op)


def _formed(randomizer: Any) -> bool:
    """Whether chainamp formed the randomizer as a product of steps (its entries then carry rounding error; an
    operator passed in stands for itself, exactly, as everywhere in chainamp)."""
    return isinstance(randomizer, (list, tuple)) and len(randomizer) > 1


def read_randomizer(randomizer: Any, neighbors: Any = None) -> Randomizer:
    """Normalise what :func:`amplify_shuffled` accepts as the randomizer (see its docstring)."""
    if isinstance(randomizer, DP):
        if neighbors is not None:
            raise InvalidParameterError("neighbors applies to a finite randomizer, not to a black-box DP(eps0)")
        return Randomizer("dp", f"a black-box ({fmt_number(randomizer.epsilon)}, {fmt_number(randomizer.delta)})-DP "
                          "randomizer", None, randomizer.epsilon, dp=randomizer)
    if isinstance(randomizer, (str, bytes, Real)) or randomizer is None:
        raise TypeError("randomizer must be a MarkovOperator, a 2-D array, a list of them applied in order, or a "
                        f"DP(eps0), got {type(randomizer).__name__} {randomizer!r:.60}")
    try:
        op, err = _compose(randomizer)
    except IncompatibleOperatorsError as exc:
        raise IncompatibleOperatorsError(f"randomizer: the outputs of one step do not match the inputs of the next "
                                         f"({exc})") from None
    if op.shape[0] < 1:
        raise InvalidMechanismError("randomizer has no input")
    inputs = list(op.inputs)
    if neighbors is not None:
        pairs = list(neighbors.edges()) if hasattr(neighbors, "edges") else list(neighbors)
        if not pairs:
            raise InvalidParameterError("neighbors must contain at least one pair of values (got none)")
        known = set(inputs)
        for pair in pairs:
            if len(pair) != 2 or pair[0] not in known or pair[1] not in known:
                raise InvalidParameterError(f"neighbors: {pair!r} is not a pair of the randomizer's input values "
                                            f"{inputs[:6]!r}{'...' if len(inputs) > 6 else ''}")
    ldp = ldp_guarantee(op, normalised=not isinstance(op, SymmetricChannel))  # rows accepted within a loose
    # row_sum_atol stand for their normalised rows (the local level of the rows as written can be far smaller)
    doe = doeblin(op)
    gamma = max(0.0, 1.0 - doe.gamma)  # 1 - gamma_Doeblin rounded up -> blanket rounded down
    desc = f"a {op.shape[0]}x{op.shape[1]} channel" if not isinstance(op, SymmetricChannel) else ""
    rr = _rr_parameters(op)
    if rr is not None and rr[1] >= rr[2] and op.shape[0] >= 2:
        k, d, o = rr
        eps0, low0 = rr_epsilons(d, o, err)  # the least private end of a band (rounded up), and the most private
        desc = (f"{k}-ary randomized response (eps0 = {fmt_number(eps0)})" if k > 2 else
                f"binary randomized response (eps0 = {fmt_number(eps0)})")
        return Randomizer("rr", desc, op, ldp.epsilon, k=k, epsilon0=eps0, lower_epsilon0=low0,
                          blanket_gamma=gamma, blanket_omega=doe.witness,
                          error=err if _formed(randomizer) and not err.is_exact else None)
    return Randomizer("finite", desc or op.description if hasattr(op, "description") else desc, op, ldp.epsilon,
                      blanket_gamma=gamma, blanket_omega=doe.witness,
                      error=err if _formed(randomizer) and not err.is_exact else None)


# ------------------------------------------------------------------ methods
def _exact(rz: Randomizer, users: int, *, target: float = DEFAULT_DELTA, progress: bool | None = None,
           executor: Any = None, **_: Any) -> ShuffleBound | None:
    """Randomized response: :func:`~chainamp.shuffle.binary_rr_shuffle` (k = 2, the exact worst case) or
    :func:`~chainamp.shuffle.krr_shuffle` (k >= 3, a sound bound with a concrete dataset below it)."""
    if rz.kind != "rr":
        return None
    notes = []
    e0 = rz.epsilon0
    if rz.operator.shape[0] < 2 or e0 == 0.0:
        why = ("the randomizer has one input value: nothing to protect" if rz.operator.shape[0] < 2 else
               "every input has the same output distribution: the reports carry no information")
        zero = DominatingPair([1.0], [1.0], name=why, exact=True)
        prof = profile_of_pair(zero, name=why, source="identical output distributions", exact=True)
        return ShuffleBound(prof, prof, "any dataset", True, (why + ", so delta = 0 at every epsilon >= 0",))
    if math.isinf(e0):
        notes.append("the randomizer reports its value exactly (no blanket: gamma = 0), so the other users' reports "
                     "are known to an analyst who knows their data and the histogram reveals the changed value: "
                     "delta = 1 at every epsilon")
    if rz.k == 2:
        if e0 == 0.0:
            p = 0.5
        else:
            p = 1.0 if math.isinf(e0) else min(1.0, _up(1 / (1 + Fraction(math.exp(-e0)) * (1 - Fraction(1, 2**50)))))
        p_low = min(lower_keep_probability(rz.lower_epsilon0), p)  # the lower at the band's most private end
        res = binary_rr_shuffle(users, p, lower_p=p_low, target_delta=target, progress=progress)
        if not res.exact_all:
            notes.append(f"datasets m = 0..{res.exact_datasets[-1]} of the other users are exact components; the "
                         f"{len(res.intervals)} intervals beyond are covered by a sound reveal bound")
        src = "exact worst case over the other users' data (shuffle.exact, binary RR)"
    else:
        k, d, o = krr_parameters(rz.k, rz.epsilon0)
        _, _, lower_o = lower_krr_parameters(rz.k, rz.lower_epsilon0)  # the lower at the band's most private end
        res = krr_shuffle(users, k, d, o, target_delta=target, lower_o=lower_o, progress=progress)
        notes.append("k-ary RR: the certified profile is valid for every dataset of the other users but is not the "
                     "exact worst case; the lower profile is concrete datasets. Among datasets in which no other user "
                     "holds either of the two values compared, the worst is every other user at one third value "
                     "(proved in chainamp.shuffle._krr_datasets); datasets with users at those values are open")
        src = "two-output reveal bound for k-ary RR (shuffle.krr)"
    invert = None
    if res.curve is not None:  # the curve itself (the pair through its grid is for compose)
        curve, upper, pure = res.curve, res.upper, res.upper.pure_epsilon
        prof = PrivacyProfile(lambda eps: np.where(np.asarray(eps, dtype=float) >= pure, 0.0,
                                                   np.asarray(curve(np.atleast_1d(eps)), dtype=float).reshape(
                                                       np.shape(eps))),
                              name=upper.name, source=src, exact=False, pure_epsilon=pure, pair=lambda: upper)
        invert = lambda d: min(krr_epsilon(curve, d, pure), pure)  # noqa: E731
    else:
        prof = profile_of_pair(res.upper, name=res.upper.name, source=src, exact=res.exact_all)
    low = None
    if res.lower is not None:
        low = profile_of_lower(res.lower, name=res.lower.name, source="exact profile of concrete datasets")
    return ShuffleBound(prof, low, res.lower_dataset, res.exact_all, tuple(notes), invert)


def _matrix(rz: Randomizer) -> Any:
    """The randomizer as the blanket, variation and clone computations read it: the structured k-RR as is,
    any other finite channel as its dense matrix (size-checked by ``densify``)."""
    op = rz.operator
    if isinstance(op, SymmetricChannel):
        return op
    mat = np.asarray(op.densify().matrix if isinstance(op, StructuredOperator) else
                     (op.matrix.toarray() if hasattr(op.matrix, "toarray") else op.matrix), dtype=float)
    # an operator chainamp already accepted (a product's rows may drift past the default row_sum_atol: its
    # error model covers that drift): wrapped, so the methods do not check its rows again
    return MarkovOperator(mat, op.inputs, op.outputs, row_sum_atol=math.inf)


def _widened(fn: Callable[[np.ndarray], np.ndarray], rz: Randomizer, users: int) -> Callable[[np.ndarray], np.ndarray]:
    """A delta curve computed from a product's stored entries, widened to the exact product's.

    If each user's true report distribution is within total variation ``tau`` of the stored one (``tau =
    rel + absolute * m`` per row, the product's error model), the n reports' histograms are within ``n tau``
    (a coupling of the n independent draws), and ``H_c(P || Q) <= H_c(P' || Q') + TV(P, P') + c TV(Q, Q')``,
    so adding ``(1 + e^eps) n tau`` (rounded up) keeps the curve certified."""
    err = rz.error
    if err is None:
        return fn
    m = rz.operator.shape[1]
    tau = (err.rel + err.absolute * m) * (1.0 + 4e-16) if err.support_exact else math.inf

    def widened(eps: np.ndarray) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        with np.errstate(over="ignore"):
            extra = (1.0 + np.exp(e)) * (users * tau) * (1.0 + 1e-15)
        return np.minimum(np.asarray(fn(e), dtype=float) + extra, 1.0)
    return widened


def _curve_bound(fn: Callable[[np.ndarray], np.ndarray], pair: Callable[[], DominatingPair], rz: Randomizer,
                 users: int, pure: float, *, name: str, source: str, notes: tuple = (),
                 invert: Callable[[float], float] | None = None) -> ShuffleBound:
    """A method's certified delta curve as a profile whose ``dominating_pair()`` is ``pair()`` (built on first
    use: the pessimistic pair through grid points of the curve, for ``compose``). ``pure``: the randomizer's
    local epsilon, rounded up; the shuffled reports are a post-processing of the reports, so (pure, 0)-DP too
    (the curve is 0 from there on)."""
    curve = _widened(fn, rz, users)
    if rz.error is not None:  # the local level was read off the stored product: widen it to the exact one's
        r = rz.error.ratio_error()
        pure = math.nextafter(pure + 2.0 * math.log1p(2.0 * r / (1.0 - r)), math.inf) if r < 0.5 else math.inf

    def evaluate(e: Any) -> np.ndarray:
        e = np.asarray(e, dtype=float)
        out = np.asarray(curve(np.atleast_1d(e)), dtype=float).reshape(e.shape)
        return np.where(e >= pure, 0.0, out)
    prof = PrivacyProfile(evaluate, name=name, source=source, exact=False, pure_epsilon=pure,
                          pair=None if rz.error is not None else pair)  # a product's widened curve: connect the dots
    # the method's inversion reads the unwidened curve: only for a randomizer passed in (exact by convention)
    return ShuffleBound(prof, None, "", False, notes, invert if rz.error is None else None)


def _pure(eps: float) -> float:
    """A local epsilon one float up (the pure level of the shuffled reports; inf stays inf)."""
    return math.nextafter(eps, math.inf) if math.isfinite(eps) else math.inf


def _label_pairs(rz: Randomizer, neighbors: Any) -> list | None:
    """``neighbors`` (pairs of input labels, validated by :func:`read_randomizer`) as pairs of row indices."""
    if neighbors is None or isinstance(rz.operator, SymmetricChannel):  # every pair of k-RR is equivalent
        return None
    index = {x: i for i, x in enumerate(rz.operator.inputs)}
    pairs = list(neighbors.edges()) if hasattr(neighbors, "edges") else list(neighbors)
    return [(index[a], index[b]) for a, b in pairs]


def _blanket(rz: Randomizer, users: int, *, neighbors: Any = None, progress: bool | None = None,
             executor: Any = None, **_: Any) -> ShuffleBound | None:
    """The exact expectation behind the privacy blanket (:mod:`.blanket`), for any finite randomizer; distinct
    pairs of values are evaluated on ``executor`` when given (same result)."""
    from .blanket import _evaluate, _setup, blanket_dominating_pair, blanket_epsilon

    if rz.kind == "dp":
        return None
    R, idx = _matrix(rz), _label_pairs(rz, neighbors)
    setup = _setup(R, users, idx, 2_000_000, BLANKET_MAX_TERMS)
    return _curve_bound(lambda e: _evaluate(setup, np.atleast_1d(e), progress, executor),
                        lambda: blanket_dominating_pair(R, users, neighbors=idx, executor=executor), rz, users,
                        _pure(rz.local_epsilon), name=f"shuffled reports, n={users} (privacy blanket)",
                        invert=lambda d: min(blanket_epsilon(R, users, d, neighbors=idx, progress=progress,
                                                             executor=executor), _pure(rz.local_epsilon)),
                        source="exact expectation of the privacy blanket pair (Balle, Bell, Gascon, Nissim 2019)")


def _cover_blanket(rz: Randomizer, users: int, target: float, res: ShuffleBound, eps: float,
                   progress: bool | None, executor: Any = None) -> tuple[ShuffleBound, float] | None:
    """k-ary RR: the blanket tightened by keeping some users exact (:func:`._krr_cover.tighten_blanket`), when a
    concrete dataset shows a gap and the cells fit; ``(bound, epsilon)``, or None."""
    from ._krr_cover import tighten_blanket

    if rz.kind != "rr" or rz.k < 3 or rz.error is not None or res.lower is None:
        return None
    k, _, o = krr_parameters(rz.k, rz.epsilon0)
    got = tighten_blanket(users, k, o, rz.epsilon0, target, eps, res.profile, float(res.lower.epsilon(target)),
                          progress, executor)
    if got is None:
        return None
    prof, new, note, cover_eps = got
    invert = res.invert
    return ShuffleBound(prof, res.lower, res.lower_dataset, False, res.notes + (note,),
                        (lambda d: min(invert(d), cover_eps(d))) if invert else None), new


def _generic(rz: Randomizer, users: int, **_: Any) -> ShuffleBound | None:
    """The clone pair of Feldman, McMillan and Talwar 2021 from the local epsilon alone (:mod:`.generic`); for a
    finite randomizer with the larger clone probability it certifies (:func:`~chainamp.shuffle.clone_probability`)."""
    from .generic import clone_probability, generic_delta, generic_dominating_pair, generic_epsilon

    if rz.kind == "dp":
        if rz.dp.delta > 0.0 or not 0.0 < rz.dp.epsilon < math.inf:
            return None
        e0, s = rz.dp.epsilon, None
    else:
        e0 = rz.local_epsilon
        if not 0.0 < e0 < math.inf:
            return None
        s = clone_probability(_matrix(rz))
        s = None if s <= math.exp(-e0) else min(s, 2.0 * math.exp(-e0) / (1.0 + math.exp(-e0)))  # no overflow
    note = (() if s is None else (f"clone probability {fmt_number(s)} certified for this randomizer (larger than "
                                  f"e^-eps0 = {fmt_number(math.exp(-e0))})",))
    return _curve_bound(lambda e: generic_delta(e0, users, np.atleast_1d(e), clone_probability=s),
                        lambda: generic_dominating_pair(e0, users, clone_probability=s), rz, users, _pure(e0),
                        name=f"shuffled reports, n={users} (clones)", notes=note,
                        invert=lambda d: generic_epsilon(e0, users, d, clone_probability=s),
                        source="the clone pair of Feldman, McMillan and Talwar 2021, summed exactly")


def _variation(rz: Randomizer, users: int, *, neighbors: Any = None, **_: Any) -> ShuffleBound | None:
    """The variation-ratio bound of Wang et al. 2024, made sound (:mod:`.variation`), over all pairs of values."""
    from .variation import (variation_ratio_delta, variation_ratio_dominating_pair, variation_ratio_epsilon,
                            variation_ratio_parameters)

    if rz.kind == "dp" or neighbors is not None or not math.isfinite(rz.local_epsilon):
        return None
    params = variation_ratio_parameters(_matrix(rz))
    return _curve_bound(lambda e: variation_ratio_delta(params, users, np.atleast_1d(e)),
                        lambda: variation_ratio_dominating_pair(params, users), rz, users, _pure(rz.local_epsilon),
                        name=f"shuffled reports, n={users} (variation ratio)",
                        invert=lambda d: min(variation_ratio_epsilon(params, users, d), _pure(rz.local_epsilon)),
                        source="the variation-ratio bound of Wang et al. 2024, made sound")


#: name -> method(randomizer, users, target=, progress=, executor=, neighbors=): a ShuffleBound, or None when it does
#: not apply; "auto" tries them all and keeps the smallest certified epsilon at the report's delta
METHODS: dict[str, Callable[..., ShuffleBound | None]] = {
    "exact": _exact,
    "blanket": _blanket,
    "variation": _variation,
    "generic": _generic,
}


#: what each method needs, for the message when it is asked for by name and does not apply
_NEEDS = {"exact": "it needs randomized response (a SymmetricChannel or a matrix that is exactly k-RR)",
          "blanket": "it needs a finite randomizer (a channel, not a black-box DP guarantee)",
          "variation": "it needs a finite randomizer with a finite local epsilon and no neighbors= restriction",
          "generic": "it needs a finite local epsilon eps0 > 0 (a pure DP(eps0) or a channel without zero entries "
                     "in only some rows)"}


# ------------------------------------------------------------------ the public function
def _check_users(users: Any) -> int:
    if isinstance(users, bool) or not isinstance(users, (Integral, np.integer, float, np.floating)):
        raise TypeError(f"users must be a whole number of users, got {type(users).__name__} {users!r}")
    if isinstance(users, (float, np.floating)):
        if not math.isfinite(users) or users != math.floor(users):
            raise InvalidParameterError(f"users must be a whole number (got {users!r})")
    n = int(users)
    if n < 1:
        raise InvalidParameterError(f"users must be >= 1 (got {n})")
    return n


def amplify_shuffled(randomizer: Any, users: Any, *, delta: float | None = None, method: str = "auto",
                     neighbors: Any = None, progress: bool | None = None, executor: Any = None) -> ShuffleReport:
    """Certified central (epsilon, delta) of ``users`` users' reports through ``randomizer`` after a shuffler.

    Parameters
    ----------
    randomizer :
        Each user's local randomizer: a finite channel (``MarkovOperator``, 2-D array, a list applied in order,
        i.e. M then K: the post-processed reports are shuffled; the structured ``SymmetricChannel``) or a
        black-box ``DP(eps0)``. Randomized response (a ``SymmetricChannel`` or a dense matrix that is exactly
        k-RR) is recognised for the ``"exact"`` method.
    users : int
        Every user, the one whose value changes included (an integral float such as ``1e6`` is accepted).
    delta : float, optional
        The delta of the headline and of ``"auto"``'s choice (default 1e-6), in (0, 1).
    method : {"auto", "exact", "blanket", "generic"}
        ``"auto"`` keeps the smallest certified epsilon among the methods that apply.
    neighbors : list of pairs, optional
        The pairs of values one user's change may swap (as in ``amplify``); every pair of k-RR is equivalent.
    progress : bool, optional
        A progress bar on computations longer than 2 s (None), at once (True) or never (False).
    executor : concurrent.futures.Executor, optional
        Runs independent work in parallel, with results identical to the serial ones: the ``"blanket"`` method
        evaluates (and inverts) each distinct pair of values as one task (``executor.submit``, at most a few
        tasks per worker in flight); the other methods run serially. A ``ThreadPoolExecutor``, a
        ``ProcessPoolExecutor`` or a dask ``Client``'s ``get_executor()``.

    Neighbouring datasets differ in one user's value; the other users' data are the worst case.

    Examples
    --------
    >>> from chainamp import mechanisms
    >>> rep = amplify_shuffled(mechanisms.randomized_response(2, 2.0), 1000)
    >>> rep.method, round(rep.epsilon, 3), rep.exact
    ('exact', 0.323, True)
    """
    n = _check_users(users)
    target = DEFAULT_DELTA if delta is None else check_delta(delta, "delta")
    if not 0.0 < target < 1.0:
        raise InvalidParameterError(f"delta must be in (0, 1) (got {delta!r})")
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {type(method).__name__} {method!r}")
    if method != "auto" and method not in METHODS:
        raise InvalidParameterError(f"method must be 'auto' or one of {sorted(METHODS)} (got {method!r})")
    progress = check_progress(progress)
    executor = check_executor(executor)
    rz = read_randomizer(randomizer, neighbors)
    names = list(METHODS) if method == "auto" else [method]
    if method == "auto" and rz.kind == "rr" and rz.k >= 3:  # the costly two-output bound last: it may be skipped
        names = [m for m in names if m != "exact"] + ["exact"]
    results: dict[str, ShuffleBound] = {}
    table: dict[str, Any] = {}
    missing = []
    spare_lower = None
    for name in names:
        if name == "exact" and method == "auto" and results:
            skip = (skip_two_output(n, rz.k, rz.epsilon0, min(table[m] for m in results), target,
                                    lower=lower_krr_parameters(rz.k, rz.lower_epsilon0)[1:])
                    if rz.kind == "rr" and rz.k >= 3 else None)
            if skip is not None:
                table[name] = ("not computed: a lower estimate of its bound at the best epsilon above is already "
                               "over delta, so its epsilon is larger")
                if skip[0] is not None:
                    spare_lower = ShuffleBound(profile_of_pair(skip[0], name=skip[0].name, exact=True,
                                                               source="exact profile of concrete datasets"),
                                               profile_of_lower(skip[0], name=skip[0].name,
                                                                source="exact profile of concrete datasets"),
                                               skip[1], True)
                continue
        try:
            res = METHODS[name](rz, n, target=target, progress=progress, executor=executor, neighbors=neighbors)
        except ShuffleMethodError as exc:
            if method != "auto":
                raise
            missing.append(str(exc))
            table[name] = "not available in this build"
            continue
        if res is None:
            table[name] = "does not apply to this randomizer"
            if method != "auto":
                raise ShuffleMethodError(f"method {name!r} does not apply to {rz.description}: {_NEEDS[name]}")
            continue
        results[name] = res
        table[name] = float(res.invert(target) if res.invert is not None else res.profile.epsilon(target))
    if not results:
        raise ShuffleMethodError(f"no available method applies to {rz.description}: " + "; ".join(missing))
    best = min(results, key=lambda k: table[k])
    res = results[best]
    if res.lower is None:  # another method's concrete datasets still bound the truth from below
        other = next((r for r in [*results.values(), spare_lower] if r is not None and r.lower is not None), None)
        if other is not None:
            res = ShuffleBound(res.profile, other.lower, other.lower_dataset, res.exact, res.notes, res.invert)
    if best == "blanket":
        tight = _cover_blanket(rz, n, target, res, table[best], progress, executor)
        if tight is not None:
            res, table[best] = tight
    return ShuffleReport(randomizer=rz.description, users=n, method=best, delta=target, epsilon=table[best],
                         profile=res.profile, lower=res.lower, lower_dataset=res.lower_dataset,
                         local_epsilon=rz.local_epsilon, blanket_gamma=rz.blanket_gamma,
                         blanket_omega=rz.blanket_omega, methods=table, notes=res.notes, exact=res.exact,
                         invert=res.invert)
