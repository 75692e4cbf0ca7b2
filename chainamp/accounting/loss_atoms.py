"""Certified privacy loss atoms of product pairs, composed exactly (meet in the middle).

A pair of finite distributions ``(P, Q)`` has hockey-stick curve
``H_a(P || Q) = sum_y [P_y - a Q_y]_+ = sum_y P_y (1 - a e^{-L_y})_+`` with the privacy loss
``L_y = log(P_y / Q_y)`` (``+inf`` where ``Q_y = 0``). The summand grows with ``P_y`` and with
``L_y``, so any *upper atoms* ``(p_y, l_y)`` with ``p_y >= P_y`` and ``l_y >= L_y`` give
``H_a(P || Q) <= sum_y p_y (1 - a e^{-l_y})_+`` (:class:`LossAtoms`). For a product pair
``(P_1 (x) P_2, Q_1 (x) Q_2)`` the loss of ``(y_1, y_2)`` is ``L_1 + L_2`` and its P-mass the product,
so the products of upper atoms (masses multiplied, losses added, both rounded up) are upper atoms of
the product: the exact composition of the finite privacy loss distributions (Zhu, Dong and Wang 2022,
"Optimal accounting of differential privacy via characteristic function", where a product of pairs
is the composition), with outward rounding and nothing else.

Evaluating ``H`` needs no product table: with the atoms split in two halves A and B,
``sum_{i, j: l_i + l_j > eps} p_i p_j (1 - e^{eps - l_i - l_j}) = sum_i p_i S_B(eps - l_i)
- e^eps sum_i p_i e^{-l_i} R_B(eps - l_i)``, where ``S_B(t)`` and ``R_B(t)`` are the sums of ``p_j`` and
``p_j e^{-l_j}`` over the atoms of B with ``l_j > t`` (suffix sums of B sorted by loss): one
``searchsorted`` per eps, ``O(|A| log |B|)``. A half with more atoms than ``budget`` has its losses
rounded UP to a grid of spacing ``2^-k`` (masses of a grid point summed): still upper atoms, the loss
of every pair overstated by at most two grid steps; ``exact`` then says False.

Soundness. Masses are floats with a relative factor ``1 + rel`` covering every rounding (products,
sums, ``exp``), and a subnormal ulp added where they could underflow; losses are floats rounded up
past their error (``nextafter``). The pairs selected at eps are a superset of those with loss above
eps (the threshold ``eps - l_i`` is lowered past its rounding error), and on the selected pairs every
loss is raised by the same slack, which keeps each selected term non-negative: the value returned is
at least ``sum over all pairs of the positive terms``, rounded up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._numerics import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, check_memory
from ..errors import InvalidParameterError

__all__ = ["LossAtoms", "atoms_of_pair", "product_atoms", "hockey_stick_of_halves", "MAX_HALF_ATOMS"]

_U = UNIT_ROUNDOFF
#: A half with more atoms than this has its losses rounded up to a grid (at most this many points).
MAX_HALF_ATOMS = 1 << 17
#: Masses below this are lumped (:func:`_lump`); products of two masses stay normal doubles.
TINY_MASS = 2.0**-500
#: Scale of the Q-side sums (masses times e^-loss): below ``2^-1000`` they are dropped (a smaller subtracted
#: term only raises the bound), and both factors of each product are scaled by ``2^500`` (exact).
_Q_FLOOR = 2.0**-1000
_Q_SCALE = 2.0**500
_LN2 = math.log(2.0)


def _up(x):
    return np.nextafter(x, np.inf)


@dataclass(frozen=True, eq=False)
class LossAtoms:
    """Upper atoms of one direction of a pair: ``loss`` (sorted, upper bounds, ``+inf`` allowed) and
    ``mass`` (floats; every true mass is at most ``mass * (1 + rel)``). ``grid`` is the spacing the
    losses were rounded up to (0.0: exact, no grid)."""

    loss: np.ndarray
    mass: np.ndarray
    rel: float = 0.0
    grid: float = 0.0
    _suffix: list = field(default_factory=list, repr=False)

    @property
    def size(self) -> int:
        return int(self.loss.size)

    def suffix_sums(self) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
        """``(S, R, gamma, q)``: ``S[k] = sum_{j >= k} mass_j`` and ``R[k]`` a lower bound of
        ``2^500 sum_{j >= k} mass_j e^{-loss_j}`` (terms below ``2^-1000`` dropped), length ``size + 1``
        (``S[size] = 0``), each within relative ``gamma`` of the exact sums of the stored floats; ``q`` the scaled
        terms ``2^500 mass_j e^{-loss_j}`` themselves (``exp`` within 4u; below ``2^-1000`` dropped)."""
        if not self._suffix:
            with np.errstate(under="ignore"):
                q = self.mass * np.exp(-self.loss)
            q = np.where(q >= _Q_FLOOR, q, 0.0) * _Q_SCALE  # (lower: dropping a term lowers R)
            S = np.concatenate([np.cumsum(self.mass[::-1])[::-1], [0.0]])
            R = np.concatenate([np.cumsum(q[::-1])[::-1], [0.0]])
            n = self.size + 4
            self._suffix.extend([S, R, n * _U / (1.0 - n * _U), q])
        return tuple(self._suffix)


def _lump(loss: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Atoms lighter than ``TINY_MASS`` merged into one atom of mass ``max(their sum, TINY_MASS)`` (rounded up)
    at the largest loss of all the atoms: still upper atoms (a loss may only move up), and every mass stays in
    the normal range, so that no product of two masses underflows (subnormal arithmetic is also ~100x slower).
    A delta below ``TINY_MASS`` may thus be reported as up to ``TINY_MASS``; the pure epsilon does not move."""
    light = mass < TINY_MASS
    if not light.any() or light.all() and light.size == 1:
        return loss, np.maximum(mass, TINY_MASS)
    n = int(light.sum())
    total = float(mass[light].sum()) * (1.0 + (n + 1) * _U / (1.0 - (n + 1) * _U)) + n * SMALLEST_SUBNORMAL
    lumped = max(float(_up(total)), TINY_MASS)
    top = float(loss.max())
    return np.append(loss[~light], top), np.append(mass[~light], lumped)


