"""AMPL ``.nl`` (text "g" format) with the AMPL name files ``.col`` and ``.row``: every solver with an
AMPL/ASL or AMPL/MP driver (SCIP, Ipopt, Knitro, BARON, Gurobi's ampl driver, ...) reads it.

The problem is the model in the form :func:`workbench.export.model.quadratic_form` gives (split objective and the
cones' implied apex rows, as for LP/MPS):

    min  c^T x + 1/2 ||z||^2     s.t.  sum_k>=1 (a_ik x_jik)^2 - (a_i0 x_ji0)^2 <= 0   (cone i, contact i)
                                       F x - z = 0, the apex rows and the model's linear rows, x_j >= 0 where nonneg.

Layout (D. M. Gay, "Writing .nl files", and "Hooking your solver to AMPL", tables 3-5):

* variables reordered as AMPL requires: nonlinear in constraints and objective, nonlinear in
  constraints only, nonlinear in the objective only, then linear; header line 5 holds nlvc, nlvo,
  nlvb with AMPL's convention (nlvo counts from the first variable when some variables are nonlinear
  in the objective only). The ``.col`` file lists the variable names in that order (g12_t1 = contact 12,
  tangent 1; see workbench.export.lp), the ``.row`` file the constraint names then ``obj``;
* constraints: the nonlinear cone rows first, then the linear rows;
* segments C (expression graphs: o54 sum, o2 product, o5 power, n constant, v variable), O, r
  (bounds on the constraint bodies), b (variable bounds), k (cumulative Jacobian column counts),
  J (Jacobian sparsity with the linear coefficients, 0 for variables appearing only nonlinearly), G.

The format has no comment lines, so the model's header goes to ``PATH.json``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from formulations.qp import ConicQP
from workbench.export.model import cone_squares, file_header, objective_triangle, quadratic_form
from workbench.export.text import floats, grouped, ints, join_columns, prefixed, sidecar, write_lines

_RANGE = {"=": "4", ">": "2", "<": "1"}


def _sum(counts: np.ndarray, terms: list[str], heads: list[str]) -> list[str]:
    """Each group's expression: its heading, then the sum of its terms (o54 for 3 or more, o0 for 2)."""
    ops = np.where(counts >= 3, np.char.add("o54\n", counts.astype(str)), np.where(counts == 2, "o0", ""))
    ops = np.where(counts == 0, "n0", ops)
    first = [f"{h}\n{o}" if o else h for h, o in zip(heads, ops.tolist())]
    return grouped(first, counts, terms)


def _square_terms(v: np.ndarray, coef: np.ndarray) -> list[str]:
    """'coef * x_v ^ 2' as expression graphs."""
    return join_columns(["o2"] * v.shape[0], prefixed("n", floats(coef)), ["o5"] * v.shape[0],
                        prefixed("v", ints(v)), ["n2"] * v.shape[0], sep="\n")


def _product_terms(i: np.ndarray, j: np.ndarray, coef: np.ndarray) -> list[str]:
    """'coef * x_i * x_j' as expression graphs."""
    return join_columns(["o2"] * i.shape[0], prefixed("n", floats(coef)), ["o2"] * i.shape[0],
                        prefixed("v", ints(i)), prefixed("v", ints(j)), sep="\n")


