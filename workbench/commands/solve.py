"""``workbench info | list | solve | compare``: look at problems, list methods, solve one, compare all.

    workbench info PROBLEM [--set KEY=VALUE ...]
    workbench list
    workbench solve PROBLEM --formulation F --solver S [--tol T] [--accept A] [--max-iter N]
                    [--time-limit S] [--param KEY=VALUE ...] [--set KEY=VALUE ...] [--history FILE.csv] [--json]
    workbench compare PROBLEM... [--formulation F ...] [--solver S ...] [--tol T] [--set KEY=VALUE ...]

PROBLEM is any spec of :mod:`workbench.sources` (a file, shared:REL, dataset:NAME, scene:NAME,
generator:NAME); ``--set`` gives a scene or generator its parameters (``generator:sphere_packing --set
n_spheres=45500``: a packing of about 100,000 contacts), a file takes none.
``solve`` exits 0 when the run is solved and 1 otherwise; ``compare`` 0 when every run of its table
is solved, else 1. Both warm the method up first (imports, numba compilation or loading of the kernel
signatures of the problem's form: :meth:`workbench.method.Method.warm_up` with ``like``; ``solve``
without the warm-start forms it never runs), so the solve times exclude it;
``--json`` reports it as ``warm_up_seconds``. With ``--time-limit`` the worker does it, under its own
limit (workbench.study.worker.WARM_UP_LIMIT), before the run's limit starts, and ``solve`` leaves the
problem to the worker: it is read once, there.
"""

from __future__ import annotations

import json
import os

from workbench.commands._args import (EXIT_NOT_SOLVED, add_method_options, add_threads_option, formulation_named,
                                      key_value, method_named, output_file, positive, solver_named)
from workbench.errors import printable
from workbench.sources import ACCEPTED, Source

PROBLEM_HELP = f"{ACCEPTED} (workbench list shows the scenes)"


def add_solve_options(s) -> None:
    """Options every command that solves shares."""
    s.add_argument("--tol", type=positive(float, fraction=True), default=1e-6,
                   help="accuracy wanted on the workbench's error measure (default 1e-6)")
    s.add_argument("--accept", type=positive(float, fraction=True), default=None,
                   help="error below which a run counts as solved (default: --tol)")
    s.add_argument("--max-iter", type=positive(int, "ITER"), default=None)
    s.add_argument("--time-limit", type=positive(float, "SECONDS"), default=None, help="seconds")
    s.add_argument("--param", action="append", type=key_value, metavar="KEY=VALUE",
                   help="solver-specific setting (JSON value), repeatable")
    add_threads_option(s)
    s.add_argument("--verbose", action="store_true", help="let the solver print its log (stderr)")


def solve_options(args, keep_history: bool = False):
    """SolveOptions from parsed arguments (the ``--param`` values go to the Method: :func:`method_of`)."""
    from workbench.solvers import SolveOptions
    return SolveOptions(tol=args.tol, accept=args.accept, max_iter=args.max_iter, time_limit=args.time_limit,
                        verbose=args.verbose, keep_history=keep_history)


def method_of(args):
    """The Method of ``--formulation``, ``--solver`` and ``--param`` (checked once, errors name the option)."""
    return method_named(args.formulation, args.solver, dict(args.param or []))


def result_record(problem: dict, result, warm_up_seconds: float | None = None) -> dict:
    """The JSON object of ``workbench solve --json``: the problem, then the result's record
    (:meth:`SolveResult.record`, without the point and the history; ``handover`` lists a run finished
    by another method: who, when, why, what the first method reached alone, ``handover_label`` in words;
    ``info`` holds what the solver or method says of itself: recorded, never used to judge), then the
    warm-up: the one-off cost before the clock started (imports, numba compilation), not in the times.
    ``problem``: its ``name`` and ``n_contacts``."""
    return {"problem": problem["name"], "n_contacts": problem["n_contacts"],
            **result.record(point=False, history=False), "compile_seconds": result.info.get("compile_seconds"), "warm_up_seconds": warm_up_seconds}


