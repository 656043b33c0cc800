"""A status never changes with the BLAS (standards: a verdict that changes with the CPU, BLAS or thread
count is a bug). Every solver that runs here, on small problems of every kind and two of the scaled
problems of test_fuzz_scales, in fresh interpreters under three OpenBLAS kernels and thread counts
(OpenBLAS reads them when it loads): the same status everywhere. The compiled solvers on problems
whose N needs no LAPACK (a local W, a diagonal M) use no BLAS at all, so their judged errors are the
same bits; where LAPACK factors a dense M, or a solver factors with it (pqn, ipm, the conic
backends, Siconos), only the last digits may move."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the settings compared: 1 and 2 threads, three of OpenBLAS's x86-64 kernels
SETTINGS = ({"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1"},
            {"OPENBLAS_CORETYPE": "Sandybridge", "OPENBLAS_NUM_THREADS": "2"},
            {"OPENBLAS_CORETYPE": "Prescott", "OPENBLAS_NUM_THREADS": "1"})

#: solvers whose arithmetic is the workbench's compiled code alone (no BLAS or LAPACK call)
COMPILED = ("newton", "apgd", "pgs", "jacobi", "bb", "admm")

#: problems whose N is formed without LAPACK (a local W; a diagonal M, condensed or not)
NO_LAPACK = ("packing", "packing-local", "box-on-plane", "masses-1e30", "w-1e-150")

PANEL = """
import json, warnings
warnings.simplefilter("ignore")
from factories import corpus
from test_contract import SOLVER_NAMES
from test_fuzz_scales import approaching, global_with_masses
from workbench.method import formulations_for, solve
from workbench.solvers import SolveOptions
problems = {k: v for k, v in corpus().items() if k in ("packing", "packing-local", "dense-mass", "box-on-plane", "joints")}
problems["masses-1e30"] = global_with_masses(mass=1e30, mu=0.3)
problems["w-1e-150"] = approaching(w=1e-150, q=1e30, mu=0.3)
rows = []
for solver in SOLVER_NAMES:
    formulation = formulations_for(solver)[0].name
    for name, p in problems.items():
        try:
            r = solve(p, formulation, solver, SolveOptions(tol=1e-6, time_limit=20))
            rows.append([solver, name, r.status, repr(r.metrics.get("judged_error"))])
        except Exception as e:
            rows.append([solver, name, "raised " + type(e).__name__, ""])
print(json.dumps(rows))
"""


def _panel(setting: dict[str, str]) -> list[list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    env.update(setting, PYTHONPATH=os.pathsep.join((str(ROOT), str(ROOT / "tests"))))
    out = subprocess.run([sys.executable, "-c", PANEL], env=env, cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.slow
def test_statuses_are_the_same_under_every_blas_kernel_and_thread_count():
    runs = [_panel(s) for s in SETTINGS]
    reference = runs[0]
    assert len(reference) >= 7 * 10 and sum(r[2] == "solved" for r in reference) >= 30
    for setting, run in zip(SETTINGS[1:], runs[1:]):
        for ref, row in zip(reference, run, strict=True):
            assert row[:3] == ref[:3], (setting, ref, row)
            if row[0] in COMPILED and row[1] in NO_LAPACK:
                assert row[3] == ref[3], (setting, ref, row)


def test_the_jacobi_step_keeps_its_stated_bits_and_passes_a_non_finite_one():
    """jacobi._coarse: the estimated step rounded to _STEP_BITS significant bits (within half a unit of
    the last kept bit, at most 2^-_STEP_BITS relative), so that two estimates a few ulps apart give the same step; inf and nan pass as
    they are (the run then fails on its own, never on the rounding)."""
    import math

    from workbench.solvers.jacobi import _STEP_BITS, _coarse
    for x in (1 / 3, 0.95 * 2 / 7.3, 1e-300, 3e300):
        y = _coarse(x)
        mantissa, _ = math.frexp(y)
        assert abs(y - x) <= math.ldexp(1.0, math.frexp(x)[1] - _STEP_BITS - 1) <= abs(x) * 2.0 ** -_STEP_BITS
        assert (mantissa * 2 ** _STEP_BITS).is_integer()
        assert _coarse(x * (1 + 4 * 2.0 ** -52)) == y or _coarse(x * (1 - 4 * 2.0 ** -52)) == y
    assert _coarse(math.inf) == math.inf and math.isnan(_coarse(math.nan))
