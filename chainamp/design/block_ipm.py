r"""A primal-dual interior-point method for the compact post-processing LP, using its block structure (numpy only).

The compact LP (:mod:`chainamp.design.lp_compact`) in inequality form, one block ``x_y = (K[:, y], u_y, l_y)``
per output y, linked only by K's row sums:

.. math::

    \min \langle C, K\rangle \ \text{s.t.}\ M K_y - u_y 1 \le 0,\ \ l_y 1 - M K_y \le 0,\ \ u_y - e\,l_y \le 0,\
    -K_y \le 0\ (\text{all } y),\qquad \textstyle\sum_y K_y = 1.

Mehrotra's predictor-corrector (Mehrotra 1992, "On the implementation of a primal-dual interior point method",
SIAM J. Optim. 2(4); Nocedal and Wright 2006, *Numerical Optimization*, Algorithm 14.3) from an infeasible
start. With ``G x + s = 0``, ``s, z >= 0`` and ``W = diag(z / s)``, each Newton step eliminates the slacks and
their multipliers, leaving ``H dx + A^T dy = r``, ``A dx = r'`` with ``H = G^T W G`` *block diagonal*: the block
of output y is the (m + 2) x (m + 2) matrix

.. math::

    H_y = \begin{pmatrix} M^\top \mathrm{diag}(d_1 + d_2) M + \mathrm{diag}(d_4) & -M^\top d_1 & -M^\top d_2\\
    \cdot & \textstyle\sum d_1 + d_3 & -e\,d_3 \\ \cdot & \cdot & \textstyle\sum d_2 + e^2 d_3\end{pmatrix}

(d_1 .. d_4 the weights of the four constraint groups in column y), and ``A`` (the row sums) couples the blocks
through the m x m Schur complement ``S = sum_y (H_y^{-1})_{KK}``. A step costs k dense (m + 2)-sized
factorisations and one m x m solve (LAPACK, one block at a time): about ``2 k m^2 (n + m)`` flops, where a general
sparse solver factorises the ``n k (m + 5)``-nonzero constraint matrix. Measured on a dense random 100 x 100 M, the
whole design (the certificate included): 3.2-6.7 s with this method, 31-41 s with Clarabel on the same LP, at load
3.3-5.9 on the shared 2-core machine (tests/benchmarks/bench_design.py).

Soundness does not rest on this solver: it reports ``optimal`` only when the primal and dual residuals and the
duality gap are below ``tol`` (relative), and raises :class:`~chainamp.errors.SolverError` otherwise; the
caller clips and renormalises K, bounds every K's loss with the multipliers in
:func:`chainamp.design.duals.compact_bound` (valid for *any* non-negative multipliers) and certifies K with
``amplify``.
"""

from __future__ import annotations

import numpy as np

from .._numerics import check_memory, single_blas_thread
from ..errors import SolverError

__all__: list[str] = []

#: relative tolerance on the primal residual, the dual residual and the duality gap
IPM_TOL = 1e-8
#: iteration limit (the method converged in 10-50 steps on every design measured)
IPM_MAX_ITER = 100
#: the dual residual may be this many times ``tol`` (relative to the terms it sums): in double precision it stalls
#: near 1e-8 at n = 100 while the primal residual and the gap still fall; it only loosens the certified lower bound
#: (:func:`chainamp.design.duals.compact_bound` is valid for any multipliers), never K or its certificate
_DUAL_FACTOR = 10.0
#: fraction of the distance to the boundary taken by each step
_STEP = 0.99
#: iterative refinement of each Newton solve: at most this many steps, until the residual is below _REFINE_RTOL
#: times the right side's size
_REFINE = 3
_REFINE_RTOL = 1e-12
#: regularisation added to the scaled blocks' unit diagonal (the refinement solves the unregularised system)
_REG = 1e-12


def _G(M: np.ndarray, K: np.ndarray, u: np.ndarray, l: np.ndarray, e: float) -> tuple:
    Q = M @ K
    return Q - u, l - Q, u - e * l, -K


def _GT(M: np.ndarray, z: tuple, e: float) -> tuple:
    z1, z2, z3, z4 = z
    return M.T @ (z1 - z2) - z4, z3 - z1.sum(axis=0), z2.sum(axis=0) - e * z3


