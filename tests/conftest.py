"""Shared fixtures and hypothesis strategies for the chainamp tests."""

from __future__ import annotations

import functools
import itertools
import math
import os
import sys
from fractions import Fraction

# ----------------------------------------------------------------------------- bytecode caches (issue 20)
#: With PYTHONDONTWRITEBYTECODE set (as on the project's machines) every run recompiled chainamp and pytest re-rewrote
#: the asserts of all ~120 test modules: ~5 s of CPU at collection, and every subprocess of the run (CLI children,
#: the notebooks' kernel, dask and pool workers) recompiled what it imported. The test run writes its caches
#: (``__pycache__``, git-ignored; the rewritten test modules are tagged ``-pytest-<version>``) and reads them
#: next time; a cached file is used only while its source's size and mtime match, so no result can change.
#: This is set before chainamp is imported below.
sys.dont_write_bytecode = False

# ----------------------------------------------------------------------------- one BLAS thread (issue 20)
#: The tests' matrices are small: OpenBLAS's second thread only spun (busy-waiting between calls), ~6-10 % of the
#: run's CPU on the 2-core machine, more the idler the machine. Set before numpy is first imported (below), and
#: inherited by every child of the run (CLI children, the notebooks' kernel, pool and dask workers), so serial and
#: parallel results are still computed alike. An explicit OPENBLAS_NUM_THREADS in the environment is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import mpmath as mp
import numpy as np
import pytest
from hypothesis import settings, strategies as st

from chainamp import MarkovOperator

# ----------------------------------------------------------------------------- how many examples
#: ``python -m pytest --hypothesis-profile=ci`` (CI, and before a release) multiplies the example counts of
#: the heaviest property tests (those that take ``examples(n)``) by 10; the default run stays a few minutes.
settings.register_profile("ci", max_examples=1000)


def examples(n: int, ci: int | None = None) -> int:
    """Example count of a heavy property test: ``n`` in the default run, scaled by the loaded hypothesis
    profile's ``max_examples`` relative to hypothesis's default of 100 (the ``ci`` profile: 10 n, and at least
    ``ci`` when given: a test whose default count was cut keeps the ``ci`` count it had)."""
    count = max(1, n * settings.default.max_examples // 100)
    return max(count, ci) if ci is not None and settings.default.max_examples >= 1000 else count


def random_stochastic(rng: np.random.Generator, n: int, m: int, zero_prob: float = 0.0) -> np.ndarray:
    """A random row-stochastic n x m matrix, optionally with structural zeros (never an empty row)."""
    mat = rng.random((n, m)) ** 2
    if zero_prob:
        mask = rng.random((n, m)) < zero_prob
        mask[np.arange(n), rng.integers(0, m, n)] = False
        mat[mask] = 0.0
    return mat / mat.sum(axis=1, keepdims=True)


@st.composite
def stochastic_matrices(draw, min_n=2, max_n=5, min_m=2, max_m=5, zeros=True):
    """Hypothesis strategy: small row-stochastic matrices (some with zeros)."""
    n = draw(st.integers(min_n, max_n))
    m = draw(st.integers(min_m, max_m))
    seed = draw(st.integers(0, 2**32 - 1))
    zero_prob = draw(st.sampled_from([0.0, 0.0, 0.3])) if zeros else 0.0
    return random_stochastic(np.random.default_rng(seed), n, m, zero_prob)


#: (s0, b0, s1, b1, s2, b2): three ROC points sorted by s; the exact orientation of (o, a, b) is a right turn (a lies
#: strictly above the segment o-b, so it is a vertex of the exact hull) while the float cross product is > 0 (a left
#: turn: a popped). For the monotone chains' float filters (privacy._roc, shuffle._pairs).
CROSS_EDGES = [(0.021240628764265135, 0.32073507056453515, 0.22209524816669848, 0.46514357618231683,
                0.8490456576951904, 0.9159022991124846),
               (0.16766205773267923, 0.3390041638227071, 0.35442870264914916, 0.5034696971037753,
                0.7894430393530141, 0.8865405869990735),
               (0.03231549897086235, 0.4619521165277049, 0.242308318626814, 0.5813018567374543,
                0.8254697316445011, 0.9127425376999887)]

#: First line of every pipeline file.
PIPELINE_HEAD = 'format = "chainamp-pipeline/1"\n'
#: Mechanism and one step of a pipeline file: 3-ary RR at eps = 2, then 3-ary RR at eps = 1 (keys can follow
#: to extend the step, e.g. ``repeat = 2``).
TWO_STAGE_RR = '''[mechanism]
catalogue = "randomized_response"
k = 3
epsilon = 2.0
[[steps]]
catalogue = "randomized_response"
k = 3
epsilon = 1.0
'''


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20191029)


