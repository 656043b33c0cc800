"""Ours against Siconos and Clarabel under fair rules, and issue 25's targets, in one run
(python -m benchmarks.bench_peers [--quick]); writes docs/results/peers.md and .json.

docs/benchmarks.md says what each figure includes; in short:

1. Exact problem, ours against Siconos, on every problem with contacts of the shared corpus
   (../shared/data: fclib/*.hdf5, siconos/*.dat; ``--problems GLOB`` selects). Siconos runs in its own
   process, a plain script (benchmarks/siconos_peer.py under the system interpreter) that reads each
   file as Siconos reads it, sends 3D local problems to fc3d, 2D ones to fc2d and global ones to gfc3d
   (2D global ones: Siconos's condensation, then fc2d), and tries every Siconos solver of that class.
   Ours: every in-house exact method. Every timed solve, on either side, starts from a freshly read
   problem object: ours is a new TimeStepProblem built from the arrays as read (no cached operator,
   norm or factor: checked before the clock starts), Siconos's is read again from the file; the
   reading is outside the clock on both sides. Repetitions are interleaved (repetition k runs every
   method on every problem, in a rotated order, before k + 1); a method that misses 1e-8 in one
   repetition is not run again on that problem (it cannot be the best). Accuracy: the workbench's
   ``siconos_error`` of the returned impulses <= 1e-8, the same function for both sides.
   Figures: solver time (ours: the formulation's build + the solver's solve, i.e. everything computed
   from (W, q, mu) or (M, H, f, w, mu); Siconos: the driver) and whole-call time (ours: the whole
   ``workbench.method.solve`` call with its checks and metrics; Siconos: SolverOptions to the
   driver's return), medians with [min-max]. Best = the smallest median among the methods that reached
   1e-8 in every repetition. A problem only one side solves counts as the time limit for the other
   (qpbenchmark's rule); problems neither solves are listed, not in the means.
2. Siconos check: the best Siconos method on a few .dat problems run by benchmarks/siconos_plain.py,
   the plainest Siconos script, in a process of its own, against the times of section 1.
3. Per-call overhead: one iteration on a 1-contact problem, fresh object per call.
4. Relaxed problem against Clarabel at its own default accuracy: Clarabel's own solve time (not cvxpy's
   compilation) and objective; ours, the time to reach that objective within 1e-6 relative.
5. Cold command line: ``workbench --version`` and ``workbench solve`` of a 4-contact file in new
   processes (wall time, peak resident memory), after one untimed run that fills the on-disk caches.
6. Issue 25's targets with this run's figures, met or missed.

Options: ``--quick`` (3 repetitions, cap 2 s; default 5 repetitions, cap 5 s), ``--repetitions K``,
``--problems GLOB``, ``--time-limit S``, ``--skip-relaxed``, ``--skip-cold``, ``--stacks`` (only the
corpus's towers and the generated stacks, problems.stacks, exact part; printed, never written), ``--write`` (write
docs/results/peers.* and the README's copy; without it the page is only printed).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks import peer_process
from benchmarks.bench_ipm import HISTORY_TOL, time_to_target
from workbench import metrics
from workbench.errors import InputError
from workbench.io import load_problem
from workbench.problem import TimeStepProblem
from workbench.shared_data import shared_data_dir
from workbench.method import solve
from workbench.solvers import SolveOptions
from workbench.solvers.siconos import SICONOS_PYTHON, probe
from workbench.sources import load

TOL = 1e-8
OURS = [("anti-relaxed", "apgd"), ("anti-relaxed", "pgs"), ("anti-relaxed", "jacobi"), ("anti-relaxed", "bb"),
        ("anti-relaxed", "admm"), ("ncp", "newton"), ("ncp", "pqn"), ("dual-fixed-point", "clarabel")]
#: Siconos's exhaustive 2D solver, tried on problems of at most this many contacts
ENUM_MAX_CONTACTS = 10
#: the 1-contact problem of the overhead measurement
ONE_CONTACT = "siconos/FrictionContact3D_1c.dat"
#: the 4-contact file of the cold command line
COLD_FILE = "siconos/Rover4144.dat"
#: the corpus's stacked towers (box stacks, most contacts sticking)
TOWERS = ("fclib/Box_Stacks-i0122-82-5.hdf5", "siconos/BoxesStack1-i100000-32.hdf5.dat")
#: the generated stacks (problems.stacks), written as FCLib local problems (W, q) so that Siconos reads
#: them as it reads the corpus's; they enter the tower target, not the corpus's means
GENERATED = (("box_tower", {"n": 12}), ("box_tower", {"n": 15, "jitter": 0.3, "seed": 3}),
             ("brick_wall", {"courses": 6, "bricks": 5}), ("brick_wall", {"courses": 10, "bricks": 8}))
#: .dat problems of the Siconos check (those present in the run; at most CHECK_COUNT)
CHECK = ("siconos/Rover4144.dat", "siconos/Confeti-ex13-4contact-Fc3D-SBM.dat", "siconos/FrictionContactProblem00374.dat",
         "siconos/OneObject-i1028-138.hdf5.dat", "siconos/BoxesStack1-i100000-32.hdf5.dat",
         "siconos/Capsules-i100-889.dat", "siconos/fc2d_granularflowonwall_00667_00000.dat")
CHECK_COUNT = 5
#: the relaxed problems, and whether the first-order methods run on each
SETTLED, SCALING = "dataset:settled-00320", "dataset:scaling-02560"
FIRST_ORDER = ("apgd", "bb", "pgs", "jacobi", "admm")
#: cap of each run of the relaxed part: this many times Clarabel's own time, at least RELAXED_MIN_CAP s
RELAXED_CAP_FACTOR, RELAXED_MIN_CAP = 20.0, 10.0
#: Clarabel's tolerances left at its own defaults (the workbench's mapping of tol is overridden)
CLARABEL_DEFAULTS = ("tol_gap_abs", "tol_gap_rel", "tol_feas", "tol_ktratio")
SMALL = 10
#: problems of at most this many contacts: every timed solve, on both sides, follows an untimed solve of
#: WARM_ITER iterations by the same method on another fresh object (caches hold its code and data, as in
#: a time-stepping loop and in a plain script that solves back to back)
PREWARM_MAX_CONTACTS, WARM_ITER = 100, 3
#: problems of at most INNER_MAX_CONTACTS contacts solve in microseconds, where a single timing is mostly
#: noise: each repetition's sample, on both sides, is the median of INNER timed solves, each on a fresh object
INNER_MAX_CONTACTS, INNER = 30, 10
#: a problem whose ||q|| is below this times max |W| has the solution r = 0 to round-off: a relative
#: error measure there divides round-off by round-off, so it is listed, not counted in the means
DEGENERATE = 1e-12
#: issue 25's targets
#: the accuracy of the optimum that the relaxed targets are judged against (interior point to 1e-10)
ACCURATE_TOL = 1e-10
TARGETS = {"geomean": 0.8, "small": 1.5, "small_call": 2.5, "worst": 2.0, "tower": 1.0, "first_order": 3.0,
           "ipm": 0.6, "version_s": 0.15, "version_MiB": 60.0, "solve_s": 0.5}
#: issue 33's targets: APGD's whole solve() call on the one-contact file [us]; at most SMALL contacts, the geometric
#: mean of the solver-time ratios and the worst ratio; the corpus's geometric mean; every stack (the corpus's and
#: the generated ones); the cold `workbench solve` [s]; ipm to the accurate objective over Clarabel's own time
TARGETS_33 = {"call_us": 20.0, "small": 2.0, "small_worst": 3.0, "geomean": 0.8, "stacks": 1.0, "solve_s": 0.5,
              "ipm": 0.6}


# ---------------------------------------------------------------------------------------------- problems
def corpus(pattern: str) -> tuple[list[tuple[str, Path, TimeStepProblem]], list[str]]:
    """(relative path, file, problem) of every corpus file with contacts matching ``pattern`` (globs
    separated by commas); and the files the workbench cannot read, with why."""
    root = shared_data_dir()
    if root is None:
        sys.exit("the shared data (../shared/data) was not found; set WORKBENCH_SHARED_DATA")
    out, unread = [], []
    for f in sorted(list(root.glob("fclib/*.hdf5")) + list(root.glob("siconos/*.dat"))):
        rel = str(f.relative_to(root))
        if not any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(f.name, g) for g in pattern.split(",")):
            continue
        try:
            p = load_problem(f)
        except InputError as exc:
            unread.append(f"{f.name} ({str(exc).split(': ', 1)[-1]})")
            continue
        if p.n_contacts:
            out.append((rel, f, p))
    return out, unread


def generated_stacks(folder: Path) -> list[tuple[str, Path, TimeStepProblem]]:
    """(``generated/NAME.hdf5``, file, problem) of every GENERATED stack, written to ``folder`` and
    read back as both sides read a corpus file."""
    from problems import stacks
    from workbench.export import export
    out = []
    for name, params in GENERATED:
        p = getattr(stacks, name)(**params)
        path = folder / f"{p.name}.hdf5"
        export(p, "local", "fclib", path)
        out.append((f"generated/{path.name}", path, load_problem(path)))
    return out


def fresh(p: TimeStepProblem) -> TimeStepProblem:
    """A new problem object from ``p``'s arrays as read: nothing derived from them is cached yet."""
    common = {"mu": p.mu, "d": p.d, "h": p.h, "name": p.name, "metadata": dict(p.metadata)}
    if p.is_global:
        return TimeStepProblem(M=p.M, D=p.D, k=p.k, b=p.b, G=p.G, b_G=p.b_G, **common)
    return TimeStepProblem(W=p.N, q=p.r, **common)


