"""CPLEX LP format (``.lp``) with a quadratic objective and quadratic constraints (CPLEX, Gurobi, SCIP,
HiGHS for the QP part, read it).

    Minimize
     obj: + c_j x_j ... + [ P_ii x_i^2 + 2 P_ij x_i * x_j ... ] / 2        (= c^T x + 1/2 x^T P x)
    Subject to
     cone<i>: [ a_1^2 x^2 + ... - a_0^2 x_head^2 ] <= 0                 (one per contact)
     <row>: + A_rj x_j ... (= | >= | <=) rhs                              (the model's rows, fac<k>, apex rows)
    Bounds
     <x> free                                                               (all but the nonnegative)
    End

The second-order cone of each contact is the quadratic constraint ||(a_k x_jk)_k>=1||^2 <= (a_0 x_j0)^2
together with x_j0 >= 0 (LP's default lower bound 0): the same convex set, which SCIP, Gurobi and CPLEX
recognise as a second-order cone. Each cone also gets its implied linear rows apx_/apn_cone<i>_<k>
(:func:`workbench.export.model.with_apex_rows`), which keep a reader's quadratic tolerance from opening the
apex; the objective is split (:func:`workbench.export.model.split_objective`). Names carry the contact grouping
(g12_n, g12_t1, g12_t2 = contact 12 of the dual; y7, u12_n, ... in the primal; y12_e3 = edge 3 of
contact 12's pyramid, row pyr12_e3 in the pyramid primal); no name starts with 'e' (LP reserves it for
exponents). Every term is on its own line (LP lines are limited to 510 characters). The header is
written as ``\\`` comment lines.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from formulations.qp import ConicQP
from workbench.export.model import cone_squares, file_header, objective_triangle, quadratic_form
from workbench.export.text import comments, floats, grouped, join_columns, signed, write_lines

_SENSE = {"=": "=", ">": ">=", "<": "<="}


def _quadratic_terms(names: np.ndarray, i: np.ndarray, j: np.ndarray, coef: np.ndarray) -> list[str]:
    """'+ c x^2' for i == j, '+ c x * y' otherwise (SCIP 9 reads 'x^2' but not 'x ^ 2')."""
    products = np.where(i == j, np.char.add(names[i], "^2"), np.char.add(np.char.add(names[i], " * "), names[j]))
    return join_columns(signed(coef), products.tolist())


def write(model: ConicQP, path: os.PathLike | str) -> list[Path]:
    """Write ``model`` as an LP file (objective split, see the module docstring); returns the files written."""
    model = quadratic_form(model)
    names = model.names
    lines = comments(file_header(model, "lp"), "\\") + ["Minimize", " obj:"]
    nz = np.flatnonzero(model.c)
    lines += join_columns(signed(model.c[nz]), names[nz].tolist())
    qi, qj, qv = objective_triangle(model)
    if qv.size:
        lines += [" + ["] + _quadratic_terms(names, qi, qj, np.where(qi == qj, qv, 2.0 * qv)) + ["] / 2"]
    elif not nz.size:
        lines.append(f"0 {names[0]}")
    lines.append("Subject to")
    cone, var, coef = cone_squares(model)
    counts = np.bincount(cone, minlength=model.cone_names.shape[0])
    lines += grouped([f" {c}: [" for c in model.cone_names.tolist()], counts,
                     _quadratic_terms(names, var, var, coef), ["] <= 0"] * counts.shape[0])
    if model.A.shape[0]:
        A = sp.csr_matrix(model.A)
        A.sort_indices()
        tails = join_columns([_SENSE[s] for s in model.sense.tolist()], floats(model.rhs))
        lines += grouped([f" {r}:" for r in model.row_names.tolist()], np.diff(A.indptr),
                         join_columns(signed(A.data), names[A.indices].tolist()), tails)
    lines.append("Bounds")
    lines += np.char.add(" ", np.char.add(names[~model.nonneg], " free")).tolist()
    lines.append("End")
    return [write_lines(path, lines)]
