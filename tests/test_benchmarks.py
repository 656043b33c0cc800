"""The benchmarks' own arithmetic on made-up measurements (the benchmarks themselves are not run here):
benchmarks.peers's fairness rules (bench_peers: the time limit for a one-sided failure; measure: a fresh problem
per timed solve, Siconos's solvers by kind and dimension) and issue 25's target summary, the relaxed table of
benchmarks.timing.bench_ipm, the rows of benchmarks.timing.bench_scale against their targets, and benchmarks.generation.bench_generate's
series total when a run continues an earlier one; and how the commands behave: one quick reproduction run as the
README's environment runs it (not activated), which leaves docs/ alone unless --write."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.generation import bench_generate
from benchmarks.peers import bench_peers, measure, peer_process
from benchmarks.timing import bench_ipm, bench_scale
from workbench.io import load_problem
from workbench.solvers.siconos import SICONOS_PYTHON, probe


def test_one_sided_failure_counts_as_the_time_limit():
    # qpbenchmark's rule: the side that did not reach 1e-8 is counted at the time limit, never dropped
    assert bench_peers.fair_ratio(None, 0.5, 2.0) == 4.0
    assert bench_peers.fair_ratio(0.1, None, 2.0) == 0.05
    assert bench_peers.fair_ratio(0.3, 0.6, 2.0) == 0.5
    assert bench_peers.fair_ratio(None, None, 2.0) is None


def row(problem, contacts, ours=None, siconos=None, d=3, kind="local", degenerate=False):
    """An exact-part row of bench_peers with made-up solver seconds (call = 2 x solver)."""
    runs = {}
    for side, found in (("ours", ours), ("siconos", siconos)):
        for name, times in (found or {}).items():
            runs[f"{side}:{name}"] = {"solver": times, "call": [2 * t for t in times]}
    return {"problem": problem, "contacts": contacts, "d": d, "kind": kind, "runs": runs, "missed": {},
            "claimed_missed": 0, "degenerate": degenerate}


def made_up_run():
    rows = [row("siconos/Rover4144.dat", 4, {"bb": [3e-5, 4e-5, 5e-5], "apgd": [9e-5] * 3}, {"NSN_AC": [2e-5] * 3}),
            row("siconos/Tiny.dat", 2, None, {"NSGS": [1e-3] * 3}),                   # only Siconos: ours at the cap
            row("fclib/Box_Stacks-i0122-82-5.hdf5", 82, {"apgd": [0.01] * 3}, {"ADMM": [0.1] * 3}, kind="global"),
            row("siconos/Big.dat", 600, {"pgs": [0.5] * 3}, None),                   # only ours: Siconos at the cap
            row("siconos/Zero.dat", 600, {"pgs": [0.5] * 3}, None, degenerate=True),  # round-off q: listed only
            row("siconos/None.dat", 5)]                                               # neither: listed only
    relaxed = {measure.SETTLED: {"contacts": 1094, "clarabel": [0.2, 0.3, 0.25], "objective": -1.0,
                                     "to_target": {"apgd": [1.0, 1.0, 1.0], "bb": [0.6, 0.5, 0.7],
                                                   "ipm": [0.1, 0.15, 0.2]}, "missed": {"pgs": "not within"}},
               measure.SCALING: {"contacts": 9044, "clarabel": [4.0], "objective": -2.0,
                                     "to_target": {"ipm": [3.0]}, "missed": {}}}
    cold = {"version": {"command": "workbench --version", "s": [0.12, 0.1, 0.2], "MiB": [50, 55, 58], "exit": [0] * 3},
            "solve": {"command": "workbench solve", "s": [0.6, 0.7, 0.65], "MiB": [200] * 3, "exit": [0] * 3},
            "siconos": {"command": "python3 siconos_plain.py", "s": [0.14] * 3, "MiB": [49] * 3, "exit": [0] * 3}}
    settings = {"quick": True, "repetitions": 3, "cap": 2.0, "problems": 6, "siconos": "4.4", "load_start": "1.0",
                "load_end": "1.0", "restarts": 0, "wall_s": 60.0}
    return {"exact": rows, "unread": [], "siconos_check": [], "overhead": [], "relaxed": relaxed, "cold": cold,
            "settings": settings}


def test_exact_figures_apply_the_rules():
    ex = bench_peers.exact_figures(made_up_run())
    ratios = {r["problem"]: r["solver"] for r in ex["rows"]}
    assert ratios["siconos/Rover4144.dat"] == 2.0              # bb's median 4e-5 over NSN_AC's 2e-5: best of each side
    assert ratios["siconos/Tiny.dat"] == 2000.0                # the 2 s cap over 1e-3
    assert ratios["siconos/Big.dat"] == 0.25                   # 0.5 over the 2 s cap
    assert ex["n"] == 4 and ex["neither"] == ["siconos/None.dat"] and ex["degenerate"] == ["siconos/Zero.dat"]
    assert ex["ours_only"] == 1 and ex["siconos_only"] == 1
    assert math.isclose(ex["geomean"], (2.0 * 2000.0 * 0.1 * 0.25) ** 0.25)
    assert math.isclose(ex["small"], math.sqrt(2.0 * 2000.0)) and ex["small_n"] == 2
    # calls are 2 x solver on both sides; ours on Tiny counts at the cap for the call too: 2 / 2e-3
    assert math.isclose(ex["small_call"], math.sqrt(2.0 * 1000.0))
    assert ex["worst"]["problem"] == "siconos/Tiny.dat"


def test_targets_of_issue_25():
    run = made_up_run()
    run["exact"][0]["missed"] = {"siconos:PFP": "crash", "ours:admm": "timeout"}
    got = {figure.split(",")[0].split(" (")[0]: (measured, verdict) for figure, measured, _, verdict in
           bench_peers.targets(run)}
    assert got["geometric mean ours / Siconos best"][1] == "missed"
    assert got["stacked tower"] == ("0.10 (Box_Stacks-i0122-82-5.hdf5)", "met")
    # bb's median 0.6 over Clarabel's median 0.25
    assert got["settled-00320 relaxed"] == ("bb 2.40", "met")
    assert got["settled-00320 and scaling-02560"] == ("settled-00320 0.60, scaling-02560 0.75", "missed")
    assert got["`workbench --version`"] == ("0.12 s, 55 MiB", "met")
    assert got["`workbench solve` of a 4-contact file"] == ("0.65 s", "missed")
    assert got["test suite"] == ("not measured by this benchmark", "not measured")
    page = bench_peers.render(run)
    assert "| worst single problem | 2000.00 (Tiny.dat) | <= 2 | missed |" in page
    assert "Issue 17" not in page
    # the page rendered again from the JSON record (sorted keys) is the same page
    assert bench_peers.render(json.loads(json.dumps(run, sort_keys=True))) == page


def test_targets_of_issue_33_say_by_how_much():
    run = made_up_run()
    call, small, worst, corpus, stacks, cold, _, scaling = [(m, v) for _, m, _, v in bench_peers.targets_33(run)]
    assert call == ("-", "not measured")                                       # no overhead section in this run
    # Rover4144 2.0 and Tiny 2000 (ours at the 2 s cap over Siconos's 1e-3): sqrt(4000) = 63.25 over the limit 2
    assert small == ("63.25 over 2", "missed by 31.62x")
    assert worst == ("2000.00 (Tiny.dat); 1 of 2 above 3x", "missed by 666.67x")  # Rover4144 2.0 is under 3
    assert corpus == ("3.16 over 4", "missed by 3.95x")                        # (2 x 2000 x 0.1 x 0.25)^(1/4)
    assert stacks == ("0.10 (Box_Stacks-i0122-82-5.hdf5)", "met")
    assert cold == ("0.65 s", "missed by 1.30x")
    assert scaling == ("0.75", "missed by 1.25x")                              # ipm 3.0 over Clarabel's 4.0
    run["overhead"] = [{"method": "bb", "call_us": 10.0, "solver_us": 5.0},
                       {"method": "apgd", "call_us": 25.0, "solver_us": 10.0}]
    first = bench_peers.targets_33(run)[0]
    assert first[1:] == ("25 us", "<= 20 us", "missed by 1.25x")
    assert bench_peers.by_how_much(0.8, 0.8) == "met" and bench_peers.by_how_much(None, 1.0) == "not measured"
    page = bench_peers.render(run)
    assert page.index("## Targets (issue 33)") < page.index("## Targets (issue 25)") < page.index("## Exact problem")
    assert "| missed by 1.25x |" in bench_peers.render_targets(run)


def test_generated_stacks_enter_the_tower_target_only():
    run = made_up_run()
    before = bench_peers.exact_figures(run)
    assert "; 6 corpus problems (quick run);" in bench_peers.render(run)
    run["exact"].append(row("generated/brick-wall-6x5.hdf5", 220, {"newton": [0.3] * 3}, {"ADMM": [0.2] * 3}))
    run["settings"]["problems"] += 1            # the run counts every problem it read, the generated ones too
    assert "; 6 corpus problems and 1 generated stack (quick run);" in bench_peers.render(run)
    ex = bench_peers.exact_figures(run)
    assert (ex["n"], ex["geomean"], ex["worst"]) == (before["n"], before["geomean"], before["worst"])
    got = {figure.split(",")[0].split(" (")[0]: (measured, verdict) for figure, measured, _, verdict in
           bench_peers.targets(run)}
    assert got["stacked tower"] == ("1.50 (brick-wall-6x5.hdf5)", "missed")    # 0.3 over 0.2, worse than 0.10
    assert "| brick-wall-6x5.hdf5 | 220 | 3D local | newton |" in bench_peers.render(run)  # in the exact table


def test_generated_stacks_are_read_back_as_written(tmp_path):
    from problems.stacks import box_tower
    stacks = bench_peers.generated_stacks(tmp_path)
    assert [rel for rel, _, _ in stacks][0] == "generated/box-tower-12.hdf5"
    tower = box_tower(n=12)
    read, local = stacks[0][2], tower.as_local()                # Siconos's form W = N, q = r (FCLib local)
    assert read.n_contacts == 48 and not read.is_global
    np.testing.assert_allclose(read.N.toarray(), local.N.toarray(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(read.r, local.r, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(read.mu, local.mu)


def test_fresh_problem_per_timed_solve(shared_data, monkeypatch):
    p = load_problem(shared_data / "siconos" / "Rover4144.dat")
    measure.run_ours(p, ("anti-relaxed", "apgd"), 2.0, warm=False)
    _ = p.N_diagonal_blocks, p.norm_r                            # the loaded object now holds cached data
    assert measure.cached(p)
    seen = []
    real = measure.solve

    def spy(problem, *args):
        seen.append(measure.cached(problem))                   # what the problem holds when the clock starts
        return real(problem, *args)
    monkeypatch.setattr(measure, "solve", spy)
    out = measure.run_ours(p, ("anti-relaxed", "apgd"), 2.0, warm=True, inner=3)
    assert out["solved"] and seen == [[]] * 4                      # the warm-up and 3 timed solves, all fresh
    q = measure.fresh(p)
    assert (q.N != p.N).nnz == 0 and np.array_equal(q.r, p.r) and np.array_equal(q.mu, p.mu)


def test_siconos_routing_by_kind_and_dimension(shared_data):
    available = {"fc3d": ["NSGS", "NSN_AC"], "fc2d": ["NSGS", "LEMKE", "ENUM"], "gfc3d": ["NSGS_WR"],
                 "gfc2d": ["NSGS", "ENUM"]}
    two_d = load_problem(shared_data / "siconos" / "FrictionContactProblem00374.dat")    # 28 contacts, 2D
    assert measure.siconos_methods(two_d, available) == ["NSGS", "LEMKE"]          # fc2d; ENUM only <= 10
    small_2d = load_problem(shared_data / "siconos" / "FrictionContactProblem00394.dat")
    assert measure.siconos_methods(small_2d, available) == ["NSGS", "LEMKE", "ENUM"]
    assert measure.siconos_methods(load_problem(shared_data / "siconos" / "Rover4144.dat"), available) == \
        ["NSGS", "NSN_AC"]
    assert measure.siconos_methods(load_problem(shared_data / "fclib" / "Box_Stacks-i0122-82-5.hdf5"),
                                   available) == ["NSGS_WR"]
    g2 = load_problem(shared_data / "siconos" / "gfc2d_granularflowonwall_00069_00350.dat")
    assert measure.siconos_methods(g2, available) == ["NSGS"]


@pytest.mark.skipif(probe(SICONOS_PYTHON)[0] is None, reason="python3-siconos is not installed")
def test_siconos_process_solves_2d_with_fc2d_and_fclib_natively(shared_data):
    peer = peer_process.SiconosProcess()
    try:
        assert peer.methods()["fc2d"][:2] == ["NSGS", "CPG"]
        for rel, method in (("siconos/FrictionContactProblem00374.dat", "NSGS"),     # 2D, fc2d_driver
                            ("fclib/LMGC_100_PR_PerioBox-i00361-60-03000.hdf5", "NSN_AC"),
                            ("fclib/CubeH8.hdf5", "NSN_AC")):                       # M stored as one triangle
            p = load_problem(shared_data / rel)
            out = measure.run_siconos(peer, shared_data / rel, p, method, 10.0, warm=True, inner=2)
            assert out["solved"], (rel, out)           # judged by the workbench's siconos_error <= 1e-8
            assert 0 < out["solver_s"] <= out["call_s"]
    finally:
        peer.close()


def test_time_to_target_and_ipm_table():
    h = pd.DataFrame({"seconds": [0.1, 0.2, 0.3, 0.4], "objective": [-1.0, -1.5, -2.0 + 1e-5, -2.0 + 1e-7]})
    assert bench_ipm.time_to_target(h, -2.0) == 0.4                 # 1e-5 / 2 is not within 1e-6
    assert math.isnan(bench_ipm.time_to_target(h, -3.0))
    times = {"dataset:x": {"clarabel": [0.2, 0.4, 0.3], "ipm solved": [0.15, 0.15, 0.15],
                           "ipm target": [0.06, 0.09, 0.12]}}
    lines = bench_ipm.table(times, {"dataset:x": 1094})
    assert lines[0] == ("| problem | contacts | Clarabel | ipm solved | ratio | ipm to Clarabel's objective (1e-6) "
                        "| ratio |")
    assert lines[2] == "| dataset:x | 1,094 | 0.300 | 0.150 | 0.50 | 0.090 | 0.30 |"


def test_scale_rows_against_targets():
    """bench_scale's verdicts: a 1M size on 2 cores with the GPU unavailable, and a size not run."""
    ref = {"config": "cpu1", "threads": 1, "seconds": 60.0, "iterations": 270, "status": "solved",
           "relaxed_error": 9e-5, "dual_objective": -2.0, "peak_MiB": 4000.0}
    size = {"size": "1M", "spheres": 450_000, "contacts": 989_835, "generate_s": 50.0,
            "rows": [ref, {**ref, "config": "cpu", "threads": 2, "seconds": 40.0},
                     {"config": "gpu", "unavailable": "CuPy is not installed"}]}
    cpu1, cpu, gpu = bench_scale.verdicts(size, cores=2)
    assert cpu1["target"] == "no target at this size" and cpu1["ms_per_it"] == pytest.approx(1e3 * 60 / 270)
    assert cpu["target"] == "1.50x one thread on 2 cores: missed by 1.07x; same answer as one thread"
    assert gpu["target"] == "not measured: no GPU (CuPy is not installed)"
    fast = {**size, "rows": [ref, {**ref, "config": "cpu", "threads": 16, "seconds": 6.0}]}
    assert bench_scale.verdicts(fast, cores=16)[1]["target"].startswith("10.00x one thread on 16 cores: met")
    page = bench_scale.render({"tol": 1e-4, "time_limit": 900.0, "cores": 2, "gpu": "none (CuPy is not installed)",
                               "sizes": [size, {"size": "10M", "spheres": 4_550_000, "skipped": "not in this run's --contacts"}],
                               "note": ""})
    assert "| 989,835 | CPU, 2 threads | 40.00 | 148.15 | 270 | 9.0e-05 | 4,000 | 0.0e+00 |" in page
    assert "| 10M | GPU | - | - | - | - | - | - | not measured: not in this run's --contacts |" in page
    assert "cvxpy, Clarabel, SCS or qdldl loaded by the measuring processes: none" in page


