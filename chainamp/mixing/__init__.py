"""How fast a Markov operator forgets its input: the coefficients of Definition 1 of
Balle, Barthe, Gaboardi and Geumlek (2019), with witnesses.

* :mod:`.coefficients`: Dobrushin, (gamma, eps)-Dobrushin, Doeblin and ultra-mixing
  coefficients (Definition 1) and their result types.
* :mod:`.guarantees`: what they imply: Lemma 9's conditions, the local-DP level of K
  and the mixing time.
* :mod:`.pairwise`: the streamed pair-scan kernels behind them (row blocks, the
  preparation shared by every eps, exact evaluation of pairs).
* :mod:`.pruning`: the certified pruning search for the maximising pair of large
  operators (L1-form candidates, active-term enumeration, bound reuse across eps).
* :mod:`.lp`: the same coefficients as cvxpy linear programs with certified
  primal/dual brackets (cvxpy is imported only when this module is), with its solver
  plumbing in :mod:`.lp_solver` and the hockey-stick LPs in :mod:`.lp_hockey`.
"""

from .coefficients import *  # noqa: F401,F403
from .guarantees import *  # noqa: F401,F403
from . import coefficients, guarantees

__all__ = [*coefficients.__all__, *guarantees.__all__]