def cached(p: TimeStepProblem) -> list[str]:
    """What ``p`` has computed and kept from its data (its cached properties)."""
    return sorted(vars(p))


def label(method) -> str:
    form, slv = method
    return slv if form in ("ncp", "anti-relaxed") else f"{form}/{slv}"


# ---------------------------------------------------------------------------------------------- ours
def ours_once(problem: TimeStepProblem, method, options: SolveOptions) -> tuple[TimeStepProblem, object, float]:
    """One solve on a fresh copy of ``problem``: (that copy, the result, the whole call's seconds)."""
    p = fresh(problem)
    if cached(p):
        raise RuntimeError(f"{p.name}: a fresh problem holds {cached(p)} before the clock starts")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        res = solve(p, *method, options)
        return p, res, time.perf_counter() - t0


def run_ours(problem, method, cap: float, warm: bool, inner: int = 1) -> dict:
    """Our timed solve (after an untimed short one when ``warm``; ``inner`` times, medians):
    {solved, solver_s (build + solve), call_s, error, status}."""
    if warm:
        ours_once(problem, method, SolveOptions(tol=TOL, max_iter=WARM_ITER, keep_history=False))
    solver, call = [], []
    for _ in range(inner):
        _, res, wall = ours_once(problem, method, SolveOptions(tol=TOL, time_limit=cap, keep_history=False))
        err = res.metrics.get("siconos_error")
        solver.append(res.build_seconds + res.solve_seconds)
        call.append(wall)
        if not (err is not None and err <= TOL and solver[-1] <= cap):
            status = "past the time limit" if err is not None and err <= TOL else res.status
            return {"solved": False, "solver_s": solver[-1], "call_s": wall, "error": err, "status": status}
    return {"solved": True, "solver_s": float(np.median(solver)), "call_s": float(np.median(call)), "error": err,
            "status": res.status}


