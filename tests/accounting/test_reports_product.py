"""T reports of product pipelines (RAPPOR, unary encodings) certified coordinate by coordinate.

References: brute-force enumeration of every T-report sequence in rational arithmetic, the dense
step path of ``amplify_reports`` (the count channel as a product of step operators) and closed forms.
"""

from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from chainamp import MarkovOperator, amplify, mechanisms
from chainamp.accounting import (amplify_reports, count_channel, dense_product_plan, memoized_steps, product_plan,
                                 product_reports_profile)
from chainamp.accounting.reports import _kron_factors
from chainamp.accounting.loss_atoms import LossAtoms, atoms_of_pair, hockey_stick_of_halves, product_atoms
from chainamp.accounting.product_reports import _log_interval
from chainamp.errors import InvalidParameterError
from chainamp.operators import KroneckerOperator

#: the report's epsilon is the upper end of a bisection bracket (relative width 1e-7)
RTOL = 2e-7


def _sequence_rows(R, T: int, memoized: bool) -> tuple[list, list]:
    """Rows over every T-report sequence, one per Bloom filter, in rationals (brute force)."""
    perm = [[Fraction(x) for x in row] for row in mechanisms.rappor_permanent(R.f).matrix]
    inst = [[Fraction(x) for x in row] for row in mechanisms.rappor_instantaneous(R.p, R.q).matrix]
    one = [[sum(perm[x][b] * inst[b][y] for b in (0, 1)) for y in (0, 1)] for x in (0, 1)]
    filters = [tuple(f) for f in R.bloom_filters]
    rows = []
    for B in filters:
        row = []
        for seq in itertools.product((0, 1), repeat=R.m * T):
            reports = [seq[t * R.m:(t + 1) * R.m] for t in range(T)]
            prob = Fraction(1)
            for i in range(R.m):
                bits = [r[i] for r in reports]
                if memoized:
                    prob *= sum(perm[B[i]][b] * math.prod(inst[b][s] for s in bits) for b in (0, 1))
                else:
                    prob *= math.prod(one[B[i]][s] for s in bits)
            row.append(prob)
        rows.append(row)
    return filters, rows


def _exact_delta(rows, a: Fraction) -> Fraction:
    return max(sum(max(u - a * v, 0) for u, v in zip(rows[x], rows[y]))
               for x in range(len(rows)) for y in range(len(rows)) if x != y)


@pytest.mark.parametrize("memoized", [True, False], ids=["memoized", "fresh"])
@pytest.mark.parametrize("m,h,T", [(2, 1, 2), (3, 1, 2), (3, 2, 2), (2, 1, 4), (4, 2, 1), (3, 1, 3)],
                         ids=lambda v: str(v))
def test_profile_against_every_sequence(m, h, T, memoized):
    """The per-coordinate profile is the exact profile of the sequences (brute force over 2^(mT) sequences)."""
    R = mechanisms.rappor_pipeline(m, h, structured=True)
    plan = product_plan(R.mechanism, R.instantaneous)
    prof = product_reports_profile(*plan, T, memoized=memoized)
    assert prof.exact
    _, rows = _sequence_rows(R, T, memoized)
    for a in (Fraction(1), Fraction(3, 2), Fraction(5, 2), Fraction(7)):
        want = _exact_delta(rows, a)
        got = prof.delta(math.log(a))
        # math.log(a) is within an ulp of log a: compare with the exact values at the two neighbouring orders
        assert got >= float(want) - 1e-15
        assert got <= float(want) * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("m,h,T", [(3, 1, 2), (3, 1, 4), (4, 2, 2), (4, 2, 3)], ids=lambda v: str(v))
