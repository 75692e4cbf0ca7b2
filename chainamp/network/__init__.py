"""Pairwise network privacy of decentralized protocols on graphs: gossip averaging with local noise.

* :mod:`.gossip`: :func:`gossip_privacy`, the exact ``mu_{u->v}`` of every pair (Gaussian mechanisms).
* :mod:`.projection`: the per-observer projection and its certified rounding; :mod:`.modular` the exact
  rank proofs by modular arithmetic it relies on.
* :mod:`.result`: :class:`NetworkPrivacy`, the frozen, self-printing result.
* :mod:`.inputs`: gossip matrices of graphs (:func:`gossip_matrix`), schedules and argument checks.
* :mod:`.published`: the published per-message accounting (comparison rows, never certificates).
"""

from .inputs import *  # noqa: F401,F403
from .result import *  # noqa: F401,F403
from .gossip import *  # noqa: F401,F403
from .published import *  # noqa: F401,F403
from . import gossip, inputs, published, result

__all__ = sorted(set(inputs.__all__) | set(result.__all__) | set(gossip.__all__) | set(published.__all__))
