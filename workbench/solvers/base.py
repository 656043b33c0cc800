"""The one solver interface and the one result type every solver returns.

``Solver.solve(model, options) -> SolveResult``: the model is what a formulation built
(:class:`formulations.base.CvxpyModel` or :class:`formulations.base.CCQOModel`); the result carries the
impulses, the solver's raw claims (recorded, never trusted), the typed cause that ended the run
(:class:`StopCause`), the per-iteration history (:mod:`workbench.solvers.recorder`) and, filled in by
:func:`workbench.judging.finalize` (one layer up, beside the Method), the workbench's own metrics and
the status judged from them.

:func:`execute` is the one path from a built model to a result: it checks ``options.params`` against the
solver's declared parameters (:mod:`workbench.params`), calls ``solve`` and turns anything the solver or
its backend raises (other than bad input) into a "failed" result with the exception's one-line message.
"""

from __future__ import annotations

import enum
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from workbench.errors import InputError
from workbench.params import Param, validate
from workbench.status import FAILED, ORDER

__all__ = ["SolveOptions", "SolveResult", "Solver", "StopCause", "STATUSES", "OUTER_STOPS", "HandOver", "execute", "handover",
           "handover_label"]


class StopCause(str, enum.Enum):
    """Why a solver's run ended, as the solver knows it (a claim: the status is judged by workbench.judging.finalize).

    converged: its own stopping test held; max_iter: an iteration (or work) cap; timeout: the time
    limit; stalled: it could make no more progress (no descent, a stagnating outer loop, a backend
    that reports insufficient progress); failed: a breakdown or error, with or without a point."""
    CONVERGED = "converged"
    MAX_ITER = "max_iter"
    TIMEOUT = "timeout"
    STALLED = "stalled"
    FAILED = "failed"


#: the stop cause of each way an in-house outer loop ends, one table for both: the anti-relaxation
#: loop of workbench.solvers.iterative (info["outer_status"]: converged, stagnated, max_iter, timeout)
#: and the fixed point's (workbench.solvers.fixed_point, info["outer_stop"]: converged, settled,
#: stalled, max_iter, timeout, failed; a polish that reaches tol makes any of them CONVERGED, one that
#: runs out of time TIMEOUT)
OUTER_STOPS = {"converged": StopCause.CONVERGED, "stagnated": StopCause.STALLED, "settled": StopCause.STALLED,
               "stalled": StopCause.STALLED, "max_iter": StopCause.MAX_ITER, "timeout": StopCause.TIMEOUT,
               "failed": StopCause.FAILED}


#: Status of a run, judged by the workbench: the names of the one table, best first
#: (workbench.status.TABLE: order, meaning, groups)
STATUSES = ORDER


