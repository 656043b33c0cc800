"""Study files and the runner: validation errors (one line, exit code 2), an end-to-end grid with
exactly one row per (problem, method, repetition), resume after SIGKILL, hard time limits and
crashes recorded while the study goes on, and the same rows on a Dask LocalCluster."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import workbench.solvers
from problems.scenes import rolling_ball_2d, rolling_ball_2d_relaxed_impulse
from factories import random_problem
from workbench.cli import main
from workbench.io import load_problem, save_problem
from workbench.metrics import dual_objective
from workbench.shared_data import shared_data_dir
from workbench import sources
from workbench.study.problems import problem_digest
from workbench.study.store import ResultStore

REPO = Path(__file__).resolve().parents[1]
METRICS = ("dual_objective", "duality_gap", "siconos_error", "relaxed_error", "ccp_residual", "complementarity",
           "cone_violation", "judged_error")

METHODS = """
[methods.clarabel-dual]
formulation = "dual"
solver = "clarabel"

[methods.scs-dual]
label = "SCS, dual"
formulation = "dual"
solver = "scs"
"""

#: test-only solvers, registered by a study plugin (so the worker processes see them too)
MISBEHAVING = '''
import os, signal, time
from workbench.solvers import SOLVERS
from workbench.solvers.base import Solver
from workbench.solvers.clarabel import ClarabelSolver

class Hang(Solver):
    """Hangs on a run's problem; refuses the warm-up's (workbench.method.warm_up_problems)."""
    name = "hang"
    model_kinds = ("ccqo",)
    def solve(self, model, options):
        if model.problem.name.startswith("warm-up"):
            raise RuntimeError("no warm-up")
        time.sleep(3600)

class HangAlways(Solver):
    name = "hang-always"
    model_kinds = ("ccqo",)
    def solve(self, model, options):
        time.sleep(3600)

class Segfault(Solver):
    name = "segfault"
    model_kinds = ("ccqo",)
    def solve(self, model, options):
        os.kill(os.getpid(), signal.SIGSEGV)

class Boom(Solver):
    name = "boom"
    model_kinds = ("ccqo",)
    def solve(self, model, options):
        raise RuntimeError("boom")

class Slow(ClarabelSolver):
    name = "slow"
    def solve(self, model, options):
        time.sleep(0.2)
        return super().solve(model, options)

for cls in (Hang, HangAlways, Segfault, Boom, Slow):
    SOLVERS[cls.name] = f"{__name__}:{cls.__name__}"
'''


@pytest.fixture
def registries(monkeypatch):
    """Plugins and tests add registry entries in this process: give them copies that are dropped."""
    monkeypatch.setattr(workbench.solvers, "SOLVERS", dict(workbench.solvers.SOLVERS))
    monkeypatch.setattr(sources, "NAMED", dict(sources.NAMED))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(study: Path, out: Path, *args) -> int:
    return main(["run", str(study), "--out", str(out), "--no-report", "--no-progress", *args])


# --------------------------------------------------------------------------- validation

BASE = '[study]\nname = "t"\n\n[[problems]]\nscenes = ["rolling-ball-2d"]\n' + METHODS

ERRORS = [
    ("typo in a method key", BASE + '\n[methods.foo]\nformulation = "dual"\nsolvr = "clarabel"\n',
     ["unknown key 'solvr' in [methods.foo]; did you mean 'solver'?"]),
    ("typo in [study]", BASE.replace('name = "t"', 'name = "t"\nrepetition = 2'),
     ["unknown key 'repetition' in [study]; did you mean 'repetitions'?"]),
    ("unknown top-level table", BASE + "\n[reprot]\n", ["unknown key 'reprot' in the study file (top level); did you mean 'report'?"]),
    ("unknown solver", BASE + '\n[methods.foo]\nformulation = "dual"\nsolver = "nosuch"\n',
     ["[methods.foo]", "unknown solver 'nosuch'"]),
    ("unknown formulation", BASE + '\n[methods.foo]\nformulation = "duall"\nsolver = "clarabel"\n',
     ["[methods.foo]", "unknown formulation 'duall'"]),
    ("incompatible formulation and solver", BASE + '\n[methods.foo]\nformulation = "anti-relaxed"\nsolver = "clarabel"\n',
     ["[methods.foo]", "anti-relaxed", "cannot be combined"]),
    ("glob matching nothing", BASE + '\n[[problems]]\nfiles = ["nowhere/*.hdf5"]\n',
     ["[[problems]] #2", "glob 'nowhere/*.hdf5' matches no file", "study file's directory"]),
    ("missing file", BASE + '\n[[problems]]\nfiles = ["nothere.hdf5"]\n',
     ["file 'nothere.hdf5' does not exist"]),
    ("shared file that is not there", BASE + '\n[[problems]]\nfiles = ["shared:fclib/nothere-*.hdf5"]\n',
     ["[[problems]] #2", "shared:fclib/nothere-*.hdf5", "match" if shared_data_dir() else "not found"]),
    ("unknown scene", BASE.replace("rolling-ball-2d", "rolling-cube"), ["unknown scene 'rolling-cube'"]),
    ("two kinds in one group", BASE.replace('scenes = ["rolling-ball-2d"]', 'scenes = ["rolling-ball-2d"]\nfiles = ["x"]'),
     ["needs exactly one of files, scenes, generator"]),
    ("unknown generator", BASE + '\n[[problems]]\ngenerator = "nosuch"\n', ["unknown generator 'nosuch'"]),
    ("bad time limit", BASE.replace('name = "t"', 'name = "t"\ntime_limit = -1'),
     ["[study] time_limit must be a positive number"]),
    ("safety net not a flag", BASE.replace('name = "t"', 'name = "t"\nsafety_net = "yes"'),
     ["[study] safety_net must be true or false"]),
    ("unknown tolerance preset", BASE.replace('name = "t"', 'name = "t"\ntolerance = "hihg_accuracy"'),
     ["unknown tolerance preset 'hihg_accuracy'", "did you mean 'high_accuracy'?"]),
    ("unknown reference method", BASE + '\n[report]\nreference_method = "mosek-dual"\n',
     ["reference_method 'mosek-dual' is not a method"]),
    ("histories naming no method", BASE.replace('name = "t"', 'name = "t"\nhistories = ["apgd"]'),
     ["histories names unknown method(s) 'apgd'"]),
    ("invalid TOML", BASE + "\n[methods.x\n", ["invalid TOML"]),
    ("every problem group missing", BASE.replace('scenes = ["rolling-ball-2d"]',
                                                 'files = ["gone/*.hdf5"]\noptional = "make them with: X"'),
     ["no problem to run", "glob 'gone/*.hdf5' matches no file", "(make them with: X)"]),
    ("optional outside a files group", BASE.replace('scenes = ["rolling-ball-2d"]',
                                                    'scenes = ["rolling-ball-2d"]\noptional = true'),
     ["[[problems]] #1: optional belongs to a files group"]),
    ("unknown scenario", BASE + '\n[[problems]]\nscenario = "ball-on-plank"\n', ["unknown scenario 'ball-on-plank'"]),
    ("bad scenario parameter", BASE + '\n[[problems]]\nscenario = "ball-on-plane"\nparams = { muu = 0.1 }\n',
     ["[[problems]] #2", "'ball-on-plane' has no parameter 'muu'"]),
    ("paper value of an unknown method", BASE + '\n[[report.paper]]\nwhat = "w"\nsource = "s"\nvalue = 1\n'
     'method = "apgd"\nquantity = "iterations"\n', ["[[report.paper]] #1: method 'apgd' is not a method"]),
    ("paper value of an unknown quantity", BASE + '\n[[report.paper]]\nwhat = "w"\nsource = "s"\nvalue = 1\n'
     'method = "scs-dual"\nquantity = "iteration"\n', ["[[report.paper]] #1 quantity must be one of"]),
    ("no methods", '[[problems]]\nscenes = ["rolling-ball-2d"]\n', ["no [methods.NAME] table"]),
    ("reference with an unknown solver", BASE + '\n[reference]\nsolver = "clarabell"\n',
     ["[reference]", "unknown solver 'clarabell'"]),
    ("reference formulation not compared", BASE + '\n[reference]\nsolver = "clarabel"\nformulations = ["primal"]\n',
     ["[reference] formulations: 'primal' is not a formulation of the compared methods"]),
    ("typo in [reference]", BASE + '\n[reference]\nsolver = "clarabel"\ntoll = 1e-10\n',
     ["unknown key 'toll' in [reference]; did you mean 'tol'?"]),
    ("series that is not a string", BASE.replace('scenes = ["rolling-ball-2d"]', 'scenes = ["rolling-ball-2d"]\nseries = 3'),
     ["[[problems]] #1 series must be a non-empty string"]),
]


@pytest.mark.parametrize("text, fragments", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_bad_study_files_exit_2_with_one_line_naming_the_problem(tmp_path, capsys, text, fragments):
    study = write(tmp_path / "bad.toml", text)
    assert run(study, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workbench: error: ")
    assert str(study) in err
    for fragment in fragments:
        assert fragment in err
    assert not (tmp_path / "out").exists()  # nothing runs before the whole study is valid


def test_generator_errors_name_the_missing_module_and_the_bad_parameter(tmp_path, capsys, registries):
    sources.NAMED["ghost"] = sources.Named("generator", "problems.no_such_module:make", "")
    sources.NAMED["ball"] = sources.Named("generator", "problems.scenes:rolling_ball_2d", "")
    study = write(tmp_path / "g.toml", BASE + '\n[[problems]]\ngenerator = "ghost"\n')
    assert run(study, tmp_path / "out") == 2
    assert "generator 'ghost' needs the module problems.no_such_module" in capsys.readouterr().err
    study = write(tmp_path / "g.toml", BASE + '\n[[problems]]\ngenerator = "ball"\nparams = { hh = 0.1 }\n')
    assert run(study, tmp_path / "out") == 2
    assert "'ball' has no parameter 'hh'" in capsys.readouterr().err


def test_shipped_studies_validate_and_resolve_against_the_shared_data(shared_data, tmp_path):
    from workbench.study import StudyError, load_study
    from workbench.study.problems import resolve_problems

    datasets = REPO / "problems" / "datasets"
    for path in sorted((REPO / "studies").glob("*.toml")):
        try:
            study = load_study(path)
        except StudyError as exc:  # a study of generated data only, not generated here: says how to make it
            assert "no problem to run" in str(exc) and "make them with: workbench generate" in str(exc), exc
            continue
        if path.stem == "scale_devices":    # packings up to 1M contacts: tests/test_study_scale.py plans its smallest
            continue
        problems = resolve_problems(study, tmp_path / path.stem)
        assert problems and study.methods
        files = {p.spec for p in problems if p.origin == "file"}
        generated = {p for p in files if sources.resolve_path(p).resolve().parent in (tmp_path / path.stem,
                                                                                       datasets.resolve())}
        assert files - generated <= {str(f.resolve()) for f in shared_data.rglob("*") if f.is_file()}
    fclib = load_study(REPO / "studies" / "fclib_data.toml")
    n_files = len(list((shared_data / "fclib").glob("*.hdf5")) + list((shared_data / "siconos").glob("*.dat")))
    assert len(resolve_problems(fclib, tmp_path / "f")) == n_files


# --------------------------------------------------------------------------- running

@pytest.fixture
def small_study(tmp_path, registries):
    """A scene, a native-format file found by a glob, and a generated sweep of two problems."""
    (tmp_path / "data").mkdir()
    save_problem(random_problem(5, 3, seed=2), tmp_path / "data" / "random-2.npz")
    sources.NAMED["ball"] = sources.Named("generator", "problems.scenes:rolling_ball_2d", "")
    return write(tmp_path / "study.toml", """
