"""The outer fixed point of the cvxpy fixed-point formulations, on a problem compiled once.

Model: :class:`formulations.dual_fixed_point.FixedPointModel` (dual-fixed-point, primal-fixed-point;
seed 001 section 4.3, eqs. 26-27 with the plus sign; seed 000 eqs. 15, 27-28). With s^0 = 0, or the
slip speeds of ``options.warm_start``, outer iteration k = 1, 2, ...

    1. writes r + [mu_i s^{k-1}_i, 0, 0] into the compiled data (the solver's own update API),
    2. re-solves the relaxed model -> nu^k (cvxpy's unpack), u^k = N nu^k + r,
    3. s^k_i = ||u^k_t,i||, change_k = ||mu (s^k - s^{k-1})||_2 / max(||r||, ||nu^k||, ||u^k||),

and stops when change_k <= outer_tol. Why that measure: nu^k solves the subproblem with shift
mu s^{k-1} and the projection is non-expansive, so the exact natural map at nu^k differs from the
subproblem's by at most ||mu (s^k - s^{k-1})||; with the Siconos normalisation,
siconos_error(nu^k) <= (subproblem's relaxed error) + change_k. The default outer_tol = tol / 2
leaves the other half of ``tol`` to the inner solver.

Parameters (options.params, declared in FIXED_POINT_PARAMS and taken with fixed-point models only):
``outer_tol`` (default tol / 2), ``outer_max_iter`` (default 100), ``inner_warm_start`` (SCS only: start
each inner solve from the previous solution; default True, see workbench.solvers.scs); the backend's
``backend.*`` settings go to the inner solver. ``options.max_iter`` caps each inner solve; ``options.time_limit`` the whole loop (checked between outer iterations).

Recorded (a :class:`~workbench.solvers.recorder.Recorder`): iterations = total inner iterations; stop
cause CONVERGED, MAX_ITER (outer_max_iter), TIMEOUT or FAILED (an inner solve failed); info:
outer_iterations, inner_iterations (list), compile_seconds (the one compile), setup_seconds (the solver
object, once), outer_seconds (wall time of each outer iteration: update, solve, unpack, slip speeds),
inner_seconds (the solver's call alone, per outer iteration); history: one row per outer iteration
(objective: the formulation's, error: siconos_error; extras inner_iterations, shift_change,
solver_status). The solver's convergence claims are recorded, never trusted: :func:`finalize` judges the
result by siconos_error.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from formulations.dual_fixed_point import FIXED_POINT_KIND
from workbench.metrics import normalisation, siconos_error, tangential_speed
from workbench.params import Param
from workbench.solvers.base import SolveOptions, SolveResult, StopCause
from workbench.solvers.recorder import Recorder

__all__ = ["FixedPointCapable", "FixedPointSession", "FIXED_POINT_PARAMS"]

#: options.params of the outer loop (a solver adds its own in ``fixed_point_params``)
FIXED_POINT_PARAMS = (
    Param("outer_tol", float, None, "fixed-point formulations: stop when the relative shift change is below "
          "this (None: tol / 2)"),
    Param("outer_max_iter", int, 100, "fixed-point formulations: outer iterations at most"),
)


@dataclass
class FixedPointSession:
    """One solver object built on the compiled data, re-solvable after updating a data vector.

    solve() -> raw solution for cvxpy's unpack_results; update(key, vector) with key "c" or "b"
    (cvxpy's names for the objective vector and the constraint constant); iterations(raw) -> int.
    """
    solve: Callable[[], Any]
    update: Callable[[str, np.ndarray], None]
    iterations: Callable[[Any], int]


class FixedPointCapable:
    """Mixin for a :class:`~workbench.solvers.cvxpy_base.CvxpySolver` whose solver object can update
    its linear data in place: adds the model kind "cvxpy-fixed-point". Subclasses implement
    :meth:`open_session` and may declare ``fixed_point_params``."""

    fixed_point_params: tuple[Param, ...] = ()

    def parameters(self, kind: str | None = None) -> tuple[Param, ...]:
        own = super().parameters(kind)
        return own + FIXED_POINT_PARAMS + self.fixed_point_params if kind in (None, FIXED_POINT_KIND) else own

    def open_session(self, model, data: dict, chain, options: SolveOptions, opts: dict) -> FixedPointSession:
        raise NotImplementedError

    def solve(self, model, options: SolveOptions) -> SolveResult:
        if model.kind == FIXED_POINT_KIND:
            return self._solve_fixed_point(model, options)
        return super().solve(model, options)

    def _solve_fixed_point(self, model, options: SolveOptions) -> SolveResult:
        import cvxpy as cp

        problem = model.problem
        params = options.params
        outer_tol = options.tol / 2 if params["outer_tol"] is None else float(params["outer_tol"])
        outer_max = int(params["outer_max_iter"])
        result = self.new_result(model)
        t0 = time.perf_counter()
        data, chain, inverse = model.cvx.get_problem_data(self.cvxpy_name, solver_opts=dict(self.compile_options))
        rows = model.locate(data)
        compile_seconds = time.perf_counter() - t0
        result.build_seconds += compile_seconds
        opts = self.solver_options(options)

        rec = Recorder(options, "siconos_error", ("inner_iterations", "shift_change", "solver_status"))
        t_start = rec.t0
        session = self.open_session(model, data, chain, options, opts)
        setup_seconds = time.perf_counter() - t_start
        if options.warm_start is not None:
            s = tangential_speed(problem, problem.relative_velocity(np.asarray(options.warm_start, dtype=float)))
        else:
            s = np.zeros(problem.n_contacts)
        inner, inner_seconds, outer_seconds = [], [], []
        stop, message = StopCause.MAX_ITER, ""
        for k in range(1, outer_max + 1):
            t_k = time.perf_counter()
            if k > 1 or options.warm_start is not None:  # the compiled data already hold s = 0
                session.update(model.shifted, model.linear_term(data, rows, s))
            t_inner = time.perf_counter()
            try:
                raw = session.solve()
            except (cp.SolverError, ValueError, ArithmeticError) as exc:
                message = f"{self.name} failed in outer iteration {k}: {exc}".splitlines()[0]
                stop = StopCause.FAILED
                break
            with warnings.catch_warnings():  # cvxpy's "may be inaccurate": judged by the workbench
                warnings.simplefilter("ignore", UserWarning)
                model.cvx.unpack_results(raw, chain, inverse)
            inner_seconds.append(time.perf_counter() - t_inner)
            inner.append(session.iterations(raw))
            result.solver_status = str(model.cvx.status)
            if model.cvx.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE, cp.USER_LIMIT):
                message = f"inner solve {k} ended {model.cvx.status}"
                stop = StopCause.FAILED
                break
            result.nu, result.v = model.recover()
            u = problem.relative_velocity(result.nu)
            s_new = tangential_speed(problem, u)
            scale = normalisation(np.linalg.norm(problem.r), np.linalg.norm(result.nu), np.linalg.norm(u))
            change = float(np.linalg.norm(problem.mu * (s_new - s)) / scale)
            s = s_new
            outer_seconds.append(time.perf_counter() - t_k)
            if rec.keep:
                rec.record(k, model.objective(result.nu, result.v), siconos_error(problem, result.nu, u, scale=scale),
                           inner[-1], change, result.solver_status)
            if change <= outer_tol:
                stop = StopCause.CONVERGED
                break
            if rec.timed_out():
                stop = StopCause.TIMEOUT
                break
        result.iterations = int(sum(inner))
        result.message = message or ("" if stop == StopCause.CONVERGED else f"outer loop stopped by {stop.value} "
                                     f"after {len(inner)} outer iterations")
        result.info.update(outer_iterations=len(inner), inner_iterations=inner, compile_seconds=compile_seconds,
                           setup_seconds=setup_seconds, outer_seconds=outer_seconds,
                           inner_seconds=inner_seconds, outer_tol=outer_tol)
        return rec.finish(result, stop)
