"""Pyramidal friction cones: the time step as a linear complementarity problem (Anitescu and Hart 2003 eqs. 4-7).

Friction model (Anitescu and Hart 2003 eq. 4). Each contact gets m_C unit tangent directions t_1..t_m_C in its
frame [n, t1, t2], a symmetric set (t_i = -t_j for some j): in 2D the two directions +t, -t
(m_C = 2); in 3D the angles 2 pi i / m_C, i = 0..m_C-1, measured from t1 towards t2 (m_C even, >= 4,
default 8). The tangential impulse is gamma_t = sum_i beta_i t_i with beta >= 0 and
e^T beta <= mu c_n: the friction cone is replaced by the pyramid inscribed in it, and maximal
dissipation over that pyramid reads

    t_i . u_t + lambda      >= 0  ⊥  beta_i >= 0        (i = 1..m_C)
    mu c_n - e^T beta       >= 0  ⊥  lambda >= 0
    u_n                     >= 0  ⊥  c_n >= 0,

with lambda ~ the slip speed. Together with the momentum balance M v = k + D gamma + G lambda_G and
the joint rows G^T v + b_G = 0 this is the mixed LCP (6)-(7) of Anitescu and Hart 2003 (its q^(l) = -k, its
Delta = the normal entries of b). It is the exact (unrelaxed, non-associated) friction problem for
the pyramid; there is no convex program behind it, and Lemke's method (LCP0) solves it.
``mixed_lcp`` assembles (6)-(7) itself, sparse, in x = [v; c_nu; z] (global problems); solvers work
on the reduction below, and the mixed form checks it (every equality row and complementarity pair
holds at the reduced solution mapped back).

Reduction to a standard LCP. Eliminating v = M^-1 (k + C nu) leaves the workbench's u = N nu + r;
the joint impulses are eliminated through the Schur complement of the joint block of N,

    N_c = N_cc - N_cG N_GG^-1 N_Gc,   r_c = r_c - N_cG N_GG^-1 r_G,   lambda_G = -N_GG^-1 (r_G + N_Gc gamma)

(G must have full column rank; with joints N_c couples every contact a joint touches). With
z = [c_n, beta_1..beta_m_C, lambda] per contact (interleaved, one block of m_C + 2 per contact) and
the sparse map gamma = T z (gamma_n = c_n, gamma_t = sum_i beta_i t_i, lambda unused):

    w = A z + q,  A = T^T N_c T + K,  q = T^T r_c,  0 <= z ⊥ w >= 0,

where K holds the constant rows: +1 from lambda into each beta row, +mu and -1 from c_n and beta
into the lambda row. w = [u_n, t_i . u_t + lambda, mu c_n - e^T beta] per contact. Since the pyramid
directions are combinations of the frame's tangent columns, T^T N_c T is built from N alone, so local
problems (W, q) work too; N is the problem's sparse N (W when local), never a dense one.

Units: c_n, beta [N s], lambda [m/s]; w's rows [m/s], [m/s], [N s]. The model keeps A and q in
physical units and the unit of each entry (impulse and velocity scales of formulations.base), so
solvers work on the dimensionless LCP and the residual ||min(z, w)||_inf is unit-free.

Judging. ``own_metrics`` adds the LCP measures (workbench.lcp_metrics): lcp_residual (the judged
error of this formulation) and the normal-velocity error of Anitescu and Hart 2003 Table 1; the impulses
nu = [gamma; lambda_G] are judged on the round-cone problem by workbench.metrics as for every
formulation (their siconos_error measures the pyramid's faceting and vanishes as m_C grows).

One pyramid construction. :func:`pyramid` builds the directions, T, K, the index maps, the edge map
S (y -> z) and the edges E = (T S)^T once (:class:`Pyramid`); the LCP model, the mixed LCP, LCP1/LCP2
(``LCPModel.edge_qp``) and the convex QP (15) of Anitescu & Hart 2003 with Gamma = 0
(:func:`describe_dual`, :func:`describe_primal`: the relaxed dual and primal descriptions of
formulations.qp with the cones replaced by the pyramids, which workbench.export writes) all use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, ClassVar

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from formulations import relaxed_dual, relaxed_primal
from formulations.base import DataScale, Formulation, data_scale
from formulations.qp import ConicQP
from formulations.relaxed_dual import ccqo_objective
from workbench.errors import InputError, ProblemDataError, UnsupportedError
from workbench.lcp_metrics import lcp_residual, normal_velocity_error
from workbench.params import Param
from workbench.problem import TimeStepProblem
from workbench.status import LCP_RESIDUAL

__all__ = ["LCPPyramid", "LCPModel", "MixedLCP", "Pyramid", "mixed_lcp", "pyramid", "pyramid_directions",
           "describe_dual", "describe_primal", "DEFAULT_M_C_3D"]

DEFAULT_M_C_3D = 8


def pyramid_directions(d: int, m_C: int) -> np.ndarray:
    """The m_C tangent directions (m_C, d - 1) in the contact frame's tangent coordinates (module
    docstring). Raises InputError for a count that does not give a symmetric spanning set."""
    if isinstance(m_C, bool) or not isinstance(m_C, (int, np.integer)):
        raise InputError(f"m_C must be an integer, got {m_C!r}")
    if d == 2:
        if m_C != 2:
            raise InputError(f"a 2D contact has exactly m_C = 2 tangent directions (+t, -t), got {m_C}")
        return np.array([[1.0], [-1.0]])
    if m_C < 4 or m_C % 2:
        raise InputError(f"m_C must be even and >= 4 in 3D (a symmetric set spanning the tangent plane), got {m_C}")
    angle = 2.0 * np.pi * np.arange(m_C) / m_C
    return np.column_stack([np.cos(angle), np.sin(angle)])


@dataclass(frozen=True)
class Pyramid:
    """The friction pyramids of a problem, built once (Anitescu & Hart 2003 eqs. 4-7), and every map the
    pyramid formulations take from them:

    * the LCP unknowns z = [c_n, beta_1..beta_m_C, lambda] per contact: index maps ``i_n`` (n_c,),
      ``i_beta`` (n_c, m_C), ``i_lambda`` (n_c,); the sparse map T: z -> gamma (d n_c x n_z) and the
      constant rows K (n_z x n_z) of the module docstring;
    * the edge multipliers y (n_c m_C, one per edge n_i + mu_i t_l) of QP (15): S: y -> z (c_n = sum_l y_l,
      beta_l = mu y_l, lambda = 0), so that gamma = T S y = E^T y with E = (T S)^T (n_c m_C x d n_c),
      row (i, l) = n_i + mu_i t_l in contact i's entries: y >= 0 spans the pyramid, E u >= 0 is its dual."""
    m_C: int
    directions: np.ndarray
    T: sp.csr_matrix
    K: sp.csc_matrix
    S: sp.csr_matrix
    i_n: np.ndarray
    i_beta: np.ndarray
    i_lambda: np.ndarray

    @cached_property
    def E(self) -> sp.csr_matrix:
        return (self.T @ self.S).T.tocsr()


