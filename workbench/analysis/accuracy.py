"""Methods compared at equal accuracy: the time and iterations each run needs to reach stated levels of
measures that are the same for every method, never the stopping threshold it happened to use.

Two measures, each computed by the workbench from the iterates of the run's history:

- ``objective``: the relative distance to the problem's reference objective, |f_k - f*| / |f*| (f* the
  most accurate point of *another* method or a dedicated reference run,
  :mod:`workbench.report.reference`; a method is never its own reference);
- ``judged``: the judged error of the iterate (:func:`workbench.judging.judge_history`: the relaxed
  error for relaxed formulations, the Siconos error for exact ones; rows that were not judged are
  skipped, so a solver that exposes no iterates reaches a level, if at all, at its last row).

For each measure and level of :data:`LEVELS`, a run's iterations and seconds to it are those of the first
row at or below the level: ``inf`` ("not reached") when no row is, NaN ("not measured") when the run
kept no history, or no reference exists, or no row was judged. A method that does not reach a level is
never the fastest to it: in the paired comparison over problems (:func:`workbench.analysis.members.compare`)
"not reached" is worse than any time.

Pure functions of tables: the report (:mod:`workbench.report.conclusion`) finds the references.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from workbench.analysis.members import compare, median_interval

__all__ = ["LEVELS", "MEASURES", "NOT_REACHED", "NOT_MEASURED", "first_reached", "to_accuracy", "accuracy_table",
           "equal_accuracy"]

#: the stated accuracy levels of every measure
LEVELS = (1e-2, 1e-4, 1e-6)

#: measure -> what it is
MEASURES = {"objective": "relative distance to the reference objective |f - f*| / |f*|",
            "judged": "judged error of the iterate (relaxed error, or Siconos error for exact formulations)"}

NOT_REACHED = "not reached"
NOT_MEASURED = "not measured"


def first_reached(x, measure, level: float) -> float:
    """The first x (iteration or seconds) whose measure is <= level, rows with a NaN measure skipped;
    inf when none is; NaN when no row has a measure."""
    x, m = np.asarray(x, dtype=float), np.asarray(measure, dtype=float)
    known = ~np.isnan(m)
    if not known.any():
        return math.nan
    hit = np.flatnonzero(known & (m <= level))
    return float(x[hit[0]]) if hit.size else math.inf


def to_accuracy(history: pd.DataFrame, reference: float | None, levels=LEVELS) -> list[dict]:
    """One run's rows ``{measure, level, iterations, seconds}`` (module docstring) from its history
    (columns iteration, seconds, objective, judged_error; sorted by iteration here)."""
    nan = math.nan
    h = history.sort_values("iteration", kind="stable") if len(history) else history
    series = {"objective": (np.abs(h["objective"].astype(float) - reference) / abs(reference)
                            if reference is not None and math.isfinite(reference) and reference != 0
                            and "objective" in h else None),
              "judged": h["judged_error"].astype(float) if "judged_error" in h else None}
    rows = []
    for measure, values in series.items():
        for level in levels:
            if values is None or not len(h):
                its = sec = nan
            else:
                its, sec = first_reached(h["iteration"], values, level), first_reached(h["seconds"], values, level)
            rows.append({"measure": measure, "level": level, "iterations": its, "seconds": sec})
    return rows


def accuracy_table(runs: pd.DataFrame, histories: pd.DataFrame, references: dict, levels=LEVELS) -> pd.DataFrame:
    """Per run (``runs``: key, problem, method, repetition) and measure and level: iterations and seconds
    to the level. ``references``: run key -> reference objective (or None). A run without a history has
    NaN everywhere (not measured)."""
    by_key = {k: g for k, g in histories.groupby("key", sort=False)} if len(histories) else {}
    rows = []
    for run in runs.itertuples():
        h = by_key.get(run.key, pd.DataFrame(columns=["iteration", "seconds", "objective", "judged_error"]))
        h = h.drop_duplicates("iteration", keep="last") if len(h) else h
        for r in to_accuracy(h, references.get(run.key), levels):
            rows.append({"problem": run.problem, "method": run.method, "repetition": run.repetition, **r})
    return pd.DataFrame(rows, columns=["problem", "method", "repetition", "measure", "level", "iterations",
                                       "seconds"])


def _median(values: pd.Series) -> float:
    """The median over repetitions; NaN (not measured) only when every repetition is NaN, a NaN
    repetition otherwise left out; inf when most did not reach."""
    v = values.astype(float).dropna()
    return float(np.median(v)) if len(v) else math.nan


def _cell(s: dict, unit: str) -> str:
    if s["n"] == 0:
        return NOT_MEASURED
    if math.isinf(s["median"]):
        return NOT_REACHED
    if s["ranks"] is None:
        return f"{s['median']:.3g}{unit} (no interval: {s['n']} members)"
    fmt = (lambda x: NOT_REACHED if x == math.inf else f"{x:.3g}")
    return f"{s['median']:.3g}{unit} [{fmt(s['low'])}, {fmt(s['high'])}]"


def equal_accuracy(table: pd.DataFrame, methods: list[str], labels: dict[str, str], problems: list[str],
                   what: str = "") -> list[dict]:
    """The conclusions of ``table`` (:func:`accuracy_table`) over ``problems`` (the members) for
    ``methods`` (in the study's order): per measure and level, each method's median seconds and
    iterations over problems with their 95 % interval (:func:`~workbench.analysis.members.median_interval`;
    per problem the median over repetitions), "not reached" where the median did not reach, and for
    time and iterations the paired comparison of the method with the smallest median against the next
    (:func:`~workbench.analysis.members.compare`): a sentence naming the faster one only when the
    interval of the paired log-ratio excludes 0, else "undecided over n members". Problems where a
    method was not measured (no history, no reference) are left out of that method's pairs."""
    rows = []
    mine = table[table["problem"].isin(problems) & table["method"].isin(methods)]
    per = mine.groupby(["measure", "level", "method", "problem"])[["iterations", "seconds"]].agg(_median)
    for (measure, level), g in mine.groupby(["measure", "level"], sort=False):
        row = {"measure": measure, "level": level}
        for quantity, unit in (("seconds", " s"), ("iterations", "")):
            present = set(per.index.droplevel(3))
            values = {m: per.loc[(measure, level, m)][quantity].reindex(problems) for m in methods
                      if (measure, level, m) in present}
            summaries = {m: median_interval(v.dropna()) for m, v in values.items()}
            row[quantity] = "; ".join(f"{labels.get(m, m)} {_cell(s, unit)}" for m, s in summaries.items())
            ranked = sorted((m for m, s in summaries.items() if s["n"] and math.isfinite(s["median"])),
                            key=lambda m: (summaries[m]["median"], methods.index(m)))
            never = [labels.get(m, m) for m, s in summaries.items() if s["n"] and not math.isfinite(s["median"])]
            if not ranked:
                sentence = f"no method reaches {measure} {level:g}" if never else NOT_MEASURED
            elif len(ranked) == 1 and not never:
                sentence = f"only {labels.get(ranked[0], ranked[0])} measured"
            else:
                a = ranked[0]
                b = ranked[1] if len(ranked) > 1 else next(m for m, s in summaries.items()
                                                           if s["n"] and not math.isfinite(s["median"]))
                both = pd.concat([values[a], values[b]], axis=1).dropna()
                both = both[(both > 0).all(axis=1)]
                word = "time" if quantity == "seconds" else quantity
                sentence = compare(both.iloc[:, 0], both.iloc[:, 1], label_a=labels.get(a, a), label_b=labels.get(b, b),
                                   quantity=word, population=what)["sentence"].replace("fewer time", "less time")
            if never:
                sentence += f"; {NOT_REACHED}: {', '.join(never)}"
            row[f"conclusion ({'time' if quantity == 'seconds' else quantity})"] = sentence
        rows.append(row)
    return rows
