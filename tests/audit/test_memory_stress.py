"""Stress test of the memory guard (issue 18): every input that was killed by the kernel or ran past
``--memory-limit`` is run again in a subprocess, under ``--memory-limit 500MB`` on the command line and
``chainamp.resource_limits(memory="500MB")`` in Python, with a hard ``ulimit -v`` of 3 GB set in the child
(so a regression fails the test instead of taking the machine down). Each must either refuse -- exit code
2 and exactly one line on stderr, within seconds -- or compute within the limit; either way its peak
resident memory (``ru_maxrss`` of that child, from ``os.wait4``) stays below the limit plus the
interpreter's own base, measured the same way.

The command-line cases run by default, each in a child forked from one server process that has imported
what every case imports (``FORK_SERVER``: a fresh interpreter and its imports were most of each case's ~1 s of
CPU); the child sets its own safety net, runs ``python -m chainamp ...`` there (``runpy``, as ``-m`` does) and
its peak RSS is compared with the base of a child forked from the same server doing nothing. The Python API
cases repeat them through the library, each in a fresh interpreter, and are marked slow; so is
``test_cli_case_in_a_fresh_interpreter``, which runs every command-line case as a plain subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

resource = pytest.importorskip("resource")

LIMIT = "500MB"
LIMIT_BYTES = 500e6
SAFETY_NET = 3 << 30  # ulimit -v in every child: a regression raises MemoryError there, not on the machine
SECONDS = 20.0  # wall time per case on a loaded 2-core machine (each takes 1-8 s idle, imports included)
ROOT = Path(__file__).resolve().parents[2]


def _net() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (SAFETY_NET, SAFETY_NET))


def run_child(argv: list[str], cwd: Path) -> tuple[int, str, str, float, float]:
    """``(exit code, stdout, stderr, seconds, peak RSS in bytes)`` of a child under the safety net."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *argv], stdout=out, stderr=err, cwd=cwd, env=env,
                                preexec_fn=_net)
        try:
            _, status, usage = _wait(proc.pid, start)
        finally:
            if proc.returncode is None and proc.poll() is None:
                proc.kill()
                proc.wait()
        elapsed = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        return code, out.read().decode(), err.read().decode(), elapsed, usage.ru_maxrss * 1024.0


def _wait(pid: int, start: float):
    """``os.wait4`` with a deadline (a hung child is killed and reported)."""
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got:
            return got, status, usage
        if time.perf_counter() - start > 4 * SECONDS:
            os.kill(pid, 9)
            pytest.fail(f"the child ran longer than {4 * SECONDS:.0f} s")
        time.sleep(0.02)


#: What every case imports: the base of a fresh interpreter (``base``) and what the fork server holds.
BASE_IMPORTS = "import chainamp.audit.cli, dp_accounting.pld, networkx, scipy.sparse.linalg"

#: One process that imports ``BASE_IMPORTS`` once, then for each JSON line on stdin ``{"argv", "cwd", "out", "err"}``
#: forks a child that sets the safety net, moves to ``cwd``, writes stdout and stderr to the two files and runs
#: ``python -m chainamp <argv>`` (``argv`` null: exits 0 at once, the base); it answers one JSON line
#: ``{"status", "seconds", "maxrss"}`` from ``os.wait4`` (a child past the deadline is killed: ``"status": null``).
FORK_SERVER = BASE_IMPORTS + """
import json, os, resource, runpy, sys, time, traceback
net, deadline = int(sys.argv[1]), float(sys.argv[2])
for line in sys.stdin:
    job = json.loads(line)
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            resource.setrlimit(resource.RLIMIT_AS, (net, net))
            os.chdir(job["cwd"])
            for fd, name in ((1, job["out"]), (2, job["err"])):
                os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            code = 0
            if job["argv"] is not None:
                sys.argv = ["chainamp", *job["argv"]]
                try:
                    runpy.run_module("chainamp", run_name="__main__", alter_sys=True)
                except SystemExit as exc:  # as the interpreter does: None is 0, a non-integer is printed, exit 1
                    if exc.code is None or isinstance(exc.code, int):
                        code = exc.code or 0
                    else:
                        print(exc.code, file=sys.stderr)
                        code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:
                    pass
            os._exit(code)
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got:
            break
        if time.perf_counter() - start > deadline:
            os.kill(pid, 9)
            os.wait4(pid, 0)
            status = None
            break
        time.sleep(0.02)
    print(json.dumps({"status": status, "seconds": time.perf_counter() - start,
                      "maxrss": usage.ru_maxrss * 1024.0 if got else 0.0}), flush=True)
"""


