"""Declared errors of the Kronecker orbit kernels (:mod:`chainamp.operators._kron_kernels`, ``group_log_pmfs`` and
``combine_groups``; :meth:`~chainamp.operators.KroneckerOperator.pair_orbits` with the densified roundings of
``_rounded_products``) (issue 18, "Tests that catch last-ulp mistakes").

References are exact (``Fraction``), no slack: a count vector's mass ``multinomial(n; k) prod_i P_i^k_i`` with the
exact class sums ``P_i`` of the stored factor entries, and the block masses of the densified matrix (exact sums of
its float entries over the outputs of each block, read from ``PairOrbit.members``). Both readings must lie within
``rel_error`` of every entry, and every ratio within ``ratio_error``.

What removing a margin does (measured on branch h-mut2): the realised errors are 1/2 to 1/60 of the declared
``rel`` (every logarithm-space term is charged ``16 u`` per unit of magnitude, several times what the roundings
realise, and ``rel`` is one maximum over count vectors whose dominant charges differ), so no single charge
(gammaln's, a term's, a class sum's, the outer product's ``2 u``, the densified roundings') sits on a reachable
edge; the tests fail when the logarithm-space charges are dropped together (``rel`` = the final 4 u of exp) and
when the merged sub-``2^-1000`` masses lose their ``(1 + rel)`` round-up.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from chainamp import MarkovOperator
from chainamp.operators import KroneckerOperator
from chainamp.operators._kron_kernels import combine_groups, group_log_pmfs


def exact_group(n: int, p: np.ndarray, q: np.ndarray, counts: np.ndarray, classes: list) -> tuple[list, list]:
    """Exact masses of the count vectors of one group, for both rows (exact class sums of the stored entries)."""
    Pc = [sum((Fraction(float(p[y])) for y in g), Fraction(0)) for g in classes]
    Qc = [sum((Fraction(float(q[y])) for y in g), Fraction(0)) for g in classes]
    outP, outQ = [], []
    for k in counts:
        mult = math.factorial(n)
        for ki in k:
            mult //= math.factorial(int(ki))
        a = b = Fraction(mult)
        for ki, x, y in zip(k, Pc, Qc):
            a, b = a * x ** int(ki), b * y ** int(ki)
        outP.append(a)
        outQ.append(b)
    return outP, outQ


def worst_rel(computed: np.ndarray, exact: list) -> Fraction:
    return max((abs(Fraction(float(c)) / e - 1) for c, e in zip(computed, exact) if e), default=Fraction(0))


ROWS = {"two": ([0.75, 0.25], [0.25, 0.75]),
        "three": ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]),
        "merged": ([0.25, 0.25, 0.5], [0.125, 0.125, 0.75]),  # a class of two outputs (a summed class mass)
        "near-one": ([0.999, 0.001], [0.998, 0.002]),         # log P ~ 0: the term charges are small
        "tiny": ([1.0 - 1e-6, 1e-6], [0.5, 0.5])}             # n |log p| large: deep log-space sums


@pytest.mark.parametrize("name", list(ROWS))
@pytest.mark.parametrize("n", [1, 7, 40])
def test_group_masses_within_declared_rel(name, n):
    """``group_log_pmfs`` + ``combine_groups``: every count vector's mass within ``rel`` of the exact one."""
    p, q = (np.array(r) for r in ROWS[name])
    g = group_log_pmfs(n, p, q)
    P, Q, rel, n_tiny = combine_groups([g])
    assert n_tiny == 0
    EP, EQ = exact_group(n, p, q, g[3], g[4])
    worst = max(worst_rel(P, EP), worst_rel(Q, EQ))
    assert worst <= Fraction(rel)


@pytest.mark.parametrize("names", [("two", "three"), ("merged", "near-one"), ("three", "tiny")],
                         ids=["two-three", "merged-near1", "three-tiny"])
