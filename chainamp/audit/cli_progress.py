"""How the command line runs a command: its memory limit, its progress output and its errors (private).

* ``--memory-limit SIZE`` (every command that computes): the work runs inside
  :func:`chainamp.resource_limits`, so every size check of the library refuses, before allocating,
  what would need more than SIZE (default: half the memory available to the process).
* Progress: on a terminal, tqdm bars on stderr (a bar over the command's stages, and the bars of the
  long computations inside it), shown only for work that runs longer than ``PROGRESS_DELAY``;
  when stderr is not a terminal (CI logs, files) the same progress as plain lines every
  ``PROGRESS_LINE_INTERVAL`` seconds (:func:`chainamp._numerics.progress_mode` ``"lines"``);
  ``--no-progress`` turns both off.
* Running out of memory, refused (:class:`~chainamp.ResourceLimitError`) or not (``MemoryError``),
  is one line on stderr and exit code 2 (:func:`memory_error_text`), like invalid input: exit 1
  means only that a claim is not certified.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any

from .._numerics import parse_bytes, progress_bar, progress_mode, resource_limits
from ..errors import InvalidParameterError, ResourceLimitError

__all__: list[str] = []

#: The library's advice on going past a limit, as the command line words it.
_LIBRARY_ADVICE = re.compile(r"pass memory_limit=\.\.\. \(bytes, '8GiB' or 'none'\) or use "
                             r"chainamp\.resource_limits\(memory=\.\.\.\) to go past it")
_CLI_ADVICE = "pass --memory-limit SIZE (e.g. 8GiB, or none) to go past it"


def memory_limit_option(value: str) -> float:
    """``--memory-limit``: a size such as ``4GiB``, ``500MB``, a number of bytes, or ``none``."""
    try:
        return parse_bytes(value, "--memory-limit")
    except (InvalidParameterError, TypeError) as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("--memory-limit must", "must")) from None


def add_run_options(sp: Any) -> None:
    """``--memory-limit`` and ``--no-progress`` on the subparser ``sp``."""
    sp.add_argument("--memory-limit", type=memory_limit_option, default=None, dest="memory_limit", metavar="SIZE",
                    help="refuse, before allocating, any step that would need more memory than SIZE (4GiB, 500MB, "
                         "a number of bytes, or none); default: half the memory available. Exit code 2 when refused")
    sp.add_argument("--no-progress", action="store_true", dest="no_progress",
                    help="no progress output on stderr (default: tqdm bars on a terminal, plain lines every few "
                         "seconds otherwise, both only for work longer than two seconds)")


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_mode_for(args: argparse.Namespace, stream: Any = None) -> str:
    """``"off"`` with ``--no-progress``, ``"auto"`` (tqdm bars) on a terminal, else ``"lines"``."""
    if getattr(args, "no_progress", False):
        return "off"
    return "auto" if _is_terminal(sys.stderr if stream is None else stream) else "lines"


@contextlib.contextmanager
def running(args: argparse.Namespace) -> Iterator[None]:
    """The context of one command: its memory limit and its progress mode."""
    limit = getattr(args, "memory_limit", None)
    with resource_limits(memory=limit), progress_mode(progress_mode_for(args)):
        yield


def memory_error_text(exc: MemoryError) -> str:
    """One line for a refusal or an allocation that failed, with the command line's way past it."""
    text = " ".join(str(exc).split())
    if isinstance(exc, ResourceLimitError):
        return _LIBRARY_ADVICE.sub(_CLI_ADVICE, text) or "refused: above the memory limit"
    detail = f": {text}" if text else ""
    return (f"out of memory{detail}; this input needs more memory than the machine (or its limit) gives this "
            "process: try a smaller input, or --memory-limit to have such steps refused before they start")


class Stages:
    """A progress bar over the named stages of a command: ``update(text)`` starts the next stage.

    The bar counts finished stages (``total`` when known) and shows the current one; like every
    chainamp bar it appears only after ``PROGRESS_DELAY`` seconds, and follows the progress mode.

    Examples
    --------
    >>> with Stages("audit", progress=False) as stages:
    ...     stages.update("amplify")
    ...     stages.update("claims")
    >>> stages.done
    2
    """

    def __init__(self, label: str, total: int | None = None, *, progress: bool | None = None):
        self.label, self.total, self.progress = label, total, progress
        self.done, self.current = 0, None
        self._bar: Any = None

    def update(self, text: str) -> None:
        if self.current is not None:
            self._bar.update(1)
            self.done += 1
        self.current = text
        self._bar.set_postfix_str(text, refresh=False)

    def __enter__(self) -> Stages:
        self._bar = progress_bar(self.total, self.label, unit="stage", progress=self.progress)
        self._bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.current is not None and exc[0] is None:
            self._bar.update(1)
            self.done += 1
        self._bar.__exit__(*exc)
