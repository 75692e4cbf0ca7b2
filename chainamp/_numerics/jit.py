"""Compile a plain numpy-and-loops function with numba on first use, or run it as it is without numba."""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["compiled"]

_COMPILED: dict[Any, Callable] = {}


def compiled(source: Callable) -> Callable:
    """``numba.njit(cache=True, nogil=True)(source)``, made once per function and kept (without the on-disk cache
    for a function that has no file, e.g. one defined in a notebook); ``source`` itself when numba is not
    installed (same results, slower). numba is imported only when a kernel is first needed.

    >>> def add(a, b):
    ...     return a + b
    >>> compiled(add)(1, 2), compiled(add) is compiled(add)   # compiled at the first call, made once
    (3, True)
    """
    fn = _COMPILED.get(source)
    if fn is None:
        try:
            import numba

            try:
                fn = numba.njit(cache=True, nogil=True)(source)
            except RuntimeError:  # no file to cache for (defined in a notebook or a doctest): compile per process
                fn = numba.njit(nogil=True)(source)
        except ImportError:  # pragma: no cover - numba is a dependency
            fn = source
        _COMPILED[source] = fn
    return fn
