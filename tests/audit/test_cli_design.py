"""``chainamp design``: the least-loss post-processing for a target, from the command line (issue 13)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import chainamp as ca
from chainamp.audit.cli import EXIT_INVALID, EXIT_OK, main
from chainamp.audit.cli_design import MAX_EPSILON


@pytest.fixture
def files(tmp_path):
    M = ca.mechanisms.randomized_response(4, 3.0)
    np.savetxt(tmp_path / "M.csv", M.matrix, delimiter=",")
    np.savetxt(tmp_path / "L.csv", 1 - np.eye(4), delimiter=",")
    np.savetxt(tmp_path / "prior.csv", [[0.4, 0.3, 0.2, 0.1]], delimiter=",")
    np.savetxt(tmp_path / "bad_prior.csv", np.full((2, 2), 0.25), delimiter=",")
    return tmp_path


def test_design_after_a_mechanism_prints_K_and_its_certificate(files, capsys):
    assert main(["design", str(files / "M.csv"), "--epsilon", "1"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("K keeps the pipeline at eps' <= 1 (certified)")
    assert "K (rows: what K reads, columns: what it publishes):" in out
    assert [line.split()[0] for line in out.splitlines() if line[:2] in ("0 ", "1 ", "2 ", "3 ")] == list("0123")


@pytest.mark.parametrize("delta", [0.0, 1e-3], ids=["pure", "delta"])
def test_design_json_is_certified_against_the_target(files, capsys, delta):
    argv = ["design", str(files / "M.csv"), "--epsilon", "1", "--delta", str(delta), "--loss", str(files / "L.csv"),
            "--prior", str(files / "prior.csv"), "--json"]
    assert main(argv) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    K = np.array(data["K"]["matrix"])
    M = ca.mechanisms.randomized_response(4, 3.0)
    report = ca.amplify(M, ca.MarkovOperator(K), delta=delta)
    assert report.epsilon_at(delta) <= 1.0  # chainamp's own certificate of what was printed
    assert data["dual_bound"] <= data["objective"] <= data["dual_bound"] + 1e-7


@pytest.mark.parametrize("coefficient", ["dobrushin", "doeblin"], ids=str)
def test_design_for_black_box_inputs(capsys, coefficient):
    assert main(["design", "--states", "3", "--gamma", "0.5", "--coefficient", coefficient]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith(f"K has {coefficient.capitalize()} coefficient <= 0.5 (certified)")
    assert "expected loss 0.333333" in out  # (n - 1)(1 - gamma) / n at n = 3, gamma = 1/2


def test_design_report_file(files, capsys):
    target = files / "design.html"
    assert main(["design", str(files / "M.csv"), "--epsilon", "1", "--report", str(target)]) == EXIT_OK
    text = target.read_text()
    assert "K keeps the pipeline" in text and "<img" in text


@pytest.mark.parametrize("argv, message", [
    (["design", "{M}"], r"--epsilon: required with a mechanism MATRIX"),
    (["design", "{M}", "--epsilon", "-1"], r"--epsilon: must be a number >= 0 \(got -1.0\)"),
    (["design", "{M}", "--epsilon", "inf"], r"--epsilon: must be finite"),
    (["design", "{M}", "--epsilon", "1", "--delta", "2"], r"--delta: must be in \[0, 1\] \(got 2.0\)"),
    (["design", "{M}", "--epsilon", "1", "--states", "3", "--gamma", "0.5"], r"either a mechanism MATRIX .* not both"),
    (["design"], r"give a mechanism MATRIX with --epsilon, or --states N with --gamma G"),
    (["design", "--states", "3"], r"give a mechanism MATRIX with --epsilon, or --states N with --gamma G"),
    (["design", "--states", "3", "--gamma", "0.5", "--epsilon", "1"], r"--epsilon/--delta: only with a mechanism"),
    (["design", "{M}", "--epsilon", "1", "--prior", "{bad_prior}"], r"--prior: .*one row or one column .*2x2"),
    (["design", "{M}", "--epsilon", "1", "--report", "{M}.txt"], r"--report: .*must end in .html or .md"),
    # options of the other form are refused, not ignored
    (["design", "{M}", "--epsilon", "1", "--coefficient", "doeblin"], r"--coefficient: only with --states"),
    (["design", "{M}", "--epsilon", "1", "--coefficient", "dobrushin"], r"--coefficient: only with --states"),
    (["design", "--states", "3", "--gamma", "0.5", "--row-sum-atol", "1e-5"], r"--row-sum-atol: only with a mech"),
    (["design", "--states", "3", "--gamma", "0.5", "--delta", "0"], r"--epsilon/--delta: only with a mechanism"),
    # the library's limits, named by their flags
    (["design", "--states", "1", "--gamma", "0.5"], r"--states: must be at least 2 \(got 1\)"),
    (["design", "--states", "-3", "--gamma", "0.5"], r"--states: must be at least 2 \(got -3\)"),
    (["design", "{M}", "--epsilon", "700.5"], r"--epsilon: must be at most 700, .* \(got 700.5\)"),
    (["design", "{M}", "--epsilon", "1", "--row-sum-atol", "0.01"], r"--row-sum-atol: must be in \[0, 0.01\)"),
], ids=["no-epsilon", "negative-epsilon", "infinite-epsilon", "bad-delta", "both-forms", "nothing", "no-gamma",
        "epsilon-with-states", "prior-shape", "report-suffix", "coefficient-with-matrix",
        "default-coefficient-with-matrix", "row-sum-atol-with-states", "zero-delta-with-states", "one-state",
        "negative-states", "epsilon-above-700", "row-sum-atol-range"])
def test_design_usage_errors_are_one_line_and_exit_2(files, capsys, argv, message):
    argv = [a.format(M=files / "M.csv", bad_prior=files / "bad_prior.csv") for a in argv]
    assert main(argv) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith("chainamp design: error: ") and len(err.strip().splitlines()) == 1
    assert __import__("re").search(message, err), err


def test_design_epsilon_limit_is_the_library_limit(files, capsys):
    # the CLI's --epsilon limit is optimal_post_processing's: accepted at it, refused one ulp above it
    M = ca.mechanisms.randomized_response(4, 3.0)
    assert ca.design.optimal_post_processing(M, MAX_EPSILON).K == ca.MarkovOperator.identity(4)
    with pytest.raises(ca.InvalidParameterError, match=r"epsilon must be <= 700"):
        ca.design.optimal_post_processing(M, math.nextafter(MAX_EPSILON, math.inf))
    assert main(["design", str(files / "M.csv"), "--epsilon", "700"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("K keeps the pipeline")


def test_design_row_sum_atol_with_a_matrix(files, capsys):
    # rows rounded to 6 decimals: refused by default, accepted (and certified for the normalised rows) with the flag
    np.savetxt(files / "M6.csv", np.round(ca.mechanisms.randomized_response(3, 3.0).matrix, 6), delimiter=",",
               fmt="%.6f")
    assert main(["design", str(files / "M6.csv"), "--epsilon", "1"]) == EXIT_INVALID
    assert "row" in capsys.readouterr().err
    assert main(["design", str(files / "M6.csv"), "--epsilon", "1", "--row-sum-atol", "1e-5"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("K keeps the pipeline at eps' <= 1 (certified)")


def test_design_errors_from_the_library_are_one_line(files, capsys):
    np.savetxt(files / "L3.csv", np.ones((3, 3)), delimiter=",")
    assert main(["design", str(files / "M.csv"), "--epsilon", "1", "--loss", str(files / "L3.csv")]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith("chainamp design: error: ") and "loss" in err


def test_design_help_lists_both_forms(capsys):
    with pytest.raises(SystemExit):
        main(["design", "--help"])
    out = capsys.readouterr().out
    assert "--states" in out and "--gamma" in out and "chainamp design M.csv --epsilon 1" in out


def test_design_too_large_names_the_cli_option(files, capsys):
    """Issue 18: the refusal advised max_lp_nonzeros= and neighbour / output-set options the CLI does not have."""
    # a non-uniform prior: k-RR M with a uniform one takes the symmetric closed form, which needs no LP
    argv = ["design", str(files / "M.csv"), "--epsilon", "1", "--prior", str(files / "prior.csv"), "--max-lp-nonzeros",
            "10"]
    assert main(argv) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "above --max-lp-nonzeros 10" in err and "pass a larger --max-lp-nonzeros N to go past it" in err
    assert "max_lp_nonzeros=" not in err and "neighbours" not in err and len(err.strip().splitlines()) == 1
    assert main(["design", str(files / "M.csv"), "--epsilon", "1", "--prior", str(files / "prior.csv"),
                 "--max-lp-nonzeros", "1e7"]) == EXIT_OK
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["design", str(files / "M.csv"), "--epsilon", "1", "--max-lp-nonzeros", "0"])
    assert "--max-lp-nonzeros: must be a positive integer (got '0')" in capsys.readouterr().err


def test_design_prints_rounding_residues_of_K_as_zero(capsys, tmp_path):
    """Issue 18: K entries such as 9.4e-16 were printed as data; now "≈ 0" with a key (K itself unchanged). The
    designs' repair now mixes toward the best constant operator, so the Doeblin design below comes out with exact
    zeros; the display of a residue is checked on the same result with one entry set to a solver-like 9.4e-16."""
    import dataclasses

    from chainamp.audit.cli_design import _DesignView

    np.savetxt(tmp_path / "prior3.csv", [[0.4, 0.35, 0.25]], delimiter=",")
    prior = ["--prior", str(tmp_path / "prior3.csv")]
    assert main(["design", "--states", "3", "--gamma", "0.3", "--coefficient", "doeblin", *prior]) == EXIT_OK
    out = capsys.readouterr().out
    table = out.split("K (rows: what K reads, columns: what it publishes):")[1]
    assert "e-16" not in table and "\u2248 0" not in table
    assert main(["design", "--states", "3", "--gamma", "0.3", "--coefficient", "doeblin", "--json", *prior]) == EXIT_OK
    K = np.array(json.loads(capsys.readouterr().out)["K"]["matrix"])  # --json keeps every entry as computed
    result = ca.design.optimal_mixing_operator(3, 0.3, coefficient="doeblin", prior=[0.4, 0.35, 0.25], progress=False)
    assert np.array_equal(K, result.K.matrix)
    residue = K.copy()
    residue[0, 1], residue[0, 0] = 9.4e-16, residue[0, 0] - 9.4e-16
    shown = str(_DesignView(dataclasses.replace(result, K=ca.MarkovOperator(residue)), "test"))
    table = shown.split("K (rows: what K reads, columns: what it publishes):")[1]
    assert "e-16" not in table and "\u2248 0" in table and "\u2248 0: an entry below 1e-12" in table