@dataclass(frozen=True)
class HandOver:
    """A hand-over a solver declares (:attr:`Solver.hands_over_to`): to whom a run of it may hand its
    point, and on what model, so that workbench.method.Method.warm_up compiles that solver too and
    every output says so (:func:`handover`, run by workbench.solvers.recorder.Recorder.hand_over).

    kind: "fallback" (Koziara 2017 Algorithm 1 line 3: the second solver's point replaces the first's
    whenever it returns one) or "polish" (it refines the first's point, which it replaces only where
    its judged measure is lower); parameter: the solver parameter that picks it: the second solver's
    name (None: off) when ``solver`` is None, else a switch for ``solver``; formulation: the
    formulation whose model the second solver takes (None: the first's model as it is)."""
    kind: str
    parameter: str
    solver: str | None = None
    formulation: str | None = None

    def target(self, params: dict[str, Any]) -> str | None:
        """The solver a run with the checked ``params`` may hand over to, or None (off)."""
        value = params.get(self.parameter)
        return value if self.solver is None else (self.solver if value else None)


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
    keep_history: record a per-iteration history where the solver can.
    params: declared parameters (workbench.params) of the formulation and the solver, for the
         one-call workbench.method.solve, which gives them to its Method (split and checked once;
         Method.solve refuses them here); :func:`execute` receives the solver's, checked.
    """
    tol: float = 1e-6
    accept: float | None = None
    max_iter: int | None = None
    time_limit: float | None = None
    warm_start: np.ndarray | None = None
    verbose: bool = False
    keep_history: bool = True
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        # checked at construction as the command line checks its options (workbench.limits): tol=inf or
        # time_limit=nan is one line, never a "solved" at iteration 0 or a ValueError deep in a solve
        from workbench.limits import solve_numbers
        checked = solve_numbers(tol=self.tol, accept=self.accept, max_iter=self.max_iter, time_limit=self.time_limit)
        self.tol, self.accept, self.max_iter, self.time_limit = (checked[k] for k in ("tol", "accept", "max_iter",
                                                                                       "time_limit"))

    def with_params(self, params: dict[str, Any]) -> "SolveOptions":
        """A copy with ``params``, as ``dataclasses.replace(self, params=params)`` gives it, without
        replace's call of __init__ through every field (the copy of every solve, about 2 us)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.params = params
        return new


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
    #: pandas.DataFrame of workbench.solvers.recorder.HISTORY_COLUMNS plus the solver's declared extras
    history: Any = None
    stop: StopCause | None = None
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    #: hand-overs to another method (fallback, polish), in order: plain dicts of :func:`handover`;
    #: empty when the method ran alone
    handover: list[dict[str, Any]] = field(default_factory=list)
    #: the measure ``metrics["judged_error"]`` is (relaxed_error, siconos_error, lcp_residual), named by
    #: workbench.judging.finalize; None when no point was judged
    judged_name: str | None = None
    #: iterates the recorder kept for the history's judged_error column (row index -> nu); consumed
    #: and cleared by :func:`workbench.judging.finalize`, never part of the result's record
    sampled_iterates: dict[int, np.ndarray] | None = field(default=None, repr=False, compare=False)

    @property
    def handover_label(self) -> str:
        """The hand-overs in words ("ncp/pqn -> pgs fallback"), "" when the method ran alone."""
        return handover_label(self.handover)

    @property
    def status_alone(self) -> str:
        """The status the method earns alone: at its first hand-over (judged by finalize), else its status."""
        return self.handover[0].get("status_alone", self.status) if self.handover else self.status

    @property
    def seconds_alone(self) -> float:
        """The solve time of the method alone: until its first hand-over, else the solve time."""
        return self.handover[0]["at_seconds"] if self.handover else self.solve_seconds

    def record(self, point: bool = True, history: bool = True) -> dict[str, Any]:
        """The result as plain data, the one form that leaves a process or goes to disk (the study
        worker's answer, the results store's row, ``workbench solve --json``): a JSON-able dict of
        the fields, ``stop`` as its value, a non-finite number as its text ("inf", "nan"), ``info``
        with its values made plain the same way (others as their text), ``nu`` and ``v`` as lists
        (only with ``point``), ``history`` as a dict of columns (only with ``history``), ``handover``
        as its list of plain dicts and ``handover_label`` in words, ``judged_name`` the measure the
        status was judged by. The study's run row is built from it (workbench.study.record).
        :meth:`from_record` gives the result back."""
        out = {"solver": self.solver, "formulation": self.formulation, "status": self.status,
               "stop": None if self.stop is None else self.stop.value, "solver_status": self.solver_status,
               "objective": _plain(self.objective), "solver_objective": _plain(self.solver_objective),
               "iterations": None if self.iterations is None else int(self.iterations),
               "build_seconds": float(self.build_seconds), "solve_seconds": float(self.solve_seconds),
               "metrics": {k: _plain(v) for k, v in self.metrics.items()},
               "message": " ".join(str(self.message).split()), "info": _plain(self.info),
               "handover": _plain(self.handover), "handover_label": self.handover_label,
               "judged_name": self.judged_name}
        if point:
            out.update(nu=None if self.nu is None else _plain(self.nu.tolist()),
                       v=None if self.v is None else _plain(self.v.tolist()))
        if history:
            out["history"] = None if self.history is None else \
                {c: _plain(self.history[c].tolist()) for c in self.history.columns}
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "SolveResult":
        """The SolveResult of :meth:`record`'s dict (keys it does not know are ignored). A record without
        a solve time (a run that produced nothing: its worker killed or dead) takes its
        ``wall_seconds``, the time the run took (the study's run record, workbench.study.record)."""
        def number(x):
            return None if x is None else float(x)

        hist = record.get("history")
        if hist is not None:
            import pandas as pd
            hist = pd.DataFrame(hist)
            for column in hist.columns:  # numbers written as "inf" / "nan" by _plain become floats again
                values = hist[column]
                if values.dtype == object and values.map(lambda x: isinstance(x, (int, float))
                                                         or x in _NON_FINITE).all():
                    hist[column] = values.map(float)
        return cls(solver=record["solver"], formulation=record["formulation"], status=record["status"],
                   solver_status=record.get("solver_status") or "",
                   nu=None if record.get("nu") is None else np.asarray(record["nu"], dtype=float),
                   v=None if record.get("v") is None else np.asarray(record["v"], dtype=float),
                   objective=number(record.get("objective")), solver_objective=number(record.get("solver_objective")),
                   iterations=record.get("iterations"), build_seconds=float(record.get("build_seconds") or 0.0),
                   solve_seconds=float(next((record[k] for k in ("solve_seconds", "wall_seconds")
                                             if record.get(k) is not None), 0.0)),
                   metrics={k: float(v) for k, v in (record.get("metrics") or {}).items()}, history=hist,
                   stop=None if record.get("stop") is None else StopCause(record["stop"]),
                   message=record.get("message") or "", info=dict(record.get("info") or {}),
                   handover=[dict(h) for h in record.get("handover") or []], judged_name=record.get("judged_name"))


