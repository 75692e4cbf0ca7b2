"""The report of :func:`chainamp.amplify_shuffled`: a certified profile of the shuffled histogram, the exact
profile of concrete datasets below it, and how the randomizer's own coefficients read (a frozen dataclass that
prints itself; it never recomputes a certified number)."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numerics import check_delta, fmt_number, jsonable_number, text_table
from ..privacy import DominatingPair, PrivacyProfile

__all__ = ["ShuffleReport"]


#: the bracket of the lower profile's epsilon search (its lower end is reported: a lower bound)
_LOWER_RTOL, _LOWER_ATOL = 1e-9, 1e-14


@dataclass(frozen=True, eq=False)
class ShuffleReport:
    """Certified central (epsilon, delta) of ``users`` users' reports through ``randomizer`` after a shuffler.

    Attributes
    ----------
    randomizer : str
        What each user runs.
    users : int
        Every user, the one whose value changes included.
    method : str
        The method whose certificate is reported (``"exact"``, ``"blanket"``, ``"generic"``).
    delta : float
        The delta of the headline.
    epsilon : float
        The certified epsilon at ``delta`` (rounded up).
    profile : PrivacyProfile
        The certified profile; ``profile.dominating_pair()`` is a finite pair, so ``compose`` takes T rounds.
    lower : PrivacyProfile or None
        The exact profile of concrete datasets of the other users (a lower bound of the worst case): the truth
        lies between ``lower`` and ``profile``.
    lower_dataset : str
        Which datasets ``lower`` is computed for.
    local_epsilon : float
        The randomizer's own local-DP level (chainamp's ``ldp_guarantee``; inf when some output separates inputs).
    blanket_gamma : float or None
        ``sum_y min_x R(x, y)`` = 1 - Doeblin coefficient (Balle, Bell, Gascon, Nissim 2019's gamma), or None
        for a black-box ``DP(eps0)``.
    blanket_omega : ndarray or None
        The blanket distribution (the Doeblin witness), None when gamma = 0 or unknown.
    methods : dict
        Every method tried: its certified epsilon at ``delta``, or why it does not apply.
    notes : tuple of str
        Sentences qualifying the result (exactness, a missing blanket, ...).
    invert : callable or None
        The reported method's own certified inversion ``delta -> epsilon`` (a search on that method's curve, much
        faster than the profile's generic one); :meth:`epsilon_at` uses it when given.
    """

    randomizer: str
    users: int
    method: str
    delta: float
    epsilon: float
    profile: PrivacyProfile = field(repr=False)
    lower: PrivacyProfile | None = field(repr=False)
    lower_dataset: str
    local_epsilon: float
    blanket_gamma: float | None
    blanket_omega: np.ndarray | None = field(repr=False)
    methods: dict = field(repr=False)
    notes: tuple = ()
    exact: bool = False
    invert: Any = field(default=None, repr=False, compare=False)

    # ---------------------------------------------------------------- queries
    def epsilon_at(self, delta: float) -> float:
        """Certified epsilon at ``delta`` (rounded up; ``inf`` if none): the method's own inversion when it has
        one, else the profile's search."""
        if self.invert is not None:
            d = check_delta(delta, "delta")
            if 0.0 < d < 1.0:
                return float(self.invert(d))
        return float(self.profile.epsilon(delta))

    def delta_at(self, epsilon: float) -> float:
        """Certified delta at ``epsilon`` (rounded up)."""
        return float(self.profile.delta(epsilon))

    @property
    def pair(self) -> DominatingPair:
        """The finite dominating pair of the certified profile."""
        return self.profile.dominating_pair()

    @property
    def lower_epsilon(self) -> float | None:
        """epsilon of ``lower`` at the report's delta (None without a lower profile), rounded DOWN: the profile's
        search returns the upper end of a bracket of width ``atol + rtol hi``; its lower end, where the lower's
        delta (itself rounded down) is still above delta, is below the true epsilon (0 when that check fails)."""
        if self.lower is None:
            return None
        hi = float(self.lower.epsilon(self.delta, bisection_rtol=_LOWER_RTOL, bisection_atol=_LOWER_ATOL))
        if hi == 0.0 or not math.isfinite(hi):
            return hi
        lo = max(0.0, hi - (_LOWER_ATOL + _LOWER_RTOL * hi) * (1.0 + 1e-12))
        return lo if float(self.lower.delta(lo)) > self.delta else 0.0

    @property
    def gap(self) -> float | None:
        """Certified epsilon minus the lower profile's epsilon at ``delta`` (0 when exact, None without lower)."""
        low = self.lower_epsilon
        if low is None:
            return None
        return max(0.0, self.epsilon - low) if math.isfinite(self.epsilon) else math.inf

    # ---------------------------------------------------------------- reading
    @property
    def headline(self) -> str:
        t = fmt_number(self.delta)
        who = f"{self.users:,} users each reporting through {self.randomizer}, shuffled"
        if not math.isfinite(self.epsilon):
            return (f"Nothing is certified at delta = {t} for {who}: no epsilon reaches that delta (see the notes "
                    "below).")
        head = f"Certified: {who}, are ({fmt_number(self.epsilon)}, {t})-DP for any one user's value"
        if self.exact:
            head += " (the exact worst case over the other users' data)"
        elif self.gap is not None:
            head += (f"; a concrete dataset of the other users already needs epsilon = "
                     f"{fmt_number(self.lower_epsilon)}, so the truth lies in between")
        if math.isfinite(self.local_epsilon) and self.local_epsilon > self.epsilon:
            head += f", against epsilon = {fmt_number(self.local_epsilon)} without the shuffler"
        return head + "."

    def _rows(self) -> list:
        rows = []
        for name, val in self.methods.items():
            rows.append([name, val if isinstance(val, str) else fmt_number(val)])
        return rows

    def __str__(self) -> str:
        lines = [self.headline, ""]
        lines.append(f"  method: {self.method}; certified epsilon at delta = {fmt_number(self.delta)}: "
                     f"{fmt_number(self.epsilon)} (an upper bound{', exact up to rounding' if self.exact else ''})")
        if self.lower is not None:
            lines.append(f"  lower (exact for {self.lower_dataset}): epsilon = {fmt_number(self.lower_epsilon)}; "
                         f"gap {fmt_number(self.gap)}")
        lines.append(f"  local epsilon of the randomizer: {fmt_number(self.local_epsilon)}")
        if self.blanket_gamma is not None:
            lines.append(f"  blanket gamma = sum_y min_x R(x, y) = {fmt_number(self.blanket_gamma)} "
                         "(1 - the Doeblin coefficient)")
        lines.append("")
        lines.append(text_table(["method", f"epsilon at delta = {fmt_number(self.delta)}"], self._rows()))
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(a)}</td><td>{html.escape(b)}</td></tr>" for a, b in self._rows())
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        low = ("" if self.lower is None else
               f"<p>Lower (exact for {html.escape(self.lower_dataset)}): epsilon = "
               f"{fmt_number(self.lower_epsilon)}; gap {fmt_number(self.gap)}.</p>")
        gamma = "" if self.blanket_gamma is None else f"; blanket gamma {fmt_number(self.blanket_gamma)}"
        return (f'<p class="headline"><b>{html.escape(self.headline)}</b></p>'
                f"<p>Method {html.escape(self.method)}; local epsilon {fmt_number(self.local_epsilon)}{gamma}.</p>"
                f"{low}<table><tr><th>method</th><th>epsilon at delta = {fmt_number(self.delta)}</th></tr>{rows}"
                f"</table>" + (f"<ul>{notes}</ul>" if notes else ""))

    def to_dict(self) -> dict:
        """JSON-safe summary (infinities as ``"inf"``)."""
        return {"headline": self.headline, "randomizer": self.randomizer, "users": self.users,
                "method": self.method, "delta": self.delta, "epsilon": jsonable_number(self.epsilon),
                "exact": self.exact, "lower_epsilon": jsonable_number(self.lower_epsilon),
                "lower_dataset": self.lower_dataset, "gap": jsonable_number(self.gap),
                "local_epsilon": jsonable_number(self.local_epsilon),
                "blanket_gamma": jsonable_number(self.blanket_gamma),
                "methods": {k: (v if isinstance(v, str) else jsonable_number(v)) for k, v in self.methods.items()},
                "notes": list(self.notes)}

    def plot(self, ax: Any = None, *, points: int = 200):
        """delta against epsilon: the certified profile and the lower one (matplotlib, imported here)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        top = self.epsilon if math.isfinite(self.epsilon) and self.epsilon > 0 else 1.0
        eps = np.linspace(0.0, 2.0 * top, points)
        ax.semilogy(eps, np.maximum(self.profile.delta(eps), 1e-300), label=f"certified ({self.method})")
        if self.lower is not None:
            ax.semilogy(eps, np.maximum(self.lower.delta(eps), 1e-300), "--", label="lower (concrete dataset)")
        ax.axhline(self.delta, color="grey", lw=0.5)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("delta")
        ax.set_title(f"{self.users:,} users, shuffled")
        ax.legend()
        return ax
