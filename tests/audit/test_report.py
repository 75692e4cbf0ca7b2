"""Tests for chainamp.report.write_report: HTML and Markdown files, embedded plots, JSON appendix."""

from __future__ import annotations

import base64
import json
import math
import re
import sys

import numpy as np
import pytest

import chainamp as ca
from chainamp.errors import InvalidParameterError
from chainamp.audit.report import _json_safe, write_report

from conftest import krr_matrix

try:  # the plots are drawn off-screen; the writer itself also works without matplotlib
    import matplotlib

    matplotlib.use("Agg")
except ImportError:  # pragma: no cover
    pass

PNG = b"\x89PNG\r\n\x1a\n"
K = ca.MarkovOperator(krr_matrix(3, 1.0))


@pytest.fixture(scope="module")
def report():
    return ca.amplify(ca.DP(1.0, 1e-3), K)


@pytest.fixture(scope="module")
def steps():
    return ca.amplify_steps(ca.DP(1.0), K, steps=3)


class Audit:
    """Stands in for an audit result: to_dict, __str__ and the reports it holds."""

    def __init__(self, reports):
        self.reports = reports

    def to_dict(self):
        return {"verdict": True, "epsilon": np.float64(math.inf), "claims": np.arange(2)}

    def __str__(self):
        return "audit <ok> & done"


def _images(html_text: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html_text)]


def _appendix(html_text: str) -> dict:
    import html

    body = re.search(r"<summary>JSON data</summary><pre>(.*?)</pre>", html_text, re.S).group(1)
    return json.loads(html.unescape(body))


def test_html_is_self_contained(tmp_path, report):
    pytest.importorskip("matplotlib")
    out = write_report(report, tmp_path / "r.html")
    assert out == tmp_path / "r.html" and out.is_file()
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert report._repr_html_() in text  # the report's own table
    imgs = _images(text)
    assert len(imgs) == 1 and imgs[0].startswith(PNG)
    assert not re.search(r'(src|href)="(?!data:)', text)  # nothing fetched from elsewhere
    assert _appendix(text) == json.loads(json.dumps(_json_safe(report.to_dict())))
    assert f"<h1>chainamp report: K o M with M = {report.mechanism.description}</h1>" in text
    assert list(tmp_path.iterdir()) == [out]  # no side files


def test_markdown_writes_png_files_next_to_it(tmp_path, report):
    pytest.importorskip("matplotlib")
    out = write_report(report, str(tmp_path / "sub.md"), title="My audit")
    text = out.read_text(encoding="utf-8")
    assert text.startswith(f"# My audit\n\n{report.headline}\n")  # the plain sentence first, as a paragraph
    assert str(report)[len(report.headline):].strip() in text  # the rest of the text, fenced
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links == ["sub-plot-1.png"]
    assert (tmp_path / links[0]).read_bytes().startswith(PNG)
    data = json.loads(re.search(r"```json\n(.*?)\n```", text, re.S).group(1))
    assert data["best"]["epsilon"] == report.best.epsilon


def test_steps_report(tmp_path, steps):
    pytest.importorskip("matplotlib")
    text = write_report(steps, tmp_path / "s.htm").read_text()
    assert steps._repr_html_() in text and len(_images(text)) == 1
    assert _appendix(text)["steps"][0]["t"] == 1


@pytest.mark.parametrize("container", ["list", "dict"], ids=["list", "dict"])
def test_object_holding_reports(tmp_path, report, steps, container):
    pytest.importorskip("matplotlib")
    held = [report, steps] if container == "list" else {"pipeline A": report, "over steps": steps}
    text = write_report(Audit(held), tmp_path / "a.html").read_text()
    assert "<pre>audit &lt;ok&gt; &amp; done</pre>" in text  # escaped __str__ when no _repr_html_
    assert len(_images(text)) == 2  # one plot per held report
    names = ["report 1", "report 2"] if container == "list" else ["pipeline A", "over steps"]
    assert re.findall(r"<h2>(.*?)</h2>", text) == names
    assert _appendix(text) == {"verdict": True, "epsilon": "inf", "claims": [0, 1]}
    assert "<h1>chainamp report: Audit</h1>" in text
    if container == "dict":  # the Markdown writer reads the same sections whatever the container (two plots less)
        md = write_report(Audit(held), tmp_path / "a.md")
        assert sorted(p.name for p in tmp_path.glob("a-plot-*.png")) == ["a-plot-1.png", "a-plot-2.png"]
        assert "## pipeline A" in md.read_text() and "## over steps" in md.read_text()


