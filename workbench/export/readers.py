"""Independent readers of the exported model files, in the library so that ``workbench check-export``
can use them: a CBF v3 file parsed here from the CBF specification (independent of the workbench's
writer, :func:`read_cbf`) and solved by Clarabel at its default settings (:func:`clarabel_cbf`), and an
LP or MPS file parsed by HiGHS's reader and solved by Clarabel (:func:`highs_clarabel`; HiGHS takes no
quadratic constraints, so the pyramid models only). Each gives a :class:`Reading`: the file's optimum
as the reader finds it (None when it did not solve), the reader's status and its seconds. The
benchmarks' other readers (MOSEK's, SCIP's, HiGHS's own solver) are in benchmarks/export_readers.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["Reading", "TIME_LIMIT", "read_cbf", "rotated_to_second_order", "clarabel_minimum", "bounded_rows",
           "clarabel_cbf", "highs_clarabel"]

#: seconds a reader may take on one file (a limit, not a tolerance: the readers' defaults are kept)
TIME_LIMIT = 60.0


@dataclass(frozen=True)
class Reading:
    value: float | None     # the file's optimal objective (None: not solved)
    status: str             # the reader's own status word
    seconds: float


def read_cbf(path) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray, list, list]:
    """A CBF v3 file (the keywords VAR, CON, OBJSENSE MIN, OBJACOORD, ACOORD, BCOORD; domains F, L+, L-, L=, Q,
    QR) as (c, A, b, variable domains, row domains): min c^T x s.t. A x + b in the row domains, x in the
    variable domains; each domain list holds (domain, count) runs. Written from the CBF v3 specification,
    independent of the workbench's writer."""
    with open(path, encoding="utf-8") as f:
        lines = iter([line.strip() for line in f if not line.startswith("#")])
    sections = {}
    for key in lines:
        if key in ("VAR", "CON"):
            size, runs = map(int, next(lines).split())
            sections[key] = size, [(dom, int(k)) for dom, k in (next(lines).split() for _ in range(runs))]
        elif key in ("OBJACOORD", "BCOORD", "ACOORD"):
            sections[key] = np.array([next(lines).split() for _ in range(int(next(lines)))], dtype=float)
        elif key == "OBJSENSE" and next(lines) != "MIN":
            raise ValueError(f"{path}: only OBJSENSE MIN is read here")
    (n, var_dom), (m, con_dom) = sections["VAR"], sections["CON"]
    c, b = np.zeros(n), np.zeros(m)
    obj, bc, a = (sections.get(k, np.zeros((0, w))) for k, w in (("OBJACOORD", 2), ("BCOORD", 2), ("ACOORD", 3)))
    np.add.at(c, obj[:, 0].astype(int), obj[:, 1])
    np.add.at(b, bc[:, 0].astype(int), bc[:, 1])
    A = sp.csr_matrix((a[:, 2], (a[:, 0].astype(int), a[:, 1].astype(int))), shape=(m, n))
    return c, A, b, var_dom, con_dom


def rotated_to_second_order(size: int) -> sp.csr_matrix:
    """T with (T z) in Q^size exactly when 2 z_0 z_1 >= ||z_2:||^2, z_0, z_1 >= 0 (T = T^-1)."""
    T = sp.identity(size, format="lil")
    T[0, 0] = T[0, 1] = T[1, 0] = 1 / np.sqrt(2)
    T[1, 1] = -1 / np.sqrt(2)
    return T.tocsr()


def clarabel_minimum(c, A_rows, b_rows, cones, *, P=None, offset: float = 0.0, tol: float | None = None,
                     time_limit: float = TIME_LIMIT) -> Reading:
    """min 1/2 x^T P x + c^T x + offset s.t. b - A x in the cones (Clarabel's form; P symmetric, none: 0), by
    Clarabel at its default settings or, with ``tol``, tol_gap_abs = tol_gap_rel = tol_feas = tol. (On the
    packings' files the optimum it returns was the same to 1e-11 relative with one thread or all, and with its
    qdldl or faer factorisation.)"""
    import clarabel
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.time_limit = time_limit
    if tol is not None:
        settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    n = c.shape[0]
    P = sp.csc_matrix((n, n)) if P is None else sp.triu(P, format="csc")     # Clarabel reads P's upper triangle
    t0 = time.perf_counter()
    sol = clarabel.DefaultSolver(P, c, sp.csc_matrix(sp.vstack(A_rows)), np.concatenate(b_rows), cones,
                                 settings).solve()
    status = str(sol.status)
    x = np.array(sol.x)
    value = float(0.5 * x @ (P @ x + sp.triu(P, 1).T @ x) + c @ x + offset) if status == "Solved" else None
    return Reading(value, status, time.perf_counter() - t0)


