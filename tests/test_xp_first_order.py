"""The array-module implementation of APGD and Jacobi (workbench.solvers.xp_first_order), run on numpy
(device = numpy; the GPU runs the same lines on CuPy): the same iterates as the compiled solvers to
round-off at equal iterations on committed data, global and local, relaxed and anti-relaxed; the device
in the method's name; "unavailable, because ..." without CuPy; time limits hold."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.method import Method
from workbench.solvers import SolveOptions
from workbench.solvers.xp_first_order import device_availability
from workbench.sources import load


@pytest.fixture(scope="module")
def settled():
    return load("dataset:settled-00320")


CASES = [("dual", "apgd", {}), ("anti-relaxed", "apgd", {}), ("dual", "jacobi", {}),
         ("anti-relaxed", "jacobi", {}), ("anti-relaxed", "apgd", {"anti_relaxation": "outer"})]


@pytest.mark.parametrize("local", [False, True], ids=["global", "local"])
@pytest.mark.parametrize("formulation, solver, params", CASES)
def test_numpy_path_equals_compiled(settled, formulation, solver, params, local):
    problem = settled.as_local() if local else settled
    options = SolveOptions(tol=1e-6, max_iter=250)
    cpu = Method(formulation, solver, params).solve(problem, options)
    xp = Method(formulation, solver, {**params, "device": "numpy"}).solve(problem, options)
    assert xp.iterations == cpu.iterations > 10 and xp.status == cpu.status
    ref = cpu.metrics["dual_objective"]
    assert abs(xp.metrics["dual_objective"] - ref) <= 1e-9 * abs(ref)
    assert np.linalg.norm(xp.nu - cpu.nu) <= 1e-7 * np.linalg.norm(cpu.nu)
    assert xp.info["device"] == "numpy"


def test_history_and_time_limit_on_numpy(settled):
    method = Method("dual", "apgd", {"device": "numpy"})
    with_history = method.solve(settled, SolveOptions(tol=1e-8, max_iter=15, keep_history=True))
    assert len(with_history.history) == 15 and with_history.stop.value == "max_iter"
    capped = method.solve(settled, SolveOptions(tol=1e-14, max_iter=10**6, time_limit=0.05))
    assert capped.stop.value == "timeout" and capped.solve_seconds < 1.0


def test_device_in_the_name_and_availability():
    assert Method("dual", "apgd", {"device": "gpu"}).label == "dual / apgd[gpu]"
    assert Method("dual", "jacobi").label == "dual / jacobi"
    ok, why = Method("dual", "apgd", {"device": "gpu"}).availability()
    assert (ok, why) == device_availability("gpu")
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert not ok and "CuPy" in why
        res = Method("dual", "apgd", {"device": "gpu"}).solve(load("dataset:settled-00320"))
        assert res.status == "unavailable" and "CuPy" in res.message
