"""The exact pairwise privacy of one observer's view of a gossip protocol, with a certified rounding.

The protocol (Cyffers, Even, Bellet and Massoulie 2022, "Muffliato"): node ``i`` adds Gaussian noise once,
``y_0 = x + N(0, diag(sigma^2))``, then ``y_{t+1} = W_t y_0``-style averaging ``y_{t+1} = W_t y_t``
for ``t < T``. Write ``P_t = W_{t-1} ... W_0`` (``P_0 = I``), so ``y_t = P_t y_0``.

Derivation (ours). An observer (or a coalition ``C``) sees the values ``y_t[w] = (P_t)_{w,.} y_0`` of
some pairs ``(t, w)``: stack those rows into ``A``. It knows its own ``x_c`` and noise, so it knows
``y_0[c]`` for ``c in C`` and the view is, up to a known shift, ``A' y_0'`` with ``A'`` = ``A`` without the
columns of ``C``. Changing ``x_u`` by ``Delta`` moves the mean of this Gaussian view by ``Delta A' e_u``;
its covariance is ``B B^T`` with ``B = A' diag(sigma)``. ``A' e_u = B e_u / sigma_u`` lies in the column
space of ``B``, so the view of two neighbouring inputs is a pair of Gaussians with the same covariance whose
means differ inside its range: a Gaussian mechanism with Mahalanobis distance

    ``mu_{u->C}^2 = (Delta/sigma_u)^2 e_u^T B^T (B B^T)^+ B e_u = (Delta/sigma_u)^2 ||Pi e_u||^2``,

``Pi`` the orthogonal projection onto the row space of ``B``. With an orthonormal basis ``Q`` (n x r) of
that row space, ``||Pi e_u|| = ||Q[u, :]||`` for every ``u`` at once. Nothing is bounded: this is the
exact privacy curve (Balle and Wang 2018, Theorem 8, at sensitivity ``mu``).

Certified rounding (ours). ``Q`` comes from an SVD of the floating-point ``B^``, but nothing is assumed of
that SVD: its output is checked a posteriori (:func:`_certify`). Three facts make the reported ``mu`` an
upper bound of the exact one:

1. *Error of the rows.* ``W`` is non-negative, so each computed row of ``P_t`` has an entrywise relative
   error at most ``g_t = (1 + gamma_k)^t - 1`` (``gamma_k = k u / (1 - k u)``, ``k`` the largest column
   count of the ``W_s``; Higham 2002, Sec. 3.5, for each product); hence ``||B - B^||_F <= e_rows =
   (g/(1 - g) + 2u) ||B^||_F`` (``g`` the largest ``g_t``; one more rounding for ``diag(sigma)``). Zeros are
   exact: they are the structural zeros (checked: no product underflows, or the pattern is propagated).
   ``B`` is scaled by a power of two to a largest entry in [1/4, 1) (the row space is unchanged), so no norm
   underflows or overflows whatever the scale of ``sigma``; every bound below carries an absolute ``2^-400``
   for the underflow of tiny entries.
2. *The exact rank r.* The SVD suggests ``r`` (singular values above ``2 e_rows`` plus a rounding floor).
   :func:`_certify` proves ``rank(B) >= r`` (a positive lower bound on ``s_r(B)``); ``rank(B) <= r`` holds
   when ``r`` is the number of rows or columns, else :mod:`.modular` proves it (ranks modulo enough primes,
   their product above Hadamard's bound, all at most ``r``).
3. *The subspace.* With ``P`` the projection onto the span of the r computed singular vectors,
   ``||Pi e_u|| <= ||P e_u|| + rho / s_lo``, where ``rho`` bounds ``||B (I - P)||_2`` through a computed
   residual and ``s_lo`` bounds ``s_r(B)`` from below, each with its worst-case rounding error
   (``gamma_k`` per k-term sum). The one modelled step is the SVD of an m x r matrix (backward error
   ``8 m r u ||C||_F``). The bound is rounded up and capped at 1.

When the rank is full on the touched columns, ``Pi e_u = e_u`` and ``mu = Delta / sigma_u`` exactly.
When a check fails (the exact rank exceeds what double precision resolves, a residual is too large, or
the rank proof would need more than ``rank_primes_limit`` primes), no projection is trusted and ``mu`` is the trivial bound
``Delta / sigma_u`` for every touched ``u`` (enlarging the subspace only raises ``||Pi e_u|| <= 1``);
the observer's status says so. A node whose column is structurally zero (no path of the right length)
has ``mu = 0`` exactly: the view does not depend on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._numerics import UNIT_ROUNDOFF, check_memory
from . import modular
from .inputs import Schedule

__all__: list[str] = []

#: Multiplies every safety margin of the certified rounding; tests set it to 0 to show the margins matter.
_MARGIN_SCALE = 1.0
#: Default largest number of primes the exact-rank proof of :mod:`.modular` may use per observer.
RANK_PRIMES_LIMIT = 512

VIEWS = ("received", "neighbourhood")

FULL, CERTIFIED, CAPPED, EMPTY = "full rank", "certified projection", "capped", "no messages"


@dataclass(frozen=True)
class ObserverResult:
    """``mu_rel[i]`` bounds ``||Pi e_i||`` (NaN on the coalition); ``status``, ``rank``, ``rows``."""

    mu_rel: np.ndarray
    status: str
    rank: int
    rows: int
    margin: float


def view_rows(sched: Schedule, coalition: np.ndarray, view: str) -> list[tuple[int, np.ndarray]]:
    """The pairs ``(t, senders)`` of the view of ``coalition``: rows ``(P_t)_{w,.}`` for ``w`` in ``senders``.

    ``"received"``: for every round ``t < T``, the nodes ``w`` outside the coalition with
    ``W_t[c, w] != 0`` for some member ``c`` (the values ``y_t[w]`` sent to it to compute ``y_{t+1}[c]``).
    ``"neighbourhood"``: for every ``t <= T``, every ``w`` outside the coalition adjacent to a member in the
    union graph of the schedule (``W_s[c, w] != 0`` or ``W_s[w, c] != 0`` for some round ``s``): the
    neighbours' values at every round, the final ones included (the observation set of Cyffers et al. 2022).
    """
    inside = np.zeros(sched.n, bool)
    inside[coalition] = True
    out = []
    if view == "received":
        cache: dict = {}
        for t in range(sched.rounds):
            key = 0 if sched.fixed else t
            if key not in cache:
                senders = np.unique(sched.mats[t][coalition].indices)
                cache[key] = senders[~inside[senders]]
            out.append((t, cache[key]))
        return out
    mark = np.zeros(sched.n, bool)
    for mat in (sched.mats[:1] if sched.fixed else sched.mats):
        mark[np.unique(mat[coalition].indices)] = True
        mark[np.unique(sp.csc_matrix(mat)[:, coalition].indices)] = True
    senders = np.nonzero(mark & ~inside)[0]
    return [(t, senders) for t in range(sched.rounds + 1)]


def _rows_of_powers(sched: Schedule, plan: list, step, out: np.ndarray | None = None) -> list[np.ndarray]:
    """For each ``(t, senders)`` of ``plan``, the block of rows ``(P_t)_{senders,.}`` computed with ``step``
    (``step(None, senders)`` builds ``e_w^T``, ``step(block, s)`` returns ``block @ W_s``). With ``out`` (a
    2-D array with one row per row of the plan), the blocks are written into it and ``[out]`` is returned."""
    blocks = []
    offsets = np.cumsum([0] + [len(snd) for _, snd in plan])

    def emit(i, block):
        if out is None:
            blocks.append(block)
        else:
            out[offsets[i]:offsets[i + 1]] = block
    if sched.fixed and all(np.array_equal(snd, plan[0][1]) for _, snd in plan):
        block = step(None, plan[0][1]) if plan else None
        cur = 0
        for i, (t, _) in enumerate(plan):
            while cur < t:
                block = step(block, 0)
                cur += 1
            emit(i, block)
        return blocks if out is None else [out]
    for i, (t, senders) in enumerate(plan):
        block = step(None, senders)
        for s in range(t - 1, -1, -1):  # e_w^T W_{t-1} ... W_0: multiply on the right, last round first
            block = step(block, s)
        emit(i, block)
    return blocks if out is None else [out]


def _float_step(sched: Schedule):
    mats_t = sched.derived("float_T", lambda: [m.T.tocsr() for m in sched.distinct])

    def step(block, s):
        if block is None:
            out = np.zeros((len(s), sched.n))
            out[np.arange(len(s)), s] = 1.0
            return out
        return np.asarray((mats_t[0 if sched.fixed else s] @ block.T).T)
    return step


def _pattern_step(sched: Schedule):
    pats = sched.derived("pattern_T", lambda: [(m != 0).astype(np.float64).T.tocsr() for m in sched.distinct])

    def step(block, s):
        if block is None:
            out = np.zeros((len(s), sched.n))
            out[np.arange(len(s)), s] = 1.0
            return out
        return (np.asarray((pats[0 if sched.fixed else s] @ block.T).T) > 0).astype(np.float64)
    return step


def observer_mu(sched: Schedule, coalition: np.ndarray, sigma: np.ndarray, view: str, *,
                rank_primes_limit: int = RANK_PRIMES_LIMIT, memory_limit=None) -> ObserverResult:
    """Upper bounds of ``||Pi e_u||`` for every node ``u``, for the view of ``coalition`` (see module docs)."""
    n = sched.n
    plan = [(t, s) for t, s in view_rows(sched, coalition, view) if len(s)]
    m = sum(len(s) for _, s in plan)
    check_memory(8.0 * (3 * m * n + 2 * n), f"the {m} x {n} matrix of a view", memory_limit=memory_limit)
    mu_rel = np.zeros(n)
    mu_rel[coalition] = np.nan
    if m == 0:
        return ObserverResult(mu_rel, EMPTY, 0, 0, 0.0)
    A = _rows_of_powers(sched, plan, _float_step(sched), np.empty((m, n)))[0]
    posA = A > 0.0
    if np.min(A, where=posA, initial=np.inf) < 2.0 ** -900:
        mu_rel[coalition_free(n, coalition, np.ones(n, bool))] = 1.0  # tiny entries: trust nothing, cap all
        return ObserverResult(mu_rel, CAPPED, -1, m, 1.0)
    if not (sched.fixed and _smallest_weight(sched) >= 2.0 ** -100):
        # exact zeros of A must be structural: propagate the pattern itself (a schedule's intermediate products
        # are not rows of A, so their underflow cannot be excluded from A alone)
        pattern = _rows_of_powers(sched, plan, _pattern_step(sched), np.empty((m, n), dtype=bool))[0]
        if not np.array_equal(pattern, posA):
            mu_rel[coalition_free(n, coalition, pattern.any(axis=0))] = 1.0
            return ObserverResult(mu_rel, CAPPED, -1, m, 1.0)
    # (fixed W: every product of the recursion row_t = row_{t-1} W is at least 2^-900 2^-100, a normal number,
    # so no product underflowed and the zeros of A are exactly the structural ones)
    touched = posA.any(axis=0)
    touched[coalition] = False
    cols = np.nonzero(touched)[0]
    if cols.size == 0:
        return ObserverResult(mu_rel, EMPTY, 0, m, 0.0)
    A = A[:, cols]
    B = A * _scaled_sigma(A, sigma[cols])[None, :]
    ncol = cols.size
    u = UNIT_ROUNDOFF
    k = _column_count(sched)
    T_max = max(t for t, _ in plan)
    gk = k * u / (1.0 - k * u)
    g = math.expm1(T_max * math.log1p(gk))
    rel = g / (1.0 - g) + 2.0 * u
    frob = float(np.linalg.norm(B)) * (1.0 + _gamma(B.size + 2)) + _UNDERFLOW
    e_rows = rel * frob * (1.0 + 4 * u) + _UNDERFLOW  # ||B - B^||_F, rigorous (non-negative products)
    q = min(m, ncol)
    check_memory(8.0 * (3 * m * ncol + q * (m + ncol) + q * q), f"the SVD of a {m} x {ncol} view",
                 memory_limit=memory_limit)
    floor = 2.0 * e_rows + 4.0 * _gamma(_BLOCK) * frob * math.sqrt(q)  # below it nothing can be certified
    k_lo = _hopeless(B, floor)
    if k_lo is not None and _rank_proof_primes(sched, plan, k_lo + 1) > rank_primes_limit:
        # the singular values, extrapolated from the Gram matrix, fall far below what can be certified and
        # no rank proof is within reach: capping is sound whatever the truth, and skips an SVD ~10x dearer
        mu_rel[cols] = 1.0
        return ObserverResult(mu_rel, CAPPED, -1, m, 1.0)
    s, Vt = _svd_right(B)
    # which singular directions to keep: a choice only (everything below is verified a posteriori)
    r = int(np.sum(s > floor))
    if 0 < r < q and not _rank_is(sched, plan, cols, r, rank_primes_limit):
        mu_rel[cols] = 1.0
        return ObserverResult(mu_rel, CAPPED, -1, m, 1.0)
    cert = _certify(B, Vt[:r], e_rows, frob) if r else None
    if cert is None:
        mu_rel[cols] = 1.0
        return ObserverResult(mu_rel, CAPPED, -1, m, 1.0)
    if r == ncol:
        mu_rel[cols] = 1.0
        return ObserverResult(mu_rel, FULL, ncol, m, 0.0)
    bound, margin = cert
    mu_rel[cols] = np.minimum(bound, 1.0)
    return ObserverResult(mu_rel, CERTIFIED, r, m, float(margin))


#: Absolute slack added to every norm and error bound of the certificate for underflow. ``B`` is scaled by a
#: power of two to a largest entry in [1/4, 1) (:func:`_scaled_sigma`), so every quantity is O(size) and a
#: subnormal result loses at most 2^-1074 per operation: ``2^-400`` covers any count of operations below 2^600
#: (a Frobenius norm loses at most ``sqrt(size) 2^-537`` when squares underflow).
_UNDERFLOW = 2.0 ** -400


def _scaled_sigma(A: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``sigma * 2^k`` with ``k`` chosen from the exponents so that ``max |A diag(sigma 2^k)|`` lies in [1/4, 1).

    Scaling ``B`` by a positive number leaves its row space unchanged; a power of two is exact (up to underflow of
    the smallest ``sigma``, covered by ``_UNDERFLOW``). Without it a tiny (huge) common scale of ``sigma``
    underflows (overflows) the squares of the norms: margins computed as 0 and a ``mu`` below the exact value
    (review counterexample, ``sigma = sensitivity = 1e-180``; tests/network/test_review_soundness.py)."""
    ea = np.frexp(A)[1].astype(np.int64)
    es = np.frexp(sigma)[1].astype(np.int64)
    top = int(np.max(np.where(A > 0.0, ea + es[None, :], np.iinfo(np.int64).min)))
    # A > 0 somewhere in every column (touched), and A's entries are at least 2^-900: 2^-top <= 2^900 / sigma_max
    # stays finite for the largest sigma; smaller ones may underflow (absolute error <= 2^-1074)
    return np.ldexp(sigma, -top)


