"""The exact expectation behind the privacy blanket of Balle, Bell, Gascon and Nissim (2019).

R(x) = g omega + (1 - g) R'(x) with ``g = sum_y min_x R(x, y)`` (``g = 1 -`` the Doeblin coefficient of
:func:`chainamp.doeblin`, ``omega`` its witness). Each other user's report is, with probability g, a
draw from omega that does not depend on its value; revealing which users drew from the blanket and the
others' remaining reports is extra information, so the pair ``(R(x0) + H_B, R(x1) + H_B)`` with
``H_B ~ Mult(B, omega)``, ``B ~ Bin(n - 1, g)``, dominates the shuffled reports (their Section 3).
Balle et al. bound its divergence by Hoeffding's and Bennett's inequalities; we evaluate it.

Per blanket size b, ``P_b(h) = sum_y R(x0, y) Mult(b, omega)(h - e_y)``; outputs outside omega's support
reveal the changing user's report and add ``[R(x0, y) - e^eps R(x1, y)]_+``. Since
``Mult(b, omega)(h - e_y) = Mult(b + 1, omega)(h) h_y / ((b + 1) omega_y)``,
``D_b(eps) = sum_h [P_b(h) - e^eps Q_b(h)]_+ = E[(Z_1 + ... + Z_{b+1})_+] / (b + 1)`` with ``Z`` iid, equal to
``(R(x0, y) - e^eps R(x1, y)) / omega_y`` with probability ``omega_y``. Summed over ``B ~ Bin(n - 1, g)``
(``P(B = b) / (b + 1) = P(Bin(n, g) = b + 1) / (g n)``) the blanket's delta is the mean of ONE sum of n iid
variables (our derivation; the histogram and B both disappear):

    delta(eps) = reveal(eps) + E[(U_1 + ... + U_n)_+] / n,   U = (R(x0, y) - e^eps R(x1, y)) / mu_y w.p. mu_y,
                                                              U = 0 w.p. 1 - sum_y mu_y,

with ``mu_y = min_x R(x, y) = g omega_y`` the column minima (any ``mu <= `` them is a valid blanket).

Two evaluations: pairs with at most three blanket classes (outputs on which ``(R(x0, y), R(x1, y),
omega_y)`` are proportional: binary and k-ary randomized response, :class:`~chainamp.operators.SymmetricChannel`
at any k without densifying, any R with three outputs) in closed form per (blanket size, count of the two
differing classes) (:func:`_three_classes_Db`), blanket sizes summed exactly in a window when that fits
``max_terms``, the mass of B below the window added with ``D <= 1`` (where the window does not fit, large n, these
pairs go through the ladder too: it is tighter there than blocks of sizes valued at their smallest b, which
``D_b``'s monotonicity in b allowed, and 100x faster); every other pair by the lattice ladder of :mod:`._ladder` on the n-user sum above (any number of outputs, ``O(log n)``
convolutions of at most 512 points each, an upper bound in the increasing convex order).

Rounding: the closed form trusts scipy's binomial pmf and survival function to a relative
``SHUFFLE_SPECIAL_RTOL`` and pushes each toward a larger delta, and widens each class's ``l`` by its rounding (more
for a class summed from many outputs of a dense R: :func:`_class_kappa`); the ladder's atoms are pushed up by their
rounding error (``4 u (R(x0, y) + e^eps R(x1, y)) / mu_y``), the zero atom's mass by ``2^-52``, and the ladder
bounds its own rounding (:mod:`._ladder`); block masses are sums of pmfs pushed up; the total is rounded up.
Below about 1e-18 the values are this floor (window tails and guards), not the divergence.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._numerics import (BLANKET_MAX_TERMS, SHUFFLE_SPECIAL_RTOL, UNIT_ROUNDOFF, check_delta, check_executor,
                         check_int, check_memory, map_blocks, progress_bar, round_up)
from ..errors import InvalidMechanismError, InvalidParameterError
from ..mixing import doeblin, ldp_guarantee
from ..operators import MarkovOperator, SymmetricChannel
from ._clones import invert_delta
from ._blanket_tables import _binom_table, _s_window
from ._curves import pair_from_curve
from ._ladder import sum_positive_part
from .generic import _check_epsilons, _check_users

__all__ = ["blanket_delta", "blanket_epsilon", "blanket_dominating_pair"]

_U = UNIT_ROUNDOFF
BLANKET_TERM_RTOL = 1e-12  # extra relative margin per log-multinomial term, beyond its computed error bound


def _dense(R: Any) -> np.ndarray:
    K = R if isinstance(R, MarkovOperator) else MarkovOperator(R)
    if K.shape[0] < 2:
        raise InvalidMechanismError(f"R must have at least 2 values (rows), got shape {K.shape}")
    check_memory(8.0 * K.shape[0] * K.shape[1], f"the dense {K.shape[0]} x {K.shape[1]} randomizer")
    M = np.asarray(K.matrix.toarray() if hasattr(K.matrix, "toarray") else K.matrix, dtype=float)
    # an operator accepted within its row_sum_atol stands for its normalised rows (chainamp's convention,
    # operators.operator_error): the blanket is computed for them (one rounding each, u relative), not for the
    # rows as written, whose drift a loose tolerance lets through (rows at 0.84 certified eps 1.68 for a channel
    # whose truth at 1.68 has delta 0.012)
    sums = M.sum(axis=1, keepdims=True)
    return M / sums if np.any(sums != 1.0) else M


def _classes(r0: np.ndarray, r1: np.ndarray, om: np.ndarray) -> tuple[np.ndarray, ...]:
    """Merge outputs of omega's support on which (r0, r1) / omega agree (exactly, as floats), in order of first
    appearance (vectorised: thousands of outputs per pair): the classes' summed ``(r0, r1, omega)`` and their
    numbers of outputs (as floats; each sum is rounded, see :func:`_class_kappa`)."""
    sup = np.flatnonzero(om > 0)
    if sup.size == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)
    with np.errstate(over="ignore"):
        keys = np.stack((r0[sup] / om[sup], r1[sup] / om[sup]), axis=1)
    _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    cls = rank[inv.ravel()]
    sums = tuple(np.bincount(cls, weights=v[sup], minlength=first.size) for v in (r0, r1, om))
    return sums + (np.bincount(cls, minlength=first.size).astype(float),)


def _class_kappa(classes: tuple) -> float:
    """``kappa`` of :func:`_three_classes_Db` for these classes: 4 when every class is one output (or the class data
    are given, k-RR); ``2 m + 4`` when a class merges up to m > 1 outputs. Each of its three sums is rounded by
    ``(m - 1) u`` (relative; moving ``l`` by ``2 (m - 1) u lam``), and its outputs' ratios to omega are equal only as
    floats (each output's exact ``l`` within ``2 u lam`` of the class's)."""
    m = float(classes[3].max(initial=1.0)) if len(classes) > 3 else 1.0
    return 4.0 if m <= 1.0 else 2.0 * m + 4.0


def _three_classes_Db(r0c, r1c, omc, bs: np.ndarray, e: float, kappa: float = 4.0) -> np.ndarray:
    """``D_b`` for every blanket size in ``bs``, at most three classes, in closed form (upper bounds).

    ``kappa``: each computed ``l_c`` is within ``kappa u lam`` of the exact ``l`` of every output of class c (4 when
    the class data are exact inputs: the rounding of ``(r0_c - e r1_c) / omega_c``; more for summed classes,
    :func:`_class_kappa`). It sizes the per-term margin (``8 kappa u lam (A + N B)``, 32 for kappa = 4) and, beyond 4,
    the early return and the tails' ``lmax`` (an exact ``l_c`` may be positive where the computed one is not).

    ``D_b = E[(sum_c h_c l_c)_+] / (b + 1)`` over ``h ~ Mult(b + 1, omega)``, ``l_c = (r0_c - e r1_c) / omega_c``.
    With ``s = h_0 + h_1 ~ Bin(b + 1, omega_0 + omega_1)`` and ``h_0 | s ~ Bin(s, rho)``, the sum is
    ``alpha h_0 + beta_s`` (``alpha = l_0 - l_1 >= 0`` after ordering the two classes), positive on a tail
    ``h_0 >= j``: ``E[(alpha h_0 + beta)_+] = alpha s rho P(Bin(s - 1, rho) >= j - 1) + beta P(Bin(s, rho) >= j)``.
    The three integers around the computed threshold are tried and the largest kept; survival
    functions and pmfs are trusted to ``SHUFFLE_SPECIAL_RTOL``; the mass of s outside its window is added
    with the largest ``l_c`` (``sum_c h_c l_c <= (b + 1) max_c l_c``)."""
    import scipy.stats as st
    m = omc.size
    r0c, r1c, omc = (np.concatenate((a, np.zeros(3 - m))) for a in (r0c, r1c, omc))
    with np.errstate(over="ignore", invalid="ignore"):
        l = np.where(omc > 0, (r0c - e * r1c) / np.where(omc > 0, omc, 1.0), 0.0)
        lam = float(np.max(np.where(omc > 0, (r0c + e * r1c) / np.where(omc > 0, omc, 1.0), 0.0)))  # >= every |l_c|
    if not (math.isfinite(lam) and np.all(np.isfinite(l))):
        # e r1 / omega overflowed (huge eps0, tiny omega): the infinities would certify 0. Fall back to the trivial
        # D_b <= sum_c omega_c (l_c)_+ = sum_c (r0_c - e r1_c)_+ <= 1
        return np.ones(bs.size)
    if l[0] < l[1]:
        l[[0, 1]], omc[[0, 1]] = l[[1, 0]], omc[[1, 0]]
    extra = (kappa - 4.0) * _U * lam * (1.0 + 8 * _U)  # 0 for exact class data (the behaviour before kappa)
    lmax = float(max(0.0, l[omc > 0].max() + extra))
    out = np.zeros(bs.size)
    if lmax <= 0.0:
        return out
    # the count outside classes 0 and 1 is N - s ~ Bin(N, omega_2): omega_2 itself, not 1 - (omega_0 + omega_1),
    # which rounds to 0 when omega_2 < u and dropped a class whose omega_2 l_2 = r0_2 - e r1_2 need not be small
    q2 = float(omc[2])
    rho = omc[0] / (omc[0] + omc[1]) if omc[0] + omc[1] > 0 else 0.0
    r = SHUFFLE_SPECIAL_RTOL
    Ns = bs.astype(float) + 1.0
    # the window of s for every b, flattened into one vector of (b, s) pairs
    if 0.0 < q2 < 1e-300 or 0.0 < rho < 1e-300:
        # Boost's binomial functions overflow on subnormal probabilities (the count outside classes 0 and 1, or
        # the split of s between them): the trivial D_b <= 1
        return np.ones(bs.size)
    if q2 <= 0.0:  # two classes: s = N + 1
        owner, svals, sw, tails = np.arange(bs.size), Ns.copy(), np.ones(bs.size), np.zeros(bs.size)
    else:
        owner, svals, sw, tails = _s_window(q2, bs.astype(np.int64).tobytes())
    N = Ns[owner]
    alpha = l[0] - l[1]
    beta = svals * (l[1] - l[2]) + N * l[2]
    # each l_c is computed within 4 u lam, so alpha within 9 u lam and beta within 16 u lam N: a candidate
    # alpha A + beta B (A = E[h_0; h_0 >= j], B = P(h_0 >= j)) is off by at most 16 u lam (A + N B), plus its own
    # rounding; the margin scales with the tail it multiplies (a margin of 16 u lam N per term regardless of the
    # tail was a floor near 1e-14 that grew with e^eps, so the profile rose with eps there)
    lam = lam * (1.0 + 8 * _U)
    # with each l within kappa u lam, alpha is within (2 kappa + 1) u lam and beta within (3 kappa + 4) u lam N
    c_l = 8.0 * kappa * _U * lam  # 32 u lam for kappa = 4
    if alpha <= 0.0 or rho <= 0.0:
        ex = np.maximum(beta + c_l * N, 0.0)
    else:
        j = np.clip(np.floor(-beta / alpha) + 1.0, 0.0, svals + 1.0)
        sm1 = np.maximum(svals - 1.0, 0.0)
        srho = svals * rho
        # at j: two survival functions; at j - 1 and j + 1: the same moved by one pmf term each
        tab = _binom_table(float(rho), int(svals.max()) if svals.size else 0)
        if tab is not None:  # the same Boost values, read off a table of every (count, threshold) once per rho
            SF, PM = tab
            ni, si, ji = sm1.astype(np.int64), svals.astype(np.int64), j.astype(np.int64) + 2
            sf1, sf2 = SF[ni, ji - 2], SF[si, ji - 1]
            pm1, pm2 = np.stack((PM[ni, ji - 2], PM[ni, ji - 1])), np.stack((PM[si, ji - 1], PM[si, ji]))
        else:
            sf1, sf2 = st.binom.sf(j - 2.0, sm1, rho), st.binom.sf(j - 1.0, svals, rho)
            pm1, pm2 = st.binom.pmf(np.stack((j - 2.0, j - 1.0)), sm1, rho), st.binom.pmf(np.stack((j - 1.0, j)), svals, rho)
        t1 = np.where(svals > 0, np.where(j - 1.0 <= 0, 1.0, sf1), 0.0) * srho
        t2 = np.where(j <= 0, 1.0, sf2)
        q1 = np.where(svals > 0, pm1, 0.0) * srho  # T1 steps
        q2 = pm2  # T2 steps
        t1u, t1l, t2u, t2l = t1 * (1 + r), t1 * (1 - r), t2 * (1 + r), t2 * (1 - r)
        q1u, q1l, q2u, q2l = q1 * (1 + r), q1 * (1 - r), q2 * (1 + r), q2 * (1 - r)
        cands = (  # (T1 upper, T2 lower, T2 upper) at j - 1, j, j + 1
            (t1u + q1u[0], t2l + q2l[0], t2u + q2u[0]),
            (t1u, t2l, t2u),
            (np.maximum(t1u - q1l[1], 0.0), np.maximum(t2l - q2u[1], 0.0), np.maximum(t2u - q2l[1], 0.0)),
        )
        ex = np.zeros_like(svals)
        for a1, b_lo, b_hi in cands:
            val = alpha * a1 + np.where(beta < 0, beta * b_lo, beta * b_hi)
            margin = c_l * (a1 + N * b_hi) + 8 * _U * (alpha * a1 + np.abs(beta) * b_hi)
            ex = np.maximum(ex, val + margin)
    sums = np.bincount(owner, weights=sw * ex, minlength=bs.size) + tails * lmax * Ns
    terms = np.bincount(owner, minlength=bs.size)
    out = sums / Ns * (1.0 + (terms + 8) * 2 * _U)
    return np.minimum(out, 1.0)


def _blanket_parts(R: Any) -> tuple[float, np.ndarray | None, Any]:
    """``(g, omega, M)``: the blanket mass (rounded down), its witness and the dense rows (None for k-RR)."""
    if isinstance(R, SymmetricChannel):
        if R.shape[0] != R.shape[1] or R.shape[0] < 2:
            raise InvalidMechanismError(f"R must be a square symmetric channel with >= 2 values (shape {R.shape})")
        return max(0.0, 1.0 - doeblin(R).gamma), None, None
    M = _dense(R)
    res = doeblin(M)  # the normalised rows (each sums to 1 within a few ulps)
    om = np.zeros(M.shape[1]) if res.witness is None else np.asarray(res.witness, dtype=float)
    return max(0.0, 1.0 - res.gamma), om, M


def _pair_part(R: Any, om, M, a: int, b: int) -> tuple:
    """One ordered pair as its evaluation needs it: ``(kind, classes, ladder, reveal0, reveal1)``. ``kind`` is
    ``"fast"`` for at most three blanket classes (``classes``: their ``(r0, r1, omega)`` and, for a dense R, their
    numbers of outputs), else ``"ladder"``;
    ``ladder`` is ``(r0, r1, mu, probs, zero)`` on the support of the column minima ``mu`` (atom values
    ``(r0 - e r1) / mu`` with probabilities ``probs``, ``zero`` an upper bound of ``1 - sum(probs)``), or None
    when the closed form's reveal outputs are not exactly those outside ``mu``'s support."""
    if M is None:  # k-RR: omega uniform; classes x0, x1 and the other k - 2 values
        k, d, o = R.shape[0], R.diagonal, R.off_diagonal
        cls = (np.array([d, o, (k - 2) * o]), np.array([o, d, (k - 2) * o]), np.array([1 / k, 1 / k, (k - 2) / k]))
        keep = cls[2] > 0
        m = min(d, o)  # every column's minimum
        lad = None
        if m > 0:
            others = math.nextafter((k - 2) * m, math.inf)  # the k - 2 other outputs: one atom, its mass rounded up
            lad = tuple(v[keep] for v in (np.array([d, o, o]), np.array([o, d, o]), np.full(3, m),
                                          np.array([m, m, others])))
            lad += (max(0.0, 1.0 - k * m) + 2.0**-52,)
        return "fast", tuple(c[keep] for c in cls), lad, np.zeros(0), np.zeros(0)
    r0, r1 = M[a], M[b]
    mu = M.min(axis=0)
    inside = mu > 0
    lad = (r0[inside], r1[inside], mu[inside], mu[inside], max(0.0, 1.0 - math.fsum(mu[inside].tolist())) + 2.0**-52)
    sup = om > 0
    with np.errstate(over="ignore"):  # an infinite ratio (subnormal omega) is still one class key
        many = np.unique(r0[sup] / om[sup]).size > 3  # then more than three classes (a cheap test first)
    cls = (np.zeros(0),) * 4 if many else _classes(r0, r1, om)
    if not many and cls[2].size <= 3:
        outside = om <= 0
        return "fast", cls, lad if np.array_equal(sup, inside) else None, r0[outside], r1[outside]
    return "ladder", None, lad, r0[~inside], r1[~inside]


def _rows_key(*cols: np.ndarray) -> bytes:
    """The multiset of rows of the given columns, as bytes (rows sorted lexicographically)."""
    if not cols or cols[0].size == 0:
        return b""
    rows = np.stack(cols, axis=1)
    return rows[np.lexsort(rows.T[::-1])].tobytes()


def _dedupe(parts: list) -> list:
    """The distinct pairs (equal up to a relabelling of outputs, exactly as floats): their deltas are equal."""
    seen, out = set(), []
    for part in parts:
        lad = part[2]
        key = (part[0], _rows_key(*part[1]) if part[1] is not None else b"",
               (_rows_key(*lad[:4]), lad[4]) if lad is not None else None, _rows_key(part[3], part[4]))
        if key not in seen:
            seen.add(key)
            out.append(part)
    return out


def blanket_delta(R: Any, users: int, epsilons: Any, *, neighbors: Any = None, max_histograms: int = 2_000_000,
                  max_terms: int = BLANKET_MAX_TERMS, progress: bool | None = None, executor: Any = None) -> np.ndarray:
    """Certified ``delta(eps)`` of the blanket pair of Balle et al. 2019 (module docstring), the maximum
    over neighbouring pairs of values (``neighbors``: pairs of row indices; default every pair).

    ``R`` is a finite randomizer (anything :class:`~chainamp.MarkovOperator` accepts) or a
    :class:`~chainamp.operators.SymmetricChannel` (k-RR at any k, never densified). Pairs whose outputs
    fall into at most three blanket classes (binary and k-ary RR, any R with three outputs) are
    evaluated in closed form per blanket size, the sizes summed one by one within a window of B when
    that fits ``max_terms`` closed-form terms per eps, otherwise by the lattice ladder (blocks of sizes
    valued at their smallest size when the ladder does not apply); every other pair by the lattice ladder
    (:mod:`._ladder`, any number of outputs and users). ``max_histograms`` is kept for compatibility and
    no longer used (histograms are not enumerated). Pairs equal up to a relabelling of outputs are evaluated
    once; ``executor`` (a :class:`concurrent.futures.Executor`) evaluates distinct pairs in parallel, with the
    same result. Values below about ``1e-18`` are the floating-point floor, not the divergence.

    Examples
    --------
    >>> e = math.exp(1.0)
    >>> R = [[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]]
    >>> bool(blanket_delta(R, 50, [0.5])[0] < 0.3)
    True
    """
    eps = _check_epsilons(epsilons)
    return _evaluate(_setup(R, users, neighbors, max_histograms, max_terms), eps, progress, executor)


def _setup(R: Any, users: Any, neighbors: Any, max_histograms: Any, max_terms: Any) -> tuple:
    """Everything that does not depend on eps: the distinct pairs, and for the closed form the blanket sizes
    and their masses."""
    n = _check_users(users)
    check_int(max_histograms, "max_histograms", minimum=1)
    terms = check_int(max_terms, "max_terms", minimum=1)
    g, om, M = _blanket_parts(R)
    k = R.shape[0] if M is None else M.shape[0]
    if M is None:
        pairs = [(0, 1)]  # every pair of a symmetric channel is the same up to relabelling
    elif neighbors is None:
        pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
    else:
        pairs = [p for a, b in neighbors for p in ((int(a), int(b)), (int(b), int(a)))]
    import scipy.stats as st
    N = n - 1
    if M is not None:  # every pair keeps its classes (three vectors of at most m outputs)
        check_memory(64.0 * len(pairs) * M.shape[1], f"the blanket classes of {len(pairs)} pairs of values")
    parts = _dedupe([_pair_part(R, om, M, a, b) for a, b in pairs])
    fast = [p[1] for p in parts if p[0] == "fast"]
    if not fast or g <= 0.0 or N == 0:
        sizes, masses, below, blocked = np.array([0]), np.array([1.0]), 0.0, False
    else:
        m_cls = max(c[2].size for c in fast)
        mean, sd = N * g, math.sqrt(N * g * (1 - g))
        lo = max(0, int(mean - 9 * sd - 9))
        hi = min(N, int(mean + 9 * sd + 81) + 1)
        per = 1.0 if (m_cls < 3) else 20.0 * math.sqrt(max(mean, 1.0) * 2.0 / max(k, 2)) + 90.0
        points = max(2, min(hi - lo + 1, int(terms // per)))
        blocked = points < hi - lo + 1
        sizes = np.unique(np.linspace(lo, hi, points).astype(int)) if points < hi - lo + 1 else np.arange(lo, hi + 1)
        # mass of each block [sizes_i, sizes_{i+1}) as a sum of pmfs (no cdf differences: their absolute
        # error would swamp small blocks), the last block also holding the tail above the window
        check_memory(24.0 * (hi - lo + 1), f"the pmf of {hi - lo + 1} blanket sizes")
        all_b = np.arange(lo, hi + 1)
        pm = st.binom.pmf(all_b, N, g) * (1 + SHUFFLE_SPECIAL_RTOL)
        idx = np.searchsorted(sizes, all_b, side="right") - 1
        masses = np.bincount(idx, weights=pm, minlength=sizes.size) * (1 + (hi - lo + 4) * _U)
        masses[-1] += (float(st.binom.sf(hi, N, g)) if hi < N else 0.0) * (1 + SHUFFLE_SPECIAL_RTOL) + 1e-300
        below = (float(st.binom.cdf(lo - 1, N, g)) if lo > 0 else 0.0) * (1 + SHUFFLE_SPECIAL_RTOL) + 1e-300
    return parts, sizes, masses, below, n, blocked


def _lower_e(x: float) -> float:
    """``e^x`` rounded down (inf for x = inf)."""
    return math.exp(min(x, 700.0)) * (1 - 4 * _U) if math.isfinite(x) else math.inf


def _ladder_total(lad: tuple, e: float, n: int) -> float:
    """``E[(U_1 + ... + U_n)_+] / n`` of a pair's ladder data at ``e`` (a lower bound of ``e^eps``), an upper bound."""
    r0, r1, mu, probs, zero = lad
    with np.errstate(over="ignore", invalid="ignore"):
        up = (r0 - e * r1) / mu + 4 * _U * (r0 + e * r1) / mu  # atoms above their rounding (3 u + O(u^2))
    if not np.all(np.isfinite(up)):  # a subnormal column minimum: the atom overflows; delta <= 1 is all we claim
        return 1.0
    return sum_positive_part(up, probs, zero, n)


