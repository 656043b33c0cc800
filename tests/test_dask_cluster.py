"""A real Dask cluster (``dask scheduler`` and ``dask worker`` processes, no nanny: a killed worker
stays dead) under a study run by the command line (issue 46): a worker killed mid-study is one line
naming what was re-queued, and the study ends complete with no recorded run computed again; with every
worker gone the study stops in one line after WORKBENCH_DASK_NO_WORKERS seconds, and the same command
resumes it on a new worker.

Every solve of the study's "slow" solver (a plugin: Clarabel after a short sleep, so that runs are in
flight when a worker is killed) appends a line to a file, so the test counts the computations."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("dask.distributed")

REPO = Path(__file__).resolve().parents[1]
DASK = Path(sys.executable).parent / "dask"
RUNS = 12

PLUGIN = '''
import os, time
from workbench.solvers import SOLVERS
from workbench.solvers.clarabel import ClarabelSolver

class Slow(ClarabelSolver):
    name = "slow"
    def solve(self, model, options):
        if not model.problem.name.startswith("warm-up"):
            with open(os.environ["SOLVES_FILE"], "a") as fh:
                fh.write(f"{os.getpid()}\\n")
            time.sleep(0.4)
        return super().solve(model, options)

SOLVERS["slow"] = f"{__name__}:Slow"
'''

STUDY = f"""[study]
name = "cluster"
repetitions = {RUNS}
plugins = ["plugin.py"]
[[problems]]
scenes = ["rolling-ball-2d"]
[methods.slow]
formulation = "dual"
solver = "slow"
"""


class Process:
    """A subprocess whose merged output lines are collected by a thread."""

    def __init__(self, argv, cwd, env):
        self.lines: list[str] = []
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def until(self, predicate, timeout: float, what: str):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return
            if self.proc.poll() is not None and not predicate():
                break
            time.sleep(0.1)
        raise AssertionError(f"{what} not seen in {timeout} s; output: {self.lines[-15:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def cluster(tmp_path):
    if not DASK.exists():
        pytest.skip(f"no dask command beside {sys.executable}")
    env = {**os.environ, "PYTHONPATH": str(REPO), "SOLVES_FILE": str(tmp_path / "solves.txt"),
           "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    started: list[Process] = []

    def start(*argv):
        started.append(Process([str(DASK), *argv], tmp_path, env))
        return started[-1]

    scheduler = start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                      "--scheduler-file", "scheduler.json")
    scheduler.until(lambda: (tmp_path / "scheduler.json").exists(), 60, "the scheduler file")
    address = json.loads((tmp_path / "scheduler.json").read_text())["address"]

    def worker():
        return start("worker", "--scheduler-file", "scheduler.json", "--nthreads", "1", "--no-nanny",
                     "--no-dashboard")

    (tmp_path / "plugin.py").write_text(PLUGIN)
    (tmp_path / "study.toml").write_text(STUDY)
    yield address, worker, env
    for p in reversed(started):
        p.stop()


def study_run(tmp_path, address, env, **extra) -> Process:
    return Process([sys.executable, "-m", "workbench.cli", "run", "study.toml", "--out", "results", "--no-report",
                    "--executor", "dask", "--scheduler", address],
                   tmp_path, {**env, "WORKBENCH_PROGRESS_SECONDS": "0.2", **extra})


def recorded(lines) -> int:
    counts = [int(m.group(1)) for line in lines for m in [re.search(r"cluster: (\d+)/\d+ runs", line)] if m]
    return max(counts, default=0)


def rows(tmp_path):
    from workbench.study.store import ResultStore
    return ResultStore(tmp_path / "results").read_runs()


def test_a_killed_worker_is_reported_and_nothing_recorded_is_computed_again(tmp_path, cluster):
    address, worker, env = cluster
    first, second = worker(), worker()
    run = study_run(tmp_path, address, env)
    run.until(lambda: recorded(run.lines) >= 3, 120, "three runs recorded")
    first.proc.send_signal(signal.SIGKILL)
    assert run.proc.wait(timeout=120) == 0, run.lines[-10:]
    lost = [line for line in run.lines if line.startswith("dask: worker")]
    assert len(lost) == 1 and re.fullmatch(r"dask: worker tcp://127\.0\.0\.1:\d+ lost; \d+ run\(s\) assigned to it "
                                           r"re-queued(: run-\S+(?:, run-\S+)*)?; 1 worker\(s\) left", lost[0]), lost
    done = rows(tmp_path)
    assert len(done) == RUNS and done["key"].is_unique and (done["status"] == "solved").all()
    # every run computed once, but for the one the killed worker had in flight (at most one: one thread)
    solves = (tmp_path / "solves.txt").read_text().split()
    assert RUNS <= len(solves) <= RUNS + 1
    assert second.proc.poll() is None


def test_with_no_worker_left_the_study_stops_in_one_line_and_resumes(tmp_path, cluster):
    address, worker, env = cluster
    only = worker()
    run = study_run(tmp_path, address, env, WORKBENCH_DASK_NO_WORKERS="2")
    run.until(lambda: recorded(run.lines) >= 2, 120, "two runs recorded")
    only.proc.send_signal(signal.SIGKILL)
    t0 = time.monotonic()
    assert run.proc.wait(timeout=60) == 2
    assert time.monotonic() - t0 < 30
    stop = [line for line in run.lines if line.startswith("workbench: error:")]
    assert len(stop) == 1 and re.fullmatch(r"workbench: error: dask: no worker at tcp://127\.0\.0\.1:\d+ for 2 s; "
                                           r"stopped with \d+ run\(s\) recorded and \d+ not run: start workers and "
                                           r"run the same command again to resume \(WORKBENCH_DASK_NO_WORKERS sets "
                                           r"the wait\)", stop[0]), stop
    kept = rows(tmp_path)
    assert 2 <= len(kept) < RUNS
    worker()
    again = study_run(tmp_path, address, env)
    assert again.proc.wait(timeout=120) == 0, again.lines[-10:]
    assert any(f"{len(kept)} already recorded, {RUNS - len(kept)} to run" in line for line in again.lines)
    done = rows(tmp_path)
    assert len(done) == RUNS and done["key"].is_unique and (done["status"] == "solved").all()
    # kept rows were not redone; at most the run in flight at the kill was computed twice
    assert list(done.set_index("key").loc[kept["key"], "finished_at"]) == list(kept["finished_at"])
    assert RUNS <= len((tmp_path / "solves.txt").read_text().split()) <= RUNS + 1
