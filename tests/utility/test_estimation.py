"""Frequency estimation through a finite channel: the unbiased inverse, the support estimator, IBU."""

from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize

from chainamp import MarkovOperator, kron, mechanisms
from chainamp.errors import (IncompatibleOperatorsError, InvalidDistributionError, InvalidMechanismError,
                             InvalidOperatorError, InvalidParameterError)
from chainamp.utility import FrequencyEstimate, FrequencyEstimator
from conftest import krr_matrix, random_stochastic

#: Monte Carlo checks accept a deviation of this many standard errors (fixed seeds: deterministic).
N_SE = 4.0


def one_hot(k: int) -> list[tuple]:
    return [tuple(int(i == j) for j in range(k)) for i in range(k)]


def unary(bit: MarkovOperator, k: int) -> MarkovOperator:
    """The k-category unary encoding: k independent copies of the bit channel on one-hot inputs."""
    return kron(*[bit] * k).restrict(one_hot(k))


def F(x: float) -> Fraction:
    return Fraction(float(x))


# ------------------------------------------------------------------ closed forms of Wang et al. (2017)
@pytest.mark.parametrize("k,eps", [(2, 0.5), (3, 1.0), (5, 2.0), (8, 0.1)], ids=lambda v: str(v))
def test_krr_inverse_is_the_published_estimator(k, eps, rng):
    P = mechanisms.randomized_response(k, eps)
    counts = rng.integers(0, 200, size=k)
    est = FrequencyEstimator(P).estimate(counts).frequencies
    p, q, n = F(P.matrix[0, 0]), F(P.matrix[0, 1]), int(counts.sum())
    expected = [(Fraction(int(c), n) - q) / (p - q) for c in counts]
    np.testing.assert_allclose(est, [float(e) for e in expected], rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("k,eps", [(2, 0.5), (3, 1.0), (6, 2.5)], ids=lambda v: str(v))
def test_krr_variance_is_wang_et_al_for_a_fixed_population(k, eps, rng):
    P = mechanisms.randomized_response(k, eps)
    f = rng.dirichlet(np.ones(k))
    n = 1000
    p, q = F(P.matrix[0, 0]), F(P.matrix[0, 1])
    wang = [q * (1 - q) / (n * (p - q) ** 2) + F(fv) * (1 - p - q) / (n * (p - q)) for fv in f]
    est = FrequencyEstimator(P)
    np.testing.assert_allclose(est.variances(f, n, population="fixed"), [float(w) for w in wang], rtol=1e-9)
    # users drawn i.i.d. from f add the sampling variance of their values, f (1 - f) / n
    sampled = [float(w + F(fv) * (1 - F(fv)) / n) for w, fv in zip(wang, f)]
    np.testing.assert_allclose(est.variances(f, n), sampled, rtol=1e-9)
    assert est.mse(f, n) == pytest.approx(sum(sampled), rel=1e-9)


@pytest.mark.parametrize("name,bit", [("OUE", mechanisms.optimized_unary_encoding(1.0)),
                                      ("SUE", mechanisms.symmetric_unary_encoding(1.5))], ids=["OUE", "SUE"])
def test_unary_support_estimator_is_the_published_one(name, bit, rng):
    k, n = 4, 500
    P = unary(bit, k)
    est = FrequencyEstimator(P, statistic="support")
    counts = rng.integers(0, 60, size=P.shape[1])
    n = int(counts.sum())
    C = np.array(P.outputs).T @ counts  # per-bit support counts
    p, q = F(bit.matrix[1, 1]), F(bit.matrix[0, 1])  # P[1 | bit 1], P[1 | bit 0]
    expected = [float((Fraction(int(c), n) - q) / (p - q)) for c in C]
    np.testing.assert_allclose(est.estimate(counts).frequencies, expected, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(est.estimate_support(C, n).frequencies, expected, rtol=1e-11, atol=1e-12)
    # Wang et al. (2017) Theorem 2 (a fixed population), and the sampled-users covariance beside it
    f = rng.dirichlet(np.ones(k))
    wang = [float(q * (1 - q) / (n * (p - q) ** 2) + F(fv) * (1 - p - q) / (n * (p - q))) for fv in f]
    np.testing.assert_allclose(est.variances(f, n, population="fixed"), wang, rtol=1e-9)
    np.testing.assert_allclose(est.variances(f, n), np.array(wang) + f * (1 - f) / n, rtol=1e-9)


def test_oue_parameters_are_those_of_wang_et_al():
    eps = 1.3
    bit = mechanisms.optimized_unary_encoding(eps)
    assert bit.matrix[1, 1] == 0.5 and bit.matrix[0, 1] == pytest.approx(1 / (math.exp(eps) + 1), rel=1e-15)


@pytest.mark.parametrize("k,eps,which,ratio", [(3, 0.5, "OUE", 0.682), (4, 1.0, "OUE", 0.842), (3, 1.0, "SUE", 0.674),
                                               (4, 4.0, "SUE", 0.906), (6, 1.0, "OUE", 1.091)],
                         ids=["OUE-3-0.5", "OUE-4-1", "SUE-3-1", "SUE-4-4", "OUE-6-1"])
def test_least_squares_on_all_outputs_against_the_support_counts(k, eps, which, ratio, rng):
    """Both estimators are unbiased on the simplex. The least-squares inverse of the 2^k output counts sees
    which bits co-occur and has the lower MSE for small k, but it is not the minimum-variance estimator:
    for OUE with k = 6 the support counts do better (measured ratios of MSE, uniform frequencies)."""
    bit = (mechanisms.optimized_unary_encoding if which == "OUE" else mechanisms.symmetric_unary_encoding)(eps)
    P = unary(bit, k)
    full, support = FrequencyEstimator(P), FrequencyEstimator(P, statistic="support")
    for f in (np.full(k, 1 / k), rng.dirichlet(np.ones(k))):
        pi = P.matrix.T @ f
        for est in (full, support):
            np.testing.assert_allclose(est.matrix @ pi + est.offset, f, atol=1e-12)
    uniform = np.full(k, 1 / k)
    # independent reference: the pseudo-inverse of P^T on all outputs, Wang et al.'s (C_v / n - q) / (p - q)
    # on the support counts, each with the multinomial covariance (diag(pi) - pi pi^T) / n
    pi = P.matrix.T @ uniform
    cov = (np.diag(pi) - np.outer(pi, pi)) / 1000
    bits = np.array(P.outputs, dtype=float)                      # outputs are bit tuples, one bit per category
    pb, qb = bit.matrix[1, 1], bit.matrix[0, 1]
    A_full, A_support = np.linalg.pinv(P.matrix.T), (bits - qb).T / (pb - qb)
    reference = np.trace(A_full @ cov @ A_full.T) / np.trace(A_support @ cov @ A_support.T)
    got = full.mse(uniform, 1000) / support.mse(uniform, 1000)
    assert got == pytest.approx(reference, rel=1e-9)
    assert got == pytest.approx(ratio, abs=1e-3)  # the ratios quoted in the docstring and the CHANGELOG


def test_unbiased_inverse_of_a_general_channel_is_exactly_unbiased(rng):
    P = random_stochastic(rng, 3, 7)
    est = FrequencyEstimator(P)
    np.testing.assert_allclose(est.matrix @ P.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(est.offset, 0.0)
    assert est.rank == 3 and est.channel.shape == (3, 7)


# ---------------------------------------------------------------------------------- pure-ldp reference
def test_krr_matches_pure_ldp_direct_encoding():
    from pure_ldp.frequency_oracles import direct_encoding as de
    k, eps, n = 5, 1.2, 400
    rng = np.random.default_rng(7)
    P = mechanisms.randomized_response(k, eps)
    values = rng.choice(k, size=n, p=[0.4, 0.25, 0.2, 0.1, 0.05])
    reports = np.array([rng.choice(k, p=P.matrix[v]) for v in values])
    server = de.DEServer(eps, k)
    for r in reports:
        server.aggregate(int(r))
    theirs = server.estimate_all(range(1, k + 1), suppress_warnings=True) / n  # counts -> frequencies
    ours = FrequencyEstimator(P).estimate(np.bincount(reports, minlength=k)).frequencies
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_oue_matches_pure_ldp_unary_encoding():
    from pure_ldp.frequency_oracles import unary_encoding as ue
    k, eps, n = 4, 1.0, 300
    rng = np.random.default_rng(11)
    P = unary(mechanisms.optimized_unary_encoding(eps), k)
    values = rng.choice(k, size=n, p=[0.1, 0.2, 0.3, 0.4])
    idx = np.array([rng.choice(P.shape[1], p=P.matrix[v]) for v in values])
    server = ue.UEServer(eps, k, use_oue=True)
    for j in idx:
        server.aggregate(np.array(P.outputs[j]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = server.estimate_all(range(1, k + 1), suppress_warnings=True) / n
    ours = FrequencyEstimator(P, statistic="support").estimate(np.bincount(idx, minlength=P.shape[1]))
    np.testing.assert_allclose(ours.frequencies, theirs, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------- Monte Carlo
def _mc_counts(P: np.ndarray, f: np.ndarray, n: int, reps: int, population: str, rng) -> np.ndarray:
    if population == "sampled":
        return rng.multinomial(n, P.T @ f, size=reps)
    users = np.round(n * f).astype(int)
    assert users.sum() == n
    return sum(rng.multinomial(u, P[x], size=reps) for x, u in enumerate(users))


_MC_CASES = {
    "krr": (lambda: mechanisms.randomized_response(3, 1.0), "counts"),
    "oue-support": (lambda: unary(mechanisms.optimized_unary_encoding(1.0), 3), "support"),
    "oue-counts": (lambda: unary(mechanisms.optimized_unary_encoding(1.0), 3), "counts"),
    "random-3x5": (lambda: MarkovOperator(random_stochastic(np.random.default_rng(3), 3, 5)), "counts"),
}


@pytest.mark.parametrize("population", ["sampled", "fixed"], ids=str)
@pytest.mark.parametrize("case", sorted(_MC_CASES), ids=str)
def test_unbiased_and_covariance_against_monte_carlo(case, population):
    make, statistic = _MC_CASES[case]
    P = make()
    est = FrequencyEstimator(P, statistic=statistic)
    f, n, reps = np.array([0.5, 0.3, 0.2]), 200, 20_000
    rng = np.random.default_rng(2024)
    counts = _mc_counts(P.matrix, f, n, reps, population, rng)
    draws = counts / n @ est.matrix.T + est.offset
    cov = est.covariance(f, n, population=population)
    se_mean = np.sqrt(np.diag(cov) / reps)
    assert np.all(np.abs(draws.mean(axis=0) - f) <= N_SE * se_mean)
    emp = np.cov(draws, rowvar=False)
    d = np.diag(cov)
    se_cov = np.sqrt((np.outer(d, d) + cov ** 2) / (reps - 1))  # normal-theory standard error
    assert np.all(np.abs(emp - cov) <= N_SE * se_cov)
    mse_draws = np.sum((draws - f) ** 2, axis=1)
    assert abs(mse_draws.mean() - est.mse(f, n, population=population)) <= N_SE * mse_draws.std() / math.sqrt(reps)


def test_sampled_covariance_is_fixed_plus_the_sampling_of_values(rng):
    P = random_stochastic(rng, 4, 6)
    est = FrequencyEstimator(P)
    f = rng.dirichlet(np.ones(4))
    np.testing.assert_allclose(est.covariance(f, 50), est.covariance(f, 50, population="fixed")
                               + (np.diag(f) - np.outer(f, f)) / 50, atol=1e-13)


# ------------------------------------------------------------------------------------------------- IBU
def _mle(P: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Maximum likelihood over the simplex by scipy (SLSQP), the reference for IBU."""
    k = P.shape[0]

    def nll(f):
        return -float(counts @ np.log(np.maximum(f @ P, 1e-300)))

    res = optimize.minimize(nll, np.full(k, 1 / k), method="SLSQP", bounds=[(0, 1)] * k,
                            constraints=[{"type": "eq", "fun": lambda f: f.sum() - 1}],
                            options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success
    return res.x


def _two_input_mle(P: np.ndarray, counts: np.ndarray) -> float:
    res = optimize.minimize_scalar(lambda a: -float(counts @ np.log(a * P[0] + (1 - a) * P[1])),
                                   bounds=(0, 1), method="bounded", options={"xatol": 1e-12})
    return res.x


@pytest.mark.parametrize("counts", [[30, 10, 8], [1, 40, 2], [10, 0, 0]], ids=["interior", "near-edge", "boundary"])
def test_ibu_is_the_maximum_likelihood_for_two_inputs(counts):
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.3, 0.5]])
    r = FrequencyEstimator(P, method="ibu").estimate(counts)
    assert r.converged and r.likelihood_gap <= 1e-10 and r.iterations > 0
    assert r.frequencies[0] == pytest.approx(_two_input_mle(P, np.array(counts, float)), abs=1e-5)
    assert r.frequencies.sum() == pytest.approx(1.0, abs=1e-12) and np.all(r.frequencies >= 0)


@pytest.mark.parametrize("seed", [1, 2, 3], ids=lambda s: f"seed{s}")
def test_ibu_is_the_maximum_likelihood_on_the_simplex(seed):
    rng = np.random.default_rng(seed)
    P = random_stochastic(rng, 3, 4)
    counts = rng.integers(0, 50, size=4).astype(float)
    r = FrequencyEstimator(P, method="ibu").estimate(counts)
    ref = _mle(P, counts)
    ll_ref = float(counts @ np.log(ref @ P))
    assert r.log_likelihood >= ll_ref - 1e-8
    assert r.log_likelihood <= ll_ref + r.likelihood_gap * counts.sum() + 1e-8
    np.testing.assert_allclose(r.frequencies, ref, atol=1e-4)


def test_ibu_equals_the_inverse_when_that_is_a_distribution():
    P = mechanisms.randomized_response(3, 1.0)
    counts = [40, 35, 25]
    inv = FrequencyEstimator(P).estimate(counts).frequencies
    assert np.all(inv > 0)
    np.testing.assert_allclose(FrequencyEstimator(P, method="ibu").estimate(counts).frequencies, inv, atol=1e-6)


def test_ibu_reports_non_convergence_and_works_on_singular_channels():
    P = mechanisms.randomized_response(3, 0.5)
    r = FrequencyEstimator(P, method="ibu", max_iterations=2).estimate([50, 30, 20])
    assert not r.converged and r.iterations == 2 and "NOT converged" in str(r)
    singular = FrequencyEstimator([[0.5, 0.5], [0.5, 0.5], [0.2, 0.8]], method="ibu")
    assert singular.rank == 2
    out = singular.estimate([3, 7])
    assert out.converged and out.frequencies.sum() == pytest.approx(1.0)


# ----------------------------------------------------------------------------------- channels and counts
def test_pipelines_compose_in_order(rng):
    A, B = random_stochastic(rng, 3, 4), random_stochastic(rng, 4, 3)
    labelled = MarkovOperator(A, inputs=list("xyz"), outputs=list("abcd"))
    for channel in ([A, B], (A, B), [labelled, B], [MarkovOperator(A), MarkovOperator(B)]):
        np.testing.assert_allclose(FrequencyEstimator(channel).channel.matrix, A @ B, atol=1e-15)
    assert FrequencyEstimator([labelled, B]).inputs == tuple("xyz")
    # a nested list of numbers is one matrix, not a pipeline
    assert FrequencyEstimator(krr_matrix(3, 1.0).tolist()).channel.shape == (3, 3)


def test_counts_as_a_mapping_over_output_labels():
    P = mechanisms.randomized_response(3, 1.0, labels=list("abc"))
    est = FrequencyEstimator(P)
    np.testing.assert_array_equal(est.estimate({"a": 5, "c": 2}).frequencies,
                                  est.estimate([5, 0, 2]).frequencies)


def test_non_injective_channel_raises():
    with pytest.raises(InvalidMechanismError, match=r"not injective enough to invert: rank 2 < 3 inputs.*ibu"):
        FrequencyEstimator([[0.5, 0.5], [0.5, 0.5], [0.2, 0.8]])
    near = np.array([[0.5, 0.5], [0.5 + 1e-13, 0.5 - 1e-13]])
    with pytest.raises(InvalidMechanismError, match="rank 1 < 2"):
        FrequencyEstimator(near)
    assert FrequencyEstimator(near, rank_rtol=1e-15).rank == 2


@pytest.mark.parametrize("kwargs,error,match", [
    ({"method": "mle"}, InvalidParameterError, r"method must be one of \('unbiased', 'ibu'\)"),
    ({"method": 1}, TypeError, "method must be a string"),
    ({"statistic": "bits"}, InvalidParameterError, "statistic must be one of"),
    ({"method": "ibu", "statistic": "support"}, InvalidParameterError, "only for method='unbiased'"),
    ({"rank_rtol": 0.0}, InvalidParameterError, "rank_rtol must be > 0"),
    ({"support_rate_atol": -1.0}, InvalidParameterError, "support_rate_atol must be >= 0"),
    ({"max_iterations": 0}, InvalidParameterError, "max_iterations must be >= 1"),
    ({"max_iterations": 2.5}, TypeError, "max_iterations must be an integer"),
    ({"ibu_gap_tol": 0.0}, InvalidParameterError, "ibu_gap_tol must be > 0"),
], ids=["method", "method-type", "statistic", "ibu-support", "rank_rtol", "support_rate_atol", "max_iterations",
        "max_iterations-type", "ibu_gap_tol"])
def test_option_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        FrequencyEstimator(krr_matrix(3, 1.0), **kwargs)


@pytest.mark.parametrize("channel,error,match", [
    ("abc", TypeError, "channel must be a MarkovOperator or a 2-D array"),
    ({"a": 1}, TypeError, "channel must be a MarkovOperator or a 2-D array"),
    (None, TypeError, "channel must be"),
    ([], TypeError, r"non-empty list of them \(got \[\]\)"),
    ([[0.5, 0.6], [0.5, 0.5]], InvalidOperatorError, "rows must sum to 1"),
    ([np.eye(2), np.eye(3)], IncompatibleOperatorsError, r"channel\[1\] does not follow channel\[0\]"),
], ids=["string", "mapping", "none", "empty", "not-stochastic", "mismatch"])
def test_channel_validation(channel, error, match):
    with pytest.raises(error, match=match):
        FrequencyEstimator(channel)


@pytest.mark.parametrize("counts,error,match", [
    ([1, 2], InvalidParameterError, r"one entry per output of the channel \(3\), got 2"),
    ([[1, 2, 3]], InvalidParameterError, "non-empty 1-D array"),
    ([1, -2, 3], InvalidParameterError, r"counts\[1\] must be a finite count >= 0 \(got -2.0\)"),
    ([1, np.nan, 3], InvalidParameterError, r"counts\[1\] must be a finite count"),
    ([1, np.inf, 3], InvalidParameterError, r"counts\[1\] must be a finite count"),
    ([0, 0, 0], InvalidParameterError, "positive total"),
    (["a", "b", "c"], TypeError, "counts must be a 1-D array of numbers"),
    ({"z": 3}, InvalidParameterError, "the label 'z', which is not an output"),
    ({0: "3"}, TypeError, r"counts\[0\] must be a number"),
    ({0: True}, TypeError, r"counts\[0\] must be a number"),
    ({0: -1}, InvalidParameterError, r"counts\[0\] must be a finite count >= 0"),
    ({0: 0}, InvalidParameterError, "positive total"),
], ids=["length", "2-D", "negative", "nan", "inf", "zero-total", "strings", "unknown-label", "str-value",
        "bool-value", "negative-value", "zero-mapping"])
def test_counts_validation(counts, error, match):
    with pytest.raises(error, match=match):
        FrequencyEstimator(krr_matrix(3, 1.0)).estimate(counts)


def test_counts_on_an_impossible_output_raise():
    P = [[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]]
    with pytest.raises(InvalidParameterError, match="2 reports of output 2, which the channel never produces"):
        FrequencyEstimator(P, method="ibu").estimate([1, 1, 2])


def test_support_statistic_validation():
    oue = unary(mechanisms.optimized_unary_encoding(1.0), 3)
    with pytest.raises(InvalidMechanismError, match="outputs that are bit tuples of length 3"):
        FrequencyEstimator(mechanisms.randomized_response(3, 1.0), statistic="support")
    with pytest.raises(InvalidMechanismError, match=r"pure protocol \(Wang et al. 2017\).*order of the bits"):
        FrequencyEstimator(oue.restrict(one_hot(3)[::-1]), statistic="support")
    with pytest.raises(InvalidMechanismError, match="at least 2 inputs"):
        FrequencyEstimator(MarkovOperator([[0.25, 0.75]], outputs=[(0,), (1,)]), statistic="support")
    flat = kron(*[MarkovOperator([[0.5, 0.5], [0.5, 0.5]])] * 2).restrict(one_hot(2))
    with pytest.raises(InvalidMechanismError, match="bit 0 carries no information"):
        FrequencyEstimator(flat, statistic="support")
    est = FrequencyEstimator(oue, statistic="support")
    with pytest.raises(InvalidParameterError, match=r"one entry per bit \(3\), got 2"):
        est.estimate_support([1, 2], 10)
    with pytest.raises(InvalidParameterError, match=r"support_counts\[1\] must be in \[0, n=10\]"):
        est.estimate_support([1, 11, 2], 10)
    with pytest.raises(InvalidParameterError, match="n must be > 0"):
        est.estimate_support([1, 1, 2], 0)
    with pytest.raises(InvalidParameterError, match="estimate_support needs statistic='support'"):
        FrequencyEstimator(oue).estimate_support([1, 1, 2], 10)


def test_accuracy_methods_validation():
    P = krr_matrix(3, 1.0)
    ibu = FrequencyEstimator(P, method="ibu")
    for call in (lambda: ibu.covariance([1 / 3] * 3, 10), lambda: ibu.mse([1 / 3] * 3, 10),
                 lambda: ibu.variances([1 / 3] * 3, 10), lambda: ibu.matrix, lambda: ibu.offset):
        with pytest.raises(InvalidParameterError, match="no closed form for method='ibu'"):
            call()
    est = FrequencyEstimator(P)
    with pytest.raises(InvalidDistributionError, match="frequencies must have 3 entries"):
        est.mse([0.5, 0.5], 10)
    with pytest.raises(InvalidDistributionError, match="frequencies must sum to 1"):
        est.mse([0.5, 0.5, 0.5], 10)
    with pytest.raises(InvalidParameterError, match="n must be > 0"):
        est.mse([1 / 3] * 3, 0)
    with pytest.raises(InvalidParameterError, match="population must be one of"):
        est.mse([1 / 3] * 3, 10, population="census")


# ------------------------------------------------------------------------------------------ presentation
@pytest.mark.parametrize("method", ["unbiased", "ibu"], ids=str)
def test_estimate_prints_itself(method):
    P = mechanisms.randomized_response(3, 1.0, labels=["red", "green", "blue"])
    r = FrequencyEstimator(P, method=method).estimate({"red": 40, "green": 35, "blue": 25})
    assert isinstance(r, FrequencyEstimate)
    first = str(r).splitlines()[0]
    assert first.startswith("Estimated frequencies of 3 values from 100 reports")
    assert "'green'" in str(r) and "<table>" in r._repr_html_() and "Estimated" in r._repr_html_()
    assert set(r.as_dict()) == {"red", "green", "blue"}
    assert json.loads(json.dumps(r.to_dict()))["method"] == method
    assert repr(r).startswith(f"<FrequencyEstimate {method}")
    assert r.frequencies.flags.writeable is False
    assert "FrequencyEstimator(3x3 channel" in repr(FrequencyEstimator(P, method=method))


@pytest.mark.parametrize("eps, k", [(25.0, 3), (15.0, 4), (1.0, 3)], ids=["rr3-eps25", "rr4-eps15", "rr3-eps1"])
def test_fixed_population_covariance_has_no_cancellation(eps, k):
    """Issue 18: covariance(population="fixed") lost up to 7e-6 relative to cancellation on a nearly noiseless
    channel (the covariance is tiny against A diag(pi) A^T). Exact reference: Fraction arithmetic on the stored
    floats (A, the normalised rows of P, f)."""
    from fractions import Fraction as Fr

    from chainamp.utility import FrequencyEstimator

    est = FrequencyEstimator(mechanisms.randomized_response(k, eps))
    f = np.linspace(1.0, 2.0, k)
    f /= f.sum()
    got = est.covariance(f, 1000, population="fixed")
    A = [[Fr(float(v)) for v in row] for row in est.matrix]
    P = [[Fr(float(v)) for v in row] for row in est.channel.matrix]
    P = [[v / sum(row) for v in row] for row in P]
    F = [Fr(float(v)) for v in f]
    m = len(P[0])
    pi = [sum(F[x] * P[x][y] for x in range(k)) for y in range(m)]
    sig = [[(pi[y] if y == z else 0) - sum(F[x] * P[x][y] * P[x][z] for x in range(k)) for z in range(m)]
           for y in range(m)]
    for i in range(k):
        for j in range(k):
            exact = sum(A[i][y] * sig[y][z] * A[j][z] for y in range(m) for z in range(m)) / 1000
            assert abs(Fr(float(got[i, j])) - exact) <= Fr(1, 10**12) * abs(exact), (i, j, float(exact))