def _pair_delta(task: tuple) -> np.ndarray:
    """Certified delta of one pair at every eps of ``task = (part, sizes, masses, below, n, blocked, eps)``
    (picklable)."""
    part, sizes, masses, below, n, blocked, eps = task
    kind, rev0, rev1 = part[0], part[-2], part[-1]
    out = np.zeros(eps.size)
    for i, x in enumerate(eps.tolist()):
        e = _lower_e(x)
        if math.isinf(e):
            out[i] = float(np.sum(rev0[rev1 <= 0]))
            continue
        rev = float(np.sum(np.maximum(0.0, rev0 - e * rev1)))
        total, terms = 0.0, 8
        if kind == "fast":
            r0c, r1c, omc = part[1][:3]
            if blocked and part[2] is not None:  # the closed form would sum blanket sizes in blocks: the ladder
                total = _ladder_total(part[2], e, n)
            elif omc.size:
                Db = _three_classes_Db(r0c, r1c, omc, sizes, e, _class_kappa(part[1]))
                total = float(np.dot(masses, Db)) + below
                terms += sizes.size
        else:
            total = _ladder_total(part[2], e, n)
        out[i] = round_up(total + rev, terms + rev0.size, upper=1.0)
    return out


def _evaluate(setup: tuple, eps: np.ndarray, progress: Any, executor: Any = None) -> np.ndarray:
    """The maximum over the distinct pairs of :func:`_pair_delta` (pairs mapped on ``executor`` when given), made
    non-increasing in eps."""
    parts = setup[0]
    out = np.zeros(eps.size)
    tasks = ((p,) + setup[1:] + (eps,) for p in parts)
    for d in map_blocks(_pair_delta, tasks, executor=executor, total=len(parts), desc="blanket pairs", unit="pairs",
                        progress=progress):
        out = np.maximum(out, d)
    # the exact delta does not increase with eps, so a value computed at a smaller eps also bounds it at a
    # larger one: the running minimum keeps each curve non-increasing (rounding floors can rise with eps)
    order = np.argsort(eps, kind="stable")
    out[order] = np.minimum.accumulate(out[order])
    return out


