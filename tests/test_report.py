"""Reports: the accounting rule (not applicable excluded everywhere, unsolved = time limit) on a
crafted result set, the independent reference (never a method's own run), the numbers a report
summarises with (shifted geometric means, Dolan-More profiles, slopes), the published-results table,
simulation time series, the results API (load_results round trip, histories in one schema), the
comparison of two result sets, and the HTML page as a browser shows it (headless Chromium at
1,400 px: every figure loads, nothing overflows)."""

import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from problems.scenes import rolling_ball_2d, rolling_ball_2d_relaxed_impulse
from workbench.cli import main
from workbench.metrics import dual_objective
from workbench.report import read_report_data, write_report
from workbench.report.compare import write_comparison
from workbench.analysis.profiles import performance_profile
from workbench.analysis.stats import first_within, loglog_slope, shifted_geometric_mean
from workbench.study import load_histories, load_results
from workbench.study.results import to_history_schema
from workbench.study.store import ResultStore

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")

STUDY = """
[study]
name = "report-test"
time_limit = 60
repetitions = 2

[[problems]]
scenes = ["rolling-ball-2d"]
tags = ["ball"]

[[problems]]
generator = "sphere_packing"
sweep = { n_spheres = [4, 8] }
name = "spheres-{n_spheres}"
tags = ["packing"]
series = "packings"

[[problems]]
files = ["no-such-dataset/*.hdf5"]
optional = "make them with: workbench generate settled"

[[problems]]
scenario = "ball-on-plane-2d"
params = { duration = 0.35, h = 0.01 }
name = "ball-2d"

[methods.clarabel-dual]
label = "Clarabel, dual"
formulation = "dual"
solver = "clarabel"

[methods.apgd-dual]
label = "APGD, dual"
formulation = "dual"
solver = "apgd"
max_iter = 20000

[methods.apgd-anti]
label = "APGD, anti-relaxed"
formulation = "anti-relaxed"
solver = "apgd"

[reference]
solver = "clarabel"
formulations = ["dual"]
tol = 1e-10

[report]
reference_method = "clarabel-dual"
shift = 0.01

[[report.paper]]
what = "APGD iterations to the interior-point objective"
source = "made up for the test"
value = 10
method = "apgd-dual"
tag = "ball"
quantity = "iterations_to_reference"
rel_tol = 1e-4
"""


def run_and_report(root: Path) -> tuple[Path, Path]:
    """One small study run and reported in ``root``: (results dir, report dir); the session's fixture
    ``report`` (tests/conftest.py) runs it once for this module and test_report_top."""
    study = root / "study.toml"
    study.write_text(STUDY)
    results, out = root / "results", root / "report"
    assert main(["run", str(study), "--out", str(results), "--report-dir", str(out), "--no-progress"]) == 0
    return results, out


# --------------------------------------------------------------------------- statistics

def test_shifted_geometric_mean_against_hand_values():
    assert shifted_geometric_mean([0.0, 0.0], 10.0) == pytest.approx(0.0, abs=1e-12)
    assert shifted_geometric_mean([1.0, 4.0], 1.0) == pytest.approx(np.sqrt(10.0) - 1.0)
    assert shifted_geometric_mean([3.0, 3.0, 3.0], 10.0) == pytest.approx(3.0)
    with pytest.raises(ValueError):
        shifted_geometric_mean([1.0, np.inf])


