"""``workbench generate``: write datasets of single time steps from granular packings.

    workbench generate NAME [--out DIR] [--sizes N,N,...] [--set KEY=VALUE ...] [--quiet]

NAME is one of problems.generator.DATASETS: settled, unsettled (320 spheres after 4 s, Mazhar et al. 2014
section 5.1), scaling (64 ... 2,560 spheres), scaling-large (4,096 ... 16,000 spheres). Each packing
gives NAME-NNNNN.hdf5 (FCLib global) and NAME-NNNNN.json (metadata) in DIR (default: the committed
problems/datasets). A file that exists already (a committed dataset, say) is never overwritten unless
``--force``: the command stops before it runs anything. ``--set`` changes a packing parameter (n,
duration, h, formulation, solver, tol, max_iter, mu, seed, width, layers). Progress, the kinetic
energy of each packing and a warning when a packing meant to be settled is not (see
problems.generator.SETTLED_ENERGY) go to stderr, the written paths to stdout.
"""

from __future__ import annotations

from argparse import ArgumentTypeError

from workbench.commands._args import key_value
from workbench.errors import InputError
from workbench.limits import check


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ArgumentTypeError(f"expected comma-separated sphere counts, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise ArgumentTypeError(f"expected positive sphere counts, got {text!r}")
    try:
        check("SIZE", max(sizes), "sphere count")
    except InputError as exc:
        raise ArgumentTypeError(str(exc)) from None
    return sizes


def cmd_generate(args) -> int:
    from problems.generator import DEFAULT_DIR, generate_dataset

    paths = generate_dataset(args.name, args.out or DEFAULT_DIR, progress=not args.quiet, sizes=args.sizes,
                             force=args.force, **dict(args.set or []))
    for p in paths:
        print(p)
    return 0


def register(sub) -> None:
    s = sub.add_parser("generate", help="write datasets of time steps from settled granular packings")
    s.add_argument("name", metavar="NAME", help="settled, unsettled, scaling, scaling-large")
    s.add_argument("--out", default=None, help="output folder (default: problems/datasets)")
    s.add_argument("--sizes", type=_sizes, default=None, help="sphere counts, e.g. 64,128,256")
    s.add_argument("--set", action="append", type=key_value, metavar="KEY=VALUE",
                   help="packing parameter (n, duration, h, formulation, solver, tol, max_iter, seed, ...)")
    s.add_argument("--quiet", action="store_true", help="no progress on stderr")
    s.add_argument("--force", action="store_true", help="overwrite files that exist (committed datasets included)")
    s.set_defaults(func=cmd_generate)
