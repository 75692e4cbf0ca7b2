"""The error bound of a convolution computed by real FFTs (private to ``shuffle/``; the exact method and the k-RR
cover share it)."""

from __future__ import annotations

import math

import numpy as np

from .._numerics import UNIT_ROUNDOFF

__all__: list[str] = []

_U = UNIT_ROUNDOFF


def fft_conv_error(a: np.ndarray, b: np.ndarray, c: np.ndarray, n: int) -> float:
    """The 2-norm bound of :func:`.exact._fft_conv` for ``c``, the computed convolution of ``a`` and ``b`` by transforms
    of ``n`` points in all (an n-D transform is the 1-D ones along each axis: their relative errors add up to the
    1-D bound at the total size)."""
    # norms by numpy's pairwise sums, not BLAS dot (a threaded ddot stalls for ~10 ms on a loaded machine)
    na, nb = float(np.sqrt((a * a).sum())), float(np.sqrt((b * b).sum()))
    sa, sb = float(a.sum()), float(b.sum())
    nc = float(np.sqrt((c * c).sum()))
    eF = 16.0 * _U * (math.log2(n) + 1.0)
    eta = 2.0 * (eF * (na * sb + sa * nb + 2.0 * nc * 1.01) + 3.0 * _U * nc * 1.01)
    return math.nextafter(eta, math.inf)
