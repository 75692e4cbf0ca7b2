"""chainamp: certified privacy amplification by stochastic post-processing.

A differentially private mechanism M followed by a Markov operator K: chainamp
measures how fast K forgets its input (Definition 1 of Balle, Barthe, Gaboardi
and Geumlek 2019) and certifies (epsilon', delta') for K o M.
"""

from . import errors
from .errors import *  # noqa: F401,F403
from .operators import *  # noqa: F401,F403

__version__ = "0.1.0.dev0"


__all__ = ["errors", "__version__"] + errors.__all__ + operators.__all__  # noqa: F405
