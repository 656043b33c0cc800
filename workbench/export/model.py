"""What the model formats share: a formulation's ConicQP in the form files take, and the provenance
every exported file carries.

The model formats (CBF, PTF/task, LP, MPS, NL) write the formulation's own backend-neutral
description, :class:`formulations.qp.ConicQP` (the relaxed dual and primal, Mazhar et al. 2014 eqs.
24/23; the pyramid QPs, Anitescu & Hart 2003 QP (15)), the same one the workbench's cvxpy models are
generated from. :func:`export_form` puts it in the form every format can hold:

    minimise    1/2 x^T P x + c^T x
    subject to  A x  (=, >=, <=)  rhs              row by row
                x_j >= 0                            for ``nonneg[j]``, every other x_j free
                (a_i0 x[j_i0], ..., a_i,d-1 x[j_i,d-1]) in Q^d      for each cone i,

with Q^d = {z : z_0 >= ||z_1:||} and every cone head x[j_i0] among the ``nonneg`` variables (so a
cone written as the quadratic constraint sum_k>=1 (a_ik x_jik)^2 - (a_i0 x_ji0)^2 <= 0 with
x_ji0 >= 0, as LP/MPS/NL do, is the same set): a cone on an affine argument z = G x + h (the
primal's u = D^T y + r_c / v_s) gets variables u and the rows u - G x = h. :func:`quadratic_form`
is what LP, MPS and NL write: the objective split onto z = F x and the cones' implied linear rows.

:func:`provenance` gives the facts every exported file carries (as comments, HDF5 attributes or
.mat/.npz fields): source problem, workbench version, formulation and relaxation, contact grouping
and ordering, friction coefficients, sign conventions and units; :func:`file_header` adds a model's
variables, scales and objective map.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np
import scipy.sparse as sp

from formulations.base import DataScale
from formulations.qp import ConicQP, RowBlock, VariableBlock, contact_names, joined, numbered
from workbench.metrics import mean_diagonal
from workbench.problem import TimeStepProblem

__all__ = ["export_scale", "contact_scales", "equilibrate_contacts", "export_form", "split_objective", "with_apex_rows", "quadratic_form", "objective_triangle",
           "cone_squares", "file_header", "provenance", "impulse_vectors", "data_arrays"]

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


def export_scale(problem: TimeStepProblem) -> DataScale:
    """The scales of an exported model: the velocity scale v_s is the largest |r| entry of the contacts
    that approach (r_n < 0) and of the joints; impulse alpha = v_s / n_N, objective alpha v_s (n_N the
    mean diagonal of N). Falls back to formulations.base.data_scale when no contact approaches and there
    is no joint (then nothing pushes: nu = 0).

    Why not data_scale's ||r||_inf: a separated contact far away has r_n = gap / h, which in a settled
    packing (dataset:settled-00320) is 97 m/s beside 5e-3 m/s at the touching contacts; on that scale
    the linear term of every contact that carries load is 5e-5, the file's optimum -2e-6, and generic
    solvers at their default tolerances fail (HiGHS 1.16 answered "Unbounded" on the pyramid QP) or stop
    early (Clarabel 0.11 off by 3e-4 relative on the dual). A large cost on a separating contact's
    impulse does no harm: that impulse sits at its bound."""
    from formulations.base import data_scale
    d, m = problem.d, problem.n_contact_unknowns
    r = np.asarray(problem.r, dtype=float)
    rc = r[:m].reshape(-1, d)
    pushing = np.concatenate([np.abs(rc[rc[:, 0] < 0]).ravel(), np.abs(r[m:])])
    v_s = float(pushing.max()) if pushing.size else 0.0
    if not v_s > 0:
        return data_scale(problem)
    n_N = mean_diagonal(problem, contacts_only=True)
    return DataScale(impulse=v_s / n_N, velocity=v_s, objective=v_s * v_s / n_N)


def contact_scales(problem: TimeStepProblem, sc: DataScale) -> np.ndarray:
    """s_i = min(1, v_s / max_k |r_ik|) per contact i (v_s = ``sc.velocity``): 1 wherever contact i's
    linear term is within the export's velocity scale (every contact that approaches, and the near
    separated ones), v_s / |r_i| for a far separated contact, whose r_n = gap / h is up to 2e4 v_s in a
    settled packing (dataset:settled-00320)."""
    r = np.abs(np.asarray(problem.r, dtype=float)[:problem.n_contact_unknowns]).reshape(-1, problem.d).max(axis=1)
    return np.minimum(1.0, sc.velocity / np.maximum(r, np.finfo(float).tiny))


def equilibrate_contacts(qp: ConicQP, s: np.ndarray) -> ConicQP:
    """The same problem with contact i's unknowns or rows scaled by s_i > 0 (:func:`contact_scales`), so
    that every entry of the linear data is at most 1 in the export's units:

    * impulses (the dual: gamma_i in K_i; the pyramid dual: the edge impulses y_il >= 0): x_i = S x'_i,
      i.e. c' = S c, F' = F S, A' = A S; the cone K_i and y >= 0 hold for x'_i exactly when for x_i;
    * velocities (the primal: u_i = G_i x + h_i in K_i^*; the pyramid primal: rows E_i (G_i x + h_i) >= 0):
      contact i's cone argument or rows times s_i (u'_i = s_i u_i, in K_i^* exactly when u_i is).

    The objective and its map are unchanged; the variable blocks' scales become per entry. Why: a far
    separated contact's linear term r_i / v_s (2e4 in dataset:settled-00320) set the residual scale of
    interior-point solvers, and Clarabel 0.11 at its defaults stopped 7e-6 (dual) and 3e-6 (primal)
    short of the optimum; the separated contact's unknown sits at its bound either way."""
    if np.all(s == 1.0):
        return qp
    K, n_c = qp.cones, s.shape[0]
    note = {"contact_scales": "s_i per contact, in contact order (contact i's unknowns or rows were scaled by "
                              "s_i = min(1, v_s / max_k |r_ik|)): " + " ".join(map(repr, s.tolist()))}
    if K is not None and K.index is not None or K is None and any(b.name == "y" for b in qp.blocks):
        if K is not None:
            cols, per = K.index.ravel(), np.repeat(s, K.d)
        else:
            y = next(b for b in qp.blocks if b.name == "y")
            cols, per = np.arange(y.start, y.start + y.size), np.repeat(s, y.size // n_c)
        col = np.ones(qp.n)
        col[cols] = per
        S = sp.diags(col)
        quad = {"F": (qp.F @ S).tocsr()} if qp.F is not None else {"P": (S @ qp.P @ S).tocsr()}
        blocks = tuple(dataclasses.replace(b, scale=b.scale * col[b.start:b.start + b.size])
                       if np.any(col[b.start:b.start + b.size] != 1.0) else b for b in qp.blocks)
        return dataclasses.replace(qp, c=qp.c * col, blocks=blocks, rows=tuple(
            dataclasses.replace(b, A=(b.A @ S).tocsr()) for b in qp.rows), notes={**qp.notes, **note}, **quad)
    if K is not None:
        per = np.repeat(s, K.d)
        S = sp.diags(per)
        lift = dataclasses.replace(K.lift, scale=K.lift.scale / per)
        return dataclasses.replace(qp, cones=dataclasses.replace(K, G=(S @ K.G).tocsr(), h=K.h * per, lift=lift),
                                   notes={**qp.notes, **note})
    pyr = next(b for b in qp.rows if b.name == "pyr")
    per = np.repeat(s, pyr.A.shape[0] // n_c)
    rows = tuple(dataclasses.replace(b, A=(sp.diags(per) @ b.A).tocsr(), rhs=b.rhs * per) if b is pyr else b
                 for b in qp.rows)
    note["contact_scales"] += "; the multiplier of row pyr<i>_e<l> is the edge impulse's divided by s_i"
    return dataclasses.replace(qp, rows=rows, notes={**qp.notes, **note})


def export_form(qp: ConicQP) -> ConicQP:
    """``qp`` with its cones on variables whose heads are nonnegative (module docstring): an affine cone
    argument z = G x + h becomes the variables u (block ``cones.lift``) and the rows u - G x = h
    (``cones.lift_rows``<i>_n, ...), placed before the other rows."""
    K = qp.cones
    if K is None:
        return qp
    n, m = qp.n, K.n_cones * K.d
    if K.index is None:
        kin = RowBlock(K.lift_rows, sp.hstack([-K.G, sp.identity(m)], format="csr"), np.full(m, "="), K.h,
                       partial(contact_names, K.lift_rows, K.n_cones, K.d))
        quad = {"F": sp.hstack([qp.F, sp.csr_matrix((qp.F.shape[0], m))], format="csr")} if qp.F is not None \
            else {"P": sp.block_diag([qp.P, sp.csr_matrix((m, m))], format="csr")}
        qp = dataclasses.replace(
            qp, c=np.concatenate([qp.c, np.zeros(m)]),
            name_rule=joined(qp.name_rule, partial(contact_names, K.lift.name, K.n_cones, K.d)),
            nonneg=np.concatenate([qp.nonneg, np.zeros(m, dtype=bool)]),
            blocks=qp.blocks + (dataclasses.replace(K.lift, start=n),),
            rows=(kin, *(dataclasses.replace(b, A=sp.hstack([b.A, sp.csr_matrix((b.A.shape[0], m))], format="csr"))
                         for b in qp.rows)),
            cones=dataclasses.replace(K, index=n + np.arange(m).reshape(K.n_cones, K.d), G=None, h=None),
            **{"F": None, "P": None, **quad})
    nonneg = qp.nonneg.copy()
    nonneg[qp.cones.index[:, 0]] = True
    return dataclasses.replace(qp, nonneg=nonneg)


def split_objective(qp: ConicQP) -> ConicQP:
    """The same problem with the quadratic term on auxiliary variables z = F x (rows fac<k>):

        min 1/2 ||z||^2 + c^T x   s.t.  F x - z = 0,  (the original rows, bounds and cones).

    Its Hessian is diagonal, so a reader sees a separable convex objective. The LP, MPS and NL
    exports use it: with the dense, singular N written as x^T N x, SCIP did not recognise the
    objective as convex and branched spatially (SCIP 10 via pyscipopt 6.3: a 4-contact dual timed
    out after 20 s with no dual bound; split, it solves in 0.1 s)."""
    F = qp.factor
    p, n = F.shape
    wide = lambda A: sp.hstack([A, sp.csr_matrix((A.shape[0], p))], format="csr")  # noqa: E731
    fac = RowBlock("fac", sp.hstack([F, -sp.identity(p)], format="csr"), np.full(p, "="), np.zeros(p),
                   partial(numbered, "fac", p))
    return dataclasses.replace(
        qp, c=np.concatenate([qp.c, np.zeros(p)]), name_rule=joined(qp.name_rule, partial(numbered, "z", p)),
        nonneg=np.concatenate([qp.nonneg, np.zeros(p, dtype=bool)]),
        blocks=qp.blocks + (VariableBlock("z", n, p, 1.0, "-", "auxiliary z = F x with F^T F = P, "
                                          "so that 1/2 x^T P x = 1/2 ||z||^2 (rows fac<k>)"),),
        rows=(*(dataclasses.replace(b, A=wide(b.A)) for b in qp.rows), fac),
        F=sp.hstack([sp.csr_matrix((p, n)), sp.identity(p)], format="csr"), P=None)


def with_apex_rows(qp: ConicQP) -> ConicQP:
    """The same problem with the linear rows that each cone implies, two per tangential entry:

        a_k x_jk - a_0 x_j0 <= 0,   a_k x_jk + a_0 x_j0 >= 0      (rows apx<i>_<k>, apn<i>_<k>)

    (|a_k x_jk| <= ||(a_l x_jl)_l>=1|| <= a_0 x_j0). They change no feasible point. They are there
    for readers that see a cone only as the quadratic constraint sum (a_k x_jk)^2 <= (a_0 x_j0)^2:
    its violation is quadratic, so at the apex (a separating contact, x_j0 = 0) a tolerance eps
    lets the tangential entries reach sqrt(eps). SCIP at feastol 1e-8 then missed the relaxed
    dual's optimum by 6e-5 relative; with these rows by 4e-8."""
    index, coef = qp.cone_index, qp.cone_coef
    n_c, d = index.shape
    head = np.repeat(index[:, :1], d - 1, axis=1).ravel()
    a0 = np.repeat(coef[:, :1], d - 1, axis=1).ravel()
    tangent, a_k = index[:, 1:].ravel(), coef[:, 1:].ravel()
    t = np.arange(tangent.shape[0])
    rows = np.concatenate([2 * t, 2 * t, 2 * t + 1, 2 * t + 1])
    cols = np.concatenate([tangent, head, tangent, head])
    vals = np.concatenate([a_k, -a0, a_k, a0])

    def names() -> np.ndarray:
        labels = np.char.add(np.repeat(qp.cone_names, d - 1), np.tile(np.char.add("_", np.arange(1, d).astype(str)), n_c))
        out = np.empty(2 * t.shape[0], dtype=object)
        out[0::2], out[1::2] = np.char.add("apx_", labels), np.char.add("apn_", labels)
        return out.astype(str)

    apex = RowBlock("apex", sp.csr_matrix((vals, (rows, cols)), shape=(2 * t.shape[0], qp.n)),
                    np.tile(["<", ">"], t.shape[0]), np.zeros(2 * t.shape[0]), names)
    return dataclasses.replace(
        qp, rows=(*qp.rows, apex),
        notes={**qp.notes, "apex_rows": "rows apx_cone<i>_<k>, apn_cone<i>_<k>: "
               "-a_0 x_j0 <= a_k x_jk <= a_0 x_j0, implied by cone i (they cut off nothing); they make a "
               "reader that checks the cone as a quadratic constraint accurate at the apex"})


def quadratic_form(qp: ConicQP) -> ConicQP:
    """The model as LP, MPS and NL write it: :func:`split_objective` and :func:`with_apex_rows`."""
    return with_apex_rows(split_objective(qp))


def objective_triangle(qp: ConicQP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, P_ij) for i <= j, row-major: the upper triangle of P."""
    U = sp.triu(qp.hessian, format="csr")
    U.eliminate_zeros()
    U = sp.coo_matrix(U)
    return U.row, U.col, U.data


def cone_squares(qp: ConicQP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cone, variable, coefficient) of the quadratic form sum_k>=1 a_k^2 x_jk^2 - a_0^2 x_j0^2 of
    each cone, cone by cone (zero coefficients left out)."""
    index = qp.cone_index
    n_cones, d = index.shape
    coef = qp.cone_coef ** 2
    coef[:, 0] *= -1.0
    keep = (coef != 0).ravel()
    return np.repeat(np.arange(n_cones), d)[keep], index.ravel()[keep], coef.ravel()[keep]


def file_header(qp: ConicQP, fmt: str) -> dict[str, str]:
    """What a reader of this model needs (see :func:`provenance`), as ordered key -> text."""
    out = provenance(qp.problem, qp.formulation, fmt, list_mu=True)
    out["formulation"] = f"{qp.formulation}: {qp.description}"
    out["relaxation"] = ("relaxed: no De Saxce term mu ||u_t||, so the optimum solves the relaxed CCP "
                         "K ∋ gamma ⊥ N gamma + r ∈ K^* (a sliding contact separates with u_n = mu ||u_t||), "
                         "not the exact Coulomb law" if qp.relaxed else "exact")
    for b in qp.blocks:
        scale = repr(b.scale) if np.ndim(b.scale) == 0 else \
            f"({repr(float(np.max(b.scale)))} s_i, s_i of its contact in contact_scales)"
        out[f"variables {b.name}"] = f"x[{b.start}:{b.start + b.size}] = {b.name} / {scale} [{b.unit}]: {b.meaning}"
    out["objective"] = (f"formulation objective = {qp.objective_scale!r} * (file objective) + "
                        f"{qp.objective_offset!r} [J]")
    out["cones"] = ("cone i (named after contact i) is (a_0 x[j_0], ..., a_d-1 x[j_d-1]) in the second-order "
                    "cone z_0 >= ||z_1:||; as a quadratic constraint sum_k>=1 (a_k x_jk)^2 - (a_0 x_j0)^2 <= 0 "
                    "with x_j0 >= 0")
    out.update(qp.notes)
    return out


# --------------------------------------------------------------------------- provenance
def _mu_text(mu: np.ndarray) -> str:
    if np.all(mu == mu[0]):
        return f"{float(mu[0])!r} for all {mu.shape[0]} contacts"
    return "per contact, in contact order: " + " ".join(map(repr, mu.tolist()))


def _file_name(source: str) -> str:
    """``source`` without its folders when it is a path (a scene's or generator's name is kept)."""
    return source.replace("\\", "/").rsplit("/", 1)[-1] if "/" in source or "\\" in source else source


def provenance(problem: TimeStepProblem, formulation: str, fmt: str, *, list_mu: bool) -> dict[str, str]:
    """The facts every exported file carries, as ordered key -> one-line text.

    ``list_mu``: spell out the friction coefficients (for formats that do not store mu as data)."""
    from workbench import __version__
    meta = problem.metadata
    out = {
        "exported_by": f"contact-workbench {__version__} (workbench.export, format {fmt})",
        "problem": problem.name or "(unnamed)",
        # the file's name only: an export travels, the folders of the machine that wrote it do not
        "source": _file_name(str(meta.get("source") or meta.get("scene") or "generated in memory")),
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