def krr_matrix(k: int, eps: float) -> np.ndarray:
    """k-ary randomized response, built inline for tests (keep w.p. e^eps / (e^eps + k - 1))."""
    keep = np.exp(eps) / (np.exp(eps) + k - 1)
    mat = np.full((k, k), (1 - keep) / (k - 1))
    np.fill_diagonal(mat, keep)
    return mat


@pytest.fixture
def krr():
    return lambda k, eps: MarkovOperator(krr_matrix(k, eps))


# ----------------------------------------------------------------------------- exact references of the mixing tests
# Shared by tests/mixing/test_adversarial_dobrushin.py and test_adversarial_mixing.py: rigorous lower bounds on
# hockey-stick divergences of the stored doubles (Fraction where no exponential is involved, mpmath otherwise).
# Call them at 60 digits: each of those modules holds ``sixty_digits()`` open in a module-scoped autouse fixture.
def sixty_digits():
    """mpmath at 60 digits while the context lasts (the global precision is restored afterwards)."""
    return mp.workdps(60)


def c_up(eps: float) -> mp.mpf:
    """``e^eps`` rounded up (60 digits, padded by a relative 1e-45)."""
    return mp.exp(mp.mpf(eps)) * (1 + mp.mpf(10) ** -45)


def exact_hockey_low(p, q, eps: float):
    """Rigorous lower bound on ``D_{e^eps}(p || q)`` for the stored doubles p, q (exact at eps 0, inf)."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)  # doubles as given: no rounding
    return _exact_hockey_low(p.tobytes(), q.tobytes(), float(eps), mp.mp.prec)


@functools.lru_cache(maxsize=1024)
def _exact_hockey_low(p: bytes, q: bytes, eps: float, prec: int):
    """``exact_hockey_low`` of the rows stored as ``p`` and ``q`` at the working precision ``prec``, each computed
    once: a search test checks its dobrushin value, its curve and its witness pair (and often the same matrix
    dense and sparse) against the same references."""
    p, q = np.frombuffer(p).tolist(), np.frombuffer(q).tolist()
    if eps == 0.0:
        return sum((Fraction(a) - Fraction(b) for a, b in zip(p, q) if a > b), Fraction(0))
    if math.isinf(eps):
        return sum((Fraction(a) for a, b in zip(p, q) if b == 0.0 and a > 0.0), Fraction(0))
    c = c_up(eps)
    # a float screen skips the terms certainly <= 0 (they were dropped anyway, so the value is unchanged): a = 0, or
    # a below fl(fl(e^eps) b) (1 - 1e-9) with that product normal (its error is then far below 1e-9 relative)
    cf = math.exp(eps) if eps < 700.0 else None
    total = mp.mpf(0)
    for a, b in zip(p, q):
        a, b = float(a), float(b)
        if b >= 0.0 and (a <= 0.0 or (cf is not None and cf * b >= 1e-290 and a < (cf * b) * (1.0 - 1e-9))):
            continue
        d = mp.mpf(a) - c * mp.mpf(b)
        if d > 0:
            total += d
    return total * (1 - mp.mpf(10) ** -50)


def float_all_pairs(M: np.ndarray, eps: float) -> np.ndarray:
    """Plain float ``D_{e^eps}`` of every ordered pair (diagonal -1): only used to SCREEN pairs (read-only; computed
    once per matrix and eps)."""
    M = np.asarray(M, dtype=float)
    return _float_all_pairs(M.tobytes(), M.shape, float(eps))


@functools.lru_cache(maxsize=32)  # a test's whole eps list (EPS_ALL: 13), for the dense and the sparse operator
def _float_all_pairs(raw: bytes, shape: tuple, eps: float) -> np.ndarray:
    M = np.frombuffer(raw).reshape(shape)
    n = M.shape[0]
    out = np.empty((n, n))
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = M * math.exp(eps) if eps <= 700 else (M * math.exp(eps / 2)) * math.exp(eps / 2)
    for i in range(n):
        if math.isinf(eps) or eps >= 746:
            out[i] = np.where(M == 0, M[i][None, :], 0.0).sum(axis=1)
        else:
            out[i] = np.maximum(M[i][None, :] - scaled, 0.0).sum(axis=1)
    np.fill_diagonal(out, -1.0)
    out.setflags(write=False)
    return out


def exact_max_low(M: np.ndarray, eps: float, extra=(), top: int = 12):
    """Rigorous lower bound on ``max_{x != x'} D_{e^eps}(K_x || K_x')`` and the pair attaining it:
    pairs are screened in plain floats (error ~1e-14, far below every planted gap) and the best
    ``top`` of them, plus ``extra`` (planted and reported pairs), are evaluated exactly."""
    F = float_all_pairs(M, eps)
    n = M.shape[0]
    cand = {divmod(int(k), n) for k in np.argsort(-F.ravel(), kind="stable")[:top]} | set(extra)
    best = None
    for i, j in cand:
        if i != j:
            v = exact_hockey_low(M[i].tolist(), M[j].tolist(), eps)
            if best is None or v > best[0]:
                best = (v, i, j)
    return best


def to_mpf(x):
    """A Fraction or a number as an mpf (at the current precision)."""
    return mp.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else mp.mpf(x)


# ----------------------------------------------------------------------------- adversarial soundness (mpmath)
# Shared by tests/amplification/test_adversarial_black_box.py and test_adversarial_finite_and_audit.py: exact
# references in mpmath from the float entries of the matrices (call them at the precision the test sets, those
# modules use 60 digits), the check that a report hands out no bound below the truth, and adversarial operators.
_INF = math.inf


def _mpm(A) -> list:
    return [[mp.mpf(float(x)) for x in row] for row in np.asarray(A, dtype=float)]


def _mul(A: list, B: list) -> list:
    return [[mp.fsum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]


def _hs(p, q, eps: float):
    """D_{e^eps}(p || q) in mpmath (eps = inf: the mass of p where q vanishes)."""
    if eps == _INF:
        return mp.fsum(a for a, b in zip(p, q) if b == 0 and a > 0)
    c = mp.e ** mp.mpf(eps)
    return mp.fsum(max(a - c * b, 0) for a, b in zip(p, q))


def _excess(*mats):
    """Exact max |row sum - 1| of float matrices: the slack of 'rows used as written'."""
    return max(abs(mp.fsum(mp.mpf(float(x)) for x in row) - 1) for A in mats for row in np.asarray(A, float))


def exact_pipeline_delta(M, K, eps: float, pairs=None):
    """Exact delta of the finite pipeline M K at eps (max over ordered neighbouring pairs); K may be a list of
    matrices, multiplied exactly (a float product would hide its own rounding and underflow)."""
    P = _mpm(M)
    for factor in (K if isinstance(K, list) else [K]):
        P = _mul(P, _mpm(factor))
    pairs = pairs if pairs is not None else [(i, j) for i in range(len(P)) for j in range(len(P)) if i != j]
    return max(_hs(P[i], P[j], eps) for i, j in pairs)


def worst_black_box_delta(eps0: float, delta0: float, K, eps: float):
    """sup over all (eps0, delta0)-DP mechanisms M of delta_{K o M}(eps) (canonical pair, all 4-tuples);
    K may be a list of matrices (multiplied exactly)."""
    factors = [np.asarray(A, dtype=float) for A in (K if isinstance(K, list) else [K])]
    key = tuple((A.shape, A.tobytes()) for A in factors)
    best = mp.mpf(0)
    for P, Q in _black_box_pairs(float(eps0), float(delta0), key, mp.mp.prec):
        best = max(best, _hs(P, Q, eps))
    return best


@functools.lru_cache(maxsize=16)
def _black_box_pairs(eps0: float, delta0: float, key: tuple, prec: int) -> tuple:
    """The pairs (P, Q) of ``worst_black_box_delta``, one per 4-tuple of rows of the exact product of the factors
    in ``key`` (shapes and bytes), at the working precision ``prec``: they do not depend on the queried eps, so
    each test's queries (a dozen eps) share them."""
    factors = [np.frombuffer(raw).reshape(shape) for shape, raw in key]
    Km = _mpm(factors[0])
    for factor in factors[1:]:
        Km = _mul(Km, _mpm(factor))
    e, d = mp.e ** mp.mpf(eps0), mp.mpf(delta0)
    a, b = (1 - d) * e / (1 + e), (1 - d) / (1 + e)
    m = len(Km[0])
    out = []
    for x1, x2, x3, x4 in itertools.product(range(len(Km)), repeat=4):
        P = [d * Km[x1][y] + a * Km[x2][y] + b * Km[x3][y] for y in range(m)]
        Q = [b * Km[x2][y] + a * Km[x3][y] + d * Km[x4][y] for y in range(m)]
        out.append((P, Q))
    return tuple(out)


