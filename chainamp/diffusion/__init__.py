"""Diffusion mechanisms: Section 5 of Balle, Barthe, Gaboardi and Geumlek (2019).

* :mod:`.semigroups`: Brownian motion and Ornstein-Uhlenbeck semigroups, their
  intrinsic sensitivity and Renyi DP (Theorem 6), samplers, the mean squared errors
  of eq. (4) and Theorem 8's condition.
"""

from .semigroups import *  # noqa: F401,F403
from . import semigroups

__all__ = list(semigroups.__all__)
