"""Shuffled reports (layer 7, beside ``design/``): the central privacy of n users' local reports after a
shuffler, from the randomizer's own structure and coefficients.

* :mod:`.api`: :func:`amplify_shuffled` and its dispatch over the methods (:data:`METHODS`).
* :mod:`.exact`: randomized response, the worst case over the other users' data (binary: exact; k-ary: a
  sound bound with a concrete dataset below it), as finite dominating pairs.
* :mod:`.report`: :class:`ShuffleReport`.
* private: :mod:`._binomial` (binomials on their effective support, Chernoff tails), :mod:`._pairs` (ROC
  points of pairs known up to rounding and a dropped tail).
"""

from .exact import *  # noqa: F401,F403
from .report import *  # noqa: F401,F403
from .api import *  # noqa: F401,F403
from . import api, exact, report

__all__ = list(exact.__all__) + list(report.__all__) + list(api.__all__)
