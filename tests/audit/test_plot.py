"""Tests for chainamp.plot: the artists drawn (lines per source, labels, data), not pixels."""

from __future__ import annotations

import math
import sys

import networkx as nx
import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import chainamp as ca  # noqa: E402
from chainamp.audit import plot as cplot  # noqa: E402
from chainamp.errors import InvalidOperatorError, InvalidParameterError  # noqa: E402
from chainamp.plot import plot_graph, plot_operator, plot_report, plot_steps  # noqa: E402
from chainamp.amplification import StepResult, StepsReport  # noqa: E402

from conftest import krr_matrix  # noqa: E402

K3 = ca.MarkovOperator(krr_matrix(3, 1.0), inputs=list("abc"), outputs=list("xyz"))


def _labels(ax) -> list[str]:
    return [ln.get_label() for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def _line(ax, prefix: str):
    hits = [ln for ln in ax.get_lines() if ln.get_label().startswith(prefix)]
    assert len(hits) == 1, (prefix, _labels(ax))
    return hits[0]


def _legend_names(ax) -> list[str]:
    """Every source the legend names: its own line, or listed in the "under M's curve" / "not drawn" entries."""
    names = []
    for lab in _labels(ax):
        if lab.startswith(("under M's curve", "not drawn")):
            names += [n.strip() for n in lab.replace("\n", " ").split("): ", 1)[1].split(",")]
        elif not lab.startswith(("input M", "target", "best", "faded")):
            names.append(lab.split(" (")[0])
    return names


# ------------------------------------------------------------------ plot_report
@pytest.fixture(scope="module")
def dp_report():
    return ca.amplify(ca.DP(1.0, 1e-3), ca.MarkovOperator(krr_matrix(3, 1.0)))


@pytest.fixture(scope="module")
def finite_report():
    M = ca.MarkovOperator(krr_matrix(3, 2.0))
    return ca.amplify(M, ca.MarkovOperator(krr_matrix(3, 1.0)))


def test_report_one_line_per_source_and_input(dp_report):
    fig = plot_report(dp_report)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert sorted(_legend_names(ax)) == sorted(s.name for s in dp_report.sources)  # each source named once
    assert _line(ax, "input M: ").get_label() == f"input M: {dp_report.mechanism.description}"
    assert not [lab for lab in _labels(ax) if lab.startswith("exact")]
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "epsilon'" and ax.get_ylabel() == "delta'(epsilon')"
    assert ax.get_legend() is not None
    # target delta' line and the best bound's star
    assert any(lab.startswith("target delta'") for lab in _labels(ax))
    star = _line(ax, "best: ")
    assert star.get_xdata()[0] == dp_report.best.epsilon and star.get_ydata()[0] == dp_report.best.delta


def test_report_curves_are_the_certified_numbers(finite_report):
    """Each source's line is its certified delta' where it is better than M; where it is not, the line
    has a gap and a faded line (gid "no-better") runs along M's own profile instead."""
    ax = plot_report(finite_report).axes[0]
    by_name = {s.name: s for s in finite_report.sources}
    prof = finite_report.mechanism.profile
    checked = 0
    for ln in ax.get_lines():
        name = ln.get_label().split(" (")[0]
        src = by_name.get("exact" if name.startswith("exact") else name)
        if src is None:
            continue
        xs, ys = np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)
        for x, y in list(zip(xs, ys))[::7]:
            b = src.bound_at_epsilon(float(x))
            own = min(float(prof.delta(float(x))), 1.0)
            want = math.nan if b is None or b.delta == 0 or b.delta > own else min(b.delta, 1.0)
            assert (math.isnan(y) and math.isnan(want)) or y == want, (src.name, x, y, want)
            checked += 1
    assert checked > 20
    exact = _line(ax, "exact (M then K)")
    assert exact.get_color() == "black"
    # the table's numbers are on the grid: each listed bound's epsilon is an x of its curve
    xs = set(np.asarray(exact.get_xdata(), float).tolist())
    assert finite_report.exact.epsilon in xs


def test_report_marks_where_delta_reaches_zero():
    # pure input: the Doeblin clause gives delta' = 0 from its epsilon' on (ultra-mixing too, under M's curve)
    r = ca.amplify(ca.DP(1.0), ca.MarkovOperator(krr_matrix(3, 1.0)))
    ax = plot_report(r).axes[0]
    line = _line(ax, "theorem1.doeblin")
    assert "(0 from eps' = " in line.get_label()
    markers = [ln for ln in ax.get_lines() if ln.get_gid() == "zero-marker"]
    assert markers and all(ln.get_marker() == "v" for ln in markers)
    star = _line(ax, "best: ")
    assert r.best.delta == 0 and star.get_xdata()[0] == r.best.epsilon
    assert star.get_transform() != ax.transData  # on the bottom edge, not at log(0)


