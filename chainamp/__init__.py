"""chainamp: certified privacy amplification by stochastic post-processing.

A differentially private mechanism M followed by a Markov operator K: chainamp
measures how fast K forgets its input (Definition 1 of Balle, Barthe, Gaboardi
and Geumlek 2019) and certifies (epsilon', delta') for K o M.

Top-level names come from the layered modules below (each declares ``__all__``);
``chainamp.mechanisms``, ``chainamp.renyi``, ``chainamp.diffusion`` and
``chainamp.lp`` are used as namespaces.
"""

from . import errors
from .errors import *  # noqa: F401,F403
from .operators import *  # noqa: F401,F403
from .divergences import *  # noqa: F401,F403
from .chain import *  # noqa: F401,F403
from .mixing import *  # noqa: F401,F403
from .profiles import *  # noqa: F401,F403
from .bounds import *  # noqa: F401,F403
from .amplify import *  # noqa: F401,F403
from . import lp, mechanisms, renyi, diffusion  # noqa: F401,E402
from . import operators as _operators, divergences as _divergences, chain as _chain  # noqa: E402
from . import mixing as _mixing, profiles as _profiles, bounds as _bounds, amplify as _amplify  # noqa: E402

__version__ = "0.1.0.dev0"

__all__ = sorted(
    {"errors", "lp", "mechanisms", "renyi", "diffusion", "__version__"}
    | set(errors.__all__)
    | set(_operators.__all__)
    | set(_divergences.__all__)
    | set(_chain.__all__)
    | set(_mixing.__all__)
    | set(_profiles.__all__)
    | set(_bounds.__all__)
    | set(_amplify.__all__)
)
