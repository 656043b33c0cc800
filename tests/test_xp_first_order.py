"""The array-module implementation of APGD and Jacobi (workbench.solvers.xp_first_order), run on numpy
(device = numpy; the GPU runs the same lines on CuPy): the same iterates as the compiled solvers to
round-off at equal iterations on committed data, global and local, relaxed and anti-relaxed; the device
in the method's name; "unavailable, because ..." without CuPy; time limits hold. The CUDA projection
kernel's source, generated from a reference, executed on the CPU (the reference, and the generated C
compiled by the host's compiler) against workbench.cones bit for bit; stopping tests every k iterations
stop at the next check; no vector allocated per iteration. On a GPU: the kernel bit for bit, and the GPU
target (the same accuracy, iterations within the margin); skipped, saying why, without one."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tracemalloc

import numpy as np
import pytest

from workbench.method import Method
from workbench.solvers import SolveOptions
from benchmarks.timing.bench_scale import cone_points
from workbench.cones import project_friction_cone
from workbench.solvers import xp_first_order
from workbench.solvers.xp_first_order import (KERNEL_NAME, cone3, cone3_source, device_availability,
                                             iteration_margin)
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
    else:
        if not ok:                      # CuPy without a device: unavailable, saying so
            assert "no CUDA device" in why
            res = Method("dual", "apgd", {"device": "gpu"}).solve(load("dataset:settled-00320"))
            assert res.status == "unavailable" and "no CUDA device" in res.message


# ------------------------------------------------------------------ the projection kernel's source, on the CPU

def test_reference_projection_is_the_cpu_projection_bit_for_bit():
    x, mu = cone_points(4000)
    ref = project_friction_cone(x, mu)
    got = np.array([cone3(*x[i], mu[i]) for i in range(x.shape[0])])
    assert np.array_equal(got, ref)
    cases = np.array([np.array_equal(ref[i], x[i]) + 2 * (not ref[i].any()) for i in range(x.shape[0])])
    assert {0, 1, 2} <= set(cases.tolist())          # all three cases were exercised


def test_generated_kernel_source_compiled_and_run_on_the_cpu(tmp_path):
    """The C source generated from the reference (the CUDA kernel's contact function, the same text)
    compiled by the host's C compiler without contraction into fused multiply-adds, run on points of every
    case: bit-for-bit workbench.cones."""
    cuda, c = cone3_source("cuda"), cone3_source("c")
    body = lambda src: src[src.index("_contact("):src.index("\n}\n")]   # noqa: E731
    assert body(cuda) == body(c) and "__global__" in cuda and "blockIdx" in cuda
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler on this machine: the generated source is compiled on a GPU only "
                    "(python -m benchmarks.timing.bench_scale --device gpu --check)")
    (tmp_path / "cone3.c").write_text(c)
    lib = tmp_path / "cone3.so"
    subprocess.run([compiler, "-O2", "-ffp-contract=off", "-shared", "-fPIC", str(tmp_path / "cone3.c"), "-o",
                    str(lib), "-lm"], check=True, capture_output=True)
    kernel = getattr(ctypes.CDLL(str(lib)), KERNEL_NAME)
    x, mu = cone_points(20000, seed=1)
    flat = x.ravel().copy()  # x itself stays the input
    ptr = ctypes.POINTER(ctypes.c_double)
    kernel(mu.ctypes.data_as(ptr), flat.ctypes.data_as(ptr), ctypes.c_longlong(mu.shape[0]))
    assert np.array_equal(flat.reshape(-1, 3), project_friction_cone(x, mu))


def test_generator_refuses_what_it_cannot_translate():
    def powered(x0, x1, x2, mu):
        s = (x1 ** 2 + x2 * x2)
        return s, x1, x2

    def branching(x0, x1, x2, mu):
        if x0 > 0:
            return x0, x1, x2
        else:
            return 0.0, 0.0, 0.0
    for reference in (powered, branching):
        with pytest.raises(ValueError, match="no C translation"):
            cone3_source("c", reference)


# ------------------------------------------------------------------ checks every k iterations, in place

@pytest.mark.parametrize("formulation, solver, every", [("dual", "apgd", 4), ("dual", "apgd", 7),
                                                          ("anti-relaxed", "apgd", 5), ("anti-relaxed", "apgd", 3)])
def test_checking_every_k_iterations_stops_at_the_next_check(settled, formulation, solver, every):
    """The same iterates (round-off) tested at every k-th iteration: the run stops at the first check at
    or after the compiled loop's stop whose measure meets the tolerance (the measure of the checks it
    passed, read from a history of every iteration, did not; anti-relaxed: the shift a(u) still follows
    every iteration, so the iterates are the compiled loop's)."""
    options = SolveOptions(tol=1e-6, max_iter=2000, keep_history=False)
    cpu = Method(formulation, solver).solve(settled, options)
    xp = Method(formulation, solver, {"device": "numpy", "check_every": every}).solve(settled, options)
    assert cpu.status == xp.status == "solved" and xp.info["check_every"] == every
    assert xp.iterations % every == 0 and cpu.iterations <= xp.iterations
    if formulation == "dual":           # here the first check after the stop meets the tolerance
        assert xp.iterations == every * -(-cpu.iterations // every)
    else:                               # the Siconos error is not monotone: the history says which checks passed
        every_iteration = Method(formulation, solver, {"device": "numpy"}).solve(
            settled, SolveOptions(tol=1e-14, max_iter=xp.iterations, keep_history=True)).history.set_index("iteration")
        passed = range(every * -(-cpu.iterations // every), xp.iterations, every)
        assert all(every_iteration.loc[k, "error"] > options.tol for k in passed)
        assert every_iteration.loc[xp.iterations, "error"] <= options.tol
    key = "relaxed_error" if formulation == "dual" else "siconos_error"
    assert xp.metrics[key] <= options.tol
    assert xp.iterations - cpu.iterations <= iteration_margin(cpu.iterations, every)


def test_iteration_cap_is_checked_at_its_count_and_history_checks_every_iteration(settled):
    method = Method("dual", "jacobi", {"device": "numpy", "check_every": 10})
    capped = method.solve(settled, SolveOptions(tol=1e-14, max_iter=23, keep_history=False))
    assert capped.iterations == 23 and capped.stop.value == "max_iter"
    kept = method.solve(settled, SolveOptions(tol=1e-14, max_iter=12, keep_history=True))
    assert len(kept.history) == 12 and kept.info["check_every"] == 1


@pytest.mark.parametrize("solver", ["apgd", "jacobi"])
def test_no_vector_allocated_per_iteration_on_numpy(settled, solver, monkeypatch):
    """From the first iteration's end to the last's, the traced memory never rises by half a vector of
    the problem's unknowns: the loop's vectors are buffers of the solve, updated in place."""
    seen = {}
    account = xp_first_order._Loop.account

    def watched(self, x, u, a, k):
        if "base" in seen:
            seen["peak"] = max(seen.get("peak", 0), tracemalloc.get_traced_memory()[1])
        out = account(self, x, u, a, k)
        if "base" not in seen:
            seen["base"] = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
        return out
    monkeypatch.setattr(xp_first_order._Loop, "account", watched)
    method = Method("dual", solver, {"device": "numpy", "check_every": 5})
    method.solve(settled, SolveOptions(tol=1e-14, max_iter=3, keep_history=False))      # compiled, caches filled
    tracemalloc.start()
    try:
        seen.clear()
        res = method.solve(settled, SolveOptions(tol=1e-14, max_iter=60, keep_history=False))
    finally:
        tracemalloc.stop()
    assert res.iterations == 60
    assert seen["peak"] - seen["base"] < 4 * settled.n_unknowns, (seen, 8 * settled.n_unknowns)


# ------------------------------------------------------------------ on a GPU (skipped, saying why, without one)

GPU_OK, GPU_WHY = device_availability("gpu")
needs_gpu = pytest.mark.skipif(not GPU_OK, reason=f"no GPU here: {GPU_WHY}; the same checks run on a GPU machine "
                               "by python -m benchmarks.timing.bench_scale --device gpu --check")


@needs_gpu
def test_kernel_on_the_gpu_is_the_cpu_projection_bit_for_bit():
    from benchmarks.timing.bench_scale import kernel_check
    out = kernel_check(200_000)
    assert out["ok"], out


@needs_gpu
def test_gpu_meets_the_gpu_target_on_committed_data(settled):
    options = SolveOptions(tol=1e-6, max_iter=2000, keep_history=False)
    for formulation in ("dual", "anti-relaxed"):
        cpu = Method(formulation, "apgd").solve(settled, options)
        gpu = Method(formulation, "apgd", {"device": "gpu"}).solve(settled, options)
        assert gpu.status == cpu.status == "solved" and gpu.info["device"] == "gpu"
        assert abs(gpu.iterations - cpu.iterations) <= iteration_margin(cpu.iterations)
        key = "relaxed_error" if formulation == "dual" else "siconos_error"
        assert gpu.metrics[key] <= options.tol
