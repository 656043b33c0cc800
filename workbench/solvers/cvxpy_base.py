"""What the conic solvers reached through cvxpy share.

The cvxpy problem is compiled once with ``get_problem_data`` (timed as part of the build), handed to
the solver through the solving chain (timed as the solve) and unpacked with ``unpack_results``, so
model building, compilation and the solver's own time are measured separately.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from typing import Any, ClassVar

from workbench.solvers.base import SolveOptions, SolveResult, Solver


def interior_point_tolerance(tol: float) -> float:
    """Gap/feasibility tolerance for an interior-point solver asked for a natural-map error ``tol``."""
    return max(tol * tol, 1e-12)


class CvxpySolver(Solver):
    """A conic solver called through cvxpy. Subclasses set ``cvxpy_name`` and map options."""

    cvxpy_name: ClassVar[str]
    accepts = ("cvxpy",)
    install_hint: ClassVar[str] = ""
    #: options that shape compilation and unpacking (cvxpy's solver_opts at get_problem_data)
    compile_options: ClassVar[dict[str, Any]] = {}

    def availability(self) -> tuple[bool, str]:
        import cvxpy as cp
        if self.cvxpy_name not in cp.installed_solvers():
            return False, f"cvxpy does not find {self.cvxpy_name}" + (f" ({self.install_hint})" if self.install_hint else "")
        return True, ""

    def settings(self, options: SolveOptions) -> dict[str, Any]:
        """Solver options for ``options`` (tolerances, caps, threads)."""
        return {}

    def run(self, model, data, chain, options: SolveOptions, opts: dict[str, Any]):
        """Call the solver; return (raw solution for unpack_results, history DataFrame or None)."""
        raw = chain.solve_via_data(model.cvx, data, warm_start=False, verbose=options.verbose, solver_opts=opts)
        return raw, None

    def solve(self, model, options: SolveOptions) -> SolveResult:
        import cvxpy as cp

        result = SolveResult(solver=self.name, formulation=model.formulation, status="failed",
                             build_seconds=model.build_seconds)
        t0 = time.perf_counter()
        data, chain, inverse = model.cvx.get_problem_data(self.cvxpy_name, solver_opts=dict(self.compile_options))
        result.info["compile_seconds"] = time.perf_counter() - t0
        result.build_seconds += result.info["compile_seconds"]
        opts = {**self.settings(options), **options.params}
        t1 = time.perf_counter()
        try:
            with _solver_output_to_stderr(options.verbose):
                raw, history = self.run(model, data, chain, options, opts)
        except (cp.SolverError, ValueError, ArithmeticError) as exc:
            result.solve_seconds = time.perf_counter() - t1
            result.solver_status = "error"
            result.message = f"{self.name} failed: {exc}".splitlines()[0]
            return result
        result.solve_seconds = time.perf_counter() - t1
        try:
            with warnings.catch_warnings():  # cvxpy's "may be inaccurate": the workbench judges that itself
                warnings.simplefilter("ignore", UserWarning)
                model.cvx.unpack_results(raw, chain, inverse)
        except cp.SolverError as exc:  # the solver stopped on a numerical error: no solution
            result.solver_status = "solver_error"
            result.message = f"{self.name} returned no solution: {exc}".splitlines()[0]
            return result
        result.history = history
        result.solver_status = str(model.cvx.status)
        if self.raw_status(raw) is not None:
            result.info["solver_raw_status"] = self.raw_status(raw)
        stats = model.cvx.solver_stats
        result.iterations = None if stats is None or stats.num_iters is None else int(stats.num_iters)
        if stats is not None and stats.solve_time is not None:
            result.info["solver_reported_seconds"] = float(stats.solve_time)
        if model.cvx.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE, cp.USER_LIMIT) and model.cvx.value is not None:
            try:
                result.nu, result.v = model.recover()
            except (TypeError, ValueError):  # no primal/dual values came back
                result.nu = None
                result.message = (f"{self.name} returned no {'dual' if model.formulation.startswith('primal') else 'primal'}"
                                  f" values, which formulation {model.formulation} needs for the impulses")
            if model.cvx.value is not None and abs(model.cvx.value) < float("inf"):
                result.solver_objective = float(model.unscale_objective(model.cvx.value))
        return result

    def raw_status(self, raw) -> str | None:
        """The solver's own status word, where cvxpy's status folds several into one."""
        return None

    def stopped_by(self, result: SolveResult, options: SolveOptions) -> str | None:
        """Which cap stopped the solver, judged from what it did rather than what it says."""
        if options.max_iter is not None and result.iterations is not None and result.iterations >= options.max_iter:
            return "max_iter"
        if options.time_limit is not None and result.solve_seconds >= 0.99 * options.time_limit:
            return "timeout"
        return None


@contextlib.contextmanager
def _solver_output_to_stderr(verbose: bool):
    """Keep what compiled solvers print (SCS announces its CSV log even when quiet) off stdout, which
    belongs to the caller (``workbench solve --json``): to stderr when verbose, else discarded."""
    sys.stdout.flush()
    saved = os.dup(1)
    target = os.dup(2) if verbose else os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(target, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(target)
