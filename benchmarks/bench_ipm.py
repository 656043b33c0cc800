"""The in-house interior-point method against Clarabel on the relaxed dual (issue 17 item 4):
python3 -m benchmarks.bench_ipm [--repetitions K] [SPEC ...]

For each problem (default: dataset:settled-00320 and dataset:unsettled-00320), K interleaved rounds
(default 3) of: Clarabel to tol 1e-6 (its objective is the target), ipm to tol 1e-6 without a
history (time to status solved), ipm with a history (time of the first iterate whose dual objective is
within 1e-6 relative of Clarabel's). Solve seconds (Clarabel's exclude cvxpy's compilation, ipm's
include its set-up), after one warm-up solve of each; prints the medians and the ratios to Clarabel.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from workbench.solvers import SolveOptions, solve
from workbench.sources import load

TARGET = 1e-6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", default=["dataset:settled-00320", "dataset:unsettled-00320"])
    ap.add_argument("--repetitions", type=int, default=3)
    args = ap.parse_args(argv)
    problems = {spec: load(spec) for spec in args.specs}
    options = SolveOptions(tol=1e-6, keep_history=False)
    for p in problems.values():
        solve(p, "dual", "clarabel", options)
        solve(p, "dual", "ipm", options)
    times = {spec: {"clarabel": [], "ipm": [], "target": []} for spec in problems}
    for _ in range(args.repetitions):
        for spec, p in problems.items():
            ref = solve(p, "dual", "clarabel", options)
            res = solve(p, "dual", "ipm", options)
            h = solve(p, "dual", "ipm", SolveOptions(tol=1e-6, keep_history=True)).history
            near = np.abs(h["objective"] - ref.objective) <= TARGET * abs(ref.objective)
            t = times[spec]
            t["clarabel"].append(ref.solve_seconds)
            t["ipm"].append(res.solve_seconds if res.status == "solved" else np.nan)
            t["target"].append(float(h["seconds"][near].min()) if near.any() else np.nan)
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.repetitions} interleaved rounds, solve seconds")
    print("| problem | contacts | Clarabel | ipm solved | ratio | ipm to Clarabel's objective (1e-6) | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for spec, t in times.items():
        c, s, g = (float(np.median(t[k])) for k in ("clarabel", "ipm", "target"))
        print(f"| {spec} | {problems[spec].n_contacts:,} | {c:.3f} | {s:.3f} | {s / c:.2f} | {g:.3f} | {g / c:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
