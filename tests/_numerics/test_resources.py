"""Memory limits: parsing sizes, the limit in force (keyword > resource_limits block > default), the
refusal's message, and the available memory as the process's own limits lower it."""

from __future__ import annotations

import math
import threading

import pytest

import chainamp
from chainamp._numerics import (MEMORY_LIMIT_FRACTION, available_memory, check_memory, check_memory_limit,
                                fmt_bytes, memory_limit, parse_bytes, resource_limits)
from chainamp._numerics import resources
from chainamp.errors import ChainampError, InvalidParameterError, ResourceLimitError


# --------------------------------------------------------------------------- parse_bytes
@pytest.mark.parametrize("value, expected", [
    (1024, 1024.0), (1.5, 1.5), ("512", 512.0), ("4GiB", 4 * 2.0**30), ("4 gib", 4 * 2.0**30), ("1.5GB", 1.5e9),
    ("500MB", 5e8), ("2MiB", 2 * 2.0**20), ("3k", 3 * 1024.0), ("1kb", 1000.0), ("1e3", 1000.0), ("2t", 2.0**41),
    ("10b", 10.0), (" 7 MiB ", 7 * 2.0**20), ("none", math.inf), ("INF", math.inf), ("off", math.inf),
    ("unlimited", math.inf), (math.inf, math.inf)],
    ids=lambda v: repr(v))
def test_parse_bytes_accepts_numbers_units_and_no_limit(value, expected):
    assert parse_bytes(value) == expected


@pytest.mark.parametrize("value, error, match", [
    (True, TypeError, r"memory_limit must be a number of bytes or a string like '4GiB' \(got True\)"),
    (None, TypeError, r"memory_limit must be a number of bytes .*\(got None\)"),
    ([1], TypeError, r"got \[1\]"),
    ("4 parsecs", InvalidParameterError, r"memory_limit must be a number of bytes or a size like '4GiB', '500MB' "
                                         r"or 'none' \(got '4 parsecs'\)"),
    ("-1GB", InvalidParameterError, r"got '-1GB'"),
    ("", InvalidParameterError, r"got ''"),
    (0, InvalidParameterError, r"memory_limit must be a positive number of bytes \(got 0\)"),
    (-5.0, InvalidParameterError, r"positive number of bytes \(got -5.0\)"),
    ("0MB", InvalidParameterError, r"positive number of bytes \(got '0MB'\)"),
    (float("nan"), InvalidParameterError, r"positive number of bytes \(got nan\)"),
], ids=["bool", "none", "list", "unit", "negative-text", "empty", "zero", "negative", "zero-text", "nan"])
def test_parse_bytes_refuses_with_the_value_named(value, error, match):
    with pytest.raises(error, match=match):
        parse_bytes(value)


def test_parse_bytes_names_the_argument():
    with pytest.raises(InvalidParameterError, match=r"^--memory-limit must be"):
        parse_bytes("lots", "--memory-limit")


def test_check_memory_limit_none_is_the_default_and_values_are_parsed():
    assert check_memory_limit(None) is None
    assert check_memory_limit("1KiB") == 1024.0
    with pytest.raises(InvalidParameterError, match="memory_limit must be a positive"):
        check_memory_limit(-1)


# --------------------------------------------------------------------------- precedence
def test_default_is_a_fraction_of_the_available_memory(monkeypatch):
    monkeypatch.setattr(resources, "available_memory", lambda: 1000)
    assert MEMORY_LIMIT_FRACTION == 0.5
    assert memory_limit() == 500.0


def test_keyword_beats_block_beats_default(monkeypatch):
    monkeypatch.setattr(resources, "available_memory", lambda: 1000)
    with resource_limits(memory=300) as inside:
        assert inside == 300.0 and memory_limit() == 300.0
        assert memory_limit(200) == 200.0  # the keyword wins
        with resource_limits(memory="none"):
            assert memory_limit() == math.inf  # the innermost block wins
        assert memory_limit() == 300.0  # restored on exit
    assert memory_limit() == 500.0


