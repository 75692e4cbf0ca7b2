"""Pipeline files and matrix files: audits described as data (layer 6, presentation/IO).

A *pipeline file* (TOML, ``format = "chainamp-pipeline/1"``, documented in
``docs/pipeline-format.md``) describes an input mechanism M, the post-processing
steps K1, ..., Kr, the neighbour relation and claims such as "epsilon' <= 0.6
at delta' = 1e-6". :func:`load_pipeline` turns it into a :class:`Pipeline`,
:func:`audit` runs :func:`chainamp.amplify` on it and checks each claim.

Files are data only: nothing is executed, NPY files are read with
``allow_pickle=False``, and only the names in :data:`CATALOGUE`,
:data:`PROFILES` and :data:`GRAPHS` map to functions. Relative paths resolve
against the directory of the pipeline file. Every problem raises
:class:`~chainamp.errors.InvalidPipelineError` with a one-line message naming
the file, the field (``steps[1].matrix``) and the problem. The parsing and
checking of pipeline files (and the format's names above, :class:`Claim` and
:class:`Pipeline`) live in the private :mod:`.pipeline`, :mod:`.catalogue` and
:mod:`.fields`; this module re-exports them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .fields import _Ctx, read_operator
from .pipeline import FORMAT, Claim, Pipeline, parse_document, read_toml
from .catalogue import CATALOGUE, GRAPHS, PROFILES
from .over_time import ReportsOverTime, certify_reports
from .shuffled import certify_shuffled, shuffled_table, shuffled_verdict
from .._numerics import (REFUTE_ATOL, REFUTE_RTOL, ROW_SUM_ATOL, SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_memory,
                         check_progress, progress_bar, progress_scope, text_table)
from ..amplification import AmplificationReport, amplify, amplify_steps, StepsReport
from ..errors import ChainampError, InvalidPipelineError, ResourceLimitError
from ..operators import MarkovOperator
from ..privacy import neighbor_pairs

__all__ = ["FORMAT", "CATALOGUE", "PROFILES", "GRAPHS", "load_operator", "load_pipeline", "parse_pipeline",
           "Pipeline", "Claim", "ClaimVerdict", "AuditResult", "audit"]


def load_operator(path: str | Path, *, inputs: Any = None, outputs: Any = None,
                  row_sum_atol: float = ROW_SUM_ATOL) -> MarkovOperator:
    """Read a row-stochastic matrix from a CSV or NPY file.

    Parameters
    ----------
    path : str or Path
        ``.csv`` / ``.txt``: comma-separated numbers, one row per line, ``#``
        starts a comment. ``.npy``: a 2-D numeric array (read with
        ``allow_pickle=False``, so no code can run).
    inputs, outputs : sequence of labels, optional
    row_sum_atol : float
        Accepted deviation of a row sum from 1 (default ``ROW_SUM_ATOL``). The numbers
        are stored as written, and an accepted row stands for the row divided by its
        sum: every certificate chainamp computes from it (``amplify``, ``audit``,
        ``normalised=True`` coefficients) holds for that row-normalised operator.

    Raises
    ------
    InvalidOperatorError
        The file is missing, not numeric, not 2-D or not row-stochastic; the
        message starts with the file name.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "K.csv")
    >>> _ = open(f, "w").write("# binary RR\\n0.75,0.25\\n0.25,0.75\\n")
    >>> load_operator(f).matrix.tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    return read_operator(_path(path), inputs, outputs, row_sum_atol)


def _path(path: Any, name: str = "path") -> Path:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"{name} must be a file name (str or pathlib.Path), got {type(path).__name__} {path!r}")
    return Path(path).expanduser()


# --------------------------------------------------------------------------- audit results
@dataclass(frozen=True)
class ClaimVerdict:
    """The audit of one claim.

    ``certified`` is the certified epsilon' (form ``epsilon_at``) or delta' (form
    ``delta_at``) and ``source`` the bound that gave it; ``exact`` the exact value
    for a finite M (None otherwise). ``status`` is ``"certified"`` (the claim
    holds), ``"refuted"`` (a certified lower bound of the exact value exceeds the claim) or
    ``"not certified"`` (no bound proves it; it may still be true).
    """

    claim: Claim
    certified: float
    source: str
    exact: float | None
    holds: bool
    status: str

    def to_dict(self) -> dict:
        return {"claim": self.claim.statement(), "form": self.claim.form, "label": self.claim.label,
                "epsilon": self.claim.epsilon, "delta": self.claim.delta, "certified": _json(self.certified),
                "source": self.source, "exact": _json(self.exact), "holds": self.holds, "status": self.status,
                "reports": self.claim.reports, "shuffled": self.claim.shuffled}


