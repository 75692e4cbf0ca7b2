"""Many reports of one pipeline: memoized (one permanent draw, T instantaneous reports) or fresh.

:func:`amplify_reports` certifies T reports. With ``memoized=True`` the mechanism's output b is
drawn once (RAPPOR's permanent randomized response, Erlingsson, Pihur and Korolova 2014) and K
is applied to it T times independently; with ``memoized=False`` every report is a fresh draw of
the whole pipeline, the T-fold composition of one report (:func:`chainamp.accounting.compose`).

The memoized channel. Given b, the reports ``y_1..y_T`` are i.i.d. with law ``K(b, .)``, so
``P[y_1..y_T | b] = prod_y K(b, y)^{n_y}`` depends on the sequence only through its *type*, the
counts ``n = (n_y)_y``: the type is a sufficient statistic. The sequence channel is the type
channel ``b -> n`` (multinomial rows, ``C(T + m - 1, m - 1)`` outcomes for m report values)
followed by a uniform arrangement of the counts, which does not depend on b; and the type is a
function of the sequence. Each is a post-processing of the other, so ``M`` followed by either has
the same exact privacy profile (Balle, Barthe, Gaboardi and Geumlek 2019, Section 2: profiles
never grow under post-processing). When K is a product over coordinates (RAPPOR's
instantaneous response, bit by bit: ``K = K_1 (x) ... (x) K_k``), ``P[seq | b] =
prod_i prod_w K_i(b_i, w)^{n_{i,w}}`` and the per-coordinate types (``(T + 1)^k`` outcomes for
bits) are already sufficient, by the same argument. The profile of ``M`` followed by the
T-report channel is a post-processing of ``M``, hence never above ``M``'s own profile (RAPPOR's
``eps_inf``), and non-decreasing in T (T reports are a post-processing of T + 1).

Product pipelines. When M and K are Kronecker products on the same coordinates (RAPPOR at deployed sizes:
``rappor_pipeline(m, h)`` beyond m = 10 or with ``structured=True``; unary encodings), the T reports are
certified coordinate by coordinate (:mod:`.product_reports`): each coordinate's count channel is tiny (T + 1
outcomes for bits), the worst pairs of inputs differ in a few coordinates (2 min(h, m - h) for Bloom filters
with h ones), and the exact profile of their product pair is the composition of the per-coordinate privacy
loss distributions (:mod:`.loss_atoms`). Nothing of size 2^m is enumerated; M's outputs and K's inputs are
compared by size first, then structurally (never as sets of 2^m labels).

Soundness. The multinomial rows are never rounded into a matrix here: the channel is passed to
:func:`chainamp.amplify` as a *list* of step operators whose entries are K's own stored entries
(or those of its exact Kronecker factors) and 0/1, one step per report and coordinate, on the
states ``(b, counts so far)``; the last step forgets b. :func:`chainamp.amplify` forms their
product with its entrywise error model (:mod:`chainamp.operators.products`) and widens every
bound by it. That model charges underflow heavily, so the number of reports is capped where a
sequence probability could leave the normal range (``min K^T < 2^-1000``), and the number of
outcomes and states by ``max_outcomes``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..amplification import amplify
from ..errors import IncompatibleOperatorsError, InvalidParameterError
from ..operators import MarkovOperator, as_operator, same_label_set
from .product_reports import dense_product_plan, product_plan, product_reports_profile
from ..privacy import PrivacyProfile, privacy_profile
from .._numerics import check_int, check_progress, progress_bar, progress_scope

__all__ = ["amplify_reports", "memoized_steps", "MAX_REPORT_OUTCOMES"]

#: Largest number of outcomes (count vectors) and of intermediate states ``(b, counts)`` that
#: :func:`memoized_steps` builds; overridable with ``max_outcomes=``.
MAX_REPORT_OUTCOMES = 200_000
#: Sequence probabilities must stay above 2^-_MIN_LOG2_PROB (normal doubles, no underflow in the product).
_MIN_LOG2_PROB = 1000.0
#: M's outputs and K's inputs are compared as sets only up to this many labels (lazily beyond).
_LABEL_SET_MAX = 1 << 20
#: The exact (Fraction) check that K is a Kronecker product is run on at most this many entries.
_KRON_CHECK_ENTRIES = 2**16


def amplify_reports(mechanism: Any, K: Any, reports: int, *, memoized: bool = True, delta: float | None = None,
                    neighbors: Any = None, max_outcomes: int = MAX_REPORT_OUTCOMES, progress: bool | None = None):
    """Certify (epsilon', delta') for T reports of the pipeline M then K.

    ``memoized=True``: M's output b is drawn once and each of the T reports applies K to it
    independently; the certified channel is ``b -> counts`` (see the module docstring), passed
    to :func:`chainamp.amplify` as a list of exact step operators, so every source of ``amplify``
    (the exact profile of a finite M included) applies and every rounding is accounted for. The
    guarantee is never above M's own and grows with T towards it: for RAPPOR,
    ``eps_T -> eps_inf = 2 h log((1 - f/2)/(f/2))`` (Erlingsson, Pihur and Korolova 2014).
    One report (``reports=1``) is exactly ``amplify(M, K)``.

    ``memoized=False``: T fresh draws of the whole pipeline, the T-fold composition of the one-report
    guarantee ``amplify(M, K)`` (:func:`chainamp.accounting.compose`), returned as a report
    on that profile (its ``operator`` is the 2-state identity, which leaves a profile unchanged).
    Shuffled rounds (each of T rounds: n users' fresh reports through M then K, shuffled) are the same
    composition of the shuffled guarantee: ``compose([amplify_shuffled([M, K], n)], counts=[T])`` (a
    ``ShuffleReport`` is a composable item; :mod:`chainamp.shuffle` sits above this module, so it is not a
    keyword here).

    Product pipelines (M and K Kronecker products on the same coordinates, all pairs neighbours, T >= 2; see
    the module docstring): both kinds are certified coordinate by coordinate, exactly (the exact profile of
    the T reports, rounded up; beyond :data:`~chainamp.accounting.loss_atoms.MAX_HALF_ATOMS` atoms per half
    the losses are rounded up to a fine grid and the profile says it is a bound), returned as a report on
    that profile (operator: the 2-state identity). Memoized reports are also capped by M's own profile.
    ``rappor_pipeline(128, 2)`` at T = 1000 takes well under a second.

    Parameters
    ----------
    mechanism :
        What :func:`chainamp.amplify` accepts as M: a finite mechanism (its outputs must be K's
        inputs) or a black-box guarantee (``DP``, points, a profile).
    K : MarkovOperator or 2-D array
        One report's post-processing (a single operator: multiply a list yourself).
    reports : int
        T >= 1.
    memoized : bool
        True (default): one permanent draw, T reports of it. False: T fresh draws.
    delta, neighbors :
        As in :func:`chainamp.amplify`.
    max_outcomes : int
        Refuse (InvalidParameterError) when the memoized channel has more outcomes or
        intermediate states than this (default ``MAX_REPORT_OUTCOMES``); product pipelines are refused
        when one coordinate's count channel has more than ``MAX_COORDINATE_OUTCOMES`` outcomes.
    progress : bool or None
        tqdm bars over the stages (the T-report channel, built step by step, then its certificate; for
        ``memoized=False`` the one-report certificate, the composition, its report): ``None`` (default)
        shows them for work longer than two seconds, ``True`` at once, ``False`` never.

    Returns
    -------
    AmplificationReport
        For ``memoized=True`` its ``operator`` is the T-report count channel: outputs are count
        vectors over K's outputs (or, for a Kronecker-product K, tuples of per-coordinate counts).

    Examples
    --------
    >>> from chainamp import mechanisms
    >>> M, K = mechanisms.rappor_permanent(0.5), mechanisms.rappor_instantaneous(0.5, 0.75)
    >>> [round(amplify_reports(M, K, t).best.epsilon, 4) for t in (1, 2, 10)]
    [0.3365, 0.619, 1.096]
    >>> round(math.log(3), 4)  # eps_inf of one bit at f = 0.5
    1.0986
    >>> R = mechanisms.rappor_pipeline(128, 2)  # Kronecker products: certified bit by bit
    >>> [round(amplify_reports(R.mechanism, R.instantaneous, t).best.epsilon, 4) for t in (10, 1000)]
    [4.2993, 4.3944]
    """
    T = check_int(reports, "reports", minimum=1)
    if not isinstance(memoized, bool):
        raise TypeError(f"memoized must be a bool, got {type(memoized).__name__} {memoized!r}")
    max_out = check_int(max_outcomes, "max_outcomes", minimum=1)
    progress = check_progress(progress)
    if isinstance(K, (list, tuple)) and any(isinstance(op, MarkovOperator) or sp.issparse(op) for op in K):
        raise TypeError("K must be one operator for amplify_reports (one report's post-processing), got a list "
                        "of operators")
    Kop = as_operator(K, "K")
    if isinstance(mechanism, np.ndarray) or sp.issparse(mechanism):
        mechanism = as_operator(mechanism, "mechanism")
    if isinstance(mechanism, MarkovOperator):
        _check_compatible(mechanism, Kop)
    if T > 1 and neighbors is None:
        plan = product_plan(mechanism, Kop)
        if plan is None and isinstance(mechanism, MarkovOperator):  # dense operators that are exact products
            plan = dense_product_plan(mechanism, _kron_factors(Kop))
        if plan is not None:  # a product pipeline: certified coordinate by coordinate, no label enumerated
            return _product_reports(plan, mechanism, T, memoized, delta=delta, progress=progress)
    if not memoized:
        return _fresh_reports(mechanism, Kop, T, delta=delta, neighbors=neighbors, progress=progress)
    if T == 1:
        return amplify(mechanism, Kop, delta=delta, neighbors=neighbors)
    with progress_bar(2, "amplify_reports", unit="stage", progress=progress) as bar, progress_scope(progress):
        bar.set_postfix_str(f"the {T}-report channel", refresh=False)
        steps = memoized_steps(Kop, T, max_outcomes=max_out, progress=progress)
        bar.update(1)
        bar.set_postfix_str("certifying (chainamp.amplify)", refresh=False)
        report = amplify(mechanism, list(steps), delta=delta, neighbors=neighbors)
        bar.update(1)
    return report


def _check_compatible(M: MarkovOperator, K: MarkovOperator) -> None:
    """M's outputs must be K's inputs, in any order, compared without listing lazy labels
    (:func:`chainamp.operators.same_label_set`: sizes first, lazy label spaces by their description, other
    label sets sized before they are built)."""
    if not same_label_set(M.outputs, K.inputs, "the outputs of M and the inputs of K"):
        raise IncompatibleOperatorsError(f"the outputs of M ({M.shape[1]} labels) must be the inputs of K "
                                         f"({K.shape[0]} labels)")


def _product_reports(plan, mechanism, T: int, memoized: bool, *, delta, progress=None):
    """The report of T reports of a product pipeline from its per-coordinate profile; memoized reports are a
    post-processing of M, so their profile is also capped by M's own exact profile (pointwise minimum of two
    upper bounds)."""
    Mf, F, types = plan
    with progress_bar(2, "amplify_reports", unit="stage", progress=progress) as bar, progress_scope(progress):
        bar.set_postfix_str(f"{T} reports, coordinate by coordinate", refresh=False)
        profile = product_reports_profile(Mf, F, types, T, memoized=memoized)
        if memoized:
            profile = _capped(profile, privacy_profile(mechanism))
        bar.update(1)
        bar.set_postfix_str("the report of the profile", refresh=False)
        report = amplify(profile, MarkovOperator.identity(2), delta=delta)
        bar.update(1)
    return report


def _capped(profile: PrivacyProfile, cap: PrivacyProfile) -> PrivacyProfile:
    """The pointwise minimum of two upper bounds of one profile (exact when the first one is)."""
    def evaluate(eps: np.ndarray) -> np.ndarray:
        return np.minimum(profile.delta(eps), cap.delta(eps))

    return PrivacyProfile(evaluate, name=profile.name, source=f"{profile.source}, capped by M's own profile",
                          exact=profile.exact, pure_epsilon=min(profile.pure_epsilon, cap.pure_epsilon))


def _fresh_reports(mechanism, Kop: MarkovOperator, T: int, *, delta, neighbors, progress=None):
    with progress_bar(3 if T > 1 else 1, "amplify_reports", unit="stage", progress=progress) as bar, \
            progress_scope(progress):
        bar.set_postfix_str("one report (chainamp.amplify)", refresh=False)
        one = amplify(mechanism, Kop, delta=delta, neighbors=neighbors)
        bar.update(1)
        if T == 1:
            return one
        from .composition import compose  # a sibling module, imported when needed

        bar.set_postfix_str(f"composing {T} reports", refresh=False)
        profile = compose([one], counts=[T], progress=progress)
        bar.update(1)
        bar.set_postfix_str("the report of the composition", refresh=False)
        report = amplify(profile, MarkovOperator.identity(2), delta=delta)
        bar.update(1)
    return report


def memoized_steps(K: MarkovOperator, reports: int, *, max_outcomes: int = MAX_REPORT_OUTCOMES,
                   progress: bool | None = None) -> tuple[MarkovOperator, ...]:
    """Operators whose product (in order) is the channel from K's input b to the counts of T reports.

    Each report draws ``y ~ K(b, .)`` independently. The states are ``(b, counts so far)``; each
    step adds one report's value to the counts with probability ``K(b, y)``, and the last step
    drops b, leaving the type: ``n_y`` for each of K's outputs y (output label: the tuple of
    counts in K's output order). When K is exactly (verified in rational arithmetic) a Kronecker
    product ``K_1 (x) ... (x) K_k`` over tuple labels (:func:`chainamp.kron`, RAPPOR), and that has
    fewer outcomes, the steps go coordinate by coordinate (all T reports of coordinate 1, then
    drop ``b_1``, ...) and the outcome is the tuple of per-coordinate types. Every entry is an
    entry of K (or of its factor) or 0/1, so the product is computed with chainamp's error model
    when passed to :func:`chainamp.amplify` as a list.

    Parameters
    ----------
    K : MarkovOperator
    reports : int
        T >= 1.
    max_outcomes : int
        Largest number of outcomes and of states of any step (InvalidParameterError beyond it).
    progress : bool or None
        A tqdm bar over the steps built (one per report and coordinate): ``None`` (default) past two
        seconds, ``True`` at once, ``False`` never.

    Examples
    --------
    >>> K = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
    >>> steps = memoized_steps(K, 3)
    >>> P = steps[0] @ steps[1] @ steps[2]
    >>> P.outputs
    ((0, 3), (1, 2), (2, 1), (3, 0))
    >>> P.row(0).tolist() == [1/64, 9/64, 27/64, 27/64]
    True
    """
    T = check_int(reports, "reports", minimum=1)
    max_out = check_int(max_outcomes, "max_outcomes", minimum=1)
    progress = check_progress(progress)
    K = as_operator(K, "K")
    general = [(K.inputs, K.outputs, K.matrix)]
    plans = [(_sizes(general, T), general, False)]
    factors = _kron_factors(K)
    if factors is not None:
        plans.append((_sizes(factors, T), factors, True))
    (outcomes, states), coords, by_coordinate = min(plans, key=lambda p: p[0])
    if max(outcomes, states) > max_out:
        what = "per-coordinate count tuples" if by_coordinate else \
            f"count vectors over {K.shape[1]} report values, C(T + m - 1, m - 1)"
        raise InvalidParameterError(
            f"reports={T}: the memoized channel has {outcomes} outcomes ({what}) and up to {states} "
            f"intermediate states; the limit is max_outcomes={max_out}")
    log2_min = sum(-math.log2(float(F[F > 0].min())) for _, _, F in coords)
    if T * log2_min > _MIN_LOG2_PROB:
        # one report is K itself, certified without this product (amplify_reports and the audit take that path)
        top = max(1, int(_MIN_LOG2_PROB // log2_min))
        can = "only one report (reports = 1, K itself)" if top == 1 else f"at most {top} memoized reports of this K"
        raise InvalidParameterError(
            f"reports={T}: the least likely report sequence has probability about 2^-{T * log2_min:.0f}, below "
            f"the normal range of doubles (2^-{_MIN_LOG2_PROB:.0f}), where the product's underflow "
            f"error would swamp the bound; {can} can be certified")
    with progress_bar(len(coords) * T, "memoized report steps", unit="step", progress=progress) as bar:
        return _build_steps(K, coords, T, by_coordinate, bar.update)


def _sizes(coords, T: int) -> tuple[int, int]:
    """(number of outcomes, most states of any intermediate step) of the coordinate-major steps."""
    types = [math.comb(T + len(outs) - 1, len(outs) - 1) for _, outs, _ in coords]
    most = 0
    for i, (ins, outs, _) in enumerate(coords):
        rest = math.prod(len(c[0]) for c in coords[i:])  # b_i..b_k still held
        done = math.prod(types[:i])
        most = max(most, rest * done * math.comb(T - 1 + len(outs) - 1, len(outs) - 1))
    return math.prod(types), most


def _kron_factors(K: MarkovOperator):
    """``[(inputs_i, outputs_i, K_i), ...]`` when K is exactly ``K_1 (x) ... (x) K_k`` (k >= 2) on
    tuple labels in :func:`chainamp.kron`'s order, else None. The factors are read off K's row
    marginals in floats and the identity ``K(b, y) = prod_i K_i(b_i, y_i)`` is then checked for
    every entry in rational arithmetic, so a K that is a product only up to rounding is refused
    (its per-coordinate counts would not be exactly sufficient)."""
    ins, outs = K.inputs, K.outputs
    if not all(isinstance(x, tuple) for x in ins + outs):
        return None
    k = len(ins[0])
    if k < 2 or any(len(x) != k for x in ins + outs) or K.shape[0] * K.shape[1] > _KRON_CHECK_ENTRIES:
        return None

    def axes(labels):
        vals = [tuple(dict.fromkeys(lab[i] for lab in labels)) for i in range(k)]
        return vals if tuple(itertools.product(*vals)) == labels else None

    in_vals, out_vals = axes(ins), axes(outs)
    if in_vals is None or out_vals is None:
        return None
    A = K.matrix
    shape_in, shape_out = [len(v) for v in in_vals], [len(v) for v in out_vals]
    T4 = A.reshape(shape_in + shape_out)
    factors = []
    for i in range(k):
        base = [0] * k
        rows = []
        for v in range(shape_in[i]):
            base[i] = v
            row = T4[tuple(base)]  # the outputs of one input, as a k-dim array
            other = tuple(j for j in range(k) if j != i)
            rows.append(np.asarray(row.sum(axis=other) if other else row, dtype=float))
        factors.append(np.array(rows))
    approx = factors[0]
    for F in factors[1:]:
        approx = np.kron(approx, F)
    if not np.array_equal(approx, A):
        return None
    fr = [[[Fraction(float(x)) for x in r] for r in F] for F in factors]
    for bi, b in enumerate(itertools.product(*[range(s) for s in shape_in])):
        for yi, y in enumerate(itertools.product(*[range(s) for s in shape_out])):
            exact = Fraction(1)
            for i in range(k):
                exact *= fr[i][b[i]][y[i]]
            if exact != Fraction(float(A[bi, yi])):
                return None
    return [(in_vals[i], out_vals[i], factors[i]) for i in range(k)]


def _build_steps(K: MarkovOperator, coords, T: int, by_coordinate: bool,
                 tick=lambda n: None) -> tuple[MarkovOperator, ...]:
    """The step operators, vectorised. A state is one row of an integer array: the indices of
    ``b_i..b_k`` still held, the finished types, the current counts. Intermediate labels are
    integers (states in lexicographic order), the first step's inputs are K's inputs and the last
    step's outputs the type(s)."""
    k = len(coords)
    widths = [len(c[1]) for c in coords]
    if by_coordinate:
        index = [{v: j for j, v in enumerate(c[0])} for c in coords]
        held = np.array([[index[i][lab[i]] for i in range(k)] for lab in K.inputs], dtype=np.int64)
    else:
        held = np.arange(K.shape[0], dtype=np.int64)[:, None]
    states = np.hstack([held, np.zeros((held.shape[0], widths[0]), dtype=np.int64)])
    inputs: tuple = K.inputs
    ops = []
    for i, (_, _, F) in enumerate(coords):
        cur = states.shape[1] - widths[i]  # first column of the current counts
        for t in range(1, T + 1):
            rows, new, vals = [], [], []
            for w in range(widths[i]):
                probs = F[states[:, 0], w]
                hit = np.flatnonzero(probs > 0)
                nxt = states[hit].copy()
                nxt[:, cur + w] += 1
                rows.append(hit)
                new.append(nxt)
                vals.append(probs[hit])
            new_states = np.vstack(new)
            if t == T:  # coordinate i is finished: forget b_i, open the counts of the next coordinate
                new_states = new_states[:, 1:]
                if i + 1 < k:
                    new_states = np.hstack([new_states, np.zeros((new_states.shape[0], widths[i + 1]),
                                                                 dtype=np.int64)])
            uniq, cols = np.unique(new_states, axis=0, return_inverse=True)
            cols = np.asarray(cols).ravel()
            if t == T and i == k - 1:
                bounds = np.cumsum([0] + widths)
                outputs = tuple(tuple(tuple(int(x) for x in row[bounds[j]:bounds[j + 1]]) for j in range(k))
                                for row in uniq) if by_coordinate else tuple(tuple(int(x) for x in row) for row in uniq)
            else:
                outputs = tuple(range(uniq.shape[0]))
            mat = sp.csr_matrix((np.concatenate(vals).astype(float), (np.concatenate(rows), cols)),
                                shape=(states.shape[0], uniq.shape[0]))
            ops.append(MarkovOperator(mat, inputs, outputs))
            tick(1)
            states, inputs = uniq, outputs
    return tuple(ops)
