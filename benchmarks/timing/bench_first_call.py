"""The first call and the per-call cost of a small solve (issue 33, items 1 and 3), without Siconos.

    python -m benchmarks.timing.bench_first_call [--repeats N] [--calls N] [--write]

1. Cold command line: ``workbench --version`` and ``workbench solve FILE -f anti-relaxed -s apgd --tol 1e-8``
   of a 4-contact file (Rover4144.dat, the cold file of bench_peers), a one-contact Siconos file
   (FrictionContact3D_1c.dat) and a one-contact FCLib file (CubeH8.hdf5), each in ``--repeats`` new
   processes (default 7) after one untimed run that fills the byte-code and numba caches
   (``workbench warm-up`` fills the latter once after installing; PYTHONDONTWRITEBYTECODE is removed
   from the children's environment, as in an installation that keeps its byte-code): wall seconds and
   the child's CPU seconds, median [min-max]. Then where one such process spends its time: Python
   itself, numpy and scipy.sparse, numba's import, the workbench's modules of the method, numba's
   start on the first cached kernel (its typing and target context, which loads scipy.linalg and
   cffi) with that kernel, and the rest of the solve.
2. Per call: the whole ``Method.solve()`` and the one-call ``workbench.method.solve`` of the one-contact
   file, one iteration (max_iter = 1, no history, as bench_peers' overhead), a freshly read problem
   object for every call (made outside the clock), median over ``--calls`` calls (default 3000) after
   30 untimed ones; and the part the result reports as build + solve.
3. The targets of issue 33: cold ``solve`` of a small file <= 0.5 s, the one-contact file's whole
   ``solve()`` with APGD <= 20 us; each met or missed by how much.

The load average is recorded before and after each section. ``--write`` writes docs/results/first-call.md
and .json (workbench.provenance); without it the page is only printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the cold runs' problems: (label, PROBLEM spec)
COLD_FILES = (("4 contacts, Siconos .dat", "shared:siconos/Rover4144.dat"),
              ("1 contact, Siconos .dat", "shared:siconos/FrictionContact3D_1c.dat"),
              ("1 contact, FCLib .hdf5", "shared:fclib/CubeH8.hdf5"))
METHOD = ("anti-relaxed", "apgd")
#: the per-call measurement's problem and methods (the in-house exact methods of bench_peers)
ONE_CONTACT = "siconos/FrictionContact3D_1c.dat"
PER_CALL = (("anti-relaxed", "apgd"), ("anti-relaxed", "pgs"), ("anti-relaxed", "jacobi"), ("anti-relaxed", "bb"),
            ("anti-relaxed", "admm"), ("ncp", "newton"), ("ncp", "pqn"))
TARGETS = {"cold_s": 0.5, "call_us": 20.0}

#: one cold process, timed phase by phase (run as ``python -c PHASES SPEC FORMULATION SOLVER``)
PHASES = """
import sys, time, json
t = {}; t0 = time.perf_counter()
import numpy, scipy.sparse
t['numpy and scipy.sparse'] = time.perf_counter() - t0; t1 = time.perf_counter()
import numba
t['numba import'] = time.perf_counter() - t1; t1 = time.perf_counter()
from workbench.commands._args import method_named
from workbench.sources import load
from workbench.solvers import SolveOptions
m = method_named(sys.argv[2], sys.argv[3]); p = load(sys.argv[1])
t['workbench modules of the method, reading the file'] = time.perf_counter() - t1; t1 = time.perf_counter()
from workbench.blocks import threaded
threaded(1)
t["numba's start (typing and target context) and its first cached kernel"] = time.perf_counter() - t1
t1 = time.perf_counter()
m.solve(p, SolveOptions(tol=1e-8, keep_history=False))
t['the solve, its other kernels loaded from the cache'] = time.perf_counter() - t1
print(json.dumps(t))
"""


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def cold_command(args: list[str], repeats: int) -> dict:
    """Wall and CPU seconds of ``python -m workbench.cli ARGS`` in new processes, after one untimed run."""
    cmd, env = [sys.executable, "-m", "workbench.cli", *args], _environment()
    subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, timeout=600)
    walls, cpus, codes = [], [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, timeout=600)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        codes.append(proc.returncode)
    return {"command": "workbench " + " ".join(args), "s": walls, "cpu_s": cpus, "exit": codes}


def phases(spec: str, repeats: int) -> list:
    """[phase, median seconds] of each phase of a cold process (PHASES), over ``repeats`` processes,
    after Python's own start (``python -c pass``), in order (a list: the stored record sorts dict keys)."""
    env = _environment()
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", PHASES, spec, *METHOD], env=env, cwd=ROOT, capture_output=True,
                             text=True, timeout=600, check=True)
        runs.append(json.loads(out.stdout))
    start = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, cwd=ROOT, check=True)
        start.append(time.perf_counter() - t0)
    return [["Python's start (python -c pass)", statistics.median(start)],
            *([k, statistics.median(r[k] for r in runs)] for k in runs[0])]


def cold(repeats: int) -> dict:
    load0 = load_average()
    commands = [cold_command(["--version"], repeats)]
    for label, spec in COLD_FILES:
        entry = cold_command(["solve", spec, "-f", METHOD[0], "-s", METHOD[1], "--tol", "1e-8"], repeats)
        commands.append({**entry, "label": label})
    return {"commands": commands, "phases": phases(COLD_FILES[0][1], repeats), "load_before": load0,
            "load_after": load_average()}


