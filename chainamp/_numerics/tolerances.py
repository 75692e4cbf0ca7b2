"""Named numerical tolerances, kept in one place.

Every public function that uses one of these takes it as a keyword argument of
the same (lower-case) name, so a caller can override it per call. None of them
is used to make a bound *smaller*: tolerances only decide whether an input is
accepted (``row_sum_atol``) or whether two computations agree (``lp_atol``).
The floating-point error-model constants (``UNIT_ROUNDOFF``, ``SMALLEST_SUBNORMAL``)
and the internal budgets of the all-pairs search (``TIE_*``, ``L1_FORM_MAX_ERR``) are
not overridable: they are assumptions of the rounding proofs, not user choices.
"""

from __future__ import annotations

__all__ = ["ROW_SUM_ATOL", "DIST_SUM_ATOL", "LP_ATOL", "LP_FEAS_ATOL", "UNIT_ROUNDOFF", "BISECTION_RTOL",
           "BISECTION_ATOL", "STATIONARY_RESIDUAL_ATOL", "QUAD_EPSREL",
           "SMALLEST_SUBNORMAL", "TIE_BUDGET", "TIE_ERR", "L1_FORM_MAX_ERR", "REFUTE_RTOL", "REFUTE_ATOL",
           "ESTIMATOR_RANK_RTOL", "SUPPORT_RATE_ATOL", "IBU_GAP_TOL",
           "DESIGN_MAX_REPAIR", "DISPLAY_ZERO_ATOL", "PLD_DISCRETIZATION", "PLD_TAIL_MASS",
           "DOMINATING_GRID_POINTS", "DOMINATING_DELTA_FLOOR",
           "DESIGN_MAX_LP_NONZEROS"]

#: A row of a Markov operator is accepted when ``|sum(row) - 1| <= ROW_SUM_ATOL``.
ROW_SUM_ATOL = 1e-9
#: A probability vector (or coupling) is accepted when its total is within this of 1.
DIST_SUM_ATOL = 1e-9
#: The LP and closed-form paths of a mixing coefficient must agree to this.
LP_ATOL = 1e-8
#: Primal feasibility accepted when checking a solver's solution in numpy.
LP_FEAS_ATOL = 1e-7
#: Unit roundoff of IEEE double precision, 2**-53.
UNIT_ROUNDOFF = 2.0**-53
#: Searches over epsilon stop when the certified bracket is this narrow (relative / absolute);
#: the reported value is always the bracket's upper (certified) end.
BISECTION_RTOL = 1e-7
BISECTION_ATOL = 1e-12
#: A stationary distribution from an iterative or sparse method is accepted when ||pi K - pi||_1 <= this.
STATIONARY_RESIDUAL_ATOL = 1e-12
#: Relative accuracy asked of scipy.integrate.quad where a quadrature reports a guarantee (the
#: reported value is then padded by max(quad's error estimate, QUAD_EPSREL * value)).
QUAD_EPSREL = 1e-10
#: Smallest positive (subnormal) double, 2**-1074: the absolute error of a product that underflows.
SMALLEST_SUBNORMAL = 2.0**-1074
#: All-pairs Dobrushin search: when the L1-form error bound is at most TIE_ERR and more than
#: TIE_BUDGET candidate pairs tie, only TIE_BUDGET are re-evaluated exactly and the rest are
#: covered by ``max(v) + err`` (the result may then exceed the exact value by up to ``2 err``; never below).
TIE_BUDGET = 4096
TIE_ERR = 1e-10
#: Above this cancellation bound of the L1 form of ``D_{e^eps}`` (large eps), the active terms
#: are enumerated instead (no cancellation); it only chooses the path, each path being sound.
L1_FORM_MAX_ERR = 1e-7
#: io.audit reports a claim refuted (not merely uncertified) only when the exact value exceeds it by more
#: than ``claim * REFUTE_RTOL + REFUTE_ATOL``: the exact profile is itself rounded up and searched to a
#: bracket of relative width 1e-7 (BISECTION_RTOL), so a smaller excess could be an artefact of that rounding.
REFUTE_RTOL = 1e-6
REFUTE_ATOL = 1e-12
#: utility.FrequencyEstimator: a channel's singular value below ESTIMATOR_RANK_RTOL times the largest one
#: counts as zero when deciding whether the channel can be inverted (its rank); a support bit whose
#: rates p_v, q_v differ by no more than this carries no information about its input.
ESTIMATOR_RANK_RTOL = 1e-10
#: utility.FrequencyEstimator(statistic="support"): P[bit v = 1 | input x] must agree within this for
#: every input x != v (a pure protocol in the sense of Wang et al. 2017).
SUPPORT_RATE_ATOL = 1e-9
#: utility.FrequencyEstimator(method="ibu") stops when the Frank-Wolfe gap, an upper bound on how far
#: the mean log-likelihood per report is below its maximum, is at most this.
IBU_GAP_TOL = 1e-10
#: design: the largest weight ``lam`` of a constant operator that ``chainamp.design`` may mix into an LP
#: solution, ``(1 - lam) K + lam 1 u^T``, so that chainamp's own rounded-up certificate meets the target
#: (the LP optimum meets it exactly; the certificate's rounding can miss it by a few ulps, or by the
#: 1e-7 bracket of an epsilon search). Past it the design raises instead of returning a far-from-optimal K.
DESIGN_MAX_REPAIR = 1e-3
#: Reports and plots (presentation only, never a certified number): a delta' in (0, DISPLAY_ZERO_ATOL] -- at
#: the level of float rounding of probabilities of size 1, e.g. 9e-16 left by ``p - e^eps q`` where it is
#: exactly 0 -- prints as "≈ 0" and is drawn as 0 rather than stretching a log axis to 1e-15 (capped at
#: 1e-3 times a positive target delta', so that a delta' the user asked about is never hidden).
DISPLAY_ZERO_ATOL = 1e-12

