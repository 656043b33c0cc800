"""The conclusion of a report, written from the numbers.

At equal accuracy (:func:`at_equal_accuracy`, the headline): per problem group (tag) and problem class,
for each stated level of two measures the same for every method (the relative distance to the
reference objective, and the judged error; :mod:`workbench.analysis.accuracy`), each method's time and
iterations to the level, median over the group's problems with its exact 95 % interval, and the
paired comparison over those problems: a method is named faster only when the interval of the paired
log-ratio excludes 0 (of the ratio, 1); otherwise "undecided over n members"; a method that never reaches a level is
"not reached", never fastest.

At each method's own stopping threshold (:func:`conclusion`: not a comparison at equal accuracy, since
methods stop at different accuracies): per problem group (tag), problem class
(relaxed, exact, LCP) and acceptance threshold, the first method to its threshold, its ratio to the next with the
spread over repetitions, whether the two are within noise, success rates; and caveats (problems no
method solved, methods that could not take some problems or did not run). When other methods are
within noise of the first (:func:`within_noise`), the verdict is a tie that names them all in the
study's order ("tie within noise: A, B"), never the one a run happened to favour."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.analysis.accounting import RESOLUTION, comparison_groups, problem_class, summarise
from workbench.analysis.accuracy import LEVELS, MEASURES, accuracy_table, equal_accuracy
from workbench.report.document import cell, spread

__all__ = ["conclusion", "within_noise", "at_equal_accuracy", "FIRST"]

#: the column of :func:`conclusion` that names the method with the shortest time to its own threshold
FIRST = "first to its own threshold"


def within_noise(a: pd.Series, b: pd.Series, shift: float) -> bool:
    """Whether two summary rows are not told apart: their ranges of the shifted geometric mean of time
    (each the interquartile range of that mean over the repetitions,
    :func:`~workbench.analysis.accounting.spread_of_mean`) overlap, or the gap between the ranges is
    under :data:`RESOLUTION` of the shifted times, (upper end + shift) / (lower end + shift) - 1."""
    lo = max(a["sgm time low"], b["sgm time low"])
    hi = min(a["sgm time high"], b["sgm time high"])
    return bool(np.isfinite(lo) and np.isfinite(hi) and (lo + shift) <= (1 + RESOLUTION) * (hi + shift))


def _row(pairs: pd.DataFrame, methods: list[dict], shift: float, threshold: float) -> tuple[dict, list[str]]:
    """The conclusion's row for one tag and comparison group, and its caveats."""
    table, common = summarise(pairs, methods, shift, threshold)
    ranked = table[table["rank"].notna()].sort_values("rank")
    row: dict = {"common problems": len(common)}
    if len(ranked) and common:
        fast = ranked.iloc[0]
        # methods within noise of the first are not told apart: the verdict names them all, in the
        # study's order, so that it does not change with which of them a run happened to favour
        tied = [r["label"] for _, r in table[table["rank"].notna()].iterrows() if within_noise(fast, r, shift)]
        row.update({FIRST: fast["label"] if len(tied) == 1 else f"tie within noise: {', '.join(tied)}",
                    "sgm time [s]": spread(fast["sgm time [s]"], fast["sgm time low"], fast["sgm time high"])})
        if len(ranked) > 1:
            nxt = ranked.iloc[1]
            ratio = nxt["sgm time [s]"] / fast["sgm time [s]"]
            row.update({"next": nxt["label"],
                        "next / first": spread(ratio, nxt["sgm time low"] / fast["sgm time high"],
                                                 nxt["sgm time high"] / fast["sgm time low"]),
                        "within noise": "yes" if within_noise(fast, nxt, shift) else "no"})
    row["solved % (of problems it can take)"] = ", ".join(
        f"{r['label']} {cell(r['solved %'])} ({r['problems']})" for _, r in table.iterrows() if r["problems"])
    caveats = []
    mine = pairs[pairs["method"].isin(table.index)]
    app = mine[mine["applicable"]]
    nobody = [p for p, g in app.groupby("problem", sort=False) if not g["solved"].any()]
    if nobody:
        caveats.append(f"no method solved {', '.join(nobody)}")
    if not common:
        caveats.append("no problem that every method can take: no ranking")
    for why, g in mine[~mine["applicable"]].groupby("why", sort=False):
        who = ", ".join(f"{lab} ({n})" for lab, n in g.groupby("label", sort=False).size().items())
        caveats.append(f"{why}, left out of the denominators: {who}")
    return row, caveats


