"""The ``chainamp`` command line.

The public namespace ``chainamp.cli``; the code lives in :mod:`chainamp.audit.cli`.
"""

from .audit.cli import *  # noqa: F401,F403
from .audit.cli import __all__  # noqa: F401
