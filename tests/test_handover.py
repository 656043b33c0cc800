"""Hand-overs in the open and like with like in convergence figures (issue 22, items 3 and 4).

A small study on generated problems where the methods hand over without being told to: PQN (Koziara
2017) does not converge on the 6-disk cannonball of Anitescu & Hart 2003 (mu = 0.3) within its 1,000
iterations and its Gauss-Seidel fallback finishes; the dual fixed point with Clarabel settles above
tol = 1e-9 on a 6-sphere packing (an interior point at the cone apex) and Newton polishes it. The
hand-overs must show in load_results, in the report's tables (the method alone and the composite
as rows of their own), in ``solve --json``; every convergence panel of a judged measure must plot
that one measure for all methods, with the acceptance threshold drawn.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from workbench import plot
from workbench.cli import main
from workbench.report import read_report_data
from workbench.study import load_histories, load_results

TOL = 1e-9
CANNONBALL = ["generator:cannonball", "--set", "n_bottom=3", "--set", "mu=0.3"]

STUDY = f"""
[study]
name = "handover-test"
time_limit = 60
tolerance = "tight"

[tolerances.tight]
tol = {TOL}

[[problems]]
generator = "cannonball"
params = {{ n_bottom = 3, mu = 0.3 }}
name = "cannonball-6"

[[problems]]
generator = "sphere_packing"
params = {{ n_spheres = 6, seed = 0 }}
name = "spheres-6"

[methods.pqn]
formulation = "ncp"
solver = "pqn"

[methods.dfp]
label = "dual fixed point, Clarabel"
formulation = "dual-fixed-point"
solver = "clarabel"

[methods.apgd-anti]
formulation = "anti-relaxed"
solver = "apgd"

[methods.apgd-dual]
formulation = "dual"
solver = "apgd"

[report]
shift = 0.01
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("handover")
    (root / "study.toml").write_text(STUDY)
    results, out = root / "results", root / "report"
    main(["run", str(root / "study.toml"), "--out", str(results), "--report-dir", str(out), "--no-progress"])
    return results, out


def _run(runs, problem, method):
    row = runs[(runs["problem"] == problem) & (runs["method"] == method)]
    assert len(row) == 1, (problem, method)
    return row.iloc[0]


def test_load_results_carries_the_hand_overs(study):
    runs = load_results(study[0])
    hist = load_histories(study[0])
    pqn = _run(runs, "cannonball-6", "pqn")
    assert pqn["handover"] == "ncp/pqn -> pgs fallback" and pqn["status"] == "solved"
    (h,) = json.loads(pqn["handover_detail"])
    assert h["kind"] == "fallback" and h["to"] == "pgs" and h["used"] and h["stop_before"] == "max_iter"
    assert h["status_alone"] == "max_iter" and h["at_iteration"] == 1000 and h["error_before"] > 100 * TOL
    # what PQN reached alone is the workbench's measure of its last iterate, as its history judged it
    mine = hist[hist["key"] == pqn["key"]]
    assert mine["iteration"].max() == h["at_iteration"]
    assert mine["judged_error"].iloc[-1] == pytest.approx(h["error_before"], rel=1e-9)

    dfp = _run(runs, "spheres-6", "dfp")
    assert dfp["handover"] == "dual-fixed-point/clarabel + newton polish" and dfp["status"] == "solved"
    (h,) = json.loads(dfp["handover_detail"])
    assert h["kind"] == "polish" and h["to"] == "newton" and h["used"] and h["status_alone"] == "inaccurate"
    outer = hist[(hist["key"] == dfp["key"]) & (hist["phase"] == "outer")]
    assert h["at_iteration"] == len(outer) and h["error_before"] == pytest.approx(outer["judged_error"].min(),
                                                                                   rel=1e-12)
    assert TOL < h["error_before"] and dfp["judged_error"] <= TOL
    # the runs that ran alone say so
    assert (runs.loc[runs["method"].str.startswith("apgd"), "handover"] == "").all()
    assert (runs.loc[runs["handover"] == "", "handover_detail"] == "[]").all()


