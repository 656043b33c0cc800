"""The one table of a run's statuses and of the measures a status is judged by.

A run's status is judged by the workbench (:func:`workbench.judging.finalize`), never claimed by the
solver; the runner adds the statuses of a run that returned no answer of its own (crash, unavailable,
warm-up). :data:`TABLE` lists them best first, each with its one-letter code (conformance matrices),
its meaning and the groups it belongs to; every reader (the solvers' result type, the judge, the run
row and its check, conformance, a simulation's worst step, the report's accounting) takes the order,
the groups and the names from here.

Groups:

* judged: given by finalize from the returned point (or its absence), against ``options.accept``;
* cap reached: a cap (iterations, time) stopped the run before acceptance; the stop causes of
  :class:`workbench.solvers.base.StopCause` with the same names;
* produced nothing: the status says no point came back (a cap reached may come with or without one);
* not the method's fault: counted nowhere, neither as a success nor as a failure of the method
  (workbench.analysis.accounting); of these, warm-up runs are listed apart by the reports.

:data:`JUDGED_MEASURES` names the measures a model can be judged by (its ``judged_by``): the relaxed
natural-map error of relaxed formulations, the exact (De Saxce) Siconos error of exact ones, the
LCP residual of the pyramid LCP model (workbench.metrics, workbench.lcp_metrics).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Status", "TABLE", "BY_NAME", "ORDER", "JUDGED", "CAP_REACHED", "PRODUCED_NOTHING",
           "NOT_METHODS_FAULT", "LISTED_APART", "SOLVED", "INACCURATE", "MAX_ITER", "TIMEOUT", "FAILED",
           "CRASH", "UNAVAILABLE", "WARM_UP", "JUDGED_MEASURES", "RELAXED_ERROR", "SICONOS_ERROR",
           "LCP_RESIDUAL", "EVALUATED", "letter"]


@dataclass(frozen=True)
class Status:
    """One status: its name (as written in run rows), its one-letter code, what it means, and its
    groups (module docstring)."""
    name: str
    letter: str
    meaning: str
    judged: bool = False
    cap: bool = False
    nothing: bool = False
    not_methods_fault: bool = False
    apart: bool = False


SOLVED, INACCURATE, MAX_ITER, TIMEOUT, FAILED = "solved", "inaccurate", "max_iter", "timeout", "failed"
CRASH, UNAVAILABLE, WARM_UP = "crash", "unavailable", "warm-up"

#: every status, best first
TABLE: tuple[Status, ...] = (
    Status(SOLVED, "S", "the workbench's own error measure is within options.accept", judged=True),
    Status(INACCURATE, "I", "a point came back but its error exceeds options.accept", judged=True),
    Status(MAX_ITER, "M", "the iteration cap stopped the solver before acceptance", judged=True, cap=True),
    Status(TIMEOUT, "T", "the time limit stopped the solver (or the runner killed it)", judged=True, cap=True),
    Status(FAILED, "F", "the solver returned no usable point (an exception, claimed infeasible, ...)",
           judged=True, nothing=True),
    Status(CRASH, "C", "the worker process died (set by the runner)", nothing=True),
    Status(UNAVAILABLE, "U", "the solver cannot run here (missing package, licence or device)", nothing=True,
           not_methods_fault=True),
    Status(WARM_UP, "W", "the runner killed the worker while it warmed the method up, before the run's "
           "clock and time limit started (workbench.study.worker.WARM_UP_LIMIT): neither the method's "
           "failure nor its time; reports list these runs apart", nothing=True, not_methods_fault=True,
           apart=True),
)

BY_NAME: dict[str, Status] = {s.name: s for s in TABLE}
#: the names, best first
ORDER: tuple[str, ...] = tuple(s.name for s in TABLE)
JUDGED: tuple[str, ...] = tuple(s.name for s in TABLE if s.judged)
CAP_REACHED: tuple[str, ...] = tuple(s.name for s in TABLE if s.cap)
PRODUCED_NOTHING: tuple[str, ...] = tuple(s.name for s in TABLE if s.nothing)
NOT_METHODS_FAULT: tuple[str, ...] = tuple(s.name for s in TABLE if s.not_methods_fault)
LISTED_APART: tuple[str, ...] = tuple(s.name for s in TABLE if s.apart)


def letter(name: str) -> str:
    """The one-letter code of a status ("?" for a name not in the table)."""
    s = BY_NAME.get(name)
    return s.letter if s else "?"


RELAXED_ERROR, SICONOS_ERROR, LCP_RESIDUAL = "relaxed_error", "siconos_error", "lcp_residual"
#: the measures a run can be judged by (a model's ``judged_by``): relaxed formulations, exact ones,
#: the LCP model
JUDGED_MEASURES: tuple[str, ...] = (RELAXED_ERROR, SICONOS_ERROR, LCP_RESIDUAL)
#: those that workbench.metrics.evaluate computes from any returned impulses; the others are a
#: model's own (its ``own_metrics``, from its own variables)
EVALUATED: tuple[str, ...] = (RELAXED_ERROR, SICONOS_ERROR)
