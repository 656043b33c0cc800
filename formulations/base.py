"""What every formulation shares: the interface, the cvxpy model it builds, and the data scaling.

A formulation turns a :class:`~workbench.problem.TimeStepProblem` into a model a solver can take.
Conic formulations describe themselves once as a backend-neutral :class:`~formulations.qp.ConicQP`
and build a :class:`CvxpyModel` from it (the export formats come from the same description);
first-order solvers take a formulation's :class:`CCQOModel` (the problem plus how its linear term
is treated).

Scaling. Real problems span many orders of magnitude (an FCLib box stack has a dual objective near
-2.3e-5), while interior-point solvers stop on absolute tolerances near 1e-8. Every conic model is
therefore built on dimensionless data: with the impulse scale alpha = ||r||_inf / n_N and the
objective scale c = ||r||_inf^2 / n_N, where n_N is the mean of the diagonal of N, the unknowns are
nu = alpha x and the objective is divided by c, so that both the quadratic and the linear term are
O(1). The model maps results back to physical units; every reported number is physical.
"""

from __future__ import annotations

import math
import time
from abc import ABC
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np

from workbench.blocks import max_abs
from workbench.metrics import dual_objective, mean_diagonal
from workbench.params import Param, validate
from workbench.problem import TimeStepProblem
from workbench.status import RELAXED_ERROR, SICONOS_ERROR

__all__ = ["Formulation", "CvxpyModel", "CCQOModel", "DataScale", "data_scale", "DualObjective", "ccqo_objective"]


@dataclass(frozen=True)
class DataScale:
    """nu = impulse * x; objective = objective_scale * (scaled objective); velocities = velocity * y."""
    impulse: float
    velocity: float
    objective: float


def data_scale(problem: TimeStepProblem) -> DataScale:
    """Scales that make N and r O(1) (module docstring). Falls back to 1 for zero data."""
    n_N = mean_diagonal(problem, contacts_only=True)
    r_inf = max_abs(problem.r)          # compiled: numpy's max and min cost more than a few-contact solve's loop
    if not r_inf > 0:
        r_inf = n_N
    scale = DataScale(impulse=r_inf / n_N, velocity=r_inf, objective=r_inf * r_inf / n_N)
    if not (0 < scale.impulse < math.inf and 0 < scale.velocity < math.inf and 0 < scale.objective < math.inf):
        from workbench.errors import UnsupportedError
        raise UnsupportedError(f"this problem's scales (|r| {r_inf:.3g}, mean diagonal of N {n_N:.3g}) put its "
                               "impulses or objective outside floating point: rescale its units")
    return scale


class DualObjective:
    """The dual objective 1/2 nu^T N nu + r^T nu of a problem as a callable (nu, v) -> float.
    ``metric`` names the same number among the workbench's metrics, which finalize computes anyway and
    reads instead of calling it again."""
    metric = "dual_objective"

    def __init__(self, problem: TimeStepProblem):
        self.problem = problem

    def __call__(self, nu: np.ndarray, v: np.ndarray | None = None) -> float:
        return dual_objective(self.problem, nu)


def ccqo_objective(problem: TimeStepProblem) -> DualObjective:
    """The dual objective as a callable (nu, v) -> float (:class:`DualObjective`)."""
    return DualObjective(problem)


def judged_measure(relaxed: bool) -> str:
    """The measure a model's runs are judged by (workbench.judging.finalize): the relaxed natural-map
    error for a relaxed model, the exact (De Saxce) Siconos error otherwise (workbench.status)."""
    return RELAXED_ERROR if relaxed else SICONOS_ERROR