#: Columns per block of the compensated product (each block's dot products carry gamma_BLOCK, not gamma_N).
_BLOCK = 64


def _compensated_product(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, float]:
    """``X @ Y`` summed over blocks of ``_BLOCK`` inner indices, the block results added with Knuth's TwoSum
    (Ogita, Rump and Oishi 2005, Sum2). Returns ``(Z, c)`` with ``|Z - X Y| <= c |X| |Y| + u |Z|`` entrywise,
    ``c = gamma_BLOCK (1 + u) + gamma_K^2`` for ``K`` blocks (so ``||Z - X Y||_F <= c ||X||_F ||Y||_F + u ||Z||_F``)."""
    n = X.shape[1]
    s = np.zeros((X.shape[0], Y.shape[1]))
    comp = np.zeros_like(s)
    blocks = 0
    for a in range(0, n, _BLOCK):
        x = X[:, a:a + _BLOCK] @ Y[a:a + _BLOCK]
        t = s + x
        z = t - s
        comp += (s - (t - z)) + (x - z)
        s = t
        blocks += 1
    K = blocks + 1
    return s + comp, _gamma(_BLOCK) * (1.0 + 2 * UNIT_ROUNDOFF) + 2.0 * _gamma(K) ** 2


def _svd_right(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Singular values and right singular vectors of ``B`` (rows of ``Vt``); a wide ``B`` goes through a QR of
    ``B^T`` first (``B = R^T Q^T``, about twice as fast). Nothing is assumed of the result: :func:`_certify`
    checks it."""
    m, N = B.shape
    if N >= 4 * m:
        Q, R = np.linalg.qr(B.T)
        _, s, Wt = np.linalg.svd(R.T)
        return s, Wt @ Q.T
    _, s, Vt = np.linalg.svd(B, full_matrices=False)
    return s, Vt


def _gamma(k: int) -> float:
    """``gamma_k = k u / (1 - k u)``: the relative error bound of a k-term sum or dot product (Higham 2002)."""
    ku = k * UNIT_ROUNDOFF
    return ku / (1.0 - ku) if ku < 0.5 else math.inf


def _certify(B: np.ndarray, V: np.ndarray, e_rows: float, frob: float) -> tuple[np.ndarray, float] | None:
    """A posteriori bound of ``||Pi_S e_u||`` for every column ``u``, ``S`` = row space of the exact ``B``
    (``||B - B^||_F <= e_rows``), given ANY computed ``V`` (r x N) whose rows should span ``S``; ``None``
    when the checks fail. The caller proves ``rank(B) <= r``; this proves ``rank(B) >= r`` and returns
    ``(bounds, margin)``. Every quantity is a floating-point computation with its worst-case rounding bound
    (``gamma_k`` per k-term sum, in any summation order); the one model is the SVD of the small m x r
    matrix ``C`` (backward error ``8 m r u ||C||_F``).

    * ``G = V V^T``: ``d = ||V V^T - I||_2 <= ||fl(G) - I||_F + gamma_N sum_i ||v_i||^2``; need ``d < 1/2``.
      With ``P`` the projection onto ``span(V)``: ``||P e_u||^2 = V[:, u]^T G^-1 V[:, u] <= ||V[:, u]||^2 / (1 - d)``.
    * ``rho >= ||B (I - P)||_2``: for any ``X``, ``B^ (I - P) = (B^ - X V)(I - P)``; with ``X = C = fl(B^ V^T)``,
      ``||B^ - C V||_F <= ||fl(B^ - fl(C V))||_F + gamma_r ||C||_F ||V||_F``, and ``+ e_rows`` for ``B - B^``.
    * ``s_lo <= s_r(B)``: ``s_r(B) >= s_min(B Q)`` for ``Q = V^T G^-1/2`` (orthonormal columns), and
      ``s_min(B Q) >= s_min(B V^T) / sqrt(1 + d)``, ``s_min(B V^T) >= s_min(C) - e_rows sqrt(1 + d)
      - ||C - B^ V^T||``, ``C`` computed by :func:`_compensated_product` (blocks of 64 terms, compensated
      sums: ``gamma_64``, not ``gamma_N``). ``s_lo > 0`` proves ``rank(B) >= r``.
    * With ``rank(B) = r = dim span(V)``: every unit ``y`` in ``S`` is ``B^T z`` with ``||z|| <= 1 / s_r(B)``,
      so ``||(I - P) y|| <= rho / s_lo = sin(theta)`` and ``||Pi_S e_u|| <= ||P e_u|| + sin(theta)``.
    """
    m, N = B.shape
    r = V.shape[0]
    u = UNIT_ROUNDOFF
    scale = _MARGIN_SCALE
    vn2 = np.einsum("ij,ij->i", V, V)
    sum_v = float(vn2.sum()) * (1.0 + _gamma(N + r)) / (1.0 - _gamma(N))
    G = V @ V.T
    sum_v += _UNDERFLOW
    d = ((float(np.linalg.norm(G - np.eye(r))) * (1.0 + _gamma(r * r + 3)) + _gamma(N) * sum_v) * (1.0 + 4 * u)
         + _UNDERFLOW)
    if not d < 0.5:
        return None
    v_frob = math.sqrt(sum_v) * (1.0 + 2 * u)
    C, c_err = _compensated_product(B, V.T)
    c_err = c_err * frob * v_frob + _UNDERFLOW  # ||C - B^ V^T||_F <= c_err
    c_frob = float(np.linalg.norm(C)) * (1.0 + _gamma(m * r + 2)) + _UNDERFLOW
    c_min = float(np.linalg.svd(C, compute_uv=False)[-1])
    s_bv = (c_min - 8.0 * m * r * u * c_frob) * (1.0 - 4 * u) - (
        e_rows * math.sqrt(1.0 + d) + c_err + u * c_frob) * (1.0 + 4 * u)
    s_lo = s_bv / math.sqrt(1.0 + d) * (1.0 - 4 * u)
    if not s_lo > 0.0:
        return None
    if r == N:
        return np.ones(N), 0.0
    R = B - C @ V
    rho = (float(np.linalg.norm(R)) * (1.0 + _gamma(m * N + 3)) + _gamma(r + 1) * c_frob * v_frob
           + u * frob + e_rows + _UNDERFLOW) * (1.0 + 8 * u)
    sin_theta = rho / s_lo * (1.0 + 4 * u)
    if not sin_theta < 1.0:
        return None
    cn2 = np.einsum("ij,ij->j", V, V) * (1.0 + _gamma(r + 1)) + _UNDERFLOW
    if scale == 0.0:
        return np.sqrt(np.einsum("ij,ij->j", V, V)), 0.0
    bound = (np.sqrt(cn2 / (1.0 - d)) * (1.0 + 4 * u) + sin_theta) * (1.0 + 4 * u)
    return bound, sin_theta


def coalition_free(n: int, coalition: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = mask.copy()
    out[coalition] = False
    return out


def _smallest_weight(sched: Schedule) -> float:
    return sched.derived("wmin", lambda: min(float(w.data[w.data > 0].min()) for w in sched.distinct))


def _column_count(sched: Schedule) -> int:
    """The largest number of non-zeros in a column of the schedule's matrices (inner-product length)."""
    return sched.derived("k", lambda: max(int(np.max(np.diff(sp.csc_matrix(w).indptr))) for w in sched.distinct))


def _hopeless(B: np.ndarray, floor: float) -> int | None:
    """A pre-check (nothing certified rests on it): when the smallest singular value of ``B``, extrapolated
    geometrically from the Gram matrix's eigenvalues that stand above its rounding, lies below ``floor /
    1000`` (Krylov-like rows lose their singular values geometrically), the number of singular values the
    Gram matrix resolves (a rough lower estimate of the rank the SVD would keep); else ``None``."""
    G = B @ B.T if B.shape[0] <= B.shape[1] else B.T @ B
    lam = np.linalg.eigvalsh(G)[::-1]
    top = float(lam[0])
    if top <= 0.0 or lam[-1] > 1e-10 * top:
        return None
    sv = np.sqrt(np.maximum(lam, 0.0))
    good = np.nonzero(lam > 1e-12 * top)[0]
    if good.size < 4:
        return None
    i0, i1 = int(good[good.size // 2]), int(good[-1])
    if i1 <= i0:
        return None
    rate = (math.log(sv[i1]) - math.log(sv[i0])) / (i1 - i0)
    predicted = math.log(sv[i1]) + rate * (len(lam) - 1 - i1)
    return int(good.size) if predicted < math.log(floor / 1000.0) else None


def _rank_log2_bound(sched: Schedule, plan: list, q: int) -> float:
    """log2 of Hadamard's bound on a q x q minor of the view's integer rows (see :func:`_rank_is`)."""
    src = sched.distinct
    s_each = sched.derived("dyadic_s", lambda: [modular.dyadic_scale(w)[0] for w in src])
    shifts = np.cumsum([0] + (s_each * sched.rounds if sched.fixed else s_each))
    # ||row of P_t||_2 <= its sum <= prod_s (largest row sum of W_s): above 1 when rows are accepted within a
    # row_sum_atol (rounded up: n-term sums, relative error below 2n u, and the log2 by one part in 1e12)
    grow = sched.derived("row_growth", lambda: [
        max(0.0, math.log2(float(np.max(np.asarray(w.sum(axis=1)))) * (1.0 + 2.0 * sched.n * UNIT_ROUNDOFF)))
        * (1.0 + 1e-12) for w in src])
    growth = np.cumsum([0.0] + (grow * sched.rounds if sched.fixed else grow))
    logs = sorted((float(shifts[t]) + float(growth[t]) + 1.0 for t, snd in plan for _ in range(len(snd))),
                  reverse=True)
    return float(sum(logs[:q]))


def _rank_proof_primes(sched: Schedule, plan: list, q: int) -> int:
    """How many primes of :mod:`.modular` prove a rank of the view's rows (Hadamard's bound)."""
    bits = modular.prime_bits(_column_count(sched))
    return int(_rank_log2_bound(sched, plan, q) // (bits - 1)) + 1


def _rank_is(sched: Schedule, plan: list, cols: np.ndarray, k: int, limit: int) -> bool:
    """True when the exact rank of the view's rows on ``cols`` is proved to be ``k`` (see :mod:`.modular`)."""
    src = sched.mats[:1] if sched.fixed else sched.mats
    if _column_count(sched) >= modular.MAX_COLUMN_NNZ:
        return False
    # a non-zero (k+1) x (k+1) minor, if any, is divisible by every prime with rank_p <= k: Hadamard's bound over
    # the k + 1 largest rows caps it
    need = _rank_proof_primes(sched, plan, k + 1)
    if need > limit:
        # one prime can still refute r = k cheaply, but it cannot prove it: no certificate
        return False
    ps = modular.primes_for(_rank_log2_bound(sched, plan, k + 1), modular.prime_bits(_column_count(sched)))
    need = len(ps)
    cscs = [sp.csc_matrix(w) for w in src]
    for c in cscs:
        c.sort_indices()
    done = 0
    per = max(1, min(64, (1 << 22) // max(1, sum(len(snd) for _, snd in plan) * sched.n)))
    while done < need:
        batch = ps[done:done + per]
        res = [modular.residues(modular.dyadic_scale(c), batch) for c in cscs]

        def step(block, s, res=res, batch=batch):
            if block is None:
                out = np.zeros((batch.size, len(s), sched.n), dtype=np.int64)
                out[:, np.arange(len(s)), s] = 1
                return out
            i = 0 if sched.fixed else s
            return modular.step_mod(block, cscs[i], res[i], batch)
        rows = np.concatenate(_rows_of_powers(sched, plan, step), axis=1)[:, :, cols]
        ranks = modular.rank_mod(rows, batch.astype(np.int64), k)
        if ranks.max() > k:
            return False
        done += len(batch)
    return True

