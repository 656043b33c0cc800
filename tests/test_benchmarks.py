"""The benchmarks' own arithmetic on made-up measurements (the benchmarks themselves are not run here):
issue 17's target summary of benchmarks.bench_peers, the relaxed table of benchmarks.bench_ipm and
the scale table of benchmarks.bench_scale."""

import math

import numpy as np
import pandas as pd

from benchmarks import bench_ipm, bench_peers, bench_scale

SETTLED = bench_peers.SETTLED


def scale_row(contacts, solve_s, status):
    return {"spheres": 1, "contacts": contacts, "method": "apgd", "generate_s": 0.5, "build_s": 0.0,
            "solve_s": solve_s, "iterations": 250, "relaxed_error": 9.5e-5, "status": status, "stop": "converged",
            "peak_MiB": 548.0}


def test_targets_from_measured_rows():
    over = [("apgd", 31.0e-6, 4.0e-6), ("pgs", 80.0e-6, 9.0e-6)]
    # contacts, ours / Siconos; inf: only Siconos reaches 1e-8
    pairs = [(1, 0.5), (4, 2.0), (8, 4.0), (10, math.inf), (100, 0.0625), (4000, 2.0)]
    relaxed = {SETTLED: {"clarabel": [0.30, 0.20, 0.25], "ipm solved": [0.3, 0.3, 0.3],
                         "ipm target": [0.20, 0.22, 0.18], "apgd target": [np.nan, 4.0, 4.0]}}
    rows = [scale_row(3187, 0.1, "solved"), scale_row(100_208, 5.36, "solved")]
    got = bench_peers.targets(over, pairs, relaxed, rows)
    assert [v for _, _, v in got] == ["met", "missed", "met", "met", "met"]
    assert got[0][1] == "31.0 us"                                   # apgd's call, not pgs's
    assert got[1][1] == "2 of 4 (worst ours not reaching 1e-8)"     # 4.0 and inf are not within 3x
    # geometric mean over the finite ratios: (0.5 * 2 * 4 * 0.0625 * 2) ** (1 / 5) = 0.5 ** 0.2 = 0.871
    assert got[2][1].startswith("0.87 over the 5 problems both solve (1 only Siconos solves)")
    # median 0.20 / median 0.25; apgd has a NaN (not reached), so its median is no figure
    assert got[3][1] == "ipm 0.200 s / Clarabel 0.250 s = 0.80x (medians)"
    assert got[4][1] == "apgd 5.36 s, solved (100,208 contacts)"


def test_targets_missed_and_not_measured():
    pairs = [(2, 4.5), (50, 3.0)]
    relaxed = {SETTLED: {"clarabel": [0.2], "ipm target": [0.5]}}
    got = bench_peers.targets([("apgd", 60e-6, 5e-6)], pairs, relaxed, [scale_row(100_208, 61.0, "timeout")])
    assert [v for _, _, v in got] == ["missed", "missed", "missed", "missed", "missed"]
    assert got[1][1] == "0 of 1 (worst 4.50x)"
    assert got[2][1].startswith(f"{math.sqrt(4.5 * 3.0):.2f} over the 2")
    assert got[3][1].endswith("= 2.50x (medians)")
    got = bench_peers.targets([], [], None, "the scale process failed (exit 137)")
    assert [v for _, _, v in got] == ["not measured"] * 5
    assert got[4][1] == "the scale process failed (exit 137)"
    # a packing below 100,000 contacts does not meet the scale target however fast
    assert bench_peers.targets([], [], None, [scale_row(30_000, 1.0, "solved")])[4][2] == "missed"


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


def test_scale_table_columns():
    lines = bench_scale.table([scale_row(100_208, 5.36, "solved")])
    assert lines[0] == "| contacts | method | generate s | solve s | iterations | relaxed error | stop | peak MiB |"
    assert lines[2] == "| 100,208 | apgd | 0.50 | 5.36 | 250 | 9.5e-05 | converged | 548 |"
