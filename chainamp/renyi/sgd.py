"""Amplification by iteration: Theorem 4, Theorem 5 and Algorithm 1 of Balle et al. 2019.

Re-exported by :mod:`chainamp.renyi`; import from there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._numerics import (expit, check_epsilon, check_float_array, check_int, check_order, check_positive, check_real,
                         log_expm1, round_up)
from ..errors import InvalidParameterError
from .core import DEFAULT_ORDERS, RDPConversion, RDPCurve, _exp_up

__all__ = [
    "IterationBound",
    "iteration_bound",
    "contractive_iteration_bound",
    "optimal_iteration_path",
    "feldman_noisy_sgd_slope",
    "NoisySGDRDP",
    "noisy_sgd_rdp",
    "LogisticDataset",
    "load_noisy_sgd_dataset",
    "regularized_logistic_loss",
    "NoisySGDRun",
    "noisy_projected_sgd",
]

_FELDMAN = "Feldman, Mironov, Talwar and Thakurta 2018, Theorem 23"
_THM5 = "Theorem 5 of Balle et al. 2019"


# --------------------------------------------------------------------------- Theorem 4
@dataclass(frozen=True)
class IterationBound:
    """A bound on ``R_alpha(mu K_1...K_r || nu K_1...K_r)`` from Theorem 4 of Balle et al. 2019."""

    value: float
    alpha: float
    path: tuple[float, ...]
    lipschitz: float
    sigma: float
    source: str


def _check_lip_sigma(sigma: float, lipschitz: float) -> tuple[float, float]:
    return check_positive(sigma, "sigma"), check_positive(lipschitz, "lipschitz", strict=False)


def iteration_bound(path: Any, sigma: float, lipschitz: float, alpha: float) -> IterationBound:
    """Eq. (2) of Theorem 4 (Balle et al. 2019) for a user-chosen interpolating path.

    ``K_i(x) = Pi_K(psi_i(x) + N(0, sigma^2 I))`` with every ``psi_i`` L-Lipschitz; ``path[i-1]``
    is (an upper bound on) ``W_inf(mu_i, mu_{i-1})`` for distributions ``mu_0 = mu, ..., mu_r = nu``::

        R_alpha(mu K_1...K_r || nu K_1...K_r) <= alpha L^2 / (2 sigma^2) sum_i L^{2(r-i)} path_i^2.

    Rounded up past the error of the sum.

    >>> round(iteration_bound([0.5, 0.5], 1.0, 1.0, 2.0).value, 6)
    0.5
    """
    s, lip = _check_lip_sigma(sigma, lipschitz)
    a = check_order(alpha)
    d = check_float_array(path, "path")
    if d.ndim != 1 or d.size == 0 or not np.all(np.isfinite(d)) or np.any(d < 0):
        raise InvalidParameterError(f"path must be a non-empty 1-D array of finite distances >= 0 (got {path!r})")
    r = d.size
    weights = np.power(lip, 2.0 * (r - np.arange(1, r + 1) + 1))  # L^2 * L^{2(r-i)}
    total = float(np.sum(weights * d * d))
    if total == 0.0:
        val = 0.0
    elif math.isinf(a):
        val = math.inf
    else:
        val = round_up(a * total / (2.0 * s * s), 3 * r + 8)
    return IterationBound(value=val, alpha=a, path=tuple(d.tolist()), lipschitz=lip, sigma=s,
                          source="Theorem 4, eq. (2) of Balle et al. 2019")


def contractive_iteration_bound(shift: float, steps: int, sigma: float, lipschitz: float,
                                alpha: float) -> IterationBound:
    """Eq. (3) of Theorem 4: for ``L <= 1`` and ``W_inf(mu, nu) = shift``::

        R_alpha(mu K_1...K_r || nu K_1...K_r) <= alpha shift^2 L^{r+1} / (2 r sigma^2).

    ``L > 1`` raises ``InvalidParameterError``. The ``path`` field holds the path of the proof,
    ``Delta_0 L^i`` with ``Delta_0 = shift (1 - L) / (L (1 - L^r))``. Rounded up.

    >>> round(contractive_iteration_bound(1.0, 4, 1.0, 0.5, 2.0).value, 6)
    0.007813
    """
    delta = check_epsilon(check_real(shift, "shift"), "shift", allow_inf=False)
    r = check_int(steps, "steps", minimum=1)
    s, lip = _check_lip_sigma(sigma, lipschitz)
    a = check_order(alpha)
    if lip > 1.0:
        raise InvalidParameterError(f"lipschitz must be <= 1 for eq. (3) of Theorem 4 (got {lip!r})")
    if delta == 0.0 or lip == 0.0:
        val = 0.0
    elif math.isinf(a):
        val = math.inf
    else:
        val = _exp_up(math.log(a) + 2 * math.log(delta) + (r + 1) * math.log(lip) - math.log(2.0 * r * s * s), 8)
    if lip in (0.0, 1.0):
        path = [delta / r] * r if lip == 1.0 else [delta] + [0.0] * (r - 1)
    else:
        d0 = delta * (1 - lip) / (lip * (1 - lip**r))
        path = [d0 * lip**i for i in range(1, r + 1)]
    return IterationBound(value=val, alpha=a, path=tuple(path), lipschitz=lip, sigma=s,
                          source="Theorem 4, eq. (3) of Balle et al. 2019")


def optimal_iteration_path(shift: float, steps: int, lipschitz: float) -> np.ndarray:
    """The path minimising eq. (2) among paths with ``sum(path) = shift``.

    Derivation (ours): minimising ``sum_i a_i d_i^2`` with ``a_i = L^{2(r-i)}`` under ``sum_i d_i = shift``
    gives (Lagrange / Cauchy-Schwarz) ``d_i = shift (1/a_i) / sum_j (1/a_j) = shift L^{2(i-1)} / sum_{k<r} L^{2k}``
    and the minimum ``shift^2 / sum_j (1/a_j)``; eq. (2) then reads
    ``alpha shift^2 L^{2r} / (2 sigma^2 sum_{k<r} L^{2k})``. Every such path is realised, as in the
    proof of eq. (3), by ``mu_i = Law((1 - theta_i) X + theta_i X')`` with
    ``theta_i = (d_1 + ... + d_i) / shift`` and ``(X, X')`` a ``W_inf``-optimal coupling of ``(mu, nu)``.
    For linear ``psi_i(x) = L x + c_i`` and point masses this equals the exact divergence.

    >>> optimal_iteration_path(3.0, 2, 1.0).tolist()
    [1.5, 1.5]
    """
    delta = check_epsilon(check_real(shift, "shift"), "shift", allow_inf=False)
    r = check_int(steps, "steps", minimum=1)
    lip = check_positive(lipschitz, "lipschitz", strict=False)
    k = np.arange(r, dtype=float)
    if lip <= 1.0:
        w = np.power(lip, 2.0 * k)  # L^{2(i-1)}, largest first
    else:
        w = np.power(1.0 / lip, 2.0 * (r - 1 - k))  # same ratios, scaled by L^{-2(r-1)}
    return delta * w / w.sum()


# --------------------------------------------------------------------------- Theorem 5
def feldman_noisy_sgd_slope(n: int, i: int, C: float, sigma: float) -> float:
    """Baseline for smooth convex (not necessarily strongly convex) losses: Feldman, Mironov, Talwar
    and Thakurta 2018, Theorem 23 -- noisy projected SGD with a C-Lipschitz, beta-smooth convex loss and
    ``eta <= 2/beta`` is ``(alpha, alpha * 2 C^2 / ((n - i + 1) sigma^2))``-RDP at index ``i``.

    Returns the slope ``2 C^2 / ((n - i + 1) sigma^2)``, rounded up.

    >>> feldman_noisy_sgd_slope(10, 10, 1.0, 1.0)
    2.0
    """
    n_, i_ = _check_index(n, i)
    c = check_positive(C, "C", strict=False)
    s = check_positive(sigma, "sigma")
    return round_up(2.0 * c * c / ((n_ - i_ + 1) * s * s), 5)


def _check_index(n: int, i: int) -> tuple[int, int]:
    n_ = check_int(n, "n", minimum=1)
    i_ = check_int(i, "i")
    if not 1 <= i_ <= n_:
        raise InvalidParameterError(f"i must be in [1, n] = [1, {n_}] (got {i_})")
    return n_, i_


@dataclass(frozen=True)
class NoisySGDRDP:
    """Per-index RDP of noisy projected SGD: ``(alpha, alpha * slope)``-RDP at index ``i``.

    ``slope`` is Theorem 5; ``path_optimal_slope`` is eq. (2) of Theorem 4 with the optimal path
    (:func:`optimal_iteration_path`), never larger; ``baseline_slope`` is Feldman et al. 2018
    (Theorem 23). All three are valid, so ``tightest_slope`` (their minimum) is too.
    ``contraction`` is ``L = sqrt(1 - 2 eta beta rho / (beta + rho))`` (Lemma 18), rounded up.
    """

    n: int
    i: int
    slope: float
    path_optimal_slope: float
    baseline_slope: float
    contraction: float
    source: str = _THM5
    baseline_source: str = _FELDMAN

    @property
    def tightest_slope(self) -> float:
        return min(self.slope, self.path_optimal_slope, self.baseline_slope)

    def rdp(self, alpha: float) -> float:
        """The RDP epsilon at order ``alpha``: ``alpha * tightest_slope``, rounded up."""
        a = check_order(alpha)
        if self.tightest_slope == 0.0:
            return 0.0
        return math.inf if math.isinf(a) else round_up(a * self.tightest_slope, 1)

    def curve(self, orders: Any = DEFAULT_ORDERS) -> RDPCurve:
        return RDPCurve.from_slope(self.tightest_slope, orders)

    def to_dp(self, delta: float, *, method: str = "cks", orders: Any = DEFAULT_ORDERS) -> RDPConversion:
        return self.curve(orders).to_dp(delta, method=method)


def _contraction_sq(eta: float, beta: float, rho: float) -> float:
    """``L^2 = 1 - 2 eta beta rho / (beta + rho)``, rounded up (a larger L is the safe side)."""
    q = 1.0 - 2.0 * eta * beta * rho / (beta + rho)
    return round_up(max(q, 0.0), 4, scale=1.0, upper=1.0)


def noisy_sgd_rdp(n: int, i: int, C: float, sigma: float, eta: float, beta: float, rho: float) -> NoisySGDRDP:
    """Theorem 5 of Balle et al. 2019: per-index RDP of NoisyProjSGD (Algorithm 1).

    For a C-Lipschitz, beta-smooth, rho-strongly convex loss and ``eta <= 2/(beta + rho)`` the output
    is ``(alpha, alpha * eps_i)``-RDP at index ``i`` for every ``alpha > 1``, with::

        eps_n = 2 C^2 / sigma^2,
        eps_i = 2 C^2 / ((n - i) sigma^2) * (1 - 2 eta beta rho / (beta + rho))^((n - i + 1)/2),  i < n.

    The result also carries the optimal-path value of eq. (2) (``2 C^2 / (sigma^2 sum_{k=1}^{n-i} L^{-2k})``
    for ``i < n``; the same W_inf shift ``2 eta C`` and noise ``eta sigma`` as in the proof) and the
    Feldman et al. (2018) baseline ``2 C^2 / ((n - i + 1) sigma^2)``. Computed in log space, rounded up.
    Raises ``InvalidParameterError`` if ``eta > 2/(beta + rho)`` or ``rho > beta``.

    >>> r = noisy_sgd_rdp(100, 50, 1.0, 1.0, 0.5, 1.0, 1.0)
    >>> round(r.slope, 10), round(r.baseline_slope, 6)
    (0.0, 0.039216)
    >>> r = noisy_sgd_rdp(100, 90, 1.0, 1.0, 0.1, 1.0, 0.5)
    >>> round(r.slope, 6), round(r.path_optimal_slope, 6), round(r.tightest_slope, 6)
    (0.136846, 0.134196, 0.134196)
    """
    n_, i_ = _check_index(n, i)
    c = check_positive(C, "C", strict=False)
    s = check_positive(sigma, "sigma")
    e = check_positive(eta, "eta")
    b = check_positive(beta, "beta")
    p = check_positive(rho, "rho", strict=False)
    if p > b:
        raise InvalidParameterError(f"rho must be <= beta: a rho-strongly convex beta-smooth loss has rho <= beta "
                                    f"(got rho={p!r}, beta={b!r})")
    if e > 2.0 / (b + p):
        raise InvalidParameterError(f"eta must be <= 2/(beta + rho) = {2.0 / (b + p)!r} for Theorem 5 (got {e!r})")
    q = _contraction_sq(e, b, p)
    baseline = feldman_noisy_sgd_slope(n_, i_, c, s)
    r = n_ - i_
    if c == 0.0:
        slope = opt = 0.0
    elif r == 0:
        slope = opt = round_up(2.0 * c * c / (s * s), 5)
    elif q == 0.0:
        slope = opt = 0.0
    else:
        log_base = math.log(2.0) + 2.0 * math.log(c) - 2.0 * math.log(s)
        slope = _exp_up(log_base - math.log(r) + 0.5 * (r + 1) * math.log(q), 10)
        ell = -math.log(q)  # >= 0; log sum_{k=1}^r e^{k ell}
        log_s = math.log(r) if ell == 0.0 else ell + log_expm1(r * ell) - log_expm1(ell)
        opt = _exp_up(log_base - log_s, 16)
    return NoisySGDRDP(n=n_, i=i_, slope=slope, path_optimal_slope=min(opt, slope),
                       baseline_slope=baseline, contraction=round_up(math.sqrt(q), 2, upper=1.0))


# --------------------------------------------------------------------------- Algorithm 1
@dataclass(frozen=True, eq=False)
class LogisticDataset:
    """Binary classification data: ``features`` (n, d) and ``labels`` in {-1, +1}."""

    features: np.ndarray
    labels: np.ndarray
    source: str


def load_noisy_sgd_dataset(path: str | Path | None = None) -> LogisticDataset:
    """Load the CSV shipped in ``datasets/noisy_sgd/`` (columns ``x1..xd,label``) or another file
    of that layout.

    >>> ds = load_noisy_sgd_dataset()
    >>> ds.features.shape, sorted(set(ds.labels.tolist()))
    ((400, 5), [-1.0, 1.0])
    """
    p = Path(path) if path is not None else Path(__file__).resolve().parents[2] / "datasets" / "noisy_sgd" / "data.csv"
    if not p.is_file():
        raise FileNotFoundError(f"noisy-SGD dataset not found at {p}")
    raw = np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2)
    return LogisticDataset(features=raw[:, :-1], labels=raw[:, -1], source=str(p))


def _check_data(features: Any, labels: Any, feature_bound: float) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0 or y.shape != (X.shape[0],):
        raise InvalidParameterError(f"features must be (n, d) and labels (n,) (got {X.shape} and {y.shape})")
    if not np.all(np.isfinite(X)):
        raise InvalidParameterError("features must be finite")
    if not np.all((y == 1.0) | (y == -1.0)):
        raise InvalidParameterError(f"labels must be -1 or +1 (got values {np.unique(y)[:5].tolist()})")
    norms = np.linalg.norm(X, axis=1)
    if float(norms.max()) > feature_bound:
        k = int(np.argmax(norms))
        raise InvalidParameterError(f"every feature row must have norm <= feature_bound={feature_bound!r} "
                                    f"(row {k} has {float(norms[k])!r})")
    return X, y


def regularized_logistic_loss(model: Any, features: Any, labels: Any, reg: float) -> float:
    """``mean_j log(1 + exp(-y_j <a_j, x>)) + reg/2 ||x||^2`` (a utility measure, not a privacy bound).

    >>> round(regularized_logistic_loss([0.0], [[1.0]], [1.0], 0.1), 6)
    0.693147
    """
    x = np.asarray(model, dtype=float)
    margins = np.asarray(labels, dtype=float) * (np.asarray(features, dtype=float) @ x)
    return float(np.mean(np.logaddexp(0.0, -margins)) + 0.5 * reg * float(x @ x))


@dataclass(frozen=True, eq=False)
class NoisySGDRun:
    """The output of :func:`noisy_projected_sgd`: the model and the per-index guarantees of the run."""

    model: np.ndarray
    guarantees: tuple[NoisySGDRDP, ...]
    lipschitz: float
    smoothness: float
    strong_convexity: float
    eta: float
    sigma: float
    radius: float
    loss: float = field(default=math.nan)

    @property
    def slopes(self) -> np.ndarray:
        return np.array([g.slope for g in self.guarantees])

    @property
    def baseline_slopes(self) -> np.ndarray:
        return np.array([g.baseline_slope for g in self.guarantees])


def noisy_projected_sgd(features: Any, labels: Any, *, sigma: float, reg: float, radius: float,
                        eta: float | None = None, feature_bound: float = 1.0, x0: Any = None,
                        rng: Any = None) -> NoisySGDRun:
    """NoisyProjSGD (Algorithm 1 of Balle et al. 2019) on L2-regularised logistic regression.

    ``x_i = Pi_K(x_{i-1} - eta (grad l(x_{i-1}, z_i) + Z))``, ``Z ~ N(0, sigma^2 I)``, one pass in data
    order, over the ball ``K = {||x|| <= radius}``, with
    ``l(x, (a, y)) = log(1 + exp(-y <a, x>)) + reg/2 ||x||^2`` and ``||a|| <= feature_bound = R``.
    On K this loss is ``C = R + reg * radius`` Lipschitz, ``beta = R^2/4 + reg`` smooth and
    ``rho = reg`` strongly convex, so Theorem 5 applies for ``eta <= 2/(beta + rho)`` (default: that value).
    Returns the model and, for every index ``i``, :func:`noisy_sgd_rdp` for the run's constants.

    >>> run = noisy_projected_sgd([[1.0], [-1.0]], [1, -1], sigma=1.0, reg=0.1, radius=5.0, rng=0)
    >>> len(run.guarantees), round(run.lipschitz, 6)
    (2, 1.5)
    """
    R = check_positive(feature_bound, "feature_bound")
    X, y = _check_data(features, labels, R)
    s = check_positive(sigma, "sigma")
    lam = check_positive(reg, "reg")
    B = check_positive(radius, "radius")
    beta, rho = R * R / 4.0 + lam, lam
    e = 2.0 / (beta + rho) if eta is None else check_positive(eta, "eta")
    n, d = X.shape
    C = round_up(R + lam * B, 2)
    guarantees = tuple(noisy_sgd_rdp(n, i, C, s, e, beta, rho) for i in range(1, n + 1))  # validates eta
    gen = np.random.default_rng(rng)
    x = np.zeros(d) if x0 is None else np.array(x0, dtype=float).reshape(d)
    if np.linalg.norm(x) > B:
        raise InvalidParameterError(f"x0 must lie in the ball of radius {B!r} (norm {float(np.linalg.norm(x))!r})")
    for a_j, y_j in zip(X, y):
        grad = -y_j * expit(-y_j * float(a_j @ x)) * a_j + lam * x
        x = x - e * (grad + s * gen.standard_normal(d))
        nrm = float(np.linalg.norm(x))
        if nrm > B:
            x = x * (B / nrm)
    x.setflags(write=False)
    return NoisySGDRun(model=x, guarantees=guarantees, lipschitz=C, smoothness=beta, strong_convexity=rho,
                       eta=e, sigma=s, radius=B, loss=regularized_logistic_loss(x, X, y, lam))