def _invert(setup: tuple, d: float, progress: Any, executor: Any = None, rtol: float = 1e-6) -> float:
    """Certified eps at delta ``d``: the largest of some pairs' own inversions (the first pair's, then in rounds).
    Each round evaluates every
    pair still in question at the running maximum ``best`` (mapped on ``executor``), drops those with delta at most
    ``d`` there (their exact delta does not increase with eps, and ``best`` only grows, so ``best`` stays certified
    for them) and inverts the one with the largest delta. The rounds do not depend on the executor: the result is
    the same with and without one."""
    parts = setup[0]
    with progress_bar(len(parts), "blanket pairs", unit="pairs", progress=progress) as bar:
        best, rest = _invert_task((_one_pair(setup, parts[0]), d, rtol)), list(range(1, len(parts)))
        bar.update(1)
        while rest:
            at = np.array([best])
            tasks = (_one_pair(setup, parts[i])[:-1] + (at,) for i in rest)
            ds = [float(v[0]) for v in map_blocks(_pair_delta, tasks, executor=executor, total=len(rest),
                                                  progress=False)]
            over = [(v, i) for v, i in zip(ds, rest) if v > d]
            bar.update(len(rest) - len(over))
            if not over:
                break
            worst = max(over)[1]
            best = max(best, _invert_task((_one_pair(setup, parts[worst]), d, rtol)))
            bar.update(1)
            rest = [i for _, i in over if i != worst]
    return best


