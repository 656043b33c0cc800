"""The hard time limit of ``solve`` and ``compare``: with --time-limit the solve runs in the study
runner's killable worker, which is killed past the limit whatever the solver does."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from workbench.sources import load
from workbench.errors import InputError
from workbench.method import Method, solve
from workbench.solvers import SolveOptions
from workbench.study.worker import GRACE, solve_with_hard_limit

ROOT = Path(__file__).resolve().parents[1]
SCENE = "scene:rolling-ball-2d"


def test_a_limited_solve_gives_the_same_result_as_an_unlimited_one():
    options = SolveOptions(tol=1e-8, time_limit=30.0)
    limited = solve_with_hard_limit(SCENE, Method("dual", "clarabel"), options)
    direct = solve(load(SCENE), "dual", "clarabel", options)
    assert limited.status == direct.status == "solved"
    np.testing.assert_allclose(limited.nu, direct.nu, rtol=1e-9, atol=1e-12)
    assert limited.metrics["relaxed_error"] == pytest.approx(direct.metrics["relaxed_error"], rel=1e-6, abs=1e-14)
    assert limited.iterations == direct.iterations and limited.solve_seconds > 0


def test_bad_input_in_the_worker_is_raised_again(tmp_path):
    with pytest.raises(InputError, match="nosuch.hdf5"):  # the worker loads the problem
        solve_with_hard_limit(str(tmp_path / "nosuch.hdf5"), Method("dual", "clarabel"), SolveOptions(time_limit=10.0))
    with pytest.raises(InputError, match="time_limit"):
        solve_with_hard_limit(SCENE, Method("dual", "clarabel"), SolveOptions())


@pytest.mark.slow
def test_scip_on_a_large_primal_problem_ends_within_its_limit():
    """SCIP on the 1,094-contact packing ran for minutes (malloc errors) under a 5 s limit; now the
    run ends within the limit plus the grace, counted from the loaded problem."""
    limit = 2.0
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "solve", "problems/datasets/settled-00320.npz",
                           "-f", "primal", "-s", "scip", "--time-limit", str(limit), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - t0
    assert done.returncode == 1, done.stderr  # not solved
    record = json.loads(done.stdout)
    assert record["status"] in ("timeout", "failed"), record
    assert record["stop"] in ("timeout", "failed"), record
    assert record["solve_seconds"] <= limit + GRACE + 0.5, record
    assert wall < 120  # worker start, problem load and warm-up included
