"""Issue 14, item 2: matrix and pipeline files as people write them.

CSV with a byte-order mark, rows rounded to 6 decimals accepted with ``--row-sum-atol`` (and then
certified for the row-normalised operator), chainamp's own messages for ragged, tab-separated and
complex files, coarsenings written as a map from labels to groups, and the label order of ``kron``
and RAPPOR.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import chainamp as ca
from chainamp import io as cio
from chainamp.audit.cli import EXIT_INVALID, EXIT_OK, build_parser, main
from chainamp.errors import InvalidOperatorError, InvalidPipelineError

SIX = "0.333333,0.333333,0.333333\n0.5,0.25,0.25\n0.2,0.3,0.5\n"  # row 0 sums to 0.999999


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return path


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- CSV files
def test_csv_with_byte_order_mark(tmp_path):
    path = write(tmp_path, "K.csv", "\ufeff# exported from a spreadsheet\n0.75,0.25\n0.25,0.75\n".encode("utf-8"))
    assert cio.load_operator(path).matrix.tolist() == [[0.75, 0.25], [0.25, 0.75]]


def test_csv_fraction_cells(tmp_path):
    path = write(tmp_path, "K.csv", "1/3, 2/3\n1/2, 1/2\n")
    assert cio.load_operator(path).matrix.tolist() == [[1 / 3, 2 / 3], [0.5, 0.5]]


@pytest.mark.parametrize("content, match", [
    ("0.5\t0.5\n0.25\t0.75\n", r"line 1: values separated by tabs; save the sheet as CSV"),
    ("0.5,0.5\n0.25,0.5,0.25\n", r"line 2 has 3 values, the first row \(line 1\) has 2"),
    ("# header\n\n0.5,0.5\n1\n", r"line 4 has 1 values, the first row \(line 3\) has 2"),
    ("1+0j,0\n0,1\n", r"line 1, column 1: '1\+0j' is a complex number, a Markov matrix has real entries"),
    ("0.5,abc\n0.5,0.5\n", r"line 1, column 2: 'abc' is not a number"),
    ("0.5,,0.5\n", r"line 1, column 2: an empty cell is not a number"),
    (b"\xff\xfe0\x00.\x005\x00", r"not UTF-8 text"),
], ids=["tabs", "ragged", "ragged-after-comments", "complex", "word", "empty-cell", "utf16"])
def test_csv_problems_get_chainamps_message(tmp_path, content, match):
    path = write(tmp_path, "K.csv", content)
    with pytest.raises(InvalidOperatorError, match=r"K\.csv: not a readable numeric CSV matrix \(" + match) as info:
        cio.load_operator(path)
    assert "usecols" not in str(info.value) and "expected comma-separated numbers" in str(info.value)


def test_npy_complex_refused(tmp_path):
    path = tmp_path / "K.npy"
    np.save(path, np.eye(2, dtype=complex))
    with pytest.raises(InvalidOperatorError, match=r"K\.npy: holds complex numbers \(complex128\); a Markov matrix"):
        cio.load_operator(path)


def test_rounded_rows_need_a_tolerance_and_the_message_says_so(tmp_path):
    path = write(tmp_path, "K.csv", SIX)
    with pytest.raises(InvalidOperatorError, match=r"row 0 sums to 0\.999999\).*--row-sum-atol"):
        cio.load_operator(path)
    assert cio.load_operator(path, row_sum_atol=1e-5).shape == (3, 3)


# --------------------------------------------------------------------------- --row-sum-atol
@pytest.mark.parametrize("command", ["coefficients", "amplify", "design"], ids=str)
def test_row_sum_atol_help(command):
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    text = " ".join(sub.format_help().split())
    assert "--row-sum-atol TOL" in text
    assert "below 0.01" in text and "at most 0.01" not in text  # 0.01 itself is refused (range [0, 0.01))
    assert "rows divided by their sums" in text and "certified for that row-normalised operator" in text


def normalised_reference():
    rows = [[Fraction(x) for x in line.split(",")] for line in SIX.split()]
    R = [[x / sum(r) for x in r] for r in rows]
    tv = max(sum(max(a - b, 0) for a, b in zip(p, q)) for p in R for q in R)
    ultra = 1 - min(min(p[y] / q[y] for p in R for q in R) for y in range(3))
    return tv, ultra


def test_coefficients_with_row_sum_atol_certify_the_normalised_operator(tmp_path, capsys):
    path = str(write(tmp_path, "K.csv", SIX))
    code, _, err = run(capsys, ["coefficients", path])
    assert code == EXIT_INVALID and "--row-sum-atol" in err
    code, out, _ = run(capsys, ["coefficients", path, "--row-sum-atol", "1e-5", "--json"])
    assert code == EXIT_OK
    data = json.loads(out)["coefficients"]
    tv, ultra = normalised_reference()
    assert Fraction(data["dobrushin"]["gamma"]) >= tv and data["dobrushin"]["gamma"] - float(tv) < 1e-5
    assert Fraction(data["ultra_mixing"]["gamma"]) >= ultra and data["ultra_mixing"]["gamma"] - float(ultra) < 1e-5


def test_amplify_with_row_sum_atol(tmp_path, capsys):
    path = str(write(tmp_path, "K.csv", SIX))
    code, _, err = run(capsys, ["amplify", "--epsilon", "1", path])
    assert code == EXIT_INVALID and "row 0 sums to 0.999999" in err
    code, out, _ = run(capsys, ["amplify", "--epsilon", "1", "--json", "--row-sum-atol", "1e-5", path])
    assert code == EXIT_OK
    coefficients = json.loads(out)["coefficients"]
    assert coefficients["product_rel_error"] > 0  # the normalisation is carried into the bounds
    tv, ultra = normalised_reference()
    assert Fraction(coefficients["dobrushin"]) >= tv and Fraction(coefficients["ultra_mixing"]) >= ultra
    assert math.isfinite(json.loads(out)["best"]["epsilon"])


@pytest.mark.parametrize("value", ["-1e-9", "0.01", "nan"], ids=["negative", "0.01", "nan"])
def test_row_sum_atol_out_of_range(tmp_path, capsys, value):
    path = str(write(tmp_path, "K.csv", SIX))
    for argv in (["coefficients", path], ["amplify", "--epsilon", "1", path]):
        code, _, err = run(capsys, argv + [f"--row-sum-atol={value}"])
        assert code == EXIT_INVALID and "--row-sum-atol: must be in [0, 0.01)" in err


# --------------------------------------------------------------------------- coarsening maps
HEAD = 'format = "chainamp-pipeline/1"\n'
MECH = ('[mechanism]\ncatalogue = "randomized_response"\nk = 3\nepsilon = 1.0\n'
        'inputs = ["a", "b", "c"]\noutputs = ["a", "b", "c"]\n')


def test_coarsen_map_equals_the_matrix_it_stands_for(tmp_path):
    text = HEAD + MECH + '[[steps]]\ncoarsen = {a = "low", b = "low", c = "high"}\n[[claims]]\nepsilon = 1.0\n'
    p = cio.load_pipeline(write(tmp_path, "p.toml", text))
    K = p.operators[0]
    assert K.inputs == ("a", "b", "c") and K.outputs == ("low", "high")
    assert K.matrix.tolist() == [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    same = ca.MarkovOperator([[1, 0], [1, 0], [0, 1]], ["a", "b", "c"], ["low", "high"])
    M = ca.mechanisms.randomized_response(3, 1.0)
    M = ca.MarkovOperator(M.matrix, ["a", "b", "c"], ["a", "b", "c"])
    assert cio.audit(p).report.best.epsilon == ca.amplify(M, same).best.epsilon


def test_coarsen_tuple_labels_of_kron_and_integer_labels():
    doc = {"format": "chainamp-pipeline/1",
           "mechanism": {"catalogue": "binary_randomized_response", "epsilon": 1.0, "kron": 2},
           "steps": [{"coarsen": {"(0, 0)": 0, "(0, 1)": 1, "[1, 0]": 1, "1,1": 2}},
                     {"coarsen": {"0": "none", "1": "some", "2": "some"}}]}
    p = cio.parse_pipeline(doc)
    assert p.operators[0].inputs == ((0, 0), (0, 1), (1, 0), (1, 1)) and p.operators[0].outputs == (0, 1, 2)
    assert p.operators[1].outputs == ("none", "some")


def test_coarsen_after_a_black_box_uses_the_keys():
    doc = {"format": "chainamp-pipeline/1", "mechanism": {"epsilon": 1.0},
           "steps": [{"coarsen": {"x": 1, "y": 1, "z": 2}}]}
    assert cio.parse_pipeline(doc).operators[0].inputs == ("x", "y", "z")


@pytest.mark.parametrize("coarsen, match", [
    ({"a": "low", "b": "low"}, r"steps\[0\]\.coarsen: does not map 'c': every output of the mechanism needs a group"),
    ({"a": "x", "b": "x", "c": "y", "d": "y"}, r"steps\[0\]\.coarsen\.d: 'd' is not an output of the mechanism"),
    ({"a": {"g": 1}, "b": "x", "c": "y"}, r"steps\[0\]\.coarsen\.a: must be a group label"),
    ({"a": [], "b": "x", "c": "y"}, r"steps\[0\]\.coarsen\.a: must be a group label"),
    ([["a", "low"]], r"steps\[0\]\.coarsen: must be a table from labels to groups"),
    ({}, r"steps\[0\]\.coarsen: must be a table from labels to groups"),
], ids=["label-missing", "unknown-label", "table-group", "empty-group", "array", "empty"])
def test_coarsen_errors_name_the_field(coarsen, match):
    doc = {"format": "chainamp-pipeline/1",
           "mechanism": {"catalogue": "randomized_response", "k": 3, "epsilon": 1.0,
                         "inputs": ["a", "b", "c"], "outputs": ["a", "b", "c"]},
           "steps": [{"coarsen": coarsen}]}
    with pytest.raises(InvalidPipelineError, match=match):
        cio.parse_pipeline(doc)


def test_coarsen_twice_and_as_mechanism():
    doc = {"format": "chainamp-pipeline/1",
           "mechanism": {"catalogue": "binary_randomized_response", "epsilon": 1.0, "kron": 2},
           "steps": [{"coarsen": {"(0, 1)": 1, "0,1": 2, "(0, 0)": 0, "(1, 0)": 1, "(1, 1)": 2}}]}
    with pytest.raises(InvalidPipelineError, match=r"coarsen\.0,1: maps the output \(0, 1\) a second time"):
        cio.parse_pipeline(doc)
    doc = {"format": "chainamp-pipeline/1", "mechanism": {"coarsen": {"a": 1}}, "steps": [{"matrix": [[1.0]]}]}
    with pytest.raises(InvalidPipelineError, match=r"mechanism\.coarsen: a coarsening is a post-processing step"):
        cio.parse_pipeline(doc)


# --------------------------------------------------------------------------- label conventions (documented)
def test_kron_labels_are_tuples_last_factor_fastest():
    A = ca.MarkovOperator([[0.9, 0.1], [0.2, 0.8]], ["a", "b"], ["y", "n"])
    B = ca.MarkovOperator([[0.5, 0.5], [0.3, 0.7]])
    K = ca.kron(A, B)
    assert K.inputs == tuple(itertools.product(["a", "b"], [0, 1])) == (("a", 0), ("a", 1), ("b", 0), ("b", 1))
    np.testing.assert_array_equal(K.matrix, np.kron(A.matrix, B.matrix))
    assert "last factor varies fastest" in " ".join(ca.kron.__doc__.split())


def test_rappor_labels_are_bit_tuples_in_lexicographic_order():
    R = ca.mechanisms.rappor_pipeline(3, 1)
    assert R.instantaneous.outputs == tuple(itertools.product((0, 1), repeat=3))
    assert R.bloom_filters == ((1, 0, 0), (0, 1, 0), (0, 0, 1))  # bit i at position i
    doc = " ".join(Path("docs/pipeline-format.md").read_text(encoding="utf-8").split()) \
        if Path("docs/pipeline-format.md").is_file() else ""
    if doc:
        assert "Its labels are bit tuples" in doc and "last bit fastest" in doc


def test_underscore_digits_are_not_numbers(tmp_path):
    """Python's float() reads '0_5' as 5.0; a CSV cell written that way is refused, not misread."""
    f = tmp_path / "K.csv"
    f.write_text("0_5,0.5\n0.5,0.5\n")
    with pytest.raises(InvalidOperatorError, match=r"line 1, column 1: '0_5' is not a number"):
        cio.load_operator(f)
