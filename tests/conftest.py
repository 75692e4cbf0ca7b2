"""Shared fixtures and hypothesis strategies for the chainamp tests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st

from chainamp import MarkovOperator


def random_stochastic(rng: np.random.Generator, n: int, m: int, zero_prob: float = 0.0) -> np.ndarray:
    """A random row-stochastic n x m matrix, optionally with structural zeros (never an empty row)."""
    mat = rng.random((n, m)) ** 2
    if zero_prob:
        mask = rng.random((n, m)) < zero_prob
        mask[np.arange(n), rng.integers(0, m, n)] = False
        mat[mask] = 0.0
    return mat / mat.sum(axis=1, keepdims=True)


@st.composite
def stochastic_matrices(draw, min_n=2, max_n=5, min_m=2, max_m=5, zeros=True):
    """Hypothesis strategy: small row-stochastic matrices (some with zeros)."""
    n = draw(st.integers(min_n, max_n))
    m = draw(st.integers(min_m, max_m))
    seed = draw(st.integers(0, 2**32 - 1))
    zero_prob = draw(st.sampled_from([0.0, 0.0, 0.3])) if zeros else 0.0
    return random_stochastic(np.random.default_rng(seed), n, m, zero_prob)


#: First line of every pipeline file.
PIPELINE_HEAD = 'format = "chainamp-pipeline/1"\n'
#: Mechanism and one step of a pipeline file: 3-ary RR at eps = 2, then 3-ary RR at eps = 1 (keys can follow
#: to extend the step, e.g. ``repeat = 2``).
TWO_STAGE_RR = '''[mechanism]
catalogue = "randomized_response"
k = 3
epsilon = 2.0
[[steps]]
catalogue = "randomized_response"
k = 3
epsilon = 1.0
'''


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20191029)


def krr_matrix(k: int, eps: float) -> np.ndarray:
    """k-ary randomized response, built inline for tests (keep w.p. e^eps / (e^eps + k - 1))."""
    keep = np.exp(eps) / (np.exp(eps) + k - 1)
    mat = np.full((k, k), (1 - keep) / (k - 1))
    np.fill_diagonal(mat, keep)
    return mat


@pytest.fixture
def krr():
    return lambda k, eps: MarkovOperator(krr_matrix(k, eps))