def solve(C: np.ndarray, M: np.ndarray, e: float, tol: float = IPM_TOL, max_iter: int = IPM_MAX_ITER) -> dict:
    """Solve the compact LP; returns K (m x k), the multipliers alpha, beta (n x k) and gamma (k) of its three
    coupling inequalities, and the iteration count. SolverError when it does not converge within ``max_iter`` steps.

    Runs with one BLAS thread: the k small factorisations gain nothing from threads, and OpenBLAS's two threads on
    the shared 2-core machine made a step 20-40x slower (measured: 68 s against 3.9 s at n = 100, load 4-5).

    Examples
    --------
    Binary randomized response at e^eps0 = 4 post-processed down to e^eps = e: the optimum is randomized response
    at eps = 1, error ``1 / (1 + e)``.

    >>> import math
    >>> M = np.array([[0.8, 0.2], [0.2, 0.8]])
    >>> C = M.T @ (0.5 * (1.0 - np.eye(2)))   # prior 1/2, the 0-1 loss
    >>> out = solve(C, M, math.e)
    >>> round(float(np.sum(C * out["K"])), 6), round(1.0 / (1.0 + math.e), 6)
    (0.268941, 0.268941)
    """
    n, m = M.shape
    k = C.shape[1]
    check_memory(8.0 * (3.0 * k * (m + 2) ** 2 + 2.0 * k * n * m + 16.0 * (n + m) * k),
                 f"the block interior-point method's {k} blocks of size {m + 2}", hint="use fewer outputs")
    import scipy.linalg.lapack  # noqa: F401 - loaded before the thread limit, so that the limit reaches its BLAS

    with single_blas_thread():
        return _solve(C, M, e, tol, max_iter)


def _solve(C: np.ndarray, M: np.ndarray, e: float, tol: float, max_iter: int) -> dict:
    n, m = M.shape
    k = C.shape[1]
    # a strictly feasible primal start: K uniform, u = r/k, l = 1/(r k) with r^2 < e (r = e^(1/4))
    r = e ** 0.25
    K = np.full((m, k), 1.0 / k)
    u = np.full(k, r / k)
    l = np.full(k, 1.0 / (r * k))
    s = tuple(-g for g in _G(M, K, u, l, e))
    scale = max(float(np.abs(C).max()), 1e-300)
    y = scale - C.min(axis=1)  # z4 = C + y 1^T > 0 makes the K-part of the dual residual vanish at the start
    z = (np.full((n, k), scale), np.full((n, k), scale), np.full(k, n * scale), C + y[:, None])
    N = 2 * n * k + k + m * k
    c_norm, b_norm = 1.0 + float(np.abs(C).max()), 1.0
    for it in range(1, max_iter + 1):
        Gx = _G(M, K, u, l, e)
        rp_in = tuple(g + si for g, si in zip(Gx, s))
        rp_eq = K.sum(axis=1) - 1.0
        gK, gu, gl = _GT(M, z, e)
        rd = (C + gK + y[:, None], gu, gl)
        gap = sum(float(np.sum(si * zi)) for si, zi in zip(s, z))
        obj = float(np.sum(C * K))
        mu = gap / N
        p_res = max(max(float(np.abs(a).max()) for a in rp_in), float(np.abs(rp_eq).max()))
        d_res = max(float(np.abs(a).max()) for a in rd)
        # the dual residual relative to the size of the terms it sums (they grow on the active constraints)
        d_size = c_norm + max(float(np.abs(y).max()), float(np.abs(z[3]).max()), float(z[2].max()),
                              float(np.abs(M).max()) * float(max(z[0].sum(axis=0).max(), z[1].sum(axis=0).max())))
        if p_res <= tol * b_norm and d_res <= _DUAL_FACTOR * tol * d_size and gap <= tol * (1.0 + abs(obj)):
            return {"K": K, "alpha": z[0], "beta": z[1], "gamma": z[2], "iterations": it - 1}
        if not (np.isfinite(gap) and np.isfinite(p_res) and np.isfinite(d_res)):
            break
        W = tuple(zi / si for zi, si in zip(z, s))
        try:
            solver = _Newton(M, W, e)
        except np.linalg.LinAlgError:
            break

        def direction(rc: tuple) -> tuple:
            # G^T W G dx + A^T dy = -rd - G^T (W rp_in - rc / s), A dx = -rp_eq; then dz, ds
            t = tuple(wi * ri - ci / si for wi, ri, ci, si in zip(W, rp_in, rc, s))
            tK, tu, tl = _GT(M, t, e)
            dK, du, dl, dy = solver.solve((-rd[0] - tK, -rd[1] - tu, -rd[2] - tl), -rp_eq)
            Gd = _G(M, dK, du, dl, e)
            dz = tuple(wi * (g + ri) - ci / si for wi, g, ri, ci, si in zip(W, Gd, rp_in, rc, s))
            ds = tuple(-(ci + si * dzi) / zi for ci, si, dzi, zi in zip(rc, s, dz, z))
            return dK, du, dl, dy, dz, ds

        aff = direction(tuple(si * zi for si, zi in zip(s, z)))
        a_p, a_d = _max_step(s, aff[5]), _max_step(z, aff[4])
        mu_aff = sum(float(np.sum((si + a_p * dsi) * (zi + a_d * dzi)))
                     for si, dsi, zi, dzi in zip(s, aff[5], z, aff[4])) / N
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        rc = tuple(si * zi + dsi * dzi - sigma * mu for si, zi, dsi, dzi in zip(s, z, aff[5], aff[4]))
        dK, du, dl, dy, dz, ds = direction(rc)
        a_p = min(1.0, _STEP * _max_step(s, ds))
        a_d = min(1.0, _STEP * _max_step(z, dz))
        K, u, l = K + a_p * dK, u + a_p * du, l + a_p * dl
        s = tuple(si + a_p * dsi for si, dsi in zip(s, ds))
        y = y + a_d * dy
        z = tuple(zi + a_d * dzi for zi, dzi in zip(z, dz))
    raise SolverError(f"the block interior-point method did not converge within {max_iter} iterations on the compact "
                      f"post-processing LP (primal residual {p_res:.3g}, dual residual {d_res:.3g}, gap {gap:.3g})")


