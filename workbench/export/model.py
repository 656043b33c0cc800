"""The optimisation model every model format writes, and what each exported file says about itself.

:class:`ExportModel` is one convex quadratic program with second-order cones, solver-neutral,

    minimise    1/2 x^T P x + c^T x
    subject to  A x  (=, >=, <=)  rhs              row by row, ``sense`` in {"=", ">", "<"}
                x_j >= 0                            for ``nonneg[j]``, every other x_j free
                (a_i0 x[j_i0], ..., a_i,d-1 x[j_i,d-1]) in Q^d      for each cone i,

with Q^d = {z : z_0 >= ||z_1:||} the second-order cone, P symmetric positive semidefinite and
every cone head x[j_i0] among the ``nonneg`` variables (so a cone written as the quadratic
constraint sum_k>=1 (a_ik x_jik)^2 - (a_i0 x_ji0)^2 <= 0 with x_ji0 >= 0, as LP/MPS/NL do, is the
same set). Conic formats need P = F^T F: :attr:`ExportModel.factor` (given by the builder or found
per connected block of P: Cholesky where positive definite, else an eigendecomposition that drops
eigenvalues below ``FACTOR_RTOL`` times the block's largest, the PSD part of a slightly indefinite W).

Builders, one per exportable formulation (registered in ``workbench.export.MODELS``):

* :func:`relaxed_dual` (seed 001 eq. 24, seed 000 eq. 14) in x = nu / alpha:
  ``min 1/2 x^T (N / n_N) x + (r / v_s)^T x  s.t.  (mu_i x_n,i, x_t,i) in Q``, lambda free.
  Global problems use F = L^-1 C / sqrt(n_N) with M = L L^T (sparse like C) and P = F^T F; local
  problems P = (W + W^T) / (2 n_N).
* :func:`relaxed_primal` (seed 001 eq. 23) in the velocity change y = (v - M^-1 k) / v_s and the
  relative velocity u = D^T y + r / v_s:
  ``min 1/2 y^T (M / m_M) y  s.t.  u - D^T y = r_c / v_s,  G^T y = -r_G / v_s,  (u_n,i, mu_i u_t,i) in Q``.

* :func:`pyramid_dual` and :func:`pyramid_primal`: seed 003's QP (15) with Gamma = 0 (the QP of LCP2) on
  pyramidal cones with edges n_i + mu_i t_l (:func:`pyramid_edges`): the dual over gamma = E^T y, y >= 0,
  and the primal with the rows E (D^T y + r_c / v_s) >= 0 (no cones).

Scaling (formulations.base.data_scale; the workbench's own cvxpy models use the same): alpha =
||r||_inf / n_N, v_s = ||r||_inf, n_N the mean diagonal of N, m_M the mean diagonal of M, so every
coefficient is O(1) and a solver's absolute tolerances mean the same on every problem. With
``scaled=False`` all scales are 1 and the file holds physical units. Either way the model records how
to map back: variable block by block (physical = scale x file value) and the objective
(formulation objective = objective_scale x file objective + objective_offset).

:func:`provenance` gives the facts every exported file carries (as comments, HDF5 attributes or
.mat/.npz fields): source problem, workbench version, formulation and relaxation, contact grouping
and ordering, friction coefficients, sign conventions and units.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from formulations.base import DataScale, data_scale
from workbench.errors import ProblemDataError
from workbench.problem import TimeStepProblem

__all__ = ["ExportModel", "VariableBlock", "relaxed_dual", "relaxed_primal", "pyramid_dual", "pyramid_primal",
           "pyramid_edges", "provenance", "impulse_vectors", "data_arrays",
           "psd_factor", "block_cholesky", "FACTOR_RTOL"]

#: eigenvalues of a block of P below this times the block's largest are dropped from its factor
FACTOR_RTOL = 1e-13

CONVENTIONS = {
    "contact_ordering": "contacts in the source problem's order; contact i owns entries d*i .. d*i+d-1 of "
                        "every contact vector, ordered [normal, tangent1(, tangent2)]",
    "friction_cone": "K_i = {gamma : ||gamma_t|| <= mu_i gamma_n}; dual cone K_i^* = {u : mu_i ||u_t|| <= u_n}",
    "sign_conventions": "M v = k + D gamma + G lambda, k = M v_prev + h f; u = D^T v + b = N nu + r is the "
                        "relative velocity at the contacts (u_n > 0 separates); gamma_n >= 0 pushes the "
                        "bodies apart; 0 = G^T v + b_G at the joints",
    "units": "impulses gamma, lambda [N s]; velocities v, u, r, b [m/s]; M [kg, kg m^2]; N = D^T M^-1 D "
             "[1/kg]; objectives [J] (rotational entries use the source's length unit)",
}


@dataclass(frozen=True)
class VariableBlock:
    """Variables x[start:start+size]: physical value = ``scale`` x file value, in ``unit``."""
    name: str
    start: int
    size: int
    scale: float
    unit: str
    meaning: str


@dataclass
class ExportModel:
    """One convex QP with second-order cones (module docstring), plus what a reader needs to use it."""
    problem: TimeStepProblem
    formulation: str
    description: str
    relaxed: bool
    c: np.ndarray
    P: sp.csr_matrix
    A: sp.csr_matrix
    sense: np.ndarray          # (n_rows,) of "=", ">", "<"
    rhs: np.ndarray
    nonneg: np.ndarray         # (n,) bool
    cone_index: np.ndarray     # (n_cones, d) int
    cone_coef: np.ndarray      # (n_cones, d) float
    names: np.ndarray          # (n,) variable names
    row_names: np.ndarray      # (n_rows,)
    cone_names: np.ndarray     # (n_cones,)
    blocks: tuple[VariableBlock, ...]
    objective_scale: float
    objective_offset: float
    notes: dict[str, str] = field(default_factory=dict)
    given_factor: sp.csr_matrix | None = None

    def __post_init__(self):
        n = self.c.shape[0]
        if self.P.shape != (n, n) or self.A.shape[1] != n or self.nonneg.shape != (n,):
            raise ValueError("ExportModel: inconsistent sizes")
        if not np.all(self.nonneg[self.cone_index[:, 0]]):
            raise ValueError("ExportModel: every cone head must be a nonnegative variable")

    @property
    def n(self) -> int:
        return self.c.shape[0]

    @cached_property
    def factor(self) -> sp.csr_matrix:
        """F with F^T F = P (rows without entries removed)."""
        F = self.given_factor if self.given_factor is not None else psd_factor(self.P)
        F = sp.csr_matrix(F)
        return F[np.flatnonzero(np.diff(F.indptr))]

    def split_objective(self) -> "ExportModel":
        """The same problem with the quadratic term on auxiliary variables z = F x (rows fac<k>):

            min 1/2 ||z||^2 + c^T x   s.t.  F x - z = 0,  (the original rows, bounds and cones).

        Its Hessian is diagonal, so a reader sees a separable convex objective. The LP, MPS and NL
        exports use it: with the dense, singular N written as x^T N x, SCIP did not recognise the
        objective as convex and branched spatially (SCIP 10 via pyscipopt 6.3: a 4-contact dual timed
        out after 20 s with no dual bound; split, it solves in 0.1 s)."""
        F = self.factor
        p, n = F.shape
        k = self.A.shape[0]
        return ExportModel(
            problem=self.problem, formulation=self.formulation, description=self.description,
            relaxed=self.relaxed, c=np.concatenate([self.c, np.zeros(p)]),
            P=sp.block_diag([sp.csr_matrix((n, n)), sp.identity(p)], format="csr"),
            A=sp.vstack([sp.hstack([self.A, sp.csr_matrix((k, p))]), sp.hstack([F, -sp.identity(p)])],
                        format="csr"),
            sense=np.concatenate([self.sense, np.full(p, "=")]), rhs=np.concatenate([self.rhs, np.zeros(p)]),
            nonneg=np.concatenate([self.nonneg, np.zeros(p, dtype=bool)]), cone_index=self.cone_index,
            cone_coef=self.cone_coef, names=np.concatenate([self.names, _numbered("z", p)]),
            row_names=np.concatenate([self.row_names, _numbered("fac", p)]), cone_names=self.cone_names,
            blocks=self.blocks + (VariableBlock("z", n, p, 1.0, "-", "auxiliary z = F x with F^T F = P, "
                                                "so that 1/2 x^T P x = 1/2 ||z||^2 (rows fac<k>)"),),
            objective_scale=self.objective_scale, objective_offset=self.objective_offset,
            notes=self.notes, given_factor=sp.hstack([sp.csr_matrix((p, n)), sp.identity(p)], format="csr"))

    def with_apex_rows(self) -> "ExportModel":
        """The same problem with the linear rows that each cone implies, two per tangential entry:

            a_k x_jk - a_0 x_j0 <= 0,   a_k x_jk + a_0 x_j0 >= 0      (rows apx<i>_<k>, apn<i>_<k>)

        (|a_k x_jk| <= ||(a_l x_jl)_l>=1|| <= a_0 x_j0). They change no feasible point. They are there
        for readers that see a cone only as the quadratic constraint sum (a_k x_jk)^2 <= (a_0 x_j0)^2:
        its violation is quadratic, so at the apex (a separating contact, x_j0 = 0) a tolerance eps
        lets the tangential entries reach sqrt(eps). SCIP at feastol 1e-8 then missed the relaxed
        dual's optimum by 6e-5 relative; with these rows by 4e-8."""
        n_c, d = self.cone_index.shape
        head = np.repeat(self.cone_index[:, :1], d - 1, axis=1).ravel()
        a0 = np.repeat(self.cone_coef[:, :1], d - 1, axis=1).ravel()
        tangent, a_k = self.cone_index[:, 1:].ravel(), self.cone_coef[:, 1:].ravel()
        t = np.arange(tangent.shape[0])
        rows = np.concatenate([2 * t, 2 * t, 2 * t + 1, 2 * t + 1])
        cols = np.concatenate([tangent, head, tangent, head])
        vals = np.concatenate([a_k, -a0, a_k, a0])
        extra = sp.csr_matrix((vals, (rows, cols)), shape=(2 * t.shape[0], self.n))
        labels = np.char.add(np.repeat(self.cone_names, d - 1), np.tile(np.char.add("_", np.arange(1, d).astype(str)),
                                                                          n_c))
        names = np.empty(2 * t.shape[0], dtype=object)
        names[0::2], names[1::2] = np.char.add("apx_", labels), np.char.add("apn_", labels)
        return dataclasses.replace(
            self, A=sp.vstack([self.A, extra], format="csr"),
            sense=np.concatenate([self.sense, np.tile(["<", ">"], t.shape[0])]),
            rhs=np.concatenate([self.rhs, np.zeros(2 * t.shape[0])]),
            row_names=np.concatenate([self.row_names, names.astype(str)]),
            notes={**self.notes, "apex_rows": "rows apx_cone<i>_<k>, apn_cone<i>_<k>: "
                   "-a_0 x_j0 <= a_k x_jk <= a_0 x_j0, implied by cone i (they cut off nothing); they make a "
                   "reader that checks the cone as a quadratic constraint accurate at the apex"})

    def quadratic_form(self) -> "ExportModel":
        """The model as LP, MPS and NL write it: :meth:`split_objective` and :meth:`with_apex_rows`."""
        return self.split_objective().with_apex_rows()

    def objective_triangle(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(i, j, P_ij) for i <= j, row-major: the upper triangle of P."""
        U = sp.triu(self.P, format="csr")
        U.eliminate_zeros()
        U = sp.coo_matrix(U)
        return U.row, U.col, U.data

    def cone_squares(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cone, variable, coefficient) of the quadratic form sum_k>=1 a_k^2 x_jk^2 - a_0^2 x_j0^2 of
        each cone, cone by cone (zero coefficients left out)."""
        n_cones, d = self.cone_index.shape
        coef = self.cone_coef ** 2
        coef[:, 0] *= -1.0
        keep = (coef != 0).ravel()
        return np.repeat(np.arange(n_cones), d)[keep], self.cone_index.ravel()[keep], coef.ravel()[keep]

    def objective(self, x: np.ndarray) -> float:
        """The file's objective 1/2 x^T P x + c^T x at x (file units)."""
        return float(0.5 * x @ (self.P @ x) + self.c @ x)

    def physical(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The variable blocks of a file solution x in physical units, by block name."""
        return {b.name: b.scale * np.asarray(x[b.start:b.start + b.size], dtype=float) for b in self.blocks}

    def header(self, fmt: str) -> dict[str, str]:
        """What a reader of this model needs (see :func:`provenance`), as ordered key -> text."""
        out = provenance(self.problem, self.formulation, fmt, list_mu=True)
        out["formulation"] = f"{self.formulation}: {self.description}"
        out["relaxation"] = ("relaxed: no De Saxce term mu ||u_t||, so the optimum solves the relaxed CCP "
                             "K ∋ gamma ⊥ N gamma + r ∈ K^* (a sliding contact separates with u_n = mu ||u_t||), "
                             "not the exact Coulomb law" if self.relaxed else "exact")
        for b in self.blocks:
            out[f"variables {b.name}"] = (f"x[{b.start}:{b.start + b.size}] = {b.name} / {b.scale!r} "
                                          f"[{b.unit}]: {b.meaning}")
        out["objective"] = (f"formulation objective = {self.objective_scale!r} * (file objective) + "
                            f"{self.objective_offset!r} [J]")
        out["cones"] = ("cone i (named after contact i) is (a_0 x[j_0], ..., a_d-1 x[j_d-1]) in the second-order "
                        "cone z_0 >= ||z_1:||; as a quadratic constraint sum_k>=1 (a_k x_jk)^2 - (a_0 x_j0)^2 <= 0 "
                        "with x_j0 >= 0")
        out.update(self.notes)
        return out


# --------------------------------------------------------------------------- factors of P
def _component_groups(P: sp.spmatrix):
    """The connected components of P's graph as index arrays (k, s), one array per component size s."""
    _, labels = connected_components(sp.csr_matrix(P), directed=False)
    order = np.argsort(labels, kind="stable")       # components contiguous, indices increasing
    sizes = np.bincount(labels)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    for s in np.unique(sizes):
        comps = np.flatnonzero(sizes == s)
        yield order[(starts[comps][:, None] + np.arange(s)[None, :]).ravel()].reshape(-1, s)


def _dense_blocks(P: sp.csr_matrix, idx: np.ndarray) -> np.ndarray:
    """The dense (k, s, s) blocks P[idx_b, idx_b]."""
    k, s = idx.shape
    rows = np.repeat(idx, s, axis=1).ravel()
    cols = np.tile(idx, (1, s)).ravel()
    return np.asarray(P[rows, cols]).reshape(k, s, s)


def _triplets(values: np.ndarray, row_idx: np.ndarray, col_idx: np.ndarray):
    """(rows, cols, values) of the dense blocks ``values`` (k, a, b) placed at rows row_idx (k, a)
    and columns col_idx (k, b)."""
    k, a, b = values.shape
    return (np.broadcast_to(row_idx[:, :, None], (k, a, b)).ravel(),
            np.broadcast_to(col_idx[:, None, :], (k, a, b)).ravel(), values.ravel())


def _assemble(parts, shape) -> sp.csr_matrix:
    rows, cols, vals = (np.concatenate(x) for x in zip(*parts)) if parts else ([], [], [])
    return sp.csr_matrix((vals, (rows, cols)), shape=shape)


def block_cholesky(M: sp.spmatrix) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """(L, L^-1) with M = L L^T, block by connected block of M (batched dense Cholesky per block size).

    A diagonal M gives L = diag(sqrt(m)); a rigid-body M of 6 x 6 blocks costs O(n_dof) work."""
    M = sp.csr_matrix(M)
    L_parts, Linv_parts = [], []
    for idx in _component_groups(M):
        try:
            L = np.linalg.cholesky(_dense_blocks(M, idx))
        except np.linalg.LinAlgError:
            raise ProblemDataError("M is not positive definite (its Cholesky factorisation failed)") from None
        L_parts.append(_triplets(L, idx, idx))
        Linv_parts.append(_triplets(np.linalg.inv(L), idx, idx))
    return _assemble(L_parts, M.shape), _assemble(Linv_parts, M.shape)


def psd_factor(P: sp.spmatrix) -> sp.csr_matrix:
    """F with F^T F = P for a symmetric PSD P, block by connected block: rows sqrt(lambda) v^T of each
    block's eigenpairs, eigenvalues below FACTOR_RTOL x the block's largest dropped. Cost: a dense
    eigendecomposition per connected block of P, O(s^3) for a block of size s."""
    P = sp.csr_matrix(P)
    parts, row = [], 0
    for idx in _component_groups(P):
        k, s = idx.shape
        lam, V = np.linalg.eigh(_dense_blocks(P, idx))     # block = V diag(lam) V^T
        keep = lam > FACTOR_RTOL * np.maximum(lam.max(axis=1, keepdims=True), 0.0)
        R = np.sqrt(np.where(keep, lam, 0.0))[:, :, None] * np.swapaxes(V, 1, 2)
        parts.append(_triplets(R, row + np.arange(k * s).reshape(k, s), idx))
        row += k * s
    return _assemble(parts, (row, P.shape[1]))


# --------------------------------------------------------------------------- names
def _numbered(prefix: str, count: int, suffix: str = "") -> np.ndarray:
    return np.char.add(np.char.add(prefix, np.arange(count).astype(str)), suffix)


def _contact_names(prefix: str, n_c: int, d: int) -> np.ndarray:
    """prefix{i}_n, prefix{i}_t1, prefix{i}_t2 (or prefix{i}_t in 2D), contact by contact."""
    parts = ["_n", "_t"] if d == 2 else ["_n", "_t1", "_t2"]
    base = np.repeat(np.char.add(prefix, np.arange(n_c).astype(str)), d)
    return np.char.add(base, np.tile(parts, n_c))


def _scales(problem: TimeStepProblem, scaled: bool) -> DataScale:
    return data_scale(problem) if scaled else DataScale(impulse=1.0, velocity=1.0, objective=1.0)


# --------------------------------------------------------------------------- builders
def relaxed_dual(problem: TimeStepProblem, *, scaled: bool = True) -> ExportModel:
    """The relaxed dual CCQO (module docstring) as an :class:`ExportModel`."""
    sc = _scales(problem, scaled)
    n_N = sc.velocity / sc.impulse
    n, m, d, n_c = problem.n_unknowns, problem.n_contact_unknowns, problem.d, problem.n_contacts
    F = None
    if problem.is_global:
        _, Linv = block_cholesky(problem.M)
        F = (Linv @ problem.C).tocsr() / np.sqrt(n_N)
        P = (F.T @ F).tocsr()
    else:
        W = problem.N
        P = ((W + W.T) * (0.5 / n_N)).tocsr()
    nonneg = np.zeros(n, dtype=bool)
    nonneg[:m:d] = True
    cone_index = np.arange(m).reshape(n_c, d)
    cone_coef = np.ones((n_c, d))
    cone_coef[:, 0] = problem.mu
    names = _contact_names("g", n_c, d)
    blocks = [VariableBlock("gamma", 0, m, sc.impulse, "N s",
                            "contact impulses, [normal, tangents] per contact")]
    if problem.n_bilateral:
        names = np.concatenate([names, _numbered("l", problem.n_bilateral)])
        blocks.append(VariableBlock("lambda", m, problem.n_bilateral, sc.impulse, "N s",
                                    "joint impulses (free)"))
    kind = "global: N = C^T M^-1 C, r = [b; b_G] + C^T M^-1 k" if problem.is_global else \
        "local: N = (W + W^T)/2, r = q"
    return ExportModel(
        problem=problem, formulation="dual",
        description=("relaxed dual CCQO (seed 001 eq. 24, seed 000 eq. 14): min_nu 1/2 nu^T N nu + r^T nu "
                     f"s.t. gamma_i in K_i, lambda free ({kind}); file: x = nu / alpha, "
                     "min 1/2 x^T (N / n_N) x + (r / v_s)^T x"),
        relaxed=True, c=np.asarray(problem.r, dtype=float) / sc.velocity, P=P,
        A=sp.csr_matrix((0, n)), sense=np.array([], dtype="<U1"), rhs=np.zeros(0), nonneg=nonneg,
        cone_index=cone_index, cone_coef=cone_coef, names=names, row_names=np.array([], dtype="<U1"),
        cone_names=_numbered("cone", n_c), blocks=tuple(blocks), objective_scale=sc.objective,
        objective_offset=0.0, given_factor=F,
        notes={"scaling": f"alpha = {sc.impulse!r} N s, v_s = {sc.velocity!r} m/s, n_N = v_s / alpha = {n_N!r} 1/kg"
                          + ("" if scaled else " (unscaled: physical units)"),
               "optimum": "objective_scale * (file optimum) is the optimal relaxed dual objective "
                          "1/2 nu^T N nu + r^T nu [J]; the impulses are nu = alpha x"})


def relaxed_primal(problem: TimeStepProblem, *, scaled: bool = True) -> ExportModel:
    """The relaxed primal QP in the velocity change (module docstring) as an :class:`ExportModel`."""
    problem.require_global("the relaxed primal export")
    sc = _scales(problem, scaled)
    v_s = sc.velocity
    m_M = float(problem.M.diagonal().mean()) if scaled else 1.0
    n_dof, m, d, n_c, n_b = problem.n_dof, problem.n_contact_unknowns, problem.d, problem.n_contacts, \
        problem.n_bilateral
    n = n_dof + m
    L, _ = block_cholesky(problem.M)
    F = sp.hstack([L.T / np.sqrt(m_M), sp.csr_matrix((n_dof, m))], format="csr")
    P = sp.block_diag([problem.M / m_M, sp.csr_matrix((m, m))], format="csr")
    r_s = np.asarray(problem.r, dtype=float) / v_s
    rows = [sp.hstack([-problem.D.T, sp.identity(m)])]
    rhs = [r_s[:m]]
    row_names = [_contact_names("kin", n_c, d)]
    if n_b:
        rows.append(sp.hstack([problem.G.T, sp.csr_matrix((n_b, m))]))
        rhs.append(-r_s[m:])
        row_names.append(_numbered("joint", n_b))
    A = sp.vstack(rows, format="csr")
    nonneg = np.zeros(n, dtype=bool)
    nonneg[n_dof::d] = True
    cone_index = n_dof + np.arange(m).reshape(n_c, d)
    cone_coef = np.repeat(problem.mu[:, None], d, axis=1)
    cone_coef[:, 0] = 1.0
    impulse = m_M * v_s
    return ExportModel(
        problem=problem, formulation="primal",
        description=("relaxed primal QP (seed 001 eq. 23) in the velocity change w = v - M^-1 k: "
                     "min_w 1/2 w^T M w s.t. u = D^T w + r_c in K^*, G^T w + r_G = 0; file: y = w / v_s, "
                     "min 1/2 y^T (M / m_M) y s.t. u - D^T y = r_c / v_s, G^T y = -r_G / v_s, u_i in K_i^*"),
        relaxed=True, c=np.zeros(n), P=P, A=A, sense=np.full(A.shape[0], "="), rhs=np.concatenate(rhs),
        nonneg=nonneg, cone_index=cone_index, cone_coef=cone_coef,
        names=np.concatenate([_numbered("y", n_dof), _contact_names("u", n_c, d)]),
        row_names=np.concatenate(row_names), cone_names=_numbered("cone", n_c),
        blocks=(VariableBlock("w", 0, n_dof, v_s, "m/s", "velocity change v - M^-1 k (free)"),
                VariableBlock("u", n_dof, m, v_s, "m/s",
                              "relative contact velocity D^T w + r, [normal, tangents] per contact")),
        objective_scale=m_M * v_s * v_s,
        objective_offset=-0.5 * float(problem.k @ problem.solve_M(problem.k)),
        given_factor=F,
        notes={"scaling": f"v_s = {v_s!r} m/s, m_M = {m_M!r} kg (mean diagonal of M)"
                          + ("" if scaled else " (unscaled: physical units)"),
               "optimum": "objective_scale * (file optimum) = 1/2 w^T M w = -(optimal relaxed dual objective); "
                          "with the offset it is the primal objective 1/2 v^T M v - k^T v [J]",
               "impulses": f"gamma_i = {impulse!r} * (z_0, mu_i z_1, ..., mu_i z_d-1) with z in Q^d the dual "
                           f"variable of cone i (equivalently {impulse!r} times the multipliers of the rows "
                           "kin*, sign by the solver's convention); lambda likewise from the rows joint*"})


def pyramid_edges(problem: TimeStepProblem, m_C: int | None = None) -> tuple[sp.csr_matrix, int]:
    """(E, m_C): the edges of every contact's friction pyramid (formulations.lcp_pyramid, seed 003 eq. 4)
    as the rows of E (n_c m_C x d n_c), row (i, l) = n_i + mu_i t_l in contact i's entries, so that
    gamma = E^T y with y >= 0 spans the pyramid and E u >= 0 is its dual (u_n + mu t_l . u_t >= 0).
    m_C: None gives the formulation's default (2 in 2D, DEFAULT_M_C_3D in 3D)."""
    from formulations.lcp_pyramid import DEFAULT_M_C_3D, pyramid_directions
    d, n_c = problem.d, problem.n_contacts
    m_C = (2 if d == 2 else DEFAULT_M_C_3D) if m_C is None else m_C
    dirs = pyramid_directions(d, m_C)                                   # (m_C, d - 1)
    coef = np.concatenate([np.ones((n_c, m_C, 1)), problem.mu[:, None, None] * dirs[None, :, :]], axis=2)
    rows = np.broadcast_to(np.arange(n_c * m_C).reshape(n_c, m_C, 1), coef.shape).ravel()
    cols = np.broadcast_to((d * np.arange(n_c))[:, None, None] + np.arange(d)[None, None, :], coef.shape).ravel()
    return sp.csr_matrix((coef.ravel(), (rows, cols)), shape=(n_c * m_C, d * n_c)), m_C


def _edge_names(prefix: str, n_c: int, m_C: int) -> np.ndarray:
    return np.char.add(np.char.add(np.repeat(np.char.add(prefix, np.arange(n_c).astype(str)), m_C), "_e"),
                       np.tile(np.arange(m_C).astype(str), n_c))


_PYRAMID = ("pyramidal friction (seed 003 eq. 4): contact i's cone replaced by the pyramid with edges n_i + "
            "mu_i t_l, t_l = cos(2 pi l / m_C) t1 + sin(2 pi l / m_C) t2 (+t, -t in 2D); the QP (15) of seed 003 "
            "with Gamma = 0 (what LCP2 solves; LCP1 re-solves it with Gamma_i = mu_i Lambda_i)")


_PYRAMID_RELAXATION = ("relaxed like LCP2 (seed 003 Theorem 4.2): a sliding contact gets u_n = mu Lambda instead "
                       "of 0; the pyramid's exact (non-associated) law is the LCP of formulations/lcp_pyramid.py")


def pyramid_dual(problem: TimeStepProblem, *, scaled: bool = True, m_C: int | None = None) -> ExportModel:
    """The dual of seed 003's QP (15) with Gamma = 0: the relaxed dual with gamma = E^T y, y >= 0
    (:func:`pyramid_edges`), lambda free. In x = [y; lambda] / alpha it is :func:`relaxed_dual`'s QP
    composed with B = blockdiag(E^T, I): ``min 1/2 x^T B^T P B x + (B^T c)^T x, x_y >= 0``."""
    base = relaxed_dual(problem, scaled=scaled)
    E, m_C = pyramid_edges(problem, m_C)
    n_y, n_b = E.shape[0], problem.n_bilateral
    B = sp.block_diag([E.T, sp.identity(n_b)], format="csr") if n_b else E.T.tocsr()
    names = _edge_names("y", problem.n_contacts, m_C)
    blocks = [VariableBlock("y", 0, n_y, base.blocks[0].scale, "N s",
                            "edge impulses, m_C per contact in contact order: gamma_i = sum_l y_il (n_i + mu_i t_l)")]
    if n_b:
        names = np.concatenate([names, base.names[problem.n_contact_unknowns:]])
        blocks.append(dataclasses.replace(base.blocks[1], start=n_y))
    nonneg = np.zeros(n_y + n_b, dtype=bool)
    nonneg[:n_y] = True
    return dataclasses.replace(
        base, formulation="pyramid-dual",
        description=(f"pyramid dual QP, m_C = {m_C}: min_nu 1/2 nu^T N nu + r^T nu over gamma = E^T y, y >= 0, "
                     "lambda free; file: x = [y; lambda] / alpha"),
        c=B.T @ base.c, P=(B.T @ base.P @ B).tocsr(), A=sp.csr_matrix((0, n_y + n_b)), nonneg=nonneg,
        cone_index=np.zeros((0, problem.d), dtype=np.int64), cone_coef=np.zeros((0, problem.d)),
        names=names, cone_names=np.array([], dtype="<U1"), blocks=tuple(blocks),
        given_factor=(base.factor @ B).tocsr(),
        notes={**base.notes, "pyramid": _PYRAMID, "relaxation": _PYRAMID_RELAXATION,
               "optimum": "objective_scale * (file optimum) is the optimal dual objective 1/2 nu^T N nu + r^T nu "
                          "[J] over the pyramids; the impulses are gamma = alpha E^T y, lambda = alpha x_lambda"})


def pyramid_primal(problem: TimeStepProblem, *, scaled: bool = True, m_C: int | None = None) -> ExportModel:
    """Seed 003's QP (15) with Gamma = 0 in the velocity change: :func:`relaxed_primal` with each contact's
    dual cone replaced by the pyramid's dual, ``E (D^T y + r_c / v_s) >= 0`` (rows pyr<i>_e<l>), and no
    u variables: ``min 1/2 y^T (M / m_M) y  s.t.  E D^T y >= -E r_c / v_s,  G^T y = -r_G / v_s``."""
    base = relaxed_primal(problem, scaled=scaled)
    E, m_C = pyramid_edges(problem, m_C)
    n_dof, m = problem.n_dof, problem.n_contact_unknowns
    v_s = base.blocks[0].scale
    r_s = np.asarray(problem.r, dtype=float) / v_s
    rows = [(E @ problem.D.T).tocsr()]
    rhs = [-(E @ r_s[:m])]
    row_names = [_edge_names("pyr", problem.n_contacts, m_C)]
    if problem.n_bilateral:
        rows.append(sp.csr_matrix(problem.G.T))
        rhs.append(-r_s[m:])
        row_names.append(base.row_names[m:])
    A = sp.vstack(rows, format="csr")
    sense = np.concatenate([np.full(E.shape[0], ">"), np.full(problem.n_bilateral, "=")])
    impulse = base.objective_scale / v_s
    return dataclasses.replace(
        base, formulation="pyramid-primal",
        description=(f"pyramid primal QP (seed 003 eq. 15, Gamma = 0), m_C = {m_C}, in the velocity change "
                     "w = v - M^-1 k: min_w 1/2 w^T M w s.t. u_n,i + mu_i t_l . u_t,i >= 0 with u = D^T w + r_c, "
                     "G^T w + r_G = 0; file: y = w / v_s"),
        c=np.zeros(n_dof), P=base.P[:n_dof, :n_dof].tocsr(), A=A, sense=sense, rhs=np.concatenate(rhs),
        nonneg=np.zeros(n_dof, dtype=bool), cone_index=np.zeros((0, problem.d), dtype=np.int64),
        cone_coef=np.zeros((0, problem.d)), names=base.names[:n_dof], row_names=np.concatenate(row_names),
        cone_names=np.array([], dtype="<U1"), blocks=base.blocks[:1],
        given_factor=base.factor[:, :n_dof].tocsr(),
        notes={**base.notes, "pyramid": _PYRAMID, "relaxation": _PYRAMID_RELAXATION,
               "impulses": f"y_il = {impulse!r} * (multiplier of row pyr<i>_e<l>, >= 0), gamma_i = sum_l y_il "
                           "(n_i + mu_i t_l); lambda likewise from the rows joint*"})


# --------------------------------------------------------------------------- provenance
def _mu_text(mu: np.ndarray) -> str:
    if np.all(mu == mu[0]):
        return f"{float(mu[0])!r} for all {mu.shape[0]} contacts"
    return "per contact, in contact order: " + " ".join(map(repr, mu.tolist()))


def provenance(problem: TimeStepProblem, formulation: str, fmt: str, *, list_mu: bool) -> dict[str, str]:
    """The facts every exported file carries, as ordered key -> one-line text.

    ``list_mu``: spell out the friction coefficients (for formats that do not store mu as data)."""
    from workbench import __version__
    meta = problem.metadata
    out = {
        "exported_by": f"contact-workbench {__version__} (workbench.export, format {fmt})",
        "problem": problem.name or "(unnamed)",
        "source": str(meta.get("source") or meta.get("scene") or "generated in memory"),
        "problem_kind": problem.kind,
        "contacts": str(problem.n_contacts),
        "contact_dimension": str(problem.d),
        "dofs": "-" if problem.n_dof is None else str(problem.n_dof),
        "joints": str(problem.n_bilateral),
        "step_size": "unknown" if problem.h is None else f"{problem.h!r} s",
        "formulation": formulation,
    }
    if list_mu:
        out["friction_coefficients"] = _mu_text(problem.mu)
    out.update(CONVENTIONS)
    return out



def impulse_vectors(problem: TimeStepProblem, nu: np.ndarray) -> dict[str, np.ndarray]:
    """What a solution nu = [gamma; lambda] means in the data: ``gamma`` (contact impulses, N s),
    ``u`` (relative contact velocity N nu + r, m/s), and for global problems ``v`` (velocity
    M^-1 (k + C nu), m/s) and, with joints, ``lambda`` (joint impulses, N s)."""
    m = problem.n_contact_unknowns
    out = {"gamma": nu[:m], "u": problem.relative_velocity(nu)[:m]}
    if problem.is_global:
        out["v"] = problem.velocity(nu)
    if problem.n_bilateral:
        out["lambda"] = nu[m:]
    return out


def data_arrays(problem: TimeStepProblem, formulation: str, solution: np.ndarray | None,
                guess: np.ndarray | None) -> dict[str, object]:
    """The arrays of the .mat and .npz exports, by name (sparse matrices as scipy CSC).

    Always N (= W of a local problem), r (= q), mu, d; for a global problem in formulation ``raw`` also
    M, D, k, b and, with joints, G, b_G. A solution or guess nu adds solution_gamma, solution_u,
    solution_v, solution_lambda (guess_... likewise; see :func:`impulse_vectors`)."""
    out: dict[str, object] = {"d": np.array(problem.d), "mu": np.asarray(problem.mu, dtype=float)}
    if problem.is_global and formulation == "raw":
        out.update(M=sp.csc_matrix(problem.M), D=sp.csc_matrix(problem.D), k=np.asarray(problem.k),
                   b=np.asarray(problem.b))
        if problem.n_bilateral:
            out.update(G=sp.csc_matrix(problem.G), b_G=np.asarray(problem.b_G))
    out.update(N=sp.csc_matrix(problem.N), r=np.asarray(problem.r, dtype=float))
    for what, nu in (("solution", solution), ("guess", guess)):
        if nu is not None:
            out.update({f"{what}_{k}": v for k, v in impulse_vectors(problem, nu).items()})
    return out
