"""A cvxpy problem compiled once and re-solved after its linear data change: the one re-solve session
of the fixed points (workbench.solvers.fixed_point) and LCP1 (workbench.solvers.lcp1).

cvxpy compiles the problem once (``get_problem_data``); the solver object is built once on the
compiled data; between solves only a data vector changes, written through the solver's own update
API; cvxpy's ``unpack_results`` maps every solution back onto the problem's variables:

    backend    data keys the caller may change    solver's update call
    clarabel   "c" (objective), "b" (cone rhs)    DefaultSolver.update(q=..., b=...)  (presolve off)
    scs        "c", "b"                           SCS.update(c=..., b=...)  (KKT factorisation kept)
    osqp       "q" (objective)                    OSQP.update(q=...)

An interior-point solver (Clarabel) starts each solve afresh; SCS and OSQP can start from the
previous solution (``warm_start``).

Clarabel can stall at the tight end of its tolerances (InsufficientProgress) and then returns its
last iterate, which may be poor, or break down there (NumericalError: the 8th inner solve of the
dual fixed point on the 2,020-contact granular flow of the shared data, at a gap of 8e-4): on the 230-contact global granular flow of the shared data the
relaxed dual stopped there at a point with Siconos error 1e-3, against 1.5e-4 at the optimum. Such
a solve is retried once with gap and feasibility tolerances 100x looser (the plain solve, in
workbench.solvers.clarabel, and the session alike); the workbench then judges whichever point comes
back, and the retry's iterations count in the run.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from workbench.solvers.cvxpy_base import _solver_output_to_stderr

__all__ = ["CompiledSession", "BACKENDS", "ClarabelRetried", "clarabel_solver", "needs_looser_retry"]

#: the Clarabel tolerances a retry loosens, and by what factor
LOOSENED, LOOSER = ("tol_gap_abs", "tol_gap_rel", "tol_feas"), 100.0


def clarabel_solver(data: dict, chain, opts: dict, verbose: bool):
    """A clarabel.DefaultSolver on cvxpy's compiled data, built as cvxpy builds it."""
    import clarabel
    from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import dims_to_solver_cones
    from cvxpy.reductions.solvers.conic_solvers.conic_solver import ConicSolver

    P = data["P"] if "P" in data else sp.csc_array((data["c"].size, data["c"].size))
    settings = chain.solver.parse_solver_opts(verbose, opts)
    return clarabel.DefaultSolver(sp.triu(P).tocsc(), data["c"], data["A"], data["b"],
                                  dims_to_solver_cones(data[ConicSolver.DIMS]), settings)


def needs_looser_retry(raw, tol_gap_abs: float) -> bool:
    """Did Clarabel stall or break down at tolerances tight enough (< 1e-6) to be worth a looser retry?"""
    return str(raw.status) in ("InsufficientProgress", "NumericalError") and tol_gap_abs < 1e-6


class ClarabelRetried:
    """A retry's solution seen as the whole run: its point and status, both attempts' iterations
    and time."""

    def __init__(self, retry, first):
        self._retry, self.first = retry, first
        self.iterations = int(retry.iterations) + int(first.iterations)
        self.solve_time = float(retry.solve_time) + float(first.solve_time)

    def __getattr__(self, name):
        return getattr(self._retry, name)


def _clarabel_run(solver, warm_start: bool):
    raw = solver.solve()
    settings = solver.get_settings()
    if not needs_looser_retry(raw, settings.tol_gap_abs):
        return raw
    tight = {k: getattr(settings, k) for k in LOOSENED}
    for k, v in tight.items():
        setattr(settings, k, LOOSER * v)
    solver.update(settings=settings)
    retry = solver.solve()
    for k, v in tight.items():
        setattr(settings, k, v)
    solver.update(settings=settings)
    return ClarabelRetried(retry, raw) if str(retry.status) in ("Solved", "AlmostSolved") else raw


def _clarabel_limit(solver, seconds: float) -> None:
    settings = solver.get_settings()
    settings.time_limit = seconds
    solver.update(settings=settings)


def _clarabel(data, chain, opts, verbose, warm_start):
    solver = clarabel_solver(data, chain, {**opts, "presolve_enable": False}, verbose)
    if not solver.is_data_update_allowed():
        raise RuntimeError("Clarabel does not allow data updates on this problem")
    return solver