def _one_pair(setup: tuple, part: tuple) -> tuple:
    return (part,) + setup[1:] + (None,)


def _invert_task(job: tuple) -> float:
    one, d, rtol = job
    return invert_delta(lambda x: float(_pair_delta(one[:-1] + (np.array([x]),))[0]), d, math.inf, rtol=rtol)


def blanket_epsilon(R: Any, users: int, delta: float, *, neighbors: Any = None, rtol: float = 1e-6,
                    max_histograms: int = 2_000_000, max_terms: int = BLANKET_MAX_TERMS, progress: bool | None = False,
                    executor: Any = None) -> float:
    """Certified eps of :func:`blanket_delta` at ``delta`` (the largest over pairs of the upper end of each pair's
    search bracket; ``executor`` inverts distinct pairs in parallel).

    Examples
    --------
    >>> e = math.exp(1.0)
    >>> eps = blanket_epsilon([[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]], 50, 0.01)
    >>> 0.0 < eps < 1.0
    True
    """
    d = check_delta(delta)
    if not 0.0 < d < 1.0:
        raise InvalidParameterError(f"delta must be in (0, 1) (got {d!r})")
    setup = _setup(R, users, neighbors, max_histograms, max_terms)
    return _invert(setup, d, progress, check_executor(executor), rtol)


def blanket_dominating_pair(R: Any, users: int, *, epsilons: Any = None, neighbors: Any = None,
                            max_histograms: int = 2_000_000, max_terms: int = BLANKET_MAX_TERMS, executor: Any = None):
    """A :class:`~chainamp.privacy.DominatingPair` of :func:`blanket_delta` on a grid of eps (as
    :func:`chainamp.shuffle.generic_dominating_pair`), with ``(eps_R, 0)`` from :func:`chainamp.ldp_guarantee`
    (all pairs of values; with ``neighbors`` that is still an upper bound).

    Examples
    --------
    >>> e = math.exp(1.0)
    >>> R = [[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]]
    >>> pair = blanket_dominating_pair(R, 100)
    >>> bool(pair.delta(0.3) >= blanket_delta(R, 100, [0.3])[0])
    True
    """
    setup = _setup(R, users, neighbors, max_histograms, max_terms)
    K = R if isinstance(R, MarkovOperator) else MarkovOperator(R)
    pure = ldp_guarantee(K).epsilon
    return pair_from_curve(lambda x: _evaluate(setup, _check_epsilons(x), False, executor), pure, epsilons,
                           f"shuffled reports, n={int(users)} (privacy blanket)")