def test_report_counts_each_method_alone_and_shows_the_composite_beside_it(study):
    out = study[1]
    res = read_report_data(study[0])
    methods = [m["method"] for m in res.plan["methods"]]
    assert methods[:2] == ["pqn", "pqn (+pgs fallback)"]
    assert methods[2:4] == ["dfp", "dfp (+newton polish)"]
    summary = pd.read_csv(out / "tables" / f"summary_exact_{TOL:g}.csv").set_index("method")
    runs = load_results(study[0])
    for method, composite in (("pqn", "pqn (+pgs fallback)"), ("dfp", "dfp (+newton polish)")):
        mine = runs[runs["method"] == method]
        alone = [json.loads(d)[0]["status_alone"] if d != "[]" else s
                 for d, s in zip(mine["handover_detail"], mine["status"])]
        assert summary.loc[method, "solved %"] == pytest.approx(100 * np.mean([s == "solved" for s in alone]))
        assert summary.loc[composite, "solved %"] == pytest.approx(100 * (mine["status"] == "solved").mean())
        assert summary.loc[method, "solved %"] < summary.loc[composite, "solved %"]
    status = pd.read_csv(out / "tables" / "status.csv").set_index("problem")
    assert status.loc["cannonball-6", "pqn"] == "max_iter" and status.loc["cannonball-6", "pqn (+pgs fallback)"] \
        == "solved"
    assert status.loc["spheres-6", "dual fixed point, Clarabel"] == "inaccurate"
    handovers = pd.read_csv(out / "tables" / "handovers.csv")
    assert sorted(handovers["hand-over"]) == ["dual-fixed-point/clarabel + newton polish", "ncp/pqn -> pgs fallback"]
    text = (out / "index.md").read_text()
    assert "Hand-overs: 2 runs were finished by another method" in text and "pqn (+pgs fallback)" in text
    # the method alone is timed until its hand-over, the composite over the whole run
    pqn = _run(res.runs, "cannonball-6", "pqn")
    whole = _run(res.runs, "cannonball-6", "pqn (+pgs fallback)")
    assert pqn["solve_seconds"] < whole["solve_seconds"] and math.isnan(pqn["objective"])


def test_convergence_panels_plot_one_judged_measure_with_the_threshold(study):
    res = read_report_data(study[0])
    hist = load_histories(study[0])
    for problem in ("cannonball-6", "spheres-6"):
        runs = res.static[res.static["problem"] == problem]
        fig = plot.convergence(hist, runs, problem=problem, labels=res.labels, methods=res.methods)
        # the panels' labels come from plot.MEASURES (words and units), one panel per judged measure
        label_of = {plot.measure_label(m): m for m in ("relaxed_error", "siconos_error")}
        panels = {label_of[ax.get_ylabel()]: ax for ax in fig.axes[::2] if ax.get_ylabel() in label_of}
        assert {"relaxed_error", "siconos_error"} <= set(panels)
        for measure, ax in panels.items():
            curves = [line for line in ax.lines if (line.get_gid() or "").startswith("curve:")]
            assert curves
            for line in curves:
                method = line.get_gid().removeprefix("curve:")
                keys = runs.loc[runs["method"] == method, "key"]
                mine = hist[hist["key"].isin(keys)]
                # every point drawn is that method's judged error of that measure, nothing else
                assert set(mine["judged_name"]) == {measure}
                assert np.isin(line.get_ydata(), mine["judged_error"].to_numpy()).all()
            thresholds = [line for line in ax.lines if (line.get_gid() or "").startswith("threshold:")]
            assert [line.get_ydata()[0] for line in thresholds] == [TOL]
        # the relaxed panel holds only the relaxed method, the exact one the four exact ones
        relaxed = {line.get_gid() for line in panels["relaxed_error"].lines if "curve:" in str(line.get_gid())}
        assert relaxed == {"curve:apgd-dual"}


def test_judged_history_samples_iterates_and_ends_at_the_returned_point(study):
    runs = load_results(study[0])
    hist = load_histories(study[0])
    run = _run(runs, "spheres-6", "apgd-dual")
    mine = hist[hist["key"] == run["key"]]
    assert set(mine["error_name"]) == {"ccp_residual"} and set(mine["judged_name"]) == {"relaxed_error"}
    judged = mine["judged_error"].notna()
    assert judged.iloc[:10].all() and judged.iloc[-1]
    assert judged.sum() <= 12 + 20 * math.log10(len(mine))  # about 20 per decade of rows
    assert mine["judged_error"].iloc[-1] == pytest.approx(run["judged_error"], rel=1e-9)


@pytest.mark.parametrize("where", [[], ["--time-limit", "60"]], ids=["here", "in a killable worker"])
def test_solve_json_carries_the_hand_over(capsys, where):
    main(["solve", *CANNONBALL, "--formulation", "ncp", "--solver", "pqn", "--tol", str(TOL), "--json", *where])
    record = json.loads(capsys.readouterr().out)
    (h,) = record["handover"]
    assert record["handover_label"] == "ncp/pqn -> pgs fallback" and record["status"] == "solved"
    assert h["status_alone"] == "max_iter" and h["used"] and h["error_before"] > 100 * TOL
    assert h["at_iteration"] == record["iterations"] == 1000 and 0 < h["at_seconds"] < record["solve_seconds"]


def test_solve_text_carries_the_hand_over(capsys):
    main(["solve", *CANNONBALL, "--formulation", "ncp", "--solver", "pqn", "--tol", str(TOL)])
    text = capsys.readouterr().out
    assert "hand-over: ncp/pqn -> pgs fallback at iteration 1000" in text and "ncp/pqn alone: max_iter" in text
    main(["compare", *CANNONBALL, "-f", "ncp", "-s", "pqn", "--tol", str(TOL)])
    row = [line for line in capsys.readouterr().out.splitlines() if "| pqn |" in line]
    assert len(row) == 1 and "| solved (ncp/pqn -> pgs fallback; alone max_iter) |" in row[0]