@dataclass(frozen=True)
class AuditResult:
    """Result of :func:`audit`: the amplification report, optional per-step report, claim verdicts and,
    for a file with ``reports``, epsilon' after each number of reports (``over_time``); with ``shuffle``, the
    n users' shuffled reports (``shuffled``, a :class:`chainamp.ShuffleReport`)."""

    pipeline: Pipeline
    report: AmplificationReport
    verdicts: tuple
    steps: StepsReport | None = None
    over_time: ReportsOverTime | None = None
    shuffled: Any = None

    @property
    def reports(self) -> dict:
        """The reports behind the verdicts, by heading (what :func:`chainamp.report.write_report` renders)."""
        out = {"amplification": self.report}
        if self.steps is not None:
            out["per step"] = self.steps
        if self.over_time is not None:
            out["over time"] = self.over_time
        if self.shuffled is not None:
            out["shuffled"] = self.shuffled
        return out

    @property
    def headline(self) -> str:
        """The report's one plain sentence (what is certified, for which pipeline, from which theorem,
        how far from the exact or worst-case value); the audit's text, HTML and reports start with it."""
        return self.report.headline

    @property
    def ok(self) -> bool:
        """True when every claim is certified (vacuously true without claims)."""
        return all(v.holds for v in self.verdicts)

    def _claim_rows(self):
        # the statement checked is always shown: a label is free text and could say anything
        labelled = any(v.claim.label for v in self.verdicts)
        return [([v.claim.label] if labelled else []) + [v.claim.statement(), v.certified, v.exact, v.source,
                                                         v.status] for v in self.verdicts]

    def _claim_header(self) -> list:
        labelled = any(v.claim.label for v in self.verdicts)
        return (["claim"] if labelled else []) + ["checked", "certified", "exact", "from", "verdict"]

    def _summary(self) -> str:
        if not self.verdicts:
            return "no claims to check"
        bad = sum(not v.holds for v in self.verdicts)
        return (f"all {len(self.verdicts)} claim(s) certified" if not bad else
                f"{bad} of {len(self.verdicts)} claim(s) NOT certified")

    def _head(self) -> list:
        p = self.pipeline
        head = [f"pipeline: {p.name or '(unnamed)'}" + (f"  [{p.source}]" if p.source else "")]
        if p.description:
            head.append(p.description)
        if p.provenance:
            head.append(f"provenance: {p.provenance}")
        head.append(f"M = {p.mechanism_description}")
        return head + _step_lines(p.step_names)

    def __str__(self) -> str:
        report = str(self.report)
        if report.startswith(self.headline):  # the sentence goes first, once
            report = report[len(self.headline):].lstrip("\n")
        lead = self.headline + (f"\nclaims: {self._summary()}" if self.verdicts else "")
        parts = [lead, "\n".join(self._head()), report]
        if self.steps is not None:
            parts.append(str(self.steps))
        if self.over_time is not None:
            parts.append(str(self.over_time))
        if self.shuffled is not None:
            parts.append(shuffled_table(self.shuffled, self.report) + "\n" + str(self.shuffled))
        if self.verdicts:
            parts.append(text_table(self._claim_header(), self._claim_rows(), title="claims"))
            parts.append(self._summary())
        return "\n\n".join(parts)

    def __repr__(self) -> str:
        p = self.pipeline
        best = self.report.best
        return (f"<AuditResult {p.name or '(unnamed)'!r}: {self._summary()}; best ({best.epsilon:.6g}, "
                f"{best.delta:.6g}) from {best.source}>")

    def _repr_html_(self) -> str:
        import html

        from .._numerics import html_table

        head = self._head()
        out = f'<p class="headline"><b>{html.escape(self.headline)}</b></p>'
        if self.verdicts:
            out += f"<p>claims: {html.escape(self._summary())}</p>"
        out += f"<p><b>{html.escape(head[0])}</b></p>"
        out += "".join(f"<p>{html.escape(line)}</p>" for line in head[1:])
        report = self.report._repr_html_()
        first = f'<p class="headline"><b>{html.escape(self.headline)}</b></p>'
        out += report[len(first):].lstrip("\n") if report.startswith(first) else report
        if self.over_time is not None:
            out += self.over_time._repr_html_()
        if self.shuffled is not None:
            out += self.shuffled._repr_html_()
        if self.verdicts:
            out += html_table(self._claim_header(), self._claim_rows(), title="claims")
            out += f"<p><b>{html.escape(self._summary())}</b></p>"
        return out

    def to_dict(self) -> dict:
        """JSON-safe summary (infinities as ``"inf"``)."""
        p = self.pipeline
        return {"format": FORMAT, "headline": self.headline, "name": p.name, "description": p.description, "provenance": p.provenance,
                "source": None if p.source is None else str(p.source),
                "mechanism": p.mechanism_description, "steps": list(p.step_names),
                "report": self.report.to_dict(), "per_step": None if self.steps is None else self.steps.to_dict(),
                "reports": None if self.over_time is None else self.over_time.to_dict(),
                "shuffled": None if self.shuffled is None else self.shuffled.to_dict(),
                "claims": [v.to_dict() for v in self.verdicts], "ok": self.ok}

    def plot(self, **kwargs):
        """The report's privacy-profile plot (needs matplotlib)."""
        return self.report.plot(**kwargs)


