"""The section ``paper``: each number the papers report (the study's ``[[report.paper]]``) beside what the
study measured for it, with both sides' problem and criterion and whether the two are comparable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from workbench.analysis.stats import first_within
from workbench.report import tables
from workbench.report.data import ReportData
from workbench.report.document import Heading, Table, Text, cell, spread
from workbench.report.reference import References
from workbench.report.sections import section
from workbench.study.results import read_histories

__all__ = []


@section("paper")
def _paper(res: ReportData, out: Path) -> list:
    entries = res.options.get("paper") or []
    if not entries:
        return []
    refs = res.references()
    hist = read_histories(res.store, res.static["key"])
    rows = []
    for e in entries:
        runs = res.runs[res.runs["method"] == e["method"]]
        if e.get("problem"):
            runs = runs[runs["problem"] == e["problem"]]
        elif e.get("tag"):
            runs = runs[runs["tags"].fillna("").str.split(",").apply(lambda tags: e["tag"] in tags)]
        if e["quantity"] == "iterations_to_reference":
            values = [_iterations_to_reference(run, refs, hist, e["rel_tol"]) for run in runs.itertuples()]
        else:
            values = pd.to_numeric(runs[e["quantity"]], errors="coerce") if e["quantity"] in runs else []
        values = pd.Series(values, dtype=float).dropna()
        problems = runs.drop_duplicates("problem")
        made = {p.problem: _generator_params(p.source, res.store) for p in problems.itertuples()}
        rows.append({"what": e["what"], "source": e["source"], "method": res.labels[e["method"]],
                     "paper": e["value"], "paper's problem": e.get("paper_problem") or "not stated",
                     "paper's criterion": e.get("paper_criterion") or "not stated",
                     "measured": spread(float(values.median()), float(values.min()), float(values.max()))
                     if len(values) else "-", "runs": len(values),
                     "this study's problems": "; ".join(_problem_line(p, made[p.problem]) for p in problems.itertuples())
                     or "none",
                     "this study's criterion": _criterion(e, runs, refs),
                     "comparable": _comparable(e, made),
                     "median": float(values.median()) if len(values) else np.nan})
    numbers = pd.DataFrame(rows)
    table = numbers.drop(columns="median").set_index("what")
    return [Heading(1, "Published results beside this study's"),
            Text("Each number the papers report, beside the median (min-max) of what this study measured for it (runs: "
                 "how many runs gave a value; '-' where none did, e.g. data not generated or the method unavailable). "
                 "Both sides' problem and criterion, with its threshold, are given; 'comparable' says whether the two "
                 "numbers measure the same thing: no where the study file says why not or where the measured files "
                 "were generated with other parameters than the paper's (paper_params, checked against the "
                 "dataset's MANIFEST.json), 'not stated' where the study file does not name the paper's problem and "
                 "criterion. Iterations to reference: the first "
                 "iteration whose objective is within rel_tol of the reference objective (section Convergence; never "
                 "the method's own)."),
            Table(table, "Published and measured values.",
                  tables.write_table(table, out, "paper", "Published and measured values", numbers))]


def _generator_params(source: str, store=None) -> dict | None:
    """The parameters a generated packing was made with: its entry in the ``MANIFEST.json`` of its folder
    (problems.generator; the entry's "generator" table, with the settling steps), else the ``NAME.json``
    beside it that older generators wrote; None for a file without either (a scene, another
    simulator's file, a file the manifest does not list).

    Read only from the results folder ``store`` itself (its problems/), the workbench's own read-only
    roots (the committed datasets, the reference data) and the folders the user trusts in
    WORKBENCH_STUDY_ROOTS, as a regular file of at most 4 MiB, no link followed: a row's source in a
    received folder never makes the report open a file elsewhere (or wait on a FIFO)."""
    import os

    from problems.generator import MANIFEST
    from workbench.shared_data import shared_data_dir
    from workbench.sources import dataset_dir, resolve_path
    from workbench.study.spec import ROOTS_ENV

    trusted = [Path(r).expanduser() for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if r]
    roots = [Path(r).resolve() for r in (store.root if store is not None else None, dataset_dir(),
                                         shared_data_dir(), *trusted) if r is not None]
    try:
        data = resolve_path(source).resolve()
    except Exception:  # noqa: BLE001 - a source that is not a file (scene:, generator:) has no parameters
        return None
    manifest = _own_json(data.parent / MANIFEST, roots)
    entry = manifest.get(data.name) if isinstance(manifest, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("generator"), dict):
        return {**entry["generator"], "steps": entry["generator"].get("steps", entry.get("steps"))}
    beside = _own_json(data.with_suffix(".json"), roots)
    if isinstance(beside, dict) and isinstance(beside.get("generator"), dict):
        return {**beside["generator"], "steps": beside["generator"].get("steps",
                                                                         (beside.get("settling") or {}).get("steps"))}
    return None


def _own_json(path: Path, roots: list[Path]):
    """The JSON document at ``path`` when it lies inside one of ``roots`` and is a regular file of at most
    4 MiB (opened without following a link, without waiting on a FIFO), else None."""
    import json
    import os
    import stat

    if not any(r == path.parent or r in path.parents for r in roots):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 4 * 2**20:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def _problem_line(p, made: dict | None) -> str:
    line = f"{p.problem} ({int(p.n_contacts):,} contacts" if pd.notna(p.n_contacts) else f"{p.problem} ("
    if made:
        line += ", " + ", ".join(f"{k} = {cell(made[k])}" for k in ("h", "steps", "max_iter") if made.get(k) is not None)
    return line + ")"


def _criterion(e: dict, runs: pd.DataFrame, refs: References) -> str:
    """What this study's number is, with its threshold."""
    asked = ", ".join(sorted({f"tol {cell(t)}, solved at judged error <= {cell(a if pd.notna(a) else t)}"
                              for t, a in zip(runs["tol"], runs["accept"] if "accept" in runs else runs["tol"])}))
    if e["quantity"] != "iterations_to_reference":
        return f"{e['quantity']} of the runs ({asked or 'no runs'})"
    first = runs.iloc[0] if len(runs) else None
    ref = refs.for_method(first.problem, first.formulation, first.method) if first is not None else None
    against = (f"the reference objective ({ref.method}, judged error {cell(ref.error)})" if ref else "no reference")
    return f"first iteration with |f - f_ref| <= {cell(e['rel_tol'])} |f_ref|, f_ref {against}; runs asked {asked}"


def _comparable(e: dict, made: dict[str, dict | None]) -> str:
    if e.get("not_comparable"):
        return f"no: {e['not_comparable']}"
    if not e.get("paper_problem") or not e.get("paper_criterion"):
        return "not stated: the study file does not give the paper's problem and criterion"
    differ = []
    for key, value in e.get("paper_params") or []:
        for problem, params in made.items():
            if params is None:
                differ.append(f"{problem}: no generator parameters to check {key}")
            elif params.get(key) is None or not np.isclose(float(params[key]), float(value), rtol=1e-9):
                differ.append(f"{problem}: {key} = {cell(params.get(key))} (paper {cell(value)})")
    return f"no: {'; '.join(differ)}" if differ else "yes: the problem and criterion stated above"


def _iterations_to_reference(run, refs: References, hist: pd.DataFrame, rel_tol: float) -> float:
    ref = refs.for_method(run.problem, run.formulation, run.base_method)
    h = hist[hist["key"] == run.key] if len(hist) else hist
    if ref is None or h.empty:
        return float("nan")
    h = h.drop_duplicates("iteration", keep="last")
    return first_within(h["iteration"], h["objective"], ref.objective, rel_tol)
