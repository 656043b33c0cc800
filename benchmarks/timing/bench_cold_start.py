"""Does a study's verdict depend on whether the compile cache was empty? (issue 22)

    python -m benchmarks.timing.bench_cold_start [--study studies/quickstart.toml] [--jobs 2] [--write]

Clones the repository's committed HEAD into a temporary folder, points ``NUMBA_CACHE_DIR`` at an empty
folder and runs the study there twice in a row with ``workbench run`` (no ``workbench warm-up`` before:
the first run compiles what it needs, in its workers' warm-up, before any clock starts), then compares
the two runs: the status of every (problem, method, repetition), the runs killed while warming up
(status "warm-up"), the runs killed at the hard time limit, and the conclusion's verdict per row (at
equal accuracy: the faster method, or undecided, of each tag, comparison group, measure and level). With ``--commands`` it
also times the README's two commands' other parts in the clone: the virtual environment and its
``pip install -e ".[test]"``, ``workbench warm-up`` on another empty cache, the test suite and its
``-m fast`` subset. The page goes to docs/results/cold-start.md (workbench.provenance.write_results), and
its short view, the durations of the README's two commands (:func:`render_front`, docs/results/front-page.md),
into README.md, with ``--write`` (else the page is only printed); the load average is recorded with it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def _run(clone: Path, study: str, out: Path, cache: Path, jobs: int) -> dict:
    """One ``workbench run`` of the study in the clone; its statuses and conclusion verdicts."""
    from workbench.study import load_results

    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(clone)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "workbench.cli", "run", study, "--out", str(out / "results"),
                           "--report-dir", str(out / "report"), "--jobs", str(jobs), "--no-progress"],
                          cwd=clone, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"workbench run failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    runs = load_results(out / "results")
    statuses = {f"{r.problem} | {r.method} | {r.repetition}": r.status for r in runs.itertuples()}
    killed = runs["message"].fillna("").str.contains("hard time limit")
    conclusion = pd.read_csv(out / "report" / "tables" / "conclusion.csv", index_col=0)
    # the headline at equal accuracy: one verdict per tag, class, measure and level, in time and iterations
    # the verdict alone (who is named, or undecided), not the measured ratio and interval that follow it
    verdicts = {f"{tag} | {row['compared']} | {row['measure']} | {row['level']} | {kind}":
                 str(row[f"conclusion ({kind})"]).split(" (median ratio", 1)[0]
                 for tag, row in conclusion.iterrows() for kind in ("time", "iterations")}
    return {"seconds": round(seconds, 1), "statuses": statuses,
            "counts": runs["status"].value_counts().to_dict(), "killed": int(killed.sum()),
            "verdicts": verdicts, "cache_files": sum(1 for _ in cache.rglob("*.nbi")),
            "load": " ".join(f"{x:.1f}" for x in os.getloadavg())}


#: the README's test command (after ``python -m``): two pytest-xdist workers, each test file whole on one worker
#: (its module-scoped fixtures built once); and the marker of its fast subset
TESTS = ("pytest", "-q", "-n", "2", "--dist", "loadfile")
FAST = ("-m", "fast")


def _timed(argv: list[str], clone: Path, env: dict) -> float:
    """Seconds one command of the README takes in the clone (it must succeed)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return round(time.perf_counter() - start, 1)


def _changed_files(clone: Path) -> list[str]:
    """``git status --porcelain`` of the clone, untracked files included: what the commands run in it left
    behind outside the ignored folders (a user's run must touch no tracked file and leave no stray one)."""
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone,
                         capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def _commands(clone: Path, tmp: Path) -> dict:
    """The README's two commands, part by part, in the clone: install, warm-up (empty cache), tests."""
    venv = clone / ".venv"
    from workbench.shared_data import ENV, shared_data_dir

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "warm-up-cache")}
    env.pop("PYTHONPATH", None)
    shared = shared_data_dir()   # the clone lies in a temporary folder: the suite reads the reference data as CI does
    if shared is not None:
        env[ENV] = str(shared)
    times = {"install": _timed([sys.executable, "-m", "venv", str(venv)], clone, env)}
    times["install"] += _timed([str(venv / "bin" / "pip"), "install", "-q", "-e", ".[test]"], clone, env)
    times["warm_up"] = _timed([str(venv / "bin" / "workbench"), "warm-up", "--quiet"], clone, env)
    python = str(venv / "bin" / "python")
    times["tests"] = _timed([python, "-m", *TESTS, "-p", "no:cacheprovider"], clone, env)
    times["tests_fast"] = _timed([python, "-m", *TESTS, *FAST, "-p", "no:cacheprovider"], clone, env)
    return times


#: the README's durations, in its order: (what, key in data["commands"], or the study run's "cold"/"warm")
FRONT = (("install (`python3 -m venv .venv && .venv/bin/pip install -e \".[test]\"`)", "install"),
         ("`workbench warm-up` on an empty compile cache", "warm_up"),
         ("`workbench run studies/quickstart.toml --jobs 2` with the compile cache filled (a second run)", "warm"),
         ("the same run on an empty cache (no warm-up first)", "cold"),
         (f"the test suite (`python -m {' '.join(TESTS)}`)", "tests"),
         (f"its fast subset (`python -m {' '.join(TESTS + FAST)}`)", "tests_fast"))


