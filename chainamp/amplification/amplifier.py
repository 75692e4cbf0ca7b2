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
    exact profiles (tested by brute force), an upper bound for a list of points.
``exact``
    For a finite M: the exact profile of the matrix ``M K``.

The report's ``delta_at`` / ``epsilon_at`` take the lower envelope over all
sources. An operator passed in is taken as exact (every coefficient is a bound
for the matrix as stored); products chainamp forms itself (a list of operators,
the steps of :func:`chainamp.amplify_steps`, the pipeline matrix ``M K``) carry
their rounding and underflow error into every coefficient (see
:mod:`chainamp._products` and ``_Adjust``). Every number is rounded toward the safe side; a search over epsilon
returns the upper end of a bracket at which the bound was *evaluated* and found
to hold, so it is certified even where a curve is not monotone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numerics import (BISECTION_ATOL, BISECTION_RTOL, check_delta, check_epsilon, fmt_number, html_table,
                         round_up, text_table)
from .bounds import (BOUND_SOURCES, Bound, doeblin_amplifies_delta, doeblin_frontier, hockey_stick_order, ldp_bound,
                     theorem1_dobrushin, theorem1_doeblin, theorem1_hockey_stick, theorem1_ultra_mixing)
from ..errors import IncompatibleOperatorsError, InvalidMechanismError
from ..mixing import dobrushin, dobrushin_curve, doeblin, ldp_guarantee, ultra_mixing
from ..operators import EXACT, MarkovOperator, multiply, operator_error, ProductError
from ..privacy import DP, PrivacyProfile, privacy_profile

__all__ = ["amplify", "AmplificationReport", "Coefficients", "compose_operators", "as_input_mechanism",
           "InputMechanism"]

_GRID_POINTS = 32
_FRONTIER_POINTS = 9


# --------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class InputMechanism:
    """The input mechanism M as the amplifier sees it.

    Attributes
    ----------
    kind : {"dp", "points", "profile", "finite"}
    description : str
    profile : PrivacyProfile
        Upper bound of M's privacy profile (exact for finite M and exact curves).
    points : tuple of DP or None
        The black-box points, for ``dp`` and ``points``.
    matrix : MarkovOperator or None
        The finite mechanism, for ``finite``.
    neighbors : object
        The neighbour relation for a finite mechanism (None = all pairs, local DP).
    """

    kind: str
    description: str
    profile: PrivacyProfile
    points: tuple | None = None
    matrix: MarkovOperator | None = None
    neighbors: Any = None


def as_input_mechanism(mechanism: Any, neighbors: Any = None) -> InputMechanism:
    """Normalise what :func:`amplify` accepts as M (see its docstring)."""
    if isinstance(mechanism, InputMechanism):
        return mechanism
    if isinstance(mechanism, DP):
        return InputMechanism("dp", f"({fmt_number(mechanism.epsilon)}, {fmt_number(mechanism.delta)})-DP",
                              mechanism.profile, points=(mechanism,))
    if isinstance(mechanism, PrivacyProfile):
        return InputMechanism("profile", mechanism.name, mechanism)
    if isinstance(mechanism, MarkovOperator):
        prof = privacy_profile(mechanism, neighbors)
        what = "local DP" if neighbors is None else "given neighbours"
        return InputMechanism("finite", f"finite mechanism {mechanism.shape[0]}x{mechanism.shape[1]} ({what})",
                              prof, matrix=mechanism, neighbors=neighbors)
    if isinstance(mechanism, tuple) and len(mechanism) == 2 and all(
            isinstance(v, (int, float, np.floating, np.integer)) for v in mechanism):
        return as_input_mechanism(DP(*mechanism))
    if isinstance(mechanism, (list, tuple)):
        if not mechanism:
            raise InvalidMechanismError("mechanism: an empty list of (epsilon, delta) points")
        pts = tuple(p if isinstance(p, DP) else DP(*p) for p in mechanism)
        if len(pts) == 1:
            return as_input_mechanism(pts[0])
        desc = "DP at " + ", ".join(f"({fmt_number(p.epsilon)}, {fmt_number(p.delta)})" for p in pts)
        return InputMechanism("points", desc, PrivacyProfile.from_points(pts), points=pts)
    raise TypeError("mechanism must be a DP, an (epsilon, delta) tuple, a list of them, a PrivacyProfile or a "
                    f"MarkovOperator, got {type(mechanism).__name__}")


