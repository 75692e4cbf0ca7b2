"""The error bound of :func:`chainamp.shuffle.exact._fft_conv3` against the bound its docstring proves, evaluated
exactly (mpmath at 60 digits from the same float inputs, the exact convolution by integer arithmetic), and the
computed convolution against the exact one entry by entry.

FFT errors in practice are orders of magnitude below the worst case, so no input makes ``|r - exact|`` exceed an
``eta`` with a factor dropped. What can fail is the claim that ``eta`` is the docstring's bound: ``eta >=
2 (e_F S g + (e_F + 12 u) ||r||_2)`` with ``e_F = 16 u (log2 n + 1)``, ``g = (1 + e_F sqrt(n))^2`` and ``S = ||a||_2
||b||_1 ||c||_1 + ||a||_1 ||b||_2 ||c||_1 + ||a||_1 ||b||_1 ||c||_2``, all exact. Checked by hand, each edit applied
to ``exact.py`` and restored: dropping the doubling, or half of ``e_F``'s 16, makes
:func:`test_eta_is_the_docstring_bound` FAIL on all three cases; dropping ``e_F``'s ``+ 1`` fails the
mixed-magnitudes case (where the S term dominates). The rounding of eta's own float evaluation (the norms and sums
in floats, a few u) is covered three times over: by the 1.01 of g, the 1.01 of ``||r||`` and the code's
``2 e_F ||r||_2`` where the docstring needs ``e_F ||r||_2``. Each of the three alone keeps the test passing; with
all three removed (the code then the docstring's formula evaluated in floats) it FAILS on two cases, by one float
(1.8377902731774041e-14 against 1.8377902731774043e-14). The ``12 u`` alone is covered by the extra ``e_F ||r||``
(at least ``32 u ||r||``), and ``g``'s ``(1 + e_F sqrt(n))^2`` by the 1.01 (``3 e_F sqrt(n)`` is below 1e-6 for
every n below 2^40): each can be removed without this test noticing, so neither is load-bearing on its own.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

from chainamp.shuffle import exact
from chainamp.shuffle._binomial import binomial_window

U = 2.0**-53


def _as_ints(x: np.ndarray) -> tuple[list[int], int]:
    """``x = m 2^e`` entrywise with integers m and one exponent e (floats are dyadic rationals)."""
    parts = [F(float(v)) for v in x]
    e = min((-(v.denominator.bit_length() - 1) for v in parts if v), default=0)
    scale = F(2) ** -e
    ints = [int(v * scale) for v in parts]
    assert all(F(m) / scale == v for m, v in zip(ints, parts))
    return ints, e


def _pack(ints: list[int], width: int) -> int:
    out = 0
    for m in reversed(ints):
        out = (out << width) | m
    return out


def _exact_conv3(a: np.ndarray, b: np.ndarray, c: np.ndarray, size: int | None) -> list[F]:
    """The exact linear (or, with ``size``, circular) convolution, by one product of packed integers."""
    (ia, ea), (ib, eb), (ic, ec) = _as_ints(a), _as_ints(b), _as_ints(c)
    L = a.size + b.size + c.size - 2
    width = max(max(ia).bit_length() + max(ib).bit_length() + max(ic).bit_length() + L.bit_length() + 2, 8)
    prod = _pack(ia, width) * _pack(ib, width) * _pack(ic, width)
    mask = (1 << width) - 1
    coeffs = [(prod >> (width * i)) & mask for i in range(L)]
    if size is not None:
        wrapped = [0] * size
        for i, v in enumerate(coeffs):
            wrapped[i % size] += v
        coeffs = wrapped
    scale = F(2) ** (ea + eb + ec)
    return [v * scale for v in coeffs]


def _doc_bound(a, b, c, r_exact: list[F], n: int) -> mpmath.mpf:
    """``2 (e_F S g + (e_F + 12 u) ||r||_2)`` of the docstring, at 60 digits from the exact inputs."""
    with mpmath.workdps(60):
        def n2(x):
            return mpmath.sqrt(mpmath.fsum(mpmath.mpf(float(v)) ** 2 for v in x))

        def n1(x):
            return mpmath.fsum(mpmath.mpf(float(v)) for v in x)

        eF = 16 * mpmath.mpf(U) * (mpmath.log(n, 2) + 1)
        S = n2(a) * n1(b) * n1(c) + n1(a) * n2(b) * n1(c) + n1(a) * n1(b) * n2(c)
        g = (1 + eF * mpmath.sqrt(n)) ** 2
        nr = mpmath.sqrt(mpmath.fsum(mpmath.mpf(v.numerator) ** 2 / mpmath.mpf(v.denominator) ** 2 for v in r_exact))
        return 2 * (eF * S * g + (eF + 12 * mpmath.mpf(U)) * nr)


def _case(name: str):
    rng = np.random.default_rng(CASES.index(name) + 11)
    if name == "binomials":  # the laws _fft_conv3 convolves: long binomial windows
        return [binomial_window(m, p, 1e-20)[1] for m, p in ((3000, 0.3), (2000, 0.6), (1500, 0.5))], None
    if name == "mixed-magnitudes":  # entries from 1e-30 to 1 at random, a spike beside a flat vector
        a = rng.random(700) * 10.0 ** rng.integers(-30, 1, 700)
        b = np.zeros(300)
        b[17] = 1.0
        b[200:] = 1e-12 * rng.random(100)
        return [a, b, rng.random(900)], None
    if name == "circular":  # the windowed path: a circular convolution of length 1024 of binomial windows
        return [binomial_window(m, p, 1e-20)[1] for m, p in ((4000, 0.5), (3000, 0.5), (2000, 0.5))], 1024
    raise AssertionError(name)


CASES = ["binomials", "mixed-magnitudes", "circular"]


@pytest.mark.parametrize("name", CASES, ids=CASES)
def test_eta_is_the_docstring_bound(name):
    (a, b, c), size = _case(name)
    L = a.size + b.size + c.size - 2
    n = size if size is not None else 1 << max(1, (L - 1).bit_length())
    assert max(a.size, b.size, c.size) <= n
    r, eta = exact._fft_conv3(a, b, c, size)
    exact_r = _exact_conv3(a, b, c, size)
    bound = _doc_bound(a, b, c, exact_r, n)
    assert mpmath.mpf(eta) >= bound, (eta, float(bound))
    # and the computed convolution is within eta of the exact one in every entry (clipped negatives included)
    worst = max(abs(F(float(x)) - y) for x, y in zip(r, exact_r))
    assert worst <= F(eta), (float(worst), eta)
    assert worst > 0  # the inputs are not convolved exactly: the bound is exercised


def test_the_docstring_formula_in_floats_falls_below_itself():
    """The edge of eta's rounding margins: the docstring's formula evaluated in floats the way ``_fft_conv3`` does
    (pairwise sums, no 1.01, ``e_F ||r||`` once) lands below its exact value on some of these inputs, so some
    margin for that rounding is needed (the module docstring: three are there, each enough alone)."""
    below = 0
    for name in CASES:
        (a, b, c), size = _case(name)
        L = a.size + b.size + c.size - 2
        n = size if size is not None else 1 << max(1, (L - 1).bit_length())
        r, _ = exact._fft_conv3(a, b, c, size)
        na, nb, nc = (float(np.sqrt((x * x).sum())) for x in (a, b, c))
        sa, sb, sc = float(a.sum()), float(b.sum()), float(c.sum())
        nr = float(np.sqrt((r * r).sum()))
        eF = 16.0 * U * (math.log2(n) + 1.0)
        g = (1.0 + eF * math.sqrt(n)) ** 2
        plain = 2.0 * (eF * (na * sb * sc + sa * nb * sc + sa * sb * nc) * g + (eF + 12.0 * U) * nr)
        below += mpmath.mpf(plain) < _doc_bound(a, b, c, _exact_conv3(a, b, c, size), n)
    assert below > 0