def _scs(data, chain, opts, verbose, warm_start):
    import scs
    from cvxpy.reductions.solvers.conic_solvers.conic_solver import ConicSolver
    from cvxpy.reductions.solvers.conic_solvers.scs_conif import dims_to_solver_dict

    args = {key: data[key] for key in ("P", "A", "b", "c") if key in data}
    settings = chain.solver.parse_solver_options(dict(opts))
    return scs.SCS(args, dims_to_solver_dict(data[ConicSolver.DIMS]), verbose=verbose, **settings)


def _osqp(data, chain, opts, verbose, warm_start):
    import osqp

    # as cvxpy's own OSQP interface: equalities and inequalities stacked, csc_matrix (int32 indices)
    A = sp.vstack([data["A"], data["F"]]).tocsc()
    A = sp.csc_matrix((A.data, A.indices, A.indptr), shape=A.shape)
    P = sp.csc_matrix((data["P"].data, data["P"].indices, data["P"].indptr), shape=data["P"].shape)
    lower = np.concatenate([data["b"], np.full(data["G"].shape, -np.inf)])
    upper = np.concatenate([data["b"], data["G"]])
    solver = osqp.OSQP()
    solver.setup(P, data["q"], A, lower, upper, verbose=verbose, warm_starting=warm_start, **opts)
    return solver


@dataclass(frozen=True)
class Backend:
    """How one solver is built on compiled data, updated, run and asked for its iteration count."""
    cvxpy_name: str
    build: Callable[..., Any]
    update_names: dict[str, str]  # compiled data key -> the solver's update keyword
    run: Callable[[Any, bool], Any]
    iterations: Callable[[Any], int]
    #: sets the solver's own time limit [s] for the next solve (None: it cannot be changed after set-up)
    limit: Callable[[Any, float], None] | None = None


BACKENDS: dict[str, Backend] = {
    "clarabel": Backend("CLARABEL", _clarabel, {"c": "q", "b": "b"}, _clarabel_run,
                        lambda raw: int(raw.iterations), _clarabel_limit),
    "scs": Backend("SCS", _scs, {"c": "c", "b": "b"}, lambda s, warm: s.solve(warm_start=warm),
                   lambda raw: int(raw["info"]["iter"])),
    "osqp": Backend("OSQP", _osqp, {"q": "q"}, lambda s, warm: s.solve(raise_error=False),
                    lambda raw: int(raw.info.iter), lambda s, seconds: s.update_settings(time_limit=seconds)),
}


class CompiledSession:
    """``cvx`` compiled once for ``backend`` (a key of BACKENDS) and its solver object built once.

    ``vector(key)``: a copy of a compiled data vector; ``columns(variable)``: the variable's columns
    in the compiled data; ``update(key, vector)``: new data for the next solve; ``solve()``: re-solve
    and unpack into ``cvx`` (its status and variable values), returning the solver's iterations.
    compile_seconds and setup_seconds time the one compile and the one set-up.
    """

    def __init__(self, cvx, backend: str, opts: dict, *, verbose: bool = False, warm_start: bool = False,
                 compile_options: dict | None = None):
        self.cvx, self.backend, self.verbose, self.warm_start = cvx, BACKENDS[backend], verbose, warm_start
        t0 = time.perf_counter()
        self.data, self.chain, self.inverse = cvx.get_problem_data(self.backend.cvxpy_name,
                                                                   solver_opts=dict(compile_options or {}))
        self.compile_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.solver = self.backend.build(self.data, self.chain, opts, verbose, warm_start)
        self.setup_seconds = time.perf_counter() - t0

    def columns(self, variable) -> np.ndarray:
        start = self.data["param_prob"].var_id_to_col[variable.id]
        return start + np.arange(variable.size)

    def vector(self, key: str) -> np.ndarray:
        return np.array(self.data[key], dtype=float, copy=True)

    def update(self, key: str, vector: np.ndarray) -> None:
        self.solver.update(**{self.backend.update_names[key]: vector})

    def solve(self, seconds_left: float | None = None) -> int:
        """Re-solve and unpack (cvx.status tells how it ended); cvxpy's SolverError passes through.
        ``seconds_left``: the run's time left, given to the solver as its own time limit for this
        solve (Clarabel, OSQP), so that one inner solve cannot outlast the run's limit."""
        if seconds_left is not None and self.backend.limit is not None:
            self.backend.limit(self.solver, max(float(seconds_left), 1e-3))
        with _solver_output_to_stderr(self.verbose):
            raw = self.backend.run(self.solver, self.warm_start)
        with warnings.catch_warnings():  # cvxpy's "may be inaccurate": the workbench judges that itself
            warnings.simplefilter("ignore", UserWarning)
            self.cvx.unpack_results(raw, self.chain, self.inverse)
        return self.backend.iterations(raw)
