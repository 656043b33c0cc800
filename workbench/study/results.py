"""The results API: a study's runs as one tidy table, and their per-iteration histories in one schema.

    >>> from workbench.study import load_results, load_histories
    >>> runs = load_results("results/quickstart")          # one row per run (columns: RUN_COLUMNS)
    >>> hist = load_histories("results/quickstart")        # one row per (run, iteration, error measure)

Only the runs of the results directory's current plan are returned (rows that an earlier version of
the study left on disk are not mixed in); the dedicated reference runs of the study's [reference]
(role "reference") only when asked. Histories come in the fixed schema HISTORY_COLUMNS, whatever
the solver logged: stores written before the schema was fixed (columns ``elapsed``,
``dual_objective``, ``residual``, ...) are converted here, in this one place.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from workbench.study.row_check import check_run_rows
from workbench.study.store import ResultStore

__all__ = ["load_results", "read_runs", "row_check", "load_histories", "read_histories", "current_runs", "to_history_schema", "RUN_COLUMNS",
           "HISTORY_COLUMNS"]

#: the documented columns of load_results (the metrics of workbench.metrics follow as extra columns)
RUN_COLUMNS = {
    "key": "content hash of the run (problem data, method settings, time limit, repetition, version)",
    "study": "study name", "role": '"compared", or "reference" for a dedicated reference run',
    "problem": "problem name", "problem_hash": "hash of the problem data", "source": "file, scene:NAME, ...",
    "tags": "the problem group's tags, comma-separated", "series": "the group's scaling series, or None",
    "kind": "global, local or simulation", "n_contacts": "contacts", "n_dof": "degrees of freedom (global)",
    "d": "2 or 3", "method": "method name in the study (NAME@PRESET when several presets)",
    "label": "method label", "formulation": "formulation", "solver": "solver",
    "tolerance": "tolerance preset", "tol": "accuracy asked of the solver",
    "accept": "judged error at most this counts as solved (None: tol)", "max_iter": "iteration cap",
    "params": "solver parameters (JSON)", "time_limit": "seconds per run", "repetition": "0, 1, ...",
    "status": "solved, inaccurate, max_iter, timeout, failed, crash or unavailable",
    "solver_status": "the solver's own claim (recorded, never trusted)",
    "objective": "the formulation's objective at the returned point",
    "solver_objective": "the solver's own objective", "iterations": "iterations",
    "build_seconds": "model build and compilation [s]", "solve_seconds": "solve [s]",
    "total_seconds": "build + solve [s]", "wall_seconds": "the whole run in its worker [s]",
    "judged_error": "the error measure the status is judged by (relaxed, Siconos or LCP)",
    "message": "the solver's message", "info": "solver details (JSON)",
    "handover": 'the hand-overs to another method in words ("ncp/pqn -> pgs fallback"; "" when it ran alone)',
    "handover_detail": "the hand-overs as JSON: kind, from, to, reason, at_iteration, at_seconds, stop_before, "
                       "error_before (what the method reached alone), measure, used, status_alone, ...",
    "host": "machine",
    "session": "the workbench run invocation (provenance)", "finished_at": "UTC time",
}

#: the fixed history schema (then any solver-specific extra columns)
HISTORY_COLUMNS = {
    "key": "the run", "problem": "problem name", "method": "method name", "repetition": "0, 1, ...",
    "iteration": "iteration (outer iteration for fixed points and LCP1)",
    "seconds": "wall time since the solve started [s]",
    "objective": "the formulation's objective (NaN if the solver does not log it)",
    "error_name": "which error measure (relaxed_error, siconos_error, gap_rel, res_pri, ...)",
    "error": "its value",
}

_NUMERIC = ("objective", "solver_objective", "iterations", "build_seconds", "solve_seconds", "wall_seconds",
            "judged_error", "siconos_error", "relaxed_error", "ccp_residual", "complementarity", "analytic_error",
            "max_contacts", "mean_iterations", "n_contacts", "steps", "tol", "accept", "time_limit")

#: older stores: (column or columns whose maximum is taken) holding an error measure, preferred first
_OLD_ERRORS = (("judged_error",), ("relaxed_error",), ("siconos_error",), ("ccp_residual",), ("residual",),
               ("res_primal", "res_dual"), ("res_pri", "res_dual"))
_OLD_OBJECTIVES = ("objective", "dual_objective", "solver_primal_objective")
_OLD_ITERATIONS = ("iteration", "outer")
_OLD_SECONDS = ("seconds", "elapsed")
_RUN_ID = ("key", "problem", "method", "repetition")


def row_check(frame: pd.DataFrame, path) -> pd.DataFrame:
    """The table of the run file ``path`` checked against the declared run row, RUN_COLUMNS
    (workbench.study.row_check.check_run_rows): what every reader of rows passes to ResultStore."""
    return check_run_rows(frame, path, RUN_COLUMNS)


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
    if "role" not in runs:  # written before reference runs existed
        runs["role"] = "compared"
    if "series" not in runs:
        runs["series"] = None
    if "handover" not in runs:  # written before hand-overs were recorded
        runs["handover"], runs["handover_detail"] = "", "[]"
    runs["handover"] = runs["handover"].fillna("")
    runs["handover_detail"] = runs["handover_detail"].fillna("[]")
    for col in _NUMERIC:
        if col in runs:
            runs[col] = pd.to_numeric(runs[col], errors="coerce")
    # a solver that could not run did no iterations in no time: NaN, not 0
    runs.loc[runs["status"] == "unavailable", ["iterations", "build_seconds", "solve_seconds"]] = np.nan
    runs["total_seconds"] = runs["build_seconds"] + runs["solve_seconds"]
    return runs


def load_histories(results_dir: os.PathLike | str, keys=None) -> pd.DataFrame:
    """The per-iteration histories of the runs ``keys`` (default: every single-step run of the
    current plan, reference runs included) that kept one, in the schema HISTORY_COLUMNS, then
    judged_name and judged_error (the workbench's judged measure of the row's iterate, the same for
    every solver: workbench.solvers.base.judge_history; NaN where it was not computed) and the
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
        return pd.DataFrame(columns=list(HISTORY_COLUMNS))
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
    first = [c for c in _RUN_ID if c in out] + list(HISTORY_COLUMNS)[4:]
    out = out[first + [c for c in out.columns if c not in first]]
    out["iteration"] = pd.to_numeric(out["iteration"], errors="coerce")
    out["seconds"] = pd.to_numeric(out["seconds"], errors="coerce")
    out["error"] = pd.to_numeric(out["error"], errors="coerce")
    return out
