"""How an AmplificationReport reads (issue 14, item 1): the headline sentence, sources no better than the
input, sources that do not apply, "vs exact" explained, values at rounding level. No matplotlib here."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainamp as ca
from chainamp import mechanisms
from chainamp.amplification import reading

K5 = mechanisms.randomized_response(5, 1.0)


@pytest.fixture(scope="module")
def quickstart():
    return ca.amplify(ca.DP(2.0), K5)


@pytest.fixture(scope="module")
def finite():
    return ca.amplify(mechanisms.randomized_response(5, 2.0), K5)


@pytest.fixture(scope="module")
def gaussian():
    return ca.amplify(ca.PrivacyProfile.gaussian(1.0), mechanisms.randomized_response(2, 1.0), delta=1e-5)


REPORTS = ["quickstart", "finite", "gaussian"]


# ------------------------------------------------------------------ no better than the input
@pytest.mark.parametrize("name", REPORTS, ids=REPORTS)
def test_no_curve_is_shown_above_the_input_profile(request, name):
    r = request.getfixturevalue(name)
    for c in r.curves():
        own = np.minimum(np.asarray(r.mechanism.profile.delta(c.epsilons), float), 1.0)
        np.testing.assert_array_equal(c.input_deltas, own)
        ok = ~np.isnan(c.shown)
        assert np.all(c.shown[ok] <= own[ok]), c.name
        # clipped exactly where the certified delta' exceeds M's own, and nowhere else
        with np.errstate(invalid="ignore"):
            assert np.array_equal(c.no_better, np.isfinite(c.deltas) & (c.deltas > own))
        np.testing.assert_array_equal(c.shown[~c.no_better], c.deltas[~c.no_better])


def test_quickstart_doeblin_is_no_better_than_m_near_its_pure_level(quickstart):
    ranges = quickstart.no_better_than_input()
    doeblin = ranges["theorem1.doeblin"]  # delta' ~ 0.16 in steps, while M's profile drops to 0 at eps' = 2
    assert doeblin and all(1.7 < lo <= hi < 2.0 for lo, hi in doeblin)
    assert ranges["tight"] == () and ranges["ldp"] == ()  # the tight bound is alpha * D <= alpha
    # the certified numbers did not move: the envelope is the same as before
    assert quickstart.epsilon_at(0.0) == quickstart.source_epsilon("tight")
    data = {s["name"]: s for s in quickstart.to_dict()["sources"]}
    assert data["theorem1.doeblin"]["no_better_than_input"] == [list(r) for r in doeblin]


def test_runs_of_a_mask():
    eps = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    assert reading.runs(eps, np.array([True, True, False, True, True])) == ((0.0, 1.0), (3.0, 4.0))
    assert reading.runs(eps, np.zeros(5, bool)) == ()
    assert reading.runs(eps, np.array([False, False, True, False, False])) == ((2.0, 2.0),)


def test_table_rows_no_better_than_m_say_so(quickstart):
    text = str(quickstart)
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith(("theorem1.", "ldp", "tight"))}
    assert rows["theorem1.dobrushin"].rstrip().endswith("no better than M here")  # (2, 0) from (2, 0)
    assert "no better than M" not in rows["tight"] and "no better than M" not in rows["ldp"]
    assert "M's own guarantee is the better certificate" in text  # the key under the table


# ------------------------------------------------------------------ sources that do not apply
def test_finite_doeblin_is_listed_with_its_reason(finite):
    assert "theorem1.doeblin" not in {b.source for b in finite.bounds}  # no certified row at delta' = 0 ...
    text = str(finite)
    row = next(line for line in text.splitlines() if line.startswith("theorem1.doeblin"))
    assert row.rstrip().endswith("does not apply (see below)")  # ... yet listed, in the sources' order
    assert "theorem1.doeblin does not apply: at delta' <= 0 it only restates M's own guarantee" in text
    assert "gamma_Doeblin = 0.255762" in text
    data = {s["name"]: s for s in finite.to_dict()["sources"]}
    assert data["theorem1.doeblin"]["applies"] is False and "restates" in data["theorem1.doeblin"]["reason"]
    assert data["exact"]["applies"] is True and data["exact"]["reason"] is None
    assert "does not apply" in finite._repr_html_()


def test_ldp_of_an_operator_with_zeros_does_not_apply():
    r = ca.amplify(ca.DP(1.0), ca.MarkovOperator([[1.0, 0.0], [0.5, 0.5]]))
    text = str(r)
    assert "ldp does not apply: K is not (epsilon', delta')-LDP" in text.replace("\n    ", " ")
    assert {s["name"]: s["applies"] for s in r.to_dict()["sources"]}["ldp"] is False


# ------------------------------------------------------------------ vs exact, rounding level
def test_vs_exact_is_explained_and_search_noise_prints_as_approx_zero(finite):
    text = str(finite)
    assert "vs exact: the source's epsilon' minus the exact epsilon' of the finite pipeline" in text.replace(
        "\n    ", " ")
    tight = next(line for line in text.splitlines() if line.startswith("tight"))
    gap = finite.source_epsilon("tight") - finite.exact.epsilon
    assert 0 < gap < 1e-6 and "\u2248 0" in tight  # a bracket artefact, not a real gap
    assert finite.to_dict()["gaps"]["tight"] == gap  # the number itself is kept


def test_black_box_report_has_no_vs_exact_key(quickstart):
    assert "vs exact" not in str(quickstart)


@pytest.mark.parametrize("target, level", [(0.0, 1e-12), (1e-5, 1e-12), (1e-12, 1e-15)],
                         ids=["zero-target", "usual", "tiny-target"])
def test_zero_level_never_hides_the_scale_asked_about(target, level):
    assert reading.zero_level(target) == pytest.approx(level)


@pytest.mark.parametrize("delta, text", [(0.0, "0"), (9e-16, "\u2248 0"), (1e-12, "\u2248 0"), (2e-12, "2e-12"),
                                         (None, "-")], ids=["zero", "rounding", "edge", "above", "none"])
def test_fmt_delta(delta, text):
    assert reading.fmt_delta(delta, 1e-12) == text


@pytest.mark.parametrize("gap, eps, text", [(1.4e-8, 0.6, "\u2248 0"), (-1e-9, 0.6, "\u2248 0"), (1e-3, 0.6, "0.001"),
                                            (None, 0.6, "-")], ids=["noise", "negative-noise", "real", "none"])
def test_fmt_gap(gap, eps, text):
    assert reading.fmt_gap(gap, eps) == text


# ------------------------------------------------------------------ one plain sentence first
@pytest.mark.parametrize("name, says", [
    ("quickstart", "this is the worst case over every M with that guarantee"),
    ("finite", "this is the exact value of the pipeline, and the best general bound (Theorem 1(2)"),
    ("gaussian", "from Theorem 1(2) of Balle et al. 2019; this is the worst case"),
], ids=REPORTS)
def test_every_presentation_starts_with_the_headline(request, name, says):
    r = request.getfixturevalue(name)
    h = r.headline
    assert h.startswith("Certified: M = ") and h.endswith(".") and says in h
    assert h.replace("et al. ", "").count(". ") == 0  # one sentence
    assert f"({ca._numerics.fmt_number(r.best.epsilon)}, " in h
    assert str(r).startswith(h + "\n")
    assert r._repr_html_().startswith('<p class="headline"><b>')
    assert r.to_dict()["headline"] == h


def test_headline_of_a_list_of_points_claims_the_worst_case():
    """A list of points now has its exact profile (the intersection of the points' regions, realised by a
    finite dominating pair), so the tight bound along it is attained and the headline may say so."""
    r = ca.amplify([ca.DP(1.0, 1e-3), ca.DP(2.0, 0.0)], K5)
    assert r.mechanism.profile.exact
    assert "no black-box analysis can certify less" in r.headline and "is at most this" not in r.headline


def test_headline_of_an_inexact_profile_does_not_claim_the_worst_case():
    r = ca.amplify(ca.PrivacyProfile.from_callable(lambda e: min(1.0, 0.2 * math.exp(-e)), name="curve"), K5,
                   delta=1e-3)
    assert "is at most this" in r.headline and "no black-box analysis" not in r.headline


def test_steps_report_starts_with_its_headline():
    s = ca.amplify_steps(ca.DP(1.0, 1e-6), mechanisms.randomized_response(3, 2.0), steps=3)
    assert str(s).startswith(s.headline + "\n") and s.headline.startswith("Certified: M = (1, 1e-06)-DP followed by 3")
    assert s._repr_html_().startswith('<p class="headline">') and s.to_dict()["headline"] == s.headline
    composed = ca.amplify_steps(ca.DP(1.0), mechanisms.randomized_response(3, 2.0), steps=3, max_product_entries=8)
    assert "from step 2 on the coefficients are composed" in composed.headline


def test_nothing_certified_says_so():
    r = ca.amplify(ca.DP(1.0, 0.5), ca.MarkovOperator([[1.0, 0.0], [0.0, 1.0]]), delta=1e-9)
    assert not math.isfinite(r.best.epsilon)
    assert r.headline.startswith("Nothing is certified at delta' <= 1e-09")


def test_a_row_above_the_target_delta_is_marked():
    """Issue 18 (reports): theorem1.doeblin certifies (0.9685, 0.1646) at target delta' = 0: not a bound at the
    target, and its row now says so (with the key below the table)."""
    r = ca.amplify(ca.DP(2.0), K5)
    text = str(r)
    row = next(line for line in text.splitlines() if line.startswith("theorem1.doeblin"))
    assert row.rstrip().endswith("delta' above the target")
    assert "delta' above the target: the source certifies no delta' at or below the target" in text
    for line in text.splitlines():
        if line.startswith(("tight", "ldp", "theorem1.ultra_mixing")):
            assert "above the target" not in line
    assert "delta&#x27; above the target" in r._repr_html_() or "delta' above the target" in r._repr_html_()
