"""Progress output: tqdm bars on a terminal or in a notebook, plain periodic lines in logs, nothing when off."""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress", "progress_bar", "progress_mode", "progress_scope", "check_progress", "PROGRESS_DELAY",
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


#: What one plain line says (mode ``"lines"``): no bar drawing, which a log file cannot redraw.
_LINE_FORMAT = "{desc}: {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
#: The same for an unknown total: the count and the time so far (no "4/?", no remaining time).
_LINE_FORMAT_OPEN = "{desc}: {n_fmt} {unit} [{elapsed}, {rate_fmt}{postfix}]"


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where tqdm.auto draws a widget and stderr is no terminal)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # pragma: no cover - an IPython without a shell
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class _PlainLines:
    """A file-like for tqdm that turns its carriage-return refreshes into plain lines (CI logs)."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        # nested bars (tqdm positions > 0) move the cursor with ANSI escapes: a log has no cursor
        for part in _ESCAPES.sub("", text).replace("\n", "\r").split("\r"):
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
    if isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool")):
        return bool(value)  # numpy's bool is np.bool_ before numpy 2, np.bool (a distinct type) since
    raise TypeError(f"{name} must be None, True or False (got {value!r})")


def progress_bar(total: int | None, desc: str, *, unit: str = "it", progress: bool | None = None,
                 stream: TextIO | None = None):
    """A tqdm progress bar for a computation of ``total`` units (pairs, blocks, steps, epsilon values).

    ``progress=None`` (the default everywhere) shows the bar only if the computation runs longer than
    ``PROGRESS_DELAY`` seconds; ``True`` shows it at once; ``False`` turns it off. On a terminal the bar
    is tqdm's, in a notebook a widget (``tqdm.auto``); anywhere else (stderr a log file or a pipe: CI, a
    batch job) and inside :func:`progress_mode` ``"lines"`` (the CLI when stderr is not a terminal) it
    prints a plain line every ``PROGRESS_LINE_INTERVAL`` seconds instead (no carriage returns or cursor
    codes; with an unknown ``total`` the count and elapsed time only); in mode ``"off"`` nothing is shown
    unless ``progress=True``.

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
    if mode == "auto" and not _is_terminal(out) and not (stream is None and _in_notebook()):
        mode = "lines"  # a log file or a pipe cannot redraw a bar: plain lines, as the command line prints
    if mode == "lines":
        fmt = _LINE_FORMAT if total is not None else _LINE_FORMAT_OPEN
        return _lines_bar()(file=_PlainLines(out), mininterval=PROGRESS_LINE_INTERVAL,
                            maxinterval=PROGRESS_LINE_INTERVAL, ascii=True, ncols=100, bar_format=fmt,
                            **{**kwargs, "leave": True, "dynamic_ncols": False})
    if stream is not None:
        from tqdm import tqdm

        return tqdm(file=out, **kwargs)
    from tqdm.auto import tqdm

    return tqdm(**kwargs)


_LINES_BAR: list = []

#: The heartbeats of plain-line bars are started by one shared daemon thread once a bar has run for its first
#: interval (a fast bar never starts a thread of its own); it waits on this condition and ends after
#: ``_TICKER_IDLE`` seconds without a bar to watch.
_TICK = threading.Condition()
_DUE: dict = {}  # id(bar) -> (monotonic time its heartbeat starts, bar)
_TICKER: list = []
_WAKE = [math.inf]  # when the watcher wakes next (it is told of a bar due earlier only)
_TICKER_IDLE = 30.0


def _reset_after_fork() -> None:
    """A forked child has no watcher thread (and may have inherited its lock held): start afresh."""
    global _TICK
    _TICK = threading.Condition()
    _DUE.clear()
    _TICKER.clear()
    _WAKE[0] = math.inf


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _schedule_beat(bar, due: float) -> None:
    with _TICK:
        _DUE[id(bar)] = (due, bar)
        if not _TICKER or not _TICKER[0].is_alive():
            _TICKER.clear()
            thread = threading.Thread(target=_ticker, name="chainamp-progress", daemon=True)
            _TICKER.append(thread)
            thread.start()
        elif due < _WAKE[0]:  # (waking the watcher costs a switch of the interpreter lock: only when it must)
            _TICK.notify()


