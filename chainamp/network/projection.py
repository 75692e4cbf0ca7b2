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

Certified rounding (ours). ``Q`` comes from an SVD of the floating-point ``B^``. Three facts make the
reported ``mu`` an upper bound of the exact one:

1. *Error of the rows.* ``W`` is non-negative, so each computed row of ``P_t`` has an entrywise relative
   error at most ``g_t = (1 + gamma_k)^t - 1`` (``gamma_k = k u / (1 - k u)``, ``k`` the largest column
   count of the ``W_s``; Higham 2002, Sec. 3.5, for each product); hence ``||B - B^||_F <= g/(1 - g) ||B^||_F``
   (``g`` the largest ``g_t``, plus one rounding for ``diag(sigma)``). LAPACK's SVD is backward stable: its
   factors are an exact SVD of ``B^ + dB`` with nearly orthonormal ``V^``. We take the worst-case form of the
   Householder bidiagonalization bound (Higham 2002, Thm 19.4 and Sec. 19.3: ``gamma~_{mn}``, of the order
   ``c m n u``; LAPACK documents only "a modestly growing function p(m, n)"), with ``c = 8``:
   ``||dB||_2 <= 8 m n u ||B^||_F`` and ``||V^^T V^ - I|| <= 8 m n u = eta``. This constant is a model (no
   explicit constant is published); it is far above the errors seen in practice (about ``sqrt(mn) u``).
   Together: ``||B - (B^ + dB)||_2 <= e``.
2. *The exact rank r.* Every singular value of ``B^`` above ``2e`` is one of ``B`` (Weyl), so
   ``r >= k`` = their number. When ``k`` equals the number of rows or columns, ``r = k``. Otherwise
   :mod:`.modular` decides it: a prime with rank mod p above ``k`` proves ``r > k``; ranks mod enough primes
   (their product above Hadamard's bound) all at most ``k`` prove ``r = k``.
3. *The subspace.* With ``r = k`` and ``s_r`` the r-th singular value of ``B^``, Wedin's theorem (1972;
   residuals ``E V^_r`` and ``E^T U^_r``, gap ``s_r - 2e`` since ``s_{r+1}(B) = 0``) bounds the largest
   principal angle between ``row(B)`` and ``span(V^_r)``: ``sin(theta) <= e / (s_r - 2e)``. So
   ``||Pi e_u|| <= ||V^_r[u, :]|| + eta + sin(theta)``, rounded up and capped at 1.

When the rank is full on the touched columns, ``Pi e_u = e_u`` and ``mu = Delta / sigma_u`` exactly.
When ``r > k`` (directions too small to resolve in double precision) or the proof of ``r = k`` would
need more than ``rank_primes_limit`` primes, no projection is trusted and ``mu`` is the trivial bound
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
    B = A * sigma[cols][None, :]
    ncol = cols.size
    u = UNIT_ROUNDOFF
    k = _column_count(sched)
    T_max = max(t for t, _ in plan)
    gk = k * u / (1.0 - k * u)
    g = math.expm1(T_max * math.log1p(gk))
    rel = g / (1.0 - g) + 2.0 * u
    frob = float(np.linalg.norm(B)) * (1.0 + 4 * u * math.sqrt(B.size))
    svd_c = 8.0 * m * ncol * u
    eps = _MARGIN_SCALE * (rel + svd_c) * frob * (1.0 + 8 * u)
    eta = _MARGIN_SCALE * svd_c
    q = min(m, ncol)
    check_memory(8.0 * (m * ncol + q * (m + ncol) + q * q), f"the SVD of a {m} x {ncol} view",
                 memory_limit=memory_limit)
    k_lo = _gram_rank_estimate(B)
    if k_lo is not None and _rank_proof_primes(sched, plan, k_lo + 1) > rank_primes_limit:
        # the Gram matrix is numerically singular and a rank proof would need too many primes: the only
        # certificates left need s_q(B^) > 2e, which that rules out in practice. Capping is sound whatever
        # the truth, and skips an SVD ~10x dearer (a fast path, no claim rests on it)
        mu_rel[cols] = 1.0
        return ObserverResult(mu_rel, CAPPED, -1, m, 1.0)
    _, s, Vt = np.linalg.svd(B, full_matrices=False)
    k_sep = int(np.sum(s > 2.0 * eps)) if _MARGIN_SCALE > 0 else int(np.sum(s > s[0] * max(m, ncol) * u))
    if k_sep == ncol:
        mu_rel[cols] = 1.0
        return ObserverResult(mu_rel, FULL, ncol, m, 0.0)
    if k_sep < q:
        ok = _rank_is(sched, plan, cols, k_sep, rank_primes_limit)
        if not ok:
            mu_rel[cols] = 1.0
            return ObserverResult(mu_rel, CAPPED, -1, m, 1.0)
    r = k_sep
    if r == 0:
        return ObserverResult(mu_rel, CERTIFIED, 0, m, 0.0)
    gap = s[r - 1] - 2.0 * eps
    sin_theta = eps / gap * (1.0 + 8 * u) if eps > 0 else 0.0
    norms = np.sqrt(np.einsum("ij,ij->j", Vt[:r], Vt[:r]))
    margin = eta + sin_theta
    bound = (norms * (1.0 + 4 * u * math.sqrt(r)) + margin) * (1.0 + 4 * u) if _MARGIN_SCALE > 0 else norms
    mu_rel[cols] = np.minimum(bound, 1.0)
    return ObserverResult(mu_rel, CERTIFIED, r, m, float(margin))


def coalition_free(n: int, coalition: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = mask.copy()
    out[coalition] = False
    return out


def _smallest_weight(sched: Schedule) -> float:
    return sched.derived("wmin", lambda: min(float(w.data[w.data > 0].min()) for w in sched.distinct))


def _column_count(sched: Schedule) -> int:
    """The largest number of non-zeros in a column of the schedule's matrices (inner-product length)."""
    return sched.derived("k", lambda: max(int(np.max(np.diff(sp.csc_matrix(w).indptr))) for w in sched.distinct))


def _gram_rank_estimate(B: np.ndarray) -> int | None:
    """``None`` when the smaller Gram matrix of ``B`` is safely positive definite; else the number of its
    eigenvalues above ``1e-12`` times the largest (singular values of ``B`` above ``1e-6`` of the largest,
    far above the Gram matrix's rounding). A pre-check only: nothing certified rests on it."""
    G = B @ B.T if B.shape[0] <= B.shape[1] else B.T @ B
    lam = np.linalg.eigvalsh(G)
    if lam[0] > 1e-10 * lam[-1]:
        return None
    return int(np.sum(lam > 1e-12 * lam[-1]))


def _rank_proof_primes(sched: Schedule, plan: list, q: int) -> int:
    """How many primes of :mod:`.modular` prove a rank of the view's rows (Hadamard's bound over 24 bits)."""
    src = sched.mats[:1] if sched.fixed else sched.mats
    s_each = sched.derived("dyadic_s", lambda: [modular.dyadic_scale(w)[0] for w in src])
    shifts = np.cumsum([0] + (s_each * sched.rounds if sched.fixed else s_each))
    logs = sorted((float(shifts[t]) + 1.0 for t, snd in plan for _ in range(len(snd))), reverse=True)
    return int(sum(logs[:q]) // 24) + 1


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
    ps = modular.primes(need)
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

