"""The report of a study's results: ``index.md`` and ``index.html`` with PNG and SVG figures and CSV +
LaTeX tables, written from a results directory alone (``workbench report RESULTS_DIR``).

Every number follows one accounting rule (:mod:`workbench.report.accounting`), stated at the top.
Sections, chosen and ordered by the study's ``[report] sections``:

- ``summary``: per acceptance threshold, qpbenchmark's summary: success rate, shifted geometric
  mean of time (median, with the range over repetitions) and of the judged error, each relative to
  the best; which methods are within noise of each other; success rate per tag.
- ``conclusion`` (always; after the summary unless placed): per tag and threshold, the fastest
  method, its ratio to the next with spread, success rates and caveats
  (:mod:`workbench.report.conclusion`).
- ``paper``: the numbers the papers report (the study's ``[[report.paper]]``) beside the measured ones.
- ``tables``: problem x method tables, median (min-max) over repetitions: status, objective,
  iterations, times, residuals, and the time to within ``[report] target`` of the reference objective.
- ``convergence``: the reference of each problem (:mod:`workbench.report.reference`), and per problem
  the median curves with min-max bands against iteration and time (Mazhar et al. 2014 Figs. 1-4).
- ``scaling``: time and iterations against contacts with fitted log-log slopes, within each series
  the study declares (Mazhar et al. 2014 Fig. 5); simulations swept over sizes (Melanz et al. 2015 Fig. 11).
- ``profiles``: Dolan-More performance profiles of time and of iterations.
- ``timeseries``: simulations' per-step quantities against time, analytic curves dashed.

Then always: known limitations, machine and versions, methods, the study file. Only rows of the
current plan are reported (:func:`workbench.study.results.load_results`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from workbench import plot
from workbench.report import tables
from workbench.report.accounting import (RESOLUTION, RULE, comparison_groups, pair_table, profile_values, split_handovers,
                                         summarise, warm_up_runs)
from workbench.report.conclusion import conclusion, within_noise
from workbench.report.document import Code, Figure, Heading, Table, Text, cell, spread, write_pages
from workbench.report.reference import References
from workbench.report.stats import first_within, performance_profile
from workbench.solvers.base import handover_label
from workbench.study.results import current_runs, read_histories
from workbench.study.store import ResultStore

__all__ = ["write_report", "read_report_data", "ReportData"]

#: problem x method tables: (run column, file name, caption)
_TABLES = (("objective", "objective", "Objective of the formulation at the returned point"),
           ("iterations", "iterations", "Iterations"),
           ("build_seconds", "build_seconds", "Build time [s] (model and compilation)"),
           ("solve_seconds", "solve_seconds", "Solve time [s]"),
           ("judged_error", "judged_error", "Judged error (relaxed error, or Siconos error for exact formulations)"),
           ("siconos_error", "siconos_error", "Siconos error (exact Coulomb natural map)"),
           ("ccp_residual", "ccp_residual", "CCP residual (Melanz et al. 2015 eq. 39)"),
           ("complementarity", "complementarity", "Complementarity max |gamma_n u_n| (Melanz et al. 2015 eq. 8; simulations: "
                                                  "the largest over steps)"),
           ("analytic_error", "analytic_error", "Simulations: largest deviation of a tracked velocity from the "
                                                "analytic solution [m/s]"))


@dataclass
class ReportData:
    """A results directory as the report reads it: the plan, the compared runs, the dedicated
    reference runs, and the pairs under the accounting rule. ``runs`` and ``plan`` have every method
    that handed over split into the method alone and the composite (accounting.split_handovers);
    ``recorded`` holds the runs as recorded."""
    root: Path
    plan: dict
    runs: pd.DataFrame
    recorded: pd.DataFrame
    reference_runs: pd.DataFrame
    stale: int
    store: ResultStore

    @property
    def methods(self) -> list[str]:
        return [m["method"] for m in self.plan["methods"]]

    @property
    def labels(self) -> dict[str, str]:
        return {m["method"]: m["label"] for m in self.plan["methods"] + self.plan.get("references", [])}

    @property
    def base(self) -> dict[str, str]:
        """Each method's own method: a composite's is the method that handed over."""
        return dict(zip(self.runs["method"], self.runs["base_method"])) if len(self.runs) else {}

    @property
    def problems(self) -> list[str]:
        return [p["problem"] for p in self.plan["problems"]]

    @property
    def options(self) -> dict:
        return self.plan["report"]

    @property
    def time_column(self) -> str:
        return "total_seconds" if self.options["time"] == "total" else "solve_seconds"

    @property
    def time_label(self) -> str:
        return "build + solve time" if self.options["time"] == "total" else "solve time"

    @property
    def static(self) -> pd.DataFrame:
        """The runs of single time-step problems (not simulations)."""
        return self.runs[self.runs["kind"] != "simulation"]

    @property
    def skipped(self) -> set[tuple[str, str]]:
        return {(s["problem"], s["method"]) for s in self.plan["skipped"]}

    def pairs(self) -> pd.DataFrame:
        return pair_table(self.runs, self.plan["problems"], self.plan["methods"], self.skipped, self.time_column,
                          self.plan["time_limit"])

    def references(self) -> References:
        """From the runs as recorded (a composite is not another method: look references up by the
        run's base_method)."""
        static = self.recorded[self.recorded["kind"] != "simulation"] if len(self.recorded) else self.recorded
        both = pd.concat([static, self.reference_runs], ignore_index=True) if len(self.reference_runs) \
            else static
        return References(both, self.options.get("reference_method"))


def read_report_data(results_dir) -> ReportData:
    """Read a results directory (InputError when it is not one)."""
    from workbench.report.plan_check import check_plan
    store = ResultStore(results_dir)
    plan = check_plan(store.read_json("plan.json"), store.root)
    every = store.read_runs()
    recorded = current_runs(every, plan, include_reference=False)
    runs, plan = split_handovers(recorded, plan)
    with_refs = current_runs(every, plan, include_reference=True)
    refs = with_refs[with_refs["role"] == "reference"] if len(with_refs) else with_refs
    return ReportData(root=store.root, plan=plan, runs=runs, recorded=recorded, reference_runs=refs,
                      stale=len(every) - len(with_refs), store=store)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def _figure(path: str, caption: str, files: dict[str, str]) -> Figure:
    folder = path.rsplit("/", 1)[0]
    return Figure(path, caption, {k: f"{folder}/{v}" for k, v in files.items()})


# --------------------------------------------------------------------------- sections

def _header(res: ReportData) -> list:
    plan, runs = res.plan, res.recorded
    blocks = [Text(plan["description"])] if plan.get("description") else []
    planned = len(plan["runs"])
    text = (f"{len(runs)} of {planned} planned runs recorded ({len(plan['problems'])} problems x "
            f"{len({res.base.get(m['method'], m['method']) for m in plan['methods']})} methods x "
            f"{plan['repetitions']} repetition(s); time limit "
            f"{plan['time_limit']:g} s per run).")
    if plan.get("reference_runs"):
        text += (f" {len(res.reference_runs)} of {len(plan['reference_runs'])} dedicated reference runs recorded "
                 "(not compared; see Convergence).")
    if len(runs) < planned:
        text += " The study is incomplete: run it again to finish (recorded runs are kept)."
    if res.stale:
        text += f" {res.stale} rows from earlier versions of the study are not reported."
    for missing in plan.get("missing", []):
        text += f" A problem group was skipped: {missing}."
    if plan["skipped"]:
        text += (f" {len(plan['skipped'])} (problem, method) pairs are not applicable: the formulation cannot "
                 "take the problem (e.g. primal on a local problem).")
    blocks += [Text(text), Text(RULE)]
    if len(runs):
        counts = runs["status"].value_counts()
        blocks.append(Text("Statuses: " + ", ".join(f"{s} {n}" for s, n in counts.items()) + ". A run is "
                           "solved when the workbench's own error measure of the impulses it returned is "
                           "within the method's acceptance threshold; solver claims are recorded only."))
        handed = runs[runs["handover"] != ""] if "handover" in runs else runs.iloc[:0]
        if len(handed):
            kinds = ", ".join(f"{label} ({n} runs)" for label, n in handed["handover"].value_counts().items())
            blocks.append(Text(f"Hand-overs: {len(handed)} runs were finished by another method: {kinds}. Each "
                               "such method is reported alone (what it reached at the hand-over) and, as a row of "
                               "its own, with its hand-over (the run as returned)."))
    return blocks


def _summary_table(table: pd.DataFrame, time_label: str) -> pd.DataFrame:
    shown = pd.DataFrame({
        "problems": table["problems"], "not applicable": table["not applicable"], "solved %": table["solved %"],
        "runs solved": table["runs solved"],
        f"sgm {time_label} [s]": [spread(m, lo, hi) for m, lo, hi in
                                  zip(table["sgm time [s]"], table["sgm time low"], table["sgm time high"])],
        "time / best": table["time / best"], "sgm judged error": table["sgm error"],
        "error / best": table["error / best"], "rank": table["rank"]})
    shown.index = table["label"]
    shown.index.name = "method"
    return shown


def _summary(res: ReportData, out: Path) -> list:
    o = res.options
    pairs = res.pairs()
    blocks = [Heading(1, "Summary"),
              Text(f"qpbenchmark's summary per problem class (relaxed, exact, LCP) and acceptance threshold. "
                   f"Success rate: % of the problems the method can take that it solved. On the common problems "
                   f"(those every method of the table can take): the "
                   f"shifted geometric mean of the {res.time_label} (shift {o['shift']:g} s; in brackets the interquartile "
                   f"range of the same mean taken over each repetition alone) and of the judged error (shift: the "
                   f"threshold; a run that returned no point counts as 1), each also divided by the best method's. "
                   f"Rank: by time.")]
    for group in comparison_groups(res.plan["methods"]):
        methods, threshold = list(group.methods), group.threshold
        table, common = summarise(pairs, methods, o["shift"], threshold)
        name = f"summary_{group.slug}"
        shown = _summary_table(table, res.time_label)
        presets = ", ".join(dict.fromkeys(m["tolerance"] for m in methods))
        blocks.append(Table(shown, f"{group.label.capitalize()} (tolerance presets: {presets}); {len(common)} "
                                   "common problem(s).",
                            tables.write_table(shown, out, name, f"Summary, {group.label}",
                                               numbers=table.reset_index())))
        ranked = table[table["rank"].notna()].sort_values("rank")
        overlaps = [f"{a['label']} and {b['label']}" for i, (_, a) in enumerate(ranked.iterrows())
                    for _, b in list(ranked.iterrows())[i + 1:] if within_noise(a, b, o["shift"])]
        if len(ranked) > 1:
            blocks.append(Text(f"Within noise (the ranges of the mean time in brackets overlap, or their gap is "
                               f"under {RESOLUTION:.0%} of the times plus the shift): "
                               + ("; ".join(overlaps) if overlaps else "no two methods") + "."))
    by_tag = _tag_success(pairs, res)
    if by_tag is not None:
        blocks.append(Table(by_tag, "Success rate per tag (% of the problems of the tag the method can take).",
                            tables.write_table(by_tag, out, "success_by_tag", "Success rate per tag")))
    return blocks


def _tag_success(pairs: pd.DataFrame, res: ReportData) -> pd.DataFrame | None:
    tagged = pairs[pairs["applicable"]].explode("tags")
    tagged = tagged[tagged["tags"].notna()]
    if tagged.empty:
        return None
    table = tagged.groupby(["tags", "method"])["solved"].mean().mul(100).unstack("method")
    table = table.reindex(columns=[m for m in res.methods if m in table.columns])
    table.columns = [res.labels[m] for m in table.columns]
    table.index.name = "tag"
    return table


def _conclusion(res: ReportData, out: Path) -> list:
    table, caveats = conclusion(res.pairs(), res.plan["methods"], res.options["shift"])
    blocks = [Heading(1, "Conclusion"),
              Text("Written from the numbers under the accounting rule: per group of problems (tag), problem class "
                   "and acceptance threshold, the fastest method by the shifted geometric mean of time on the "
                   "problems all its methods can take (in brackets: the interquartile range of the same mean taken "
                   "over each repetition alone), the next one and their ratio (its range from those means), whether the two "
                   f"are within noise (ranges that overlap, or a gap under {RESOLUTION:.0%} of the times plus the "
                   "shift), and each method's success rate with the number of problems it can take. When methods "
                   "are within noise of the fastest, no fastest is named: the cell reads \"tie within noise\" "
                   "with all of them, in the study's order."),
              Table(table, "Conclusion.", tables.write_table(table, out, "conclusion", "Conclusion"))]
    if caveats:
        blocks += [Text("Caveats:")] + [Text(f"- {c}") for c in caveats]
    return blocks


def _tables(res: ReportData, out: Path) -> list:
    blocks = [Heading(1, "Results per problem"),
              Text("Median (min-max) over repetitions of every recorded run; '-' where a method has no such value "
                   "(not applicable, failed, or not yet run).")]
    status = tables.status_pivot(res.runs, res.problems, res.methods, res.labels, res.skipped)
    blocks.append(Table(status, "Status.", tables.write_table(status, out, "status", "Status")))
    blocks += _handovers(res, out)
    for column, name, caption in _TABLES:
        if column not in res.runs or res.runs[column].isna().all():
            continue
        shown, numbers = tables.pivot(res.runs, column, res.problems, res.methods, res.labels)
        blocks.append(Table(shown, caption + ".", tables.write_table(shown, out, name, caption, numbers)))
    blocks += _time_to_target(res, out)
    return blocks


def _handovers(res: ReportData, out: Path) -> list:
    """Every run finished by another method: when, why, what its method reached alone, and how the run
    ended."""
    runs = res.recorded
    handed = runs[runs["handover"] != ""] if len(runs) and "handover" in runs else runs.iloc[:0]
    rows = [{"problem": run.problem, "method": res.labels.get(run.method, run.method), "repetition": run.repetition,
             "hand-over": handover_label([h]), "at iteration": h["at_iteration"], "at [s]": h["at_seconds"],
             "why": h["reason"], "judged error alone": h["error_before"], "status alone": h["status_alone"],
             "returned point": h["to"] if h["used"] else h["from"], "status as returned": run.status}
            for run in handed.itertuples() for h in json.loads(run.handover_detail)]
    if not rows:
        return []
    table = pd.DataFrame(rows).set_index("problem")
    return [Table(table, "Hand-overs: runs finished by another method. The method's own columns count what it "
                         "reached alone (status alone); the composite's columns, named after the hand-over, the run "
                         "as returned.", tables.write_table(table, out, "handovers", "Hand-overs"))]


def _time_to_target(res: ReportData, out: Path) -> list:
    """Seconds until each run's objective is within ``target`` of its reference (histories)."""
    target = res.options.get("target", 1e-6)
    refs = res.references()
    hist = read_histories(res.store, res.static["key"])
    if hist.empty:
        return []
    rows = []
    for run in res.static.itertuples():
        ref = refs.for_method(run.problem, run.formulation, run.base_method)
        h = hist[hist["key"] == run.key]
        if ref is None or h.empty or not h["objective"].notna().any():
            continue
        h = h.drop_duplicates("iteration", keep="last")
        rows.append({"problem": run.problem, "method": run.method,
                     "seconds": first_within(h["seconds"], h["objective"], ref.objective, target)})
    if not rows:
        return []
    frame = pd.DataFrame(rows).assign(seconds=lambda d: d["seconds"].astype(float))
    shown, numbers = tables.pivot(frame, "seconds", res.problems, res.methods, res.labels)
    caption = (f"Time [s] until the objective is within {target:g} (relative) of the problem's reference objective "
               "(section Convergence; never the method's own run), from the histories; '-': never.")
    return [Table(shown, caption, tables.write_table(shown, out, "time_to_target", "Time to the reference", numbers))]


def _convergence(res: ReportData, out: Path) -> list:
    o = res.options
    refs = res.references()
    runs = res.static
    histories = read_histories(res.store, runs["key"])
    ref_table = refs.table(res.problems, res.labels)
    blocks = [Heading(1, "Convergence"),
              Text(f"Reference objective of each problem, for the runs of formulations that solve the same problem "
                   f"(relaxed or exact) and report the same objective: the most accurate point (smallest judged "
                   f"error) among the dedicated reference runs and the solved runs of the compared methods"
                   + (f" ({res.labels.get(o['reference_method'], o['reference_method'])} preferred where it solved)"
                      if o.get("reference_method") else "")
                   + "; a method's own runs are measured against the best point of the others instead.")]
    if len(ref_table):
        blocks.append(Table(ref_table, "References.", tables.write_table(ref_table, out, "references", "References")))
    else:
        blocks.append(Text("No reference: no run returned an accurate point."))
    top = "|objective - reference|" if o["convergence"] == "error" else "|objective|"
    blocks.append(Text(f"Per problem: top, {top}; then one row per judged measure (relaxed error for relaxed "
                       "formulations, Siconos error for exact ones): the workbench's measure of every method's "
                       "iterates, computed the same way for all (where a solver exposes no iterates, conic backends "
                       "and Siconos, only its returned point), with each method's acceptance threshold dashed; below, "
                       "the measures solvers log of themselves (one per panel; recorded, never judged). Left against "
                       "iteration, right against time. Lines: medians over repetitions; bands: min-max; a method that "
                       "handed over is drawn alone up to the hand-over and, as its composite, whole."))
    for problem in dict.fromkeys(runs["problem"]):
        mine = runs[runs["problem"] == problem]
        per_method = {m: refs.for_method(problem, f, b)
                      for m, b, f in zip(mine["method"], mine["base_method"], mine["formulation"])}
        path = f"figures/convergence-{_slug(problem)}.png"
        files = plot.save(plot.convergence(histories, mine, problem=problem, references=per_method,
                                           mode=o["convergence"], labels=res.labels, methods=res.methods), out / path)
        logged = set(histories["key"]) if len(histories) else set()
        without = [res.labels[m] for m in dict.fromkeys(mine["method"])
                   if not mine.loc[mine["method"] == m, "key"].isin(logged).any()]
        caption = f"Convergence on {problem}" + (f"; no history: {', '.join(without)}" if without else "")
        blocks.append(_figure(path, caption, files))
    return blocks


def _scaling(res: ReportData, out: Path) -> list:
    blocks = [Heading(1, "Scaling")]
    solved = res.static[res.static["status"] == "solved"]
    series = [s for s in dict.fromkeys(res.static["series"].dropna())] if len(res.static) else []
    undeclared = res.static["series"].isna().any() if len(res.static) else False
    for name in series:
        mine = solved[solved["series"] == name]
        path = f"figures/scaling-{_slug(name)}.png"
        columns = {res.time_column: f"{res.time_label} [s]", "iterations": "iterations"}
        slopes = plot.scaling_slopes(mine, columns, labels=res.labels, methods=res.methods).rename(
            columns={f"{res.time_column} slope": "time slope"})
        files = plot.save(plot.scaling(mine, columns, labels=res.labels, methods=res.methods,
                                       title=f"series {name}"), out / path)
        blocks += [Text(f"Series {name}: {res.time_label} and iterations of solved runs (medians over repetitions) "
                        "against the number of contacts; slope of the least-squares line in log-log, the exponent "
                        "k of time ~ contacts^k, fitted within this series only."),
                   _figure(path, f"Scaling within the series {name}", files)]
        if len(slopes):
            blocks.append(Table(slopes, f"Fitted log-log slopes, series {name}.",
                                tables.write_table(slopes, out, f"scaling_slopes_{_slug(name)}",
                                                   f"Fitted log-log slopes, series {name}")))
    if not series and len(res.static):
        blocks.append(Text("No scaling series declared: slopes are fitted only within a series (series = NAME in "
                           "a [[problems]] group of the study file), never across unrelated problems."))
    elif undeclared:
        blocks.append(Text("Problems outside a declared series are not fitted."))
    sims = res.runs[(res.runs["kind"] == "simulation") & (res.runs["status"] == "solved")]
    for source, mine in sims.groupby("source", sort=False):  # one figure per scene swept over sizes
        if "max_contacts" not in mine or mine["max_contacts"].nunique() < 2:
            continue
        scene = source.partition(":")[2]
        mine = mine.assign(n_contacts=mine["max_contacts"])
        path = f"figures/scaling-{_slug(scene)}.png"
        columns = {"complementarity": "largest complementarity max |g_n u_n|",
                   "mean_iterations": "mean iterations per step"}
        slopes = plot.scaling_slopes(mine, columns, labels=res.labels, methods=res.methods)
        files = plot.save(plot.scaling(mine, columns, labels=res.labels, methods=res.methods, title=scene),
                          out / path)
        blocks += [Text(f"Simulations of {scene} (the form of Melanz et al. 2015 Fig. 11): the largest complementarity "
                        "error over all steps and the mean iterations per step against the largest number of "
                        "contacts, for simulations whose every step was solved."),
                   _figure(path, f"{scene}: complementarity and iterations against contacts", files),
                   Table(slopes, f"Fitted log-log slopes ({scene}).",
                         tables.write_table(slopes, out, f"scaling_slopes_{_slug(scene)}", "Fitted log-log slopes"))]
    if len(blocks) == 1:
        blocks.append(Text("Nothing to show: no single-step problem and no simulation swept over sizes."))
    return blocks


def _profiles(res: ReportData, out: Path) -> list:
    pairs = res.pairs()
    blocks = [Heading(1, "Performance profiles"),
              Text(f"Dolan-More profiles per problem class and acceptance threshold: rho(tau) is the fraction of "
                   f"the problems a method can take that it solves within tau times the best method's "
                   f"{res.time_label} (first figure) or "
                   "iterations (second); not-applicable problems are left out of that method's fraction, a problem "
                   "not solved never counts. rho(1): fastest; rho(inf): the success rate of the summary.")]
    for group in comparison_groups(res.plan["methods"]):
        names = [m["method"] for m in group.methods]
        marks = []
        for value, axis in (("time", f"ratio to the best {res.time_label} (tau)"),
                            ("iterations", "ratio to the fewest iterations (tau)")):
            v = profile_values(pairs, names, value)
            v.columns = [res.labels[m] for m in v.columns]
            path = f"figures/profile-{value}-{group.slug}.png"
            files = plot.save(plot.performance_profile(v, value=value, xlabel=axis, title=f"{value}, {group.label}"),
                              out / path)
            blocks.append(_figure(path, f"Performance profile of {value}, {group.label}", files))
            m = performance_profile(v, taus=[1.0, 2.0, 10.0, np.inf]).T
            m.columns = [f"{value} rho({cell(t)})" for t in (1.0, 2.0, 10.0, np.inf)]
            marks.append(m)
        table = pd.concat(marks, axis=1)
        table.index.name = "method"
        blocks.append(Table(table, f"Profile values, {group.label}.",
                            tables.write_table(table, out, f"profile_{group.slug}", "Performance profile values")))
    return blocks


def _timeseries(res: ReportData, out: Path) -> list:
    blocks = [Heading(1, "Time series")]
    runs = res.runs[(res.runs["kind"] == "simulation") & (res.runs["repetition"] == 0)]
    if runs.empty:
        return blocks + [Text("No simulation in this study (a [[problems]] group with scenario = ...).")]
    histories = res.store.read_histories(runs["key"])
    blocks.append(Text("Per scene, the per-step quantities of every method's simulation (first repetition: a "
                       "simulation's trajectory does not depend on timing) against time; dashed black: the analytic "
                       "solution where the scene has one."))
    for problem in dict.fromkeys(runs["problem"]):
        keys = runs.loc[runs["problem"] == problem, "key"]
        table = histories[histories["key"].isin(keys)] if len(histories) else histories
        if table.empty:
            blocks.append(Text(f"{problem}: no per-step table recorded."))
            continue
        table = table.assign(method=table["method"].map(res.labels))
        path = f"figures/timeseries-{_slug(problem)}.png"
        fig = plot.time_series(table, title=problem)
        if fig is not None:
            blocks.append(_figure(path, f"{problem} per step", plot.save(fig, out / path)))
    return blocks


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
        made = {p.problem: _generator_params(p.source) for p in problems.itertuples()}
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


def _generator_params(source: str) -> dict | None:
    """The parameters a generated packing was made with: its entry in the ``MANIFEST.json`` of its folder
    (problems.generator; the entry's "generator" table, with the settling steps), or None for a file
    without one (a scene, another simulator's file, a file the manifest does not list)."""
    from problems.generator import read_manifest
    from workbench.sources import resolve_path
    try:
        path = resolve_path(source)
        entry = read_manifest(path.parent).get(path.name)
    except Exception:  # noqa: BLE001 - a source that is not a file (scene:, generator:) has no manifest
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("generator"), dict):
        return None
    params = dict(entry["generator"])
    params.setdefault("steps", entry.get("steps"))
    return params


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


