"""Standalone HTML and Markdown reports with their plots.

The public namespace ``chainamp.report``; the code lives in :mod:`chainamp.audit.report`.
"""

from .audit.report import *  # noqa: F401,F403
from .audit.report import __all__  # noqa: F401
