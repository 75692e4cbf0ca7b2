"""Shuffled local reports: certified central (eps, delta) of n users' shuffled reports.

* :mod:`.generic`: the clone bound of Feldman, McMillan and Talwar 2021 from eps0 alone, exact.
* :mod:`.blanket`: the exact expectation behind the privacy blanket of Balle, Bell, Gascon and Nissim 2019.
* :mod:`.variation`: the variation-ratio bound of Wang et al. 2024, made sound.
* :mod:`.published`: Balle et al. 2019's Hoeffding and Bennett relaxations, as published (comparisons).
"""

from .generic import *  # noqa: F401,F403
from .blanket import *  # noqa: F401,F403
from .variation import *  # noqa: F401,F403
from .published import *  # noqa: F401,F403
from . import blanket, generic, published, variation

__all__ = [*generic.__all__, *blanket.__all__, *variation.__all__, *published.__all__]