def _step_lines(names: tuple) -> list[str]:
    """One line per run of equal consecutive steps: ``steps 2-11: <name> (10 times)``."""
    lines, i = [], 0
    while i < len(names):
        j = i
        while j + 1 < len(names) and names[j + 1] == names[i]:
            j += 1
        lines.append(f"step {i + 1}: {names[i]}" if i == j else
                     f"steps {i + 1}-{j + 1}: {names[i]} ({j - i + 1} times)")
        i = j + 1
    return lines


def _json(v):
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


# --------------------------------------------------------------------------- pipeline files
def load_pipeline(path: str | Path) -> Pipeline:
    """Read and check a pipeline file (see ``docs/pipeline-format.md``).

    Raises
    ------
    InvalidPipelineError
        One line: the file, the field and the problem.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "p.toml")
    >>> _ = open(f, "w").write('''format = "chainamp-pipeline/1"
    ... mechanism = {epsilon = 2.0}
    ... steps = [{matrix = [["3/4", "1/4"], ["1/4", "3/4"]]}]
    ... claims = [{epsilon = 1.0}]
    ... ''')
    >>> result = audit(load_pipeline(f))
    >>> result.ok, round(result.verdicts[0].certified, 4)
    (True, 0.802)
    """
    p = _path(path)
    return parse_pipeline(read_toml(p), source=p)


def parse_pipeline(data: dict, *, source: str | Path | None = None) -> Pipeline:
    """Check an already-parsed pipeline document (a dict as :mod:`tomllib` returns it).

    Relative file names resolve against the directory of ``source`` (the current
    directory when None).

    Examples
    --------
    >>> doc = {"format": FORMAT, "mechanism": {"epsilon": 1.0},
    ...        "steps": [{"graph": "path_graph", "n": 3, "laziness": 0.5, "repeat": 2}]}
    >>> p = parse_pipeline(doc)
    >>> len(p.operators), p.mechanism_description
    (2, 'black-box (1, 0)-DP')
    >>> parse_pipeline({"format": FORMAT, "mechanism": {"epsilon": -1}, "steps": []})
    Traceback (most recent call last):
    ...
    chainamp.errors.InvalidPipelineError: <pipeline>: mechanism.epsilon: must be finite and >= 0 (got -1.0)
    """
    return parse_document(data, source)


# --------------------------------------------------------------------------- audit
def audit(pipeline: Pipeline | str | Path, *, progress: bool | None | Callable[[str], None] = None) -> AuditResult:
    """Certify the pipeline with :func:`chainamp.amplify` and check each claim.

    A claim of form ``epsilon_at`` holds when ``report.epsilon_at(delta) <= epsilon``,
    one of form ``delta_at`` when ``report.delta_at(epsilon) <= delta``: both use the
    lower envelope of every certified bound, so "holds" is itself certified. With a
    finite M the exact value is shown too, and a claim is reported ``refuted`` only when
    a certified LOWER bound of the exact delta at the claimed epsilon exceeds the claimed
    delta (the exact column itself is an upper bound: rounded up, searched to a bracket).

    A file with ``reports`` (``pipeline.reports``) is also certified after each number of reports T,
    memoized or fresh (:func:`chainamp.audit.over_time.certify_reports`, in ``result.over_time``), and a
    claim naming ``reports = T`` is checked against that T's report.

    ``pipeline`` is a :class:`Pipeline` or the path of a pipeline file (read with
    :func:`load_pipeline`). ``progress`` means what it means everywhere in chainamp: ``None`` (default) a
    progress bar over the stages, and the bars of the long computations inside them, shown once the audit has
    run two seconds; ``True`` at once; ``False`` nothing at all (inner bars included). A callable is called
    with a short text before each stage instead (the command line's stage bar).

    Examples
    --------
    >>> doc = {"format": FORMAT, "mechanism": {"epsilon": 1.0},
    ...        "steps": [{"matrix": [[0.75, 0.25], [0.25, 0.75]]}],
    ...        "claims": [{"epsilon": 0.5}, {"epsilon": 0.4}]}
    >>> result = audit(parse_pipeline(doc))
    >>> [(round(v.certified, 4), v.status) for v in result.verdicts], result.ok
    ([(0.4706, 'certified'), (0.4706, 'not certified')], False)
    """
    if isinstance(pipeline, (str, Path)):
        pipeline = load_pipeline(pipeline)
    if not isinstance(pipeline, Pipeline):
        raise TypeError(f"pipeline must be a Pipeline (from load_pipeline) or the path of a pipeline file, "
                        f"got {type(pipeline).__name__}")
    if callable(progress):
        return _audit(pipeline, progress)
    progress = check_progress(progress)
    with progress_bar(None, "audit", unit="stage", progress=progress) as bar, progress_scope(progress):
        started: list = []

        def say(text: str) -> None:  # the bar counts the stages finished, and names the current one
            if started:
                bar.update(1)
            started.append(text)
            bar.set_postfix_str(text, refresh=False)

        return _audit(pipeline, say)


