"""Importing the workbench (or the problems package) first makes BLAS/OpenMP single-threaded unless the
user's environment says otherwise (workbench.THREAD_ENV): checked in fresh interpreters, since numpy reads
the variables once, when it loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _threads(first: str, extra: dict[str, str]) -> list[str]:
    from workbench import THREAD_ENV
    # {first} is imported before numpy (which reads the variables once, when it loads), then numpy
    show = (f"import os, sys; import {first}; import numpy; import workbench; "
            "print(*(os.environ[n] for n in workbench.THREAD_ENV))")
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV}
    env.update(extra, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", show], env=env, capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=120)
    return out.stdout.split()


@pytest.mark.parametrize("first", ["workbench", "problems.synthetic"])
def test_one_thread_by_default(first):
    assert _threads(first, {}) == ["1", "1", "1", "1"]


def test_user_setting_wins():
    assert _threads("workbench", {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "3"}) == ["3", "2", "1", "1"]
