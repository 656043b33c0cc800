"""The outer fixed point of the cvxpy fixed-point formulations, on a problem compiled once.

Model: :class:`formulations.dual_fixed_point.FixedPointModel` (dual-fixed-point, primal-fixed-point;
Mazhar et al. 2014 section 4.3, eqs. 26-27 with the plus sign; Melanz et al. 2015 eqs. 15, 27-28). With s^0 = 0 and
nu^0 = 0, or the slip speeds and impulses of ``options.warm_start``, outer iteration k = 1, 2, ...

    1. writes r + [mu_i s^{k-1}_i, 0, 0] (+ W_a nu^{k-1} for a non-symmetric local W, see
       formulations.dual_fixed_point) into the compiled data (workbench.solvers.compiled: the
       solver's own update API),
    2. re-solves the relaxed model -> nu^k (cvxpy's unpack), u^k = W nu^k + r with the true W,
    3. s^k_i = ||u^k_t,i||, G(x^{k-1}) = (s^k, nu^k); measures e_k = siconos_error(nu^k) and
       change_k = (||mu (s^k - s^{k-1})|| + ||W_a (nu^k - nu^{k-1})||) / max(||r||, ||nu^k||, ||u^k||).

The next state (s, and nu where W_a is not None) is x + theta (G(x) - x): theta = 1 is the plain
map; a damped map has the same fixed points. It stops when e_k <= tol (converged); when
change_k <= outer_tol (the shift has settled: what error is left is the inner solver's); at a cap;
or on a stall: when the best e over the last ``stall_window`` outer iterations is not below 0.9
times the best over the window before (the first relaxed iterate, often of a lower error than the
next few, is soon out of the comparison), theta is multiplied by 0.7 and the loop goes on, and below theta = 0.2
it stops (stalled). Why change_k: nu^k solves the subproblem for the shift of iteration k-1 and the
projection is non-expansive, so e_k <= (subproblem's relaxed error) + change_k.

What the measurements on the shared problems showed, and what answers each (docs/solvers.md, the fixed points):
- Non-symmetric W (Capsules, OneObject: W_a up to 7e-4 of W): solving the symmetric part stalled at
  the error W_a makes (2e-5, 4e-7, 1e-6); the splitting above converges.
- A map that does not contract: on Capsules-i125-1213 (mu = 0.7) the plain map settles into a
  3-cycle at e = 2e-6..6e-6; with theta = 0.7 it converges.
- Inaccurate inner solves at the cone apex: an interior-point inner solve ends at an interior point;
  at a contact closed with zero impulse and zero velocity (strict complementarity fails) Clarabel
  returns gamma_n and u_n both about sqrt(gap) (7e-8 on FrictionContactProblem00031, e = 3e-7)
  however tight its tolerances; and a Clarabel stall (InsufficientProgress) is retried looser
  (workbench.solvers.compiled). So when the loop ends above tol the best point is handed to the
  in-house nonsmooth Newton on Alart-Curnier (workbench.solvers.newton, warm-started), which
  identifies the active set and converges locally quadratically (1-3 iterations there). This is
  recorded, never hidden: info["polish"] = {method, iterations, seconds, started, error_before,
  error_after, accepted, stopped} and a hand-over record (SolveResult.handover); the history goes
  on with phase "polish" rows; the returned point
  is Newton's only if its error is lower. ``polish=False`` gives the pure fixed point. With a time
  limit and the polish on, the outer loop stops at 3/4 of it and the polish gets the rest.
- Inner breakdowns: Clarabel can fail outright at one shift (NumericalError, also after the looser
  retry). The loop then steps halfway back towards the last shift it solved and goes on (at most 3
  times in a row; info["inner_failures"]).
- Slow contraction (granular flows: e x0.93 per outer iteration): Anderson acceleration
  (``anderson`` = memory m, class AndersonMixing) cut the outer iterations (2,020 contacts: 100 ->
  32-56; 667: 82 -> 22; Capsules-i125: 32 -> 26-29) but lost the 7,002-contact flow (the plain map
  identifies its active set after 46 iterations, the extrapolated one had not after 53, at the
  time limit), and SCS's warm starts pay less after extrapolated steps. Off by default.

Parameters (options.params, declared in FIXED_POINT_PARAMS and taken with fixed-point models only):
``outer_tol`` (default tol / 2), ``outer_max_iter`` (default 100), ``stall_window`` (default 5),
``damping`` (initial theta, default 1), ``anderson`` (default 0), ``polish`` (default True);
``inner_warm_start`` (SCS only: start each inner solve from the previous solution; default True, see
workbench.solvers.scs); the backend's ``backend.*`` settings go to the inner solver.
``options.max_iter`` caps each inner solve; ``options.time_limit`` the whole run (checked between
outer iterations).

Recorded (a :class:`~workbench.solvers.recorder.Recorder`): iterations = total inner iterations (the
polish's are in info["polish"]); stop cause CONVERGED (e <= tol, by the loop or its polish), STALLED
(settled or stalled above tol), MAX_ITER (outer_max_iter), TIMEOUT or FAILED (inner breakdowns); info:
outer_iterations, inner_iterations (list), compile_seconds (the one compile), setup_seconds (the
solver object, once), outer_seconds (wall time of each outer iteration: update, solve, unpack,
measures), inner_seconds (the solver's call alone, per outer iteration), outer_stop (converged /
settled / stalled / max_iter / timeout / failed), inner_failures, dampings ((outer iteration, theta)
at each change), polish; history: one row per outer iteration (objective: the formulation's, error:
siconos_error; extras phase "outer", inner_iterations, shift_change, damping, solver_status), then
one per polish iteration (phase "polish", Newton's objective and error). The solver's convergence
claims are recorded, never trusted: :func:`finalize` judges the result by siconos_error.
"""

