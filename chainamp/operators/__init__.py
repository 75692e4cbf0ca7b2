"""Markov operators: the finite stochastic matrices K that post-process a mechanism's output.

* :mod:`.markov`: :class:`MarkovOperator` (dense or CSR, labelled, immutable), its
  constructors (graphs, random walks) and :func:`kron`.
* :mod:`.chain`: the chain's structure (communicating, recurrent and transient classes, periods).
* :mod:`.stationary`: stationary distributions, one per recurrent class (GTH, sparse solvers).
* :mod:`.spectral`: the spectral gap and relaxation time (floating-point estimates).
* :mod:`.analysis`: :func:`analyze_chain`, the summary of all of the above.
* :mod:`.products`: the entrywise error model of products chainamp forms itself
  (lists of operators, ``K ** t``, ``M K``), which every certified bound widens by.
"""

from .markov import *  # noqa: F401,F403
from .chain import *  # noqa: F401,F403
from .stationary import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403
from .analysis import *  # noqa: F401,F403
from . import analysis, chain, markov, spectral, stationary

#: what ``chainamp`` re-exports at the top level
__all__ = (list(markov.__all__) + list(chain.__all__) + list(stationary.__all__) + list(spectral.__all__)
           + list(analysis.__all__))

# Public to the layers above but not part of the top-level namespace: matrix validation (mixing.lp), the
# coercion of arrays and nested lists at the public boundaries (as_operator)
# and the entrywise error model of products chainamp forms (amplification widens every bound by it).
from .markov import as_matrix, as_operator, check_row_sums  # noqa: E402
from .products import EXACT, ProductError, multiply, operator_error, smallest_positive  # noqa: E402
