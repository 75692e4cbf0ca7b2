"""Optimal design: the least-loss operator K under a privacy or mixing target, as a linear program.

What the privacy costs: for a finite mechanism M, the post-processing K with the smallest expected loss
among those for which K o M is (epsilon, delta)-LDP, certified by :func:`chainamp.amplify`; for a
black-box input, the n-state K with the smallest loss among those whose Dobrushin or Doeblin
coefficient (Definition 1 of Balle, Barthe, Gaboardi and Geumlek 2019) is at most gamma. Each result
carries a certified lower bound on every K's loss (weak Lagrangian duality, in numpy).

* :mod:`.post_processing`: :func:`optimal_post_processing`.
* :mod:`.mixing_design`: :func:`optimal_mixing_operator`.
* :mod:`.result`: :class:`DesignResult`.
* :mod:`.symmetric`: designs invariant under relabelling (k-RR M, uniform prior, a loss with one value on the
  diagonal and one off it) in closed form, one parameter instead of an LP.
* :mod:`.duals`: the certified lower bounds; :mod:`.common`: argument checks and the sound repair.
* :mod:`.lp`: the cvxpy formulations (the only design module importing cvxpy, imported lazily).
* :mod:`.lp_compact`: the compact post-processing LP (pure epsilon over all pairs: per-output bounds of the columns
  of M K instead of one constraint per pair), solved by :mod:`.block_ipm` (an interior-point method on its
  per-output blocks, numpy only) or by Clarabel directly.
* :mod:`.lp_dobrushin`: the Dobrushin mixing LP by constraint generation (HiGHS through highspy, warm started): on
  its auxiliary entries (``formulation="cuts"``), or on whole pairs stopping once the multipliers certify the Doeblin
  closed form (``formulation="certify"``, the default for a loss not invariant under relabelling).
"""

from .result import *  # noqa: F401,F403
from .post_processing import *  # noqa: F401,F403
from .mixing_design import *  # noqa: F401,F403
from . import mixing_design, post_processing, result

__all__ = [*post_processing.__all__, *mixing_design.__all__, *result.__all__]