def test_resource_limits_none_keeps_the_default_and_is_restored_after_an_error(monkeypatch):
    monkeypatch.setattr(resources, "available_memory", lambda: 1000)
    with resource_limits(memory=None) as inside:
        assert inside == 500.0
    with pytest.raises(RuntimeError):
        with resource_limits(memory=10):
            raise RuntimeError("inside")
    assert memory_limit() == 500.0


def test_resource_limits_validates_its_argument():
    with pytest.raises(InvalidParameterError, match=r"^memory must be a number of bytes or a size"):
        with resource_limits(memory="big"):
            pass  # pragma: no cover
    with pytest.raises(TypeError, match=r"^memory must be"):
        with resource_limits(memory=False):
            pass  # pragma: no cover


def test_resource_limits_is_per_thread_context():
    seen = []
    with resource_limits(memory=123):
        t = threading.Thread(target=lambda: seen.append(memory_limit(None)))
        t.start()
        t.join()
        assert memory_limit() == 123.0
    assert seen and seen[0] != 123.0  # a new thread starts from the default, not from another thread's block


def test_top_level_names():
    assert chainamp.resource_limits is resource_limits
    assert issubclass(chainamp.ResourceLimitError, ChainampError) and issubclass(ResourceLimitError, MemoryError)


# --------------------------------------------------------------------------- check_memory
def test_check_memory_passes_under_and_at_the_limit():
    check_memory(1.0, "tiny", memory_limit=1)
    check_memory(1024, "exactly the limit", memory_limit="1KiB")
    check_memory(1e30, "anything", memory_limit="none")


@pytest.mark.parametrize("nbytes", [1025, math.inf, float("nan")], ids=["above", "inf", "nan"])
def test_check_memory_refuses_above_the_limit_and_unknown_estimates(nbytes):
    with pytest.raises(ResourceLimitError, match="a test array needs about"):
        check_memory(nbytes, "a test array", memory_limit="1KiB")


def test_refusal_message_names_estimate_operation_limit_and_way_past():
    with pytest.raises(ResourceLimitError) as info:
        check_memory(3 * 2**30, "the dense 20000 x 20000 matrix", memory_limit="1GiB", hint="use a sparse operator")
    text = str(info.value)
    assert text.startswith("the dense 20000 x 20000 matrix needs about 3 GiB, above the memory limit of 1 GiB;")
    assert "use a sparse operator;" in text
    assert "memory_limit=" in text and "chainamp.resource_limits(memory=...)" in text
    assert "half the available memory" not in text  # a limit the caller chose is not the default
    assert "\n" not in text


def test_refusal_under_the_default_says_so(monkeypatch):
    monkeypatch.setattr(resources, "available_memory", lambda: 2048)
    with pytest.raises(ResourceLimitError, match=r"above the memory limit of 1 KiB \(half the available memory\)"):
        check_memory(4096, "x")


def test_block_limit_is_used_by_check_memory():
    with resource_limits(memory="1KiB"):
        with pytest.raises(ResourceLimitError, match=r"limit of 1 KiB; pass"):
            check_memory(2048, "x")
        check_memory(2048, "x", memory_limit="2KiB")  # the keyword still wins


def test_check_memory_validates_its_keyword():
    with pytest.raises(InvalidParameterError, match="memory_limit must be a positive"):
        check_memory(1, "x", memory_limit=0)


# --------------------------------------------------------------------------- fmt_bytes
@pytest.mark.parametrize("n, text", [(0, "0 B"), (512, "512 B"), (1536, "1.5 KiB"), (3.72 * 2**30, "3.72 GiB"),
                                     (2.0**50 * 3, "3 PiB"), (2.0**60, "1.02e+03 PiB"), (math.inf, "no limit")],
                         ids=["zero", "bytes", "kib", "gib", "pib", "beyond", "inf"])