def gen_row(n, seconds, dataset="scaling"):
    return {"dataset": dataset, "file": f"{dataset}-{n:05d}.npz", "spheres": n, "contacts": 3 * n, "steps": 800,
            "h": 0.005, "max_iter": 10000, "mean_iterations": 300.0, "kinetic_energy": 1e-3, "seconds": seconds,
            "cpu_seconds": seconds, "resumed_from": 0, "load": "2.0 2.0 2.0"}


def test_generate_series_continued_from_an_earlier_run():
    """An earlier record timed 64 and 128 (and 192, which this run made again); this run times 192 and
    256: the earlier rows stand for 64 and 128 only, each names its run, and the series total is the
    sum of all four packings' times over the 2 workers; with a size missing, the rest is a power-law
    estimate and says so."""
    earlier = {"provenance": {"date": "2026-11-26 03:05 UTC", "commit": "aa8f450", "command": "bench", "machine": "m"},
               "data": {"rows": [gen_row(64, 10.0), gen_row(128, 30.0), gen_row(192, 99.0)]}}
    now = [gen_row(192, 60.0), gen_row(256, 100.0)]
    rows = now + bench_generate.previous_rows(earlier, now)
    assert [r["spheres"] for r in rows] == [192, 256, 64, 128]
    assert [r.get("run") for r in rows] == [None, None] + ["2026-11-26 03:05 UTC, commit aa8f450"] * 2
    series = bench_generate.series_summary(rows, [64, 128, 192, 256], 7200.0, 2)
    assert series["measured"] == 4 and series["left"] == [] and series["measured_seconds"] == 100.0
    target = bench_generate._series_target(series)
    assert target["seconds"] == 100.0 and target["verdict"] == "met (0.01 of the target)"
    assert target["how"].startswith("all 4 packings generated")
    page = bench_generate.render({"targets": [target], "rows": rows, "large_solve": None, "series": series,
                                  "previous": earlier["provenance"]})
    assert "| this run |" in page and "| 2026-11-26 03:05 UTC, commit aa8f450 |" in page
    assert "continues an earlier one: `bench`" in page
    short = bench_generate.series_summary(rows, [64, 128, 192, 256, 320], 7200.0, 2)
    c, p = bench_generate.power_law([64, 128, 192, 256], [10.0, 30.0, 60.0, 100.0])
    assert short["left"] == [320] and short["extrapolated_seconds"] == pytest.approx(c * 320 ** p / 2, abs=0.1)
    assert bench_generate._series_target(short)["how"].startswith("EXTRAPOLATED: 4 of 5 sizes")


