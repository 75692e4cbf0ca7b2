"""Privacy amplification by post-processing: Theorem 1 of Balle, Barthe, Gaboardi and
Geumlek (2019) and everything built on it.

* :mod:`.bounds`: one pure function per clause of Theorem 1, the LDP correspondence
  and the tight bound over black-box inputs.
* :mod:`.amplifier`: :func:`amplify` and its :class:`AmplificationReport`.
* :mod:`.steps`: epsilon'(t) over repeated steps; :mod:`.calibration`: the largest
  input epsilon that meets a target.
"""

from .bounds import *  # noqa: F401,F403
from .amplifier import *  # noqa: F401,F403
from .steps import *  # noqa: F401,F403
from .calibration import *  # noqa: F401,F403
from . import amplifier, bounds, calibration, steps

__all__ = sorted(set(bounds.__all__) | set(amplifier.__all__) | set(steps.__all__) | set(calibration.__all__))
