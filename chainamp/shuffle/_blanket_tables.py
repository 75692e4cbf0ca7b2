"""Tables behind the blanket's closed form for k-ary randomized response (private to ``shuffle/``).

:func:`.blanket._three_classes_Db` evaluates, for every blanket size and count s of reports on the two differing
classes, binomial masses and tails. The window of s and its masses do not depend on eps, and the tails it needs
at the eps-dependent thresholds are the same Boost calls for every eps: both are computed once here (cached, read
only), so an inversion or a plot over many eps costs a few array reads per eps.
"""

from __future__ import annotations

import functools

import numpy as np

from .._numerics import SHUFFLE_SPECIAL_RTOL, check_memory

__all__: list[str] = []


#: the largest table of binomial survival functions and pmfs (counts x thresholds) kept per split probability: two
#: arrays of 8 MB each at most, and at most four tables kept (past it the same Boost calls are made per eps)
BINOM_TABLE_MAX = 1_000_000
#: the tables and windows kept between calls (each window at most 24 bytes per closed-form term)
CACHED = 4


@functools.lru_cache(maxsize=CACHED)
def _binom_table(rho: float, smax: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(SF, PM)`` with ``SF[n, x + 2] = binom.sf(x, n, rho)`` and ``PM[n, x + 2] = binom.pmf(x, n, rho)`` for
    ``0 <= n <= smax``, ``-2 <= x <= smax + 1`` (the same Boost calls :func:`_three_classes_Db` makes per pair,
    made once: its thresholds move with eps, the counts do not); None past ``BINOM_TABLE_MAX`` entries."""
    if (smax + 1) * (smax + 4) > BINOM_TABLE_MAX:
        return None
    import scipy.stats as st

    check_memory(8.0 * 4 * (smax + 1) * (smax + 4), f"a table of {(smax + 1) * (smax + 4)} binomial tails")
    n = np.arange(smax + 1, dtype=float)[:, None]
    x = np.arange(-2, smax + 2, dtype=float)[None, :]
    SF, PM = st.binom.sf(x, n, rho), st.binom.pmf(x, n, rho)
    SF.flags.writeable = PM.flags.writeable = False
    return SF, PM


@functools.lru_cache(maxsize=CACHED)
def _s_window(q2: float, sizes: bytes) -> tuple[np.ndarray, ...]:
    """``(owner, svals, sw, tails)`` of :func:`_three_classes_Db` for the blanket sizes ``sizes`` (int64 bytes): the
    window of the count s on the first two classes for each size, its masses (pushed up) and the mass outside. They
    do not depend on eps, so an inversion or a plot computes them once (read-only arrays)."""
    import scipy.stats as st

    r = SHUFFLE_SPECIAL_RTOL
    bs = np.frombuffer(sizes, dtype=np.int64)
    Ns = bs.astype(float) + 1.0
    mean, sd = Ns - Ns * q2, np.sqrt(Ns * q2 * (1 - q2))
    lo = np.maximum(0, (mean - 9 * sd - 9).astype(np.int64))
    hi = np.minimum(Ns.astype(np.int64), (mean + 9 * sd + 81).astype(np.int64) + 1)
    counts = hi - lo + 1
    total = int(counts.sum())
    check_memory(12 * 8.0 * total, f"{total} (blanket size, count) pairs of the blanket pair")
    owner = np.repeat(np.arange(bs.size), counts)
    svals = (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(lo, counts)).astype(float)
    sw = st.binom.pmf(Ns[owner] - svals, Ns[owner], q2) * (1 + r)  # P(s) = P(N - s), N - s ~ Bin(N, q2)
    tails = (np.where(lo > 0, st.binom.sf(Ns - lo, Ns, q2), 0.0)  # P(s <= lo - 1)
             + np.where(hi < Ns, st.binom.cdf(Ns - hi - 1, Ns, q2), 0.0)) * (1 + r) + 1e-300  # P(s >= hi + 1)
    for a in (owner, svals, sw, tails):
        a.flags.writeable = False
    return owner, svals, sw, tails
