"""The in-house interior-point method against Clarabel on the relaxed dual (issue 17 item 4):
python3 -m benchmarks.timing.bench_ipm [--repetitions K] [SPEC ...]

For each problem (default: dataset:settled-00320 and dataset:unsettled-00320), K interleaved rounds
(default 3) of: Clarabel to tol 1e-6 (its objective is the target), ipm to tol 1e-6 without a
history (time to status solved), ipm with a history (time of the first iterate whose dual objective is
within 1e-6 relative of Clarabel's). Solve seconds (Clarabel's exclude cvxpy's compilation, ipm's
include its set-up), after one warm-up solve of each; prints the medians and the ratios to Clarabel.

The measurement (:func:`measure`) and its table (:func:`table`) serve benchmarks.peers.bench_peers too, for
any in-house method: the run with a history asks for tol ``HISTORY_TOL`` (far below 1e-6) so that a
method whose own stopping test is met before its objective reaches Clarabel's (APGD's is, on these
packings) goes on until it does, or until the cap; the objective reached does not depend on the tol
asked, only on when the run stops.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

import numpy as np

from workbench.method import solve
from workbench.solvers import SolveOptions
from workbench.sources import load

TARGET = 1e-6
TARGET_LABEL = f"{TARGET:.0e}".replace("e-0", "e-")    # "1e-6"
#: tol of the runs with a history: out of reach, so that they stop on the caps or when stuck
HISTORY_TOL = 1e-12
HISTORY_MAX_ITER = 10 ** 7


def time_to_target(history, objective: float) -> float:
    """Seconds of the first history row whose objective is within TARGET relative of ``objective``
    (NaN if none)."""
    near = np.abs(history["objective"] - objective) <= TARGET * abs(objective)
    return float(history["seconds"][near].min()) if near.any() else np.nan


def measure(problems: dict, methods: dict[str, Sequence[str]], repetitions: int,
            time_limit: float | None = None) -> dict[str, dict[str, list[float]]]:
    """Interleaved rounds on the relaxed dual: per spec of ``problems`` (spec -> problem), the solve
    seconds of Clarabel ("clarabel"), and for each in-house method m of ``methods[spec]`` the seconds
    to status solved ("m solved") and to Clarabel's objective ("m target"); NaN where not reached.
    ``time_limit`` caps each in-house run (None: the solver's default caps)."""
    options = SolveOptions(tol=TARGET, time_limit=time_limit, keep_history=False)
    history = SolveOptions(tol=HISTORY_TOL, max_iter=HISTORY_MAX_ITER, time_limit=time_limit)
    for spec, p in problems.items():            # warm-up: imports, compilation, first calls
        for m in ("clarabel", *methods[spec]):
            solve(p, "dual", m, SolveOptions(tol=TARGET, max_iter=20, keep_history=False))
    times: dict = {spec: {"clarabel": []} for spec in problems}
    for _ in range(repetitions):
        for spec, p in problems.items():
            ref = solve(p, "dual", "clarabel", options)
            t = times[spec]
            t["clarabel"].append(ref.solve_seconds)
            for m in methods[spec]:
                res = solve(p, "dual", m, options)
                t.setdefault(f"{m} solved", []).append(res.solve_seconds if res.status == "solved" else np.nan)
                h = solve(p, "dual", m, history).history
                t.setdefault(f"{m} target", []).append(time_to_target(h, ref.objective))
    return times


def ratio(t: dict[str, list[float]], key: str) -> float:
    """Median of ``t[key]`` over Clarabel's median (NaN when not measured)."""
    return float(np.median(t[key]) / np.median(t["clarabel"])) if key in t else np.nan


def median_cell(values: list[float]) -> str:
    return f"{np.median(values):.3f}"


def table(times: dict, contacts: dict[str, int], cell: Callable[[list[float]], str] = median_cell) -> list[str]:
    """Markdown lines: a row per problem, for each in-house method (in the order first measured) its
    seconds to solved and to Clarabel's objective, each with its ratio to Clarabel; ``cell`` formats
    a list of seconds."""
    methods = list(dict.fromkeys(k.rsplit(" ", 1)[0] for t in times.values() for k in t if k != "clarabel"))
    head = "".join(f" {m} solved | ratio | {m} to Clarabel's objective ({TARGET_LABEL}) | ratio |" for m in methods)
    lines = ["| problem | contacts | Clarabel |" + head, "|---|---:|---:|" + "---:|" * (4 * len(methods))]
    for spec, t in times.items():
        cells = [spec, f"{contacts[spec]:,}", cell(t["clarabel"])]
        for m in methods:
            for kind in ("solved", "target"):
                key = f"{m} {kind}"
                cells += [cell(t[key]), f"{ratio(t, key):.2f}"] if key in t else ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", default=["dataset:settled-00320", "dataset:unsettled-00320"])
    ap.add_argument("--repetitions", type=int, default=3)
    args = ap.parse_args(argv)
    problems = {spec: load(spec) for spec in args.specs}
    times = measure(problems, {spec: ("ipm",) for spec in problems}, args.repetitions)
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.repetitions} interleaved rounds, solve seconds")
    print("\n".join(table(times, {spec: p.n_contacts for spec, p in problems.items()})))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