def test_corpus_study_shows_the_hand_overs(tmp_path, shared_data):
    """The same on two corpus problems (Siconos data): PQN hands over to Gauss-Seidel on OneObject
    (non-symmetric W), the dual fixed point to Newton on FrictionContactProblem00031 (2D)."""
    (tmp_path / "study.toml").write_text("""
[study]
name = "handover-corpus"
time_limit = 60
tolerance = "corpus"
[tolerances.corpus]
tol = 1e-8
[[problems]]
files = ["shared:siconos/FrictionContactProblem00031.dat", "shared:siconos/OneObject-i1028-138.hdf5.dat"]
[methods.pqn]
formulation = "ncp"
solver = "pqn"
[methods.dfp]
formulation = "dual-fixed-point"
solver = "clarabel"
""")
    results, out = tmp_path / "results", tmp_path / "report"
    main(["run", str(tmp_path / "study.toml"), "--out", str(results), "--report-dir", str(out), "--no-progress"])
    runs = load_results(results).set_index(["problem", "method"])
    assert runs.loc[("OneObject-i1028-138.hdf5", "pqn"), "handover"] == "ncp/pqn -> pgs fallback"
    assert runs.loc[("FrictionContactProblem00031", "dfp"), "handover"] == "dual-fixed-point/clarabel + newton polish"
    handovers = pd.read_csv(out / "tables" / "handovers.csv").set_index("problem")
    assert handovers.loc["OneObject-i1028-138.hdf5", "status alone"] != "solved"
    assert handovers.loc["FrictionContactProblem00031", "status alone"] != "solved"
    summary = pd.read_csv(out / "tables" / "summary_exact_1e-08.csv").set_index("method")
    assert summary.loc["pqn", "solved %"] == 50 and summary.loc["pqn (+pgs fallback)", "solved %"] == 100
    assert summary.loc["dfp", "solved %"] == 50 and summary.loc["dfp (+newton polish)", "solved %"] == 100


def test_a_simulation_names_the_hand_overs_of_its_steps():
    """A simulation run records each step's hand-over and names them in its row and message: PQN
    with a budget of one iteration cannot finish the first step of the sliding box (cold start), its
    fallback does; the later steps start from the previous impulses and PQN finishes them alone."""
    from workbench.method import Method
    from workbench.solvers import SolveOptions
    from workbench.sources import Source
    from workbench.study.simulation import simulate

    run = simulate(Source.parse("scenario:box-on-plane", {"duration": 0.03, "h": 0.01}), Method("ncp", "pqn"),
                   SolveOptions(tol=1e-10, max_iter=1))
    steps = run["history"]
    assert steps["handover"].iloc[0] == "ncp/pqn -> pgs fallback" and run["status"] == "solved"
    handed = int((steps["handover"] != "").sum())
    assert run["handover_label"] == "ncp/pqn -> pgs fallback"
    assert f"{handed} of {len(steps)} steps: ncp/pqn -> pgs fallback" in run["message"]
    fig = plot.time_series(steps.assign(method="pqn"), title="box")
    marks = [line for line in fig.axes[0].lines if line.get_gid() == "handover"]
    assert len(marks) == 1 and len(marks[0].get_xdata()) == handed


@pytest.mark.parametrize("kind", ["fallback", "polish"])
def test_one_helper_runs_both_declared_hand_overs_by_their_rule(kind):
    """Recorder.hand_over: the second solver from the warm start with the time left, its own checked
    parameters and cap, and the record. A fallback's point is used whenever it returns one; a polish's
    only where it lowers the judged measure, which it cannot below a first point of error 0."""
    from formulations import get_formulation
    from problems.scenes import rolling_ball_2d
    from workbench.solvers import SolveOptions, SolveResult, StopCause, get_solver
    from workbench.solvers.recorder import Recorder

    problem = rolling_ball_2d()
    first = {"fallback": get_solver("pqn"), "polish": get_solver("clarabel")}[kind]
    declared = first.hands_over_to
    model = get_formulation("ncp" if kind == "fallback" else "dual-fixed-point").build(
        problem, "ncp" if kind == "fallback" else "cvxpy-fixed-point")
    options = SolveOptions(tol=1e-10, max_iter=1, time_limit=30.0)
    rec, result = Recorder(options, "siconos_error"), SolveResult(solver=first.name, formulation=model.formulation,
                                                                  status="failed")
    target = get_solver("pgs" if kind == "fallback" else declared.solver)
    second, used, after = rec.hand_over(declared, target, model, options, result, warm=np.zeros(problem.n_unknowns), source="f/s",
                                        reason="test", at_iteration=7, stop_before=StopCause.MAX_ITER,
                                        error_before=0.0)
    assert second.nu is not None and second.iterations is not None and second.iterations > 1  # its own cap, not max_iter 1
    (h,) = result.handover
    assert (h["kind"], h["to"], h["at_iteration"], h["stop_before"], h["measure"]) == \
        (kind, target.name, 7, "max_iter", "siconos_error")
    assert h["used"] is used and used == (kind == "fallback")
    assert (math.isnan(after) if kind == "fallback" else after >= 0.0)
