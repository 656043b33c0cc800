"""Run a study: plan the grid, skip what is recorded, execute the rest, record each run as it ends.

Every (problem, method, repetition) is one run. Its key is a content hash of the problem's data
hash and name, the method's settings (formulation, solver, tolerances, caps, parameters), the time
limit, the repetition and the workbench version: a re-run of the same study skips every key already
in the results directory (``rerun=True`` executes them again, replacing their rows), an interrupted
study resumes where it stopped, and a changed method or problem gets new keys instead of mixing
with old numbers. Runs that cannot exist (a formulation that needs M and D on a local problem) are
not planned; they are listed in the plan as skipped with the reason ("not applicable" in the
report). ``rerun_failed=True`` executes again only the recorded runs that were not solved.

The study's [reference] adds one dedicated high-accuracy run per (problem, formulation) that is
not among the compared methods (role "reference" in its row); the report takes the reference
objective of each problem from it or from the other methods' runs, never from a method's own.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from workbench.errors import InputError, printable
from workbench.files import PARTIAL
from workbench.sources import Source
from workbench.study.problems import resolve_problems
from workbench.study.plan import plan_record
from workbench.study.record import PlannedRun, record_columns, run_row
from workbench.study.spec import Study, StudyMethod
from workbench.study.store import ResultStore

__all__ = ["PlannedRun", "plan", "plan_references", "select_problems", "run_study", "run_key", "RESULT_FIELDS"]

#: the row's columns that come from the run's record (workbench.study.record.RUN_ROW, origin "record")
RESULT_FIELDS = tuple(c.name for c in record_columns())


def run_key(problem: Source, method: StudyMethod, repetition: int, time_limit: float) -> str:
    """Content hash identifying a run (module docstring)."""
    import workbench
    ident = {"problem": problem.name, "problem_hash": problem.facts.digest, **method.identity(),
             "time_limit": time_limit, "repetition": repetition, "workbench": workbench.__version__}
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:24]


def plan(study: Study, problems: list[Source]) -> tuple[list[PlannedRun], list[dict[str, str]]]:
    """The runs of the grid, and the (problem, method) pairs skipped with why.

    The runs are ordered in rounds: round k holds repetition k of every pair, in an order shuffled per
    round (seeded by the study's name and k, so the same study plans the same order). A pair's
    repetitions therefore run at different times beside different neighbours, never back to back or
    side by side on two workers, and their spread measures the machine's noise instead of hiding it
    (the random interleaving that Google Benchmark uses against run-to-run variance)."""
    pairs, skipped = [], []
    for problem in problems:
        for method in study.methods:
            ok, why = method.method.accepts(problem)
            if not ok:
                skipped.append({"problem": problem.name, "method": method.name, "reason": why})
                continue
            pairs.append((problem, method))
    runs = []
    for rep in range(study.repetitions):
        order = list(pairs)
        random.Random(f"{study.name}:{rep}").shuffle(order)
        runs += [_planned(study, problem, method, rep) for problem, method in order]
    return runs, skipped


def plan_references(study: Study, problems: list[Source]) -> list[PlannedRun]:
    """One dedicated reference run per single-step problem and [reference] formulation it can take."""
    return [_planned(study, p, m, 0, "reference") for p in problems if p.kind != "simulation"
            for m in study.references if m.method.accepts(p)[0]]


def _planned(study: Study, source: Source, method: StudyMethod, repetition: int, role: str = "compared") -> PlannedRun:
    return PlannedRun(source, method, repetition, run_key(source, method, repetition, study.time_limit), study.name,
                      study.time_limit, role)


def select_problems(problems: list[Source], patterns: list[str] | None) -> list[Source]:
    """The problems whose name matches a glob of ``patterns`` (all when None); StudyError when a
    pattern matches none."""
    import fnmatch

    from workbench.study.spec import StudyError

    if not patterns:
        return problems
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(p.name, pattern) for p in problems):
            raise StudyError(f"--problem {pattern!r} matches no problem of the study; problems: "
                             + ", ".join(p.name for p in problems))
    return [p for p in problems if any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns)]


#: what a results folder holds (workbench.study.store); a folder with anything else is not one
_OWN_ENTRIES = {"plan.json", "study.toml", "sessions", "problems", "runs", "histories", "logs", ".lock"}


def _check_own_study(study: Study, store: ResultStore) -> None:
    """Refuse to run ``study`` into a folder that holds another study's results (its plan.json names
    another study: running would replace that study's plan and study file), or that is not a results
    folder at all (entries the workbench does not write, no plan.json)."""
    how = f"to start a new study there, give --out a new folder (default: results/{study.name})"
    if os.path.lexists(store.root / "plan.json"):
        plan = store.read_json("plan.json")
        other = plan.get("study") if isinstance(plan, dict) else None
        if other != study.name:
            raise InputError(f"{store.root}: holds the results of study {str(other)[:80]!r}, not of "
                             f"{study.name!r}; {how}")
        return
    foreign = sorted(e for e in os.listdir(store.root) if e not in _OWN_ENTRIES and not e.endswith(PARTIAL))
    if foreign:
        raise InputError(f"{store.root}: not a results folder of the workbench (it holds {', '.join(foreign[:3])}"
                         f"{', ...' if len(foreign) > 3 else ''} and no plan.json); {how}")


def _task(run: PlannedRun, study: Study) -> dict[str, Any]:
    """What a worker needs for a run; ``preload`` is what a fresh worker imports before its first."""
    preload = {"plugins": [str(p) for p in study.plugins], "methods": [m.method.spec() for m in study.methods]}
    return {"key": run.key, "source": run.source, "method": run.method.method.spec(),
            "device": run.method.method.device, "options": run.method.solve_options(study.time_limit),
            "preload": preload, "hard_limit": study.hard_limit()}


def _row(run: PlannedRun, study: Study, result: dict[str, Any], session: str) -> dict[str, Any]:
    """The stored row of ``run`` (workbench.study.record.RUN_ROW): its plan columns, the worker's answer
    ``result``, the provenance."""
    import workbench
    return run_row(run.columns(), result, {"session": session, "workbench_version": workbench.__version__,
                                  "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                                      timespec="seconds")}, safety_net=study.safety_net)


def run_study(study: Study, out: os.PathLike | str, *, jobs: int = 1, executor: str = "local",
              scheduler: str | None = None, rerun: bool = False, rerun_failed: bool = False,
              problems: list[str] | None = None, progress: bool = True) -> dict[str, Any]:
    """Execute the runs of ``study`` not yet recorded under ``out`` (on the problems whose names
    match the globs ``problems``, all when None); a summary of what happened. The results folder is
    locked meanwhile (ResultStore.locked): a second run on it is refused."""

    store = ResultStore(Path(out).resolve())
    with store.locked():
        return _run_locked(study, store, jobs, executor, scheduler, rerun, rerun_failed, problems, progress)


def _run_locked(study: Study, store: ResultStore, jobs: int, executor: str, scheduler: str | None, rerun: bool,
                rerun_failed: bool, problems: list[str] | None, progress: bool) -> dict[str, Any]:
    """run_study once the results folder is locked (no other run writes there)."""
    from workbench.limits import check
    from workbench.study.executors import run_dask, run_local
    from workbench.study.provenance import provenance
    from workbench.study.results import row_check

    _check_own_study(study, store)
    declared = sum(len(g.sources()) for g in study.groups)
    check("RUNS", declared * (len(study.methods) * study.repetitions + len(study.references)),
          f"the plan ({declared} problems declared x ({len(study.methods)} methods x {study.repetitions} "
          f"repetitions + {len(study.references)} reference runs)), counted before any problem is made")
    store.remove_partial()
    problem_refs = select_problems(resolve_problems(study, store.folder("problems", create=False)), problems)
    check("RUNS", len(problem_refs) * (len(study.methods) * study.repetitions + len(study.references)),
          f"the plan ({len(problem_refs)} problems x ({len(study.methods)} methods x {study.repetitions} "
          f"repetitions + {len(study.references)} reference runs))")
    runs, skipped = plan(study, problem_refs)
    references = plan_references(study, problem_refs)
    now = datetime.datetime.now(datetime.timezone.utc)
    session = f"{now:%Y%m%dT%H%M%SZ}-{os.getpid()}"
    store.write_text("study.toml", study.text)
    store.write_json("plan.json", plan_record(study, problem_refs, runs, skipped, references))
    store.write_json(f"sessions/{session}.json",
                     provenance(session, study.text, sorted({m.solver for m in study.methods}), sys.argv,
                                executor, jobs))
    done = set() if rerun else store.done_keys()
    if rerun_failed:  # a reference run short of its tolerance is not a failure of the comparison
        done -= store.unsolved_keys(row_check) - {r.key for r in references}
    todo = [r for r in runs + references if r.key not in done]
    by_key = {r.key: r for r in todo}
    log = store.log_path()
    tasks = [_task(r, study) for r in todo]
    print(f"{printable(study.name)}: {len(runs)} runs planned (and {len(references)} reference runs), "
          f"{len(runs) + len(references) - len(todo)} already recorded, {len(todo)} to run"
          + (f"; {len(skipped)} (problem, method) pairs skipped" if skipped else ""), file=sys.stderr)
    for group in study.groups:
        if group.missing:
            print(f"{printable(study.name)}: problem group skipped: {printable(group.missing)}", file=sys.stderr)
    results = run_dask(tasks, jobs, log, scheduler) if executor == "dask" else run_local(tasks, jobs, log)
    statuses: Counter = Counter()
    bar = None
    if progress and todo:
        from workbench.progress import Progress
        bar = Progress(study.name, len(todo), "run")
    try:
        for task, result in results:
            run = by_key[task["key"]]
            history = result.get("history")
            if history is not None:
                history = history.assign(problem=run.source.name, method=run.method.name,
                                         repetition=run.repetition)
            store.write_run(_row(run, study, result, session), history)
            statuses[result["status"]] += 1
            if bar is not None:
                bar.update(postfix=", ".join(f"{k}={v}" for k, v in statuses.items() if k != "solved"))
    finally:
        if bar is not None:
            bar.close()
        results.close()
    return summary(store, len(runs) + len(references), len(todo), statuses, len(skipped))


def summary(store: ResultStore, planned: int, executed: int, statuses: Counter, skipped: int) -> dict[str, Any]:
    """What a run of the study did (``statuses``: of the runs executed now, references included) and
    what the results folder holds now, counted as the report and ``load_results`` count: ``recorded``,
    the statuses of the compared runs of the plan; ``references``, those of the reference runs, apart,
    with ``reference_tol`` (the tightest tolerance they were asked for) and ``reference_error`` (the
    worst judged error among them: the references' own accuracy)."""
    import pandas as pd

    from workbench.study.results import current_runs, read_runs

    now = current_runs(read_runs(store), store.read_json("plan.json"), include_reference=True)
    is_ref = (now["role"] == "reference") if "role" in now and len(now) else pd.Series(False, index=now.index)
    refs = now[is_ref]

    def counts(rows) -> dict[str, int]:
        return {str(k): int(v) for k, v in rows["status"].value_counts().sort_index().items()} if len(rows) else {}
    error = pd.to_numeric(refs.get("judged_error"), errors="coerce") if len(refs) else pd.Series(dtype=float)
    tol = pd.to_numeric(refs.get("tol"), errors="coerce") if len(refs) else pd.Series(dtype=float)
    return {"results": str(store.root), "planned": planned, "executed": executed, "statuses": dict(statuses),
            "skipped": skipped, "recorded": counts(now[~is_ref]), "references": counts(refs),
            "reference_error": float(error.max()) if error.notna().any() else None,
            "reference_tol": float(tol.min()) if tol.notna().any() else None}
