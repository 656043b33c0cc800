"""Dataset families: a protocol and a sample of the packings it makes.

A conclusion about a protocol ("APGD needs more iterations on settled packings") is a statement about
every packing the protocol makes, and packings made by one protocol differ by far more than the
methods do (issue 44: two round-off twins of one protocol gave interior-point objectives 80x apart).
So studies and pages name a family, and measure its members:

- the **protocol** is a dataset recipe of :mod:`problems.generator` (``settled``: Mazhar et al. 2014
  section 5.1.1, ``unsettled``: 5.1.2) with the parameters that the family changes (its sphere count);
- the **members** are the packings of that protocol that differ only in what the protocol leaves free:
  the seed of the starting lattice's jitter (``vary = "seed"``: member m has seed m), or the rounding of
  the start (``vary = "roundoff"``: seed 0, and member m > 0 moves every starting coordinate by a uniform
  draw in +-1e-12 R seeded by m, :data:`problems.generator.ROUNDOFF_SCALE`; member 0 is the packing as
  built). Member 0 of a seed family is therefore the protocol's packing of seed 0.

Names. A family is ``PROTOCOL-NNNNN`` (the dataset and its sphere count, e.g. ``settled-00064``; a
round-off family adds ``-roundoff``); its member m is the dataset ``FAMILY-mMM`` (``settled-00064-m03``),
a normal problem file ``FAMILY-mMM.npz`` in the datasets folder (``dataset:settled-00064-m03`` loads
it), with its final state beside it and its entry in the folder's MANIFEST.json: the SHA-256 of its
arrays, the generator parameters, the summary numbers, and ``family``, ``member``, ``protocol``. A
study names the family as a whole with a member count (``family:settled-00064`` with 20 members:
:func:`members`).

``workbench generate FAMILY --members N`` (:func:`generate_family`) makes members 0 ... N-1 in
parallel, each in its own spawned process (not forked: the parent has started numba's OpenMP threads,
which a forked child cannot use), and is resumable: a member whose file is there, made with the
family's parameters, with its manifest checksum equal to the file's arrays, is kept. A member made
again is checked against the committed manifest (:func:`check_member`).
"""

from __future__ import annotations

import multiprocessing
import re
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from problems.generator import COMMITTED_MEMBERS as _COMMITTED_MEMBERS
from workbench.errors import InputError, unknown

__all__ = ["Family", "FAMILIES", "COMMITTED_MEMBERS", "family", "member_name", "parse_member", "members",
           "available", "member_paths", "member_spec", "make_member", "generate_family", "check_member", "is_family"]

#: how a member's name ends: -m and the member index (two digits at least)
_MEMBER = re.compile(r"^(?P<family>[a-z0-9][a-z0-9-]*?)-m(?P<member>\d{2,})$")


@dataclass(frozen=True)
class Family:
    """A protocol (``dataset``: a recipe of problems.generator.DATASETS, with ``overrides`` of its
    PackingSpec fields) and how its members differ (``vary``: "seed" or "roundoff")."""
    name: str
    dataset: str
    summary: str
    overrides: dict = field(default_factory=dict)
    vary: str = "seed"

    def spec(self, member: int):
        """The PackingSpec of member ``member`` (module docstring)."""
        from problems.generator import DATASETS

        if not isinstance(member, int) or isinstance(member, bool) or member < 0:
            raise InputError(f"family {self.name}: a member is a whole number >= 0, got {member!r}")
        (base,) = DATASETS[self.dataset][1]()
        spec = replace(base, **self.overrides)
        return replace(spec, seed=member) if self.vary == "seed" else replace(spec, roundoff=member)


def _sec51(dataset: str, n: int, vary: str = "seed") -> Family:
    """The section 5.1 protocol ``dataset`` at ``n`` spheres (the container's floor sized for the paper's
    five layers, :func:`problems.granular.container_width_for`; at 320 spheres the paper's 16 m)."""
    overrides = {"n": n} if n == 320 else {"n": n, "width": None}
    kind = "thoroughly settled (up to 10,000 iterations per step, tol 1e-6)" if dataset == "settled" else \
        "poorly settled (10 iterations per step)"
    how = "seeds of the lattice's jitter" if vary == "seed" else "round-off twins (starts moved by 1e-12 R)"
    name = f"{dataset}-{n:05d}" + ("-roundoff" if vary == "roundoff" else "")
    return Family(name, dataset, f"{n} spheres, {kind}, 4 s at h = 0.0005 s (Mazhar et al. 2014 section 5.1); "
                                 f"members: {how}", overrides, vary)