@pytest.fixture(scope="module")
def fork_server():
    """A started ``FORK_SERVER`` (the checkout first on its path), stopped after the module."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.Popen([sys.executable, "-c", FORK_SERVER, str(SAFETY_NET), str(4 * SECONDS)], cwd=ROOT,
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # pragma: no cover - a server that hangs is killed
            proc.kill()
            proc.wait()


def run_forked(server, argv: list[str] | None, cwd: Path) -> tuple[int, str, str, float, float]:
    """``run_child`` for ``python -m chainamp <argv>`` in a child forked from ``server`` (same tuple)."""
    with tempfile.TemporaryDirectory() as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        server.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "out": out, "err": err}) + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
        assert line, "the fork server died"
        answer = json.loads(line)
        if answer["status"] is None:
            pytest.fail(f"the child ran longer than {4 * SECONDS:.0f} s")
        with open(out, encoding="utf-8") as fo, open(err, encoding="utf-8") as fe:
            return (os.waitstatus_to_exitcode(answer["status"]), fo.read(), fe.read(), answer["seconds"],
                    answer["maxrss"])


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> float:
    """The interpreter's own peak RSS with chainamp's command line, dp-accounting and networkx imported."""
    rc, _, err, _, peak = run_child(["-c", BASE_IMPORTS], tmp_path_factory.mktemp("base"))
    assert rc == 0, err
    return peak


@pytest.fixture(scope="module")
def forked_base(fork_server, tmp_path_factory) -> float:
    """The peak RSS of a child forked from the server that does nothing: the base of ``run_forked``'s children."""
    rc, _, err, _, peak = run_forked(fork_server, None, tmp_path_factory.mktemp("forked-base"))
    assert rc == 0, err
    return peak


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("stress")
    head = 'format = "chainamp-pipeline/1"\n'
    (d / "complete.toml").write_text(head + 'mechanism = {epsilon = 1.0}\n[[steps]]\ngraph = "complete_graph"\n'
                                            "n = 100000\nlaziness = 0.5\n")
    rr = 'catalogue = "randomized_response"\nk = 9223372036854775807\nepsilon = 1.0\n'
    (d / "rr.toml").write_text(head + "[mechanism]\n" + rr + "[[steps]]\n" + rr)
    pair = [[0] * 30, [1] + [0] * 29]
    (d / "kron30.toml").write_text(head + 'mechanism = {catalogue = "rappor_pipeline", m = 30, h = 1, part = '
                                          f'"permanent"}}\nneighbors = [{pair}]\n[[steps]]\ncatalogue = '
                                          '"rappor_pipeline"\nm = 30\nh = 1\npart = "instantaneous"\n')
    (d / "kron1000.toml").write_text(head + "mechanism = {epsilon = 1.0, delta = 1e-6}\n[[steps]]\ncatalogue = "
                                            '"rappor_pipeline"\nm = 1000\nh = 1\npart = "instantaneous"\n')
    (d / "pld.toml").write_text(head + "mechanism = {matrix = [[0.5, 0.5], [1e-300, 1.0]]}\nreports = 200\n"
                                       "memoized = false\n[[steps]]\nmatrix = [[1.0, 0.0], [0.0, 1.0]]\n")
    np.save(d / "big.npy", np.full((3000, 3000), 1.0 / 3000))  # 72 MB
    with open(d / "huge.npy", "wb") as fh:  # a header promising 20000 x 20000 doubles (3.2 GB; a sparse file)
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": (20000, 20000)})
        fh.truncate(fh.tell() + 8 * 20000 * 20000)
    return d


# (id, argv after "-m chainamp", expected exit code, text in the one line of a refusal)
CLI_CASES = [
    ("complete-graph-100000", ["audit", "complete.toml"], 0, None),
    ("rr-k-int64-max", ["audit", "rr.toml"], 0, None),
    # the 0-1 loss with a uniform prior is invariant under relabelling: the closed form needs no table
    ("design-100000-states", ["design", "--states", "100000", "--gamma", "0.5"], 0, None),
    ("coefficients-72MB-under-10MB", ["coefficients", "big.npy", "--memory-limit", "10MB"], 2,
     "big.npy: reading the 3000 x 3000 float64 matrix and building its operator needs about"),
    ("coefficients-72MB", ["coefficients", "big.npy"], 2, "the chain analysis of a dense 3000-state operator"),
    ("coefficients-3GB-header", ["coefficients", "huge.npy"], 2, "huge.npy: reading the 20000 x 20000 float64"),
    ("kron-30-one-pair", ["audit", "kron30.toml"], 0, None),
    ("kron-1000", ["audit", "kron1000.toml"], 2, "the 1001 pair orbits of a Kronecker product of 1000 coordinates"),
    ("compose-200-extreme", ["audit", "pld.toml"], 2, "items[0] composed 200 times (dp-accounting's FFT"),
]


