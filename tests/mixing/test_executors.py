"""Serial, process-pool and Dask results are bit-identical (issue 11): values and witnesses of every coefficient
and of the exact profile, for in-memory operators and for dask-backed ones read by row blocks on the workers."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import networkx as nx
import numpy as np
import pytest

from chainamp import (DP, MarkovOperator, amplify, amplify_steps, calibrate, dobrushin, dobrushin_curve, doeblin,
                      ldp_guarantee, mechanisms, privacy_profile, ultra_mixing)

from conftest import random_stochastic

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

EPS = (0.0, 0.3, 2.0, math.inf)
CURVE = [0.0, 0.1, 0.5, 1.0, 3.0]


def _matrix(kind: str) -> tuple[np.ndarray, object, int | None]:
    """(matrix, dask chunks, block_size): random and structured operators; the 64-state ones run several tiles."""
    rng = np.random.default_rng(11)
    if kind == "random":
        return random_stochastic(rng, 16, 16), (4, 4), None
    if kind == "zeros":
        return random_stochastic(rng, 16, 16, zero_prob=0.4), (4, 4), None
    if kind == "krr":  # every pair ties: the witness is decided by the order of the combine
        return mechanisms.randomized_response(16, 1.5).matrix, (4, 4), None
    if kind == "disjoint":
        A = np.zeros((8, 16))
        for i in range(8):
            A[i, 2 * i:2 * i + 2] = rng.random(2) + 0.1
        return A / A.sum(axis=1, keepdims=True), (4, 4), None
    if kind == "kron":  # a product of two channels: many exact ties across tiles
        small = random_stochastic(rng, 8, 5)
        return np.kron(small, mechanisms.randomized_response(8, 1.0).matrix), (16, 8), 16
    return random_stochastic(rng, 64, 40, zero_prob=0.3), (16, 8), 16


def _results(K, block, executor) -> dict:
    """Every quantity of the issue, values and witnesses, on one operator."""
    out = {}
    for e in EPS:
        r = dobrushin(K, e, block_size=block, executor=executor, progress=False)
        out[f"dobrushin({e})"] = (r.gamma, r.pair, r.test_set)
    out["curve"] = dobrushin_curve(K, CURVE, block_size=block, executor=executor, progress=False).tolist()
    d = doeblin(K)
    out["doeblin"] = (d.gamma, d.minorant.tolist(), None if d.witness is None else d.witness.tolist())
    u = ultra_mixing(K)
    out["ultra"] = (u.gamma, u.pair, u.output, u.ratio)
    g = ldp_guarantee(K, executor=executor, progress=False)
    out["ldp"] = (g.epsilon, g.delta(CURVE).tolist(), g.dobrushin.gamma, g.dobrushin.pair)
    n = K.shape[0]
    for name, nb in (("all", None), ("cycle", nx.cycle_graph(n))):
        p = privacy_profile(K, nb, executor=executor, progress=False)
        out[f"profile-{name}"] = (p.delta(list(EPS)).tolist(), [p.witness(e) for e in EPS], p.pure_epsilon)
    return out


KINDS = ["random", "zeros", "krr", "disjoint", "kron", "tiles"]
#: on the cluster (each task is a round trip to a worker process): fewer kinds, the ones with ties and tiles
CLUSTER_KINDS = ["zeros", "krr", "tiles"]


@pytest.fixture(scope="module")
def serial_results():
    """The reference: in-memory operators, no executor (each kind on a fresh operator)."""
    out = {}
    for kind in KINDS:
        A, _, block = _matrix(kind)
        out[kind] = _results(MarkovOperator(A), block, None)
    return out


def _operator(kind: str, backed: str):
    A, chunks, block = _matrix(kind)
    if backed == "dask":
        return MarkovOperator.from_dask(da.from_array(A, chunks=chunks)), block
    return MarkovOperator(A.copy()), block  # a fresh matrix: no preparation or bounds shared with the reference


CONFIGS = ([pytest.param(kind, "memory", "process_pool", id=f"memory-pool-{kind}") for kind in KINDS]
           + [pytest.param(kind, "dask", "serial", id=f"dask-serial-{kind}") for kind in KINDS]
           + [pytest.param(kind, "memory", "dask", id=f"memory-cluster-{kind}") for kind in CLUSTER_KINDS]
           + [pytest.param(kind, "dask", "dask", id=f"dask-cluster-{kind}") for kind in CLUSTER_KINDS])


@pytest.mark.parametrize("kind, backed, where", CONFIGS)
def test_identical_to_serial(kind, backed, where, serial_results, request):
    executor = None
    if where == "process_pool":
        executor = request.getfixturevalue("process_pool")
    elif where == "dask":
        executor = request.getfixturevalue("dask_client").get_executor()
    K, block = _operator(kind, backed)
    got = _results(K, block, executor)
    ref = serial_results[kind]
    assert got.keys() == ref.keys()
    for key in ref:
        assert got[key] == ref[key], key


def test_dask_operator_rows_are_read_on_the_workers(dask_client):
    """A dask-backed operator's kernels receive the row reader, not rows: the array persisted on the cluster
    is never computed on the client (its graph holds only futures), and the result is the serial one."""
    A, chunks, block = _matrix("tiles")
    arr = dask_client.persist(da.from_array(A, chunks=chunks))
    with dask.config.set(scheduler=dask_client):  # the validation pass and the probes run on the cluster too
        D = MarkovOperator.from_dask(arr)
        r = dobrushin(D, 0.3, block_size=block, executor=dask_client.get_executor(), progress=False)
    ref = dobrushin(MarkovOperator(A), 0.3, block_size=block, progress=False)
    assert (r.gamma, r.pair, r.test_set) == (ref.gamma, ref.pair, ref.test_set)


def _reports_equal(a, b) -> bool:
    return a.to_dict() == b.to_dict()


@pytest.mark.parametrize("where", ["process_pool", "dask"])
def test_amplify_and_steps_pass_the_executor(where, request):
    executor = (request.getfixturevalue("process_pool") if where == "process_pool"
                else request.getfixturevalue("dask_client").get_executor())
    K = MarkovOperator(random_stochastic(np.random.default_rng(5), 8, 8, zero_prob=0.2))
    M = mechanisms.randomized_response(8, 2.0)
    for mech in (DP(1.0, 1e-6), M):
        assert _reports_equal(amplify(mech, K, executor=executor), amplify(mech, K))
    for limit in (10**6, 1):  # products formed, then composed coefficients
        a = amplify_steps(DP(1.0, 1e-6), K, steps=2, max_product_entries=limit, executor=executor)
        assert a.to_dict() == amplify_steps(DP(1.0, 1e-6), K, steps=2, max_product_entries=limit).to_dict()


def _family(e0: float):
    """A module-level family (process pools pickle it by reference)."""
    return DP(e0, 1e-7)


@pytest.fixture(scope="module")
def calibrated():
    return calibrate(_family, mechanisms.randomized_response(4, 1.0), epsilon=0.5, delta=1e-6)


@pytest.mark.parametrize("where", ["process_pool", "threads3", "dask"])
def test_calibrate_is_identical(where, request, calibrated):
    """Two workers: each evaluation passes the executor down; three or more: speculative bisection levels.
    Either way the bisection path, and so the result, is the serial one."""
    K = mechanisms.randomized_response(4, 1.0)
    ref = calibrated
    if where == "threads3":
        with ThreadPoolExecutor(3) as ex:
            got = calibrate(_family, K, epsilon=0.5, delta=1e-6, executor=ex)
    else:
        executor = (request.getfixturevalue("process_pool") if where == "process_pool"
                    else request.getfixturevalue("dask_client").get_executor())
        got = calibrate(_family, K, epsilon=0.5, delta=1e-6, executor=executor)
    assert (got.input_epsilon, got.achieved_epsilon, got.achieved_delta, got.evaluations) == \
        (ref.input_epsilon, ref.achieved_epsilon, ref.achieved_delta, ref.evaluations)
    assert _reports_equal(got.report, ref.report)


def test_calibrate_speculative_midpoints_are_the_serial_ones():
    from chainamp.amplification.calibration import _midpoints, _wide

    lo, hi, path = 0.0, 50.0, []
    mids = set(_midpoints(lo, hi, 3))
    for go_up in (True, False, True):  # any path through three levels meets only listed midpoints
        mid = 0.5 * (lo + hi)
        path.append(mid)
        lo, hi = (mid, hi) if go_up else (lo, mid)
    assert set(path) <= mids and len(mids) == 7 and _wide(0.0, 50.0)


@pytest.mark.parametrize("bad", ["threads", 2, object()], ids=["str", "int", "object"])
def test_executor_is_validated(bad):
    K = mechanisms.randomized_response(3, 1.0)
    for call in (lambda: calibrate(_family, K, epsilon=0.5, delta=1e-6, executor=bad),
                 lambda: amplify_steps(DP(1.0), K, steps=2, executor=bad)):
        with pytest.raises(TypeError, match=r"executor must be None or a concurrent.futures.Executor"):
            call()
