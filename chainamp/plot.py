"""matplotlib figures of reports, steps, operators and graphs (needs ``pip install -e ".[plot]"``).

The public namespace ``chainamp.plot``; the code lives in :mod:`chainamp.audit.plot`.
"""

from .audit.plot import *  # noqa: F401,F403
from .audit.plot import __all__  # noqa: F401