def compose_operators(K: MarkovOperator | Sequence[MarkovOperator]) -> MarkovOperator:
    """One operator, or the product ``K1 @ K2 @ ...`` of a sequence applied in order."""
    return _compose_with_error(K)[0]


def _compose_with_error(K) -> tuple[MarkovOperator, ProductError]:
    """The product of a sequence and its rounding error (see :mod:`chainamp._products`)."""
    if isinstance(K, MarkovOperator):
        return K, operator_error(K)
    if isinstance(K, (list, tuple)) and K:
        for i, op in enumerate(K):
            if not isinstance(op, MarkovOperator):
                raise TypeError(f"K[{i}] must be a MarkovOperator, got {type(op).__name__}")
        out, err = K[0], operator_error(K[0])
        for i, op in enumerate(K[1:], start=1):
            try:
                out, err = multiply(out, err, op, operator_error(op))
            except IncompatibleOperatorsError as exc:
                raise IncompatibleOperatorsError(f"K[{i}] does not follow K[{i - 1}]: {exc}") from None
        return out, err
    raise TypeError(f"K must be a MarkovOperator or a non-empty list of them, got {type(K).__name__}")


class _Adjust:
    """Coefficients of the exact operator from those of its stored (computed) product.

    With ``true = stored (1 +- r) +- a`` entrywise (``m`` outputs):

    - TV: each row moves by at most ``r + m a`` in L1, so ``gamma <= gamma~ + r + m a``;
    - Doeblin: ``sum_y min_x K >= (1 - r)(1 - gamma~) - m a``;
    - hockey-stick at ``c = e^o``: ``[p - c q]_+ <= (1 + r)[p~ - c' q~]_+ + a (1 + c)`` with
      ``c' = c (1 - r)/(1 + r)``, so ``D_c <= (1 + r) D~_{c'} + m a (1 + c)``; for ``c' < 1``,
      ``D~_{c'} <= D~_1 + (1 - c')``; at ``o = inf``, ``(1 + r) D~_inf + m a``;
    - ratios (ultra-mixing, pure LDP): each positive entry is within a factor ``1 +- e``
      (``e = r + a / min positive entry``), and they need the exact support.
    Every result is rounded up and capped at 1. An exact operator passes through unchanged.
    """

    def __init__(self, err: ProductError, m: int):
        self.err = err
        self.exact = err.is_exact
        self.r = err.rel
        self.ma = m * err.absolute
        self.shift = math.log1p(2 * self.r / (1 - self.r)) if self.r else 0.0  # log((1+r)/(1-r))

    def _up(self, value: float) -> float:
        return min(round_up(value, 8), 1.0)

    def tv(self, g: float) -> float:
        return g if self.exact else self._up(g + self.r + self.ma)

    def doeblin(self, g: float) -> float:
        return g if self.exact else self._up(g + self.r * (1.0 - g) + self.ma)

    def ultra(self, g: float) -> float:
        if self.exact:
            return g
        e = self.err.ratio_error()
        if not self.err.support_exact or e >= 1.0:
            return 1.0
        return self._up(1.0 - (1.0 - g) * (1.0 - e) / (1.0 + e))

    def pure_epsilon(self, eps_k: float) -> float:
        if self.exact or math.isinf(eps_k):
            return eps_k
        e = self.err.ratio_error()
        if not self.err.support_exact or e >= 1.0:
            return math.inf
        return round_up(eps_k + math.log1p(2 * e / (1 - e)), 8)

    def raw_order(self, order: float) -> float:
        """The order at which the stored operator's coefficient is needed."""
        return order if self.exact or math.isinf(order) else max(order - self.shift, 0.0)

    def hockey(self, raw: Callable[[float], float], order: float) -> float:
        if self.exact:
            return raw(order)
        if math.isinf(order):
            return self._up((1.0 + self.r) * raw(order) + self.ma)
        low = order - self.shift
        base = raw(low) if low >= 0.0 else raw(0.0) - math.expm1(low)
        extra = 0.0
        if self.ma:
            extra = self.ma * (1.0 + math.exp(order)) if order < 700.0 else math.inf
        return self._up((1.0 + self.r) * base + extra)

    def epsilon_bracket(self, raw_epsilon_at: Callable[[float], float], d: float) -> float:
        """An eps at which the adjusted curve is likely <= d (verified by the caller)."""
        if self.exact:
            return raw_epsilon_at(d)
        target = max(d - self.ma * 2.0, 0.0) / (1.0 + self.r)
        e = raw_epsilon_at(target)
        return e + self.shift if math.isfinite(e) else e


