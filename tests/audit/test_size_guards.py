"""Size checks before allocation (issue 10, item 5): pipeline ``kron`` keys refused in milliseconds
before any big-integer arithmetic, and the operator constructors and products (identity, K ** t,
densifying a sparse operator, the audit's lower bound) refused under a limit before they allocate."""

from __future__ import annotations

import time
import tracemalloc

import networkx as nx
import numpy as np
import pytest

from chainamp import MarkovOperator, ResourceLimitError, resource_limits
from chainamp.audit import io as cio
from chainamp.errors import InvalidPipelineError
from chainamp.io import FORMAT, parse_pipeline

RR2 = [[0.75, 0.25], [0.25, 0.75]]


def doc(matrix, copies) -> dict:
    return {"format": FORMAT, "mechanism": {"epsilon": 1.0}, "steps": [{"matrix": matrix, "kron": copies}]}


def refused_fast(document, error=InvalidPipelineError):
    start = time.perf_counter()
    with pytest.raises(error) as info:
        parse_pipeline(document)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.1, elapsed
    text = str(info.value)
    assert "\n" not in text
    return text


# --------------------------------------------------------------------------- kron in pipeline files
@pytest.mark.parametrize("matrix, copies, expected", [
    (RR2, 9223372036854775807, "steps[0].kron: must be <= 4096 copies (got 9223372036854775807)"),
    ([[1.0]], 10**8, "steps[0].kron: must be <= 4096 copies (got 100000000)"),
    (RR2, 4096, "4096 copies of a 2x2 operator have about 10^2466 matrix entries (2^4096 x 2^4096, dense)"),
    ([[1.0]], 4097, "steps[0].kron: must be <= 4096 copies (got 4097)"),
    (RR2, 30, "30 copies of a 2x2 operator have about 1.15e+18 matrix entries (2^30 x 2^30, dense), above the "
              "16777216 (2**24, 128 MiB) a pipeline file may build"),
    (RR2, 13, "13 copies of a 2x2 operator have about 6.71e+07 matrix entries"),
    ([[0.5, 0.5]], 25, "25 copies of a 1x2 operator have about 3.36e+07 matrix entries (1^25 x 2^25, dense)"),
], ids=["int64-max", "1x1-1e8", "2x2-4096", "1x1-4097", "2x2-30", "2x2-just-above", "1x2"])
def test_kron_refused_in_milliseconds_naming_key_and_estimate(matrix, copies, expected):
    text = refused_fast(doc(matrix, copies))
    assert expected in text, text


@pytest.mark.parametrize("matrix, copies, shape", [(RR2, 12, (4096, 4096)), ([[1.0]], 4096, (1, 1)),
                                                   ([[0.5, 0.5]], 3, (1, 8))], ids=["2x2-12", "1x1-max", "1x2"])
def test_kron_at_the_limits_is_built(matrix, copies, shape):
    start = time.perf_counter()
    p = parse_pipeline(doc(matrix, copies))
    assert p.operators[0].shape == shape
    assert time.perf_counter() - start < 5.0


def test_kron_under_a_small_memory_limit_is_refused_before_building():
    with resource_limits(memory="100KB"):
        text = refused_fast(doc(RR2, 8), ResourceLimitError)
    assert text.startswith("steps[0].kron: the product of 8 copies of a 2x2 operator (matrix and labels) needs "
                           "about 624 KiB, above the memory limit of 97.7 KiB")
    assert parse_pipeline(doc(RR2, 8)).operators[0].shape == (256, 256)  # the default limit allows it


