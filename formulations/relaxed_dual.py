"""Relaxed dual: the cone-constrained quadratic optimisation problem (CCQO) in the impulses.

Seed 001 eq. 24 (seed 000 eq. 14), with joints (seed 001 eqs. 18-21):

    min_nu  1/2 nu^T N nu + r^T nu     s.t.  gamma_i in K_i (i = 1..n_c),  lambda free,

N = C^T M^-1 C, r = [b; b_G] + C^T M^-1 k, nu = [gamma; lambda]. Its KKT conditions are the relaxed
CCP K ∋ gamma ⊥ N gamma + r ∈ K^* (seed 001 eq. 13): the normal condition lacks the
mu ||u_t|| tilting term, so a sliding contact separates (seed 002; seed 000 section 3.1).

The quadratic term is never formed as a dense N:
- diagonal M: 1/2 ||A nu||^2 with A = M^-1/2 C sparse (as sparse as C);
- general SPD M: an auxiliary velocity change w with M w = C nu and the term 1/2 w^T M w;
- local problems (only W known): 1/2 nu^T W_s nu with the symmetric part W_s = (W + W^T)/2, sparse
  (nu^T W nu = nu^T W_s nu; FCLib files can hold a slightly non-symmetric W).
Data are scaled to O(1) first (formulations.base). The impulses are the primal variables.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from formulations.base import CCQOModel, CvxpyModel, Formulation, data_scale, friction_cone_constraints
from workbench.metrics import dual_objective
from workbench.problem import TimeStepProblem


def ccqo_objective(problem: TimeStepProblem):
    """The dual objective as a callable (nu, v) -> float."""
    return lambda nu, v=None: dual_objective(problem, nu)


class RelaxedDual(Formulation):
    name = "dual"
    summary = "relaxed dual CCQO in the impulses (convex QP with second-order cones)"
    reference = "seed 001 eq. 24; seed 000 eq. 14"
    builds = ("cvxpy", "ccqo")

    def _build_cvxpy(self, problem: TimeStepProblem) -> CvxpyModel:
        import cvxpy as cp

        sc = data_scale(problem)
        n, m, d = problem.n_unknowns, problem.n_contact_unknowns, problem.d
        x = cp.Variable(n, name="nu_scaled")
        r_s = problem.r / sc.velocity
        n_N = sc.velocity / sc.impulse  # mean diagonal of N
        constraints = friction_cone_constraints(cp.reshape(x[:m], (problem.n_contacts, d), order="C"), problem.mu)
        if not problem.is_global:
            W = problem.N
            Ws = ((W + W.T) * (0.5 / n_N)).tocsr()
            quad = 0.5 * cp.quad_form(x, cp.psd_wrap(Ws))
        elif problem.M_is_diagonal:
            A = (sp.diags(1.0 / np.sqrt(problem.M.diagonal() * n_N)) @ problem.C).tocsr()
            quad = 0.5 * cp.sum_squares(A @ x)
        else:
            w = cp.Variable(problem.n_dof, name="velocity_change_scaled")
            constraints.append(problem.M @ w == problem.C @ x)
            quad = 0.5 * cp.quad_form(w, cp.psd_wrap(problem.M / n_N))
        cvx = cp.Problem(cp.Minimize(quad + r_s @ x), constraints)

        def recover():
            nu = sc.impulse * np.asarray(x.value, dtype=float)
            v = problem.velocity(nu) if problem.is_global else None
            return nu, v

        return CvxpyModel(problem=problem, formulation=self.name, cvx=cvx, recover=recover,
                          objective=ccqo_objective(problem), scale=sc, relaxed=True, build_seconds=0.0,
                          unscale_objective=lambda value: value * sc.objective)

    def _build_ccqo(self, problem: TimeStepProblem) -> CCQOModel:
        return CCQOModel(problem=problem, formulation=self.name, anti_relaxed=False,
                         objective=ccqo_objective(problem))
