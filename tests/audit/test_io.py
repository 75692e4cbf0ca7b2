"""Tests for chainamp.io: matrix files, pipeline files (every field and every error), audits."""

from __future__ import annotations

import itertools
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainamp as ca
from chainamp import io as cio
from chainamp import mechanisms
from chainamp._numerics import Progress
from chainamp.errors import InvalidOperatorError, InvalidPipelineError
from conftest import TWO_STAGE_RR
from conftest import PIPELINE_HEAD as HEAD

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def pipeline(tmp_path: Path, body: str) -> cio.Pipeline:
    return cio.load_pipeline(write(tmp_path, HEAD + body))


def brute_pure_epsilon(P) -> float:
    """Exact local-DP epsilon of a channel matrix (rows = inputs) by plain loops over Fractions."""
    rows = [[Fraction(x) for x in row] for row in P]
    worst = Fraction(1)
    for a, b in itertools.permutations(range(len(rows)), 2):
        for y in range(len(rows[0])):
            if rows[a][y] > 0 and rows[b][y] == 0:
                return math.inf
            if rows[b][y] > 0:
                worst = max(worst, rows[a][y] / rows[b][y])
    return math.log(worst)


def matmul(A, B):
    return [[sum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]


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


# --------------------------------------------------------------------------- every field
def test_mechanism_forms(tmp_path):
    step = '[[steps]]\nmatrix = [[0.75, 0.25], [0.25, 0.75]]\n'
    bb = pipeline(tmp_path, "[mechanism]\nepsilon = 1\ndelta = 1e-6\n" + step)
    assert bb.mechanism == ca.DP(1.0, 1e-6) and bb.delta is None
    pts = pipeline(tmp_path, "[mechanism]\npoints = [[1.0, 1e-6], [2, 0]]\n" + step)
    assert pts.mechanism == (ca.DP(1.0, 1e-6), ca.DP(2.0, 0.0))
    prof = pipeline(tmp_path, '[mechanism]\nname = "noise"\nprofile = "gaussian"\nsigma = 2.0\n' + step)
    assert isinstance(prof.mechanism, ca.PrivacyProfile) and prof.mechanism_description.startswith("noise: gaussian")
    cat = pipeline(tmp_path, '[mechanism]\ncatalogue = "binary_randomized_response"\nepsilon = 1.0\n' + step)
    assert cat.mechanism == mechanisms.binary_randomized_response(1.0)
    write(tmp_path, "0.5,0.5\n0,1\n", "M.csv")
    fil = pipeline(tmp_path, '[mechanism]\nfile = "M.csv"\n' + step)
    assert fil.mechanism.matrix.tolist() == [[0.5, 0.5], [0.0, 1.0]]


def test_step_forms_and_paths_relative_to_file(tmp_path, monkeypatch):
    sub = tmp_path / "sub"
    sub.mkdir()
    np.save(sub / "K.npy", np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]))
    (sub / "edges.csv").write_text("# u,v,w\n0,1,2\n1,2,1\n2,0,1\n")
    body = '''[mechanism]
matrix = [["1/3", "1/3", "1/3"], ["1/2", "1/2", 0], [0, 0, 1]]
[[steps]]
file = "K.npy"
[[steps]]
edges = "edges.csv"
weighted = true
laziness = 0.25
[[steps]]
graph = "cycle_graph"
n = 3
repeat = 2
name = "ring"
'''
    p = cio.load_pipeline(write(sub, HEAD + body))
    monkeypatch.chdir(tmp_path)  # the cwd must not matter
    assert len(p.operators) == 4 and p.step_names[-2:] == ("ring: random walk on cycle_graph(3) (3 nodes)",) * 2
    assert p.mechanism.matrix[0, 0] == 1 / 3  # exact fraction, rounded once
    walk = p.operators[1].matrix
    # node 1 has neighbours 0 (weight 2) and 2 (weight 1): 0.25 stay, 0.75 * (2/3, 1/3) move
    np.testing.assert_allclose(walk[1], [0.5, 0.25, 0.25], rtol=0, atol=1e-15)  # exact up to rounding


