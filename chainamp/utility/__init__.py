"""What the privacy costs: frequency estimation through a finite channel and privacy-utility frontiers.

* :mod:`.estimation`: :class:`FrequencyEstimator` (the unbiased least-squares inverse, the support-count
  estimator of unary encodings, the iterative Bayesian update) and its :class:`FrequencyEstimate`;
* :mod:`.tradeoff`: :func:`frontier`, the certified epsilon' of M then K(theta) beside the estimator's
  mean squared error over a family of post-processings, as a :class:`Frontier`;
* :mod:`.channels`: private helpers (the composed channel, the counts, the support statistic).

Layer 6: imports from ``amplification/`` and below.
"""

from .estimation import *  # noqa: F401,F403
from .estimation import __all__ as _estimation_all
from .tradeoff import *  # noqa: F401,F403
from .tradeoff import __all__ as _tradeoff_all

__all__ = list(_estimation_all) + list(_tradeoff_all)
