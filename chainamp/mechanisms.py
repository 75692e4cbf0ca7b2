"""The catalogue of local-DP mechanisms as Markov operators (randomized response, RAPPOR,
unary encodings, the exponential mechanism).

The public namespace ``chainamp.mechanisms``; the code lives in :mod:`chainamp.privacy.mechanisms`.
"""

from .privacy.mechanisms import *  # noqa: F401,F403
from .privacy.mechanisms import __all__  # noqa: F401