def made_up_bed(walls, total=800):
    n = len(walls)
    return {"spheres": 4096, "total_steps": total, "h": 0.005, "tol": 1e-6, "max_iter": 10000, "budget": 60.0,
            "threads": 2, "load_start": "1.0 1.0 1.0", "load_end": "2.0 2.0 2.0", "kinetic_energy": 1.0,
            "steps": {"contacts": list(range(1, n + 1)), "iterations": [10] * n, "wall": list(walls),
                      "cpu": [2 * w for w in walls], "solve": [0.5 * w for w in walls]}}


def test_bed_extrapolation_uses_the_last_measured_steps_and_says_so():
    """120 of 800 steps measured, the first 70 at 0.1 s and the last 50 at 1 s: the projection is the
    measured 57 s plus 680 steps at 1 s (the mean of the last TAIL = 50), CPU likewise; a bed done in
    full is its measured sum, not extrapolated; the page's windows are of 100 steps."""
    from benchmarks.generation import generate_bed

    bed = made_up_bed([0.1] * 70 + [1.0] * 50)
    p = generate_bed.projection(bed)
    assert p["extrapolated"] and p["done"] == 120
    assert p["wall"] == pytest.approx(57.0 + 680 * 1.0) and p["cpu"] == pytest.approx(2 * (57.0 + 680))
    assert generate_bed.how(bed).startswith("EXTRAPOLATED: the first 120 of 800 steps simulated in 57.0 s")
    lines = generate_bed.render(bed)
    assert "| 1-100 | 100 | 10.0 | 370.0 | 740.0 | 18.500 |" in lines  # 70 x 0.1 s + 30 x 1 s and lines[-1].startswith("| 101-120 | 120 |")
    whole = made_up_bed([0.5] * 8, total=8)
    assert generate_bed.projection(whole) == {"done": 8, "measured_wall": 4.0, "measured_cpu": 8.0, "wall": 4.0,
                                              "cpu": 8.0, "extrapolated": False}
    assert generate_bed.how(whole).startswith("all 8 steps simulated and timed")
    assert generate_bed.projection(made_up_bed([]))["wall"] is None
    kept = dict(bed, run="2026-11-28 20:18 UTC, commit 8f5c939")      # --keep-bed: an earlier run's bed
    assert generate_bed.how(kept).startswith("EXTRAPOLATED: the first 120 of 800 steps simulated in the run of "
                                             "2026-11-28 20:18 UTC, commit 8f5c939 in 57.0 s")


