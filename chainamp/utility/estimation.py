"""Frequency estimation through any finite channel: what the privacy costs in accuracy.

n users each hold a value x in the channel's inputs, with frequencies ``f``, and send one report y drawn
from the channel ``P`` (n_in x m, rows = inputs, columns = outputs: a local randomizer M, or M followed by
post-processing). The analyst sees the output counts ``c`` and estimates ``f``.

:class:`FrequencyEstimator` offers

* ``method="unbiased"``: the least-squares inverse of the channel, ``f^ = A (c / n)`` with
  ``A = (P^T)^+`` the Moore-Penrose pseudo-inverse, so ``A P^T = I`` when P has full row rank
  (Agrawal and Srikant 2000; Kairouz, Bonawitz and Ramage 2016), with the closed-form covariance and
  mean squared error; with ``statistic="support"`` the support-count estimator of Wang, Blocki, Li and
  Jha (2017) for bit-vector outputs (unary encodings, RAPPOR-style bits);
* ``method="ibu"``: the iterative Bayesian update of Agrawal and Aggarwal (2001), the EM algorithm for the
  multinomial likelihood, whose estimate stays on the probability simplex.

:meth:`FrequencyEstimator.estimate` returns a :class:`FrequencyEstimate`.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import (ESTIMATOR_RANK_RTOL, IBU_GAP_TOL, SUPPORT_RATE_ATOL, check_choice, check_distribution,
                         check_memory, single_blas_thread,
                         check_float_array, check_int, check_positive, fmt_number, html_table,
                         text_table)
from ..errors import InvalidMechanismError, InvalidParameterError, ResourceLimitError
from ..operators import MarkovOperator
from . import lowrank as lr
from .channels import bit_matrix, compose_channel, counts_vector, dense_covariance, support_rates
from .ibu import dense_gradient, run_ibu
from .lowrank import StructuredCovariance
from .structured_channels import model_of

__all__ = ["FrequencyEstimator", "FrequencyEstimate"]

#: Default budget of EM updates for ``method="ibu"`` (the estimate reports whether it converged before).
IBU_MAX_ITERATIONS = 10_000

_METHODS = ("unbiased", "ibu")
_STATISTICS = ("counts", "support")
_POPULATIONS = ("sampled", "fixed")


@dataclass(frozen=True, eq=False)
class FrequencyEstimate:
    """Estimated input frequencies from observed reports (the result of :meth:`FrequencyEstimator.estimate`).

    Attributes
    ----------
    frequencies : numpy.ndarray
        One estimate per input, in ``inputs`` order (read-only). For ``method="unbiased"`` an entry may be
        negative or exceed 1 (the estimator is unbiased, not constrained); for ``"ibu"`` it is a
        probability vector.
    inputs : tuple
        The channel's input labels.
    n : float
        The number of reports the estimate is based on.
    method, statistic : str
        As given to the estimator.
    iterations : int
        EM updates performed (0 for ``"unbiased"``, a closed form).
    converged : bool
        ``"ibu"``: the likelihood gap reached the tolerance within the iteration budget (always True for
        ``"unbiased"``).
    likelihood_gap : float or None
        ``"ibu"``: an upper bound on how far the mean log-likelihood per report lies below its maximum over
        the simplex (the Frank-Wolfe gap; see :class:`FrequencyEstimator`). None for ``"unbiased"``.
    log_likelihood : float or None
        ``"ibu"``: ``sum_y c_y log pi_y`` at the estimate.
    """

    frequencies: np.ndarray
    inputs: tuple
    n: float
    method: str
    statistic: str = "counts"
    iterations: int = 0
    converged: bool = True
    likelihood_gap: float | None = None
    log_likelihood: float | None = None

    def as_dict(self) -> dict:
        """``{input label: estimated frequency}``."""
        return {lab: float(v) for lab, v in zip(self.inputs, self.frequencies)}

    def _sentence(self) -> str:
        k = len(self.inputs)
        if self.method == "ibu":
            how = (f"iterative Bayesian update, converged after {self.iterations} iterations" if self.converged
                   else f"iterative Bayesian update, NOT converged after {self.iterations} iterations: "
                        "raise max_iterations")
            return (f"Estimated frequencies of {k} values from {fmt_number(self.n)} reports ({how}; the "
                    f"log-likelihood is within {fmt_number(self.likelihood_gap)} per report of its maximum).")
        stat = " of the per-bit support counts" if self.statistic == "support" else ""
        return (f"Estimated frequencies of {k} values from {fmt_number(self.n)} reports (unbiased inverse"
                f"{stat}; an entry can fall below 0 or above 1 by chance).")

    def _rows(self):
        return [[repr(lab), float(v)] for lab, v in zip(self.inputs, self.frequencies)]

    def __str__(self) -> str:
        return self._sentence() + "\n\n" + text_table(["value", "frequency"], self._rows())

    def __repr__(self) -> str:
        return (f"<FrequencyEstimate {self.method} n={fmt_number(self.n)} "
                f"{[round(float(v), 6) for v in self.frequencies]}>")

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self._sentence())}</p>" + html_table(["value", "frequency"], self._rows())

    def to_dict(self) -> dict:
        """JSON-safe summary (labels as their ``repr``)."""
        return {"frequencies": {repr(k): v for k, v in self.as_dict().items()}, "n": self.n,
                "method": self.method, "statistic": self.statistic, "iterations": self.iterations,
                "converged": self.converged, "likelihood_gap": self.likelihood_gap,
                "log_likelihood": self.log_likelihood}


class FrequencyEstimator:
    r"""Estimate the input frequencies of a finite channel from its output counts.

    Parameters
    ----------
    channel : MarkovOperator, 2-D array, or list / tuple of them
        The mechanism or pipeline, rows = the users' values, columns = the reports; a list is applied in
        order and composed by a plain floating-point product. Estimation is not a privacy certificate, so
        the product's rounding error is not tracked (use :func:`chainamp.amplify` for certified epsilons).
    method : {"unbiased", "ibu"}
        See below.
    statistic : {"counts", "support"}, keyword-only
        What ``"unbiased"`` inverts: the counts of the full outputs, or, for outputs that are bit tuples
        (one bit per input, as :func:`chainamp.kron` labels them), the per-bit support counts.
    rank_rtol : float, keyword-only
        Singular values of P below ``rank_rtol`` times the largest count as zero (default
        ``ESTIMATOR_RANK_RTOL``).
    support_rate_atol : float, keyword-only
        ``statistic="support"``: accepted spread of ``P[bit v = 1 | x]`` over the inputs x != v (default
        ``SUPPORT_RATE_ATOL``).
    max_iterations : int, keyword-only
        ``"ibu"``: the budget of EM updates (default ``IBU_MAX_ITERATIONS``).
    ibu_gap_tol : float, keyword-only
        ``"ibu"``: stop when the likelihood gap is at most this (default ``IBU_GAP_TOL``).

    Notes
    -----
    With ``pi = P^T f`` the output distribution, the counts of n reports from users who draw their values
    i.i.d. from f are ``c ~ Multinomial(n, pi)``.

    **Unbiased (counts).** ``f^ = A (c / n)`` with ``A = (P^T)^+``. When P has full row rank (rank = number
    of inputs, decided with ``rank_rtol``) ``A P^T = I``, so ``E f^ = A pi = f`` for every f, and
    ``Cov f^ = A (diag(pi) - pi pi^T) A^T / n`` (``population="sampled"``). This is the least-squares
    solution of ``P^T f = c / n`` (Agrawal and Srikant 2000; Kairouz, Bonawitz and Ramage 2016, "Discrete
    distribution estimation under local privacy"); for k-ary randomized response (P square) it is the
    inverse ``f^_v = (c_v / n - q) / (p - q)`` of Wang, Blocki, Li and Jha (2017), "Locally differentially
    private protocols for frequency estimation", USENIX Security, Section 3. Otherwise (rank < n_in) no
    unbiased linear estimator exists and construction raises :class:`InvalidMechanismError`.

    **Fixed population.** Wang et al. (2017) fix the users' values (exactly ``n f_x`` users hold x) and
    estimate those empirical frequencies; then ``c`` is a sum of independent multinomials and
    ``Cov(c / n) = (diag(pi) - P^T diag(f) P) / n`` (``population="fixed"``), which gives their
    ``Var f^_v = q (1 - q) / (n (p - q)^2) + f_v (1 - p - q) / (n (p - q))``. Since ``A P^T = I`` the two
    differ by the sampling covariance of the values themselves (law of total variance):
    ``Cov_sampled = Cov_fixed + (diag(f) - f f^T) / n``.

    **Unbiased (support).** For a unary encoding the published estimator (Wang et al. 2017, Section 4,
    "pure" protocols) uses only the support counts ``C_v`` = number of reports whose bit v is 1:
    ``f^_v = (C_v / n - q_v) / (p_v - q_v)`` with ``p_v = P[bit v = 1 | v]`` and ``q_v = P[bit v = 1 | x]``
    for every ``x != v`` (checked within ``support_rate_atol``). It is affine in ``c / n``
    (``A = diag(1 / (p - q)) B``, ``B[v, y] = y[v]``, offset ``-q / (p - q)``) and unbiased for every
    probability vector f (it uses ``sum f = 1``), so the same covariance formulas apply with this A. The
    least-squares inverse of the full 2^k output counts is a different unbiased estimator. It sees which
    bits co-occur and often has the lower variance (MSE 9-33% lower for OUE and SUE with k = 3, 4, eps in
    [0.5, 4], uniform frequencies), but least squares is not minimum variance and it can lose (8% higher for OUE
    with k = 6, eps = 1). The support estimator is the one deployed protocols use, works from the k bit
    totals alone (:meth:`estimate_support`), and is the one the published variances describe.

    **IBU.** ``f^{t+1}_x = f^t_x sum_y (c_y / n) P[x, y] / pi^t_y`` from the uniform start: the EM
    iteration for ``max_f sum_y c_y log (P^T f)_y`` over the simplex (Agrawal and Aggarwal 2001, "On the
    design and quantification of privacy preserving data mining algorithms", PODS; Dempster, Laird and
    Rubin 1977), so its estimate is a probability vector. The mean log-likelihood ``l(f)`` is concave with
    gradient ``g = P (w / pi)``, ``w = c / n``; for any f' on the simplex ``l(f') <= l(f) + g.(f' - f)
    <= l(f) + max_x g_x - f.g``, so the Frank-Wolfe gap ``max_x g_x - f.g`` bounds how far the estimate's
    log-likelihood per report lies below the maximum; the iteration stops when it is at most
    ``ibu_gap_tol``. EM's updates are accelerated by squared extrapolation (SQUAREM, :mod:`.ibu`), which
    changes the path, not the certificate; ``iterations`` counts EM updates. When the maximum lies on the
    simplex's boundary with a vanishing gradient convergence can still be slow; the estimate then says
    ``converged=False``. IBU has no closed-form covariance: :meth:`covariance` and :meth:`mse` raise for it.

    **Structure.** k-ary randomized response (:class:`~chainamp.SymmetricChannel`) and unary encodings
    (:func:`chainamp.mechanisms.unary_encoding`: both statistics and IBU) use closed forms
    (:mod:`.structured_channels`): O(k) time and memory for the estimate, :meth:`variances` and
    :meth:`mse` at any k; :meth:`covariance` is the dense k x k array (size-checked first) or, with
    ``structured=True``, diagonal plus rank <= 4. IBU on a unary encoding reads the observed reports
    (a mapping ``{bit tuple: count}``) through ``P(v, y) = base(|y|) r(y_v)``, never a 2^k table.

    Examples
    --------
    >>> import math
    >>> from chainamp import mechanisms
    >>> est = FrequencyEstimator(mechanisms.randomized_response(3, math.log(2)))
    >>> est.estimate([50, 30, 20]).frequencies.round(6).tolist()
    [1.0, 0.2, -0.2]
    >>> round(est.mse([0.5, 0.3, 0.2], n=100), 6)
    0.1062
    >>> ibu = FrequencyEstimator(mechanisms.randomized_response(3, math.log(2)), method="ibu")
    >>> ibu.estimate([50, 30, 20]).frequencies.round(4).tolist()
    [0.875, 0.125, 0.0]
    """

    __slots__ = ("_channel", "_method", "_statistic", "_rank", "_A", "_b", "_support", "_max_iterations",
                 "_gap_tol", "_P", "_model")

    def __init__(self, channel: Any, method: str = "unbiased", *, statistic: str = "counts",
                 rank_rtol: float = ESTIMATOR_RANK_RTOL, support_rate_atol: float = SUPPORT_RATE_ATOL,
                 max_iterations: int = IBU_MAX_ITERATIONS, ibu_gap_tol: float = IBU_GAP_TOL):
        self._method = check_choice(method, "method", _METHODS)
        self._statistic = check_choice(statistic, "statistic", _STATISTICS)
        rtol = check_positive(rank_rtol, "rank_rtol")
        atol = check_positive(support_rate_atol, "support_rate_atol", strict=False)
        self._max_iterations = check_int(max_iterations, "max_iterations", minimum=1)
        self._gap_tol = check_positive(ibu_gap_tol, "ibu_gap_tol")
        if self._method == "ibu" and self._statistic != "counts":
            raise InvalidParameterError(f"statistic={statistic!r} is only for method='unbiased' (IBU inverts the "
                                        "likelihood of the full output counts)")
        self._channel = compose_channel(channel)
        self._A = self._b = self._support = self._P = None
        model = model_of(self._channel)
        if model is not None and model.kind == "unary" and not model.positive():
            model = None  # a zero likelihood somewhere: the dense path (size-checked) handles the support exactly
        if model is not None and model.kind == "symmetric" and self._statistic == "support":
            bit_matrix(self._channel)  # k-RR's outputs are values, not bit tuples
            model = None
        self._model = model
        if model is not None:
            self._init_structured(model, rtol)
            return
        try:
            P = np.array(self._channel.matrix, dtype=float)
        except ResourceLimitError as exc:
            raise ResourceLimitError(f"{exc} (FrequencyEstimator with method={self._method!r}, statistic="
                                     f"{self._statistic!r} needs the dense channel; for a unary encoding use "
                                     "statistic='support' or method='ibu')") from None
        P.flags.writeable = False
        self._P = P
        n_in = P.shape[0]
        with single_blas_thread(min(P.shape) > 256):  # LAPACK's bidiagonalisation: threads only wait (see _numerics)
            U, s, Vt = np.linalg.svd(P, full_matrices=False)  # P = U diag(s) Vt
        self._rank = int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0
        if self._method != "unbiased":
            return
        if self._statistic == "support":
            B, p, q = support_rates(self._channel, atol=atol, rank_rtol=rtol)
            A = B / (p - q)[:, None]
            b = -q / (p - q)
            self._support = (p, q)
        else:
            if self._rank < n_in:
                raise InvalidMechanismError(
                    f"the channel is not injective enough to invert: rank {self._rank} < {n_in} inputs "
                    f"(singular values below rank_rtol={rtol:g} times the largest count as zero); use "
                    "method='ibu'")
            # (P^T)^+ = U diag(1/s) Vt: with P^T = Vt^T diag(s) U^T
            A = (U / s) @ Vt
            b = np.zeros(n_in)
        A.flags.writeable = False
        b.flags.writeable = False
        self._A, self._b = A, b

    def _init_structured(self, model, rtol: float) -> None:
        """k-RR or a unary encoding: rank, estimator and offset in closed form (:mod:`.structured_channels`)."""
        k = model.k
        self._rank = model.rank(rtol)
        if self._method != "unbiased":
            return
        if model.kind == "unary" and self._statistic == "support":
            model.check_support(rtol)
            self._support = (model.p, model.q)
            b = np.full(k, -model.q / (model.p - model.q))
        else:
            if self._rank < k:
                raise InvalidMechanismError(
                    f"the channel is not injective enough to invert: rank {self._rank} < {k} inputs "
                    f"(singular values below rank_rtol={rtol:g} times the largest count as zero); use "
                    "method='ibu'")
            b = np.zeros(k)
        b.flags.writeable = False
        self._b = b

    # ------------------------------------------------------------------ views
    @property
    def channel(self) -> MarkovOperator:
        """The composed channel P."""
        return self._channel

    @property
    def method(self) -> str:
        return self._method

    @property
    def statistic(self) -> str:
        return self._statistic

    @property
    def inputs(self) -> tuple:
        return self._channel.inputs

    @property
    def outputs(self) -> tuple:
        return self._channel.outputs

    @property
    def rank(self) -> int:
        """The numerical rank of P (with ``rank_rtol``)."""
        return self._rank

    @property
    def matrix(self) -> np.ndarray:
        """``"unbiased"``: the n_in x m matrix A with ``f^ = A (c / n) + offset`` (read-only; formed on request for a
        structured channel, refused with :class:`~chainamp.ResourceLimitError` when too large)."""
        self._need_linear("matrix")
        if self._A is None:
            m = self._model
            A = m.matrix() if m.kind == "symmetric" else m.support_matrix() if self._support else m.ls_matrix()
            A.flags.writeable = False
            self._A = A
        return self._A

    @property
    def offset(self) -> np.ndarray:
        """``"unbiased"``: the offset of the affine estimator (0 for counts, ``-q / (p - q)`` for support)."""
        self._need_linear("offset")
        return self._b

    def __repr__(self) -> str:
        stat = f", statistic={self._statistic!r}" if self._statistic != "counts" else ""
        n_in, m = self._channel.shape
        return (f"FrequencyEstimator({n_in}x{m} channel, method={self._method!r}"
                f"{stat}, rank {self._rank})")

    def _need_linear(self, what: str) -> None:
        if self._method != "unbiased":
            raise InvalidParameterError(f"{what} has no closed form for method={self._method!r} (a nonlinear "
                                        "estimator); use method='unbiased', or simulate")

    # ------------------------------------------------------------ estimation
    def estimate(self, counts: Any) -> FrequencyEstimate:
        """Estimate the input frequencies from observed output counts.

        Parameters
        ----------
        counts : 1-D array over the channel's outputs, or mapping {output label: count}
            Finite and non-negative, with a positive total (missing labels count 0); an output the
            channel never produces must have count 0.

        Returns
        -------
        FrequencyEstimate
        """
        model = self._model
        if model is not None and model.kind == "unary":
            Y, c = model.reports(counts)
            n = float(c.sum())
            if self._method == "ibu":
                data = model.ibu_data(Y, c)
                if data is not None:
                    return self._ibu(model.gradient, data, n)
                return self._ibu_dense(counts_vector(counts, self._channel), n)
            if self._support is not None:
                return self.estimate_support(model.support_counts(Y, c), n)
            f = model.ls_estimate(Y, c)
            f.flags.writeable = False
            return FrequencyEstimate(f, self.inputs, n, self._method, self._statistic)
        c = counts_vector(counts, self._channel, check_support=model is None)
        n = float(c.sum())
        if self._method == "ibu":
            if model is not None:
                return self._ibu(model.gradient, model.ibu_data(c / n), n)
            return self._ibu_dense(c, n)
        f = model.estimate(c / n) if model is not None else self._A @ (c / n) + self._b
        f.flags.writeable = False
        return FrequencyEstimate(f, self.inputs, n, self._method, self._statistic)

    def estimate_support(self, support_counts: Any, n: float) -> FrequencyEstimate:
        """``statistic="support"``: estimate from the per-bit totals ``C_v`` of n reports alone.

        ``f^_v = (C_v / n - q_v) / (p_v - q_v)`` (Wang et al. 2017), with ``0 <= C_v <= n``.

        Examples
        --------
        >>> from chainamp import kron, mechanisms
        >>> one_hot = [(1, 0, 0), (0, 1, 0), (0, 0, 1)]
        >>> oue = kron(*[mechanisms.optimized_unary_encoding(math.log(3))] * 3).restrict(one_hot)
        >>> est = FrequencyEstimator(oue, statistic="support")
        >>> est.estimate_support([50, 35, 40], n=100).frequencies.round(6).tolist()
        [1.0, 0.4, 0.6]
        """
        if self._statistic != "support":
            raise InvalidParameterError("estimate_support needs statistic='support' (got statistic="
                                        f"{self._statistic!r})")
        total = check_positive(n, "n")
        C = check_float_array(support_counts, "support_counts", ndim=1, finite=True)
        k = len(self.inputs)
        if C.size != k:
            raise InvalidParameterError(f"support_counts must have one entry per bit ({k}), got {C.size}")
        if np.any(C < 0) or np.any(C > total):
            v = int(np.flatnonzero((C < 0) | (C > total))[0])
            raise InvalidParameterError(f"support_counts[{v}] must be in [0, n={total:g}] (got {C[v]!r})")
        p, q = self._support
        f = (C / total - q) / (p - q)
        f.flags.writeable = False
        return FrequencyEstimate(f, self.inputs, total, self._method, self._statistic)

    def _ibu_dense(self, c: np.ndarray, n: float) -> FrequencyEstimate:
        obs = np.flatnonzero(c > 0)
        return self._ibu(dense_gradient, (self._dense_channel()[:, obs], c[obs] / n), n)

    def _ibu(self, gradient, data, n: float) -> FrequencyEstimate:
        k = len(self.inputs)
        f, iterations, gap, mean_ll = run_ibu(gradient, data, k, self._gap_tol, self._max_iterations)
        f.flags.writeable = False
        return FrequencyEstimate(f, self.inputs, n, "ibu", "counts", iterations, gap <= self._gap_tol, gap,
                                 n * mean_ll)

    def _dense_channel(self) -> np.ndarray:
        if self._P is None:
            P = np.array(self._channel.matrix, dtype=float)
            P.flags.writeable = False
            self._P = P
        return self._P

    # ------------------------------------------------------------- accuracy
    def covariance(self, frequencies: Any, n: float, *, population: str = "sampled", structured: bool = False
                   ) -> np.ndarray | StructuredCovariance:
        """Covariance matrix of the unbiased estimate from n reports when the true frequencies are given.

        ``A Sigma A^T`` with ``Sigma = (diag(pi) - pi pi^T) / n`` (``population="sampled"``: users draw their
        values i.i.d. from the frequencies) or ``(diag(pi) - P^T diag(f) P) / n`` (``"fixed"``: exactly
        ``n f_x`` users hold x, as in Wang et al. 2017), ``pi = P^T f``. See the class notes. Never forms an
        m x m matrix; ``"fixed"`` is summed without cancellation (closed forms for k-RR, positive semi-definite
        terms on a dense channel up to ``k^3 m`` = 2^28 operations: :func:`.channels.dense_covariance`).

        ``structured=True`` returns a :class:`StructuredCovariance` (diagonal plus low rank: O(k) memory for
        k-RR and unary encodings, whose covariances have closed forms); the default dense k x k array is
        refused with :class:`~chainamp.ResourceLimitError` before allocating when it would not fit (8 TB at
        k = 10^6): :meth:`variances` and :meth:`mse` then still work, in O(k).

        Examples
        --------
        >>> from chainamp import mechanisms
        >>> est = FrequencyEstimator(mechanisms.randomized_response(10**5, 2.0))
        >>> f = np.full(10**5, 1e-5)
        >>> cov = est.covariance(f, 10**4, structured=True)
        >>> cov.shape, cov.rank, f"{cov.trace():.6g}" == f"{est.mse(f, 10**4):.6g}"
        ((100000, 100000), 2, True)
        """
        if not structured:
            k = len(self.inputs)
            check_memory(16.0 * k * k, f"a dense {k} x {k} covariance matrix",
                         hint="use variances(), mse() or covariance(..., structured=True)")
        cov = self._covariance(frequencies, n, population)
        cov = cov.structured() if isinstance(cov, lr.Terms) else cov
        return cov if structured else cov.toarray()

    def _covariance(self, frequencies: Any, n: float, population: str) -> StructuredCovariance | lr.Terms:
        self._need_linear("covariance")
        f = check_distribution(frequencies, "frequencies", size=len(self.inputs))
        total = check_positive(n, "n")
        check_choice(population, "population", _POPULATIONS)
        model = self._model
        if model is not None:
            if model.kind == "symmetric":
                return model.covariance(f, total, population)
            cov = model.support_covariance if self._support is not None else model.ls_covariance
            return cov(f, total, population)
        return dense_covariance(self._A, self._P, f, total, population)

    def variances(self, frequencies: Any, n: float, *, population: str = "sampled") -> np.ndarray:
        """Per-value variances of the unbiased estimate (the diagonal of :meth:`covariance`, in O(k) for k-RR and
        unary encodings)."""
        return self._covariance(frequencies, n, population).variances()

    def mse(self, frequencies: Any, n: float, *, population: str = "sampled") -> float:
        """Expected squared error ``E ||f^ - f||^2`` of the unbiased estimate: the trace of :meth:`covariance`
        (O(k) for k-RR and unary encodings).

        Examples
        --------
        >>> from chainamp import mechanisms
        >>> est = FrequencyEstimator(mechanisms.unary_encoding(10**6, 2.0, "OUE"), statistic="support")
        >>> round(est.mse(np.full(10**6, 1e-6), 10**6, population="fixed"), 6)  # Wang et al.: 4 e^eps / (e^eps - 1)^2
        0.72406
        """
        return self._covariance(frequencies, n, population).trace()
