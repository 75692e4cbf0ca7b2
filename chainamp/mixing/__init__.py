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

The LP solver plumbing other folders' linear programs share (:mod:`chainamp.design`) is
reachable here as ``LP_SOLVERS``, ``DEFAULT_LP_SOLVER``, ``check_lp_solver``,
``check_lp_verbose``, ``solve_lp`` and ``lp_values``: :mod:`.lp_solver` (and with it cvxpy)
is imported on the first access of one of them, so importing chainamp does not import
cvxpy. They are not in ``__all__``, which a star import would otherwise resolve.
"""

from .coefficients import *  # noqa: F401,F403
from .guarantees import *  # noqa: F401,F403
from . import coefficients, guarantees

__all__ = [*coefficients.__all__, *guarantees.__all__]

#: names of :mod:`.lp_solver` served on first access (module ``__getattr__``, PEP 562)
_LP_SOLVER_NAMES = frozenset({"LP_SOLVERS", "DEFAULT_LP_SOLVER", "check_lp_solver", "check_lp_verbose", "solve_lp",
                              "lp_values"})


def __getattr__(name: str):
    if name in _LP_SOLVER_NAMES:
        from . import lp_solver  # imports cvxpy: only when an LP is about to be solved

        return getattr(lp_solver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
