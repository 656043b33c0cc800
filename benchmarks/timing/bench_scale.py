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
the issue's targets (issues 31 and 47): met, missed by how much, or not measured and why (a GPU row on a
machine without one: "not measured: no GPU (why)").

The CPU against its own bound (issue 47): each CPU row also says how far its ms per iteration is from
the memory-bandwidth bound of an APGD iteration on that problem, :func:`iteration_bytes` (the bytes an
iteration must move: the sparse factors of N read, the intermediate vector of the chained product,
the vectors of the loop's passes, :data:`VECTOR_PASSES`) over the machine's streaming bandwidth on the
row's threads, measured in the same process by :func:`stream_bandwidth` (a compiled scale kernel,
b = s a, over STREAM_BYTES of arrays, the median of STREAM_REPEATS after an untimed call). A backtrack
of the step (Melanz et al. 2015 lines 11-14: L doubled, the gradient step and the product again) moves
the factors and :data:`BACKTRACK_PASSES` once more: the row's bound per iteration counts the run's
backtracks, spread over its iterations, and the row says how far it is without them too.

The GPU target (issue 47): the same relaxed error (<= tol, judged on the host) with iterations within
workbench.solvers.xp_first_order.iteration_margin of the one-thread CPU run, not the same iterates: GPU
iterates differ from CPU ones by round-off (cuSPARSE and cuBLAS sum in another order).

    python -m benchmarks.timing.bench_scale [--contacts 100k,1M,3M,10M] [--configs cpu1,cpu,gpu] [--device cpu|gpu]
                                     [--check] [--tol 1e-4] [--time-limit 900] [--note TEXT] [--write]

``--device gpu`` is ``--configs cpu1,cpu,gpu``, ``--device cpu`` ``--configs cpu1,cpu``. ``--check``
first runs, in this process, the GPU checks (:func:`gpu_checks`): the generated projection kernel on the
GPU against workbench.cones, bit for bit, on points of every case; and the GPU target on a 100k-contact
packing (the default check interval and a check every iteration); then the timing rows. On a machine
without a GPU the checks say "not run: no GPU (why)". The exit code is 1 when a check ran and failed.

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

import numpy as np
from numba import njit, prange

#: nominal size -> spheres of sphere_packing (45,500 spheres: 100,208 contacts; about 2.2 per sphere)
SIZES = {"100k": 45_500, "1M": 450_000, "3M": 1_350_000, "10M": 4_550_000}
CONFIGS = ("cpu1", "cpu", "gpu")
TOL = 1e-4
TIME_LIMIT = 900.0
#: the packages the GPU machine lacks: the GPU path must not load them
FOREIGN = ("cvxpy", "clarabel", "scs", "qdldl")

#: issue 31's targets: GPU ms/iteration at 1M, GPU seconds at 10M, and the CPU speed-up of every core over
#: one thread at 1M, by core count (the GPU's answers: issue 47's target, module docstring)
GPU_MS_PER_IT_1M = 1.0
GPU_SECONDS_10M = 4.0
CPU_SPEEDUP_1M = {16: 6.0, 2: 1.6}
#: issue 47's target: the CPU's ms per iteration at 1M within this factor of its bandwidth bound
BOUND_FACTOR_1M = 1.5
#: the streaming measurement: bytes of each of the two arrays (about 1 GB moved per call), calls timed
STREAM_BYTES, STREAM_REPEATS = 512 * 2**20, 5
#: the passes over n-vectors of one APGD iteration of the compiled loop (workbench.solvers.apgd._iterations,
#: relaxed, no backtrack): (what, vectors read, vectors written); N's factors and the intermediate vector
#: of the chained product are counted apart (iteration_bytes)
VECTOR_PASSES = (("gradient step: new = P(y - (N y + r) / L)", 3, 1),
                 ("product N new (the vector read by the first factor)", 1, 0),
                 ("test terms (11), (27) with the last product's rows: new, y, gamma, N y, r; N new written", 5, 1),
                 ("momentum (18): new, gamma, N new, N gamma, r_0; y, N y, u written", 5, 3),
                 ("stopping measure: the natural map (x, u, a read; map written)", 3, 1),
                 ("stopping measure: the sums of squares (x, u, map)", 3, 0))
