"""The exact Coulomb problem as a nonlinear complementarity problem in De Saxce form (no relaxation).

Melanz et al. 2015 eqs. 8-10 (Signorini condition, maximal dissipation, the exact normal condition with the
mu ||u_t|| tilt), Koziara 2017 eqs. 10-15 (De Saxce-Feng form and its root-finding statement):

    find nu = [gamma; lambda]  with  u = N nu + r,
    K_i ∋ gamma_i ⊥ u_hat_i = u_i + [mu_i ||u_t,i||, 0, 0] ∈ K_i^*   (i = 1..n_c),   u_j = 0 (joints),

equivalently the root of the natural map C(nu) = nu - P_{K x R^{n_b}}(nu - u_hat) (Koziara 2017 eq. 15,
whose m(S) = S - P_K(S) gives C = F + m(nu - F) = nu - P_K(nu - F) with F = u_hat). Unlike the relaxed
CCQO this is not the optimality system of a convex program: the tilt makes it non-monotone, and a
solution may be non-unique. Its residual, normalised as Siconos does, is the workbench's
``siconos_error``; an exact method is judged by it.

The model is for methods that work on the NCP directly (projected quasi-Newton, nonsmooth Newton,
Siconos): it carries the problem, the O(1) data scales of formulations.base (nu = impulse * x,
u = velocity * y, so W_s = N impulse / velocity has unit mean diagonal) and the stopping test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from formulations.anti_relaxed import AntiRelaxed
from formulations.base import CCQOModel, DataScale, ccqo_objective, data_scale
from workbench.metrics import siconos_error
from workbench.problem import TimeStepProblem, cached_property

__all__ = ["NCP", "NCPModel"]


@dataclass
class NCPModel(CCQOModel):
    """The exact problem for NCP methods: the data of the anti-relaxed CCQO (formulations.anti_relaxed,
    whose fixed points are the NCP's solutions) plus the O(1) data scales. ``error(nu, u)`` is the
    judged measure (siconos_error)."""
    kind: ClassVar[str] = "ncp"

    @cached_property
    def scale(self) -> DataScale:
        """formulations.base.data_scale of the problem, made when a solver first asks (the projected
        quasi-Newton method does; the nonsmooth Newton method does not, and on a problem of a few contacts
        the scales are a large part of its solve): on the solver's clock then, and an UnsupportedError
        from there is raised through workbench.solvers.base.execute as bad input, as at build time."""
        return data_scale(self.problem)

    def error(self, nu: np.ndarray, u: np.ndarray) -> float:
        """workbench.metrics.siconos_error at nu with u = N nu + r at hand."""
        return siconos_error(self.problem, nu, u)


class NCP(AntiRelaxed):
    """The anti-relaxed problem stated as the root of its natural map, for the NCP methods."""
    name = "ncp"
    summary = "exact Coulomb problem in De Saxce form (nonlinear complementarity), for NCP solvers"
    reference = "Melanz et al. 2015 eqs. 8-10; Koziara 2017 eqs. 10-15"
    builds = ("ncp",)

    def _build(self, problem: TimeStepProblem, kind: str, params) -> NCPModel:
        return NCPModel(problem=problem, formulation=self.name, anti_relaxed=True, relaxed=False,
                        objective=ccqo_objective(problem))
