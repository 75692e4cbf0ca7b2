"""Tests for chainamp.io reading files: matrix files and every pipeline-file error (file, field, problem)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chainamp import io as cio
from chainamp.errors import InvalidOperatorError, InvalidPipelineError
from conftest import PIPELINE_HEAD as HEAD


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def pipeline(tmp_path: Path, body: str) -> cio.Pipeline:
    return cio.load_pipeline(write(tmp_path, HEAD + body))


# --------------------------------------------------------------------------- load_operator
def test_load_operator_csv_with_comments(tmp_path):
    f = write(tmp_path, "# a binary channel\n0.75, 0.25\n\n0.25,0.75  # second row\n", "K.csv")
    K = cio.load_operator(f, inputs=["a", "b"])
    assert K.inputs == ("a", "b")
    assert K.matrix.tolist() == [[0.75, 0.25], [0.25, 0.75]]


def test_load_operator_npy_and_row_sum_atol(tmp_path):
    f = tmp_path / "K.npy"
    np.save(f, np.array([[0.333333, 0.666666], [1.0, 0.0]]))
    with pytest.raises(InvalidOperatorError, match=r"K\.npy: K rows must sum to 1"):
        cio.load_operator(f)
    assert cio.load_operator(f, row_sum_atol=1e-5).shape == (2, 2)


@pytest.mark.parametrize("name, content, match", [
    ("missing.csv", None, r"missing\.csv: no such file"),
    ("K.json", "[[1]]", r"unknown matrix file type '\.json'"),
    ("K.csv", "0.5,abc\n0.5,0.5\n", r"K\.csv: not a readable numeric CSV matrix"),
    ("K.csv", "0.5,0.5\n0.5\n", r"K\.csv: not a readable numeric CSV matrix"),
    ("K.csv", "0.7,0.25\n0.25,0.75\n", r"K\.csv: K rows must sum to 1 .*row 0 sums to 0\.95"),
    ("K.csv", "1.5,-0.5\n0.5,0.5\n", r"K\.csv: K entries must be non-negative"),
], ids=["missing", "suffix", "non-numeric", "ragged", "non-stochastic", "negative"])
def test_load_operator_errors(tmp_path, name, content, match):
    f = tmp_path / name
    if content is not None:
        f.write_text(content)
    with pytest.raises(InvalidOperatorError, match=match):
        cio.load_operator(f)


def test_load_operator_refuses_pickles_and_bad_arrays(tmp_path):
    f = tmp_path / "obj.npy"
    np.save(f, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InvalidOperatorError, match=r"obj\.npy: not a readable NPY matrix .*pickle"):
        cio.load_operator(f)
    g = tmp_path / "vec.npy"
    np.save(g, np.array([0.5, 0.5]))
    with pytest.raises(InvalidOperatorError, match=r"vec\.npy: K must be 2-D"):
        cio.load_operator(g)
    s = tmp_path / "str.npy"
    np.save(s, np.array([["a", "b"]]))
    with pytest.raises(InvalidOperatorError, match=r"str\.npy: holds <U1 values"):
        cio.load_operator(s)


# --------------------------------------------------------------------------- errors: file, field, problem
BASE = "[mechanism]\nepsilon = 1.0\n[[steps]]\nmatrix = [[0.5, 0.5], [0.5, 0.5]]\n"
RR = HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ncatalogue = "randomized_response"\n'
FINITE = "[mechanism]\nmatrix = [[0.5, 0.5], [0.25, 0.75]]\n[[steps]]\nmatrix = [[0.5, 0.5], [0.5, 0.5]]\n"

BAD = [
    ("syntax", HEAD + "mechanism = {epsilon = }\n", r"\(syntax\): not valid TOML"),
    ("format", 'format = "chainamp-pipeline/9"\n' + BASE, r"format: must be 'chainamp-pipeline/1'"),
    ("no-format", BASE, r"format: must be .* got None"),
    ("unknown-top", HEAD + "steps_typo = 1\n" + BASE, r"steps_typo: unknown key"),
    ("name-type", HEAD + "name = 3\n" + BASE, r"name: must be a string"),
    ("no-mechanism", HEAD + "[[steps]]\nmatrix = [[1]]\n", r"mechanism: missing"),
    ("mechanism-type", HEAD + 'mechanism = "rr"\n[[steps]]\nmatrix = [[1]]\n', r"mechanism: must be a table"),
    ("mechanism-empty", HEAD + "[mechanism]\n[[steps]]\nmatrix = [[1]]\n", r"mechanism: needs epsilon"),
    ("epsilon-type", HEAD + '[mechanism]\nepsilon = "two"\n[[steps]]\nmatrix = [[1]]\n',
     r"mechanism\.epsilon: must be a number, got str 'two'"),
    ("epsilon-bool", HEAD + "[mechanism]\nepsilon = true\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.epsilon: must be a number, got bool"),
    ("epsilon-neg", HEAD + "[mechanism]\nepsilon = -1\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.epsilon: must be finite"),
    ("epsilon-nan", HEAD + "[mechanism]\nepsilon = nan\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.epsilon: must not be NaN"),
    ("delta-range", HEAD + "[mechanism]\nepsilon = 1\ndelta = 2\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.delta: must be in \[0, 1\]"),
    ("bb-name", HEAD + "[mechanism]\nepsilon = 1\nname = 2\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.name: must be a string"),
    ("bb-extra", HEAD + "[mechanism]\nepsilon = 1\nk = 2\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.k: unknown key for a black-box"),
    ("points-empty", HEAD + "[mechanism]\npoints = []\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.points: must be a non-empty"),
    ("points-pair", HEAD + "[mechanism]\npoints = [[1, 0, 3]]\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.points\[0\]: must be a pair"),
    ("points-extra", HEAD + "[mechanism]\npoints = [[1, 0]]\nfoo = 1\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.foo: unknown key next to points"),
    ("profile-unknown", HEAD + '[mechanism]\nprofile = "cauchy"\n[[steps]]\nmatrix = [[1]]\n',
     r"mechanism\.profile: unknown profile 'cauchy' \(known: pure, laplace"),
    ("profile-param", HEAD + '[mechanism]\nprofile = "gaussian"\nsigmaa = 1\n[[steps]]\nmatrix = [[1]]\n',
     r"mechanism\.sigmaa: profile 'gaussian' has no parameter 'sigmaa' \(parameters: sigma, sensitivity\)"),
    ("profile-missing", HEAD + '[mechanism]\nprofile = "gaussian"\n[[steps]]\nmatrix = [[1]]\n',
     r"mechanism: profile 'gaussian': missing a required argument: 'sigma'"),
    ("profile-value", HEAD + '[mechanism]\nprofile = "gaussian"\nsigma = -1\n[[steps]]\nmatrix = [[1]]\n',
     r"mechanism\.sigma: profile 'gaussian': sigma must be > 0"),
    ("graph-mechanism", HEAD + '[mechanism]\ngraph = "karate_club_graph"\n[[steps]]\nmatrix = [[1]]\n',
     r"mechanism: a graph random walk is a post-processing step"),
    ("steps-missing", HEAD + "[mechanism]\nepsilon = 1\n", r"steps: must be a non-empty array"),
    ("step-type", HEAD + "steps = [3]\n[mechanism]\nepsilon = 1\n", r"steps\[0\]: must be a table"),
    ("step-none", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nrepeat = 2\n", r"steps\[0\]: needs exactly one of"),
    ("step-two", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\nfile = "K.csv"\n',
     r"steps\[0\]: needs exactly one of .* \(got matrix, file\)"),
    ("step-extra", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\nlaziness = 0.5\n",
     r"steps\[0\]\.laziness: unknown key for a matrix step"),
    ("matrix-shape", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [1, 0]\n",
     r"steps\[0\]\.matrix: must be a non-empty array of rows"),
    ("matrix-ragged", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1, 0], [1]]\n",
     r"steps\[0\]\.matrix: row 1 has 1 entries, row 0 has 2"),
    ("matrix-entry", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1, 0], [0, "x"]]\n',
     r"steps\[0\]\.matrix\[1\]\[1\]: 'x' is neither a number nor a fraction"),
    ("matrix-entry-type", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1, 0], [0, true]]\n",
     r"steps\[0\]\.matrix\[1\]\[1\]: must be a number, got bool"),
    ("matrix-stochastic", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[0.5, 0.4], [0, 1]]\n",
     r"steps\[0\]\.matrix: K rows must sum to 1 .*row 0 sums to 0\.9"),
    ("matrix-atol", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\nrow_sum_atol = 0.5\n",
     r"steps\[0\]\.row_sum_atol: must be in \[0, 0\.01\)"),
    ("file-missing", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nfile = "nope.csv"\n',
     r"steps\[0\]\.file: .*nope\.csv: no such file"),
    ("file-type", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nfile = 3\n", r"steps\[0\]\.file: must be a file name"),
    ("catalogue-unknown", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ncatalogue = "os.system"\n',
     r"steps\[0\]\.catalogue: unknown catalogue mechanism 'os\.system' \(known: binary_randomized_response"),
    ("catalogue-param", RR + 'k = 2\neps = 1\n',
     r"steps\[0\]\.eps: catalogue 'randomized_response' has no parameter 'eps' \(parameters: k, epsilon, labels\)"),
    ("catalogue-missing", RR + 'k = 2\n',
     r"steps\[0\]: catalogue 'randomized_response': missing a required argument: 'epsilon'"),
    ("catalogue-value", RR + 'k = 2\nepsilon = -1\n',
     r"steps\[0\]\.epsilon: catalogue 'randomized_response': epsilon must be >= 0"),
    ("catalogue-wrong-type", RR + 'k = 2.5\nepsilon = 1\n',
     r"steps\[0\]\.k: catalogue 'randomized_response': k must be an integer"),
    ("catalogue-k-max", RR.replace('"randomized_response"', '"from_multi_freq_ldpy"') + 'protocol = "GRR"\nk = 5001\n'
     'epsilon = 1\n', r"steps\[0\]\.k: must be <= 5000 \(a dense k x k operator"),
    ("part-missing", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ncatalogue = "rappor_pipeline"\nm = 2\nh = 1\n',
     r"steps\[0\]\.part: catalogue 'rappor_pipeline' needs part = one of mechanism"),
    ("part-unexpected", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ncatalogue = "rappor_permanent"\npart = "x"\n',
     r"steps\[0\]\.part: only for rappor_pipeline"),
    ("graph-unknown", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ngraph = "petersen"\n',
     r"steps\[0\]\.graph: unknown graph 'petersen'"),
    ("graph-n-missing", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ngraph = "path_graph"\n',
     r"steps\[0\]: graph 'path_graph' needs n"),
    ("graph-n-extra", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ngraph = "karate_club_graph"\nn = 3\n',
     r"steps\[0\]\.n: graph 'karate_club_graph' takes no parameter 'n'"),
    ("laziness", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ngraph = "karate_club_graph"\nlaziness = 1.5\n',
     r"steps\[0\]\.laziness: must be in \[0, 1\]"),
    ("weighted-type", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ngraph = "karate_club_graph"\nweighted = "yes"\n',
     r"steps\[0\]\.weighted: must be true or false"),
    ("edges-missing", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nedges = "e.csv"\n',
     r"steps\[0\]\.edges: .*e\.csv: no such file"),
    ("edges-n", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nedges = "e.csv"\nn = 3\n',
     r"steps\[0\]\.n: only for a named generator"),
    ("repeat", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\nrepeat = 0\n",
     r"steps\[0\]\.repeat: must be >= 1 \(got 0\)"),
    ("repeat-max", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\nrepeat = 10001\n",
     r"steps\[0\]\.repeat: must be <= 10000 \(got 10001\)"),
    ("graph-n-max", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\ngraph = "path_graph"\nn = 100001\n',
     r"steps\[0\]\.n: must be <= 100000"),
    ("repeat-type", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\nrepeat = 1.5\n",
     r"steps\[0\]\.repeat: must be an integer, got float"),
    ("repeat-rect", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1], [1]]\nrepeat = 2\n",
     r"steps\[0\]\.repeat: a repeated step needs the same input and output labels"),
    ("kron-size", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[0.5, 0.5], [0.5, 0.5]]\nkron = 13\n",
     r"steps\[0\]\.kron: 13 copies of a 2x2 operator have about 6.71e\+07 matrix entries \(2\^13 x 2\^13, dense\), "
     r"above the 16777216"),
    ("step-name", HEAD + "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\nname = 1\n",
     r"steps\[0\]\.name: must be a string"),
    ("labels-count", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\noutputs = ["a", "b"]\n',
     r"steps\[0\]\.outputs: has 2 labels for 1 columns"),
    ("labels-type", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\ninputs = "a"\n',
     r"steps\[0\]\.inputs: must be a non-empty array of labels"),
    ("labels-dup", HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1, 0], [0, 1]]\ninputs = ["a", "a"]\n',
     r"steps\[0\]: inputs labels must be distinct"),
    ("compose-mech", HEAD + "[mechanism]\nmatrix = [[1, 0, 0]]\n[[steps]]\nmatrix = [[1], [1]]\n",
     r"steps\[0\]: its 2 inputs \[0, 1\] are not the 3 outputs \[0, 1, 2\] of the mechanism"),
    ("compose-steps",
     HEAD + '[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\noutputs = ["x"]\n[[steps]]\nmatrix = [[1]]\n',
     r"steps\[1\]: its 1 inputs \[0\] are not the 1 outputs \['x'\] of the previous step"),
    ("neighbors-bb", HEAD + 'neighbors = [[0, 1]]\n' + BASE,
     r"neighbors: a neighbour relation needs a finite mechanism"),
    ("neighbors-type", HEAD + 'neighbors = "some"\n' + FINITE, r"neighbors: must be \"all\" or a non-empty array"),
    ("neighbors-pair", HEAD + 'neighbors = [[0, 1, 2]]\n' + FINITE, r"neighbors\[0\]: must be a pair"),
    ("neighbors-label", HEAD + 'neighbors = [[0, 7]]\n' + FINITE,
     r"neighbors\[0\]: 7 is not an input label of the mechanism"),
    ("neighbors-self", HEAD + 'neighbors = [[1, 1]]\n' + FINITE, r"neighbors\[0\]: pairs 1 with itself"),
    ("claims-type", HEAD + "claims = 3\n" + BASE, r"claims: must be an array of tables"),
    ("claim-type", HEAD + "claims = [3]\n" + BASE, r"claims\[0\]: must be a table"),
    ("claim-key", HEAD + BASE + "[[claims]]\nepsilon = 1\neps = 2\n", r"claims\[0\]\.eps: unknown key"),
    ("claim-form", HEAD + BASE + '[[claims]]\nepsilon = 1\nform = "renyi"\n',
     r"claims\[0\]\.form: must be \"epsilon_at\" or \"delta_at\""),
    ("claim-eps", HEAD + BASE + "[[claims]]\ndelta = 0.1\n", r"claims\[0\]\.epsilon: missing"),
    ("claim-eps-neg", HEAD + BASE + "[[claims]]\nepsilon = -0.1\n", r"claims\[0\]\.epsilon: must be >= 0"),
    ("claim-delta", HEAD + BASE + '[[claims]]\nepsilon = 1\nform = "delta_at"\n', r"claims\[0\]\.delta: missing"),
    ("claim-delta-range", HEAD + BASE + "[[claims]]\nepsilon = 1\ndelta = 1.5\n",
     r"claims\[0\]\.delta: must be in \[0, 1\]"),
    ("claim-label", HEAD + BASE + "[[claims]]\nepsilon = 1\nlabel = 2\n", r"claims\[0\]\.label: must be a string"),
    ("target-delta", HEAD + "delta = -1\n" + BASE, r"delta: must be in \[0, 1\]"),
    ("per-step", HEAD + 'per_step = "yes"\n' + BASE, r"per_step: must be true or false"),
]


@pytest.mark.parametrize("text, match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_invalid_pipeline_one_line_naming_file_and_field(tmp_path, text, match):
    path = write(tmp_path, text)
    with pytest.raises(InvalidPipelineError, match=match) as info:
        cio.load_pipeline(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg


@pytest.mark.parametrize("content, match", [
    ("0\n", r"line 1: expected u,v, got \['0'\]"),
    ("", r"no edges"),
], ids=["short-line", "empty"])
def test_invalid_edge_list(tmp_path, content, match):
    write(tmp_path, content, "e.csv")
    with pytest.raises(InvalidPipelineError, match=r"steps\[0\]\.edges: .*" + match):
        pipeline(tmp_path, '[mechanism]\nepsilon = 1\n[[steps]]\nedges = "e.csv"\n')


def test_edge_list_with_a_sink(tmp_path):
    write(tmp_path, "a,b\n", "e.csv")
    with pytest.raises(InvalidPipelineError, match=r"steps\[0\]: .*'b'"):
        pipeline(tmp_path, '[mechanism]\nepsilon = 1\n[[steps]]\nedges = "e.csv"\ndirected = true\n')


@pytest.mark.parametrize("content, match", [
    ("0,1,x\n", r"weight 'x' is not a number"),
    ("0,1,-1\n", r"weight must be finite and >= 0"),
    ("0,1\n", r"expected u,v,weight"),
], ids=["text", "negative", "missing"])
def test_invalid_edge_weights(tmp_path, content, match):
    write(tmp_path, content, "e.csv")
    with pytest.raises(InvalidPipelineError, match=match):
        pipeline(tmp_path, '[mechanism]\nepsilon = 1\n[[steps]]\nedges = "e.csv"\nweighted = true\n')


def test_missing_pipeline_and_not_utf8(tmp_path):
    with pytest.raises(InvalidPipelineError, match=r"nope\.toml: no such pipeline file"):
        cio.load_pipeline(tmp_path / "nope.toml")
    bad = tmp_path / "bin.toml"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InvalidPipelineError, match=r"bin\.toml: "):
        cio.load_pipeline(bad)
    with pytest.raises(InvalidPipelineError, match=r"<pipeline>: \(document\): must be a table"):
        cio.parse_pipeline([1, 2])


def test_audit_errors_are_pipeline_errors(tmp_path):
    # a profile with no pure level and no delta: amplify needs the delta' to report at
    p = pipeline(tmp_path, '[mechanism]\nprofile = "gaussian"\nsigma = 1.0\n'
                           '[[steps]]\nmatrix = [[0.5, 0.5], [0.5, 0.5]]\n')
    with pytest.raises(InvalidPipelineError, match=r"p\.toml: pipeline: .*delta"):
        cio.audit(p)
    with pytest.raises(TypeError, match="pipeline must be a Pipeline .* or the path of a pipeline file, got int"):
        cio.audit(3)


@pytest.mark.parametrize("fn, arg, match", [
    (cio.load_operator, 123, r"path must be a file name \(str or pathlib\.Path\), got int 123"),
    (cio.load_pipeline, None, r"path must be a file name \(str or pathlib\.Path\), got NoneType None"),
], ids=["load_operator", "load_pipeline"])
def test_path_type_errors(fn, arg, match):
    with pytest.raises(TypeError, match=match):
        fn(arg)


def test_parse_pipeline_of_toml_text_says_how(tmp_path):
    with pytest.raises(InvalidPipelineError, match=r"\(document\): must be a table \(a dict\), got str "
                                                   r"\(TOML text: parse it with tomllib\.loads"):
        cio.parse_pipeline('format = "chainamp-pipeline/1"')


@pytest.mark.parametrize("content", ["", "# nothing\n"], ids=["empty", "comment-only"])
def test_empty_matrix_file(tmp_path, content):
    path = write(tmp_path, content, "K.csv")
    with pytest.raises(InvalidOperatorError, match=r"K\.csv: no numbers in the file \(an empty matrix\)"):
        cio.load_operator(path)


def test_folder_instead_of_a_file(tmp_path):
    with pytest.raises(InvalidOperatorError, match="is a folder, not a matrix file"):
        cio.load_operator(tmp_path)
    with pytest.raises(InvalidPipelineError, match=r"is a folder, not a pipeline file \(\.toml\)"):
        cio.load_pipeline(tmp_path)


@pytest.mark.parametrize("body, field", [
    ('[mechanism]\ncatalogue = "randomized_response"\nk = 3\nepsilon = 2.0\nper_step = true\n'
     '[[steps]]\nmatrix = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n', r"mechanism\.per_step"),
    ("[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\ndelta = 1e-6\n", r"steps\[0\]\.delta"),
    ("[mechanism]\nepsilon = 1\nname = 'x'\nneighbors = 'all'\n[[steps]]\nmatrix = [[1]]\n",
     r"mechanism\.neighbors"),
    ("[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\n[[claims]]\nepsilon = 1\nname = 'x'\n",
     r"claims\[0\]\.name"),
    ("[mechanism]\npoints = [[1, 0]]\nper_step = true\n[[steps]]\nmatrix = [[1]]\n", r"mechanism\.per_step"),
], ids=["catalogue-parameter", "step-key", "black-box-key", "claim-key", "points-key"])
def test_a_top_level_key_under_a_header_gets_a_hint(tmp_path, body, field):
    with pytest.raises(InvalidPipelineError, match=field + r": .*; if '\w+' is meant for the whole pipeline, "
                                                           r"move it above the first \[table\] header"):
        pipeline(tmp_path, body)


def test_an_unknown_key_that_is_not_top_level_gets_no_hint(tmp_path):
    with pytest.raises(InvalidPipelineError, match=r"steps\[0\]\.laziness: unknown key for a matrix step") as info:
        pipeline(tmp_path, "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1]]\nlaziness = 0.5\n")
    assert "meant for the whole pipeline" not in str(info.value)


@pytest.mark.parametrize("content", ["0.5;0.5\n0.5;0.5\n", "0.5 0.5\n0.5 0.5\n", "0.5,0.5,\n0.5,0.5,\n"],
                         ids=["semicolons", "spaces", "trailing-comma"])
def test_csv_in_another_layout_says_what_is_expected(tmp_path, content):
    path = write(tmp_path, content, "K.csv")
    with pytest.raises(InvalidOperatorError, match=r"K\.csv: not a readable numeric CSV matrix \(.*\); expected "
                                                   r"comma-separated numbers, one matrix row per line, # comments"):
        cio.load_operator(path)


def test_audit_progress_means_what_it_means_everywhere(tmp_path, capsys, monkeypatch):
    """Issue 18: audit(path, progress=True) raised TypeError, and progress=False still printed an inner bar."""
    from chainamp._numerics import progress as P
    from conftest import TWO_STAGE_RR

    monkeypatch.setattr(P, "PROGRESS_DELAY", 0.0)  # every bar, inner ones included, would show at once
    path = tmp_path / "p.toml"
    path.write_text(HEAD + TWO_STAGE_RR + "[[claims]]\nepsilon = 0.7\n", encoding="utf-8")
    capsys.readouterr()
    assert cio.audit(str(path), progress=False).ok
    assert capsys.readouterr().err == ""
    assert cio.audit(str(path), progress=True).ok
    err = capsys.readouterr().err
    assert "audit: " in err and "\r" not in err  # stderr is no terminal here: plain lines
    said: list = []
    assert cio.audit(str(path), progress=said.append).ok and said[0] == "amplify"
    with pytest.raises(TypeError, match=r"progress must be None, True or False \(got 'yes'\)"):
        cio.audit(str(path), progress="yes")