def run_siconos(peer, path: Path, problem, method: str, cap: float, warm: bool, inner: int = 1) -> dict:
    """Siconos's timed solve, judged by the workbench's siconos_error of the returned impulses."""
    ans = peer.solve(str(path), problem, method, TOL, cap, warm, inner)
    if "status" in ans:
        return {"solved": False, "solver_s": None, "call_s": None, "error": None, "status": ans["status"],
                "claimed": False}
    err = float(metrics.evaluate(problem, ans["r"])["siconos_error"])
    solved = err <= TOL and ans["solver_s"] <= cap
    status = "solved" if solved else ("past the time limit" if err <= TOL else f"info {ans['info']}")
    return {"solved": solved, "solver_s": ans["solver_s"], "call_s": ans["call_s"], "error": err,
            "status": status, "claimed": ans["info"] == 0 and err > TOL}


def siconos_methods(problem, available: dict) -> list[str]:
    if problem.n_bilateral:
        return []
    fam = ("g" if problem.is_global else "") + f"fc{problem.d}d"
    return [m for m in available.get(fam, []) if m != "ENUM" or problem.n_contacts <= ENUM_MAX_CONTACTS]


def measure_exact(problems, reps: int, cap: float, peer, available: dict) -> list[dict]:
    """Interleaved repetitions of every method on every problem; per problem, per method the lists of
    solver and call seconds of the runs that reached 1e-8, and the methods that missed it (why)."""
    rows = []
    for rel, _, p in problems:
        methods = [("ours", label(m), m) for m in OURS] + [("siconos", m, m) for m in siconos_methods(p, available)]
        rows.append({"problem": rel, "contacts": p.n_contacts, "d": p.d, "kind": p.kind, "methods": methods,
                     "runs": {}, "missed": {}, "claimed_missed": 0, "degenerate": degenerate(p)})
    t_start = time.perf_counter()
    for k in range(reps):
        for (rel, path, p), row in zip(problems, rows):
            methods = row["methods"]
            shift = k % len(methods)
            for side, name, m in methods[shift:] + methods[:shift]:
                key = f"{side}:{name}"
                if key in row["missed"]:
                    continue
                warm = p.n_contacts <= PREWARM_MAX_CONTACTS
                inner = INNER if p.n_contacts <= INNER_MAX_CONTACTS else 1
                out = (run_ours(p, m, cap, warm, inner) if side == "ours"
                       else run_siconos(peer, path, p, m, cap, warm, inner))
                if out["solved"]:
                    runs = row["runs"].setdefault(key, {"solver": [], "call": []})
                    runs["solver"].append(out["solver_s"])
                    runs["call"].append(out["call_s"])
                else:
                    err = out["error"]
                    row["missed"][key] = out["status"] + ("" if err is None else f", error {err:.1e}")
                    row["runs"].pop(key, None)
                    row["claimed_missed"] += bool(out.get("claimed"))
        print(f"repetition {k + 1}/{reps} done ({time.perf_counter() - t_start:.0f} s)", file=sys.stderr, flush=True)
    for row in rows:
        del row["methods"]
    return rows


def degenerate(p: TimeStepProblem) -> bool:
    """True when ||q|| is round-off next to W (see DEGENERATE)."""
    N = p.N
    return bool(np.linalg.norm(p.r) <= DEGENERATE * (abs(N).max() if N.nnz else 1.0))


def warm_up(problems, cap: float) -> None:
    """Untimed: imports, numba compilation and first calls of every method on every problem."""
    for _, _, p in problems:
        for m in OURS:
            ours_once(p, m, SolveOptions(tol=TOL, max_iter=2, time_limit=cap, keep_history=False))


# ---------------------------------------------------------------------------------------------- summary
def best(row: dict, side: str) -> tuple[str, dict] | None:
    """(method, runs) of ``side`` with the smallest median solver time, or None when none reached 1e-8."""
    done = [(float(np.median(r["solver"])), key.split(":", 1)[1], r) for key, r in row["runs"].items()
            if key.startswith(side + ":")]
    if not done:
        return None
    _, name, runs = min(done, key=lambda x: x[0])
    return name, runs


def fair_ratio(ours: float | None, siconos: float | None, cap: float) -> float | None:
    """ours / Siconos, a side that did not solve counted as the time limit ``cap`` (None: neither did)."""
    if ours is None and siconos is None:
        return None
    return (cap if ours is None else ours) / (cap if siconos is None else siconos)


def ratios(row: dict, cap: float) -> dict:
    """The problem's best of each side and its ratios (solver, call) under the time-limit rule."""
    o, s = best(row, "ours"), best(row, "siconos")
    med = lambda b, k: None if b is None else float(np.median(b[1][k]))  # noqa: E731
    return {"ours": o, "siconos": s, "solver": fair_ratio(med(o, "solver"), med(s, "solver"), cap),
            "call": fair_ratio(med(o, "call"), med(s, "call"), cap)}


def geomean(x) -> float | None:
    x = [v for v in x if v is not None]
    return float(np.exp(np.mean(np.log(x)))) if x else None


# ---------------------------------------------------------------------------------------------- other parts
def siconos_check(problems, rows, reps: int) -> list[dict]:
    """The best Siconos method of a few .dat problems, timed again by the plain script in its own process."""
    by_rel = {rel: (path, row) for (rel, path, _), row in zip(problems, rows)}
    out = []
    for rel in CHECK:
        if rel not in by_rel or len(out) >= CHECK_COUNT:
            continue
        path, row = by_rel[rel]
        b = best(row, "siconos")
        if b is None or row["kind"] != "local":
            continue
        med = float(np.median(b[1]["solver"]))
        n = int(min(50, max(5, 2.0 / max(med, 1e-6))))          # about 2 s of solving
        try:
            plain = peer_process.plain(str(path), b[0], n)
        except (subprocess.SubprocessError, OSError) as exc:
            plain = {"error": str(exc).splitlines()[0]}
        out.append({"problem": rel, "method": b[0], "bench": b[1]["solver"], "plain": plain, "plain_repetitions": n})
    return out