def test_structured_and_dense_paths_agree(m, h, T):
    """rappor_pipeline(m, h, structured=True) (per coordinate) and the dense step path give the same report."""
    Rs, Rd = mechanisms.rappor_pipeline(m, h, structured=True), mechanisms.rappor_pipeline(m, h)
    s = amplify_reports(Rs.mechanism, Rs.instantaneous, T, progress=False)
    d = amplify(Rd.mechanism, list(memoized_steps(Rd.instantaneous, T)))  # dense: the step operators
    assert s.epsilon_at(0.0) == pytest.approx(d.epsilon_at(0.0), rel=1e-10)
    for eps in (0.0, 0.7, 1.9):
        assert s.delta_at(eps) == pytest.approx(d.delta_at(eps), rel=1e-9, abs=1e-13)
    assert s.epsilon_at(1e-3) == pytest.approx(d.epsilon_at(1e-3), rel=RTOL)


@pytest.mark.parametrize("T", [1, 2, 5, 30], ids=lambda t: f"T{t}")
def test_one_bit_pure_epsilon_closed_form(T):
    """One bit: an extreme count (all ones or all zeros) is the worst outcome; its log-ratio is the pure epsilon
    (the closed form derived in tests/accounting/test_reports.py)."""
    f, p, q = 0.5, 0.5, 0.75
    Mf, F = mechanisms.rappor_permanent(f).matrix, mechanisms.rappor_instantaneous(p, q).matrix
    prof = product_reports_profile(Mf, F, [(((1, 0), 1),)], T)
    L = max((q / p) ** T, ((1 - p) / (1 - q)) ** T, (p / q) ** T, ((1 - q) / (1 - p)) ** T)
    a = 1 - f / 2
    want = math.log((a * L + (1 - a)) / ((1 - a) * L + a))
    assert want <= prof.pure_epsilon <= want * (1 + 1e-12)


def test_deployed_size_fast_and_ordered():
    """rappor_pipeline(128, 2): memoized grows with T towards eps_inf (never above it), fresh grows without
    bound; each report well under a second, no label of the 2^128 enumerated."""
    R = mechanisms.rappor_pipeline(128, 2)
    memo, fresh = [], []
    for T in (2, 10, 100):
        t0 = time.perf_counter()
        memo.append(amplify_reports(R.mechanism, R.instantaneous, T, progress=False).epsilon_at(0.0))
        fresh.append(amplify_reports(R.mechanism, R.instantaneous, T, memoized=False, progress=False)
                     .epsilon_at(0.0))
        assert time.perf_counter() - t0 < 10.0  # generous: the goal (1 s each) is in tests/benchmarks
    assert R.epsilon_one < memo[0] < memo[1] < memo[2] <= R.epsilon_inf * (1 + 1e-12)  # (M's profile, rounded up)
    assert memo[2] == pytest.approx(R.epsilon_inf, rel=1e-6)
    # fresh reports of a pure-DP pipeline: T times the one-report level, exactly (the worst outcome repeats)
    for T, v in zip((2, 10, 100), fresh):
        assert v == pytest.approx(T * R.epsilon_one, rel=1e-10)


def test_grid_is_an_upper_bound():
    """A tiny atom budget forces the grid: never below the exact profile, and marked as not exact."""
    Mf, F = mechanisms.rappor_permanent(0.5).matrix, mechanisms.rappor_instantaneous(0.5, 0.75).matrix
    types = [(((1, 0), 2), ((0, 1), 2))]
    exact = product_reports_profile(Mf, F, types, 6)
    coarse = product_reports_profile(Mf, F, types, 6, budget=16)
    assert exact.exact and not coarse.exact
    eps = np.linspace(0.0, exact.pure_epsilon, 40)
    assert np.all(coarse.delta(eps) >= exact.delta(eps))
    assert coarse.pure_epsilon >= exact.pure_epsilon


