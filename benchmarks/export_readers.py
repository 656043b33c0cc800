"""Independent readers of the exported model files, each solving at its DEFAULT settings (only a time
limit and silence set): what `python -m benchmarks.bench_export --readers` measures and tests/test_export.py
asserts.

- ``clarabel``: a CBF v3 file parsed here from the CBF specification (independent of the workbench's
  writer, :func:`read_cbf`) and fed to Clarabel;
- ``mosek+clarabel``: a PTF or .task file parsed by MOSEK's own reader (no licence needed), the parsed task
  taken out through MOSEK's API and solved by Clarabel (MOSEK cannot optimise without a licence);
- ``highs``: an LP or MPS file read and solved by HiGHS (its QP solver: pyramid models only, since HiGHS
  takes no quadratic constraints);
- ``scip``: an LP, MPS or AMPL .nl file read and solved by SCIP (pyscipopt).

Each returns a :class:`Reading`: the file's optimal objective as the reader reports it (None when it did
not solve), the reader's status and the seconds it took. Mapping it back to physical units uses the
file's header (objective_scale, objective_offset), never the reader's own claim of accuracy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["Reading", "READERS", "read_cbf", "clarabel_cbf", "mosek_clarabel", "solve_mosek_task", "highs", "scip",
           "available", "TIME_LIMIT"]

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


def clarabel_minimum(c, A_rows, b_rows, cones, *, tol: float | None = None,
                     time_limit: float = TIME_LIMIT) -> Reading:
    """min c^T x s.t. b - A x in the cones (Clarabel's form), by Clarabel at its default settings or, with
    ``tol``, tol_gap_abs = tol_gap_rel = tol_feas = tol. (On the packings' files the optimum it returns was
    the same to 1e-11 relative with one thread or all, and with its qdldl or faer factorisation.)"""
    import clarabel
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.time_limit = time_limit
    if tol is not None:
        settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    n = c.shape[0]
    t0 = time.perf_counter()
    sol = clarabel.DefaultSolver(sp.csc_matrix((n, n)), c, sp.csc_matrix(sp.vstack(A_rows)),
                                 np.concatenate(b_rows), cones, settings).solve()
    status = str(sol.status)
    return Reading(float(c @ np.array(sol.x)) if status == "Solved" else None, status, time.perf_counter() - t0)


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


def solve_mosek_task(task, tol: float | None = None) -> Reading:
    """Minimise the problem a MOSEK Task holds (linear objective, variable bounds, affine conic constraints
    in the domains MOSEK's CBF reader creates) with Clarabel (:func:`clarabel_minimum`); the value includes
    the task's constant term."""
    import clarabel
    import mosek

    n = task.getnumvar()
    if task.getnumcon() or task.getnumbarvar() or task.getobjsense() != mosek.objsense.minimize:
        raise ValueError("the task has linear constraints, matrix variables or is not a minimisation")
    c = np.array(task.getc())
    F_i, F_j, F_v = task.getafefnumnz() and task.getafeftrip() or ([], [], [])
    F = sp.csr_matrix((F_v, (F_i, F_j)), shape=(task.getnumafe(), n))
    g = np.array(task.getafegslice(0, task.getnumafe()))
    nonneg_rows = []
    keys, lo, _ = task.getvarboundslice(0, n)
    for j, (key, low) in enumerate(zip(keys, lo)):
        if not (key == mosek.boundkey.fr or key == mosek.boundkey.lo and low == 0.0):
            raise ValueError(f"variable {j}: a bound other than free or >= 0")
        if key == mosek.boundkey.lo:
            nonneg_rows.append(sp.csr_matrix(([1.0], ([0], [j])), shape=(1, n)))
    A_rows, b_rows, cones = [], [], []
    if nonneg_rows:
        A_rows.append(-sp.vstack(nonneg_rows))
        b_rows.append(np.zeros(len(nonneg_rows)))
        cones.append(clarabel.NonnegativeConeT(len(nonneg_rows)))
    for i in range(task.getnumacc()):
        idx = np.array(task.getaccafeidxlist(i))
        Fi, gi = F[idx], g[idx] - np.array(task.getaccb(i))      # F x + g - b in the domain
        dom = task.getaccdomain(i)
        kind, size = task.getdomaintype(dom), task.getdomainn(dom)
        if kind == mosek.domaintype.rquadratic_cone:      # 2 z0 z1 >= ||z2:||^2 -> a second-order cone
            T = rotated_to_second_order(size)
            Fi, gi = T @ Fi, T @ gi
            cones.append(clarabel.SecondOrderConeT(size))
        elif kind in (mosek.domaintype.quadratic_cone, mosek.domaintype.rzero, mosek.domaintype.rplus):
            cones.append({mosek.domaintype.quadratic_cone: clarabel.SecondOrderConeT, mosek.domaintype.rzero:
                          clarabel.ZeroConeT, mosek.domaintype.rplus: clarabel.NonnegativeConeT}[kind](size))
        else:
            raise ValueError(f"unexpected MOSEK domain {kind}")
        A_rows.append(-Fi)                                # s = F x + g in K  <=>  -F x + s = g
        b_rows.append(gi)
    out = clarabel_minimum(c, A_rows, b_rows, cones, tol=tol)
    return out if out.value is None else Reading(out.value + task.getcfix(), out.status, out.seconds)


def mosek_clarabel(path, tol: float | None = None) -> Reading:
    """A PTF/.task file parsed by MOSEK's reader, solved by Clarabel (:func:`solve_mosek_task`)."""
    import mosek
    with mosek.Task() as task:
        task.readdata(str(path))
        return solve_mosek_task(task, tol=tol)


def highs(path) -> Reading:
    """An LP/MPS file by HiGHS at its default settings (a time limit set)."""
    import highspy
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", TIME_LIMIT)
    # kWarning: HiGHS drops |entries| below 1e-9 (round-off of the factor times the pyramid's edges), and says so
    if h.readModel(str(path)) not in (highspy.HighsStatus.kOk, highspy.HighsStatus.kWarning):
        return Reading(None, "read error", 0.0)
    t0 = time.perf_counter()
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    return Reading(h.getInfo().objective_function_value if status == "Optimal" else None, status,
                   time.perf_counter() - t0)


def scip(path) -> Reading:
    """An LP/MPS/NL file by SCIP at its default settings (a time limit set)."""
    import pyscipopt
    model = pyscipopt.Model()
    model.hideOutput()
    model.readProblem(str(path))
    model.setParam("limits/time", TIME_LIMIT)
    t0 = time.perf_counter()
    model.optimize()
    status = model.getStatus()
    return Reading(model.getObjVal() if status == "optimal" else None, status, time.perf_counter() - t0)


#: format -> (reader name, function of a path, the Python package it needs, formulations it can solve)
READERS: dict[str, list[tuple[str, object, str, tuple[str, ...]]]] = {
    "cbf": [("clarabel", clarabel_cbf, "clarabel", ("dual", "primal", "lcp-pyramid", "lcp-pyramid-primal"))],
    "ptf": [("mosek+clarabel", mosek_clarabel, "mosek", ("dual", "primal", "lcp-pyramid", "lcp-pyramid-primal"))],
    "task": [("mosek+clarabel", mosek_clarabel, "mosek", ("dual", "primal", "lcp-pyramid", "lcp-pyramid-primal"))],
    "lp": [("highs", highs, "highspy", ("lcp-pyramid", "lcp-pyramid-primal")),
           ("scip", scip, "pyscipopt", ("dual", "primal", "lcp-pyramid", "lcp-pyramid-primal"))],
    "mps": [("highs", highs, "highspy", ("lcp-pyramid", "lcp-pyramid-primal")),
            ("scip", scip, "pyscipopt", ("dual", "primal", "lcp-pyramid", "lcp-pyramid-primal"))],
    "nl": [("scip", scip, "pyscipopt", ("dual", "primal", "lcp-pyramid", "lcp-pyramid-primal"))],
}


def available(package: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(package) is not None