def test_directed_edges_string_labels_and_relabel(tmp_path):
    write(tmp_path, "a,b\nb,a\nb,c\nc,a\n", "g.csv")
    p = pipeline(tmp_path, '''[mechanism]
matrix = [[0.5, 0.5, 0], [0, 0.5, 0.5], [0.5, 0, 0.5]]
outputs = ["a", "b", "c"]
[[steps]]
edges = "g.csv"
directed = true
''')
    K = p.operators[0]
    assert K.inputs == ("a", "b", "c") and K.row("b").tolist() == [0.5, 0.0, 0.5]


def test_catalogue_kron_parts_and_integer_labels(tmp_path):
    p = pipeline(tmp_path, '''[mechanism]
catalogue = "rappor_pipeline"
part = "mechanism"
m = 4
h = 2
[[steps]]
catalogue = "rappor_instantaneous"
p = 0.5
q = 0.75
kron = 4
''')
    R = mechanisms.rappor_pipeline(4, 2)
    assert p.mechanism == R.mechanism
    assert p.operators[0] == R.instantaneous
    q = pipeline(tmp_path, '''[mechanism]
catalogue = "randomized_response"
k = 15
epsilon = 1.0
[[steps]]
graph = "florentine_families_graph"
integer_labels = true
''')
    G = nx.convert_node_labels_to_integers(nx.florentine_families_graph())
    assert q.operators[0] == ca.MarkovOperator.random_walk(G)


def test_neighbors_claims_and_default_delta(tmp_path):
    p = pipeline(tmp_path, '''neighbors = [["a", "b"], ["b", "c"]]
delta = 1e-4
per_step = true
name = "n"
description = "d"
provenance = "p"
[mechanism]
catalogue = "randomized_response"
k = 3
epsilon = 1.0
labels = ["a", "b", "c"]
[[steps]]
catalogue = "randomized_response"
k = 3
epsilon = 1.0
inputs = ["a", "b", "c"]
[[claims]]
epsilon = 0.5
[[claims]]
form = "delta_at"
epsilon = 0.1
delta = 0.2
label = "mine"
''')
    assert p.neighbors == (("a", "b"), ("b", "c")) and p.delta == 1e-4 and p.per_step
    assert (p.name, p.description, p.provenance) == ("n", "d", "p")
    assert p.claims == (cio.Claim(0.5, 0.0), cio.Claim(0.1, 0.2, "delta_at", "mine"))
    q = pipeline(tmp_path, "[mechanism]\nepsilon = 1\n[[steps]]\nmatrix = [[1, 0], [0, 1]]\n"
                           "[[claims]]\nepsilon = 1\ndelta = 1e-3\n[[claims]]\nepsilon = 2\ndelta = 1e-5\n")
    assert q.delta == 1e-5  # the smallest claimed delta


def test_docs_complete_example_audits(tmp_path):
    text = (ROOT / "docs" / "pipeline-format.md").read_text(encoding="utf-8")
    section = text.split("## A complete example", 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
    result = cio.audit(cio.load_pipeline(write(tmp_path, block)))
    assert result.ok and len(result.verdicts) == 2 and result.steps is not None


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
    ("catalogue-k-max", RR + 'k = 5001\nepsilon = 1\n', r"steps\[0\]\.k: must be <= 5000 \(a dense k x k operator"),
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
     r"steps\[0\]\.kron: 13 copies of a 2x2 operator would exceed 16777216 entries"),
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