def _limitations(res: ReportData) -> list:
    items = ["Times are wall-clock seconds on one machine (see Machine and versions) that may have been shared; "
             "differences within the spread over repetitions are noise, and a single repetition shows none.",
             "Iterations are not comparable between solver families: an interior-point iteration factorises a "
             "matrix, a first-order iteration does a few products; compare them within a family.",
             "Runs are judged by the workbench's error measure at the method's acceptance threshold; methods with "
             "the same threshold are compared even when they ask their solver for different accuracies (tol), and a "
             "method can be fast because it stops at a point another measure would not accept; the table of the "
             "time to the reference objective compares them at one accuracy.",
             "Convergence rows of a judged measure show the workbench's measure of sampled iterates (all of them "
             "for the exact in-house methods, about 20 per decade of iterations for the first-order ones); a conic "
             "backend or Siconos exposes no iterates, so only its returned point (the cross) is on those rows."]
    unavailable = sorted({res.labels[m] for m in res.runs.loc[res.runs["status"] == "unavailable", "method"]}) \
        if len(res.runs) else []
    if unavailable:
        msg = res.runs.loc[res.runs["status"] == "unavailable", "message"].iloc[0]
        items.append(f"Not available on this machine, so not compared: {', '.join(unavailable)} ({msg}).")
    if res.plan["repetitions"] < 3:
        items.append(f"{res.plan['repetitions']} repetition(s): spreads over repetitions are not meaningful.")
    shift = res.options["shift"]
    if shift >= 1.0 and len(res.runs) and np.nanmedian(res.runs[res.time_column]) < 0.1 * shift:
        items.append(f"Most runs take far less than the shift of the geometric mean ({res.options['shift']:g} s), "
                     "which pulls every method's mean towards the same value.")
    return [Heading(1, "Known limitations")] + [Text(f"- {i}") for i in items]


