"""Tables of a report: problem x method pivots of run values, per-method summaries, and their CSV
(full precision) and LaTeX (4 significant digits, booktabs) files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.report.document import cell
from workbench.report.stats import pair_times, shifted_geometric_mean

__all__ = ["pivot", "status_pivot", "summary", "tag_success", "write_table"]


def pivot(runs: pd.DataFrame, value: str, methods: list[str], labels: dict[str, str]) -> pd.DataFrame:
    """Problems x methods (columns labelled), the median of ``value`` over repetitions."""
    values = pd.to_numeric(runs[value], errors="coerce") if value in runs else pd.Series(np.nan, index=runs.index)
    table = values.groupby([runs["problem"], runs["method"]]).median().unstack("method")
    return _shape(table, runs, methods, labels)


def status_pivot(runs: pd.DataFrame, methods: list[str], labels: dict[str, str]) -> pd.DataFrame:
    """Problems x methods: the status, or the count of each when repetitions disagree."""
    def summarise(s: pd.Series) -> str:
        counts = Counter(s)
        return s.iloc[0] if len(counts) == 1 else ", ".join(f"{k} x{n}" for k, n in counts.most_common())
    table = runs.groupby(["problem", "method"])["status"].agg(summarise).unstack("method")
    return _shape(table, runs, methods, labels)


def _shape(table: pd.DataFrame, runs: pd.DataFrame, methods: list[str], labels: dict[str, str]) -> pd.DataFrame:
    problems = list(dict.fromkeys(runs["problem"]))  # run order is plan order
    table = table.reindex(index=problems, columns=[m for m in methods if m in table.columns])
    table.columns = [labels[m] for m in table.columns]
    table.index.name = "problem"
    table.columns.name = None
    return table


def summary(runs: pd.DataFrame, problems: list[str], methods: list[dict], skipped: set[tuple[str, str]],
            time_column: str, time_limit: float, shift: float) -> pd.DataFrame:
    """Per method: runs, success rate (% of its runs solved), the problems it cannot take, and the
    shifted geometric mean of time over every problem of the study, a problem not solved (or not
    applicable, or not yet run) counting as the time limit (stats module docstring)."""
    times = pair_times(runs, time_column) if len(runs) else pd.Series(dtype=float)
    rows = []
    for m in methods:
        name = m["method"]
        mine = runs[runs["method"] == name]
        t = np.minimum([times.get((p, name), np.inf) for p in problems], time_limit)
        rows.append({"method": m["label"], "formulation": m["formulation"], "solver": m["solver"],
                     "tolerance": m["tolerance"], "runs": len(mine),
                     "solved %": 100.0 * float((mine["status"] == "solved").mean()) if len(mine) else np.nan,
                     "not applicable": sum((p, name) in skipped for p in problems),
                     "sgm time [s]": shifted_geometric_mean(t, shift) if len(t) else np.nan})
    table = pd.DataFrame(rows).set_index("method")
    best = table["sgm time [s]"].min()
    table["sgm / best"] = table["sgm time [s]"] / best if best > 0 else np.nan
    return table


def tag_success(runs: pd.DataFrame, methods: list[str], labels: dict[str, str]) -> pd.DataFrame | None:
    """Success rate (% of runs solved) per tag x method; None when no problem has a tag."""
    tagged = runs.assign(tag=runs["tags"].fillna("").str.split(",")).explode("tag")
    tagged = tagged[tagged["tag"] != ""]
    if tagged.empty:
        return None
    table = (tagged["status"] == "solved").groupby([tagged["tag"], tagged["method"]]).mean().mul(100).unstack("method")
    table = table.reindex(columns=[m for m in methods if m in table.columns])
    table.columns = [labels[m] for m in table.columns]
    table.index.name = "tag"
    return table


_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def _latex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def to_latex(df: pd.DataFrame, caption: str) -> str:
    """A booktabs tabular of ``df`` in a table environment."""
    cols = [df.index.name or ""] + [str(c) for c in df.columns]
    lines = [r"\begin{table}", r"\centering", rf"\caption{{{_latex(caption)}}}",
             r"\begin{tabular}{l" + "r" * len(df.columns) + "}", r"\toprule",
             " & ".join(_latex(c) for c in cols) + r" \\", r"\midrule"]
    for idx, row in df.iterrows():
        lines.append(" & ".join(_latex(cell(v)) for v in [idx, *row]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_table(df: pd.DataFrame, out: Path, name: str, caption: str) -> dict[str, str]:
    """Write ``tables/NAME.csv`` and ``tables/NAME.tex`` under ``out``; their paths relative to it."""
    from workbench.files import atomic_output
    (out / "tables").mkdir(parents=True, exist_ok=True)
    with atomic_output(out / "tables" / f"{name}.csv") as tmp:
        df.to_csv(tmp)
    with atomic_output(out / "tables" / f"{name}.tex") as tmp:
        tmp.write_text(to_latex(df, caption), encoding="utf-8")
    return {"CSV": f"tables/{name}.csv", "LaTeX": f"tables/{name}.tex"}
