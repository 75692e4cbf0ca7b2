"""The memory guard covers every allocation that grows with the input (issue 18): pipeline graphs,
label sets, design tables, matrix files, Kronecker pair orbits, neighbour lists and dp-accounting's
privacy loss distributions are sized (or built structured) before anything big is allocated."""

from __future__ import annotations

import time
import tracemalloc

import networkx as nx
import numpy as np
import pytest

from chainamp import MarkovOperator, ResourceLimitError, resource_limits
from chainamp.io import FORMAT, parse_pipeline
from chainamp.operators import SymmetricChannel


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def refused(fn, match, limit="10MB", seconds=1.0, max_peak=5_000_000):
    """``fn`` raises ResourceLimitError under ``limit``, fast and before allocating anything near it."""
    def attempt():
        with resource_limits(memory=limit), pytest.raises(ResourceLimitError, match=match) as info:
            fn()
        return info

    start = time.perf_counter()
    peak = _peak(attempt)
    assert time.perf_counter() - start < seconds
    assert peak < max_peak, peak
    return peak


def graph_doc(**step) -> dict:
    return {"format": FORMAT, "mechanism": {"epsilon": 1.0}, "steps": [step]}


# --------------------------------------------------------------------------- graphs in pipeline files
@pytest.mark.parametrize("lazy", [0.0, 0.3, 1.0], ids=["plain", "lazy", "stay"])
def test_complete_graph_walk_is_the_symmetric_channel_networkx_builds(lazy):
    op = parse_pipeline(graph_doc(graph="complete_graph", n=30, laziness=lazy, weighted=True,
                                  integer_labels=True)).operators[0]
    dense = MarkovOperator.random_walk(nx.complete_graph(30), laziness=lazy)
    assert isinstance(op, SymmetricChannel)
    assert np.array_equal(op.matrix, dense.matrix) and op.inputs == dense.inputs and op.outputs == dense.outputs


def test_complete_graph_of_100000_nodes_is_built_in_constant_memory():
    start = time.perf_counter()
    with resource_limits(memory="1MB"):
        p = parse_pipeline(graph_doc(graph="complete_graph", n=100_000, laziness=0.5))
    assert time.perf_counter() - start < 1.0
    assert p.operators[0].shape == (100_000, 100_000) and "random walk on complete_graph(100000)" in p.step_names[0]


def test_complete_graph_of_one_node_still_needs_laziness():
    with pytest.raises(Exception, match="no out-edge"):
        parse_pipeline(graph_doc(graph="complete_graph", n=1))
    assert parse_pipeline(graph_doc(graph="complete_graph", n=1, laziness=1.0)).operators[0].shape == (1, 1)


def test_generator_graphs_are_sized_before_networkx_builds_them():
    refused(lambda: parse_pipeline(graph_doc(graph="path_graph", n=100_000)),
            r"steps\[0\]: the networkx graph path_graph\(100000\) \(100000 nodes, up to 100000 edges\) and its "
            r"random walk needs about 153 MiB")
    with resource_limits(memory="10MB"):
        assert parse_pipeline(graph_doc(graph="cycle_graph", n=1000)).operators[0].shape == (1000, 1000)


