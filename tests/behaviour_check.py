"""Behaviour check of a change that promises none (issue 43): record, with the code of one checkout, the
statuses of the conformance corpus and the verdicts of the reproduction pages, then compare two
records (before / after).

    WORKBENCH_SHARED_DATA=/path/to/shared/data  # where the checkout has no ../shared/data
    PYTHONPATH=BASE python tests/behaviour_check.py record before.json [--max-contacts 100] [--problems N]
    PYTHONPATH=BASE python tests/behaviour_check.py record rest.json --min-contacts 100 --max-contacts 1000000
    PYTHONPATH=HEAD python tests/behaviour_check.py record after.json  [same options]
    python tests/behaviour_check.py compare before.json after.json

What it records, with the workbench the interpreter imports (its checkout's ``workbench`` package, its
studies and its docs/results pages):

* ``conformance``: the status of every run of the fast conformance subset, built from
  studies/conformance.toml as tests/test_conformance.py builds it (the shared reference problems with at
  most ``--max-contacts`` contacts (and more than ``--min-contacts``, to record the rest of the corpus
  apart), the ``--problems`` smallest of them when given, default preset, a
  5 s time limit, ``--jobs`` workers), run by ``workbench run`` into a temporary folder and read back
  with workbench.study.results.read_runs; keyed by problem, method and tolerance;
* ``studies``: the same for each ``--study FILE`` (studies/quickstart.toml, say), run as it is;
* ``verdicts``: the verdict of every row of docs/results/repro-*.json, computed by
  workbench.report.reproduction.verdict from the stored numbers (the pages are not measured again).

Each run's message is recorded too (``messages``, same keys, where not empty): the judge's reason for
refusing a point (workbench.judging.contradiction, "not solved: ...") is in it.

``compare`` lists every key whose status or verdict differs, and the keys present on one side only,
each with the after side's message where it has one (so a changed status names its reason); a
difference where either side is ``timeout`` is listed apart as load-sensitive (a run near its time
limit on a loaded machine), not counted as a change. Exit code 0: no change; 1: changes; 2: bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

TIME_LIMIT = 5.0
MAX_CONTACTS = 100
#: statuses that depend on the machine's load (a run at its time limit)
LOAD_SENSITIVE = ("timeout",)


def _root() -> Path:
    """The checkout whose workbench is imported (its studies and docs are the ones recorded)."""
    import workbench
    return Path(workbench.__file__).resolve().parents[1]


def fast_study(root: Path, folder: Path, max_contacts: int, problems: int | None, min_contacts: int = -1) -> Path:
    """studies/conformance.toml with the small shared problems, one preset and the short limit (as
    tests/test_conformance.py builds it)."""
    from workbench.io import load_problem
    from workbench.shared_data import shared_data_dir

    shared = shared_data_dir()
    if shared is None:
        raise SystemExit("behaviour_check: the shared reference data is absent (../shared/data or "
                         "WORKBENCH_SHARED_DATA)")
    doc = (root / "studies" / "conformance.toml").read_text(encoding="utf-8")
    head, sep, methods = doc.partition('[methods."')
    sized = sorted((load_problem(p).n_contacts, str(p)) for p in sorted(Path(shared).glob("*/*"))
                   if p.suffix in (".hdf5", ".dat"))
    files = [p for n, p in sized if min_contacts < n <= max_contacts][:problems]
    study = tomllib.loads(head)["study"]
    lines = ["[study]", 'name = "conformance-fast"', f"time_limit = {TIME_LIMIT}", 'tolerance = "default"',
             "histories = false", f"repetitions = {study['repetitions']}", "", "[[problems]]",
             "files = [" + ", ".join(json.dumps(p) for p in files) + "]", ""]
    path = folder / "conformance-fast.toml"
    path.write_text("\n".join(lines) + sep + methods, encoding="utf-8")
    return path


def run_statuses(study: Path, out: Path, jobs: int, root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """``workbench run STUDY`` into ``out``; every run's status and (where not empty) its message, keyed
    "problem | method | tolerance | rep"."""
    from workbench.study.results import read_runs
    from workbench.study.store import ResultStore

    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "run", str(study), "--out", str(out), "--jobs",
                           str(jobs), "--no-report", "--no-progress"], cwd=out.parent, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"behaviour_check: workbench run {study.name} exited {done.returncode}: "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    runs = read_runs(ResultStore(out))
    keys = [f"{r.problem} | {r.method} | {r.tolerance} | {r.repetition}" for r in runs.itertuples(index=False)]
    messages = runs["message"].fillna("").astype(str) if "message" in runs else [""] * len(keys)
    return (dict(zip(keys, runs["status"].astype(str))),
            {key: " ".join(m.split()) for key, m in zip(keys, messages) if m.strip()})


def verdicts(root: Path) -> dict[str, str]:
    """The verdict of every row of the reproduction pages, keyed "page | row index | source | quantity"."""
    from workbench.report.reproduction import verdict

    out = {}
    for page in sorted((root / "docs" / "results").glob("repro-*.json")):
        for i, row in enumerate(json.loads(page.read_text(encoding="utf-8"))["data"]["rows"]):
            out[f"{page.stem} | {i} | {row.get('source')} | {row.get('quantity')}"] = verdict(row)[0]
    return out


def record(args) -> int:
    root = _root()
    t0 = time.monotonic()
    data: dict = {"root": str(root), "verdicts": verdicts(root), "conformance": {}, "studies": {}, "messages": {}}
    with tempfile.TemporaryDirectory(prefix="behaviour-") as tmp:
        tmp = Path(tmp)
        if not args.no_conformance:
            study = fast_study(root, tmp, args.max_contacts, args.problems, args.min_contacts)
            data["conformance"], data["messages"]["conformance"] = run_statuses(study, tmp / "conformance",
                                                                                args.jobs, root)
        for i, study in enumerate(args.study):
            name = Path(study).name
            data["studies"][name], data["messages"][name] = run_statuses(Path(study).resolve(), tmp / f"study-{i}",
                                                                         args.jobs, root)
    data["options"] = {"max_contacts": args.max_contacts, "problems": args.problems, "jobs": args.jobs,
                       "time_limit": TIME_LIMIT, "studies": [Path(s).name for s in args.study]}
    if args.min_contacts >= 0:    # named only when given, so records of the default subset compare as before
        data["options"]["min_contacts"] = args.min_contacts
    data["seconds"] = round(time.monotonic() - t0, 1)
    Path(args.out).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(data['conformance'])} conformance runs, {sum(map(len, data['studies'].values()))} study runs, "
          f"{len(data['verdicts'])} verdicts recorded in {data['seconds']:.0f} s: {args.out}")
    return 0


def differences(before: dict[str, str], after: dict[str, str],
                messages: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """(changes, load-sensitive changes) between two keyed tables, one line each, with the after side's
    message of the key (``messages``) where it has one."""
    changed, loaded = [], []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, "(absent)"), after.get(key, "(absent)")
        if a != b:
            why = (messages or {}).get(key)
            line = f"{key}: {a} -> {b}" + (f" [{why}]" if why else "")
            (loaded if a in LOAD_SENSITIVE or b in LOAD_SENSITIVE else changed).append(line)
    return changed, loaded


def compare(args) -> int:
    try:
        old, new = (json.loads(Path(p).read_text(encoding="utf-8")) for p in (args.before, args.after))
    except (OSError, ValueError) as exc:
        print(f"behaviour_check: {exc}", file=sys.stderr)
        return 2
    if old.get("options") != new.get("options"):
        print(f"note: the records were made with different options: {old.get('options')} / {new.get('options')}")
    said = new.get("messages", {})    # records made before messages were recorded have none
    tables = [("verdicts", old["verdicts"], new["verdicts"], {}),
              ("conformance statuses", old["conformance"], new["conformance"], said.get("conformance", {}))]
    tables += [(f"{name} statuses", old["studies"].get(name, {}), new["studies"].get(name, {}), said.get(name, {}))
               for name in sorted(set(old["studies"]) | set(new["studies"]))]
    changes = 0
    for name, a, b, messages in tables:
        changed, loaded = differences(a, b, messages)
        changes += len(changed)
        print(f"{name}: {len(b)} compared, {len(changed)} changed, {len(loaded)} load-sensitive (timeout on a side)")
        for line in changed:
            print(f"  CHANGED {line}")
        for line in loaded:
            print(f"  load-sensitive {line}")
    print("no change" if not changes else f"{changes} changes")
    return 1 if changes else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record statuses and verdicts with the workbench on PYTHONPATH")
    rec.add_argument("out")
    rec.add_argument("--max-contacts", type=int, default=MAX_CONTACTS, help="largest conformance problem (contacts)")
    rec.add_argument("--min-contacts", type=int, default=-1,
                     help="only problems with more contacts than this (default: all up to --max-contacts)")
    rec.add_argument("--problems", type=int, default=None, help="only the N smallest conformance problems")
    rec.add_argument("--jobs", type=int, default=2)
    rec.add_argument("--no-conformance", action="store_true", help="verdicts (and --study) only")
    rec.add_argument("--study", action="append", default=[], help="a study file to record as it is (repeatable)")
    cmp_ = sub.add_parser("compare", help="compare two records")
    cmp_.add_argument("before")
    cmp_.add_argument("after")
    args = ap.parse_args(argv)
    return record(args) if args.command == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
