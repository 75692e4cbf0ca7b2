"""Shuffled reports (layer 7, beside ``design/``): the central privacy of n users' local reports after a
shuffler, from the randomizer's own structure and coefficients.

* :mod:`.api`: :func:`amplify_shuffled` and its dispatch over the methods (:data:`METHODS`).
* :mod:`.exact`: binary randomized response, the exact worst case over the other users' data, as a finite
  dominating pair.
* :mod:`.krr`: k-ary randomized response, a sound bound for every dataset of the others (the two-output
  reveal) with a concrete dataset below it.
* :mod:`.blanket`: the exact expectation behind the privacy blanket of Balle, Bell, Gascon and Nissim 2019.
* :mod:`.generic`: the clone bound of Feldman, McMillan and Talwar 2021 from eps0 alone, exact.
* :mod:`.variation`: the variation-ratio bound of Wang et al. 2024, made sound.
* :mod:`.published`: Balle et al. 2019's Hoeffding and Bennett relaxations and FMT 2021's closed form, as
  published (comparison rows, never certificates).
* :mod:`.report`: :class:`ShuffleReport`.
* private: :mod:`._binomial` (binomials on their effective support, Chernoff tails), :mod:`._pairs` (ROC
  points of pairs known up to rounding and a dropped tail), :mod:`._chains` (curves of revealed mixtures from
  a few points per component), :mod:`._curves` (dominating pairs of certified
  curves on a grid), :mod:`._clones` (the clone pair's numerics), :mod:`._rr_band` (a channel read as k-RR and
  both ends of its rounding band: the upper's and the lower's eps0), :mod:`._krr_datasets` (exact profiles of
  two concrete k-RR datasets from closed forms: the k-RR lower).
"""

from .generic import *  # noqa: F401,F403
from .blanket import *  # noqa: F401,F403
from .variation import *  # noqa: F401,F403
from .published import *  # noqa: F401,F403
from .exact import *  # noqa: F401,F403
from .krr import *  # noqa: F401,F403
from .report import *  # noqa: F401,F403
from .api import *  # noqa: F401,F403
from . import api, blanket, exact, generic, krr, published, report, variation

__all__ = [*generic.__all__, *blanket.__all__, *variation.__all__, *published.__all__, *exact.__all__, *krr.__all__,
           *report.__all__, *api.__all__]
