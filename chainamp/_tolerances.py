"""Named numerical tolerances, kept in one place.

Every public function that uses one of these takes it as a keyword argument of
the same (lower-case) name, so a caller can override it per call. None of them
is used to make a bound *smaller*: tolerances only decide whether an input is
accepted (``row_sum_atol``) or whether two computations agree (``lp_atol``).
"""

from __future__ import annotations

__all__ = ["ROW_SUM_ATOL", "DIST_SUM_ATOL", "LP_ATOL", "LP_FEAS_ATOL", "UNIT_ROUNDOFF", "BISECTION_RTOL",
           "BISECTION_ATOL", "STATIONARY_RESIDUAL_ATOL", "QUAD_EPSREL"]

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
