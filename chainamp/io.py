"""Pipeline and matrix files, and :func:`audit` with its verdicts on claims.

The public namespace ``chainamp.io``; the code lives in :mod:`chainamp.audit.io`.
"""

from .audit.io import *  # noqa: F401,F403
from .audit.io import __all__  # noqa: F401