#: the texts of the non-finite numbers in a record
_NON_FINITE = ("inf", "-inf", "nan")


def _plain(x):
    """``x`` as JSON-able plain data: numpy scalars as Python numbers, non-finite floats as their text
    ("inf", "-inf", "nan"), containers element-wise, anything else as its text."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if np.isfinite(x) else str(x)
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    return str(x)


class Solver(ABC):
    """One solver, one module; registered by one line in workbench.solvers.SOLVERS."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    #: the model kinds it takes ("cvxpy", "ccqo", ...), in its order of preference (not Method.accepts:
    #: whether a method can solve a given problem)
    model_kinds: ClassVar[tuple[str, ...]] = ("cvxpy",)
    #: declared settings (options.params), checked by check_params (through solvers.split_params)
    params: ClassVar[tuple[Param, ...]] = ()
    #: keys with this prefix pass unchecked, for backends whose settings the workbench cannot list
    unchecked_prefix: ClassVar[str | None] = None
    #: True for the in-house solvers with numba kernels: workbench.method.Method.warm_up then solves
    #: every form (2D and 3D, global and local, with and without history and warm start), and
    #: ``workbench warm-up`` fills the on-disk compile cache for them
    compiled: ClassVar[bool] = False
    #: True when the solver treats a global problem as its local problem (W, q) = (N, r), through N and
    #: r only: workbench.method.Method then solves a small global problem on its condensed local one
    #: (workbench.problem.TimeStepProblem.condensed), the same method on an equivalent problem (a
    #: solver that condenses in its own run, the nonsmooth Newton's dense one, says False and does so
    #: itself, to the same numbers)
    condenses: ClassVar[bool] = False
    #: whom a run may hand over to (:class:`HandOver`: PQN's fallback, the fixed point's Newton
    #: polish), None for a solver that runs alone; :meth:`handover_target` reads it, and
    #: workbench.method.Method.warm_up compiles that solver too, so the hand-over's compilation is
    #: never inside a run's clock
    hands_over_to: ClassVar[HandOver | None] = None

    #: the iteration cap of a run that sets no options.max_iter (None: none of the workbench's; the
    #: backend keeps its own default); :meth:`max_iter` is the one place that applies it
    default_max_iter: ClassVar[int | None] = None

    def max_iter(self, options: SolveOptions) -> int | None:
        """The iteration cap of a run: ``options.max_iter``, else :attr:`default_max_iter`."""
        return self.default_max_iter if options.max_iter is None else int(options.max_iter)

    def parameters(self, kind: str | None = None) -> tuple[Param, ...]:
        """The parameters this solver takes for models of ``kind`` (None: every kind)."""
        return self.params

    def check_params(self, given: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
        """``given`` checked against :meth:`parameters`, defaults filled in (workbench.params.validate)."""
        prefix = self.unchecked_prefix
        free = {k: v for k, v in given.items() if prefix and k.startswith(prefix)}
        out = validate(self.parameters(kind), {k: v for k, v in given.items() if k not in free},
                       f"solver {self.name}")
        return {**out, **free}

    def handover_target(self, params: dict[str, Any]) -> str | None:
        """The solver a run with the checked ``params`` may hand over to (:attr:`hands_over_to`), or None."""
        return self.hands_over_to.target(params) if self.hands_over_to else None

    def device(self, params: dict[str, Any]) -> str:
        """Where a run with the checked ``params`` goes: "cpu" (this process's cores) or "gpu" (a
        solver whose parameter puts its iterations on a GPU: workbench.solvers.xp_first_order)."""
        return "cpu"

    def availability(self) -> tuple[bool, str]:
        """(True, "") or (False, "why not")."""
        return True, ""

    def availability_for(self, params: dict[str, Any]) -> tuple[bool, str]:
        """:meth:`availability` with these (checked) parameters: a device may be missing."""
        return self.availability()

    def variant(self, params: dict[str, Any]) -> str:
        """What the parameters add to the solver's name in labels ("[gpu]"), or ""."""
        return ""

    @abstractmethod
    def solve(self, model, options: SolveOptions) -> SolveResult:
        """Solve the model (``options.params`` already checked, defaults filled in); fill nu, v,
        solver_status, iterations and build times, and return through a
        :class:`~workbench.solvers.recorder.Recorder` (stop cause, solve time, history). The caller
        (:func:`workbench.judging.finalize`) computes metrics and the status."""

    def new_result(self, model) -> SolveResult:
        """The result to fill in, "failed" until finalize judges it."""
        return SolveResult(solver=self.name, formulation=model.formulation, status=FAILED,
                           build_seconds=model.build_seconds)


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def execute(solver: Solver, model, options: SolveOptions) -> SolveResult:
    """Run ``solver.solve(model, options)``; ``options.params`` must already be the solver's checked
    parameters (:meth:`Solver.check_params`, which ``workbench.method.Method`` applies through ``split_params``).

    Bad input (InputError) propagates; any other exception of the solver or its backend gives a
    "failed" result, stop cause FAILED, with the exception's one-line message (the traceback is kept
    in info["traceback"], for the study worker's log)."""
    t0 = time.perf_counter()
    try:
        return solver.solve(model, options)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a backend may raise anything; the run records it
        result = solver.new_result(model)
        result.stop, result.message = StopCause.FAILED, one_line(exc)
        result.solve_seconds = time.perf_counter() - t0
        result.info["traceback"] = traceback.format_exc()
        return result


def condensed_note(how: str, n_dof: int) -> str:
    """info["condensed"] of a run on the local problem (W, q) of a small global one
    (workbench.problem.TimeStepProblem.condensed; workbench.method.Method's condensed path, or a solver
    that condenses in its own run): ``how`` M^-1 was applied ("a diagonal M", "dense Cholesky of M")."""
    return f"solved on the local problem W = D^T M^-1 D, q = b + D^T M^-1 k ({how}, {n_dof} dofs)"


def handover(kind: str, source: str, target: str, reason: str, at_iteration: int, at_seconds: float,
             stop_before: StopCause, error_before: float, measure: str, used: bool,
             target_iterations: int | None = None, target_stop: StopCause | None = None) -> dict[str, Any]:
    """One hand-over of a run to another method, as plain data (what SolveResult.handover lists).

    kind: "fallback" (another solver replaces a run that did not converge, Koziara 2017 Algorithm 1
    line 3) or "polish" (another solver refines the run's point); from: the method that handed over
    ("formulation/solver"); to: the solver that took over; reason: why, one line; at_iteration: the
    first method's iterations when it handed over (its history's numbering); at_seconds: the solve's
    clock then [s]; stop_before: the first method's stop cause; error_before: the workbench's
    ``measure`` (its judged error) of the first method's point, what it reached alone; used: whether
    the returned point is the second method's; to_iterations, to_stop: the second method's.
    :func:`workbench.judging.finalize` adds status_alone, the status the first method's point earns by the same rule."""
    return {"kind": kind, "from": source, "to": target, "reason": " ".join(reason.split()),
            "at_iteration": int(at_iteration), "at_seconds": float(at_seconds),
            "stop_before": StopCause(stop_before).value, "error_before": float(error_before), "measure": measure,
            "used": bool(used), "to_iterations": None if target_iterations is None else int(target_iterations),
            "to_stop": None if target_stop is None else StopCause(target_stop).value}


def handover_label(handovers: list[dict[str, Any]]) -> str:
    """The hand-overs in words: "ncp/pqn -> pgs fallback", "dual-fixed-point/clarabel + newton polish"
    ("" for none)."""
    return "; ".join(f"{h['from']} -> {h['to']} fallback" if h["kind"] == "fallback" else
                     f"{h['from']} + {h['to']} {h['kind']}" for h in handovers)
