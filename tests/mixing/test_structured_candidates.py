"""The structured coefficients evaluate exactly only the orbits that can attain the extreme (picked by a
plain floating-point pass): the results are identical to evaluating every orbit."""

from __future__ import annotations

import numpy as np
import pytest

from chainamp.mixing import structured as S
from chainamp.operators import KroneckerOperator, MarkovOperator


def _ops():
    F = MarkovOperator([[0.5, 0.5], [0.25, 0.75]])
    G = MarkovOperator([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    return [KroneckerOperator.power(F, 70), KroneckerOperator.power(F, 9), KroneckerOperator.power(G, 12)]


@pytest.mark.parametrize("k", range(3), ids=["bits-70", "bits-9", "ternary-12"])
def test_candidates_give_the_full_answer(k, monkeypatch):
    K = _ops()[k]
    assert len(K.pair_orbits()) > 2
    eps = np.array([0.0, 0.3, 1.0, 2.5, 6.0])
    fast = ([S.structured_dobrushin(K, float(e), True, "s") for e in eps], S.structured_curve(K, eps, True),
            S.structured_ultra_mixing(K, True), S.structured_ldp_guarantee(K, True).epsilon)
    monkeypatch.setattr(S, "_CANDIDATE_RTOL", np.inf)  # every orbit is a candidate
    S._ORBIT_CACHE.clear()
    full = ([S.structured_dobrushin(K, float(e), True, "s") for e in eps], S.structured_curve(K, eps, True),
            S.structured_ultra_mixing(K, True), S.structured_ldp_guarantee(K, True).epsilon)
    for a, b in zip(fast[0], full[0]):
        assert (a.gamma, a.pair) == (b.gamma, b.pair)
    assert np.array_equal(fast[1], full[1])
    assert (fast[2].gamma, fast[2].pair, fast[2].ratio) == (full[2].gamma, full[2].pair, full[2].ratio)
    assert fast[3] == full[3]
