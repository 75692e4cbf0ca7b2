"""Compressed pair distributions of Kronecker products (private to :mod:`chainamp.operators.kronecker`).

For a product ``K = F_1 (x) ... (x) F_d`` and two inputs ``x, x'``, the rows ``K_x`` and ``K_x'`` are
product distributions; every coordinate with ``x_j = x'_j`` contributes the same factor to both and
leaves every hockey-stick divergence unchanged (``D_c(P (x) R || Q (x) R) = D_c(P || Q)``). The
coordinates where they differ fall into *groups* of equal ``(factor, x_j, x'_j)``; within a group of
``n`` coordinates, an outcome's likelihood ratio only depends on how many of its coordinates fell in
each class of per-coordinate outcomes with equal likelihood ratio. So the pair of rows compresses
exactly to a pair of distributions over count vectors: for a group whose per-coordinate outcomes form
``c`` classes of probabilities ``p_1..p_c`` (first row) and ``q_1..q_c`` (second row), the count vector
``k`` (``sum k = n``) has probabilities ``multinomial(n; k) prod p_i^{k_i}`` and the same with ``q``
(binomial pmfs when ``c = 2``). Every original outcome mapped to one count vector has the same ratio,
so merging them changes no divergence; different groups are independent, so the compressed pair is the
outer product of the groups' pmfs.

Rounding. Probabilities are computed in log space, ``log C + sum_i k_i log p_i``, with ``log C`` from
``scipy.special.gammaln``; every term is charged ``16 u (|term| + 1)`` (u = 2^-53; gammaln and log are
within a few ulps, the products and sums add one rounding each), and a class probability summed from
``s`` entries carries ``s u`` relative error, raised to the power ``k_i``. The returned ``rel`` bounds
``|computed / exact - 1|`` for every entry, exact meaning the exact product of the stored factor
entries (``tests/operators/test_kron_kernels.py`` checks it against mpmath).
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations_with_replacement

import numpy as np

from .._numerics import gammaln, UNIT_ROUNDOFF
from ..errors import ResourceLimitError

__all__: list[str] = []

_U = UNIT_ROUNDOFF

#: largest number of count vectors of one compressed pair (product over its groups)
MAX_PAIR_OUTCOMES = 1 << 22


def likelihood_classes(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """Merge the per-coordinate outcomes of the pair of rows ``(p, q)`` whose likelihood ratios are equal
    (compared exactly, as fractions of the stored doubles; outcomes both rows give 0 are dropped).

    Returns the class probabilities ``(P, Q)`` (float sums of the members) and the classes (lists of
    outcome indices).

    >>> likelihood_classes(np.array([0.25, 0.25, 0.5]), np.array([0.125, 0.125, 0.75]))
    (array([0.5, 0.5]), array([0.25, 0.75]), [[0, 1], [2]])
    """
    keys: dict = {}
    for y in range(p.size):
        a, b = float(p[y]), float(q[y])
        if a == 0.0 and b == 0.0:
            continue
        key = ("inf",) if b == 0.0 else Fraction(a) / Fraction(b)
        keys.setdefault(key, []).append(y)
    groups = list(keys.values())
    P = np.array([float(np.sum(p[g])) for g in groups])
    Q = np.array([float(np.sum(q[g])) for g in groups])
    return P, Q, groups


def _compositions(n: int, c: int) -> np.ndarray:
    """All vectors of c non-negative ints summing to n, as rows (stars and bars)."""
    if c == 1:
        return np.array([[n]], dtype=np.int64)
    if c == 2:
        k = np.arange(n + 1, dtype=np.int64)
        return np.stack([k, n - k], axis=1)
    rows = []
    for bars in combinations_with_replacement(range(n + 1), c - 1):
        edges = (0,) + bars + (n,)
        rows.append([edges[i + 1] - edges[i] for i in range(c)])
    return np.array(rows, dtype=np.int64)


def n_compositions(n: int, c: int) -> int:
    """``C(n + c - 1, c - 1)``: how many count vectors a group of n coordinates with c classes has."""
    return math.comb(n + c - 1, c - 1)


def _log_multinomial(counts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``log(n! / prod k_i!)`` per row of ``counts`` (gammaln) and a bound on its absolute error."""
    lg = gammaln(counts + 1.0)
    top = float(gammaln(n + 1.0))
    return top - lg.sum(axis=1), 16 * _U * (abs(top) + np.abs(lg).sum(axis=1) + counts.shape[1] + 1)