def _tag_groups(problems: list[dict]) -> dict[str, list[str]]:
    """Tag -> its problems in the plan's order ("untagged" for problems without a tag), and "all problems"
    when there are several tags."""
    groups: dict[str, list[str]] = {}
    for p in problems:
        for tag in p.get("tags") or ("untagged",):
            groups.setdefault(tag, []).append(p["problem"])
    if len(groups) > 1:
        groups["all problems"] = [p["problem"] for p in problems]
    return groups


def at_equal_accuracy(runs: pd.DataFrame, histories: pd.DataFrame, references, methods: list[dict],
                      problems: list[dict], levels=LEVELS) -> pd.DataFrame:
    """The headline conclusion (module docstring): one row per tag, problem class, measure and level.
    ``runs``: the single-step runs (key, problem, method, base_method, formulation, repetition);
    ``histories``: their histories (:func:`workbench.study.results.read_histories`, judged_error
    included); ``references``: :class:`workbench.report.reference.References`; ``methods`` and
    ``problems``: the plan's."""
    refs = {}
    for run in runs.itertuples():
        ref = references.for_method(run.problem, run.formulation, run.base_method)
        refs[run.key] = None if ref is None else ref.objective
    table = accuracy_table(runs, histories, refs, levels)
    labels = {m["method"]: m["label"] for m in methods}
    by_class: dict[str, list[str]] = {}
    for m in methods:
        by_class.setdefault(problem_class(m["formulation"]), []).append(m["method"])
    rows = []
    for tag, names in _tag_groups(problems).items():
        for cls, members in by_class.items():
            for r in equal_accuracy(table, members, labels, names, f"{tag} ({cls})"):
                rows.append({"problems (tag)": f"{tag} ({len(names)})", "compared": cls,
                             "measure": MEASURES[r.pop("measure")], **r})
    columns = ["problems (tag)", "compared", "measure", "level", "conclusion (time)", "seconds",
               "conclusion (iterations)", "iterations"]
    return pd.DataFrame(rows).reindex(columns=columns).set_index("problems (tag)")


def conclusion(pairs: pd.DataFrame, methods: list[dict], shift: float) -> tuple[pd.DataFrame, list[str]]:
    """One row per tag (and all problems when there are several tags) and comparison group: the
    first method to its own threshold with its mean time (range over repetitions), the next with the ratio (its range)
    and whether they are within noise, success rates; and the caveats, one line each."""
    groups: dict[str, list[str]] = {}
    for problem, tags in zip(pairs["problem"], pairs["tags"]):
        for tag in tags or ("untagged",):
            groups.setdefault(tag, [])
            if problem not in groups[tag]:
                groups[tag].append(problem)
    if len(groups) > 1:
        groups["all problems"] = list(dict.fromkeys(pairs["problem"]))
    rows, caveats = [], []
    for tag, problems in groups.items():
        mine = pairs[pairs["problem"].isin(problems)]
        for group in comparison_groups(methods):
            row, notes = _row(mine, list(group.methods), shift, group.threshold)
            rows.append({"problems (tag)": f"{tag} ({len(problems)})", "compared": group.label, **row})
            caveats += [f"{tag}, {group.label}: {n}." for n in notes]
    columns = ["problems (tag)", "compared", "common problems", FIRST, "sgm time [s]", "next", "next / first",
               "within noise", "solved % (of problems it can take)"]
    table = pd.DataFrame(rows).reindex(columns=columns).set_index("problems (tag)")
    return table, caveats