def per_call(calls: int) -> dict:
    """Medians of the whole Method.solve() and one-call solve() per in-house method (module docstring)."""
    from benchmarks.peers.measure import fresh
    from workbench.io import load_problem
    from workbench.method import Method, solve
    from workbench.shared_data import shared_data_dir
    from workbench.solvers import SolveOptions

    load0 = load_average()
    p0 = load_problem(shared_data_dir() / ONE_CONTACT)
    options = SolveOptions(tol=1e-8, max_iter=1, keep_history=False)
    rows = []
    for form, slv in PER_CALL:
        method = Method(form, slv)
        for _ in range(30):
            method.solve(fresh(p0), options)
            solve(fresh(p0), form, slv, options)
        whole, one_call, inner = [], [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(max(1, calls // 500)):    # fresh objects made in batches, outside the clock
                for problems, out, call in (([fresh(p0) for _ in range(500)], whole, method.solve),
                                            ([fresh(p0) for _ in range(500)], one_call,
                                             lambda p, o: solve(p, form, slv, o))):
                    for p in problems:
                        t0 = time.perf_counter()
                        res = call(p, options)
                        out.append(time.perf_counter() - t0)
                        if out is whole:
                            inner.append(res.build_seconds + res.solve_seconds)
        rows.append({"method": f"{form} / {slv}", "status": res.status, "iterations": res.iterations,
                     "method_solve_us": statistics.median(whole) * 1e6, "solve_us": statistics.median(one_call) * 1e6,
                     "build_solve_us": statistics.median(inner) * 1e6, "calls": len(whole)})
    return {"problem": ONE_CONTACT, "rows": rows, "load_before": load0, "load_after": load_average()}


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else f"missed by {value / target:.2f}x"


def render(data: dict) -> str:
    c, pc = data["cold"], data["per_call"]
    lines = ["## Cold command line", "",
             f"New processes, after one untimed run (byte-code and numba caches filled); load average "
             f"{c['load_before']} before, {c['load_after']} after. Seconds, median [min-max] of "
             f"{len(c['commands'][0]['s'])} runs; CPU: the child's user + system time.", "",
             "| command | problem | wall s | CPU s | exit |", "|---|---|---|---|---|"]
    for e in c["commands"]:
        lines.append(f"| `{e['command']}` | {e.get('label', '-')} | {_spread(e['s'])} | {_spread(e['cpu_s'])} "
                     f"| {','.join(sorted({str(x) for x in e['exit']}))} |")
    lines += ["", f"Where a cold `workbench solve` of {COLD_FILES[0][1]} spends its time (medians, one process "
              "timed phase by phase):", "", "| phase | s |", "|---|---:|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in c["phases"]]
    lines += ["", "## Per call, one-contact file", "",
              f"`{pc['problem']}`, one iteration (max_iter = 1, no history), a freshly read problem object per "
              f"call (made outside the clock); medians; load average {pc['load_before']} before, "
              f"{pc['load_after']} after.", "",
              "| method | whole `Method.solve()` us | one-call `solve()` us | build + solve us | status | calls |",
              "|---|---:|---:|---:|---|---:|"]
    lines += [f"| {r['method']} | {r['method_solve_us']:.1f} | {r['solve_us']:.1f} | {r['build_solve_us']:.1f} | "
              f"{r['status']} | {r['calls']} |" for r in pc["rows"]]
    small = [e for e in c["commands"] if "label" in e]
    worst = max(small, key=lambda e: statistics.median(e["s"]))
    apgd = next(r for r in pc["rows"] if r["method"] == " / ".join(METHOD))
    cold_s, call_us = statistics.median(worst["s"]), apgd["method_solve_us"]
    lines += ["", "## Issue 33's targets", "", "| figure | this run | target | |", "|---|---|---|---|",
              f"| cold `workbench solve` of a small file, the slowest of the files above ({worst['label']}) "
              f"| {cold_s:.2f} s | <= {TARGETS['cold_s']:g} s | {verdict(cold_s, TARGETS['cold_s'])} |",
              f"| whole `Method.solve()` of the one-contact file, APGD | {call_us:.1f} us | <= {TARGETS['call_us']:g} us "
              f"| {verdict(call_us, TARGETS['call_us'])} |"]
    return "\n".join(lines) + "\n"


def _spread(values) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7, help="new processes per cold command (default 7)")
    p.add_argument("--calls", type=int, default=3000, help="timed calls per method and form (default 3000)")
    p.add_argument("--write", action="store_true", help="also write docs/results/first-call.* (default: print only)")
    args = p.parse_args(argv)
    data = {"cold": cold(args.repeats), "per_call": per_call(args.calls)}
    command = "python -m benchmarks.timing.bench_first_call" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    if not args.write:
        print(render(data))
        print("docs/ unchanged: add --write to store the page in docs/results", file=sys.stderr)
        return 0
    from benchmarks.timing import bench_first_call  # the renderer by its importable name, also under python -m
    from workbench.provenance import write_results
    print(write_results("first-call", data, bench_first_call.render, command).read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
