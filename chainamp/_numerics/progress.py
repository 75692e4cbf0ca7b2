"""A status line on stderr for the command line: shown only on a terminal and only for slow work."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress"]

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
