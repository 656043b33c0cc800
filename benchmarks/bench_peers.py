"""The workbench's exact solvers against Siconos, side by side (python -m benchmarks.bench_peers).

For every problem with contacts of the shared corpus (../shared/data: fclib/*.hdf5, siconos/*.dat;
``--problems GLOB`` selects by relative path or file name) and every method, in ONE run with
interleaved repetitions (repetition k solves every problem with every method, in a rotated order,
before repetition k + 1 starts), each solve asks for tol = 1e-8 and is judged by the workbench: a
run counts as reaching Siconos error 1e-8 when its status is "solved" (the workbench's own
siconos_error <= 1e-8, computed from the returned impulses for Siconos's runs too).

Methods. Ours: the in-house exact solvers (anti-relaxed apgd, pgs, jacobi, bb, admm with the inner
anti-relaxation; newton and pqn on the NCP). Siconos: ``siconos:NAME`` through
:mod:`workbench.solvers.siconos` (NSN_AC, NSGS, ADMM, PROX, and with the full run FPP, EG),
left out when python3-siconos is missing, and on problems with joints (no fc3d form).

What each figure includes:

* ours [s]: ``SolveResult.solve_seconds``, the solver's own solve: everything inside
  ``Solver.solve`` (the run's set-up, its factorisations or scalings, the iterations, the stopping
  measure, the best iterate); not the formulation build, the parameter checks or the workbench's
  metrics afterwards (those are the "call" column and the overhead table). Compilation is excluded:
  every method first solves every selected problem once with max_iter = 2, untimed.
* Siconos [s]: fc3d_driver's own wall time, measured inside the Siconos subprocess (not its start-up,
  the import of siconos, or the transfer of the problem).
* best: the method with the smallest median among those that reached 1e-8 in every repetition;
  median [min-max] over the repetitions; ratio = ours / Siconos (< 1: ours faster).
* call [s]: the wall time of the whole ``workbench.solvers.solve`` call of our best method (build
  of the formulation's model, parameter checks, solve, metrics and status), median.
* geometric means of the ratio over the problems both solve, and over those with >= 50 contacts.
* per-call overhead: for each in-house method, a solve of one iteration (max_iter = 1) of a
  1-contact problem already loaded (FrictionContact3D_1c), median of many calls: the whole call,
  and the part inside the solver (solve_seconds); the one iteration itself costs well under a
  microsecond of arithmetic, so both are overhead.

Options: ``--quick`` (3 repetitions, Siconos NSN_AC/NSGS/PROX/ADMM, cap 2 s per run),
``--repetitions K``, ``--problems GLOB``, ``--time-limit S``. The Siconos subprocess costs about
0.5 s of start-up per solve, which dominates the benchmark's own duration.
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import os
import platform
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from workbench.errors import InputError
from workbench.io import load_problem
from workbench.shared_data import shared_data_dir
from workbench.solvers import SolveOptions, solve
from workbench.solvers.siconos import SICONOS_PYTHON, probe

TOL = 1e-8
OURS = [("anti-relaxed", "apgd"), ("anti-relaxed", "pgs"), ("anti-relaxed", "jacobi"), ("anti-relaxed", "bb"),
        ("anti-relaxed", "admm"), ("ncp", "newton"), ("ncp", "pqn")]
SICONOS_QUICK = ("NSN_AC", "NSGS", "PROX", "ADMM")
SICONOS_FULL = SICONOS_QUICK + ("FPP", "EG")
#: the 1-contact problem of the overhead measurement
ONE_CONTACT = "siconos/FrictionContact3D_1c.dat"


def corpus(pattern: str) -> tuple[list[tuple[str, object]], list[str]]:
    """(relative path, problem) of every corpus file matching ``pattern``, contacts only; and the
    files the workbench cannot read, with why."""
    root = shared_data_dir()
    if root is None:
        sys.exit("the shared data (../shared/data) was not found; set WORKBENCH_SHARED_DATA")
    files = sorted(list(root.glob("fclib/*.hdf5")) + list(root.glob("siconos/*.dat")))
    out, unread = [], []
    for f in files:
        rel = str(f.relative_to(root))
        if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(f.name, pattern):
            try:
                p = load_problem(f)
            except InputError as exc:
                unread.append(f"{f.name} ({str(exc).split(': ', 1)[-1]})")
                continue
            if p.n_contacts:
                out.append((rel, p))
    return out, unread


def label(method: tuple[str, str]) -> str:
    form, slv = method
    return slv if form in ("ncp", "anti-relaxed") else f"{form}/{slv}"


def run(problem, method, time_limit, max_iter=None):
    """One solve; (result, wall seconds of the whole solve() call)."""
    form, slv = method
    if max_iter is None and slv.startswith("siconos:"):
        max_iter = 20_000
    options = SolveOptions(tol=TOL, max_iter=max_iter, time_limit=time_limit, keep_history=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        res = solve(problem, form, slv, options)
        return res, time.perf_counter() - t0


def methods_for(problem, siconos_methods):
    sic = [] if problem.n_bilateral else [("ncp", f"siconos:{m}") for m in siconos_methods]
    return OURS + sic


def spread(values) -> str:
    v = np.asarray(values)
    return f"{np.median(v):.3g} [{v.min():.3g}-{v.max():.3g}]"


def best(times: dict, names) -> tuple[str, list[float]] | None:
    """The method of ``names`` with the smallest median time among those that always reached 1e-8."""
    done = [(float(np.median(times[m])), m) for m in names if m in times and all(math.isfinite(t) for t in times[m])]
    if not done:
        return None
    _, m = min(done)
    return m, times[m]


def overhead(repeats: int) -> list[tuple[str, float, float]]:
    """(method, median call seconds, median solve_seconds) of a 1-iteration solve of a 1-contact problem."""
    p = load_problem(shared_data_dir() / ONE_CONTACT)
    out = []
    for m in OURS:
        for _ in range(3):
            run(p, m, None, max_iter=1)
        calls, inner = [], []
        for _ in range(repeats):
            res, wall = run(p, m, None, max_iter=1)
            calls.append(wall)
            inner.append(res.solve_seconds)
        out.append((label(m), float(np.median(calls)), float(np.median(inner))))
    return out


def geomean(x) -> float:
    return float(np.exp(np.mean(np.log(x)))) if len(x) else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repetitions, 4 Siconos methods, 2 s cap")
    ap.add_argument("--repetitions", type=int, default=None, help="interleaved repetitions (default 5; quick 3)")
    ap.add_argument("--problems", default="*", help="glob on the corpus path (fclib/NAME.hdf5) or file name")
    ap.add_argument("--time-limit", type=float, default=None, help="cap per run [s] (default 5; quick 2)")
    args = ap.parse_args(argv)
    reps = args.repetitions or (3 if args.quick else 5)
    cap = args.time_limit or (2.0 if args.quick else 5.0)
    siconos_methods = (SICONOS_QUICK if args.quick else SICONOS_FULL) if probe(SICONOS_PYTHON)[0] else ()
    problems, unread = corpus(args.problems)
    if not problems:
        print(f"no corpus problem with contacts matches {args.problems!r}", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    load0 = os.getloadavg()
    for _, p in problems:                       # untimed: imports, numba compilation, first calls
        for m in OURS:
            run(p, m, cap, max_iter=2)
    times: dict = {name: {} for name, _ in problems}   # problem -> method -> [seconds or inf]
    calls: dict = {name: {} for name, _ in problems}
    for k in range(reps):
        for name, p in problems:
            ms = methods_for(p, siconos_methods)
            shift = k % len(ms)
            for m in ms[shift:] + ms[:shift]:
                res, wall = run(p, m, cap)
                ok = res.status == "solved"
                times[name].setdefault(m, []).append(res.solve_seconds if ok else math.inf)
                calls[name].setdefault(m, []).append(wall)
        print(f"repetition {k + 1}/{reps} done ({time.perf_counter() - t_start:.0f} s)", file=sys.stderr, flush=True)
    over = overhead(200)
    load1 = os.getloadavg()

    print(f"\n### Exact problem: time to Siconos error {TOL:g}, ours vs Siconos\n")
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, "
          f"{platform.processor() or platform.machine()}, Python {platform.python_version()}; load average "
          f"{load0[0]:.1f} at the start, {load1[0]:.1f} at the end; {reps} interleaved repetitions, "
          f"cap {cap:g} s per run; seconds, median [min-max].\n")
    print("| problem | contacts | ours best | ours [s] | call [s] | Siconos best | Siconos [s] | ratio |")
    print("|---|---:|---|---|---:|---|---|---:|")
    sic_names = [("ncp", f"siconos:{m}") for m in siconos_methods]
    both = []                                   # (contacts, ratio) of the problems both solve
    for name, p in problems:
        ours, sic = best(times[name], OURS), best(times[name], sic_names)
        cells = [label(ours[0]), spread(ours[1]), f"{np.median(calls[name][ours[0]]):.3g}"] if ours else \
            ["none reached 1e-8", "-", "-"]
        if sic:
            cells += [sic[0][1].split(":")[1], spread(sic[1])]
        else:
            cells += ["-" if p.n_bilateral or not siconos_methods else "none reached 1e-8", "-"]
        ratio = float(np.median(ours[1]) / np.median(sic[1])) if ours and sic else None
        if ratio is not None:
            both.append((p.n_contacts, ratio))
        cells.append("-" if ratio is None else f"{ratio:.3g}")
        print(f"| {Path(name).name} | {p.n_contacts} | " + " | ".join(cells) + " |")
    ratios = [q for _, q in both]
    big = [q for n, q in both if n >= 50]
    small = [q for n, q in both if n <= 10]
    print(f"\nGeometric mean of ours / Siconos: {geomean(ratios):.2f} over the {len(ratios)} problems both solve "
          f"(ours ahead on {sum(q < 1 for q in ratios)}); {geomean(big):.2f} over the {len(big)} with >= 50 "
          f"contacts (max {max(big, default=float('nan')):.2f}); {geomean(small):.2f} over the {len(small)} with "
          f"<= 10 contacts (range {min(small, default=float('nan')):.3g} to {max(small, default=float('nan')):.3g}).")
    if unread:
        print(f"Not read by the workbench (left out): {'; '.join(unread)}.")
    print(f"\n### Per-call overhead: one iteration on a 1-contact problem ({Path(ONE_CONTACT).name}), "
          "problem already loaded, median of 200 calls\n")
    print("| method | whole solve() call [us] | inside the solver (solve_seconds) [us] |")
    print("|---|---:|---:|")
    for name, call, inner in over:
        print(f"| {name} | {call * 1e6:.0f} | {inner * 1e6:.0f} |")
    print(f"\n(total {time.perf_counter() - t_start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