def _audit(pipeline: Pipeline, say: Callable[[str], None]) -> AuditResult:
    """:func:`audit` with its stages announced to ``say``."""
    ctx = _Ctx(pipeline.source)
    ops = list(pipeline.operators)
    neighbors = None if pipeline.neighbors is None else list(pipeline.neighbors)
    try:
        say("amplify")
        report = amplify(pipeline.mechanism, ops, neighbors=neighbors, delta=pipeline.delta)
        steps = None
        if pipeline.per_step and len(ops) > 1:
            say("per-step report")
            steps = amplify_steps(pipeline.mechanism, ops, delta=report.target_delta, neighbors=neighbors)
    except ResourceLimitError:  # the pipeline is valid, only too big for the limit: say so, unchanged
        raise
    except (ChainampError, ValueError) as exc:
        raise ctx.error("pipeline", exc) from None
    over = None
    if pipeline.reports is not None:  # epsilon' after T reports (memoized or fresh): see .over_time
        try:
            over = certify_reports(pipeline.mechanism, tuple(ops), report, pipeline.reports,
                                   memoized=pipeline.memoized, neighbors=neighbors, progress=say)
        except ResourceLimitError:
            raise
        except (ChainampError, ValueError) as exc:
            raise ctx.error("reports", exc) from None
    shuffled = None
    if pipeline.shuffle is not None or any(c.shuffled for c in pipeline.claims):  # after a shuffler: .shuffled
        say("shuffled")
        try:
            shuffled = certify_shuffled(pipeline, report, ctx)
        except (ResourceLimitError, InvalidPipelineError):
            raise
        except (ChainampError, ValueError) as exc:
            raise ctx.error("shuffle", exc) from None
    verdicts = []
    for i, claim in enumerate(pipeline.claims):
        say(f"claim {i + 1} of {len(pipeline.claims)}")
        if claim.shuffled:
            verdicts.append(ClaimVerdict(claim, *shuffled_verdict(shuffled, claim)))
        elif claim.reports is None or over is None:  # one report (a file without reports: reports = 1)
            verdicts.append(_verdict(report, claim, ops))
        else:
            row = over.row(claim.reports)
            verdicts.append(_verdict(row.report, claim, list(row.steps)))
    return AuditResult(pipeline, report, tuple(verdicts), steps, over, shuffled)


def _verdict(report: AmplificationReport, claim: Claim, ops: list | None = None) -> ClaimVerdict:
    exact_src = next((s for s in report.sources if s.name == "exact"), None)
    if claim.form == "epsilon_at":
        b = report.bound_for(claim.delta)
        certified, bound = b.epsilon, claim.epsilon
        exact = None
        if exact_src is not None:
            hit = exact_src.bound_at_delta(claim.delta)
            exact = math.inf if hit is None else hit.epsilon
    else:
        b = report.bound_at(claim.epsilon)
        certified, bound = b.delta, claim.delta
        exact = None if exact_src is None else exact_src.bound_at_epsilon(claim.epsilon).delta
    holds = certified <= bound
    if holds:
        status = "certified"
    elif (exact is not None and exact > bound * (1.0 + REFUTE_RTOL) + REFUTE_ATOL
          and _exact_delta_lower(report, [report.operator] if ops is None else ops, claim.epsilon) > claim.delta):
        # the exact column is an UPPER bound (rounded up, a band added near ties): only a certified LOWER
        # bound of the true delta(epsilon) above the claimed delta proves the claim false
        status = "refuted"
    else:
        status = "not certified"
    return ClaimVerdict(claim, certified, b.source, exact, holds, status)


