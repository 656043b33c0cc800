"""What the solvers of the exact problem in NCP form share (newton, pqn, siconos:*).

They take the :class:`formulations.ncp.NCPModel`; the in-house ones iterate until the workbench's
``siconos_error`` (or a method's own test) is met, a cap stops them, or they break down, and record one
history row per iteration. :class:`IterationLog` holds that bookkeeping once: the caps
(``max_iter`` iterations, ``options.time_limit`` seconds of wall clock, checked every iteration), the
reason the loop ended and the history (iteration, elapsed [s] and the method's own columns).
"""

from __future__ import annotations

import time

import pandas as pd

from workbench.solvers.base import SolveOptions, SolveResult, Solver

__all__ = ["NCPSolver", "IterationLog"]


class NCPSolver(Solver):
    """A solver of the exact problem in NCP form."""
    accepts = ("ncp",)

    def new_result(self, model) -> SolveResult:
        """The result to fill in, "failed" until the solver says otherwise."""
        return SolveResult(solver=self.name, formulation=model.formulation, status="failed",
                           build_seconds=model.build_seconds)


class IterationLog:
    """Caps, stopping reason and history of one run. ``stopped`` is None after convergence, else
    "max_iter", "timeout" or what the method sets (a breakdown)."""

    def __init__(self, options: SolveOptions, max_iter: int):
        self.t0 = time.perf_counter()
        self.keep = bool(options.keep_history)
        self.max_iter = max_iter
        self.time_limit = options.time_limit
        self.rows: list[dict] = []
        self.stopped: str | None = "max_iter"

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def stop(self, k: int, converged: bool, **row) -> bool:
        """Record iteration ``k`` (``row``: the method's columns); True when the loop is to end."""
        if self.keep:
            self.rows.append({"iteration": k, "elapsed": self.elapsed(), **row})
        if converged:
            self.stopped = None
        elif self.time_limit is not None and self.elapsed() >= self.time_limit:
            self.stopped = "timeout"
        return converged or k >= self.max_iter or self.stopped == "timeout"

    def history(self) -> pd.DataFrame | None:
        return pd.DataFrame(self.rows) if self.rows else None
