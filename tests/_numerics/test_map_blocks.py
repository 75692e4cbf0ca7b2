"""map_blocks: results in block order serially, on threads and on processes; the bounded window of
pending blocks; progress weights; arguments checked when called; check_executor's errors."""

from __future__ import annotations

import concurrent.futures as cf
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from chainamp._numerics import EXECUTOR_WINDOW_PER_WORKER, check_executor, map_blocks
from chainamp._numerics import progress as P


def _slow_square(x: int) -> int:
    """Later blocks finish first: order must come from map_blocks, not from completion."""
    time.sleep(0.002 * (10 - x % 10))
    return x * x


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("block 3 failed")
    return x


class _Inline(cf.Executor):
    """Runs each block at submit; counts submissions (to observe the window)."""

    def __init__(self, workers: int):
        self._max_workers = workers
        self.submitted = 0
        self.cancelled = 0

    def submit(self, fn, *args, **kwargs):
        self.submitted += 1
        fut: cf.Future = cf.Future()
        fut.set_result(fn(*args, **kwargs))
        original = fut.cancel

        def cancel():
            self.cancelled += 1
            return original()

        fut.cancel = cancel
        return fut


@pytest.mark.parametrize("kind", ["serial", "threads", pytest.param("processes", marks=pytest.mark.slow)])
def test_results_come_in_block_order(kind, request):
    blocks = list(range(30))
    if kind == "serial":
        out = list(map_blocks(_slow_square, blocks, progress=False))
    elif kind == "threads":
        with ThreadPoolExecutor(4) as ex:
            out = list(map_blocks(_slow_square, blocks, executor=ex, progress=False))
    else:
        out = list(map_blocks(_slow_square, blocks, executor=request.getfixturevalue("process_pool"), progress=False))
    assert out == [b * b for b in blocks]


def test_blocks_may_be_a_generator():
    with ThreadPoolExecutor(2) as ex:
        assert list(map_blocks(abs, (-i for i in range(7)), executor=ex, progress=False)) == list(range(7))


@pytest.mark.parametrize("workers", [1, 3])
def test_window_bounds_the_pending_blocks(workers):
    ex = _Inline(workers)
    window = EXECUTOR_WINDOW_PER_WORKER * workers
    ahead = []
    for i, _ in enumerate(map_blocks(abs, range(100), executor=ex, progress=False)):
        ahead.append(ex.submitted - i)  # submitted but not yet yielded, this one included
    assert max(ahead) == window
    assert ex.submitted == 100


def test_unfinished_blocks_are_cancelled_when_the_consumer_stops():
    ex = _Inline(2)
    gen = map_blocks(abs, range(100), executor=ex, progress=False)
    assert next(gen) == 0
    gen.close()
    assert ex.submitted == EXECUTOR_WINDOW_PER_WORKER * 2 and ex.cancelled == ex.submitted - 1


