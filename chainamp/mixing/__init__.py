"""How fast a Markov operator forgets its input: the coefficients of Definition 1 of
Balle, Barthe, Gaboardi and Geumlek (2019), with witnesses.

* :mod:`.coefficients`: Dobrushin, (gamma, eps)-Dobrushin, Doeblin and ultra-mixing
  coefficients, Lemma 9's conditions, the local-DP level of K and the mixing time.
* :mod:`.pairwise`: the streamed pair-scan kernels behind them (blocks of input pairs,
  certified pruning for large operators).
* :mod:`.lp`: the same coefficients as cvxpy linear programs with certified
  primal/dual brackets (cvxpy is imported only when this module is).
"""

from .coefficients import *  # noqa: F401,F403
from . import coefficients

__all__ = list(coefficients.__all__)
