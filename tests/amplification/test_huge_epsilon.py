"""Issue 18.2: an input eps far beyond e^eps's range (1419 .. 1e308) is certified by K's own LDP level."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import chainamp as ca
from chainamp._numerics import scaled_by_exp
from chainamp.audit.cli import EXIT_OK, main

K2 = [[0.75, 0.25], [0.25, 0.75]]


@pytest.mark.parametrize("eps", [1419.6, 1455.0, 1e4, 1e308], ids=["1419.6", "1455", "1e4", "1e308"])
@pytest.mark.parametrize("delta", [0.0, 1e-6], ids=["pure", "approx"])
def test_huge_input_epsilon_is_bounded_by_K(eps, delta):
    r = ca.amplify(ca.DP(eps, delta), K2)
    assert r.best.epsilon <= math.log(3) * (1 + 1e-12)  # K is ln 3-LDP: no M after it does worse
    assert r.best.epsilon >= math.log(3) * (1 - 1e-6) or r.best.delta > 0
    assert "Certified" in str(r)
    grid = r.epsilon_grid()
    assert np.all(np.isfinite(grid)) and grid[-1] <= 22.0001 * max(r.best.epsilon, 1.0)


@pytest.mark.parametrize("eps", [1400.5, 1419.6, 1437.25, 1455.9], ids=["1400.5", "1419.6", "1437.25", "1455.9"])
def test_scaled_by_exp_beyond_the_half_exponent_range(eps):
    """Subnormal q keep e^eps q finite past 1419: compare with mpmath (12 units of roundoff)."""
    q = np.array([0.0, 5e-324, 1e-320, 2.5e-315, 1e-310, 1e-300, 0.5])
    got = scaled_by_exp(q, eps)
    assert got[0] == 0.0
    for qi, gi in zip(q[1:], got[1:]):
        exact = mpmath.mpf(float(qi)) * mpmath.exp(mpmath.mpf(eps))
        if exact > mpmath.mpf(np.finfo(float).max) * (1 + mpmath.mpf(2) ** -50):
            assert gi == math.inf
        elif math.isfinite(gi):
            assert abs(mpmath.mpf(gi) - exact) <= 12 * mpmath.mpf(2) ** -53 * exact


@pytest.mark.parametrize("eps", [1456.0001, 2000.0, 1e308], ids=["1456+", "2000", "1e308"])
def test_scaled_by_exp_saturates_for_every_positive_q(eps):
    q = np.array([0.0, 5e-324, 1.0])
    assert scaled_by_exp(q, eps).tolist() == [0.0, math.inf, math.inf]
    # the smallest subnormal times e^1456 already exceeds the largest double
    assert mpmath.mpf(5e-324) * mpmath.exp(1456) > mpmath.mpf(np.finfo(float).max)


def test_pipeline_with_epsilon_1e308_audits_and_reports(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "p.toml"
    path.write_text('format = "chainamp-pipeline/1"\n[mechanism]\nepsilon = 1e308\n[[steps]]\n'
                    'matrix = [[0.75, 0.25], [0.25, 0.75]]\n[[claims]]\nepsilon = 1.1\n', encoding="utf-8")
    code = main(["audit", str(path), "--report", str(tmp_path / "r.html"), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert "Traceback" not in err and "warning" not in err and "all 1 claim(s) certified" in out


@pytest.mark.parametrize("K, steps", [([np.array(K2)] * 2, None), (K2, 2), (np.array(K2), 2)],
                         ids=["list-of-arrays", "nested-list", "array"])
def test_amplify_steps_takes_arrays_like_amplify(K, steps):
    """Found with 18.2: ``amplify_steps`` crashed with AttributeError on numpy arrays and nested lists."""
    r = ca.amplify_steps(ca.DP(1e4), K, steps=steps, delta=1e-6)
    ref = ca.amplify_steps(ca.DP(1e4), ca.MarkovOperator(K2), steps=2, delta=1e-6)
    assert np.array_equal(r.epsilons, ref.epsilons) and r.epsilons[0] <= math.log(3) * (1 + 1e-12)