# --------------------------------------------------------------------------- audit verdicts
def test_audit_matches_brute_force_exact_epsilon(tmp_path):
    M = [["3/5", "1/5", "1/5"], ["1/5", "3/5", "1/5"], ["1/5", "1/5", "3/5"]]
    K = [["2/3", "1/3"], ["1/3", "2/3"], ["1/2", "1/2"]]
    exact = brute_pure_epsilon(matmul([[Fraction(x) for x in r] for r in M], [[Fraction(x) for x in r] for r in K]))
    # by hand: rows of M K are (17/30, 13/30), (13/30, 17/30), (1/2, 1/2)
    assert exact == pytest.approx(math.log(Fraction(17, 13)), rel=1e-15)
    body = (f"[mechanism]\nmatrix = {json.dumps(M)}\n[[steps]]\nmatrix = {json.dumps(K)}\n"
            f"[[claims]]\nepsilon = {exact + 1e-6!r}\n[[claims]]\nepsilon = {exact - 1e-3!r}\n"
            f"[[claims]]\nform = \"delta_at\"\nepsilon = {exact!r}\ndelta = 1e-9\n")
    res = cio.audit(pipeline(tmp_path, body))
    ok, low, at = res.verdicts
    assert ok.holds and ok.status == "certified" and ok.source == "exact"
    assert exact <= ok.certified <= exact * (1 + 1e-6)  # certified never below the truth
    assert not low.holds and low.status == "refuted" and low.exact >= exact
    assert at.holds and at.certified <= 1e-9
    assert not res.ok


def test_black_box_claim_not_certified_is_not_refuted(tmp_path):
    res = cio.audit(pipeline(tmp_path, BASE.replace("[[0.5, 0.5], [0.5, 0.5]]", "[[0.75, 0.25], [0.25, 0.75]]")
                             + "[[claims]]\nepsilon = 0.1\n[[claims]]\nepsilon = 0.9\n"))
    low, high = res.verdicts
    assert (low.holds, low.status, low.exact) == (False, "not certified", None)
    # tight pure bound: log((1 + e^(1 + log 3)) / (e + 3))
    tight = math.log((1 + 3 * math.e) / (math.e + 3))
    assert high.holds and high.source == "tight"
    assert tight <= high.certified <= tight * (1 + 1e-6)  # searched to a certified bracket of width 1e-7


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 4), st.integers(2, 3), st.data())
def test_property_claims_below_exact_never_certified(n, m, data):
    """Soundness of the verdicts on random small pipelines: a claim below the brute-force exact
    epsilon is never certified, one above it always is (finite M, so the exact source applies)."""
    weights = st.integers(1, 9)
    M = [[data.draw(weights) for _ in range(n)] for _ in range(n)]
    K = [[data.draw(st.integers(0, 9)) for _ in range(m)] for _ in range(n)]
    for row in K:
        row[data.draw(st.integers(0, m - 1))] += 1
    Mf = [[Fraction(x, sum(r)) for x in r] for r in M]
    Kf = [[Fraction(x, sum(r)) for x in r] for r in K]
    exact = brute_pure_epsilon(matmul(Mf, Kf))
    doc = {"format": cio.FORMAT, "mechanism": {"matrix": [[f"{x.numerator}/{x.denominator}" for x in r] for r in Mf]},
           "steps": [{"matrix": [[f"{x.numerator}/{x.denominator}" for x in r] for r in Kf]}],
           "claims": [{"epsilon": exact * (1 + 1e-6) + 1e-9}, {"epsilon": max(exact * (1 - 1e-4) - 1e-9, 0.0)}]}
    res = cio.audit(cio.parse_pipeline(doc))
    above, below = res.verdicts
    assert above.holds
    assert not below.holds or exact == 0.0