def write(model: ConicQP, path: os.PathLike | str) -> list[Path]:
    """Write ``model`` as ``PATH`` (.nl), ``STUB.col``, ``STUB.row`` and ``PATH.json``."""
    model = quadratic_form(model)
    header = file_header(model, "nl")
    p = Path(path)
    n, n_cones = model.n, model.cone_names.shape[0]
    cone, cvar, ccoef = cone_squares(model)
    qi, qj, qv = objective_triangle(model)
    nl_con = np.zeros(n, dtype=bool)
    nl_con[cvar] = True
    nl_obj = np.zeros(n, dtype=bool)
    nl_obj[qi] = nl_obj[qj] = True
    classes = [nl_con & nl_obj, nl_con & ~nl_obj, nl_obj & ~nl_con, ~(nl_con | nl_obj)]
    order = np.concatenate([np.flatnonzero(c) for c in classes])      # new position -> model variable
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    nlvb, nlvc = int(classes[0].sum()), int(nl_con.sum())
    nlvo = nlvc + int(classes[2].sum()) if classes[2].any() else nlvb

    A = sp.coo_matrix(model.A)
    n_lin = A.shape[0]
    # Jacobian: cone rows (coefficient 0 for each variable of the cone), then linear rows
    j_row = np.concatenate([cone, n_cones + A.row])
    j_col = np.concatenate([pos[cvar], pos[A.col]])
    j_val = np.concatenate([np.zeros(cvar.shape[0]), A.data])
    jorder = np.lexsort((j_col, j_row))
    j_row, j_col, j_val = j_row[jorder], j_col[jorder], j_val[jorder]
    j_counts = np.bincount(j_row, minlength=n_cones + n_lin)
    col_counts = np.bincount(j_col, minlength=n)
    # objective gradient: linear terms and every variable of the quadratic part
    g_var = np.union1d(np.flatnonzero(model.c), np.flatnonzero(nl_obj))
    g_order = np.argsort(pos[g_var])
    g_var = g_var[g_order]
    ngrad = g_var.shape[0]

    lines = [f"g3 1 1 0\t# problem {model.problem.name or 'problem'} ({model.formulation})",
             f" {n} {n_cones + n_lin} 1 0 {int(np.sum(model.sense == '='))} 0\t"
             "# vars, constraints, objectives, ranges, eqns, lcons",
             f" {n_cones} {1 if qv.size else 0}\t# nonlinear constraints, objectives",
             " 0 0\t# network constraints: nonlinear, linear",
             f" {nlvc} {nlvo} {nlvb}\t# nonlinear vars in constraints, objectives, both",
             " 0 0 0 1\t# linear network variables; functions; arith, flags",
             " 0 0 0 0 0\t# discrete variables: binary, integer, nonlinear (b,c,o)",
             f" {j_row.shape[0]} {ngrad}\t# nonzeros in Jacobian, gradients",
             f" {max(len(s) for s in [*model.cone_names.tolist(), *model.row_names.tolist(), 'obj'])} "
             f"{max(len(s) for s in model.names.tolist())}\t# max name lengths: constraints, variables",
             " 0 0 0 0 0\t# common exprs: b,c,o,c1,o1"]
    # C segments: cones (sum of squares), then linear rows (no nonlinear part)
    lines += _sum(np.bincount(cone, minlength=n_cones), _square_terms(pos[cvar], ccoef),
                  [f"C{i}" for i in range(n_cones)])
    lines += [f"C{i}\nn0" for i in range(n_cones, n_cones + n_lin)]
    # O segment: 1/2 x^T P x = sum_i P_ii / 2 x_i^2 + sum_i<j P_ij x_i x_j
    diag = qi == qj
    terms = _square_terms(pos[qi[diag]], 0.5 * qv[diag]) + _product_terms(pos[qi[~diag]], pos[qj[~diag]], qv[~diag])
    lines += _sum(np.array([len(terms)]), terms, ["O0 0"])
    # r: cone bodies <= 0, then the linear rows
    lines += ["r"] + ["1 0"] * n_cones + join_columns([_RANGE[s] for s in model.sense.tolist()], floats(model.rhs))
    lines += ["b"] + np.where(model.nonneg[order], "2 0", "3").tolist()
    lines += [f"k{n - 1}"] + ints(np.cumsum(col_counts)[:-1])
    lines += grouped([f"J{i} {c}" for i, c in enumerate(j_counts.tolist())], j_counts,
                     join_columns(ints(j_col), floats(j_val)))
    if ngrad:
        lines += [f"G0 {ngrad}"] + join_columns(ints(pos[g_var]), floats(model.c[g_var]))
    stub = p.with_suffix("") if p.suffix.lower() == ".nl" else p
    files = [write_lines(p, lines),
             write_lines(Path(f"{stub}.col"), model.names[order].tolist()),
             write_lines(Path(f"{stub}.row"), [*model.cone_names.tolist(), *model.row_names.tolist(), "obj"])]
    header["nl_layout"] = ("variables reordered for AMPL (nonlinear first): the .col file lists them in file "
                           "order; constraints: cone rows, then the linear rows, as in the .row file")
    return files + [sidecar(p, header)]
