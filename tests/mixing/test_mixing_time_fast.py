"""mixing_time's fast search (issue 10 item 3): dense powers once a product fills in, and
``gamma(K^t) > eps`` settled by a known pair's certified total variation; against the plain
definition (every power formed and scanned) on walks small enough for it."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from chainamp import MarkovOperator
from chainamp.mixing import dobrushin, mixing_time


def plain_mixing_time(K: MarkovOperator, eps: float) -> int:
    P, t = K.matrix, 1
    power = P.copy()
    while dobrushin(MarkovOperator(power)).gamma > eps:
        power = power @ P
        t += 1
    return t


@pytest.mark.parametrize("n, laziness, eps", [(40, 0.5, 0.25), (60, 0.3, 0.1), (30, 0.5, 0.01)],
                         ids=["40-lazy", "60-less-lazy", "30-small-eps"])
def test_matches_the_plain_definition(n, laziness, eps):
    K = MarkovOperator.random_walk(nx.connected_watts_strogatz_graph(n, 4, 0.2, seed=n), laziness=laziness)
    assert mixing_time(K, eps) == plain_mixing_time(K, eps)


def test_progress_only_when_asked(capsys):
    K = MarkovOperator.random_walk(nx.cycle_graph(30), laziness=0.5)
    mixing_time(K, 0.25, progress=False)
    assert capsys.readouterr().err == ""
    mixing_time(K, 0.25, progress=True)
    assert "mixing time" in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        mixing_time(K, 0.25, progress="yes")


def test_dense_input_and_fill_in_agree():
    K = MarkovOperator.random_walk(nx.connected_watts_strogatz_graph(80, 6, 0.1, seed=3), laziness=0.5)
    assert mixing_time(K) == mixing_time(MarkovOperator(K.matrix))
