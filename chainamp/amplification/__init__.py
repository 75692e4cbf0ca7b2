"""Privacy amplification by post-processing: Theorem 1 of Balle, Barthe, Gaboardi and
Geumlek (2019) and everything built on it.

* :mod:`.bounds`: one pure function per clause of Theorem 1, the LDP correspondence
  and the tight bound over black-box inputs.
* :mod:`.amplifier`: :func:`amplify`; :mod:`.inputs`: the input mechanism M and the
  composed operator K as it sees them; :mod:`.sources`: the families of certified pairs it
  queries; :mod:`.report`: its :class:`AmplificationReport`.
* :mod:`.steps`: epsilon'(t) over repeated steps; :mod:`.calibration`: the largest
  input epsilon that meets a target.
"""

from .bounds import *  # noqa: F401,F403
from .inputs import *  # noqa: F401,F403
from .sources import *  # noqa: F401,F403
from .report import *  # noqa: F401,F403
from .amplifier import *  # noqa: F401,F403
from .steps import *  # noqa: F401,F403
from .calibration import *  # noqa: F401,F403
from . import amplifier, bounds, calibration, inputs, report, sources, steps

__all__ = (list(bounds.__all__) + list(amplifier.__all__) + list(report.__all__) + list(inputs.__all__)
           + list(sources.__all__) + list(steps.__all__) + list(calibration.__all__))
