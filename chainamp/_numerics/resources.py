"""Refuse before exhausting the machine: memory estimates checked against a limit.

Every computation that may allocate a large array or run a long scan estimates its
peak memory first and calls :func:`check_memory`, which raises
:class:`~chainamp.ResourceLimitError` *before* anything is allocated when the estimate
exceeds the limit. The limit is, by order of precedence:

1. the ``memory_limit=`` keyword of the call (bytes, or ``math.inf`` to switch the check off);
2. the innermost :func:`resource_limits` block (the CLI's ``--memory-limit`` sets one);
3. the default: ``MEMORY_LIMIT_FRACTION`` (one half) of the memory available when the check runs.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
from collections.abc import Iterator
from typing import Any

from ..errors import InvalidParameterError, ResourceLimitError

__all__ = ["MEMORY_LIMIT_FRACTION", "available_memory", "memory_limit", "check_memory", "resource_limits",
           "parse_bytes", "fmt_bytes", "check_memory_limit"]

#: Default memory limit of any one computation, as a fraction of the memory available when it starts.
MEMORY_LIMIT_FRACTION = 0.5

_LIMIT: contextvars.ContextVar[float | None] = contextvars.ContextVar("chainamp_memory_limit", default=None)

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 1000**2, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1000**3, "gib": 1 << 30, "t": 1 << 40, "tb": 1000**4, "tib": 1 << 40}


def available_memory() -> int:
    """Bytes of memory available to a new allocation now.

    The memory the system reports available (``MemAvailable`` on Linux, else the free physical
    pages), lowered to what is left under the process's own limits: the address-space and data
    limits (``ulimit -v``, ``prlimit --as``: limit minus the current ``VmSize``/``VmData``) and a
    cgroup memory limit (containers: ``memory.max`` minus ``memory.current``). Never negative.

    Examples
    --------
    >>> available_memory() > 0
    True
    """
    free = _system_available()
    for limit, used in _process_limits():
        free = min(free, max(limit - used, 0))
    return int(free)


def _read_bytes(path: str) -> bytes:
    """The whole file at ``path`` (``/proc`` files: a few kB) in one ``os.read`` loop: without the text layer of
    ``open``, about half the cost of each memory check, which runs before every sized allocation."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _kb_field(data: bytes, key: str) -> int:
    """The ``kB`` value of the line ``key: <n> kB`` of a ``/proc`` file, in bytes (ValueError when absent)."""
    tag = key.encode("ascii") + b":"
    start = 0 if data.startswith(tag) else data.find(b"\n" + tag) + 1
    if start == 0 and not data.startswith(tag):
        raise ValueError(f"no {key} line")
    end = data.find(b"\n", start)
    return int(data[start:end if end >= 0 else len(data)].split()[1]) * 1024


def _system_available() -> int:
    try:
        return _kb_field(_read_bytes("/proc/meminfo"), "MemAvailable")
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 << 30


