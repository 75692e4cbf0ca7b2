"""Reports a reader trusts (issue 14, item 1), on the figures, the standalone reports and the command line:
no curve above the input's profile, marks explained, distinct dashes, no axis stretched to rounding level,
one plain sentence first, and a warning when --report has no matplotlib."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import chainamp as ca  # noqa: E402
from chainamp import mechanisms  # noqa: E402
from chainamp.audit import audit  # noqa: E402
from chainamp.audit.cli import main  # noqa: E402
from chainamp.audit.plot_profiles import PLOT_KEY  # noqa: E402
from chainamp.plot import plot_report  # noqa: E402
from chainamp.report import write_report  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[2] / "datasets"
K5 = mechanisms.randomized_response(5, 1.0)


@pytest.fixture(scope="module")
def reports():
    """A black-box input (the README quickstart), a finite pipeline, a Gaussian input and a graph walk."""
    return {
        "quickstart": ca.amplify(ca.DP(2.0), K5),
        "two_stage_rr": audit(DATA / "two_stage_rr" / "pipeline.toml").report,
        "gaussian": ca.amplify(ca.PrivacyProfile.gaussian(1.0), mechanisms.randomized_response(2, 1.0), delta=1e-5),
        "karate_club": audit(DATA / "graph_walks" / "karate_club.toml").report,
    }


NAMES = ["quickstart", "two_stage_rr", "gaussian", "karate_club"]


def _source_lines(ax, report):
    names = {s.name for s in report.sources} | {"exact (M then K)"}
    for ln in ax.get_lines():
        label = ln.get_label().lstrip("_")
        if label.split(" (")[0] in names or label.startswith("exact (M then K)"):
            yield ln


@pytest.mark.parametrize("name", NAMES, ids=NAMES)
def test_no_curve_is_drawn_above_the_input_profile(reports, name):
    r = reports[name]
    ax = plot_report(r).axes[0]
    prof, checked = r.mechanism.profile, 0
    for ln in _source_lines(ax, r):
        if ln.get_gid() == "zero-marker":
            continue
        xs, ys = np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)
        ok = ~np.isnan(ys)
        own = np.minimum(np.asarray(prof.delta(xs[ok]), float), 1.0)
        assert np.all(ys[ok] <= own), ln.get_label()
        checked += int(ok.sum())
    assert checked > 50


@pytest.mark.parametrize("name, faded", [("quickstart", "theorem1.doeblin"), ("gaussian", "ldp")],
                         ids=["quickstart", "gaussian"])
def test_sources_no_better_than_m_are_drawn_faded_and_labelled(reports, name, faded):
    ax = plot_report(reports[name]).axes[0]
    pale = [ln for ln in ax.get_lines() if ln.get_gid() == "no-better"]
    assert any(ln.get_label() == f"_{faded} no better than M" for ln in pale)
    assert all(ln.get_alpha() < 0.5 for ln in pale)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "faded: no better than M here" in labels


def test_legend_explains_the_zero_suffix_and_the_faded_lines(reports):
    legend = plot_report(reports["quickstart"]).axes[0].get_legend()
    title = legend.get_title().get_text()
    assert "(0 from eps' = x): the curve reaches delta' = 0 at eps' = x" in title
    assert "faded: no better than M here" in title


def test_coinciding_curves_get_distinct_dash_styles(reports):
    ax = plot_report(reports["two_stage_rr"]).axes[0]
    lines = {ln.get_label().split(" (")[0]: ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    hockey, tight, exact = lines["theorem1.hockey_stick"], lines["tight"], lines["exact"]
    assert "(= exact)" in hockey.get_label() and "(= exact)" in tight.get_label()
    # the dash pattern as set (matplotlib keeps it unscaled by the line width on the Line2D)
    dashes = {(ln.get_linestyle(), tuple(ln._unscaled_dash_pattern[1] or ())) for ln in (hockey, tight, exact)}
    assert len(dashes) == 3, dashes


def test_rounding_level_values_do_not_stretch_the_axis(reports):
    r = reports["quickstart"]
    ldp = next(s for s in r.sources if s.name == "ldp")
    tiny = [ldp.bound_at_epsilon(e).delta for e in np.linspace(1.0, 2.0, 41)]
    assert any(0 < d < 1e-14 for d in tiny)  # the premise: float residue where the exact value is 0
    ax = plot_report(r, epsilons=np.linspace(0.0, 2.2, 89)).axes[0]
    assert ax.get_ylim()[0] > 1e-6
    ldp_line = next(ln for ln in ax.get_lines() if ln.get_label().startswith("ldp"))
    ys = np.asarray(ldp_line.get_ydata(), float)
    assert np.nanmin(ys) > 1e-12


@pytest.mark.parametrize("bad, err, match", [(-1.0, "InvalidParameterError", "display_zero_atol"),
                                             ("x", "TypeError", "display_zero_atol")], ids=["negative", "string"])
def test_display_zero_atol_is_validated(reports, bad, err, match):
    with pytest.raises(getattr(ca.errors, err, TypeError), match=match):
        plot_report(reports["quickstart"], display_zero_atol=bad)


# ------------------------------------------------------------------ standalone reports
@pytest.mark.parametrize("suffix", [".html", ".md"], ids=["html", "markdown"])
@pytest.mark.parametrize("name", ["two_stage_rr", "gaussian"], ids=["finite", "gaussian"])
def test_reports_start_with_the_sentence_and_explain_the_plot(tmp_path, reports, name, suffix):
    r = reports[name]
    text = write_report(r, tmp_path / f"r{suffix}").read_text(encoding="utf-8")
    if suffix == ".md":
        body = text.split("\n", 2)[2]
        assert body.startswith(r.headline + "\n")
        assert f"*{PLOT_KEY}*" in text
        fenced = text.split("```text\n", 1)[1]
        assert not fenced.startswith("Certified")  # the sentence is not repeated inside the fence
    else:
        body = text.split("</h1>\n", 1)[1]
        assert body.startswith('<p class="headline"><b>Certified: ')
        assert "(0 from eps&#x27; = x)" in text  # PLOT_KEY as the plot's caption
        assert "vs exact" in text if name == "two_stage_rr" else "vs exact" not in text


def test_audit_result_text_and_report_start_with_the_sentence(tmp_path):
    result = audit(DATA / "two_stage_rr" / "pipeline.toml")
    assert str(result).startswith(result.report.headline + "\nclaims: all 2 claim(s) certified\n")
    assert str(result).count(result.report.headline) == 1
    html = result._repr_html_()
    assert html.startswith('<p class="headline">') and html.count("Certified: ") == 1
    assert result.to_dict()["headline"] == result.report.headline
    md = write_report(result, tmp_path / "a.md").read_text(encoding="utf-8")
    assert md.split("\n", 2)[2].startswith(result.report.headline)


# ------------------------------------------------------------------ --report without matplotlib
def test_report_without_matplotlib_warns_on_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    out = tmp_path / "x.html"
    code = main(["audit", str(DATA / "two_stage_rr" / "pipeline.toml"), "--report", str(out)])
    err = capsys.readouterr().err
    assert code == 0 and out.is_file()
    assert "chainamp: warning: --report:" in err and "plots omitted" in err and "pip install" in err


def test_write_report_without_matplotlib_warns(tmp_path, monkeypatch, reports):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.warns(UserWarning, match="plots omitted"):
        write_report(reports["quickstart"], tmp_path / "q.md")
