"""The run contract every solver keeps: one history schema, a typed stop cause, declared parameters
checked by one code path, and a backend that raises ends "failed" instead of escaping."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import workbench.solvers
from formulations import get_formulation
from problems.scenes import rolling_ball_2d
from factories import random_problem
from workbench.cli import main
from workbench.errors import InputError
from workbench.params import Param, validate
from workbench.method import solve
from workbench.solvers import SolveOptions, StopCause, get_solver, list_solvers
from workbench.solvers.base import Solver
from workbench.solvers.recorder import HISTORY_COLUMNS

#: a formulation each kind of model comes from (the rolling ball is tiny and every kind accepts it)
FORMULATION = {"cvxpy": "dual", "ccqo": "anti-relaxed", "ncp": "ncp", "lcp": "lcp-pyramid"}


def _solvers() -> list[str]:
    """Every registered solver that can run here (the Siconos family by one member)."""
    names = []
    for s in list_solvers():
        if s.name.startswith("siconos:") and s.name != "siconos:NSGS":
            continue
        if s.availability()[0]:
            names.append(s.name)
    return names


SOLVER_NAMES = _solvers()


@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_every_solver_records_the_history_schema_and_a_stop_cause(solver):
    slv = get_solver(solver)
    formulation = FORMULATION[next(k for k in slv.model_kinds if k in FORMULATION)]
    res = solve(rolling_ball_2d(), formulation, solver, SolveOptions(tol=1e-8, keep_history=True))
    assert isinstance(res.stop, StopCause)
    h = res.history
    assert isinstance(h, pd.DataFrame) and len(h) >= 1
    assert tuple(h.columns[:5]) == tuple(HISTORY_COLUMNS)
    assert pd.api.types.is_integer_dtype(h["iteration"])
    assert pd.api.types.is_float_dtype(h["seconds"]) and pd.api.types.is_float_dtype(h["error"])
    assert pd.api.types.is_float_dtype(h["objective"])
    names = set(h["error_name"])
    assert len(names) == 1 and isinstance(names.pop(), str)
    seconds = h["seconds"].to_numpy()
    assert np.all(seconds >= 0) and np.all(np.diff(seconds) >= 0)
    assert res.solve_seconds >= 0
    off = solve(rolling_ball_2d(), formulation, solver, SolveOptions(tol=1e-8, keep_history=False))
    assert off.history is None and isinstance(off.stop, StopCause)


def test_the_history_error_is_the_measure_it_names():
    """The in-house runs log the workbench's own measures: the last row of an exact run is the
    siconos_error of the returned point."""
    res = solve(rolling_ball_2d(), "ncp", "newton", SolveOptions(tol=1e-10))
    assert res.history["error_name"].iloc[-1] == "siconos_error"
    assert res.history["error"].iloc[-1] == pytest.approx(res.metrics["siconos_error"], rel=1e-9)


@pytest.mark.parametrize("solver", SOLVER_NAMES + ["mosek"])
def test_an_unknown_parameter_is_one_line_and_exit_2(solver, capsys):
    slv = get_solver(solver)
    formulation = FORMULATION[next(k for k in slv.model_kinds if k in FORMULATION)]
    code = main(["solve", "scene:rolling-ball-2d", "-f", formulation, "-s", solver, "--param", "foo=1"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "foo" in err and "known" in err


@pytest.mark.parametrize("solver, formulation, params, word", [
    ("clarabel", "dual", {"backend.tol_gap_abs": "tight"}, "backend.tol_gap_abs"),
    ("clarabel", "dual", {"backend.no_such_setting": 1}, "no_such_setting"),
    ("scs", "dual", {"inner_warm_start": True}, "inner_warm_start"),        # fixed-point runs only
    ("pqn", "ncp", {"delta_mode": "median"}, "delta_mode"),
    ("lemke", "lcp-pyramid", {"m_C": "eight"}, "m_C"),
    ("newton", "ncp", {"eps_rel": True}, "eps_rel"),
])
def test_a_bad_value_is_an_input_error_naming_the_key(solver, formulation, params, word):
    with pytest.raises(InputError, match=word):
        solve(rolling_ball_2d(), formulation, solver, SolveOptions(params=params))


def test_declared_parameters_reach_the_solver_and_the_formulation():
    p = rolling_ball_2d()
    capped = solve(p, "dual", "clarabel", SolveOptions(tol=1e-10, params={"backend.max_iter": 2}))
    assert capped.iterations == 2 and capped.status != "solved"
    assert solve(p, "dual-fixed-point", "scs", SolveOptions(params={"inner_warm_start": False})).status == "solved"
    assert get_formulation("lcp-pyramid").build(random_problem(n_contacts=2, n_bodies=2), "lcp", {"m_C": 4}).m_C == 4
    with pytest.raises(InputError, match="m_C"):
        get_formulation("lcp-pyramid").build(random_problem(n_contacts=2, n_bodies=2), "lcp", {"m_C": "four"})


def test_parameter_checks():
    declared = (Param("n", int, 3, "count"), Param("x", float, None, "scale"),
                Param("mode", str, "a", "mode", ("a", "b")), Param("flag", bool, False, "switch"))
    assert validate(declared, {}, "t") == {"n": 3, "x": None, "mode": "a", "flag": False}
    assert validate(declared, {"n": 4.0, "x": 1, "flag": "true"}, "t") == {"n": 4, "x": 1.0, "mode": "a",
                                                                           "flag": True}
    for bad in ({"n": 1.5}, {"n": True}, {"mode": "c"}, {"x": "big"}, {"flag": 2}, {"m": 1}, {"n": None}):
        with pytest.raises(InputError):
            validate(declared, bad, "t")


class _Raising(Solver):
    name = "raising"
    model_kinds = ("ccqo",)

    def solve(self, model, options):
        raise RuntimeError("backend exploded\nsecond line")


def test_a_solver_that_raises_ends_failed_with_one_line(monkeypatch):
    monkeypatch.setitem(workbench.solvers.SOLVERS, "raising", f"{__name__}:_Raising")
    res = solve(rolling_ball_2d(), "dual", "raising", SolveOptions())
    assert (res.status, res.stop, res.message) == ("failed", StopCause.FAILED, "RuntimeError: backend exploded")


def test_a_backend_error_inside_lcp1_ends_failed(monkeypatch):
    """cvxpy's SolverError from the QP solver of LCP1 (seen on a rover problem) is that run's failure."""
    import cvxpy as cp

    from workbench.solvers.lcp1 import CompiledQP

    def fail(self, c, seconds_left=None):
        raise cp.SolverError("Solver 'CLARABEL' failed.")

    monkeypatch.setattr(CompiledQP, "solve", fail)
    res = solve(rolling_ball_2d(), "lcp-pyramid", "lcp1", SolveOptions())
    assert res.status == "failed" and res.stop == StopCause.FAILED
    assert res.message == "SolverError: Solver 'CLARABEL' failed."


def test_stop_causes_decide_the_status_of_an_unaccepted_point():
    p = rolling_ball_2d()
    capped = solve(p, "anti-relaxed", "jacobi", SolveOptions(tol=1e-14, max_iter=2))
    assert (capped.stop, capped.status) == (StopCause.MAX_ITER, "max_iter")
    timed = solve(p, "anti-relaxed", "jacobi", SolveOptions(tol=1e-14, time_limit=1e-9))
    assert (timed.stop, timed.status) == (StopCause.TIMEOUT, "timeout")


def test_study_files_are_checked_against_the_declarations(tmp_path):
    from workbench.study.spec import StudyError, load_study

    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "s"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n'
                     '[methods.m]\nformulation = "dual"\nsolver = "apgd"\nparams = { omega = 1 }\n')
    with pytest.raises(StudyError, match=r"\[methods.m\].*omega.*known: anti_relaxation"):
        load_study(study)


def test_list_shows_the_parameters(capsys):
    assert main(["list", "--params", "pgs"]) == 0
    out = capsys.readouterr().out
    assert "omega (float, default 1.0)" in out and "anti_relaxation (inner|outer" in out
    assert main(["list", "--params", "lcp-pyramid"]) == 0
    assert "m_C" in capsys.readouterr().out