# --------------------------------------------------------------------------- sources
class _PairSource:
    """A finite set of certified pairs; the guarantee at eps' is the best pair with eps <= eps'."""

    def __init__(self, name: str, bounds: Iterable[Bound]):
        self.name = name
        self.bounds = tuple(bounds)

    def __repr__(self) -> str:
        return f"<BoundSource {self.name!r}: {len(self.bounds)} certified pairs>"

    def bound_at_epsilon(self, eps: float) -> Bound | None:
        ok = [b for b in self.bounds if b.epsilon <= eps]
        return min(ok, key=lambda b: (b.delta, b.epsilon)) if ok else None

    def bound_at_delta(self, delta: float) -> Bound | None:
        ok = [b for b in self.bounds if b.delta <= delta]
        return min(ok, key=lambda b: (b.epsilon, b.delta)) if ok else None


class _CurveSource:
    """A guarantee at every eps' (``make(eps') -> Bound``), searched by bisection for a delta."""

    def __init__(self, name: str, make: Callable[[float], Bound],
                 upper: Callable[[float], float], epsilon_for: Callable[[float], float] | None = None):
        self.name = name
        self._make = make
        self._upper = upper
        self._epsilon_for = epsilon_for
        self._cache: dict[float, Bound] = {}

    def __repr__(self) -> str:
        return f"<BoundSource {self.name!r}: a guarantee at every epsilon'>"

    def bound_at_epsilon(self, eps: float) -> Bound | None:
        if eps not in self._cache:
            self._cache[eps] = self._make(eps)
        return self._cache[eps]

    def _holds(self, eps: float, delta: float) -> Bound | None:
        if not math.isfinite(eps):
            return None
        b = self.bound_at_epsilon(eps)
        return b if b.delta <= delta else None

    def bound_at_delta(self, delta: float) -> Bound | None:
        if self._epsilon_for is not None:
            hit = self._holds(self._epsilon_for(delta), delta)
            if hit is not None:
                return hit
        first = self._holds(0.0, delta)
        if first is not None:
            return first
        hi = self._upper(delta)
        hit = self._holds(hi, delta)
        if hit is None and math.isfinite(hi):  # the bracket end may miss by rounding: widen once
            hi = hi * (1.0 + 1e-9) + 1e-12
            hit = self._holds(hi, delta)
        if hit is None:
            return None
        lo = 0.0
        while hi - lo > max(BISECTION_ATOL, BISECTION_RTOL * hi):
            mid = 0.5 * (lo + hi)
            cand = self._holds(mid, delta)
            if cand is None:
                lo = mid
            else:
                hi, hit = mid, cand
        return hit


