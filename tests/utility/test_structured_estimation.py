"""Frequency estimation on structured channels (issue 20 item 3): k-RR and unary encodings in closed form, IBU on
the observed reports. Structured and dense paths agree with exact (Fraction) references at k <= 12; the large
paths (k = 10^5 .. 10^6) against the published one-line formulas; pure-ldp as an oracle."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainamp import MarkovOperator, mechanisms
from chainamp.errors import InvalidParameterError, ResourceLimitError
from chainamp.utility import FrequencyEstimator, StructuredCovariance
from chainamp.utility.structured_channels import model_of


def dense(op) -> MarkovOperator:
    """The same channel as a plain dense operator (the dense code path)."""
    return MarkovOperator(op.matrix, inputs=op.inputs, outputs=op.outputs)


def fr(x) -> Fraction:
    return Fraction(float(x))


def exact_inverse(M: list[list[Fraction]]) -> list[list[Fraction]]:
    n = len(M)
    A = [row[:] + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(M)]
    for c in range(n):
        p = next(r for r in range(c, n) if A[r][c] != 0)
        A[c], A[p] = A[p], A[c]
        piv = A[c][c]
        A[c] = [x / piv for x in A[c]]
        for r in range(n):
            if r != c and A[r][c] != 0:
                t = A[r][c]
                A[r] = [x - t * y for x, y in zip(A[r], A[c])]
    return [row[n:] for row in A]


def exact_krr_covariance(R, f, n, population):
    """``P^-T Sigma P^-1`` in exact arithmetic from the stored doubles (P symmetric)."""
    k = R.k
    d, o = fr(R.diagonal), fr(R.off_diagonal)
    P = [[d if i == j else o for j in range(k)] for i in range(k)]
    A = exact_inverse(P)
    F = [fr(x) for x in f]
    pi = [sum(F[x] * P[x][y] for x in range(k)) for y in range(k)]
    if population == "sampled":
        S = [[(pi[i] if i == j else 0) - pi[i] * pi[j] for j in range(k)] for i in range(k)]
    else:
        S = [[(pi[i] if i == j else 0) - sum(P[x][i] * F[x] * P[x][j] for x in range(k)) for j in range(k)]
             for i in range(k)]
    AS = [[sum(A[i][t] * S[t][j] for t in range(k)) for j in range(k)] for i in range(k)]
    return [[sum(AS[i][t] * A[j][t] for t in range(k)) / fr(n) for j in range(k)] for i in range(k)]


# ------------------------------------------------------------------------------------ k-RR in closed form
@pytest.mark.parametrize("k,eps", [(2, 0.5), (3, 1.0), (7, 2.0), (12, 0.3)], ids=lambda v: str(v))
@pytest.mark.parametrize("population", ["sampled", "fixed"], ids=str)
def test_krr_structured_equals_dense_and_exact(k, eps, population):
    R = mechanisms.randomized_response(k, eps)
    rng = np.random.default_rng(k)
    f = rng.dirichlet(np.ones(k))
    n = 1000
    fast, slow = FrequencyEstimator(R), FrequencyEstimator(dense(R))
    assert model_of(fast.channel) is not None and model_of(slow.channel) is None
    exact = exact_krr_covariance(R, f, n, population)
    ref = np.array([[float(x) for x in row] for row in exact])
    for est in (fast, slow):
        np.testing.assert_allclose(est.covariance(f, n, population=population), ref, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(est.variances(f, n, population=population), np.diag(ref), rtol=1e-9)
        assert est.mse(f, n, population=population) == pytest.approx(float(sum(exact[i][i] for i in range(k))),
                                                                      rel=1e-9)
    sc = fast.covariance(f, n, population=population, structured=True)
    assert isinstance(sc, StructuredCovariance) and sc.shape == (k, k) and sc.rank <= 4
    np.testing.assert_allclose(sc.toarray(), ref, rtol=1e-9, atol=1e-15)
    counts = rng.integers(0, 100, size=k)
    counts[0] += 1
    A = exact_inverse([[fr(R.diagonal) if i == j else fr(R.off_diagonal) for j in range(k)] for i in range(k)])
    w = [Fraction(int(c), int(counts.sum())) for c in counts]
    expected = [float(sum(A[i][j] * w[j] for j in range(k))) for i in range(k)]
    for est in (fast, slow):
        np.testing.assert_allclose(est.estimate(counts).frequencies, expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(fast.matrix, slow.matrix, atol=1e-12)
    assert fast.rank == slow.rank == k and np.all(fast.offset == 0)


def test_krr_constructor_is_instant_where_the_dense_path_ran_an_svd():
    est = FrequencyEstimator(mechanisms.randomized_response(10**6, 2.0))
    assert est.rank == 10**6 and "1000000x1000000 channel" in repr(est)
    with pytest.raises(ResourceLimitError, match="1000000 x 1000000 covariance matrix"):
        est.covariance(np.full(10**6, 1e-6), 100)
    with pytest.raises(ResourceLimitError, match="estimator matrix"):
        est.matrix  # noqa: B018


def wang_variance(p, q, f, n):
    """Wang, Blocki, Li, Jha (2017): q (1 - q) / (n (p - q)^2) + f (1 - p - q) / (n (p - q)), a fixed population."""
    return q * (1 - q) / (n * (p - q) ** 2) + f * (1 - p - q) / (n * (p - q))


@settings(max_examples=15, deadline=None)
@given(k=st.integers(2, 200_000), eps=st.floats(0.05, 8.0), n=st.integers(1, 10**7), seed=st.integers(0, 9))
def test_krr_large_paths_are_wang_et_al(k, eps, n, seed):
    R = mechanisms.randomized_response(k, eps)
    f = np.random.default_rng(seed).dirichlet(np.full(k, 0.5))
    est = FrequencyEstimator(R)
    p, q = R.diagonal, R.off_diagonal
    fixed = est.variances(f, n, population="fixed")
    np.testing.assert_allclose(fixed, wang_variance(p, q, f, n), rtol=1e-7)
    np.testing.assert_allclose(est.variances(f, n), fixed + f * (1 - f) / n, rtol=1e-7)
    assert est.mse(f, n) == pytest.approx(float(np.sum(fixed + f * (1 - f) / n)), rel=1e-7)


def test_krr_matches_pure_ldp_at_k_300():
    from pure_ldp.frequency_oracles import direct_encoding as de
    k, eps = 300, 2.0
    rng = np.random.default_rng(3)
    reports = rng.integers(0, k, size=3000)
    server = de.DEServer(eps, k)
    for r in reports:
        server.aggregate(int(r))
    theirs = server.estimate_all(range(1, k + 1), suppress_warnings=True) / reports.size
    ours = FrequencyEstimator(mechanisms.randomized_response(k, eps)).estimate(np.bincount(reports, minlength=k))
    np.testing.assert_allclose(ours.frequencies, theirs, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------------------------------ unary encodings
@pytest.mark.parametrize("kind,k,eps", [("OUE", 3, 1.0), ("SUE", 4, 0.7), ("OUE", 6, 2.0)], ids=str)
def test_unary_likelihood_depends_on_the_own_bit_and_the_number_of_ones(kind, k, eps):
    """P(v, y) = base(|y|) r(y_v) with base(s) = q^s (1-q)^(k-s), r(b) = F(hot, b) / F(cold, b): by brute force
    over all 2^k outputs, in exact arithmetic from the stored factor."""
    U = mechanisms.unary_encoding(k, eps, kind)
    F = U.factors[0][0].matrix
    hot, cold = [fr(x) for x in F[1]], [fr(x) for x in F[0]]
    P = U.matrix
    for j, y in enumerate(itertools.product((0, 1), repeat=k)):
        assert U.outputs[j] == y
        s = sum(y)
        base = cold[1] ** s * cold[0] ** (k - s)
        for v in range(k):
            exact = base * hot[y[v]] / cold[y[v]]
            assert P[v, j] == pytest.approx(float(exact), rel=4 * k * 2.0**-52)


@pytest.mark.parametrize("kind,k,eps", [("OUE", 2, 1.0), ("SUE", 5, 1.5), ("OUE", 8, 0.5)], ids=str)
@pytest.mark.parametrize("population", ["sampled", "fixed"], ids=str)
def test_unary_support_structured_equals_dense_and_wang(kind, k, eps, population):
    U = mechanisms.unary_encoding(k, eps, kind)
    fast, slow = FrequencyEstimator(U, statistic="support"), FrequencyEstimator(dense(U), statistic="support")
    assert model_of(fast.channel) is not None and model_of(slow.channel) is None
    rng = np.random.default_rng(k)
    f = rng.dirichlet(np.ones(k))
    n = 500
    bit = U.factors[0][0].matrix
    p, q = fr(bit[1, 1]), fr(bit[0, 1])
    wang = [q * (1 - q) / (n * (p - q) ** 2) + fr(x) * (1 - p - q) / (n * (p - q)) for x in f]
    ref = [float(w + (fr(x) * (1 - fr(x)) / n if population == "sampled" else 0)) for w, x in zip(wang, f)]
    for est in (fast, slow):
        np.testing.assert_allclose(est.variances(f, n, population=population), ref, rtol=1e-9)
    np.testing.assert_allclose(fast.covariance(f, n, population=population),
                               slow.covariance(f, n, population=population), rtol=1e-9, atol=1e-14)
    assert fast.mse(f, n, population=population) == pytest.approx(sum(ref), rel=1e-9)
    counts = rng.integers(0, 20, size=2**k)
    mapping = {y: int(c) for y, c in zip(U.outputs, counts) if c}
    got = fast.estimate(counts).frequencies
    np.testing.assert_allclose(got, slow.estimate(counts).frequencies, rtol=1e-11, atol=1e-12)
    np.testing.assert_array_equal(fast.estimate(mapping).frequencies, got)
    np.testing.assert_allclose(fast.matrix, slow.matrix, atol=1e-12)
    np.testing.assert_allclose(fast.offset, slow.offset, rtol=1e-12)


def test_oue_at_a_million_categories_is_wang_et_al():
    k, n, eps = 10**6, 10**7, 2.0
    est = FrequencyEstimator(mechanisms.unary_encoding(k, eps, "OUE"), statistic="support")
    f = np.full(k, 1.0 / k)
    p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
    assert est.mse(f, n, population="fixed") == pytest.approx(float(np.sum(wang_variance(p, q, f, n))), rel=1e-9)
    assert est.variances(f, n)[7] == pytest.approx(wang_variance(p, q, 1e-6, n) + 1e-6 * (1 - 1e-6) / n, rel=1e-9)
    with pytest.raises(ResourceLimitError, match="covariance matrix"):
        est.covariance(f, n)
    sc = est.covariance(f, n, structured=True)
    assert sc.rank == 1 and sc.trace() == pytest.approx(est.mse(f, n), rel=1e-12)
    report = {tuple(int(i in (3, 5)) for i in range(8)): 1}  # a report of the wrong length
    with pytest.raises(InvalidParameterError, match="not an output of the channel"):
        est.estimate(report)
    with pytest.raises(ResourceLimitError, match="counts over the"):
        FrequencyEstimator(mechanisms.unary_encoding(100, eps), statistic="support").estimate(np.ones(4))


@pytest.mark.parametrize("label,match", [((0, 1), "tuple of 3 bits"), ((0, 2, 1), "bits 0 / 1"),
                                         ((0, 1, 0, 1), "tuple of 3 bits"), (("a", 0, 1), "bits 0 / 1")],
                         ids=["short", "two", "long", "string"])
def test_unary_report_validation(label, match):
    est = FrequencyEstimator(mechanisms.unary_encoding(3, 1.0), statistic="support")
    with pytest.raises(InvalidParameterError, match=match):
        est.estimate({label: 3})
    with pytest.raises(InvalidParameterError, match="positive total"):
        est.estimate({(0, 1, 0): 0})


def exact_ls_covariance(U, f, n, population):
    """``A Sigma A^T`` with ``A = (P P^T)^-1 P`` in exact arithmetic from the stored factor (all 2^k outputs)."""
    k = U.shape[0]
    F = U.factors[0][0].matrix
    hot, cold = [fr(x) for x in F[1]], [fr(x) for x in F[0]]
    P = [[math.prod(hot[b] if j == v else cold[b] for j, b in enumerate(y)) for y in U.outputs] for v in range(k)]
    m = len(U.outputs)
    G = [[sum(P[v][y] * P[w][y] for y in range(m)) for w in range(k)] for v in range(k)]
    Gi = exact_inverse(G)
    A = [[sum(Gi[v][w] * P[w][y] for w in range(k)) for y in range(m)] for v in range(k)]
    Fq = [fr(x) for x in f]
    pi = [sum(Fq[x] * P[x][y] for x in range(k)) for y in range(m)]
    ADA = [[sum(A[v][y] * pi[y] * A[w][y] for y in range(m)) for w in range(k)] for v in range(k)]
    if population == "sampled":
        Af = [sum(A[v][y] * pi[y] for y in range(m)) for v in range(k)]
        return [[(ADA[v][w] - Af[v] * Af[w]) / n for w in range(k)] for v in range(k)]
    AP = [[sum(A[v][y] * P[x][y] for y in range(m)) for x in range(k)] for v in range(k)]
    return [[(ADA[v][w] - sum(AP[v][x] * Fq[x] * AP[w][x] for x in range(k))) / n for w in range(k)]
            for v in range(k)]


@pytest.mark.parametrize("kind,k,eps", [("OUE", 3, 1.0), ("SUE", 4, 0.7), ("OUE", 5, 2.0)], ids=str)
@pytest.mark.parametrize("population", ["sampled", "fixed"], ids=str)
def test_unary_least_squares_structured_equals_dense_and_exact(kind, k, eps, population):
    """The default statistic (all 2^k output counts): ``(P P^T)^-1 P`` in closed form, never a 2^k table."""
    U = mechanisms.unary_encoding(k, eps, kind)
    fast, slow = FrequencyEstimator(U), FrequencyEstimator(dense(U))
    assert model_of(fast.channel) is not None and model_of(slow.channel) is None
    rng = np.random.default_rng(k)
    f = rng.dirichlet(np.ones(k))
    ref = np.array([[float(x) for x in row] for row in exact_ls_covariance(U, f, 300, population)])
    for est in (fast, slow):
        np.testing.assert_allclose(est.covariance(f, 300, population=population), ref, rtol=1e-9, atol=1e-15)
    assert fast.mse(f, 300, population=population) == pytest.approx(float(np.trace(ref)), rel=1e-9)
    counts = rng.integers(0, 30, size=2**k)
    np.testing.assert_allclose(fast.estimate(counts).frequencies, slow.estimate(counts).frequencies, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(fast.matrix, slow.matrix, rtol=1e-10, atol=1e-12)
    assert fast.rank == slow.rank == k


def test_unary_least_squares_variance_grows_exponentially_with_k():
    """Least squares over all outputs weighs each report by P(v, y): its variance grows like
    (t_ccc / s_cc^2)^k, past the doubles at k = 10^6 (reported as inf, in O(k)); the support counts stay flat."""
    mses = []
    for k in (16, 100, 10**6):
        f = np.full(k, 1 / k)
        mses.append(FrequencyEstimator(mechanisms.unary_encoding(k, 2.0)).mse(f, 1000))
        assert FrequencyEstimator(mechanisms.unary_encoding(k, 2.0), statistic="support").mse(f, 1000) < 1000
    assert mses[0] < mses[1] < mses[2] == math.inf


# --------------------------------------------------------------------------------------------------- IBU
@pytest.mark.parametrize("make", [lambda: mechanisms.randomized_response(6, 1.0),
                                  lambda: mechanisms.unary_encoding(5, 1.0, "OUE"),
                                  lambda: mechanisms.unary_encoding(4, 2.0, "SUE")], ids=["krr", "oue", "sue"])
def test_ibu_structured_equals_dense(make):
    M = make()
    rng = np.random.default_rng(5)
    f = np.r_[0.6, 0.4, np.zeros(M.shape[0] - 2)]  # the maximum sits on the simplex's boundary
    counts = rng.multinomial(2000, f @ M.matrix)
    fast = FrequencyEstimator(M, method="ibu").estimate(counts)
    slow = FrequencyEstimator(dense(M), method="ibu").estimate(counts)
    assert fast.converged and slow.converged and fast.likelihood_gap <= 1e-10
    assert fast.log_likelihood == pytest.approx(slow.log_likelihood, rel=1e-12)
    np.testing.assert_allclose(fast.frequencies, slow.frequencies, atol=1e-5)
    pi = fast.frequencies @ M.matrix
    assert fast.log_likelihood == pytest.approx(float(counts @ np.log(pi)), rel=1e-12)


def test_ibu_on_oue_16_converges_from_the_observed_reports():
    k = 16
    U = mechanisms.unary_encoding(k, 2.0, "OUE")
    rng = np.random.default_rng(0)
    values = rng.choice(k, size=20_000, p=np.r_[0.5, 0.3, 0.2, np.zeros(k - 3)])
    p, q = 0.5, 1 / (math.exp(2.0) + 1)
    bits = rng.random((values.size, k)) < q
    bits[np.arange(values.size), values] = rng.random(values.size) < p
    reports: dict = {}
    for row in map(tuple, bits.astype(int).tolist()):
        reports[row] = reports.get(row, 0) + 1
    r = FrequencyEstimator(U, method="ibu").estimate(reports)
    assert r.converged and r.likelihood_gap <= 1e-10 and r.iterations < 3000
    assert abs(r.frequencies[0] - 0.5) < 0.05 and r.frequencies.sum() == pytest.approx(1.0)
    plain = FrequencyEstimator(U, method="ibu", max_iterations=2).estimate(reports)
    assert plain.iterations == 2 and not plain.converged


def test_report_mappings_vectorised_or_checked_one_by_one_agree():
    U = mechanisms.unary_encoding(4, 1.0, "SUE")
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 9, size=16)
    plain = {y: int(c) for y, c in zip(U.outputs, counts)}              # ints: one vectorised pass
    mixed = {tuple(bool(b) for b in y): c for y, c in zip(U.outputs, counts)}  # bools and numpy ints: the loop
    est = FrequencyEstimator(U, statistic="support")
    np.testing.assert_array_equal(est.estimate(plain).frequencies, est.estimate(mixed).frequencies)
    ibu = FrequencyEstimator(U, method="ibu")
    np.testing.assert_array_equal(ibu.estimate(plain).frequencies, ibu.estimate(mixed).frequencies)
    with pytest.raises(InvalidParameterError, match=r"counts\[\(0, 0, 0, 1\)\] must be a finite count >= 0"):
        est.estimate({(0, 0, 0, 1): -1, (0, 1, 0, 0): 2})


def test_a_pipeline_of_krr_steps_stays_structured():
    k = 10**5
    steps = [mechanisms.randomized_response(k, 3.0), mechanisms.randomized_response(k, 4.0)]
    est = FrequencyEstimator(steps)
    assert model_of(est.channel) is not None
    R = est.channel
    f = np.full(k, 1 / k)
    p, q = R.diagonal, R.off_diagonal
    assert est.mse(f, 10**6, population="fixed") == pytest.approx(float(np.sum(wang_variance(p, q, f, 10**6))),
                                                                  rel=1e-9)
    small = [mechanisms.randomized_response(5, 1.0), mechanisms.randomized_response(5, 2.0)]
    f5 = np.array([0.4, 0.3, 0.1, 0.1, 0.1])
    np.testing.assert_allclose(FrequencyEstimator(small).covariance(f5, 50),
                               FrequencyEstimator(dense(FrequencyEstimator(small).channel)).covariance(f5, 50),
                               rtol=1e-9)
