"""Several post-processing steps and calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainamp as ca
from chainamp import DP, MarkovOperator, amplify, amplify_steps, calibrate, mechanisms
from chainamp.errors import InvalidParameterError
from conftest import krr_matrix, random_stochastic


def test_steps_match_amplify_on_powers():
    K = MarkovOperator(krr_matrix(3, 1.5))
    rep = amplify_steps(DP(1.0, 1e-6), K, steps=4)
    for s in rep.steps:
        direct = amplify(DP(1.0, 1e-6), K ** s.t).epsilon_at(1e-6)
        assert s.epsilon == pytest.approx(direct, rel=1e-12) and s.exact_coefficients


def test_steps_sequence_of_operators(rng):
    ops = [MarkovOperator(random_stochastic(rng, 4, 4)) for _ in range(3)]
    rep = amplify_steps(DP(2.0), ops)
    assert [s.t for s in rep.steps] == [1, 2, 3]
    assert rep.steps[-1].epsilon == pytest.approx(amplify(DP(2.0), ops).epsilon_at(0.0), rel=1e-12)


def test_composed_coefficients_dominate_exact():
    """Past max_product_entries the coefficients come from composition rules: never below the exact ones."""
    K = MarkovOperator(krr_matrix(4, 1.0))
    exact = amplify_steps(DP(1.0, 1e-6), K, steps=5)
    composed = amplify_steps(DP(1.0, 1e-6), K, steps=5, max_product_entries=1)
    for e, c in zip(exact.steps, composed.steps):
        # the formed products' coefficients include their rounding error (~1e-15): compare to that slack
        assert c.dobrushin >= e.dobrushin - 1e-14 and c.doeblin >= e.doeblin - 1e-14
        assert c.ultra_mixing >= e.ultra_mixing - 1e-14
        assert c.epsilon >= e.epsilon - 1e-12
    assert not composed.steps[-1].exact_coefficients
    assert composed.epsilons[-1] < composed.epsilons[0]


def test_steps_report_rendering():
    rep = amplify_steps(DP(1.0), MarkovOperator(krr_matrix(3, 1.0)), steps=2)
    assert "epsilon'" in str(rep) and "<table>" in rep._repr_html_()
    assert rep.to_dict()["steps"][0]["t"] == 1


def test_steps_validation():
    with pytest.raises(InvalidParameterError, match="steps must be >= 1"):
        amplify_steps(DP(1.0), MarkovOperator(krr_matrix(3, 1.0)), steps=0)
    with pytest.raises(InvalidParameterError, match="only used with a single operator"):
        amplify_steps(DP(1.0), [MarkovOperator(krr_matrix(3, 1.0))], steps=2)
    with pytest.raises(TypeError, match="steps must be an integer"):
        amplify_steps(DP(1.0), MarkovOperator(krr_matrix(3, 1.0)), steps=None)


class TestCalibrate:
    K = MarkovOperator(krr_matrix(4, 1.0))

    def test_black_box_pure(self):
        c = calibrate(DP, self.K, epsilon=0.5)
        assert c.achieved_epsilon <= 0.5
        # maximal: a slightly larger input is not certified (bisection tolerance 1e-7 relative)
        assert amplify(DP(c.input_epsilon * (1 + 1e-5)), self.K).epsilon_at(0.0) > 0.5
        # closed form: solving log((1 + e^(e0 + 1))/(e^e0 + e)) = 0.5 for e0 (tight pure bound, K 1-LDP)
        u, a = math.exp(0.5), math.e
        e0 = math.log((u * a - 1) / (a - u))
        assert c.input_epsilon == pytest.approx(e0, rel=1e-6) and c.input_epsilon <= e0 * (1 + 1e-12)

    def test_finite_family(self):
        fam = lambda e: mechanisms.randomized_response(4, e)  # noqa: E731
        c = calibrate(fam, self.K, epsilon=0.6)
        assert amplify(fam(c.input_epsilon), self.K).exact.epsilon <= 0.6
        assert amplify(fam(c.input_epsilon * (1 + 1e-5)), self.K).exact.epsilon > 0.6

    def test_k_alone_suffices(self):
        c = calibrate(DP, self.K, epsilon=1.5)
        assert c.input_epsilon == math.inf and c.achieved_epsilon <= 1.5

    def test_impossible(self):
        with pytest.raises(InvalidParameterError, match="no input epsilon"):
            calibrate(lambda e: DP(e, 0.5), self.K, epsilon=0.0, delta=0.0)

    @pytest.mark.parametrize("kw, err, match", [
        (dict(family=1), TypeError, "family must be a callable"),
        (dict(epsilon=-1.0), InvalidParameterError, "epsilon must be >= 0"),
        (dict(delta=2.0), InvalidParameterError, "delta must be in"),
        (dict(max_epsilon=0.0), InvalidParameterError, "max_epsilon must be > 0"),
    ], ids=["family", "epsilon", "delta", "max"])
    def test_validation(self, kw, err, match):
        args = dict(family=DP, K=self.K, epsilon=0.5)
        args.update(kw)
        with pytest.raises(err, match=match):
            calibrate(**args)

    def test_str(self):
        assert "largest input epsilon" in str(calibrate(DP, self.K, epsilon=0.5))


def test_calibrate_shows_its_evaluations(capsys):
    """Calibration runs many full reports: a progress bar counts them (here shown at once), and progress=False
    prints nothing at all, inner reports included."""
    from chainamp import DP, calibrate, mechanisms

    K = mechanisms.randomized_response(4, 1.0)
    quiet = calibrate(DP, K, epsilon=0.5, progress=False)
    assert capsys.readouterr().err == ""
    shown = calibrate(DP, K, epsilon=0.5, progress=True)
    err = capsys.readouterr().err
    assert "calibrate" in err and "evaluation" in err
    assert shown.input_epsilon == quiet.input_epsilon


def test_calibrate_progress_is_validated():
    from chainamp import DP, calibrate, mechanisms

    with pytest.raises(TypeError, match="progress must be None, True or False"):
        calibrate(DP, mechanisms.randomized_response(4, 1.0), epsilon=0.5, progress="yes")
