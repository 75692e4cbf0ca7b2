"""Progress of the designs (issue 10, item 4): stage bars (M's exact profile, the LP, the certificate)."""

from __future__ import annotations

import pytest

from chainamp import mechanisms
from chainamp._numerics import progress as P
from chainamp.design import optimal_mixing_operator, optimal_post_processing


@pytest.fixture
def fast_lines(monkeypatch):
    monkeypatch.setattr(P, "PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(P, "PROGRESS_LINE_INTERVAL", 0.0)
    with P.progress_mode("lines"):
        yield


@pytest.mark.parametrize("design, expected", [
    (lambda **kw: optimal_post_processing(mechanisms.randomized_response(3, 2.0), 1.0, symmetry=False, **kw),
     ["optimal_post_processing: 0/3 stage", "the exact profile of M", "building and solving the LP",
      "certifying K (chainamp.amplify)", "optimal_post_processing: 3/3 stage"]),
    (lambda **kw: optimal_mixing_operator(3, 0.5, symmetry=False, formulation="lp", **kw),
     ["optimal_mixing_operator: 0/2 stage", "building and solving the LP", "certifying K (chainamp.dobrushin)",
      "optimal_mixing_operator: 2/2 stage"]),
    (lambda **kw: optimal_mixing_operator(3, 0.5, symmetry=False, **kw),  # "auto": the certified closed form
     ["optimal_mixing_operator: 0/2 stage", "certifying K (chainamp.dobrushin)", "optimal_mixing_operator: 2/2 stage"]),
    (lambda **kw: optimal_post_processing(mechanisms.randomized_response(3, 2.0), 1.0, **kw),
     ["optimal_post_processing: 0/2 stage", "symmetric closed form",
      "optimal_post_processing: 2/2 stage"]),
    (lambda **kw: optimal_mixing_operator(3, 0.5, **kw),
     ["optimal_mixing_operator: 0/2 stage", "symmetric closed form",
      "optimal_mixing_operator: 2/2 stage"]),
], ids=["post_processing", "mixing", "mixing-certify", "post_processing-symmetric", "mixing-symmetric"])
def test_designs_show_their_stages(capsys, fast_lines, design, expected):
    quiet = design(progress=False)
    assert capsys.readouterr().err == ""
    shown = design()
    err = capsys.readouterr().err
    for text in expected:
        assert text in err, err
    assert shown.objective == quiet.objective


@pytest.mark.parametrize("design", [
    lambda: optimal_post_processing(mechanisms.randomized_response(3, 2.0), 1.0, progress="on"),
    lambda: optimal_mixing_operator(3, 0.5, progress=1),
], ids=["post_processing", "mixing"])
def test_design_progress_is_validated(design):
    with pytest.raises(TypeError, match=r"progress must be None, True or False \(got "):
        design()


def test_an_lp_too_big_for_the_memory_limit_is_refused_before_it_is_built():
    from chainamp import ResourceLimitError, resource_limits

    M = mechanisms.randomized_response(20, 2.0)  # 380 ordered pairs x 20 x 20: 152,000 nonzeros, ~29 MiB
    with resource_limits(memory="10MB"), pytest.raises(
            ResourceLimitError, match=r"^optimal_post_processing: the LP with 152,000 constraint nonzeros .* needs "
                                      r"about 29 MiB, above the memory limit of 9.54 MiB; restrict the neighbours"):
        optimal_post_processing(M, 1.0, progress=False, symmetry=False)
    with resource_limits(memory="10MB"), pytest.raises(ResourceLimitError, match=r"^optimal_mixing_operator: the "
                                                                                 r"LP with 424,800 constraint"):
        optimal_mixing_operator(60, 0.5, progress=False, symmetry=False, formulation="lp")  # 4 x 1770 pairs x 60
