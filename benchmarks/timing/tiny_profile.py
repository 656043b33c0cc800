"""Where the time of a solve of a few contacts goes, in instruction counts (issue 47 item 1)
(python -m benchmarks.timing.tiny_profile [--reps R] [--write]).

Seconds on a shared machine change with its load; the instructions a process executes do not. Each
method runs in a process of its own under valgrind's callgrind, with instrumentation off until the
process asks for it (``--instr-atstart=no`` and CALLGRIND_START_INSTRUMENTATION from a small C helper
compiled for the run with valgrind's header): the imports and the first WARM whole solves of the file
(numba's cached kernels loaded, caches filled) run uncounted and fast. Then every call of
``os.getppid()`` ends one segment of the count and starts the next (``--dump-before=getppid``), so the
phases of one process are counted apart:

1. REPS times each phase of a solve, in the order of ``workbench.method.Method.solve``, each on the
   output of the one before: ``parse`` (``workbench.io.load_problem`` of the file: a fresh problem
   object, as in a time-stepping loop), ``model`` (the formulation's build), ``iterate`` (the solver's
   solve: its Run, recorder and compiled loop), ``judge`` (``workbench.judging.finalize``: the metrics
   of the returned impulses);
2. then REPS times ``parse`` and the whole ``Method.solve()`` call on it: the call's own work is the
   call less model, iterate and judge (its checks: availability, parameters, the global/local test).

The cold start (interpreter, imports, first calls) is bench_first_call's subject, in seconds.

A phase's figure is the median over its REPS counts (min and max beside it), per call. Each phase's
instructions are also split by the object that executed them (the Python interpreter, numba's runtime
and its compiled code, numpy, scipy, the C library, ...: callgrind's self cost per object), which says
how much of a phase is interpreted Python around the compiled kernels. The problem is FILE of the
shared corpus (a 4-contact vehicle step); the methods are those that win on few contacts (METHODS).
NUMBA_NUM_THREADS=1 and PYTHONHASHSEED=0 in the measured processes, so the counts repeat.

Writes docs/results/tiny-profile.md and .json with --write (workbench.provenance) and its copy in
docs/solvers-performance.md; needs valgrind, its header valgrind/callgrind.h and a C compiler (else one
line and exit code 2).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

#: the 4-contact file of bench_peers' cold command line, and the methods that win on few contacts
FILE = "siconos/Rover4144.dat"
METHODS = (("ncp", "newton"), ("anti-relaxed", "bb"), ("anti-relaxed", "apgd"))
PHASES = ("parse", "model", "iterate", "judge")
REPS, WARM = 10, 3
TOL = 1e-8
#: the segments of a measured process before its repetitions: from the start of instrumentation to the
#: first mark (module docstring)
START_SEGMENTS = ("started",)
#: the helper that starts callgrind's instrumentation (compiled for the run: valgrind's header, cc)
HELPER = '#include <valgrind/callgrind.h>\nvoid workbench_instrument(void) { CALLGRIND_START_INSTRUMENTATION; }\n'

#: object groups of the per-object split: (name, pattern on the object's path, lower case)
GROUPS = (("Python interpreter", r"libpython|/python3?[.\d]*$"), ("numba (runtime and compiled code)", r"numba|llvmlite|^\?\?\?$"),
          ("numpy", r"numpy"), ("scipy", r"scipy"), ("BLAS/LAPACK", r"blas|lapack"), ("HDF5", r"h5py|hdf5"),
          ("C library and loader", r"libc\.so|libm\.so|ld-linux|libpthread|libdl|libgcc|libstdc"))


# --------------------------------------------------------------------------- the measured process

def child(methods: list[tuple[str, str]], path: str, reps: int, warm: int, helper: str) -> list[dict]:
    """The measured process (module docstring): every method warmed up, then counted in turn;
    os.getppid() marks the segments' ends."""
    import ctypes
    from workbench.io import load_problem
    from workbench.judging import finalize
    from workbench.method import Method
    from workbench.solvers import SolveOptions
    from workbench.solvers.base import execute
    mark = os.getppid
    options = SolveOptions(tol=TOL, keep_history=False)
    built = [Method(formulation, solver) for formulation, solver in methods]
    for method in built:                                                            # uncounted
        for _ in range(warm):
            method.solve(load_problem(path), options)
    ctypes.CDLL(helper).workbench_instrument()
    mark()
    out = []
    for method in built:
        inner = options.with_params(method.solver_params)
        for _ in range(reps):                                                       # 1: the phases
            problem = load_problem(path)
            mark()
            model = method.formulation.build_checked(problem, method.kind, method.formulation_params)
            mark()
            res = execute(method.solver, model, inner)
            mark()
            res = finalize(res, model, inner)
            mark()
        for _ in range(reps):                                                       # 2: the whole call
            problem = load_problem(path)
            mark()
            whole = method.solve(problem, options)
            mark()
        out.append({"status": res.status, "iterations": res.iterations, "whole_status": whole.status,
                    "contacts": problem.n_contacts, "error": res.metrics.get("siconos_error")})
    return out


