"""Anti-relaxed dual CCQO: the exact Coulomb problem through a shifted linear term (Melanz et al. 2015 eq. 15).

    min_gamma 1/2 gamma^T N gamma + (r + a)^T gamma   s.t. gamma_i in K_i,
    a_i = [mu_i lambda_i, 0, 0],  lambda_i = ||u_t,i|| = ||D_{i,t}^T v||   (Melanz et al. 2015 eqs. 27-28)

At a fixed point (a computed from the solution's own tangential velocity) the KKT conditions are the
De Saxce form of the exact Coulomb law: K ∋ gamma ⊥ u + [mu ||u_t||, 0, 0] ∈ K^*. The shift enters
with a plus sign (Melanz et al. 2015 eq. 27-28 and algorithm lines 33-37; Mazhar et al. 2014 eq. 27 prints a minus).
First-order solvers update a as they iterate (APGD "anti-relaxation", Melanz et al. 2015 section 2.3) or in an
outer fixed-point loop; on local problems u_t = (W gamma + q)_t. Results are judged by the exact
Siconos error.
"""

from __future__ import annotations

from formulations.base import CCQOModel, Formulation, ccqo_objective
from workbench.errors import UnsupportedError
from workbench.problem import TimeStepProblem


class AntiRelaxed(Formulation):
    name = "anti-relaxed"
    summary = "dual CCQO with the anti-relaxation shift r_n + mu ||u_t|| (exact Coulomb), for first-order solvers"
    reference = "Melanz et al. 2015 eq. 15, eqs. 27-28, algorithm lines 33-37"
    exact = True
    builds = ("ccqo",)

    def _build_cvxpy(self, problem: TimeStepProblem):
        raise UnsupportedError("anti-relaxed is solved by first-order solvers; for cvxpy use the fixed-point formulations")

    def _build_ccqo(self, problem: TimeStepProblem) -> CCQOModel:
        # objective reported: the relaxed dual objective at the returned impulses (the shift a is
        # solution-dependent, so the dual objective is the comparable number)
        return CCQOModel(problem=problem, formulation=self.name, anti_relaxed=True, relaxed=False,
                         objective=ccqo_objective(problem))