def test_new_figures_are_closed_in_pyplot(dp_report):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig = plot_report(dp_report, epsilons=[0.0, 1.0])
    assert plt.get_fignums() == before  # closed at once: no pile-up, shown once in a notebook
    assert fig.axes and fig.canvas is not None


def test_report_on_given_axes_and_custom_grid(dp_report):
    fig = Figure()
    ax = fig.add_subplot()
    out = plot_report(dp_report, ax=ax, epsilons=[0.0, 0.5, 2.0])
    assert out is ax
    xs = np.asarray(_line(ax, "input M").get_xdata(), float)
    assert xs.tolist() == [0.0, 0.5, 2.0]
    assert isinstance(dp_report.plot(), Figure)  # AmplificationReport.plot delegates here


@pytest.mark.parametrize("bad, err, match", [
    ([], InvalidParameterError, "at least one"),
    ([0.1, -1.0], InvalidParameterError, "epsilons must be >= 0"),
    ([math.nan], InvalidParameterError, "must not be NaN"),
    ([math.inf], InvalidParameterError, "must be finite"),
    ("abc", TypeError, "epsilons must be an array"),
], ids=["empty", "negative", "nan", "inf", "string"])
def test_report_grid_validation(dp_report, bad, err, match):
    with pytest.raises(err, match=match):
        plot_report(dp_report, epsilons=bad)


# ------------------------------------------------------------------ plot_steps
def test_steps_line_and_markers():
    rep = ca.amplify_steps(ca.DP(1.0), ca.MarkovOperator(krr_matrix(3, 2.0)), steps=4, max_product_entries=8)
    exact = np.array([s.exact_coefficients for s in rep.steps])
    assert exact.tolist() == [True, False, False, False]
    fig = plot_steps(rep)
    ax = fig.axes[0]
    line = _line(ax, "M = (1, 0)-DP")
    assert np.asarray(line.get_xdata()).tolist() == [1, 2, 3, 4]
    ys = np.asarray(line.get_ydata(), float)
    assert ys[0] == rep.epsilons[0] and np.isnan(ys[1:]).all()  # filled: exact coefficients only
    composed = _line(ax, "composed coefficients")
    assert np.asarray(composed.get_xdata()).tolist() == [1, 2, 3, 4]  # continues from the last exact step
    np.testing.assert_array_equal(np.asarray(composed.get_ydata(), float), rep.epsilons)
    assert composed.get_markerfacecolor() == "none" and composed.get_color() == line.get_color()
    assert ax.get_xlabel() == "steps t" and "delta' = 0" in ax.get_ylabel()
    assert isinstance(rep.plot(), Figure)  # StepsReport.plot delegates here


def test_steps_overlay_keeps_the_first_labels():
    K = ca.MarkovOperator(krr_matrix(3, 2.0))
    a, b = ca.amplify_steps(ca.DP(1.0), K, steps=2), ca.amplify_steps(ca.DP(2.0), K, steps=2)
    fig = plot_steps(a, label="first")
    fig.axes[0].set_title("mine")
    out = plot_steps(b, ax=fig.axes[0], label="second")
    assert out is fig.axes[0] and out.get_title() == "mine"
    assert _labels(out) == ["first", "second"]
    with pytest.raises(TypeError, match="label must be a str"):
        plot_steps(a, label=3)


def _step(t, eps):
    return StepResult(t, eps, 1e-6, "tight", True, 0.5, 0.5, 0.5)


def test_steps_uncertified_and_log_axis():
    rep = StepsReport("test", 1e-6, (_step(1, math.inf), _step(2, 1.0), _step(3, 0.01)))
    ax = plot_steps(rep).axes[0]
    crosses = _line(ax, "nothing certified")
    assert np.asarray(crosses.get_xdata()).tolist() == [1]
    assert ax.get_yscale() == "log"  # 1.0 / 0.01 spans more than a factor 20
    flat = StepsReport("test", 1e-6, (_step(1, 1.0), _step(2, 0.9)))
    ax2 = plot_steps(flat).axes[0]
    assert ax2.get_yscale() == "linear" and "nothing certified" not in _labels(ax2)


# ------------------------------------------------------------------ plot_operator
def test_operator_heat_map_small():
    fig = plot_operator(K3)
    ax = fig.axes[0]
    (im,) = ax.get_images()
    np.testing.assert_array_equal(im.get_array(), K3.matrix)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y", "z"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert len(ax.texts) == 9  # every cell annotated
    assert len(fig.axes) == 2  # and a colour bar