def _warm_up(res: ReportData, out: Path) -> list:
    """The runs killed while their worker warmed the method up, listed apart (accounting rule)."""
    warm = warm_up_runs(res.runs)
    if not len(warm):
        return []
    warm = warm.assign(method=warm["method"].map(lambda m: res.labels.get(m, m))).set_index("problem")
    return [Heading(1, "Runs killed while warming up"),
            Text("These runs were killed while their worker compiled and warmed the method up, before the run's "
                 "clock and time limit started (status warm-up). They are not the method's failures nor its times: "
                 "they are left out of every denominator, like an unavailable solver. Run them again (run "
                 "--rerun-failed) after `workbench warm-up` has filled the compile cache."),
            Table(warm, "Runs killed while warming up.", tables.write_table(warm, out, "warm_up", "Runs killed while "
                                                                             "warming up"))]


def _machine(res: ReportData, out: Path) -> list:
    sessions = res.store.sessions()
    if not sessions:
        return []
    shown = sessions[-4:]
    fields = {"date": lambda s: s["date"], "host": lambda s: s["host"], "CPU": lambda s: s["cpu"],
              "cores": lambda s: s["cores"], "platform": lambda s: s["platform"],
              "executor": lambda s: f"{s['executor']} x{s['jobs']}", "python": lambda s: s["python"],
              "workbench": lambda s: s["workbench"]}
    rows = {k: [f(s) for s in shown] for k, f in fields.items()}
    for pkg in dict.fromkeys(p for s in shown for p in s["packages"]):
        rows[pkg] = [s["packages"].get(pkg, "-") for s in shown]
    for solver in dict.fromkeys(p for s in shown for p in s["solvers"]):
        rows[f"solver {solver}"] = [s["solvers"].get(solver, "-") for s in shown]
    table = pd.DataFrame(rows, index=[s["session"] for s in shown]).T
    table.index.name = "field"
    caption = "Machine and versions of each session that produced these results" + \
        (f" (the last 4 of {len(sessions)})." if len(sessions) > 4 else ".")
    return [Heading(1, "Machine and versions"),
            Table(table, caption, tables.write_table(table, out, "machine", "Machine and versions"))]


