"""Exact Coulomb by a fixed point on the relaxed primal QP, compiled once (Mazhar et al. 2014 eq. 26, section 4.3).

Outer iteration k solves the relaxed primal (formulations.relaxed_primal, Mazhar et al. 2014 eq. 23) with the
cone constraint shifted by the slip speeds s^k of the previous iterate:

    min_w 1/2 w^T M w   s.t.  D_i^T w + r_i + [mu_i s^k_i, 0, 0] in K_i^*,   G^T w + r_G = 0,
    s^{k+1}_i = ||u_t,i||,  u = D^T w + r at the solution,  s^0 = 0,

the impulses being the multipliers of the cone constraints, as in the relaxed primal. Its KKT
conditions are those of the shifted dual (formulations.dual_fixed_point), so a fixed point solves the
exact De Saxce problem. Mazhar et al. 2014 eq. 26 writes the shift with a minus sign inside the polar cone of
-(C^T v + b); in the workbench's convention (u + a in the dual cone K^*) it adds +mu_i s_i to the
normal entry, as for the dual.

The cone constraint's constant is the only data that changes: the problem is compiled once and the
solver updates the entries of the compiled constant vector b at the rows of the normal components
(the first row of each second-order cone block, holding r_n / velocity scale) and re-solves.
Global problems only (needs M and D).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from formulations.base import CvxpyModel
from formulations.dual_fixed_point import FixedPointFormulation, check_located
from formulations.relaxed_primal import RelaxedPrimal
from workbench.problem import TimeStepProblem

__all__ = ["PrimalFixedPoint"]


class PrimalFixedPoint(FixedPointFormulation):
    name = "primal-fixed-point"
    summary = "exact Coulomb: relaxed primal QP compiled once, re-solved with the cone shifted by mu ||u_t||"
    reference = "Mazhar et al. 2014 eq. 26 (shift as +mu s on u_n), section 4.3; Melanz et al. 2015 eqs. 15, 27-28"
    needs_global = True
    relaxed_formulation = RelaxedPrimal
    shifted = "b"

    def locator(self, problem: TimeStepProblem, inner: CvxpyModel) -> Callable[[dict], np.ndarray]:
        from cvxpy.reductions.solvers.conic_solvers.conic_solver import ConicSolver

        y = next(v for v in inner.cvx.variables() if v.name() == "velocity_change_scaled")
        d, n_c = problem.d, problem.n_contacts
        r_n = problem.r[: problem.n_contact_unknowns: d] / inner.scale.velocity
        D_n = problem.D[:, ::d].T.tocsr()  # normal rows of D^T

        def locate(data: dict) -> np.ndarray:
            # cvxpy orders cone rows zero, nonneg, then second-order cones; our only SOC constraint
            # holds one block [u_n, mu u_t] of d rows per contact, written A x + s = b with s the
            # cone's argument: b = r_n / v_s and A = -D_n^T on the normal rows.
            dims = data[ConicSolver.DIMS]
            if list(dims.soc) != [d] * n_c:
                raise RuntimeError("cvxpy compiled the primal's cone constraint differently than expected")
            rows = dims.zero + dims.nonneg + d * np.arange(n_c)
            check_located(data["b"][rows], r_n, "primal cone constant")
            col = data["param_prob"].var_id_to_col[y.id]
            A_n = sp.csr_matrix(data["A"])[rows][:, col:col + problem.n_dof]
            if np.abs((A_n + D_n).data).max(initial=0.0) > 1e-12 * max(1.0, np.abs(D_n.data).max(initial=0.0)):
                raise RuntimeError("cvxpy compiled the primal's cone rows differently than expected")
            return rows

        return locate

    def normal(self, problem: TimeStepProblem) -> slice:
        return slice(None)
