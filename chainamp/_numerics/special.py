"""scipy.special's functions, imported on first use.

``import chainamp`` should not pay for ``scipy.special`` (about 30 ms, every CLI call): the modules that
need these functions call them through this module, which imports scipy.special the first time one of
them runs. Each function is scipy's own (same signature, same results).

>>> float(expit(0.0)), float(gammaln(4.0).round(12)), float(logsumexp([0.0, 0.0]).round(12))
(0.5, 1.791759469228, 0.69314718056)
"""

from __future__ import annotations

from typing import Any

__all__ = ["expit", "gammaln", "log_ndtr", "logsumexp"]


def _special():
    import scipy.special

    return scipy.special


def expit(x: Any, *args: Any, **kwargs: Any) -> Any:
    """``scipy.special.expit``: ``1 / (1 + e^-x)``."""
    return _special().expit(x, *args, **kwargs)


def gammaln(x: Any, *args: Any, **kwargs: Any) -> Any:
    """``scipy.special.gammaln``: ``log |Gamma(x)|``."""
    return _special().gammaln(x, *args, **kwargs)


def log_ndtr(x: Any, *args: Any, **kwargs: Any) -> Any:
    """``scipy.special.log_ndtr``: the log of the standard normal CDF."""
    return _special().log_ndtr(x, *args, **kwargs)


def logsumexp(a: Any, *args: Any, **kwargs: Any) -> Any:
    """``scipy.special.logsumexp``: ``log(sum(exp(a)))`` without overflow."""
    return _special().logsumexp(a, *args, **kwargs)
