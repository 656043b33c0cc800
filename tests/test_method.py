"""workbench.method.Method: names resolved and the pairing and parameters checked once, the one-call
solve, pickling by name, and SolveResult.record / from_record as the one plain-data form."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from problems.scenes import rolling_ball_2d, rolling_ball_2d_relaxed_impulse
from workbench.errors import InputError, UnsupportedError
from workbench.method import Method, formulations_for, pairings, solve, warm_up_problems
from workbench.solvers import SolveOptions, SolveResult, StopCause


def test_a_method_resolves_and_checks_once_and_solves_the_analytic_ball(monkeypatch):
    import formulations
    import workbench.method
    method = Method("dual", "apgd", {"outer_patience": 5}, label="APGD")
    assert (method.formulation.name, method.solver.name, method.kind) == ("dual", "apgd", "ccqo")
    assert method.solver_params == {"anti_relaxation": "inner", "outer_patience": 5, "device": "cpu",
                                    "threads": None, "check_every": None} and method.label == "APGD"
    # solving many times resolves nothing again
    monkeypatch.setattr(workbench.method, "get_solver", lambda name: pytest.fail("resolved again"))
    monkeypatch.setattr(formulations, "get_formulation", lambda name: pytest.fail("resolved again"))
    monkeypatch.setattr(workbench.method, "split_params", lambda *a: pytest.fail("checked again"))
    for _ in range(2):
        res = method.solve(rolling_ball_2d(), SolveOptions(tol=1e-10, max_iter=5000))
        assert res.status == "solved" and (res.formulation, res.solver) == ("dual", "apgd")
        np.testing.assert_allclose(res.nu, rolling_ball_2d_relaxed_impulse(), rtol=1e-6)


@pytest.mark.parametrize("args, words", [
    (("dual", "newton"), ["solver newton takes ncp models", "formulation dual builds", "formulations it can take: ncp"]),
    (("dual", "apgdd"), ["unknown solver 'apgdd'"]),
    (("duall", "apgd"), ["unknown formulation 'duall'", "did you mean 'dual'"]),
    (("dual", "apgd", {"outer_patiense": 3}), ["outer_patiense", "outer_patience"]),
])
def test_a_bad_method_is_one_input_error_line(args, words):
    with pytest.raises(InputError) as info:
        Method(*args)
    text = str(info.value)
    assert "\n" not in text and all(w in text for w in words), text
    if args[1] == "newton":
        assert isinstance(info.value, UnsupportedError)


def test_parameters_belong_to_the_method_not_to_the_options():
    with pytest.raises(InputError, match="parameters belong to the Method"):
        Method("dual", "apgd").solve(rolling_ball_2d(), SolveOptions(params={"outer_patience": 5}))
    # the one-call form moves them to the Method
    res = solve(rolling_ball_2d(), "dual", "apgd", SolveOptions(tol=1e-10, max_iter=5000, params={"outer_patience": 5}))
    assert res.status == "solved"


def test_a_method_pickles_by_name_and_equals_its_spec_copy():
    method = Method("anti-relaxed", "pgs", {"omega": 0.9}, label="PGS")
    copy = pickle.loads(pickle.dumps(method))
    assert copy == method == Method.from_spec(json.loads(json.dumps(method.spec())))
    assert copy.solver_params == method.solver_params and copy is not method


def test_pairings_leave_out_what_cannot_be_combined():
    methods = pairings(["dual", "ncp"], ["apgd", "newton", "clarabel"])
    assert [(m.formulation_name, m.solver_name) for m in methods] == [("dual", "apgd"), ("dual", "clarabel"),
                                                                     ("ncp", "newton")]


def test_accepts_gives_the_reasons_the_old_checks_gave():
    """Method.accepts replaces `formulation.needs_global and problem.kind == "local"` (the study's
    plan, twice, and compare), with the study plan's reason; the solve itself refuses the same pairs."""
    from formulations import list_formulations
    from workbench.sources import Source

    ball = rolling_ball_2d()
    for form in list_formulations():
        for problem in (ball, ball.as_local()):
            old = not (form.needs_global and problem.kind == "local")
            method = next(m for m in pairings([form.name], ["clarabel", "newton", "lemke", "apgd"]))
            ok, why = method.accepts(problem)
            assert ok == old, (form.name, problem.kind)
            assert why == ("" if old else f"formulation {form.name} needs M, D (a global problem)")
            if not ok:
                with pytest.raises(UnsupportedError, match="needs the primal data M, D, k"):
                    method.solve(problem)
    # a study's simulation steps global problems
    source = Source.parse("scenario:ball-on-plane")
    assert source.kind == "simulation" and Method("primal", "clarabel").accepts(source) == (True, "")


def test_formulations_for_is_the_one_rule_of_which_formulations_a_solver_takes():
    from formulations import list_formulations
    from workbench.solvers import list_solvers
    for solver in list_solvers():
        old = [f.name for f in list_formulations() if set(solver.model_kinds) & set(f.builds)]
        assert [f.name for f in formulations_for(solver)] == old == [f.name for f in formulations_for(solver.name)]
        assert old == [m.formulation_name for m in pairings([f.name for f in list_formulations()], [solver])]
    with pytest.raises(UnsupportedError, match="formulations it can take: ncp"):
        Method("dual", "newton")


