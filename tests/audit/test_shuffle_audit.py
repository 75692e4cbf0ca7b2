"""The shuffled guarantee in audits: the ``shuffle`` key, ``shuffled = true`` claims, ``--shuffle-users``."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

import chainamp as ca
from chainamp import io as cio
from chainamp import mechanisms
from chainamp.audit.cli import EXIT_CLAIM_FAILED, EXIT_INVALID, EXIT_OK, main
from chainamp.audit.pipeline import ShuffleSpec
from chainamp.errors import InvalidPipelineError

USERS = 200
RR = {"catalogue": "randomized_response", "k": 2, "epsilon": 2.0}
IDENTITY = [{"matrix": [[1, 0], [0, 1]]}]
SECOND_RR = [{"catalogue": "randomized_response", "k": 2, "epsilon": 3.0}]
FILE_HEAD = '''format = "chainamp-pipeline/1"
delta = 1e-6
{top}
[mechanism]
catalogue = "randomized_response"
k = 2
epsilon = 2.0

[[steps]]
catalogue = "randomized_response"
k = 2
epsilon = 3.0
{claims}'''


def doc(**top):
    out = {"format": cio.FORMAT, "delta": 1e-6, "mechanism": dict(RR), "steps": list(SECOND_RR)}
    out.update(top)
    return out


def write(tmp_path: Path, top: str = "", claims: str = "") -> str:
    path = tmp_path / "p.toml"
    path.write_text(FILE_HEAD.format(top=top, claims=claims), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def direct():
    """The shuffled guarantee computed directly: the randomizer is M then the step."""
    return ca.amplify_shuffled([mechanisms.randomized_response(2, 2.0), mechanisms.randomized_response(2, 3.0)],
                               USERS, delta=1e-6)


# --------------------------------------------------------------------------- parsing
def test_shuffle_key_parses_with_defaults_and_fields():
    assert cio.parse_pipeline(doc()).shuffle is None
    assert cio.parse_pipeline(doc(shuffle={"users": 1_000_000})).shuffle == ShuffleSpec(1_000_000, None, "auto")
    spec = cio.parse_pipeline(doc(shuffle={"users": 5, "delta": 1e-8, "method": "blanket"})).shuffle
    assert spec == ShuffleSpec(5, 1e-8, "blanket")
    claim = cio.parse_pipeline(doc(claims=[{"epsilon": 1.0, "delta": 1e-6, "shuffled": True}])).claims[0]
    assert claim.shuffled and claim.statement() == "epsilon' <= 1 at delta' = 1e-06 after shuffling"
    assert not cio.parse_pipeline(doc(claims=[{"epsilon": 1.0}])).claims[0].shuffled


@pytest.mark.parametrize("top, match", [
    ({"shuffle": 1000}, r"shuffle: must be a table such as \{ users = 1000000 \}, got 1000"),
    ({"shuffle": {"users": 10, "n": 3}}, r"shuffle\.n: unknown key \(allowed: users, delta, method\)"),
    ({"shuffle": {"delta": 1e-6}}, r"shuffle\.users: missing"),
    ({"shuffle": {"users": 0}}, r"shuffle\.users: must be >= 1 \(got 0\)"),
    ({"shuffle": {"users": -5}}, r"shuffle\.users: must be >= 1 \(got -5\)"),
    ({"shuffle": {"users": 1e6}}, r"shuffle\.users: must be an integer, got float 1000000\.0"),
    ({"shuffle": {"users": True}}, r"shuffle\.users: must be an integer, got bool True"),
    ({"shuffle": {"users": "1000"}}, r"shuffle\.users: must be an integer, got str '1000'"),
    ({"shuffle": {"users": 10, "delta": 0.0}}, r"shuffle\.delta: must be in \(0, 1\) \(got 0\.0\)"),
    ({"shuffle": {"users": 10, "delta": 1}}, r"shuffle\.delta: must be in \(0, 1\) \(got 1\.0\)"),
    ({"shuffle": {"users": 10, "delta": "small"}}, r"shuffle\.delta: must be a number, got str"),
    ({"shuffle": {"users": 10, "method": "fmt"}}, r"shuffle\.method: must be one of 'auto', 'exact'.*got 'fmt'"),
    ({"claims": [{"epsilon": 1.0, "shuffled": "yes"}]}, r"claims\[0\]\.shuffled: must be true or false, got 'yes'"),
    ({"reports": [1, 2], "claims": [{"epsilon": 1.0, "shuffled": True, "reports": 2}]},
     r"claims\[0\]\.shuffled: a shuffled claim is about one shuffled round"),
], ids=["not-a-table", "unknown-key", "no-users", "users-0", "users-negative", "users-float", "users-bool",
        "users-string", "delta-0", "delta-1", "delta-string", "method-unknown", "claim-not-bool",
        "claim-with-reports"])
def test_invalid_shuffle_fields_are_refused_naming_the_field(top, match):
    with pytest.raises(InvalidPipelineError, match=match):
        cio.parse_pipeline(doc(**top))


def test_shuffled_claim_without_shuffle_key_is_refused_at_audit():
    p = cio.parse_pipeline(doc(claims=[{"epsilon": 1.0, "delta": 1e-6, "shuffled": True}]))
    with pytest.raises(InvalidPipelineError, match=r"claims\[0\]\.shuffled: needs shuffle = \{ users = N \}"):
        cio.audit(p, progress=False)


@pytest.mark.parametrize("top, claims, match", [
    ('shuffle = { users = 0 }', "", "shuffle.users: must be >= 1 (got 0)"),
    ('shuffle = { users = 10, size = 3 }', "", "shuffle.size: unknown key"),
    ("", "[[claims]]\nepsilon = 1.0\nshuffled = true\n", "claims[0].shuffled: needs shuffle"),
], ids=["users-0", "unknown-key", "claim-without-key"])
def test_cli_invalid_shuffle_exits_2_with_one_line(tmp_path, capsys, top, claims, match):
    code = main(["audit", write(tmp_path, top, claims)])
    out, err = capsys.readouterr()
    assert code == EXIT_INVALID
    lines = err.strip().splitlines()
    assert len(lines) == 1 and match in lines[0] and "Traceback" not in err, err


# --------------------------------------------------------------------------- audits
def test_audit_has_the_shuffled_guarantee_and_checks_claims_against_it(direct):
    claims = [{"epsilon": 1.0, "delta": 1e-6, "shuffled": True, "label": "shuffled"},
              {"epsilon": 1.0, "delta": 1e-6, "label": "local"},
              {"form": "delta_at", "epsilon": 1.0, "delta": 1e-9, "shuffled": True}]
    result = cio.audit(cio.parse_pipeline(doc(shuffle={"users": USERS}, claims=claims)), progress=False)
    rep = result.shuffled
    assert isinstance(rep, ca.ShuffleReport) and rep.users == USERS and rep.method == "exact"
    assert rep.epsilon == direct.epsilon
    local = result.report.epsilon_at(1e-6)
    assert rep.epsilon < 1.0 < local  # the shuffler certifies what one report alone does not
    shuffled, alone, by_delta = result.verdicts
    assert (shuffled.status, shuffled.certified) == ("certified", direct.epsilon)
    assert shuffled.source == f"shuffled (exact, {USERS} users)"
    assert alone.status == "refuted" and alone.certified == local  # one report alone: provably above 1
    assert by_delta.certified == direct.delta_at(1.0) and by_delta.holds == (direct.delta_at(1.0) <= 1e-9)
    assert not result.ok
    text = str(result)
    assert f"shuffled ({USERS} users)" in text and "local (one report of K o M)" in text
    assert "epsilon' <= 1 at delta' = 1e-06 after shuffling" in text and direct.headline in text
    assert "shuffled" in result.reports and html.escape(direct.headline) in result._repr_html_()


def test_shuffled_claim_that_fails_is_not_certified(direct):
    claims = [{"epsilon": direct.epsilon * 0.99, "delta": 1e-6, "shuffled": True}]
    result = cio.audit(cio.parse_pipeline(doc(shuffle={"users": USERS}, claims=claims)), progress=False)
    assert [v.status for v in result.verdicts] == ["not certified"] and not result.ok


def test_shuffle_delta_and_method_are_used():
    p = cio.parse_pipeline(doc(shuffle={"users": USERS, "delta": 1e-4, "method": "blanket"}))
    rep = cio.audit(p, progress=False).shuffled
    assert (rep.delta, rep.method) == (1e-4, "blanket")
    assert rep.epsilon == ca.amplify_shuffled([mechanisms.randomized_response(2, 2.0),
                                               mechanisms.randomized_response(2, 3.0)], USERS, delta=1e-4,
                                              method="blanket").epsilon


def test_black_box_mechanism_is_shuffled_as_its_certified_pure_level():
    d = {"format": cio.FORMAT, "delta": 1e-6, "mechanism": {"epsilon": 2.0}, "steps": [{"matrix": [[1, 0], [0, 1]]}],
         "shuffle": {"users": USERS}}
    result = cio.audit(cio.parse_pipeline(d), progress=False)
    assert result.shuffled.randomizer.startswith("a black-box (2, 0)-DP")
    assert result.shuffled.epsilon == ca.amplify_shuffled(ca.DP(2.0), USERS, delta=1e-6).epsilon


def test_black_box_without_pure_level_is_refused_naming_shuffle():
    d = {"format": cio.FORMAT, "mechanism": {"epsilon": 2.0, "delta": 1e-3}, "steps": [{"matrix": [[1, 0], [0, 1]]}],
         "shuffle": {"users": USERS}}
    with pytest.raises(InvalidPipelineError, match=r"shuffle: a black-box mechanism .* no finite pure epsilon"):
        cio.audit(cio.parse_pipeline(d), progress=False)


def test_neighbors_reach_the_shuffled_guarantee():
    k3 = {"catalogue": "randomized_response", "k": 3, "epsilon": 2.0}
    d = {"format": cio.FORMAT, "mechanism": k3, "steps": [{"matrix": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}],
         "neighbors": [[0, 1]], "shuffle": {"users": 20, "method": "blanket"}}
    rep = cio.audit(cio.parse_pipeline(d), progress=False).shuffled
    M = mechanisms.randomized_response(3, 2.0)
    assert rep.epsilon == ca.amplify_shuffled([M, [[1, 0, 0], [0, 1, 0], [0, 0, 1]]], 20, neighbors=[(0, 1)],
                                              method="blanket").epsilon


# --------------------------------------------------------------------------- command line and JSON
def test_cli_json_has_the_shuffled_section(tmp_path, capsys, direct):
    path = write(tmp_path, f"shuffle = {{ users = {USERS} }}", "[[claims]]\nepsilon = 1.0\ndelta = 1e-6\nshuffled = true\n")
    code = main(["audit", "--json", "--no-progress", path])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    data = json.loads(out)
    assert data["shuffled"]["users"] == USERS and data["shuffled"]["method"] == "exact"
    assert data["shuffled"]["epsilon"] == direct.epsilon and data["shuffled"]["local_epsilon"] == direct.local_epsilon
    assert data["claims"][0]["shuffled"] is True and data["claims"][0]["certified"] == direct.epsilon


def test_cli_json_without_shuffle_is_null(tmp_path, capsys):
    code = main(["audit", "--json", "--no-progress", write(tmp_path, "", "[[claims]]\nepsilon = 3.0\n")])
    data = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and data["shuffled"] is None and data["claims"][0]["shuffled"] is False


def test_cli_shuffle_users_adds_the_guarantee(tmp_path, capsys, direct):
    path = write(tmp_path, "", "[[claims]]\nepsilon = 1.0\ndelta = 1e-6\nshuffled = true\n")
    code = main(["audit", "--no-progress", "--shuffle-users", str(USERS), path])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert f"shuffled ({USERS} users)" in out and "after shuffling" in out


def test_cli_shuffle_users_overrides_users_and_keeps_method(tmp_path, capsys):
    path = write(tmp_path, 'shuffle = { users = 1000000, method = "blanket", delta = 1e-4 }')
    code = main(["audit", "--json", "--no-progress", "--shuffle-users", "1e2", path])
    data = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK
    assert (data["shuffled"]["users"], data["shuffled"]["method"], data["shuffled"]["delta"]) == (100, "blanket", 1e-4)


def test_cli_shuffled_claim_that_fails_exits_1(tmp_path, capsys):
    path = write(tmp_path, f"shuffle = {{ users = {USERS} }}", "[[claims]]\nepsilon = 0.01\ndelta = 1e-6\nshuffled = true\n")
    assert main(["audit", "--no-progress", path]) == EXIT_CLAIM_FAILED
    assert "not certified" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "-3", "abc", "1.5", "nan", "inf"])
def test_cli_shuffle_users_invalid_exits_2(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "--shuffle-users", value, write(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == EXIT_INVALID
    assert "--shuffle-users" in err and "whole number of users >= 1" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- rounds
def test_fresh_shuffled_rounds_compose(direct):
    """T fresh shuffled rounds: ``compose([amplify_shuffled(...)], counts=[T])``."""
    one, two, three = (ca.compose([direct], counts=[t]) for t in (1, 2, 3))
    pair = ca.compose([direct, direct])  # the same composition, listed: both pessimistic, on the same grid step
    for eps in (0.2, 0.6, 1.0):
        assert two.delta(eps) == pytest.approx(pair.delta(eps), rel=1e-3)
        assert one.delta(eps) >= direct.delta_at(eps)  # the discretisation rounds up
        assert direct.delta_at(eps) <= two.delta(eps) <= three.delta(eps)  # a further round never helps
    assert direct.epsilon < two.epsilon(1e-6) <= 2 * direct.epsilon_at(5e-7) + 1e-2


@pytest.mark.parametrize("top, expected", [({"delta": 1e-5}, 1e-5), ({"delta": 0.0}, 1e-6), ({}, 1e-6)],
                         ids=["audit-delta", "audit-delta-0", "none"])
def test_shuffled_delta_defaults_to_the_audit_delta_in_0_1(top, expected):
    d = {"format": cio.FORMAT, "mechanism": dict(RR), "steps": list(IDENTITY), "shuffle": {"users": 50}, **top}
    assert cio.audit(cio.parse_pipeline(d), progress=False).shuffled.delta == expected


def test_report_file_has_the_shuffled_section_with_its_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.md"
    path = write(tmp_path, "shuffle = { users = 50 }")
    assert main(["audit", "--no-progress", path, "--report", str(out)]) == EXIT_OK
    text = out.read_text(encoding="utf-8")
    section = text.split("## shuffled", 1)[1].split("## JSON data", 1)[0]
    assert "![shuffled plot](r-plot-" in section and (tmp_path / section.split("](", 1)[1].split(")", 1)[0]).is_file()
