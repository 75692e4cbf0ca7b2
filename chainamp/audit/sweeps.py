"""Parameter sweeps: any chainamp computation over a grid, as a table (:func:`sweep`).

Calibration grids over epsilon, the operator and the number of steps are embarrassingly parallel over
the grid points. :func:`sweep` evaluates ``function(**point)`` at every point, serially or on any
``concurrent.futures.Executor`` (a ``ProcessPoolExecutor``, a ``dask.distributed.Client``'s
``get_executor()``) through :func:`chainamp._numerics.map_blocks`, so the rows come back in grid order
whatever the number of workers, and returns a pandas DataFrame (a list of records without pandas).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._numerics import check_executor, check_progress, map_blocks
from ..errors import InvalidParameterError

__all__ = ["sweep"]


def _grid_points(grid: Any) -> list[dict]:
    """The points of ``grid``: a mapping name -> values (their Cartesian product, the last name varying
    fastest) or a sequence of mappings (the points themselves, in order)."""
    if isinstance(grid, Mapping):
        names = list(grid)
        values = []
        for name in names:
            if not isinstance(name, str) or not name.isidentifier():
                raise InvalidParameterError(f"grid keys must be keyword names, got {name!r}")
            vals = grid[name]
            if isinstance(vals, (str, bytes, Mapping)) or not isinstance(vals, Iterable):
                raise TypeError(f"grid[{name!r}] must be a list of values, got {type(vals).__name__} {vals!r}")
            values.append(list(vals))
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Iterable):
        raise TypeError(f"grid must be a dict of lists or a list of dicts, got {type(grid).__name__} {grid!r}")
    points = []
    for k, point in enumerate(grid):
        if not isinstance(point, Mapping):
            raise TypeError(f"grid point {k} must be a dict of keyword arguments, got {type(point).__name__} "
                            f"{point!r}")
        for name in point:
            if not isinstance(name, str) or not name.isidentifier():
                raise InvalidParameterError(f"grid point {k} has a key that is not a keyword name: {name!r}")
        points.append(dict(point))
    return points


def _flatten(value: Any, prefix: str, out: dict) -> None:
    """Nested mappings become dotted columns; everything else is one cell."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix or "result"] = value


def _unjson(value: Any) -> Any:
    """``to_dict`` writes infinities as the strings "inf"/"-inf" (for JSON): back to floats in a table."""
    if value == "inf":
        return math.inf
    if value == "-inf":
        return -math.inf
    return value


def _columns(result: Any) -> dict:
    """The columns of one result: a report's ``to_dict()`` or a dataclass's fields, flattened; a mapping's
    items; anything else is the single column ``result``."""
    flat: dict = {}
    if callable(getattr(result, "to_dict", None)) and not isinstance(result, type):
        _flatten(result.to_dict(), "", flat)
        flat = {k: _unjson(v) for k, v in flat.items()}
    elif dataclasses.is_dataclass(result) and not isinstance(result, type):
        _flatten({f.name: getattr(result, f.name) for f in dataclasses.fields(result)}, "", flat)
    elif isinstance(result, Mapping):
        _flatten(result, "", flat)
    else:
        flat["result"] = result
    return flat


def _evaluate(block: tuple) -> tuple:
    """One grid point (module level, so process pools can run it): ``(True, columns)`` or
    ``(False, exception)``; the exception is raised by the caller, naming the point."""
    function, point = block
    try:
        return True, _columns(function(**point))
    except Exception as exc:  # noqa: BLE001 - re-raised by sweep with the point named
        return False, exc


def sweep(function: Callable[..., Any], grid: Any, executor: Any = None, progress: bool | None = None):
    """Evaluate ``function(**point)`` at every point of a parameter grid and tabulate the results.

    Parameters
    ----------
    function : callable
        Any computation, e.g. ``lambda epsilon, k: chainamp.amplify(DP(epsilon), rr(k))``. On a process
        pool it must be picklable (a module-level function; a Dask executor also takes lambdas).
    grid : dict of lists, or list of dicts
        ``{"epsilon": [0.5, 1.0], "k": [2, 4]}`` is the Cartesian product (the last key varies fastest);
        a list of dicts gives the points themselves, in order.
    executor : concurrent.futures.Executor, optional
        Where the points run (default: here, one after the other). The rows come back in grid order
        whatever the executor and its number of workers.
    progress : bool, optional
        A progress bar over the points (None: shown after 2 s; True: at once; False: never).

    Returns
    -------
    pandas.DataFrame, or a list of dicts when pandas is not installed
        One row per point, in grid order: the point's parameters, then the result's columns. A result
        with a ``to_dict()`` (every chainamp report) is flattened into dotted columns
        (``best.epsilon``, ``coefficients.dobrushin``; lists stay whole cells, infinities are floats); a
        dataclass result (e.g. :class:`~chainamp.DobrushinResult`) gives one column per field; a dict one
        column per key; anything else the column ``result``. A result column named like a parameter is
        prefixed ``result.``.

    Raises
    ------
    Exception
        The first failing point's own exception (in grid order), with a note naming the point
        (``exc.__notes__``); later points are not waited for.

    Examples
    --------
    >>> import chainamp
    >>> from chainamp import DP, mechanisms
    >>> def certified(epsilon, k):
    ...     return chainamp.amplify(DP(epsilon, 1e-6), mechanisms.randomized_response(k, 0.5))
    >>> table = chainamp.sweep(certified, {"epsilon": [0.5, 1.0], "k": [2, 8]}, progress=False)
    >>> table[["epsilon", "k", "best.epsilon", "best.source"]].round(3).values.tolist()
    [[0.5, 2, 0.12, 'tight'], [0.5, 8, 0.12, 'tight'], [1.0, 2, 0.227, 'tight'], [1.0, 8, 0.227, 'tight']]
    >>> chainamp.sweep(lambda x: {"square": x * x}, [{"x": 3}], progress=False)["square"].tolist()
    [9]
    """
    if not callable(function):
        raise TypeError(f"function must be a callable, got {type(function).__name__} {function!r}")
    points = _grid_points(grid)
    executor = check_executor(executor)
    progress = check_progress(progress)
    rows = []
    blocks = ((function, point) for point in points)
    results = map_blocks(_evaluate, blocks, executor=executor, total=len(points), desc="sweep", unit="point",
                         progress=progress)
    try:
        for k, (ok, value) in enumerate(results):
            point = points[k]
            if not ok:
                value.add_note(f"in chainamp.sweep at grid point {k} of {len(points)}: {point!r}")
                raise value
            row = dict(point)
            for col, cell in value.items():
                row[f"result.{col}" if col in point else col] = cell
            rows.append(row)
    finally:
        results.close()
    return _table(rows)


def _table(rows: list[dict]):
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame.from_records(rows)
