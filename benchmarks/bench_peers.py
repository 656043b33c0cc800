"""Issue 17's benchmark in one run: ours against Siconos and Clarabel, and at scale (python -m benchmarks.bench_peers).

Four sections and a summary:

1. Exact problem, ours against Siconos. For every problem with contacts of the shared corpus
   (../shared/data: fclib/*.hdf5, siconos/*.dat; ``--problems GLOB`` selects by relative path or file
   name) and every method, with interleaved repetitions (repetition k solves every problem with every
   method, in a rotated order, before repetition k + 1 starts), each solve asks for tol = 1e-8 and is
   judged by the workbench: a run counts as reaching Siconos error 1e-8 when its status is "solved"
   (the workbench's own siconos_error <= 1e-8, computed from the returned impulses for Siconos's runs
   too). Ours: the in-house exact solvers (anti-relaxed apgd, pgs, jacobi, bb, admm with the inner
   anti-relaxation; newton and pqn on the NCP). Siconos: ``siconos:NAME`` through
   :mod:`workbench.solvers.siconos` (NSN_AC, NSGS, ADMM, PROX, and with the full run FPP, EG), left out
   when python3-siconos is missing, and on problems with joints (no fc3d form).
2. Per-call overhead: for each in-house method, a solve of one iteration (max_iter = 1) of a 1-contact
   problem already loaded (FrictionContact3D_1c), median of many calls: the whole call, and the part
   inside the solver (solve_seconds); the one iteration itself costs well under a microsecond of
   arithmetic, so both are overhead.
3. Relaxed problem, ours against Clarabel (benchmarks.bench_ipm's measurement): on
   dataset:settled-00320 and dataset:unsettled-00320 (the full run adds dataset:scaling-02560), the
   same repetitions, interleaved, of Clarabel on the relaxed dual to tol 1e-6 (its objective is the
   target) and of the in-house ``ipm`` (the full run adds ``apgd`` on the two 320-sphere packings):
   seconds to status solved, and seconds to the first iterate whose dual objective is within 1e-6
   relative of Clarabel's (from a run with a per-iteration history), each capped at 20 s.
4. Scale (benchmarks.bench_scale's measurement, one fresh process per size): one time step of the
   sphere packing of problems.synthetic.sphere_packing, 45,500 spheres (about 100,000 contacts; the
   full run also 1,400, 4,500 and 13,500, and the slope of log(solve seconds) on log(contacts)), the
   relaxed dual solved by APGD to relaxed error 1e-4 within 60 s.
5. Issue 17 targets: each target of its "Done when" with this run's figure and met / missed.

What each figure includes:

* ours [s]: ``SolveResult.solve_seconds``, the solver's own solve: inside ``Solver.solve``, from the
  run's set-up (allocations, factorisations or scalings) through the iterations and the stopping
  measure to the choice of the best iterate, where the clock stops (Recorder.stop_clock); not the
  wrapping of that point into a result (with v on global problems), the formulation build, the
  parameter checks or the workbench's metrics afterwards (those are the "call" column and the
  overhead table). Compilation is excluded:
  every method first solves every selected problem once with a few iterations, untimed.
* Siconos [s]: fc3d_driver's own wall time, measured inside the Siconos subprocess (not its start-up,
  the import of siconos, or the transfer of the problem).
* Clarabel [s]: its solve seconds, not cvxpy's compilation of the problem.
* best: the method with the smallest median among those that reached 1e-8 in every repetition;
  median [min-max] over the repetitions; ratio = ours / Siconos (< 1: ours faster), and in the
  relaxed section ours / Clarabel, ratios of medians.
* call [s]: the wall time of the whole ``workbench.method.solve`` call of our best method (build
  of the formulation's model, parameter checks, solve, metrics and status), median.
* geometric means of the ratio over the problems both solve, and over those with >= 50 contacts.
* scale: generate = the problem's whole build (contact detection, Jacobian, M, k, b); solve = solve
  seconds; peak = ru_maxrss of that size's process, imports included.
* targets: per-call overhead = apgd's whole solve() call (< 50 us); small problems = those with
  <= 10 contacts that Siconos solves, within 3x when ours / Siconos <= 3 (ours not reaching 1e-8
  counts as not within); corpus = geometric mean over the problems both solve (<= 1); relaxed = the
  best in-house method's time to Clarabel's objective over Clarabel's time on settled-00320 (<= 1);
  scale = the largest packing solved (status solved) in under 60 s, 100,000 contacts or more.

Options: ``--quick`` (3 repetitions, Siconos NSN_AC/NSGS/PROX/ADMM, cap 2 s per exact run; relaxed:
ipm only, on the two 320-sphere packings; scale: the largest size only), ``--repetitions K``,
``--problems GLOB`` (the exact part only), ``--time-limit S`` (per exact run), ``--skip-relaxed``,
``--skip-scale``. The Siconos subprocess costs about 0.5 s of start-up per solve, which dominates the
benchmark's own duration.
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks import bench_ipm, bench_scale
from workbench.errors import InputError
from workbench.io import load_problem
from workbench.shared_data import shared_data_dir
from workbench.method import solve
from workbench.solvers import SolveOptions
from workbench.solvers.siconos import SICONOS_PYTHON, probe
from workbench.sources import load

TOL = 1e-8
OURS = [("anti-relaxed", "apgd"), ("anti-relaxed", "pgs"), ("anti-relaxed", "jacobi"), ("anti-relaxed", "bb"),
        ("anti-relaxed", "admm"), ("ncp", "newton"), ("ncp", "pqn")]
SICONOS_QUICK = ("NSN_AC", "NSGS", "PROX", "ADMM")
SICONOS_FULL = SICONOS_QUICK + ("FPP", "EG")
#: the 1-contact problem of the overhead measurement
ONE_CONTACT = "siconos/FrictionContact3D_1c.dat"
#: relaxed problems against Clarabel, and the in-house methods run on each (quick run, full run)
SETTLED = "dataset:settled-00320"
RELAXED_QUICK = {SETTLED: ("ipm",), "dataset:unsettled-00320": ("ipm",)}
RELAXED_FULL = {SETTLED: ("ipm", "apgd"), "dataset:unsettled-00320": ("ipm", "apgd"), "dataset:scaling-02560": ("ipm",)}
#: cap of each in-house run of the relaxed part [s]
RELAXED_CAP = 20.0
#: issue 17's targets: per-call overhead [s], small problems (contacts) and their ratio, corpus
#: geometric mean, relaxed ratio to Clarabel, contacts and seconds of the scale problem
OVERHEAD_MAX = 50e-6
SMALL_CONTACTS, SMALL_RATIO = 10, 3.0
GEOMEAN_MAX = 1.0
RELAXED_RATIO_MAX = 1.0
SCALE_CONTACTS, SCALE_SECONDS = 100_000, 60.0


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


def relaxed_cell(values) -> str:
    """median [min-max] of seconds, or how many runs did not get there."""
    missed = int(np.sum(~np.isfinite(values)))
    return f"not reached in {missed} of {len(values)}" if missed else spread(values)


def relaxed(quick: bool, reps: int) -> dict:
    """Measure and print the relaxed problems against Clarabel (bench_ipm's measurement); the times."""
    methods = RELAXED_QUICK if quick else RELAXED_FULL
    problems = {spec: load(spec) for spec in methods}
    times = bench_ipm.measure(problems, methods, reps, time_limit=RELAXED_CAP)
    print(f"\n### Relaxed problem: ours vs Clarabel (relaxed dual, tol {bench_ipm.TARGET_LABEL})\n")
    print(f"Load average {os.getloadavg()[0]:.1f}; {reps} interleaved repetitions; solve seconds, median "
          f"[min-max]; Clarabel's exclude cvxpy's compilation, ours include the set-up; \"to Clarabel's "
          f"objective\": the first iterate within {bench_ipm.TARGET_LABEL} relative of it (from a run with a "
          f"history, cap {RELAXED_CAP:g} s); ratio = median / Clarabel's median.\n")
    print("\n".join(bench_ipm.table(times, {spec: p.n_contacts for spec, p in problems.items()}, relaxed_cell)))
    return times


def scale(quick: bool) -> list[dict] | str:
    """Measure (bench_scale, one fresh process per size) and print the sphere packings up to 100,000
    contacts, APGD on the relaxed dual; the rows, or why there are none."""
    sizes = bench_scale.SPHERES[-1:] if quick else bench_scale.SPHERES
    try:
        rows = [r for n in sizes for r in bench_scale.measure_in_child(n, ["apgd"], bench_scale.TOL,
                                                                       bench_scale.TIME_LIMIT)]
    except subprocess.CalledProcessError as exc:
        why = f"the scale process failed (exit {exc.returncode}): {exc.stderr.strip().splitlines()[-1:]}"
        print(f"\n### Scale\n\n{why}")
        return why
    print(f"\n### Scale: sphere packings (problems.synthetic.sphere_packing), relaxed dual, APGD\n")
    print(f"Load average {os.getloadavg()[0]:.1f}; relaxed error {bench_scale.TOL:g}, cap "
          f"{bench_scale.TIME_LIMIT:g} s; one fresh process per size: generate = the problem's whole build, "
          "solve = solve seconds, peak = that process's ru_maxrss.\n")
    status = ("status", "---", lambda r: r["status"])
    print("\n".join(bench_scale.table(rows, bench_scale.COLUMNS[:-1] + (status, bench_scale.COLUMNS[-1]))))
    if len(sizes) > 1:
        print(f"\nSlope of log(solve seconds) on log(contacts): {bench_scale.slope(rows, 'apgd'):.2f}")
    return rows


def targets(over, pairs, relaxed_times, scale_rows) -> list[tuple[str, str, str]]:
    """Issue 17's "Done when" targets against this run's figures: (target, measured, verdict) with
    verdict met, missed or not measured.

    over: (method, call s, solver s) of the overhead table; pairs: (contacts, ours / Siconos) of
    every problem Siconos solves (inf where ours does not); relaxed_times: bench_ipm.measure's
    times (None: skipped); scale_rows: bench_scale's rows, or why there are none."""
    def verdict(ok):
        return "met" if ok else "missed"

    def worst(q):
        return f"{q:.2f}x" if math.isfinite(q) else "ours not reaching 1e-8"
    out = []
    call = {name: c for name, c, _ in over}.get("apgd")
    out.append((f"per-call overhead < {OVERHEAD_MAX * 1e6:.0f} us (apgd, whole solve() call, median)",
                *((f"{call * 1e6:.1f} us", verdict(call < OVERHEAD_MAX)) if call is not None
                  else ("-", "not measured"))))
    small = [q for n, q in pairs if n <= SMALL_CONTACTS]
    within = sum(q <= SMALL_RATIO for q in small)
    out.append((f"problems with <= {SMALL_CONTACTS} contacts within {SMALL_RATIO:g}x of Siconos",
                *((f"{within} of {len(small)} (worst {worst(max(small))})", verdict(within == len(small)))
                  if small else ("-", "not measured"))))
    finite = [q for _, q in pairs if math.isfinite(q)]
    g = geomean(finite)
    out.append((f"geometric mean of ours / Siconos over the corpus <= {GEOMEAN_MAX:g}",
                *((f"{g:.2f} over the {len(finite)} problems both solve ({len(pairs) - len(finite)} only "
                   "Siconos solves)", verdict(g <= GEOMEAN_MAX)) if finite else ("-", "not measured"))))
    name = f"{SETTLED.split(':')[1]} relaxed: time to Clarabel's objective / Clarabel <= {RELAXED_RATIO_MAX:g}"
    if relaxed_times is None or SETTLED not in relaxed_times:
        out.append((name, "-", "not measured"))
    else:
        t = relaxed_times[SETTLED]
        ratios = {k.rsplit(" ", 1)[0]: bench_ipm.ratio(t, k) for k in t if k.endswith(" target")}
        reached = {m: q for m, q in ratios.items() if math.isfinite(q)}
        if reached:
            m = min(reached, key=reached.get)
            out.append((name, f"{m} {np.median(t[m + ' target']):.3f} s / Clarabel {np.median(t['clarabel']):.3f} s "
                              f"= {reached[m]:.2f}x (medians)", verdict(reached[m] <= RELAXED_RATIO_MAX)))
        else:
            out.append((name, f"not reached by {', '.join(ratios)}", "missed"))
    name = f"{SCALE_CONTACTS:,} contacts solved in < {SCALE_SECONDS:g} s"
    if not isinstance(scale_rows, list):
        out.append((name, scale_rows or "-", "not measured"))
        return out
    r = max(scale_rows, key=lambda r: r["contacts"])
    out.append((name, f"{r['method']} {r['solve_s']:.2f} s, {r['status']} ({r['contacts']:,} contacts)",
                verdict(r["contacts"] >= SCALE_CONTACTS and r["status"] == "solved" and r["solve_s"] < SCALE_SECONDS)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repetitions, 4 Siconos methods, 2 s cap; relaxed: ipm only, "
                    "no scaling-02560; scale: the largest size only")
    ap.add_argument("--repetitions", type=int, default=None, help="interleaved repetitions (default 5; quick 3)")
    ap.add_argument("--problems", default="*", help="glob on the corpus path (fclib/NAME.hdf5) or file name")
    ap.add_argument("--time-limit", type=float, default=None, help="cap per run of the exact part [s] "
                    "(default 5; quick 2)")
    ap.add_argument("--skip-relaxed", action="store_true", help="leave out the relaxed problems against Clarabel")
    ap.add_argument("--skip-scale", action="store_true", help="leave out the 100,000-contact scale part")
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
    pairs = []                                  # (contacts, ratio; inf: ours none) where Siconos solves
    for name, p in problems:
        ours, sic = best(times[name], OURS), best(times[name], sic_names)
        cells = [label(ours[0]), spread(ours[1]), f"{np.median(calls[name][ours[0]]):.3g}"] if ours else \
            ["none reached 1e-8", "-", "-"]
        if sic:
            cells += [sic[0][1].split(":")[1], spread(sic[1])]
        else:
            cells += ["-" if p.n_bilateral or not siconos_methods else "none reached 1e-8", "-"]
        ratio = float(np.median(ours[1]) / np.median(sic[1])) if ours and sic else None
        if sic:
            pairs.append((p.n_contacts, math.inf if ratio is None else ratio))
        cells.append("-" if ratio is None else f"{ratio:.3g}")
        print(f"| {Path(name).name} | {p.n_contacts} | " + " | ".join(cells) + " |")
    both = [(n, q) for n, q in pairs if math.isfinite(q)]
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
    sys.stdout.flush()
    relaxed_times = None if args.skip_relaxed else relaxed(args.quick, reps)
    scale_rows = None if args.skip_scale else scale(args.quick)
    print("\n### Issue 17 targets (this run)\n")
    print("| target | measured | |\n|---|---|---|")
    for target, measured, verdict in targets(over, pairs, relaxed_times, scale_rows):
        print(f"| {target} | {measured} | {verdict} |")
    print(f"\n(total {time.perf_counter() - t_start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