def test_unary_encoding_one_hot():
    """Unary encoding (one-hot inputs): the worst pair differs in two coordinates, whatever k."""
    perm, inst = mechanisms.rappor_permanent(0.25), mechanisms.rappor_instantaneous(0.25, 0.75)
    M, K = KroneckerOperator.one_hot(perm, 1000), KroneckerOperator.power(inst, 1000)
    plan = product_plan(M, K)
    assert plan[2] == [(((1, 0), 1), ((0, 1), 1))]
    small = product_plan(KroneckerOperator.one_hot(perm, 3), KroneckerOperator.power(inst, 3))
    a = product_reports_profile(*plan, 3)
    b = product_reports_profile(*small, 3)
    assert a.pure_epsilon == b.pure_epsilon
    # dense reference at k = 3: the one-hot rows of the 3-bit product, every sequence of 2 reports
    Md = M.restrict([0]) if False else KroneckerOperator.one_hot(perm, 3).densify()
    Kd = KroneckerOperator.power(inst, 3).densify()
    rep = amplify_reports(Md, Kd, 3, progress=False)
    assert rep.epsilon_at(0.0) == pytest.approx(a.pure_epsilon, rel=1e-10)


def test_all_tuples_types():
    """All tuples as inputs: every type of pair that differs everywhere is listed."""
    F = MarkovOperator([[0.5, 0.5], [0.25, 0.75]])
    G = MarkovOperator([[0.75, 0.25], [0.25, 0.75]])
    plan = product_plan(KroneckerOperator.power(G, 3), KroneckerOperator.power(F, 3))
    assert len(plan[2]) == 4  # (a coordinates 0 -> 1, 3 - a coordinates 1 -> 0), a = 0..3
    prof = product_reports_profile(*plan, 2)
    dense = amplify_reports(KroneckerOperator.power(G, 3).densify(), KroneckerOperator.power(F, 3).densify(), 2,
                            progress=False)
    assert prof.pure_epsilon == pytest.approx(dense.epsilon_at(0.0), rel=1e-10)


# ------------------------------------------------------------------ rounding edges, in exact arithmetic
@pytest.mark.parametrize("N,D", [(3, 7), (2**3000 + 1, 3**1500), (1, 2**1060), (10**400, 10**400 + 1)],
                         ids=["small", "huge", "subnormal", "near-one"])
def test_log_interval_contains_the_exact_log(N, D):
    lo, hi = _log_interval(N, D)
    with mpmath.workdps(1000):
        exact = mpmath.log(mpmath.mpf(N)) - mpmath.log(mpmath.mpf(D))
        assert mpmath.mpf(lo) <= exact <= mpmath.mpf(hi)
        assert hi - lo < 1e-14 * (abs(float(exact)) + 50)


def _exact_halves(A: LossAtoms, B: LossAtoms, eps: float) -> mpmath.mpf:
    """``sum (1 + rA)(1 + rB) p_i p_j (1 - e^{eps - l_i - l_j})_+`` over the stored floats, in 80 digits."""
    with mpmath.workdps(80):
        e = mpmath.mpf(eps)
        total = mpmath.mpf(0)
        for la, pa in zip(A.loss, A.mass):
            for lb, pb in zip(B.loss, B.mass):
                loss = mpmath.mpf(float(la)) + mpmath.mpf(float(lb))
                if loss > e:
                    total += mpmath.mpf(float(pa)) * mpmath.mpf(float(pb)) * (1 - mpmath.exp(e - loss))
        return total


def test_threshold_on_an_atom_boundary():
    """eps exactly at a sum of two atom losses (and one ulp either side): the bound is never below the exact
    value of the stored atoms; the slack that widens the threshold makes this hold where eps - l_i rounds."""
    rng = np.random.default_rng(3)
    A = LossAtoms(np.sort(rng.normal(size=9)), rng.random(9) / 9)
    B = LossAtoms(np.sort(rng.normal(size=7) * 1e-3 + 0.1), rng.random(7) / 7)
    for la in A.loss[::3]:
        for lb in B.loss[::2]:
            e0 = float(la) + float(lb)
            for e in (math.nextafter(e0, -math.inf), e0, math.nextafter(e0, math.inf)):
                if e < 0:
                    continue
                got = hockey_stick_of_halves(A, B, np.array([e]))[0]
                assert mpmath.mpf(float(got)) >= _exact_halves(A, B, e)


