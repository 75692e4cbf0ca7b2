"""The clone pair summed in blocks of counts (chainamp.shuffle._clones): above the count-by-count sum, close to it,
and fast at n = 1e8."""

from __future__ import annotations

import time

import numpy as np
import pytest

from chainamp.shuffle import _clones, generic_delta, generic_epsilon


@pytest.mark.parametrize("n,eps0,eps", [(10**6, 4.0, [0.0, 0.03, 0.05, 0.07]), (10**7, 1.0, [0.0, 5e-4, 1e-3, 2e-3])],
                         ids=["n1e6", "n1e7"])
def test_blocks_are_above_the_count_by_count_sum_and_close(n, eps0, eps, monkeypatch):
    eps = np.array(eps)
    blocked = generic_delta(eps0, n, eps)
    monkeypatch.setattr(_clones, "_BLOCK_PER_SD", 1e12)  # one count per block
    single = generic_delta(eps0, n, eps)
    assert np.all(single > 1e-12) and np.all(blocked >= single)
    assert np.all(blocked <= single * (1 + 1e-3) + 1e-300)
    # valued at each block's largest count instead, the sum falls below the count-by-count one
    monkeypatch.setattr(_clones, "_BLOCK_PER_SD", 64)
    c, pc, tail = _clones.clone_window(n - 1, np.exp(-eps0) * (1 - 1e-15))
    w = int(c[1] - c[0])
    assert w > 1
    wrong = _clones.clone_pair_delta(n - 1, np.exp(-eps0) * (1 - 1e-15), 1 / (1 + np.exp(-eps0)), 1.0, eps[2:3],
                                     window=(c + w - 1, pc, tail))[0]
    assert wrong < single[2]


def test_windows_of_different_tails_share_blocks():
    """generic_epsilon searches on a window of tail 1e-4 delta, generic_delta on one of tail 1e-18: the blocks are
    aligned to multiples of their width, so the inversion's eps is certified by generic_delta too."""
    for n, eps0, delta in [(3 * 10**6, 3.0, 1e-7), (10**7, 0.7, 1e-9)]:
        e = generic_epsilon(eps0, n, delta)
        assert generic_delta(eps0, n, [e])[0] <= delta


def test_generic_at_1e8_is_fast():
    t = time.perf_counter()
    e = generic_epsilon(1.0, 10**8, 1e-6)
    assert time.perf_counter() - t < 3.0  # 3.0 s before the blocks (0.1 s after), at load 4
    assert 0.0 < e < 1e-3
