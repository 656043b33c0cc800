"""Free-format MPS (``.mps``) with QUADOBJ and QCMATRIX sections (CPLEX, Gurobi, SCIP, HiGHS for the QP
part, read it).

Sections: ROWS (objective ``obj``, the cone rows ``cone<i>`` as L rows with right-hand side 0, the
linear rows as E/G/L), COLUMNS (column by column, every variable at least once: an explicit
``obj 0`` entry declares variables without linear terms), RHS, BOUNDS (``FR`` for the free
variables; MPS's default lower bound is 0), QUADOBJ (the upper triangle of P, meaning 1/2 x^T P x),
then one QCMATRIX per cone with its diagonal quadratic form (a_k^2 for the tangential entries,
-a_0^2 for the head: x^T Q x <= 0, no factor 1/2 in QCMATRIX). The model is written in the form
:func:`workbench.export.model.quadratic_form` gives (split objective, implied apex rows, as the LP export). As in
the LP export the cone head is nonnegative through its default bound. Names carry the contact
grouping (see workbench.export.lp); the header is written as ``*`` comment lines.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from formulations.qp import ConicQP
from workbench.export.model import cone_squares, file_header, objective_triangle, quadratic_form
from workbench.export.text import comments, floats, grouped, join_columns, write_lines

_ROW_TYPE = {"=": "E", ">": "G", "<": "L"}


def write(model: ConicQP, path: os.PathLike | str) -> list[Path]:
    """Write ``model`` as a free MPS file (objective split, see the module docstring); returns the files
    written."""
    model = quadratic_form(model)
    names = model.names
    n_cones = model.cone_names.shape[0]
    row_names = np.concatenate([["obj"], model.cone_names, model.row_names])
    lines = comments(file_header(model, "mps"), "*")
    lines += [f"NAME {(model.problem.name or 'problem').replace(' ', '_')}_{model.formulation}", "ROWS", " N obj"]
    lines += np.char.add(" L ", model.cone_names).tolist()
    lines += join_columns([f" {_ROW_TYPE[s]}" for s in model.sense.tolist()], model.row_names.tolist())

    # COLUMNS: objective row 0, linear row r at 1 + n_cones + r; explicit zero for empty columns
    A = sp.coo_matrix(model.A)
    nz = np.flatnonzero(model.c)
    rows = np.concatenate([np.zeros(nz.shape[0], dtype=np.int64), 1 + n_cones + A.row])
    cols = np.concatenate([nz, A.col])
    vals = np.concatenate([model.c[nz], A.data])
    empty = np.setdiff1d(np.arange(model.n), cols)
    rows = np.concatenate([rows, np.zeros(empty.shape[0], dtype=np.int64)])
    cols = np.concatenate([cols, empty])
    vals = np.concatenate([vals, np.zeros(empty.shape[0])])
    order = np.lexsort((rows, cols))
    lines.append("COLUMNS")
    lines += join_columns([" "] * order.shape[0], names[cols[order]].tolist(), row_names[rows[order]].tolist(),
                          floats(vals[order]))
    lines.append("RHS")
    rhs_nz = np.flatnonzero(model.rhs)
    lines += join_columns([" rhs"] * rhs_nz.shape[0], model.row_names[rhs_nz].tolist(), floats(model.rhs[rhs_nz]))
    lines.append("BOUNDS")
    lines += np.char.add(" FR bnd ", names[~model.nonneg]).tolist()
    qi, qj, qv = objective_triangle(model)
    if qv.size:
        lines.append("QUADOBJ")
        lines += join_columns([" "] * qv.shape[0], names[qi].tolist(), names[qj].tolist(), floats(qv))
    cone, var, coef = cone_squares(model)
    counts = np.bincount(cone, minlength=n_cones)
    lines += grouped(np.char.add("QCMATRIX ", model.cone_names).tolist(), counts,
                     join_columns([" "] * var.shape[0], names[var].tolist(), names[var].tolist(), floats(coef)))
    lines.append("ENDATA")
    return [write_lines(path, lines)]
