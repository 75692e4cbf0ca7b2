"""HiGHS's once-per-process banner, kept off stdout.

HiGHS (highspy, which cvxpy >= 1.6 brings) prints a banner to the C-level standard output the first time a
``Highs`` object is created in a process, whatever ``output_flag`` is set to afterwards. A CLI's stdout, a
notebook cell or a JSON report would carry it. :func:`swallow_highs_banner` creates that first object while
file descriptor 1 points at the null device; :func:`quiet_highs` returns a fresh ``Highs`` with output off.
Shared by ``mixing/lp_solver.py`` (cvxpy's HiGHS) and ``design/lp_dobrushin.py`` (highspy directly), so it
lives below both. highspy is imported here lazily, inside the functions.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from typing import Any

__all__ = ["quiet_highs", "swallow_highs_banner"]

_BANNER_LOCK = threading.Lock()
_banner_swallowed = False


@contextlib.contextmanager
def _c_stdout_to_null():
    """Point file descriptor 1 at the null device (C-level writes included), then restore it.

    Python's buffer is flushed before and the C library's buffers after (so that text HiGHS left
    in a buffered stdout goes to the null device, not to the restored descriptor). A no-op where
    stdout has no file descriptor."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        try:
            ctypes.CDLL(None).fflush(None)
        except (OSError, AttributeError, TypeError):  # no C library to flush (Windows): nothing buffered there
            pass
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def swallow_highs_banner() -> None:
    """Create the process's first HiGHS object with stdout silenced: HiGHS prints its banner once
    per process, at that moment, whatever the options later set on it."""
    global _banner_swallowed
    if _banner_swallowed:
        return
    with _BANNER_LOCK:
        if _banner_swallowed:
            return
        try:
            import highspy
        except ImportError:  # cvxpy without HiGHS: nothing prints a banner
            _banner_swallowed = True
            return
        with _c_stdout_to_null():
            highspy.Highs()
        _banner_swallowed = True


def quiet_highs(verbose: bool = False) -> Any:
    """A new ``highspy.Highs`` with its output off unless ``verbose``, the process's banner swallowed first.

    Examples
    --------
    >>> h = quiet_highs()            # highspy comes with cvxpy >= 1.6
    >>> h.getOptionValue("output_flag")[1]
    False
    """
    import highspy

    if not verbose:
        swallow_highs_banner()
    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(verbose))
    return h