def overhead(repeats: int) -> list[dict]:
    """Per in-house method: medians of the whole call and of build + solve, one iteration on a 1-contact
    problem, a fresh object per call."""
    p = load_problem(shared_data_dir() / ONE_CONTACT)
    options = SolveOptions(tol=TOL, max_iter=1, keep_history=False)
    out = []
    for m in OURS:
        for _ in range(3):
            ours_once(p, m, options)
        calls, inner = [], []
        for _ in range(repeats):
            _, res, wall = ours_once(p, m, options)
            calls.append(wall)
            inner.append(res.build_seconds + res.solve_seconds)
        out.append({"method": label(m), "call_us": float(np.median(calls)) * 1e6,
                    "solver_us": float(np.median(inner)) * 1e6})
    return out


def clarabel_params() -> dict:
    import clarabel
    defaults = clarabel.DefaultSettings()
    return {f"backend.{k}": getattr(defaults, k) for k in CLARABEL_DEFAULTS}


def relaxed(reps: int) -> dict:
    """Per relaxed problem: Clarabel's own solve seconds at its default accuracy, and for ipm (and, on
    settled-00320, the first-order methods) the seconds to the accurate optimum's objective within 1e-6
    (build + the history's time of the first iterate there; None: not reached within the cap). The
    target is Clarabel to 1e-10 (ACCURATE_TOL), never a solver's default stop: Clarabel at its default
    settings stops 1.2e-3 from the optimum on settled-00320, which let a first-order method pass early
    and made the accurate interior point "miss"."""
    problems = {SETTLED: ("ipm",) + FIRST_ORDER, SCALING: ("ipm",)}
    loaded, missing = {}, {}
    for spec in problems:          # a dataset not generated here is reported as not measured, with how to make it
        try:
            loaded[spec] = load(spec)
        except InputError as exc:
            missing[spec] = f"not measured: {exc} (workbench generate makes it; docs/datasets.md)"
    problems = {spec: ms for spec, ms in problems.items() if spec in loaded}
    clar = SolveOptions(tol=1e-6, keep_history=False, params=clarabel_params())
    for spec, p in loaded.items():                       # warm-up: imports, compilation, first calls
        for m in ("clarabel",) + problems[spec]:
            ours_once(p, ("dual", m), SolveOptions(tol=1e-6, max_iter=5, keep_history=False))
    out = {spec: {"contacts": loaded[spec].n_contacts, "clarabel": [], "objective": None, "to_target": {}, "missed": {},
                  "target_tol": ACCURATE_TOL} for spec in problems}
    for _ in range(reps):
        for spec, p in loaded.items():
            o = out[spec]
            _, ref, _ = ours_once(p, ("dual", "clarabel"), clar)
            o["clarabel"].append(ref.solve_seconds)
            if o["objective"] is None:
                _, accurate, _ = ours_once(p, ("dual", "clarabel"), SolveOptions(tol=ACCURATE_TOL, keep_history=False))
                o["objective"] = float(accurate.objective)
            cap = max(RELAXED_MIN_CAP, RELAXED_CAP_FACTOR * float(np.median(o["clarabel"])))
            history = SolveOptions(tol=HISTORY_TOL, max_iter=10 ** 7, time_limit=cap)
            for m in problems[spec]:
                if m in o["missed"]:
                    continue
                _, res, _ = ours_once(p, ("dual", m), history)
                t = time_to_target(res.history, o["objective"]) if res.history is not None else float("nan")
                if math.isfinite(t):
                    o["to_target"].setdefault(m, []).append(res.build_seconds + t)
                else:
                    o["missed"][m] = f"not within 1e-6 of the accurate objective in {cap:.1f} s"
                    o["to_target"].pop(m, None)
        print("relaxed repetition done", file=sys.stderr, flush=True)
    for spec, why in missing.items():
        out[spec] = {"missing": why}
    return out


#: the launcher of the cold runs: a small process of its own, because a child forked from this large one
#: would report this one's resident memory as its peak (Linux keeps ru_maxrss across fork and exec); the
#: launcher's own ~12 MiB would be the floor of its children's, so GNU time (about 1 MiB) reports the
#: peak where it is installed
GNU_TIME = "/usr/bin/time"
LAUNCHER = """
import json, os, subprocess, sys, time
gnu = os.path.exists(%r)
t0 = time.perf_counter()
proc = subprocess.Popen(([%r, "-f", "%%M"] if gnu else []) + sys.argv[1:], stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE)
err = proc.communicate()[1]
seconds = time.perf_counter() - t0
peak = int(err.split()[-1]) / 1024 if gnu else __import__("resource").getrusage(-1).ru_maxrss / 1024
print(json.dumps([seconds, peak, proc.returncode]))
""" % (GNU_TIME, GNU_TIME)


def cold_command(cmd: list[str], repeats: int) -> dict:
    """Wall seconds and peak resident MiB of ``cmd`` in new processes (after one untimed run), each
    started and measured by LAUNCHER."""
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    walls, mib, codes = [], [], []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-I", "-c", LAUNCHER, *cmd], capture_output=True, text=True,
                             timeout=300, check=True)
        seconds, peak, code = json.loads(out.stdout)
        walls.append(seconds)
        mib.append(peak)
        codes.append(code)
    return {"command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)), "s": walls,
            "MiB": mib, "exit": codes}


def cold(rows, repeats: int) -> dict:
    """``workbench --version``, ``workbench solve`` of the 4-contact COLD_FILE with our best method on it
    in this run (apgd if none), and the plain Siconos script on it, each in new processes."""
    exe = Path(sys.executable).with_name("workbench")
    wb = [str(exe)] if exe.exists() else [sys.executable, "-m", "workbench.cli"]
    row = next((r for r in rows if r["problem"] == COLD_FILE), None)
    ours, sic = (best(row, "ours"), best(row, "siconos")) if row else (None, None)
    method = next((m for m in OURS if label(m) == ours[0]), OURS[0]) if ours else OURS[0]
    out = {"version": cold_command(wb + ["--version"], repeats),
           "solve": cold_command(wb + ["solve", f"shared:{COLD_FILE}", "-f", method[0], "-s", method[1], "--tol",
                                       f"{TOL:g}"], repeats)}
    path = shared_data_dir() / COLD_FILE
    out["siconos"] = cold_command([SICONOS_PYTHON, "-I", str(peer_process.PLAIN), str(path), sic[0] if sic else "NSGS",
                                   "1"], repeats)
    return out