def test_performance_profile_of_a_hand_example():
    # best times per problem 1, 1, 3: ratios A = 1, 2, inf and B = 2, 1, 1
    times = pd.DataFrame({"A": [1.0, 2.0, np.inf], "B": [2.0, 1.0, 3.0]}, index=["p1", "p2", "p3"])
    rho = performance_profile(times, taus=[1.0, 1.5, 2.0, np.inf])
    np.testing.assert_allclose(rho["A"], [1 / 3, 1 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(rho["B"], [2 / 3, 2 / 3, 1.0, 1.0])
    # a problem nobody solves stays in the denominator
    rho = performance_profile(pd.DataFrame({"A": [1.0, np.inf]}), taus=[np.inf])
    assert rho["A"].iloc[0] == 0.5
    # a problem a method cannot take (NaN) leaves its denominator and the best time
    times = pd.DataFrame({"A": [1.0, np.nan], "B": [2.0, 5.0]}, index=["p1", "p2"])
    rho = performance_profile(times, taus=[1.0, 2.0])
    np.testing.assert_allclose(rho["A"], [1.0, 1.0])
    np.testing.assert_allclose(rho["B"], [0.5, 1.0])


def test_loglog_slope_and_first_point_within_a_tolerance():
    x = np.array([10.0, 100.0, 1000.0])
    assert loglog_slope(x, 3.0 * x ** 1.5) == pytest.approx(1.5)
    assert np.isnan(loglog_slope([5.0, 5.0], [1.0, 2.0]))
    objective = -1.0 + np.array([0.5, 1e-2, 1e-3, 2e-5, 1e-7])
    assert first_within([1, 2, 3, 4, 5], objective, -1.0, 5e-5) == 4
    assert np.isnan(first_within([1, 2], [0.0, 0.0], -1.0, 1e-3))


# --------------------------------------------------------------------------- a crafted result set

#: (problem, method) -> per repetition (status, solve seconds, iterations, judged error, objective)
CRAFTED = {
    # A is fastest where all can run; C ("primal") is a bit slower but cannot take p3, where A and B fail
    ("p1", "A"): [("solved", 1.0, 10, 1e-7, -1.0), ("solved", 1.2, 10, 1e-7, -1.0), ("solved", 0.9, 10, 1e-7, -1.0)],
    ("p2", "A"): [("solved", 2.0, 20, 1e-7, -2.0)] * 3,
    ("p3", "A"): [("max_iter", 50.0, 500, 1e-3, -2.9)] * 3,
    ("p1", "B"): [("solved", 4.0, 5, 1e-9, -1.0000001)] * 3,
    ("p2", "B"): [("solved", 8.0, 6, 1e-9, -2.0000001)] * 3,
    ("p3", "B"): [("timeout", None, None, None, None)] * 3,
    ("p1", "C"): [("solved", 1.5, 12, 1e-7, 1.0)] * 3,
    ("p2", "C"): [("solved", 2.5, 22, 1e-7, 2.0)] * 3,
    ("p1", "D"): [("unavailable", None, None, None, None)] * 3,
    ("p2", "D"): [("unavailable", None, None, None, None)] * 3,
    ("p3", "D"): [("unavailable", None, None, None, None)] * 3,
}
TIME_LIMIT = 100.0


def _crafted(root: Path, scale: float = 1.0, data=CRAFTED) -> Path:
    """A results directory written the way the runner writes one (plan, one parquet row per run,
    histories), with the numbers of ``data`` (times multiplied by ``scale``)."""
    store = ResultStore(root)
    methods = [{"method": m, "label": f"method {m}", "formulation": "primal" if m == "C" else "dual",
                "solver": m.lower(), "tolerance": "default", "tol": 1e-6, "accept": None, "max_iter": None,
                "params": {}} for m in "ABCD"]
    problems = [{"problem": p, "source": f"{p}.npz", "problem_hash": p, "tags": ["crafted"], "kind":
                 "local" if p == "p3" else "global", "n_contacts": 10, "n_dof": 6, "d": 3, "params": None,
                 "series": None} for p in ("p1", "p2", "p3")]
    runs = []
    for (problem, method), reps in data.items():
        for rep, (status, t, it, err, obj) in enumerate(reps):
            key = f"{problem}-{method}-{rep}"
            runs.append({"key": key, "problem": problem, "method": method, "repetition": rep})
            row = {"key": key, "study": "crafted", "role": "compared", "problem": problem, "problem_hash": problem,
                   "source": f"{problem}.npz", "tags": "crafted", "series": None,
                   "kind": "local" if problem == "p3" else "global", "n_contacts": 10, "method": method,
                   "label": f"method {method}", "formulation": "primal" if method == "C" else "dual",
                   "solver": method.lower(), "tolerance": "default", "tol": 1e-6, "accept": None,
                   "time_limit": TIME_LIMIT, "repetition": rep, "status": status,
                   "solve_seconds": None if t is None else t * scale, "build_seconds": 0.0 if t else None,
                   "iterations": it, "objective": obj, "judged_error": err, "relaxed_error": err,
                   "message": "no licence" if status == "unavailable" else ""}
            history = None
            if it:  # a history in the store's schema: the objective closing on its final value
                k = np.arange(1, it + 1)
                history = pd.DataFrame({"iteration": k, "seconds": k * t * scale / it,
                                        "objective": obj + 1.0 / k ** 2, "error_name": "relaxed_error",
                                        "error": err * it / k, "problem": problem, "method": method,
                                        "repetition": rep})
            store.write_run(row, history)
    store.write_json("plan.json", {
        "study": "crafted", "description": "", "time_limit": TIME_LIMIT, "repetitions": 3,
        "report": {"sections": ["summary", "conclusion", "tables", "convergence", "profiles"],
                   "reference_method": None, "convergence": "error", "shift": 1.0, "time": "solve",
                   "target": 1e-6, "paper": []},
        "methods": methods, "problems": problems, "runs": runs,
        "skipped": [{"problem": "p3", "method": "C", "reason": "formulation primal needs M, D"}],
        "missing": [], "references": [], "reference_runs": []})
    return root


def test_accounting_rule_not_applicable_is_excluded_and_never_ranked_first(tmp_path):
    """C cannot take p3, on which A and B fail: C's success rate is over its 2 problems (100 %), A's
    and B's over 3 (67 %); D is unavailable everywhere and fails nowhere; the ranking is over the
    problems all ranked methods take (p1, p2), where A is fastest, so C is not ranked first although
    its mean over its own problems would be the smallest. Summary, profile and conclusion agree."""
    out = tmp_path / "report"
    write_report(_crafted(tmp_path / "results"), out)
    summary = pd.read_csv(out / "tables" / "summary_relaxed_1e-06.csv", index_col="method")
    assert summary.loc["A", "solved %"] == pytest.approx(200 / 3)
    assert summary.loc["B", "solved %"] == pytest.approx(200 / 3)
    assert summary.loc["C", "solved %"] == 100.0
    assert summary.loc["C", "problems"] == 2 and summary.loc["C", "not applicable"] == 1
    assert summary.loc["D", "problems"] == 0 and np.isnan(summary.loc["D", "rank"])
    assert summary.loc["A", "rank"] == 1 and summary.loc["C", "rank"] == 2 and summary.loc["B", "rank"] == 3
    # the shifted geometric mean over the common problems p1, p2 (A on p1: median of 1.0, 1.2, 0.9)
    assert summary.loc["A", "sgm time [s]"] == pytest.approx(shifted_geometric_mean([1.0, 2.0], 1.0))
    # its spread: the interquartile range of the means of each repetition alone (A on p1: 1.0, 1.2, 0.9)
    rounds = [shifted_geometric_mean([t, 2.0], 1.0) for t in (1.0, 1.2, 0.9)]
    assert summary.loc["A", "sgm time low"] == pytest.approx(np.percentile(rounds, 25))
    assert summary.loc["A", "sgm time high"] == pytest.approx(np.percentile(rounds, 75))
    assert summary.loc["A", "sgm time low"] > shifted_geometric_mean([0.9, 2.0], 1.0)  # not the extreme round
    assert summary.loc["C", "time / best"] == pytest.approx(shifted_geometric_mean([1.5, 2.5], 1.0)
                                                            / shifted_geometric_mean([1.0, 2.0], 1.0))
    # the profile: rho(inf) is the success rate over the method's own problems
    profile = pd.read_csv(out / "tables" / "profile_relaxed_1e-06.csv", index_col="method")
    for m in "ABC":
        assert profile.loc[f"method {m}", "time rho(inf)"] * 100 == pytest.approx(summary.loc[m, "solved %"])
    assert profile.loc["method A", "time rho(1)"] == pytest.approx(2 / 3)  # fastest on p1, p2 of its 3
    assert profile.loc["method C", "time rho(1)"] == 0.0
    assert profile.loc["method B", "iterations rho(1)"] == pytest.approx(2 / 3)  # fewest iterations
    assert np.isnan(profile.loc["method D", "time rho(inf)"])
    text = (out / "index.md").read_text()
    assert "Accounting rule" in text.split("## Summary")[0]
    conclusion = pd.read_csv(out / "tables" / "stopping_threshold.csv", index_col=0)
    row = conclusion.iloc[0]
    assert row["first to its own threshold"] == "method A" and row["next"] == "method C" and row["common problems"] == 2
    ratio = shifted_geometric_mean([1.5, 2.5], 1.0) / shifted_geometric_mean([1.0, 2.0], 1.0)
    assert row["next / first"].startswith(f"{ratio:.4g} (") and row["within noise"] == "no"
    assert "method C 100 (2)" in row["solved % (of problems it can take)"]
    caveats = text.split("## Conclusion")[1].split("\n## ")[0]
    assert "no method solved p3" in caveats
    assert "not applicable, left out" in caveats and "unavailable, left out" in caveats
    status = pd.read_csv(out / "tables" / "status.csv", index_col="problem")
    assert status.loc["p3", "method C"] == "not applicable"


def test_conclusion_names_a_tie_when_the_fastest_methods_are_within_noise(tmp_path):
    """C's repetitions on p1, p2 overlap A's (C is a little slower by the median): the verdict is a tie
    naming both, in the study's order, whichever of them the medians favour; B, far slower, is left out."""
    tied = {**CRAFTED, ("p1", "C"): [("solved", 1.1, 12, 1e-7, 1.0), ("solved", 0.8, 12, 1e-7, 1.0),
                                     ("solved", 1.3, 12, 1e-7, 1.0)],
            ("p2", "C"): [("solved", 2.0, 22, 1e-7, 2.0), ("solved", 1.9, 22, 1e-7, 2.0),
                          ("solved", 2.2, 22, 1e-7, 2.0)]}
    for scale_c, label in ((1.0, "A"), (0.9, "C")):  # either may be the faster by its median
        data = {k: ([(s, None if x is None else x * scale_c, *rest) for s, x, *rest in v] if k[1] == "C" else v)
                for k, v in tied.items()}
        out = tmp_path / label
        write_report(_crafted(tmp_path / f"results-{label}", data=data), out)
        row = pd.read_csv(out / "tables" / "stopping_threshold.csv", index_col=0).iloc[0]
        assert row["first to its own threshold"] == "tie within noise: method A, method C", row["first to its own threshold"]
        assert row["within noise"] == "yes"
        summary = pd.read_csv(out / "tables" / "summary_relaxed_1e-06.csv", index_col="method")
        assert summary["rank"].idxmin() == label  # the medians did favour a different one each time


def test_one_slow_repetition_per_problem_does_not_hide_a_clear_winner(tmp_path):
    """A takes 1 s on every run but one slow repetition (4 s) on each problem, each in a different
    round; B takes 2 s always. Each round alone gives A a mean below B's 2 s (shift 1 s: 20^(1/3) - 1
    = 1.71 s): A is named fastest. The mean of every problem's slowest repetition (4 s) is not a mean
    any round produced, and would have called it a tie."""
    slow = {"p1": 0, "p2": 1, "p3": 2}
    data = {(p, m): [("solved", 4.0 if m == "A" and slow[p] == k else (1.0 if m == "A" else 2.0), 10, 1e-7, -1.0)
                     for k in range(3)] for p in slow for m in ("A", "B")}
    write_report(_crafted(tmp_path / "results", data=data), tmp_path / "report")
    summary = pd.read_csv(tmp_path / "report" / "tables" / "summary_relaxed_1e-06.csv", index_col="method")
    assert summary.loc["A", "sgm time [s]"] == pytest.approx(1.0)
    assert summary.loc["A", "sgm time low"] == pytest.approx(1.0)
    assert summary.loc["A", "sgm time high"] == pytest.approx(20 ** (1 / 3) - 1)
    assert summary.loc["A", "sgm time high"] == pytest.approx(shifted_geometric_mean([4.0, 1.0, 1.0], 1.0))
    assert summary.loc["B", "sgm time low"] == summary.loc["B", "sgm time high"] == pytest.approx(2.0)
    row = pd.read_csv(tmp_path / "report" / "tables" / "stopping_threshold.csv", index_col=0).iloc[0]
    assert row["first to its own threshold"] == "method A" and row["within noise"] == "no", row


def test_one_stalled_repetition_of_five_decides_nothing(tmp_path):
    """On one problem A takes 0.9-1.1 s in four repetitions and 3 s in one (the machine stalled); B takes
    2 s. The spread is the second fastest to the second slowest repetition (1.0-1.1 s), so A is named
    fastest; the stalled repetition would have made its min-max range (0.9-3 s) cover B's."""
    data = {("p1", "A"): [("solved", t, 10, 1e-7, -1.0) for t in (1.0, 3.0, 1.1, 0.9, 1.0)],
            ("p1", "B"): [("solved", 2.0, 10, 1e-7, -1.0)] * 5}
    write_report(_crafted(tmp_path / "results", data=data), tmp_path / "report")
    summary = pd.read_csv(tmp_path / "report" / "tables" / "summary_relaxed_1e-06.csv", index_col="method")
    assert summary.loc["A", ["sgm time [s]", "sgm time low", "sgm time high"]].tolist() == pytest.approx([1.0, 1.0, 1.1])
    row = pd.read_csv(tmp_path / "report" / "tables" / "stopping_threshold.csv", index_col=0).iloc[0]
    assert row["first to its own threshold"] == "method A" and row["within noise"] == "no", row


def test_within_noise_overlapping_ranges_or_a_gap_under_the_resolution():
    """Ranges that overlap are noise; separated ranges are told apart only when the gap is at least 5 %
    of the shifted times: 0.3 ms against 0.4 ms is a tie at a 10 ms shift and not at a 0.1 ms one; 10 s
    against 10.4 s is a tie, 10 s against 12 s is not."""
    from workbench.report.conclusion import within_noise

    def row(lo, hi):
        return pd.Series({"sgm time low": lo, "sgm time high": hi})

    assert within_noise(row(1.0, 2.0), row(1.5, 3.0), 1e-9)
    assert within_noise(row(3e-4, 3e-4), row(4e-4, 4e-4), 0.01)  # 10.4 / 10.3 - 1 = 1 %
    assert not within_noise(row(3e-4, 3e-4), row(4e-4, 4e-4), 1e-4)  # 5 / 4 - 1 = 25 %
    assert within_noise(row(9.0, 10.0), row(10.4, 11.0), 0.01)
    assert not within_noise(row(9.0, 10.0), row(12.0, 13.0), 0.01)
    assert within_noise(row(10.0, 10.0), row(10.0 * 1.05 + 0.05 * 0.01, 11.0), 0.01)  # exactly 5 %: a tie
    assert not within_noise(row(1.0, np.nan), row(1.0, 2.0), 0.01)


def test_a_study_that_kept_no_history_still_gets_its_report(tmp_path):
    """A study with histories = false: no run has a history file; the report's tables (time to target
    among them) are written from the runs alone, with no crash."""
    root = _crafted(tmp_path / "results")
    for f in ResultStore(root).histories_dir.glob("*.parquet"):
        f.unlink()
    index = write_report(root, tmp_path / "report")
    assert index.is_file() and "## Conclusion" in (tmp_path / "report" / "index.md").read_text()


def test_reference_is_never_the_method_s_own_run(tmp_path):
    """On p1, B is the most accurate point: every other method is measured against B, and B against
    the best of the others (A), never against itself."""
    res = read_report_data(_crafted(tmp_path / "results"))
    refs = res.references()
    assert refs.best("p1", "dual").method == "B"
    assert refs.for_method("p1", "dual", "A").method == "B"
    assert refs.for_method("p1", "dual", "B").method == "A"
    assert refs.for_method("p1", "primal", "C") is None  # no other primal run: no distance, not a fake one
    assert refs.for_method("p3", "dual", "A") is None  # nobody solved p3
    for run in res.runs.itertuples():
        ref = refs.for_method(run.problem, run.formulation, run.method)
        assert ref is None or ref.method != run.method


def test_exact_formulations_share_a_reference_and_relaxed_ones_another():
    """Anti-relaxed, fixed-point and NCP runs solve the exact problem and report the relaxed dual
    objective at their impulses: one class; the relaxed dual and the primal objectives are others."""
    from workbench.report.reference import objective_class
    exact = {objective_class(f) for f in ("anti-relaxed", "dual-fixed-point", "ncp")}
    assert len(exact) == 1
    assert len({objective_class("dual"), *exact, objective_class("primal"), objective_class("primal-fixed-point"),
                objective_class("lcp-pyramid")}) == 5


def test_load_results_round_trips_and_histories_have_one_schema(tmp_path):
    root = _crafted(tmp_path / "results")
    runs = load_results(root)
    assert len(runs) == sum(len(v) for v in CRAFTED.values())
    for (problem, method), reps in CRAFTED.items():
        for rep, (status, t, it, err, obj) in enumerate(reps):
            row = runs[(runs["problem"] == problem) & (runs["method"] == method) & (runs["repetition"] == rep)]
            assert len(row) == 1 and row["status"].iloc[0] == status
            if status != "unavailable" and t is not None:
                assert row["solve_seconds"].iloc[0] == t and row["iterations"].iloc[0] == it
                assert row["judged_error"].iloc[0] == err and row["objective"].iloc[0] == obj
    hist = load_histories(root)
    assert list(hist.columns[:9]) == ["key", "problem", "method", "repetition", "iteration", "seconds", "objective",
                                      "error_name", "error"]
    one = hist[hist["key"] == "p2-A-0"]
    assert len(one) == 20 and one["seconds"].iloc[-1] == pytest.approx(2.0)
    # a store written before the schema: converted in one place
    old = pd.DataFrame({"iteration": [1, 2], "elapsed": [0.1, 0.2], "dual_objective": [-1.0, -1.5],
                        "res_primal": [1e-2, 1e-4], "res_dual": [1e-3, 1e-5], "key": "k"})
    new = to_history_schema(old)
    assert list(new["seconds"]) == [0.1, 0.2] and list(new["objective"]) == [-1.0, -1.5]
    assert set(new["error_name"]) == {"max(res_primal, res_dual)"} and list(new["error"]) == [1e-2, 1e-4]


def test_report_a_b_compares_method_by_method_with_spread(tmp_path):
    a = _crafted(tmp_path / "a")
    b = _crafted(tmp_path / "b", scale=0.5)
    index = write_comparison(a, b, tmp_path / "cmp")
    assert index.is_file()
    per_problem = pd.read_csv(tmp_path / "cmp" / "tables" / "per_problem.csv", index_col="problem")
    text = (tmp_path / "cmp" / "index.md").read_text()
    assert "| method A" in text and "Methods in only one" not in text
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "cmp2")]) == 0
    # B is A with every time halved; p3, solved by neither, is the time limit in both
    rows = per_problem[per_problem["method"] == "B"]
    np.testing.assert_allclose(rows["ratio"], [0.5, 0.5, 1.0])
    a_rows = per_problem[per_problem["method"] == "A"]
    assert a_rows.loc["p1", "ratio_min"] == pytest.approx(0.45 / 1.2)  # B's fastest over A's slowest
    assert not a_rows.loc["p1", "noise"] and a_rows.loc["p3", "noise"]
    per_method = pd.read_csv(tmp_path / "cmp" / "tables" / "per_method.csv", index_col="method")
    assert per_method.loc["method C", "problems"] == 2  # p3 is not applicable: left out, not compared
    assert "D" not in " ".join(per_method.index)  # unavailable in both
    assert main(["report", str(a), str(b), str(a)]) == 2
    assert main(["report", str(a), "--out", str(tmp_path / "one")]) == 0 and (tmp_path / "one" / "index.html").is_file()


