"""``workbench export``: write a time step, in a formulation, to a file other solvers and tools read.

    workbench export PROBLEM OUT [--formulation F] [--to FORMAT] [--physical]
                     [--solve SOLVER [--solve-formulation F2] [--tol T]] [--guess FCLIB_FILE]

FORMAT defaults to OUT's suffix (.cbf .ptf .task .lp .mps .nl .hdf5 .dat .mat .npz). Model formats
(cbf, ptf, task, lp, mps, nl) need --formulation dual, primal, lcp-pyramid or lcp-pyramid-primal (the
registry's names; the old pyramid-dual and pyramid-primal are read with a note); data formats (fclib,
dat, mat, npz) take raw (default) or local. --solve stores the workbench's solution
(fclib, mat, npz), --guess the first guess of an FCLib file. Prints the files written, one per line;
every file is written atomically with the umask's permissions (workbench.files). Exit code 0, or 1 when
the --solve run stored was not solved (its status is in the file's provenance), 2 bad input.
"""

from __future__ import annotations

import sys
import time

from workbench.commands._args import EXIT_NOT_SOLVED, method_named, output_file, positive
from workbench.commands.solve import PROBLEM_HELP
from workbench.errors import printable
from workbench.sources import load


def cmd_export(args) -> int:
    from workbench.errors import InputError, did_you_mean, unknown
    from workbench.export import DATA_FORMULATIONS, FORMATS, MODELS, export, format_from_path, model_name
    from workbench.io import read_fclib_guess

    try:
        fmt = args.to or format_from_path(args.out)
    except InputError as exc:
        raise InputError(f"OUT {args.out}: {exc} with --to FORMAT") from None
    if fmt not in FORMATS:
        raise InputError(f"--to {fmt}: {unknown('export format', fmt, FORMATS)}")
    formulation = args.formulation or ("raw" if FORMATS[fmt].kind == "data" else None)
    if formulation is None:
        raise InputError(f"format {fmt} writes an optimisation model: give --formulation, one of {', '.join(MODELS)}")
    formulation, note = model_name(formulation)
    takes = MODELS if FORMATS[fmt].kind == "model" else DATA_FORMULATIONS
    if formulation not in takes:
        raise InputError(f"--formulation {formulation}: not a formulation the {FORMATS[fmt].kind} format {fmt} "
                         f"takes; {did_you_mean(formulation, takes)}")
    if note:
        print(f"workbench: note: {note}", file=sys.stderr)
    method = method_named(args.solve_formulation, args.solve, None, "--solve-formulation", "--solve") \
        if args.solve else None
    problem = load(args.problem)
    solution = guess = None
    if method is not None:
        from workbench.solvers import SolveOptions
        solution = method.solve(problem, SolveOptions(tol=args.tol))
        if solution.nu is None:
            raise InputError(f"the solve gave no solution to store ({solution.status}: {solution.message})")
    if args.guess:
        found = read_fclib_guess(args.guess)
        if found is None:
            raise InputError(f"{args.guess}: the file has no /guesses/1")
        guess = found["r"] if "l" not in found else [*found["r"], *found["l"]]
    if fmt == "dat" and formulation == "raw" and problem.is_global:
        from workbench.export.siconos_dat import siconos_reader
        print(f"workbench: note: {args.out} is {siconos_reader(problem)}", file=sys.stderr)
    t0 = time.perf_counter()
    files = export(problem, formulation, fmt, args.out, solution=solution, guess=guess, scaled=not args.physical)
    elapsed = time.perf_counter() - t0
    for f in files:
        print(f)
    print(f"{printable(problem.name)}: {problem.n_contacts} contacts, {formulation} as {fmt}, {elapsed:.2f} s")
    return EXIT_NOT_SOLVED if solution is not None and solution.status != "solved" else 0


def register(sub) -> None:
    from workbench.export import DATA_FORMULATIONS, FORMATS, MODELS
    s = sub.add_parser("export", help="write a problem, in a formulation, for another solver or tool",
                       description="Formats: " + "; ".join(f"{k} ({v.summary})" for k, v in FORMATS.items()))
    s.add_argument("problem", help=PROBLEM_HELP)
    s.add_argument("out", type=output_file, help="output file (its suffix names the format unless --to is given)")
    s.add_argument("--formulation", "-f",
                   help=f"model formats: {', '.join(MODELS)}; data formats: {', '.join(DATA_FORMULATIONS)} "
                        "(default raw)")
    s.add_argument("--to", help=f"format: {', '.join(FORMATS)}")
    s.add_argument("--physical", action="store_true",
                   help="model formats: write physical units instead of the O(1)-scaled data")
    s.add_argument("--solve", metavar="SOLVER", help="store the workbench's solution by SOLVER (fclib, mat, npz)")
    s.add_argument("--solve-formulation", default="dual", help="formulation of --solve (default dual)")
    s.add_argument("--tol", type=positive(float, fraction=True), default=1e-8, help="accuracy of --solve (default 1e-8)")
    s.add_argument("--guess", metavar="FCLIB_FILE", help="store the first guess of an FCLib file")
    s.set_defaults(func=cmd_export)
