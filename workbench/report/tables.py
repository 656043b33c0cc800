"""Tables of a report: problem x method pivots (median with min-max over repetitions), and their files:
CSV (full precision, numbers only) and LaTeX (pandas' Styler: booktabs rules, 4 significant digits)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from workbench.report.document import cell, spread

__all__ = ["pivot", "status_pivot", "label_columns", "write_table"]


def label_columns(table: pd.DataFrame, problems: list[str], methods: list[str], labels: dict[str, str]) -> pd.DataFrame:
    """Rows in plan order, columns the methods' labels in study order."""
    table = table.reindex(index=[p for p in problems if p in table.index],
                          columns=[m for m in methods if m in table.columns])
    table.columns = [labels[m] for m in table.columns]
    table.index.name = "problem"
    table.columns.name = None
    return table


def pivot(runs: pd.DataFrame, value: str, problems: list[str], methods: list[str],
          labels: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Problems x methods of ``value``: shown as 'median (min-max)' over repetitions, and the numbers
    (long: problem, method, median, min, max) for the CSV."""
    values = pd.to_numeric(runs[value], errors="coerce")
    stats = values.groupby([runs["problem"], runs["method"]]).agg(["median", "min", "max"])
    shown = stats.apply(lambda r: spread(r["median"], r["min"], r["max"]), axis=1) if len(stats) else \
        pd.Series(dtype=object)
    return label_columns(shown.unstack("method"), problems, methods, labels), stats.reset_index()


def status_pivot(runs: pd.DataFrame, problems: list[str], methods: list[str], labels: dict[str, str],
                 not_applicable: set[tuple[str, str]]) -> pd.DataFrame:
    """Problems x methods: the status, or the count of each when repetitions disagree; 'not
    applicable' where the method cannot take the problem."""
    def summarise(s: pd.Series) -> str:
        counts = Counter(s)
        return s.iloc[0] if len(counts) == 1 else ", ".join(f"{k} x{n}" for k, n in counts.most_common())
    table = runs.groupby(["problem", "method"])["status"].agg(summarise).unstack("method") if len(runs) \
        else pd.DataFrame(index=problems, columns=methods)
    table = table.reindex(index=problems, columns=methods).astype(object)
    for p, m in not_applicable:
        if p in table.index and m in table.columns:
            table.loc[p, m] = "not applicable"
    return label_columns(table, problems, methods, labels)


_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def _latex(df: pd.DataFrame, caption: str) -> str:
    shown = df.copy()
    shown.index = [cell(i) for i in shown.index]
    shown.index.name = df.index.name
    styler = shown.style.format(cell, escape="latex").format_index(escape="latex", axis=0)
    styler = styler.format_index(escape="latex", axis=1)
    return styler.to_latex(caption="".join(_LATEX_SPECIAL.get(c, c) for c in caption), hrules=True,
                           position_float="centering", environment="table",
                           column_format="l" + "r" * len(df.columns))


def write_table(df: pd.DataFrame, out: Path, name: str, caption: str,
                numbers: pd.DataFrame | None = None) -> dict[str, str]:
    """Write ``tables/NAME.csv`` (``numbers`` when given: the values behind a formatted table) and
    ``tables/NAME.tex`` under ``out``; their paths relative to it."""
    from workbench.files import atomic_output
    (out / "tables").mkdir(parents=True, exist_ok=True)
    with atomic_output(out / "tables" / f"{name}.csv") as tmp:
        (df if numbers is None else numbers).to_csv(tmp, index=numbers is None)
    with atomic_output(out / "tables" / f"{name}.tex") as tmp:
        tmp.write_text(_latex(df, caption), encoding="utf-8")
    return {"CSV": f"tables/{name}.csv", "LaTeX": f"tables/{name}.tex"}