# --------------------------------------------------------------------------- a real study, reported

def test_report_numbers_come_from_the_runs(report):
    results, out = report
    runs = load_results(results)
    assert len(runs) == 4 * 3 * 2 and (runs["status"] == "solved").all(), runs[["problem", "method", "status"]]
    res = read_report_data(results)
    assert res.plan["missing"] and "make them with: workbench generate settled" in res.plan["missing"][0]
    # the dedicated reference runs: one per single-step problem, dual only, not among the compared rows
    assert len(res.reference_runs) == 3 and set(res.reference_runs["method"]) == {"reference/dual"}
    assert not set(res.reference_runs["key"]) & set(runs["key"])
    # reference objective of the rolling ball: the closed-form relaxed optimum
    refs = res.references()
    ball_ref = refs.for_method("rolling-ball-2d", "dual", "apgd-dual")
    assert ball_ref.method != "apgd-dual"
    assert ball_ref.objective == pytest.approx(dual_objective(rolling_ball_2d(), rolling_ball_2d_relaxed_impulse()),
                                               rel=1e-6)
    for run in runs[runs["kind"] != "simulation"].itertuples():
        ref = refs.for_method(run.problem, run.formulation, run.method)
        assert ref is None or ref.method != run.method
    # the published-results table's measured value: the first APGD iteration within 1e-4 of that reference
    apgd = runs[(runs["problem"] == "rolling-ball-2d") & (runs["method"] == "apgd-dual")]
    expected = []
    for key in apgd["key"]:
        h = load_histories(results, [key])
        close = np.abs(h["objective"].to_numpy() - ball_ref.objective) <= 1e-4 * abs(ball_ref.objective)
        assert close.any()
        expected.append(h["iteration"].to_numpy()[np.argmax(close)])
    paper = pd.read_csv(out / "tables" / "paper.csv")
    assert paper["paper"].iloc[0] == 10 and paper["median"].iloc[0] == np.median(expected) and paper["runs"].iloc[0] == 2
    # both sides' problem and criterion with its threshold; the study file names neither for the paper
    assert "rolling-ball-2d" in paper["this study's problems"].iloc[0]
    assert "<= 0.0001 |f_ref|" in paper["this study's criterion"].iloc[0]
    assert paper["comparable"].iloc[0].startswith("not stated")
    # objective table: medians with their spread
    objective = pd.read_csv(out / "tables" / "objective.csv")
    mine = objective[(objective["problem"] == "spheres-8") & (objective["method"] == "clarabel-dual")]
    values = runs.loc[(runs["problem"] == "spheres-8") & (runs["method"] == "clarabel-dual"), "objective"]
    assert mine["median"].iloc[0] == pytest.approx(values.median()) and mine["min"].iloc[0] == values.min()
    # relaxed and exact methods solve different problems: summarised (and ranked) apart
    summary = pd.read_csv(out / "tables" / "summary_relaxed_1e-06.csv", index_col="method")
    assert list(summary.index) == ["clarabel-dual", "apgd-dual"] and list(summary["solved %"]) == [100.0, 100.0]
    exact = pd.read_csv(out / "tables" / "summary_exact_1e-06.csv", index_col="method")
    assert list(exact.index) == ["apgd-anti"] and exact.loc["apgd-anti", "rank"] == 1
    text = (out / "index.md").read_text()
    for heading in ("## Summary", "## Conclusion", "## Published results beside this study's", "## Convergence",
                    "## Scaling", "## Performance profiles", "## Time series", "## Known limitations",
                    "## Machine and versions", "## Methods"):
        assert heading in text
    assert "A problem group was skipped" in text
    assert "fitted within this series only" in text and "series packings" in text
    # LaTeX through the Styler: booktabs rules, numbers at 4 significant digits; markdown text left-aligned
    tex = (out / "tables" / "objective.tex").read_text()
    assert "\\toprule" in tex and "\\bottomrule" in tex and "\\begin{table}" in tex
    assert "0.000" not in tex and not any(len(tok) > 40 for tok in tex.split())
    status_md = text.split("Status.")[1].split("\n\n")[1]
    assert status_md.splitlines()[1].startswith("|:---")  and ":|" not in status_md.splitlines()[1]


