"""The backend-neutral model of a convex formulation, and the cvxpy problem generated from it.

A formulation that is a convex program describes itself once, as a :class:`ConicQP`:

    minimise    1/2 ||F x||^2 + c^T x        (1/2 x^T P x where the formulation gives P, not a factor F)
    subject to  A_b x  (=, >=, <=)  rhs_b     for each row block b (joints, pyramid faces, ...)
                x_j >= 0                      for nonneg[j], every other x_j free
                z_i in K_mu_i  or  K_mu_i^*   for each contact i, z = G x + h, or z = x[index]

with K_mu = {z : mu z_n >= ||z_t||, z_n >= 0} the friction cone and K_mu^* = {z : z_n >= mu ||z_t||}
its dual cone (:class:`FrictionCones`). The relaxed dual (Mazhar et al. 2014 eq. 24), the relaxed
primal (eq. 23) and the pyramid QPs (Anitescu & Hart 2003 QP (15)) are built this way, and from the
one description come both :func:`to_cvxpy` (the problem the conic solvers take through cvxpy) and
every model format of workbench.export (CBF, PTF/task, LP, MPS, NL).

Scales. The description is written on O(1) data (formulations.base.data_scale): each
:class:`VariableBlock` says physical value = scale x model value, and the formulation's objective is
objective_scale x (model objective) + objective_offset. With ``scaled=False`` a builder sets every
scale to 1 and the model holds physical units.

Factors. Conic formats need P = F^T F. A formulation gives F where it is sparse and exact (the block
Cholesky factor of M: :func:`mass_cholesky`); otherwise :attr:`ConicQP.factor` finds one per
connected block of P (:func:`psd_factor`, an eigendecomposition that drops eigenvalues below
``FACTOR_RTOL`` times the block's largest: the PSD part of a slightly indefinite W).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from formulations.base import DataScale, data_scale
from workbench.errors import ProblemDataError
from workbench.problem import TimeStepProblem

__all__ = ["ConicQP", "VariableBlock", "RowBlock", "FrictionCones", "CvxpyForm", "to_cvxpy", "model_scale",
           "mass_cholesky", "block_cholesky", "psd_factor", "numbered", "contact_names", "edge_names", "joined",
           "FACTOR_RTOL",
           "DENSE_BLOCK_LIMIT"]

#: eigenvalues of a block of P below this times the block's largest are dropped from its factor
FACTOR_RTOL = 1e-13
#: largest connected block of M factorised densely (a larger one, as in a finite-element mesh, keeps M sparse)
DENSE_BLOCK_LIMIT = 256


@dataclass(frozen=True)
class VariableBlock:
    """Variables x[start:start+size]: physical value = ``scale`` x model value, in ``unit``."""
    name: str
    start: int
    size: int
    scale: float
    unit: str
    meaning: str


@dataclass(frozen=True)
class RowBlock:
    """Linear rows A x (sense) rhs, ``sense`` per row in {"=", ">", "<"}, named row by row
    (``name_rule()``: names are made only when a format asks)."""
    name: str
    A: sp.csr_matrix
    sense: np.ndarray
    rhs: np.ndarray
    name_rule: Callable[[], np.ndarray]

    @property
    def names(self) -> np.ndarray:
        return self.name_rule()


@dataclass(frozen=True)
class FrictionCones:
    """z_i in K_mu_i (``kind`` "K", the friction cone) or K_mu_i^* ("K*", its dual) for each contact i,
    z_i = entries d i .. d i + d - 1 of z = G x + h, or of x[index] where ``index`` (n_c, d) is given.

    As second-order cones (a_i0 z_i0, ..., a_i,d-1 z_i,d-1) in Q^d = {w : w_0 >= ||w_1:||} with
    a_i = (mu_i, 1, ..., 1) for K and (1, mu_i, ..., mu_i) for K^* (:attr:`coef`); K with mu_i = 0
    also needs z_i0 >= 0. ``lift`` (an affine argument only) names the variables u = G x + h a format
    that takes cones on variables gets (block ``lift``, rows ``lift_rows``<i>_n, ...)."""
    kind: str
    mu: np.ndarray
    d: int
    index: np.ndarray | None = None
    G: sp.csr_matrix | None = None
    h: np.ndarray | None = None
    lift: VariableBlock | None = None
    lift_rows: str = "kin"

    @property
    def n_cones(self) -> int:
        return self.mu.shape[0]

    @property
    def names(self) -> np.ndarray:
        """cone<i>, named after contact i."""
        return numbered("cone", self.n_cones)

    @property
    def coef(self) -> np.ndarray:
        coef = np.ones((self.n_cones, self.d))
        if self.kind == "K":
            coef[:, 0] = self.mu
        else:
            coef[:, 1:] = self.mu[:, None]
        return coef


@dataclass
class ConicQP:
    """One convex QP with friction cones (module docstring), plus what maps it back to physical units."""
    problem: TimeStepProblem
    formulation: str
    description: str
    relaxed: bool
    c: np.ndarray
    name_rule: Callable[[], np.ndarray]    # () -> (n,) variable names, made when a format asks
    nonneg: np.ndarray                     # (n,) bool
    blocks: tuple[VariableBlock, ...]
    scale: DataScale
    objective_scale: float
    objective_offset: float
    F: sp.csr_matrix | None = None         # factor given by the formulation: P = F^T F
    P: sp.csr_matrix | None = None         # the quadratic term, where no factor is given
    rows: tuple[RowBlock, ...] = ()
    cones: FrictionCones | None = None
    #: name of the cvxpy variable (the fixed-point formulations find it by name)
    variable: str = "x"
    notes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        n = self.c.shape[0]
        if (self.F is None) == (self.P is None):
            raise ValueError("ConicQP: give exactly one of the factor F and the matrix P")
        quad_cols = (self.F if self.F is not None else self.P).shape[1]
        if quad_cols != n or self.nonneg.shape != (n,) or any(b.A.shape[1] != n for b in self.rows):
            raise ValueError("ConicQP: inconsistent sizes")

    @property
    def n(self) -> int:
        return self.c.shape[0]

    @cached_property
    def names(self) -> np.ndarray:
        return self.name_rule()

    @cached_property
    def hessian(self) -> sp.csr_matrix:
        """P (= F^T F where a factor is given)."""
        return sp.csr_matrix(self.P) if self.P is not None else (self.F.T @ self.F).tocsr()

    @cached_property
    def factor(self) -> sp.csr_matrix:
        """F with F^T F = P (rows without entries removed)."""
        F = sp.csr_matrix(self.F if self.F is not None else psd_factor(self.P))
        return F[np.flatnonzero(np.diff(F.indptr))]

    @cached_property
    def A(self) -> sp.csr_matrix:
        return sp.vstack([b.A for b in self.rows], format="csr") if self.rows else sp.csr_matrix((0, self.n))

    @cached_property
    def sense(self) -> np.ndarray:
        return np.concatenate([b.sense for b in self.rows]) if self.rows else np.array([], dtype="<U1")

    @cached_property
    def rhs(self) -> np.ndarray:
        return np.concatenate([b.rhs for b in self.rows]) if self.rows else np.zeros(0)

    @cached_property
    def row_names(self) -> np.ndarray:
        return np.concatenate([b.names for b in self.rows]) if self.rows else np.array([], dtype="<U1")

    @property
    def cone_names(self) -> np.ndarray:
        return self.cones.names if self.cones is not None else np.array([], dtype="<U1")

    @property
    def cone_coef(self) -> np.ndarray:
        return self.cones.coef if self.cones is not None else np.zeros((0, self.problem.d))

    @property
    def cone_index(self) -> np.ndarray:
        """(n_cones, d) variable indices of cones on variables (none: an empty array)."""
        if self.cones is None:
            return np.zeros((0, self.problem.d), dtype=np.int64)
        if self.cones.index is None:
            raise ValueError("the cones act on an affine expression, not on variables")
        return self.cones.index

    def objective(self, x: np.ndarray) -> float:
        """The model's objective 1/2 x^T P x + c^T x at x (model units)."""
        return float(0.5 * x @ (self.hessian @ x) + self.c @ x)

    def physical(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The variable blocks of a model solution x in physical units, by block name."""
        return {b.name: b.scale * np.asarray(x[b.start:b.start + b.size], dtype=float) for b in self.blocks}

    def inscribe_pyramid(self, E: sp.csr_matrix, m_C: int, **changes) -> "ConicQP":
        """The same QP with each friction cone replaced by the pyramid whose edges are the rows of E
        (n_c m_C x d n_c, row (i, l) = n_i + mu_i t_l in contact i's entries; Anitescu & Hart 2003 eq. 4):

        * K on variables (the dual): z = E^T y with y >= 0, substituted (x -> B x' with
          x' = [y; the other variables], names y<i>_e<l>, block ``y``; the factor becomes F B);
        * K^* on z = G x + h (the primal): rows E (G x + h) >= 0 before the others (pyr<i>_e<l>).

        ``changes``: fields to replace (formulation, description, notes)."""
        cones = self.cones
        n_c = cones.n_cones
        if (cones.kind == "K*") != (cones.index is None):
            raise ValueError("a pyramid replaces cones K on variables or cones K^* on an affine expression")
        if cones.kind == "K*":
            faces = RowBlock("pyr", (E @ cones.G).tocsr(), np.full(E.shape[0], ">"), -(E @ cones.h),
                             partial(edge_names, "pyr", n_c, m_C))
            return dataclasses.replace(self, rows=(faces, *self.rows), cones=None, **changes)
        n_y, cone_vars = E.shape[0], cones.index.ravel()
        keep = np.setdiff1d(np.arange(self.n), cone_vars)
        # x = B [y; x_keep]: x[cone_vars] = E^T y, x[keep] = x_keep
        Et = sp.coo_matrix(E.T)
        B = sp.csr_matrix((np.concatenate([Et.data, np.ones(keep.shape[0])]),
                           (np.concatenate([cone_vars[Et.row], keep]),
                            np.concatenate([Et.col, n_y + np.arange(keep.shape[0])]))),
                          shape=(self.n, n_y + keep.shape[0]))
        head = next(b for b in self.blocks if b.start <= cone_vars[0] < b.start + b.size)
        blocks = [VariableBlock("y", 0, n_y, head.scale, head.unit, "edge impulses, m_C per contact in contact "
                                "order: gamma_i = sum_l y_il (n_i + mu_i t_l)")]
        blocks += [dataclasses.replace(b, start=n_y + int(np.searchsorted(keep, b.start))) for b in self.blocks
                   if np.isin(np.arange(b.start, b.start + b.size), keep).all()]
        return dataclasses.replace(
            self, c=B.T @ self.c, name_rule=lambda: np.concatenate([edge_names("y", n_c, m_C), self.names[keep]]),
            nonneg=np.concatenate([np.ones(n_y, dtype=bool), self.nonneg[keep]]), blocks=tuple(blocks),
            rows=tuple(dataclasses.replace(b, A=(b.A @ B).tocsr()) for b in self.rows), cones=None,
            F=(self.factor @ B).tocsr(), P=None, **changes)


# --------------------------------------------------------------------------- cvxpy
@dataclass
class CvxpyForm:
    """The cvxpy problem of a ConicQP: its variable ``x``, the cone constraint ``cones`` (one SOC, or
    None) and each row block's constraint by block name."""
    problem: Any
    x: Any
    cones: Any
    rows: dict[str, Any]


def to_cvxpy(qp: ConicQP) -> CvxpyForm:
    """The cvxpy problem of ``qp``: one variable, one vectorised SOC constraint for the cones (blocks
    [a_0 z_0, a_t z_t] per contact, plus z_0 >= 0 where K has mu = 0), one constraint per row block
    and x_j >= 0 for the nonnegative variables. The quadratic term is 1/2 ||F x||^2 where a factor
    is given (elementwise for a diagonal F), else 1/2 x^T P x (P declared PSD)."""
    import cvxpy as cp

    x = cp.Variable(qp.n, name=qp.variable)
    if qp.F is None:
        quad = 0.5 * cp.quad_form(x, cp.psd_wrap(qp.P))
    elif qp.F.shape == (qp.n, qp.n) and sp.triu(qp.F, 1).nnz == sp.tril(qp.F, -1).nnz == 0:
        # a diagonal factor elementwise: cvxpy hands the diagonal P to the solver without an auxiliary F x
        quad = 0.5 * cp.sum_squares(cp.multiply(qp.F.diagonal(), x))
    else:
        quad = 0.5 * cp.sum_squares(qp.F @ x)
    constraints, cone = [], None
    if qp.cones is not None:
        K = qp.cones
        if K.index is not None:
            idx = K.index.ravel()
            contiguous = np.array_equal(idx, np.arange(idx[0], idx[0] + idx.shape[0]))
            z = x[idx[0]:idx[0] + idx.shape[0]] if contiguous else x[idx]
        else:
            z = K.G @ x + K.h
        zc = cp.reshape(z, (K.n_cones, K.d), order="C")
        if K.kind == "K":
            cone = cp.SOC(cp.multiply(K.mu, zc[:, 0]), zc[:, 1:].T, axis=0)
        else:
            cone = cp.SOC(zc[:, 0], cp.multiply(np.tile(K.mu, (K.d - 1, 1)), zc[:, 1:].T), axis=0)
        constraints.append(cone)
        zero = np.flatnonzero(K.mu == 0) if K.kind == "K" else np.zeros(0, dtype=np.int64)
        if zero.size:
            constraints.append(zc[zero, 0] >= 0)
    rows = {}
    for b in qp.rows:
        (sense,) = set(b.sense.tolist())  # a block holds one kind of row
        expr = b.A @ x
        rows[b.name] = expr == b.rhs if sense == "=" else (expr >= b.rhs if sense == ">" else expr <= b.rhs)
        constraints.append(rows[b.name])
    if qp.nonneg.any():
        constraints.append(x[np.flatnonzero(qp.nonneg)] >= 0)
    objective = quad + qp.c @ x if np.any(qp.c) else quad
    return CvxpyForm(problem=cp.Problem(cp.Minimize(objective), constraints), x=x, cones=cone, rows=rows)


# --------------------------------------------------------------------------- scales
def model_scale(problem: TimeStepProblem, scaled: bool | DataScale) -> DataScale:
    """data_scale(problem), unit scales for a model in physical units (``scaled=False``), or the
    scales given (a DataScale: the export's, workbench.export.model.export_scale)."""
    if isinstance(scaled, DataScale):
        return scaled
    return data_scale(problem) if scaled else DataScale(impulse=1.0, velocity=1.0, objective=1.0)


# --------------------------------------------------------------------------- factors
def _component_groups(P: sp.spmatrix):
    """The connected components of P's graph as index arrays (k, s), one array per component size s."""
    from scipy.sparse.csgraph import connected_components  # here: it loads scipy.sparse.linalg (0.1 s)
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


def mass_cholesky(problem: TimeStepProblem) -> tuple[sp.csr_matrix, sp.csr_matrix] | None:
    """(L, L^-1) with M = L L^T for a global problem, sparse like M's blocks; None when a connected
    block of M is larger than DENSE_BLOCK_LIMIT (its dense factor would fill in: the formulations then
    keep M itself)."""
    from scipy.sparse.csgraph import connected_components
    M = problem.M
    _, labels = connected_components(sp.csr_matrix(M), directed=False)
    if np.bincount(labels).max() > DENSE_BLOCK_LIMIT:
        return None
    return block_cholesky(M)


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
def joined(*rules: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
    """The name rule of consecutive blocks: their names one after the other."""
    return lambda: np.concatenate([rule() for rule in rules])


def numbered(prefix: str, count: int, suffix: str = "") -> np.ndarray:
    """prefix0suffix, prefix1suffix, ..."""
    return np.char.add(np.char.add(prefix, np.arange(count).astype(str)), suffix)


def contact_names(prefix: str, n_c: int, d: int) -> np.ndarray:
    """prefix{i}_n, prefix{i}_t1, prefix{i}_t2 (or prefix{i}_t in 2D), contact by contact."""
    parts = ["_n", "_t"] if d == 2 else ["_n", "_t1", "_t2"]
    base = np.repeat(np.char.add(prefix, np.arange(n_c).astype(str)), d)
    return np.char.add(base, np.tile(parts, n_c))


def edge_names(prefix: str, n_c: int, m_C: int) -> np.ndarray:
    """prefix{i}_e{l}: edge l of contact i's pyramid, contact by contact."""
    return np.char.add(np.char.add(np.repeat(np.char.add(prefix, np.arange(n_c).astype(str)), m_C), "_e"),
                       np.tile(np.arange(m_C).astype(str), n_c))
