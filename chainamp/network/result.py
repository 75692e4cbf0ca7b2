"""``NetworkPrivacy``: the exact pairwise privacy of a gossip protocol, as a frozen, self-printing result."""

from __future__ import annotations

import html
import math
from fractions import Fraction
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numerics import (check_delta, check_order, fmt_number, html_table, jsonable_number, round_up_array,
                         text_table)
from ..errors import InvalidParameterError
from ..privacy import PrivacyProfile
from .published import published_renyi

__all__ = ["NetworkPrivacy"]


@dataclass(frozen=True)
class NetworkPrivacy:
    """Pairwise network privacy of a gossip protocol: ``mu_matrix[i, j]`` is the Gaussian-mechanism
    parameter of source ``sources[i]`` towards observer ``observers[j]`` (exact, rounded up; ``NaN`` inside
    the observer's coalition). Build it with :func:`~chainamp.network.gossip_privacy`.

    ``status[j]`` says how observer ``j``'s values were obtained: ``"full rank"`` (every touched node is
    recovered exactly: ``mu = sensitivity / sigma_u``), ``"certified projection"`` (exact rank proved, the
    projection's rounding bounded), ``"capped"`` (the view is too ill-conditioned for double precision:
    ``mu = sensitivity / sigma_u`` for every touched node is reported as an upper bound) or
    ``"no messages"``. ``margins[j]`` is the width added to observer ``j``'s projections for the rounding (the
    values are at most that far above the exact ``||Pi e_u||``, times ``sensitivity / sigma_u``; 1 when capped).
    ``distance`` holds hop distances in the gossip graph.
    """

    labels: tuple
    sources: tuple
    observers: tuple
    mu_matrix: np.ndarray
    status: tuple
    ranks: tuple
    margins: tuple
    rounds: int
    view: str
    sensitivity: float
    sigma: np.ndarray
    colluders: tuple
    distance: np.ndarray
    schedule: Any = field(repr=False, compare=False)

    # ------------------------------------------------------------------ lookups
    def _pair(self, u: Any, v: Any) -> tuple[int, int]:
        try:
            i = self.sources.index(u)
        except ValueError:
            raise InvalidParameterError(f"u={u!r} is not among the sources of this result") from None
        try:
            j = self.observers.index(v)
        except ValueError:
            raise InvalidParameterError(f"v={v!r} is not among the observers of this result") from None
        return i, j

    def mu(self, u: Any, v: Any) -> float:
        """``mu`` of node ``u`` towards observer ``v`` (node labels)."""
        i, j = self._pair(u, v)
        return float(self.mu_matrix[i, j])

    def profile(self, u: Any, v: Any) -> PrivacyProfile:
        """The exact privacy profile of ``u`` towards ``v``: the Gaussian one at ``mu`` (composable)."""
        m = self.mu(u, v)
        if math.isnan(m):
            raise InvalidParameterError(f"u={u!r} is in the coalition of observer {v!r}: it knows its own value")
        if m == 0.0:
            return PrivacyProfile.pure(0.0)
        return PrivacyProfile.gaussian(1.0, sensitivity=m)

    def renyi(self, alpha: float) -> np.ndarray:
        """The Renyi divergence of order ``alpha`` of each pair's views, ``alpha mu^2 / 2`` (rounded up)."""
        a = check_order(alpha)
        if math.isinf(a):
            return np.where(self.mu_matrix > 0, math.inf, np.where(np.isnan(self.mu_matrix), np.nan, 0.0))
        # two roundings (mu^2, then alpha times it; / 2 is exact): one nextafter is not enough (review counterexample
        # mu = 2.8463178893335015, alpha = 3); round_up_array adds their relative error bound, zeros stay zero
        out = round_up_array(a * self.mu_matrix ** 2 / 2.0, n_ops=2)
        # below 2^-500, mu^2 may underflow (to 0, or a subnormal with an absolute error alpha then magnifies):
        # those few entries exactly, in rationals, rounded up
        for idx in zip(*np.nonzero((self.mu_matrix > 0) & (self.mu_matrix < 2.0 ** -500))):
            exact = Fraction(a) * Fraction(float(self.mu_matrix[idx])) ** 2 / 2
            val = float(exact)
            out[idx] = math.nextafter(val, math.inf) if Fraction(val) < exact else val
        return out

    def epsilon(self, delta: float) -> np.ndarray:
        """``eps(delta)`` of every pair (rounded up, as :meth:`PrivacyProfile.epsilon`); ``NaN`` in coalitions."""
        d = check_delta(delta)
        out = np.full(self.mu_matrix.shape, np.nan)
        for m in np.unique(self.mu_matrix[~np.isnan(self.mu_matrix)]):
            val = 0.0 if m == 0.0 else PrivacyProfile.gaussian(1.0, sensitivity=float(m)).epsilon(d)
            out[self.mu_matrix == m] = val
        return out

    # ------------------------------------------------------------------ summaries
    @property
    def local_mu(self) -> np.ndarray:
        """``sensitivity / sigma_u`` per source: the mu of sending ``x_u + noise`` directly (no decentralization)."""
        idx = [self.labels.index(u) for u in self.sources]
        return self.sensitivity / self.sigma[idx]

    def max_mu(self) -> tuple[Any, Any, float]:
        """The most exposed pair ``(u, v, mu)``."""
        if np.all(np.isnan(self.mu_matrix)):
            raise InvalidParameterError("every pair is inside a coalition: no privacy to report")
        i, j = np.unravel_index(np.nanargmax(self.mu_matrix), self.mu_matrix.shape)
        return self.sources[i], self.observers[j], float(self.mu_matrix[i, j])

    def mean_mu(self) -> float:
        return float(np.nanmean(self.mu_matrix))

    def exposed_fraction(self) -> float:
        """Fraction of pairs with ``mu`` equal to the local value ``sensitivity / sigma_u`` (no gain at all)."""
        ok = ~np.isnan(self.mu_matrix)
        full = self.mu_matrix >= self.local_mu[:, None] * (1.0 - 1e-12)
        return float(np.sum(full & ok) / max(np.sum(ok), 1))

    def by_distance(self) -> list[tuple[float, int, float, float]]:
        """Rows ``(distance, pairs, mean mu, max mu)`` by hop distance between source and observer."""
        rows = []
        ok = ~np.isnan(self.mu_matrix)
        for d in np.unique(self.distance[ok]):
            sel = ok & (self.distance == d)
            vals = self.mu_matrix[sel]
            rows.append((float(d), int(sel.sum()), float(vals.mean()), float(vals.max())))
        return rows

    def published(self, alpha: float = 2.0, variant: str = "per_message") -> np.ndarray:
        """The PUBLISHED Renyi bound of Cyffers et al. 2022 for each pair (a comparison, never a certificate;
        see :mod:`chainamp.network.published`): ``"per_message"`` or ``"random_graph"``. It is the paper's
        formula for the single observer ``v`` (its graph neighbours' messages at rounds 1..T), whatever this
        result's ``view`` and ``colluders``; ``sigma_u`` is the source's noise."""
        if variant not in ("per_message", "random_graph"):
            raise InvalidParameterError(f"variant must be 'per_message' or 'random_graph' (got {variant!r})")
        idx = {x: i for i, x in enumerate(self.labels)}
        src = np.array([idx[u] for u in self.sources])
        obs = np.array([idx[v] for v in self.observers])
        return published_renyi(self.schedule, alpha, self.sigma, src, obs, variant)

    def comparison(self, alpha: float = 2.0, limit: int = 10) -> list[dict]:
        """The pairs where the published per-message sum under-reports most: rows with the exact Renyi
        divergence, the published bound and their ratio, worst first."""
        exact = self.renyi(alpha)
        pub = self.published(alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(pub > 0, exact / pub, np.where(exact > 0, np.inf, 1.0))
        ratio = np.where(np.isnan(exact), -np.inf, ratio)
        order = np.argsort(-ratio, axis=None)[:limit]
        rows = []
        for flat in order:
            i, j = np.unravel_index(flat, ratio.shape)
            if not np.isfinite(ratio[i, j]) and ratio[i, j] < 0:
                continue
            rows.append({"u": self.sources[i], "v": self.observers[j], "distance": float(self.distance[i, j]),
                         "exact_renyi": float(exact[i, j]), "published_bound": float(pub[i, j]),
                         "exact_over_published": float(ratio[i, j])})
        return rows

    # ------------------------------------------------------------------ reports
    def headline(self) -> str:
        frac = self.exposed_fraction()
        u, v, m = self.max_mu()
        pairs = int(np.sum(~np.isnan(self.mu_matrix)))
        capped = sum(s == "capped" for s in self.status)
        bound = (f" ({capped} observer(s) too ill-conditioned to resolve: their values are upper bounds)"
                 if capped else "")
        return (f"After {self.rounds} rounds of gossip, {100 * frac:.0f}% of the {pairs} node pairs get no privacy "
                f"from decentralization (the observer sees the other node's value as if sent with its noise "
                f"directly); the most exposed pair is {u!r} -> {v!r} with mu = {fmt_number(m)}{bound}.")

    def _status_summary(self) -> str:
        counts: dict = {}
        for st in self.status:
            counts[st] = counts.get(st, 0) + 1
        return ", ".join(f"{n} {st}" for st, n in counts.items())

    def _largest_margin(self) -> float:
        vals = [mg for mg, st in zip(self.margins, self.status) if st != "capped"]
        return max(vals) if vals else 0.0

    def _rows(self) -> list[list]:
        return [[d, n, mean, mx] for d, n, mean, mx in self.by_distance()]

    def __str__(self) -> str:
        header = ["distance", "pairs", "mean mu", "max mu"]
        lines = [self.headline(), "",
                 f"view={self.view!r}, sensitivity={fmt_number(self.sensitivity)}, "
                 f"colluders={list(self.colluders)!r}; mu is exact (rounded up by at most the margin below)"
                 + (", except for capped observers, where it is an upper bound" if "capped" in self.status else "")
                 + "; eps(delta) and every Renyi order follow from it (Gaussian mechanism).",
                 f"observers: {self._status_summary()}; largest rounding margin on ||Pi e_u|| of a certified "
                 f"observer: {fmt_number(self._largest_margin())}.",
                 text_table(header, self._rows(), title="mu by hop distance")]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        header = ["distance", "pairs", "mean mu", "max mu"]
        return (f"<p>{html.escape(self.headline())}</p>" + html_table(header, self._rows(), title="mu by hop distance"))

    def to_dict(self) -> dict:
        return {"headline": self.headline(), "rounds": self.rounds, "view": self.view,
                "sensitivity": self.sensitivity, "colluders": list(self.colluders),
                "sources": list(self.sources), "observers": list(self.observers),
                "mu": [[None if math.isnan(x) else jsonable_number(float(x)) for x in row] for row in self.mu_matrix],
                "status": list(self.status), "ranks": list(self.ranks), "margins": list(self.margins),
                "by_distance": [dict(zip(("distance", "pairs", "mean_mu", "max_mu"), r)) for r in self.by_distance()]}

    def plot(self, delta: float = 1e-5, ax: Any = None):
        """Two panels: ``eps(delta)`` against hop distance (with the local level), and a heat map of ``mu``."""
        import matplotlib.pyplot as plt  # lazy: matplotlib only when plotting

        eps = self.epsilon(delta)
        if ax is None:
            fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        else:
            fig = ax[0].figure
        ok = ~np.isnan(eps)
        ax[0].scatter(self.distance[ok], eps[ok], s=12, alpha=0.6, label="exact (this view)")
        local = PrivacyProfile.gaussian(1.0, sensitivity=float(np.max(self.local_mu))).epsilon(delta)
        ax[0].axhline(local, color="k", ls="--", lw=1, label="local noise only")
        ax[0].set_xlabel("hop distance u -> v")
        ax[0].set_ylabel(f"epsilon at delta={delta:g}")
        ax[0].legend()
        im = ax[1].imshow(self.mu_matrix, aspect="auto", cmap="viridis")
        ax[1].set_xlabel("observer v")
        ax[1].set_ylabel("source u")
        fig.colorbar(im, ax=ax[1], label="mu")
        return fig
