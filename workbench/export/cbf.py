"""Conic Benchmark Format, version 3 (``.cbf``): MOSEK, JuMP/MathOptInterface, CBLIB tools read it.

CBF has linear objectives only, so the quadratic term becomes an epigraph variable t (the last
variable) with a rotated second-order cone:

    min  t + c^T x     s.t.  (t, 1, F x) in QR = {z : 2 z_0 z_1 >= ||z_2:||^2, z_0, z_1 >= 0},

i.e. t >= 1/2 ||F x||^2 = 1/2 x^T P x with P = F^T F (:attr:`ConicQP.factor <formulations.qp.ConicQP.factor>`). Layout:

* VAR: x_0 .. x_n-1 then t; domain L+ (x >= 0) for the nonnegative variables, F (free) otherwise.
* CON rows, in this order: the friction cones, one ``Q d`` block per cone (rows a_ik x_jik, named
  cone i after contact i); the linear rows A x - rhs, sorted into L= / L+ / L- blocks (row order
  inside a block kept); the epigraph block ``QR p+2``: rows t, 1, F x.
* OBJACOORD: 1 for t and c; no constant (the header comments give the physical objective).

Comment lines (``#``) before VER carry the model's header (:func:`workbench.export.model.file_header`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from formulations.qp import ConicQP
from workbench.export.model import file_header
from workbench.export.text import comments, floats, ints, join_columns, write_lines


def _linear_domains(sense: np.ndarray) -> np.ndarray:
    """CBF domain of each linear row A x - rhs: L= (=), L+ (>=), L- (<=)."""
    return np.select([sense == "=", sense == ">"], ["L=", "L+"], "L-")


def _runs(labels: np.ndarray) -> list[str]:
    """'LABEL count' for each run of equal consecutive labels."""
    if labels.size == 0:
        return []
    starts = np.flatnonzero(np.concatenate(([True], labels[1:] != labels[:-1])))
    counts = np.diff(np.concatenate((starts, [labels.size])))
    return join_columns(labels[starts].tolist(), ints(counts))


def cbf_lines(model: ConicQP) -> list[str]:
    """The CBF text of ``model`` (without comments) as lines."""
    n = model.n
    t = n                                            # epigraph variable
    var_dom = np.where(model.nonneg, "L+", "F").tolist() + ["F"]
    var_runs = _runs(np.array(var_dom))

    # cone rows
    n_cones, d = model.cone_index.shape
    cone_rows = np.arange(n_cones * d)
    cone_keep = model.cone_coef.ravel() != 0
    rows = [cone_rows[cone_keep]]
    cols = [model.cone_index.ravel()[cone_keep]]
    vals = [model.cone_coef.ravel()[cone_keep]]
    con_blocks = [f"Q {d}"] * n_cones
    # linear rows, grouped by sense
    A = sp.coo_matrix(model.A)
    domains = _linear_domains(model.sense)
    order = np.argsort(domains, kind="stable")
    new_pos = np.empty(order.shape[0], dtype=np.int64)
    new_pos[order] = np.arange(order.shape[0])
    lin0 = n_cones * d
    rows.append(lin0 + new_pos[A.row])
    cols.append(A.col)
    vals.append(A.data)
    b_rows = [lin0 + new_pos]
    b_vals = [-model.rhs]
    con_blocks += _runs(domains[order])
    # epigraph (t, 1, F x) in QR
    F = sp.coo_matrix(model.factor)
    q0 = lin0 + A.shape[0]
    rows += [np.array([q0]), q0 + 2 + F.row]
    cols += [np.array([t]), F.col]
    vals += [np.array([1.0]), F.data]
    b_rows.append(np.array([q0 + 1]))
    b_vals.append(np.array([1.0]))
    con_blocks.append(f"QR {F.shape[0] + 2}")
    n_rows = q0 + 2 + F.shape[0]

    rows, cols, vals = (np.concatenate(x) for x in (rows, cols, vals))
    b_rows, b_vals = np.concatenate(b_rows), np.concatenate(b_vals)
    nz = b_vals != 0
    b_rows, b_vals = b_rows[nz], b_vals[nz]
    obj_j = np.concatenate((np.flatnonzero(model.c), [t]))
    obj_v = np.concatenate((model.c[model.c != 0], [1.0]))

    out = ["VER", "3", "", "OBJSENSE", "MIN", "", "VAR", f"{n + 1} {len(var_runs)}", *var_runs, "",
           "CON", f"{n_rows} {len(con_blocks)}", *con_blocks, "",
           "OBJACOORD", str(obj_j.shape[0]), *join_columns(ints(obj_j), floats(obj_v)), "",
           "ACOORD", str(rows.shape[0]), *join_columns(ints(rows), ints(cols), floats(vals)), ""]
    if b_rows.size:
        out += ["BCOORD", str(b_rows.shape[0]), *join_columns(ints(b_rows), floats(b_vals)), ""]
    return out


def write(model: ConicQP, path: os.PathLike | str) -> list[Path]:
    """Write ``model`` as CBF v3 with a comment header; returns the files written."""
    header = file_header(model, "cbf")
    header["cbf_layout"] = (f"variables x_0..x_{model.n - 1} as above, then the epigraph t = x_{model.n} "
                            "(t >= 1/2 x^T P x through (t, 1, F x) in QR); constraint rows: friction cones "
                            "(Q blocks, contact order), linear rows (L=, L+, L- blocks), epigraph (QR block)")
    return [write_lines(path, comments(header, "#") + cbf_lines(model))]
