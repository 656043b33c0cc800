"""The timed runs of the peers benchmark (benchmarks.peers.bench_peers, which selects the problems, computes
the figures and writes the page): ours and Siconos on the exact problem under the fair rules (a fresh problem
object for every timed solve, interleaved repetitions, the workbench's siconos_error for both sides), the
Siconos check by the plain script, the per-call overhead, the relaxed problem against Clarabel and the cold
command line. docs/benchmarks.md says what each figure includes."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from numba import njit

from benchmarks.peers import peer_process
from benchmarks.timing.bench_ipm import HISTORY_TOL, time_to_target
from formulations import get_formulation
from workbench import metrics
from workbench.errors import InputError
from workbench.io import load_problem
from workbench.problem import TimeStepProblem
from workbench.shared_data import shared_data_dir
from workbench.method import solve
from workbench.solvers import SolveOptions
from workbench.solvers.siconos import SICONOS_PYTHON
from workbench.sources import load
from workbench.judging import finalize
from workbench.solvers import newton
from workbench.solvers.base import Solver, SolveResult, StopCause, execute
from workbench.solvers.recorder import Recorder

TOL = 1e-8
OURS = [("anti-relaxed", "apgd"), ("anti-relaxed", "pgs"), ("anti-relaxed", "jacobi"), ("anti-relaxed", "bb"),
        ("anti-relaxed", "admm"), ("ncp", "newton"), ("ncp", "pqn"), ("dual-fixed-point", "clarabel")]
#: Siconos's exhaustive 2D solver, tried on problems of at most this many contacts
ENUM_MAX_CONTACTS = 10
#: the overhead table's row of :class:`FloorSolver`
FLOOR_LABEL = "floor: a solve that returns at once"
#: the 1-contact problem of the overhead measurement
ONE_CONTACT = "siconos/FrictionContact3D_1c.dat"
#: the 4-contact file of the cold command line
COLD_FILE = "siconos/Rover4144.dat"
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
#: the accuracy of the optimum that the relaxed targets are judged against (interior point to 1e-10)
ACCURATE_TOL = 1e-10


# ---------------------------------------------------------------------------------------------- exact part
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




def best(row: dict, side: str) -> tuple[str, dict] | None:
    """(method, runs) of ``side`` with the smallest median solver time, or None when none reached 1e-8."""
    done = [(float(np.median(r["solver"])), key.split(":", 1)[1], r) for key, r in row["runs"].items()
            if key.startswith(side + ":")]
    if not done:
        return None
    _, name, runs = min(done, key=lambda x: x[0])
    return name, runs


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


@njit(cache=True)
def _returns_at_once(ptr, idx, val, r, mu, d, eps_rel, tol, start, stop, rho):
    """A compiled call taking the dense Newton run's arguments (newton._dense_start's) and doing nothing."""
    return 0


class FloorSolver(Solver):
    """The least any in-house method can report as build + solve through ``workbench.method.solve``: the NCP
    model's build, the recorder, the local problem's arrays fetched before its clock as the dense Newton
    run fetches them, one compiled call with that run's arguments that returns at once, the clock stopped,
    the point 0. Not registered: the peers benchmark times it as it times the methods (a fresh object,
    the judge after it)."""
    name = "floor"
    model_kinds = ("ncp",)

    def solve(self, model, options: SolveOptions) -> SolveResult:
        problem = model.problem
        result = self.new_result(model)
        data = newton._given_data(problem)
        rec = Recorder(options, "siconos_error", (), 1)
        ptr, idx, val, r, mu = data or newton._dense_data(problem)
        _returns_at_once(ptr, idx, val, r, mu, problem.d, 1e-2, float(options.tol), newton._NO_START, 1, newton._NO_RHO)
        rec.stop_clock()
        result.nu, result.iterations = np.zeros(problem.n_unknowns), 0
        return rec.finish(result, StopCause.CONVERGED)


def floor_once(problem: TimeStepProblem, options: SolveOptions) -> tuple[float, float]:
    """:class:`FloorSolver` on a fresh copy of ``problem``, judged as every solve is: (build + solve, the
    whole call) [s]."""
    p = fresh(problem)
    t0 = time.perf_counter()
    model = get_formulation("ncp").build_checked(p, "ncp", {})
    res = finalize(execute(FloorSolver(), model, options), model, options)
    return res.build_seconds + res.solve_seconds, time.perf_counter() - t0


def overhead(repeats: int) -> list[dict]:
    """Per in-house method: medians of the whole call and of build + solve, one iteration on a 1-contact
    problem, a fresh object per call; then the same of :class:`FloorSolver`."""
    p = load_problem(shared_data_dir() / ONE_CONTACT)
    options = SolveOptions(tol=TOL, max_iter=1, keep_history=False)
    out = []
    for _ in range(3):
        floor_once(p, options)
    floors = [floor_once(p, options) for _ in range(repeats)]
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
    out.append({"method": FLOOR_LABEL, "call_us": float(np.median([f[1] for f in floors])) * 1e6,
                "solver_us": float(np.median([f[0] for f in floors])) * 1e6})
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


#: the floor of a cold command that solves with a compiled kernel: Python, numpy, scipy.sparse and numba
#: imported and one of the workbench's smallest cached kernels called (numba's first call of a cached
#: kernel loads its typing and lowering registries), nothing else
FLOOR_CODE = "import numpy, scipy.sparse; from workbench.blocks import n_blocks; n_blocks(3)"


def cold(rows, repeats: int) -> dict:
    """``workbench --version``, ``workbench solve`` of the 4-contact COLD_FILE with our best method on it
    in this run (apgd if none), the floor under it (FLOOR_CODE) and the plain Siconos script on it, each
    in new processes."""
    exe = Path(sys.executable).with_name("workbench")
    wb = [str(exe)] if exe.exists() else [sys.executable, "-m", "workbench.cli"]
    row = next((r for r in rows if r["problem"] == COLD_FILE), None)
    ours, sic = (best(row, "ours"), best(row, "siconos")) if row else (None, None)
    method = next((m for m in OURS if label(m) == ours[0]), OURS[0]) if ours else OURS[0]
    out = {"version": cold_command(wb + ["--version"], repeats),
           "solve": cold_command(wb + ["solve", f"shared:{COLD_FILE}", "-f", method[0], "-s", method[1], "--tol",
                                       f"{TOL:g}"], repeats),
           "floor": cold_command([sys.executable, "-c", FLOOR_CODE], repeats)}
    out["floor"]["command"] = f"python -c \"{FLOOR_CODE}\""
    path = shared_data_dir() / COLD_FILE
    out["siconos"] = cold_command([SICONOS_PYTHON, "-I", str(peer_process.PLAIN), str(path), sic[0] if sic else "NSGS",
                                   "1"], repeats)
    return out
