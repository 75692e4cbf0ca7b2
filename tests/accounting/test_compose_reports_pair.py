"""compose() of an AmplificationReport of a finite M uses the exact source's own dominating pair (the exact
profile's ROC pair, widened by the product's rounding), not 512 samples of the report's envelope."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from chainamp import amplify, mechanisms
from chainamp.accounting import compose
from chainamp.privacy import DominatingPair, privacy_profile


@pytest.mark.parametrize("k,e1,e2", [(4, 1.0, 0.5), (3, 2.0, 1.0)], ids=["4-RR", "3-RR"])
def test_report_pair_dominates_the_report(k, e1, e2):
    M, K = mechanisms.randomized_response(k, e1), mechanisms.randomized_response(k, e2)
    rep = amplify(M, K)
    src = next(s for s in rep.sources if s.name == "exact")
    pair = src.dominating_pair()
    eps = np.linspace(0.0, 3.0, 31)
    curve = pair.delta(eps)
    report = np.array([rep.delta_at(float(e)) for e in eps])
    assert np.all(curve >= report * (1 - 1e-9))  # above the exact source, hence above the true profile
    assert np.max(curve - report) < 1e-9  # and tight
    one = compose([rep])
    assert one.epsilon(1e-6) == pytest.approx(rep.epsilon_at(1e-6), abs=2e-3)  # within the PLD grid


def test_compose_report_t10_matches_compose_of_the_matrix():
    M, K = mechanisms.randomized_response(4, 1.0), mechanisms.randomized_response(4, 0.5)
    rep = amplify(M, K)
    a = compose([rep], counts=[10]).epsilon(1e-6)
    b = compose([np.asarray(M.matrix) @ np.asarray(K.matrix)], counts=[10]).epsilon(1e-6)
    assert a == pytest.approx(b, rel=1e-6)


def _pair_curve(p, q, c: Fraction) -> Fraction:
    return sum(max(Fraction(x) - c * Fraction(y), 0) for x, y in zip(p, q))


@pytest.mark.parametrize("rel", [1e-12, 1e-6, 0.01], ids=["1e-12", "1e-6", "0.01"])
def test_widened_pair_covers_every_perturbation(rel):
    """Exact arithmetic: every pair of distributions within factors [1 - rel, 1 + rel] of (p, q) entrywise
    (sign patterns of the extreme perturbations, renormalised) has its curve below the widened pair's, at
    ratios on both sides of 1; and the widening is needed: the unwidened pair is below some of them."""
    import itertools

    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    pair = DominatingPair(p, q)
    wide = pair.widened(rel)
    r = Fraction(rel)
    below = False
    for sp_, sq_ in itertools.product(itertools.product((-1, 1), repeat=3), repeat=2):
        ps = [Fraction(x) * (1 + s * r) for x, s in zip(p, sp_)]
        qs = [Fraction(y) * (1 + s * r) for y, s in zip(q, sq_)]
        ps = [x / sum(ps) for x in ps]
        qs = [y / sum(qs) for y in qs]
        if any(not (1 - r) <= a / Fraction(b) <= 1 + r for a, b in zip(ps + qs, p + q)):
            continue
        for c in (Fraction(1, 3), Fraction(2, 3), Fraction(1), Fraction(3, 2), Fraction(5, 2)):
            exact = sum(max(x - c * y, 0) for x, y in zip(ps, qs))
            assert _pair_curve(wide.p, wide.q, c) >= exact
            below |= _pair_curve(pair.p, pair.q, c) < exact
    assert below


def test_widened_zero_is_identity_and_validation():
    pair = DominatingPair([0.75, 0.25], [0.25, 0.75])
    assert pair.widened(0.0) is pair
    with pytest.raises(Exception, match="rel must be in"):
        pair.widened(1.5)


def test_structured_profile_has_a_widened_exact_pair():
    P = mechanisms.randomized_response(4, 1.0) @ mechanisms.randomized_response(4, 0.5)
    prof = privacy_profile(P)
    pair = prof.dominating_pair()
    eps = np.linspace(0.0, 2.0, 21)
    assert np.all(pair.delta(eps) >= prof.delta(eps) * (1 - 1e-12))
    assert pair.p.size < 64  # the exact (widened) hull, not a 512-point grid pair
