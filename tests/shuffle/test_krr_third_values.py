"""Shuffled k-RR: among the datasets in which no other user holds either of the changed user's two values, the
worst is every other user at one third value (the proof in chainamp.shuffle._krr_datasets), checked in exact
rational arithmetic: its garbling kernel maps the concentrated dataset's histogram law onto the split one's, and
no split dataset's profile passes the concentrated one's."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_krr_datasets import _hist_law  # noqa: E402


def _compositions(total: int, caps: list[int]):
    """Every ``(r_1, ..., r_m)`` with ``0 <= r_i <= caps[i]`` summing to ``total``."""
    if len(caps) == 1:
        if total <= caps[0]:
            yield (total,)
        return
    for first in range(min(total, caps[0]) + 1):
        for rest in _compositions(total - first, caps[1:]):
            yield (first,) + rest


def _tables(rows: list[int], cols: tuple[int, ...]):
    """Every non-negative integer table with the given row and column sums."""
    if not rows:
        if all(c == 0 for c in cols):
            yield ()
        return
    for row in _compositions(rows[0], list(cols)):
        for rest in _tables(rows[1:], tuple(c - x for c, x in zip(cols, row))):
            yield (row,) + rest


def _merge_kernel(h: tuple, values: list[int], sizes: list[int]) -> dict:
    """The garbling of the proof: from a histogram of the concentrated dataset (all ``sum(sizes)`` third users at
    ``values[0]``), the law of a histogram of the split one (``sizes[i]`` users at ``values[i]``). With ``s`` the
    reports on ``values`` and ``c = sum(sizes)``: group sizes ``r ~ MultiHyp(c; sizes; s)``, a uniformly random
    partition of the ``s`` reports into groups of those sizes, and in group i the labels ``values[0]`` and
    ``values[i]`` swapped. Histograms with ``s > c`` are left as they are (the proof treats them apart)."""
    c = sum(sizes)
    s = sum(h[v] for v in values)
    if s > c:
        return {h: Fraction(1)}
    out: dict = {}
    labels = [h[v] for v in values]
    for r in _compositions(s, sizes):
        w_r = Fraction(math.prod(math.comb(ci, ri) for ci, ri in zip(sizes, r)), math.comb(c, s))
        for table in _tables(labels, r):
            # table[u][i]: reports labelled values[u] put in group i
            w_t = Fraction(math.prod(math.factorial(x) for x in labels) * math.prod(math.factorial(x) for x in r),
                           math.factorial(s) * math.prod(math.factorial(x) for row in table for x in row))
            new = list(h)
            for v in values:
                new[v] = 0
            for u, row in enumerate(table):
                for i, cnt in enumerate(row):
                    # the swap of values[0] and values[i] (the identity in group 0)
                    lab = i if u == 0 else (0 if u == i else u)
                    new[values[lab]] += cnt
            key = tuple(new)
            out[key] = out.get(key, 0) + w_r * w_t
    return out


def _krr(k: int, r: Fraction) -> tuple[Fraction, Fraction]:
    o = 1 / (r + k - 1)
    return r * o, o


def _split_values(sizes: list[int]) -> list[int]:
    return [x for i, c in enumerate(sizes) for x in [2 + i] * c]


KERNEL_CASES = [(5, [1, 1], Fraction(3), 0, 0), (5, [2, 1], Fraction(2), 0, 0), (6, [2, 2], Fraction(5, 2), 0, 0),
                (6, [1, 1, 1], Fraction(4), 0, 0), (6, [3, 1], Fraction(3, 2), 0, 0),
                (7, [2, 2, 1], Fraction(3), 0, 0), (6, [2, 1, 1, 1], Fraction(6), 0, 0),
                # other users at x0 and x1 too: the identity still holds where s <= c
                (5, [1, 1], Fraction(3), 2, 0), (5, [2, 1], Fraction(7), 1, 1), (6, [1, 1], Fraction(55), 1, 2)]


@pytest.mark.parametrize("k,sizes,ratio,a,b", KERNEL_CASES,
                         ids=[f"k{k}-{'_'.join(map(str, s))}-r{str(r).replace('/', '_')}-a{a}b{b}" for k, s, r, a, b in KERNEL_CASES])
def test_merge_kernel_maps_concentrated_law_onto_split_law(k, sizes, ratio, a, b):
    """Applied to the exact histogram law of (changed user, ``a`` users at x0, ``b`` at x1, every third user at one
    value), the kernel gives the exact law with the third users split as ``sizes`` on every histogram with at most
    ``c`` reports on the split values, under both hypotheses: the garbling step of the proof, with nothing
    rounded. Users at x0 or x1 land on the split values uniformly, like the changed user, so the identity holds
    with them too; what fails with them is only that ``s > c`` is then possible without the hypotheses agreeing."""
    d, o = _krr(k, ratio)
    c = sum(sizes)
    values = list(range(2, 2 + len(sizes)))
    fixed = [0] * a + [1] * b
    for target in (0, 1):
        conc = _hist_law([target] + fixed + [2] * c, k, d, o)
        split = _hist_law([target] + fixed + _split_values(sizes), k, d, o)
        pushed: dict = {}
        for h, w in conc.items():
            row = _merge_kernel(h, values, sizes)
            assert sum(row.values()) == 1 and all(x >= 0 for x in row.values())  # a Markov kernel
            assert all(sum(x[v] for v in values) == sum(h[v] for v in values) and
                       all(x[u] == h[u] for u in range(k) if u not in values) for x in row)  # moves only V's labels
            for h2, w2 in row.items():
                pushed[h2] = pushed.get(h2, 0) + w * w2
        inside = {h for h in set(pushed) | set(split) if sum(h[v] for v in values) <= c}
        assert inside, "no histogram with s <= c"
        assert all(pushed.get(h, 0) == split.get(h, 0) for h in inside)
        # without users at x0 or x1 the histograms left out have s = c + 1: the changed user landed there too
        rest = {h for h in split if h not in inside}
        assert all(sum(h[v] for v in values) == c + 1 for h in rest) or a + b > 0


def test_laws_differ_where_more_than_c_reports_land_on_the_split_values():
    """Control: where ``s = c + 1`` reports land on the split values the concentrated and split laws differ, and
    the kernel leaves those histograms as they are, so the identity above really is restricted to ``s <= c``
    (the proof covers ``s = c + 1`` apart: there the changed user landed among the split values, where both
    hypotheses give it the same law)."""
    k, ratio = 5, Fraction(3)
    d, o = _krr(k, ratio)
    for target in (0, 1):
        conc = _hist_law([target, 2, 2], k, d, o)
        split = _hist_law([target, 2, 3], k, d, o)
        over = [h for h in set(conc) | set(split) if h[2] + h[3] == 3]
        assert any(conc.get(h, 0) != split.get(h, 0) for h in over)
        assert all(_merge_kernel(h, [2, 3], [1, 1]) == {h: 1} for h in over)
        # and there the two hypotheses agree, dataset by dataset
        other = _hist_law([1 - target, 2, 3], k, d, o)
        assert all(split.get(h, 0) == other.get(h, 0) for h in over)


def _partitions(total: int, parts: int, largest: int | None = None):
    largest = total if largest is None else largest
    if total == 0:
        yield []
        return
    if parts == 0:
        return
    for first in range(min(total, largest), 0, -1):
        for rest in _partitions(total - first, parts - 1, first):
            yield [first] + rest


def _hockey(P: dict, Q: dict, a: Fraction) -> Fraction:
    return sum((max(P.get(h, 0) - a * Q.get(h, 0), Fraction(0)) for h in set(P) | set(Q)), Fraction(0))


PROFILE_CASES = [(4, 4, Fraction(3)), (5, 5, Fraction(2)), (5, 5, Fraction(9)), (6, 4, Fraction(5)),
                 (6, 5, Fraction(3, 2)), (5, 6, Fraction(20))]
SLOPES = [Fraction(1), Fraction(11, 10), Fraction(5, 4), Fraction(2), Fraction(3), Fraction(6), Fraction(15)]


@pytest.mark.parametrize("n,k,ratio", PROFILE_CASES, ids=[f"n{n}k{k}r{str(r).replace('/', '_')}" for n, k, r in PROFILE_CASES])
def test_no_split_of_third_values_beats_one_third_value(n, k, ratio):
    """Every dataset of the ``n - 1`` others drawn from the third values only (every partition over the ``k - 2``
    of them): its exact hockey-stick divergence at each slope, both orders, is at most the concentrated
    dataset's (often equal: the best tests need not look at the third values)."""
    d, o = _krr(k, ratio)
    N = n - 1
    base = [_hist_law([t] + [2] * N, k, d, o) for t in (0, 1)]
    top = {a: max(_hockey(base[0], base[1], a), _hockey(base[1], base[0], a)) for a in SLOPES}
    for sizes in _partitions(N, k - 2):
        P, Q = (_hist_law([t] + _split_values(sizes), k, d, o) for t in (0, 1))
        for a in SLOPES:
            value = max(_hockey(P, Q, a), _hockey(Q, P, a))
            assert value <= top[a], (sizes, a)


