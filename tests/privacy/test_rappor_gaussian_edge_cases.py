"""Issue 14, item 4: RAPPOR's one-report epsilon near p = 1 and the Gaussian profile at huge sigma.

References are computed with mpmath at high precision from the doubles actually passed; every value
must be sound (never below the reference) and as tight as stated.
"""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import mpmath as mp
import pytest

import chainamp as ca
from chainamp import mechanisms


def rappor_eps_one_reference(f: float, p: float, q: float, h: int) -> mp.mpf:
    with mp.workdps(80):
        f, p, q = mp.mpf(f), mp.mpf(p), mp.mpf(q)
        qs = f * (p + q) / 2 + (1 - f) * q
        ps = f * (p + q) / 2 + (1 - f) * p
        return h * abs(mp.log(qs * (1 - ps) / (ps * (1 - qs))))


@pytest.mark.parametrize("f, p, q, h", [
    (0.5, 1 - 1e-16, 1.0, 1),
    (0.5, 0.5, 0.75, 2),
    (0.25, 1e-17, 0.3, 1),
    (0.9, 0.999999, 1.0, 3),
    (0.5, 0.75, 0.5, 2),
], ids=["issue", "published", "p-tiny", "p-near-1", "q-below-p"])
def test_rappor_epsilon_one_is_sound_and_tight(f, p, q, h):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "invalid value" warning
        got = mechanisms.rappor_pipeline(max(2 * h, 2), h, f=f, p=p, q=q).epsilon_one
    ref = rappor_eps_one_reference(f, p, q, h)
    assert mp.mpf(got) >= ref
    assert got <= float(ref) * (1 + 1e-12)


def test_rappor_epsilon_one_issue_value_is_log3():
    got = mechanisms.rappor_pipeline(2, 1, f=0.5, p=1 - 1e-16, q=1.0).epsilon_one
    assert got == pytest.approx(math.log(3), rel=1e-13)  # was inf


def test_rappor_epsilon_one_infinite_when_a_report_is_impossible():
    assert mechanisms.rappor_pipeline(2, 1, f=0.0, p=0.5, q=0.0).epsilon_one == math.inf


def gaussian_reference(sigma: float, eps: float) -> mp.mpf:
    with mp.workdps(700):  # sigma = 1e300: the value is 4e-301, the terms are about 1/2
        mu = mp.mpf(1) / mp.mpf(sigma)
        e = mp.mpf(eps)
        return mp.ncdf(mu / 2 - e / mu) - mp.exp(e) * mp.ncdf(-mu / 2 - e / mu)


@pytest.mark.parametrize("sigma, eps", [
    (1e300, 0.0), (1e300, 1e-301), (1e150, 1e-160), (1e10, 0.0), (1e10, 1e-12), (1.0, 0.0), (1.0, 0.5),
    (1.0, 3.0), (0.5, 1.0),
], ids=["1e300-0", "1e300-tiny", "1e150", "1e10-0", "1e10-1e-12", "1-0", "1-0.5", "1-3", "0.5-1"])
def test_gaussian_profile_is_sound_and_tight(sigma, eps):
    got = ca.PrivacyProfile.gaussian(sigma).delta(eps)
    ref = gaussian_reference(sigma, eps)
    assert mp.mpf(got) >= ref
    assert got <= float(ref) * (1 + 1e-9)


def test_gaussian_issue_value():
    got = ca.PrivacyProfile.gaussian(1e300).delta(0.0)
    assert 3.98e-301 < got < 4.0e-301  # was 1.3e-13


_TINY_GRID = [0.0, 1e-300, 1e-16, 0.25, 0.75, 1 - 1e-16, 1.0]


@pytest.mark.parametrize("f", _TINY_GRID, ids=lambda v: f"f={v:g}")
def test_rappor_epsilon_one_never_below_exact_on_a_grid_of_extreme_parameters(f):
    """RAPPOR's eps_1 at extreme f, p, q: p* and q* can be subnormal (f = 1e-16, q = 1e-300), where forming
    them directly loses seven digits; the log-space evaluation keeps eps_1 an upper bound of the exact value
    (Fractions, then 60-digit logs) and tight within 1e-9 relative where it is finite."""
    for p, q in itertools.product(_TINY_GRID, _TINY_GRID):
        if p == q:
            continue
        got = mechanisms.rappor_pipeline(2, 1, f=f, p=p, q=q).epsilon_one
        F_, P, Q = Fraction(f), Fraction(p), Fraction(q)
        qs, ps = F_ / 2 * (P + Q) + (1 - F_) * Q, F_ / 2 * (P + Q) + (1 - F_) * P
        if qs in (0, 1) or ps in (0, 1):
            assert got == math.inf, (f, p, q, got)
            continue
        r = qs * (1 - ps) / (ps * (1 - qs))
        with mp.workdps(60):
            exact = abs(mp.log(r.numerator) - mp.log(r.denominator))
        assert got >= exact, (f, p, q, got, exact)
        assert got <= exact * (1 + 1e-9) + 1e-11, (f, p, q, got, exact)
