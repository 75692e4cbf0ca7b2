"""Summary of a finite Markov chain: :func:`analyze_chain` gathers its structure and periods
(:mod:`.chain`), stationary distributions (:mod:`.stationary`) and spectral gap (:mod:`.spectral`).

Like the spectral gap it reports, the summary feeds no privacy bound (the certified TV
mixing time lives in :mod:`chainamp.mixing`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._numerics import STATIONARY_RESIDUAL_ATOL, check_choice, check_positive
from ._guards import check_chain_analysis
from .chain import _check_square, _class_periods, _labels, _structure
from .markov import MarkovOperator
from .spectral import _gap_and_method
from .stationary import _stationary

__all__ = [
    "ChainAnalysis",
    "analyze_chain",
]


# ------------------------------------------------------------------- summary
@dataclass(frozen=True, eq=False)
class ChainAnalysis:
    """Structure and long-run summary of a finite chain (see :func:`analyze_chain`).

    ``periods`` is aligned with ``communicating_classes``; row r of the read-only array
    ``stationary_distributions`` belongs to ``recurrent_classes[r]``. Compared by identity
    (it holds an array).
    """

    states: tuple
    communicating_classes: tuple
    periods: tuple                       # aligned with communicating_classes
    recurrent_classes: tuple
    transient_states: tuple
    is_irreducible: bool
    period: int | None                   # None when K is reducible
    is_aperiodic: bool
    stationary_distributions: np.ndarray = field(repr=False)
    spectral_gap: float | None           # None when not computed
    relaxation_time: float | None
    spectral_method: str | None = None   # how the gap was computed (see spectral_gap_method)

    def __str__(self) -> str:
        n = len(self.states)
        lines = [f"Markov chain on {n} states: "
                 + ("irreducible" if self.is_irreducible else
                    f"{len(self.communicating_classes)} communicating classes, "
                    f"{len(self.recurrent_classes)} recurrent, {len(self.transient_states)} transient states")]
        if self.period is not None:
            lines.append(f"  period {self.period}" + (" (aperiodic)" if self.period == 1 else ""))
        else:
            lines.append("  aperiodic recurrent classes" if self.is_aperiodic else
                         "  some recurrent class is periodic")
        per = dict(zip(self.communicating_classes, self.periods))
        for r, cls in enumerate(self.recurrent_classes):
            pi = self.stationary_distributions[r]
            top = sorted(((pi[i], lab) for i, lab in enumerate(self.states) if pi[i] > 0),
                         key=lambda t: -t[0])[:5]
            shown = ", ".join(f"{lab!r}: {p:.4g}" for p, lab in top)
            more = " ..." if len(cls) > 5 else ""
            lines.append(f"  recurrent class {r} ({len(cls)} states, period {per[cls]}): pi = {{{shown}{more}}}")
        if self.spectral_gap is not None:
            lines.append(f"  spectral gap {self.spectral_gap:.6g}, relaxation time {self.relaxation_time:.6g}")
        return "\n".join(lines)


def analyze_chain(K: MarkovOperator, *, spectral: bool = True, method: str = "auto",
                  stationary_residual_atol: float = STATIONARY_RESIDUAL_ATOL) -> ChainAnalysis:
    """Gather the structure, periods, stationary distributions and spectral gap of K.

    Parameters
    ----------
    K : MarkovOperator
        Square, dense or sparse.
    spectral : bool
        Compute the spectral gap and relaxation time (an eigenvalue problem: O(n^3) for dense K; the
        symmetric form for reversible K, see :func:`spectral_gap`; ``spectral_method`` says which).
    method, stationary_residual_atol
        As in :func:`stationary_distributions`.

    Examples
    --------
    >>> A = analyze_chain(MarkovOperator([[0.9, 0.1], [0.2, 0.8]], inputs=["a", "b"], outputs=["a", "b"]))
    >>> print(A)
    Markov chain on 2 states: irreducible
      period 1 (aperiodic)
      recurrent class 0 (2 states, period 1): pi = {'a': 0.6667, 'b': 0.3333}
      spectral gap 0.3, relaxation time 3.33333
    """
    K = _check_square(K)
    if not isinstance(spectral, bool):
        raise TypeError(f"spectral must be a bool, got {type(spectral).__name__} {spectral!r}")
    method = check_choice(method, "method", ("auto", "gth", "power", "direct"))
    atol = check_positive(stationary_residual_atol, "stationary_residual_atol")
    check_chain_analysis(K.shape, K.nnz if K.is_sparse else K.shape[0] ** 2, K.is_sparse)
    st = _structure(K)
    per = _class_periods(st)
    classes = tuple(_labels(K, m) for m in st.members)
    irreducible = len(classes) == 1
    pis = _stationary(K, st, method, atol)
    gap, how = _gap_and_method(K, st, pis[0] if len(st.members) == 1 else None) if spectral else (None, None)
    return ChainAnalysis(
        states=K.inputs,
        communicating_classes=classes,
        periods=tuple(int(p) for p in per),
        recurrent_classes=tuple(c for c, closed in zip(classes, st.closed) if closed),
        transient_states=_labels(K, np.flatnonzero(~st.closed[st.comp])),
        is_irreducible=irreducible,
        period=int(per[0]) if irreducible else None,
        is_aperiodic=bool(np.all(per[st.closed] == 1)),
        stationary_distributions=pis,
        spectral_gap=gap,
        relaxation_time=None if gap is None else (math.inf if gap == 0.0 else 1.0 / gap),
        spectral_method=how,
    )
