"""The command line under memory limits and with progress output (issue 10, items 4 and 5):
``--memory-limit`` on every command that computes, refusals and ``MemoryError`` as one line with
exit code 2 (never 1, which means "claim not certified"), ``--no-progress``, and plain progress
lines on a stderr that is not a terminal."""

from __future__ import annotations

import io
import subprocess
import sys
import time

import pytest

import chainamp
from chainamp._numerics import memory_limit
from chainamp._numerics import progress as P
from chainamp.audit import cli_progress
from chainamp.audit.cli import EXIT_INVALID, EXIT_OK, main
from chainamp.errors import ResourceLimitError
from conftest import PIPELINE_HEAD as HEAD
from conftest import TWO_STAGE_RR
from test_cli import run, write

GOOD = HEAD + TWO_STAGE_RR + "[[claims]]\nepsilon = 0.7\n"
KRON = HEAD + 'mechanism = {epsilon = 1.0}\n[[steps]]\nmatrix = [[0.75, 0.25], [0.25, 0.75]]\nkron = 8\n'
COMMANDS = ["demo", "audit", "coefficients", "amplify", "design"]


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def argv_of(tmp_path):
    """A valid command line for each command (fast inputs)."""
    rr = write(tmp_path, "K.csv", "0.75,0.25\n0.25,0.75\n")
    pipeline = write(tmp_path, "p.toml", GOOD)
    return {"demo": ["demo"], "audit": ["audit", pipeline], "coefficients": ["coefficients", rr],
            "amplify": ["amplify", "--epsilon", "1", rr], "design": ["design", "--states", "2", "--gamma", "0.5"]}


# --------------------------------------------------------------------------- --memory-limit
@pytest.mark.parametrize("command", COMMANDS)
def test_every_computing_command_documents_the_run_options(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--memory-limit SIZE" in text and "--no-progress" in text and "half the memory available" in text


@pytest.mark.parametrize("value, expected", [("4GiB", 4 * 2.0**30), ("500MB", 5e8), ("2000000000", 2e9),
                                             ("none", float("inf"))], ids=["gib", "mb", "bytes", "none"])
def test_memory_limit_is_set_around_the_work(tmp_path, capsys, monkeypatch, value, expected):
    from chainamp.audit import io as cio

    seen = []
    real = cio.audit
    monkeypatch.setattr(cio, "audit", lambda p, **kw: (seen.append(memory_limit()), real(p, **kw))[1])
    code, _, _ = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD), "--memory-limit", value])
    assert code == EXIT_OK and seen == [expected]


def test_memory_limit_is_restored_after_the_command(tmp_path, capsys):
    before = chainamp._numerics.resources._LIMIT.get()
    run(capsys, ["audit", write(tmp_path, "p.toml", GOOD), "--memory-limit", "1GiB"])
    assert chainamp._numerics.resources._LIMIT.get() == before


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("value, expected", [
    ("lots", "must be a number of bytes or a size like '4GiB', '500MB' or 'none' (got 'lots')"),
    ("0", "must be a positive number of bytes (got '0')"),
    ("-2GB", "(got '-2GB')"),
], ids=["word", "zero", "negative"])
def test_bad_memory_limit_is_one_line_exit_2(capsys, argv_of, command, value, expected):
    with pytest.raises(SystemExit) as info:
        main(argv_of[command] + [f"--memory-limit={value}"])
    assert info.value.code == EXIT_INVALID
    line = one_line(capsys.readouterr().err)
    assert "argument --memory-limit:" in line and expected in line and "--help" in line


# --------------------------------------------------------------------------- refusals and MemoryError
def test_a_refused_pipeline_step_is_one_line_exit_2(tmp_path, capsys):
    start = time.perf_counter()
    code, out, err = run(capsys, ["audit", write(tmp_path, "k.toml", KRON), "--memory-limit", "300KB"])
    assert code == EXIT_INVALID and out == ""
    line = one_line(err)
    assert line.startswith("chainamp audit: error: steps[0].kron: the product of 8 copies of a 2x2 operator")
    assert "needs about 624 KiB, above the memory limit of 293 KiB" in line
    assert "pass --memory-limit SIZE (e.g. 8GiB, or none) to go past it" in line
    assert "memory_limit=" not in line  # the library's advice is reworded for the command line
    assert time.perf_counter() - start < 2.0


def test_the_same_pipeline_runs_with_a_larger_limit(tmp_path, capsys):
    code, _, err = run(capsys, ["audit", write(tmp_path, "k.toml", KRON), "--memory-limit", "none",
                                "--no-progress"])
    assert code == EXIT_OK and err == ""


