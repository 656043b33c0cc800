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
from workbench.sources import Source
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
        # how each was made, read only inside the trusted roots and this results folder (Source.metadata)
        made = {p.problem: Source.parse(p.source).metadata(res.store.root) if isinstance(p.source, str) else None
                for p in problems.itertuples()}
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