def _max_step(v: tuple, dv: tuple) -> float:
    """The largest a with v + a dv >= 0 (inf when no entry decreases)."""
    best = np.inf
    for vi, di in zip(v, dv):
        neg = di < 0
        if np.any(neg):
            best = min(best, float(np.min(-vi[neg] / di[neg])))
    return best


def _spd_inverses(H: np.ndarray) -> np.ndarray:
    """Inverses of a stack of symmetric positive definite matrices from their Cholesky factors (LAPACK potrf and
    potri, half the flops of numpy's batched LU inverse, measured 2-3x faster at 100 blocks of 102); LinAlgError when a
    block is not numerically positive definite."""
    from scipy.linalg import lapack

    out = np.empty_like(H)
    for i, block in enumerate(H):
        factor, info = lapack.dpotrf(block, lower=1, clean=0)
        if info == 0:
            inv, info = lapack.dpotri(factor, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"block {i} is not positive definite (LAPACK info {info})")
        out[i] = np.tril(inv) + np.tril(inv, -1).T
    return out


class _Newton:
    """The factorised block system: k blocks H_y (batched inverses) and the Schur complement of the row sums."""

    def __init__(self, M: np.ndarray, W: tuple, e: float) -> None:
        d1, d2, d3, d4 = W
        n, m = M.shape
        k = d1.shape[1]
        H = np.empty((k, m + 2, m + 2))
        H[:, :m, :m] = np.matmul(M.T[None], (d1 + d2).T[:, :, None] * M[None])
        idx = np.arange(m)
        H[:, idx, idx] += d4.T
        H[:, :m, m] = -(M.T @ d1).T
        H[:, :m, m + 1] = -(M.T @ d2).T
        H[:, m, :m] = H[:, :m, m]
        H[:, m + 1, :m] = H[:, :m, m + 1]
        H[:, m, m] = d1.sum(axis=0) + d3
        H[:, m + 1, m + 1] = d2.sum(axis=0) + e * e * d3
        H[:, m, m + 1] = H[:, m + 1, m] = -e * d3
        # symmetric diagonal scaling keeps the inverses accurate when the weights span many orders of magnitude
        self.D = 1.0 / np.sqrt(np.einsum("kii->ki", H))
        Hs = H * self.D[:, :, None] * self.D[:, None, :]
        self.H = H
        Hs[:, np.arange(m + 2), np.arange(m + 2)] += _REG  # unit diagonal after scaling; refinement undoes it
        self.Hinv = _spd_inverses(Hs)
        self.m = m
        S = np.einsum("ki,kij,kj->ij", self.D[:, :m], self.Hinv[:, :m, :m], self.D[:, :m])
        self.S = np.linalg.cholesky(0.5 * (S + S.T))

    def _apply(self, r: np.ndarray) -> np.ndarray:
        """H^{-1} r for stacked right sides r (k, m + 2)."""
        return self.D * np.einsum("kij,kj->ki", self.Hinv, self.D * r)

    def _raw(self, R: np.ndarray, req: np.ndarray) -> tuple:
        """One solve of ``H dX + A^T dy = R``, ``A dX = req`` (R stacked (k, m + 2)) with the factors."""
        m = self.m
        X = self._apply(R)
        # dX = H^{-1} (R - A^T dy) and A dX = req: S dy = A H^{-1} R - req
        rhs = X[:, :m].sum(axis=0) - req
        dy = np.linalg.solve(self.S.T, np.linalg.solve(self.S, rhs))
        E = np.zeros_like(R)
        E[:, :m] = dy[None, :]
        return X - self._apply(E), dy

    def solve(self, rx: tuple, req: np.ndarray) -> tuple:
        """The solution of the reduced Newton system, refined against the unfactored blocks (the explicit inverses
        lose accuracy as the weights spread near the optimum)."""
        rK, ru, rl = rx
        m = self.m
        R = np.concatenate([rK.T, ru[:, None], rl[:, None]], axis=1)  # (k, m + 2)
        dX, dy = self._raw(R, req)
        size = _REFINE_RTOL * (float(np.abs(R).max()) + float(np.abs(req).max()))
        for _ in range(_REFINE):
            res_x = R - np.einsum("kij,kj->ki", self.H, dX)
            res_x[:, :m] -= dy[None, :]
            res_e = req - dX[:, :m].sum(axis=0)
            if max(float(np.abs(res_x).max()), float(np.abs(res_e).max())) <= size:
                break
            cX, cy = self._raw(res_x, res_e)
            dX, dy = dX + cX, dy + cy
        return dX[:, :m].T, dX[:, m], dX[:, m + 1], dy