def _status_bytes(key: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` (``VmSize``, ``VmData``) in bytes; 0 when unknown."""
    try:
        return _kb_field(_read_bytes("/proc/self/status"), key)
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" (cgroup v2): no limit


_CGROUP: list = []


def _cgroup_files() -> list[tuple[str, str]]:
    """The cgroup (v2, then v1) memory limit and usage files that set a limit, looked up once per process
    (a container's limit is fixed when it starts; reading files that say "no limit" at every check costs)."""
    if not _CGROUP:
        pairs = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))
        _CGROUP.append([pair for pair in pairs if (_read_int(pair[0]) or 1 << 62) < (1 << 60)])
    return _CGROUP[0]


def _process_limits() -> list[tuple[int, int]]:
    """``(limit, used)`` pairs in bytes for every limit set on this process (rlimits, cgroup)."""
    out = []
    try:
        import resource

        for which, key in ((resource.RLIMIT_AS, "VmSize"), (getattr(resource, "RLIMIT_DATA", None), "VmData")):
            if which is None:  # pragma: no cover - a platform without RLIMIT_DATA
                continue
            soft = resource.getrlimit(which)[0]
            if soft != resource.RLIM_INFINITY and soft > 0:
                out.append((int(soft), _status_bytes(key)))
    except (ImportError, OSError, ValueError):  # pragma: no cover - non-POSIX
        pass
    for limit_file, usage_file in _cgroup_files():
        limit = _read_int(limit_file)  # cgroup v2 writes "max", v1 a huge number, for "no limit"
        if limit is not None and limit < (1 << 60):
            out.append((limit, _read_int(usage_file) or 0))
    return out


def parse_bytes(value: Any, name: str = "memory_limit") -> float:
    """A byte count from an int, a float, ``inf``/``"none"`` (no limit) or a string like ``"4GiB"``.

    Examples
    --------
    >>> parse_bytes("4GiB"), parse_bytes("1.5 GB"), parse_bytes(1024), parse_bytes("none")
    (4294967296.0, 1500000000.0, 1024.0, inf)
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number of bytes or a string like '4GiB' (got {value!r})")
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("none", "inf", "off", "unlimited"):
            return math.inf
        match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)", text)
        if match is None or match.group(2) not in _UNITS:
            raise InvalidParameterError(
                f"{name} must be a number of bytes or a size like '4GiB', '500MB' or 'none' (got {value!r})")
        number = float(match.group(1)) * _UNITS[match.group(2)]
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number of bytes or a string like '4GiB' (got {value!r})") from None
    if math.isnan(number) or number <= 0:
        raise InvalidParameterError(f"{name} must be a positive number of bytes (got {value!r})")
    return number


def check_memory_limit(value: Any, name: str = "memory_limit") -> float | None:
    """Validate a ``memory_limit=`` keyword: ``None`` (use the default) or what :func:`parse_bytes` accepts."""
    return None if value is None else parse_bytes(value, name)


def memory_limit(value: Any = None) -> float:
    """The limit in force: ``value`` when given, else the innermost :func:`resource_limits`, else the default.

    Examples
    --------
    >>> memory_limit(1 << 30)
    1073741824.0
    >>> with resource_limits(memory="2GiB"):
    ...     memory_limit()
    2147483648.0
    """
    if value is not None:
        return parse_bytes(value)
    scoped = _LIMIT.get()
    if scoped is not None:
        return scoped
    return MEMORY_LIMIT_FRACTION * available_memory()


@contextlib.contextmanager
def resource_limits(memory: Any = None) -> Iterator[float]:
    """Set the memory limit of every chainamp computation inside the ``with`` block.

    ``memory`` is a byte count, a size string (``"4GiB"``) or ``"none"`` for no limit;
    ``None`` keeps the default (half the available memory). A ``memory_limit=`` keyword
    passed to a function still takes precedence.

    Examples
    --------
    >>> import chainamp
    >>> with chainamp.resource_limits(memory="100MB"):
    ...     chainamp.operators.MarkovOperator([[1.0]]).shape
    (1, 1)
    """
    limit = None if memory is None else parse_bytes(memory, "memory")
    token = _LIMIT.set(limit)
    try:
        yield memory_limit()
    finally:
        _LIMIT.reset(token)


def fmt_bytes(n: float) -> str:
    """``1536 -> '1.5 KiB'``; ``inf -> 'no limit'``.

    Examples
    --------
    >>> fmt_bytes(3.72 * 2**30), fmt_bytes(512), fmt_bytes(float("inf"))
    ('3.72 GiB', '512 B', 'no limit')
    """
    if math.isinf(n):
        return "no limit"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def check_memory(nbytes: float, operation: str, *, memory_limit: Any = None, hint: str = "") -> None:
    """Raise :class:`~chainamp.ResourceLimitError` when ``operation`` would need more than the limit.

    Call it with an *estimate* of the peak extra memory, before allocating. ``hint`` says how to
    avoid the allocation (a structured operator, a smaller block, ...); the message always names
    the ``memory_limit=`` keyword and ``chainamp.resource_limits`` as the way past the limit.

    Examples
    --------
    >>> check_memory(1e6, "a small array", memory_limit="1GiB")
    >>> check_memory(8e12, "a dense 1e6 x 1e6 matrix", memory_limit="1GiB")
    Traceback (most recent call last):
    ...
    chainamp.errors.ResourceLimitError: a dense 1e6 x 1e6 matrix needs about 7.28 TiB, above the memory limit of 1 GiB; pass memory_limit=... (bytes, '8GiB' or 'none') or use chainamp.resource_limits(memory=...) to go past it
    """
    limit = _limit_for(memory_limit)
    if not nbytes <= limit:
        default = memory_limit is None and _LIMIT.get() is None
        where = " (half the available memory)" if default else ""
        advice = f"{hint}; " if hint else ""
        raise ResourceLimitError(
            f"{operation} needs about {fmt_bytes(float(nbytes))}, above the memory limit of {fmt_bytes(limit)}{where}; "
            f"{advice}pass memory_limit=... (bytes, '8GiB' or 'none') or use chainamp.resource_limits(memory=...) "
            f"to go past it")


def _limit_for(value: Any) -> float:
    return memory_limit(value)