[study]
name = "small"
repetitions = 2
time_limit = 60
histories = ["clarabel-dual"]

[[problems]]
scenes = ["rolling-ball-2d"]
tags = ["scene"]

[[problems]]
files = ["data/*.npz"]

[[problems]]
generator = "ball"
params = { h = 0.01 }
sweep = { mu = [0.1, 0.3] }
name = "ball-mu{mu}"
tags = ["generated"]
""" + METHODS + """
[methods.clarabel-primal]
formulation = "primal"
solver = "clarabel"
""")


def test_repetitions_run_in_rounds_in_a_shuffled_order_that_a_replan_repeats(small_study, tmp_path):
    """Round k holds repetition k of every pair: a pair's repetitions never run back to back or side by
    side; the order inside a round is shuffled, differs between rounds, and is the same when the
    study is planned again."""
    from workbench.study.problems import resolve_problems
    from workbench.study.runner import plan
    from workbench.study.spec import load_study

    study = load_study(small_study)
    problems = resolve_problems(study, tmp_path / "generated")
    runs, _ = plan(study, problems)
    reps = [r.repetition for r in runs]
    assert reps == sorted(reps) and len(runs) == 4 * 3 * 2
    rounds = [[(r.source.name, r.method.name) for r in runs if r.repetition == k] for k in (0, 1)]
    grid = [(p.name, m.name) for p in problems for m in study.methods]
    assert sorted(rounds[0]) == sorted(rounds[1]) == sorted(grid)
    assert rounds[0] != rounds[1] and grid not in rounds
    again, _ = plan(load_study(small_study), resolve_problems(study, tmp_path / "generated"))
    assert [r.key for r in again] == [r.key for r in runs]


def test_small_study_has_one_row_per_run_with_the_workbench_metrics_and_resumes(small_study, tmp_path):
    out = tmp_path / "results"
    assert run(small_study, out, "--jobs", "2") == 0
    store = ResultStore(out)
    runs = store.read_runs()
    plan = json.loads((out / "plan.json").read_text())
    problems = ["rolling-ball-2d", "random-2", "ball-mu0.1", "ball-mu0.3"]
    assert [p["problem"] for p in plan["problems"]] == problems
    assert len(runs) == len(plan["runs"]) == 4 * 3 * 2
    assert not runs.duplicated(["problem", "method", "repetition"]).any()
    assert set(map(tuple, runs[["problem", "method", "repetition"]].to_numpy())) == \
        {(p, m, r) for p in problems for m in ("clarabel-dual", "scs-dual", "clarabel-primal") for r in (0, 1)}
    assert (runs["status"] == "solved").all(), runs[["problem", "method", "status", "message"]]
    for name in METRICS:
        assert np.isfinite(runs[name].astype(float)).all(), name
    assert (runs["judged_error"] <= 1e-6).all()
    dual = runs[runs["formulation"] == "dual"]
    np.testing.assert_allclose(dual["objective"], dual["dual_objective"], rtol=1e-12)
    # the papers' rolling ball: the relaxed optimum is known in closed form (Melanz et al. 2015 section 3.1)
    ball = dual[dual["problem"] == "rolling-ball-2d"]
    np.testing.assert_allclose(ball["objective"], dual_objective(rolling_ball_2d(), rolling_ball_2d_relaxed_impulse()),
                               rtol=1e-6)
    assert set(runs.loc[runs["problem"] == "ball-mu0.3", "tags"]) == {"generated"}
    assert set(runs["label"]) == {"clarabel-dual", "SCS, dual", "clarabel-primal"}
    # generated problems are kept with the results, and their data hash is that of the saved file
    saved = load_problem(out / "problems" / "ball-mu0.3.npz")
    assert saved.mu[0] == 0.3
    assert set(runs.loc[runs["problem"] == "ball-mu0.3", "problem_hash"]) == {problem_digest(saved)}
    # histories only where asked, as one long table keyed by run
    hist = store.read_histories(runs["key"])
    assert set(hist["method"]) == {"clarabel-dual"}
    assert set(hist["key"]) == set(runs.loc[runs["method"] == "clarabel-dual", "key"])
    # provenance of the session
    (session,) = store.sessions()
    assert session["packages"]["numpy"] == np.__version__ and session["cores"] == os.cpu_count()
    assert session["study_text"] == small_study.read_text()
    assert set(runs["session"]) == {session["session"]}

    # a second run finds everything done; --rerun executes again and still one row per run
    before = runs.set_index("key")["finished_at"]
    assert run(small_study, out) == 0
    assert store.read_runs().set_index("key")["finished_at"].equals(before)
    assert run(small_study, out, "--rerun", "--jobs", "2") == 0
    again = store.read_runs()
    assert len(again) == 24 and set(again["key"]) == set(before.index)
    assert len(set(again["session"])) == 1 and set(again["session"]) != set(runs["session"])


def test_selection_flags_choose_methods_problems_repetitions_and_time_limit(small_study, tmp_path, capsys):
    """benchopt's -s/-d: --solver globs a method's name or solver, --problem globs problem names;
    --repetitions and --time-limit override the study's; the plan (and so the report) is the selection."""
    out = tmp_path / "results"
    assert run(small_study, out, "--solver", "scs", "--problem", "ball-mu*", "rolling*", "--repetitions", "1",
               "--time-limit", "30") == 0
    runs = ResultStore(out).read_runs()
    assert set(runs["method"]) == {"scs-dual"} and set(runs["problem"]) == {"ball-mu0.1", "ball-mu0.3", "rolling-ball-2d"}
    assert set(runs["repetition"]) == {0} and set(runs["time_limit"]) == {30.0}
    plan = json.loads((out / "plan.json").read_text())
    assert [m["method"] for m in plan["methods"]] == ["scs-dual"] and len(plan["runs"]) == 3
    assert run(small_study, out, "-s", "clarabel-*", "-p", "random-2", "--repetitions", "1") == 0
    plan = json.loads((out / "plan.json").read_text())
    assert {(r["problem"], r["method"]) for r in plan["runs"]} == {("random-2", "clarabel-dual"),
                                                                   ("random-2", "clarabel-primal")}
    capsys.readouterr()
    assert run(small_study, out, "--solver", "mosek") == 2
    assert "--solver 'mosek' names no method of the study" in capsys.readouterr().err
    assert run(small_study, out, "--problem", "nothing*") == 2
    assert "--problem 'nothing*' matches no problem" in capsys.readouterr().err


