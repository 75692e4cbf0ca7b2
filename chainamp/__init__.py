"""chainamp: certified privacy amplification by stochastic post-processing.

A differentially private mechanism M followed by a Markov operator K: chainamp
measures how fast K forgets its input (Definition 1 of Balle, Barthe, Gaboardi
and Geumlek 2019) and certifies (epsilon', delta') for K o M.

The package is layered; each folder imports only from the folders above it in
this list (see docs/architecture.md):

* ``errors`` and ``_numerics``: exceptions, tolerances, outward rounding, validation;
* ``operators``: Markov operators, chain analysis, the error model of products;
* ``mixing``: the coefficients of Definition 1 (exact, by pair scans, and as LPs);
* ``privacy``: divergences, privacy profiles, the mechanism catalogue;
* ``amplification``: Theorem 1, ``amplify``, steps and calibration;
* ``renyi`` (Section 4) and ``diffusion`` (Section 5);
* ``audit``: pipeline files, verdicts, reports, plots and the command line.

Top-level names are re-exported from those folders; ``chainamp.mechanisms``,
``chainamp.lp``, ``chainamp.renyi``, ``chainamp.diffusion``, ``chainamp.io``,
``chainamp.plot``, ``chainamp.report`` and ``chainamp.cli`` are namespaces.
"""

from importlib import import_module as _import_module

from . import errors
from .errors import *  # noqa: F401,F403
from .operators.markov import *  # noqa: F401,F403
from .operators.chain import *  # noqa: F401,F403
from .privacy.divergences import *  # noqa: F401,F403
from .mixing.coefficients import *  # noqa: F401,F403
from .privacy.profiles import *  # noqa: F401,F403
from .amplification.bounds import *  # noqa: F401,F403
from .amplification.amplifier import *  # noqa: F401,F403
from .amplification.steps import *  # noqa: F401,F403
from .amplification.calibration import *  # noqa: F401,F403
from . import lp, mechanisms, renyi, diffusion  # noqa: F401,E402

__version__ = "0.1.0.dev0"

#: the modules whose ``__all__`` makes up the top-level namespace
_STAR_MODULES = ("errors", "operators.markov", "operators.chain", "privacy.divergences", "mixing.coefficients",
                 "privacy.profiles", "amplification.bounds", "amplification.amplifier", "amplification.steps",
                 "amplification.calibration")
__all__ = sorted(
    {"errors", "lp", "mechanisms", "renyi", "diffusion", "__version__"}
    | {name for mod in _STAR_MODULES for name in _import_module(f"{__name__}.{mod}").__all__}
)
