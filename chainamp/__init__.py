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
* ``accounting`` (composition over many reports, memoized reports, dp-accounting and OpenDP),
  ``utility`` (frequency estimation through the chain, privacy-utility frontiers), ``renyi``
  (Section 4) and ``diffusion`` (Section 5);
* ``design``: the least-loss post-processing for a target, by linear programming;
* ``audit``: pipeline files, verdicts, reports, plots and the command line.

Top-level names are re-exported from those folders; ``chainamp.mechanisms``,
``chainamp.lp``, ``chainamp.renyi``, ``chainamp.diffusion``, ``chainamp.accounting``, ``chainamp.utility``,
``chainamp.design``, ``chainamp.io``,
``chainamp.plot``, ``chainamp.report`` and ``chainamp.cli`` are namespaces.
"""

from importlib import import_module as _import_module

from . import errors
from .errors import *  # noqa: F401,F403
from .operators import *  # noqa: F401,F403
from .mixing import *  # noqa: F401,F403
from .privacy import *  # noqa: F401,F403
from .amplification import *  # noqa: F401,F403
from . import amplification, mechanisms, mixing, operators, privacy, renyi, diffusion  # noqa: F401,E402
from . import accounting, utility, design, network  # noqa: F401,E402
from .network import NetworkPrivacy, gossip_privacy  # noqa: F401,E402
from .accounting import amplify_reports, compose  # noqa: F401,E402
from ._numerics import resource_limits  # noqa: F401,E402
from . import shuffle  # noqa: F401,E402
from .shuffle import ShuffleReport, amplify_shuffled  # noqa: F401,E402


def __getattr__(name: str):
    """``chainamp.lp`` is imported on first use: it imports cvxpy, which costs about half a second
    that the exact paths and every CLI call without ``--method lp`` should not pay."""
    if name == "lp":
        return _import_module(f"{__name__}.lp")
    if name == "sweep":  # the audit layer: imported on first use, like lp
        return _import_module(f"{__name__}.audit").sweep
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__version__ = "0.1.0.dev0"

__all__ = sorted(
    {"errors", "lp", "mechanisms", "renyi", "diffusion", "accounting", "utility", "design", "__version__",
     "amplify_reports", "compose", "resource_limits", "sweep", "network", "gossip_privacy",
     "NetworkPrivacy", "shuffle", "amplify_shuffled", "ShuffleReport"}
    | set(errors.__all__) | set(operators.__all__) | set(mixing.__all__) | set(privacy.__all__)
    | set(amplification.__all__)
)