def test_a_solver_declares_whom_it_hands_over_to():
    from workbench.solvers import get_solver, list_solvers
    pqn = Method("ncp", "pqn")
    assert pqn.solver.hands_over_to.kind == "fallback" and pqn.solver.hands_over_to.parameter == "fallback"
    assert pqn.solver.handover_target(pqn.solver_params) == "pgs"
    assert Method("ncp", "pqn", {"fallback": None}).solver.handover_target({"fallback": None}) is None
    assert get_solver("pqn").handover_target(Method("ncp", "pqn", {"fallback": "apgd"}).solver_params) == "apgd"
    # the fixed point's Newton polish, on the ncp model of the same problem, while polish is on; the
    # same solvers on a plain cvxpy model have no polish parameter, so no hand-over
    fixed = Method("dual-fixed-point", "clarabel")
    declared = fixed.solver.hands_over_to
    assert (declared.kind, declared.parameter, declared.solver, declared.formulation) == ("polish", "polish", "newton",
                                                                                          "ncp")
    assert fixed.solver.handover_target(fixed.solver_params) == "newton"
    assert Method("dual-fixed-point", "clarabel", {"polish": False}).solver.handover_target({"polish": False}) is None
    assert Method("dual", "clarabel").solver.handover_target(Method("dual", "clarabel").solver_params) is None
    assert {s.name for s in list_solvers() if s.hands_over_to} == {"pqn", "clarabel", "scs"}


def test_the_method_says_where_its_runs_go():
    from workbench.study.executors import on_gpu
    assert Method("dual", "apgd", {"device": "gpu"}).device == "gpu"
    assert Method("dual", "apgd", {"device": "numpy"}).device == "cpu" == Method("dual", "apgd").device
    assert Method("dual", "clarabel").device == "cpu" and Method("ncp", "pqn").device == "cpu"
    assert on_gpu({"device": Method("dual", "jacobi", {"device": "gpu"}).device})
    assert not on_gpu({"device": Method("dual", "jacobi").device})


def test_pqn_takes_the_common_iteration_cap():
    """PQN's iterations are capped by options.max_iter (--max-iter) like every solver's; a max_iter
    parameter is refused with where it goes."""
    assert not any(p.name == "max_iter" for p in Method("ncp", "pqn").solver.params)
    with pytest.raises(InputError, match="--max-iter"):
        Method("ncp", "pqn", {"max_iter": 5})


def test_the_warm_up_problems_cover_both_dimensions_and_forms():
    problems = warm_up_problems()
    assert sorted((p.d, p.kind, p.n_contacts) for p in problems) == [(2, "global", 1), (2, "global", 1), (2, "local", 1),
                                                                   (3, "global", 1), (3, "global", 1), (3, "local", 1)]
    # the global ones both condensed (workbench.problem.CONDENSE_MAX_DOF) and not: every kernel compiled
    assert sorted(p.condensable for p in problems if p.is_global) == [False, False, True, True]
    assert {p.kind for p in warm_up_problems(global_only=True)} == {"global"}
    # a sliding ball: the exact solution is the sliding impulse (g h, -mu g h) in 2D and its twin in 3D
    for p in problems:
        res = Method("ncp", "newton").solve(p, SolveOptions(tol=1e-10))
        assert res.status == "solved"
        expected = [9.81 * 0.01, -0.2 * 9.81 * 0.01] + [0.0] * (p.d - 2)
        np.testing.assert_allclose(res.nu, expected, rtol=1e-6, atol=1e-10)


def test_record_round_trip_keeps_every_field_and_is_json():
    res = Method("dual", "apgd").solve(rolling_ball_2d(), SolveOptions(tol=1e-10, max_iter=5000))
    res.info["note"], res.metrics["nothing"] = {"hand-over": "none", "steps": np.int64(3)}, float("inf")
    record = json.loads(json.dumps(res.record(), allow_nan=False))  # strict JSON: no NaN / inf literals
    back = SolveResult.from_record(record)
    for field in ("solver", "formulation", "status", "stop", "solver_status", "objective", "iterations",
                  "build_seconds", "solve_seconds", "message"):
        assert getattr(back, field) == getattr(res, field), field
    assert back.stop is StopCause.CONVERGED and back.metrics == res.metrics
    assert back.info["note"] == {"hand-over": "none", "steps": 3}
    np.testing.assert_array_equal(back.nu, res.nu)
    np.testing.assert_array_equal(back.v, res.v)
    assert list(back.history.columns) == list(res.history.columns)
    np.testing.assert_allclose(back.history["error"].to_numpy(float), res.history["error"].to_numpy(float))
    # without the point and the history
    short = res.record(point=False, history=False)
    assert not {"nu", "v", "history"} & set(short)
    assert SolveResult.from_record(short).nu is None


def test_the_api_page_examples_run(tmp_path, monkeypatch, capsys):
    """docs/api.md: every python block, in order, in one namespace, prints what its comments say."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(repo)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    blocks = re.findall(r"```python\n(.*?)```", (repo / "docs" / "api.md").read_text(), re.S)
    assert len(blocks) >= 5
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 2 global" and out[1] == "solved converged True"
    assert out[2].startswith("solver newton takes ncp models") and out[3].startswith("solved [")
    np.testing.assert_allclose(namespace["exact"].nu, [0.0981, -0.01962], rtol=1e-6)
    assert "solved True True" in out and "['apgd', 'clarabel']" in out
    assert set(namespace["runs"]["status"]) == {"solved"} and (namespace["folder"] / "convergence.png").stat().st_size > 0