# --------------------------------------------------------------------------- reading callgrind's dumps

def _named(token: str, names: dict[str, str]) -> str:
    """A compressed callgrind name: "(id) name" defines id, "(id)" refers to it."""
    m = re.match(r"\((\d+)\)\s*(.*)", token)
    if not m:
        return token
    if m.group(2):
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), token)


def object_costs(path: Path) -> tuple[int, Counter]:
    """(total instructions, self instructions by object) of one callgrind dump (one event, Ir; the cost
    line after a ``calls=`` line is the call's inclusive cost and is not the caller's own)."""
    names: dict[str, str] = {}
    costs: Counter = Counter()
    total, ob, after_call = 0, "???", False
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("ob="):
            ob = _named(line[3:].strip(), names)
        elif line.startswith("cob="):
            _named(line[4:].strip(), names)
        elif line.startswith("calls="):
            after_call = True
        elif line.startswith("totals:") or line.startswith("summary:"):
            total = int(line.split()[1])
        elif line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if after_call:
                after_call = False
            elif len(parts) >= 2:
                costs[ob] += int(parts[1])
    return total, costs


def group_of(obj: str) -> str:
    low = obj.lower()
    return next((name for name, pattern in GROUPS if re.search(pattern, low)), "other")


def dumps(folder: Path, pid: int) -> list[Path]:
    """The numbered dumps of process ``pid`` in order (the last, unnumbered file is the exit)."""
    files = [f for f in folder.glob(f"cg.{pid}.*") if f.suffix[1:].isdigit()]
    return sorted(files, key=lambda f: int(f.suffix[1:]))


def segments(files: list[Path], reps: int, methods: int = 1) -> list[dict]:
    """The counts of a measured process by segment (module docstring), one dict per method: per phase
    (and the whole call) the median, min and max of its REPS counts and the per-call split by object
    group; ``start``: the segment before the first mark."""
    counted = [object_costs(f) for f in files]
    per_method = reps * (len(PHASES) + 2)
    expected = len(START_SEGMENTS) + methods * per_method
    if len(counted) != expected:
        raise RuntimeError(f"callgrind wrote {len(counted)} segments, {expected} expected: another call of "
                           "getppid() in the process?")
    start = {name: counted[i][0] for i, name in enumerate(START_SEGMENTS)}
    out = []
    for j in range(methods):
        k = len(START_SEGMENTS) + j * per_method
        runs = {p: [] for p in (*PHASES, "parse_for_call", "call")}
        for _ in range(reps):
            for p in PHASES:
                runs[p].append(counted[k])
                k += 1
        for _ in range(reps):
            for p in ("parse_for_call", "call"):
                runs[p].append(counted[k])
                k += 1
        phases = {}
        for p, rs in runs.items():
            totals = sorted(t for t, _ in rs)
            groups: Counter = Counter()
            for _, costs in rs:
                for obj, ir in costs.items():
                    groups[group_of(obj)] += ir
            phases[p] = {"median": totals[len(totals) // 2], "min": totals[0], "max": totals[-1],
                         "by_object": {g: round(v / reps) for g, v in groups.most_common()}}
        out.append({"start": start, "phases": phases})
    return out


def build_helper(folder: Path, compiler: str) -> Path:
    """The shared library of :data:`HELPER`, compiled into ``folder``."""
    (folder / "helper.c").write_text(HELPER)
    lib = folder / "helper.so"
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", str(folder / "helper.c"), "-o", str(lib)], check=True,
                   capture_output=True)
    return lib