@dataclass
class CvxpyModel:
    """A formulation built as a cvxpy problem, on scaled data.

    ``recover()`` (after a solve) returns the impulses nu and the velocities v in physical units
    (v is None for local problems); ``objective(nu, v)`` evaluates the formulation's own objective,
    in physical units, at a returned point.
    """
    kind: ClassVar[str] = "cvxpy"
    problem: TimeStepProblem
    formulation: str
    cvx: Any  # cvxpy.Problem
    recover: Callable[[], tuple[np.ndarray, np.ndarray | None]]
    objective: Callable[[np.ndarray, np.ndarray | None], float]
    scale: DataScale
    relaxed: bool
    build_seconds: float
    #: maps the solver's optimal value of the scaled model to the physical objective
    unscale_objective: Callable[[float], float] = lambda value: value
    info: dict[str, Any] = field(default_factory=dict)
    #: the measure its runs are judged by (workbench.status.JUDGED_MEASURES)
    judged_by = property(lambda self: judged_measure(self.relaxed))


@dataclass
class CCQOModel:
    """The (relaxed or anti-relaxed) cone-constrained QP min 1/2 nu^T N nu + (r + a)^T nu, nu in K,
    for matrix-free first-order solvers (Melanz et al. 2015 eqs. 14-15). ``anti_relaxed`` asks the solver to
    update a_i = mu_i ||u_t,i|| as it iterates."""
    kind: ClassVar[str] = "ccqo"
    problem: TimeStepProblem
    formulation: str
    anti_relaxed: bool
    objective: Callable[[np.ndarray, np.ndarray | None], float]
    relaxed: bool = True
    build_seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    #: the measure its runs are judged by (workbench.status.JUDGED_MEASURES)
    judged_by = property(lambda self: judged_measure(self.relaxed))


class Formulation(ABC):
    """One way of posing the time step. Subclasses live one per module in formulations/."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: equations of the papers implemented, for ``workbench list`` and the docs
    reference: ClassVar[str]
    #: True when the formulation needs M, D, k (a global problem)
    needs_global: ClassVar[bool] = False
    #: True when its solution satisfies the exact (unrelaxed) Coulomb law
    exact: ClassVar[bool] = False
    #: model kinds it can build: "cvxpy" and/or "ccqo"
    builds: ClassVar[tuple[str, ...]] = ("cvxpy",)
    #: build-time settings (workbench.params), given with the solver's in options.params
    params: ClassVar[tuple[Param, ...]] = ()

    def check_params(self, given: dict[str, Any]) -> dict[str, Any]:
        """``given`` checked against :attr:`params`, defaults filled in."""
        return validate(self.params, given, f"formulation {self.name}")

    def build(self, problem: TimeStepProblem, kind: str = "cvxpy", params: dict[str, Any] | None = None
              ) -> CvxpyModel | CCQOModel:
        """Build the model of ``kind`` for ``problem`` (timed into ``build_seconds``) with the
        formulation's own ``params`` (checked here against :attr:`params`)."""
        from workbench.errors import UnsupportedError
        if kind not in self.builds:
            raise UnsupportedError(f"formulation {self.name} cannot be built as a {kind} model "
                                   f"(it builds {', '.join(self.builds)})")
        if self.needs_global:
            problem.require_global(f"formulation {self.name}")
        return self.build_checked(problem, kind, self.check_params(params or {}))

    def build_checked(self, problem: TimeStepProblem, kind: str, params: dict[str, Any]) -> CvxpyModel | CCQOModel:
        """:meth:`build` for a caller that checked ``kind`` (one of :attr:`builds`), ``params`` (by
        :meth:`check_params`) and, for a formulation that needs M and D, that ``problem`` is global:
        workbench.method.Method, once at its construction and in Method.solve, so that a solve of a
        few contacts does not pay for the checks twice."""
        t0 = time.perf_counter()
        model = self._build(problem, kind, params)
        model.build_seconds = time.perf_counter() - t0
        return model

    def _build(self, problem: TimeStepProblem, kind: str, params: dict[str, Any]):
        """Dispatch on ``kind``; a formulation with other model kinds or build-time settings overrides it."""
        return self._build_cvxpy(problem) if kind == "cvxpy" else self._build_ccqo(problem)

    def _build_cvxpy(self, problem: TimeStepProblem) -> CvxpyModel:
        raise NotImplementedError  # reached through build() only for formulations that list "cvxpy"

    def _build_ccqo(self, problem: TimeStepProblem) -> CCQOModel:
        raise NotImplementedError