def test_convergence_figure_has_one_error_measure_per_panel_and_median_bands(report, tmp_path):
    from workbench import plot

    res = read_report_data(report[0])
    runs = res.static[res.static["problem"] == "spheres-8"]
    refs = res.references()
    per_method = {m: refs.for_method("spheres-8", f, m) for m, f in zip(runs["method"], runs["formulation"])}
    fig = plot.convergence(load_histories(report[0], runs["key"]), runs, problem="spheres-8", references=per_method,
                           labels=res.labels, methods=res.methods)
    rows = [ax.get_ylabel() for ax in fig.axes[::2]]
    judged = {plot.MEASURES["relaxed_error"]: "relaxed_error", plot.MEASURES["siconos_error"]: "siconos_error"}
    rows = [f"judged: {judged[r]}" if r in judged else r for r in rows]  # the table's labels, by measure
    assert len(rows) == len(set(rows)) >= 3 and rows[1:3] == ["judged: relaxed_error", "judged: siconos_error"]
    gids = [{line.get_gid() for line in ax.lines} for ax in fig.axes[::2]]
    # anti-relaxed APGD is the only exact method: no other run is a reference, so no distance is drawn
    assert per_method["apgd-anti"] is None and "curve:apgd-anti" not in gids[0]
    for method in per_method:
        assert (f"curve:{method}" in gids[0]) == (per_method[method] is not None), method
        # each method is on the one judged row of its measure: its iterates' curve, or (Clarabel: no
        # iterates exposed) its returned point alone
        on = [r for r, g in zip(rows, gids) if r.startswith("judged") and {f"curve:{method}", f"returned:{method}"} & g]
        assert on == ["judged: siconos_error" if method == "apgd-anti" else "judged: relaxed_error"], method
    # Clarabel's judged "curve" is its last logged row only, the returned point's value
    clarabel = [line for line in fig.axes[2].lines if line.get_gid() == "curve:clarabel-dual"]
    assert clarabel and all(len(set(line.get_xdata())) == 1 for line in clarabel)
    plot.save(fig, tmp_path / "c.png")
    assert (tmp_path / "c.png").is_file() and (tmp_path / "c.svg").is_file()