def check(result: tuple, expected: int, text: str | None, base: float, command: str) -> None:
    code, out, err, seconds, peak = result
    assert code == expected, f"exit {code}: {err[-2000:]}"
    assert "Traceback" not in err, err
    if expected == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert text in lines[0] and lines[0].startswith(command), lines[0]
    assert seconds < SECONDS, seconds
    assert peak < LIMIT_BYTES + base, f"peak RSS {peak / 1e6:.0f} MB above {LIMIT} + the base {base / 1e6:.0f} MB"


def _cli_argv(argv: list[str]) -> list[str]:
    extra = [] if "--memory-limit" in argv else ["--memory-limit", LIMIT]
    return [*argv, *extra, "--no-progress"]


@pytest.mark.parametrize("argv, expected, text", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_refuses_or_computes_within_the_limit(files, fork_server, forked_base, argv, expected, text):
    result = run_forked(fork_server, _cli_argv(argv), files)
    check(result, expected, text, forked_base, f"chainamp {argv[0]}: error: ")


def test_the_fork_server_runs_what_python_dash_m_runs(fork_server, tmp_path):
    """The forked children are not vacuous: a usage error exits 2 with chainamp's one line, a bad file 2, the
    demo 0 with its output; and the base is that of a process holding the imports (tens of MB at least)."""
    code, out, err, _, peak = run_forked(fork_server, [], tmp_path)
    assert code == 2 and err.startswith("chainamp: error: missing COMMAND"), (code, err)
    code, _, err, _, _ = run_forked(fork_server, ["audit", "missing.toml"], tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)
    assert peak > 30e6


@pytest.mark.slow  # the same cases as test_cli_refuses_or_computes_within_the_limit, each in a new interpreter
@pytest.mark.parametrize("argv, expected, text", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_case_in_a_fresh_interpreter(files, base, argv, expected, text):
    result = run_child(["-m", "chainamp", *_cli_argv(argv)], files)
    check(result, expected, text, base, f"chainamp {argv[0]}: error: ")


# Python API: each case under chainamp.resource_limits(memory="500MB"); a refusal prints one line, exit 2
_PRELUDE = """
import sys, numpy as np, networkx as nx, chainamp as ca, chainamp.io
from chainamp import ResourceLimitError
from chainamp.operators import KroneckerOperator
F = ca.MarkovOperator([[0.3, 0.7], [0.6, 0.4]])
try:
    with ca.resource_limits(memory=%r):
%s
except ResourceLimitError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
"""
API_CASES = [
    ("complete-graph", "ca.io.parse_pipeline({'format': ca.io.FORMAT, 'mechanism': {'epsilon': 1.0}, 'steps': "
                       "[{'graph': 'complete_graph', 'n': 100000}]})", 0, None),
    ("rr-k-int64-max", "rr = {'catalogue': 'randomized_response', 'k': 2**63 - 1, 'epsilon': 1.0}\n"
                       "ca.io.audit(ca.io.parse_pipeline({'format': ca.io.FORMAT, 'mechanism': rr, 'steps': [rr]}))",
     0, None),
    ("design-100000-states", "from chainamp.design import optimal_mixing_operator\n"
                             "optimal_mixing_operator(100000, 0.5, symmetry=False)", 2,
     "loss, cost and operator tables"),
    ("kron-30-profile", "ca.privacy_profile(KroneckerOperator.power(F, 30), [((0,) * 30, (1,) + (0,) * 29)])",
     0, None),
    ("kron-1000-dobrushin", "ca.dobrushin(KroneckerOperator.power(F, 1000), 0.5)", 2,
     "the 1001 pair orbits of a Kronecker product"),
    ("compose-200-extreme", "ca.compose([np.array([[0.5, 0.5], [1e-300, 1.0]])], counts=[200], progress=False)", 2,
     "items[0] composed 200 times"),
]


@pytest.mark.slow
@pytest.mark.parametrize("body, expected, text", [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_python_api_refuses_or_computes_within_the_limit(tmp_path, base, body, expected, text):
    script = _PRELUDE % (LIMIT, textwrap.indent(body, " " * 8))
    check(run_child(["-c", script], tmp_path), expected, text, base, "")