#: the families, by name
FAMILIES: dict[str, Family] = {f.name: f for f in (
    _sec51("settled", 64), _sec51("unsettled", 64),
    _sec51("settled", 320), _sec51("unsettled", 320),
    _sec51("settled", 320, "roundoff"), _sec51("unsettled", 320, "roundoff"),
)}

#: members committed in problems/datasets, per family (kept in problems.generator, whose datasets page
#: marks them committed)
COMMITTED_MEMBERS: dict[str, int] = _COMMITTED_MEMBERS


def is_family(name: str) -> bool:
    return name in FAMILIES


def family(name: str) -> Family:
    """The family ``name``; an InputError (one line, the known names) when there is none."""
    if name not in FAMILIES:
        raise unknown("dataset family", name, FAMILIES)
    return FAMILIES[name]


def member_name(name: str, member: int) -> str:
    """The dataset name of member ``member`` of the family ``name`` (``settled-00064-m03``)."""
    family(name).spec(member)              # a bad family or member index fails here
    return f"{name}-m{member:02d}"


def parse_member(dataset: str) -> tuple[Family, int] | None:
    """(family, member index) of a member's dataset name; None when the name is not a member's."""
    m = _MEMBER.match(dataset)
    if m is None or m["family"] not in FAMILIES:
        return None
    return FAMILIES[m["family"]], int(m["member"])


def _folder(folder) -> Path:
    from problems.generator import DEFAULT_DIR

    return Path(folder) if folder is not None else DEFAULT_DIR


def _entry_ok(folder: Path, fam: Family, member: int, entry: dict | None) -> bool:
    """Whether the member's file is there, made with the family's parameters, and its arrays have the
    manifest's checksum."""
    from problems.generator import _same_parameters
    from workbench.io.native import load_problem_native
    from workbench.problem import problem_digest

    path = folder / f"{member_name(fam.name, member)}.npz"
    if entry is None or not path.exists() or entry.get("family") != fam.name or entry.get("member") != member:
        return False
    if not _same_parameters(path, fam.spec(member)):
        return False
    try:
        return problem_digest(load_problem_native(path)) == entry["sha256"]
    except Exception:  # noqa: BLE001 - an unreadable file is not the member
        return False


def available(name: str, folder=None) -> int:
    """How many members 0, 1, ... of the family are in ``folder`` (default: problems/datasets) without a
    gap, each with its manifest entry (checksums are checked by :func:`generate_family`, not here)."""
    from problems.generator import read_manifest

    fam, folder = family(name), _folder(folder)
    manifest = read_manifest(folder)
    k = 0
    while (e := manifest.get(f"{member_name(fam.name, k)}.npz")) is not None and e.get("family") == fam.name \
            and (folder / f"{member_name(fam.name, k)}.npz").exists():
        k += 1
    return k


def members(name: str, n: int, folder=None) -> list[str]:
    """The dataset names of members 0 ... n-1 of the family ``name`` (``dataset:NAME`` loads each): the
    list a study over ``family:NAME`` with ``n`` members runs, the same members for every method. An
    InputError (one line, the command that makes them) when fewer are in ``folder``."""
    fam = family(name)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InputError(f"family {name}: the member count is a whole number >= 1, got {n!r}")
    have = available(name, folder)
    if have < n:
        raise InputError(f"family {name}: {n} members asked, {have} in {_folder(folder)}; make them with "
                         f"workbench generate {name} --members {n}")
    return [member_name(fam.name, m) for m in range(n)]


def member_paths(name: str, n: int, folder=None) -> list[Path]:
    """The problem files of :func:`members` (``FOLDER/FAMILY-mMM.npz``)."""
    return [_folder(folder) / f"{m}.npz" for m in members(name, n, folder)]


def member_spec(dataset: str):
    """The PackingSpec of a member's dataset name; an InputError when it names no member."""
    parsed = parse_member(dataset)
    if parsed is None:
        raise InputError(f"{dataset!r} is not a member of a dataset family (FAMILY-mMM; families: "
                         f"{', '.join(FAMILIES)})")
    fam, m = parsed
    return fam.spec(m)


