"""The conclusion of a report, written from the numbers: per problem group (tag), problem class
(relaxed, exact, LCP) and acceptance threshold, the fastest method, its ratio to the next with the
spread over repetitions, whether the two are within noise, success rates; and caveats (problems no
method solved, methods that could not take some problems or did not run). When other methods are
within noise of the fastest (:func:`within_noise`), the verdict is a tie that names them all in the
study's order ("tie within noise: A, B"), never the one a run happened to favour."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.analysis.accounting import RESOLUTION, comparison_groups, summarise
from workbench.report.document import cell, spread

__all__ = ["conclusion", "within_noise"]


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
        # methods within noise of the fastest are not told apart: the verdict names them all, in the
        # study's order, so that it does not change with which of them a run happened to favour
        tied = [r["label"] for _, r in table[table["rank"].notna()].iterrows() if within_noise(fast, r, shift)]
        row.update({"fastest": fast["label"] if len(tied) == 1 else f"tie within noise: {', '.join(tied)}",
                    "sgm time [s]": spread(fast["sgm time [s]"], fast["sgm time low"], fast["sgm time high"])})
        if len(ranked) > 1:
            nxt = ranked.iloc[1]
            ratio = nxt["sgm time [s]"] / fast["sgm time [s]"]
            row.update({"next": nxt["label"],
                        "next / fastest": spread(ratio, nxt["sgm time low"] / fast["sgm time high"],
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


def conclusion(pairs: pd.DataFrame, methods: list[dict], shift: float) -> tuple[pd.DataFrame, list[str]]:
    """One row per tag (and all problems when there are several tags) and comparison group: the
    fastest method with its mean time (range over repetitions), the next with the ratio (its range)
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
    columns = ["problems (tag)", "compared", "common problems", "fastest", "sgm time [s]", "next", "next / fastest",
               "within noise", "solved % (of problems it can take)"]
    table = pd.DataFrame(rows).reindex(columns=columns).set_index("problems (tag)")
    return table, caveats
