"""The thread policy (workbench.threads): BLAS/OpenMP single-threaded unless the user's environment says
otherwise (workbench.THREAD_ENV); the compiled kernels' threads from --threads, WORKBENCH_THREADS or the
cores (divided among a study's workers), never more than the cores. Checked in fresh interpreters,
since numpy and numba read the variables once, when they load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import threads

ROOT = Path(__file__).resolve().parents[1]
ALL = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", threads.ENV)


def _run(code: str, extra: dict[str, str]) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ALL}
    env.update(extra, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=120)
    return out.stdout.split()


def _env_after(first: str, extra: dict[str, str]) -> list[str]:
    # {first} is imported before numpy (which reads the variables once, when it loads), then numpy
    return _run(f"import os; import {first}; import numpy; print(*(os.environ.get(n, '-') for n in {ALL!r}))",
                extra)


@pytest.mark.parametrize("first", ["workbench", "problems.synthetic"])
def test_blas_one_thread_numba_every_core_by_default(first):
    assert _env_after(first, {}) == ["1", "1", "1", "-", "-"]


def test_user_setting_wins():
    assert _env_after("workbench", {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "3"})[:3] == ["3", "2", "1"]


def test_workbench_threads_sizes_numba_pool():
    out = _run("import workbench, numba; print(numba.config.NUMBA_NUM_THREADS, numba.get_num_threads())",
               {threads.ENV: "1"})
    assert out == ["1", "1"]


def test_choose_order_and_never_above_cores(monkeypatch):
    monkeypatch.delenv(threads.ENV, raising=False)
    c = threads.cores()
    assert threads.choose() == c                       # solve: every core
    assert threads.choose(None, jobs=2) == max(1, c // 2)
    assert threads.choose(None, jobs=10 * c) == 1      # never 0
    assert threads.choose(10 * c) == c                 # never above the cores
    monkeypatch.setenv(threads.ENV, "1")
    assert threads.choose(None, jobs=1) == 1           # the environment beats the default
    assert threads.choose(c) == c                      # --threads beats the environment
    monkeypatch.setenv(threads.ENV, "two")
    with pytest.raises(Exception, match="WORKBENCH_THREADS: expected a positive integer"):
        threads.choose()


def test_study_worker_gets_its_share(monkeypatch):
    from workbench.study.worker import WorkerProcess
    monkeypatch.delenv(threads.ENV, raising=False)
    env = WorkerProcess(jobs=2)._env()
    assert env[threads.ENV] == env["NUMBA_NUM_THREADS"] == str(threads.per_worker(2))
    monkeypatch.setenv(threads.ENV, "1")
    assert WorkerProcess(jobs=1)._env()["NUMBA_NUM_THREADS"] == "1"


def test_cli_threads_option_checked():
    env = {k: v for k, v in os.environ.items() if k not in ALL}
    env.update(PYTHONPATH=str(ROOT))
    bad = subprocess.run([sys.executable, "-m", "workbench.cli", "solve", "x.npz", "-f", "dual", "-s", "apgd",
                          "--threads", "0"], env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "--threads" in bad.stderr and "Traceback" not in bad.stderr
    env[threads.ENV] = "many"
    bad = subprocess.run([sys.executable, "-m", "workbench.cli", "solve", "x.npz", "-f", "dual", "-s", "apgd"],
                         env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "WORKBENCH_THREADS" in bad.stderr and "Traceback" not in bad.stderr