# ---------------------------------------------------------------------------------------------- targets
def verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("met" if ok else "missed")


def by_how_much(value: float | None, limit: float) -> str:
    """A figure against an upper limit: "met", "missed by 1.25x" (value / limit) or "not measured"."""
    if value is None:
        return "not measured"
    return "met" if value <= limit else f"missed by {value / limit:.2f}x"


def targets_33(data: dict) -> list[tuple[str, str, str, str]]:
    """Issue 33's targets: (figure, this run, target, met / missed by how much / not measured)."""
    T, ex = TARGETS_33, exact_figures(data)
    out = []
    call = next((o["call_us"] for o in data.get("overhead", []) if o["method"] == "apgd"), None)
    out.append((f"APGD's whole `solve()` call, one iteration on {Path(ONE_CONTACT).name} (1 contact)",
                "-" if call is None else f"{call:.0f} us", f"<= {T['call_us']:g} us", by_how_much(call, T["call_us"])))
    out.append((f"geometric mean ours / Siconos best, problems <= {SMALL} contacts, solver time",
                "-" if ex["small"] is None else f"{ex['small']:.2f} over {ex['small_n']}", f"<= {T['small']:g}",
                by_how_much(ex["small"], T["small"])))
    small = [r for r in ex["rows"] if r["solver"] is not None and not r["degenerate"] and r["contacts"] <= SMALL]
    worst = max(small, key=lambda r: r["solver"], default=None)
    over = sum(r["solver"] > T["small_worst"] for r in small)
    out.append((f"worst problem <= {SMALL} contacts, solver time",
                "-" if worst is None else f"{worst['solver']:.2f} ({Path(worst['problem']).name}); {over} of "
                                          f"{len(small)} above {T['small_worst']:g}x",
                f"<= {T['small_worst']:g}", by_how_much(None if worst is None else worst["solver"], T["small_worst"])))
    out.append(("geometric mean ours / Siconos best, every corpus problem, solver time",
                "-" if ex["geomean"] is None else f"{ex['geomean']:.2f} over {ex['n']}", f"<= {T['geomean']:g}",
                by_how_much(ex["geomean"], T["geomean"])))
    towers = [r for r in ex["towers"] if r["solver"] is not None]
    tw = max(towers, key=lambda r: r["solver"], default=None)
    out.append(("every stack, the corpus's and the generated towers and walls, the worst: "
                + ", ".join(f"{Path(r['problem']).name} {r['solver']:.2f}" for r in towers),
                "-" if tw is None else f"{tw['solver']:.2f} ({Path(tw['problem']).name})", f"<= {T['stacks']:g}",
                by_how_much(None if tw is None else tw["solver"], T["stacks"])))
    c = data.get("cold")
    s = float(np.median(c["solve"]["s"])) if c else None
    out.append((f"`workbench solve` of a 4-contact file ({Path(COLD_FILE).name}), cold process",
                "-" if s is None else f"{s:.2f} s", f"<= {T['solve_s']:g} s", by_how_much(s, T["solve_s"])))
    rel = data.get("relaxed") or {}
    for spec in (SETTLED, SCALING):
        q = relaxed_ratio(rel[spec], "ipm") if spec in rel else None
        out.append((f"{spec.split(':')[1]}, ipm to the accurate objective / Clarabel's own time",
                    "-" if q is None else f"{q:.2f}", f"<= {T['ipm']:g}", by_how_much(q, T["ipm"])))
    return out


def exact_figures(data: dict) -> dict:
    """Geometric means and extremes of the exact part (the time-limit rule applied)."""
    cap = data["settings"]["cap"]
    rows = [row for row in data["exact"] if not row["problem"].startswith("generated/")]
    rs = [dict(ratios(row, cap), problem=row["problem"], contacts=row["contacts"], kind=f"{row['d']}D {row['kind']}",
               degenerate=row["degenerate"]) for row in rows]
    both = [r for r in rs if r["solver"] is not None and not r["degenerate"]]
    small = [r for r in both if r["contacts"] <= SMALL]
    worst = max(both, key=lambda r: r["solver"], default=None)
    return {"rows": rs, "n": len(both), "neither": [r["problem"] for r in rs if r["solver"] is None],
            "degenerate": [r["problem"] for r in rs if r["degenerate"]],
            "no_2d_global": geomean([r["solver"] for r in both if r["kind"] != "2D global"]),
            "ours_only": sum(r["siconos"] is None and r["ours"] is not None for r in both),
            "siconos_only": sum(r["ours"] is None and r["siconos"] is not None for r in both),
            "geomean": geomean([r["solver"] for r in both]), "geomean_call": geomean([r["call"] for r in both]),
            "small_n": len(small), "small": geomean([r["solver"] for r in small]),
            "small_call": geomean([r["call"] for r in small]),
            "big": geomean([r["solver"] for r in both if r["contacts"] >= 50]),
            "worst": worst, "towers": [dict(ratios(row, cap), problem=row["problem"]) for row in data["exact"]
                                       if row["problem"] in TOWERS or row["problem"].startswith("generated/")]}


def relaxed_ratio(entry: dict, method: str) -> float | None:
    if "missing" in entry:
        return None
    t = entry["to_target"].get(method)
    return float(np.median(t) / np.median(entry["clarabel"])) if t else None


