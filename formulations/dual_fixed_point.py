"""Exact Coulomb by a fixed point on the relaxed dual CCQO, compiled once (Mazhar et al. 2014 eq. 27, section 4.3).

Outer iteration k solves the relaxed dual (formulations.relaxed_dual, Mazhar et al. 2014 eq. 24) with the
normal entries of its linear term shifted by the slip speeds s^k of the previous iterate:

    min_nu 1/2 nu^T N nu + (r + a^k)^T nu   s.t. gamma_i in K_i,     a^k_i = [mu_i s^k_i, 0, 0],
    s^{k+1}_i = ||u_t,i(nu^k)||,  u = N nu + r,  s^0 = 0 (the first solve is the relaxed one).

A local problem's W may be slightly non-symmetric (Siconos dumps: relative asymmetry up to 7e-4 in the
shared data). The relaxed dual then holds the symmetric part W_s = (W + W^T)/2 only, since
nu^T W nu = nu^T W_s nu, and the exact problem for W is a variational inequality, not a QP. It is
solved as it is by splitting W = W_s + W_a: the skew part W_a = (W - W^T)/2 acts on the previous
iterate and joins the linear term,

    min_nu 1/2 nu^T W_s nu + (q + W_a nu^k + a^k)^T nu   s.t. gamma_i in K_i,

so that a fixed point (nu^{k+1} = nu^k, s^{k+1} = s^k) satisfies K ∋ gamma ⊥ W gamma + q + a ∈ K^*
with the true W. The skew term moves with nu^k as the shift moves with s^k; it is small, so it
adds little to the outer map's contraction factor.

The shift enters with a plus sign: Mazhar et al. 2014 eq. 27 prints "- mu sqrt(...)", but the De Saxce form
(Melanz et al. 2015 eq. 15 with alpha_i = mu_i lambda_i, eqs. 27-28) needs r_n + mu ||u_t||; on the 2D ball the
plus sign gives the analytic impulse [0.0981, -0.01962] and the minus sign does not. A fixed point
(s^{k+1} = s^k) satisfies K ∋ gamma ⊥ u + [mu ||u_t||, 0, 0] ∈ K^*, the exact problem.

Only the linear term changes between outer iterations, so the cvxpy problem is built and compiled
once; the solver (Clarabel, SCS) updates the affected entries of its data in place (the compiled
objective vector c, at the columns of the scaled impulses) and re-solves; cvxpy's unpack maps every
solution back. The loop itself is workbench.solvers.fixed_point. Outer iterations converge linearly
(a contraction for moderate mu); they are not guaranteed to converge for every problem.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np
import scipy.sparse as sp

from formulations.base import CvxpyModel, Formulation, judged_measure
from formulations.relaxed_dual import RelaxedDual
from workbench.problem import TimeStepProblem

__all__ = ["DualFixedPoint", "FixedPointFormulation", "FixedPointModel", "FIXED_POINT_KIND"]

FIXED_POINT_KIND = "cvxpy-fixed-point"


@dataclass
class FixedPointModel:
    """A relaxed cvxpy model plus where the anti-relaxation shift enters its compiled data.

    ``shifted`` names the vector of the compiled conic data (cvxpy's get_problem_data) that holds
    r: "c" (the dual's objective) or "b" (the primal's cone constraint). ``locate(data)`` returns the
    indices into data[shifted] of the entries of r it updates, after checking they hold r / velocity
    scale (so a change of cvxpy's layout fails loudly); ``normal`` picks the normal entries among
    them. ``skew`` is W_a = (W - W^T)/2 of a non-symmetric local W (else None), acting on all the
    located entries. ``linear_term(base, rows, s, nu)`` is the compiled vector ``base`` with the shift
    [mu_i s_i, 0, 0] (s in m/s) and W_a nu added.
    """
    kind: ClassVar[str] = FIXED_POINT_KIND
    problem: TimeStepProblem
    formulation: str
    inner: CvxpyModel
    shifted: str
    locate: Callable[[dict], np.ndarray]
    normal: slice
    skew: sp.csr_matrix | None = None
    relaxed: bool = False
    build_seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    #: the measure its runs are judged by (workbench.status.JUDGED_MEASURES)
    judged_by = property(lambda self: judged_measure(self.relaxed))

    @property
    def cvx(self):
        return self.inner.cvx

    def recover(self):
        return self.inner.recover()

    def objective(self, nu, v=None) -> float:
        """The relaxed model's own objective at the returned point (the shift depends on the
        solution, so the relaxed objective is the comparable number)."""
        return self.inner.objective(nu, v)

    def linear_term(self, base: np.ndarray, rows: np.ndarray, s: np.ndarray, nu: np.ndarray) -> np.ndarray:
        out = base.copy()
        out[rows[self.normal]] += self.problem.mu * s / self.inner.scale.velocity
        if self.skew is not None:
            out[rows] += (self.skew @ nu) / self.inner.scale.velocity
        return out


def check_located(values: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Raise if the compiled data do not hold ``expected`` where the shift is to enter."""
    if not np.allclose(values, expected, rtol=1e-12, atol=1e-14 * max(1.0, float(np.abs(expected).max(initial=0)))):
        raise RuntimeError(f"cvxpy compiled the {what} differently than expected; the fixed point "
                           "cannot locate the linear term to update")


class FixedPointFormulation(Formulation):
    """What the dual and primal fixed points share: the relaxed formulation built as cvxpy once, and
    ``locate``, where the shift enters its compiled data (subclasses set ``relaxed_formulation`` and
    ``shifted`` and write ``locator``)."""
    exact = True
    builds = (FIXED_POINT_KIND,)
    relaxed_formulation: ClassVar[type[Formulation]]
    shifted: ClassVar[str]

    def _build(self, problem: TimeStepProblem, kind: str, options) -> FixedPointModel:
        inner = self.relaxed_formulation().build(problem, "cvxpy")
        skew = self.skew(problem)
        return FixedPointModel(problem=problem, formulation=self.name, inner=inner, shifted=self.shifted,
                               locate=self.locator(problem, inner), normal=self.normal(problem), skew=skew,
                               info={"inner_build_seconds": inner.build_seconds,
                                     "skew_norm": 0.0 if skew is None else float(abs(skew).max())})

    @abstractmethod
    def locator(self, problem: TimeStepProblem, inner: CvxpyModel) -> Callable[[dict], np.ndarray]: ...

    @abstractmethod
    def normal(self, problem: TimeStepProblem) -> slice:
        """Which of the located entries are the normal ones (where the shift mu s enters)."""

    def skew(self, problem: TimeStepProblem) -> sp.csr_matrix | None:
        return None


class DualFixedPoint(FixedPointFormulation):
    name = "dual-fixed-point"
    summary = "exact Coulomb: relaxed dual CCQO compiled once, re-solved with r_n + mu ||u_t|| until s is fixed"
    reference = "Mazhar et al. 2014 eq. 27 (plus sign), section 4.3; Melanz et al. 2015 eqs. 15, 27-28"
    relaxed_formulation = RelaxedDual
    shifted = "c"

    def locator(self, problem: TimeStepProblem, inner: CvxpyModel) -> Callable[[dict], np.ndarray]:
        x = next(v for v in inner.cvx.variables() if v.name() == "nu_scaled")
        n = problem.n_unknowns
        r_s = problem.r / inner.scale.velocity

        def locate(data: dict) -> np.ndarray:
            col = data["param_prob"].var_id_to_col[x.id]
            check_located(data["c"][col:col + n], r_s, "dual objective")
            return col + np.arange(n)

        return locate

    def normal(self, problem: TimeStepProblem) -> slice:
        return slice(0, problem.n_contact_unknowns, problem.d)

    def skew(self, problem: TimeStepProblem) -> sp.csr_matrix | None:
        """W_a = (W - W^T)/2 of a local problem, None when W is symmetric (global N always is)."""
        if problem.is_global:
            return None
        W = problem.N
        skew = ((W - W.T) * 0.5).tocsr()
        skew.eliminate_zeros()
        return skew if skew.nnz else None
