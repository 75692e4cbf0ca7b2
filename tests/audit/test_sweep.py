"""chainamp.sweep (issue 11): any computation over a parameter grid, as a table, on any executor."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import chainamp
from chainamp import DP, InvalidParameterError, mechanisms

pd = pytest.importorskip("pandas")


def certified(epsilon, k):
    """A module-level function (picklable by a process pool): the report of DP(epsilon) after k-RR."""
    return chainamp.amplify(DP(epsilon, 1e-6), mechanisms.randomized_response(k, 1.0))


def coefficient(k, epsilon):
    return chainamp.dobrushin(mechanisms.randomized_response(k, 2.0), epsilon)


def fails_at_three(x):
    if x == 3:
        raise ValueError(f"x = {x} is not allowed")
    return {"x": x, "square": x * x}


GRID = {"epsilon": [0.25, 1.0, 4.0], "k": [2, 5]}


def test_dict_grid_is_the_cartesian_product_in_order():
    table = chainamp.sweep(certified, GRID, progress=False)
    assert isinstance(table, pd.DataFrame)
    assert table[["epsilon", "k"]].values.tolist() == [[e, k] for e in GRID["epsilon"] for k in GRID["k"]]
    for epsilon, k, best in table[["epsilon", "k", "best.epsilon"]].itertuples(index=False):
        assert best == certified(epsilon, k).best.epsilon
    # a report is flattened through its to_dict(): nested dicts as dotted columns, lists as cells
    assert {"best.epsilon", "best.source", "coefficients.dobrushin", "target_delta", "bounds"} <= set(table.columns)
    assert isinstance(table["bounds"].iloc[0], list)


def test_list_of_points_keeps_their_order():
    points = [{"k": 3, "epsilon": 1.0}, {"k": 2, "epsilon": 0.0}, {"k": 3, "epsilon": math.inf}]
    table = chainamp.sweep(coefficient, points, progress=False)
    assert table["k"].tolist() == [3, 2, 3]
    # a dataclass result: one column per field
    assert table["gamma"].tolist() == [coefficient(**p).gamma for p in points]
    assert table["pair"].tolist() == [coefficient(**p).pair for p in points]


@pytest.mark.parametrize("result, columns", [
    (2.5, {"x": 1, "result": 2.5}),
    ({"a": 1, "b": {"c": 2}}, {"x": 1, "a": 1, "b.c": 2}),
    ({"x": 9}, {"x": 1, "result.x": 9}),
    (None, {"x": 1, "result": None}),
], ids=["scalar", "nested-dict", "collision", "none"])
def test_result_columns(result, columns):
    rows = chainamp.sweep(lambda x: result, [{"x": 1}], progress=False)
    assert rows.to_dict("records") == [columns]


def test_infinities_written_as_strings_by_to_dict_come_back_as_floats():
    class Report:
        def to_dict(self):
            return {"epsilon": "inf", "low": "-inf", "name": "M"}

    row = chainamp.sweep(lambda x: Report(), {"x": [0]}, progress=False).to_dict("records")[0]
    assert row == {"x": 0, "epsilon": math.inf, "low": -math.inf, "name": "M"}


def test_without_pandas_a_list_of_records(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    rows = chainamp.sweep(fails_at_three, {"x": [1, 2]}, progress=False)
    assert rows == [{"x": 1, "result.x": 1, "square": 1}, {"x": 2, "result.x": 2, "square": 4}]
    assert chainamp.sweep(fails_at_three, {"x": []}, progress=False) == []


@pytest.mark.parametrize("where", ["serial", "process_pool", "dask"])
def test_executors_give_the_serial_table(where, request):
    executor = None
    if where == "process_pool":
        executor = request.getfixturevalue("process_pool")
    elif where == "dask":
        executor = request.getfixturevalue("dask_client").get_executor()
    serial = chainamp.sweep(certified, GRID, progress=False)
    table = chainamp.sweep(certified, GRID, executor=executor, progress=False)
    pd.testing.assert_frame_equal(table, serial)
    assert np.array_equal(table["best.epsilon"].to_numpy(), serial["best.epsilon"].to_numpy())


@pytest.mark.parametrize("where", ["serial", "process_pool"])
def test_an_error_names_its_point(where, request):
    executor = request.getfixturevalue("process_pool") if where == "process_pool" else None
    with pytest.raises(ValueError, match=r"x = 3 is not allowed") as info:
        chainamp.sweep(fails_at_three, {"x": [1, 2, 3, 4]}, executor=executor, progress=False)
    assert info.value.__notes__ == ["in chainamp.sweep at grid point 2 of 4: {'x': 3}"]


def test_progress_bar(capsys):
    chainamp.sweep(fails_at_three, {"x": [1, 2]}, progress=True)
    err = capsys.readouterr().err
    assert "sweep:" in err and "0/2" in err and "point" in err


@pytest.mark.parametrize("kwargs, error, message", [
    ({"function": 3, "grid": {"x": [1]}}, TypeError, r"function must be a callable, got int 3"),
    ({"grid": 5}, TypeError, r"grid must be a dict of lists or a list of dicts, got int 5"),
    ({"grid": "x"}, TypeError, r"grid must be a dict of lists or a list of dicts, got str 'x'"),
    ({"grid": {"x": 3}}, TypeError, r"grid\['x'\] must be a list of values, got int 3"),
    ({"grid": {"x": "abc"}}, TypeError, r"grid\['x'\] must be a list of values, got str 'abc'"),
    ({"grid": {1: [1]}}, InvalidParameterError, r"grid keys must be keyword names, got 1"),
    ({"grid": [{"x": 1}, 7]}, TypeError, r"grid point 1 must be a dict of keyword arguments, got int 7"),
    ({"grid": [{"not a name": 1}]}, InvalidParameterError, r"grid point 0 has a key that is not a keyword name"),
    ({"executor": "threads"}, TypeError, r"executor must be None or a concurrent.futures.Executor"),
    ({"progress": "yes"}, TypeError, r"progress must be None, True or False"),
], ids=["function", "grid-int", "grid-str", "values-int", "values-str", "key", "point", "point-key", "executor",
        "progress"])
def test_validation(kwargs, error, message):
    args = {"function": fails_at_three, "grid": {"x": [1]}, **kwargs}
    with pytest.raises(error, match=message):
        chainamp.sweep(**args)