def test_bed_run_records_the_steppers_steps_and_stops_at_its_budget():
    """A small bed of the large recipe run to its end records, step by step, the contacts and
    iterations of the same simulation stepped directly (every step within the recipe's cap), and its
    final kinetic energy against the settled criterion; with no budget it does no step."""
    from benchmarks.generation import generate_bed
    from problems.generator import BED_ITERATION_CAP, SETTLED_ENERGY, simulation

    spec = generate_bed.bed_spec(18, width=8.0, duration=0.15)
    bed = generate_bed.run(1e9, spec)
    records = simulation(spec).run(spec.steps)
    assert bed["steps"]["contacts"] == [r.contacts for r in records] and max(bed["steps"]["contacts"]) > 0
    assert bed["steps"]["iterations"] == [r.iterations for r in records]
    assert not generate_bed.projection(bed)["extrapolated"] and (bed["tol"], bed["max_iter"]) == (1e-6, BED_ITERATION_CAP)
    assert max(bed["steps"]["iterations"]) <= BED_ITERATION_CAP and bed["recipe"] == "custom"
    assert bed["settling_ratio"] == pytest.approx(sum(r.kinetic_energy for r in records[-1:]) / (18 * 9.81), rel=1e-3)
    assert generate_bed.bed_spec().n == 4096 and generate_bed.run(0.0)["recipe"] == "large"
    said = generate_bed.render(bed)[-1]
    assert said.startswith(f"Its state after step {spec.steps}: kinetic energy")
    assert ("(settled" in said) == (bed["settling_ratio"] <= SETTLED_ENERGY) != ("(NOT settled" in said)
    assert generate_bed.run(0.0, spec)["steps"]["wall"] == []