def handed_out(rep, eps_queries, delta_queries):
    """Every bound a report hands out: table, best, the envelope queries and each source's answers."""
    out = list(rep.bounds) + [rep.best]
    out += [rep.bound_at(e) for e in eps_queries] + [rep.bound_for(d) for d in delta_queries]
    for s in rep.sources:
        out += [b for b in (s.bound_at_delta(d) for d in delta_queries) if b is not None]
        out += [b for b in (s.bound_at_epsilon(e) for e in eps_queries) if b is not None]
    out += [type(rep.best)(e, rep.delta_at(e), "exact") for e in eps_queries]
    out += [type(rep.best)(rep.epsilon_at(d), d, "exact") for d in delta_queries]
    return [b for b in out if b.epsilon < _INF and b.delta < 1.0]


def assert_all_sound(rep, truth, tol, eps_queries=(0.0, 0.1, 1.0, 3.0, _INF),
                     delta_queries=(0.0, 1e-300, 1e-12, 1e-3, 0.1, 0.5, 1.0)):
    cache: dict = {}
    for b in handed_out(rep, eps_queries, delta_queries):
        if b.epsilon not in cache:
            cache[b.epsilon] = truth(b.epsilon)
        assert cache[b.epsilon] <= b.delta + tol, (b, float(cache[b.epsilon]))



