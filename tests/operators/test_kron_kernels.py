"""The compressed pair kernels of Kronecker products against exact (mpmath / Fraction) references."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from chainamp import MarkovOperator
from chainamp.errors import ResourceLimitError
from chainamp.operators import KroneckerOperator
from chainamp.operators._kron_kernels import MAX_PAIR_OUTCOMES, combine_groups, group_log_pmfs, likelihood_classes


def _exact_pmf(n, counts, probs):
    """multinomial(n; counts) prod probs^counts with the stored doubles, 80 digits."""
    with mp.workdps(80):
        coef = mp.factorial(n)
        for c in counts:
            coef /= mp.factorial(int(c))
        val = coef
        for c, p in zip(counts, probs):
            val *= mp.mpf(float(p)) ** int(c)
        return val


@pytest.mark.parametrize("n, p, q", [
    (1, [0.3, 0.7], [0.6, 0.4]),
    (40, [0.1, 0.9], [0.35, 0.65]),
    (300, [0.2, 0.8], [0.5, 0.5]),
    (25, [0.2, 0.3, 0.5], [0.5, 0.3, 0.2]),
], ids=["one-coordinate", "binomial-40", "binomial-300-skewed", "trinomial-25"])
def test_entries_within_their_relative_bound(n, p, q):
    p, q = np.array(p), np.array(q)
    lp, lq, err, counts, classes = group_log_pmfs(n, p, q)
    P, Q, rel, n_tiny = combine_groups([(lp, lq, err, counts, classes)])
    assert n_tiny == 0
    Pc = np.array([float(p[c].sum()) for c in classes])
    Qc = np.array([float(q[c].sum()) for c in classes])
    worst = 0.0
    for k, row in enumerate(counts):
        for got, probs in ((P[k], Pc), (Q[k], Qc)):
            exact = _exact_pmf(n, row, probs)
            with mp.workdps(80):
                e = abs(mp.mpf(float(got)) / exact - 1)
            worst = max(worst, float(e))
            assert e <= rel
    assert n == 1 or 0.0 < worst  # the computed entries are not exact: a zero margin would fail above
    assert rel < 1e-10


def test_likelihood_classes_merge_equal_ratios_exactly():
    P, Q, classes = likelihood_classes(np.array([0.1, 0.2, 0.3, 0.4, 0.0]), np.array([0.05, 0.1, 0.3, 0.55, 0.0]))
    assert classes == [[0, 1], [2], [3]]  # 0.1/0.05 == 0.2/0.1; the both-zero outcome is dropped
    assert P.tolist() == [0.1 + 0.2, 0.3, 0.4]
    # ratios equal only up to rounding are NOT merged (compared as exact fractions of the doubles)
    _, _, cl = likelihood_classes(np.array([0.1, 0.2, 0.7]), np.array([0.3, np.nextafter(0.6, 1.0), 0.1]))
    assert cl == [[0], [1], [2]]


def test_equal_rows_contribute_nothing():
    assert group_log_pmfs(10, np.array([0.3, 0.7]), np.array([0.3, 0.7])) is None


def test_tiny_outcomes_only_raise_every_divergence():
    """Outcomes below 2^-1000 go to two one-sided blocks; the exact divergences never exceed the orbit's."""
    F = MarkovOperator([[1 - 1e-300, 1e-300], [0.5, 0.5]])
    K = KroneckerOperator.fixed_weight(F, 4, 2)
    orbits = K.pair_orbits()
    big = orbits[-1]  # two bits differ each way
    assert big.p[-2] > 0 and big.q[-2] == 0 and big.p[-1] == 0 and big.q[-1] > 0
    D = K.densify().matrix
    i, j = big.pair
    with mp.workdps(60):
        for c in (0.5, 1.0, 3.0):
            exact = sum(max(mp.mpf(float(a)) - c * mp.mpf(float(b)), 0) for a, b in zip(D[i], D[j]))
            got = np.maximum(big.p - c * big.q, 0).sum()
            assert got * (1 + big.rel_error) >= exact
            exact_rev = sum(max(mp.mpf(float(b)) - c * mp.mpf(float(a)), 0) for a, b in zip(D[i], D[j]))
            assert np.maximum(big.q - c * big.p, 0).sum() * (1 + big.rel_error) >= exact_rev


def test_tiny_remainder_is_needed():
    """Without the one-sided blocks the outcome (1, 1) of mass 1e-600 would be lost: the pure epsilon must be
    infinite (that outcome has ratio 0 / tiny), and it is."""
    import chainamp

    F = MarkovOperator([[1.0, 0.0], [0.5, 0.5]])
    G = MarkovOperator([[1 - 1e-300, 1e-300], [0.5, 0.5]])
    assert math.isinf(chainamp.privacy_profile(KroneckerOperator.one_hot(F, 3)).pure_epsilon)
    prof = chainamp.privacy_profile(KroneckerOperator.fixed_weight(G, 4, 2))
    assert math.isinf(prof.pure_epsilon)


def test_outcome_budget_is_refused():
    with pytest.raises(ResourceLimitError, match="count vectors"):
        group_log_pmfs(3000, np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1]))
    g = group_log_pmfs(3000, np.array([0.1, 0.9]), np.array([0.4, 0.6]))
    with pytest.raises(ResourceLimitError, match=str(MAX_PAIR_OUTCOMES)):
        combine_groups([g, g])
