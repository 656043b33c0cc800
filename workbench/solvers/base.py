"""The one solver interface and the one result type every solver returns.

``Solver.solve(model, options) -> SolveResult``: the model is what a formulation built
(:class:`formulations.base.CvxpyModel` or :class:`formulations.base.CCQOModel`); the result carries the
impulses, the solver's raw claims (recorded, never trusted) and, filled in by
:func:`finalize`, the workbench's own metrics and the status judged from them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from workbench import metrics

__all__ = ["SolveOptions", "SolveResult", "Solver", "STATUSES", "finalize"]

#: Status of a run, judged by the workbench:
#:   solved       the workbench's own error measure is within options.accept
#:   inaccurate   a solution came back but its error exceeds options.accept
#:   max_iter     the iteration cap stopped the solver before acceptance
#:   timeout      the time limit stopped the solver (or the runner killed it)
#:   failed       the solver returned no usable solution (error, claimed infeasible, ...)
#:   crash        an exception or a dead worker (set by the runner)
#:   unavailable  the solver cannot run here (missing package or licence)
STATUSES = ("solved", "inaccurate", "max_iter", "timeout", "failed", "crash", "unavailable")


@dataclass
class SolveOptions:
    """What the user asks of a solve.

    tol: the accuracy wanted, on the workbench's own error measure (relaxed formulations:
         ``relaxed_error``; exact ones: ``siconos_error``). Iterative solvers stop on it; conic
         solvers map it to their own settings (an interior-point method's natural-map error behaves
         like the square root of its gap, so Clarabel and MOSEK get gap and feasibility tolerances
         tol^2, floored at 1e-12; SCS gets eps = tol / 100).
    accept: threshold on that measure for the status "solved"; None means ``tol``.
    max_iter, time_limit: caps (None: the solver's default).
    warm_start: initial impulses nu (physical units), where the solver supports it.
    params: solver-specific settings passed through unchanged.
    keep_history: record a per-iteration history where the solver can.
    """
    tol: float = 1e-6
    accept: float | None = None
    max_iter: int | None = None
    time_limit: float | None = None
    warm_start: np.ndarray | None = None
    verbose: bool = False
    keep_history: bool = True
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class SolveResult:
    """Outcome of one solve, in physical units. ``objective`` is the formulation's own objective
    evaluated by the workbench at the returned point; ``solver_objective`` what the solver said."""
    solver: str
    formulation: str
    status: str
    solver_status: str = ""
    nu: np.ndarray | None = None
    v: np.ndarray | None = None
    objective: float | None = None
    solver_objective: float | None = None
    iterations: int | None = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    history: Any = None  # pandas.DataFrame: iteration, elapsed, and solver-specific columns
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def gamma(self) -> np.ndarray | None:
        """Alias of ``nu`` (the contact impulses come first)."""
        return self.nu


class Solver(ABC):
    """One solver, one module; registered by one line in workbench.solvers.SOLVERS."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    #: model kinds accepted: "cvxpy", "ccqo"
    accepts: ClassVar[tuple[str, ...]] = ("cvxpy",)

    def availability(self) -> tuple[bool, str]:
        """(True, "") or (False, "why not")."""
        return True, ""

    @abstractmethod
    def solve(self, model, options: SolveOptions) -> SolveResult:
        """Solve the model; fill nu, v, solver_status, iterations, times, history. The caller
        (:func:`finalize`) computes metrics and the status."""

    def stopped_by(self, result: SolveResult, options: SolveOptions) -> str | None:
        """"max_iter" or "timeout" when a cap stopped the solver (iterative solvers put it in
        result.info["stopped"]), else None."""
        return result.info.get("stopped")


def judged_error(m: dict[str, float], relaxed: bool) -> float:
    """The measure a run is judged by: the relaxed natural-map error for relaxed formulations, the
    exact (De Saxce) Siconos error for exact ones."""
    return m["relaxed_error"] if relaxed else m["siconos_error"]


def finalize(result: SolveResult, model, options: SolveOptions, stopped: str | None = None) -> SolveResult:
    """Compute the workbench's metrics on ``result.nu`` and judge the status.

    ``stopped`` is "max_iter" or "timeout" when the solver says a cap stopped it; the status is then
    that cap unless the returned point is accepted anyway.
    """
    problem = model.problem
    if result.nu is None or not np.all(np.isfinite(result.nu)):
        result.nu = None
        result.status = stopped or "failed"
        return result
    result.metrics = metrics.evaluate(problem, result.nu)
    result.objective = model.objective(result.nu, result.v)
    # a model with measures of its own (the LCP model: its complementarity residual) adds them and
    # names the one it is judged by
    own = getattr(model, "own_metrics", None)
    if own is not None:
        result.metrics.update(own(result))
    err = result.metrics[model.judged_by] if own is not None else judged_error(result.metrics, model.relaxed)
    result.metrics["judged_error"] = err
    if err <= (options.tol if options.accept is None else options.accept):
        result.status = "solved"
    else:
        result.status = stopped or "inaccurate"
    return result
