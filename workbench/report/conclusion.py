"""The conclusion of a report, written from the numbers: per problem group (tag), problem class
(relaxed, exact, LCP) and acceptance threshold, the fastest method, its ratio to the next with the
spread over repetitions, whether the two are within noise, success rates, and caveats (problems no
method solved, methods that could not take some problems or did not run)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.report.accounting import comparison_groups, summarise
from workbench.report.document import cell

__all__ = ["conclusion", "within_noise"]


def within_noise(a: pd.Series, b: pd.Series) -> bool:
    """Whether two summary rows' ranges of the shifted geometric mean of time overlap (the means of
    each problem's fastest and slowest repetition)."""
    lo = max(a["sgm time min"], b["sgm time min"])
    hi = min(a["sgm time max"], b["sgm time max"])
    return bool(np.isfinite(lo) and np.isfinite(hi) and lo <= hi)


def _ratio_spread(fast: pd.Series, nxt: pd.Series) -> str:
    """Ratio of the two means, with the range the per-repetition means allow."""
    ratio = nxt["sgm time [s]"] / fast["sgm time [s]"]
    lo, hi = nxt["sgm time min"] / fast["sgm time max"], nxt["sgm time max"] / fast["sgm time min"]
    if np.isfinite(lo) and np.isfinite(hi) and cell(lo) != cell(hi):
        return f"{ratio:.2f}x (range {lo:.2f}-{hi:.2f}x over repetitions)"
    return f"{ratio:.2f}x"


def _group_text(pairs: pd.DataFrame, methods: list[dict], shift: float, threshold: float) -> str:
    table, common = summarise(pairs, methods, shift, threshold)
    ranked = table[table["rank"].notna()].sort_values("rank")
    parts = []
    if ranked.empty or not common:
        parts.append("no problem that every method can take, so no ranking.")
    else:
        fast = ranked.iloc[0]
        text = (f"fastest: {fast['label']} (shifted geometric mean {cell(fast['sgm time [s]'])} s over "
                f"{len(common)} problem(s))")
        if len(ranked) > 1:
            nxt = ranked.iloc[1]
            text += f", {_ratio_spread(fast, nxt)} ahead of {nxt['label']}"
            text += "; within noise (their ranges over repetitions overlap)" if within_noise(fast, nxt) else \
                "; outside noise (their ranges over repetitions do not overlap)"
        parts.append(text + ".")
    rates = [f"{r['label']} {cell(r['solved %'])}% of {r['problems']}" for _, r in table.iterrows() if r["problems"]]
    if rates:
        parts.append("Solved: " + ", ".join(rates) + ".")
    mine = pairs[pairs["method"].isin(table.index)]
    app = mine[mine["applicable"]]
    nobody = [p for p, g in app.groupby("problem", sort=False) if not g["solved"].any()]
    if nobody:
        parts.append(f"Caveat: no method solved {', '.join(nobody)}.")
    na = mine[~mine["applicable"]]
    for why, g in na.groupby("why", sort=False):
        who = ", ".join(f"{lab} ({n})" for lab, n in g.groupby("label", sort=False).size().items())
        parts.append(f"Caveat: {why} pairs, left out of the denominators: {who}.")
    return " ".join(parts)


def conclusion(pairs: pd.DataFrame, methods: list[dict], shift: float) -> list[str]:
    """Paragraphs: for every tag (and all problems when there are several groups) and threshold."""
    groups: dict[str, list[str]] = {}
    for problem, tags in zip(pairs["problem"], pairs["tags"]):
        for tag in tags or ("untagged",):
            groups.setdefault(tag, [])
            if problem not in groups[tag]:
                groups[tag].append(problem)
    if len(groups) > 1:
        groups["all problems"] = list(dict.fromkeys(pairs["problem"]))
    out = []
    for tag, problems in groups.items():
        mine = pairs[pairs["problem"].isin(problems)]
        for group in comparison_groups(methods):
            out.append(f"{tag} ({len(problems)} problem(s)), {group.label}: "
                       + _group_text(mine, list(group.methods), shift, group.threshold))
    return out
