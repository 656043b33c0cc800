"""What the solvers of the exact problem in NCP form share (newton, pqn, siconos:*).

They take the :class:`formulations.ncp.NCPModel`. :class:`NCPMethod` is the template of the in-house
ones: a method writes :meth:`NCPMethod.iterate`, a generator that yields one :class:`Iterate` (impulses
nu, velocities u = N nu + r, its own history columns) per iteration, the starting point first, and
returns a :class:`~workbench.solvers.base.StopCause` when it breaks down. The template does the rest
once, through a :class:`~workbench.solvers.recorder.Recorder`: the workbench's ``siconos_error`` of every
iterate (its stopping test, ``error <= tol``, unless the method has a test of its own), the history row
(objective = the dual objective 1/2 nu.(u + r), error = siconos_error, then the method's ``extras``), the
caps (``options.max_iter``, default ``default_max_iter``; ``options.time_limit``, and the forecast of
the work until the next iterate that a method may give, ``Iterate.forecast``), the stop cause and the
result, which holds the last iterate. Adding an NCP method is one module and one line in
workbench.solvers.SOLVERS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterator

import numpy as np

from workbench.metrics import dual_objective
from workbench.solvers.base import SolveOptions, SolveResult, Solver, StopCause
from workbench.solvers.recorder import Recorder

__all__ = ["NCPSolver", "NCPMethod", "Iterate"]


class NCPSolver(Solver):
    """A solver of the exact problem in NCP form."""
    model_kinds = ("ncp",)


@dataclass
class Iterate:
    """One iterate of an NCP method: nu, u = N nu + r (physical units), the method's history columns
    (in the order of its ``extras``) and, for a method with a stopping test of its own, its verdict."""
    nu: np.ndarray
    u: np.ndarray
    extras: tuple = ()
    converged: bool | None = None
    #: the method's forecast [s] of the work until its next iterate, where that work cannot be
    #: interrupted (a sparse factorisation): the template stops with TIMEOUT before it when it would
    #: end too far past the time limit (Recorder.affords); None: no forecast
    forecast: float | None = None
    #: where no earlier work forecasts it (the run's first factorisation): (matrix, factor), the
    #: template forecasts ``factor(matrix)`` from the matrix's size (Recorder.affords_first)
    first: tuple | None = None


class NCPMethod(NCPSolver):
    """Template of the in-house NCP methods (module docstring)."""
    default_max_iter: ClassVar[int | None] = 200
    compiled: ClassVar[bool] = True
    condenses: ClassVar[bool] = True
    #: names of the history columns a method adds after the schema's
    extras: ClassVar[tuple[str, ...]] = ()

    def iterate(self, model, options: SolveOptions, result: SolveResult) -> Iterator[Iterate]:
        """Yield the iterates, the starting point first; return a StopCause on a breakdown (with
        result.message and result.solver_status saying what happened). The generator is closed when
        the template stops it: a ``finally`` clause may record what the method wants in result.info."""
        raise NotImplementedError

    def conclude(self, model, options: SolveOptions, result: SolveResult, stop: StopCause,
                 rec: Recorder) -> StopCause:
        """Called after the iterations with the stop cause (``rec``: the run's recorder, for its clock);
        a method may replace the returned point (e.g. a fallback) and returns the stop cause of what it
        returns."""
        return stop

    def solve(self, model, options: SolveOptions) -> SolveResult:
        problem = model.problem
        result = self.new_result(model)
        rec = Recorder(options, "siconos_error", self.extras, self.max_iter(options))
        steps = self.iterate(model, options, result)
        k, nu = -1, None
        while True:
            try:
                it = next(steps)
            except StopIteration as end:
                stop = end.value or StopCause.FAILED
                break
            k, nu = k + 1, it.nu
            err = model.error(it.nu, it.u)
            if rec.keep:
                rec.record(k, dual_objective(problem, it.nu, it.u), err, *it.extras)
            if (err <= options.tol) if it.converged is None else it.converged:
                stop = StopCause.CONVERGED
                break
            stop = rec.capped(k)
            if stop is None and not (rec.affords(it.forecast) and (it.first is None or rec.affords_first(*it.first))):
                stop = StopCause.TIMEOUT
            if stop is not None:
                break
        steps.close()
        result.nu, result.iterations = nu, max(k, 0)
        result.solver_status = result.solver_status or stop.value
        stop = self.conclude(model, options, result, stop, rec)
        if result.nu is not None and problem.is_global and np.all(np.isfinite(result.nu)):
            result.v = problem.velocity(result.nu)
        return rec.finish(result, stop)
