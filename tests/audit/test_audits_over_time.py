"""Audits over time (issue 12, item 5): ``reports`` and ``memoized`` in pipeline files, claims per number of
reports, the over-time table in text, JSON, HTML and Markdown, its plot, the ``from_multi_freq_ldpy``
catalogue entry, and the RAPPOR dataset audited from the command line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import chainamp as ca
from chainamp import io as cio
from chainamp import mechanisms
from chainamp.accounting import memoized_steps
from chainamp.audit.cli import EXIT_CLAIM_FAILED, EXIT_INVALID, EXIT_OK, main
from chainamp.audit.over_time import COMPOSITION_SOURCE, ReportsOverTime, certify_reports
from chainamp.errors import InvalidPipelineError

DATASET = Path(__file__).resolve().parents[2] / "datasets" / "rappor_longitudinal" / "pipeline.toml"
RR3 = {"catalogue": "randomized_response", "k": 3}


def doc(reports=None, memoized=None, claims=(), mechanism=None, steps=None, **top):
    """A 3-ary RR at eps 2, then a 3-ary RR at eps 1 (finite, one step) unless told otherwise."""
    d = {"format": cio.FORMAT, "mechanism": mechanism or {**RR3, "epsilon": 2.0},
         "steps": steps or [{**RR3, "epsilon": 1.0}], "claims": list(claims), **top}
    if reports is not None:
        d["reports"] = reports
    if memoized is not None:
        d["memoized"] = memoized
    return d


def audit(d):
    return cio.audit(cio.parse_pipeline(d))


# --------------------------------------------------------------------------- parsing
@pytest.mark.parametrize("value, expected", [(3, (3,)), ([5, 1, 2], (1, 2, 5)), ([1], (1,))],
                         ids=["integer", "array-sorted", "one"])
def test_reports_parse(value, expected):
    p = cio.parse_pipeline(doc(value))
    assert p.reports == expected and p.memoized is True


def test_memoized_false_and_defaults():
    assert cio.parse_pipeline(doc([1, 2], memoized=False)).memoized is False
    p = cio.parse_pipeline(doc())
    assert p.reports is None and p.memoized is True  # a file without the keys: one report, as always


@pytest.mark.parametrize("changes, match", [
    ({"reports": True}, r"<pipeline>: reports: must be an integer >= 1 or an array of them, e\.g\. \[1, 2, 5, 10\], "
                        r"got True"),
    ({"reports": 2.0}, r"reports: must be an integer >= 1 or an array .* got 2\.0"),
    ({"reports": "10"}, r"reports: must be an integer >= 1 or an array .* got '10'"),
    ({"reports": 0}, r"reports: must be >= 1 \(got 0\)"),
    ({"reports": 10001}, r"reports: must be <= 10000 \(got 10001\)"),
    ({"reports": []}, r"reports: must hold 1 to 50 numbers of reports \(got 0\)"),
    ({"reports": list(range(1, 52))}, r"reports: must hold 1 to 50 numbers of reports \(got 51\)"),
    ({"reports": [1, "x"]}, r"reports\[1\]: must be an integer, got str 'x'"),
    ({"reports": [1, -2]}, r"reports\[1\]: must be >= 1 \(got -2\)"),
    ({"reports": [2, 3, 2]}, r"reports\[2\]: 2 is listed twice"),
    ({"reports": [1, 2], "memoized": "yes"}, r"memoized: must be true or false, got 'yes'"),
    ({"memoized": False}, r"memoized: only with reports = T"),
    ({"claims": [{"epsilon": 1.0, "reports": 2}]},
     r"claims\[0\]\.reports: 2 is not a number of reports the audit certifies \(1\): add it to the top-level"),
    ({"reports": [1, 5], "claims": [{"epsilon": 1.0, "reports": 3}]},
     r"claims\[0\]\.reports: 3 is not a number of reports the audit certifies \(1, 5\)"),
    ({"reports": [1, 5], "claims": [{"epsilon": 1.0, "reports": 0}]}, r"claims\[0\]\.reports: must be >= 1"),
    ({"reports": [1, 5], "claims": [{"epsilon": 1.0, "reports": True}]},
     r"claims\[0\]\.reports: must be an integer, got bool True"),
    ({"claims": [{"epsilon": 1.0, "report": 1}]},
     r"claims\[0\]\.report: unknown key \(allowed: epsilon, delta, form, label, reports, shuffled\)"),
    ({"reports": [1, 2], "steps": [{**RR3, "epsilon": 1.0, "repeat": 2}]},
     r"steps\[0\]\.repeat: with memoized reports the last step is what each report applies afresh"),
], ids=["bool", "float", "string", "zero", "too-many-reports", "empty", "too-many-values", "item-type",
        "item-negative", "duplicate", "memoized-type", "memoized-alone", "claim-not-audited-default",
        "claim-not-audited", "claim-zero", "claim-bool", "claim-typo", "memoized-repeated-last-step"])
def test_reports_validation_names_the_field(changes, match):
    d = doc()
    d.update(changes)
    with pytest.raises(InvalidPipelineError, match=match):
        cio.parse_pipeline(d)


def test_reports_in_a_table_gets_the_misplaced_hint(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('format = "chainamp-pipeline/1"\n[mechanism]\nepsilon = 1.0\nreports = 3\n'
                 '[[steps]]\nmatrix = [[0.75, 0.25], [0.25, 0.75]]\n')
    with pytest.raises(InvalidPipelineError, match=r"mechanism\.reports: .*move it above the first \[table\] header"):
        cio.load_pipeline(f)


def test_what_is_allowed_around_the_rules():
    # a repeated last step is fine for fresh reports and for one report; a claim about one report needs no key
    rep = [{**RR3, "epsilon": 1.0, "repeat": 2}]
    assert cio.parse_pipeline(doc([1, 3], memoized=False, steps=rep)).reports == (1, 3)
    assert cio.parse_pipeline(doc([1], steps=rep)).reports == (1,)
    claim = cio.parse_pipeline(doc(claims=[{"epsilon": 1.0, "reports": 1}])).claims[0]
    assert claim.reports == 1 and claim.statement() == "epsilon' <= 1 at delta' = 0 after 1 report"
    assert cio.Claim(1.0, 0.0).statement() == "epsilon' <= 1 at delta' = 0"  # unchanged without reports
    assert cio.Claim(0.5, 1e-3, "delta_at", reports=4).statement() == "delta' <= 0.001 at epsilon' = 0.5 after 4 reports"


# --------------------------------------------------------------------------- the catalogue entry
LGRR = {"catalogue": "from_multi_freq_ldpy", "protocol": "L-GRR", "k": 4, "epsilon": 2.0, "eps_1": 0.5}


def test_from_multi_freq_ldpy_parts_are_the_adapters_operators():
    p = cio.parse_pipeline(doc(mechanism={**LGRR, "part": "mechanism"}, steps=[{**LGRR, "part": "instantaneous"}]))
    L = mechanisms.from_multi_freq_ldpy("L-GRR", 4, 2.0, eps_1=0.5)
    assert np.array_equal(p.mechanism.matrix, L.mechanism.matrix)
    assert np.array_equal(p.operators[0].matrix, L.instantaneous.matrix)
    assert p.mechanism_description.endswith(".mechanism") and "from_multi_freq_ldpy" in p.step_names[0]
    grr = cio.parse_pipeline(doc(mechanism={"catalogue": "from_multi_freq_ldpy", "protocol": "GRR", "k": 3,
                                            "epsilon": 2.0}))
    assert np.array_equal(grr.mechanism.matrix, mechanisms.randomized_response(3, 2.0).matrix)


@pytest.mark.parametrize("mech, match", [
    ({**LGRR}, r"mechanism\.part: catalogue 'from_multi_freq_ldpy' needs part = one of mechanism, instantaneous "
               r"\(got None\)"),
    ({**LGRR, "part": "permanent"}, r"mechanism\.part: catalogue 'from_multi_freq_ldpy' needs part = one of "
                                    r"mechanism, instantaneous \(got 'permanent'\)"),
    ({"catalogue": "from_multi_freq_ldpy", "protocol": "GRR", "k": 3, "epsilon": 2.0, "part": "mechanism"},
     r"mechanism\.part: catalogue 'from_multi_freq_ldpy' with these parameters is one operator: leave part out"),
    ({**LGRR, "part": "mechanism", "eps1": 0.5},
     r"mechanism\.eps1: catalogue 'from_multi_freq_ldpy' has no parameter 'eps1'"),
    ({**LGRR, "part": "mechanism", "protocol": "L-XYZ"}, r"mechanism\.protocol: catalogue 'from_multi_freq_ldpy': "),
], ids=["part-missing", "part-unknown", "part-for-one-operator", "parameter-typo", "protocol-unknown"])
def test_from_multi_freq_ldpy_errors(mech, match):
    with pytest.raises(InvalidPipelineError, match=match):
        cio.parse_pipeline(doc(mechanism=mech))


# --------------------------------------------------------------------------- the audit
@pytest.mark.parametrize("memoized", [True, False], ids=["memoized", "fresh"])
def test_one_step_rows_equal_amplify_reports(memoized):
    result = audit(doc([1, 2, 4], memoized=memoized))
    M, K = mechanisms.randomized_response(3, 2.0), mechanisms.randomized_response(3, 1.0)
    over = result.over_time
    assert isinstance(over, ReportsOverTime) and [r.reports for r in over.rows] == [1, 2, 4]
    for row in over.rows:
        assert row.epsilon == ca.amplify_reports(M, K, row.reports, memoized=memoized).best.epsilon
    assert over.rows[0].report is result.report  # one report is the main report
    eps = [r.epsilon for r in over.rows]
    assert eps == sorted(eps)
    if memoized:
        assert over.limit == pytest.approx(2.0) and eps[-1] < 2.0 and all(r.exact is not None for r in over.rows)
    else:
        assert over.limit is None and over.rows[1].source == COMPOSITION_SOURCE and over.rows[1].exact is None
        assert eps[2] >= 4 * eps[0] * (1 - 1e-9)  # pure composition: four times one report


def test_earlier_steps_stay_steps_and_black_box_inputs_work():
    K1, K2 = mechanisms.randomized_response(3, 1.5), mechanisms.randomized_response(3, 1.0)
    steps = [{**RR3, "epsilon": 1.5}, {**RR3, "epsilon": 1.0}]
    over = audit(doc([1, 3], steps=steps)).over_time
    M = mechanisms.randomized_response(3, 2.0)
    direct = ca.amplify(M, [K1, *memoized_steps(K2, 3)])
    assert over.row(3).epsilon == direct.best.epsilon < over.limit
    assert over.row(3).steps[0] is not None and len(over.row(3).steps) == 1 + 3
    black = audit(doc([1, 3], mechanism={"epsilon": 2.0})).over_time
    assert black.row(3).epsilon == ca.amplify_reports(ca.DP(2.0), K2, 3).best.epsilon <= 2.0


def test_claims_per_number_of_reports_with_verdicts(tmp_path):
    claims = [{"epsilon": 0.7, "label": "one report"}, {"epsilon": 0.7, "reports": 1},
              {"epsilon": 1.3, "reports": 2}, {"epsilon": 1.2, "reports": 2},
              {"form": "delta_at", "epsilon": 1.0, "delta": 0.5, "reports": 2}]
    result = audit(doc([1, 2], claims=claims))
    two = result.over_time.row(2)
    status = [v.status for v in result.verdicts]
    assert status == ["certified", "certified", "certified", "refuted", "certified"]
    assert result.verdicts[2].certified == two.epsilon == pytest.approx(1.27735, abs=1e-5)
    assert result.verdicts[0].certified == result.verdicts[1].certified == result.report.best.epsilon
    assert result.verdicts[4].certified == two.report.delta_at(1.0)
    assert not result.ok
    fresh = audit(doc([1, 2], memoized=False, claims=[{"epsilon": 1.3, "reports": 2}]))
    assert fresh.verdicts[0].status == "not certified"  # composition certifies 1.376: never refuted (no exact)


def test_a_too_large_count_channel_is_refused_naming_reports():
    d = doc([1, 5], mechanism={"epsilon": 1.0}, steps=[{"catalogue": "randomized_response", "k": 60, "epsilon": 1.0}])
    with pytest.raises(InvalidPipelineError, match=r"<pipeline>: reports: reports=5: the memoized channel has "
                                                   r"7624512 outcomes .*max_outcomes=200000"):
        audit(d)


def test_certify_reports_directly():
    M, K = mechanisms.rappor_permanent(0.5), mechanisms.rappor_instantaneous(0.5, 0.75)
    over = certify_reports(M, (K,), ca.amplify(M, K), (3, 1))
    assert [r.reports for r in over.rows] == [1, 3] and over.limit == pytest.approx(math.log(3))
    with pytest.raises(KeyError, match=r"2 reports were not audited \(audited: \[1, 3\]\)"):
        over.row(2)


# --------------------------------------------------------------------------- output
def test_text_json_and_html_of_an_audit_over_time():
    result = audit(doc([1, 2, 4], claims=[{"epsilon": 1.3, "reports": 2}]))
    text = str(result)
    assert "epsilon' after T memoized reports" in text and "certified eps' (delta' = 0)" in text
    assert "After 4 memoized reports the pipeline is certified (1.86201, 0)-DP (after 1: 0.687317)" in text
    assert "limit: M alone is 2-DP at delta' = 0" in text and "epsilon' <= 1.3 at delta' = 0 after 2 reports" in text
    assert text.index("epsilon' after T") < text.index("claims\n")
    data = json.loads(json.dumps(result.to_dict()))
    section = data["reports"]
    assert section["memoized"] is True and section["delta"] == 0 and section["limit"] == pytest.approx(2.0)
    assert [r["reports"] for r in section["rows"]] == [1, 2, 4] and section["rows"][1]["source"] == "exact"
    assert data["claims"][0]["reports"] == 2
    page = result._repr_html_()
    assert "epsilon&#x27; after T memoized reports" in page or "epsilon' after T memoized reports" in page
    assert result.reports["over time"] is result.over_time


def test_files_without_reports_keep_their_output():
    result = audit(doc(claims=[{"epsilon": 0.7}]))
    assert result.over_time is None and "over time" not in result.reports
    assert "reports" not in str(result) and result.to_dict()["reports"] is None
    assert result.to_dict()["claims"][0]["reports"] is None


@pytest.mark.parametrize("suffix", [".html", ".md"], ids=["html", "markdown"])
def test_standalone_report_has_the_plot_of_epsilon_against_T(tmp_path, suffix):
    pytest.importorskip("matplotlib")
    from chainamp.report import write_report

    result = audit(doc([1, 2, 3]))
    out = write_report(result, tmp_path / f"r{suffix}")
    text = out.read_text()
    assert "over time" in text and "epsilon' after T" in text.replace("&#x27;", "'")
    assert "M's own epsilon, which memoized reports never exceed" in text.replace("&#x27;", "'")
    if suffix == ".html":
        assert text.count("<img") == 2 and 'alt="over time plot 1"' in text
    else:
        assert (tmp_path / "r-plot-2.png").is_file() and "![over time plot](r-plot-2.png)" in text


def test_plot_reports_over_time():
    pytest.importorskip("matplotlib")
    from chainamp.audit.plot_reports import plot_reports_over_time

    memo, fresh = audit(doc([1, 2, 4])).over_time, audit(doc([1, 2, 4], memoized=False)).over_time
    fig = memo.plot()
    ax = fig.axes[0]
    line = ax.get_lines()[0]
    assert line.get_xdata().tolist() == [1, 2, 4] and line.get_label() == "memoized reports"
    assert ax.get_lines()[1].get_ydata()[0] == pytest.approx(2.0)  # the limit, M's own epsilon
    assert ax.get_xlabel() == "number of reports T" and ax.get_ylim()[0] <= 0
    plot_reports_over_time(fresh, ax=ax, label="fresh")
    assert ax.get_ylim()[1] >= fresh.rows[-1].epsilon  # the overlay is not clipped
    assert [t.get_text() for t in ax.get_legend().get_texts()][-1] == "fresh"
    with pytest.raises(TypeError, match=r"over_time must be a ReportsOverTime"):
        plot_reports_over_time(memo.rows)
    with pytest.raises(TypeError, match=r"label must be a str"):
        plot_reports_over_time(memo, label=3)


def test_cli_json_and_exit_codes(tmp_path, capsys):
    f = tmp_path / "p.toml"
    f.write_text('format = "chainamp-pipeline/1"\nreports = [1, 3]\nmemoized = false\n'
                 '[mechanism]\nepsilon = 1.0\n[[steps]]\nmatrix = [[0.75, 0.25], [0.25, 0.75]]\n'
                 '[[claims]]\nepsilon = 2.0\nreports = 3\n[[claims]]\nepsilon = 1.0\nreports = 3\n')
    assert main(["audit", "--json", str(f)]) == EXIT_CLAIM_FAILED
    data = json.loads(capsys.readouterr().out)
    assert data["reports"]["memoized"] is False and [c["status"] for c in data["claims"]] == [
        "certified", "not certified"]
    f.write_text(f.read_text().replace("reports = [1, 3]", "reports = [1, 3, 3]"))
    assert main(["audit", str(f)]) == EXIT_INVALID
    assert "reports[2]: 3 is listed twice" in capsys.readouterr().err


# --------------------------------------------------------------------------- the dataset
@pytest.fixture(scope="module")
def dataset_run(tmp_path_factory):
    """One command-line audit of the RAPPOR dataset, JSON on stdout and an HTML report."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("rappor") / "r.html"
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(["audit", "--json", "--report", str(out), str(DATASET)])
    return code, json.loads(buf.getvalue()), out.read_text()


def test_rappor_dataset_audits_over_time_with_exit_0(dataset_run):
    code, data, page = dataset_run
    assert code == EXIT_OK and data["ok"] and len(data["claims"]) == 3
    f, p, q, h = 0.5, 0.5, 0.75, 2  # Erlingsson, Pihur and Korolova 2014
    q_star, p_star = 0.5 * f * (p + q) + (1 - f) * q, 0.5 * f * (p + q) + (1 - f) * p
    eps_1 = h * math.log(q_star * (1 - p_star) / (p_star * (1 - q_star)))
    eps_inf = 2 * h * math.log((1 - f / 2) / (f / 2))
    rows = data["reports"]["rows"]
    assert [r["reports"] for r in rows] == [1, 2, 3, 5, 8]
    assert eps_1 <= rows[0]["epsilon"] <= eps_1 * (1 + 1e-9)
    eps = [r["epsilon"] for r in rows]
    assert eps == sorted(eps) and eps[-1] < eps_inf and data["reports"]["limit"] == pytest.approx(eps_inf)
    assert all(r["epsilon"] == r["exact"] for r in rows)  # the exact profile of the count channel
    assert [c["reports"] for c in data["claims"]] == [1, 2, 8]
    assert "over time" in page and page.count("<img") == 2
