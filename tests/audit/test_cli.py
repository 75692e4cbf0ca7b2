"""Tests for the command line (in-process ``main`` with capsys, plus one subprocess ``--help``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chainamp.audit.cli import EXIT_CLAIM_FAILED, EXIT_INVALID, EXIT_OK, build_parser, main
from conftest import TWO_STAGE_RR
from conftest import PIPELINE_HEAD as HEAD

GOOD = HEAD + 'name = "two-stage"\n' + TWO_STAGE_RR + "[[claims]]\nepsilon = 0.7\n"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *parts: str) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for part in parts:
        assert part in lines[0], (part, lines[0])


# --------------------------------------------------------------------------- audit
def test_audit_exit_0_with_tables(tmp_path, capsys):
    code, out, err = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD)])
    assert code == EXIT_OK and err == ""
    assert "pipeline: two-stage" in out and "certified bounds" in out and "all 1 claim(s) certified" in out


def test_audit_exit_1_when_a_claim_is_not_certified(tmp_path, capsys):
    code, out, _ = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD + "[[claims]]\nepsilon = 0.1\n")])
    assert code == EXIT_CLAIM_FAILED
    assert "refuted" in out and "1 of 2 claim(s) NOT certified" in out


def test_audit_json(tmp_path, capsys):
    code, out, _ = run(capsys, ["audit", "--json", write(tmp_path, "p.toml", GOOD)])
    data = json.loads(out)
    assert code == EXIT_OK and data["ok"] is True
    assert data["claims"][0]["status"] == "certified" and data["report"]["best"]["source"] == "exact"


@pytest.mark.parametrize("suffix", ["html", "md"], ids=["html", "markdown"])
def test_audit_report_file(tmp_path, capsys, suffix):
    pytest.importorskip("matplotlib")
    out_file = tmp_path / f"out.{suffix}"
    code, out, err = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD), "--report", str(out_file)])
    assert code == EXIT_OK and "report written to" in err
    text = out_file.read_text(encoding="utf-8")
    assert "two-stage" in text and "certified" in text
    if suffix == "html":
        assert "data:image/png;base64" in text
    else:
        assert list(tmp_path.glob("out-plot-*.png"))


def test_report_suffix_checked(tmp_path, capsys):
    code, _, err = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD), "--report", str(tmp_path / "r.pdf")])
    assert code == EXIT_INVALID
    assert_one_line_error(err, "--report", "r.pdf", ".html or .md")


BAD_PIPELINES = [
    ("malformed", HEAD + "[mechanism\n", "(syntax): not valid TOML"),
    ("inconsistent", HEAD + "[mechanism]\nmatrix = [[1, 0, 0]]\n[[steps]]\nmatrix = [[1], [1]]\n",
     "steps[0]: its 2 inputs"),
    ("missing-matrix-file", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nfile = "K.csv"\n', "steps[0].file:"),
    ("unknown-catalogue", HEAD + '[mechanism]\ncatalogue = "laplace"\n[[steps]]\nmatrix = [[1]]\n',
     "mechanism.catalogue: unknown catalogue mechanism 'laplace'"),
    ("wrong-type", HEAD + '[mechanism]\nepsilon = "two"\n[[steps]]\nmatrix = [[1]]\n',
     "mechanism.epsilon: must be a number, got str"),
]


@pytest.mark.parametrize("text, expected", [b[1:] for b in BAD_PIPELINES], ids=[b[0] for b in BAD_PIPELINES])
def test_audit_bad_input_exit_2_one_line(tmp_path, capsys, text, expected):
    path = write(tmp_path, "bad.toml", text)
    code, out, err = run(capsys, ["audit", path])
    assert code == EXIT_INVALID and out == ""
    assert_one_line_error(err, "chainamp audit: error:", path, expected)


def test_audit_non_stochastic_csv_names_file_field_and_row(tmp_path, capsys):
    write(tmp_path, "K.csv", "0.5,0.4\n0.5,0.5\n")
    path = write(tmp_path, "p.toml", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nfile = "K.csv"\n')
    code, _, err = run(capsys, ["audit", path])
    assert code == EXIT_INVALID
    assert_one_line_error(err, path, "steps[0].file", "K.csv", "row 0 sums to 0.9")


def test_audit_missing_pipeline_file(tmp_path, capsys):
    code, _, err = run(capsys, ["audit", str(tmp_path / "none.toml")])
    assert code == EXIT_INVALID
    assert_one_line_error(err, "none.toml: no such pipeline file")


# --------------------------------------------------------------------------- coefficients
@pytest.fixture
def rr_csv(tmp_path) -> str:
    return write(tmp_path, "K.csv", "# binary RR at log 3\n0.75,0.25\n0.25,0.75\n")


def test_coefficients_text(capsys, rr_csv):
    code, out, _ = run(capsys, ["coefficients", rr_csv, "--epsilon", "0.5"])
    assert code == EXIT_OK
    for word in ("dobrushin", "(gamma, 0.5)-Dobrushin", "doeblin", "ultra-mixing", "pair (0, 1)", "omega",
                 "K is 1.09861-LDP", "irreducible", "spectral gap"):
        assert word in out, word


def test_coefficients_json_values(capsys, rr_csv):
    code, out, _ = run(capsys, ["coefficients", rr_csv, "--json"])
    data = json.loads(out)
    c = data["coefficients"]
    # binary RR with p = 3/4: Dobrushin = Doeblin = 1/2, ultra-mixing = 1 - 1/3, LDP eps = log 3
    assert c["dobrushin"]["gamma"] == pytest.approx(0.5, abs=1e-12)
    assert c["doeblin"]["gamma"] == pytest.approx(0.5, abs=1e-12) and c["doeblin"]["witness"] == [0.5, 0.5]
    assert c["ultra_mixing"]["gamma"] == pytest.approx(2 / 3, abs=1e-12)
    assert data["ldp_epsilon"] == pytest.approx(math.log(3), rel=1e-12)
    assert data["chain"]["irreducible"] is True and data["chain"]["period"] == 1
    assert code == EXIT_OK and "hockey_stick" not in c


def test_coefficients_rectangular_npy_has_no_chain(tmp_path, capsys):
    f = tmp_path / "K.npy"
    np.save(f, np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]))
    code, out, _ = run(capsys, ["coefficients", str(f), "--json"])
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert code == EXIT_OK and data["chain"] is None and data["coefficients"]["ultra_mixing"]["gamma"] == 1.0
    assert data["ldp_epsilon"] == "inf"  # disjoint supports: not LDP at any finite epsilon


@pytest.mark.parametrize("content, expected", [
    (None, "K.csv: no such file"),
    ("0.7,0.25\n0.25,0.75\n", "K.csv: K rows must sum to 1 within row_sum_atol=1e-09 (row 0 sums to 0.95)"),
    ("a,b\n", "K.csv: not a readable numeric CSV matrix"),
], ids=["missing", "non-stochastic", "non-numeric"])
def test_coefficients_bad_matrix(tmp_path, capsys, content, expected):
    path = tmp_path / "K.csv"
    if content is not None:
        path.write_text(content)
    code, _, err = run(capsys, ["coefficients", str(path)])
    assert code == EXIT_INVALID
    assert_one_line_error(err, "chainamp coefficients: error:", expected)


# --------------------------------------------------------------------------- amplify
def test_amplify_one_and_several_operators(capsys, rr_csv):
    code, out, _ = run(capsys, ["amplify", "--epsilon", "1", rr_csv])
    assert code == EXIT_OK and "K o M with M = (1, 0)-DP" in out and "best:" in out
    code, out, _ = run(capsys, ["amplify", "--epsilon", "1", "--delta", "1e-6", "--json", rr_csv, rr_csv])
    data = json.loads(out)
    assert code == EXIT_OK and data["operator_shape"] == [2, 2] and data["target_delta"] == 1e-6


def test_amplify_steps_and_target_delta(capsys, rr_csv):
    code, out, _ = run(capsys, ["amplify", "--epsilon", "1", "--steps", "--target-delta", "1e-3", "--json",
                                rr_csv, rr_csv, rr_csv])
    data = json.loads(out)
    eps = [s["epsilon"] for s in data["steps"]]
    assert code == EXIT_OK and len(eps) == 3 and eps[0] > eps[1] > eps[2] and data["delta"] == 1e-3


@pytest.mark.parametrize("argv, expected", [
    (["--epsilon", "-1"], "--epsilon: must be a number >= 0 (got -1.0)"),
    (["--epsilon", "1", "--delta", "2"], "--delta: must be in [0, 1] (got 2.0)"),
    (["--epsilon", "nan"], "--epsilon: must be a number >= 0 (got nan)"),
    (["--epsilon", "inf"], "--epsilon: must be finite (got inf)"),
    (["--epsilon", "1", "--target-delta", "-1"], "--target-delta: must be in [0, 1] (got -1.0)"),
], ids=["negative-epsilon", "delta-range", "nan", "inf", "target-delta"])
def test_amplify_bad_numbers(capsys, rr_csv, argv, expected):
    code, _, err = run(capsys, ["amplify", *argv, rr_csv])
    assert code == EXIT_INVALID
    assert_one_line_error(err, expected)


def test_amplify_incompatible_operators(tmp_path, capsys, rr_csv):
    wide = write(tmp_path, "W.csv", "1,0,0\n0,1,0\n")
    code, _, err = run(capsys, ["amplify", "--epsilon", "1", wide, rr_csv])
    assert code == EXIT_INVALID
    # names both files: which operator does not take the other's outputs
    assert_one_line_error(err, f"{rr_csv}: its 2 inputs [0, 1] are not the 3 outputs [0, 1, 2] of {wide}")


# --------------------------------------------------------------------------- demo, help, usage
def test_demo(capsys):
    code, out, _ = run(capsys, ["demo"])
    assert code == EXIT_OK and "Mixing coefficients" in out and "karate" in out and "best:" in out
    assert "(gamma, 1)-Dobrushin" in out  # the column says what it is, as in chainamp coefficients


@pytest.mark.parametrize("command", ["audit", "coefficients", "amplify", "demo"])
def test_every_command_has_help_with_an_example(capsys, command):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0 and "example" in out and f"chainamp {command}" in out


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["amplify", "K.csv"])  # --epsilon is required
    assert info.value.code == EXIT_INVALID
    assert "--epsilon" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == EXIT_INVALID


def test_parser_lists_all_commands():
    text = build_parser().format_help()
    for command in ("audit", "coefficients", "amplify", "demo"):
        assert command in text


def test_python_dash_m_help_subprocess():
    proc = subprocess.run([sys.executable, "-m", "chainamp", "--help"], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0 and "chainamp audit" in proc.stdout and proc.stderr == ""


def test_broken_pipe_is_quiet(monkeypatch, capsys):
    import chainamp.audit.cli as cli

    def closed_reader(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "_demo", closed_reader)
    code = main(["demo"])
    assert code == cli.EXIT_SIGPIPE and capsys.readouterr().err == ""


# --------------------------------------------------------------------------- usage polish (one line, named options)
def test_version(capsys):
    import chainamp

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"chainamp {chainamp.__version__}"


@pytest.mark.parametrize("argv, expected", [
    ([], "chainamp: error: missing COMMAND (one of demo, audit, coefficients, amplify) (see chainamp --help)"),
    (["coefficients", "K.csv", "--epsilon", "abc"],
     "chainamp coefficients: error: argument --epsilon: invalid float value: 'abc' (see chainamp coefficients --help)"),
    (["frobnicate"], "chainamp: error: argument COMMAND: invalid choice: 'frobnicate'"),
], ids=["no-command", "bad-float", "unknown-command"])
def test_argparse_errors_are_one_line(capsys, argv, expected):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_INVALID
    assert_one_line_error(capsys.readouterr().err, expected)


def test_coefficients_bad_epsilon_names_the_option(capsys, rr_csv):
    code, out, err = run(capsys, ["coefficients", rr_csv, "--epsilon", "-1"])
    assert code == EXIT_INVALID and out == ""
    assert_one_line_error(err, "chainamp coefficients: error: --epsilon: must be a number >= 0 (got -1.0)")


@pytest.mark.parametrize("content, expected", [
    ("", "no numbers in the file (an empty matrix)"),
    ("# only a comment\n", "no numbers in the file (an empty matrix)"),
], ids=["empty", "comment-only"])
def test_coefficients_empty_csv_one_line_no_warning(tmp_path, capsys, content, expected):
    import warnings

    path = write(tmp_path, "K.csv", content)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "input contained no data" must not reach the user
        code, _, err = run(capsys, ["coefficients", path])
    assert code == EXIT_INVALID
    assert_one_line_error(err, f"{path}: {expected}")


@pytest.mark.parametrize("command, expected", [
    ("coefficients", "is a folder, not a matrix file"),
    ("audit", "is a folder, not a pipeline file (.toml)"),
], ids=["matrix", "pipeline"])
def test_a_folder_instead_of_a_file(tmp_path, capsys, command, expected):
    code, _, err = run(capsys, [command, str(tmp_path)])
    assert code == EXIT_INVALID
    assert_one_line_error(err, f"{tmp_path}: {expected}")


@pytest.mark.parametrize("target, expected", [
    ("missing/r.html", "the folder"),
    (".", "the file name must end in .html or .md"),
], ids=["missing-folder", "a-folder"])
def test_report_path_checked_before_any_work(tmp_path, capsys, monkeypatch, target, expected):
    import chainamp.audit.io as cio

    monkeypatch.setattr(cio, "audit", lambda *a, **k: pytest.fail("audited before checking --report"))
    code, out, err = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD), "--report", str(tmp_path / target)])
    assert code == EXIT_INVALID and out == ""
    assert_one_line_error(err, "chainamp audit: error: --report:", expected)


def test_report_path_that_is_a_folder(tmp_path, capsys):
    folder = tmp_path / "r.html"
    folder.mkdir()
    code, _, err = run(capsys, ["coefficients", write(tmp_path, "K.csv", "1,0\n0,1\n"), "--report", str(folder)])
    assert code == EXIT_INVALID
    assert_one_line_error(err, f"--report: {folder}: is a folder, not a file name")


def test_report_write_failure_is_one_line(tmp_path, capsys, monkeypatch):
    import chainamp.audit.report as creport

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(creport, "write_report", refuse)
    out_file = str(tmp_path / "r.html")
    code, _, err = run(capsys, ["amplify", "--epsilon", "1", write(tmp_path, "K.csv", "1,0\n0,1\n"),
                                "--report", out_file])
    assert code == EXIT_INVALID
    assert_one_line_error(err, f"--report: {out_file}: cannot write (Permission denied)")


@pytest.mark.parametrize("where, expected", [
    ("repo", "Next: chainamp audit datasets/two_stage_rr/pipeline.toml"),
    ("elsewhere", "Next: chainamp audit "),
], ids=["from-the-repository", "from-another-folder"])
def test_demo_next_step_is_a_path_that_exists(tmp_path, monkeypatch, where, expected):
    import os

    import chainamp.audit.cli as cli

    monkeypatch.chdir(Path(__file__).resolve().parents[2] if where == "repo" else tmp_path)
    line = cli._next_step()
    assert line.startswith(expected)
    shown = line.split()[3]
    assert shown == "--help" or os.path.isfile(shown), line


def test_demo_next_step_without_the_datasets(tmp_path, monkeypatch):
    import os

    import chainamp.audit.cli as cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os.path, "isfile", lambda p: False)
    assert cli._next_step().startswith("Next: chainamp audit --help")


@pytest.mark.parametrize("command", ["audit", "coefficients", "amplify", "demo"])
def test_help_descriptions_fit_a_terminal(monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "80")
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    text = sub.format_help()
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert "docs/pipeline-format.md" in build_parser()._subparsers._group_actions[0].choices["audit"].format_help()


def test_audit_shows_provenance_and_the_checked_statement(tmp_path, capsys):
    text = GOOD.replace('name = "two-stage"\n', 'name = "two-stage"\nprovenance = "made up"\n') \
        + '[[claims]]\nepsilon = 0.75\nlabel = "the vendor says 0.5"\n'
    code, out, _ = run(capsys, ["audit", write(tmp_path, "p.toml", text)])
    assert code == EXIT_OK and "provenance: made up" in out
    row = next(line for line in out.splitlines() if line.startswith("the vendor says 0.5"))
    assert "epsilon' <= 0.75 at delta' = 0" in row and row.rstrip().endswith("certified")


def test_the_minimal_pipeline_in_audit_help_is_certified(tmp_path, capsys):
    text = build_parser()._subparsers._group_actions[0].choices["audit"].format_help()
    body = text.split("a minimal pipeline file:\n", 1)[1]
    toml = "\n".join(line[2:] for line in body.splitlines() if line.startswith("  "))
    code, out, err = run(capsys, ["audit", write(tmp_path, "minimal.toml", toml)])
    assert code == EXIT_OK and "all 1 claim(s) certified" in out and err == ""


def test_coefficients_report_draws_the_operator(tmp_path, capsys, rr_csv):
    pytest.importorskip("matplotlib")
    out_file = tmp_path / "c.md"
    code, _, err = run(capsys, ["coefficients", rr_csv, "--report", str(out_file)])
    assert code == EXIT_OK and "report written to" in err
    assert "![the operator K plot](c-plot-1.png)" in out_file.read_text(encoding="utf-8")
    assert (tmp_path / "c-plot-1.png").read_bytes().startswith(b"\x89PNG")


def test_coarsening_dataset_report_is_written(tmp_path, capsys):
    """Issue 18.1: the shipped coarsening pipeline (finite M, deterministic K) draws its report."""
    pytest.importorskip("matplotlib")
    pipeline = Path(__file__).resolve().parents[2] / "datasets" / "coarsening" / "pipeline.toml"
    out_file = tmp_path / "c.html"
    code, out, err = run(capsys, ["audit", str(pipeline), "--report", str(out_file), "--no-progress"])
    assert code in (EXIT_OK, EXIT_CLAIM_FAILED), err
    assert "report written to" in err and out_file.stat().st_size > 0


def test_report_drawing_failure_is_not_invalid_input(tmp_path, capsys, monkeypatch):
    """Issue 18.1: a bug in the report writer exits 3 after the results, never 2 ("invalid input")."""
    import chainamp.audit.report as creport
    from chainamp.audit.cli import EXIT_REPORT_FAILED

    def broken(*args, **kwargs):
        raise TypeError("Axes.plot() got multiple values for keyword argument 'color'")

    monkeypatch.setattr(creport, "write_report", broken)
    out_file = str(tmp_path / "r.html")
    code, out, err = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD), "--report", out_file])
    assert code == EXIT_REPORT_FAILED != EXIT_INVALID
    assert "certified bounds" in out  # the results are printed before the report is drawn
    assert_one_line_error(err, f"--report: {out_file}: the report could not be drawn (TypeError: Axes.plot()",
                          "bug in chainamp's report writer")


def test_demo_prints_rounding_residues_as_zero(capsys):
    """Issue 18: the (gamma, 1)-Dobrushin of 5-ary RR at eps = 1 (exactly 0, certified 3.6e-16) read as data."""
    code, out, _ = run(capsys, ["demo"])
    assert code == EXIT_OK
    row = next(line for line in out.splitlines() if line.startswith("5-ary randomized response, eps=1"))
    assert "e-16" not in row and "\u2248 0" in row
    assert "\u2248 0: a certified upper bound at rounding level (at most 1e-12" in out
