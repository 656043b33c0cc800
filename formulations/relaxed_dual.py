"""Relaxed dual: the cone-constrained quadratic optimisation problem (CCQO) in the impulses.

Mazhar et al. 2014 eq. 24 (Melanz et al. 2015 eq. 14), with joints (Mazhar et al. 2014 eqs. 18-21):

    min_nu  1/2 nu^T N nu + r^T nu     s.t.  gamma_i in K_i (i = 1..n_c),  lambda free,

N = C^T M^-1 C, r = [b; b_G] + C^T M^-1 k, nu = [gamma; lambda]. Its KKT conditions are the relaxed
CCP K ∋ gamma ⊥ N gamma + r ∈ K^* (Mazhar et al. 2014 eq. 13): the normal condition lacks the
mu ||u_t|| tilting term, so a sliding contact separates (Negrut et al. 2018; Melanz et al. 2015
section 3.1).

:func:`describe` writes it once as a backend-neutral :class:`~formulations.qp.ConicQP` in
x = nu / alpha (scales of formulations.base): ``min 1/2 x^T (N / n_N) x + (r / v_s)^T x`` with
(mu_i x_n,i, x_t,i) in Q; the cvxpy model and every export format are generated from it. The
quadratic term is never formed as a dense N:
- global problems: 1/2 ||F x||^2 with F = L^-1 C / sqrt(n_N), M = L L^T (L = M^1/2 for a diagonal M,
  else block by block, formulations.qp.mass_cholesky; F is as sparse as C); where a block of M is
  too large to factor densely, the velocity change w = M^-1 C x becomes a variable with the rows
  M w - C x = 0 and the term 1/2 w^T (M / n_N) w;
- local problems (only W known): 1/2 x^T W_s x / n_N with the symmetric part W_s = (W + W^T)/2
  (nu^T W nu = nu^T W_s nu; FCLib files can hold a slightly non-symmetric W).
The impulses are the model's variables.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.sparse as sp

from formulations.base import CCQOModel, CvxpyModel, DataScale, Formulation, ccqo_objective
from formulations.qp import (ConicQP, FrictionCones, RowBlock, VariableBlock, contact_names, joined,
                             mass_cholesky, model_scale, numbered, to_cvxpy)
from workbench.problem import TimeStepProblem

__all__ = ["RelaxedDual", "describe", "ccqo_objective"]


def describe(problem: TimeStepProblem, *, scaled: bool | DataScale = True) -> ConicQP:
    """The relaxed dual CCQO (module docstring) as a ConicQP, on O(1) data unless ``scaled=False``
    (``scaled`` a DataScale: on those scales)."""
    sc = model_scale(problem, scaled)
    n_N = sc.velocity / sc.impulse
    n, m, d, n_c, n_b = problem.n_unknowns, problem.n_contact_unknowns, problem.d, problem.n_contacts, \
        problem.n_bilateral
    names = [partial(contact_names, "g", n_c, d)]
    blocks = [VariableBlock("gamma", 0, m, sc.impulse, "N s", "contact impulses, [normal, tangents] per contact")]
    if n_b:
        names.append(partial(numbered, "l", n_b))
        blocks.append(VariableBlock("lambda", m, n_b, sc.impulse, "N s", "joint impulses (free)"))
    c = np.asarray(problem.r, dtype=float) / sc.velocity
    quad, rows = {}, ()
    if not problem.is_global:
        W = problem.N
        quad["P"] = ((W + W.T) * (0.5 / n_N)).tocsr()
    elif problem.M_is_diagonal:
        quad["F"] = (sp.diags(1.0 / np.sqrt(problem.M.diagonal() * n_N)) @ problem.C).tocsr()
    elif (chol := mass_cholesky(problem)) is not None:
        quad["F"] = (chol[1] @ problem.C).tocsr() / np.sqrt(n_N)
    else:
        n_dof = problem.n_dof
        rows = (RowBlock("velocity", sp.hstack([-problem.C, problem.M], format="csr"), np.full(n_dof, "="),
                         np.zeros(n_dof), partial(numbered, "vel", n_dof)),)
        quad["P"] = sp.block_diag([sp.csr_matrix((n, n)), problem.M / n_N], format="csr")
        blocks.append(VariableBlock("w", n, n_dof, sc.impulse, "m/s", "velocity change M^-1 C nu (free)"))
        names.append(partial(numbered, "w", n_dof))
        c = np.concatenate([c, np.zeros(n_dof)])
    kind = "global: N = C^T M^-1 C, r = [b; b_G] + C^T M^-1 k" if problem.is_global else \
        "local: N = (W + W^T)/2, r = q"
    return ConicQP(
        problem=problem, formulation="dual",
        description=("relaxed dual CCQO (Mazhar et al. 2014 eq. 24, Melanz et al. 2015 eq. 14): min_nu 1/2 nu^T N nu "
                     f"+ r^T nu s.t. gamma_i in K_i, lambda free ({kind}); model: x = nu / alpha, "
                     "min 1/2 x^T (N / n_N) x + (r / v_s)^T x"),
        relaxed=True, c=c, name_rule=joined(*names), nonneg=np.zeros(c.shape[0], dtype=bool), blocks=tuple(blocks), scale=sc,
        objective_scale=sc.objective, objective_offset=0.0, rows=rows, variable="nu_scaled",
        cones=FrictionCones("K", problem.mu, d, index=np.arange(m).reshape(n_c, d)),
        notes={"scaling": f"alpha = {sc.impulse!r} N s, v_s = {sc.velocity!r} m/s, n_N = v_s / alpha = {n_N!r} 1/kg"
                          + ("" if scaled else " (unscaled: physical units)"),
               "optimum": "objective_scale * (model optimum) is the optimal relaxed dual objective "
                          "1/2 nu^T N nu + r^T nu [J]; the impulses are nu = alpha x"}, **quad)


class RelaxedDual(Formulation):
    name = "dual"
    summary = "relaxed dual CCQO in the impulses (convex QP with second-order cones)"
    reference = "Mazhar et al. 2014 eq. 24; Melanz et al. 2015 eq. 14"
    builds = ("cvxpy", "ccqo")

    def _build_cvxpy(self, problem: TimeStepProblem) -> CvxpyModel:
        qp = describe(problem)
        form = to_cvxpy(qp)
        n = problem.n_unknowns

        def recover():
            nu = qp.scale.impulse * np.asarray(form.x.value[:n], dtype=float)
            return nu, (problem.velocity(nu) if problem.is_global else None)

        return CvxpyModel(problem=problem, formulation=self.name, cvx=form.problem, recover=recover,
                          objective=ccqo_objective(problem), scale=qp.scale, relaxed=True, build_seconds=0.0,
                          unscale_objective=lambda value: value * qp.objective_scale)

    def _build_ccqo(self, problem: TimeStepProblem) -> CCQOModel:
        return CCQOModel(problem=problem, formulation=self.name, anti_relaxed=False,
                         objective=ccqo_objective(problem))