def test_relaxed_ball_leaves_the_analytic_curve_and_the_exact_one_follows_it(report):
    """Melanz et al. 2015 section 3.1 / Mazhar et al. 2014 section 5.3.1: with the relaxed (dual) formulation the sliding
    ball's velocities depart from the analytic ones (it lifts off: v_n != 0); anti-relaxed, they
    agree."""
    runs = load_results(report[0])
    sims = runs[(runs["kind"] == "simulation") & (runs["repetition"] == 0)].set_index("method")
    assert (sims["steps"] == 35).all()
    assert sims.loc["apgd-anti", "analytic_error"] < 1e-3
    assert sims.loc["clarabel-dual", "analytic_error"] > 0.05
    assert sims.loc["apgd-anti", "complementarity"] < 1e-5 < sims.loc["clarabel-dual", "complementarity"]
    hist = ResultStore(report[0]).read_histories(sims["key"])
    assert set(hist["method"]) == set(sims.index) and len(hist) == 3 * 35
    assert {"t", "v_slope", "v_slope_analytic", "rolling", "complementarity"} <= set(hist.columns)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links, self.tables = [], [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a["src"])
        elif tag == "a" and not a["href"].startswith("#"):
            self.links.append(a["href"])
        elif tag == "table":
            self.tables += 1


