"""The run row declared once (workbench.study.record.RUN_ROW): the rows the runner writes and the
table the results loader returns hold its columns in its order and dtypes, column by column; a
crashed run and a simulation answer in the same shape as a solve; rows written before a column
existed read as the declaration fills them; the record names the measure a run was judged by."""

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from problems.scenes import rolling_ball_2d
from test_study import MISBEHAVING, registries, run, write  # noqa: F401 - registries is a fixture
from workbench.method import Method
from workbench.solvers import SolveOptions
from workbench.study import load_results
from workbench.study.record import ANSWER, RUN_ROW, answer
from workbench.study.results import RUN_COLUMNS
from workbench.study.runner import RESULT_FIELDS
from workbench.study.store import ResultStore
from workbench.study.worker import crash_result

#: one solved single step, one simulation and one crash (test_study's plugin: a solver that segfaults)
STUDY = """
study = { name = "record", time_limit = 30, plugins = ["plugin.py"] }
problems = [{ scenes = ["rolling-ball-2d"] }, { scenario = "box-on-plane", params = { duration = 0.02, h = 0.01 } }]
[methods]
clarabel = { formulation = "dual", solver = "clarabel" }
newton = { formulation = "ncp", solver = "newton" }
segfault = { formulation = "dual", solver = "segfault" }
"""


def _is(value, dtype: str) -> bool:
    """Whether a stored value is of the declared dtype (None: unknown, allowed everywhere)."""
    if value is None or (isinstance(value, float) and math.isnan(value) and dtype != "str"):
        return True
    if dtype == "str":
        return isinstance(value, str)
    if dtype == "int":
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if dtype == "float":
        return isinstance(value, (float, int, np.floating, np.integer)) and not isinstance(value, bool)
    json.loads(value)  # "json": a JSON text
    return isinstance(value, str)


def test_the_rows_and_the_loaded_table_follow_the_declaration_column_by_column(tmp_path, registries):  # noqa: F811
    write(tmp_path / "plugin.py", MISBEHAVING)
    out = tmp_path / "results"
    assert run(write(tmp_path / "study.toml", STUDY), out) == 0
    store = ResultStore(out)
    rows = {}
    for path in sorted(store.runs_dir.glob("*.parquet")):
        (row,) = pd.read_parquet(path).to_dict("records")
        rows[(row["problem"], row["method"])] = row
    assert {r["status"] for r in rows.values()} >= {"solved", "crash"}
    written = [c.name for c in RUN_ROW.values() if c.origin in ("plan", "record", "runner", "provenance")]
    for (problem, method), row in rows.items():
        # every declared column, in the declared order, then the metrics (floats) before provenance
        assert [c for c in row if c in RUN_ROW and RUN_ROW[c].origin != "metric"] == written, (problem, method)
        for name, value in row.items():
            dtype = RUN_ROW[name].dtype if name in RUN_ROW else "float"  # an undeclared column is a metric
            assert _is(value, dtype), (problem, method, name, value)
    # the three shapes of one record: a solve, a simulation, a crash
    solved, simulated = rows[("rolling-ball-2d", "clarabel")], rows[("box-on-plane", "clarabel")]
    crashed = rows[("rolling-ball-2d", "segfault")]
    assert solved["judged_name"] == "relaxed_error" and solved["judged_error"] == solved["relaxed_error"]
    assert rows[("rolling-ball-2d", "newton")]["judged_name"] == "siconos_error"
    assert simulated["kind"] == "simulation" and simulated["steps"] == 2 and simulated["judged_name"] is None
    assert crashed["status"] == "crash" and "SIGSEGV" in crashed["message"]
    assert crashed["solve_seconds"] is None and crashed["iterations"] is None and crashed["judged_name"] is None
    assert crashed["handover"] == "" and crashed["handover_detail"] == "[]"
    assert set(crashed) <= set(solved)  # a crash lacks only the metrics of a point
    assert all(k not in RUN_ROW or RUN_ROW[k].origin == "metric" for k in set(solved) - set(crashed))
    # the loaded table: every declared column that is not a metric, the runner's and the loader's
    # column lists are the declaration's
    runs = load_results(out)
    assert {c for c in runs.columns if c in RUN_ROW and RUN_ROW[c].origin != "metric"} == \
        {c for c in RUN_ROW if RUN_ROW[c].origin != "metric"}
    assert list(RUN_COLUMNS) == list(RUN_ROW)
    assert list(RESULT_FIELDS) == [c.name for c in RUN_ROW.values() if c.origin == "record"]
    for c in RUN_ROW.values():
        if c.number and c.name in runs:
            assert pd.api.types.is_numeric_dtype(runs[c.name]), c.name
    np.testing.assert_allclose(runs["total_seconds"], runs["build_seconds"] + runs["solve_seconds"])


