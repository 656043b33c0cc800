"""What the conic solvers reached through cvxpy share.

The cvxpy problem is compiled once with ``get_problem_data`` (timed as part of the build), handed to
the solver through the solving chain (timed as the solve) and unpacked with ``unpack_results``, so
model building, compilation and the solver's own time are measured separately.

Parameters: the backend's own settings, given as ``backend.NAME`` (``--param backend.max_iter=50``), are
declared from the backend's list of settings (:meth:`CvxpySolver.backend_settings`) and checked against
it; they override what the workbench derives from ``tol``, ``max_iter`` and ``time_limit``. The
declarations are an allow-list (:func:`backend_params`): a setting reaches the solver only when it is
declared with its type and range, and no declared setting names a file, a folder or a command
(SCS's ``write_data_filename`` and ``log_csv_filename`` are not declared). A backend whose settings
the workbench cannot list (a generic cvxpy solver: SCIP, HiGHS, ...) takes no ``backend.*`` setting.

Record: a backend with a per-iteration log fills the run's :class:`~workbench.solvers.recorder.Recorder`
(Clarabel's callback, SCS's CSV log); any other records one row for the point it returned (its own
objective, error NaN). The stop cause is judged from what the solver did: MAX_ITER when it used all of
``max_iter`` iterations, TIMEOUT when it ran for the time limit, else CONVERGED (cvxpy "optimal"),
STALLED ("optimal_inaccurate", "user_limit": a point without the solver's own convergence) or FAILED.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import warnings
from typing import Any, ClassVar

from workbench.params import Param
from workbench.solvers.base import SolveOptions, SolveResult, Solver, StopCause
from workbench.solvers.recorder import Recorder

#: prefix of the backend's own settings among options.params
BACKEND = "backend."


def interior_point_tolerance(tol: float) -> float:
    """Gap/feasibility tolerance for an interior-point solver asked for a natural-map error ``tol``."""
    return max(tol * tol, 1e-12)


#: the widest integer a backend setting takes (the C int of SCS's and Clarabel's settings)
INT_MAX = 2**31 - 1


def backend_params(settings: dict[str, Any], backend: str, choices: dict[str, tuple] | None = None) -> tuple[Param, ...]:
    """``backend.NAME`` parameters for a backend's settings {name: its default}: the allow-list of what
    reaches the solver. Typed by the default (bool, int, float); numbers finite and at least 0 (every
    numeric setting of SCS and Clarabel is a size, a count, a tolerance or a factor), integers at most
    INT_MAX; a string only with its ``choices`` declared, so no setting given by a user can name a file,
    a folder or a command; list and table settings are not declared. Unset (None) unless given."""
    choices = choices or {}
    out = []
    for name, default in sorted(settings.items()):
        kind = type(default)
        if kind is str and name in choices:
            out.append(Param(BACKEND + name, str, None, f"{backend} setting {name} (its default: {default!r})",
                             choices=(None, *choices[name])))
        elif kind in (bool, int, float):
            out.append(Param(BACKEND + name, kind, None, f"{backend} setting {name} (its default: {default!r})",
                             low=None if kind is bool else 0, high=INT_MAX if kind is int else None))
    return tuple(out)


#: the stop-cause table of every backend reached through cvxpy: cvxpy maps each backend's own status
#: (Clarabel's, SCS's, MOSEK's) to its status word by that backend's STATUS_MAP, and this maps the
#: words of a run that returned a point to the stop cause it claims; any other word (infeasible,
#: unbounded, solver_error) is FAILED. The caps come first, judged from what the solver did
#: (:meth:`CvxpySolver.stop_cause`).
CVXPY_STOPS = {"optimal": StopCause.CONVERGED, "optimal_inaccurate": StopCause.STALLED,
               "user_limit": StopCause.STALLED}

class CvxpySolver(Solver):
    """A conic solver called through cvxpy. Subclasses set ``cvxpy_name`` and map options."""

    cvxpy_name: ClassVar[str]
    model_kinds = ("cvxpy",)
    install_hint: ClassVar[str] = ""
    #: options that shape compilation and unpacking (cvxpy's solver_opts at get_problem_data)
    compile_options: ClassVar[dict[str, Any]] = {}
    #: the history's error column and extras, for a backend with a per-iteration log
    history_error: ClassVar[str] = "none"
    history_extras: ClassVar[tuple[str, ...]] = ()
    #: the values each string setting of the backend may take (a string setting not here is not declared)
    backend_choices: ClassVar[dict[str, tuple]] = {}

    def availability(self) -> tuple[bool, str]:
        import cvxpy as cp
        if self.cvxpy_name not in cp.installed_solvers():
            return False, f"cvxpy does not find {self.cvxpy_name}" + (f" ({self.install_hint})" if self.install_hint else "")
        return True, ""

    def backend_settings(self) -> dict[str, Any]:
        """The backend's settings {name: default} (empty when the workbench cannot list them)."""
        return {}

    def parameters(self, kind: str | None = None) -> tuple[Param, ...]:
        return self.params + backend_params(self.backend_settings(), self.cvxpy_name, self.backend_choices)

    def settings(self, options: SolveOptions) -> dict[str, Any]:
        """Solver options for ``options`` (tolerances, caps, threads)."""
        return {}

    def solver_options(self, options: SolveOptions) -> dict[str, Any]:
        """:meth:`settings` overridden by the ``backend.*`` parameters that are set."""
        given = {k[len(BACKEND):]: v for k, v in options.params.items() if k.startswith(BACKEND) and v is not None}
        return {**self.settings(options), **given}

    def run(self, model, data, chain, options: SolveOptions, opts: dict[str, Any], rec: Recorder):
        """Call the solver; return the raw solution for unpack_results (a backend with a log records
        its iterations in ``rec``)."""
        return chain.solve_via_data(model.cvx, data, warm_start=False, verbose=options.verbose, solver_opts=opts)

    def solve(self, model, options: SolveOptions) -> SolveResult:
        import cvxpy as cp

        result = self.new_result(model)
        t0 = time.perf_counter()
        data, chain, inverse = model.cvx.get_problem_data(self.cvxpy_name, solver_opts=dict(self.compile_options))
        result.info["compile_seconds"] = time.perf_counter() - t0
        result.build_seconds += result.info["compile_seconds"]
        opts = self.solver_options(options)
        rec = Recorder(options, self.history_error, self.history_extras)
        try:
            with _solver_output_to_stderr(options.verbose):
                raw = self.run(model, data, chain, options, opts, rec)
        except (cp.SolverError, ValueError, ArithmeticError) as exc:
            result.solver_status = "error"
            result.message = f"{self.name} failed: {exc}".splitlines()[0]
            return rec.finish(result, StopCause.FAILED)
        seconds = rec.elapsed()
        try:
            with warnings.catch_warnings():  # cvxpy's "may be inaccurate": the workbench judges that itself
                warnings.simplefilter("ignore", UserWarning)
                model.cvx.unpack_results(raw, chain, inverse)
        except cp.SolverError as exc:  # the solver stopped on a numerical error: no solution
            result.solver_status = "solver_error"
            result.message = f"{self.name} returned no solution: {exc}".splitlines()[0]
            return rec.finish(result, StopCause.FAILED, seconds)
        result.solver_status = str(model.cvx.status)
        if self.raw_status(raw) is not None:
            result.info["solver_raw_status"] = self.raw_status(raw)
        stats = model.cvx.solver_stats
        result.iterations = None if stats is None or stats.num_iters is None else int(stats.num_iters)
        if stats is not None and stats.solve_time is not None:
            result.info["solver_reported_seconds"] = float(stats.solve_time)
        if model.cvx.status in CVXPY_STOPS and model.cvx.value is not None:
            try:
                result.nu, result.v = model.recover()
            except (TypeError, ValueError):  # no primal/dual values came back
                result.nu = None
                result.message = (f"{self.name} returned no {'dual' if model.formulation.startswith('primal') else 'primal'}"
                                  f" values, which formulation {model.formulation} needs for the impulses")
            if model.cvx.value is not None and abs(model.cvx.value) < float("inf"):
                result.solver_objective = float(model.unscale_objective(model.cvx.value))
        if not rec.rows:
            rec.record(result.iterations or 0, result.solver_objective, math.nan, seconds=seconds)
        return rec.finish(result, self.stop_cause(model.cvx.status, result.iterations, seconds, options), seconds)

    def raw_status(self, raw) -> str | None:
        """The solver's own status word, where cvxpy's status folds several into one."""
        return None

    @staticmethod
    def stop_cause(status: str, iterations: int | None, seconds: float, options: SolveOptions) -> StopCause:
        """Which cap stopped the solver, judged from what it did rather than what it says; else what
        cvxpy's status word says, by CVXPY_STOPS (module docstring)."""
        if options.max_iter is not None and iterations is not None and iterations >= options.max_iter:
            return StopCause.MAX_ITER
        if options.time_limit is not None and seconds >= 0.99 * options.time_limit:
            return StopCause.TIMEOUT
        return CVXPY_STOPS.get(status, StopCause.FAILED)


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