def test_every_figure_and_file_the_report_names_exists(report):
    _, out = report
    page = _Links()
    page.feed((out / "index.html").read_text())
    assert page.tables >= 10
    names = {Path(p).name for p in page.images}
    assert {"profile-time-relaxed_1e-06.png", "profile-iterations-relaxed_1e-06.png", "scaling-packings.png",
            "convergence-rolling-ball-2d.png", "timeseries-ball-2d.png"} <= names
    for path in page.images + page.links:
        assert (out / path).is_file(), path
    for path in page.images:
        assert (out / path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / path).with_suffix(".svg").read_text().lstrip().startswith("<?xml")


def _render_in_chromium(index: Path, screenshot: Path | None = None) -> dict:
    """Load ``index`` in headless Chromium at 1,400 x 900 px: what the first window shows (``top``), then,
    with every folded part opened, its title, [src, complete, naturalWidth,
    shown width] of every image, [rows, shown height, right edge, overflowing] of every table, the
    page's scroll width and the window's width; a screenshot when asked."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("headless Chromium is not installed (/usr/bin/chromium and /usr/bin/chromedriver; "
                    "Debian: apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,900", "--hide-scrollbars"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.get(index.resolve().as_uri())
        # the first window as a reader sees it, before any folded part is opened
        top = driver.execute_script(
            "const img = document.images[0], t = document.querySelector('table'),"
            " r = document.getElementById('accounting-rule');"
            "return {h2: (document.querySelector('h2') || {}).textContent, leads: Array.from("
            "document.querySelectorAll('p.lead')).filter(p => p.getBoundingClientRect().bottom < innerHeight)"
            ".map(p => p.textContent), img: img ? [img.getAttribute('src'), img.getBoundingClientRect().top] : null,"
            " table_top: t ? t.getBoundingClientRect().top : null, rule_folded: r ? !r.open : null,"
            " folded: Array.from(document.querySelectorAll('details')).filter(d => !d.open).length}")
        driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
        page = {"title": driver.title, "top": top,
                "images": driver.execute_script(
                    "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth,"
                    " i.getBoundingClientRect().width])"),
                "tables": driver.execute_script(
                    "return Array.from(document.querySelectorAll('table')).map(t => [t.rows.length,"
                    " t.getBoundingClientRect().height, t.getBoundingClientRect().right,"
                    " t.scrollWidth > t.clientWidth + 1])"),
                "scroll_width": driver.execute_script("return document.documentElement.scrollWidth"),
                "width": driver.execute_script("return window.innerWidth")}
        if screenshot is not None:
            driver.save_screenshot(str(screenshot))
        return page
    finally:
        driver.quit()


def _assert_renders(page: dict, min_images: int, min_tables: int) -> None:
    images, tables = page["images"], page["tables"]
    assert len(images) >= min_images and len(tables) >= min_tables
    for src, complete, natural_width, shown_width in images:
        assert complete and natural_width > 0 and shown_width > 0, f"broken image {src}"
    assert page["width"] == 1400 and page["scroll_width"] <= page["width"], "the page scrolls sideways"
    for rows, height, right, overflowing in tables:
        assert rows >= 2 and height > 0
        assert right <= page["width"] and not overflowing, "a table is cut off"


def test_html_report_renders_in_headless_chromium_without_overflow(report, tmp_path):
    shot = tmp_path / "screenshot.png"
    page = _render_in_chromium(report[1] / "index.html", shot)
    assert page["title"] == "Study report-test"
    _assert_renders(page, 7, 10)
    # the screenshot shows the page: 1,400 px wide, and not blank
    from matplotlib.image import imread
    pixels = imread(shot)
    assert pixels.shape[1] == 1400 and pixels[..., :3].std() > 0.05


@pytest.mark.slow
def test_quickstart_study_gives_a_report_with_tables_convergence_and_profiles(tmp_path):
    """The README's main command: studies/quickstart.toml, then its report in a browser. One repetition
    (``--repetitions 1``, a third of its runs): every problem and method of the study, and every section of
    its report, as in the README's command (whose three repetitions bench_cold_start runs in full)."""
    study = Path(__file__).resolve().parents[1] / "studies" / "quickstart.toml"
    out = tmp_path / "report"
    assert main(["run", str(study), "--out", str(tmp_path / "results"), "--report-dir", str(out), "--jobs", "2",
                 "--repetitions", "1", "--no-progress"]) == 0
    runs = load_results(tmp_path / "results")
    assert len(runs) == len(json.loads((tmp_path / "results" / "plan.json").read_text())["runs"]) > 0
    page = _Links()
    page.feed((out / "index.html").read_text())
    names = {Path(p).name for p in page.images}
    assert any(n.startswith("profile-time") for n in names) and any(n.startswith("convergence-") for n in names)
    rendered = _render_in_chromium(out / "index.html")
    assert rendered["title"] == "Study quickstart"
    _assert_renders(rendered, 3, 3)