def measure(methods: list[tuple[str, str]], path: Path, reps: int, warm: int, valgrind: str, helper: Path) -> list[dict]:
    """The measured process under callgrind: each method's segments and what its solve returned."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "NUMBA_NUM_THREADS": "1"}
    names = [f"{f} / {s}" for f, s in methods]
    with tempfile.TemporaryDirectory(prefix="tiny_profile_") as folder:
        cmd = [valgrind, "--tool=callgrind", "--instr-atstart=no", "--dump-before=getppid", "--dump-instr=no",
               f"--callgrind-out-file={folder}/cg.%p", sys.executable, "-m", "benchmarks.timing.tiny_profile", "--child",
               ",".join(f"{f}:{s}" for f, s in methods), "--file", str(path), "--reps", str(reps), "--warm",
               str(warm), "--helper", str(helper)]
        run = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if run.returncode != 0:
            tail = " ".join(run.stderr.strip().splitlines()[-2:])
            return [{"method": name, "failed": tail[-400:]} for name in names]
        pid = int(re.search(r"==(\d+)==", run.stderr).group(1))
        results = json.loads(run.stdout.strip().splitlines()[-1])
        counts = segments(dumps(Path(folder), pid), reps, len(methods))
        return [{"method": name, **result, **count} for name, result, count in zip(names, results, counts)]


# --------------------------------------------------------------------------- page

def _k(ir: float) -> str:
    return f"{ir / 1e3:,.0f}k"


def render(data: dict) -> str:
    """The results page (docs/results/tiny-profile.md)."""
    lines = [f"Instructions (valgrind {data['valgrind']}, callgrind) of solves of `{data['file']}` "
             f"({data['contacts']} contacts) to {data['tol']:g}, one thread; per call, the median of {data['reps']} "
             f"[min-max] after {data['warm']} whole solves; benchmarks/timing/tiny_profile.py says what each phase is. The "
             "call's own checks are the median whole call less the medians of model, iterate and judge: within "
             "their spread of zero when the call adds nothing.", ""]
    head = ["method", "iterations", *PHASES, "parse + solve() call", "the call's own checks"]
    lines += ["| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (len(head) - 2)]
    findings = []
    for m in data["methods"]:
        if "failed" in m:
            lines.append(f"| {m['method']} | failed: {m['failed']} |" + " |" * (len(head) - 2))
            continue
        ph = m["phases"]
        cell = lambda p: f"{_k(ph[p]['median'])} [{_k(ph[p]['min'])}-{_k(ph[p]['max'])}]"  # noqa: E731
        own = ph["call"]["median"] - sum(ph[p]["median"] for p in PHASES[1:])
        call = ph["parse_for_call"]["median"] + ph["call"]["median"]
        lines.append(f"| {m['method']} | {m['iterations']} ({m['status']}) | " + " | ".join(cell(p) for p in PHASES)
                     + f" | {_k(call)} | {_k(own)} |")
        whole = sum(ph[p]["median"] for p in PHASES)
        solve = PHASES[1:]
        share = lambda group: (100 * sum(ph[p]["by_object"].get(group, 0) for p in solve)  # noqa: E731
                               / max(1, sum(sum(ph[p]["by_object"].values()) for p in solve)))
        findings.append(f"{m['method']}: parse is {100 * ph['parse']['median'] / whole:.0f} % of parse + model + "
                        f"iterate + judge; of the solve proper (model + iterate + judge), iterate is "
                        f"{100 * ph['iterate']['median'] / sum(ph[p]['median'] for p in solve):.0f} %, and the "
                        f"Python interpreter executes {share('Python interpreter'):.0f} % of its instructions, "
                        f"numba's compiled code and runtime {share('numba (runtime and compiled code)'):.0f} %")
    lines += ["", "By object (per call, the phases' self instructions: who executes them):", ""]
    groups = [g for g, _ in GROUPS] + ["other"]
    lines += ["| method | phase | " + " | ".join(groups) + " |", "|---|---|" + "---:|" * len(groups)]
    for m in data["methods"]:
        if "failed" in m:
            continue
        for p in PHASES:
            by = m["phases"][p]["by_object"]
            lines.append(f"| {m['method']} | {p} | " + " | ".join(_k(by.get(g, 0)) for g in groups) + " |")
    lines += ["", "Findings: " + "; ".join(findings) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=REPS, help="counted repetitions of each phase")
    ap.add_argument("--warm", type=int, default=WARM, help="whole solves before the counted ones")
    ap.add_argument("--file", default=None, help=f"a problem file (default: {FILE} of the shared corpus)")
    ap.add_argument("--write", action="store_true", help="write docs/results/tiny-profile.* (default: print only)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)   # the measured process: F:S,F:S
    ap.add_argument("--helper", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not (args.reps >= 1 and args.warm >= 1):
        print("tiny_profile: error: --reps and --warm must be at least 1", file=sys.stderr)
        return 2
    if args.child is not None:
        methods = [tuple(m.split(":", 1)) for m in args.child.split(",")]
        print(json.dumps(child(methods, args.file, args.reps, args.warm, args.helper)))
        return 0
    valgrind, compiler = shutil.which("valgrind"), shutil.which("cc") or shutil.which("gcc")
    if valgrind is None or compiler is None:
        print("tiny_profile: error: valgrind and a C compiler are needed (apt-get install valgrind gcc)",
              file=sys.stderr)
        return 2
    if args.file is None:
        from workbench.shared_data import shared_data_dir
        root = shared_data_dir()
        if root is None:
            print("tiny_profile: error: the shared data (../shared/data) was not found; set WORKBENCH_SHARED_DATA "
                  "or give --file", file=sys.stderr)
            return 2
        path, shown = root / FILE, FILE
    else:
        path, shown = Path(args.file), Path(args.file).name
    if not path.is_file():
        print(f"tiny_profile: error: no such problem file: {path}", file=sys.stderr)
        return 2
    version = subprocess.run([valgrind, "--version"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="tiny_profile_helper_") as folder:
        try:
            helper = build_helper(Path(folder), compiler)
        except subprocess.CalledProcessError as exc:
            print(f"tiny_profile: error: the callgrind helper does not compile (valgrind/callgrind.h missing?): "
                  f"{' '.join(exc.stderr.split())[-200:]}", file=sys.stderr)
            return 2
        methods = measure(list(METHODS), path, args.reps, args.warm, valgrind, helper)
    data = {"file": shown, "contacts": next((m["contacts"] for m in methods if "contacts" in m), None),
            "tol": TOL, "reps": args.reps, "warm": args.warm, "valgrind": version.removeprefix("valgrind-"),
            "methods": methods}
    command = "python -m benchmarks.timing.tiny_profile" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    if not args.write:
        print(render(data))
        return 0
    from benchmarks.timing import tiny_profile  # the renderer by its importable name, also under python -m
    from workbench.provenance import ROOT, embed, write_results
    print(write_results("tiny-profile", data, tiny_profile.render, command).read_text())
    embed(ROOT / "docs" / "solvers-performance.md", "tiny-profile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
