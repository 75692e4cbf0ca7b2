"""Audits as people run them: pipeline and matrix files, verdicts on claims, reports,
plots and the ``chainamp`` command line.

* :mod:`.pipeline`: the ``chainamp-pipeline/1`` schema; :mod:`.catalogue`: the catalogue of mechanisms,
  profiles, steps and graphs a file may name; :mod:`.fields`: field readers and matrix files.
* :mod:`.io`: loading files and :func:`audit` with its verdicts (public as :mod:`chainamp.io`);
  :mod:`.over_time`: epsilon' after T reports of a file with ``reports`` (memoized or fresh).
* :mod:`.report` and :mod:`.plot` (with :mod:`.plot_profiles` and :mod:`.figures`): standalone
  HTML/Markdown reports and matplotlib figures; :mod:`.plot_reports`: epsilon' against T.
* :mod:`.sweeps`: :func:`sweep`, any computation over a parameter grid as a table (any executor).
* :mod:`.cli`: the command line (``chainamp audit|coefficients|amplify|design|demo``), with
  :mod:`.cli_design` (``design``) and :mod:`.cli_progress` (``--memory-limit``, progress, exit code 2 on memory).

The top layer: nothing below imports from here (a report's ``.plot()`` imports
:mod:`.plot` inside the method).
"""

from .io import *  # noqa: F401,F403
from .report import *  # noqa: F401,F403
from .plot import *  # noqa: F401,F403
from .over_time import *  # noqa: F401,F403
from .plot_reports import *  # noqa: F401,F403
from .sweeps import *  # noqa: F401,F403
from . import io, over_time, plot, plot_reports, report, sweeps

__all__ = sorted(set(io.__all__) | set(report.__all__) | set(plot.__all__) | set(over_time.__all__)
                 | set(plot_reports.__all__) | set(sweeps.__all__))
