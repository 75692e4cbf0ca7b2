"""The pure-ldp and multi-freq-ldpy adapters against the libraries' own samplers (fixed seeds).

Every output frequency of N draws per input value must lie within 4 standard errors
(``4 sqrt(p (1 - p) / N)``) of the adapter's row, and an output the adapter gives probability 0
must never be drawn. The longitudinal parameters are also checked to 1e-9 through the library's
own aggregator (see ``_library_composite_q``).
"""

import collections
import math
import random
import zlib

import numpy as np
import pytest

import chainamp
from chainamp.errors import InvalidParameterError
from chainamp.mechanisms import LongitudinalPipeline, from_multi_freq_ldpy, from_pure_ldp

fo = pytest.importorskip("pure_ldp.frequency_oracles")
numba = pytest.importorskip("numba")
mf_grr = pytest.importorskip("multi_freq_ldpy.pure_frequency_oracles.GRR")
mf_ue = pytest.importorskip("multi_freq_ldpy.pure_frequency_oracles.UE")
mf_long = pytest.importorskip("multi_freq_ldpy.long_freq_est")
from multi_freq_ldpy.long_freq_est import L_GRR, L_OSUE, L_OUE, L_SOUE, L_SUE  # noqa: E402

SE_BOUND = 4.0  # standard errors allowed per output frequency
LONG_MODULES = {"L-GRR": L_GRR, "L-SUE": L_SUE, "L-OUE": L_OUE, "L-OSUE": L_OSUE, "L-SOUE": L_SOUE}


@pytest.fixture(autouse=True, scope="module")
def _library_clients_compiled_once():
    """multi-freq-ldpy's clients are numba functions without ``cache=True``: every run compiled GRR_Client, UE_Client
    and the four L_*_Client (jitted, ~6 s of CPU a run, most of this module's cost). While this module runs they are
    the same Python functions (``py_func``, the library's source) compiled by numba with ``cache=True``: compiled
    once, then read from the library's ``__pycache__``, as chainamp's own kernels are. Same code, same numba random
    stream (seeded by ``_seed``), so the samples are the ones the library's own functions draw."""
    mp = pytest.MonkeyPatch()
    for module, names in ((mf_grr, ["GRR_Client"]), (L_GRR, ["GRR_Client"]), (mf_ue, ["UE_Client"]),
                          (L_SUE, ["L_SUE_Client"]), (L_OUE, ["L_OUE_Client"]), (L_OSUE, ["L_OSUE_Client"]),
                          (L_SOUE, ["L_SOUE_Client"])):
        for name in names:
            library = getattr(module, name)
            assert isinstance(library, numba.core.registry.CPUDispatcher), (module, name)  # the patch is not vacuous
            mp.setattr(module, name, numba.njit(cache=True)(library.py_func))
    yield
    mp.undo()


@numba.njit(cache=True)  # compiled once, then read from __pycache__ (~0.5 s of CPU a run)
def _seed_numba(seed):  # multi-freq-ldpy's jitted clients draw from numba's generator, not numpy's
    np.random.seed(seed)


def _seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    _seed_numba(seed)


def _as_label(report):
    if isinstance(report, tuple):  # pure-ldp RAPPOR: (bits, cohort)
        return (int(report[1]), tuple(int(b) for b in report[0]))
    if np.ndim(report):
        return tuple(int(b) for b in report)
    return int(report)


def _check_samples(op, draw, n):
    """Draw n reports per input label with ``draw(label)`` and compare with the rows of op."""
    for x in op.inputs:
        counts = collections.Counter(_as_label(draw(x)) for _ in range(n))
        assert set(counts) <= set(op.outputs), f"row {x!r}: outputs {set(counts) - set(op.outputs)} not modelled"
        row = op.row(x)
        freq = np.array([counts.get(y, 0) / n for y in op.outputs])
        tol = SE_BOUND * np.sqrt(row * (1.0 - row) / n)
        bad = np.abs(freq - row) > tol
        assert not bad.any(), (x, [op.outputs[i] for i in np.flatnonzero(bad)], freq[bad], row[bad])