def source_of(args, spec: str | None = None) -> Source:
    """The Source of PROBLEM (or ``spec``) with the ``--set KEY=VALUE`` parameters of a scene or generator."""
    return Source.parse(args.problem if spec is None else spec, dict(args.set or []))


def add_source_options(s) -> None:
    """--set KEY=VALUE (repeatable): parameters of a scene or generator PROBLEM."""
    s.add_argument("--set", action="append", type=key_value, metavar="KEY=VALUE",
                   help="a parameter of a scene or generator PROBLEM (repeatable), e.g. n_spheres=45500")


def cmd_info(args) -> int:
    source = source_of(args)
    summary = source.summary() if source.origin == "family" else source.load().summary()  # a family: its members
    for key, value in summary.items():
        if value is not None:
            print(f"{key:>12}: {printable(value)}")  # names and descriptions come from the file
    return 0


def cmd_list(args) -> int:
    from formulations import list_formulations
    from workbench.solvers import list_solvers, parameter_lines
    from workbench.sources import NAMED
    if args.params:
        lines = parameter_lines(args.params)
        print(f"{args.params} parameters (--param KEY=VALUE):")
        for line in lines:
            print(f"  {line}")
        return 0
    print("formulations:")
    for f in list_formulations():
        needs = " [needs M, D]" if f.needs_global else ""
        exact = "exact Coulomb" if f.exact else "relaxed"
        print(f"  {f.name:<14} {f.summary} ({exact}; {f.reference}; builds {'/'.join(f.builds)}){needs}")
    print("solvers:")
    for s in list_solvers():
        ok, why = s.availability()
        state = "available" if ok else f"unavailable, because {why}"
        print(f"  {s.name:<14} {s.summary} (takes {'/'.join(s.model_kinds)}): {state}")
    print("scenes and generators (PROBLEM scene:NAME or generator:NAME; simulate SCENE for dynamic ones):")
    for name, entry in NAMED.items():
        print(f"  {name:<20} {entry.kind:<9} {entry.summary}")
    return 0


def _solve(source, problem, method, options, worker=None):
    """(result, warm-up seconds, the problem's name and contacts): ``method`` solves ``problem`` (loaded
    here when None) in this process after its warm-up, or with --time-limit in a worker killed past it
    (hard limit), which warms the method up itself before its clock starts and loads ``source`` itself."""
    if options.time_limit is None:
        problem = source.load() if problem is None else problem
        warm = method.warm_up(like=problem, history=options.keep_history, warm_start=options.warm_start is not None)
        return method.solve(problem, options), warm, {"name": problem.name, "n_contacts": problem.n_contacts}
    from workbench.study.worker import solve_in_worker
    source.check()  # a missing file or an unknown name is told before a worker starts
    result, loaded = solve_in_worker(source, method, options, worker)
    return result, 0.0, loaded or {"name": source.spec, "n_contacts": None}


def cmd_solve(args) -> int:
    method = method_of(args)
    result, warm, problem = _solve(source_of(args), None, method, solve_options(args, keep_history=bool(args.history)))
    if args.history and result.history is not None:
        from workbench.files import atomic_output
        with atomic_output(args.history) as tmp:
            result.history.to_csv(tmp, index=False)
    code = 0 if result.status == "solved" else EXIT_NOT_SOLVED
    if args.json:
        print(json.dumps(result_record(problem, result, warm)))
        return code
    print(f"{printable(problem['name'])}: {problem['n_contacts']} contacts, formulation {result.formulation}, "
          f"solver {result.solver}")
    print(f"  status {result.status} (solver said {result.solver_status or '-'})"
          f"{': ' + printable(result.message) if result.message else ''}")
    for h in result.handover:
        from workbench.solvers.base import handover_label
        print(f"  hand-over: {handover_label([h])} at iteration {h['at_iteration']} ({h['at_seconds']:.3f} s; "
              f"{h['reason']}); {h['from']} alone: {h.get('status_alone', '-')} ({h['measure']} "
              f"{h['error_before']:.3e}); the returned point is {h['to'] if h['used'] else h['from']}'s")
    if result.nu is not None:
        print(f"  objective {result.objective:.10g}, iterations {result.iterations}, "
              f"build {result.build_seconds:.3f} s, solve {result.solve_seconds:.3f} s "
              f"(warm-up before the clock: {warm:.3f} s)")
        for key, value in result.metrics.items():
            print(f"  {key:>26}: {value:.4e}")
    return code


