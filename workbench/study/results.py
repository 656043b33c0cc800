"""The results API: a study's runs as one tidy table, and their per-iteration histories in one schema.

    >>> from workbench.study import load_results, load_histories
    >>> runs = load_results("results/quickstart")          # one row per run (columns: RUN_COLUMNS)
    >>> hist = load_histories("results/quickstart")        # one row per (run, iteration, error measure)

Only the runs of the results directory's current plan are returned (rows that an earlier version of
the study left on disk are not mixed in); the dedicated reference runs of the study's [reference]
(role "reference") only when asked. Histories come in the fixed schema LOADED_HISTORY_COLUMNS, whatever
the solver logged: stores written before the schema was fixed (columns ``elapsed``,
``dual_objective``, ``residual``, ...) are converted here, in this one place.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from workbench.solvers.recorder import HISTORY_COLUMNS
from workbench.study.record import RUN_ROW, complete
from workbench.study.row_check import check_run_rows
from workbench.study.store import ResultStore

__all__ = ["load_results", "read_runs", "row_check", "load_histories", "read_histories", "current_runs", "to_history_schema", "RUN_COLUMNS",
           "LOADED_HISTORY_COLUMNS"]

#: the documented columns of load_results: the declared run row (workbench.study.record.RUN_ROW),
#: name -> meaning (any other metric of workbench.metrics or of the model follows as an extra column)
RUN_COLUMNS = {name: column.meaning for name, column in RUN_ROW.items()}

#: the columns naming a history's run
_RUN_ID_COLUMNS = {"key": "the run", "problem": "problem name", "method": "method name", "repetition": "0, 1, ..."}
#: a loaded history's columns: its run, then the solvers' fixed schema (workbench.solvers.recorder
#: HISTORY_COLUMNS), then any solver-specific extra columns
LOADED_HISTORY_COLUMNS = {**_RUN_ID_COLUMNS, **HISTORY_COLUMNS}

#: older stores: (column or columns whose maximum is taken) holding an error measure, preferred first
_OLD_ERRORS = (("judged_error",), ("relaxed_error",), ("siconos_error",), ("ccp_residual",), ("residual",),
               ("res_primal", "res_dual"), ("res_pri", "res_dual"))
_OLD_OBJECTIVES = ("objective", "dual_objective", "solver_primal_objective")
_OLD_ITERATIONS = ("iteration", "outer")
_OLD_SECONDS = ("seconds", "elapsed")
_RUN_ID = tuple(_RUN_ID_COLUMNS)


def row_check(frame: pd.DataFrame, path) -> pd.DataFrame:
    """The table of the run file ``path`` checked against the declared run row, RUN_ROW
    (workbench.study.row_check.check_run_rows): what every reader of rows passes to ResultStore."""
    return check_run_rows(frame, path, RUN_ROW)


def read_runs(store: ResultStore) -> pd.DataFrame:
    """Every run row of ``store``, each checked by :func:`row_check` before use: the way the
    workbench reads rows back from a results folder (report, load_results, the conformance check;
    ``run --rerun-failed`` passes row_check to ResultStore.unsolved_keys)."""
    return store.read_runs(row_check)


def load_results(results_dir: os.PathLike | str, include_reference: bool = False) -> pd.DataFrame:
    """One row per run of the current plan (InputError when ``results_dir`` is not a results
    directory); columns RUN_COLUMNS and the metrics, in plan order."""
    store = ResultStore(results_dir)
    plan = store.read_json("plan.json")
    return current_runs(read_runs(store), plan, include_reference)


def current_runs(runs: pd.DataFrame, plan: dict, include_reference: bool) -> pd.DataFrame:
    """The rows of ``runs`` that the plan names, in plan order, with numeric columns coerced."""
    keys = [r["key"] for r in plan["runs"]]
    if include_reference:
        keys += [r["key"] for r in plan.get("reference_runs", [])]
    if runs.empty:
        return pd.DataFrame(columns=list(RUN_COLUMNS))
    order = {k: i for i, k in enumerate(keys)}
    runs = runs[runs["key"].isin(order)].copy()
    runs = runs.iloc[np.argsort(runs["key"].map(order).to_numpy(), kind="stable")].reset_index(drop=True)
    runs = complete(runs)  # older rows: the columns they lack as the declaration fills them
    # a solver that could not run did no iterations in no time: NaN, not 0
    runs.loc[runs["status"] == "unavailable", ["iterations", "build_seconds", "solve_seconds", "total_seconds"]] = np.nan
    return runs


def load_histories(results_dir: os.PathLike | str, keys=None) -> pd.DataFrame:
    """The per-iteration histories of the runs ``keys`` (default: every single-step run of the
    current plan, reference runs included) that kept one, in the schema LOADED_HISTORY_COLUMNS, then
    judged_name and judged_error (the workbench's judged measure of the row's iterate, the same for
    every solver: workbench.judging.judge_history; NaN where it was not computed) and the
    solver's extra columns."""
    store = ResultStore(results_dir)
    if keys is None:
        runs = load_results(results_dir, include_reference=True)
        keys = runs.loc[runs["kind"] != "simulation", "key"] if len(runs) else []
    return read_histories(store, keys)


def read_histories(store: ResultStore, keys) -> pd.DataFrame:
    """load_histories on an open store."""
    long = store.read_histories(keys) if len(keys) else pd.DataFrame()
    # no run kept a history (a study with histories = false): an empty table, not a KeyError
    frames = [to_history_schema(f) for _, f in long.groupby("key", sort=False)] if "key" in long else []
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=list(LOADED_HISTORY_COLUMNS))
    return pd.concat(frames, ignore_index=True)


def to_history_schema(frame: pd.DataFrame) -> pd.DataFrame:
    """One run's history in the fixed schema: iteration, seconds, objective, error_name, error first,
    then the rest. A history already in it is returned as is; an older one gets its iteration
    (``iteration`` or ``outer``), seconds (``elapsed``), objective (``dual_objective`` or
    ``solver_primal_objective``) and one error measure (the first of _OLD_ERRORS it logged; a pair is
    reduced to its maximum, named ``max(a, b)``)."""
    frame = frame.dropna(axis=1, how="all")
    if {"iteration", "seconds", "error_name", "error"} <= set(frame.columns):
        out = frame.copy()
        if "objective" not in out:
            out["objective"] = np.nan
    else:
        it = next((c for c in _OLD_ITERATIONS if c in frame), None)
        sec = next((c for c in _OLD_SECONDS if c in frame), None)
        obj = next((c for c in _OLD_OBJECTIVES if c in frame), None)
        out = frame.copy()
        out["iteration"] = frame[it] if it else np.arange(len(frame))
        out["seconds"] = frame[sec] if sec else np.nan
        out["objective"] = pd.to_numeric(frame[obj], errors="coerce") if obj else np.nan
        out["error_name"], out["error"] = None, np.nan
        for option in _OLD_ERRORS:
            if all(c in frame for c in option):
                values = frame[list(option)].apply(pd.to_numeric, errors="coerce").abs().max(axis=1)
                out["error_name"] = option[0] if len(option) == 1 else f"max({', '.join(option)})"
                out["error"] = values
                break
    first = [c for c in _RUN_ID if c in out] + list(HISTORY_COLUMNS)
    out = out[first + [c for c in out.columns if c not in first]]
    out["iteration"] = pd.to_numeric(out["iteration"], errors="coerce")
    out["seconds"] = pd.to_numeric(out["seconds"], errors="coerce")
    out["error"] = pd.to_numeric(out["error"], errors="coerce")
    return out