def _sorted(loss: np.ndarray, mass: np.ndarray, rel: float, grid: float) -> LossAtoms:
    loss, mass = _lump(loss, mass)
    order = np.argsort(loss, kind="stable")
    loss, mass = loss[order], mass[order]
    loss.flags.writeable = False
    mass.flags.writeable = False
    return LossAtoms(loss, mass, rel, grid)


def atoms_of_pair(log_p: tuple[np.ndarray, np.ndarray], log_q: tuple[np.ndarray, np.ndarray]) -> LossAtoms:
    """Upper atoms of ``(P || Q)`` from intervals ``[lo, hi]`` of ``log P_y`` and ``log Q_y`` (``-inf`` for a
    zero mass): mass ``e^{hi_P}`` rounded up, loss ``hi_P - lo_Q`` rounded up; outcomes with ``P_y = 0`` dropped.

    Examples
    --------
    >>> lp = np.log([0.75, 0.25]); lq = np.log([0.25, 0.75])
    >>> a = atoms_of_pair((lp, lp), (lq, lq))
    >>> a.loss.round(4).tolist(), a.mass.round(4).tolist()
    ([-1.0986, 1.0986], [0.25, 0.75])
    """
    p_lo, p_hi = (np.asarray(v, dtype=float) for v in log_p)
    q_lo, q_hi = (np.asarray(v, dtype=float) for v in log_q)
    keep = p_hi > -np.inf
    with np.errstate(over="ignore", invalid="ignore"):
        loss = p_hi[keep] - q_lo[keep]
        loss = np.where(np.isfinite(loss), _up(loss + np.abs(loss) * (2 * _U)), np.inf)
        mass = _up(np.exp(p_hi[keep]))
    # np.exp is within 4u of the exact value (and the ulp added covers underflow)
    return _sorted(loss, mass, 4 * _U / (1.0 - 4 * _U), 0.0)


def _combine_rel(*rels: float) -> float:
    r = 1.0
    for x in rels:
        r *= 1.0 + x
    return float(_up((r - 1.0) * (1.0 + 8 * _U) + 8 * _U))


def _to_grid(loss: np.ndarray, mass: np.ndarray, rel: float, budget: int) -> LossAtoms:
    """The atoms with their losses rounded UP to the coarsest power-of-two grid that keeps at most ``budget``
    points (masses of a point summed, rounded up)."""
    fin = np.isfinite(loss)
    lf = loss[fin]
    span = float(lf.max() - lf.min()) if lf.size else 0.0
    k = 0
    if span > 0:
        k = math.ceil(math.log2(span / max(budget - 2, 1))) + 1
    step = math.ldexp(1.0, k)
    idx = np.ceil(lf / step)
    base = idx.min() if idx.size else 0.0
    pos = (idx - base).astype(np.int64)
    sums = np.bincount(pos, weights=mass[fin])
    counts = np.bincount(pos)
    nz = counts > 0
    grid_loss = (np.flatnonzero(nz) + base) * step
    n_max = int(counts.max()) if counts.size else 1
    grid_mass = _up(sums[nz] + counts[nz] * (2 * SMALLEST_SUBNORMAL))
    g = (n_max + 1) * _U / (1.0 - (n_max + 1) * _U)
    if not fin.all():
        inf_mass = _up(float(mass[~fin].sum()) + (~fin).sum() * (2 * SMALLEST_SUBNORMAL))
        grid_loss = np.append(grid_loss, np.inf)
        grid_mass = np.append(grid_mass, inf_mass)
    return _sorted(grid_loss.astype(float), grid_mass, _combine_rel(rel, g), step)