def render_front(data: dict) -> str:
    """The README's short view of the page: how long each part of its two commands took."""
    measured = data.get("commands", {})
    lines = ["| part of the README's commands | wall time [s] |", "|---|---|"]
    for what, key in FRONT:
        value = data[key]["seconds"] if key in ("cold", "warm") else measured.get(key, "not yet measured")
        lines.append(f"| {what} | {value} |")
    return "\n".join(lines) + "\n"


def compare(cold: dict, warm: dict) -> dict:
    """The keys whose status or verdict differ between the two runs."""
    keys = sorted(set(cold["statuses"]) | set(warm["statuses"]))
    status_diff = [[k, cold["statuses"].get(k, "-"), warm["statuses"].get(k, "-")] for k in keys
                   if cold["statuses"].get(k) != warm["statuses"].get(k)]
    rows = sorted(set(cold["verdicts"]) | set(warm["verdicts"]))
    verdict_diff = [[k, cold["verdicts"].get(k, "-"), warm["verdicts"].get(k, "-")] for k in rows
                    if cold["verdicts"].get(k) != warm["verdicts"].get(k)]
    return {"runs": len(keys), "status_diff": status_diff, "rows": len(rows), "verdict_diff": verdict_diff}


def _escape(key: str) -> str:
    return key.replace("|", "\\|")


def render(data: dict) -> str:
    """The page: the two runs side by side, then every difference."""
    cold, warm, diff = data["cold"], data["warm"], data["diff"]
    lines = [f"Study `{data['study']}`, `--jobs {data['jobs']}`, run twice in a row from a fresh clone with "
             "`NUMBA_CACHE_DIR` pointing at an empty folder (no `workbench warm-up` before the first run).", "",
             "| | first run (empty cache) | second run |", "|---|---|---|"]
    for what, key in (("wall time of `workbench run` [s]", "seconds"), ("runs killed at the hard time limit", "killed"),
                      ("compile-cache index files after the run", "cache_files"), ("load average after the run", "load")):
        lines.append(f"| {what} | {cold[key]} | {warm[key]} |")
    for status in sorted(set(cold["counts"]) | set(warm["counts"]) | {"warm-up"}):
        lines.append(f"| runs with status {status} | {cold['counts'].get(status, 0)} | {warm['counts'].get(status, 0)} |")
    # a page measured before the equal-accuracy headline recorded one verdict per tag and group
    kind = ("at equal accuracy, time and iterations" if data.get("verdicts") == "equal accuracy"
            else "fastest method or tie within noise")
    lines += ["", f"Statuses equal in {diff['runs'] - len(diff['status_diff'])} of {diff['runs']} runs; conclusion "
                  f"verdicts ({kind}) equal in {diff['rows'] - len(diff['verdict_diff'])} "
                  f"of {diff['rows']} rows."]
    if "git_status" in data:   # a page measured before the check was added has none
        what = "the two runs" + (" and the README's commands" if data.get("commands") else "")
        changed = data["git_status"]
        lines += ["", f"`git status` in the clone after {what}: "
                  + ("clean." if not changed else f"{len(changed)} changed or new files: "
                     + ", ".join(f"`{line}`" for line in changed[:20]) + ".")]
    if diff["status_diff"]:
        lines += ["", "| problem \\| method \\| repetition | first run | second run |", "|---|---|---|"]
        lines += [f"| {_escape(k)} | {a} | {b} |" for k, a, b in diff["status_diff"]]
    if diff["verdict_diff"]:
        lines += ["", "| tag \\| compared | first run | second run |", "|---|---|---|"]
        lines += [f"| {_escape(k)} | {a} | {b} |" for k, a, b in diff["verdict_diff"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", default="studies/quickstart.toml", help="study file, relative to the repository (or an absolute path)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes of each run (default 2)")
    p.add_argument("--commands", action="store_true",
                   help="also time the install, warm-up and test parts of the README's commands (a fresh venv: minutes)")
    p.add_argument("--write", action="store_true", help="also write the docs/results page (default: print only)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        clone, cache = tmp / "clone", tmp / "numba-cache"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        cache.mkdir()
        cold = _run(clone, args.study, tmp / "cold", cache, args.jobs)
        warm = _run(clone, args.study, tmp / "warm", cache, args.jobs)
        commands = _commands(clone, tmp) if args.commands else {}
        changed = _changed_files(clone)
    data = {"study": args.study, "jobs": args.jobs, "cold": cold, "warm": warm, "diff": compare(cold, warm),
            "verdicts": "equal accuracy", "git_status": changed}
    if commands:
        data["commands"] = commands
    print(render(data))
    print(render_front(data))
    if args.write:
        from workbench.provenance import ROOT as DOCS_ROOT, embed, write_results, write_view

        print(write_results("cold-start", data, render, command="python -m benchmarks.timing.bench_cold_start "
                            + " ".join(argv if argv is not None else sys.argv[1:])))
        write_view("front-page", "cold-start", render_front)
        embed(DOCS_ROOT / "README.md", "front-page")   # the README's durations, beside its two commands
        embed(DOCS_ROOT / "docs" / "benchmarks.md", "cold-start")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
