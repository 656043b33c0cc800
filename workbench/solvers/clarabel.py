"""Clarabel (interior point for conic programs with a quadratic objective), through cvxpy.

Runs the solver object itself (``clarabel.DefaultSolver`` on cvxpy's compiled data, as cvxpy does) so
that a termination callback can record a per-iteration history: objective = the solver's primal cost
(mapped to physical units), error = max(res_primal, res_dual), extras: the residuals, gaps and the
dual cost. Clarabel's own settings are the parameters ``backend.NAME`` (every field of
``clarabel.DefaultSettings``). Tolerances tol_gap_abs = tol_gap_rel =
tol_feas = max(tol^2, 1e-12) on the O(1)-scaled model (see SolveOptions); one thread (several
threads slowed it down on 2 cores).

Also takes the fixed-point models (workbench.solvers.fixed_point): one DefaultSolver on the data
compiled once (workbench.solvers.compiled, presolve off), updated between outer iterations by
DefaultSolver.update(q=...) (dual) or update(b=...) (primal). An interior-point method has no warm
start: each inner solve starts afresh, so an outer iteration saves the solver's set-up only.

A run that Clarabel ends with InsufficientProgress or NumericalError is retried once looser
(workbench.solvers.compiled). A run that ends with InsufficientProgress (it stalls near the optimum when the optimal
objective is close to zero on the scaled data, e.g. a time step whose contacts barely touch) still
returns its last iterate (cvxpy's ``accept_unknown``): the workbench measures it like any other
point and decides solved / inaccurate; Clarabel's own word is kept in info["solver_raw_status"].
"""

from __future__ import annotations

import functools

from workbench.solvers.cvxpy_base import CvxpySolver, interior_point_tolerance
from workbench.solvers.compiled import LOOSENED, LOOSER, ClarabelRetried, clarabel_solver, needs_looser_retry
from workbench.solvers.fixed_point import FixedPointCapable


#: the values of Clarabel's string settings (Clarabel documentation, "Settings"); a string setting not
#: listed here is not declared, so it never reaches the solver
CLARABEL_CHOICES = {"direct_solve_method": ("auto", "qdldl", "faer"),
                    "chordal_decomposition_merge_method": ("clique_graph", "parent_child", "none")}


class ClarabelSolver(FixedPointCapable, CvxpySolver):
    name = "clarabel"
    summary = "Clarabel interior-point conic solver (via cvxpy)"
    cvxpy_name = "CLARABEL"
    install_hint = "pip install clarabel"
    compile_options = {"accept_unknown": True}
    backend_choices = CLARABEL_CHOICES
    history_error = "max(res_primal, res_dual)"
    history_extras = ("res_primal", "res_dual", "gap_abs", "gap_rel", "solver_dual_objective")

    def backend_settings(self):
        return _clarabel_settings()

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

    def run(self, model, data, chain, options, opts, rec):
        raw = self._run_once(model, data, chain, options, opts, rec, 0)
        # a stall or breakdown at the tight end of the tolerances is retried looser
        # (workbench.solvers.compiled); the retry's rows follow the first attempt's
        if needs_looser_retry(raw, opts.get("tol_gap_abs", 0)):
            looser = {**opts, **{k: LOOSER * opts[k] for k in LOOSENED}}
            retry = self._run_once(model, data, chain, options, looser, rec, int(raw.iterations))
            if str(retry.status) in ("Solved", "AlmostSolved"):
                return ClarabelRetried(retry, raw)
        return raw

    def _run_once(self, model, data, chain, options, opts, rec, offset: int):
        solver = clarabel_solver(data, chain, opts, options.verbose)
        unscale = model.unscale_objective

        def record(info):
            rec.record(offset + int(info.iterations), unscale(info.cost_primal), max(info.res_primal, info.res_dual),
                       info.res_primal, info.res_dual, info.gap_abs, info.gap_rel, unscale(info.cost_dual))
            return False  # never stop the solver from here

        if rec.keep:
            solver.set_termination_callback(record)
        return solver.solve()


@functools.lru_cache(maxsize=1)
def _clarabel_settings() -> dict:
    """Every field of clarabel.DefaultSettings with its default."""
    import clarabel
    defaults = clarabel.DefaultSettings()
    return {name: getattr(defaults, name) for name in dir(defaults)
            if not name.startswith("_") and not callable(getattr(defaults, name))}
