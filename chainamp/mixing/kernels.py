"""Tile kernels of the pair scans behind :mod:`chainamp.mixing` (private).

A *tile* is two dense blocks of rows ``P`` (``a x m``) and ``Q`` (``b x m``) of a
row-stochastic K; a kernel fills an ``a x b`` array with, for every row pair,

* :func:`min_sums`: ``sum_y min(P_iy, Q_jy)`` (so ``D_1(P_i || Q_j) = s_i - sum_y min``);
* :func:`hockey_both`: ``sum_y [P_iy - c Q_jy]_+`` and ``sum_y [Q_jy - c P_iy]_+``;
* :func:`hockey_one`: ``sum_y [P_iy - c Q_jy]_+`` only.

Each is compiled with numba when it is installed (``nogil``, so tiles run in parallel
threads; about 10x faster than numpy here: the per-pair loop over y is vectorised and
2 x 2 pairs share their loads) and otherwise computed with numpy, one row of ``P`` at a
time (O(b m) extra memory). Both compute the same quantities; they may differ in the
order of the additions (numba may reassociate the sum over y). Error model for any
order: a sum of m non-negative doubles has relative error at most ``(m - 1) u``; a term
``[p - c q]_+`` with the float ``c`` is within ``u p + 3.01 u c q + 2**-1074`` of the
exact term for the real ``e^eps`` that ``c`` rounds (``|c - e^eps| <= 2u e^eps``; the
product and the difference are rounded once each, or once together with a fused
multiply-add, which only helps). The callers in :mod:`.scan` bound the result by
:func:`chainamp.mixing.pruning._approx_error`, which is larger than this sum of errors.

``fastmath`` is restricted to ``reassoc`` (the order of the sum over y, covered above),
``contract`` (fused multiply-add) and ``nsz``: no ``nnan``/``ninf`` assumptions.
"""

from __future__ import annotations

import os

import numpy as np

__all__: list[str] = []

#: Set CHAINAMP_NUMBA=0 to force the numpy kernels (tests compare both).
_NUMBA_ENV = "CHAINAMP_NUMBA"
_FASTMATH = {"reassoc", "contract", "nsz"}


# ----------------------------------------------------------------- plain-Python sources (compiled by numba)
def _min_sums_src(P, Q, out):  # pragma: no cover - executed compiled
    a, m = P.shape
    b = Q.shape[0]
    a2, b4 = a - a % 2, b - b % 4
    for i in range(0, a2, 2):
        for j in range(0, b4, 4):  # 2 x 4 pairs share 6 loads per output
            s00 = 0.0
            s01 = 0.0
            s02 = 0.0
            s03 = 0.0
            s10 = 0.0
            s11 = 0.0
            s12 = 0.0
            s13 = 0.0
            for y in range(m):
                p0 = P[i, y]
                p1 = P[i + 1, y]
                q0 = Q[j, y]
                q1 = Q[j + 1, y]
                q2 = Q[j + 2, y]
                q3 = Q[j + 3, y]
                s00 += min(p0, q0)
                s01 += min(p0, q1)
                s02 += min(p0, q2)
                s03 += min(p0, q3)
                s10 += min(p1, q0)
                s11 += min(p1, q1)
                s12 += min(p1, q2)
                s13 += min(p1, q3)
            out[i, j] = s00
            out[i, j + 1] = s01
            out[i, j + 2] = s02
            out[i, j + 3] = s03
            out[i + 1, j] = s10
            out[i + 1, j + 1] = s11
            out[i + 1, j + 2] = s12
            out[i + 1, j + 3] = s13
    for i in range(a):
        for j in range(b):
            if i < a2 and j < b4:
                continue
            s = 0.0
            for y in range(m):
                s += min(P[i, y], Q[j, y])
            out[i, j] = s


def _hockey_both_src(P, Q, c, fwd, bwd):  # pragma: no cover - executed compiled
    a, m = P.shape
    b = Q.shape[0]
    a2, b2 = a - a % 2, b - b % 2
    for i in range(0, a2, 2):
        for j in range(0, b2, 2):
            f00 = 0.0
            f01 = 0.0
            f10 = 0.0
            f11 = 0.0
            g00 = 0.0
            g01 = 0.0
            g10 = 0.0
            g11 = 0.0
            for y in range(m):
                p0 = P[i, y]
                p1 = P[i + 1, y]
                q0 = Q[j, y]
                q1 = Q[j + 1, y]
                f00 += max(p0 - c * q0, 0.0)
                f01 += max(p0 - c * q1, 0.0)
                f10 += max(p1 - c * q0, 0.0)
                f11 += max(p1 - c * q1, 0.0)
                g00 += max(q0 - c * p0, 0.0)
                g01 += max(q1 - c * p0, 0.0)
                g10 += max(q0 - c * p1, 0.0)
                g11 += max(q1 - c * p1, 0.0)
            fwd[i, j] = f00
            fwd[i, j + 1] = f01
            fwd[i + 1, j] = f10
            fwd[i + 1, j + 1] = f11
            bwd[i, j] = g00
            bwd[i, j + 1] = g01
            bwd[i + 1, j] = g10
            bwd[i + 1, j + 1] = g11
    for i in range(a):
        for j in range(b):
            if i < a2 and j < b2:
                continue
            f = 0.0
            g = 0.0
            for y in range(m):
                f += max(P[i, y] - c * Q[j, y], 0.0)
                g += max(Q[j, y] - c * P[i, y], 0.0)
            fwd[i, j] = f
            bwd[i, j] = g


