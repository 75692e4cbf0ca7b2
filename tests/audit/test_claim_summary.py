"""The audit's summary line for claims that are neither certified nor refuted (issue 14, item 5).

A claim no bound proves is ``not certified`` even when nothing refutes it (a black-box input has no
exact value to refute it with): the summary, the repr, the HTML and the JSON ``ok`` must all count it
as not certified, never as part of "all claims certified".
"""

from __future__ import annotations

import pytest

from chainamp.audit import FORMAT, audit, parse_pipeline

RR = [[0.75, 0.25], [0.25, 0.75]]  # 2-ary RR at eps = log 3; after a 1-DP input the certified eps' is 0.4706


def _audit(claims, mechanism=None):
    doc = {"format": FORMAT, "mechanism": mechanism or {"epsilon": 1.0}, "steps": [{"matrix": RR}],
           "claims": claims}
    return audit(parse_pipeline(doc))


def _everywhere(result) -> list[str]:
    return [str(result), repr(result), result._repr_html_()]


@pytest.mark.parametrize("claims, statuses, line", [
    ([{"epsilon": 0.5}, {"epsilon": 0.4}], ["certified", "not certified"], "1 of 2 claim(s) NOT certified"),
    ([{"epsilon": 0.4}], ["not certified"], "1 of 1 claim(s) NOT certified"),
    ([{"epsilon": 0.4}, {"epsilon": 0.3}, {"epsilon": 0.9}], ["not certified", "not certified", "certified"],
     "2 of 3 claim(s) NOT certified"),
    ([{"epsilon": 0.5, "delta": 0.0}, {"epsilon": 0.48}], ["certified", "certified"], "all 2 claim(s) certified"),
], ids=["one-of-two", "only-claim", "two-of-three", "all-certified"])
def test_summary_counts_claims_neither_certified_nor_refuted(claims, statuses, line):
    result = _audit(claims)
    assert [v.status for v in result.verdicts] == statuses
    assert "refuted" not in statuses  # black-box input: nothing can refute a claim
    ok = all(s == "certified" for s in statuses)
    assert result.ok is ok and result.to_dict()["ok"] is ok
    for text in _everywhere(result):
        assert line in text, text[:300]
        if not ok:
            assert "all " + str(len(claims)) + " claim(s) certified" not in text


@pytest.mark.parametrize("claim, status", [(0.4706149, "not certified"), (0.2, "refuted")],
                         ids=["within-refutation-margin", "refuted"])
def test_summary_on_a_finite_mechanism(claim, status):
    """A finite M (2-ary RR at eps = 1, then RR): exact eps' = 0.47061491973... A claim 4e-8 below it
    (relative) is within the refutation margin REFUTE_RTOL = 1e-6, so neither certified nor refuted; one
    far below is refuted. Both count as NOT certified."""
    result = _audit([{"epsilon": claim}], mechanism={"catalogue": "randomized_response", "k": 2, "epsilon": 1.0})
    (v,) = result.verdicts
    assert (v.holds, v.status) == (False, status)
    assert result.ok is False and result.to_dict()["ok"] is False
    for text in _everywhere(result):
        assert "1 of 1 claim(s) NOT certified" in text and "all 1 claim(s) certified" not in text
