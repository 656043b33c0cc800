"""Clarabel (interior point for conic programs with a quadratic objective), through cvxpy.

Runs the solver object itself (``clarabel.DefaultSolver`` on cvxpy's compiled data, as cvxpy does) so
that a termination callback can record a per-iteration history: the solver's own primal and dual
costs (mapped to physical units), gaps and residuals. Tolerances tol_gap_abs = tol_gap_rel =
tol_feas = max(tol^2, 1e-12) on the O(1)-scaled model (see SolveOptions); one thread (several
threads slowed it down on 2 cores).

Also takes the fixed-point models (workbench.solvers.fixed_point): one DefaultSolver on the data
compiled once (workbench.solvers.compiled, presolve off), updated between outer iterations by
DefaultSolver.update(q=...) (dual) or update(b=...) (primal). An interior-point method has no warm
start: each inner solve starts afresh, so an outer iteration saves the solver's set-up only.

A run that Clarabel ends with InsufficientProgress (it stalls near the optimum when the optimal
objective is close to zero on the scaled data, e.g. a time step whose contacts barely touch) still
returns its last iterate (cvxpy's ``accept_unknown``): the workbench measures it like any other
point and decides solved / inaccurate; Clarabel's own word is kept in info["solver_raw_status"].
"""

from __future__ import annotations

import time

import pandas as pd

from formulations.dual_fixed_point import FIXED_POINT_KIND
from workbench.solvers.cvxpy_base import CvxpySolver, interior_point_tolerance
from workbench.solvers.compiled import LOOSENED, LOOSER, ClarabelRetried, clarabel_solver, needs_looser_retry
from workbench.solvers.fixed_point import FixedPointCapable


class ClarabelSolver(FixedPointCapable, CvxpySolver):
    name = "clarabel"
    summary = "Clarabel interior-point conic solver (via cvxpy)"
    accepts = ("cvxpy", FIXED_POINT_KIND)
    cvxpy_name = "CLARABEL"
    install_hint = "pip install clarabel"
    compile_options = {"accept_unknown": True}

    def raw_status(self, raw) -> str | None:
        if isinstance(raw, ClarabelRetried):
            return f"{raw.first.status}, then {raw.status} with 100x looser tolerances"
        return str(raw.status)

    def settings(self, options):
        t = interior_point_tolerance(options.tol)
        s = {"tol_gap_abs": t, "tol_gap_rel": t, "tol_feas": t, "tol_ktratio": min(1e-6, t), "max_threads": 1}
        if options.max_iter is not None:
            s["max_iter"] = int(options.max_iter)
        if options.time_limit is not None:
            s["time_limit"] = float(options.time_limit)
        return s

    def run(self, model, data, chain, options, opts):
        raw, history = self._run_once(model, data, chain, options, opts)
        # a stall at the tight end of the tolerances is retried looser (workbench.solvers.compiled)
        if needs_looser_retry(raw, opts.get("tol_gap_abs", 0)):
            looser = {**opts, **{k: LOOSER * opts[k] for k in LOOSENED}}
            retry, retry_history = self._run_once(model, data, chain, options, looser)
            if str(retry.status) in ("Solved", "AlmostSolved"):
                if history is not None and retry_history is not None:
                    retry_history["iteration"] += int(raw.iterations)
                    retry_history["elapsed"] += float(history["elapsed"].iloc[-1])
                    history = pd.concat([history, retry_history], ignore_index=True)
                return ClarabelRetried(retry, raw), history
        return raw, history

    def _run_once(self, model, data, chain, options, opts):
        solver = clarabel_solver(data, chain, opts, options.verbose)
        rows: list[dict] = []
        unscale = model.unscale_objective
        t0 = time.perf_counter()

        def record(info):
            rows.append({"iteration": int(info.iterations), "elapsed": time.perf_counter() - t0,
                         "solver_primal_objective": unscale(info.cost_primal),
                         "solver_dual_objective": unscale(info.cost_dual),
                         "gap_abs": info.gap_abs, "gap_rel": info.gap_rel,
                         "res_primal": info.res_primal, "res_dual": info.res_dual})
            return False  # never stop the solver from here

        if options.keep_history:
            solver.set_termination_callback(record)
        raw = solver.solve()
        return raw, (pd.DataFrame(rows) if rows else None)