def product_atoms(parts: list[LossAtoms], *, budget: int = MAX_HALF_ATOMS) -> LossAtoms:
    """Upper atoms of the product of the pairs ``parts`` (losses added and rounded up, masses multiplied),
    rounded to a grid (:func:`_to_grid`) whenever more than ``budget`` atoms would be kept.

    Examples
    --------
    >>> lp = np.log([0.75, 0.25]); lq = np.log([0.25, 0.75])
    >>> a = atoms_of_pair((lp, lp), (lq, lq))
    >>> product_atoms([a, a]).size, product_atoms([a, a]).grid
    (4, 0.0)
    """
    if not parts:
        raise InvalidParameterError("product_atoms needs at least one pair")
    cur = parts[0]
    for nxt in parts[1:]:
        n = cur.size * nxt.size
        check_memory(48.0 * n, f"the {n} privacy loss atoms of a product of pairs")
        with np.errstate(invalid="ignore"):
            loss = np.add.outer(cur.loss, nxt.loss).ravel()
        fin = np.isfinite(loss)
        loss = np.where(fin, _up(loss + np.abs(loss) * (2 * _U)), np.inf)
        mass = _up(np.multiply.outer(cur.mass, nxt.mass).ravel())
        rel = _combine_rel(cur.rel, nxt.rel, 2 * _U)
        grid = max(cur.grid, nxt.grid)
        if n > budget:
            cur = _to_grid(loss, mass, rel, budget)
            cur = LossAtoms(cur.loss, cur.mass, cur.rel, max(cur.grid, grid))
        else:
            cur = _sorted(loss, mass, rel, grid)
    return cur


def hockey_stick_of_halves(A: LossAtoms, B: LossAtoms, eps: np.ndarray) -> np.ndarray:
    """Upper bounds of ``H_{e^eps}`` of the product of the pairs whose upper atoms are ``A`` and ``B``, at each
    eps of a 1-D array (``eps`` may be ``inf``: the mass of infinite loss). See the module docstring.

    Examples
    --------
    >>> lp = np.log([0.75, 0.25]); lq = np.log([0.25, 0.75])
    >>> a = atoms_of_pair((lp, lp), (lq, lq))
    >>> float(hockey_stick_of_halves(a, a, np.array([0.0]))[0]) - 0.5 < 1e-12  # two RR bits: 9/16 - 1/16
    True
    """
    S, R, gB, _ = B.suffix_sums()
    pa, la = A.mass, A.loss
    qa = A.suffix_sums()[3]  # 2^500 mass e^-loss (terms below 2^-1000 dropped): y below is 2^1000 times a bound
    nA, nB = A.size, B.size
    g = _combine_rel(gB, (nA + 4) * _U / (1.0 - (nA + 4) * _U), 6 * _U)
    scale = (1.0 + A.rel) * (1.0 + B.rel) * (1.0 + 4 * _U)
    fin = la[np.isfinite(la)]
    finite_max = max(abs(float(fin[0])), abs(float(fin[-1]))) if fin.size else 0.0
    slack_abs = float(nA) * (nB + 6) * 4 * SMALLEST_SUBNORMAL
    out = np.empty(eps.size)
    for k, e in enumerate(np.asarray(eps, dtype=float)):
        if math.isinf(e):
            inf_a = np.isinf(la)
            x = float(pa[inf_a].sum()) * S[0] + float(pa[~inf_a].sum()) * (S[int(np.searchsorted(B.loss, np.inf))]
                                                                          if nB else 0.0)
            out[k] = 0.0 if x == 0.0 else float(_up(x * scale * (1.0 + g) + slack_abs))
            continue
        s = 8 * _U * (abs(e) + finite_max + 1.0)
        with np.errstate(invalid="ignore"):
            t = (e - la) - s
        t = np.where(np.isnan(t), -np.inf, t)  # la = +inf: every atom of B
        j = np.searchsorted(B.loss, t, side="right")
        if not np.any(j < nB):  # no pair has a loss above eps
            out[k] = 0.0
            continue
        x = float((pa * S[j]).sum())  # (not np.dot: BLAS threads cost ~1000x on small vectors under load)
        y = float((qa * R[j]).sum())
        x_up = x * (1.0 + g) + slack_abs
        y_low = y * (1.0 - g) - slack_abs * _Q_SCALE * _Q_SCALE  # 2^1000 times a lower bound
        sub = 0.0
        if y_low > 0.0:
            # e^(eps - 2 s) y_low 2^-1000 in log space (every selected pair has loss + 2 s > eps): the argument
            # is within err of its exact value (each term within 2u of its magnitude, three sums), exp within
            # 2u; an underflow costs a subnormal ulp
            ly = math.log(y_low)
            arg = (e - 2 * s) + ly - 1000.0 * _LN2
            if arg < 700.0:
                err = 8 * _U * (abs(e) + abs(ly) + 1000.0 * _LN2 + 2.0)
                sub = max(math.exp(arg - err) * (1.0 - 4 * _U) - SMALLEST_SUBNORMAL, 0.0)
        val = (x_up - sub) * scale
        out[k] = min(float(_up(max(val, 0.0) * (1.0 + 4 * _U))), 1.0)
    return out
