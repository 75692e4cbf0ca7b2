"""The catalogue of local-DP mechanisms as Markov operators (randomized response, RAPPOR,
unary encodings, the exponential mechanism), and the input adapters for pure-ldp and multi-freq-ldpy.

The public namespace ``chainamp.mechanisms``; the code lives in :mod:`chainamp.privacy.mechanisms`.
"""

from .privacy.mechanisms import *  # noqa: F401,F403
from .privacy.adapters import *  # noqa: F401,F403
from .privacy.encodings import *  # noqa: F401,F403
from .privacy import adapters as _adapters, encodings as _encodings, mechanisms as _mechanisms

__all__ = list(_mechanisms.__all__) + list(_adapters.__all__) + list(_encodings.__all__)