def test_operator_large_unlabelled_and_sparse(monkeypatch):
    W = ca.MarkovOperator.random_walk(nx.cycle_graph(30), laziness=0.5)
    ax = plot_operator(W).axes[0]
    assert not ax.texts and len(ax.get_images()) == 1
    assert [t.get_text() for t in ax.get_xticklabels()] != [str(i) for i in range(30)]
    monkeypatch.setattr(cplot, "DENSE_LIMIT", 100)
    ax = plot_operator(W).axes[0]
    assert ax.get_title().startswith("non-zero pattern") and not ax.get_images()


def test_operator_type_error():
    with pytest.raises(TypeError, match="K must be a MarkovOperator"):
        plot_operator(np.eye(2))


# ------------------------------------------------------------------ plot_graph
def test_graph_edges_and_labels():
    G = nx.path_graph(4)
    W = ca.MarkovOperator.random_walk(G, laziness=0.5)
    fig = plot_graph(W)
    ax = fig.axes[0]
    arrows = [p for p in ax.patches if type(p).__name__ == "FancyArrowPatch"]
    assert len(arrows) == 6  # 3 undirected edges, both directions; self-loops are not edges
    widths = sorted(round(p.get_linewidth(), 6) for p in arrows)
    # width = 0.3 + 3.5 w / max w: the end nodes move w.p. 0.5, the inner ones w.p. 0.25 each way
    assert widths == sorted([round(0.3 + 3.5 * w / 0.5, 6) for w in (0.5, 0.25, 0.25, 0.25, 0.25, 0.5)])
    assert sorted(t.get_text() for t in ax.texts) == ["0", "1", "2", "3"]
    out = plot_graph(W, ax=Figure().add_subplot(), layout="circular")
    assert isinstance(out, Axes)


@pytest.mark.parametrize("K, kwargs, err, match", [
    (ca.MarkovOperator(krr_matrix(3, 1.0), outputs=list("xyz")), {}, InvalidOperatorError, "square operator"),
    (K3.restrict(["a", "b"]), {}, InvalidOperatorError, "plot_operator for a rectangular"),
    (ca.MarkovOperator(krr_matrix(3, 1.0)), {"layout": "grid"}, InvalidParameterError, "layout must be one of"),
    ([[1.0]], {}, TypeError, "K must be a MarkovOperator"),
], ids=["relabelled", "rectangular", "layout", "not-operator"])
def test_graph_validation(K, kwargs, err, match):
    with pytest.raises(err, match=match):
        plot_graph(K, **kwargs)


# ------------------------------------------------------------------ missing matplotlib
@pytest.mark.parametrize("fn, arg", [
    (plot_operator, K3), (plot_graph, ca.MarkovOperator(krr_matrix(2, 1.0))),
], ids=["operator", "graph"])
def test_missing_matplotlib_names_the_extra(monkeypatch, fn, arg):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"needs matplotlib.*pip install 'chainamp\[plot\]'"):
        fn(arg)


def test_import_chainamp_does_not_import_matplotlib(fresh_import):
    assert "matplotlib" not in fresh_import["chainamp.plot and chainamp.report"]


# ------------------------------------------------------------------ legibility: hidden curves, legend, wrong types
def test_bounds_equal_to_the_exact_profile_say_so(finite_report):
    ax = plot_report(finite_report).axes[0]
    by_name = {s.name: s for s in finite_report.sources}
    exact = _line(ax, "exact (M then K)")
    for name in ("theorem1.hockey_stick", "tight"):
        assert by_name[name].bound_at_epsilon(0.3).delta == pytest.approx(
            by_name["exact"].bound_at_epsilon(0.3).delta, rel=1e-6)  # the premise: equal curves here
        assert _line(ax, f"{name} ").get_label().startswith(f"{name} (= exact)")
    # the exact curve is drawn under the bounds, so a bound on top of it stays visible
    assert all(exact.get_zorder() < ln.get_zorder() for ln in ax.get_lines() if ln.get_label().startswith("theorem1"))
    for name in ("theorem1.dobrushin", "ldp"):  # different curves keep their plain name
        assert "(= " not in _line(ax, f"{name} ").get_label()


def test_coincides_compares_on_common_points_and_zeros():
    eps = np.array([0.0, 1.0, 2.0])
    drawn = [("a", eps, np.array([0.5, 0.1, 0.0]), False)]
    assert cplot._coincides(eps, np.array([0.5, 0.1 * (1 + 1e-4), 0.0]), drawn) == "a"
    assert cplot._coincides(eps, np.array([0.5, 0.1 * (1 + 1e-2), 0.0]), drawn) is None  # visibly apart
    assert cplot._coincides(eps, np.array([0.5, 0.1, 1e-300]), drawn) is None  # 0 is not "close" to 1e-300
    assert cplot._coincides(np.array([0.0, 0.5, 1.0]), np.array([0.5, 0.3, 0.1]), drawn) == "a"  # at 0 and 1
    assert cplot._coincides(np.array([0.0, 0.5]), np.array([0.5, 0.3]), drawn) is None  # one common point