def _normalised_profile(profile: PrivacyProfile, adj: "_Adjust") -> PrivacyProfile:
    """Profile of a finite mechanism whose stored rows are normalised (see :func:`operator_error`):
    the stored matrix's exact profile widened by the entrywise error model of ``_Adjust``."""
    if adj.exact:
        return profile

    def fn(e: float) -> float:
        return adj.hockey(lambda o: min(float(profile.delta(o)), 1.0), e)

    pure = adj.pure_epsilon(profile.pure_epsilon)
    for _ in range(16):  # the widened curve is 0 from the widened pure level on; make sure of it in floats
        if not math.isfinite(pure) or fn(pure) == 0.0:
            break
        pure = math.nextafter(pure, math.inf) * (1 + 2.0**-50)
    return PrivacyProfile.from_callable(fn, name=profile.name, exact=False, source=profile.source,
                                        pure_epsilon=pure if math.isfinite(pure) and fn(pure) == 0.0 else None)


def _first_finite(*candidates: Callable[[], float]) -> float:
    """The first finite value among lazily evaluated candidates (later ones may be costly)."""
    for make in candidates:
        v = make()
        if math.isfinite(v):
            return v
    return math.inf


def _best(sources, fn: str, arg: float) -> Bound | None:
    found = [getattr(s, fn)(arg) for s in sources]
    found = [b for b in found if b is not None]
    if not found:
        return None
    key = (lambda b: (b.delta, b.epsilon)) if fn == "bound_at_epsilon" else (lambda b: (b.epsilon, b.delta))
    return min(found, key=key)


# --------------------------------------------------------------------------- report
@dataclass(frozen=True)
class Coefficients:
    """The mixing coefficients of K (restricted to the inputs M can produce) that the bounds used."""

    dobrushin: Any
    doeblin: Any
    ultra_mixing: Any
    ldp_epsilon: float
    inputs_used: int
    dobrushin_gamma: float = math.nan
    doeblin_gamma: float = math.nan
    ultra_mixing_gamma: float = math.nan
    product_error: ProductError = EXACT

    def __post_init__(self) -> None:
        # the gammas the bounds use: the results' own, unless K is a computed product (then widened)
        for name in ("dobrushin", "doeblin", "ultra_mixing"):
            if math.isnan(getattr(self, f"{name}_gamma")):
                object.__setattr__(self, f"{name}_gamma", getattr(self, name).gamma)

    def to_dict(self) -> dict:
        return {"dobrushin": self.dobrushin_gamma, "dobrushin_pair": _jsonable(self.dobrushin.pair),
                "doeblin": self.doeblin_gamma, "ultra_mixing": self.ultra_mixing_gamma,
                "ldp_epsilon": _jsonable(self.ldp_epsilon), "inputs_used": self.inputs_used,
                "product_rel_error": self.product_error.rel}


