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