def test_rerun_failed_executes_again_only_the_runs_not_solved(tmp_path, registries):
    write(tmp_path / "plugin.py", MISBEHAVING)
    study = write(tmp_path / "study.toml", '[study]\nname = "f"\nplugins = ["plugin.py"]\n[[problems]]\n'
                  'scenes = ["rolling-ball-2d"]\n[methods.boom]\nformulation = "dual"\nsolver = "boom"\n'
                  '[methods.fine]\nformulation = "dual"\nsolver = "clarabel"\n')
    out = tmp_path / "results"
    assert run(study, out) == 0
    first = ResultStore(out).read_runs().set_index("method")
    assert first.loc["boom", "status"] != "solved" and first.loc["fine", "status"] == "solved"
    assert ResultStore(out).unsolved_keys() == {first.loc["boom", "key"]}
    assert run(study, out, "--rerun-failed") == 0
    again = ResultStore(out).read_runs().set_index("method")
    assert again.loc["fine", "session"] == first.loc["fine", "session"]  # kept
    assert again.loc["boom", "session"] != first.loc["boom", "session"]  # redone
    assert len(again) == 2


def test_reference_runs_are_planned_apart_from_the_compared_ones(tmp_path):
    from workbench.study import load_results
    study = write(tmp_path / "study.toml", BASE + '\n[reference]\nsolver = "clarabel"\ntol = 1e-10\n')
    out = tmp_path / "results"
    assert run(study, out) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert [m["method"] for m in plan["references"]] == ["reference/dual"] and len(plan["reference_runs"]) == 1
    assert not {r["key"] for r in plan["reference_runs"]} & {r["key"] for r in plan["runs"]}
    compared, every = load_results(out), load_results(out, include_reference=True)
    assert set(compared["role"]) == {"compared"} and len(compared) == 2
    ref = every[every["role"] == "reference"]
    assert list(ref["method"]) == ["reference/dual"] and ref["tol"].iloc[0] == 1e-10
    assert ref["judged_error"].iloc[0] < 1e-6


