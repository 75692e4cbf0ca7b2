"""amplify's progress= and executor= keywords (issues 10 and 11) and the quick steps of the tight bound's search."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from unittest import mock

import numpy as np
import pytest

from chainamp import DP, MarkovOperator, amplify, mechanisms
from chainamp.amplification import sources as sources_mod


def _random_operator(seed: int, n: int, m: int) -> MarkovOperator:
    rng = np.random.default_rng(seed)
    mat = rng.random((n, m)) ** 3
    return MarkovOperator(mat / mat.sum(axis=1, keepdims=True))


def _numbers(rep) -> tuple:
    return (rep.best, rep.exact, tuple(rep.source_epsilon(s.name) for s in rep.sources), rep.bounds)


@pytest.mark.parametrize("kind", ["threads", "processes"], ids=["threads", "processes"])
def test_executor_gives_the_serial_report(kind):
    M, K = _random_operator(1, 6, 8), _random_operator(2, 8, 7)
    serial = amplify(M, K, delta=1e-6)
    pool = ThreadPoolExecutor(2) if kind == "threads" else ProcessPoolExecutor(2)
    with pool:
        parallel = amplify(M, K, delta=1e-6, executor=pool, progress=False)
    assert _numbers(parallel) == _numbers(serial)


@pytest.mark.parametrize("kwargs,match", [
    ({"executor": 2}, "executor must be None or a concurrent.futures.Executor"),
    ({"progress": "on"}, "progress must be None, True or False"),
], ids=["executor", "progress"])
def test_bad_keywords_are_refused(kwargs, match):
    with pytest.raises(TypeError, match=match):
        amplify(DP(1.0), mechanisms.randomized_response(3, 1.0), **kwargs)


@pytest.mark.parametrize("mechanism", ["finite", "dp"], ids=["finite", "dp"])
def test_quick_steps_change_no_answer(mechanism):
    """The tight bound's search settles some steps from the coefficients already computed (non-increasing in
    the order); the answers are those of the search without quick steps (swapping the two bounds of
    dob_bounds makes this fail)."""
    M = _random_operator(3, 5, 9) if mechanism == "finite" else DP(2.0, 1e-4)
    K = _random_operator(4, 9, 9)
    settled = []
    real = sources_mod.CurveSource._holds

    def counting(self, eps, delta, quick=False):
        if quick and self._quick is not None and eps not in self._cache:
            settled.append(self._quick(eps, delta) is not None)
        return real(self, eps, delta, quick)

    with mock.patch.object(sources_mod.CurveSource, "_holds", counting):
        fast = amplify(M, K, delta=1e-6)
    real_init = sources_mod.CurveSource.__init__

    def no_quick(self, *args, quick=None, **kwargs):
        real_init(self, *args, **kwargs)

    with mock.patch.object(sources_mod.CurveSource, "__init__", no_quick):
        slow = amplify(M, K, delta=1e-6)
    assert any(settled)  # some steps were settled without a new coefficient
    assert _numbers(fast) == _numbers(slow)