def test_zero_labels_give_the_certified_epsilon_not_the_next_grid_point():
    K = ca.MarkovOperator(krr_matrix(5, 1.0))  # K is 1-LDP: the ldp source reaches delta' = 0 at eps' = 1
    r = ca.amplify(ca.PrivacyProfile.gaussian(sigma=1.0), K, delta=1e-6)
    ax = plot_report(r).axes[0]
    ldp_zero = r.sources[[s.name for s in r.sources].index("ldp")].bound_at_delta(0.0).epsilon
    assert _line(ax, "ldp ").get_label() == f"ldp (0 from eps' = {cplot.fmt_number(ldp_zero, 3)})" == \
        "ldp (0 from eps' = 1)"
    xs = [ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_gid() == "zero-marker"]
    assert ldp_zero in xs  # the marker sits at the certified eps', not at a grid point past it


def test_legend_below_a_new_figure_inside_a_given_axes(dp_report):
    legend = plot_report(dp_report).axes[0].get_legend()
    anchor = legend.get_bbox_to_anchor().transformed(legend.axes.transAxes.inverted())
    assert anchor.y0 < 0  # below the axes: it hides no curve
    ax = Figure().add_subplot()
    plot_report(dp_report, ax=ax)
    assert ax.get_legend()._loc == 0  # "best", inside the caller's axes


@pytest.mark.parametrize("fn, arg, match", [
    (plot_report, K3, r"report must be an AmplificationReport \(from chainamp\.amplify\), got MarkovOperator$"),
    (plot_report, "steps", r"got StepsReport; use plot_steps for a StepsReport"),
    (plot_steps, "amplification", r"steps_report must be a StepsReport \(from chainamp\.amplify_steps\), got "
                                  r"AmplificationReport; use plot_report for an AmplificationReport"),
], ids=["report-operator", "report-steps", "steps-report"])
def test_wrong_report_type(dp_report, fn, arg, match):
    if arg == "steps":
        arg = ca.amplify_steps(ca.DP(1.0), ca.MarkovOperator(krr_matrix(3, 1.0)), steps=2)
    elif arg == "amplification":
        arg = dp_report
    with pytest.raises(TypeError, match=match):
        fn(arg)


def test_report_of_finite_input_then_deterministic_K_draws():
    """Issue 18.1: a finite M then a deterministic K (the exact curve has a color, and a faded part)."""
    from chainamp import mechanisms

    report = ca.amplify(mechanisms.randomized_response(4, 2.0), np.eye(4))
    fig = report.plot()
    ax = fig.axes[0]
    exact = _line(ax, "exact")
    faded = [ln for ln in ax.get_lines() if ln.get_gid() == "no-better"]
    assert faded and all(ln.get_color() == exact.get_color() for ln in faded if ln.get_label() == "_exact no better than M")


def test_report_legend_names_only_visible_curves_and_m_on_top():
    """Issue 18 (reports): no legend line for a curve that draws nothing (no better than M at any eps': under
    M's curve), no curve for a source the table says does not apply, M's dashed curve above every other."""
    from chainamp import mechanisms

    K = mechanisms.randomized_response(5, 1.0)
    dp = ca.amplify(ca.DP(2.0), K)
    ax = plot_report(dp).axes[0]
    visible = {ln.get_label().split(" (")[0] for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    for ln in ax.get_lines():
        if ln.get_label().split(" (")[0] in {s.name for s in dp.sources}:
            assert np.isfinite(np.asarray(ln.get_ydata(), dtype=float)).any(), ln.get_label()
    under = [lab for lab in _labels(ax) if lab.startswith("under M's curve")]
    assert len(under) == 1 and "theorem1.dobrushin" in under[0] and "theorem1.dobrushin" not in visible
    assert sorted(_legend_names(ax)) == sorted(s.name for s in dp.sources)
    m_line = _line(ax, "input M: ")
    assert all(m_line.get_zorder() > ln.get_zorder() for ln in ax.get_lines() if ln is not m_line
               and ln.get_gid() != "zero-marker" and not ln.get_label().startswith("best"))

    finite = ca.amplify(mechanisms.randomized_response(5, 2.0), K)
    assert "theorem1.doeblin" not in {b.source for b in finite.bounds}  # "does not apply" in the table
    ax = plot_report(finite).axes[0]
    assert not [ln for ln in ax.get_lines() if ln.get_label().startswith(("theorem1.doeblin", "_theorem1.doeblin"))]
    assert any(lab.replace("\n", " ").startswith("not drawn (does not apply, see the table): theorem1.doeblin")
               for lab in _labels(ax))
    title = ax.get_legend().get_title().get_text()
    assert "the curve reaches delta' = 0 at eps' = x" in title and "delta' = 0 from x on" not in title