def test_a_crash_a_simulation_and_a_solve_answer_in_one_shape():
    killed = crash_result("killed after 1.5 s of the run", status="timeout", wall_seconds=1.5)
    assert list(killed) == list(ANSWER) and killed["stop"] == "timeout" and killed["solve_seconds"] is None
    assert crash_result("worker died")["stop"] is None
    from workbench.study.simulation import simulate
    from workbench.sources import Source
    sim = simulate(Source.parse("scenario:box-on-plane", {"duration": 0.02, "h": 0.01}), Method("dual", "clarabel"),
                   SolveOptions())
    assert list(sim) == list(ANSWER) and sim["steps"] == 2 and sim["status"] == "solved"
    res = Method("dual", "clarabel").solve(rolling_ball_2d(), SolveOptions())
    solved = answer(**res.record(point=False, history=False), wall_seconds=0.1, host="here")
    assert list(solved) == list(ANSWER)
    assert set(res.record()) <= set(ANSWER)
    # the answer is the record's keys (declared there, not listed again) and the worker's own
    assert list(ANSWER)[:len(res.record())] == list(res.record())
    with pytest.raises(TypeError, match="handover_steps"):
        answer(handover_steps="x")


def test_a_solve_with_a_hard_limit_takes_the_answer_as_it_comes():
    """The record's one reader: a run that produced nothing counts its wall time (no patching)."""
    from workbench.solvers import SolveResult
    back = SolveResult.from_record({**crash_result("killed", status="timeout", wall_seconds=2.5),
                                    "solver": "clarabel", "formulation": "dual"})
    assert back.status == "timeout" and back.stop.value == "timeout" and back.solve_seconds == 2.5
    assert back.judged_name is None and back.nu is None


@pytest.mark.parametrize("formulation, solver, measure", [("dual", "clarabel", "relaxed_error"),
                                                          ("ncp", "newton", "siconos_error"),
                                                          ("lcp-pyramid", "lemke", "lcp_residual")])
def test_the_record_names_the_measure_it_was_judged_by(formulation, solver, measure):
    res = Method(formulation, solver).solve(rolling_ball_2d(), SolveOptions(tol=1e-8))
    assert res.status == "solved"
    record = res.record(point=False, history=False)
    assert record["judged_name"] == measure and record["metrics"]["judged_error"] == record["metrics"][measure]
    assert record["handover_label"] == "" and record["handover"] == []


