"""Privacy of the input mechanism M: divergences between output distributions,
privacy profiles delta(eps), and the catalogue of local-DP mechanisms.

* :mod:`.divergences`: hockey-stick, total variation and Renyi divergences.
* :mod:`.profiles`: :class:`DP` points, :class:`PrivacyProfile` (Laplace, Gaussian,
  k-RR, any curve) and the exact profile of a finite mechanism.
* :mod:`.mechanisms`: randomized response, RAPPOR, unary encodings, the exponential
  mechanism, as Markov operators (public as :mod:`chainamp.mechanisms`).
"""

from .divergences import *  # noqa: F401,F403
from .profiles import *  # noqa: F401,F403
from . import divergences, mechanisms, profiles

__all__ = sorted(set(divergences.__all__) | set(profiles.__all__) | {"mechanisms"})