def test_edge_lists_are_sized_from_their_line_count_before_reading(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("".join(f"{i},{i + 1}\n" for i in range(20_000)))
    doc = graph_doc(edges=str(path))
    refused(lambda: parse_pipeline(doc), r"the networkx graph of e.csv \(40000 nodes, up to 20000 edges\)",
            limit="20MB")
    with resource_limits(memory="100MB"):
        assert parse_pipeline(doc).operators[0].shape == (20_001, 20_001)


# --------------------------------------------------------------------------- label sets in pipeline files
HUGE = 9223372036854775807


def rr_doc(k: int, **extra) -> dict:
    rr = {"catalogue": "randomized_response", "k": k, "epsilon": 1.0}
    return {"format": FORMAT, "mechanism": dict(rr), "steps": [dict(rr, **extra)]}


@pytest.mark.parametrize("extra", [{}, {"repeat": 3}], ids=["chained", "repeated"])
def test_lazy_labels_are_matched_without_listing_them(extra):
    start = time.perf_counter()
    with resource_limits(memory="1MB"):
        p = parse_pipeline(rr_doc(HUGE, **extra))
    assert time.perf_counter() - start < 1.0 and p.operators[0].shape == (HUGE, HUGE)


def test_a_label_set_to_build_is_sized_first():
    doc = {"format": FORMAT, "mechanism": {"matrix": [[0.5, 0.5], [0.5, 0.5]], "outputs": ["a", "b"]},
           "steps": [{"matrix": [[1.0, 0.0], [0.0, 1.0]], "inputs": ["b", "a"]}]}
    assert parse_pipeline(doc).operators[0].inputs == ("b", "a")  # the same labels in another order
    with resource_limits(memory="100B"), pytest.raises(ResourceLimitError, match=r"steps\[0\]: its inputs and "
                                                                                  r"the outputs before it: comparing "
                                                                                  r"two sets of 2 labels"):
        parse_pipeline(doc)
    doc["steps"][0]["inputs"] = ["a", "c"]
    with pytest.raises(Exception, match=r"its 2 inputs \['a', 'c'\] are not the 2 outputs \['a', 'b'\]"):
        parse_pipeline(doc)


def test_neighbours_of_a_product_mechanism_are_looked_up_not_listed():
    m = 30
    pair = [[0] * m, [1] + [0] * (m - 1)]
    doc = {"format": FORMAT, "mechanism": {"catalogue": "rappor_pipeline", "m": m, "h": 1, "part": "permanent"},
           "steps": [{"catalogue": "rappor_pipeline", "m": m, "h": 1, "part": "instantaneous"}], "neighbors": [pair]}
    start = time.perf_counter()
    with resource_limits(memory="5MB"):
        p = parse_pipeline(doc)
    assert time.perf_counter() - start < 1.0
    assert p.neighbors == ((tuple(pair[0]), tuple(pair[1])),)
    doc["neighbors"] = [[[2] + [0] * (m - 1), pair[0]]]
    with pytest.raises(Exception, match=r"neighbors\[0\]: \(2, 0, 0, .* is not an input label of the mechanism"):
        parse_pipeline(doc)


# --------------------------------------------------------------------------- designs
@pytest.mark.parametrize("gamma", [0.5, 0.0], ids=["lp", "closed-form"])
def test_design_tables_are_sized_before_any_is_built(gamma):
    from chainamp.design import optimal_mixing_operator

    refused(lambda: optimal_mixing_operator(100_000, gamma, symmetry=False),
            r"optimal_mixing_operator: the dense 100000 x 100000 loss, cost and operator tables needs about 894 GiB",
            limit="500MB")


def test_symmetric_mixing_design_at_100000_states_needs_no_table():
    """The 0-1 loss and a uniform prior are invariant under relabelling: the closed form (design/symmetric.py)
    returns a SymmetricChannel without any n x n table, within 500 MB."""
    from chainamp import resource_limits
    from chainamp.design import optimal_mixing_operator

    with resource_limits(memory="500MB"):
        r = optimal_mixing_operator(100_000, 0.5)
    assert r.K.shape == (100_000, 100_000) and r.certified_gamma <= 0.5
    assert r.dual_bound <= r.objective <= r.dual_bound + 1e-12


def test_post_processing_design_tables_are_sized_first():
    from chainamp.design import optimal_post_processing
    from chainamp.mechanisms import randomized_response

    M = randomized_response(3, 1.0)
    refused(lambda: optimal_post_processing(M, 0.5, outputs=10**9), r"outputs: the 1000000000 labels 0..999999999 "
                                                                    r"needs about 149 GiB", limit="50MB")
    refused(lambda: optimal_post_processing(M, 0.5, outputs=10**5),
            r"optimal_post_processing: the dense 3 x 100000 loss, cost and operator tables", limit="20MB",
            max_peak=16_000_000)  # the 100000 labels themselves (within the limit)


def test_default_loss_is_the_zero_one_loss():
    from chainamp.design.common import check_loss

    ell = check_loss(None, ("a", "b", 3), (3, "x", "a", "b"))
    assert ell.tolist() == [[1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0]]


# --------------------------------------------------------------------------- matrix files and chain analysis
def huge_npy(path, shape=(100_000, 100_000), dtype="<f8"):
    """An NPY file whose header promises ``shape`` (a sparse file: its data is never written)."""
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": dtype, "fortran_order": False, "shape": shape})
        fh.truncate(fh.tell() + int(np.prod(shape)) * np.dtype(dtype).itemsize)
    return path


def test_npy_files_are_sized_from_their_header_before_loading(tmp_path):
    from chainamp.io import load_operator

    path = huge_npy(tmp_path / "big.npy")
    refused(lambda: load_operator(path), r"big.npy: reading the 100000 x 100000 float64 matrix and building its "
                                         r"operator needs about 224 GiB")
    small = tmp_path / "K.npy"
    np.save(small, np.full((256, 256), 1 / 256, dtype=np.float32))
    refused(lambda: load_operator(small), r"K.npy: reading the 256 x 256 float32 matrix .* needs about 1.41 MiB",
            limit="1MB")
    with resource_limits(memory="2MB"):
        assert load_operator(small).shape == (256, 256)


def test_csv_files_are_sized_from_a_streamed_count_before_reading(tmp_path):
    from chainamp.io import load_operator

    path = tmp_path / "K.csv"
    row = ",".join(["0.01"] * 100)
    path.write_text("# uniform\n" + "\n".join([row] * 100) + "\n")
    refused(lambda: load_operator(path), r"K.csv: reading 101 lines with 10001 cells needs about 563 KiB", limit="500KB")
    with resource_limits(memory="5MB"):
        assert load_operator(path).shape == (100, 100)


def test_chain_analysis_is_sized_first():
    from chainamp import analyze_chain

    K = MarkovOperator(np.full((400, 400), 1 / 400))
    refused(lambda: analyze_chain(K), r"the chain analysis of a dense 400-state operator .* needs about 12.2 MiB",
            limit="5MB")
    walk = MarkovOperator.random_walk(nx.karate_club_graph(), laziness=0.5)
    with resource_limits(memory="1MB"):
        assert analyze_chain(walk).is_irreducible
        assert analyze_chain(MarkovOperator(np.full((100, 100), 0.01))).spectral_gap == pytest.approx(1.0)


# --------------------------------------------------------------------------- Kronecker products, neighbours
F = [[0.3, 0.7], [0.6, 0.4]]


def test_neighbours_of_a_huge_product_are_looked_up_not_listed():
    from chainamp import privacy_profile
    from chainamp.operators import KroneckerOperator

    K = KroneckerOperator.power(MarkovOperator(F), 30)
    pair = ((0,) * 30, (1,) + (0,) * 29)
    start = time.perf_counter()
    with resource_limits(memory="20MB"):
        prof = privacy_profile(K, [pair])
    assert time.perf_counter() - start < 2.0
    assert prof.witness(0.0) in (pair, pair[::-1])
    with pytest.raises(Exception, match=r"unknown input label \(2,"):
        privacy_profile(K, [((2,) + (0,) * 29, pair[0])])


def test_all_pairs_of_plain_labels_are_sized_first():
    from chainamp.privacy import neighbor_pairs

    refused(lambda: neighbor_pairs(range(100_000)), r"the 100000 input labels and all their ordered pairs needs "
                                                    r"about 447 GiB", limit="1GB")
    assert neighbor_pairs(["a", "b"]).tolist() == [[0, 1], [1, 0]]


def test_kronecker_orbits_are_sized_before_they_are_computed():
    from chainamp import dobrushin
    from chainamp.operators import KroneckerOperator

    big = KroneckerOperator.power(MarkovOperator(F), 1000)
    refused(lambda: dobrushin(big, 0.5), r"the 1001 pair orbits of a Kronecker product of 1000 coordinates "
                                         r"\(1.68e\+08 outcomes of compressed pairs in all\) needs about 40 GiB",
            limit="500MB", seconds=3.0)  # 0.2 s; tracemalloc slows the pair-type enumeration
    with resource_limits(memory="200MB"):
        assert 0.99 < dobrushin(KroneckerOperator.power(MarkovOperator(F), 100), 0.5).gamma < 1.0


# --------------------------------------------------------------------------- dp-accounting's PLDs
EXTREME = np.array([[0.5, 0.5], [1e-300, 1.0]])


def test_compose_sizes_dp_accountings_fft_before_calling_it():
    from chainamp import compose

    compose([np.array([[0.75, 0.25], [0.25, 0.75]])], counts=[2], progress=False)  # dp-accounting imported
    refused(lambda: compose([EXTREME], counts=[200], progress=False),
            r"items\[0\] composed 200 times \(dp-accounting's FFT over the loss grid of step 0.001\) needs about "
            r"19.5 GiB.*value_discretization_interval=", limit="500MB", seconds=10.0, max_peak=200_000_000)
    with resource_limits(memory="500MB"):
        assert compose([EXTREME], counts=[2], progress=False).delta(1.0) == pytest.approx(0.75, abs=1e-6)


def test_a_fine_grid_is_sized_before_the_pld_is_built():
    from chainamp.accounting import pair_to_pld

    refused(lambda: pair_to_pld([0.5, 0.5, 0.0], [1e-300, 0.5, 0.5], value_discretization_interval=1e-7),
            r"the privacy loss distribution on a grid of 1e-07 \(13801647619 grid points: losses from -690.1 to "
            r"690.1\) needs about 2.01 TiB", limit="1GB")


def test_grid_split_touches_only_the_grid_points_it_fills():
    """The sparse aggregation gives exactly the floats of a dense bincount over the whole span."""
    from chainamp.accounting.pld import _grid_split

    rng = np.random.default_rng(18)
    for _ in range(20):
        p, q = rng.dirichlet(np.full(12, 0.3)), rng.dirichlet(np.full(12, 0.3))
        table, inf_mass, lo, hi = _grid_split(p, q, 1e-3)
        # the reference: the dense construction this replaced
        pos = (p > 0) & (q > 0)
        lp, lq = np.log(p[pos]), np.log(q[pos])
        loss = (lp - lq) + 8.0 * 2.0**-53 * (np.abs(lp) + np.abs(lq) + 1.0)
        j = np.floor(loss / 1e-3)
        x = np.minimum(j * 1e-3 - loss - 4.0 * 2.0**-53 * (np.abs(j * 1e-3) + np.abs(loss)), 0.0)
        up = p[pos] * np.clip(np.expm1(x) / np.expm1(-1e-3) * (1.0 + 8.0 * 2.0**-53), 0.0, 1.0)
        down = np.maximum(p[pos] - up, 0.0)
        j = j.astype(np.int64)
        base, top = int(j.min()), int(j.max()) + 1
        mass = np.bincount(j - base, weights=down, minlength=top - base + 1)
        mass += np.bincount(j + 1 - base, weights=up, minlength=top - base + 1)
        mass *= 1.0 + (2 * 12 + 4) * 2.0**-53
        assert table == {int(k) + base: float(mass[k]) for k in np.flatnonzero(mass > 0)}


@pytest.mark.parametrize("times", [2, 20, 200])
def test_self_convolve_bounds_are_dp_accountings(times):
    from dp_accounting.pld import common

    from chainamp.accounting.pld import _self_convolve_bounds

    rng = np.random.default_rng(times)
    probs = np.where(rng.random(500) < 0.2, rng.random(500), 0.0)
    probs /= probs.sum()
    pos = np.flatnonzero(probs)
    assert _self_convolve_bounds(pos, probs[pos], probs.size, times, 1e-15) == \
        tuple(common.compute_self_convolve_bounds(probs, times, 1e-15))


@pytest.mark.parametrize("memoized", [True, False], ids=["memoized", "fresh"])
def test_reports_of_a_huge_rr_pipeline_never_list_its_labels(memoized):
    from chainamp.audit import io as cio

    doc = dict(rr_doc(HUGE), reports=[1, 3], memoized=memoized)
    start = time.perf_counter()
    with resource_limits(memory="200MB"):  # computed per orbit, or refused for what has no structured form
        try:
            assert cio.audit(parse_pipeline(doc)).over_time is not None
        except ResourceLimitError as exc:
            assert "densifying a 9223372036854775807 x 9223372036854775807 SymmetricChannel" in str(exc)
    assert time.perf_counter() - start < 10.0