def make_member(name: str | Family, member: int, folder=None, *, progress: bool = False,
                threads: int | None = None, tracked: bool = False) -> dict:
    """Make member ``member`` of the family ``name`` (a name of FAMILIES, or a Family) in ``folder``: its problem file, its final state
    and its manifest entry (written atomically; the manifest under its lock). Returns the entry (with
    ``seconds``, the wall time of the simulation and writing, which is not stored). ``threads``: the
    compiled kernels' threads of this process (a worker's share of the cores). ``tracked``: in
    problems/datasets, record the entry in the tracked MANIFEST.json (``--write``), else in its local one."""
    import time

    import numpy as np

    from problems import generator as g
    from workbench.files import atomic_output

    if threads is not None:
        from workbench.threads import use
        use(threads)
    fam, folder = (name if isinstance(name, Family) else family(name)), _folder(folder)
    spec = fam.spec(member)
    path = folder / f"{fam.name}-m{member:02d}.npz"
    start = time.perf_counter()
    done = g.run_packing(spec, path, progress=progress)
    sim, records = done
    problem, meta = g.write_packing(sim, records, spec, fam.name, path)
    with atomic_output(g.state_path(path)) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **sim.state())
    entry = {**g.manifest_entry(problem, meta), "family": fam.name, "member": member, "protocol": fam.dataset}
    g._record_manifest(folder, path.name, entry, tracked=tracked)
    g.checkpoint_path(path).unlink(missing_ok=True)
    b = sim.world.bodies
    return {**entry, "settling_ratio": g.settling_ratio(b.kinetic_energy(), b.mass, b.radius),
            "seconds": time.perf_counter() - start}


def check_member(entry: dict, reference: dict | None) -> str:
    """How a member made now compares with the committed manifest's entry of the same file: "matches",
    "differs" (the same parameters, other arrays: not reproduced bit for bit here) or "new"."""
    if reference is None or reference.get("generator") != entry.get("generator"):
        return "new"
    return "matches" if reference["sha256"] == entry["sha256"] else "differs"


def _job(fam: Family, member: int, folder: str, threads: int, tracked: bool) -> dict:
    return make_member(fam, member, folder, threads=threads, tracked=tracked)


def generate_family(name: str, n: int, folder=None, *, jobs: int | None = None, force: bool = False,
                    report: Callable[[str], None] | None = None, tracked: bool = False) -> list[Path]:
    """Make members 0 ... n-1 of the family ``name`` in ``folder`` (default problems/datasets); return
    their paths. Members already there (made with the family's parameters, their arrays with the
    manifest's checksum) are kept unless ``force``; a file of the member's name that is not the member
    is an InputError before anything runs, unless ``force``. The others run in ``jobs`` spawned
    processes (default: one per core), each with cores // jobs compiled threads (one job: in this process,
    on its threads). ``report`` gets one
    line per member (default: stderr). ``tracked``: see :func:`make_member`."""
    from problems.generator import read_manifest
    from workbench.limits import check
    from workbench.threads import cores, per_worker

    fam, folder = family(name), _folder(folder)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InputError(f"family {name}: --members must be a whole number >= 1, got {n!r}")
    check("SIZE", n, f"family {name}: members")
    say = report or (lambda line: print(line, file=sys.stderr))
    folder.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(folder)
    committed = read_manifest(local=False)
    paths = [folder / f"{member_name(name, m)}.npz" for m in range(n)]
    todo = []
    for m, path in enumerate(paths):
        if not force and _entry_ok(folder, fam, m, manifest.get(path.name)):
            say(f"{path.stem}: kept (made with the family's parameters, checksum as in the manifest)")
            continue
        if path.exists() and not force:
            raise InputError(f"{path} exists but is not member {m} of {name} as the manifest records it; remove "
                             "it, give --out DIR for another folder, or --force to make it again")
        todo.append(m)
    if not todo:
        return paths
    workers = max(1, min(jobs or cores(), len(todo)))
    threads = per_worker(workers)

    def done(entry: dict) -> None:
        file = f"{member_name(name, entry['member'])}.npz"
        state = check_member(entry, committed.get(file))
        say(f"{file[:-4]}: {entry['n_contacts']} contacts, kinetic energy {entry['kinetic_energy']:.4g} J "
            f"({entry['settling_ratio']:.2g} of sum m g R), sha256 {entry['sha256'][:16]}..., "
            f"{entry['seconds']:.0f} s" + {"matches": "; matches the committed manifest",
                                           "differs": "; warning: differs from the committed manifest "
                                                      "(not reproduced bit for bit on this machine)",
                                           "new": ""}[state])

    if workers == 1:
        for m in todo:
            done(make_member(fam, m, folder, tracked=tracked))   # this process's threads (--threads)
        return paths
    # spawned, not forked: this process may have started numba's OpenMP threads, and GNU OpenMP terminates
    # a forked child that uses them (the generator's benchmark lost a packing that way)
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_job, fam, m, str(folder), threads, tracked) for m in todo]
        for future in as_completed(futures):
            done(future.result())
    return paths