def _normalise(A):
    A = np.asarray(A, dtype=float)
    return A / A.sum(axis=1, keepdims=True)


def _dyadic(A):
    """Rows summing to exactly 1: entries except each row's largest on the 2^-52 grid (positive ones stay
    positive), the largest set to 1 minus their sum (exact: every partial sum is a multiple of 2^-52 below 1)."""
    A = _normalise(A).copy()
    for row in A:
        top = int(np.argmax(row))
        others = np.arange(row.size) != top
        grid = np.round(row[others] * 2.0**52)
        grid[(grid == 0) & (row[others] > 0)] = 1.0
        row[others] = grid * 2.0**-52
        row[top] = 1.0 - row[others].sum()
    assert all(sum(Fraction(float(x)) for x in row) == 1 for row in A)
    return A


@st.composite
def adversarial_operators(draw, max_n=3, max_m=4, min_n=1):
    A = draw(_raw_operators(max_n, max_m, min_n))
    return A if np.any((A > 0) & (A < 1e-200)) else _dyadic(A)


@st.composite
def _raw_operators(draw, max_n=3, max_m=4, min_n=1):
    """1-row / 1-column, identity, permutation, constant, disjoint supports, structural zeros, 1e-300 entries,
    k-RR with eps near 0 and 30."""
    kind = draw(st.sampled_from(["random", "identity", "perm", "constant", "disjoint", "zeros", "tiny",
                                 "rr", "one_col", "one_row"]))
    n = draw(st.integers(max(min_n, 1), max_n))
    m = draw(st.integers(1, max_m))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "identity":
        return np.eye(n)
    if kind == "perm":
        A = np.zeros((n, n))
        A[np.arange(n), rng.permutation(n)] = 1.0
        return A
    if kind == "constant":
        return np.tile(_normalise(rng.random((1, m))), (n, 1))
    if kind == "disjoint":
        A = np.zeros((n, 2 * n))
        for i in range(n):
            A[i, 2 * i:2 * i + 2] = rng.random(2) + 0.1
        return _normalise(A)
    if kind == "zeros":
        A = rng.random((n, m)) ** 3
        A[rng.random((n, m)) < 0.5] = 0.0
        A[np.arange(n), rng.integers(0, m, n)] += 0.1
        return _normalise(A)
    if kind == "tiny":  # rows cannot sum exactly to 1: the reference allows 4 * their exact excess
        A = rng.random((n, m + 1))
        A[:, 0] = 1e-300 * (1 + rng.random(n))
        return _normalise(A)
    if kind == "rr":
        k = max(n, 2)
        e = draw(st.sampled_from([1e-9, 0.5, 3.0, 30.0]))
        A = np.ones((k, k))
        np.fill_diagonal(A, math.exp(e))
        return _normalise(A)
    if kind == "one_col":
        return np.ones((n, 1))
    if kind == "one_row":
        return _normalise(rng.random((1, m)))
    return _normalise(rng.random((n, m)))