def targets(data: dict) -> list[tuple[str, str, str, str]]:
    """Issue 25's targets: (figure, this run, target, verdict)."""
    T, ex = TARGETS, exact_figures(data)
    fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    out = [("geometric mean ours / Siconos best, exact 1e-8, fair rules, fresh objects (solver time)",
            f"{fmt(ex['geomean'])} over {ex['n']} problems", f"<= {T['geomean']:g}",
            verdict(None if ex["geomean"] is None else ex["geomean"] <= T["geomean"])),
           (f"same, problems <= {SMALL} contacts, solver time", f"{fmt(ex['small'])} over {ex['small_n']}",
            f"<= {T['small']:g}", verdict(None if ex["small"] is None else ex["small"] <= T["small"])),
           (f"same, problems <= {SMALL} contacts, whole call", fmt(ex["small_call"]), f"<= {T['small_call']:g}",
            verdict(None if ex["small_call"] is None else ex["small_call"] <= T["small_call"]))]
    w = ex["worst"]
    out.append(("worst single problem", "-" if w is None else f"{w['solver']:.2f} ({Path(w['problem']).name})",
                f"<= {T['worst']:g}", verdict(None if w is None else w["solver"] <= T["worst"])))
    towers = [r for r in ex["towers"] if r["solver"] is not None]
    tw = max(towers, key=lambda r: r["solver"], default=None)
    generated = any(r["problem"].startswith("generated/") for r in ex["towers"])
    # a run recorded before the generated stacks (none in its rows) keeps its own label
    what = ("the corpus's box stacks and the generated towers and walls, the worst of " if generated
            else "the corpus's box stacks, the worse of ")
    out.append(("stacked tower (sticking): " + what + ", ".join(Path(r["problem"]).name for r in ex["towers"]),
                "-" if tw is None else f"{tw['solver']:.2f} ({Path(tw['problem']).name})", f"<= {T['tower']:g}",
                verdict(None if tw is None else tw["solver"] <= T["tower"])))
    rel = data.get("relaxed")
    if rel and SETTLED in rel:
        e = rel[SETTLED]
        fo = {m: relaxed_ratio(e, m) for m in FIRST_ORDER}
        reached = {m: q for m, q in fo.items() if q is not None}
        m = min(reached, key=reached.get) if reached else None
        # data measured before the accurate target (no target_tol) keeps its own, honest label
        target = (f"1e-6 of the accurate optimum (Clarabel to {e['target_tol']:g})" if "target_tol" in e
                  else "1e-6 of its objective")
        out.append((f"settled-00320 relaxed, best first-order / Clarabel's own time to {target}",
                    f"{m} {reached[m]:.2f}" if m else f"none within {RELAXED_CAP_FACTOR:g}x", f"<= {T['first_order']:g}",
                    verdict(m is not None and reached[m] <= T["first_order"])))
        ipm = {spec.split(":")[1]: relaxed_ratio(rel[spec], "ipm") for spec in (SETTLED, SCALING)
               if spec in rel and "missing" not in rel[spec]}
        gone = [spec.split(":")[1] for spec in (SETTLED, SCALING) if "missing" in rel.get(spec, {"missing": 1})]
        measured = ", ".join(f"{k} {fmt(q)}" for k, q in ipm.items()) + "".join(f", {k} not measured (no dataset)" for k in gone)
        missed = any(q is None or q > T["ipm"] for q in ipm.values())
        out.append(("settled-00320 and scaling-02560, ipm to " + ("the accurate" if "target_tol" in e else "Clarabel's")
                    + " objective / Clarabel's own time",
                    measured.lstrip(", "), f"<= {T['ipm']:g}", verdict(False if missed else (None if gone else True))))
    else:
        out += [("settled-00320 relaxed, best first-order / Clarabel's own time", "-", f"<= {T['first_order']:g}",
                 verdict(None)),
                ("settled-00320 and scaling-02560, ipm / Clarabel's own time", "-", f"<= {T['ipm']:g}", verdict(None))]
    c = data.get("cold")
    if c:
        s, mib = float(np.median(c["version"]["s"])), float(np.median(c["version"]["MiB"]))
        out.append(("`workbench --version`", f"{s:.2f} s, {mib:.0f} MiB",
                    f"<= {T['version_s']:g} s, <= {T['version_MiB']:g} MiB",
                    verdict(s <= T["version_s"] and mib <= T["version_MiB"])))
        s = float(np.median(c["solve"]["s"]))
        out.append((f"`workbench solve` of a 4-contact file ({Path(COLD_FILE).name}), cold process", f"{s:.2f} s",
                    f"<= {T['solve_s']:g} s", verdict(s <= T["solve_s"])))
    else:
        out += [("`workbench --version`", "-", f"<= {T['version_s']:g} s, <= {T['version_MiB']:g} MiB", verdict(None)),
                ("`workbench solve` of a 4-contact file, cold process", "-", f"<= {T['solve_s']:g} s", verdict(None))]
    out.append(("test suite, fresh clone, 2 cores", "not measured by this benchmark", "<= 8 min", verdict(None)))
    return out


# ---------------------------------------------------------------------------------------------- page
def spread(values) -> str:
    v = np.asarray(values)
    return f"{np.median(v):.3g} [{v.min():.3g}-{v.max():.3g}]"


