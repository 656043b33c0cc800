"""Relaxed primal: the quadratic program in the velocities (seed 001 eq. 23).

    min_v  1/2 v^T M v - k^T v     s.t.  D_i^T v + b_i in K_i^*  (i = 1..n_c),   G^T v + b_G = 0,

with K_i^* = {mu_i ||u_t|| <= u_n} the dual friction cone (the seed writes the polar cone for
-(D^T v + b), eq. 22). The impulses are the multipliers of the cone constraints: with multiplier
(z_0, z_1) of ||mu_i u_t|| <= u_n, gamma_i = [z_0, mu_i z_1], and M v = k + D gamma + G lambda.

Numerically the model is written in the velocity change w = v - M^-1 k, which removes the constant
-1/2 k^T M^-1 k from the objective (it dwarfs the contact part on real data):

    min_w 1/2 w^T M w   s.t.  D_i^T w + r_i in K_i^*,   G^T w + r_G = 0,

r being the linear term of the dual. Data are scaled to O(1) (formulations.base); global problems only.
"""

from __future__ import annotations

import numpy as np

from formulations.base import CvxpyModel, Formulation, data_scale
from workbench.problem import TimeStepProblem


def primal_objective(problem: TimeStepProblem):
    """1/2 v^T M v - k^T v as a callable (nu, v) -> float (v from nu when v is None)."""
    def objective(nu, v=None):
        if v is None:
            v = problem.velocity(nu)
        return float(0.5 * v @ (problem.M @ v) - problem.k @ v)
    return objective


class RelaxedPrimal(Formulation):
    name = "primal"
    summary = "relaxed primal QP in the velocities, impulses from the cone multipliers"
    reference = "seed 001 eq. 23"
    needs_global = True

    def _build_cvxpy(self, problem: TimeStepProblem) -> CvxpyModel:
        import cvxpy as cp

        sc = data_scale(problem)
        n_c, d, m = problem.n_contacts, problem.d, problem.n_contact_unknowns
        # velocity scale sc.velocity; the objective scale that makes M O(1) is mean(M) v_s^2
        m_M = float(problem.M.diagonal().mean())
        y = cp.Variable(problem.n_dof, name="velocity_change_scaled")
        r_s = problem.r / sc.velocity
        u = problem.D.T @ y + r_s[:m]
        uc = cp.reshape(u, (n_c, d), order="C")
        cone = cp.SOC(uc[:, 0], cp.multiply(np.tile(problem.mu, (d - 1, 1)), uc[:, 1:].T), axis=0)
        constraints = [cone]
        joint = None
        if problem.n_bilateral:
            joint = problem.G.T @ y + r_s[m:] == 0
            constraints.append(joint)
        if problem.M_is_diagonal:
            quad = 0.5 * cp.sum_squares(cp.multiply(np.sqrt(problem.M.diagonal() / m_M), y))
        else:
            quad = 0.5 * cp.quad_form(y, cp.psd_wrap(problem.M / m_M))
        cvx = cp.Problem(cp.Minimize(quad), constraints)
        # multipliers of the scaled problem -> impulses: M w = C nu with w = v_s y, objective / (m_M v_s^2)
        impulse = m_M * sc.velocity
        offset = 0.5 * float(problem.k @ problem.solve_M(problem.k))  # 1/2 k^T M^-1 k

        def recover():
            z0, z1 = cone.dual_value
            z1 = np.asarray(z1).reshape(d - 1, n_c)
            gamma = np.empty((n_c, d))
            gamma[:, 0] = np.asarray(z0).reshape(-1)
            gamma[:, 1:] = (problem.mu * z1).T
            parts = [gamma.reshape(-1)]
            if joint is not None:
                # cvxpy's Lagrangian adds +y^T(G^T w + r_G): M w = D gamma - G y, so lambda = -y
                parts.append(-np.asarray(joint.dual_value, dtype=float).reshape(-1))
            nu = impulse * np.concatenate(parts)
            v = problem.solve_M(problem.k) + sc.velocity * np.asarray(y.value, dtype=float)
            return nu, v

        return CvxpyModel(problem=problem, formulation=self.name, cvx=cvx, recover=recover,
                          objective=primal_objective(problem), scale=sc, relaxed=True, build_seconds=0.0,
                          unscale_objective=lambda value: value * m_M * sc.velocity ** 2 - offset,
                          info={"primal_velocity_scale": sc.velocity})