def test_combined_groups_within_declared_rel(names):
    """The outer product of two groups (``2 u`` per combined log magnitude): within ``rel`` of the exact product."""
    specs = [(5, *(np.array(r) for r in ROWS[names[0]])), (4, *(np.array(r) for r in ROWS[names[1]]))]
    groups = [group_log_pmfs(n, p, q) for n, p, q in specs]
    P, Q, rel, n_tiny = combine_groups(groups)
    assert n_tiny == 0
    (ap, aq), (bp, bq) = (exact_group(n, p, q, g[3], g[4]) for (n, p, q), g in zip(specs, groups))
    EP = [x * y for x in ap for y in bp]
    EQ = [x * y for x in aq for y in bq]
    assert max(worst_rel(P, EP), worst_rel(Q, EQ)) <= Fraction(rel)


FACTORS = {"random-2": np.random.default_rng(7).dirichlet(np.ones(2), size=2),
           "random-3": np.random.default_rng(8).dirichlet(np.ones(3), size=3)}


@pytest.mark.parametrize("name, d", [("random-2", 8), ("random-3", 4)], ids=["2x2^8", "3x3^4"])
def test_orbits_cover_the_densified_blocks(name, d):
    """``pair_orbits`` (with the ``d - 1`` densified roundings of ``_rounded_products``): the exact block masses
    of the densified rows within ``rel_error``, their ratios within ``ratio_error``."""
    F = FACTORS[name]
    F = F / F.sum(axis=1, keepdims=True)
    K = KroneckerOperator.power(MarkovOperator(F), d)
    D = K.densify().matrix
    for orbit in K.pair_orbits():
        i, j = orbit.pair
        rel, ratio = Fraction(orbit.rel_error), Fraction(orbit.ratio_error)
        for b in range(orbit.p.size):
            ys = list(orbit.members(b))
            ep = sum((Fraction(float(D[i, y])) for y in ys), Fraction(0))
            eq = sum((Fraction(float(D[j, y])) for y in ys), Fraction(0))
            cp, cq = Fraction(float(orbit.p[b])), Fraction(float(orbit.q[b]))
            assert abs(cp - ep) <= rel * ep and abs(cq - eq) <= rel * eq
            if ep and eq and cq:
                assert abs((cp / cq) / (ep / eq) - 1) <= ratio


@pytest.mark.parametrize("n, name", [(200, "near-one"), pytest.param(400, "near-one", marks=pytest.mark.slow),
                                     (150, "tiny"), (60, "tiny")],  # near1-200 takes near1-400's path, 8x cheaper
                         ids=["near1-200", "near1-400", "tiny-150", "tiny-60"])
def test_tiny_masses_merge_upward(n, name):
    """``combine_groups`` below ``2^-1000``: the kept masses within ``rel``; the merged masses of each row, rounded
    up by ``(1 + rel)(1 + (n_tiny + 4) u)``, at least the exact sum of what they replace."""
    p, q = (np.array(r) for r in ROWS[name])
    g = group_log_pmfs(n, p, q)
    P, Q, rel, n_tiny = combine_groups([g])
    floor = -1000.0 * math.log(2.0)
    lp, lq = g[0], g[1]
    tiny = ((lp > -np.inf) & (lp < floor)) | ((lq > -np.inf) & (lq < floor))
    assert n_tiny == int(tiny.sum()) > 0
    EP, EQ = exact_group(n, p, q, g[3], g[4])
    keep = np.flatnonzero(~tiny)
    assert max(worst_rel(P[:-2], [EP[k] for k in keep]), worst_rel(Q[:-2], [EQ[k] for k in keep])) <= Fraction(rel)
    gone = np.flatnonzero(tiny)
    assert Fraction(float(P[-2])) >= sum((EP[k] for k in gone), Fraction(0)) and Q[-2] == 0.0
    assert Fraction(float(Q[-1])) >= sum((EQ[k] for k in gone), Fraction(0)) and P[-1] == 0.0