def cmd_compare(args) -> int:
    """Solve each problem with every compatible formulation x solver and print one markdown table."""
    from formulations import FORMULATIONS
    from workbench.solvers import list_solvers
    from workbench.study.worker import WorkerProcess

    from workbench.method import pairings

    forms = [formulation_named(f) for f in args.formulation or list(FORMULATIONS)]
    solvers = [solver_named(s) for s in args.solver] if args.solver else list_solvers()
    methods = pairings(forms, solvers, dict(args.param or []))
    sources = [source_of(args, spec) for spec in args.problems]
    problems = [(source, source.load()) for source in sources]
    print("| problem | contacts | formulation | solver | status | iterations | warm-up s | build s | solve s "
          "| dual objective | relaxed error | siconos error |")
    print("|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    worker = WorkerProcess(None if args.verbose else os.devnull) if args.time_limit is not None else None
    try:
        all_solved = _compare_rows(args, problems, methods, worker)
    finally:
        if worker is not None:
            worker.close()
    return 0 if all_solved else EXIT_NOT_SOLVED


def _compare_rows(args, problems, methods, worker) -> bool:
    """Print the table's rows; whether every run was solved."""
    all_solved = True
    for source, problem in problems:
        for method in methods:
            if not method.accepts(problem)[0]:
                continue
            res, warm, _ = _solve(source, problem, method, solve_options(args), worker)
            all_solved &= res.status == "solved"
            m = res.metrics
            fmt = lambda k: f"{m[k]:.3e}" if k in m else "-"  # noqa: E731
            it = "-" if res.iterations is None else res.iterations
            status = res.status if res.status != "unavailable" else f"unavailable ({res.message})"
            if res.handover:  # finished by another method: say so, and what the method reached alone
                status += f" ({res.handover_label}; alone {res.status_alone})"
            print(f"| {problem.name} | {problem.n_contacts} | {method.formulation_name} | {method.solver_name} "
                  f"| {status} | {it} | {warm:.3f} | {res.build_seconds:.3f} | {res.solve_seconds:.3f} "
                  f"| {fmt('dual_objective')} | {fmt('relaxed_error')} | {fmt('siconos_error')} |", flush=True)
    return all_solved


def register(sub) -> None:
    s = sub.add_parser("info", help="print sizes and data ranges of a problem")
    s.add_argument("problem", help=PROBLEM_HELP)
    add_source_options(s)
    s.set_defaults(func=cmd_info, fast_exit=True)

    s = sub.add_parser("list", help="list formulations, solvers (and why any is unavailable), scenes and generators")
    s.add_argument("--params", metavar="NAME", help="list the parameters of one solver or formulation")
    s.set_defaults(func=cmd_list, fast_exit=True)

    s = sub.add_parser("solve", help="solve one problem with one formulation and one solver")
    s.add_argument("problem", help=PROBLEM_HELP)
    add_method_options(s)
    add_solve_options(s)
    add_source_options(s)
    s.add_argument("--history", metavar="FILE.csv", type=output_file, help="write the per-iteration history")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.epilog = "exit codes: 0 solved, 1 not solved (inaccurate, max_iter, timeout, failed, unavailable), 2 bad input"
    s.set_defaults(func=cmd_solve, fast_exit=True)

    s = sub.add_parser("compare", help="solve problems with every formulation x solver, print a table")
    s.add_argument("problems", nargs="+", metavar="PROBLEM", help=PROBLEM_HELP)
    add_method_options(s, many=True)
    add_solve_options(s)
    add_source_options(s)
    s.set_defaults(func=cmd_compare)
