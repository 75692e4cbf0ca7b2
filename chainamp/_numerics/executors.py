"""Blockwise work on any ``concurrent.futures.Executor``, combined deterministically.

The pair scans behind the mixing coefficients and exact profiles, and sweeps over parameter
grids, are split into blocks whose sizes never depend on the number of workers. Each block is
a pure, picklable function call returning its certified partial result; :func:`map_blocks`
returns those results *in block order*, so a combination that breaks ties by block order gives
the same answer and the same witness serially, on a ``ProcessPoolExecutor`` or on a Dask
cluster (``dask.distributed.Client(...).get_executor()``).
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .progress import check_progress, progress_bar

__all__ = ["check_executor", "executor_workers", "map_blocks", "EXECUTOR_WINDOW_PER_WORKER"]

#: At most this many blocks per worker are submitted ahead of the one being collected
#: (bounds the memory held by pending results).
EXECUTOR_WINDOW_PER_WORKER = 4


def check_executor(executor: Any, name: str = "executor") -> cf.Executor | None:
    """Validate an ``executor=`` keyword: ``None`` (serial) or a ``concurrent.futures.Executor``.

    A ``dask.distributed.Client`` is refused with the hint to pass ``client.get_executor()``.

    Examples
    --------
    >>> check_executor(None) is None
    True
    >>> check_executor("threads")
    Traceback (most recent call last):
    ...
    TypeError: executor must be None or a concurrent.futures.Executor (e.g. ProcessPoolExecutor() or a dask Client's get_executor()); got 'threads'
    """
    if executor is None or isinstance(executor, cf.Executor):
        return executor
    hint = ""
    if type(executor).__name__ == "Client" and hasattr(executor, "get_executor"):
        hint = "; for a dask.distributed.Client pass client.get_executor()"
    raise TypeError(f"{name} must be None or a concurrent.futures.Executor (e.g. ProcessPoolExecutor() or a dask "
                    f"Client's get_executor()){hint}; got {executor!r}")


def _workers(executor: cf.Executor) -> int:
    for attr in ("_max_workers",):
        value = getattr(executor, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    client = getattr(executor, "_client", None)
    if client is not None:
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # pragma: no cover - a client that cannot answer
            return 2
    return 2


def executor_workers(executor: cf.Executor | None) -> int:
    """How many tasks ``executor`` runs at once (1 for None). Sizes speculative work only, never a result.

    >>> executor_workers(None)
    1
    """
    return 1 if executor is None else _workers(executor)


def map_blocks(fn: Callable[..., Any], blocks: Iterable[Any], *, executor: cf.Executor | None = None,
               total: int | None = None, desc: str = "blocks", unit: str = "block",
               progress: bool | None = None, weight: Callable[[Any], int] | None = None) -> Iterator[Any]:
    """Yield ``fn(block)`` for every block, in the order of ``blocks``, serially or on ``executor``.

    ``fn`` must be a module-level function (picklable) when an executor runs it in other processes. An executor
    that refuses new work because it was shut down (``RuntimeError`` from ``submit``, as a report evaluated after
    its ``with`` block would meet) is not an error: the remaining blocks run serially, with the same results.
    At most ``EXECUTOR_WINDOW_PER_WORKER`` blocks per worker are in flight, so pending results stay
    bounded. ``weight(block)`` (default 1) is what each finished block adds to the progress bar,
    whose ``total`` counts the same unit (pairs, rows, values).

    Examples
    --------
    >>> list(map_blocks(abs, [-1, 2, -3], progress=False))
    [1, 2, 3]
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> with ThreadPoolExecutor(2) as ex:
    ...     list(map_blocks(abs, [-1, 2, -3], executor=ex, progress=False))
    [1, 2, 3]
    """
    # validated here, when called, not on the first next(): a generator body runs only when iterated
    executor = check_executor(executor)
    check_progress(progress)
    if not callable(fn):
        raise TypeError(f"fn must be a callable, got {type(fn).__name__} {fn!r}")
    if weight is not None and not callable(weight):
        raise TypeError(f"weight must be None or a callable, got {type(weight).__name__} {weight!r}")
    return _blocks(fn, blocks, executor, total, desc, unit, progress, (lambda b: 1) if weight is None else weight)


def _blocks(fn, blocks, executor, total, desc, unit, progress, step) -> Iterator[Any]:
    with progress_bar(total, desc, unit=unit, progress=progress) as bar:
        if executor is None:
            for block in blocks:
                yield fn(block)
                bar.update(step(block))
            return
        window = EXECUTOR_WINDOW_PER_WORKER * _workers(executor)
        pending: deque = deque()
        it = iter(blocks)
        try:
            for block in it:
                try:
                    fut = executor.submit(fn, block)
                except RuntimeError:  # shut down (a report evaluated after its `with` block): serially from here
                    while pending:
                        done_block, fut = pending.popleft()
                        yield fut.result()
                        bar.update(step(done_block))
                    for rest in itertools.chain([block], it):
                        yield fn(rest)
                        bar.update(step(rest))
                    return
                pending.append((block, fut))
                if len(pending) >= window:
                    done_block, fut = pending.popleft()
                    yield fut.result()
                    bar.update(step(done_block))
            while pending:
                done_block, fut = pending.popleft()
                yield fut.result()
                bar.update(step(done_block))
        finally:
            for _, fut in pending:
                fut.cancel()