@dataclass(frozen=True)
class AmplificationReport:
    """Every certified guarantee for K o M, the recommended one, and the evidence.

    Attributes
    ----------
    mechanism : InputMechanism
    operator : MarkovOperator
        The post-processing K (the product, for a list of operators).
    target_delta : float
        The delta at which ``bounds`` and ``best`` are reported.
    bounds : tuple of Bound
        For each source: the paper's clause applied at the input's point(s), and the
        source's smallest epsilon' with delta' <= target_delta.
    best : Bound
        The smallest certified epsilon' with delta' <= target_delta.
    exact : Bound or None
        The exact (epsilon', delta') of M K at target_delta, for a finite M.
    coefficients : Coefficients
    notes : tuple of str
    """

    mechanism: InputMechanism
    operator: MarkovOperator
    target_delta: float
    bounds: tuple
    best: Bound
    exact: Bound | None
    coefficients: Coefficients
    notes: tuple = ()
    sources: tuple = field(default=(), repr=False, compare=False)

    def __repr__(self) -> str:
        return (f"<AmplificationReport M={self.mechanism.description}; K {self.operator.shape[0]}x"
                f"{self.operator.shape[1]}; best ({fmt_number(self.best.epsilon)}, {fmt_number(self.best.delta)})"
                f" from {self.best.source}>")

    def bound_at(self, epsilon: float) -> Bound:
        """The certified bound with the smallest delta' at ``epsilon`` (lower envelope over sources)."""
        eps = check_epsilon(epsilon, "epsilon")
        return _best(self.sources, "bound_at_epsilon", eps) or Bound(eps, 1.0, "ldp", reference="trivial")

    def delta_at(self, epsilon: float) -> float:
        """Smallest certified delta' at ``epsilon'`` over every source (1.0 if none applies)."""
        return self.bound_at(epsilon).delta

    def bound_for(self, delta: float) -> Bound:
        """The certified bound with the smallest epsilon' among those with delta' <= ``delta``."""
        d = check_delta(delta, "delta")
        return _best(self.sources, "bound_at_delta", d) or Bound(math.inf, d, "ldp", reference="none certified")

    def epsilon_at(self, delta: float) -> float:
        """Smallest certified epsilon' with delta' <= ``delta`` (``inf`` if no source reaches it)."""
        return self.bound_for(delta).epsilon

    def source_epsilon(self, source: str, delta: float | None = None) -> float:
        """Smallest epsilon' the given source certifies at ``delta`` (default: the target delta)."""
        d = self.target_delta if delta is None else check_delta(delta, "delta")
        for s in self.sources:
            if s.name == source:
                b = s.bound_at_delta(d)
                return math.inf if b is None else b.epsilon
        raise InvalidMechanismError(f"source must be one of {[s.name for s in self.sources]} (got {source!r})")

    def gaps(self) -> dict[str, float]:
        """epsilon' of each source minus the exact epsilon' at the target delta (finite M only)."""
        if self.exact is None:
            return {}
        return {s.name: self.source_epsilon(s.name) - self.exact.epsilon for s in self.sources
                if s.name != "exact"}

    # ------------------------------------------------------------- presentation
    def _rows(self):
        rows = []
        for b in self.bounds:
            gap = None
            if self.exact is not None and b.delta <= self.target_delta and b.source != "exact":
                gap = b.epsilon - self.exact.epsilon
            gamma = None if b.source == "ldp" else b.gamma  # the LDP bound uses K's curve, not one gamma
            row = [b.source, b.epsilon, b.delta, gamma, b.input_epsilon, b.input_delta]
            if self.exact is not None:
                row.append(gap)
            rows.append(row + ["*" if b == self.best else ""])
        return rows

    @property
    def _header(self) -> list[str]:
        head = ["source", "epsilon'", "delta'", "gamma", "from eps", "from delta"]
        return head + (["vs exact"] if self.exact is not None else []) + ["best"]

    def __str__(self) -> str:
        c = self.coefficients
        head = [
            f"K o M with M = {self.mechanism.description}",
            f"K: {self.operator.shape[0]}x{self.operator.shape[1]} operator "
            f"({c.inputs_used} inputs reachable by M)",
            f"coefficients: Dobrushin {fmt_number(c.dobrushin_gamma)}, Doeblin {fmt_number(c.doeblin_gamma)}, "
            f"ultra-mixing {fmt_number(c.ultra_mixing_gamma)}, K is {fmt_number(c.ldp_epsilon)}-LDP",
            "",
        ]
        table = text_table(self._header, self._rows(), title=f"certified bounds (target delta' <= "
                                                             f"{fmt_number(self.target_delta)})")
        tail = [f"best: ({fmt_number(self.best.epsilon)}, {fmt_number(self.best.delta)})-DP from "
                f"{self.best.source} [{self.best.reference}]"]
        tail += [f"note: {n}" for n in self.notes]
        return "\n".join(head) + table + "\n\n" + "\n".join(tail)

    def _repr_html_(self) -> str:
        c = self.coefficients
        import html

        lines = [f"<p><b>K o M</b> with M = {html.escape(self.mechanism.description)}; K "
                 f"{self.operator.shape[0]}&times;{self.operator.shape[1]}. Dobrushin "
                 f"{fmt_number(c.dobrushin_gamma)}, Doeblin {fmt_number(c.doeblin_gamma)}, ultra-mixing "
                 f"{fmt_number(c.ultra_mixing_gamma)}.</p>",
                 html_table(self._header, self._rows()),
                 f"<p><b>best</b>: ({fmt_number(self.best.epsilon)}, {fmt_number(self.best.delta)})-DP "
                 f"from {html.escape(self.best.source)}</p>"]
        lines += [f"<p><i>note:</i> {html.escape(n)}</p>" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-safe summary (infinities as ``"inf"``)."""
        return {
            "mechanism": {"kind": self.mechanism.kind, "description": self.mechanism.description},
            "operator_shape": list(self.operator.shape),
            "target_delta": self.target_delta,
            "coefficients": self.coefficients.to_dict(),
            "bounds": [b.to_dict() for b in self.bounds],
            "best": self.best.to_dict(),
            "exact": None if self.exact is None else self.exact.to_dict(),
            "gaps": {k: _jsonable(v) for k, v in self.gaps().items()},
            "notes": list(self.notes),
        }

    def plot(self, **kwargs):
        """Plot the input profile, each source's bound and the exact profile (needs matplotlib)."""
        from ..audit import plot_report

        return plot_report(self, **kwargs)


def _jsonable(v):
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


# --------------------------------------------------------------------------- amplify
def _reachable_inputs(mech: InputMechanism, K: MarkovOperator, inputs) -> tuple:
    reach = K.inputs
    if mech.kind == "finite":
        M = mech.matrix
        if set(M.outputs) != set(K.inputs) or len(M.outputs) != len(K.inputs):
            raise IncompatibleOperatorsError(
                f"the outputs of M ({len(M.outputs)} labels) must be the inputs of K ({len(K.inputs)} labels)")
        mass = np.asarray(M.sparse.sum(axis=0)).ravel() if M.is_sparse else M.matrix.sum(axis=0)
        reach = tuple(lab for lab, w in zip(M.outputs, mass) if w > 0)
    if inputs is None:
        return reach
    labels = tuple(inputs)
    for lab in labels:
        K.input_index(lab)
    given = set(labels)
    missing = [lab for lab in reach if lab not in given] if mech.kind == "finite" else []
    if missing:
        raise InvalidMechanismError(
            f"inputs omits {missing[:4]!r}{' ...' if len(missing) > 4 else ''}, which the finite mechanism M "
            "can produce: Theorem 1 needs every input M reaches")
    return labels


def _target_delta(mech: InputMechanism, profile: PrivacyProfile, delta) -> float:
    if delta is not None:
        return check_delta(delta, "delta")
    if mech.kind == "dp":
        return mech.points[0].delta
    if mech.kind == "points":
        return min(p.delta for p in mech.points)
    if math.isfinite(profile.pure_epsilon):
        return 0.0
    raise InvalidMechanismError(f"{mech.description} has no pure-DP level: pass delta= (the delta' to report at)")


def _profile_points(profile: PrivacyProfile, target: float, gammas: Sequence[float]) -> list[tuple[float, float]]:
    """Points (eps, delta_M(eps)) of the input profile at which the clauses are applied."""
    top = profile.pure_epsilon
    if not math.isfinite(top):
        top = profile.epsilon(1e-15)
    eps = list(np.linspace(0.0, top, _GRID_POINTS)) if math.isfinite(top) else []
    for g in gammas:
        for d in (target, target / g if g > 0 else 1.0):
            if 0.0 < d <= 1.0:
                e = profile.epsilon(min(d, 1.0))
                if math.isfinite(e):
                    eps.append(e)
    eps = sorted(set(float(e) for e in eps))
    return [(e, float(min(profile.delta(e), 1.0))) for e in eps]


def amplify(mechanism: Any, K: MarkovOperator | Sequence[MarkovOperator], *, neighbors: Any = None,
            delta: float | None = None, inputs: Iterable | None = None) -> AmplificationReport:
    """Certify (epsilon', delta') for K o M with every applicable bound.

    Parameters
    ----------
    mechanism :
        ``DP(eps, delta)`` or an ``(eps, delta)`` tuple; a list of them (M satisfies
        each); a :class:`PrivacyProfile`; or a finite mechanism as a
        :class:`MarkovOperator` from data values to K's inputs.
    K : MarkovOperator or list of MarkovOperator
        The post-processing, applied in order (``K1`` first).
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
    Kop, err = _compose_with_error(K)
    return _amplify_operator(mech, Kop, err, delta=delta, inputs=inputs)


def _amplify_operator(mech: InputMechanism, Kop: MarkovOperator, err: ProductError, *, delta=None,
                      inputs=None) -> AmplificationReport:
    """:func:`amplify` for a normalised input and an operator whose rounding error is ``err``."""
    profile = mech.profile
    err_m = EXACT
    if mech.kind == "finite":
        err_m = operator_error(mech.matrix)
        profile = _normalised_profile(profile, _Adjust(err_m, mech.matrix.shape[1]))
    target = _target_delta(mech, profile, delta)
    used = _reachable_inputs(mech, Kop, inputs)
    if not used:
        raise InvalidMechanismError("M puts no mass on any input of K")
    Kr = Kop.restrict(used) if used != Kop.inputs else Kop
    adj = _Adjust(err, Kr.shape[1])

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
        points = _profile_points(profile, target, [g_tv, g_doe, g_ult])
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
        sources.append(_PairSource(name, bs))
    if mech.kind in ("dp", "points"):
        for p in mech.points:
            if not doeblin_amplifies_delta(p.epsilon, p.delta, g_doe):
                notes.append(f"Theorem 1(3) does not amplify delta at ({fmt_number(p.epsilon)}, "
                             f"{fmt_number(p.delta)}): gamma_Doeblin = {fmt_number(g_doe)} exceeds "
                             "delta e^eps / ((1 - delta)(e^eps - 1))")

    # ---- Theorem 1(1)/(2) along a whole profile are curves
    if mech.kind in ("profile", "finite"):
        sources[0] = _CurveSource(
            "theorem1.dobrushin", lambda e: theorem1_dobrushin(e, min(profile.delta(e), 1.0), g_tv),
            upper=lambda d: profile.epsilon(min(d / g_tv, 1.0)) if g_tv > 0 else 0.0,
            epsilon_for=lambda d: profile.epsilon(min(d / g_tv, 1.0)) if g_tv > 0 else 0.0)

    # ---- LDP table and the tight black-box bound
    def ldp_bracket(d: float) -> float:
        return adj.epsilon_bracket(ldp.epsilon_at, d)

    sources.append(_CurveSource("ldp", lambda e: ldp_bound(e, dob_at(e)), upper=ldp_bracket,
                                epsilon_for=ldp_bracket))

    def tight(e: float, name: str = "tight") -> Bound:
        alpha = min(float(profile.delta(e)), 1.0)
        order = hockey_stick_order(e, alpha)
        return theorem1_hockey_stick(e, alpha, dob_at(order), source=name, gamma_epsilon=order)

    # at eps' = epsilon_M(d) the input itself has alpha <= d, so tight <= alpha <= d there
    sources.append(_CurveSource("tight", tight, upper=lambda d: _first_finite(lambda: profile.epsilon(d),
                                                                               lambda: ldp_bracket(d))))
    if mech.kind in ("profile", "finite"):
        sources[1] = _CurveSource("theorem1.hockey_stick", lambda e: tight(e, "theorem1.hockey_stick"),
                                  upper=lambda d: profile.epsilon(d))

    # ---- exact profile of the finite pipeline
    exact_bound = None
    if mech.kind == "finite":
        P, err_p = multiply(mech.matrix, err_m, Kop, err)
        exact_prof = privacy_profile(P, mech.neighbors)
        adj_p = _Adjust(err_p, P.shape[1])

        def exact_delta(e: float) -> float:
            return adj_p.hockey(lambda o: min(float(exact_prof.delta(o)), 1.0), e)

        def exact_bracket(d: float) -> float:
            return adj_p.epsilon_bracket(exact_prof.epsilon, d)

        exact_src = _CurveSource("exact", lambda e: Bound(e, exact_delta(e), "exact"),
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
