"""The mixing coefficients as cvxpy linear programs with certified primal/dual brackets.

Importing this module imports cvxpy.

The public namespace ``chainamp.lp``; the code lives in :mod:`chainamp.mixing.lp`.
"""

from .mixing.lp import *  # noqa: F401,F403
from .mixing.lp import __all__  # noqa: F401
