"""A status line on stderr for the command line: shown only on a terminal and only for slow work."""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress", "progress_bar", "progress_mode", "check_progress", "PROGRESS_DELAY",
           "PROGRESS_LINE_INTERVAL"]

_SPINNER = "|/-\\"


class Progress:
    """Context manager printing ``label: stage  <spinner> 3s`` on ``stream``.

    Nothing is written unless ``stream`` is a TTY and the work has run for
    ``delay`` seconds, so fast commands, pipes and tests stay silent. The line
    is erased on exit. ``update(text)`` names the current stage.

    >>> import io
    >>> with Progress("audit", stream=io.StringIO()) as bar:
    ...     bar.update("amplify")
    >>> bar.shown
    False
    """

    def __init__(self, label: str, *, stream: TextIO | None = None, delay: float = 1.5, interval: float = 0.2):
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.delay = delay
        self.interval = interval
        self.text = ""
        self.shown = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._width = 0

    def update(self, text: str) -> None:
        self.text = text

    def _enabled(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def _run(self, start: float) -> None:
        tick = 0
        while not self._stop.wait(self.interval):
            elapsed = time.monotonic() - start
            if elapsed < self.delay:
                continue
            line = f"{self.label}: {self.text} {_SPINNER[tick % len(_SPINNER)]} {elapsed:.0f}s"
            tick += 1
            self._width = max(self._width, len(line))
            self.stream.write("\r" + line.ljust(self._width))
            self.stream.flush()
            self.shown = True

    def __enter__(self) -> Progress:
        if self._enabled():
            self._thread = threading.Thread(target=self._run, args=(time.monotonic(),), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self.shown:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()


# ------------------------------------------------------------------ tqdm progress of long computations
_MODES = ("auto", "lines", "off")
_MODE: contextvars.ContextVar[str] = contextvars.ContextVar("chainamp_progress_mode", default="auto")

#: A computation shows its progress bar only once it has run this many seconds (``progress=None``).
PROGRESS_DELAY = 2.0
#: Seconds between two plain progress lines (mode ``"lines"``, used by the CLI when stderr is not a terminal).
PROGRESS_LINE_INTERVAL = 5.0


class _PlainLines:
    """A file-like for tqdm that turns its carriage-return refreshes into plain lines (CI logs)."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        for part in text.replace("\n", "\r").split("\r"):
            part = part.strip()
            if part:
                self.stream.write(part + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


class _NoBar:
    """What :func:`progress_bar` returns when progress is off: the same methods, doing nothing."""

    n = 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc) -> None:
        pass


def check_progress(value, name: str = "progress") -> bool | None:
    """Validate a ``progress=`` keyword: ``None`` (bar after 2 s), ``True`` (at once) or ``False`` (off)."""
    if value is None:
        return None
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise TypeError(f"{name} must be None, True or False (got {value!r})")


def progress_bar(total: int | None, desc: str, *, unit: str = "it", progress: bool | None = None,
                 stream: TextIO | None = None):
    """A tqdm progress bar for a computation of ``total`` units (pairs, blocks, steps, epsilon values).

    ``progress=None`` (the default everywhere) shows the bar only if the computation runs longer than
    ``PROGRESS_DELAY`` seconds; ``True`` shows it at once; ``False`` turns it off. In a notebook the bar
    is a widget (``tqdm.auto``). Inside :func:`progress_mode` ``"lines"`` (the CLI when stderr is not a
    terminal) it prints a plain line every ``PROGRESS_LINE_INTERVAL`` seconds instead, so CI logs show it;
    in mode ``"off"`` nothing is shown unless ``progress=True``.

    Use it as a context manager and call ``update(n)``.

    Examples
    --------
    >>> with progress_bar(10, "pairs", progress=False) as bar:
    ...     bar.update(10)
    >>> bar.n
    10
    """
    progress = check_progress(progress)
    mode = _MODE.get()
    if progress is False or (mode == "off" and progress is not True):
        return _NoBar()
    out = sys.stderr if stream is None else stream
    kwargs = dict(total=total, desc=desc, unit=unit, delay=0.0 if progress else PROGRESS_DELAY, leave=False,
                  dynamic_ncols=True)
    if mode == "lines":
        from tqdm import tqdm

        return tqdm(file=_PlainLines(out), mininterval=PROGRESS_LINE_INTERVAL, maxinterval=PROGRESS_LINE_INTERVAL,
                    ascii=True, ncols=100, **{**kwargs, "leave": True, "dynamic_ncols": False})
    if stream is not None:
        from tqdm import tqdm

        return tqdm(file=out, **kwargs)
    from tqdm.auto import tqdm

    return tqdm(**kwargs)


@contextlib.contextmanager
def progress_mode(mode: str):
    """Set how progress bars are shown inside the block: ``"auto"`` (tqdm), ``"lines"`` or ``"off"``.

    Examples
    --------
    >>> with progress_mode("off"):
    ...     with progress_bar(3, "steps") as bar:
    ...         bar.update(3)
    """
    if mode not in _MODES:
        from ..errors import InvalidParameterError

        raise InvalidParameterError(f"mode must be one of {_MODES} (got {mode!r})")
    token = _MODE.set(mode)
    try:
        yield mode
    finally:
        _MODE.reset(token)
