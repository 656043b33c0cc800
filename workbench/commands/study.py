"""``workbench run | report``: run a study file's grid of solves, and write its report.

    workbench run STUDY.toml [--solver S ...] [--problem GLOB ...] [--repetitions N] [--time-limit S]
                             [--out DIR] [--jobs N] [--executor local|dask] [--scheduler ADDR]
                             [--rerun | --rerun-failed] [--report-dir DIR] [--no-report] [--no-progress]
    workbench report RESULTS_DIR [--out DIR]
    workbench report A_DIR B_DIR [--out DIR]      compare two result sets method by method

Results go to ``results/<study name>/`` and the report to ``reports/<study name>/`` under the current
directory unless told otherwise. ``run`` resumes: runs already recorded are skipped (``--rerun``
executes them again, ``--rerun-failed`` only those not solved). ``--solver`` and ``--problem`` choose
methods (a glob on the method's name or solver, like ``benchopt run -s``) and problems (a glob on
the name); the plan, and so the report, is then that selection. The study file format is described
in :mod:`workbench.study.spec`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from workbench.commands._args import add_threads_option, positive
from workbench.errors import InputError, printable


def _write_report(results: Path, out: Path | None, progress: bool = True) -> Path:
    from workbench.progress import Progress
    from workbench.report import write_report
    with Progress("report", None, "page", enabled=progress) as bar:
        bar.doing(f"tables and figures of {results}")
        index = write_report(results, out)
    print(f"report: {printable(index, one_line=False)} (and index.md)", file=sys.stderr)
    return index


def _counts(counts: dict) -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def summary_lines(name: str, summary: dict) -> str:
    """The run's end on the terminal: what ran now, then what is recorded, counted as the report and
    load_results count them (the compared runs), and the reference runs apart with their own accuracy."""
    name, results = printable(name), printable(summary["results"], one_line=False)   # a user's name and path
    lines = [f"{name}: ran {summary['executed']} of {summary['planned']} runs now; results in {results}",
             f"{name}: recorded, as the report counts them: {sum(summary['recorded'].values())} compared runs "
             f"({_counts(summary['recorded']) or 'none'})"]
    if summary["references"]:
        accuracy = (f"; their worst judged error {summary['reference_error']:.2g} (asked for "
                    f"{summary['reference_tol']:g})" if summary["reference_error"] is not None
                    and summary["reference_tol"] is not None else "")
        lines.append(f"{name}: and apart, {sum(summary['references'].values())} reference runs "
                     f"({_counts(summary['references'])}){accuracy}")
    return "\n".join(lines)


def cmd_run(args) -> int:
    from workbench.study import load_study
    from workbench.study.spec import select

    if args.scheduler and args.executor != "dask":
        raise InputError("--scheduler needs --executor dask")
    if args.scheduler:
        from workbench.study.executors import check_scheduler, reach_scheduler
        reach_scheduler(check_scheduler(args.scheduler))
    if not Path(args.study).exists():
        shipped = sorted(str(p) for p in Path("studies").glob("*.toml"))[:6]
        raise InputError(f"{args.study}: no such study file"
                         + (f"; study files here: {', '.join(shipped)}" if shipped else
                            "; run from the repository root for its studies/, or give a study file's path"))
    study = select(load_study(args.study), args.solver, args.repetitions, args.time_limit)
    # the runner (pandas, pyarrow, the solvers' base) only once the study file is known to be good: a
    # bad one is told in a fraction of the imports' time
    from workbench.study.runner import run_study

    out = Path(args.out) if args.out else Path("results") / study.name
    from workbench.progress import Progress
    with Progress(study.name, enabled=not args.no_progress, bar=False) as phase:  # planning: problems made, checked
        phase.doing("planning and running")
        summary = run_study(study, out, jobs=args.jobs, executor=args.executor, scheduler=args.scheduler,
                            rerun=args.rerun, rerun_failed=args.rerun_failed, problems=args.problem,
                            progress=not args.no_progress)
    print(summary_lines(study.name, summary), file=sys.stderr)
    name, results = printable(study.name), printable(summary["results"], one_line=False)
    if summary["executed"] == 0 and summary["planned"] > 0:
        print(f"{name}: NOTHING WAS MEASURED: all {summary['planned']} runs are already recorded in "
              f"{results}{'; the report is remade from them' if not args.no_report else ''}. "
              "To measure again: --rerun (every run), --rerun-failed (the runs not solved), or "
              "--out NEW_FOLDER (a fresh results folder)", file=sys.stderr)
    if not args.no_report:
        _write_report(Path(summary["results"]), Path(args.report_dir) if args.report_dir else None,
                      not args.no_progress)
    return 0


def cmd_report(args) -> int:
    if len(args.results) == 2:
        from workbench.report.compare import write_comparison
        index = write_comparison(Path(args.results[0]), Path(args.results[1]), Path(args.out) if args.out else None)
        print(f"comparison: {printable(index, one_line=False)} (and index.md)", file=sys.stderr)
        return 0
    if len(args.results) != 1:
        raise InputError(f"workbench report takes one results directory, or two to compare; got {len(args.results)}")
    if not Path(args.results[0]).is_dir():
        raise InputError(f"{args.results[0]}: no such results folder; give the folder `workbench run` wrote "
                         "(results/STUDY_NAME, or the --out it was given)")
    _write_report(Path(args.results[0]), Path(args.out) if args.out else None)
    return 0


def cmd_conformance(args) -> int:
    """The conformance check of a results folder (:mod:`workbench.report.conformance`): the method table,
    the matrix with ``--matrix``, the counts and each broken promise; exit 1 when a promise is broken."""
    import pandas as pd

    from workbench.report.conformance import (OVERRUN, STATUS_ORDER, check_conformance, method_table, page_data,
                                              render_page, status_matrix)

    report = check_conformance(args.results)
    runs = report["runs"]
    print(method_table(runs).to_markdown(floatfmt=".3g"))
    if args.matrix:
        print()
        print(status_matrix(runs).to_markdown())
    counts = runs["status"].value_counts()
    print(f"\n{len(runs)} runs on {runs['problem'].nunique()} problems, {runs['pair'].nunique()} "
          f"(formulation, solver) pairs: " + ", ".join(f"{s} {counts.get(s, 0)}" for s in STATUS_ORDER))
    print(f"crashes {len(report['crashes'])}, tracebacks {report['tracebacks']}, runs over their time limit "
          f"by more than {OVERRUN:g} s {len(report['overruns'])} (worst: limit {report['worst_overrun']:+.2f} s)")
    for _, row in pd.concat([report["crashes"], report["overruns"]]).iterrows():
        print(f"  {row['problem']} {row['method']}: {row['status']}, {row['wall_seconds']:.2f} s: {row['message']}")
    if len(report["disagree"]):
        print(f"not solved because their measures disagree (the judged measure within tol, a scaled one not): "
              f"{len(report['disagree'])}")
        for _, row in report["disagree"].iterrows():
            print("  " + printable(f"{row['problem']} {row['method']} {row['tolerance']}: {row['status']}: {row['message']}"))
    if args.results_page:
        from workbench.provenance import ROOT, embed, write_results
        command = " ".join(["workbench conformance", args.results, *(["--matrix"] if args.matrix else []),
                            "--results-page", args.results_page])
        print(f"wrote {write_results(args.results_page, page_data(report), render_page, command)}")
        embed(ROOT / "docs" / "studies.md", args.results_page)   # the copy beside the study's description
    broken = len(report["crashes"]) or report["tracebacks"] or len(report["overruns"])
    return 1 if broken else 0


def register(sub) -> None:
    from workbench.study.executors import EXECUTORS

    s = sub.add_parser("run", help="run a study file's grid of (problem, method, repetition) solves")
    s.add_argument("study", help="study file (TOML)")
    s.add_argument("--solver", "-s", action="extend", nargs="+", metavar="S",
                   help="run only the methods whose name or solver matches a glob S")
    s.add_argument("--problem", "-p", action="extend", nargs="+", metavar="GLOB",
                   help="run only the problems whose name matches GLOB")
    s.add_argument("--repetitions", type=positive(int, "RUNS"), help="runs per (problem, method), instead of the study's")
    s.add_argument("--time-limit", type=positive(float, "SECONDS"), metavar="S",
                   help="seconds per run, instead of the study's")
    s.add_argument("--out", help="results directory (default results/<study name>)")
    s.add_argument("--jobs", "-j", type=positive(int, "JOBS"), default=1,
                   help="runs at a time (worker processes; default 1, the fairest timings)")
    s.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local worker processes, or a Dask cluster")
    s.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address (default: a LocalCluster)")
    again = s.add_mutually_exclusive_group()
    again.add_argument("--rerun", action="store_true", help="execute runs again even when recorded")
    again.add_argument("--rerun-failed", action="store_true",
                       help="execute again the recorded runs that were not solved (timeouts, failures, ...)")
    s.add_argument("--report-dir", help="where the report goes (default reports/<study name>)")
    s.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_threads_option(s)
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("report", help="write the markdown/HTML report of a study's results, or compare two")
    s.add_argument("results", nargs="+", metavar="RESULTS_DIR",
                   help="results directory written by workbench run; two: compare B against A")
    s.add_argument("--out", help="report directory (default reports/<study name>, reports/compare-A-B)")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("conformance", help="check a conformance study's results: true statuses, no traceback, "
                                           "every run inside its limit")
    s.add_argument("results", metavar="RESULTS_DIR", help="results directory of a conformance study")
    s.add_argument("--matrix", action="store_true", help="also print the problem x method matrix")
    s.add_argument("--results-page", metavar="NAME",
                   help="also write the table as the documentation's page docs/results/NAME.md")
    s.set_defaults(func=cmd_conformance)
