"""Diffusion mechanisms: Section 5 of Balle, Barthe, Gaboardi and Geumlek (2019).

* :mod:`.semigroups`: Brownian motion and Ornstein-Uhlenbeck semigroups, their
  intrinsic sensitivity and Renyi DP (Theorem 6), samplers.
* :mod:`.accuracy`: the mean squared errors of eq. (4) (Section 5.1), Theorem 8's
  condition and parameter choice, Monte Carlo error estimates.
"""

from .semigroups import *  # noqa: F401,F403
from .accuracy import *  # noqa: F401,F403
from . import accuracy, semigroups

__all__ = list(semigroups.__all__) + list(accuracy.__all__)
