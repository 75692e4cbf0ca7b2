"""Review round 8: the k-RR blanket cover (shuffle/_krr_cover.py).

The exact tests of test_krr_cover.py run at n <= 6, where the strips' width ``w = max(1, n // 64)`` is 1, so the
``(w - 1)`` term of a strip's c1 is never exercised, and they compare curves with datasets, where an off-by-one
in c1 is hidden by the slack of the reveal bound (the triple keeps one user more at the third value than some
dataset of the cell has, yet the curve stays above the worst dataset at n <= 6). The invariant the soundness
argument rests on is combinatorial: every dataset of a cell holds the cell's triple, up to the mirror x0 <-> x1
(the curve is the max over both orders). It is checked here on every cell of fully refined covers, with w > 1.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from chainamp.shuffle._krr_cover import Cover, _split


def _cells_of(cell, N: int, depth: int) -> list:
    """The cell and every cell below it in the refinement tree, down to ``depth`` splits."""
    out = [cell]
    if depth:
        for kid in _split(cell, N):
            out += _cells_of(kid, N, depth - 1)
    return out


def _holds(cell, a, b):
    """Whether the cell holds the datasets with a at x0 and b at x1 (numpy arrays or ints)."""
    if cell[0] == "strip":
        _, lo, hi, w = cell
        m = np.maximum(a, b)
        return (lo <= m) & (m < hi) & (np.minimum(a, b) < w)
    _, a_lo, a_hi, b_lo, b_hi = cell
    return (a_lo <= a) & (a < a_hi) & (b_lo <= b) & (b < b_hi)


@pytest.mark.parametrize("N, k", [(4, 3), (9, 4), (130, 3), (130, 5), (200, 4), (260, 7)],
                         ids=["N4-k3", "N9-k4", "N130-k3", "N130-k5", "N200-k4", "N260-k7"])
def test_every_dataset_of_a_cell_holds_its_triple(N, k):
    """For each (a, b) of a cell, the dataset with a users at x0, b at x1 and the rest spread as evenly as possible
    over the k - 2 third values (the smallest largest third group, ceil((N - a - b) / (k - 2))) holds the cell's
    triple: a1 <= a, b1 <= b (or mirrored) and c1 at most that group. N >= 127 makes the strips' width w > 1.
    Fails when a strip's c1 ignores w (c1 from m_hi - 1 alone), when c1 is one too large, or when a strip or a
    block keeps one user too many."""
    cov = Cover(N + 1, k, F(7, 10), F(3, 10) / (k - 1), 1.0)
    w = max(1, (N + 1) // 64)
    roots = [("strip", 0, N + 1, w)] + ([("rect", w, N + 1, w, N + 1)] if 2 * w <= N else [])
    A, B = np.array([(a, b) for a in range(N + 1) for b in range(N + 1 - a)]).T
    cmin = -(-(N - A - B) // (k - 2))
    # the roots partition the datasets
    assert np.all(sum(_holds(c, A, B).astype(int) for c in roots) == 1)
    checked = 0
    for root in roots:
        for cell in _cells_of(root, N, 9 if root[0] == "strip" else 4):
            a1, b1, c1 = cov.triple(cell)
            assert min(a1, b1, c1) >= 0 and a1 + b1 + c1 <= N, cell
            mine = _holds(cell, A, B)
            ok = (((a1 <= A) & (b1 <= B)) | ((a1 <= B) & (b1 <= A))) & (c1 <= cmin)
            assert np.all(ok[mine]), (cell, (a1, b1, c1), A[mine & ~ok][:3], B[mine & ~ok][:3])
            checked += int(mine.sum())
            kids = _split(cell, N)
            if kids:  # the split loses no dataset
                assert np.all(np.any([_holds(c, A, B) for c in kids], axis=0)[mine]), cell
    assert checked >= 3 * A.size


def test_cover_survives_a_channel_close_to_identity():
    """3-RR at eps0 = 30 (d = 1 - 1.9e-13) among 600 users, all others at x0: the parameter-rounding bound of the
    keep factor grew with n (``n e2``, e2 = 2u d / (1 - d) = 1.2e-3) past 0.5, giving an infinite relative error
    and a crash in the binning (ValueError: negative bincount index from NaN). The mass that rounding d changes
    sits at the few draws away from x0 (``n' - j <= n_hi - L``): a finite bound, and the cell is either computed
    (values in [0, 1], not NaN) or declined (None)."""
    from chainamp.shuffle._krr_datasets import exact_channel
    from chainamp.shuffle.krr import krr_parameters

    d, o = exact_channel(3, krr_parameters(3, 30.0)[2])
    cov = Cover(600, 3, d, o, 30.03)
    for trip in [(599, 0, 0), (300, 150, 149)]:
        c = cov.curve(trip)
        assert c is None or (not np.isnan(c).any() and np.all((c >= 0) & (c <= 1)))


def test_keep_factor_rounding_bound_holds_exactly_near_one():
    """The relative change of ``Bin(n', q)``'s masses between the float ``qf`` and the exact ``q`` (``_factor``'s
    ``prel``), checked in exact arithmetic on the window at the edge the tighter bound relies on: q = d of 3-RR at
    eps0 = 30 (1 - q = 1.9e-13, so 1 - qf is off by up to 3e-4 relative), counts n' from n_lo to n_hi, masses at
    every j of the window (``n' - j`` up to ``n_hi - L``, where ``(1 - qf) / (1 - q)`` compounds). The bound is
    finite and small (it was ``n_hi e2`` = 0.7 -> infinite before)."""
    from chainamp.shuffle._krr_cover import COVER_TAIL, _factor
    from chainamp.shuffle._krr_datasets import exact_channel
    from chainamp.shuffle.krr import krr_parameters

    q, _ = exact_channel(3, krr_parameters(3, 30.0)[2])
    n_lo, n_hi = 550, 600
    L, H, qf, dropped, prel = _factor(n_lo, n_hi, q, COVER_TAIL)
    assert 0 < prel < 0.1 and L > 0
    Q = F(qf)
    assert Q != q and (1 - Q) / (1 - q) != 1  # the edge: 1 - qf is measurably off
    worst = F(0)
    for n in (n_lo, 575, n_hi):
        for j in range(L, min(H, n) + 1):
            r = (Q / q) ** j * ((1 - Q) / (1 - q)) ** (n - j)
            worst = max(worst, abs(r - 1))
    assert worst <= prel
    assert worst > prel / 20  # and not vacuous: the bound is within a small factor of the exact change