def test_atoms_cover_rounded_pairs():
    """Upper atoms of a pair whose masses are known only within their log intervals: the bound is at least
    the exact hockey-stick of the exact (rational) masses."""
    P = [Fraction(1, 3), Fraction(1, 6), Fraction(1, 2)]
    Q = [Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)]
    lp = np.array([_log_interval(x.numerator, x.denominator) for x in P]).T
    lq = np.array([_log_interval(x.numerator, x.denominator) for x in Q]).T
    a = atoms_of_pair((lp[0], lp[1]), (lq[0], lq[1]))
    two = product_atoms([a, a])
    one = LossAtoms(np.zeros(1), np.ones(1))
    for c in (Fraction(1), Fraction(2), Fraction(5, 2)):
        exact = sum(max(p1 * p2 - c * q1 * q2, 0) for p1, q1 in zip(P, Q) for p2, q2 in zip(P, Q))
        got = hockey_stick_of_halves(two, one, np.array([math.log(c)]))[0]
        also = hockey_stick_of_halves(a, a, np.array([math.log(c)]))[0]
        assert got >= float(exact) - 1e-16 and also >= float(exact) - 1e-16
        assert got <= float(exact) + 1e-12 and also <= float(exact) + 1e-12


# ------------------------------------------------------------------ validation
def test_count_channel_validation():
    with pytest.raises(InvalidParameterError, match="M_f's outputs must be F's inputs"):
        count_channel([[1.0]], [[0.5, 0.5], [0.5, 0.5]], 2)
    with pytest.raises(InvalidParameterError, match=r"reports=500: one coordinate's count channel has 125751"):
        count_channel(np.eye(3), np.full((3, 3), 1 / 3), 500)


def test_product_plan_declines_what_it_does_not_handle():
    F = MarkovOperator([[0.5, 0.5], [0.25, 0.75]])
    assert product_plan(F, F) is None  # not Kronecker products
    R = mechanisms.rappor_pipeline(12, 2)
    other = KroneckerOperator.power(F, 11)
    assert product_plan(R.mechanism, other) is None  # different numbers of coordinates


def test_no_labels_enumerated_for_incompatible_structured_operators():
    from chainamp.errors import IncompatibleOperatorsError

    R = mechanisms.rappor_pipeline(128, 2)
    K3 = KroneckerOperator.power(MarkovOperator(np.full((3, 2), 0.5)), 128)
    with pytest.raises(IncompatibleOperatorsError, match="must be the inputs of K"):
        amplify_reports(R.mechanism, K3, 3)


# ------------------------------------------------------------------ dense operators that are products
def test_dense_rappor_is_certified_bit_by_bit():
    """rappor_pipeline(4, 2) (dense 6 x 16 and 16 x 16 matrices) is recognised as a product: the same numbers as
    the structured operators, and T = 18 (refused by the step path: 200,000 outcomes) is certified."""
    R, Rs = mechanisms.rappor_pipeline(4, 2), mechanisms.rappor_pipeline(4, 2, structured=True)
    plan = dense_product_plan(R.mechanism, _kron_factors(R.instantaneous))
    assert plan is not None and (((0, 1), 2), ((1, 0), 2)) in plan[2]
    for T in (3, 18):
        a = amplify_reports(R.mechanism, R.instantaneous, T, progress=False)
        b = amplify_reports(Rs.mechanism, Rs.instantaneous, T, progress=False)
        assert a.epsilon_at(0.0) == pytest.approx(b.epsilon_at(0.0), rel=1e-12)
        assert a.epsilon_at(1e-6) == pytest.approx(b.epsilon_at(1e-6), rel=RTOL)


def test_dense_non_product_falls_back_to_the_steps():
    """A dense M that is not exactly a product (one entry moved) is not certified bit by bit."""
    R = mechanisms.rappor_pipeline(3, 1)
    A = np.array(R.mechanism.matrix)
    A[0, 0] += 2.0**-20
    A[0, 1] -= 2.0**-20
    M = MarkovOperator(A, R.mechanism.inputs, R.mechanism.outputs)
    assert dense_product_plan(M, _kron_factors(R.instantaneous)) is None
    rep = amplify_reports(M, R.instantaneous, 2, progress=False)
    assert rep.operator.shape == (8, 27)  # the step path's per-bit count tuples
