"""Shared pieces of the designs: argument checks, the solver's K made stochastic, the sound repair.

The repair (:func:`repair`) mixes a candidate K with the uniform constant operator,
``K_lam = (1 - lam) K + lam 1 u^T`` (``u`` uniform on K's outputs). Every privacy loss of the pipeline
shrinks: the rows of ``M K_lam`` are ``(1 - lam) (MK)(x) + lam u``, so each likelihood ratio
``((1 - lam) a + lam u_y) / ((1 - lam) b + lam u_y)`` moves toward 1 and each hockey-stick divergence
``sum_y [(1 - lam)(a_y - e^eps b_y) - lam (e^eps - 1) u_y]_+ <= (1 - lam) D_{e^eps}`` shrinks; the
Dobrushin and Doeblin coefficients of ``K_lam`` are ``(1 - lam)`` times those of K. The repair
searches lam on a short geometric ladder, then bisects it, and keeps the smallest lam at which
chainamp's own (rounded-up) certificate meets the target, so the returned K is certified by the same
code every user runs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from .._numerics import (check_distribution, check_float_array, check_int, check_memory, check_positive,
                         preview_labels)
from ..errors import InvalidParameterError, SolverError
from ..operators import MarkovOperator

__all__: list[str] = []

#: lam ladder of the repair: 2^-50, 2^-47, ... (factor 8), then bisection steps between rungs (to 1/1000
#: of the rung: the loss a repair costs is within 0.1% of the smallest the screen allows), then steps of
#: 25% up while the full certificate still refuses
_LADDER_START = 2.0**-50
_LADDER_FACTOR = 8.0
_BISECTION_STEPS = 10
_ESCALATION = 1.25
#: Memory an LP takes per constraint nonzero, for the size check before it is built (cvxpy's canonical
#: form, its sparse copies and the solver's: a 77-ary RR design, 3.5e7 nonzeros, went past several GB)
LP_BYTES_PER_NONZERO = 200.0


def check_prior(prior: Any, n: int) -> np.ndarray:
    """A distribution over the n inputs (uniform for None)."""
    if prior is None:
        return np.full(n, 1.0 / n)
    return check_distribution(prior, "prior", size=n)


#: Bytes a design holds per entry of its n x k tables, counted before any is built: the loss and cost
#: matrices, the solver's K, its clipped and repaired copies (the repair forms a few), the certified
#: operator's copy and the dual bound's two work arrays (8 bytes each), rounded up.
TABLE_BYTES_PER_ENTRY = 96.0
#: Bytes per label of the tuples, sets and index dictionaries a design builds from its labels.
LABEL_BYTES = 160.0


def check_tables(rows: int, cols: int, what: str) -> None:
    """Refuse a design whose ``rows x cols`` dense tables (and labels) do not fit, before building any."""
    check_memory(TABLE_BYTES_PER_ENTRY * float(rows) * float(cols) + LABEL_BYTES * (float(rows) + float(cols)),
                 f"{what}: the dense {rows} x {cols} loss, cost and operator tables",
                 hint="use fewer states or outputs")


def check_loss(loss: Any, inputs: tuple, outputs: tuple) -> np.ndarray:
    """An n_inputs x n_outputs finite non-negative matrix; None is the 0-1 loss ``[label x != label y]``
    (built in numpy, one pass over the labels: never an n x k Python list)."""
    n, k = len(inputs), len(outputs)
    if loss is None:
        row_of = {x: i for i, x in enumerate(inputs)}
        hits = [(row_of[y], j) for j, y in enumerate(outputs) if y in row_of]
        if not hits:
            raise InvalidParameterError(
                f"outputs {preview_labels(outputs)} share no label with the inputs {preview_labels(inputs)}: the "
                "default 0-1 loss would charge 1 for every output; pass loss= or outputs that include the inputs")
        ell = np.ones((n, k))
        rows, cols = np.array(hits, dtype=np.int64).T
        ell[rows, cols] = 0.0
        return ell
    arr = check_float_array(loss, "loss")
    if arr.shape != (n, k):
        raise InvalidParameterError(f"loss must have shape (n_inputs, n_outputs) = {(n, k)} (got {arr.shape})")
    if not np.all(np.isfinite(arr)):
        i, j = np.argwhere(~np.isfinite(arr))[0]
        raise InvalidParameterError(f"loss entries must be finite (got {arr[i, j]!r} at ({i}, {j}))")
    if np.any(arr < 0):
        i, j = np.argwhere(arr < 0)[0]
        raise InvalidParameterError(f"loss entries must be >= 0 (got {arr[i, j]!r} at ({i}, {j}))")
    return arr


def check_labels(labels: Any, name: str) -> tuple:
    """A non-empty sequence of distinct hashable labels (an int n means ``range(n)``)."""
    if isinstance(labels, (int, np.integer)) and not isinstance(labels, bool):
        check_memory(LABEL_BYTES * float(labels), f"{name}: the {int(labels)} labels 0..{int(labels) - 1}",
                     hint="use fewer labels")
        labels = range(int(labels))
    if isinstance(labels, (str, bytes)) or not isinstance(labels, (Sequence, range, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of labels or an int, got {type(labels).__name__} {labels!r}")
    labs = tuple(labels)
    if not labs:
        raise InvalidParameterError(f"{name} must contain at least one label (got {labels!r}): K needs an output "
                                    "to reach")
    try:
        distinct = len(set(labs)) == len(labs)
    except TypeError:
        raise TypeError(f"{name} must be hashable labels (got {labs!r})") from None
    if not distinct:
        raise InvalidParameterError(f"{name} has a repeated label (got {labs!r})")
    return labs


def check_flags(verbose: Any, symmetry: Any) -> None:
    """``verbose`` and ``symmetry`` of the designs: bools (numpy's too), TypeError otherwise (checked here, so a
    design that needs no LP never imports cvxpy)."""
    for name, value in (("verbose", verbose), ("symmetry", symmetry)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


def check_tolerances(lp_feas_atol: Any, design_max_repair: Any) -> tuple[float, float]:
    """The two keyword tolerances of every design, checked at the boundary."""
    return check_positive(lp_feas_atol, "lp_feas_atol"), check_positive(design_max_repair, "design_max_repair")


def check_lp_size(nonzeros: int, max_nonzeros: Any, what: str,
                  hint: str = "restrict the neighbours or the output set", memory: bool = True) -> None:
    """Refuse an LP past ``max_nonzeros`` constraint nonzeros before building it (memory and time; ``memory=False``:
    the count only, for a route that builds a part of that LP and checks its own memory)."""
    limit = check_int(max_nonzeros, "max_lp_nonzeros", minimum=1)
    if nonzeros > limit:
        raise InvalidParameterError(
            f"{what}: the LP would have {nonzeros:,} constraint nonzeros, above max_lp_nonzeros={limit:,} "
            f"(about a few hundred bytes each in the solver, and minutes to hours of solving); pass a larger "
            f"max_lp_nonzeros= to go past it, or {hint}")
    if not memory:
        return
    check_memory(LP_BYTES_PER_NONZERO * nonzeros, f"{what}: the LP with {nonzeros:,} constraint nonzeros (cvxpy's "
                 "canonical form and the solver's copy)", hint=hint)


def stochastic(K: np.ndarray, feas_atol: float) -> np.ndarray:
    """The solver's K with negatives clipped and rows renormalised; SolverError when it is far from stochastic."""
    low = float(K.min())
    sums = K.sum(axis=1)
    if low < -feas_atol or np.max(np.abs(sums - 1.0)) > feas_atol:
        raise SolverError(f"the solver's K is not stochastic within lp_feas_atol={feas_atol:g} (smallest entry "
                          f"{low!r}, row sums in [{sums.min()!r}, {sums.max()!r}])")
    out = np.maximum(K, 0.0)
    return out / out.sum(axis=1, keepdims=True)


