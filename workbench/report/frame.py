"""The parts every report has around its sections: the header (what was run, the accounting rule,
statuses, hand-overs), then known limitations, the runs killed while warming up, machine and versions,
the methods and the study file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from workbench.analysis.accounting import RULE, warm_up_runs
from workbench.report import tables
from workbench.report.data import ReportData
from workbench.report.document import RULE_ANCHOR, Code, Figure, Heading, Lead, Table, Text

__all__ = ["header", "closing", "lead"]

#: at most this many conclusions in sentences at the top; the rest are in the Conclusion table
LEAD_ROWS = 4


def _sentence(tag: str, row: pd.Series) -> str:
    """One row of the conclusion at equal accuracy in words: the group, the measure and level, and what
    the paired comparison says of time and of iterations (a faster method named only when its interval
    excludes a tie, else undecided; workbench.analysis.accuracy)."""
    level = row.get("level")
    level = f"{level:g}" if isinstance(level, (int, float, np.floating)) else str(level)
    return (f"At equal accuracy, {tag}, {row.get('compared', '')}, {row.get('measure', '')} to {level}: "
            f"time: {row.get('conclusion (time)', '-')}; iterations: {row.get('conclusion (iterations)', '-')}.")


def lead(res: ReportData, blocks: list) -> list:
    """The page's opening, read in a minute: the conclusions in plain sentences (from the Conclusion
    table among ``blocks``), one figure (the first performance profile of time), and links to the
    accounting rule and the full tables, which follow (folded in HTML where long)."""
    table = next((b.frame for b in blocks if isinstance(b, Table) and b.caption == "Conclusion at equal accuracy."), None)
    figure = next((b for b in blocks if isinstance(b, Figure) and "profile-time" in b.path), None)
    if table is None and figure is None:
        return []
    out: list = [Heading(1, "In short")]
    recorded = res.recorded
    if len(recorded):
        counts = ", ".join(f"{s} {n}" for s, n in recorded["status"].value_counts().items())
        out.append(Lead(f"{len(recorded)} of {len(res.plan['runs'])} planned runs recorded ({counts}); every "
                        "number is counted by one rule:", {"the accounting rule": f"#{RULE_ANCHOR}"}))
    if table is not None:
        rows = list(table.iterrows())
        out += [Lead(_sentence(str(tag).rsplit(" (", 1)[0], row)) for tag, row in rows[:LEAD_ROWS]]
        more = f"{len(rows) - LEAD_ROWS} more rows, spreads and caveats: " if len(rows) > LEAD_ROWS else \
            "Spreads, success rates and caveats: "
        out.append(Lead(more, {"the conclusion": "#conclusion"}))
    if figure is not None:
        out.append(Figure(figure.path, figure.caption + " (from the Performance profiles section)", figure.others))
    return out


def header(res: ReportData) -> list:
    plan, runs = res.plan, res.recorded
    blocks = [Text(plan["description"])] if plan.get("description") else []
    planned = len(plan["runs"])
    text = (f"{len(runs)} of {planned} planned runs recorded ({len(plan['problems'])} problems x "
            f"{len({res.base.get(m['method'], m['method']) for m in plan['methods']})} methods x "
            f"{plan['repetitions']} repetition(s); time limit "
            f"{plan['time_limit']:g} s per run).")
    if plan.get("reference_runs"):
        text += (f" {len(res.reference_runs)} of {len(plan['reference_runs'])} dedicated reference runs recorded "
                 f"(not compared, not counted above; see Convergence){_reference_accuracy(res.reference_runs)}.")
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


def _reference_accuracy(refs: pd.DataFrame) -> str:
    """The reference runs' statuses and their own accuracy (the worst judged error, and the tightest
    tolerance asked), where the report uses them: a reference short of its tolerance is used at the
    accuracy it reached, and says so."""
    if not len(refs):
        return ""
    statuses = ", ".join(f"{s} {n}" for s, n in refs["status"].value_counts().sort_index().items())
    error = pd.to_numeric(refs.get("judged_error"), errors="coerce")
    tol = pd.to_numeric(refs.get("tol"), errors="coerce")
    if not (error.notna().any() and tol.notna().any()):
        return f": {statuses}"
    return (f": {statuses}; their worst judged error is {error.max():.2g}, asked for {tol.min():g}, and each is "
            "used at the accuracy it reached")


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
    text = res.store.read_text("study.toml")
    return "(not saved)" if text is None else text


def closing(res: ReportData, out: Path) -> list:
    """The blocks after the sections."""
    return _limitations(res) + _warm_up(res, out) + _machine(res, out) + _methods_and_study(res, out)