# --------------------------------------------------------------------------- pure-ldp
@pytest.mark.parametrize("d, eps", [(2, 0.7), (4, 1.2)], ids=["d2", "d4"])
def test_pure_ldp_direct_encoding_matches_samples(d, eps):
    client = fo.DEClient(eps, d)
    op = from_pure_ldp(client)
    assert op.inputs == tuple(range(1, d + 1)) and op.outputs == tuple(range(d))
    _seed(1)
    _check_samples(op, client.privatise, 10_000)
    assert chainamp.ldp_guarantee(op).epsilon == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("use_oue", [False, True], ids=["SUE", "OUE"])
def test_pure_ldp_unary_encoding_matches_samples(use_oue):
    client = fo.UEClient(1.5, 3, use_oue=use_oue)
    op = from_pure_ldp(client)
    assert op.shape == (3, 8) and op.outputs[1] == (0, 0, 1)
    _seed(2)
    _check_samples(op, client.privatise, 4_000)
    assert chainamp.ldp_guarantee(op).epsilon == pytest.approx(1.5, rel=1e-12)
    assert chainamp.privacy_profile(op).epsilon(0.0) == pytest.approx(1.5, rel=1e-12)


def test_pure_ldp_custom_index_mapper_and_values():
    client = fo.DEClient(1.0, 3, index_mapper=lambda s: "abc".index(s))
    op = from_pure_ldp(client, values=["c", "a"])
    assert op.inputs == ("c", "a") and op.row("c")[2] == pytest.approx(client.p)
    _seed(3)
    _check_samples(op, client.privatise, 5_000)


def _rappor_client(f=0.5, m=4, cohorts=2):
    # pure_ldp.core.generate_hash fails with the installed xxhash ("Strings must be encoded before hashing"):
    # deterministic stand-ins with the same signature (str -> bit index)
    family = [[(lambda s, salt=f"{c}-{j}-": zlib.crc32((salt + s).encode()) % m) for j in range(2)]
              for c in range(cohorts)]
    return fo.RAPPORClient(f, m, family, num_of_cohorts=cohorts)


def test_pure_ldp_rappor_matches_samples_and_is_not_ldp():
    """pure-ldp's _perturb only sets bits: a set bit is always reported, so the mechanism is not LDP."""
    client = _rappor_client()
    op = from_pure_ldp(client, values=[1, 2, 3])
    assert op.shape == (3, 2 * 16) and op.outputs[17] == (1, (0, 0, 0, 1))
    _seed(4)
    _check_samples(op, lambda x: client.privatise(x), 4_000)
    stated = 2 * 2 * math.log((1 - 0.25) / 0.25)  # the server's epsilon, 2 h log((1 - f/2) / (f/2))
    assert math.isfinite(stated) and chainamp.ldp_guarantee(op).epsilon == math.inf


# -------------------------------------------------------------------- multi-freq-ldpy
def test_multi_freq_grr_matches_samples():
    op = from_multi_freq_ldpy("GRR", 4, 1.2)
    _seed(5)
    _check_samples(op, lambda x: mf_grr.GRR_Client(x, 4, 1.2), 20_000)
    assert chainamp.ldp_guarantee(op).epsilon == pytest.approx(1.2, rel=1e-12)
    assert chainamp.privacy_profile(op).epsilon(0.0) == pytest.approx(1.2, rel=1e-12)


@pytest.mark.parametrize("protocol, optimal", [("SUE", False), ("OUE", True)], ids=["SUE", "OUE"])
def test_multi_freq_unary_encoding_matches_samples(protocol, optimal):
    op = from_multi_freq_ldpy(protocol, 3, 2.0)
    _seed(6)
    _check_samples(op, lambda x: mf_ue.UE_Client(x, 3, 2.0, optimal), 5_000)
    assert chainamp.ldp_guarantee(op).epsilon == pytest.approx(2.0, rel=1e-12)