class Container(Audit):
    """Its own text and HTML already hold the first report's: that table is not repeated."""

    def __str__(self):
        return "verdicts\n" + str(self.reports[0])

    def _repr_html_(self):
        return "<p>verdicts</p>" + self.reports[0]._repr_html_()


def test_held_tables_are_not_repeated(tmp_path, report, steps):
    pytest.importorskip("matplotlib")
    res = Container([report, steps])
    text = write_report(res, tmp_path / "c.html").read_text()
    assert text.count(report._repr_html_()) == 1 and text.count(steps._repr_html_()) == 1
    assert len(_images(text)) == 2
    md = write_report(res, tmp_path / "c.md").read_text()
    assert md.count(str(report)) == 1 and md.count(str(steps)) == 1
    assert "<h1>chainamp report: Container</h1>" in text


def test_plain_object_without_to_dict(tmp_path):
    class Plain:
        def __str__(self):
            return "just text ``` with a fence"

    text = write_report(Plain(), tmp_path / "p.md").read_text()
    assert "````text\njust text ``` with a fence\n````" in text  # longer fence than the content's
    assert "JSON data" not in text and not list(tmp_path.glob("*.png"))


def test_title_is_escaped(tmp_path, report):
    text = write_report(report, tmp_path / "t.html", title="<b>x</b>").read_text()
    assert "<h1>&lt;b&gt;x&lt;/b&gt;</h1>" in text


def test_without_matplotlib_the_report_says_so(tmp_path, report, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.warns(UserWarning, match="plots omitted"):
        text = write_report(report, tmp_path / "n.html").read_text()
    assert not _images(text)
    assert "plots omitted: chainamp plotting needs matplotlib" in text
    assert report._repr_html_() in text


@pytest.mark.parametrize("path, kwargs, err, match", [
    ("out.pdf", {}, InvalidParameterError, r"path '.*out\.pdf'.*must be \.html, \.htm or \.md \(got '\.pdf'\)"),
    ("noext", {}, InvalidParameterError, r"path '.*noext'.*\(got ''\)"),
    (3, {}, TypeError, "path must be a str or pathlib.Path"),
    ("out.html", {"title": 5}, TypeError, "title must be a str"),
], ids=["pdf", "no-suffix", "path-type", "title-type"])
def test_validation(tmp_path, report, path, kwargs, err, match):
    target = tmp_path / path if isinstance(path, str) else path
    with pytest.raises(err, match=match):
        write_report(report, target, **kwargs)
    assert not list(tmp_path.iterdir())  # nothing written


def test_json_safe():
    got = _json_safe({"a": (np.float32(1.5), np.int64(2), math.inf, -math.inf, math.nan),
                      1: np.array([[1, 2]]), "b": np.bool_(True), "c": None, "d": object})
    assert got == {"a": [1.5, 2, "inf", "-inf", "nan"], "1": [[1, 2]], "b": True, "c": None,
                   "d": "<class 'object'>"}
    json.dumps(got, allow_nan=False)


@pytest.mark.parametrize("value, text", [
    (1e-6, "1e-06"), (2.5e-7, "2.5e-07"), (9.99921e-7, "9.9992e-07"), (0.0005, "0.0005"), (3.2e7, "3.2e+07"),
    (0.735326, "0.735326"), (0.0, "0"), (math.inf, "inf"), (None, "-"),
], ids=["1e-6", "2.5e-7", "5-digits", "small-fixed", "large", "moderate", "zero", "inf", "none"])
def test_table_numbers_without_trailing_zeros(value, text):
    from chainamp._numerics import fmt_number

    assert fmt_number(value) == text


def test_report_text_shows_compact_deltas(tmp_path):
    r = ca.amplify(ca.DP(2.0, 1e-6), K)
    out = write_report(r, tmp_path / "r.md")
    body = out.read_text(encoding="utf-8")
    assert "M = (2, 1e-06)-DP" in body and "1.0000e-06" not in body


class Holder:
    """A result whose text already names the operator it holds (like ``chainamp coefficients``)."""

    def __init__(self, op, text=None):
        self.reports = {"the operator K": op}
        self._text = text if text is not None else f"coefficients of {op!r}"

    def __str__(self):
        return self._text


def test_held_operator_is_drawn_as_a_heat_map(tmp_path):
    pytest.importorskip("matplotlib")
    text = write_report(Holder(K), tmp_path / "k.html").read_text()
    assert len(_images(text)) == 1 and "<h2>the operator K</h2>" in text
    assert text.count(repr(K).replace("'", "&#x27;")) == 1  # its repr is already in the result's text
    # a held operator whose repr the result's text does not contain gets it in its section
    text = write_report(Holder(K, text="something else"), tmp_path / "k2.html").read_text()
    assert text.count("<pre>") == 2
