"""The base layer: tolerances, outward rounding in log space, argument validation,
number formatting, progress bars, memory limits and blockwise executors.

Private to chainamp (the folder name starts with an underscore), but every other
layer imports from here, so the names below are the folder's public surface:
import them from ``chainamp._numerics``, never from the modules inside.
Nothing here imports any other chainamp folder except :mod:`chainamp.errors`.
"""

from .tolerances import *  # noqa: F401,F403
from .logmath import *  # noqa: F401,F403
from .validation import *  # noqa: F401,F403
from .formatting import *  # noqa: F401,F403
from .progress import *  # noqa: F401,F403
from .resources import *  # noqa: F401,F403
from .executors import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .threads import *  # noqa: F401,F403
from .jit import *  # noqa: F401,F403
from .highs import *  # noqa: F401,F403
from . import executors, formatting, highs, jit, logmath, progress, resources, special, threads, tolerances, validation

__all__ = sorted(set(tolerances.__all__) | set(logmath.__all__) | set(validation.__all__)
                 | set(formatting.__all__) | set(progress.__all__) | set(resources.__all__)
           | set(executors.__all__) | set(special.__all__) | set(threads.__all__) | set(jit.__all__)
           | set(highs.__all__))