#: the passes of a backtrack (lines 12-14): the gradient step and the product with its test terms again
BACKTRACK_PASSES = VECTOR_PASSES[:3]
#: the 100k-contact packing of the GPU checks (SIZES["100k"] spheres) and its points for the kernel check
CHECK_SPHERES, CHECK_POINTS = 45_500, 1_000_000


# --------------------------------------------------------------------------- the CPU's bound

def iteration_bytes(problem) -> dict:
    """Bytes one APGD iteration must move on ``problem`` (the compiled loop's passes, module docstring):
    ``factors``: the CSR arrays of N's factors (A = M^-1 C and B = C^T for a global problem with a
    diagonal M, read once each per product: C's entries read twice; W once for a local problem), plus
    the intermediate vector A x written and read; ``vectors``: the n-vectors of :data:`VECTOR_PASSES`
    (8 bytes per entry) and mu read by the projection; ``total`` their sum; ``backtrack``: the bytes of
    one backtrack, the factors and the n-vectors of :data:`BACKTRACK_PASSES` and mu."""
    a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, chain = problem.compiled_operator
    arrays = (a_ptr, a_idx, a_val) + ((b_ptr, b_idx, b_val) if chain else ())
    factors = sum(int(x.nbytes) for x in arrays) + (2 * 8 * (a_ptr.shape[0] - 1) if chain else 0)
    passes = sum(r + w for _, r, w in VECTOR_PASSES)
    vectors = 8 * passes * problem.n_unknowns + 8 * problem.n_contacts
    again = sum(r + w for _, r, w in BACKTRACK_PASSES)
    return {"factors": factors, "vectors": vectors, "total": factors + vectors, "vector_passes": passes,
            "backtrack": factors + 8 * again * problem.n_unknowns + 8 * problem.n_contacts}


@njit(parallel=True, cache=True)
def _scale(a, b, s):
    for i in prange(a.shape[0]):
        b[i] = s * a[i]