def _exact_delta_lower(report: AmplificationReport, ops: list, epsilon: float) -> float:
    """A certified LOWER bound of the exact delta(epsilon) of the finite pipeline ``M K1 ... Kr``.

    For every neighbouring pair (u, v) and any set S of outputs, ``P_u(S) - e^eps P_v(S)`` is at most
    ``D_{e^eps}(P_u || P_v)``; S is the set where the computed ratio exceeds ``e^eps`` (for eps = inf, or
    ``e^eps`` beyond a double: where ``P_u > 0`` and ``P_v`` is a structural zero, every path to the output
    having a zero factor, so that ``P_v(S) = 0`` exactly). The products are chained step by step (sparse
    operators stay sparse); an entry of a product of non-negative matrices over k terms is within
    ``(k + 2) u`` relative of the exact value plus ``k`` subnormals (products that underflow), earlier
    absolute errors growing by the largest column sum. Partial sums over S carry ``(m + 4) u`` more;
    ``e^eps`` is taken 4 u high. ``-inf`` when M is not finite.
    """
    mech = report.mechanism
    if mech.kind != "finite":
        return -math.inf
    u = UNIT_ROUNDOFF

    def data(op):
        return op.sparse if op.is_sparse else np.asarray(op.matrix, dtype=float)

    def product(X, A):
        return sp.csr_matrix(X) @ sp.csr_matrix(A) if sp.issparse(X) or sp.issparse(A) else X @ A

    n, m_out = mech.matrix.shape[0], ops[-1].shape[1] if ops else mech.matrix.shape[1]
    # all pairs are counted, not listed, here; the index pairs built below take 48 bytes a pair at their peak
    n_pairs = n * (n - 1) if mech.neighbors is None else len(neighbor_pairs(mech.matrix.inputs, mech.neighbors))
    rows = min(n_pairs, max(1, (1 << 21) // max(m_out, 1)))
    check_memory(2 * 8.0 * n * m_out + 6 * 8.0 * rows * m_out + 48.0 * n_pairs,
                 f"the {n} x {m_out} output distributions of the "
                 "pipeline (to bound the exact delta from below)", hint="use fewer inputs or outputs")
    P = data(mech.matrix)
    struct = (P != 0).astype(float)
    rel, absolute = 0.0, 0.0
    for op in ops:
        A = data(op)
        k = A.shape[0]
        absolute = absolute * float(np.max(A.sum(axis=0))) * (1.0 + 4 * u) + k * SMALLEST_SUBNORMAL
        rel = (1.0 + rel) * (1.0 + (k + 2) * u) - 1.0 + 2 * u
        P = product(P, A)
        struct = (product(struct, (A != 0).astype(float)) != 0).astype(float)
    P = P.toarray() if sp.issparse(P) else P
    struct = (struct.toarray() if sp.issparse(struct) else struct) != 0
    m = P.shape[1]
    rel = rel * 1.01 + (m + 4) * u
    pairs = neighbor_pairs(mech.matrix.inputs, mech.neighbors)
    c = math.exp(epsilon) * (1.0 + 4 * u) if epsilon < 700.0 else math.inf
    best = -math.inf
    step = max(1, (1 << 21) // max(m, 1))  # bounds the (pairs x outputs) temporaries
    for start in range(0, len(pairs), step):
        i, j = pairs[start:start + step, 0], pairs[start:start + step, 1]
        Pu, Pv = P[i], P[j]
        S = ((Pu > 0) & ~struct[j]) if math.isinf(c) else Pu > c * Pv
        mass_u = (Pu * S).sum(axis=1) * (1.0 - rel) - S.sum(axis=1) * absolute
        if math.isinf(c):
            minus = np.zeros(mass_u.shape)  # P_v is exactly 0 on S
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                minus = c * ((Pv * S).sum(axis=1) * (1.0 + rel) + S.sum(axis=1) * absolute) * (1.0 + 4 * u)
        with np.errstate(over="ignore", invalid="ignore"):
            lower = mass_u - minus - 4 * u * (np.abs(mass_u) + minus)  # the last roundings, before cancellation
        lower = np.nextafter(np.where(np.isnan(lower), -math.inf, lower), -math.inf)
        best = max(best, float(lower.max()))
    return best