def test_published_values_on_data_made_otherwise_are_not_comparable():
    """A [[report.paper]] entry whose paper_params differ from the generator parameters stored beside a
    measured file is marked not comparable, naming the parameter; a declared reason wins."""
    from workbench.report.paper import _comparable

    entry = {"paper_problem": "320 spheres, h = 0.0005 s", "paper_criterion": "contacts",
             "paper_params": [["h", 0.0005], ["steps", 8000.0]]}
    verdict = _comparable(entry, {"settled-00320": {"h": 0.005, "steps": 800}})
    assert verdict.startswith("no: ") and "h = 0.005 (paper 0.0005)" in verdict and "steps = 800 (paper 8000)" in verdict
    assert _comparable(entry, {"settled-00320": {"h": 0.0005, "steps": 8000}}).startswith("yes")
    assert "no generator parameters" in _comparable(entry, {"scene": None})
    assert _comparable({**entry, "not_comparable": "other solver"}, {}) == "no: other solver"
    assert _comparable({"paper_problem": "p"}, {}).startswith("not stated")


def test_published_values_read_the_dataset_manifest_and_the_quickstart_rows_say_why_they_are_not_comparable():
    """The generator parameters of a committed packing come from problems/datasets/MANIFEST.json. The
    quickstart's settled and unsettled rows are measured on the members of the 64-sphere families: the
    paper's sec. 5.1 protocol (h = 0.0005 s, 8,000 steps, 10,000 or 10 iterations per step) holds on each
    member, and the rows are not comparable with the paper's only because of the size (320 spheres there),
    which the verdict names; the other family's cap breaks the protocol too, and is named."""
    import tomllib
    from pathlib import Path

    from problems.families import members
    from workbench.report.paper import _comparable
    from workbench.sources import Source

    settled, unsettled = (Source.parse(f"dataset:{n}-00320").metadata() for n in ("settled", "unsettled"))
    assert (settled["h"], settled["steps"], settled["max_iter"]) == (0.0005, 8000, 10000)
    assert (unsettled["h"], unsettled["steps"], unsettled["max_iter"]) == (0.0005, 8000, 10)
    assert Source.parse("scene:rolling-ball-2d").metadata() is None
    study = tomllib.loads((Path(__file__).resolve().parents[1] / "studies" / "quickstart.toml").read_text())
    made = {tag: {m: Source.parse(f"dataset:{m}").metadata() for m in members(tag, 5)}
            for tag in ("settled-00064", "unsettled-00064")}
    for e in study["report"]["paper"]:
        params = list(e.get("paper_params", {}).items())
        entry = {**e, "paper_params": params}
        verdict = _comparable(entry, made[e["tag"]], pd.Series(dtype=float))
        assert verdict.startswith("no: "), (e["what"], verdict)
        if not e.get("not_comparable"):
            assert verdict == "no: n = 64 (paper 320) on 5 problems (" + f"{e['tag']}-m00, ...)", verdict
        protocol = {**entry, "not_comparable": None, "paper_params": [p for p in params if p[0] != "n"]}
        assert _comparable(protocol, made[e["tag"]], pd.Series(dtype=float)).startswith("yes")
        other = made["unsettled-00064" if e["tag"] == "settled-00064" else "settled-00064"]
        assert "max_iter" in _comparable(protocol, other, pd.Series(dtype=float))
    reached = {**study["report"]["paper"][-1], "paper_params": [], "not_comparable": None}
    assert "not reached" not in _comparable(reached, {}, pd.Series([500.0, 700.0]))
    assert "within rel_tol of the reference on 1 of 2 problems" in _comparable(reached, {}, pd.Series([500.0, np.inf]))
    both = {**reached, "paper_params": [("n", 320)]}
    verdict = _comparable(both, {"settled-00064-m00": {"n": 64}}, pd.Series([np.inf]))
    assert "on 1 of 1 problems" in verdict and "n = 64 (paper 320)" in verdict


