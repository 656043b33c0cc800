"""The builders of a report's sections, one per name declared in :data:`workbench.analysis.sections.SECTIONS`
(the study's ``[report] sections`` choose and order them; the package docstring of :mod:`workbench.report`
says what each shows). A builder is a function ``(ReportData, out_dir) -> list of blocks``
(:mod:`workbench.report.document`) registered with ``@section(NAME)``; the paper section is in
:mod:`workbench.report.paper`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from workbench import plot
from workbench.analysis import sections as declared
from workbench.analysis.accounting import RESOLUTION, comparison_groups, summarise
from workbench.analysis.profiles import performance_profile, profile_values
from workbench.analysis.stats import first_within
from workbench.report import tables
from workbench.report.conclusion import at_equal_accuracy, conclusion, per_member, within_noise
from workbench.report.data import ReportData
from workbench.report.document import Figure, Heading, Table, Text, cell, spread
from workbench.solvers.base import handover_label
from workbench.sources import Source
from workbench.study.results import read_histories

__all__ = ["BUILDERS", "section"]

Builder = Callable[[ReportData, Path], list]
#: section name -> its builder, filled by ``@section``
BUILDERS: dict[str, Builder] = {}


def section(name: str) -> Callable[[Builder], Builder]:
    """Register the builder of the declared section ``name`` (one builder per name)."""
    if name not in declared.SECTIONS:
        raise ValueError(f"section {name!r} is not declared in workbench.analysis.sections.SECTIONS")
    if name in BUILDERS:
        raise ValueError(f"section {name!r} has a builder already: {BUILDERS[name].__qualname__}")

    def register(func: Builder) -> Builder:
        BUILDERS[name] = func
        return func
    return register


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



def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def _figure(path: str, caption: str, files: dict[str, str]) -> Figure:
    folder = path.rsplit("/", 1)[0]
    return Figure(path, caption, {k: f"{folder}/{v}" for k, v in files.items()})


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


@section("summary")
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


@section("conclusion")
def _conclusion(res: ReportData, out: Path) -> list:
    from workbench.analysis.accuracy import LEVELS
    from workbench.analysis.members import INTERVAL_METHOD

    histories, refs = read_histories(res.store, res.static["key"]), res.references()
    equal = at_equal_accuracy(res.static, histories, refs, res.plan["methods"], res.plan["problems"])
    members = per_member(res.static, histories, refs, res.plan["methods"], res.plan["problems"])
    table, caveats = conclusion(res.pairs(), res.plan["methods"], res.options["shift"])
    single = res.plan["repetitions"] == 1
    per_problem = ("one run per problem, so each problem's time is one sample of it and the spread that decides is "
                   "the one over the problems" if single else "each the median over repetitions")
    blocks = [Heading(1, "Conclusion"),
              Text("At equal accuracy: per group of problems (tag) and problem class, for each level "
                   f"({', '.join(f'{x:g}' for x in LEVELS)}) of two measures computed by the workbench the same way "
                   "for every method (the relative distance of the iterate's objective to the problem's reference "
                   "objective, never the method's own; and the judged error of the iterate), each method's time "
                   "and iterations to the level, from the histories: the median over the group's problems (each "
                   f"{per_problem}) with its 95 % interval ({INTERVAL_METHOD}). A method is named "
                   "faster than the next only when the 95 % interval of the paired log-ratio over the same "
                   "problems excludes 0; otherwise \"undecided over n members\". A method that never reaches a "
                   "level is \"not reached\", never the fastest; \"not measured\": no history, no reference or "
                   "no judged iterate. A group of a dataset family's members reads \"TAG (n members)\"; the "
                   "value of each member (problem) behind every median: tables/conclusion_members.csv."),
              Table(equal, "Conclusion at equal accuracy.", tables.write_table(equal, out, "conclusion",
                                                                                "Conclusion at equal accuracy")
                    | {"per member (CSV)": _members_csv(members, out)}),
              Text("Not a conclusion: the time to each method's own stopping threshold, where methods stop at "
                   "unequal accuracies. Under the accounting rule: per group of problems (tag), problem class "
                   "and acceptance threshold, the method first to its threshold by the shifted geometric mean of "
                   "time on the problems all its methods can take (in brackets: the interquartile range of the "
                   "same mean taken over each repetition alone), the next one and their ratio (its range from "
                   "those means), whether the two "
                   f"are within noise (ranges that overlap, or a gap under {RESOLUTION:.0%} of the times plus the "
                   "shift), and each method's success rate with the number of problems it can take. When methods "
                   "are within noise of the first, none is named: the cell reads \"tie within noise\" "
                   "with all of them, in the study's order."
                   + (" With one repetition these ranges are single points: two methods are within noise only "
                      f"by the {RESOLUTION:.0%} gap." if single else "")),
              Table(table, "Time to each method's own stopping threshold (not at equal accuracy).",
                    tables.write_table(table, out, "stopping_threshold", "Time to each method's own threshold"))]
    if caveats:
        blocks += [Text("Caveats:")] + [Text(f"- {c}") for c in caveats]
    return blocks


def _members_csv(members, out: Path) -> str:
    """Write the per-member values of the conclusion (tables/conclusion_members.csv); its path."""
    from workbench.files import atomic_output
    (out / "tables").mkdir(parents=True, exist_ok=True)
    with atomic_output(out / "tables" / "conclusion_members.csv") as tmp:
        members.to_csv(tmp, index=False)
    return "tables/conclusion_members.csv"


@section("tables")
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


@section("convergence")
def _convergence(res: ReportData, out: Path) -> list:
    o = res.options
    refs = res.references()
    runs = res.static
    histories = read_histories(res.store, runs["key"])
    ref_table = refs.table(res.problems, res.labels)
    blocks = [Heading(1, "Convergence"),
              Text("Reference objective of each problem, for the runs of formulations that solve the same problem "
                   "(relaxed or exact) and report the same objective: the most accurate point (smallest judged "
                   "error) among the dedicated reference runs and the solved runs of the compared methods"
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
    shown, left_out = _convergence_problems([p for p in res.problems if p in set(runs["problem"])],
                                            o.get("convergence_members"))
    if left_out:
        blocks.append(Text(f"Figures of the first {o['convergence_members']} members of each dataset family only "
                           f"([report] convergence_members); not drawn: {', '.join(left_out)} (each member's time "
                           "and iterations to every accuracy level are in tables/conclusion_members.csv)."))
    for problem in shown:  # the tables' order
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


def _convergence_problems(problems: list[str], members: int | None) -> tuple[list[str], list[str]]:
    """The problems whose convergence figure is drawn, and those left out: with ``members`` N, of each
    dataset family (problems.families) only its first N members in the plan's order; every other
    problem always."""
    from problems.families import parse_member

    if members is None:
        return list(problems), []
    seen: dict[str, int] = {}
    shown, left_out = [], []
    for problem in problems:
        member = parse_member(problem)
        if member is not None:
            family = member[0].name
            seen[family] = seen.get(family, 0) + 1
            if seen[family] > members:
                left_out.append(problem)
                continue
        shown.append(problem)
    return shown, left_out


@section("scaling")
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
        scene = Source.parse(source).target
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


@section("profiles")
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


@section("timeseries")
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
