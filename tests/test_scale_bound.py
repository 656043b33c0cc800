"""benchmarks.timing.bench_scale's CPU bound and GPU rows (issue 47): the bytes an APGD iteration must move,
counted from a small problem's own nnz and sizes (global: both factors of N and the intermediate vector;
local: W once); each CPU row's distance from its bound and the 1M target; the GPU target (the same
relaxed error, iterations within the margin) met and missed; GPU rows without a GPU say so; the GPU
checks say why they did not run."""

from __future__ import annotations

import pytest

from benchmarks.timing import bench_scale
from problems.synthetic import sphere_packing
from workbench.solvers.xp_first_order import device_availability, iteration_margin


@pytest.fixture(scope="module")
def packing():
    return sphere_packing(200)


def test_iteration_bytes_of_a_global_problem(packing):
    """N = C^T M^-1 C with M diagonal: A = M^-1 C (rows: the dofs) and B = C^T (rows: the unknowns), each
    with nnz(D) entries (8-byte values, 4-byte column indices), their row pointers, the dof vector A x
    written and read; 26 passes over n-vectors (the compiled loop's) and mu."""
    p = packing
    n_dof, n, nnz = p.D.shape[0], p.n_unknowns, p.D.nnz
    factors = 2 * nnz * (8 + 4) + 4 * (n_dof + 1) + 4 * (n + 1) + 2 * 8 * n_dof
    out = bench_scale.iteration_bytes(p)
    assert out["vector_passes"] == 26
    assert out["factors"] == factors
    assert out["vectors"] == 8 * 26 * n + 8 * p.n_contacts
    assert out["total"] == factors + out["vectors"]
    assert out["backtrack"] == factors + 8 * 11 * n + 8 * p.n_contacts     # gradient step, product input, test terms


def test_iteration_bytes_of_a_local_problem(packing):
    """W read once per product, no intermediate vector."""
    local = packing.as_local()
    W, n = local.N, local.n_unknowns
    out = bench_scale.iteration_bytes(local)
    assert out["factors"] == W.nnz * (W.data.itemsize + W.indices.itemsize) + (n + 1) * W.indptr.itemsize
    assert out["vectors"] == 8 * 26 * n + 8 * local.n_contacts


def test_stream_bandwidth_counts_a_read_and_a_write_per_entry(monkeypatch):
    """16 bytes per entry over the median of the timed calls (the clock replaced: 0.5 s per call)."""
    ticks = iter(range(100))
    monkeypatch.setattr(bench_scale.time, "perf_counter", lambda: 0.5 * next(ticks))
    assert bench_scale.stream_bandwidth(8 * 1000, repeats=3) == pytest.approx(2 * 8000 / 0.5)


def _size(rows, contacts=989_835, label="1M", **extra):
    return {"size": label, "spheres": 450_000, "contacts": contacts, "generate_s": 1.0, "rows": rows,
            "iteration_bytes": {"total": 2_000_000_000, "factors": 1, "vectors": 1, "vector_passes": 26}, **extra}


REF = {"config": "cpu1", "threads": 1, "seconds": 27.0, "iterations": 270, "status": "solved",
       "relaxed_error": 9e-5, "dual_objective": -2.0, "peak_MiB": 4000.0, "bandwidth_GBs": 20.0}


def test_each_cpu_row_against_its_bound():
    """2 GB per iteration at 20 GB/s: a bound of 100 ms; 100 ms/it is 1.00x (met at 1M), 200 ms/it 2.00x."""
    rows = [REF, {**REF, "config": "cpu", "threads": 2, "seconds": 54.0, "bandwidth_GBs": 40.0}]
    cpu1, cpu, _ = bench_scale.verdicts(_size(rows), cores=2)
    assert cpu1["bound_ms"] == pytest.approx(100.0) and cpu1["vs_bound"] == pytest.approx(1.0)
    assert "1.00x its bandwidth bound (target 1.5x: met)" in cpu1["target"]
    assert cpu["bound_ms"] == pytest.approx(50.0) and cpu["vs_bound"] == pytest.approx(4.0)
    assert "4.00x its bandwidth bound (target 1.5x: missed)" in cpu["target"]
    other = bench_scale.verdicts(_size(rows, label="100k"), cores=2)[0]
    assert other["target"] == "1.00x its bandwidth bound"       # no target at other sizes


def test_backtracks_count_in_the_bound():
    """27 backtracks over 270 iterations, 1 GB each: 0.1 GB more per iteration, a bound of 105 ms at 20 GB/s;
    the row says how far it is without them too."""
    size = _size([{**REF, "backtracks": 27}])
    size["iteration_bytes"]["backtrack"] = 1_000_000_000
    cpu1 = bench_scale.verdicts(size, cores=2)[0]
    assert cpu1["bound_ms"] == pytest.approx(105.0) and cpu1["vs_bound"] == pytest.approx(100.0 / 105.0)
    assert cpu1["target"] == "0.95x its bandwidth bound (target 1.5x: met) (27 backtracks counted; without them 1.00x)"


@pytest.mark.parametrize("extra, met", [(0, True), (iteration_margin(270), True), (iteration_margin(270) + 1, False)])
def test_gpu_target_is_the_same_error_within_the_margin(extra, met):
    gpu = {**REF, "config": "gpu", "seconds": 0.2, "iterations": 270 + extra, "device": "H100"}
    del gpu["bandwidth_GBs"]
    row = bench_scale.verdicts(_size([REF, gpu]), cores=2)[2]
    assert "vs_bound" not in row
    assert row["target"].endswith(f"{270 + extra} iterations against one thread's 270 (margin "
                                  f"{iteration_margin(270)}): " + ("met" if met else "missed"))
    worse = bench_scale.verdicts(_size([REF, {**gpu, "relaxed_error": 2e-4}]), cores=2)[2]
    assert worse["target"].endswith("missed")


def test_gpu_rows_without_a_gpu_say_so():
    size = _size([REF], gpu_available=(False, "CuPy is not installed"))
    assert bench_scale.verdicts(size, cores=2)[2]["target"] == "not measured: no GPU (CuPy is not installed)"
    page = bench_scale.render({"tol": 1e-4, "time_limit": 900.0, "cores": 2, "gpu": "none", "sizes": [size],
                               "note": "", "checks": [{"check": "gpu", "ok": None, "why": "not run: no GPU (x)"}]})
    assert "not measured: no GPU (CuPy is not installed) |" in page and "GPU checks (`--check`): not run: no GPU (x)." in page


@pytest.mark.skipif(device_availability("gpu")[0], reason="a GPU is here: the checks run (test_xp_first_order)")
def test_gpu_checks_say_why_they_did_not_run():
    (row,) = bench_scale.gpu_checks()
    assert row["ok"] is None and row["why"] == f"not run: no GPU ({device_availability('gpu')[1]})"