def test_rows_written_before_a_column_existed_read_as_the_declaration_fills_them(tmp_path):
    """An older row: no role, handover, handover_detail, judged_name, stop, steps, workbench_version.
    The judged measure is the one whose value equals judged_error (what the plot guessed before)."""
    store = ResultStore(tmp_path)
    old = {"key": "k1", "study": "s", "problem": "p", "method": "m", "label": "m", "formulation": "dual",
           "solver": "clarabel", "kind": "global", "tol": 1e-6, "accept": None, "time_limit": 10.0,
           "repetition": 0, "status": "solved", "objective": -1.5, "solver_objective": "inf", "iterations": 7, "build_seconds": 0.1,
           "solve_seconds": 0.2, "message": "", "relaxed_error": 3e-9, "siconos_error": 4e-3, "judged_error": 3e-9}
    store.write_run(old, None)
    store.write_run({**old, "key": "k2", "status": "failed", "objective": None, "relaxed_error": None,
                     "siconos_error": None, "judged_error": None}, None)
    (tmp_path / "plan.json").write_text(json.dumps({"runs": [{"key": "k1"}, {"key": "k2"}]}))
    runs = load_results(tmp_path)
    assert list(runs["role"]) == ["compared"] * 2 and list(runs["handover"]) == [""] * 2
    assert list(runs["handover_detail"]) == ["[]"] * 2
    assert runs["judged_name"].iloc[0] == "relaxed_error" and pd.isna(runs["judged_name"].iloc[1])
    assert runs["objective"].iloc[0] == -1.5 and runs["total_seconds"].iloc[0] == pytest.approx(0.3)
    assert runs["solver_objective"].iloc[0] == np.inf  # a record's non-finite number, written as text
    assert runs["stop"].isna().all() and runs["steps"].isna().all()
    from workbench.plot import judged_measure
    assert [judged_measure(r) for r in runs.itertuples()] == ["relaxed_error", None]


def test_the_results_api_page_names_every_declared_column():
    from pathlib import Path
    page = (Path(__file__).resolve().parents[1] / "docs" / "studies.md").read_text()
    table = page[page.index("| `load_results` column |"):page.index("| `load_histories` column |")]
    assert [c for c in RUN_ROW if RUN_ROW[c].origin != "metric" and f"`{c}`" not in table] == []


def test_the_plan_check_is_the_plan_declaration_walked():
    """workbench.report.plan_check derives every check from workbench.study.plan.PLAN: a plan as the
    runner writes it passes; each declared field (and each declared field of its objects) given a value
    of another shape is refused in one line naming it; a field declared optional may be absent."""
    import copy

    from workbench.errors import InputError
    from workbench.report.plan_check import check_plan
    from workbench.study.plan import PLAN

    method = {"method": "a", "label": "A", "formulation": "dual", "solver": "apgd", "tolerance": "default",
              "tol": 1e-6, "accept": None, "max_iter": None, "params": {}}
    paper = {"what": "w", "source": "s", "method": "a", "quantity": "iterations", "value": 1, "rel_tol": 1e-4}
    plan = {"study": "s", "description": "", "time_limit": 5.0, "repetitions": 1,
            "report": {"sections": ["summary"], "reference_method": None, "convergence": "error", "shift": 10.0,
                       "time": "solve", "target": 1e-6, "paper": [paper]},
            "methods": [method], "problems": [{"problem": "p"}], "runs": [{"key": "k"}],
            "skipped": [{"problem": "p", "method": "a"}], "missing": [], "references": [dict(method)],
            "reference_runs": [{"key": "r"}]}
    assert check_plan(copy.deepcopy(plan), "R") == plan
    wrong = {"records": "x", "object": "x", "texts": "x", "choices": "x"}
    places = [((name,), f) for name, f in PLAN.items()]
    places += [((name, 0, sub), g) for name in ("methods", "references", "problems", "runs", "skipped",
                                                "reference_runs") for sub, g in PLAN[name].of.items()]
    places += [(("report", sub), g) for sub, g in PLAN["report"].of.items()]
    places += [(("report", "paper", 0, sub), g) for sub, g in PLAN["report"].of["paper"].of.items()]
    for path, f in places:
        bad = copy.deepcopy(plan)
        *head, last = path
        target = bad
        for step in head:
            target = target[step]
        target[last] = wrong.get(f.shape, {"x": 1})
        shown = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        with pytest.raises(InputError, match=rf"^R: plan\.json {re.escape(shown)} must be "):
            check_plan(bad, "R")
        if not f.required:
            del target[last]
            check_plan(bad, "R")
    bad = copy.deepcopy(plan)
    bad["report"]["paper"][0]["method"] = "b"
    with pytest.raises(InputError, match=r"report\.paper\[0\]\.method must be a method of the plan"):
        check_plan(bad, "R")