# --------------------------------------------------------------------------- operator constructors
def _peak(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def _refused(fn, match):
    def attempt():
        with resource_limits(memory="1MB"), pytest.raises(ResourceLimitError, match=match):
            fn()

    start = time.perf_counter()
    peak = _peak(attempt)
    assert time.perf_counter() - start < 0.5
    assert peak < 1_000_000, peak  # refused before allocating anything near the estimate
    return peak


def test_identity_refused_before_building_labels_or_matrix():
    _refused(lambda: MarkovOperator.identity(10**12), r"the 1000000000000 x 1000000000000 dense identity operator "
                                                        r"needs about .* pass sparse=True")
    _refused(lambda: MarkovOperator.identity(1000), r"the 1000 x 1000 dense identity operator needs about 15.6 MiB")
    _refused(lambda: MarkovOperator.identity(10**9, sparse=True), r"sparse identity operator needs about")
    with resource_limits(memory="1MB"):
        assert MarkovOperator.identity(100).shape == (100, 100)
        assert MarkovOperator.identity(2000, sparse=True).is_sparse


def test_dense_power_refused_before_the_product():
    K = MarkovOperator(np.full((400, 400), 1 / 400))
    _refused(lambda: K ** 3, r"the dense 400 x 400 product \(a step of K \*\* t\) needs about 2.44 MiB")
    with resource_limits(memory="3MB"):
        assert (K ** 1).shape == (400, 400)


def test_sparse_power_bound_follows_the_fill_in():
    path = MarkovOperator.random_walk(nx.path_graph(20_000), laziness=0.5)
    # K^2 has 5 entries a row; the bound for K^2 @ K^2 is 5 x 5 = 25 a row (8 MB at 16 bytes), K^4 has 9
    with resource_limits(memory="10MB"):
        assert (path ** 4).nnz == 9 * 20_000 - 2 * (1 + 2 + 3 + 4)
        with pytest.raises(ResourceLimitError, match=r"a sparse 20000 x 20000 product with up to 1.62e\+06 "
                                                     r"non-zeros \(a step of K \*\* t\) needs about 24.9 MiB"):
            path ** 32  # refused at the first product too big: K^4 @ K^4, bound 9 x 9 = 81 a row


def test_sparse_power_with_huge_exponent_is_refused_at_the_first_product_too_big():
    K = MarkovOperator.random_walk(nx.cycle_graph(3000), laziness=0.5)
    start = time.perf_counter()
    with resource_limits(memory="2MB"), pytest.raises(ResourceLimitError, match="a step of K \\*\\* t"):
        K ** (2**62)
    assert time.perf_counter() - start < 1.0


def test_densifying_a_big_sparse_operator_is_refused():
    K = MarkovOperator.random_walk(nx.cycle_graph(100_000), laziness=0.5)
    _refused(lambda: K.matrix, r"a dense 100000 x 100000 copy of a sparse operator with 300000 non-zeros needs "
                               r"about 74.5 GiB.*use .sparse")
    small = MarkovOperator.random_walk(nx.cycle_graph(10), laziness=0.5)
    with resource_limits(memory="1MB"):
        assert small.matrix.shape == (10, 10)


# --------------------------------------------------------------------------- audit
def test_audit_passes_a_refusal_through_unchanged(monkeypatch):
    """A valid pipeline too big for the limit is a ResourceLimitError, not an InvalidPipelineError."""
    p = parse_pipeline({"format": FORMAT, "mechanism": {"epsilon": 1.0}, "steps": [{"matrix": RR2}]})

    def refuse(*args, **kwargs):
        raise ResourceLimitError("the test array needs about 1 GiB")

    monkeypatch.setattr(cio, "amplify", refuse)
    with pytest.raises(ResourceLimitError, match="^the test array needs about 1 GiB$"):
        cio.audit(p)


def test_audit_lower_bound_checks_its_arrays():
    """The refutation's lower bound forms the n x m output distributions: checked first."""
    rr = {"catalogue": "randomized_response", "k": 300, "epsilon": 3.0}
    p = parse_pipeline({"format": FORMAT, "mechanism": rr, "steps": [dict(rr)]})
    report = cio.audit(p).report
    with resource_limits(memory="1MB"), pytest.raises(ResourceLimitError, match=r"the 300 x 300 output "
                                                                                 r"distributions of the pipeline"):
        cio._exact_delta_lower(report, list(p.operators), 0.3)
    assert cio._exact_delta_lower(report, list(p.operators), 0.3) > 0.0


@pytest.mark.parametrize("n, sparse", [(200, False), (3000, True)], ids=["small-dense", "large-sparse"])
def test_a_coarsening_is_never_an_n_by_g_dense_block_when_large(n, sparse):
    groups = {str(i): f"g{i // 2}" if n == 200 else f"g{i}" for i in range(n)}
    p = parse_pipeline({"format": FORMAT, "mechanism": {"epsilon": 1.0},
                        "steps": [{"graph": "path_graph", "n": n, "laziness": 0.5}, {"coarsen": groups}]})
    op = p.operators[1]
    assert op.is_sparse is sparse and op.nnz == n
    assert op.shape == (n, n // 2 if n == 200 else n)
    rows = op.sparse.tocsr()
    assert all(rows[i].toarray().ravel()[op.output_index(groups[str(i)])] == 1.0 for i in (0, n // 2, n - 1))


# --------------------------------------------------------------------------- structured catalogue entries
def rr_doc(k: int) -> dict:
    return {"format": FORMAT, "mechanism": {"catalogue": "randomized_response", "k": k, "epsilon": 3.0},
            "steps": [{"catalogue": "randomized_response", "k": k, "epsilon": 1.0}],
            "claims": [{"epsilon": 0.5, "delta": 1e-6}]}


def test_structured_catalogue_k_is_not_capped_and_is_audited_without_densifying():
    """randomized_response is a SymmetricChannel: a 10^6-ary pipeline is audited per orbit, under 200 MB."""
    with resource_limits(memory="200MB"):
        result = cio.audit(parse_pipeline(rr_doc(10**6)))
    assert result.ok
    assert parse_pipeline(rr_doc(10**6)).operators[0].shape == (10**6, 10**6)


def test_dense_catalogue_k_stays_capped():
    document = {"format": FORMAT, "mechanism": {"epsilon": 1.0},
                "steps": [{"catalogue": "from_multi_freq_ldpy", "k": 5001, "protocol": "GRR", "epsilon": 1.0}]}
    assert "must be <= 5000 (a dense k x k operator; got 5001)" in refused_fast(document)


def test_unary_encoding_is_in_the_catalogue():
    document = {"format": FORMAT,
                "mechanism": {"catalogue": "unary_encoding", "k": 6, "epsilon": 2.0, "kind": "OUE"},
                "steps": [{"catalogue": "binary_randomized_response", "epsilon": 1.0, "kron": 6}],
                "claims": [{"epsilon": 0.8}]}
    result = cio.audit(parse_pipeline(document))
    assert result.ok
