"""Dask-backed operators (issue 11): MarkovOperator.from_dask / to_dask, blockwise validation, the row reader."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import chainamp
from chainamp import InvalidOperatorError, InvalidParameterError, MarkovOperator, ResourceLimitError
from chainamp.operators import DaskMarkovOperator, DaskRows, row_source

from conftest import random_stochastic

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


@pytest.fixture
def dense16(rng):
    return random_stochastic(rng, 16, 16, zero_prob=0.3)


def test_import_chainamp_does_not_import_dask(fresh_import):
    assert "dask" not in fresh_import["an operator"]  # import chainamp, then build an operator


@pytest.mark.parametrize("chunks", [(4, 4), (16, 16), (3, 5), (1, 16)], ids=["4x4", "one", "ragged", "rows"])
def test_round_trip_equals_in_memory(dense16, chunks):
    K = MarkovOperator(dense16, inputs=[f"x{i}" for i in range(16)], outputs=[f"y{j}" for j in range(16)])
    arr = K.to_dask(chunks)
    assert isinstance(arr, da.Array) and arr.chunks == da.zeros((16, 16), chunks=chunks).chunks
    D = MarkovOperator.from_dask(arr, K.inputs, K.outputs)
    assert isinstance(D, DaskMarkovOperator) and isinstance(D, MarkovOperator)
    assert D.shape == (16, 16) and D.inputs == K.inputs and D.outputs == K.outputs
    assert not D.is_sparse and D.nnz == K.nnz
    assert D == K and np.array_equal(D.matrix, K.matrix)
    assert np.array_equal(D.row("x3"), K.row("x3"))
    assert np.array_equal(D.to_dask((8, 8)).compute(), dense16)
    stats = D.row_stats  # bit-identical to numpy on the whole matrix
    assert np.array_equal(stats.row_sums, dense16.sum(axis=1))
    assert np.array_equal(stats.col_positive, np.count_nonzero(dense16 > 0, axis=0))
    assert np.array_equal(stats.col_argmin, dense16.argmin(axis=0))
    assert np.array_equal(stats.col_argmax, dense16.argmax(axis=0))
    assert np.array_equal(stats.col_min, dense16.min(axis=0)) and np.array_equal(stats.col_max, dense16.max(axis=0))


def test_sparse_operator_to_dask(rng):
    K = MarkovOperator(sp.csr_matrix(random_stochastic(rng, 12, 9, zero_prob=0.6)))
    arr = K.to_dask((5, 4))
    assert np.array_equal(arr.compute(), K.matrix)
    assert MarkovOperator.from_dask(arr) == K


def _bad(kind: str, rng) -> tuple[np.ndarray, str]:
    A = random_stochastic(rng, 16, 16)
    if kind == "nan":
        A[13, 2] = np.nan
        A[2, 5] = -0.5  # a negative entry earlier: the non-finite one is still reported first, as in memory
        return A, r"K entries must be finite \(entry \(13, 2\) is not\)"
    if kind == "inf":
        A[6, 15] = np.inf
        return A, r"K entries must be finite \(entry \(6, 15\) is not\)"
    if kind == "negative":
        A[9, 1] = -1e-3
        A[14, 0] = -1.0
        return A, r"K entries must be non-negative \(entry \(9, 1\) is negative\)"
    A[11] *= 1.001
    A[15] *= 2.0
    return A, r"K rows must sum to 1 within row_sum_atol=1e-09 \(row 11 sums to 1.001"


@pytest.mark.parametrize("kind", ["nan", "inf", "negative", "row_sum"])
def test_blockwise_validation_has_the_in_memory_errors(kind, rng):
    A, message = _bad(kind, rng)
    with pytest.raises(InvalidOperatorError, match=message):
        MarkovOperator(A)
    with pytest.raises(InvalidOperatorError, match=message):
        MarkovOperator.from_dask(da.from_array(A, chunks=(4, 4)))


def test_row_sum_atol_is_honoured(rng):
    A = random_stochastic(rng, 8, 8)
    A[5] *= 1 + 1e-6
    with pytest.raises(InvalidOperatorError, match=r"row 5 sums to"):
        MarkovOperator.from_dask(da.from_array(A, chunks=4))
    assert MarkovOperator.from_dask(da.from_array(A, chunks=4), row_sum_atol=1e-5) == MarkovOperator(A, row_sum_atol=1e-5)


@pytest.mark.parametrize("array, error, message", [
    (np.eye(2), TypeError, r"array must be a dask.array.Array .*got ndarray"),
    ([[1.0]], TypeError, r"array must be a dask.array.Array"),
], ids=["numpy", "list"])
def test_from_dask_refuses_non_dask(array, error, message):
    with pytest.raises(error, match=message):
        MarkovOperator.from_dask(array)


def test_from_dask_shape_and_dtype_errors():
    with pytest.raises(InvalidOperatorError, match=r"K must be 2-D \(got 1-D"):
        MarkovOperator.from_dask(da.ones(4, chunks=2))
    with pytest.raises(InvalidOperatorError, match=r"at least one row and one column"):
        MarkovOperator.from_dask(da.ones((0, 3), chunks=2))
    with pytest.raises(TypeError, match=r"real entries"):
        MarkovOperator.from_dask(da.from_array(np.eye(2) + 0j, chunks=1))
    with pytest.raises(TypeError, match=r"array of numbers"):
        MarkovOperator.from_dask(da.from_array(np.array([["a"]]), chunks=1))
    unknown = da.from_array(np.eye(4), chunks=2)
    unknown = unknown[unknown[:, 0] >= 0]
    with pytest.raises(InvalidOperatorError, match=r"known shape"):
        MarkovOperator.from_dask(unknown)
    with pytest.raises(InvalidOperatorError, match=r"inputs has 3 labels but the matrix has 2"):
        MarkovOperator.from_dask(da.eye(2, chunks=1), inputs=["a", "b", "c"])


def test_integer_arrays_are_read_as_floats():
    D = MarkovOperator.from_dask(da.eye(3, chunks=2, dtype=int))
    assert D.to_dask(3).dtype == np.float64 and D == MarkovOperator.identity(3)


@pytest.mark.parametrize("chunks", [(5, 5, 5), "nonsense", (-1, 0)], ids=["3d", "string", "zero"])
def test_to_dask_bad_chunks(chunks, dense16):
    for K in (MarkovOperator(dense16), MarkovOperator.from_dask(da.from_array(dense16, chunks=4))):
        with pytest.raises(InvalidParameterError, match=r"chunks must be dask chunks"):
            K.to_dask(chunks)


def test_dense_view_is_memory_checked(dense16):
    D = MarkovOperator.from_dask(da.from_array(dense16, chunks=4))
    with chainamp.resource_limits(memory=1000):
        with pytest.raises(ResourceLimitError, match=r"dense 16 x 16 matrix of a dask-backed operator"):
            D.matrix
        assert D.shape == (16, 16) and D.rows[0:2].shape == (2, 16)  # rows are still read per block


def test_row_reader(dense16):
    D = MarkovOperator.from_dask(da.from_array(dense16, chunks=(4, 4)))
    reader = row_source(D)
    assert isinstance(reader, DaskRows) and row_source(MarkovOperator(dense16)) is None
    assert reader.shape == (16, 16)
    for idx in ([3, 1, 3, 15], np.array([7, 8, 9]), slice(5, 11), [0], np.array([], dtype=int)):
        assert np.array_equal(reader[idx], dense16[idx])
    assert np.array_equal(reader[4], dense16[4])
    assert np.array_equal(reader[:, 5], dense16[:, 5])
    with pytest.raises(TypeError, match=r"whole rows \(a slice or a sequence of row indices\) or one whole column"):
        reader[1:3, 2]
    again = pickle.loads(pickle.dumps(reader))
    assert np.array_equal(again[[2, 9]], dense16[[2, 9]])


def test_restrict_stays_blockwise(dense16):
    D = MarkovOperator.from_dask(da.from_array(dense16, chunks=4), inputs=list("abcdefghijklmnop"))
    R = D.restrict(["k", "b", "c"])
    assert isinstance(R, DaskMarkovOperator) and R.inputs == ("k", "b", "c")
    assert R == MarkovOperator(dense16, inputs=list("abcdefghijklmnop")).restrict(["k", "b", "c"])
    assert D.restrict(D.inputs) is D
    with pytest.raises(InvalidOperatorError, match=r"repeated input label"):
        D.restrict(["a", "a"])
    with pytest.raises(InvalidOperatorError, match=r"at least one input label"):
        D.restrict([])


def test_validation_and_rows_on_a_local_cluster(dask_client, rng):
    """The validation pass runs on the cluster (Client as the current scheduler), and a row reader shipped to
    a worker fetches its rows there, from an array persisted on the cluster (never on the client)."""
    A = random_stochastic(rng, 16, 16, zero_prob=0.2)
    with dask.config.set(scheduler=dask_client):
        arr = dask_client.persist(da.from_array(A, chunks=(4, 4)))
        D = MarkovOperator.from_dask(arr)
        assert np.array_equal(D.row_stats.row_sums, A.sum(axis=1))
        bad = A.copy()
        bad[10] *= 1.5
        with pytest.raises(InvalidOperatorError, match=r"row 10 sums to"):
            MarkovOperator.from_dask(da.from_array(bad, chunks=(4, 4)))
    ex = dask_client.get_executor()
    got = ex.submit(_read, (D.rows, [12, 3, 3])).result()
    assert np.array_equal(got, A[[12, 3, 3]])


def _read(task):
    reader, idx = task
    return reader[idx]


def test_reader_summaries_only_where_the_operator_was_built(dense16):
    D = MarkovOperator.from_dask(da.from_array(dense16, chunks=4))
    reader = D.rows
    assert np.array_equal(reader.sum(axis=1), dense16.sum(axis=1))
    assert np.array_equal(reader.min(axis=0), dense16.min(axis=0))
    with pytest.raises(TypeError, match=r"DaskRows.sum\(axis=1\) only"):
        reader.sum(axis=0)
    with pytest.raises(TypeError, match=r"DaskRows.min\(axis=0\) only"):
        reader.min(axis=1)
    shipped = pickle.loads(pickle.dumps(reader))  # what a worker receives: the array, not the summaries
    assert shipped.stats is None
    with pytest.raises(TypeError, match=r"on the process that built the operator"):
        shipped.sum(axis=1)


def test_pickling_never_densifies(dense16):
    D = MarkovOperator.from_dask(da.from_array(dense16, chunks=4), inputs=[f"x{i}" for i in range(16)])
    with chainamp.resource_limits(memory=1000):
        again = pickle.loads(pickle.dumps(D))
    assert isinstance(again, DaskMarkovOperator) and again.inputs == D.inputs
    assert np.array_equal(again.row_stats.row_sums, D.row_stats.row_sums)
    assert again == MarkovOperator(dense16, inputs=D.inputs)


@pytest.mark.parametrize("kind", ["random", "dyadic", "off-by-1e-12"])
def test_operator_error_from_the_validation_pass(kind, rng):
    from chainamp.operators import operator_error, smallest_positive

    A = random_stochastic(rng, 16, 16, zero_prob=0.3)
    if kind == "dyadic":
        A = np.zeros((16, 16))
        A[np.arange(16), rng.integers(0, 16, 16)] += 0.5
        A[np.arange(16), rng.integers(0, 16, 16)] += 0.25
        A[:, 3] += 0.25
    elif kind == "off-by-1e-12":
        A[7] *= 1 + 1e-12
    K, D = MarkovOperator(A), MarkovOperator.from_dask(da.from_array(A, chunks=(4, 4)))
    assert D.row_stats.dyadic == (kind == "dyadic")
    assert operator_error(D) == operator_error(K)
    assert smallest_positive(D) == smallest_positive(K) == A[A > 0].min()


def test_validation_over_many_bands_and_groups(monkeypatch, rng, capsys):
    """Bands of 2 rows merged in groups of 3 bands: the summaries and the error precedence are those of the
    whole matrix (a non-finite entry in a later group is still reported before an earlier negative one)."""
    from chainamp.operators import dask_backed

    monkeypatch.setattr(dask_backed, "BAND_ENTRIES", 2 * 16)
    monkeypatch.setattr(dask_backed, "BANDS_PER_GROUP", 3)
    A = random_stochastic(rng, 16, 16, zero_prob=0.3)
    D = MarkovOperator.from_dask(da.from_array(A, chunks=(5, 7)), progress=True)
    assert "validating rows" in capsys.readouterr().err
    st = D.row_stats
    assert np.array_equal(st.row_sums, A.sum(axis=1)) and np.array_equal(st.col_argmax, A.argmax(axis=0))
    assert np.array_equal(st.col_argmin, A.argmin(axis=0)) and np.array_equal(st.row_nnz, (A > 0).sum(axis=1))
    bad = A.copy()
    bad[1, 4], bad[14, 9] = -0.25, np.nan
    with pytest.raises(InvalidOperatorError, match=r"entry \(14, 9\) is not"):
        MarkovOperator.from_dask(da.from_array(bad, chunks=(5, 7)))
    with pytest.raises(TypeError, match=r"progress must be None, True or False"):
        MarkovOperator.from_dask(da.from_array(A, chunks=4), progress="yes")