#: Composition (``chainamp.compose``, ``PrivacyProfile.to_dp_accounting``): the grid step of the privacy losses
#: handed to dp-accounting. Losses are split between the two neighbouring grid points (connect-the-dots,
#: Doroshenko et al. 2022), which is pessimistic whatever the step: a coarser grid is faster and only looser.
PLD_DISCRETIZATION = 1e-3
#: Composition: the mass dp-accounting may cut from the tails of a composed privacy loss distribution; it is
#: added to the mass at infinite loss (so delta' grows by at most this much per composition, never shrinks).
PLD_TAIL_MASS = 1e-15
#: PrivacyProfile.dominating_pair for a curve known only through delta(eps) (Laplace, Gaussian, a callable):
#: the "connect the dots" grid has this many points (more points: a tighter pair, never an unsound one) ...
DOMINATING_GRID_POINTS = 512
#: ... evenly spaced up to the profile's pure epsilon, or where delta falls to DOMINATING_DELTA_FLOOR when it
#: never reaches 0 (the pair then keeps that delta as its mass of infinite privacy loss: sound).
DOMINATING_DELTA_FLOOR = 1e-30
#: design: the largest LP a design builds, counted as nonzeros of its constraint matrix (pairs x outputs of K x
#: outputs of M for optimal_post_processing, 4 x pairs x n for the mixing designs). cvxpy and HiGHS hold about a
#: few hundred bytes per nonzero, so 1e7 is a few GB on this kind of machine; measured: a 34-ary RR after
#: 34-ary RR (1.3e6 nonzeros) takes ~9 s, a 77-ary one (3.5e7) did not finish in 5 minutes.
DESIGN_MAX_LP_NONZEROS = 10_000_000
#: design: optimal_mixing_operator (Dobrushin, a loss not invariant under relabelling) returns the Doeblin closed form
#: as the optimum once a certified lower bound on every K's loss is within this fraction of its loss (the bound and
#: the gap are reported either way; it decides when to stop solving, never what is certified).
DESIGN_GAP_RTOL = 1e-7
__all__.append("DESIGN_GAP_RTOL")

#: Relative error allowed for scipy's binomial pmf and survival function where a shuffled bound trusts
#: them (chainamp.shuffle): every such value is pushed by this factor toward a larger delta.
SHUFFLE_SPECIAL_RTOL = 1e-6
__all__.append("SHUFFLE_SPECIAL_RTOL")

#: Closed-form terms (pairs of blanket size and count) per epsilon that the blanket's exact expectation may take for
#: randomized response (chainamp.shuffle.blanket, ``max_terms``) before it falls back to the lattice ladder. The
#: ladder is a sound upper bound but loose where eps0 is large: at n = 1000, 10-RR at eps0 = 5, it certified 4.760 at
#: delta = 1e-6 where the exact expectation (34,669 terms) gives 3.570; at n = 1e4, 1000-RR at eps0 = 4, 0.08636
#: against 0.08452 (86,000 terms). With its tables read once per pair, a certified eps at this budget took 0.45-0.77 s
#: (the import included) and at most 146 MB here at load 0.3; 1e6 terms took 1.5 s and 237 MB for a 0.24 % gain.
BLANKET_MAX_TERMS = 250_000
__all__.append("BLANKET_MAX_TERMS")
