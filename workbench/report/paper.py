"""The section ``paper``: each number the papers report (the study's ``[[report.paper]]``) beside what the
study measured for it, with both sides' problem and criterion and whether the two are comparable.

The measured value is taken over the row's problems (e.g. the members of a dataset family, which the
row names by their tag): per problem the median over its repetitions, then the median over problems with
its exact 95 % interval (:func:`workbench.analysis.members.median_interval`; none under 6 problems, said
so). Iterations to the reference objective are "not reached" (inf) on a problem where no iterate came
within rel_tol of it, and not measured (left out, counted) where the run kept no history or the problem
has no reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from workbench.analysis.members import LEVEL, median_interval
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
        values = pd.Series(list(values), index=runs["problem"].to_numpy(), dtype=float)
        measured = values.dropna()
        per_problem = measured.groupby(level=0, sort=False).median()
        problems = runs.drop_duplicates("problem")
        # how each was made, read only inside the trusted roots and this results folder (Source.metadata)
        made = {p.problem: Source.parse(p.source).metadata(res.store.root) if isinstance(p.source, str) else None
                for p in problems.itertuples()}
        rows.append({"what": e["what"], "source": e["source"], "method": res.labels[e["method"]],
                     "paper": e["value"], "paper's problem": e.get("paper_problem") or "not stated",
                     "paper's criterion": e.get("paper_criterion") or "not stated",
                     "measured": _over_problems(per_problem), "runs": len(measured),
                     "runs not measured": len(values) - len(measured),
                     "this study's problems": "; ".join(_problem_line(p, made[p.problem]) for p in problems.itertuples())
                     or "none",
                     "this study's criterion": _criterion(e, runs, refs),
                     "comparable": _comparable(e, made, per_problem),
                     "median": float(np.median(per_problem)) if len(per_problem) else np.nan})
    numbers = pd.DataFrame(rows)
    table = numbers.drop(columns="median").set_index("what")
    return [Heading(1, "Published results beside this study's"),
            Text("Each number the papers report, beside what this study measured for it: per problem the median over "
                 "its repetitions, then the median over the row's problems (the members of a family) with its "
                 f"{LEVEL:.0%} interval (exact, from order statistics; none under 6 problems, said so), or the value "
                 "of the one problem (runs: how many runs gave a value, 'not reached' counted; runs not measured: "
                 "no history or no reference; '-' where none did, e.g. data not generated or the method "
                 "unavailable). "
                 "Both sides' problem and criterion, with its threshold, are given; 'comparable' says whether the two "
                 "numbers measure the same thing: no where the study file says why not or where the measured files "
                 "were generated with other parameters than the paper's (paper_params, checked against the "
                 "dataset's MANIFEST.json), 'not stated' where the study file does not name the paper's problem and "
                 "criterion. Iterations to reference: the first "
                 "iteration whose objective is within rel_tol of the reference objective (section Convergence; never "
                 "the method's own)."),
            Table(table, "Published and measured values.",
                  tables.write_table(table, out, "paper", "Published and measured values", numbers))]


def _over_problems(per_problem: pd.Series) -> str:
    """The median over problems with its interval, in words; '-' when nothing was measured."""
    n = len(per_problem)
    if not n:
        return "-"
    s = median_interval(per_problem.to_numpy())
    fmt = (lambda x: "not reached" if x == np.inf else cell(x))
    reached = int(np.isfinite(per_problem).sum())
    never = f"; not reached on {n - reached} of {n}" if reached < n else ""
    if n == 1:
        return f"{fmt(s['median'])} (1 problem)"
    if not reached:
        return f"not reached on {n} of {n} problems"
    if s["ranks"] is None:
        return (f"{fmt(s['median'])} (median over {n} problems, range {fmt(per_problem.min())}-{fmt(per_problem.max())}; "
                f"no {LEVEL:.0%} interval under 6{never})")
    return f"{fmt(s['median'])} [{fmt(s['low'])}, {fmt(s['high'])}] ({LEVEL:.0%} interval over {n} problems{never})"


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


def _comparable(e: dict, made: dict[str, dict | None], per_problem: pd.Series | None = None) -> str:
    """Whether the paper's number and the measured one (``per_problem``: per problem, the median over
    repetitions) measure the same thing; "no: WHY" otherwise."""
    if e.get("not_comparable"):
        return f"no: {e['not_comparable']}"
    never = 0 if per_problem is None else int(np.isinf(per_problem).sum())
    stopped = [f"the method stopped at its own threshold before its objective came within rel_tol of the reference "
               f"on {never} of {len(per_problem)} problems (the paper counts iterations until it does)"] \
        if e.get("quantity") == "iterations_to_reference" and never else []
    if not e.get("paper_problem") or not e.get("paper_criterion"):
        return "not stated: the study file does not give the paper's problem and criterion"
    differ: dict[str, list[str]] = {}  # what differs -> the problems it differs on
    for key, value in e.get("paper_params") or []:
        for problem, params in made.items():
            if params is None:
                why = f"no generator parameters to check {key}"
            elif params.get(key) is None or not np.isclose(float(params[key]), float(value), rtol=1e-9):
                why = f"{key} = {cell(params.get(key))} (paper {cell(value)})"
            else:
                continue
            differ.setdefault(why, []).append(problem)
    if not differ and not stopped:
        return "yes: the problem and criterion stated above"
    return "no: " + "; ".join(stopped + [f"{why} on {', '.join(p) if len(p) < 3 else f'{len(p)} problems ({p[0]}, ...)'}"
                                         for why, p in differ.items()])


def _iterations_to_reference(run, refs: References, hist: pd.DataFrame, rel_tol: float) -> float:
    ref = refs.for_method(run.problem, run.formulation, run.base_method)
    h = hist[hist["key"] == run.key] if len(hist) else hist
    if ref is None or h.empty:
        return float("nan")  # not measured
    h = h.drop_duplicates("iteration", keep="last")
    hit = first_within(h["iteration"], h["objective"], ref.objective, rel_tol)
    return float("inf") if np.isnan(hit) and h["objective"].notna().any() else hit  # inf: not reached