@pytest.mark.parametrize("exc, expected", [
    (MemoryError("Unable to allocate 3.72 GiB for an array with shape (499500, 1000) and data type float64"),
     "error: out of memory: Unable to allocate 3.72 GiB for an array with shape (499500, 1000)"),
    (MemoryError(), "error: out of memory; this input needs more memory"),
    (ResourceLimitError("the dense 9 x 9 matrix needs about 1 GiB, above the memory limit of 1 KiB; pass "
                        "memory_limit=... (bytes, '8GiB' or 'none') or use chainamp.resource_limits(memory=...) "
                        "to go past it"),
     "error: the dense 9 x 9 matrix needs about 1 GiB, above the memory limit of 1 KiB; pass --memory-limit SIZE"),
], ids=["numpy", "bare", "refused"])
@pytest.mark.parametrize("command", ["audit", "coefficients", "amplify", "design", "demo"])
def test_memory_errors_anywhere_are_one_line_exit_2_never_1(capsys, monkeypatch, argv_of, command, exc, expected):
    def boom(*args, **kwargs):
        raise exc

    from chainamp.audit import io as cio
    from chainamp import design

    target = {"audit": (cio, "audit"), "coefficients": (chainamp, "dobrushin"), "amplify": (chainamp, "amplify"),
              "design": (design, "optimal_mixing_operator"), "demo": (chainamp, "dobrushin")}[command]
    monkeypatch.setattr(*target, boom)
    code, out, err = run(capsys, argv_of[command])
    assert code == EXIT_INVALID
    line = one_line(err)
    assert line.startswith(f"chainamp {command}: error: ") and expected in line


def test_a_real_out_of_memory_subprocess_exits_2_with_one_line(tmp_path):
    """A process that cannot allocate (``ulimit -v``) gets one line and exit 2, not a traceback and 1."""
    pytest.importorskip("resource")
    pipeline = write(tmp_path, "p.toml", GOOD)
    code = ("import resource, sys, numpy as np; from chainamp.audit import cli, io as cio; "
            "hard = resource.getrlimit(resource.RLIMIT_AS)[1]; "  # kept: raising it fails under a hard ulimit -v
            "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, hard)); real = cio.audit; "
            "cio.audit = lambda p, **k: (np.empty((1 << 30,)), real(p, **k)); "
            "sys.exit(cli.main(['audit', sys.argv[1], '--no-progress']))")
    proc = subprocess.run([sys.executable, "-c", code, pipeline], capture_output=True, text=True, timeout=120)
    assert proc.returncode == EXIT_INVALID, proc.stderr
    line = one_line(proc.stderr)
    assert line.startswith("chainamp audit: error: out of memory: Unable to allocate 8")


# --------------------------------------------------------------------------- progress
@pytest.fixture
def fast_progress(monkeypatch):
    monkeypatch.setattr(P, "PROGRESS_DELAY", 0.02)
    monkeypatch.setattr(P, "PROGRESS_LINE_INTERVAL", 0.02)


def _slow_audit(monkeypatch, pause=0.08):
    """The real audit with a pause at each stage (so a tiny run lasts long enough to show progress)."""
    from chainamp.audit import io as cio

    real = cio.audit

    def slow(pipeline, progress=None):
        def say(text):
            progress(text)
            time.sleep(pause)

        return real(pipeline, progress=say)

    monkeypatch.setattr(cio, "audit", slow)


def test_progress_lines_on_a_non_tty_stderr(tmp_path, capsys, monkeypatch, fast_progress):
    _slow_audit(monkeypatch)
    code, out, err = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD)])
    assert code == EXIT_OK and "all 1 claim(s) certified" in out
    lines = err.splitlines()
    assert lines and all(line.startswith("audit p.toml: ") for line in lines), err
    assert "\r" not in err and "\x1b" not in err
    assert any("amplify" in line for line in lines) and any("claim 1 of 1" in line for line in lines)
    assert lines[-1].startswith("audit p.toml: 2 stage [")
    assert "/?" not in err and "<" not in err  # an open total shows no "2/?" and no remaining "<00:00"


def test_no_progress_turns_it_off(tmp_path, capsys, monkeypatch, fast_progress):
    _slow_audit(monkeypatch)
    code, _, err = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD), "--no-progress"])
    assert code == EXIT_OK and err == ""


def test_fast_commands_print_no_progress(tmp_path, capsys):
    code, _, err = run(capsys, ["audit", write(tmp_path, "p.toml", GOOD)])
    assert code == EXIT_OK and err == ""


def test_coefficients_stages_in_lines(capsys, monkeypatch, argv_of, fast_progress):
    real = chainamp.doeblin
    monkeypatch.setattr(chainamp, "doeblin", lambda K: (time.sleep(0.1), real(K))[1])
    code, _, err = run(capsys, argv_of["coefficients"] + ["--epsilon", "1"])
    assert code == EXIT_OK
    assert any("Doeblin, ultra-mixing" in line for line in err.splitlines())
    assert err.splitlines()[-1].startswith("coefficients: 5/5 stage")


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("flag, stream, mode", [
    (False, _Terminal(), "auto"), (False, io.StringIO(), "lines"), (True, _Terminal(), "off"),
    (True, io.StringIO(), "off")], ids=["tty", "pipe", "tty-off", "pipe-off"])
def test_progress_mode_follows_the_terminal_and_the_flag(flag, stream, mode):
    import argparse

    assert cli_progress.progress_mode_for(argparse.Namespace(no_progress=flag), stream) == mode


def test_a_terminal_gets_tqdm_bars(tmp_path, monkeypatch, fast_progress):
    """On a terminal the stage bar is tqdm's, redrawn in place with carriage returns."""
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    _slow_audit(monkeypatch)
    assert main(["audit", write(tmp_path, "p.toml", GOOD), "--json"]) == EXIT_OK
    assert "\r" in term.getvalue() and "audit p.toml" in term.getvalue()


def test_stages_count_and_validate():
    with cli_progress.Stages("x", 2, progress=False) as stages:
        stages.update("a")
        assert stages.done == 0 and stages.current == "a"
        stages.update("b")
    assert stages.done == 2
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        cli_progress.Stages("x", progress="on").__enter__()