def test_audit_result_presentation(tmp_path):
    res = cio.audit(pipeline(tmp_path, 'name = "demo"\ndescription = "a description"\nper_step = true\n'
                             + TWO_STAGE_RR + 'repeat = 2\n[[claims]]\nepsilon = 0.5\nlabel = "half"\n'))
    text = str(res)
    assert "pipeline: demo" in text and "a description" in text
    assert "steps 1-2: randomized_response(k=3, epsilon=1.0) (2 times)" in text
    assert "half" in text and "all 1 claim(s) certified" in text and "K o M over steps" in text
    d = json.loads(json.dumps(res.to_dict()))
    assert d["ok"] is True and d["claims"][0]["status"] == "certified" and d["format"] == cio.FORMAT
    assert len(d["per_step"]["steps"]) == 2 and d["report"]["exact"]["source"] == "exact"
    assert set(res.reports) == {"amplification", "per step"}
    assert "<table>" in res._repr_html_()
    calls = []
    cio.audit(res.pipeline, progress=calls.append)
    assert calls == ["amplify", "per-step report", "claim 1 of 1"]


# --------------------------------------------------------------------------- progress line
class FakeTTY:
    def __init__(self):
        self.parts = []

    def isatty(self):
        return True

    def write(self, s):
        self.parts.append(s)

    def flush(self):
        pass


def test_progress_shows_on_tty_after_delay_and_clears():
    import time

    tty = FakeTTY()
    with Progress("audit", stream=tty, delay=0.0, interval=0.01) as bar:
        bar.update("amplify")
        time.sleep(0.1)
    assert bar.shown and any("audit: amplify" in p for p in tty.parts)
    assert tty.parts[-1].startswith("\r") and tty.parts[-1].strip() == ""
    quiet = FakeTTY()
    with Progress("audit", stream=quiet, delay=60.0, interval=0.01):
        time.sleep(0.05)
    assert quiet.parts == []


# --------------------------------------------------------------------------- notebook use: reprs, paths, messages
def test_short_reprs_of_pipeline_and_audit(tmp_path):
    p = pipeline(tmp_path, 'name = "two-stage"\n' + TWO_STAGE_RR + "[[claims]]\nepsilon = 0.7\n")
    assert repr(p) == (f"<Pipeline 'two-stage' from {tmp_path / 'p.toml'}: M = randomized_response(k=3, "
                       "epsilon=2.0); 1 step; 1 claim>")
    result = cio.audit(p)
    assert re.fullmatch(r"<AuditResult 'two-stage': all 1 claim\(s\) certified; best \(0\.\d+, 0\) from exact>",
                        repr(result)), repr(result)


def test_audit_accepts_the_path_of_a_pipeline_file(tmp_path):
    path = write(tmp_path, HEAD + TWO_STAGE_RR + "[[claims]]\nepsilon = 0.7\n")
    assert cio.audit(str(path)).ok and cio.audit(path).ok


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


def test_claims_show_label_and_the_statement_checked(tmp_path):
    body = ('provenance = "from a paper"\n' + TWO_STAGE_RR
            + '[[claims]]\nepsilon = 0.7\nlabel = "as deployed"\n[[claims]]\nform = "delta_at"\nepsilon = 0.5\n'
              'delta = 0.2\n')
    result = cio.audit(pipeline(tmp_path, body))
    text = str(result)
    assert "provenance: from a paper" in text
    header = next(line for line in text.splitlines() if line.startswith("claim "))
    assert header.split() == ["claim", "checked", "certified", "exact", "from", "verdict"]
    assert re.search(r"as deployed\s+epsilon' <= 0\.7 at delta' = 0\s", text)
    assert re.search(r"\n\s+delta' <= 0\.2 at epsilon' = 0\.5\s", text)  # no label: an empty first column
    html_text = result._repr_html_()
    assert "provenance: from a paper" in html_text and "<th>checked</th>" in html_text
    assert "all 2 claim(s) certified" in html_text


def test_claims_without_labels_have_no_label_column(tmp_path):
    result = cio.audit(pipeline(tmp_path, TWO_STAGE_RR + "[[claims]]\nepsilon = 0.7\n"))
    header = next(line for line in str(result).splitlines() if line.startswith("checked"))
    assert header.split() == ["checked", "certified", "exact", "from", "verdict"]


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