def _hockey_one_src(P, Q, c, out):  # pragma: no cover - executed compiled
    a, m = P.shape
    b = Q.shape[0]
    a2, b2 = a - a % 2, b - b % 2
    for i in range(0, a2, 2):
        for j in range(0, b2, 2):
            f00 = 0.0
            f01 = 0.0
            f10 = 0.0
            f11 = 0.0
            for y in range(m):
                p0 = P[i, y]
                p1 = P[i + 1, y]
                q0 = c * Q[j, y]
                q1 = c * Q[j + 1, y]
                f00 += max(p0 - q0, 0.0)
                f01 += max(p0 - q1, 0.0)
                f10 += max(p1 - q0, 0.0)
                f11 += max(p1 - q1, 0.0)
            out[i, j] = f00
            out[i, j + 1] = f01
            out[i + 1, j] = f10
            out[i + 1, j + 1] = f11
    for i in range(a):
        for j in range(b):
            if i < a2 and j < b2:
                continue
            f = 0.0
            for y in range(m):
                f += max(P[i, y] - c * Q[j, y], 0.0)
            out[i, j] = f


# ----------------------------------------------------------------- numpy versions (same quantities)
def _min_sums_np(P, Q, out):
    for i in range(P.shape[0]):
        out[i] = np.minimum(P[i], Q).sum(axis=1)


def _hockey_both_np(P, Q, c, fwd, bwd):
    cQ = c * Q
    for i in range(P.shape[0]):
        fwd[i] = np.maximum(P[i] - cQ, 0.0).sum(axis=1)
        bwd[i] = np.maximum(Q - c * P[i], 0.0).sum(axis=1)


def _hockey_one_np(P, Q, c, out):
    cQ = c * Q
    for i in range(P.shape[0]):
        out[i] = np.maximum(P[i] - cQ, 0.0).sum(axis=1)


_NUMPY = {"min_sums": _min_sums_np, "hockey_both": _hockey_both_np, "hockey_one": _hockey_one_np}
_SOURCES = {"min_sums": _min_sums_src, "hockey_both": _hockey_both_src, "hockey_one": _hockey_one_src}
_COMPILED: dict = {}


def numba_enabled() -> bool:
    """numba is importable and not switched off by ``CHAINAMP_NUMBA=0``."""
    if os.environ.get(_NUMBA_ENV, "1").strip() in ("0", "false", "no", "off"):
        return False
    try:
        import numba  # noqa: F401  (imported only when a large scan runs: it costs about 0.3 s)
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    return True


def kernel(name: str, use_numba: bool):
    """The tile kernel ``name`` (see the module docstring), compiled when ``use_numba``."""
    if not use_numba:
        return _NUMPY[name]
    fn = _COMPILED.get(name)
    if fn is None:
        import numba

        fn = numba.njit(fastmath=_FASTMATH, nogil=True, cache=True)(_SOURCES[name])
        _COMPILED[name] = fn
    return fn


def run_kernel(name: str, use_numba: bool, P: np.ndarray, Q: np.ndarray, *args) -> tuple[np.ndarray, ...]:
    """Run a tile kernel on C-contiguous float64 copies/views of ``P`` and ``Q``; returns its outputs."""
    P = np.ascontiguousarray(P, dtype=np.float64)
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    outs = tuple(np.empty((P.shape[0], Q.shape[0])) for _ in range(2 if name == "hockey_both" else 1))
    if P.shape[0] and Q.shape[0]:
        kernel(name, use_numba)(P, Q, *[float(a) for a in args], *outs)
    return outs


# ----------------------------------------------------------------- row-wise (pair lists: row k of P against row k of Q)
def _rowwise_src(P, Q, c, fwd):  # pragma: no cover - executed compiled
    k, m = P.shape
    for r in range(k):
        f = 0.0
        if c == 1.0:
            for y in range(m):
                f += min(P[r, y], Q[r, y])
        else:
            for y in range(m):
                f += max(P[r, y] - c * Q[r, y], 0.0)
        fwd[r] = f


def _rowwise_np(P, Q, c, fwd):
    if c == 1.0:
        fwd[:] = np.minimum(P, Q).sum(axis=1)
    else:
        fwd[:] = np.maximum(P - c * Q, 0.0).sum(axis=1)


_NUMPY["rowwise"] = _rowwise_np
_SOURCES["rowwise"] = _rowwise_src


def run_rowwise(use_numba: bool, P: np.ndarray, Q: np.ndarray, c: float) -> np.ndarray:
    """``sum_y min(P_r, Q_r)`` (c = 1) or ``sum_y [P_r - c Q_r]_+`` for every row r."""
    P = np.ascontiguousarray(P, dtype=np.float64)
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    out = np.empty(P.shape[0])
    if P.shape[0]:
        kernel("rowwise", use_numba)(P, Q, float(c), out)
    return out