LONG_CASES = [("L-GRR", 4, 10_000), ("L-SUE", 2, 2_000), ("L-OUE", 2, 2_000), ("L-OSUE", 2, 2_000),
              ("L-SOUE", 2, 2_000)]


@pytest.mark.parametrize("protocol, k, n", LONG_CASES, ids=[c[0] for c in LONG_CASES])
def test_multi_freq_longitudinal_matches_samples(protocol, k, n):
    L = from_multi_freq_ldpy(protocol, k, 2.0, eps_1=0.5)
    assert isinstance(L, LongitudinalPipeline) and L.steps == (L.mechanism, L.instantaneous)
    client = getattr(LONG_MODULES[protocol], f"L_{protocol[2:]}_Client")
    _seed(7)
    _check_samples(L.one_report, lambda x: client(x, k, 2.0, 0.5), n)


def _library_composite_q(protocol, k, eps_perm, eps_1):
    """``q1 (p2 - q2) + q2``, read back from the library's L_*_Aggregator_MI.

    Before clipping and normalising, MI_long estimates ``(c_i - n a) / (n b)`` with
    ``a = q1 (p2 - q2) + q2``; the ratio r of two unclipped estimates gives
    ``a = (c_1 - r c_2) / (n (1 - r))``.
    """
    n = 100
    if protocol == "L-GRR":
        reports = [0] * 60 + [1] * 40
        est = L_GRR.L_GRR_Aggregator_MI(reports, k, eps_perm, eps_1)
        c = (60, 40)
    else:
        reports = [np.array([1, 1])] * 99 + [np.array([1, 0])]
        est = getattr(LONG_MODULES[protocol], f"L_{protocol[2:]}_Aggregator_MI")(reports, eps_perm, eps_1)
        c = (100, 99)
    r = est[0] / est[1]
    return (c[0] - r * c[1]) / (n * (1 - r))


@pytest.mark.parametrize("protocol", list(LONG_MODULES), ids=list(LONG_MODULES))
@pytest.mark.parametrize("eps_perm, eps_1", [(2.0, 0.5), (4.0, 1.0), (1.0, 0.3)], ids=["2-0.5", "4-1", "1-0.3"])
def test_multi_freq_longitudinal_parameters_are_the_librarys(protocol, eps_perm, eps_1):
    k = 4 if protocol == "L-GRR" else 2
    L = from_multi_freq_ldpy(protocol, k, eps_perm, eps_1=eps_1)
    ours = L.q1 * (L.p2 - L.q2) + L.q2
    assert ours == pytest.approx(_library_composite_q(protocol, k, eps_perm, eps_1), rel=1e-9)


@pytest.mark.parametrize("protocol", ["L-SUE", "L-OUE", "L-OSUE", "L-SOUE"])
def test_longitudinal_unary_encodings_certify_the_stated_eps_1(protocol):
    L = from_multi_freq_ldpy(protocol, 3, 2.0, eps_1=0.5)
    assert chainamp.ldp_guarantee(L.one_report).epsilon == pytest.approx(0.5, rel=1e-12)
    assert chainamp.ldp_guarantee(L.mechanism).epsilon == pytest.approx(2.0, rel=1e-12)


@pytest.mark.parametrize("k, exact", [(2, 0.5), (4, 0.428), (100, 0.0549)], ids=["k2", "k4", "k100"])
def test_l_grr_states_eps_1_where_the_chain_is_smaller(k, exact):
    """L-GRR's p2 solves the two-value equation; the k-ary chain's exact epsilon is below eps_1 = 0.5."""
    L = from_multi_freq_ldpy("L-GRR", k, 2.0, eps_1=0.5)
    p1, q1, p2, q2 = L.p1, L.q1, L.p2, L.q2
    assert (p1 * p2 + q1 * q2) / (p1 * q2 + q1 * p2) == pytest.approx(math.exp(0.5), rel=1e-12)
    closed = math.log((p1 * p2 + (k - 1) * q1 * q2) / (p1 * q2 + q1 * p2 + (k - 2) * q1 * q2))
    certified = chainamp.privacy_profile(L.one_report).epsilon(0.0)
    assert certified == pytest.approx(closed, rel=1e-12) and closed == pytest.approx(exact, abs=5e-4)
    assert chainamp.ldp_guarantee(L.one_report).epsilon == pytest.approx(closed, rel=1e-12)