def test_generate_jobs_run_in_workers_after_this_process_started_its_threads(tmp_path):
    """bench_generate's packings are made in worker processes. This process has started numba's thread
    pool (workbench.threads; GNU OpenMP terminates a forked child that uses it), and a worker still makes
    its packing and returns its timed row."""
    from workbench import threads
    from workbench.blocks import PARALLEL_MIN

    threads.use(2)
    # a simple cubic lattice of touching neighbours from the first step: enough contacts for the solver's threaded loops
    packing = {"n": 2000, "width": 36.0, "spacing": 1.02, "nested": False, "duration": 0.02, "h": 0.005}
    rows = bench_generate.run_jobs([("settled", packing, False)], tmp_path, workers=1)
    assert [(r["dataset"], r["spheres"], r["steps"]) for r in rows] == [("settled", 2000, 4)]
    assert rows[0]["contacts"] * 3 > PARALLEL_MIN and (tmp_path / "settled-02000.npz").exists()


def test_generate_refuses_a_previous_record_that_is_not_one(tmp_path, capsys):
    bad = tmp_path / "generate.json"
    bad.write_text('{"data": {}}')
    assert bench_generate.main(["--previous", str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert bench_generate.main(["--keep-bed"]) == 2                 # no earlier record to keep it from
    assert capsys.readouterr().err == "--keep-bed needs --previous with a bed, and no --bed-minutes\n"


REPO = Path(__file__).resolve().parents[1]


def test_benchmarks_set_blas_to_one_thread_before_numpy_loads():
    """Importing the benchmarks package sets BLAS to one thread (workbench.THREAD_ENV) before numpy is
    loaded: OpenBLAS reads the setting only then, and a benchmark must measure the command line's
    threads."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    code = "import os, sys, benchmarks; print('numpy' in sys.modules, os.environ.get('OPENBLAS_NUM_THREADS'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "1"]


def _tracked_changes() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                          text=True).stdout


def test_reproduce_runs_without_an_activated_environment_and_leaves_docs_alone():
    """README's environment, not activated: the venv's python by path, PATH without the venv's bin; the
    command writes its table into a temporary folder, not docs/ (that needs --write)."""
    before = _tracked_changes()
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.reproduce", "anitescu-hart-2003", "--quick"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "docs/ unchanged: add --write" in proc.stderr and "embedded in" not in proc.stderr
    written = Path(next(line for line in proc.stderr.splitlines() if line.startswith("written: "))[len("written: "):])
    assert written.is_file() and REPO not in written.parents
    assert _tracked_changes() == before


def test_quick_reproduction_refuses_write(capsys):
    from benchmarks.reproduce import __main__ as reproduce
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["pqn-2017", "--quick", "--write"])
    assert exc.value.code == 2 and "not written into docs/" in capsys.readouterr().err


#: every benchmark that writes a results page (found, so that a new one is checked without being listed)
PAGE_WRITERS = sorted(p.relative_to(REPO / "benchmarks").with_suffix("").as_posix() for p in (REPO / "benchmarks").rglob("*.py")
                      if "write_results(" in p.read_text("utf-8"))


def test_the_page_writers_are_found():
    assert {"reproduce/__main__", "peers/bench_peers", "timing/bench_export", "reproduce/settledness",
            "reproduce/calibrate"} <= set(PAGE_WRITERS)


@pytest.mark.parametrize("module", PAGE_WRITERS)
def test_benchmarks_write_into_docs_only_when_asked(module):
    """Every benchmark with a docs/results page takes --write, and nothing else writes: the call to
    workbench.provenance.write_results sits behind ``args.write`` (or writes into a temporary folder
    unless it is given)."""
    text = (REPO / "benchmarks" / f"{module}.py").read_text(encoding="utf-8")
    assert '"--write"' in text and "--no-write" not in text
    guarded = text.split("write_results(")[1:]
    assert guarded and all("args.write" in text.split("write_results(")[i][-600:] for i in range(len(guarded)))


def test_a_benchmark_under_the_wrong_interpreter_says_which_in_one_line():
    """The system python without numpy (the usual mistake: `python3 -m benchmarks.ROOM.NAME` with the venv not
    activated) stops at the package with one line naming the command to use, exit code 2."""
    system = "/usr/bin/python3"
    if not Path(system).is_file() or subprocess.run([system, "-c", "import numpy"], capture_output=True).returncode == 0:
        pytest.skip(f"{system} is missing or has numpy: no interpreter without the environment to try")
    proc = subprocess.run([system, "-m", "benchmarks.reproduce", "pqn-2017", "--quick"], cwd=REPO,
                          env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "lacks numpy" in proc.stderr and ".venv/bin/python -m benchmarks.ROOM.NAME" in proc.stderr


def test_an_old_benchmark_command_names_its_new_module_in_one_line():
    """The benchmarks before their rooms (docs/benchmarks.md): every module of benchmarks.MOVED is where the
    table says, none is left at the old place, and ``python -m benchmarks.OLD`` stops with one line naming
    the new module, exit code 2, before it imports the workbench."""
    from benchmarks import MOVED
    for old, new in MOVED.items():
        assert (REPO / "benchmarks" / f"{new.replace('.', '/')}.py").is_file(), new
        assert not (REPO / "benchmarks" / f"{old}.py").exists(), old
    proc = subprocess.run([sys.executable, "-m", "benchmarks.calibrate", "--write"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and proc.stdout == ""
    assert "run .venv/bin/python -m benchmarks.reproduce.calibrate" in proc.stderr


def test_a_member_count_below_one_is_refused_and_fewer_than_ten_say_why(capsys):
    """--members N of python -m benchmarks.reproduce: a count below 1 is one line and exit 2; a run with fewer
    than 10 members (issue 44) says why on its rows (--quick, or the count given)."""
    from types import SimpleNamespace

    from benchmarks.reproduce import __main__ as reproduce
    from benchmarks.reproduce.common import _fewer, _trajectories
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["pqn-2017", "--members", "0"])
    assert exc.value.code == 2 and "--members" in capsys.readouterr().err.splitlines()[-1]
    assert (_trajectories(SimpleNamespace(quick=False, members=None)), _fewer(SimpleNamespace(quick=False, members=None))) \
        == (10, None)
    assert _trajectories(SimpleNamespace(quick=True, members=None)) == 3
    assert "--quick" in _fewer(SimpleNamespace(quick=True, members=None))
    assert "--members 4 given" in _fewer(SimpleNamespace(quick=False, members=4))
    assert _fewer(SimpleNamespace(quick=True, members=12)) is None


def test_cold_start_page_reports_what_the_runs_left_in_the_clone(tmp_path):
    """The cold-start page says whether the main job left the clone's ``git status`` clean (issue 46): a
    tracked file changed and a stray new file are both listed; an ignored folder is not."""
    from benchmarks.timing import bench_cold_start as cs

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q")
    (tmp_path / ".gitignore").write_text("/results/\n")
    (tmp_path / "tracked.md").write_text("a\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "row.json").write_text("{}")
    assert cs._changed_files(tmp_path) == []
    (tmp_path / "tracked.md").write_text("b\n")
    (tmp_path / "stray.txt").write_text("c\n")
    changed = cs._changed_files(tmp_path)
    assert changed == [" M tracked.md", "?? stray.txt"]
    run = {"seconds": 1.0, "killed": 0, "cache_files": 0, "load": "0.0", "counts": {}, "statuses": {}, "verdicts": {}}
    data = {"study": "s.toml", "jobs": 2, "cold": run, "warm": run, "diff": cs.compare(run, run), "git_status": changed}
    assert "2 changed or new files: ` M tracked.md`, `?? stray.txt`." in cs.render(data)
    assert "`git status` in the clone after the two runs: clean." in cs.render({**data, "git_status": []})


def test_the_admm_comparison_takes_ratios_only_where_both_variants_reach_the_target():
    """benchmarks.timing.bench_admm.summary: the geometric mean of accelerated / plain iterations over the
    problems both reach (here 50/100 and 200/100: exactly 1), the counts of each, and a missed run
    rendered as "not reached" with no ratio."""
    from benchmarks.timing import bench_admm

    def run(iterations, reached):
        return {"iterations": iterations, "status": "solved" if reached else "max_iter", "reached": reached,
                "error": None}
    rows = [{"problem": "a", "contacts": 20, "half": "held-out", "plain": run(100, True), "accelerated": run(50, True)},
            {"problem": "b", "contacts": 30, "half": "held-out", "plain": run(100, True), "accelerated": run(200, True)},
            {"problem": "c", "contacts": 40, "half": "held-out", "plain": run(5000, False), "accelerated": run(900, True)}]
    s = bench_admm.summary(rows)
    assert s["geomean"] == pytest.approx(1.0) and s["both"] == 2 and (s["fewer"], s["more"]) == (1, 1)
    assert (s["plain_reached"], s["variant_reached"]) == (2, 3)
    page = bench_admm.render({"rows": rows, "max_iter": 5000, "tol": 1e-8})
    assert "| c | held-out | 40 | not reached (max_iter, 5,000) | 900 | - |" in page
    assert "| held-out, over 10 contacts | accelerated | 3 | 2 | 3 | 1.00 over 2 | 1 / 1 |" in page


def test_every_import_of_a_benchmark_module_names_one_that_exists():
    """The imports inside the benchmarks' functions (a --write path's renderer "by its importable name")
    run only when that path does: each ``from benchmarks... import NAME`` names a module or an attribute
    that exists (tiny_profile's --write once imported itself from a package it had moved out of)."""
    import ast
    import importlib
    import importlib.util
    root = Path(__file__).resolve().parents[1]
    missing = []
    for path in sorted((root / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("benchmarks"):
                package = importlib.import_module(node.module)
                for alias in node.names:
                    if not (hasattr(package, alias.name) or (hasattr(package, "__path__") and importlib.util.find_spec(
                            f"{node.module}.{alias.name}") is not None)):
                        missing.append(f"{path.relative_to(root)}: from {node.module} import {alias.name}")
    assert not missing, missing
