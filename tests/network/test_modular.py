"""The exact-rank machinery: primes, dyadic scaling, ranks mod p against rational ranks, Hadamard's count."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp.network import modular


def test_primes_are_prime_and_distinct():
    ps = modular.primes(200)
    assert len(set(ps.tolist())) == 200 and ps.max() < 2 ** 25 and ps.min() > 2 ** 24
    for p in ps[:50].tolist():
        assert all(p % q for q in range(2, int(p ** 0.5) + 1))


def test_dyadic_scale_is_exact():
    data = np.array([1 / 3, 0.1, 2.0 ** -1070, 0.75, 1.0])
    mat = sp.csr_matrix(data.reshape(1, -1))
    s, num, shift = modular.dyadic_scale(mat)
    for x, a, k in zip(data, num.tolist(), shift.tolist()):
        assert Fraction(x) == Fraction(a) * Fraction(2) ** (k - s)
    res = modular.residues((s, num, shift), np.array([16777259]))
    p = 16777259
    for x, r in zip(data, res[0].tolist()):
        scaled = Fraction(x) * 2 ** s
        assert scaled.denominator == 1 and scaled.numerator % p == r


def _rank_q(M):
    rows = [[Fraction(int(x)) for x in r] for r in M]
    rank, cols = 0, len(rows[0]) if rows else 0
    for c in range(cols):
        piv = next((i for i in range(rank, len(rows)) if rows[i][c]), None)
        if piv is None:
            continue
        rows[rank], rows[piv] = rows[piv], rows[rank]
        for i in range(len(rows)):
            if i != rank and rows[i][c]:
                f = rows[i][c] / rows[rank][c]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[rank])]
        rank += 1
    return rank


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10 ** 6), m=st.integers(1, 7), n=st.integers(1, 7), r=st.integers(0, 7))
def test_rank_mod_equals_rational_rank(seed, m, n, r):
    """Products of random integer factors of rank <= r: the rank mod p (several primes) equals the rank over Q
    (the entries are far below the primes' product, so at most a few primes can disagree)."""
    rng = np.random.default_rng(seed)
    k = min(r, m, n)
    M = rng.integers(-5, 6, (m, k)) @ rng.integers(-5, 6, (k, n)) if k else np.zeros((m, n), dtype=np.int64)
    ps = modular.primes(3)
    stack = np.stack([M % p for p in ps.tolist()]).astype(np.int64)
    ranks = modular.rank_mod(stack, ps, stop=min(m, n))
    assert ranks.max() == _rank_q(M)


def test_rank_mod_stops_early():
    M = np.eye(6, dtype=np.int64)[None]
    assert modular.rank_mod(M, modular.primes(1), stop=2)[0] == 3


@pytest.mark.parametrize("k", [1, 4, 18, 4095])
def test_prime_bits_keep_int64_sums_exact(k):
    bits = modular.prime_bits(k)
    p = int(modular.primes(1, bits)[0])
    assert p < 2 ** bits and k * (p - 1) ** 2 < 2 ** 63 and (p - 1) ** 2 + p < 2 ** 63


def test_primes_for_exceed_the_bound():
    ps = modular.primes_for(1000.0, 29)
    product = 1
    for p in ps.tolist():
        product *= p
    assert product > 2 ** 1000 and product // int(ps[-1]) <= 2 ** 1000