def test_fmt_bytes(n, text):
    assert fmt_bytes(n) == text


# --------------------------------------------------------------------------- available memory
def test_available_memory_is_lowered_by_the_process_limits(monkeypatch):
    monkeypatch.setattr(resources, "_system_available", lambda: 10_000)
    monkeypatch.setattr(resources, "_process_limits", lambda: [])
    assert available_memory() == 10_000
    monkeypatch.setattr(resources, "_process_limits", lambda: [(4_000, 1_000), (9_000, 0)])
    assert available_memory() == 3_000  # the address-space limit minus what is already mapped
    monkeypatch.setattr(resources, "_process_limits", lambda: [(1_000, 5_000)])
    assert available_memory() == 0  # never negative


def test_process_limits_read_the_address_space_rlimit(monkeypatch):
    resource = pytest.importorskip("resource")
    monkeypatch.setattr(resource, "getrlimit",
                        lambda which: (4 << 30, resource.RLIM_INFINITY) if which == resource.RLIMIT_AS
                        else (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    limits = resources._process_limits()
    assert any(limit == 4 << 30 and 0 < used < 4 << 30 for limit, used in limits)  # used: this process's VmSize


def test_subprocess_under_prlimit_sees_the_limit():
    """``prlimit --as`` (``ulimit -v``) lowers what chainamp counts as available, hence its default limit."""
    import subprocess
    import sys

    # the hard limit is kept as it is (raising it fails when the run itself is under a hard ``ulimit -v``)
    code = ("import resource; hard = resource.getrlimit(resource.RLIMIT_AS)[1]; "
            "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, hard)); "
            "from chainamp._numerics import available_memory; print(available_memory())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert 0 < int(out.stdout) < 3 << 30


@pytest.mark.parametrize("limit, usage, expected", [(8 << 30, 3 << 30, [(8 << 30, 3 << 30)]), (None, 5, []),
                                                    (1 << 62, 5, [])], ids=["limited", "max", "v1-no-limit"])
def test_a_cgroup_limit_counts_minus_its_usage(monkeypatch, limit, usage, expected):
    monkeypatch.setattr(resources, "_CGROUP", [[("memory.max", "memory.current")]])
    monkeypatch.setattr(resources, "_read_int", lambda path: limit if path == "memory.max" else usage)
    monkeypatch.setattr(resources, "_status_bytes", lambda key: 0)
    found = [pair for pair in resources._process_limits() if pair[0] in (8 << 30, 1 << 62, None)]
    assert found == expected


def test_cgroup_files_keep_only_files_that_set_a_limit(monkeypatch):
    monkeypatch.setattr(resources, "_CGROUP", [])
    values = {"/sys/fs/cgroup/memory.max": None, "/sys/fs/cgroup/memory/memory.limit_in_bytes": 2 << 30}
    monkeypatch.setattr(resources, "_read_int", lambda path: values.get(path))
    assert resources._cgroup_files() == [("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")]


@pytest.mark.parametrize("data, key, expected", [
    (b"MemAvailable:  2048 kB\nMemFree: 1 kB\n", "MemAvailable", 2048 * 1024),   # first line
    (b"MemFree: 1 kB\nMemAvailable:  3 kB", "MemAvailable", 3 * 1024),            # last line, no newline
    (b"VmSizeX: 9 kB\nVmSize: 5 kB\n", "VmSize", 5 * 1024),                        # a longer key is not a match
], ids=["first", "last-no-newline", "prefix-key"])
def test_kb_field_reads_the_named_line(data, key, expected):
    from chainamp._numerics.resources import _kb_field

    assert _kb_field(data, key) == expected


def test_kb_field_absent_raises():
    from chainamp._numerics.resources import _kb_field

    with pytest.raises(ValueError, match="no MemAvailable line"):
        _kb_field(b"MemFree: 1 kB\nXMemAvailable: 2 kB\n", "MemAvailable")
