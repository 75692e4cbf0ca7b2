"""GRR and L-GRR from :func:`chainamp.mechanisms.from_multi_freq_ldpy` keep their structure (issue 10 item 3):
the operators are :class:`chainamp.SymmetricChannel` (reports computed per orbit of input pairs) and every
report agrees with the one of the same matrices stored densely."""

from __future__ import annotations

import numpy as np
import pytest

from chainamp import MarkovOperator, SymmetricChannel, amplify
from chainamp.mechanisms import from_multi_freq_ldpy


@pytest.mark.parametrize("k", [3, 7, 12], ids=["k3", "k7", "k12"])
def test_l_grr_is_structured_and_agrees_with_the_dense_matrices(k):
    L = from_multi_freq_ldpy("L-GRR", k, 3.0, 1.0)
    assert isinstance(L.mechanism, SymmetricChannel) and isinstance(L.instantaneous, SymmetricChannel)
    assert isinstance(L.one_report, SymmetricChannel)
    fast = amplify(L.mechanism, L.instantaneous, delta=1e-6, progress=False)
    dense = amplify(MarkovOperator(np.array(L.mechanism.matrix)), MarkovOperator(np.array(L.instantaneous.matrix)),
                    delta=1e-6, progress=False)
    assert fast.exact.epsilon == pytest.approx(dense.exact.epsilon, rel=1e-9, abs=1e-12)
    assert fast.best.epsilon == pytest.approx(dense.best.epsilon, rel=1e-9, abs=1e-12)
    for name in ("tight", "ldp", "theorem1.dobrushin"):
        assert fast.source_epsilon(name) == pytest.approx(dense.source_epsilon(name), rel=1e-9, abs=1e-12)


def test_grr_is_structured():
    K = from_multi_freq_ldpy("GRR", 5, 2.0)
    assert isinstance(K, SymmetricChannel)
    assert np.allclose(K.matrix.sum(axis=1), 1.0)