def stream_bandwidth(n_bytes: int = STREAM_BYTES, repeats: int = STREAM_REPEATS) -> float:
    """The machine's streaming bandwidth [bytes/s] on numba's current thread count: b = s a over two
    arrays of ``n_bytes`` each (16 bytes moved per entry: one read, one write), the median of ``repeats``
    timed calls after an untimed one (compilation and first touch outside the clock)."""
    a = np.ones(n_bytes // 8)
    b = np.empty_like(a)
    _scale(a, b, 1.0000001)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _scale(a, b, 1.0000001)
        times.append(time.perf_counter() - t0)
    return 2.0 * a.nbytes / float(np.median(times))


# --------------------------------------------------------------------------- the GPU checks

def cone_points(n_c: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(x (n_c, 3), mu (n_c,)): points of every case of the projection onto K_mu: inside, polar, between,
    on the axis (s = 0) of either sign, mu = 0, on both boundaries; three orders of magnitude."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_c, 3)) * rng.choice([1e-3, 1.0, 1e3], size=(n_c, 1))
    mu = rng.choice([0.0, 0.1, 0.5, 1.0, 2.0], size=n_c)
    x[:8, 1:] = 0.0
    x[:4, 0] *= -1
    x[8:12] = [[1.0, 0.3, 0.4], [-0.5, 0.3, 0.4], [2.0, 0.6, 0.8], [0.0, 0.0, 0.0]]  # on K and -K* for mu = 0.5
    mu[8:12] = 0.5
    return x, mu


def kernel_check(n_c: int = CHECK_POINTS) -> dict:
    """The generated CUDA projection kernel (workbench.solvers.xp_first_order) on the GPU against
    workbench.cones on the host, on :func:`cone_points`: ok when every contact is equal bit for bit."""
    import cupy
    from workbench.cones import project_friction_cone
    from workbench.solvers.xp_first_order import KERNEL_BLOCK, _fused_projection
    x, mu = cone_points(n_c)
    flat = cupy.asarray(x.ravel())
    _fused_projection()(((n_c + KERNEL_BLOCK - 1) // KERNEL_BLOCK,), (KERNEL_BLOCK,),
                        (cupy.asarray(mu), flat, np.int64(n_c)))
    got, ref = flat.get().reshape(-1, 3), project_friction_cone(x, mu)
    differ = int((got != ref).any(axis=1).sum())
    return {"check": "kernel", "contacts": n_c, "differ": differ,
            "max_abs_diff": float(np.max(np.abs(got - ref))), "ok": differ == 0}


def equality_check(tol: float = TOL) -> list[dict]:
    """The GPU target on the 100k-contact packing: APGD on the relaxed dual on the CPU (compiled loop)
    and on the GPU, at the default check interval and checking every iteration: ok when each GPU run is
    solved, reaches relaxed error <= tol (judged on the host) and its iterations are within
    iteration_margin of the CPU's."""
    from problems.synthetic import sphere_packing
    from workbench.method import Method
    from workbench.solvers import SolveOptions
    from workbench.solvers.xp_first_order import CHECK_EVERY, iteration_margin
    problem = sphere_packing(CHECK_SPHERES)
    options = SolveOptions(tol=tol, keep_history=False)
    rows = []
    cpu = None
    for params in ({}, {"device": "gpu"}, {"device": "gpu", "check_every": 1}):
        method = Method("dual", "apgd", params)
        method.warm_up(like=problem, history=False)
        res = method.solve(problem, options)
        row = {"check": "equality", "params": params, "status": res.status, "iterations": res.iterations,
               "relaxed_error": res.metrics.get("relaxed_error", math.nan), "seconds": res.solve_seconds}
        if cpu is None:
            cpu = row
        else:
            every = params.get("check_every", CHECK_EVERY["gpu"])
            row["margin"] = iteration_margin(cpu["iterations"], every)
            row["ok"] = (row["status"] == cpu["status"] == "solved" and row["relaxed_error"] <= tol
                         and abs(row["iterations"] - cpu["iterations"]) <= row["margin"])
        rows.append(row)
    return rows


def gpu_checks(tol: float = TOL) -> list[dict]:
    """:func:`kernel_check` and :func:`equality_check`, or one row saying why they did not run."""
    from workbench.solvers.xp_first_order import device_availability
    ok, why = device_availability("gpu")
    if not ok:
        return [{"check": "gpu", "ok": None, "why": f"not run: no GPU ({why})"}]
    return [kernel_check(), *equality_check(tol)]


# --------------------------------------------------------------------------- measurements


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
    out["iteration_bytes"] = iteration_bytes(problem)
    bandwidth = {}
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
                   backtracks=int(res.info.get("backtracks", 0)),
                   relaxed_error=res.metrics.get("relaxed_error", math.nan),
                   dual_objective=res.metrics.get("dual_objective", math.nan),
                   peak_MiB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
        if config == "gpu":
            import cupy
            row["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
            row["gpu_pool_MiB"] = cupy.get_default_memory_pool().total_bytes() / 2**20
        out["rows"].append(row)
    # the bandwidth on each CPU row's threads, after the solves (its arrays stay out of their peak memory)
    for row in out["rows"]:
        if row["config"] != "gpu" and "seconds" in row:
            numba.set_num_threads(row["threads"])
            if row["threads"] not in bandwidth:
                bandwidth[row["threads"]] = stream_bandwidth()
            row["bandwidth_GBs"] = bandwidth[row["threads"]] / 1e9
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


def verdicts(size: dict, cores: int, tol: float = TOL) -> list[dict]:
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
        elif config == "gpu" and "unavailable" in row:
            row["target"] = f"not measured: no GPU ({row['unavailable']})"
        elif config == "gpu" and not size.get("gpu_available", (True,))[0]:
            row["target"] = f"not measured: no GPU ({size['gpu_available'][1]})"
        elif config not in rows:
            row["target"] = "not measured: not in this run's --configs"
        else:
            row["ms_per_it"] = 1e3 * row["seconds"] / max(1, row["iterations"])
            if "bandwidth_GBs" in row and "iteration_bytes" in size:
                b = size["iteration_bytes"]
                per_ms = 1e3 / (1e9 * row["bandwidth_GBs"])
                backtracks = row.get("backtracks", 0) / max(1, row["iterations"])   # rows before the count: 0
                row["bound_ms"] = per_ms * (b["total"] + backtracks * b.get("backtrack", 0))
                row["vs_bound"] = row["ms_per_it"] / row["bound_ms"]
                row["vs_bound_plain"] = row["ms_per_it"] / (per_ms * b["total"])
            if ref is not None and "dual_objective" in ref and config != "cpu1":
                row["answer"] = abs(row["dual_objective"] - ref["dual_objective"]) / abs(ref["dual_objective"])
                row["equal_iterations"] = row["iterations"] == ref["iterations"]
            row["target"] = _target(row, ref, size["size"], cores, tol)
        out.append(row)
    return out


def _target(row: dict, ref: dict | None, size: str, cores: int, tol: float) -> str:
    if row["status"] != "solved":
        return f"missed: status {row['status']}"
    parts = []
    if row["config"] == "gpu":
        if size == "1M":
            parts.append(f"{row['ms_per_it']:.2f} ms/it vs {GPU_MS_PER_IT_1M} ms/it: "
                         + _ratio(row["ms_per_it"], GPU_MS_PER_IT_1M))
        if size == "10M":
            parts.append(f"{row['seconds']:.2f} s vs {GPU_SECONDS_10M} s: " + _ratio(row["seconds"], GPU_SECONDS_10M))
        if ref is not None and "iterations" in ref:
            from workbench.solvers.xp_first_order import iteration_margin
            margin = iteration_margin(ref["iterations"])
            same = row["relaxed_error"] <= tol and abs(row["iterations"] - ref["iterations"]) <= margin
            parts.append(f"relaxed error {row['relaxed_error']:.1e}, {row['iterations']} iterations against one "
                         f"thread's {ref['iterations']} (margin {margin}): " + ("met" if same else "missed"))
    if row["config"] == "cpu" and size == "1M" and ref is not None:
        speedup = ref["seconds"] / row["seconds"]
        goal = CPU_SPEEDUP_1M.get(cores)
        parts.append(f"{speedup:.2f}x one thread on {cores} cores: "
                     + (_ratio(speedup, goal, lower_is_better=False) if goal else "no target for this core count"))
    if "vs_bound" in row:
        parts.append(f"{row['vs_bound']:.2f}x its bandwidth bound"
                     + (f" (target {BOUND_FACTOR_1M}x: {'met' if row['vs_bound'] <= BOUND_FACTOR_1M else 'missed'})"
                        if size == "1M" else "")
                     + (f" ({row['backtracks']} backtracks counted; without them {row['vs_bound_plain']:.2f}x)"
                        if row.get("backtracks") else ""))
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
           ("bound ms/it", "---:", lambda r: _num(r, "bound_ms", "{:.2f}")
            + (f" ({r['bandwidth_GBs']:.1f} GB/s)" if "bandwidth_GBs" in r else "")),
           ("vs bound", "---:", lambda r: _num(r, "vs_bound", "{:.2f}x")),
           ("against the target", "---", lambda r: r["target"]))


def _num(row: dict, key: str, fmt: str) -> str:
    return fmt.format(row[key]) if row.get(key) is not None else "-"


def _run_name(row: dict) -> str:
    if row["config"] == "cpu1":
        return "CPU, 1 thread"
    if row["config"] == "cpu":
        return f"CPU, {row['threads']} threads" if "threads" in row else "CPU, every core"
    return f"GPU ({row['device']})" if "device" in row else "GPU"


#: the columns of the CPU's bound, on pages of runs that measured it (issue 47)
BOUND_COLUMNS = ("bound ms/it", "vs bound")


def table(rows: list[dict], bound: bool = True) -> list[str]:
    """Markdown lines, a row per size and configuration (without the bound's columns when ``bound`` is
    False: the pages of runs before it was measured)."""
    cols = [c for c in COLUMNS if bound or c[0] not in BOUND_COLUMNS]
    return (["| " + " | ".join(c[0] for c in cols) + " |", "|" + "|".join(c[1] for c in cols) + "|"]
            + ["| " + " | ".join(str(c[2](r)) for c in cols) + " |" for r in rows])


def render(data: dict) -> str:
    """The results page of a run (docs/results/scale.md)."""
    rows = [r for size in data["sizes"] for r in verdicts(size, data["cores"], data["tol"])]
    bound = any("iteration_bytes" in size for size in data["sizes"])
    gens = ", ".join(f"{s['size']} {s['generate_s']:.1f} s" for s in data["sizes"] if "generate_s" in s)
    foreign = sorted({m for s in data["sizes"] for m in s.get("foreign_loaded", [])})
    lines = [f"APGD on the relaxed dual to relaxed error {data['tol']:g} (time limit {data['time_limit']:g} s), "
             "one time step of `problems.synthetic.sphere_packing`, each size in a fresh process; "
             f"{data['cores']} cores, GPU: {data['gpu']}.", "", *table(rows, bound), "",
             f"Generation (not in the times): {gens or '-'}. Peak memory is the process's resident peak, "
             "generation included. Answers: relative difference of the dual objective from the one-thread "
             "answer, both judged on the host by `workbench.metrics.evaluate`.",
             *(["Bound: the bytes an APGD iteration must move (benchmarks.timing.bench_scale.iteration_bytes: N's sparse "
                "factors read, the intermediate vector, the loop's vector passes; each backtrack of the step, "
                "lines 11-14, the factors and the gradient step's and the product's passes once more, spread "
                "over the run's iterations) over the streaming bandwidth "
                "measured in the same process on the row's threads (a compiled b = s a over 2 x "
                f"{STREAM_BYTES / 2**20:.0f} MiB)."] if bound else []),
             f"Modules of cvxpy, Clarabel, SCS or qdldl loaded by the measuring processes: "
             f"{', '.join(foreign) if foreign else 'none'}."]
    if data.get("checks"):
        lines += ["", "GPU checks (`--check`): " + "; ".join(_check_line(c) for c in data["checks"]) + "."]
    if data.get("note"):
        lines += ["", data["note"]]
    return "\n".join(lines)


def _check_line(c: dict) -> str:
    if c["check"] == "gpu":
        return c["why"]
    if c["check"] == "kernel":
        return (f"kernel on {c['contacts']:,} points: {c['differ']} differ from workbench.cones "
                f"(max {c['max_abs_diff']:.1e}): {'met' if c['ok'] else 'missed'}")
    what = ", ".join(f"{k}={v}" for k, v in c["params"].items()) or "cpu"
    verdict = "" if "ok" not in c else f" (margin {c['margin']}): {'met' if c['ok'] else 'missed'}"
    return f"{what}: {c['status']}, {c['iterations']} iterations, relaxed error {c['relaxed_error']:.1e}{verdict}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contacts", default=",".join(SIZES), help=f"sizes, comma-separated, of {', '.join(SIZES)}")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="cpu1 (one thread), cpu (every core), gpu")
    ap.add_argument("--device", choices=("cpu", "gpu"), default=None,
                    help="gpu: --configs cpu1,cpu,gpu; cpu: --configs cpu1,cpu")
    ap.add_argument("--check", action="store_true", help="first run the GPU checks (the kernel against "
                    "workbench.cones, the GPU target on 100k contacts); exit code 1 when one fails")
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT, help="seconds per solve")
    ap.add_argument("--note", default="", help="a closing note for the page (why a size was not run here)")
    ap.add_argument("--write", action="store_true", help="also write docs/results/scale.* (default: print only)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child process: one size
    args = ap.parse_args(argv)
    if args.device is not None:
        args.configs = "cpu1,cpu,gpu" if args.device == "gpu" else "cpu1,cpu"
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
    checks = gpu_checks(args.tol) if args.check else []
    for c in checks:
        print(f"bench_scale: check: {_check_line(c)}", file=sys.stderr, flush=True)
    failed = any(c.get("ok") is False for c in checks)
    measured = {s: measure_in_child(s, configs, args.tol, args.time_limit) for s in sizes}
    gpu = next((r.get("device") for m in measured.values() for r in m.get("rows", []) if r.get("device")), None)
    why = next((m["gpu_available"][1] for m in measured.values() if "gpu_available" in m), "not asked")
    data = {"tol": args.tol, "time_limit": args.time_limit, "cores": os.cpu_count(),
            "gpu": gpu or f"none ({why})" if "gpu" in configs else gpu or "not asked (--configs)",
            "sizes": [measured.get(s) or {"size": s, "spheres": SIZES[s], "skipped": "not in this run's --contacts"}
                      for s in SIZES],
            "note": args.note, "checks": checks}
    command = "python -m benchmarks.timing.bench_scale" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    if not args.write:
        print(render(data))
        return 1 if failed else 0
    from benchmarks.timing import bench_scale  # the renderer by its importable name, also under python -m
    from workbench.provenance import write_results
    print(write_results("scale", data, bench_scale.render, command).read_text())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
