"""Scale: APGD on one CPU thread, on every core and on a GPU, 100k to 10M contacts
(python -m benchmarks.timing.bench_scale).

The problems are one time step of the jittered sphere packing of problems.synthetic.sphere_packing (the
``generator:sphere_packing`` problems of the issue's measurements; 45,500 spheres give 100,208
contacts). Each size is one fresh process: it generates the packing, warms the methods up (untimed), then
solves the relaxed dual to relaxed error ``--tol`` (default 1e-4) with APGD in each configuration:

- ``cpu1``: the compiled loop on one thread (numba.set_num_threads(1));
- ``cpu``: the compiled loop on every core of the machine (workbench.blocks: the same iterates);
- ``gpu``: the array-module implementation on CuPy (workbench.solvers.xp_first_order), the answer
  copied back and judged on the host by the same metrics.

A row per size and configuration: seconds (the solve, the recorder's clock), ms per iteration, iterations,
relaxed error reached, status, peak memory (the process's resident peak, generation included; on the GPU
also CuPy's pool), and the answer compared with the one-thread answer (relative difference of the dual
objective; "equal iterations" says whether both ran as many iterations). Every row is printed against
the issue's targets (issue 31): met, missed by how much, or not measured and why.

    python -m benchmarks.timing.bench_scale [--contacts 100k,1M,3M,10M] [--configs cpu1,cpu,gpu] [--tol 1e-4]
                                     [--time-limit 900] [--note TEXT] [--write]

Writes docs/results/scale.md and .json (workbench.provenance) with --write (default: print only). The GPU path imports
nothing of cvxpy, Clarabel, SCS or qdldl (the GPU machine lacks them): each child records the modules it
loaded, and the page says so.
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

#: nominal size -> spheres of sphere_packing (45,500 spheres: 100,208 contacts; about 2.2 per sphere)
SIZES = {"100k": 45_500, "1M": 450_000, "3M": 1_350_000, "10M": 4_550_000}
CONFIGS = ("cpu1", "cpu", "gpu")
TOL = 1e-4
TIME_LIMIT = 900.0
#: the packages the GPU machine lacks: the GPU path must not load them
FOREIGN = ("cvxpy", "clarabel", "scs", "qdldl")

#: issue 31's targets: GPU ms/iteration at 1M, GPU seconds at 10M, answers equal to 1e-9 relative at
#: equal iterations, and the CPU speed-up of every core over one thread at 1M, by core count
GPU_MS_PER_IT_1M = 1.0
GPU_SECONDS_10M = 4.0
ANSWER_REL = 1e-9
CPU_SPEEDUP_1M = {16: 6.0, 2: 1.6}


def measure(label: str, n_spheres: int, configs: list[str], tol: float, time_limit: float) -> dict:
    """Rows for one size, in this process (numba's pool has every core: NUMBA_NUM_THREADS unset)."""
    import numba
    from problems.synthetic import sphere_packing
    from workbench.method import Method
    from workbench.solvers import SolveOptions
    from workbench.solvers.xp_first_order import device_availability
    t0 = time.perf_counter()
    problem = sphere_packing(n_spheres)
    out = {"size": label, "spheres": n_spheres, "contacts": problem.n_contacts,
           "generate_s": time.perf_counter() - t0, "rows": []}
    cores = numba.config.NUMBA_NUM_THREADS
    for config in configs:
        row = {"config": config, "threads": 1 if config == "cpu1" else cores}
        method = Method("dual", "apgd", {"device": "gpu"} if config == "gpu" else {})
        ok, why = method.availability()
        if not ok:
            out["rows"].append({**row, "unavailable": why})
            continue
        numba.set_num_threads(row["threads"])
        method.warm_up(like=problem, history=False)
        res = method.solve(problem, SolveOptions(tol=tol, time_limit=time_limit, keep_history=False))
        row.update(seconds=res.solve_seconds, iterations=res.iterations, status=res.status,
                   relaxed_error=res.metrics.get("relaxed_error", math.nan),
                   dual_objective=res.metrics.get("dual_objective", math.nan),
                   peak_MiB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
        if config == "gpu":
            import cupy
            row["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
            row["gpu_pool_MiB"] = cupy.get_default_memory_pool().total_bytes() / 2**20
        out["rows"].append(row)
    numba.set_num_threads(cores)
    out["gpu_available"] = device_availability("gpu")
    out["foreign_loaded"] = sorted(m for m in FOREIGN if m in sys.modules)
    return out


def measure_in_child(label: str, configs: list[str], tol: float, time_limit: float) -> dict:
    """:func:`measure` in a fresh process (its own peak memory, numba's pool of every core)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_NUM_THREADS", "WORKBENCH_THREADS")}
    out = subprocess.run([sys.executable, "-m", "benchmarks.timing.bench_scale", "--one", label, "--configs",
                          ",".join(configs), "--tol", str(tol), "--time-limit", str(time_limit)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        tail = " ".join(out.stderr.strip().splitlines()[-1:]) or f"exit code {out.returncode}"
        return {"size": label, "spheres": SIZES[label], "failed": tail[-300:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- targets

def _ratio(measured: float, limit: float, lower_is_better: bool = True) -> str:
    if lower_is_better:
        return (f"met ({measured / limit:.2f} of the target)" if measured <= limit else
                f"missed by {measured / limit:.2f}x")
    return f"met ({measured / limit:.2f} of the target)" if measured >= limit else f"missed by {limit / measured:.2f}x"


def verdicts(size: dict, cores: int) -> list[dict]:
    """The size's rows with ``ms_per_it``, ``answer`` (vs cpu1) and ``target`` (the verdict) filled in."""
    rows = {r["config"]: r for r in size.get("rows", [])}
    ref = rows.get("cpu1")
    out = []
    for config in CONFIGS:
        row = dict(rows.get(config) or {"config": config})
        row["size"], row["contacts"] = size["size"], size.get("contacts")
        if "skipped" in size:
            row["target"] = f"not measured: {size['skipped']}"
        elif "failed" in size:
            row["target"] = f"not measured: the run failed ({size['failed']})"
        elif config not in rows:
            row["target"] = "not measured: not in this run's --configs"
        elif "unavailable" in row:
            row["target"] = f"not measured: no GPU ({row['unavailable']})"
        else:
            row["ms_per_it"] = 1e3 * row["seconds"] / max(1, row["iterations"])
            if ref is not None and "dual_objective" in ref and config != "cpu1":
                row["answer"] = abs(row["dual_objective"] - ref["dual_objective"]) / abs(ref["dual_objective"])
                row["equal_iterations"] = row["iterations"] == ref["iterations"]
            row["target"] = _target(row, ref, size["size"], cores)
        out.append(row)
    return out


def _target(row: dict, ref: dict | None, size: str, cores: int) -> str:
    if row["status"] != "solved":
        return f"missed: status {row['status']}"
    parts = []
    if row["config"] == "gpu":
        if size == "1M":
            parts.append(f"{row['ms_per_it']:.2f} ms/it vs {GPU_MS_PER_IT_1M} ms/it: "
                         + _ratio(row["ms_per_it"], GPU_MS_PER_IT_1M))
        if size == "10M":
            parts.append(f"{row['seconds']:.2f} s vs {GPU_SECONDS_10M} s: " + _ratio(row["seconds"], GPU_SECONDS_10M))
        if "answer" in row:
            same = "at equal iterations" if row["equal_iterations"] else "at different iterations"
            parts.append(f"answer {row['answer']:.1e} {same}: "
                         + ("met" if row["answer"] <= ANSWER_REL and row["equal_iterations"] else "missed"))
    if row["config"] == "cpu" and size == "1M" and ref is not None:
        speedup = ref["seconds"] / row["seconds"]
        goal = CPU_SPEEDUP_1M.get(cores)
        parts.append(f"{speedup:.2f}x one thread on {cores} cores: "
                     + (_ratio(speedup, goal, lower_is_better=False) if goal else "no target for this core count"))
    if row["config"] == "cpu" and "answer" in row:
        parts.append("same answer as one thread" if row["answer"] == 0 and row["equal_iterations"]
                     else f"answer differs from one thread ({row['answer']:.1e}): missed")
    return "; ".join(parts) if parts else "no target at this size"


# --------------------------------------------------------------------------- page

COLUMNS = (("contacts", "---:", lambda r: f"{r['contacts']:,}" if r.get("contacts") else r["size"]),
           ("run", "---", lambda r: _run_name(r)),
           ("seconds", "---:", lambda r: _num(r, "seconds", "{:.2f}")),
           ("ms/it", "---:", lambda r: _num(r, "ms_per_it", "{:.2f}")),
           ("iterations", "---:", lambda r: _num(r, "iterations", "{:d}")),
           ("relaxed error", "---:", lambda r: _num(r, "relaxed_error", "{:.1e}")),
           ("peak MiB", "---:", lambda r: _num(r, "peak_MiB", "{:,.0f}")
            + (f" (+{r['gpu_pool_MiB']:,.0f} GPU)" if "gpu_pool_MiB" in r else "")),
           ("answer vs 1 thread", "---:", lambda r: _num(r, "answer", "{:.1e}")),
           ("against the target", "---", lambda r: r["target"]))


def _num(row: dict, key: str, fmt: str) -> str:
    return fmt.format(row[key]) if row.get(key) is not None else "-"


def _run_name(row: dict) -> str:
    if row["config"] == "cpu1":
        return "CPU, 1 thread"
    if row["config"] == "cpu":
        return f"CPU, {row['threads']} threads" if "threads" in row else "CPU, every core"
    return f"GPU ({row['device']})" if "device" in row else "GPU"


def table(rows: list[dict]) -> list[str]:
    """Markdown lines, a row per size and configuration."""
    return (["| " + " | ".join(c[0] for c in COLUMNS) + " |", "|" + "|".join(c[1] for c in COLUMNS) + "|"]
            + ["| " + " | ".join(str(c[2](r)) for c in COLUMNS) + " |" for r in rows])


def render(data: dict) -> str:
    """The results page of a run (docs/results/scale.md)."""
    rows = [r for size in data["sizes"] for r in verdicts(size, data["cores"])]
    gens = ", ".join(f"{s['size']} {s['generate_s']:.1f} s" for s in data["sizes"] if "generate_s" in s)
    foreign = sorted({m for s in data["sizes"] for m in s.get("foreign_loaded", [])})
    lines = [f"APGD on the relaxed dual to relaxed error {data['tol']:g} (time limit {data['time_limit']:g} s), "
             "one time step of `problems.synthetic.sphere_packing`, each size in a fresh process; "
             f"{data['cores']} cores, GPU: {data['gpu']}.", "", *table(rows), "",
             f"Generation (not in the times): {gens or '-'}. Peak memory is the process's resident peak, "
             "generation included. Answers: relative difference of the dual objective from the one-thread "
             "answer, both judged on the host by `workbench.metrics.evaluate`.",
             f"Modules of cvxpy, Clarabel, SCS or qdldl loaded by the measuring processes: "
             f"{', '.join(foreign) if foreign else 'none'}."]
    if data.get("note"):
        lines += ["", data["note"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contacts", default=",".join(SIZES), help=f"sizes, comma-separated, of {', '.join(SIZES)}")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="cpu1 (one thread), cpu (every core), gpu")
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT, help="seconds per solve")
    ap.add_argument("--note", default="", help="a closing note for the page (why a size was not run here)")
    ap.add_argument("--write", action="store_true", help="also write docs/results/scale.* (default: print only)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child process: one size
    args = ap.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    sizes = [s for s in args.contacts.split(",") if s]
    bad = [x for x in sizes if x not in SIZES] + [c for c in configs if c not in CONFIGS]
    if bad or not (args.tol > 0 and args.time_limit > 0):
        print(f"bench_scale: error: unknown size or configuration {', '.join(bad) or '-'} (sizes "
              f"{', '.join(SIZES)}; configurations {', '.join(CONFIGS)}), or a non-positive --tol/--time-limit",
              file=sys.stderr)
        return 2
    if args.one is not None:
        print(json.dumps(measure(args.one, SIZES[args.one], configs, args.tol, args.time_limit)))
        return 0
    measured = {s: measure_in_child(s, configs, args.tol, args.time_limit) for s in sizes}
    gpu = next((r.get("device") for m in measured.values() for r in m.get("rows", []) if r.get("device")), None)
    why = next((m["gpu_available"][1] for m in measured.values() if "gpu_available" in m), "not asked")
    data = {"tol": args.tol, "time_limit": args.time_limit, "cores": os.cpu_count(),
            "gpu": gpu or f"none ({why})" if "gpu" in configs else gpu or "not asked (--configs)",
            "sizes": [measured.get(s) or {"size": s, "spheres": SIZES[s], "skipped": "not in this run's --contacts"}
                      for s in SIZES],
            "note": args.note}
    command = "python -m benchmarks.timing.bench_scale" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    if not args.write:
        print(render(data))
        return 0
    from benchmarks.timing import bench_scale  # the renderer by its importable name, also under python -m
    from workbench.provenance import write_results
    print(write_results("scale", data, bench_scale.render, command).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
