"""chainamp: certified privacy amplification by stochastic post-processing.

A differentially private mechanism M followed by a Markov operator K: chainamp
measures how fast K forgets its input (Definition 1 of Balle, Barthe, Gaboardi
and Geumlek 2019) and certifies (epsilon', delta') for K o M.

Top-level names come from the layered modules below (each declares ``__all__``);
``chainamp.mechanisms``, ``chainamp.renyi``, ``chainamp.diffusion`` and
``chainamp.lp`` are used as namespaces.
"""

from importlib import import_module as _import_module

from . import errors
from .errors import *  # noqa: F401,F403
from .operators import *  # noqa: F401,F403
from .divergences import *  # noqa: F401,F403
from .chain import *  # noqa: F401,F403
from .mixing import *  # noqa: F401,F403
from .profiles import *  # noqa: F401,F403
from .bounds import *  # noqa: F401,F403
from .amplify import *  # noqa: F401,F403
from .steps import *  # noqa: F401,F403
from .calibration import *  # noqa: F401,F403
from . import lp, mechanisms, renyi, diffusion  # noqa: F401,E402

__version__ = "0.1.0.dev0"

_STAR_MODULES = ("errors", "operators", "divergences", "chain", "mixing", "profiles", "bounds", "amplify",
                 "steps", "calibration")
__all__ = sorted(
    {"errors", "lp", "mechanisms", "renyi", "diffusion", "__version__"}
    | {name for mod in _STAR_MODULES for name in _import_module(f"{__name__}.{mod}").__all__}
)