def bounded_rows(A, lower, upper) -> tuple[list, list, list]:
    """lower <= A x <= upper (infinite sides left out) as Clarabel rows (A_rows, b_rows, cones): the rows with
    lower = upper in the zero cone, each finite side in the nonnegative cone."""
    import clarabel
    A, lower, upper = sp.csr_matrix(A), np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    eq = lower == upper
    out: tuple[list, list, list] = ([], [], [])
    for mask, sign, bound, cone in ((eq, 1.0, upper, clarabel.ZeroConeT), (np.isfinite(lower) & ~eq, -1.0, lower,
                                    clarabel.NonnegativeConeT), (np.isfinite(upper) & ~eq, 1.0, upper,
                                                                 clarabel.NonnegativeConeT)):
        if mask.any():            # Clarabel's s = b - A x: = upper -> s = 0; >= lower -> s = A x - lower >= 0
            for part, item in zip(out, (sign * A[mask], sign * bound[mask], cone(int(mask.sum())))):
                part.append(item)
    return out


def clarabel_cbf(path, tol: float | None = None) -> Reading:
    """The optimum of a CBF file (:func:`read_cbf`) by Clarabel (:func:`clarabel_minimum`)."""
    import clarabel
    c, A, b, var_dom, con_dom = read_cbf(path)
    rows, rhs, cones = [], [], []

    def add(Ab, bb, cone):               # Ab x + bb in the cone: Clarabel's b - A x = s with A = -Ab, b = bb
        rows.append(-Ab)
        rhs.append(bb)
        cones.append(cone)

    start = 0
    for dom, k in var_dom:
        if dom not in ("F", "L+"):
            raise ValueError(f"{path}: variable domain {dom} is not read here")
        if dom == "L+":
            add(sp.identity(c.shape[0], format="csr")[start:start + k], np.zeros(k), clarabel.NonnegativeConeT(k))
        start += k
    start = 0
    for dom, k in con_dom:
        Ab, bb = A[start:start + k], b[start:start + k]
        if dom == "L-":
            add(-Ab, -bb, clarabel.NonnegativeConeT(k))
        elif dom == "QR":
            T = rotated_to_second_order(k)
            add(T @ Ab, T @ bb, clarabel.SecondOrderConeT(k))
        else:
            add(Ab, bb, {"L=": clarabel.ZeroConeT, "L+": clarabel.NonnegativeConeT, "Q": clarabel.SecondOrderConeT}[dom](k))
        start += k
    return clarabel_minimum(c, rows, rhs, cones, tol=tol)


def highs_clarabel(path, tol: float | None = None) -> Reading:
    """An LP/MPS file parsed by HiGHS (its default reader settings, which drop |entries| below 1e-9 and say so),
    the model HiGHS holds (min 1/2 x^T Q x + c^T x + offset, row and column bounds) solved by Clarabel
    (:func:`clarabel_minimum`)."""
    import highspy
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if h.readModel(str(path)) not in (highspy.HighsStatus.kOk, highspy.HighsStatus.kWarning):
        return Reading(None, "read error", 0.0)
    model = h.getModel()
    lp, hess = model.lp_, model.hessian_
    if lp.sense_ != highspy.ObjSense.kMinimize:
        raise ValueError(f"{path}: only minimisation is read here")
    n, m = lp.num_col_, lp.num_row_
    a = lp.a_matrix_
    compressed = sp.csc_matrix if a.format_ == highspy.MatrixFormat.kColwise else sp.csr_matrix
    A = compressed((a.value_, a.index_, a.start_), shape=(m, n))
    P = None
    if hess.dim_:
        Q = sp.csc_matrix((hess.value_, hess.index_, hess.start_), shape=(n, n))
        # HiGHS's triangular Hessian holds one triangle of the symmetric Q (its objective is 1/2 x^T Q x)
        P = Q if hess.format_ == highspy.HessianFormat.kSquare else Q + Q.T - sp.diags(Q.diagonal())
    A_rows, b_rows, cones = bounded_rows(A, lp.row_lower_, lp.row_upper_)
    for part, more in zip((A_rows, b_rows, cones), bounded_rows(sp.identity(n), lp.col_lower_, lp.col_upper_)):
        part += more
    return clarabel_minimum(np.array(lp.col_cost_), A_rows, b_rows, cones, P=P, offset=lp.offset_, tol=tol)
