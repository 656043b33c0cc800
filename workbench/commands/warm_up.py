"""``workbench warm-up``: compile every numba kernel of the in-house methods, 2D and 3D, into the
on-disk compile cache, so that no measured or time-limited run compiles.

    workbench warm-up [--solver S ...] [--formulation F ...]

Each method (every formulation its solver can take; default: every in-house solver, those with
compiled kernels) runs :meth:`workbench.method.Method.warm_up`: tiny one-contact problems in 2D and
3D, global and local, with and without a history and a warm start. Unless ``--solver`` or
``--formulation`` narrows it, the simulator's kernels follow (:func:`problems.warm_up.warm_up`: broad
phase, contact assembly, ellipsoid contacts), which every scene, generator and simulation calls before
its solve. The kernels are compiled with
``cache=True``, so numba writes them under ``NUMBA_CACHE_DIR`` (default: ``__pycache__`` beside the
sources) and every later process loads them in milliseconds instead of compiling them (seconds each).
The set-up and CI run it once after installing; running it again costs a few seconds.
"""

from __future__ import annotations

import os
import time

from workbench.commands._args import formulation_named, solver_named


def cmd_warm_up(args) -> int:
    from formulations import list_formulations
    from workbench.method import pairings
    from workbench.progress import Progress
    from workbench.solvers import list_solvers

    t0 = time.perf_counter()
    forms = [formulation_named(f) for f in args.formulation] if args.formulation else list_formulations()
    solvers = [solver_named(s) for s in args.solver] if args.solver else \
        [s for s in list_solvers() if s.compiled]
    methods = pairings(forms, solvers)  # a bad name is its one line before any progress line
    simulator = not (args.solver or args.formulation)
    # the progress line stays with --quiet: a newcomer's first command is never minutes of silence
    with Progress("warm-up", len(methods) + simulator, "kernel set") as progress:
        for method in methods:
            progress.doing(f"compiling {method.label}")
            seconds = method.warm_up()
            if not args.quiet:
                progress.write(f"  {method.label:<36} {seconds:7.2f} s")
            progress.update()
        if simulator:
            progress.doing("compiling the simulator's kernels")
            from problems.warm_up import warm_up
            seconds = warm_up()
            if not args.quiet:
                progress.write(f"  {'simulator (scenes, generators)':<36} {seconds:7.2f} s")
            progress.update()
    print(f"warmed up {len(methods)} methods in {time.perf_counter() - t0:.1f} s (compile cache: "
          f"{_cache_dir()})")
    return 0


def _cache_dir() -> str:
    return os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside the sources"


def register(sub) -> None:
    s = sub.add_parser("warm-up", help="compile the in-house solvers' and the simulator's kernels (2D and 3D) into the on-disk cache")
    s.add_argument("--solver", "-s", action="append", help="a solver (repeatable; default: every in-house one)")
    s.add_argument("--formulation", "-f", action="append",
                   help="a formulation (repeatable; default: every one the solver can take)")
    s.add_argument("--quiet", action="store_true",
                   help="print only the progress line and the total, not each method's compile time")
    s.set_defaults(func=cmd_warm_up)