from __future__ import annotations

import math
import time

import numpy as np

from formulations.dual_fixed_point import FIXED_POINT_KIND
from workbench.metrics import normalisation, siconos_error, tangential_speed
from workbench.params import Param
from workbench.solvers.base import OUTER_STOPS, HandOver, SolveOptions, SolveResult, StopCause
from workbench.solvers.compiled import CompiledSession
from workbench.solvers.cvxpy_base import CVXPY_STOPS
from workbench.solvers.recorder import Recorder

__all__ = ["FixedPointCapable", "AndersonMixing", "FIXED_POINT_PARAMS"]

#: options.params of the outer loop (a solver adds its own in ``fixed_point_params``)
FIXED_POINT_PARAMS = (
    Param("outer_tol", float, None, "fixed-point formulations: stop when the relative shift change is below "
          "this (None: tol / 2)"),
    Param("outer_max_iter", int, 100, "fixed-point formulations: outer iterations at most"),
    Param("stall_window", int, 5, "fixed-point formulations: outer iterations without a 10% gain on the window "
          "before that count as a stall (then the step is damped)"),
    Param("damping", float, 1.0, "fixed-point formulations: initial step theta of x + theta (G(x) - x)"),
    Param("anderson", int, 0, "fixed-point formulations: Anderson acceleration memory (0: off)"),
    Param("polish", bool, True, "fixed-point formulations: finish a loop that ends above tol with Newton "
          "(recorded in info['polish'])"),
)
#: on a stall the damping theta is multiplied by DAMPING_FACTOR, down to MIN_DAMPING
DAMPING_FACTOR, MIN_DAMPING = 0.7, 0.2
#: share of options.time_limit the outer loop may use when the polish is on (the rest is the polish's)
OUTER_TIME_SHARE = 0.75
#: consecutive inner breakdowns the outer loop steps back from before it gives up
MAX_INNER_FAILURES = 3
#: the history's extra columns
EXTRAS = ("phase", "inner_iterations", "shift_change", "damping", "solver_status")


class AndersonMixing:
    """The next outer state from x_k and G(x_k): x + theta f with f = G(x) - x when the memory m is 0
    (the damped plain map: same fixed points), else type-II Anderson acceleration (Walker & Ni 2011):
    with the last m differences dX of states and dF of residuals, gamma = argmin ||f - dF gamma||
    and x + theta f - (dX + theta dF) gamma. Safeguard: when an accelerated step did not lower ||f||
    the memory is dropped and the plain step taken (the map is nonsmooth: stick/slip switches)."""

    def __init__(self, memory: int):
        self.memory = memory
        self.reset()

    def reset(self) -> None:
        self.dX, self.dF, self.x, self.f = [], [], None, None

    def step(self, x: np.ndarray, g: np.ndarray, theta: float) -> np.ndarray:
        f = g - x
        if self.dF and np.linalg.norm(f) >= np.linalg.norm(self.f):  # the extrapolation did not pay: forget it
            self.reset()
        if self.memory and self.x is not None:
            self.dX, self.dF = (self.dX + [x - self.x])[-self.memory:], (self.dF + [f - self.f])[-self.memory:]
        self.x, self.f = x, f
        if not self.dF:
            return x + theta * f
        dX, dF = np.column_stack(self.dX), np.column_stack(self.dF)
        gamma = np.linalg.lstsq(dF, f, rcond=1e-10)[0]
        return x + theta * f - (dX + theta * dF) @ gamma