# -------------------------------------------------------------------------- validation
class _NotAClient:
    pass


def test_from_pure_ldp_rejects_other_objects():
    with pytest.raises(TypeError, match="client must be a pure-ldp DEClient, UEClient or RAPPORClient"):
        from_pure_ldp(_NotAClient())
    with pytest.raises(TypeError, match="client must be a pure-ldp"):
        from_pure_ldp(fo.LHClient(1.0, 4))


@pytest.mark.parametrize("make, values, exc, match", [
    (lambda: fo.DEClient(1.0, 3), [0, 1], InvalidParameterError, r"index_mapper\(0\) = -1 is not an index"),
    (lambda: fo.DEClient(1.0, 3), "abc", TypeError, "values must be a sequence of data items"),
    (lambda: fo.DEClient(1.0, 3), [], InvalidParameterError, "values must not be empty"),
    (lambda: fo.UEClient(1.0, 11), None, InvalidParameterError, "d must be <= 10"),
    (lambda: _rappor_client(), None, InvalidParameterError, "values must be given"),
    (lambda: _rappor_client(m=11), [1], InvalidParameterError, "m must be <= 10"),
], ids=["index-range", "values-str", "values-empty", "ue-too-long", "rappor-no-values", "rappor-too-long"])
def test_from_pure_ldp_validation(make, values, exc, match):
    with pytest.raises(exc, match=match):
        from_pure_ldp(make(), values=values)


def test_from_pure_ldp_rappor_hash_validation():
    client = _rappor_client()
    client.hash_family = client.hash_family[:1]
    with pytest.raises(InvalidParameterError, match="hash_family must hold num_of_cohorts=2"):
        from_pure_ldp(client, values=[1])
    client = _rappor_client()
    client.hash_family = [[lambda s: 7]] * 2
    with pytest.raises(InvalidParameterError, match=r"maps 1 to 7, not a bit in 0..3"):
        from_pure_ldp(client, values=[1])


@pytest.mark.parametrize("args, kwargs, exc, match", [
    (("RAPPOR", 4, 1.0), {}, InvalidParameterError, "protocol must be one of"),
    ((3, 4, 1.0), {}, TypeError, "protocol must be a string"),
    (("GRR", 1, 1.0), {}, InvalidParameterError, "k must be >= 2"),
    (("OUE", 11, 1.0), {}, InvalidParameterError, "k must be <= 10"),
    (("GRR", 4, 0.0), {}, InvalidParameterError, r"epsilon must be > 0 \(got 0.0\)"),
    (("GRR", 4, math.inf), {}, InvalidParameterError, "epsilon must be finite"),
    (("GRR", 4, 1.0), {"eps_1": 0.5}, InvalidParameterError, "eps_1 is only for the longitudinal"),
    (("L-GRR", 4, 1.0), {}, InvalidParameterError, "eps_1 is required for L-GRR"),
    (("L-OUE", 4, 1.0), {"eps_1": 1.0}, InvalidParameterError, r"eps_1 must be < epsilon=1.0 \(got 1.0\)"),
    (("L-OUE", 4, 1.0), {"eps_1": -0.1}, InvalidParameterError, "eps_1 must be > 0"),
    (("L-OUE", 4, 1.0), {"eps_1": 0.9}, InvalidParameterError, "L-OUE has no valid second stage"),
], ids=["unknown", "not-str", "k-small", "k-bits", "eps-zero", "eps-inf", "eps1-single", "eps1-missing",
        "eps1-equal", "eps1-negative", "no-second-stage"])
def test_from_multi_freq_ldpy_validation(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        from_multi_freq_ldpy(*args, **kwargs)
