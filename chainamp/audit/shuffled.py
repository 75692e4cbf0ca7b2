"""The shuffled guarantee of an audit: the pipeline's reports of n users after a shuffler (layer 6, private).

``shuffle = {users = n}`` in a pipeline file (or ``chainamp audit --shuffle-users n``) adds, beside the local
guarantee of K o M, the central guarantee of n users each sending one report through M followed by the steps,
shuffled (:func:`chainamp.amplify_shuffled` with the randomizer ``[M, K1, ..., Kr]``: the post-processed
reports are what the shuffler receives). A claim with ``shuffled = true`` is checked against it.
"""

from __future__ import annotations

import math
from typing import Any

from .._numerics import text_table
from ..privacy import DP
from ..shuffle import ShuffleReport, amplify_shuffled

__all__ = ["certify_shuffled", "shuffled_verdict", "shuffled_table"]


def _randomizer(pipeline: Any, local_report: Any) -> Any:
    """``[M, K1, ..., Kr]`` for a finite M; for a black-box M the pipeline's certified pure local level.

    A black-box M followed by the steps is an epsilon'-LDP randomizer for the pure epsilon' the local audit
    certifies at delta' = 0 (``local_report.epsilon_at(0)``, an upper bound), so ``DP(epsilon')`` is a sound
    black box for the shuffle methods; without a finite pure level nothing is shuffled. The black box is read
    as each user's local randomizer (its guarantee holds between any two values of one user), as the shuffle
    model needs: the other users' values are arbitrary (docs/pipeline-format.md says so).
    """
    from ..operators import MarkovOperator

    if isinstance(pipeline.mechanism, MarkovOperator):
        return [pipeline.mechanism, *pipeline.operators]
    eps = float(local_report.epsilon_at(0.0))
    if not math.isfinite(eps):
        raise ValueError("a black-box mechanism whose post-processed reports have no finite pure epsilon "
                         "(delta' = 0) cannot be shuffled by the black-box methods: give a finite mechanism")
    return DP(eps)


def certify_shuffled(pipeline: Any, local_report: Any, ctx: Any = None, *, progress: Any = None) -> ShuffleReport:
    """The shuffled guarantee of ``pipeline.shuffle`` (a :class:`~chainamp.audit.pipeline.ShuffleSpec`).

    Its delta is the spec's, else the audit's delta' when it is in (0, 1), else ``amplify_shuffled``'s
    default (1e-6). A claim with
    ``shuffled = true`` in a pipeline without ``shuffle`` is an error naming ``claims[i].shuffled``
    (raised through ``ctx``, the file's error context, when given).

    Examples
    --------
    >>> from chainamp.io import parse_pipeline, FORMAT
    >>> doc = {"format": FORMAT, "mechanism": {"catalogue": "randomized_response", "k": 2, "epsilon": 2.0},
    ...        "steps": [{"matrix": [[1, 0], [0, 1]]}], "shuffle": {"users": 1000}}
    >>> p = parse_pipeline(doc)
    >>> from chainamp import amplify
    >>> rep = certify_shuffled(p, amplify(p.mechanism, list(p.operators)))
    >>> rep.users, rep.method, round(rep.epsilon, 3)
    (1000, 'exact', 0.323)
    """
    for i, claim in enumerate(pipeline.claims):
        if claim.shuffled and pipeline.shuffle is None:
            msg = "needs shuffle = { users = N } at the top level (or chainamp audit --shuffle-users N)"
            if ctx is not None:
                raise ctx.error(f"claims[{i}].shuffled", msg)
            raise ValueError(f"claims[{i}].shuffled: {msg}")
    spec = pipeline.shuffle
    delta = spec.delta
    if delta is None:
        delta = pipeline.delta if pipeline.delta is not None and 0.0 < pipeline.delta < 1.0 else None
    neighbors = None if pipeline.neighbors is None else list(pipeline.neighbors)
    randomizer = _randomizer(pipeline, local_report)
    return amplify_shuffled(randomizer, spec.users, delta=delta, method=spec.method,
                            neighbors=neighbors if not isinstance(randomizer, DP) else None, progress=progress)


def shuffled_verdict(report: ShuffleReport, claim: Any) -> tuple:
    """``(certified, source, exact, holds, status)`` of a ``shuffled = true`` claim against the shuffled report.

    The certified value is the report's upper bound, so ``holds`` is itself certified; a claim that does
    not hold is ``"not certified"`` (never ``"refuted"``: the lower profile of concrete datasets is not
    searched against the claim).
    """
    if claim.form == "epsilon_at":
        certified, bound = report.epsilon_at(claim.delta), claim.epsilon
    else:
        certified, bound = report.delta_at(claim.epsilon), claim.delta
    holds = certified <= bound
    exact = certified if report.exact else None
    return (certified, f"shuffled ({report.method}, {report.users:,} users)", exact, holds,
            "certified" if holds else "not certified")


def shuffled_table(report: ShuffleReport, local: Any) -> str:
    """The local guarantee (one report of K o M) and the shuffled one side by side, at the shuffled delta."""
    low = report.lower_epsilon
    rows = [["local (one report of K o M)", 1, local.epsilon_at(report.delta), "", local.bound_for(report.delta).source],
            [f"shuffled ({report.users:,} users)", report.users, report.epsilon, "" if low is None else low,
             report.method]]
    return text_table(["guarantee", "users", f"certified eps' at delta' = {report.delta:.3g}", "lower", "from"],
                      rows, title="shuffled")
