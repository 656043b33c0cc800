"""The run row, declared once: every column a study writes for a run (name, dtype, meaning, where it
comes from, what an older row lacking it reads as), as qpbenchmark declares its ``Results`` columns.

The runner builds each row from it (:func:`run_row`: a :class:`PlannedRun`'s ``columns()``, each
plan column read from the planned run as it declares, then the run's record, then provenance), the results loader describes and completes rows by it (:func:`complete`), and the worker
answers every run in one shape, :func:`answer`: the :meth:`SolveResult.record
<workbench.solvers.base.SolveResult.record>` of the run plus ``wall_seconds``, ``host`` and
``steps``, whether the run was solved, simulated a scene, crashed or was killed.

    >>> from workbench.study.record import RUN_ROW
    >>> RUN_ROW["judged_name"].dtype
    'str'

Origins: ``plan`` (the problem, the method, the repetition: known before the run), ``record`` (the
worker's answer, key ``source``), ``metric`` (the workbench's metrics of the returned point, one
column per measure; present where computed, not filled in), ``runner`` (computed by the runner from
the answer and the study when it writes the row), ``derived`` (computed by the loader),
``provenance`` (the session). Columns of origin ``plan``, ``record``, ``runner`` and ``provenance`` are
in every row the runner writes; a row written before one of them existed reads as its ``fill``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from workbench.status import ORDER

__all__ = ["Column", "RUN_ROW", "ANSWER", "PlannedRun", "answer", "machine_effect", "run_row", "complete",
           "record_columns"]

#: what a column may hold: text, a whole number, a real number (NaN or None when unknown), JSON text
DTYPES = ("str", "int", "float", "json")


@dataclass(frozen=True)
class Column:
    """One column of the run row. ``source``: the answer's key (origin "record"; default the name);
    ``fill``: what a row written before the column existed reads as (a value, or a function of the
    loaded frame giving one per row); ``encode``: the answer's value -> the stored one (default by
    dtype); ``number``: read back as a number, NaN where unknown (default: the float columns); ``of``: a
    column of origin "plan" read from the :class:`PlannedRun`."""
    name: str
    dtype: str
    meaning: str
    origin: str
    source: str | None = None
    fill: Any = None
    encode: Callable[[Any], Any] | None = None
    number: bool | None = None
    of: Callable[[PlannedRun], Any] | None = None

    def __post_init__(self):
        assert self.dtype in DTYPES and self.origin in ("plan", "record", "metric", "runner", "derived", "provenance")
        assert (self.of is not None) == (self.origin == "plan"), self.name
        if self.number is None:
            object.__setattr__(self, "number", self.dtype == "float")

    def value(self, answer: dict[str, Any]) -> Any:
        """This column's value for the worker's ``answer`` (origin "record")."""
        raw = answer.get(self.source or self.name)
        if self.encode is not None:
            return self.encode(raw)
        if raw is None:
            return None
        if self.dtype == "float":  # a record writes non-finite numbers as text ("inf", "nan")
            return float(raw)
        if self.dtype == "int":
            return int(raw)
        if self.dtype == "json":
            return json.dumps(raw, sort_keys=True)
        return raw


def _guess_judged_name(runs):
    """judged_name of rows written before the record named it: the judged measure whose value equals
    judged_error (None where no point was judged)."""
    from workbench.status import JUDGED_MEASURES

    def one(row) -> str | None:
        judged = row.get("judged_error", np.nan)
        for name in JUDGED_MEASURES:
            v = row.get(name, np.nan)
            if v is not None and judged is not None and np.isfinite(judged) and np.isfinite(v) \
                    and np.isclose(v, judged, rtol=1e-12, atol=0):
                return name
        return None
    return runs.apply(one, axis=1) if len(runs) else runs.index.to_series().map(lambda _: None)


def _c(name, dtype, origin, meaning, **kw) -> Column:
    return Column(name=name, dtype=dtype, meaning=meaning, origin=origin, **kw)


def _plan(name, dtype, meaning, of, **kw) -> Column:
    """A column known before the run, ``of`` the planned run: the problem, the method, the repetition."""
    return _c(name, dtype, "plan", meaning, of=of, **kw)


def _problem(name, dtype, meaning, **kw) -> Column:
    """A problem column: the run's source as it describes itself (workbench.sources.Source.describe)."""
    return _plan(name, dtype, meaning, lambda run: run.source.describe()[name], **kw)


def _method(name, dtype, meaning, **kw) -> Column:
    """A method column: the run's study method as it describes itself (StudyMethod.describe)."""
    return _plan(name, dtype, meaning, lambda run: run.method.describe()[name], **kw)


def _metric(name, meaning) -> Column:
    """A metric of the returned point (a float column where computed)."""
    return _c(name, "float", "metric", meaning)


