"""Scale: generate and solve sphere packings up to 100,000 contacts (python -m benchmarks.bench_scale).

Each size is one fresh process (so its peak resident memory, ru_maxrss, is its own): it warms the
methods up (untimed), generates one time step of the jittered packing of problems.synthetic.sphere_packing
(the dynamic generator of ``workbench generate`` settles packings by simulation and takes minutes for
2,000 spheres, so it cannot reach 100,000 contacts here), then solves the relaxed dual with each method to
relaxed error ``--tol`` (default 1e-4) within ``--time-limit`` seconds. One row per size and method:
contacts, generation and solve seconds, iterations, relaxed error reached, stop cause, peak memory; then
the slope of log(solve seconds) against log(contacts) per method (a least-squares line over the sizes).

    python -m benchmarks.bench_scale [--spheres 1400,4500,13500,45500] [--methods apgd,bb,jacobi]
                                     [--clarabel-max 13500] [--tol 1e-4] [--time-limit 60]

Clarabel runs only at sizes up to ``--clarabel-max`` spheres (its KKT factorisation grows faster than
the in-house methods' sparse products: 1.3 GiB and past 60 s at 30,000 contacts).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

#: the default sizes (spheres; 45,500 give 100,208 contacts), tolerance (relaxed error) and cap [s]
SPHERES = (1400, 4500, 13500, 45500)
TOL = 1e-4
TIME_LIMIT = 60.0


def measure(n_spheres: int, methods: list[str], tol: float, time_limit: float) -> list[dict]:
    """Rows for one size, in this process."""
    from problems.synthetic import sphere_packing
    from workbench.method import Method
    from workbench.solvers import SolveOptions
    resolved = {name: Method("dual", name) for name in methods}
    for method in resolved.values():
        method.warm_up()
    t0 = time.perf_counter()
    problem = sphere_packing(n_spheres)
    generate = time.perf_counter() - t0
    rows = []
    for name, method in resolved.items():
        res = method.solve(problem, SolveOptions(tol=tol, time_limit=time_limit, keep_history=False))
        rows.append({"spheres": n_spheres, "contacts": problem.n_contacts, "method": name,
                     "generate_s": generate, "build_s": res.build_seconds, "solve_s": res.solve_seconds,
                     "iterations": res.iterations, "relaxed_error": res.metrics.get("relaxed_error", math.nan),
                     "status": res.status, "stop": None if res.stop is None else res.stop.value,
                     "peak_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0})
    return rows


def measure_in_child(n_spheres: int, methods: list[str], tol: float, time_limit: float) -> list[dict]:
    """Rows of :func:`measure` for one size, run in a fresh process (so that its peak memory is its own)."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.bench_scale", "--one", str(n_spheres),
                          "--methods", ",".join(methods), "--tol", str(tol), "--time-limit", str(time_limit)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


#: the table's columns: header, alignment, format of a row
COLUMNS = (("contacts", "---:", lambda r: f"{r['contacts']:,}"), ("method", "---", lambda r: r["method"]),
           ("generate s", "---:", lambda r: f"{r['generate_s']:.2f}"),
           ("solve s", "---:", lambda r: f"{r['solve_s']:.2f}"),
           ("iterations", "---:", lambda r: str(r["iterations"])),
           ("relaxed error", "---:", lambda r: f"{r['relaxed_error']:.1e}"), ("stop", "---", lambda r: r["stop"]),
           ("peak MiB", "---:", lambda r: f"{r['peak_MiB']:.0f}"))


def table(rows: list[dict], columns=COLUMNS) -> list[str]:
    """Markdown lines, a row per size and method."""
    return ["| " + " | ".join(c[0] for c in columns) + " |", "|" + "|".join(c[1] for c in columns) + "|"] + \
        ["| " + " | ".join(str(c[2](r)) for c in columns) + " |" for r in rows]


def slope(rows: list[dict], method: str) -> float:
    """Least-squares slope of log(solve seconds) against log(contacts); NaN below two sizes."""
    import numpy as np
    pts = [(r["contacts"], r["solve_s"]) for r in rows if r["method"] == method and r["solve_s"] > 0]
    if len(pts) < 2:
        return math.nan
    n, t = np.log(np.array(pts, dtype=float)).T
    return float(np.polyfit(n, t, 1)[0])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spheres", default=",".join(map(str, SPHERES)), help="sizes, comma-separated")
    ap.add_argument("--methods", default="apgd,bb,jacobi", help="in-house solvers, comma-separated")
    ap.add_argument("--clarabel-max", type=int, default=13500, help="largest size Clarabel runs at (0: never)")
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # a child process: one size
    args = ap.parse_args(argv)
    methods = args.methods.split(",")
    if args.one is not None:
        print(json.dumps(measure(args.one, methods, args.tol, args.time_limit)))
        return
    rows = []
    for n in (int(s) for s in args.spheres.split(",")):
        rows += measure_in_child(n, methods + (["clarabel"] if n <= args.clarabel_max else []), args.tol,
                                 args.time_limit)
    print(f"load average {os.getloadavg()[0]:.2f}, relaxed dual to relaxed error {args.tol:g}, "
          f"time limit {args.time_limit:g} s")
    print("\n".join(table(rows)))
    for method in dict.fromkeys(r["method"] for r in rows):
        print(f"slope of log(solve s) on log(contacts), {method}: {slope(rows, method):.2f}")


if __name__ == "__main__":
    main()
