"""``compiled`` and ``calls_kernels``: a kernel source that calls another kernel is compiled with the callee compiled
first (numba cannot call a plain function), and runs as plain Python without numba."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from chainamp._numerics import calls_kernels, compiled, jit


def _prefix_max(x):  # a callee: running maximum
    out = np.empty(x.size)
    best = -np.inf
    for i in range(x.size):
        best = max(best, x[i])
        out[i] = best
    return out


@calls_kernels(_prefix_max)
def _spread(x):  # a caller: the running maximum minus the running minimum, through the callee twice
    return _prefix_max(x) + _prefix_max(-x)


def _undeclared(x):  # calls the callee without declaring it
    return _prefix_max(x)


@calls_kernels(_spread)
def _nested(x):  # a caller of a caller: declared callees are compiled recursively
    return _spread(x)[-1]


def test_declared_callee_is_compiled_first_and_called():
    x = np.array([0.5, -1.0, 2.0, 0.25])
    expected = np.array([0.0, 1.5, 3.0, 3.0])
    assert np.array_equal(compiled(_spread)(x), expected)
    assert np.array_equal(_spread(x), expected)  # the source itself is unchanged: plain Python, same result
    assert compiled(_nested)(x) == 3.0
    assert type(compiled(_spread)).__name__ == "CPUDispatcher"  # compiled by numba, not the source
    assert compiled(_spread) is compiled(_spread)  # made once


def test_undeclared_callee_is_what_the_declaration_fixes():
    import numba

    with pytest.raises(numba.core.errors.TypingError, match="_prefix_max"):
        compiled(_undeclared)(np.array([1.0, 2.0]))


def test_without_numba_the_sources_run_as_they_are(monkeypatch):
    monkeypatch.setattr(jit, "_COMPILED", {})
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    assert compiled(_spread) is _spread
    assert np.array_equal(compiled(_spread)(np.array([1.0, 3.0])), [0.0, 2.0])


@pytest.mark.parametrize("bad", [compiled(_prefix_max), "_prefix_max", None], ids=["dispatcher", "name", "none"])
def test_calls_kernels_takes_plain_functions(bad):
    with pytest.raises(TypeError, match="calls_kernels takes plain functions"):
        calls_kernels(_prefix_max, bad)