def mixed(K: np.ndarray, lam: float) -> np.ndarray:
    """``(1 - lam) K + lam 1 u^T`` with u uniform on the columns."""
    if lam == 0.0:
        return K
    return (1.0 - lam) * K + lam / K.shape[1]


def repair(K: Any, certify: Callable[[Any], Any], max_repair: float, what: str,
           screen: Callable[[Any], bool] | None = None,
           mix: Callable[[Any, float], Any] = mixed) -> tuple[Any, float, Any]:
    """The smallest lam (on the ladder and a short bisection) at which ``certify(mixed(K, lam))`` is not None.

    ``certify`` returns its evidence (a report, a coefficient) or None. ``screen`` is a cheaper test that
    guides the search (it decides nothing: the returned lam is always one ``certify`` accepted; when the
    screen is optimistic, lam grows by 25% steps until ``certify`` agrees). Returns the repaired K, lam and the
    evidence; SolverError when no ``lam <= max_repair`` is certified (both checked by the caller).
    ``mix(K, lam)`` forms the candidate (default :func:`mixed` on a matrix; a structured design passes its own
    parametrisation of the same mixture).
    """
    if screen is None:
        def screen(mat: np.ndarray) -> bool:
            return certify(mat) is not None
    if screen(K):
        found = certify(K)
        if found is not None:
            return K, 0.0, found
    lo, hi = 0.0, _LADDER_START
    while True:
        lam = min(hi, max_repair)
        if screen(mix(K, lam)):
            hi = lam
            break
        if lam >= max_repair:
            raise _unrepairable(what, max_repair)
        lo, hi = lam, hi * _LADDER_FACTOR
    for _ in range(_BISECTION_STEPS if lo > 0.0 else 0):
        mid = 0.5 * (lo + hi)
        if screen(mix(K, mid)):
            hi = mid
        else:
            lo = mid
    while True:
        found = certify(mix(K, hi))
        if found is not None:
            return mix(K, hi), hi, found
        if hi >= max_repair:
            raise _unrepairable(what, max_repair)
        hi = min(_ESCALATION * hi, max_repair)


def _unrepairable(what: str, max_repair: float) -> SolverError:
    return SolverError(f"{what} even after mixing K with weight design_max_repair={max_repair:g} of the uniform "
                       "constant operator; the LP solution cannot be repaired soundly")


def operator(mat: np.ndarray, inputs: Sequence[Hashable], outputs: Sequence[Hashable]) -> MarkovOperator:
    """A MarkovOperator from a repaired matrix (rows sum to 1 within a few ulps)."""
    return MarkovOperator(mat, inputs=tuple(inputs), outputs=tuple(outputs))