def test_killed_study_resumes_with_every_run_exactly_once(tmp_path, registries):
    write(tmp_path / "plugin.py", MISBEHAVING)
    study = write(tmp_path / "study.toml", """
[study]
name = "killed"
repetitions = 3
plugins = ["plugin.py"]
[[problems]]
scenes = ["rolling-ball-2d"]
[methods.slow-dual]
formulation = "dual"
solver = "slow"
[methods.slow-primal]
formulation = "primal"
solver = "slow"
""")
    out = tmp_path / "results"
    cmd = [sys.executable, "-m", "workbench.cli", "run", str(study), "--out", str(out), "--no-report", "--no-progress"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs_dir = out / "runs"
    deadline = time.monotonic() + 120
    while not (runs_dir.is_dir() and any(runs_dir.glob("*.parquet"))):
        assert proc.poll() is None and time.monotonic() < deadline, "no run recorded before the study ended"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = ResultStore(out).read_runs()
    assert 1 <= len(first) < 6  # killed mid-study
    assert run(study, out) == 0  # the restart (in this process: the kill was the point of the first)
    final = ResultStore(out).read_runs()
    plan = json.loads((out / "plan.json").read_text())
    assert len(final) == 6 and sorted(final["key"]) == sorted(r["key"] for r in plan["runs"])
    assert (final["status"] == "solved").all()
    # what was recorded before the kill was kept, not redone
    kept = final.set_index("key").loc[first["key"], "finished_at"]
    assert list(kept) == list(first["finished_at"])
    assert not any(p.name.endswith((".tmp", ".partial")) for p in out.rglob("*"))


def test_hung_and_crashing_runs_are_recorded_and_the_study_goes_on(tmp_path, registries):
    write(tmp_path / "plugin.py", MISBEHAVING)
    study = write(tmp_path / "study.toml", """
[study]
name = "misbehaving"
time_limit = 0.5
plugins = ["plugin.py"]
[[problems]]
scenes = ["rolling-ball-2d"]
[methods.hang]
formulation = "dual"
solver = "hang"
[methods.segfault]
formulation = "dual"
solver = "segfault"
[methods.boom]
formulation = "dual"
solver = "boom"
[methods.fine]
formulation = "dual"
solver = "clarabel"
""")
    out = tmp_path / "results"
    t0 = time.monotonic()
    assert run(study, out) == 0
    runs = ResultStore(out).read_runs().set_index("method")
    assert runs.loc["hang", "status"] == "timeout"
    assert runs.loc["hang", "machine_effect"] == ""  # the study's limit is a budget here, not a safety net
    assert "hard time limit" in runs.loc["hang", "message"]
    assert 0.5 <= runs.loc["hang", "wall_seconds"] < 5.0  # killed at 0.5 + 1 s, not after an hour
    assert runs.loc["segfault", "status"] == "crash" and "SIGSEGV" in runs.loc["segfault", "message"]
    # a solver that raises ends "failed" with the exception's one-line message (not a crash of the worker)
    assert runs.loc["boom", "status"] == "failed" and runs.loc["boom", "message"] == "RuntimeError: boom"
    assert runs.loc["fine", "status"] == "solved"
    assert time.monotonic() - t0 < 60
    assert "RuntimeError: boom" in (out / "logs" / "worker.log").read_text()  # the traceback is kept


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_rows(tmp_path):
    pytest.importorskip("dask.distributed")
    study = write(tmp_path / "study.toml", '[study]\nname = "d"\nrepetitions = 2\n[[problems]]\n'
                  'scenes = ["rolling-ball-2d"]\n' + METHODS)
    local, dask = tmp_path / "local", tmp_path / "dask"
    assert run(study, local) == 0
    assert run(study, dask, "--executor", "dask", "--jobs", "2") == 0
    a, b = ResultStore(local).read_runs(), ResultStore(dask).read_runs()
    assert len(b) == 4 and sorted(a["key"]) == sorted(b["key"])
    a, b = a.set_index("key").sort_index(), b.set_index("key").sort_index()
    assert (b["status"] == "solved").all()
    np.testing.assert_allclose(b["objective"], a["objective"], rtol=1e-9)
    assert list(b["iterations"]) == list(a["iterations"])


@pytest.mark.slow
def test_dask_cluster_at_a_scheduler_address_gives_the_same_rows(tmp_path):
    """--scheduler ADDR: a cluster started elsewhere (here a LocalCluster of this process)."""
    distributed = pytest.importorskip("dask.distributed")
    study = write(tmp_path / "study.toml", '[study]\nname = "d"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n' + METHODS)
    assert run(study, tmp_path / "local") == 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        assert run(study, tmp_path / "remote", "--executor", "dask", "--scheduler", cluster.scheduler_address) == 0
        with distributed.Client(cluster) as client:  # the runs went through that cluster's scheduler
            prefixes = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
        assert "run" in prefixes
    a, b = ResultStore(tmp_path / "local").read_runs(), ResultStore(tmp_path / "remote").read_runs()
    assert sorted(a["key"]) == sorted(b["key"]) and (b["status"] == "solved").all()
    a, b = a.set_index("key").sort_index(), b.set_index("key").sort_index()
    np.testing.assert_allclose(b["objective"], a["objective"], rtol=1e-9)


def test_scheduler_needs_the_dask_executor(tmp_path, capsys):
    study = write(tmp_path / "s.toml", BASE)
    assert run(study, tmp_path / "out", "--scheduler", "tcp://127.0.0.1:1") == 2
    assert "--scheduler needs --executor dask" in capsys.readouterr().err


def test_a_run_killed_while_warming_up_is_recorded_apart_and_never_a_failure(tmp_path, registries, monkeypatch):
    """A worker that cannot warm its method up within the warm-up limit is killed: the run's status is
    "warm-up" (the later runs of that method say so at once), the report leaves those runs out of every
    denominator and time, lists them apart, and the other methods' runs go on."""
    from workbench.report import read_report_data, write_report
    from workbench.analysis.accounting import summarise

    # the limit must exceed what a real method's warm-up (Clarabel: cvxpy's import) takes on a loaded
    # machine, or the "fine" method's status would depend on the load (2 s did, at load 8)
    monkeypatch.setenv("WORKBENCH_WARM_UP_LIMIT", "12")
    write(tmp_path / "plugin.py", MISBEHAVING)
    study = write(tmp_path / "study.toml", """
[study]
name = "warm"
time_limit = 1
repetitions = 2
plugins = ["plugin.py"]
[[problems]]
scenes = ["rolling-ball-2d"]
[methods.stuck]
formulation = "dual"
solver = "hang-always"
[methods.fine]
formulation = "dual"
solver = "clarabel"
""")
    out = tmp_path / "results"
    t0 = time.monotonic()
    assert run(study, out) == 0
    assert time.monotonic() - t0 < 60  # one warm-up limit waited, not one per run
    runs = ResultStore(out).read_runs().sort_values("finished_at")
    stuck = runs[runs["method"] == "stuck"]
    assert list(stuck["status"]) == ["warm-up", "warm-up"]
    assert "killed after 12 s of warming the method up" in stuck["message"].iloc[0]
    assert stuck["message"].iloc[1].startswith("not run: killed after 12 s of warming")
    assert (runs.loc[runs["method"] == "fine", "status"] == "solved").all()
    res = read_report_data(out)
    pairs = res.pairs()
    row = pairs.set_index("method").loc["stuck"]
    assert not row["applicable"] and row["why"] == "killed while warming up"
    table, _ = summarise(pairs, res.plan["methods"], 10.0, 1e-6)
    assert table.loc["stuck", "problems"] == 0 and table.loc["stuck", "runs solved"] == "0/0"
    assert np.isnan(table.loc["stuck", "solved %"]) and table.loc["fine", "solved %"] == 100.0
    page = (write_report(out, tmp_path / "report")).read_text()
    assert "Runs killed while warming up" in page and "rolling-ball-2d" in page


# --------------------------------------------------------------------------- families

def test_a_family_group_runs_its_members_and_the_report_gives_a_median_over_them(tmp_path):
    """families = ["unsettled-00064"], members = 2: two problems named by their datasets, tagged with the
    family, every method on both (the paired comparison's same members); the conclusion at equal accuracy
    has the family's row with its member count and a median over the members, and, 2 members being
    under the 6 a 95 % interval needs, says so and decides nothing; tables/conclusion_members.csv has the
    per-member values behind it."""
    import pandas as pd

    from workbench.report import write_report
    study = write(tmp_path / "family.toml", """
[study]
name = "family"
repetitions = 1
time_limit = 60
histories = true

[[problems]]
families = ["unsettled-00064"]
members = 2

[methods.apgd-dual]
formulation = "dual"
solver = "apgd"
max_iter = 500

[methods.clarabel-dual]
formulation = "dual"
solver = "clarabel"

[reference]
solver = "clarabel"
tol = 1e-10
""")
    assert run(study, tmp_path / "results", "--jobs", "1") == 0
    rows = ResultStore(tmp_path / "results").read_runs()
    rows = rows[~rows["method"].str.startswith("reference/")]
    assert sorted(zip(rows["problem"], rows["method"])) == [(f"unsettled-00064-m0{m}", meth) for m in (0, 1)
                                                            for meth in ("apgd-dual", "clarabel-dual")]
    assert set(rows["tags"]) == {"unsettled-00064"}
    write_report(tmp_path / "results", tmp_path / "report")
    table = pd.read_csv(tmp_path / "report" / "tables" / "conclusion.csv", index_col=0)
    assert set(table.index) == {"unsettled-00064 (2 members)"}
    loose = table[table["measure"].str.startswith("relative distance") & (table["level"] == 1e-2)].iloc[0]
    assert "clarabel-dual" in loose["iterations"] and "(no interval: 2 members)" in loose["iterations"], loose
    assert "undecided over 2 members" in loose["conclusion (iterations)"], loose
    members = pd.read_csv(tmp_path / "report" / "tables" / "conclusion_members.csv")
    assert set(members["problem"]) == {"unsettled-00064-m00", "unsettled-00064-m01"}
    assert {"tag", "method", "measure", "level", "iterations", "seconds"} <= set(members.columns)


@pytest.mark.parametrize("group, words", [
    ('families = ["settled-00064"]', "needs its member count"),
    ('families = ["settled-00064"]\nmembers = 99', "workbench generate settled-00064 --members 99"),
    ('families = ["nosuch"]\nmembers = 2', "unknown dataset family 'nosuch'"),
    ('scenes = ["rolling-ball-2d"]\nmembers = 2', "members belongs to a families"),
    ('sources = ["scene:rolling-ball-2d"]\nmembers = 2', "members belongs to a group that names a family")])
def test_a_family_group_is_refused_in_one_line(tmp_path, group, words):
    from workbench.study import StudyError, load_study
    study = write(tmp_path / "bad.toml", f'[study]\nname = "b"\n[[problems]]\n{group}\n' + METHODS)
    with pytest.raises(StudyError) as exc:
        load_study(study)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_a_family_named_in_sources_takes_the_groups_member_count_and_tags(tmp_path):
    from workbench.study import load_study
    study = load_study(write(tmp_path / "s.toml", '[study]\nname = "s"\n[[problems]]\nsources = ["family:settled-00064", '
                             '"scene:rolling-ball-2d"]\nmembers = 2\ntags = ["settled"]\n' + METHODS))
    made = [m for s in study.groups[0].sources() for m in s.members()]
    assert [(m.spec, m.tags) for m in made] == [("dataset:settled-00064-m00", ("settled",)),
                                                ("dataset:settled-00064-m01", ("settled",)),
                                                ("scene:rolling-ball-2d", ("settled",))]
    assert made[-1].params == {}