def table(head: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    align = align or "|---" * len(head) + "|"
    return ["| " + " | ".join(head) + " |", align] + ["| " + " | ".join(r) + " |" for r in rows]


def target_tables(data: dict) -> list[str]:
    """Issue 33's targets, then issue 25's (each figure met, missed or not measured)."""
    lines = ["## Targets (issue 33)", ""]
    lines += table(["figure", "this run", "target", ""], [list(t) for t in targets_33(data)])
    lines += ["", "## Targets (issue 25)", ""]
    return lines + table(["figure", "this run", "target", ""], [list(t) for t in targets(data)])


def render_targets(data: dict) -> str:
    """The targets tables of a run alone (the README's copy); the whole page is :func:`render`'s."""
    return "\n".join(target_tables(data) + ["", "All figures of the run, with what each includes: "
                                                 "docs/results/peers.md."])


def render(data: dict) -> str:
    """The results page of a run (markdown); the same for the data and for its JSON record, whose
    objects have sorted keys."""
    s = data["settings"]
    cap = s["cap"]
    ex = exact_figures(data)
    # settings' problems counts the generated stacks too (read as the corpus's files are)
    generated = sum(row["problem"].startswith("generated/") for row in data["exact"])
    counted = f"{s['problems'] - generated} corpus problems"
    counted += f" and {generated} generated stack{'s' * (generated != 1)}" if generated else ""
    lines = [f"{s['repetitions']} interleaved repetitions, time limit {cap:g} s per run, Siconos error "
             f"{TOL:g} judged by the workbench's siconos_error for both sides; {counted}"
             f"{' (quick run)' if s['quick'] else ''}; Siconos {s['siconos']}; load average {s['load_start']} at the "
             f"start, {s['load_end']} at the end; {s['wall_s']:.0f} s in all. Seconds, median [min-max]; a "
             "fresh problem object for every timed solve on both sides; docs/benchmarks.md says what each figure "
             "includes.", ""]
    lines += target_tables(data)
    lines += ["", "## Exact problem: ours vs Siconos", ""]
    body = []
    for row in data["exact"]:  # the generated stacks too, after the corpus
        r = ratios(row, data["settings"]["cap"])
        o, sc = r["ours"], r["siconos"]
        cells = [Path(row["problem"]).name, str(row["contacts"]), f"{row['d']}D {row['kind']}"]
        cells += [o[0], spread(o[1]["solver"]), spread(o[1]["call"])] if o else ["none reached 1e-8", "-", "-"]
        cells += [sc[0], spread(sc[1]["solver"]), spread(sc[1]["call"])] if sc else ["none reached 1e-8", "-", "-"]
        q = lambda x: "-" if x is None else f"{x:.3g}"  # noqa: E731
        note = " (time limit)" if (o is None) != (sc is None) else ""
        note += " (round-off q: not in the means)" if row["degenerate"] else ""
        note += " (generated: not in the means)" if row["problem"].startswith("generated/") else ""
        cells += [q(r["solver"]) + note, q(r["call"]) + note]
        body.append(cells)
    lines += table(["problem", "contacts", "kind", "ours best", "ours solver [s]", "ours call [s]", "Siconos best",
                    "Siconos solver [s]", "Siconos call [s]", "ratio solver", "ratio call"], body,
                   "|---|---:|---|---|---|---|---|---|---|---:|---:|")
    g = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    lines += ["", f"Geometric mean of ours / Siconos: {g(ex['geomean'])} solver time, {g(ex['geomean_call'])} whole "
              f"call, over {ex['n']} problems ({ex['ours_only']} only ours solves, {ex['siconos_only']} only "
              f"Siconos solves: the other side counted at the time limit); {g(ex['small'])} solver / "
              f"{g(ex['small_call'])} call over the {ex['small_n']} with <= {SMALL} contacts; {g(ex['big'])} over "
              f"those with >= 50 contacts."]
    lines.append(f"Without the 2D global problems (Siconos 4.4 has no 2D global solver: its time there is mostly "
                 f"its condensation to the local problem): {g(ex['no_2d_global'])}.")
    if ex["neither"]:
        lines.append(f"Neither side reached 1e-8 (not in the means): {', '.join(Path(p).name for p in ex['neither'])}.")
    if ex["degenerate"]:
        lines.append(f"Not in the means, ||q|| at round-off next to W (the solution is r = 0 to round-off and a "
                     f"relative error measure divides round-off by round-off): "
                     f"{', '.join(Path(p).name for p in ex['degenerate'])}.")
    claimed = sum(row["claimed_missed"] for row in data["exact"])
    lines.append(f"Siconos runs that claimed convergence (info 0) but were above 1e-8 by the workbench's measure: "
                 f"{claimed}. Siconos process restarts (a run past the time limit or a crash): {s['restarts']}.")
    if data.get("unread"):
        lines.append(f"Not read by the workbench (left out): {'; '.join(data['unread'])}.")
    missed = [f"{Path(row['problem']).name}: " + ", ".join(f"{k.split(':', 1)[1]} ({v})"
                                                           for k, v in sorted(row["missed"].items()))
              for row in data["exact"] if row["missed"]]
    lines += ["", "<details><summary>Methods that missed 1e-8 (first repetition missed; not run again on that "
              "problem)</summary>", ""] + [f"- {m}" for m in missed] + ["", "</details>"]
    lines += ["", "## Siconos check: the plain script", "",
              "The best Siconos method of a few problems, timed again by benchmarks/siconos_plain.py (read the "
              ".dat file, one untimed solve, then each repetition on a problem read anew) in a process of its own.", ""]
    body = []
    for c in data.get("siconos_check", []):
        p = c["plain"]
        if "median" in p:
            ratio = p["median"] / float(np.median(c["bench"]))
            body.append([Path(c["problem"]).name, c["method"], spread(c["bench"]),
                         f"{p['median']:.3g} [{p['min']:.3g}-{p['max']:.3g}] ({c['plain_repetitions']})", f"{ratio:.2f}"])
        else:
            body.append([Path(c["problem"]).name, c["method"], spread(c["bench"]), p.get("error", "-"), "-"])
    lines += table(["problem", "method", "this benchmark [s]", "plain script [s] (repetitions)", "plain / benchmark"],
                   body, "|---|---|---|---|---:|")
    lines += ["", "## Per-call overhead", "",
              f"One iteration (max_iter 1) on {Path(ONE_CONTACT).name} (1 contact), a fresh problem object per call, "
              "median of 200 calls; the iteration itself is well under a microsecond, so both columns are overhead.", ""]
    lines += table(["method", "whole solve() call [us]", "build + solve [us]"],
                   [[o["method"], f"{o['call_us']:.0f}", f"{o['solver_us']:.0f}"] for o in data.get("overhead", [])],
                   "|---|---:|---:|")
    for name, why in sorted(data.get("failed_sections", {}).items()):
        lines += ["", f"Section {name} failed and was not measured: {why}"]
    rel = data.get("relaxed")
    if rel:
        lines += ["", "## Relaxed problem: ours vs Clarabel", "",
                  "Clarabel at its own default tolerances (" + ", ".join(CLARABEL_DEFAULTS) + "; one thread), "
                  "its own solve time (not cvxpy's compilation); ours: build + the time of the first iterate whose "
                  "dual objective is within 1e-6 relative of Clarabel's (from a run with a history), capped at "
                  f"{RELAXED_CAP_FACTOR:g}x Clarabel's time (at least {RELAXED_MIN_CAP:g} s).", ""]
        body = []
        for spec, e in sorted(rel.items(), key=lambda item: (item[0] != SETTLED, item[0])):
            if "missing" in e:
                body.append([spec, "-", "-", e["missing"], "-"])
                continue
            for m in ["clarabel"] + sorted(set(e["to_target"]) | set(e["missed"])):
                if m == "clarabel":
                    body.append([spec, f"{e['contacts']:,}", "clarabel (own time)", spread(e["clarabel"]), "1"])
                elif m in e["to_target"]:
                    body.append([spec, f"{e['contacts']:,}", m, spread(e["to_target"][m]), f"{relaxed_ratio(e, m):.2f}"])
                else:
                    body.append([spec, f"{e['contacts']:,}", m, e["missed"][m], "-"])
        lines += table(["problem", "contacts", "method", "seconds", "/ Clarabel"], body, "|---|---:|---|---|---:|")
    c = data.get("cold")
    if c:
        lines += ["", "## Cold command line", "",
                  "New processes, after one untimed run (the on-disk compile and byte-code caches are filled); wall "
                  "seconds and peak resident memory, median [min-max].", ""]
        lines += table(["command", "seconds", "MiB"], [[f"`{c[k]['command']}`", spread(c[k]["s"]), spread(c[k]["MiB"])]
                                                      for k in ("version", "solve", "siconos") if k in c], "|---|---|---|")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repetitions, time limit 2 s")
    ap.add_argument("--repetitions", type=int, default=None, help="interleaved repetitions (default 5; quick 3)")
    ap.add_argument("--problems", default="*", help="globs on the corpus path (fclib/NAME.hdf5) or "
                    "file name, separated by commas")
    ap.add_argument("--time-limit", type=float, default=None, help="per run of the exact part [s] (default 5; quick 2)")
    ap.add_argument("--skip-relaxed", action="store_true", help="leave out the relaxed problems against Clarabel")
    ap.add_argument("--skip-cold", action="store_true", help="leave out the cold command line")
    ap.add_argument("--stacks", action="store_true", help="only the stacks: the corpus's towers and the generated "
                    "ones, exact part only (a quick check of the tower target; not with --write)")
    ap.add_argument("--write", action="store_true", help="also write docs/results/peers.* (default: print the page only)")
    args = ap.parse_args(argv)
    reps = args.repetitions or (3 if args.quick else 5)
    cap = args.time_limit or (2.0 if args.quick else 5.0)
    info, why = probe(SICONOS_PYTHON)
    if info is None:
        print(f"Siconos is needed for this benchmark: {why}", file=sys.stderr)
        return 2
    if args.stacks and args.write:
        print("--stacks measures a part of the page: it cannot --write it", file=sys.stderr)
        return 2
    problems, unread = corpus(",".join(TOWERS) if args.stacks else args.problems)
    folder = tempfile.TemporaryDirectory(prefix="bench_peers_stacks_")
    problems += generated_stacks(Path(folder.name))
    if not problems:
        print(f"no corpus problem with contacts matches {args.problems!r}", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    load0 = " ".join(f"{x:.1f}" for x in os.getloadavg())
    peer = peer_process.SiconosProcess()
    try:
        available = peer.methods()
        warm_up(problems, cap)
        rows = measure_exact(problems, reps, cap, peer, available)
        restarts = peer.restarts
    finally:
        peer.close()
        folder.cleanup()
    data = {"exact": rows, "unread": unread, "failed_sections": {}}
    # a section that fails is recorded on the page; what the others measured is kept
    sections = [] if args.stacks else [("siconos_check", lambda: siconos_check(problems, rows, reps)),
                                       ("overhead", lambda: overhead(200))]
    sections += [] if args.skip_relaxed or args.stacks else [("relaxed", lambda: relaxed(reps))]
    sections += [] if args.skip_cold or args.stacks else [("cold", lambda: cold(rows, 5))]
    for name, measure in sections:
        try:
            data[name] = measure()
        except Exception as exc:  # noqa: BLE001 - the page says which section failed and why
            data["failed_sections"][name] = " ".join(f"{type(exc).__name__}: {exc}".split())
    data["settings"] = {"quick": args.quick, "repetitions": reps, "cap": cap, "problems": len(problems),
                        "siconos": info["version"], "load_start": load0,
                        "load_end": " ".join(f"{x:.1f}" for x in os.getloadavg()), "restarts": restarts,
                        "wall_s": time.perf_counter() - t_start}
    command = "python -m benchmarks.bench_peers" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    if not args.write:
        print(render(data))
        print("docs/ unchanged: add --write to store the page in docs/results", file=sys.stderr)
    else:
        from benchmarks import bench_peers     # the renderer by its importable name, also under python -m
        from workbench.provenance import ROOT, embed, write_results, write_view
        page = write_results("peers", data, bench_peers.render, command)
        write_view("peers-targets", "peers", bench_peers.render_targets)
        embed(ROOT / "docs" / "benchmarks.md", "peers-targets")   # the copy of the targets table
        print(page.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