def _methods_and_study(res: ReportData, out: Path) -> list:
    methods = pd.DataFrame(res.plan["methods"] + res.plan.get("references", [])).set_index("method")
    methods["params"] = methods["params"].map(lambda p: ", ".join(f"{k}={v}" for k, v in p.items()) or "-")
    return [Heading(1, "Methods"),
            Table(methods, "Compared methods, and the dedicated reference runs (reference/...).",
                  tables.write_table(methods, out, "methods", "Methods")),
            Heading(1, "Study file"), Code(_study_text(res))]


def _study_text(res: ReportData) -> str:
    path = res.root / "study.toml"
    return path.read_text(encoding="utf-8") if path.is_file() else "(not saved)"


SECTIONS = {"summary": _summary, "conclusion": _conclusion, "paper": _paper, "tables": _tables,
            "convergence": _convergence, "scaling": _scaling, "profiles": _profiles, "timeseries": _timeseries}


def _sections(names) -> list[str]:
    """The study's sections, with the conclusion always there (after the summary, else first)."""
    names = list(names)
    if "conclusion" not in names:
        names.insert(names.index("summary") + 1 if "summary" in names else 0, "conclusion")
    return names


def write_report(results_dir, out_dir=None) -> Path:
    """Write the report of ``results_dir`` to ``out_dir`` (default reports/<study name>/); the path of
    index.html."""
    res = read_report_data(results_dir)
    out = Path(out_dir) if out_dir else Path("reports") / res.plan["study"]
    out.mkdir(parents=True, exist_ok=True)
    blocks = _header(res)
    if len(res.runs):
        for name in _sections(res.options["sections"]):
            blocks += SECTIONS[name](res, out)
    blocks += _limitations(res) + _warm_up(res, out) + _machine(res, out) + _methods_and_study(res, out)
    return write_pages(out, f"Study {res.plan['study']}", blocks)