# ----------------------------------------------------------------- executors (issue 11), shared by the session
#: What an idle LocalCluster costs is its event loops' ticks (every 20 ms in the scheduler, each nanny and each
#: worker) and each worker's statistical profiler (every 10 ms): about 5 s of CPU a minute, measured, for a
#: cluster nothing uses. Neither changes a result; ticks every second and no profiler cut it to ~1.5 s a minute.
DASK_QUIET = {"distributed.admin.tick.interval": "1s", "distributed.worker.profile.enabled": False}
#: Fixtures that start processes living until the session ends: the modules that ask for them run last (in
#: their own order; see ``pytest_collection_modifyitems``), so the cluster is not kept idle through the run.
SESSION_PROCESSES = ("dask_client", "process_pool")


#: What the session's fork server imports once, before it forks any worker of either pool (``process_pool``'s and the
#: dask cluster's): each spawned dask worker imported distributed, dask, numpy and then chainamp afresh (~1 s of CPU
#: each, and again for the pool's workers), ~3 s of the run's CPU.
FORKSERVER_PRELOAD = ["chainamp", "distributed"]


@pytest.fixture(scope="session")
def forkserver():
    """The ``forkserver`` multiprocessing context shared by ``process_pool`` and ``dask_client`` (one server, which
    imported ``FORKSERVER_PRELOAD``); stopped and reaped after both pools are shut down (it reaps the workers it
    forked): their CPU then counts in the run's CPU line. Tasks and results are pickled exactly as with spawned
    workers, each of which imported chainamp and pytest's ``__main__`` afresh."""
    import multiprocessing
    from multiprocessing import forkserver as _forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(FORKSERVER_PRELOAD)
    try:
        yield context
    finally:
        stop = getattr(_forkserver._forkserver, "_stop", None)
        if stop is not None:
            stop()


@pytest.fixture(scope="session")
def dask_client(forkserver):
    """A real ``dask.distributed.LocalCluster``: 2 worker processes, 1 thread each (not the default scheduler;
    use ``client.get_executor()`` or ``with client.as_current():``), forked by the session's fork server (not
    spawned: see ``FORKSERVER_PRELOAD``). Skipped only when dask is missing."""
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("dask.array")
    import dask
    import distributed.utils

    if hasattr(distributed.utils, "_forkserver_preload_set"):  # keep FORKSERVER_PRELOAD: distributed would import
        distributed.utils._forkserver_preload_set = True  # its optional packages (pandas) here and in the server
    with dask.config.set({**DASK_QUIET, "distributed.worker.multiprocessing-method": "forkserver"}):
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                      silence_logs=40) as cluster:
            with distributed.Client(cluster, set_as_default=False) as client:
                yield client


