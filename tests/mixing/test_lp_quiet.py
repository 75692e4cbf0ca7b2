"""LP solvers stay quiet unless asked: no HiGHS banner, no solver log, on every LP entry point (the designs of
:mod:`chainamp.design` included: they solve through the same plumbing)."""

import pytest

import chainamp as ca
from chainamp import lp

K = [[0.9, 0.1], [0.2, 0.8]]

ENTRY_POINTS = {
    "doeblin_lp": lambda **kw: lp.doeblin_lp(K, **kw),
    "ultra_mixing_lp": lambda **kw: lp.ultra_mixing_lp(K, **kw),
    "hockey_stick_lp": lambda **kw: lp.hockey_stick_lp([0.75, 0.25], [0.25, 0.75], 0.5, **kw),
    "hockey_stick_lp_pairs": lambda **kw: lp.hockey_stick_lp_pairs(K, [(0, 1), (1, 0)], 0.5, **kw),
    "doeblin(method='lp')": lambda **kw: ca.doeblin(ca.MarkovOperator(K), method="lp", **kw),
    "ultra_mixing(method='lp')": lambda **kw: ca.ultra_mixing(ca.MarkovOperator(K), method="lp", **kw),
    "dobrushin(method='lp')": lambda **kw: ca.dobrushin(ca.MarkovOperator(K), 0.5, method="lp", **kw),
    # both designs below solve an LP (M alone does not meet eps = 1; gamma = 0.5 is not the closed form;
    # symmetry=False: k-RR with the 0-1 loss would take the symmetric closed form, which needs no solver)
    "optimal_post_processing": lambda **kw: ca.design.optimal_post_processing(
        ca.mechanisms.randomized_response(3, 2.0), 1.0, symmetry=False, **kw),
    "optimal_mixing_operator": lambda **kw: ca.design.optimal_mixing_operator(3, 0.5, symmetry=False,
                                                                             formulation="lp", **kw),
    # what "auto" runs for Dobrushin: highspy directly (pair generation), no cvxpy
    "optimal_mixing_operator(certify)": lambda **kw: ca.design.optimal_mixing_operator(
        3, 0.5, symmetry=False, formulation="certify", **kw),
}
VERBOSE = ["doeblin_lp", "hockey_stick_lp_pairs", "optimal_post_processing", "optimal_mixing_operator",
           "optimal_mixing_operator(certify)"]
LOG_MARK = {"optimal_mixing_operator(certify)": "HiGHS"}  # its log is HiGHS's own; the others' cvxpy's


@pytest.mark.parametrize("call", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
def test_lp_entry_points_print_nothing_by_default(call, capfd):
    call()
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("name", VERBOSE, ids=str)
def test_verbose_true_shows_the_solver_log(name, capfd):
    ENTRY_POINTS[name](verbose=True)
    out, _ = capfd.readouterr()
    assert LOG_MARK.get(name, "CVXPY") in out


@pytest.mark.parametrize("name", VERBOSE, ids=str)
@pytest.mark.parametrize("value", ["yes", 1, None], ids=["str", "int", "none"])
def test_verbose_must_be_a_bool(name, value):
    with pytest.raises(TypeError, match="verbose must be True or False"):
        ENTRY_POINTS[name](verbose=value)


def test_first_lp_of_a_process_prints_no_banner(fresh_process):
    """HiGHS prints its banner when the process's first solver object is created: the session's fresh process
    (conftest's ``_FRESH_IMPORT``: import chainamp, then its first LP, ``doeblin(K, method='lp')``), with stdout
    a pipe (fully buffered at the C level, where a banner would surface at exit). Everything it printed after
    its line of import stages is the LP's value."""
    _, stdout, stderr = fresh_process
    assert stdout == "gamma 0.7\n"
    assert "HiGHS" not in stderr


def test_first_highspy_design_of_a_process_prints_no_banner():
    """The certified Dobrushin design builds its HiGHS objects with highspy directly (no cvxpy): when it is the
    process's first solver, its banner must not reach stdout either (a pipe, fully buffered at the C level)."""
    import subprocess
    import sys

    code = ("from chainamp.design import optimal_mixing_operator as o; "
            "r = o(3, 0.5, symmetry=False, formulation='certify', progress=False); print(round(r.objective, 6))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert run.stdout == "0.333333\n"
    assert "HiGHS" not in run.stderr
