"""Markov operators: the finite stochastic matrices K that post-process a mechanism's output.

* :mod:`.markov`: :class:`MarkovOperator` (dense or CSR, labelled, immutable) and its
  constructors (graphs, random walks); :func:`kron` lives in :mod:`.kronecker` (it may return a
  :class:`KroneckerOperator`, a subclass, which the base class never imports).
* :mod:`.chain`: the chain's structure (communicating, recurrent and transient classes, periods).
* :mod:`.stationary`: stationary distributions, one per recurrent class (GTH, sparse solvers).
* :mod:`.spectral`: the spectral gap and relaxation time (floating-point estimates).
* :mod:`.analysis`: :func:`analyze_chain`, the summary of all of the above.
* :mod:`.products`: the entrywise error model of products chainamp forms itself
  (lists of operators, ``K ** t``, ``M K``), which every certified bound widens by.
* :mod:`.structured`: :class:`StructuredOperator`, operators known by their structure (never densified
  unless asked) and their :class:`PairOrbit` contract; :mod:`.labels` their lazy label sequences;
  :mod:`.symmetric`: :class:`SymmetricChannel` (k-ary randomized response); :mod:`.structured_products`:
  the error model of structured products and the hockey-stick widening by an entrywise error.
* :mod:`.kronecker`: :class:`KroneckerOperator`, Kronecker products kept as their factors (RAPPOR, unary
  encodings, ``kron``), with their pair types (``._kron_families``) and compressed pairs (``._kron_kernels``).
"""

from .markov import *  # noqa: F401,F403
from .chain import *  # noqa: F401,F403
from .stationary import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403
from .analysis import *  # noqa: F401,F403
from . import analysis, chain, markov, spectral, stationary

#: what ``chainamp`` re-exports at the top level
__all__ = (list(markov.__all__) + ["kron"] + list(chain.__all__) + list(stationary.__all__) + list(spectral.__all__)
           + list(analysis.__all__))

# Public to the layers above but not part of the top-level namespace: matrix validation (mixing.lp), the
# coercion of arrays and nested lists at the public boundaries (as_operator)
# and the entrywise error model of products chainamp forms (amplification widens every bound by it).
from .markov import as_matrix, as_operator, check_row_sums  # noqa: E402
from ._guards import check_chain_analysis  # noqa: E402  (the CLI sizes a chain analysis before other work)
from .labels import same_label_set  # noqa: E402  (label sets compared without listing lazy labels)
from .products import EXACT, ProductError, multiply, operator_error, smallest_positive  # noqa: E402
# Structured operators (never densified unless asked): the base class and its pair orbits, k-ary symmetric channels.
from .structured import Labels, PairOrbit, StructuredOperator  # noqa: E402
from .symmetric import SymmetricChannel  # noqa: E402
from .kronecker import KroneckerOperator, kron  # noqa: E402  (Kronecker products kept as their factors)
__all__ += ["KroneckerOperator"]
from .structured_products import hockey_shift, widen_hockey  # noqa: E402
__all__ += ["StructuredOperator", "SymmetricChannel"]  # top-level names (Labels, PairOrbit: chainamp.operators)
# Dask-backed operators (rows fetched per block) and the row reader the blockwise scans of mixing/ and privacy/
# use; dask itself is imported only when one is built.
from .dask_backed import DaskMarkovOperator, DaskRows, RowStats, dask_compute, row_source  # noqa: E402