@pytest.fixture(scope="session")
def process_pool(forkserver):
    """A ``ProcessPoolExecutor`` with 2 workers forked by the session's fork server, which imported chainamp once
    (not plain fork: the session may run threads, e.g. dask's; tasks and results are pickled exactly as with spawned
    workers, which each imported chainamp and pytest's ``__main__`` afresh)."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=forkserver) as pool:
        yield pool


# ----------------------------------------------------------------------------- what a fresh `import chainamp` loads
#: Run once per session by ``fresh_process``: each stage records the modules loaded so far (one interpreter's start and
#: imports, ~0.6 s of CPU, instead of one per test that checks a stage), printed as one JSON line; then the process
#: solves its first LP and prints ``gamma 0.7`` (tests/mixing/test_lp_quiet.py: no HiGHS banner; it had its own
#: interpreter, ~1.5 s of CPU with cvxpy's import).
_FRESH_IMPORT = """
import json, sys
stages = {}
import chainamp
stages["import chainamp"] = sorted(sys.modules)
chainamp.MarkovOperator([[1.0]])
stages["an operator"] = sorted(sys.modules)
import chainamp.plot, chainamp.report
stages["chainamp.plot and chainamp.report"] = sorted(sys.modules)
chainamp.lp.doeblin_lp
stages["chainamp.lp.doeblin_lp"] = sorted(sys.modules)
stages["lp in chainamp.__all__"] = ["lp"] if "lp" in chainamp.__all__ else []
print(json.dumps(stages))
g = chainamp.doeblin(chainamp.MarkovOperator([[0.9, 0.1], [0.2, 0.8]]), method="lp").gamma
print("gamma", round(g, 6))
"""


@pytest.fixture(scope="session")
def fresh_process() -> tuple[dict, str, str]:
    """``(stages, stdout after the stages' line, stderr)`` of one new interpreter (the checkout's chainamp first on
    its path) running ``_FRESH_IMPORT``: ``stages`` maps each stage, in order (``import chainamp``, building an
    operator, importing ``chainamp.plot`` and ``chainamp.report``, touching ``chainamp.lp.doeblin_lp``), to the set of
    module names loaded by then; the rest of stdout is what the process printed from its first LP solve to its exit."""
    import json
    import os
    import pathlib
    import subprocess
    import sys

    import chainamp

    root = str(pathlib.Path(chainamp.__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", _FRESH_IMPORT], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": root})
    first, _, rest = out.stdout.partition("\n")
    stages = {stage: set(names) for stage, names in json.loads(first).items()}
    assert "chainamp" in stages["import chainamp"] and "chainamp.lp" in stages["chainamp.lp.doeblin_lp"]  # not vacuous
    return stages, rest, out.stderr


@pytest.fixture(scope="session")
def fresh_import(fresh_process) -> dict:
    """``{stage: set of module names}`` of ``fresh_process`` after each stage of ``_FRESH_IMPORT``."""
    return fresh_process[0]


# ----------------------------------------------------------------------------- the collector (issue 20)
_FROZEN_AT: list = [None]


def pytest_runtest_setup(item):
    """At the first test of each file (the previous module's fixtures torn down), collect and freeze the heap
    (``gc.freeze()``): what is alive then (chainamp, numpy, scipy, hypothesis, the lazily imported matplotlib, cvxpy
    and dask, the test modules and the session's fixtures, over a million objects) goes to the collector's permanent
    generation, so each full collection (automatic, or hypothesis's ``gc.collect()``) traverses only what the
    module's tests made. Full collections walked the whole heap, ~0.15 s each, ~5 % of the run's CPU. Only objects
    alive at a module's start are frozen; nothing computed changes (a frozen cycle that dies later is not reclaimed:
    memory only, bounded by the long-lived heap)."""
    path = getattr(item, "path", None)  # the module's file (a doctest's too)
    if path != _FROZEN_AT[0]:
        import gc

        _FROZEN_AT[0] = path
        gc.collect()
        gc.freeze()


# ----------------------------------------------------------------------------- the run's CPU (issue 20)
def pytest_terminal_summary(terminalreporter):
    """Print the run's CPU time, children included (the notebooks' Jupyter kernels, spawned pools and dask
    workers once reaped): the suite's budget is ~150 s of CPU on an idle 2-core machine, and CPU, unlike wall
    time, barely moves with the machine's load."""
    import os

    t = os.times()
    own, children = t.user + t.system, t.children_user + t.children_system
    terminalreporter.write_line(f"CPU: {own + children:.1f} s user+sys (children included: {children:.1f} s)")


def pytest_collection_modifyitems(session, config, items):
    """Run the modules that use a session-wide pool of processes (``SESSION_PROCESSES``, asked for as an argument
    or through ``request.getfixturevalue``) after every other test, in their collected order: the pools start at
    their first user and stop at the session's end, so this keeps them from idling through the rest of the run
    (the dask cluster alone burnt ~20 s of CPU a run that way). Test ids and the tests themselves are unchanged."""
    cache: dict = {}

    def uses_pool(item) -> bool:
        path = getattr(item, "path", None)
        if path is None or path.suffix != ".py" or not path.name.startswith("test_"):
            return False
        if path not in cache:
            text = path.read_text(encoding="utf-8")
            cache[path] = any(name in text for name in SESSION_PROCESSES)
        return cache[path]

    late = [item for item in items if uses_pool(item)]
    if late:
        early = [item for item in items if not uses_pool(item)]
        items[:] = early + late
