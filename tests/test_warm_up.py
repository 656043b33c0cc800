"""Compilation never inside a measured or limited interval (issue 22): a small study run from a
fresh process with an EMPTY numba compile cache and a tight time limit has no run killed while
warming up, and its statuses equal those of an immediate second run (with the cache filled)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.study.store import ResultStore

REPO = Path(__file__).resolve().parents[1]

STUDY = """
[study]
name = "cold"
time_limit = 2
repetitions = 2
histories = false
[[problems]]
scenes = ["rolling-ball-2d", "ball-on-plane"]
[[problems]]
files = ["dataset:scaling-00064"]
[methods.apgd-dual]
formulation = "dual"
solver = "apgd"
[methods.pgs-dual]
formulation = "dual"
solver = "pgs"
[methods.apgd-anti-relaxed]
formulation = "anti-relaxed"
solver = "apgd"
"""


def _statuses(study: Path, out: Path, cache: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(
        [str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    proc = subprocess.run([sys.executable, "-m", "workbench.cli", "run", str(study), "--out", str(out), "--jobs", "2",
                           "--no-report", "--no-progress"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = ResultStore(out).read_runs()
    assert not runs["message"].fillna("").str.contains("hard time limit").any()  # none killed mid-run
    return {(r.problem, r.method, r.repetition): r.status for r in runs.itertuples()}


@pytest.mark.slow
def test_a_cold_compile_cache_changes_no_status(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    cold = _statuses(study, tmp_path / "cold", cache)
    assert any(cache.rglob("*.nbi")), "the first run wrote no compile cache"
    warm = _statuses(study, tmp_path / "warm", cache)
    assert len(cold) == 3 * 3 * 2 and "warm-up" not in cold.values()
    assert cold == warm
    # the one-contact scenes take microseconds: a kernel compiled inside their runs would show
    assert all(status == "solved" for (problem, _, _), status in cold.items() if problem != "scaling-00064")


_BUILD = """
import dataclasses
from problems.drum import drum
from problems.granular import container_world, container_world_2d
from problems.stepper import Simulation
from problems.synthetic import sphere_packing
for world in (container_world(30), container_world_2d(30), drum(20).world, drum(20, shape="sphere").world):
    problem, contacts, _ = Simulation(dataclasses.replace(world, envelope=0.5), 1e-3, "dual", "apgd").problem()
    assert contacts.n > 0 and problem.D.shape[1] == problem.d * contacts.n
sphere_packing(200)
"""


def test_the_warmed_simulator_builds_scenes_without_compiling(tmp_path):
    """After problems.warm_up (what `workbench warm-up` runs for the simulator), building the time-step
    problems of 3D and planar containers, the drum's ellipsoids and spheres and a synthetic packing of
    other sizes writes nothing more to an empty compile cache: nothing compiles."""
    cache = tmp_path / "numba-cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(
        [str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    warm = subprocess.run([sys.executable, "-c", "from problems.warm_up import warm_up; warm_up()"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr[-2000:]
    before = sorted(p.name for p in cache.rglob("*.nb*"))
    assert before, "the warm-up wrote no compile cache"
    built = subprocess.run([sys.executable, "-c", _BUILD], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    assert sorted(p.name for p in cache.rglob("*.nb*")) == before
