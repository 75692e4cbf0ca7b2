"""Scalar queries of an exact profile answer from the stored per-pair data, pruned by the grid summaries:
the same values and witnesses as one array query, at a fraction of the cost."""

from __future__ import annotations

import numpy as np
import pytest

from chainamp.privacy import privacy_profile
from chainamp.privacy import exact as exact_mod


def _mechanism(seed: int, n: int, m: int, alpha: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(m, alpha), size=n)
    if seed % 2:  # some zeros: infinite losses
        P[rng.random(P.shape) < 0.2] = 0.0
        P[:, 0] += 1e-3
        P /= P.sum(axis=1, keepdims=True)
    return P


@pytest.mark.parametrize("seed,n,m,alpha", [(0, 12, 60, 0.5), (1, 9, 80, 0.3), (2, 20, 30, 2.0)],
                         ids=["dirichlet", "with-zeros", "flat"])
def test_scalar_queries_equal_array_query(seed, n, m, alpha):
    P = _mechanism(seed, n, m, alpha)
    eps = np.concatenate([np.linspace(0.0, 6.0, 41), [np.inf]])
    arr = privacy_profile(P, progress=False).delta(eps)
    prof = privacy_profile(P, progress=False)
    prof.delta(0.3)  # the first query streams every pair and keeps their data
    assert "classes" in prof._state
    scalar = np.array([prof.delta(float(e)) for e in eps])
    assert np.array_equal(scalar, arr)
    # the pruned path was taken (its grid summary exists) and witnesses agree with a fresh profile's
    assert "class_grid" in prof._state
    fresh = privacy_profile(P, progress=False)
    fresh.delta(eps)
    for e in (0.0, 0.7, 2.5):
        assert prof.witness(e) == fresh.witness(e)


def test_pruning_skips_classes(monkeypatch):
    """A query near the top of the profile evaluates a few classes, not all of them."""
    P = _mechanism(0, 30, 50, 0.5)
    prof = privacy_profile(P, progress=False)
    prof.delta(0.1)
    seen = []
    real, real_few = exact_mod.st._values, exact_mod.st._values_few

    def counting(data, eps, llr_err, m):
        seen.append(data[0].shape[0])
        return real(data, eps, llr_err, m)

    def counting_few(data, rows, e, llr_err, m):
        seen.append(len(rows))
        return real_few(data, rows, e, llr_err, m)

    monkeypatch.setattr(exact_mod.st, "_values", counting)
    monkeypatch.setattr(exact_mod.st, "_values_few", counting_few)
    for e in (0.5, 1.5, 3.0):
        seen.clear()
        prof.delta(e)
        n_classes = prof._state["classes"][0].size
        assert 1 <= sum(seen) <= 4 < n_classes  # the most promising class, then the few its value leaves open


def _block(rng, B: int, m: int, kind: str):
    alpha = {"sparse": 0.05, "flat": 2.0}.get(kind, 0.5)
    R = rng.dirichlet(np.full(m, alpha), size=B + 1)
    if kind == "zeros":
        R[rng.random(R.shape) < 0.3] = 0.0
    if kind == "tiny":  # subnormal partial sums and products
        R = R * 1e-308
    with np.errstate(divide="ignore"):
        logR = np.log(R)
    li, lj = np.zeros(B, dtype=np.intp), np.arange(1, B + 1, dtype=np.intp)
    return exact_mod.st._sorted_block(R, logR, li, lj, m)


@pytest.mark.parametrize("kind", ["dirichlet", "sparse", "flat", "zeros", "tiny"])
@pytest.mark.parametrize("llr", [1.0, 1e12], ids=["llr-small", "llr-wide"])
def test_values_few_is_bit_identical_to_values(kind, llr):
    """The one-eps kernel of scalar queries returns exactly the array kernel's values, on eps drawn at the
    rounding edges: at each computed log-ratio, one float either side, and at the ends of its error band."""
    rng = np.random.default_rng(len(kind) + int(llr))
    st = exact_mod.st
    d = 32.0 * 2.0**-53 * llr
    for B, m in ((1, 1), (1, 3), (3, 7), (5, 40)):
        blk = _block(rng, B, m, kind)
        fin = np.abs(blk[0][np.isfinite(blk[0])])[:6]
        eps = np.concatenate([[0.0, 5e-324, 1e-15, 0.3, 2.0, 700.0, 745.0, 1000.0], fin,
                              np.nextafter(fin, np.inf), np.nextafter(fin, 0.0), fin + d, fin - d,
                              np.nextafter(fin + d, np.inf), np.nextafter(fin - d, 0.0)])
        eps = eps[eps >= 0.0]
        vu, vv = st._values(blk, eps, d, m)
        for k, e in enumerate(eps.tolist()):
            fu, fv = st._values_few(blk, range(B), e, d, m)
            assert np.array_equal(fu, vu[:, k]) and np.array_equal(fv, vv[:, k]), (B, m, e)