def pyramid(problem: TimeStepProblem, m_C: int | None = None) -> Pyramid:
    """The Pyramid of ``problem`` with m_C directions per contact (None: 2 in 2D, DEFAULT_M_C_3D in 3D),
    vectorised and sparse."""
    d, n_c = problem.d, problem.n_contacts
    m_C = (2 if d == 2 else DEFAULT_M_C_3D) if m_C is None else m_C
    dirs = pyramid_directions(d, m_C)
    p = m_C + 2
    i_n = np.arange(n_c) * p
    i_beta = i_n[:, None] + 1 + np.arange(m_C)[None, :]
    i_lambda = i_n + p - 1
    n_z, n_y = n_c * p, n_c * m_C
    # gamma = T z: gamma_n <- c_n, gamma_t <- sum_i beta_i t_i
    t_rows = (np.arange(n_c) * d)[:, None, None] + 1 + np.arange(d - 1)[None, None, :]
    shape = (n_c, m_C, d - 1)
    rows = np.concatenate([i_n // p * d, np.broadcast_to(t_rows, shape).ravel()])
    cols = np.concatenate([i_n, np.broadcast_to(i_beta[:, :, None], shape).ravel()])
    vals = np.concatenate([np.ones(n_c), np.broadcast_to(dirs[None, :, :], shape).ravel()])
    T = sp.csr_matrix((vals, (rows, cols)), shape=(d * n_c, n_z))
    # constant rows: +lambda in each beta row; mu c_n - e^T beta in the lambda row
    k_rows = np.concatenate([i_beta.ravel(), i_lambda, np.repeat(i_lambda, m_C)])
    k_cols = np.concatenate([np.repeat(i_lambda, m_C), i_n, i_beta.ravel()])
    k_vals = np.concatenate([np.ones(n_c * m_C), problem.mu, -np.ones(n_c * m_C)])
    K = sp.csc_matrix((k_vals, (k_rows, k_cols)), shape=(n_z, n_z))
    # y -> z: c_n = sum_l y_l, beta_l = mu y_l
    S = sp.csr_matrix((np.concatenate([np.ones(n_y), np.repeat(problem.mu, m_C)]),
                       (np.concatenate([np.repeat(i_n, m_C), i_beta.ravel()]), np.tile(np.arange(n_y), 2))),
                      shape=(n_z, n_y))
    return Pyramid(int(m_C), dirs, T, K, S, i_n, i_beta, i_lambda)


@dataclass(frozen=True)
class MixedLCP:
    """The mixed LCP (6)-(7) of Anitescu and Hart 2003 in the unknowns x = [v; c_nu; z] (z as in Pyramid):

        matrix @ x + rhs = [0; 0; w],   0 <= z ⊥ w >= 0,

    with matrix = [[M, -G, -D T], [G^T, 0, 0], [T^T D^T, 0, K]] and rhs = [-k; b_G; T^T b] (the
    paper's q^(l) = -k; its Delta and the tangential stabilisation are T^T b). The first ``n_free``
    entries of x are free (v and the joint impulses c_nu), their rows equalities."""
    matrix: sp.csr_matrix
    rhs: np.ndarray
    n_free: int
    maps: Pyramid

    def residuals(self, v: np.ndarray, c_nu: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(equality residual, w) at a candidate point: the first must vanish, z and w solve the LCP."""
        out = self.matrix @ np.concatenate([v, c_nu, z]) + self.rhs
        return out[:self.n_free], out[self.n_free:]


def mixed_lcp(problem: TimeStepProblem, m_C: int) -> MixedLCP:
    """Assemble the mixed LCP (6)-(7) of Anitescu and Hart 2003 (MixedLCP) from a global time-step problem."""
    problem.require_global("the mixed LCP (6)-(7) of Anitescu and Hart 2003")
    maps = pyramid(problem, m_C)
    n_dof, n_b, n_z = problem.n_dof, problem.n_bilateral, maps.T.shape[1]
    G = problem.G if n_b else sp.csr_matrix((n_dof, 0))
    DT = (problem.D @ maps.T).tocsr()
    matrix = sp.bmat([[problem.M, -G, -DT],
                      [G.T, None, sp.csr_matrix((n_b, n_z))],
                      [DT.T, sp.csr_matrix((n_z, n_b)), maps.K]], format="csr")
    rhs = np.concatenate([-problem.k, problem.b_G if n_b else np.zeros(0), maps.T.T @ problem.b])
    return MixedLCP(matrix=matrix, rhs=rhs, n_free=n_dof + n_b, maps=maps)


def _contact_operator(problem: TimeStepProblem):
    """(N_c, r_c, joint_impulses): the contact-space Delassus operator and linear term with the joint
    impulses eliminated (module docstring), and gamma -> lambda_G (None without joints)."""
    m = problem.n_contact_unknowns
    N, r = problem.N, problem.r
    if not problem.n_bilateral:
        return N, r, None
    N = N.tocsr()
    NcG = N[:m, m:]
    NGG = N[m:, m:].toarray()
    eig = np.linalg.eigvalsh(NGG)
    if not eig[0] > 1e-12 * max(eig[-1], 1e-300):
        raise ProblemDataError("the joint Jacobian G must have full column rank (G^T M^-1 G is singular), "
                               "so the joint impulses can be eliminated")
    fac = sla.cho_factor(NGG)
    X = sla.cho_solve(fac, NcG.T.toarray())  # N_GG^-1 N_Gc, (n_b, m)
    N_c = (N[:m, :m] - NcG @ sp.csr_matrix(X)).tocsr()
    r_c = r[:m] - NcG @ sla.cho_solve(fac, r[m:])
    NGc = NcG.T.tocsr()
    return N_c, r_c, (lambda gamma: -sla.cho_solve(fac, r[m:] + NGc @ gamma))


@dataclass
class LCPModel:
    """The standard LCP w = A z + q of the pyramid friction problem (module docstring).

    ``pyramid``: the index maps into z (and w) (``i_n`` the normal impulses, ``i_beta`` the direction
    multipliers, ``i_lambda`` the slip variables, also properties of the model), ``T`` (z -> gamma) and
    S (edge multipliers y -> z). ``H = T^T N_c T`` is the part of A from the Delassus operator (LCP1/LCP2
    build their QP from it, :meth:`edge_qp`). ``z_unit``, ``w_unit``: the unit of each entry
    (dimensionless z = z / z_unit).
    """
    kind: ClassVar[str] = "lcp"
    #: the measure its runs are judged by (workbench.status.JUDGED_MEASURES): its own (own_metrics)
    judged_by: ClassVar[str] = LCP_RESIDUAL
    problem: TimeStepProblem
    formulation: str
    pyramid: Pyramid
    H: sp.csc_matrix
    A: sp.csc_matrix
    q: np.ndarray
    z_unit: np.ndarray
    w_unit: np.ndarray
    scale: DataScale
    objective: Callable[[np.ndarray, np.ndarray | None], float]
    joint_impulses: Callable[[np.ndarray], np.ndarray] | None = None
    relaxed: bool = False
    build_seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return self.q.shape[0]

    m_C = property(lambda self: self.pyramid.m_C)
    T = property(lambda self: self.pyramid.T)
    i_n = property(lambda self: self.pyramid.i_n)
    i_beta = property(lambda self: self.pyramid.i_beta)
    i_lambda = property(lambda self: self.pyramid.i_lambda)

    def edge_qp(self) -> tuple[sp.csr_matrix, np.ndarray]:
        """(Q, S^T q) of QP (15) in the edge multipliers y (Anitescu & Hart 2003; joints eliminated):
        min_{y >= 0} 1/2 y^T Q y + (S^T q + Gamma (x) e)^T y, Q = S^T H S symmetrised, physical units."""
        S = self.pyramid.S
        Q = (S.T @ self.H @ S).tocsr()
        return ((Q + Q.T) * 0.5).tocsr(), S.T @ self.q

    @cached_property
    def scaled(self) -> tuple[sp.csc_matrix, np.ndarray]:
        """The dimensionless LCP (A_s, q_s): w / w_unit = A_s (z / z_unit) + q_s."""
        A_s = (sp.diags(1.0 / self.w_unit) @ self.A @ sp.diags(self.z_unit)).tocsc()
        return A_s, self.q / self.w_unit

    def w(self, z: np.ndarray) -> np.ndarray:
        """A z + q (physical units)."""
        return self.A @ z + self.q

    def slip(self, z: np.ndarray) -> np.ndarray:
        """Lambda(v) of Anitescu and Hart 2003 eq. 17 per contact: max_i t_i . u_t (= max_i -t_i . u_t by symmetry),
        the least lambda with t_i . u_t + lambda >= 0 for all i [m/s]."""
        w = self.w(z)
        t_dot_u = w[self.i_beta] - z[self.i_lambda][:, None]
        return (-t_dot_u).max(axis=1)

    def recover(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The workbench unknowns nu = [gamma; lambda_G] and the velocity v (None when local) of z."""
        gamma = self.T @ z
        nu = gamma if self.joint_impulses is None else np.concatenate([gamma, self.joint_impulses(gamma)])
        return nu, (self.problem.velocity(nu) if self.problem.is_global else None)

    def measures(self, z: np.ndarray) -> dict[str, float]:
        """LCP residual (dimensionless) and the normal-velocity error of Anitescu and Hart 2003 [m/s] at z."""
        w = self.w(z)
        out = {"lcp_residual": lcp_residual(z / self.z_unit, w / self.w_unit)}
        out.update(normal_velocity_error(z[self.i_n], w[self.i_n]))
        return out

    def own_metrics(self, result) -> dict[str, float]:
        """finalize's hook: the measures at the z the solver left in result.info["z"]."""
        return self.measures(result.info["z"])


class LCPPyramid(Formulation):
    name = "lcp-pyramid"
    summary = "pyramidal friction cones (m_C directions) as a standard LCP, for Lemke and LCP1/LCP2"
    reference = "Anitescu and Hart 2003 eqs. 4-7 (mixed LCP), reduced by eliminating v and the joint impulses"
    exact = True  # unrelaxed Coulomb friction, on the inscribed pyramid
    builds = ("lcp",)
    params = (Param("m_C", int, None, f"pyramid directions per contact (None: 2 in 2D, {DEFAULT_M_C_3D} in 3D)"),)

    def __init__(self, m_C: int | None = None):
        #: directions per contact; None: 2 in 2D, DEFAULT_M_C_3D in 3D. The parameter m_C overrides.
        self.m_C = m_C

    def _build_cvxpy(self, problem: TimeStepProblem):
        raise UnsupportedError("lcp-pyramid is a complementarity problem (no convex program): "
                               "use the solvers lemke, lcp1 or lcp2")

    def _build(self, problem: TimeStepProblem, kind: str, params) -> LCPModel:
        m_C = self.m_C if params["m_C"] is None else params["m_C"]
        if m_C is None:
            m_C = 2 if problem.d == 2 else DEFAULT_M_C_3D
        return self.build_lcp(problem, m_C)

    def build_lcp(self, problem: TimeStepProblem, m_C: int) -> LCPModel:
        maps = pyramid(problem, m_C)
        T, K, i_lambda = maps.T, maps.K, maps.i_lambda
        n_z = T.shape[1]
        N_c, r_c, joints = _contact_operator(problem)
        H = (T.T @ N_c @ T).tocsc()
        sc = data_scale(problem)
        z_unit = np.full(n_z, sc.impulse)
        z_unit[i_lambda] = sc.velocity
        w_unit = np.full(n_z, sc.velocity)
        w_unit[i_lambda] = sc.impulse
        return LCPModel(problem=problem, formulation=self.name, pyramid=maps, H=H,
                        A=(H + K).tocsc(), q=T.T @ r_c, z_unit=z_unit, w_unit=w_unit, scale=sc, objective=ccqo_objective(problem),
                        joint_impulses=joints, info={"m_C": int(m_C), "lcp_size": n_z})


# --------------------------------------------------------------------------- QP (15) as convex models
_PYRAMID = ("pyramidal friction (Anitescu & Hart 2003 eq. 4): contact i's cone replaced by the pyramid with edges "
            "n_i + mu_i t_l, t_l = cos(2 pi l / m_C) t1 + sin(2 pi l / m_C) t2 (+t, -t in 2D); the QP (15) of "
            "Anitescu & Hart 2003 with Gamma = 0 (what LCP2 solves; LCP1 re-solves it with Gamma_i = mu_i Lambda_i)")

_PYRAMID_RELAXATION = ("relaxed like LCP2 (Anitescu & Hart 2003 Theorem 4.2): a sliding contact gets u_n = mu Lambda "
                       "instead of 0; the pyramid's exact (non-associated) law is the LCP of formulations/lcp_pyramid.py")


def describe_dual(problem: TimeStepProblem, *, scaled: bool | DataScale = True, m_C: int | None = None) -> ConicQP:
    """The dual of QP (15) (Anitescu & Hart 2003) with Gamma = 0: the relaxed dual (Mazhar et al. 2014
    eq. 24) over the pyramids, gamma = E^T y with y >= 0 (:class:`Pyramid`), lambda free, in
    x = [y; lambda] / alpha."""
    pyr = pyramid(problem, m_C)
    base = relaxed_dual.describe(problem, scaled=scaled)
    return base.inscribe_pyramid(
        pyr.E, pyr.m_C, formulation="lcp-pyramid",
        description=(f"pyramid dual QP, m_C = {pyr.m_C}: min_nu 1/2 nu^T N nu + r^T nu over gamma = E^T y, y >= 0, "
                     "lambda free; model: x = [y; lambda] / alpha"),
        notes={**base.notes, "pyramid": _PYRAMID, "relaxation": _PYRAMID_RELAXATION,
               "optimum": "objective_scale * (model optimum) is the optimal dual objective 1/2 nu^T N nu + r^T nu "
                          "[J] over the pyramids; the impulses are gamma = alpha E^T y, lambda = alpha x_lambda"})


def describe_primal(problem: TimeStepProblem, *, scaled: bool | DataScale = True, m_C: int | None = None) -> ConicQP:
    """QP (15) of Anitescu & Hart 2003 with Gamma = 0 in the velocity change: the relaxed primal (Mazhar
    et al. 2014 eq. 23) with each dual cone replaced by the pyramid's dual, E (D^T y + r_c / v_s) >= 0
    (rows pyr<i>_e<l>): ``min 1/2 y^T (M / m_M) y  s.t.  E D^T y >= -E r_c / v_s,  G^T y = -r_G / v_s``."""
    pyr = pyramid(problem, m_C)
    base = relaxed_primal.describe(problem, scaled=scaled)
    impulse = base.objective_scale / base.scale.velocity
    return base.inscribe_pyramid(
        pyr.E, pyr.m_C, formulation="lcp-pyramid-primal",
        description=(f"pyramid primal QP (Anitescu & Hart 2003 eq. 15, Gamma = 0), m_C = {pyr.m_C}, in the velocity "
                     "change w = v - M^-1 k: min_w 1/2 w^T M w s.t. u_n,i + mu_i t_l . u_t,i >= 0 with "
                     "u = D^T w + r_c, G^T w + r_G = 0; model: y = w / v_s"),
        notes={**base.notes, "pyramid": _PYRAMID, "relaxation": _PYRAMID_RELAXATION,
               "impulses": f"y_il = {impulse!r} * (multiplier of row pyr<i>_e<l>, >= 0), gamma_i = sum_l y_il "
                           "(n_i + mu_i t_l); lambda likewise from the rows joint*"})