def _log_pmf(counts: np.ndarray, probs: np.ndarray, members: int, log_c: np.ndarray,
             err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log(multinomial(n; k) prod p_i^k_i)`` per row k of ``counts`` and a bound on its absolute error, from
    the multinomial's log and error (:func:`_log_multinomial`)."""
    with np.errstate(divide="ignore"):
        logp = np.log(probs)
    out = log_c.copy()
    for i in range(counts.shape[1]):
        k = counts[:, i]
        if math.isinf(logp[i]):
            term = np.where(k > 0, -np.inf, 0.0)
            t_abs = np.zeros(k.size)
        else:
            term = k * logp[i]
            t_abs = np.abs(term)
        out = out + term
        # log of a class sum of `members` entries: relative error members * u (log error the same),
        # times k; the log itself 4 ulps, the product and the sum one rounding each
        err = err + 16 * _U * (t_abs + 1.0) + k * members * _U * 1.01
    return out, err


def group_log_pmfs(n: int, p: np.ndarray, q: np.ndarray):
    """The compressed pair of one group of ``n`` coordinates with per-coordinate rows ``p``, ``q``:
    ``(logP, logQ, err, counts, classes)`` over its count vectors (``counts``, one row each, over the
    likelihood ``classes``), or None when the group cannot change any divergence (a single likelihood
    class: the rows are equal up to outcomes neither gives)."""
    P, Q, classes = likelihood_classes(p, q)
    members = max((len(g) for g in classes), default=1)
    c = P.size
    if c <= 1 or n == 0:
        return None
    size = n_compositions(n, c)
    if size > MAX_PAIR_OUTCOMES:
        raise ResourceLimitError(
            f"a pair of product rows compresses to {size} count vectors ({n} coordinates, {c} likelihood "
            f"classes each), above {MAX_PAIR_OUTCOMES}")
    counts = _compositions(n, c)
    log_c, err_c = _log_multinomial(counts, n)
    lp, ep = _log_pmf(counts, P, members, log_c, err_c)
    lq, eq = _log_pmf(counts, Q, members, log_c, err_c)
    return lp, lq, np.maximum(ep, eq), counts, classes


def combine_groups(groups: list, n_products: int = 0) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Outer product of the groups' compressed pairs (:func:`group_log_pmfs`): ``(P, Q, rel, n_tiny)``.

    ``rel`` bounds the relative error of every entry of P and Q against the exact block masses of the
    stored rows, whose entries are float products of ``n_products + 1`` factor entries (``n_products``
    roundings, each relative u, charged here). Outcomes whose probability in either row is below
    ``2^-1000`` (where exp loses relative accuracy, or underflows) are not kept as such: their masses,
    summed and rounded up (plus one smallest subnormal each), become one outcome only the first row gives
    and one only the second gives (the last two entries; ``n_tiny`` counts the outcomes merged). Every
    hockey-stick divergence, in both directions, can then only grow (``[p_y - c q_y]_+ <= p_y``); the pure
    epsilon becomes infinite. Never happens unless ``n |log p| > 690`` for some group.
    """
    if not groups:
        return np.ones(1), np.ones(1), 0.0, 0
    size = 1
    for g in groups:
        size *= g[0].size
    if size > MAX_PAIR_OUTCOMES:
        raise ResourceLimitError(f"a pair of product rows compresses to {size} outcomes, above {MAX_PAIR_OUTCOMES}")
    lp, lq, err = groups[0][:3]
    for glp, glq, gerr in (g[:3] for g in groups[1:]):
        lp = (lp[:, None] + glp[None, :]).ravel()
        lq = (lq[:, None] + glq[None, :]).ravel()
        mag = np.maximum(np.abs(np.where(np.isfinite(lp), lp, 0.0)), np.abs(np.where(np.isfinite(lq), lq, 0.0)))
        err = (err[:, None] + gerr[None, :]).ravel() + 2 * _U * mag
    d = float(err.max()) if err.size else 0.0
    # exp within 2 ulps for normal results; the stored entries round n_products times
    rel = math.expm1(d * (1.0 + 4 * _U)) + 4 * _U
    if n_products:
        rel = (1.0 + rel) * math.exp(n_products * math.log1p(_U) * (1.0 + 4 * _U)) - 1.0
    rel = math.nextafter(rel * (1.0 + 8 * _U), math.inf)
    floor = -1000.0 * math.log(2.0)
    tiny = ((lp > -np.inf) & (lp < floor)) | ((lq > -np.inf) & (lq < floor))
    P, Q = np.exp(lp), np.exp(lq)
    n_tiny = int(np.count_nonzero(tiny))
    if n_tiny:
        grow = (1.0 + rel) * (1.0 + (n_tiny + 4) * _U)
        p_rem = math.nextafter(float(P[tiny].sum()) * grow + n_tiny * 2.0**-1074, math.inf)
        q_rem = math.nextafter(float(Q[tiny].sum()) * grow + n_tiny * 2.0**-1074, math.inf)
        P = np.concatenate([P[~tiny], [p_rem, 0.0]])
        Q = np.concatenate([Q[~tiny], [0.0, q_rem]])
    return P, Q, rel, n_tiny