def _ticker() -> None:
    with _TICK:
        while True:
            now = time.monotonic()
            for key, (due, bar) in list(_DUE.items()):
                if due <= now:
                    del _DUE[key]
                    bar._start_beat()  # (under the lock: close() either sees the thread or prevents it)
            if _DUE:
                _WAKE[0] = min(due for due, _ in _DUE.values())
                _TICK.wait(max(_WAKE[0] - now, 0.0))
            else:
                _WAKE[0] = math.inf
                if not _TICK.wait(_TICKER_IDLE) and not _DUE:
                    _TICKER.clear()
                    return


def _lines_bar() -> type:
    """The tqdm class of mode ``"lines"`` (built on first use: tqdm is imported only when a bar is shown).

    tqdm prints only from ``update``; a computation stuck in one long block (a stage, a big solve)
    would leave a CI log silent. This subclass also prints a line every ``PROGRESS_LINE_INTERVAL``
    seconds from a daemon thread once the bar's delay has passed, and stops it when the bar closes. That
    thread is started (by one shared watcher) only once the bar has lived for its first interval, so the many
    short computations that never show a bar start no thread.
    """
    if _LINES_BAR:
        return _LINES_BAR[0]
    from tqdm import tqdm

    class LinesBar(tqdm):
        def __init__(self, *args, **kwargs):
            self._beat_stop = threading.Event()
            self._beat_delay = float(kwargs.get("delay", 0.0) or 0.0)
            self._beat = None
            super().__init__(*args, **kwargs)
            self._beat_start = time.monotonic()
            self._beat_wait = min(PROGRESS_LINE_INTERVAL, max(self._beat_delay, 0.01))
            _schedule_beat(self, self._beat_start + self._beat_wait)

        def _start_beat(self) -> None:
            if not self._beat_stop.is_set():
                self._beat = threading.Thread(target=self._heartbeat, args=(self._beat_start,), daemon=True)
                self._beat.start()

        def _heartbeat(self, start: float) -> None:
            last = start
            while True:  # (the first interval has passed when the watcher starts this thread)
                now = time.monotonic()
                printed = max(last, getattr(self, "_beat_printed", start))
                if self._beat_stop.is_set():
                    return
                if now - start >= self._beat_delay and now - printed >= PROGRESS_LINE_INTERVAL * 0.999:
                    self.refresh()
                    last = now
                if self._beat_stop.wait(self._beat_wait):
                    return

        def display(self, *args, **kwargs):
            if getattr(self, "_beat_closing", False) and getattr(self, "_beat_shown", None) == self.n:
                return True  # tqdm redraws the last state when it closes: one line of it is enough
            self._beat_printed, self._beat_shown = time.monotonic(), self.n
            return super().display(*args, **kwargs)

        def close(self):
            stop = getattr(self, "_beat_stop", None)
            beat = None
            if stop is not None and not stop.is_set():
                with _TICK:
                    _DUE.pop(id(self), None)
                    stop.set()
                    beat = self._beat
                if beat is not None and beat.is_alive() and threading.current_thread() is not beat:
                    beat.join()
            self._beat_closing = True
            super().close()

    _LINES_BAR.append(LinesBar)
    return LinesBar


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


def progress_scope(progress: bool | None):
    """The context of a call's ``progress=`` keyword for everything it calls: ``False`` silences the
    (delayed) bars of the computations inside it too (mode ``"off"``); ``None`` and ``True`` change nothing.

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> with progress_scope(False):
    ...     with progress_bar(3, "inner", stream=buf) as bar:
    ...         bar.update(3)
    >>> buf.getvalue()
    ''
    """
    return progress_mode("off") if check_progress(progress) is False else contextlib.nullcontext()