#: the run row, in the order the runner writes it (then any other metric of the point, a float column)
RUN_ROW: dict[str, Column] = {c.name: c for c in (
    _plan("key", "str", "content hash of the run (problem data, method settings, time limit, repetition, version)",
          lambda run: run.key),
    _plan("study", "str", "study name", lambda run: run.study),
    _plan("role", "str", '"compared", or "reference" for a dedicated reference run', lambda run: run.role,
          fill="compared"),
    _problem("problem", "str", "problem name"),
    _problem("problem_hash", "str", "hash of the problem data"),
    _problem("source", "str", "file, scene:NAME, ..."),
    _plan("tags", "str", "the problem group's tags, comma-separated", lambda run: ",".join(run.source.tags)),
    _problem("series", "str", "the group's scaling series, or None"),
    _problem("kind", "str", "global, local or simulation"),
    _problem("n_contacts", "int", "contacts", number=True),
    _problem("n_dof", "int", "degrees of freedom (global)"),
    _problem("d", "int", "2 or 3"),
    _method("method", "str", "method name in the study (NAME@PRESET when several presets)"),
    _method("label", "str", "method label"),
    _method("formulation", "str", "formulation"),
    _method("solver", "str", "solver"),
    _method("tolerance", "str", "tolerance preset"),
    _method("tol", "float", "accuracy asked of the solver"),
    _method("accept", "float", "judged error at most this counts as solved (None: tol)"),
    _method("max_iter", "int", "iteration cap"),
    _plan("params", "json", "solver parameters (JSON)", lambda run: json.dumps(run.method.params, sort_keys=True)),
    _plan("time_limit", "float", "seconds per run", lambda run: run.time_limit),
    _plan("repetition", "int", "0, 1, ...", lambda run: run.repetition),
    _c("status", "str", "record", ", ".join(ORDER[:-1]) + " or " + ORDER[-1]),
    _c("stop", "str", "record", "the cause that ended the run, as the solver knows it (converged, max_iter, timeout, "
                                "stalled, failed; timeout for a run the runner killed at its hard limit; None when "
                                "none is known): a claim, the status is judged"),
    _c("solver_status", "str", "record", "the solver's own claim (recorded, never trusted)"),
    _c("objective", "float", "record", "the formulation's objective at the returned point"),
    _c("solver_objective", "float", "record", "the solver's own objective"),
    _c("iterations", "int", "record", "iterations (a simulation: summed over its steps)", number=True),
    _c("build_seconds", "float", "record", "model build and compilation [s]"),
    _c("solve_seconds", "float", "record", "solve [s] (a simulation: summed over its steps; None for a run that "
                                           "produced nothing)"),
    _c("wall_seconds", "float", "record", "the whole run in its worker [s]"),
    _c("message", "str", "record", "the solver's message"),
    _c("info", "json", "record", "solver details (JSON)"),
    _c("host", "str", "record", "machine"),
    _c("steps", "int", "record", "time steps taken (a simulation; None for a single time step)", number=True),
    _c("handover", "str", "record",
       'the hand-overs to another method in words ("ncp/pqn -> pgs fallback"; "" when it ran alone; a '
       "simulation: the labels of its steps' hand-overs)", source="handover_label", fill="",
       encode=lambda v: v or ""),
    _c("handover_detail", "json", "record",
       "the hand-overs as JSON: kind, from, to, reason, at_iteration, at_seconds, stop_before, error_before (what "
       "the method reached alone), measure, used, status_alone, ...", source="handover", fill="[]",
       encode=lambda v: json.dumps(v or [], default=str)),
    _c("judged_name", "str", "record", "the measure judged_error is (relaxed_error, siconos_error, lcp_residual; "
                                       "None when no point was judged)", fill=_guess_judged_name),
    _metric("judged_error", "the error measure the status is judged by (judged_name)"),
    _metric("relaxed_error", "the relaxed (Anitescu) natural-map error (workbench.metrics)"),
    _metric("siconos_error", "the exact (De Saxce) natural-map error, Siconos-normalised"),
    _metric("ccp_residual", "the CCP residual (Melanz et al. 2015 eq. 39)"),
    _metric("complementarity", "max |gamma_n u_n| (a simulation: the largest over steps)"),
    _metric("analytic_error", "a simulation: the largest deviation of a tracked velocity from its "
                                            "analytic curve [m/s]"),
    _metric("max_contacts", "a simulation: the most contacts of a step"),
    _metric("mean_iterations", "a simulation: iterations per step"),
    _c("machine_effect", "str", "runner",
       '"safety net": the run reached a time limit that the study declares a safety net (safety_net = true): '
       "the machine's speed ended it, not the method; \"\" otherwise", fill=""),
    _c("total_seconds", "float", "derived", "build + solve [s]"),
    _c("session", "str", "provenance", "the workbench run invocation (provenance)"),
    _c("workbench_version", "str", "provenance", "the workbench's version that wrote the row"),
    _c("finished_at", "str", "provenance", "UTC time"),
)}