def test_the_quickstart_draws_the_convergence_of_one_member_per_family_and_names_the_others(tmp_path):
    """[report] convergence_members = N: of each dataset family only its first N members' convergence figures
    (in the plan's order), every other problem's always; the study file refuses a count that is not a positive
    whole number in one line. The quickstart asks for 1 of its 10 members per family, on one repetition (the
    spread that decides its conclusions is the one over members)."""
    import tomllib

    from workbench.errors import InputError
    from workbench.report.sections import _convergence_problems
    from workbench.study.spec import load_study

    problems = ["rolling-ball-2d", "settled-00064-m00", "unsettled-00064-m00", "settled-00064-m01",
                "settled-00064-m02", "unsettled-00064-m01", "unsettled-00064-m02", "scaling-00064"]
    assert _convergence_problems(problems, None) == (problems, [])
    assert _convergence_problems(problems, 2) == (
        ["rolling-ball-2d", "settled-00064-m00", "unsettled-00064-m00", "settled-00064-m01", "unsettled-00064-m01",
         "scaling-00064"], ["settled-00064-m02", "unsettled-00064-m02"])
    assert _convergence_problems(problems, 1)[1] == ["settled-00064-m01", "settled-00064-m02", "unsettled-00064-m01",
                                                      "unsettled-00064-m02"]
    path = Path(__file__).resolve().parents[1] / "studies" / "quickstart.toml"
    study = load_study(path)
    assert study.report.convergence_members == 1 and study.repetitions == 1
    doc = tomllib.loads(path.read_text())
    assert [g.get("members") for g in doc["problems"] if "families" in g] == [10]
    base = '[study]\nname = "s"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n[methods.a]\nformulation = "dual"\n' \
           'solver = "apgd"\n[report]\n'
    for value in ("0", "-1", "1.5", '"2"', "true"):
        (tmp_path / "s.toml").write_text(base + f"convergence_members = {value}\n")
        with pytest.raises(InputError, match="convergence_members") as err:
            load_study(tmp_path / "s.toml")
        assert "\n" not in str(err.value)


def test_the_headline_conclusion_is_at_equal_accuracy_and_decides_nothing_over_three_problems(tmp_path):
    """tables/conclusion.csv is the comparison at equal accuracy (issue 44): each level of the distance to
    the reference objective, with time and iterations per method; over the crafted study's 3 problems no
    paired interval exists, so no method is named faster, whatever its stopping threshold gave (the table of
    stopping thresholds names A first)."""
    out = tmp_path / "report"
    write_report(_crafted(tmp_path / "results"), out)
    table = pd.read_csv(out / "tables" / "conclusion.csv", index_col=0)
    assert {"measure", "level", "conclusion (time)", "conclusion (iterations)"} <= set(table.columns)
    objective = table[table["measure"].str.startswith("relative distance")]
    assert sorted(objective["level"].unique()) == [1e-6, 1e-4, 1e-2]
    assert not table["conclusion (time)"].str.contains("needs").any()
    # the crafted histories close on their final objectives as 1/k^2: 1e-2 at best, at the last iterate
    assert objective["conclusion (time)"].str.contains("undecided over|no method reaches").all()
    text = (out / "index.md").read_text()
    assert "not a conclusion" in text.lower().split("## conclusion")[1]