@pytest.mark.parametrize("n,m,repeat", [(3, 5, 0), (6, 40, 0), (25, 30, 0), (12, 3000, 7)],
                         ids=["few-classes", "mid", "pruned", "blocks-with-duplicates"])
def test_stored_classes_answer_as_the_stream(n, m, repeat):
    """The stored per-pair data (few classes: every class; many: pruned; kept as the blocks' own arrays, with
    classes repeated across blocks) give the values and witnesses of a profile that streams every pair (classes
    not kept), eps by eps and as one array."""
    P = _mechanism(n + m, n, m, 0.4)
    if repeat:  # rows repeat with period `repeat`: pairs of equal rows at equal offsets share a class
        P = P[np.arange(n) % repeat]
    eps = np.concatenate([np.linspace(0.0, 5.0, 23), [np.inf]])
    kept = privacy_profile(P, progress=False)
    kept.delta(0.2)
    assert "classes" in kept._state
    if repeat:  # (the case meant: classes from several blocks, some blocks only partly new)
        pieces = kept._state["classes"][1].pieces
        assert len(pieces) >= 2 and kept._state["classes"][0].size < kept._space.count
    streamed = privacy_profile(P, progress=False)
    old = exact_mod.st.CLASS_LIMIT
    try:
        exact_mod.st.CLASS_LIMIT = 0  # no class kept: every later query streams the pairs
        streamed.delta(0.2)
    finally:
        exact_mod.st.CLASS_LIMIT = old
    assert "classes" not in streamed._state
    for e in eps.tolist():
        assert kept.delta(e) == streamed.delta(e), e
        if np.isfinite(e):
            assert kept.witness(e) == streamed.witness(e), e
    assert np.array_equal(kept.delta(eps), streamed.delta(eps))


def test_class_data_pieces_compute_as_one_array():
    """Values of the stored classes kept as separate pieces are those of the stacked array, for every row, any
    subset and one eps at a time."""
    rng = np.random.default_rng(5)
    st = exact_mod.st
    pieces = [_block(rng, B, 9, "zeros") for B in (3, 1, 4)]
    whole = tuple(np.concatenate(cols, axis=0) for cols in zip(*pieces))
    data = st.ClassData(pieces)
    eps = np.array([0.0, 0.4, 1.3, 3.0, np.inf])
    d = 32.0 * 2.0**-53
    vu, vv = st._values(whole, eps, d, 9)
    gu, gv = data.values(eps, d, 9)
    assert np.array_equal(gu, vu) and np.array_equal(gv, vv)
    rows = [0, 2, 3, 6, 7]
    su, sv = data.values(eps, d, 9, rows=rows)
    assert np.array_equal(su, vu[rows]) and np.array_equal(sv, vv[rows])
    for k, e in enumerate(eps[:-1].tolist()):
        fu, fv = data.values_few(rows, e, d, 9)
        assert np.array_equal(fu, vu[rows, k]) and np.array_equal(fv, vv[rows, k])


def test_classes_repeated_across_blocks_keep_one_row_each():
    """A k-RR-like dense mechanism (every pair alike) over many blocks keeps one data row in all: rows of classes
    an earlier block started are dropped, so the kept data stay within the class budget."""
    n, m = 30, 600
    P = np.full((n, m), 0.5 / (m - 1))
    P[np.arange(n), np.arange(n)] = 0.5
    prof = privacy_profile(P, progress=False)
    prof.delta(0.1)
    reps, data = prof._state["classes"]
    assert prof._space.count > prof._block  # several blocks
    assert reps.tolist() == [0] and sum(p[0].shape[0] for p in data.pieces) == 1