@dataclass(frozen=True)
class PlannedRun:
    """A run of the plan: its ``source`` (a made :class:`workbench.sources.Source`), its study
    ``method`` (workbench.study.spec.StudyMethod), its ``repetition`` and ``key`` (the content hash,
    workbench.study.runner.run_key), in its ``study`` under its ``time_limit``, as a compared run or a
    dedicated reference run (``role``). Its row's plan columns are :meth:`columns`."""
    source: Any
    method: Any
    repetition: int
    key: str
    study: str
    time_limit: float
    role: str = "compared"

    def columns(self) -> dict[str, Any]:
        """The row's columns of origin "plan", each as RUN_ROW declares it is read from the run."""
        return {c.name: c.of(self) for c in RUN_ROW.values() if c.origin == "plan"}


def _record_keys() -> list[str]:
    """The keys of :meth:`SolveResult.record <workbench.solvers.base.SolveResult.record>` (point and
    history included), in its order."""
    from workbench.solvers import SolveResult
    return list(SolveResult("", "", "crash").record())


#: what a run that produced nothing answers for the record's keys, where it is not None
_NOTHING = {"status": "crash", "metrics": {}, "message": "", "handover": [], "handover_label": ""}
#: what the worker adds to the record: its times and machine, a simulation's steps, ``input_error``
#: (the one line of a refused input, which a command raises again) and ``problem`` (the name and
#: contacts of the problem it loaded, for a command that did not load it itself)
_WORKER = {"wall_seconds": None, "host": None, "steps": None, "input_error": None, "problem": None}

#: the worker's answer for a run, in one shape: key -> its value when the run produced none. The
#: SolveResult.record keys (the history as a DataFrame; nu and v only when asked), then the worker's
ANSWER: dict[str, Any] = {**dict.fromkeys(_record_keys()), **_NOTHING, **_WORKER}


def answer(**fields) -> dict[str, Any]:
    """The worker's answer with ``fields`` (keys of ANSWER), every other key as ANSWER says."""
    unknown = set(fields) - set(ANSWER)
    if unknown:
        raise TypeError(f"not a key of the run's answer (workbench.study.record.ANSWER): {', '.join(sorted(unknown))}")
    out = {k: fields.get(k, v) for k, v in ANSWER.items()}
    out["metrics"] = dict(out["metrics"] or {})
    out["handover"] = list(out["handover"] or [])
    return out


def record_columns() -> list[Column]:
    """The columns of origin "record", in row order."""
    return [c for c in RUN_ROW.values() if c.origin == "record"]


def machine_effect(status: str | None, safety_net: bool) -> str:
    """The row's ``machine_effect``: "safety net" for a run that reached the time limit of a study that
    declares it a safety net (the machine's speed ended it, not the method), else ""."""
    return "safety net" if safety_net and status == "timeout" else ""


def run_row(plan: dict[str, Any], result: dict[str, Any], provenance: dict[str, Any],
            safety_net: bool = False) -> dict[str, Any]:
    """The stored row of one run: ``plan`` (the plan columns, all of them), the columns of origin
    "record" from the worker's answer ``result``, its metrics (float), ``machine_effect`` (whether the
    study's time limit is a ``safety_net``), then ``provenance``."""
    missing = [c.name for c in RUN_ROW.values() if c.origin in ("plan", "provenance")
               and c.name not in {**plan, **provenance}]
    if missing:
        raise KeyError(f"the run row lacks {', '.join(missing)}")
    row = {c.name: plan[c.name] for c in RUN_ROW.values() if c.origin == "plan"}
    row.update({c.name: c.value(result) for c in record_columns()})
    row.update({k: float(v) for k, v in (result.get("metrics") or {}).items()})
    row["machine_effect"] = machine_effect(row["status"], safety_net)
    row.update({c.name: provenance[c.name] for c in RUN_ROW.values() if c.origin == "provenance"})
    return row


def complete(runs):
    """Rows read from a results folder, completed by the declaration: the ``number`` columns as
    numbers (their text "inf", "nan" too); a column of origin "plan", "record" or "provenance" that
    older rows lack (absent, or null in their rows) reads as its ``fill``; ``total_seconds`` derived.
    ``runs``: a pandas DataFrame (pandas is imported here: the worker's answers need none)."""
    import pandas as pd
    runs = runs.copy()
    for c in RUN_ROW.values():
        if c.number and c.name in runs:
            runs[c.name] = pd.to_numeric(runs[c.name], errors="coerce")
    for c in RUN_ROW.values():
        if c.origin in ("metric", "derived"):
            continue
        if c.name not in runs:
            runs[c.name] = c.fill(runs) if callable(c.fill) else c.fill
        elif c.fill is not None and runs[c.name].isna().any():
            lacking = runs[c.name].isna()
            runs[c.name] = runs[c.name].where(~lacking, c.fill(runs[lacking])) if callable(c.fill) \
                else runs[c.name].fillna(c.fill)
    runs["total_seconds"] = runs["build_seconds"] + runs["solve_seconds"]
    return runs