class FixedPointCapable:
    """Mixin for a :class:`~workbench.solvers.cvxpy_base.CvxpySolver` whose solver object can update
    its linear data in place (a backend of workbench.solvers.compiled named like the solver): adds
    the model kind "cvxpy-fixed-point". Subclasses may declare ``fixed_point_params``."""

    model_kinds = ("cvxpy", FIXED_POINT_KIND)
    fixed_point_params: tuple[Param, ...] = ()
    #: a loop that ends above tol is polished by Newton on the exact problem (the ncp model of the same
    #: problem), while the parameter ``polish`` is on (fixed-point models only: others lack it)
    hands_over_to = HandOver("polish", "polish", solver="newton", formulation="ncp")

    def parameters(self, kind: str | None = None) -> tuple[Param, ...]:
        own = super().parameters(kind)
        return own + FIXED_POINT_PARAMS + self.fixed_point_params if kind in (None, FIXED_POINT_KIND) else own

    def solve(self, model, options: SolveOptions) -> SolveResult:
        if model.kind == FIXED_POINT_KIND:
            return self._solve_fixed_point(model, options)
        return super().solve(model, options)

    def _solve_fixed_point(self, model, options: SolveOptions) -> SolveResult:
        import cvxpy as cp

        problem, params = model.problem, options.params
        outer_tol = options.tol / 2 if params["outer_tol"] is None else float(params["outer_tol"])
        outer_max, window = int(params["outer_max_iter"]), int(params["stall_window"])
        result = self.new_result(model)
        session = CompiledSession(model.cvx, self.name, self.solver_options(options), verbose=options.verbose,
                                  warm_start=bool(params.get("inner_warm_start", False)),
                                  compile_options=self.compile_options)
        base = session.vector(model.shifted)
        rows = model.locate(session.data)
        result.build_seconds += session.compile_seconds
        rec = Recorder(options, "siconos_error", EXTRAS)  # the solve's clock starts after the compile
        if options.warm_start is not None:
            nu_prev = np.array(options.warm_start, dtype=float)
            s = tangential_speed(problem, problem.relative_velocity(nu_prev))
        else:
            nu_prev, s = np.zeros(problem.n_unknowns), np.zeros(problem.n_contacts)
        inner, inner_seconds, outer_seconds, errors = [], [], [], []
        outer_stop, message, best = "max_iter", "", None
        s_ok = nu_ok = None  # the last state whose inner solve succeeded
        failures = []  # outer iterations whose inner solve broke down
        theta, since, dampings = float(params["damping"]), 0, []
        polish_on = bool(params["polish"])
        outer_time = None if options.time_limit is None else options.time_limit * (OUTER_TIME_SHARE if polish_on else 1.0)
        mixing = AndersonMixing(int(params["anderson"]))
        skewed = slice(None) if model.skew is not None else slice(0, 0)  # nu is part of the map's state
        for k in range(1, outer_max + 1):
            t_k = time.perf_counter()
            if k > 1 or options.warm_start is not None:  # the compiled data already hold s = 0, nu = 0
                session.update(model.shifted, model.linear_term(base, rows, s, nu_prev))
            t_inner = time.perf_counter()
            try:
                inner.append(session.solve())
                failure = None if model.cvx.status in CVXPY_STOPS \
                    else f"inner solve {k} ended {model.cvx.status}"
            except (cp.SolverError, ValueError, ArithmeticError) as exc:
                inner.append(0)
                failure = f"{self.name} failed in outer iteration {k}: {exc}".splitlines()[0]
            inner_seconds.append(time.perf_counter() - t_inner)
            if failure is not None:
                # a breakdown of the inner solver at this shift: step halfway back towards the last
                # shift it solved (a nearby subproblem), at most MAX_INNER_FAILURES times in a row
                failures.append(k)
                outer_seconds.append(time.perf_counter() - t_k)
                message = failure
                if len(failures) > MAX_INNER_FAILURES and failures[-MAX_INNER_FAILURES - 1] == k - MAX_INNER_FAILURES \
                        or s_ok is None:
                    outer_stop = "failed"
                    break
                s, nu_prev = s_ok + 0.5 * (s - s_ok), nu_ok + 0.5 * (nu_prev - nu_ok)
                mixing.reset()
                continue
            result.solver_status = str(model.cvx.status)
            s_ok, nu_ok = s, nu_prev
            nu, _ = model.recover()
            u = problem.relative_velocity(nu)
            s_new = tangential_speed(problem, u)
            scale = normalisation(np.linalg.norm(problem.r), np.linalg.norm(nu), np.linalg.norm(u))
            moved = np.linalg.norm(problem.mu * (s_new - s))
            if model.skew is not None:
                moved += np.linalg.norm(model.skew @ (nu - nu_prev))
            change = float(moved / scale)
            errors.append(siconos_error(problem, nu, u, scale=scale))
            if best is None or errors[-1] <= errors[best]:
                best = len(errors) - 1
                result.nu, result.v = nu, (problem.velocity(nu) if problem.is_global else None)
            x_next = mixing.step(np.concatenate([s, nu_prev[skewed]]), np.concatenate([s_new, nu[skewed]]), theta)
            s, nu_prev = np.maximum(x_next[:problem.n_contacts], 0.0), nu.copy()
            nu_prev[skewed] = x_next[problem.n_contacts:]
            outer_seconds.append(time.perf_counter() - t_k)
            if rec.keep:
                v = problem.velocity(nu) if problem.is_global else None
                rec.record(k, model.objective(nu, v), errors[-1], "outer", inner[-1], change, theta,
                           result.solver_status)
            if errors[-1] <= options.tol:
                outer_stop = "converged"
                break
            if change <= outer_tol:
                outer_stop = "settled"
                break
            if k - since >= 2 * window and min(errors[-window:]) > 0.9 * min(errors[-2 * window:-window]):
                if theta * DAMPING_FACTOR < MIN_DAMPING:
                    outer_stop = "stalled"
                    break
                theta, since = theta * DAMPING_FACTOR, k
                mixing.reset()
                dampings.append((k, theta))
            if options.time_limit is not None and rec.elapsed() >= outer_time:
                outer_stop = "timeout"
                break
        polish = None
        if best is not None and errors[best] > options.tol and polish_on:
            polish, polished = self._polish(model, result, errors[best], options, rec, OUTER_STOPS[outer_stop],
                                            f"outer loop {outer_stop} at siconos_error {errors[best]:.3g} > tol "
                                            f"{options.tol:g}", len(inner))
            if polish["accepted"]:
                result.nu, result.v = polished.nu, polished.v
            if polished.history is not None:
                for row in polished.history.itertuples(index=False):
                    rec.record(len(inner) + row.iteration, row.objective, row.error, "polish", math.nan, math.nan,
                               math.nan, "newton", seconds=polish["started"] + row.seconds)
        result.iterations = int(sum(inner))
        converged = outer_stop == "converged" or (polish is not None and polish["error_after"] <= options.tol)
        stop = StopCause.CONVERGED if converged else OUTER_STOPS[outer_stop]
        if polish is not None and not converged and polish["stopped"] == StopCause.TIMEOUT:
            stop = StopCause.TIMEOUT
        if outer_stop != "failed":
            message = f"outer loop {outer_stop} after {len(inner)} outer iterations" + (
                f" ({len(failures)} inner breakdowns stepped back from)" if failures else "")
        result.message = "" if converged else message
        if polish is not None:
            result.solver_status += f"; polished by newton ({polish['iterations']} iterations, "\
                                    f"{'accepted' if polish['accepted'] else 'rejected'})"
        result.info.update(outer_iterations=len(inner), inner_iterations=inner,
                           compile_seconds=session.compile_seconds, setup_seconds=session.setup_seconds,
                           outer_seconds=outer_seconds, inner_seconds=inner_seconds, outer_stop=outer_stop,
                           outer_tol=outer_tol, dampings=dampings, inner_failures=failures, polish=polish)
        return rec.finish(result, stop)

    def _polish(self, model, result: SolveResult, error_before: float, options: SolveOptions, rec: Recorder,
                stop_before: StopCause, reason: str, at_iteration: int):
        """Newton on Alart-Curnier (the declared hand-over, :attr:`hands_over_to`) from the best point
        with the time left, as PQN's fallback runs (Recorder.hand_over: a breakdown of Newton is its
        failed result, not the run's); (record, Newton's result)."""
        from workbench.solvers.newton import NewtonSolver

        started, t0 = rec.elapsed(), time.perf_counter()
        res, accepted, after = rec.hand_over(self.hands_over_to, NewtonSolver(), model, options, result,
                                             warm=result.nu, source=f"{model.formulation}/{self.name}", reason=reason,
                                             at_iteration=at_iteration, stop_before=stop_before,
                                             error_before=error_before, keep_history=options.keep_history)
        return {"method": "newton", "iterations": int(res.iterations or 0), "seconds": time.perf_counter() - t0,
                "started": started, "error_before": float(error_before), "error_after": float(after),
                "accepted": bool(accepted), "stopped": res.stop}, res
