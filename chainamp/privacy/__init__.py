"""Privacy of the input mechanism M: divergences between output distributions,
privacy profiles delta(eps), and the catalogue of local-DP mechanisms.

* :mod:`.divergences`: hockey-stick, total variation and Renyi divergences.
* :mod:`.profiles`: :class:`DP` points and :class:`PrivacyProfile` (Laplace, Gaussian,
  k-RR, any curve), with the closed forms of its families in :mod:`._families` and its
  ``epsilon(delta)`` search in :mod:`._inversion`.
* :mod:`.neighbors`: the neighbour relation over input labels (:func:`neighbor_pairs`).
* :mod:`.finite`: :func:`privacy_profile`, the exact profile of a finite mechanism: a structured one per
  orbit of pairs (:mod:`.structured`), any other by :mod:`.exact` (:class:`ExactProfile`).
* :mod:`.dominating`: :class:`DominatingPair`, one pair of distributions whose hockey-stick curve
  bounds a whole profile at every real eps (what composition needs); exact ROC hulls in :mod:`._roc`.
* :mod:`.mechanisms`: randomized response, RAPPOR, unary encodings, the exponential
  mechanism, as Markov operators (public as :mod:`chainamp.mechanisms`).
"""

from .divergences import *  # noqa: F401,F403
from .profiles import *  # noqa: F401,F403
from .neighbors import *  # noqa: F401,F403
from .exact import *  # noqa: F401,F403
from .finite import *  # noqa: F401,F403
from .dominating import *  # noqa: F401,F403
from . import divergences, dominating, exact, finite, mechanisms, neighbors, profiles
from .profiles import dp_points_of  # noqa: F401  (for amplification/ and accounting/; not in __all__)

__all__ = (list(divergences.__all__) + list(profiles.__all__) + list(neighbors.__all__) + list(exact.__all__)
           + list(finite.__all__) + list(dominating.__all__))
