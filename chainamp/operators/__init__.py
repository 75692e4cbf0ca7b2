"""Markov operators: the finite stochastic matrices K that post-process a mechanism's output.

* :mod:`.markov`: :class:`MarkovOperator` (dense or CSR, labelled, immutable), its
  constructors (graphs, random walks) and :func:`kron`.
* :mod:`.chain`: the chain's structure (communicating classes, periods), stationary
  distributions and the spectral gap.
* :mod:`.products`: the entrywise error model of products chainamp forms itself
  (lists of operators, ``K ** t``, ``M K``), which every certified bound widens by.
"""

from .markov import *  # noqa: F401,F403
from .chain import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from .markov import as_matrix, check_row_sums  # matrix validation shared with mixing.lp
from . import chain, markov, products

__all__ = sorted(set(markov.__all__) | set(chain.__all__) | set(products.__all__)
                 | {"as_matrix", "check_row_sums"})
