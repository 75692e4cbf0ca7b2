"""What the privacy costs: frequency estimation through a finite channel and privacy-utility frontiers.

* :mod:`.estimation`: :class:`FrequencyEstimator` (the unbiased least-squares inverse, the support-count
  estimator of unary encodings, the iterative Bayesian update) and its :class:`FrequencyEstimate`;
* :mod:`.tradeoff`: :func:`frontier`, the certified epsilon' of M then K(theta) beside the estimator's
  mean squared error over a family of post-processings, as a :class:`Frontier`;
* :mod:`.channels`: private helpers (the composed channel, the counts, the support statistic);
* :mod:`.structured_channels`: closed forms for k-RR and unary encodings; :mod:`.lowrank`: their diagonal-plus-
  low-rank covariances (:class:`StructuredCovariance`); :mod:`.ibu`: the accelerated iterative Bayesian update.

Layer 6: imports from ``amplification/`` and below.
"""

from .estimation import *  # noqa: F401,F403
from .estimation import __all__ as _estimation_all
from .tradeoff import *  # noqa: F401,F403
from .tradeoff import __all__ as _tradeoff_all
# the result of FrequencyEstimator.covariance(..., structured=True); importable, not in the pinned namespace
from .lowrank import StructuredCovariance  # noqa: F401,E402

__all__ = list(_estimation_all) + list(_tradeoff_all)
