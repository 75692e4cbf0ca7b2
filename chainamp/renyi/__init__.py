"""Renyi differential privacy: closed-form divergences, RDP accounting and the
coupling bounds of Section 4 of Balle, Barthe, Gaboardi and Geumlek (2019).

* :mod:`.core`: closed forms (:func:`gaussian_renyi_divergence`,
  :func:`laplace_renyi_divergence` through :func:`g_alpha`, Mironov 2017,
  Corollary 2), accounting (:func:`rdp_to_dp`, :class:`RDPCurve`) and Theorem 2
  on finite spaces (:func:`coupling_bound`).
* :mod:`.examples`: Examples 1-3 (iterated Gaussian, iterated Laplace with the
  ``Lap2`` density of eq. (6) and Lemma 3, Lipschitz Gaussian kernels).
* :mod:`.sgd`: Theorem 4, Theorem 5 and Algorithm 1 (noisy projected SGD).

Every number that feeds a privacy statement is rounded toward the larger (safe) side.
"""

from .core import *  # noqa: F401,F403
from .examples import *  # noqa: F401,F403
from .sgd import *  # noqa: F401,F403
from . import core, examples, sgd

__all__ = list(core.__all__) + list(examples.__all__) + list(sgd.__all__)
