"""The papers' numbers reproduced: one command per paper, each writing ONE "paper vs measured" table.

    .venv/bin/python -m benchmarks.reproduce PAPER [--quick] [--write | --results-dir DIR] [dataset options]

PAPER is one of ``anitescu-hart-2003``, ``mazhar-2014``, ``melanz-2015``, ``pqn-2017`` (the projected
quasi-Newton paper). Each measures what the paper reports, at the paper's own parameters where the
workbench can make them, and writes ``repro-PAPER`` through :func:`workbench.provenance.write_results`
(date, machine, commit, command): with ``--write`` into ``docs/results/repro-PAPER.{json,md}`` and
docs/reproductions.md, else into ``--results-dir`` or a temporary folder (the working tree stays clean). Every row holds the paper's
value with its table, figure or section, the measured value, the criterion both sides use, every
parameter that differs and why, and a verdict computed from the numbers by a declared rule
(:mod:`workbench.report.reproduction`): reproduced, not reproduced, not comparable (with the reason),
or not measured (with the reason).

Datasets are named, not assumed: ``--settled``, ``--unsettled`` and ``--scaling`` (a glob) name the
committed packings of ``problems/datasets`` that the Mazhar et al. 2014 rows use, and their generator
parameters are read from the dataset's metadata: a dataset not made at the paper's protocol (h =
0.0005 s, 8,000 steps, at most 10,000 or 10 solver iterations per step) makes its rows "not comparable",
with the rule's own outcome in the reason.

``--quick`` runs a CI-sized version (smaller scenes and caps; a few seconds to a minute; ``--write``
is refused with it): its rows say what was reduced, so a quick table is never mistaken for the paper's
comparison. Without ``--quick`` each command takes minutes.

This is the dispatcher: each paper is a module of this package (``anitescu_hart_2003``, ``mazhar_2014``,
``melanz_2015``, ``pqn_2017``) with one function that measures it and returns its table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from benchmarks.reproduce.anitescu_hart_2003 import anitescu_hart
from benchmarks.reproduce.mazhar_2014 import mazhar
from benchmarks.reproduce.melanz_2015 import COMPACTION_BED, COMPACTION_DURATION, melanz
from benchmarks.reproduce.pqn_2017 import pqn
from workbench.errors import InputError
from workbench.provenance import RESULTS_DIR, embed, write_results
from workbench.report.reproduction import render_table

#: the page that embeds the tables
DOC = RESULTS_DIR.parent / "reproductions.md"


# --------------------------------------------------------------------------- command line

PAPERS: dict[str, tuple[Callable, str]] = {
    "anitescu-hart-2003": (anitescu_hart, "Anitescu and Hart 2003, Table 1"),
    "mazhar-2014": (mazhar, "Mazhar et al. 2014, sec. 5"),
    "melanz-2015": (melanz, "Melanz et al. 2015, sec. 3"),
    "pqn-2017": (pqn, "the projected quasi-Newton paper"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reproduce", description=__doc__.splitlines()[0])
    parser.add_argument("paper", choices=sorted(PAPERS))
    parser.add_argument("--quick", action="store_true", help="a CI-sized run")
    parser.add_argument("--members", type=int, default=None,
                        help="members (packings of a family, trajectories of a simulation) each row over members is "
                             "measured on (default 10; 3 with --quick; fewer than 10 is stated on the page)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="members measured at once, each in its own process with cores // JOBS threads (default "
                             "1; the rows do not depend on it; melanz-2015 only)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--write", action="store_true",
                       help=f"write repro-PAPER.* into {RESULTS_DIR} and docs/reproductions.md (default: a temporary folder)")
    where.add_argument("--results-dir", type=Path, help="where to write repro-PAPER.* (default: a temporary folder)")
    parser.add_argument("--settled", default="settled-00320", help="dataset of the thoroughly settled packing")
    parser.add_argument("--unsettled", default="unsettled-00320", help="dataset of the poorly settled packing")
    parser.add_argument("--settled-family", default="settled-00064",
                        help="dataset family of the thoroughly settled protocol (Mazhar et al. 2014 sec. 5.1 over members)")
    parser.add_argument("--unsettled-family", default="unsettled-00064",
                        help="dataset family of the poorly settled protocol (members paired with the settled by seed)")
    parser.add_argument("--scaling", default="scaling-*", help="glob of the scaling datasets")
    parser.add_argument("--scaling-tol", type=float, default=1e-6, help="accuracy of the sec. 5.2 solves")
    parser.add_argument("--apgd-cap", type=int, default=20_000, help="APGD iteration cap")
    parser.add_argument("--extra-cap", type=int, default=30_000, help="Lemke's cap for the extra run")
    parser.add_argument("--filling-n", type=int, default=1000, help="spheres of the sec. 3.2 filling test")
    parser.add_argument("--filling-tol", type=float, default=1e-5, help="APGD tolerance in the filling tests")
    parser.add_argument("--filling-sizes", type=int, nargs="+", default=[20, 40, 60, 100, 150, 300],
                        help="sphere counts of the sec. 3.4 filling tests")
    parser.add_argument("--sizes-duration", type=float, default=2.0, help="seconds simulated per sec. 3.4 size")
    parser.add_argument("--compaction-bed", default=COMPACTION_BED,
                        help="committed packing whose settled spheres the sec. 3.3 slab compacts")
    parser.add_argument("--compaction-duration", type=float, default=COMPACTION_DURATION,
                        help="seconds simulated in the sec. 3.3 compaction test")
    args = parser.parse_args(argv)
    members = 1 if args.members is None else args.members
    if min(args.apgd_cap, args.extra_cap, args.filling_n, *args.filling_sizes, members, args.jobs) < 1 or args.sizes_duration <= 1.0 \
            or not 0 < args.scaling_tol < 1 or not 0 < args.filling_tol < 1 or not args.compaction_duration > 0:
        parser.error("caps, sizes, --members, --jobs and --compaction-duration must be positive, --sizes-duration above 1 s, tolerances "
                     "in (0, 1)")
    if args.quick and args.write:
        parser.error("--quick makes a CI-sized table, not the paper's comparison: it is not written into docs/ "
                     "(drop --write, or --quick)")
    folder = RESULTS_DIR if args.write else args.results_dir or Path(tempfile.mkdtemp(prefix="reproduce-"))
    func, _ = PAPERS[args.paper]
    t0 = time.perf_counter()
    try:
        data = func(args)
    except InputError as exc:
        print(f"reproduce: {exc}", file=sys.stderr)
        return 2
    data["seconds"] = round(time.perf_counter() - t0, 1)
    data.setdefault("notes", []).append(f"Measured in {data['seconds']:.0f} s" + (" (--quick)." if args.quick else "."))
    command = "python -m benchmarks.reproduce " + " ".join(argv if argv is not None else sys.argv[1:])
    page = write_results(f"repro-{args.paper}", data, render_table, command=command.strip(), folder=folder)
    print(page.read_text(encoding="utf-8"))
    print(f"written: {page}", file=sys.stderr)
    if args.write and embed(DOC, f"repro-{args.paper}"):
        print(f"embedded in: {DOC}", file=sys.stderr)
    elif not args.write:
        print("docs/ unchanged: add --write to store the table in docs/results and docs/reproductions.md",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
