"""``workbench generate``: write datasets of single time steps from granular packings.

    workbench generate NAME [--out DIR] [--sizes N,N,...] [--set KEY=VALUE ...] [--param KEY=VALUE ...]
                       [--checkpoint-every K] [--checkpoint-minutes M] [--quiet] [--force] [--write]

NAME is one of problems.generator.DATASETS: settled, unsettled (320 spheres, h = 0.0005 s for 4 s, up to
10,000 or 10 iterations per step: Mazhar et al. 2014 section 5.1), scaling (64 ... 2,560 spheres in steps
of 64, section 5.2), filling (1,000 spheres, Melanz et al. 2015 section 3.2), large (30,000 spheres,
over 100,000 contacts, at most 100 iterations per step), scaling-large (4,096 ... 16,000 spheres). Each packing gives NAME-NNNNN.npz (a
workbench problem file, its metadata inside) in DIR (default: problems/datasets, where
``dataset:NAME-NNNNN`` finds it) and its entry (SHA-256 of the arrays, parameters, summary) in
DIR/MANIFEST.json - in problems/datasets, DIR/MANIFEST.local.json unless ``--write``, so that a user's
run leaves every tracked file as it was (git ignores the new files there; a maintainer adds a new
committed dataset with ``--write`` and ``git add -f``); a packing made with the parameters of a committed manifest entry is checked
against it. A file made with the same parameters is kept (so an interrupted series goes on), one
made with others is never overwritten unless ``--force``: the command stops before it runs anything.
Every K steps (default 500), and after M minutes of wall time (default 10), the state is checkpointed
to NAME-NNNNN.checkpoint.npz, atomically; run the same command again to pick up from it (a checkpoint
of other parameters is refused). ``--set`` changes a packing parameter (n, duration, h,
formulation, solver, tol, max_iter, mu, seed, width, layers, nested, spacing, jitter); ``--param``
gives the method (formulation x solver) a parameter, as ``workbench solve --param`` does (those the
solver declares: its threads or device where it has them), recorded among the packing's parameters.
The datasets page (docs/results/datasets.*) is written only with ``--write`` (and only for
problems/datasets): a user's run leaves docs/ alone. Progress (stderr, not with ``--quiet``: a bar on a
terminal, a plain line every few seconds elsewhere), the kinetic energy of each packing and a warning when a packing meant to be settled is
not (see problems.generator.SETTLED_ENERGY) go to stderr, the paths to stdout.

    workbench generate FAMILY --members N [--jobs J] [--out DIR] [--force]

FAMILY is a dataset family of problems.families (a protocol and its members: settled-00064,
unsettled-00064, settled-00320, unsettled-00320 vary the lattice's seed; settled-00320-roundoff,
unsettled-00320-roundoff are round-off twins): members 0 ... N-1 are made as FAMILY-mMM.npz in DIR,
J at a time in spawned processes (default: one per core), each recorded in DIR/MANIFEST.json with its
checksum and its family and member; members already there with the right checksum are kept, so an
interrupted run goes on.
"""

from __future__ import annotations

from argparse import ArgumentTypeError

from workbench.commands._args import add_threads_option, key_value, positive
from workbench.errors import InputError
from workbench.limits import check, check_work


def _sizes(text: str) -> list[int]:
    """Comma-separated sphere counts, each parsed by workbench.numbers.number (whole, positive,
    within the SIZE limit)."""
    from workbench.numbers import number
    if len(text) > 10_000:
        raise ArgumentTypeError(f"{len(text)} characters is too long for a list of sphere counts")
    try:
        sizes = [number(s, "sphere count", int, positive=True) for s in text.split(",") if s.strip()]
        if not sizes:
            raise InputError(f"expected comma-separated sphere counts, got {text!r}")
        check("SIZE", max(sizes), "sphere count")
        from problems.synthetic import sphere_packing_work   # a bed of as many spheres, counted alike
        check_work("sphere counts", sphere_packing_work(max(sizes)))
    except InputError as exc:
        raise ArgumentTypeError(str(exc)) from None
    return sizes


def cmd_generate(args) -> int:
    from problems.families import FAMILIES, generate_family
    from problems.generator import DEFAULT_DIR, generate_dataset

    if args.name in FAMILIES:
        if args.members is None:
            raise InputError(f"{args.name} is a dataset family: give --members N (members 0 ... N-1)")
        if args.set or args.param or args.sizes:
            raise InputError(f"{args.name} is a dataset family: its protocol is fixed (no --set, --param or --sizes); "
                             "a family of other parameters is another family")
        for p in generate_family(args.name, args.members, args.out or DEFAULT_DIR, jobs=args.workers, force=args.force,
                                   tracked=args.write):
            print(p)
        return 0
    if args.members is not None or args.workers is not None:
        raise InputError(f"--members and --jobs are for dataset families ({', '.join(FAMILIES)}), not {args.name!r}")
    overrides = dict(args.set or [])
    if args.param:
        overrides["params"] = dict(args.param)
    from workbench.progress import Progress
    with Progress(f"generate {args.name}", enabled=not args.quiet, bar=False) as phase:  # set-up, writing: not silent
        phase.doing("building, settling and writing the packings")
        paths = generate_dataset(args.name, args.out or DEFAULT_DIR, progress=not args.quiet, sizes=args.sizes,
                                 force=args.force, checkpoint_every=args.checkpoint_every,
                                 checkpoint_minutes=args.checkpoint_minutes, write_page=args.write, **overrides)
    for p in paths:
        print(p)
    return 0


def register(sub) -> None:
    s = sub.add_parser("generate", help="write datasets of time steps from settled granular packings")
    s.add_argument("name", metavar="NAME", help="settled, unsettled, scaling, filling, large, scaling-large, or a "
                   "dataset family (problems.families: settled-00064, unsettled-00064, settled-00320, ...)")
    s.add_argument("--members", type=positive(int), default=None, metavar="N",
                   help="a family's members 0 ... N-1 (those made already, checksum as in the manifest, are kept)")
    s.add_argument("--jobs", dest="workers", type=positive(int), default=None, metavar="J",
                   help="a family's members made by J spawned processes at once (default: one per core)")
    s.add_argument("--out", default=None, help="output folder (default: problems/datasets)")
    s.add_argument("--sizes", type=_sizes, default=None, help="sphere counts, e.g. 64,128,256")
    s.add_argument("--set", action="append", type=key_value, metavar="KEY=VALUE",
                   help="packing parameter (n, duration, h, formulation, solver, tol, max_iter, seed, ...)")
    s.add_argument("--param", action="append", type=key_value, metavar="KEY=VALUE",
                   help="a parameter of the method (formulation x solver), as in workbench solve --param")
    s.add_argument("--checkpoint-every", type=positive(int), default=500, metavar="K",
                   help="write the simulation state every K steps (resume: run the same command again)")
    s.add_argument("--checkpoint-minutes", type=positive(float), default=10.0, metavar="M",
                   help="also write the state after M minutes of wall time since the last checkpoint")
    s.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    s.add_argument("--write", action="store_true",
                   help="also write the datasets page docs/results/datasets.* and record the packings in the "
                        "tracked problems/datasets/MANIFEST.json (only into problems/datasets; from a clean commit "
                        "on a quiet machine)")
    s.add_argument("--force", action="store_true", help="overwrite files that exist (committed datasets included)")
    add_threads_option(s)
    s.set_defaults(func=cmd_generate)
