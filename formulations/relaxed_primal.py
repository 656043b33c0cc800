"""Relaxed primal: the quadratic program in the velocities (Mazhar et al. 2014 eq. 23).

    min_v  1/2 v^T M v - k^T v     s.t.  D_i^T v + b_i in K_i^*  (i = 1..n_c),   G^T v + b_G = 0,

with K_i^* = {mu_i ||u_t|| <= u_n} the dual friction cone (the paper writes the polar cone for
-(D^T v + b), eq. 22). The impulses are the multipliers of the cone constraints: with multiplier
(z_0, z_1) of ||mu_i u_t|| <= u_n, gamma_i = [z_0, mu_i z_1], and M v = k + D gamma + G lambda.

Numerically the model is written in the velocity change w = v - M^-1 k, which removes the constant
-1/2 k^T M^-1 k from the objective (it dwarfs the contact part on real data):

    min_w 1/2 w^T M w   s.t.  D_i^T w + r_i in K_i^*,   G^T w + r_G = 0,

r being the linear term of the dual. :func:`describe` writes it once as a backend-neutral
:class:`~formulations.qp.ConicQP` in y = w / v_s with the objective divided by m_M v_s^2 (m_M the
mean diagonal of M, v_s the velocity scale of formulations.base): ``min 1/2 y^T (M / m_M) y`` with
the cones on u = D^T y + r_c / v_s and the joint rows G^T y = -r_G / v_s; the quadratic term is
1/2 ||L^T y||^2 / m_M (M = L L^T block by block, formulations.qp.mass_cholesky) or, for blocks of M too
large to factor densely, M itself. The cvxpy model and every export format come from it (formats
that take cones on variables only get u as variables, with the rows u - D^T y = r_c / v_s).
Global problems only.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.sparse as sp

from formulations.base import CvxpyModel, DataScale, Formulation
from formulations.qp import (ConicQP, FrictionCones, RowBlock, VariableBlock, mass_cholesky, model_scale, numbered,
                             to_cvxpy)
from workbench.problem import TimeStepProblem

__all__ = ["RelaxedPrimal", "describe", "primal_objective"]


def primal_objective(problem: TimeStepProblem):
    """1/2 v^T M v - k^T v as a callable (nu, v) -> float (v from nu when v is None)."""
    def objective(nu, v=None):
        if v is None:
            v = problem.velocity(nu)
        return float(0.5 * v @ (problem.M @ v) - problem.k @ v)
    return objective


def describe(problem: TimeStepProblem, *, scaled: bool | DataScale = True) -> ConicQP:
    """The relaxed primal QP in the velocity change (module docstring) as a ConicQP."""
    problem.require_global("the relaxed primal")
    sc = model_scale(problem, scaled)
    v_s = sc.velocity
    m_M = float(problem.M.diagonal().mean()) if scaled else 1.0
    n_dof, m, d, n_b = problem.n_dof, problem.n_contact_unknowns, problem.d, problem.n_bilateral
    r_s = np.asarray(problem.r, dtype=float) / v_s
    if problem.M_is_diagonal:
        quad = {"F": sp.diags(np.sqrt(problem.M.diagonal() / m_M), format="csr")}
    elif (chol := mass_cholesky(problem)) is not None:
        quad = {"F": (chol[0].T / np.sqrt(m_M)).tocsr()}
    else:
        quad = {"P": (problem.M / m_M).tocsr()}
    rows = (RowBlock("joint", problem.G.T.tocsr(), np.full(n_b, "="), -r_s[m:], partial(numbered, "joint", n_b)),) \
        if n_b else ()
    cones = FrictionCones("K*", problem.mu, d, G=problem.D.T.tocsr(), h=r_s[:m],
                          lift=VariableBlock("u", n_dof, m, v_s, "m/s",
                                             "relative contact velocity D^T w + r, [normal, tangents] per contact"))
    impulse = m_M * v_s
    return ConicQP(
        problem=problem, formulation="primal",
        description=("relaxed primal QP (Mazhar et al. 2014 eq. 23) in the velocity change w = v - M^-1 k: "
                     "min_w 1/2 w^T M w s.t. u = D^T w + r_c in K^*, G^T w + r_G = 0; model: y = w / v_s, "
                     "min 1/2 y^T (M / m_M) y s.t. u = D^T y + r_c / v_s, G^T y = -r_G / v_s, u_i in K_i^*"),
        relaxed=True, c=np.zeros(n_dof), name_rule=partial(numbered, "y", n_dof), nonneg=np.zeros(n_dof, dtype=bool),
        blocks=(VariableBlock("w", 0, n_dof, v_s, "m/s", "velocity change v - M^-1 k (free)"),), scale=sc,
        objective_scale=m_M * v_s * v_s, objective_offset=-0.5 * float(problem.k @ problem.solve_M(problem.k)),
        rows=rows, cones=cones, variable="velocity_change_scaled",
        notes={"scaling": f"v_s = {v_s!r} m/s, m_M = {m_M!r} kg (mean diagonal of M)"
                          + ("" if scaled else " (unscaled: physical units)"),
               "optimum": "objective_scale * (model optimum) = 1/2 w^T M w = -(optimal relaxed dual objective); "
                          "with the offset it is the primal objective 1/2 v^T M v - k^T v [J]",
               "impulses": f"gamma_i = {impulse!r} * (z_0, mu_i z_1, ..., mu_i z_d-1) with z in Q^d the dual "
                           f"variable of cone i (equivalently {impulse!r} times the multipliers of the rows "
                           "kin*, sign by the solver's convention); lambda likewise from the rows joint*"}, **quad)


class RelaxedPrimal(Formulation):
    name = "primal"
    summary = "relaxed primal QP in the velocities, impulses from the cone multipliers"
    reference = "Mazhar et al. 2014 eq. 23"
    needs_global = True

    def _build_cvxpy(self, problem: TimeStepProblem) -> CvxpyModel:
        qp = describe(problem)
        form = to_cvxpy(qp)
        n_c, d = problem.n_contacts, problem.d
        impulse = qp.objective_scale / qp.scale.velocity  # multipliers of the scaled model -> N s

        def recover():
            z0, z1 = form.cones.dual_value
            gamma = np.empty((n_c, d))
            gamma[:, 0] = np.asarray(z0).reshape(-1)
            gamma[:, 1:] = (problem.mu * np.asarray(z1).reshape(d - 1, n_c)).T
            parts = [gamma.reshape(-1)]
            if "joint" in form.rows:
                # cvxpy's Lagrangian adds +y^T(G^T w + r_G): M w = D gamma - G y, so lambda = -y
                parts.append(-np.asarray(form.rows["joint"].dual_value, dtype=float).reshape(-1))
            nu = impulse * np.concatenate(parts)
            v = problem.solve_M(problem.k) + qp.scale.velocity * np.asarray(form.x.value, dtype=float)
            return nu, v

        return CvxpyModel(problem=problem, formulation=self.name, cvx=form.problem, recover=recover,
                          objective=primal_objective(problem), scale=qp.scale, relaxed=True, build_seconds=0.0,
                          unscale_objective=lambda value: value * qp.objective_scale + qp.objective_offset,
                          info={"primal_velocity_scale": qp.scale.velocity})
