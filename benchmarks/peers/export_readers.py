"""Independent readers of the exported model files, each solving at its DEFAULT settings (only a time
limit and silence set): what `python -m benchmarks.timing.bench_export --readers` measures and tests/test_export.py
asserts.

- ``clarabel``: a CBF v3 file parsed from the CBF specification (independent of the workbench's
  writer, :func:`read_cbf`, in workbench.export.readers for ``workbench check-export``) and fed to Clarabel;
- ``mosek+clarabel``: a PTF or .task file parsed by MOSEK's own reader (no licence needed), the parsed task
  taken out through MOSEK's API and solved by Clarabel (MOSEK cannot optimise without a licence), a quadratic
  objective's rotated-cone epigraph handed back as the objective (:func:`_objective_epigraph`);
- ``highs``: an LP or MPS file read and solved by HiGHS (its QP solver: pyramid models only, since HiGHS
  takes no quadratic constraints);
- ``scip``: an LP, MPS or AMPL .nl file read and solved by SCIP (pyscipopt);
- ``highs+clarabel``: an LP or MPS file parsed by HiGHS's reader (highspy; pyramid models only), the parsed
  model (rows, bounds, Hessian) taken out through HiGHS's API and solved by Clarabel;
- ``scip+clarabel``: an LP, MPS or .nl file parsed by SCIP's readers, the parsed model (its linear and
  quadratic constraints, in SCIP's canonical form) taken out through pyscipopt and solved by Clarabel, each
  quadratic constraint as the second-order cone it describes (:func:`scip_clarabel`).

A "parser+solver" reader tests that another program reads the file as the model it is, and a conic solver at
its defaults reaches the optimum of what was read; neither program is the workbench's.

Each returns a :class:`Reading`: the file's optimal objective as the reader reports it (None when it did
not solve), the reader's status and the seconds it took. Mapping it back to physical units uses the
file's header (objective_scale, objective_offset), never the reader's own claim of accuracy.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from workbench.export.readers import (TIME_LIMIT, Reading, bounded_rows, clarabel_cbf,  # noqa: F401 - names of
                                      clarabel_minimum, highs_clarabel, read_cbf,       # this module's READERS
                                      rotated_to_second_order)

__all__ = ["Reading", "READERS", "read_cbf", "clarabel_cbf", "mosek_clarabel", "solve_mosek_task", "highs", "scip",
           "highs_clarabel", "scip_clarabel", "available", "TIME_LIMIT"]


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
    accs = [(np.array(task.getaccafeidxlist(i)), task.getaccdomain(i)) for i in range(task.getnumacc())]
    epigraph = _objective_epigraph(task, c, F, g, accs, nonneg_rows)
    P, offset = None, task.getcfix()
    if epigraph is not None:
        skip, t, P, q, constant = epigraph
        c = c + q
        offset += constant
    for i, (idx, dom) in enumerate(accs):
        if epigraph is not None and i == skip:
            continue
        Fi, gi = F[idx], g[idx] - np.array(task.getaccb(i))      # F x + g - b in the domain
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
    if epigraph is not None:                               # t is in no other row: it leaves the problem
        A_rows, c, P = _without_column(t, A_rows, c, P)
    return clarabel_minimum(c, A_rows, b_rows, cones, P=P, offset=offset, tol=tol)


def _without_column(j: int, A_rows: list, c: np.ndarray, P) -> tuple[list, np.ndarray, sp.csr_matrix]:
    """The problem without variable ``j`` (an objective's epigraph variable, handed back as P)."""
    keep = np.arange(c.shape[0]) != j
    return [sp.csc_matrix(A)[:, keep] for A in A_rows], c[keep], P[keep][:, keep]


def _objective_epigraph(task, c, F, g, accs, nonneg_rows):
    """The epigraph on which a conic writer puts a convex quadratic objective, recognised as SCIP's readers' is
    in :func:`scip_clarabel`: c = c_t e_t (c_t > 0, t free) and one rotated cone (a t, z1, F2 x + g2) with a > 0,
    z1 > 0 constant and t in no other row, i.e. the objective c_t ||F2 x + g2||^2 / (2 a z1). Returns (that
    cone's index, t, P, q, constant) with the objective 1/2 x^T P x + q^T x + constant, or None when the task
    has no such epigraph (its cones then go to Clarabel as they are)."""
    import mosek
    (t,) = np.flatnonzero(c) if np.count_nonzero(c) == 1 else (None,)
    if t is None or c[t] <= 0 or nonneg_rows and any(row.indices[0] == t for row in nonneg_rows):
        return None
    holding = [i for i, (idx, _) in enumerate(accs) if F[idx][:, t].nnz]
    if len(holding) != 1:
        return None
    i = holding[0]
    idx, dom = accs[i]
    if task.getdomaintype(dom) != mosek.domaintype.rquadratic_cone:
        return None
    Fi, gi = F[idx].tocsr(), g[idx] - np.array(task.getaccb(i))
    row0, row1 = Fi[0], Fi[1]
    a = row0[0, t]
    if row0.nnz != 1 or a <= 0 or gi[0] != 0 or row1.nnz or gi[1] <= 0 or Fi[2:][:, t].nnz:
        return None
    F2, g2, scale = Fi[2:], gi[2:], c[t] / (a * gi[1])
    return i, t, scale * (F2.T @ F2), scale * (F2.T @ g2), 0.5 * scale * float(g2 @ g2)


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
    """An LP/MPS/NL file by SCIP at its default settings (a time limit set, in CPU seconds: SCIP's default
    wall clock made the outcome depend on the machine's load; a case of 6 s of CPU hit 60 s at load 12)."""
    import pyscipopt
    model = pyscipopt.Model()
    model.hideOutput()
    model.readProblem(str(path))
    model.setParam("timing/clocktype", 1)    # 1: CPU user seconds, 2 (default): wall clock
    model.setParam("limits/time", TIME_LIMIT)
    t0 = time.perf_counter()
    model.optimize()
    status = model.getStatus()
    return Reading(model.getObjVal() if status == "optimal" else None, status, time.perf_counter() - t0)


def _quadratic_terms(model, cons, col: dict, n: int, lhs: float, rhs: float):
    """(j, q, l, bound) of a quadratic constraint of SCIP without products of two variables, lhs <= sum q_k x_jk^2
    + l^T x <= rhs with one side infinite, written as sum q_k x_jk^2 + l^T x <= bound."""
    bilinear, quadratic, linear = model.getTermsQuadratic(cons)
    if any(coef != 0 for _, _, coef in bilinear):
        raise ValueError(f"constraint {cons.name}: products of two variables are not read here")
    sign = 1.0 if lhs == -np.inf else -1.0
    j = np.array([col[v.name] for v, _, _ in quadratic])
    l = np.zeros(n)
    np.add.at(l, [col[v.name] for v, _, _ in quadratic] + [col[v.name] for v, _ in linear],
              sign * np.array([lc for _, _, lc in quadratic] + [c for _, c in linear]))
    return j, sign * np.array([sq for _, sq, _ in quadratic]), l, rhs if sign > 0 else -lhs


def _cone_rows(name: str, j, q, l, bound: float, lower: np.ndarray):
    """(A, b, cone) of Clarabel's rows for sum q_k x_jk^2 + l^T x <= bound (:func:`_quadratic_terms`) as the
    second-order cone it describes:

    * every q_k > 0 (convex): sum q_k x_jk^2 <= w = bound - l^T x, i.e. (w/2, 1, sqrt(q) x_j) in the rotated cone;
    * one q_0 < 0 on a variable x_j0 >= 0, l = 0, bound = 0: (sqrt(-q_0) x_j0, sqrt(q_k) x_jk) in Q (a cone as LP,
      MPS and NL files write it)."""
    import clarabel
    n, k = lower.shape[0], j.shape[0]
    if np.all(q > 0):
        Z = sp.vstack([sp.csr_matrix(-l / 2), sp.csr_matrix((1, n)),
                       sp.csr_matrix((np.sqrt(q), (np.arange(k), j)), shape=(k, n))], format="csr")
        T = rotated_to_second_order(k + 2)
        return -(T @ Z), T @ np.concatenate([[bound / 2, 1.0], np.zeros(k)]), clarabel.SecondOrderConeT(k + 2)
    head = np.flatnonzero(q < 0)
    if head.shape[0] == 1 and not l.any() and bound == 0 and lower[j[head[0]]] >= 0:
        order = np.concatenate([head, np.flatnonzero(q > 0)])
        size = order.shape[0]
        Z = sp.csr_matrix((np.sqrt(np.abs(q[order])), (np.arange(size), j[order])), shape=(size, n))
        return -Z, np.zeros(size), clarabel.SecondOrderConeT(size)
    raise ValueError(f"constraint {name}: a quadratic constraint that is not a second-order cone")


def scip_clarabel(path, tol: float | None = None) -> Reading:
    """An LP/MPS/NL file parsed by SCIP, solved by Clarabel (:func:`clarabel_minimum`). SCIP's problem is taken
    after its transformation with presolving off (nothing removed or aggregated): that puts the expressions an
    .nl file holds (constant times power) in the canonical form SCIP recognises as quadratic. Linear
    constraints become rows, quadratic ones second-order cones (:func:`_cone_rows`), except the one on which
    SCIP's readers put a quadratic objective (sum q_k x_jk^2 - t <= 0, t free, with objective coefficient 1 and
    in no other constraint): it goes back to Clarabel as the objective 1/2 x^T P x, P_jkjk = 2 q_k, and t is
    dropped. Any other kind of constraint is refused."""
    import pyscipopt
    model = pyscipopt.Model()
    model.hideOutput()
    model.readProblem(str(path))
    model.setPresolve(pyscipopt.SCIP_PARAMSETTING.OFF)
    model.presolve()
    if model.getObjectiveSense() != "minimize":
        raise ValueError(f"{path}: only minimisation is read here")
    variables = model.getVars(transformed=True)
    n, inf = len(variables), model.infinity()
    col = {v.name: j for j, v in enumerate(variables)}
    finite = lambda a: np.where(a >= inf, np.inf, np.where(a <= -inf, -np.inf, a))  # noqa: E731  (SCIP's is 1e20)
    lower, upper = finite(np.array([[v.getLbGlobal(), v.getUbGlobal()] for v in variables]).T)
    c = np.array([v.getObj() for v in variables])
    A_rows, b_rows, cones = bounded_rows(sp.identity(n), lower, upper)
    lin_rows, lin_lo, lin_up, P, epigraph = [], [], [], None, None
    for cons in model.getConss(transformed=True):
        lhs, rhs = finite(np.array([model.getLhs(cons), model.getRhs(cons)]))
        if cons.getConshdlrName() == "linear":
            vals = model.getValsLinear(cons)
            lin_rows.append(sp.csr_matrix((list(vals.values()), ([0] * len(vals), [col[k] for k in vals])),
                                          shape=(1, n)))
            lin_lo.append(lhs)
            lin_up.append(rhs)
        elif cons.getConshdlrName() == "nonlinear" and model.checkQuadraticNonlinear(cons) \
                and np.isinf([lhs, rhs]).any():
            j, q, l, bound = _quadratic_terms(model, cons, col, n, lhs, rhs)
            t = np.flatnonzero(l)
            if P is None and t.shape[0] == 1 and l[t[0]] == -1 and c[t[0]] == 1 and bound == 0 and np.all(q > 0) \
                    and np.isinf([lower[t[0]], upper[t[0]]]).all():
                P, epigraph = sp.csr_matrix((2 * q, (j, j)), shape=(n, n)), t[0]
                continue
            for part, item in zip((A_rows, b_rows, cones), _cone_rows(cons.name, j, q, l, bound, lower)):
                part.append(item)
        else:
            raise ValueError(f"{path}: constraint {cons.name} ({cons.getConshdlrName()}) is not read here")
    if lin_rows:
        for part, more in zip((A_rows, b_rows, cones), bounded_rows(sp.vstack(lin_rows), lin_lo, lin_up)):
            part += more
    if epigraph is not None:
        if any(sp.csc_matrix(A)[:, epigraph].nnz for A in A_rows):
            raise ValueError(f"{path}: the objective's variable {variables[epigraph].name} is in other constraints")
        A_rows, c, P = _without_column(epigraph, A_rows, c, P)
    return clarabel_minimum(c, A_rows, b_rows, cones, P=P, offset=model.getObjoffset(original=False), tol=tol)


#: every exported model formulation
ALL = ("dual", "primal", "lcp-pyramid", "lcp-pyramid-primal")
#: the pyramid models, the only ones without quadratic constraints (HiGHS takes no others)
PYRAMIDS = ("lcp-pyramid", "lcp-pyramid-primal")
#: format -> (reader name, function of a path, the Python package it needs, formulations it can solve)
READERS: dict[str, list[tuple[str, object, str, tuple[str, ...]]]] = {
    "cbf": [("clarabel", clarabel_cbf, "clarabel", ALL)],
    "ptf": [("mosek+clarabel", mosek_clarabel, "mosek", ALL)],
    "task": [("mosek+clarabel", mosek_clarabel, "mosek", ALL)],
    "lp": [("highs", highs, "highspy", PYRAMIDS), ("scip", scip, "pyscipopt", ALL),
           ("highs+clarabel", highs_clarabel, "highspy", PYRAMIDS),
           ("scip+clarabel", scip_clarabel, "pyscipopt", ALL)],
    "mps": [("highs", highs, "highspy", PYRAMIDS), ("scip", scip, "pyscipopt", ALL),
            ("highs+clarabel", highs_clarabel, "highspy", PYRAMIDS),
            ("scip+clarabel", scip_clarabel, "pyscipopt", ALL)],
    "nl": [("scip", scip, "pyscipopt", ALL), ("scip+clarabel", scip_clarabel, "pyscipopt", ALL)],
}


def available(package: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(package) is not None
