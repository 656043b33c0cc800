"""The conformance check of a study's results: did every run end with a true status inside its limit?

A conformance study (``studies/conformance.toml``) runs every (formulation, solver) pair on every
problem under a hard time limit. This module reads its results directory and answers three
questions the workbench promises, whatever the problem:

* no run ends in "crash" (the worker died, or a solver raised something other than bad input);
* no traceback is written to the worker log (``logs/worker.log``) other than those of runs recorded
  as failed because their solver raised (each after a line starting with ``FAILED_RUN_MARK``);
* no run takes longer than its time limit by more than ``OVERRUN`` seconds (wall time from the
  start of the run, the problem loaded; a killed run counts until its kill).

It gives a matrix problem x method of statuses (one letter per tolerance preset) and errors, and
a table per method: counts of each status, the success rate (solved over the runs that were
possible, "unavailable" ones left out) and the worst judged error. The runs the judge refused because
their measures disagree (the judged measure within tol, a scaled one not: workbench.judging.contradiction)
are counted and listed apart, each with the message that names both measures, so that an "inaccurate"
beside a judged error within tol is read as what it is.

The command is ``workbench conformance RESULTS_DIR [--matrix] [--results-page NAME]``
(:mod:`workbench.commands.study`): it exits 1 when a promise is broken, so that CI can fail on it, and
``--results-page NAME`` also writes the table and the counts as the documentation's results page
``docs/results/NAME`` (:func:`workbench.provenance.write_results`, rendered by :func:`render_page`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench import status
from workbench.errors import InputError
from workbench.judging import DISAGREE
from workbench.study.worker import FAILED_RUN_MARK

__all__ = ["OVERRUN", "STATUS_ORDER", "check_conformance", "method_table", "status_matrix", "page_data",
           "render_page"]

#: seconds a run may exceed its time limit
OVERRUN = 2.0
#: the statuses counted per method, best first (workbench.status; runs killed while warming up are listed apart)
STATUS_ORDER = tuple(s for s in status.ORDER if s not in status.LISTED_APART)


def _runs(results: Path) -> pd.DataFrame:
    from workbench.study.results import read_runs
    from workbench.study.store import ResultStore
    if not results.is_dir():
        raise InputError(f"{results}: no such results directory")
    runs = read_runs(ResultStore(results))
    if runs.empty:
        raise InputError(f"{results}: no runs recorded")
    runs = runs.copy()
    runs["pair"] = runs["formulation"] + "/" + runs["solver"]
    if "judged_error" not in runs:
        runs["judged_error"] = np.nan
    return runs


def check_conformance(results: Path | str) -> dict[str, Any]:
    """The runs, and the broken promises: crashes, overruns and the tracebacks in the worker log."""
    results = Path(results)
    runs = _runs(results)
    over = runs["wall_seconds"].fillna(0.0) > runs["time_limit"] + OVERRUN
    log = results / "logs" / "worker.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    # the traceback of a failed run (its solver raised, the run is recorded) follows a marked line;
    # any other is a crash's or the worker's own
    lines = text.splitlines()
    unmarked = sum(1 for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")
                   and not (i and lines[i - 1].startswith(FAILED_RUN_MARK)))
    disagree = runs["message"].fillna("").astype(str).str.contains(DISAGREE, regex=False)
    return {"runs": runs,
            "disagree": runs[disagree],
            "crashes": runs[runs["status"] == status.CRASH],
            "overruns": runs[over],
            "tracebacks": unmarked,
            "worst_overrun": float((runs["wall_seconds"] - runs["time_limit"]).max())}


def method_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (formulation, solver): status counts, success rate, worst error, longest run."""
    counts = pd.crosstab(runs["pair"], runs["status"]).reindex(columns=list(STATUS_ORDER), fill_value=0)
    possible = counts.sum(axis=1) - counts[status.UNAVAILABLE]
    table = counts.copy()
    table.insert(0, "runs", counts.sum(axis=1))
    table["success"] = (counts[status.SOLVED] / possible.where(possible > 0)).round(3)
    ran = runs[runs["status"] != status.UNAVAILABLE]
    table["worst error"] = ran.groupby("pair")["judged_error"].max().reindex(table.index)
    table["longest s"] = ran.groupby("pair")["wall_seconds"].max().reindex(table.index).round(1)
    return table


def status_matrix(runs: pd.DataFrame) -> pd.DataFrame:
    """Problem x (formulation, solver): the status letters at each preset (tolerance order of the
    study) and the worst judged error, e.g. ``SSI 3.1e-07``; '-' where the pair was not planned."""
    order = {t: i for i, t in enumerate(runs.sort_values("tol", ascending=False)["tolerance"].unique())}
    runs = runs.assign(_o=runs["tolerance"].map(order)).sort_values("_o")

    def cell(group: pd.DataFrame) -> str:
        letters = "".join(status.letter(s) for s in group["status"])
        err = group["judged_error"].max()
        return letters if not np.isfinite(err) else f"{letters} {err:.1e}"

    cells = runs.groupby(["problem", "pair"])[["status", "judged_error"]].apply(cell)
    sizes = runs.groupby("problem")["n_contacts"].first()
    matrix = cells.unstack("pair").fillna("-")
    matrix.index = [f"{p} ({sizes[p]})" for p in matrix.index]
    return matrix


def page_data(report: dict[str, Any]) -> dict[str, Any]:
    """The plain data of a results page: the method table's rows, the status counts and the promises."""
    runs = report["runs"]
    table = method_table(runs)
    rows = [{"pair": pair, **{k: (None if pd.isna(v) else v.item() if hasattr(v, "item") else v)
                              for k, v in row.items()}} for pair, row in table.iterrows()]
    return {"rows": rows, "runs": len(runs), "problems": int(runs["problem"].nunique()),
            "pairs": int(runs["pair"].nunique()),
            "time_limits": sorted(float(t) for t in runs["time_limit"].unique()),
            "tolerances": sorted(str(t) for t in runs["tolerance"].unique()),
            "crashes": len(report["crashes"]), "tracebacks": int(report["tracebacks"]),
            "disagree": len(report["disagree"]),
            "overruns": len(report["overruns"]), "worst_overrun": round(report["worst_overrun"], 2)}


def render_page(data: dict[str, Any]) -> str:
    """Markdown of :func:`page_data`: the promises, then one row per (formulation, solver)."""
    columns = ["runs", *STATUS_ORDER, "success", "worst error", "longest s"]

    def show(value) -> str:
        return "nan" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)

    lines = [f"{data['runs']} runs on {data['problems']} problems, {data['pairs']} (formulation, solver) pairs; "
             f"time limit {', '.join(f'{t:g}' for t in data['time_limits'])} s; tolerance presets "
             f"{', '.join(data['tolerances'])}.",
             "",
             f"Crashes {data['crashes']}, tracebacks {data['tracebacks']}, runs over their time limit by more than "
             f"{OVERRUN:g} s {data['overruns']} (worst: limit {data['worst_overrun']:+.2f} s).",
             "",
             *([f"Runs not solved because their measures disagree (the judged measure within tol, a scaled "
                f"one not; each run's message names both): {data['disagree']}.", ""] if "disagree" in data else []),
             "| pair | " + " | ".join(columns) + " |",
             "|---|" + "---:|" * len(columns)]
    lines += ["| " + " | ".join([row["pair"], *(show(row[c]) for c in columns)]) + " |" for row in data["rows"]]
    return "\n".join(lines) + "\n"
