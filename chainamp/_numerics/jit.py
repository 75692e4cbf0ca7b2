"""Compile a plain numpy-and-loops function with numba on first use, or run it as it is without numba."""

from __future__ import annotations

import types
from typing import Any, Callable

__all__ = ["compiled", "calls_kernels"]

_COMPILED: dict[Any, Callable] = {}


def calls_kernels(*kernels: Callable) -> Callable[[Callable], Callable]:
    """Declare the kernel sources a kernel source calls by their names (a decorator): :func:`compiled` compiles
    each of them first and hands the caller's compiled copy the compiled callee under the same name. The source
    itself is returned unchanged (called as plain Python it calls the plain callees: same results).

    numba resolves a global name when it compiles a function and can only call what is compiled itself, while
    chainamp's kernels are plain functions until first use (numba is imported lazily), so a kernel could not
    otherwise reuse another one. Keep a caller and its callees in one module: numba's on-disk cache of the caller is
    checked against its own file only, so an edited callee elsewhere would not invalidate it.

    >>> def twice(x):
    ...     return 2 * x
    >>> @calls_kernels(twice)
    ... def four_times(x):
    ...     return twice(twice(x))
    >>> compiled(four_times)(3), four_times(3)
    (12, 12)
    """
    for k in kernels:
        if not isinstance(k, types.FunctionType):
            raise TypeError(f"calls_kernels takes plain functions (kernel sources), got {type(k).__name__} {k!r:.60}")

    def declare(source: Callable) -> Callable:
        source.__kernel_calls__ = tuple(kernels)
        return source
    return declare


def _with_compiled_callees(source: Callable) -> Callable:
    """``source`` with the compiled kernels it declares (:func:`calls_kernels`) bound to their names in a copy of
    its globals (the same code, so numba's on-disk cache still finds it by file and line)."""
    kernels = getattr(source, "__kernel_calls__", ())
    if not kernels:
        return source
    names = {k.__name__: compiled(k) for k in kernels}
    copy = types.FunctionType(source.__code__, {**source.__globals__, **names}, source.__name__,
                              source.__defaults__, source.__closure__)
    copy.__qualname__, copy.__doc__, copy.__module__ = source.__qualname__, source.__doc__, source.__module__
    return copy


def compiled(source: Callable) -> Callable:
    """``numba.njit(cache=True, nogil=True)(source)``, made once per function and kept (without the on-disk cache
    for a function that has no file, e.g. one defined in a notebook); ``source`` itself when numba is not
    installed (same results, slower). numba is imported only when a kernel is first needed. The kernels a source
    declares with :func:`calls_kernels` are compiled first and called compiled.

    >>> def add(a, b):
    ...     return a + b
    >>> compiled(add)(1, 2), compiled(add) is compiled(add)   # compiled at the first call, made once
    (3, True)
    """
    fn = _COMPILED.get(source)
    if fn is None:
        try:
            import numba

            target = _with_compiled_callees(source)
            try:
                fn = numba.njit(cache=True, nogil=True)(target)
            except RuntimeError:  # no file to cache for (defined in a notebook or a doctest): compile per process
                fn = numba.njit(nogil=True)(target)
        except ImportError:  # pragma: no cover - numba is a dependency
            fn = source
        _COMPILED[source] = fn
    return fn