def _delta(others: list[int], k: int, ratio: Fraction, slope: Fraction) -> Fraction:
    d, o = _krr(k, ratio)
    P, Q = (_hist_law([t] + others, k, d, o) for t in (0, 1))
    return max(_hockey(P, Q, slope), _hockey(Q, P, slope))


def test_users_at_x0_mixed_with_a_third_value_can_beat_both_single_value_datasets():
    """Why the lower of shuffled k-RR is not the worst case: at n = 6, k = 4, e^eps0 = 7, e^eps = 4, three users at
    x0 and two at one third value give delta 6237/100000, above every other user at one third value (927/15625) and
    every other user at x0 (50421/1000000), the two datasets the lower is made of. The proof above covers only
    datasets without users at x0 or x1."""
    k, ratio, slope = 4, Fraction(7), Fraction(4)
    mixed = _delta([0, 0, 0, 2, 2], k, ratio, slope)
    assert mixed == Fraction(6237, 100000)
    assert _delta([2] * 5, k, ratio, slope) == Fraction(927, 15625)
    assert _delta([0] * 5, k, ratio, slope) == Fraction(50421, 1000000)


@pytest.mark.parametrize("k,sizes,ratio,a,b", [(5, [1, 1], Fraction(3), 2, 0), (6, [1, 1], Fraction(55), 1, 2),
                                               (5, [2, 1], Fraction(7), 1, 1)], ids=["a2", "a1b2", "a1b1"])
def test_split_is_below_concentrated_plus_the_chance_of_more_than_c_reports_on_the_split_values(k, sizes, ratio,
                                                                                              a, b):
    """With users at x0 or x1 the proof leaves an error term: at every slope and in both orders the split dataset's
    divergence is at most the concentrated one's plus P(s > c), the chance that more reports land on the split
    values than there are third users (its law is the same under both datasets and both hypotheses)."""
    d, o = _krr(k, ratio)
    c = sum(sizes)
    values = list(range(2, 2 + len(sizes)))
    fixed = [0] * a + [1] * b
    laws = {t: (_hist_law([t] + fixed + [2] * c, k, d, o), _hist_law([t] + fixed + _split_values(sizes), k, d, o))
            for t in (0, 1)}
    over = {t: sum(w for h, w in laws[t][1].items() if sum(h[v] for v in values) > c) for t in (0, 1)}
    assert over[0] == over[1] == sum(w for h, w in laws[0][0].items() if sum(h[v] for v in values) > c) > 0
    for slope in SLOPES:
        for first, second in ((0, 1), (1, 0)):
            split = _hockey(laws[first][1], laws[second][1], slope)
            conc = _hockey(laws[first][0], laws[second][0], slope)
            assert split <= conc + over[first]
