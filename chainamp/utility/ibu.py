"""The iterative Bayesian update (EM for the multinomial likelihood), accelerated by squared extrapolation.

Private helper of :mod:`.estimation`. The channel enters only through ``gradient(f, data)``, which returns
``g = P (w / pi)`` (``pi = P^T f``, ``w = c / n``) and the mean log-likelihood ``sum_y w_y log pi_y``: a dense
matrix, k-RR's closed form or the observed reports of a unary encoding (:mod:`.structured_channels`).

EM is ``F(f) = f * g(f)`` (already a probability vector: ``f.g = sum_y w_y = 1``). On the noisy channels of
local privacy its linear rate is close to 1 (most of the information is "missing"), so plain EM needs
thousands of updates. SQUAREM (Varadhan and Roland 2008, "Simple and globally convergent methods for
accelerating the convergence of any EM algorithm", Scand. J. Statist., scheme S3) takes two EM updates
``f1 = F(f0)``, ``f2 = F(f1)``, ``r = f1 - f0``, ``v = f2 - 2 f1 + f0`` and jumps to
``f0 - 2 a r + a^2 v`` with ``a = -|r| / |v|`` (``a = -1`` gives ``f2`` back). Safeguards, so that every
iterate is a positive probability vector whose log-likelihood is at least that of ``f1``:

* entries are kept above ``1e-6`` times their value at ``f0`` (a coordinate on its way to 0 shrinks by at
  most 10^6 x per jump, and EM can still revive it; with no floor a coordinate set to 0 never comes back and
  the iteration stalls: measured on OUE k = 16);
* a jump whose log-likelihood falls below that of ``f1`` is replaced by ``f2`` (EM never decreases it).

The result is the same maximum-likelihood estimate as plain EM: whatever the path, the iteration stops only
when the Frank-Wolfe gap ``max_x g_x - f.g`` at the returned f is at most the tolerance, and that gap bounds
how far the log-likelihood per report lies below its maximum over the simplex (see the class notes of
:class:`~chainamp.utility.FrequencyEstimator`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__: list[str] = []

#: a jump keeps every entry at least this fraction of its value before the jump
_FLOOR = 1e-6


def _gap(f: np.ndarray, g: np.ndarray) -> float:
    return max(float(g.max() - f @ g), 0.0)


def _em(f: np.ndarray, g: np.ndarray) -> np.ndarray:
    out = f * g
    return out / out.sum()


def run_ibu(gradient: Callable, data, k: int, gap_tol: float, max_iterations: int
            ) -> tuple[np.ndarray, int, float, float]:
    """``(f, EM updates, gap, mean log-likelihood)`` from the uniform start."""
    f0 = np.full(k, 1.0 / k)
    g0, ll0 = gradient(f0, data)
    updates = 0
    while True:
        gap0 = _gap(f0, g0)
        if gap0 <= gap_tol or updates >= max_iterations:
            return f0, updates, gap0, ll0
        f1 = _em(f0, g0)
        updates += 1
        g1, ll1 = gradient(f1, data)
        if updates >= max_iterations or _gap(f1, g1) <= gap_tol:
            f0, g0, ll0 = f1, g1, ll1
            continue
        f2 = _em(f1, g1)
        updates += 1
        r = f1 - f0
        v = f2 - 2.0 * f1 + f0
        nv = math.sqrt(float(v @ v))
        alpha = -math.sqrt(float(r @ r)) / nv if nv > 0.0 else -1.0
        if alpha < -1.0:
            x = f0 - 2.0 * alpha * r + alpha * alpha * v
            x = np.maximum(x, _FLOOR * f0)
            x /= x.sum()
            gx, llx = gradient(x, data)
            if llx >= ll1 and math.isfinite(llx):
                f0, g0, ll0 = x, gx, llx
                continue
        f0 = f2
        g0, ll0 = gradient(f2, data)


def dense_gradient(f: np.ndarray, data) -> tuple[np.ndarray, float]:
    """``gradient`` of a dense channel restricted to the observed outputs: ``data = (P[:, observed], w[observed])``."""
    P, w = data
    pi = f @ P
    return P @ (w / pi), float(w @ np.log(pi))