def test_an_error_in_a_block_propagates_in_order():
    with ThreadPoolExecutor(2) as ex:
        gen = map_blocks(_fail_on_three, range(10), executor=ex, progress=False)
        assert [next(gen) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(ValueError, match="block 3 failed"):
            next(gen)


def test_weights_and_total_drive_the_progress_bar(monkeypatch):
    from chainamp._numerics import executors

    seen = {}

    class Recorder(P._NoBar):
        def __init__(self, total, desc, unit, progress):
            seen.update(total=total, desc=desc, unit=unit, progress=progress, steps=[])
            self.n = 0

        def update(self, n=1):
            seen["steps"].append(n)
            super().update(n)

    monkeypatch.setattr(executors, "progress_bar", lambda total, desc, unit, progress: Recorder(total, desc, unit,
                                                                                                progress))
    with ThreadPoolExecutor(2) as ex:
        out = list(map_blocks(len, [[1, 2], [3], [4, 5, 6]], executor=ex, total=6, desc="pairs", unit="pair",
                              weight=len, progress=True))
    assert out == [2, 1, 3]
    assert seen == {"total": 6, "desc": "pairs", "unit": "pair", "progress": True, "steps": [2, 1, 3]}
    out = list(map_blocks(len, [[1], [2, 3]], progress=None))  # default weight: one per block
    assert seen["steps"] == [1, 1] and seen["unit"] == "block" and seen["total"] is None


@pytest.mark.parametrize("kwargs, error, match", [
    ({"executor": "threads"}, TypeError, r"executor must be None or a concurrent.futures.Executor .*got 'threads'"),
    ({"progress": "yes"}, TypeError, r"progress must be None, True or False \(got 'yes'\)"),
    ({"weight": 3}, TypeError, r"weight must be None or a callable, got int 3"),
], ids=["executor", "progress", "weight"])
def test_arguments_are_checked_when_called_not_when_iterated(kwargs, error, match):
    with pytest.raises(error, match=match):
        map_blocks(abs, [1], **kwargs)  # no next(): the generator would never have run


def test_fn_must_be_callable():
    with pytest.raises(TypeError, match=r"fn must be a callable, got str 'abs'"):
        map_blocks("abs", [1])


# --------------------------------------------------------------------------- check_executor
def test_check_executor_accepts_none_and_executors():
    assert check_executor(None) is None
    with ThreadPoolExecutor(1) as ex:
        assert check_executor(ex) is ex


@pytest.mark.parametrize("value", [4, "processes", object()], ids=["int", "text", "object"])
def test_check_executor_refuses_other_values(value):
    with pytest.raises(TypeError, match=r"^executor must be None or a concurrent.futures.Executor \(e.g. "
                                        r"ProcessPoolExecutor\(\) or a dask Client's get_executor\(\)\); got"):
        check_executor(value)


def test_check_executor_names_the_argument():
    with pytest.raises(TypeError, match=r"^pool must be None"):
        check_executor(1, "pool")


def test_a_dask_client_gets_the_get_executor_hint():
    class Client:  # what dask.distributed.Client looks like to check_executor (no cluster needed)
        def get_executor(self):  # pragma: no cover - never called
            raise AssertionError

        def __repr__(self):
            return "<Client: 'tcp://127.0.0.1:1' processes=2>"

    with pytest.raises(TypeError, match=r"for a dask.distributed.Client pass client.get_executor\(\); got <Client"):
        check_executor(Client())


@pytest.mark.slow
def test_a_real_dask_client_is_refused_with_the_hint_and_its_executor_works(dask_client):
    with pytest.raises(TypeError, match=r"pass client.get_executor\(\)"):
        check_executor(dask_client)
    out = list(map_blocks(_slow_square, range(12), executor=dask_client.get_executor(), progress=False))
    assert out == [b * b for b in range(12)]


@pytest.mark.parametrize("pool", [ThreadPoolExecutor, ProcessPoolExecutor], ids=["threads", "processes"])
def test_a_shut_down_executor_runs_the_blocks_serially(pool):
    """A report keeps the executor it was made with; evaluated after the pool's `with` block, submit raises
    RuntimeError. The blocks then run serially, in order, with the same results (it raised before)."""
    with pool(2) as ex:
        pass
    assert list(map_blocks(abs, [-1, 2, -3, 4], executor=ex, progress=False)) == [1, 2, 3, 4]


def test_a_shuffled_report_is_evaluated_after_its_pool_is_closed():
    from chainamp import amplify_shuffled, mechanisms

    with ThreadPoolExecutor(2) as ex:
        rep = amplify_shuffled(mechanisms.randomized_response(3, 1.0), 200, method="blanket", executor=ex,
                               progress=False)
    serial = amplify_shuffled(mechanisms.randomized_response(3, 1.0), 200, method="blanket", progress=False)
    eps = np.array([0.1, 0.3, 0.6])
    assert np.array_equal(rep.profile.delta(eps), serial.profile.delta(eps))
    assert rep.epsilon_at(1e-4) == serial.epsilon_at(1e-4)
