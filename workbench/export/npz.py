"""Plain numpy ``.npz`` (compressed, no pickles): the arrays of the .mat export
(:func:`workbench.export.model.data_arrays`) for readers with numpy only.

Each sparse matrix X is stored in CSC form as ``X_data``, ``X_indices``, ``X_indptr``, ``X_shape``
(workbench.io.sparse_npz; ``scipy.sparse.csc_matrix((X_data, X_indices, X_indptr), shape=X_shape)``
rebuilds it); vectors and
``d`` as arrays; ``info`` is a JSON object (one string) with the provenance. This is not the
workbench's own problem file (workbench.io.save_problem), which ``load_problem`` reads back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from workbench.errors import FileFormatError
from workbench.export.model import data_arrays, provenance
from workbench.io.common import one_line
from workbench.io.sparse_npz import encode_sparse
from workbench.problem import TimeStepProblem


def write(problem: TimeStepProblem, path: os.PathLike | str, *, formulation: str, solution=None, guess=None,
          notes: dict[str, str]) -> list[Path]:
    """Write the problem's arrays and the ``info`` JSON to a .npz file; returns the files written."""
    out: dict[str, np.ndarray] = {}
    for key, value in data_arrays(problem, formulation, solution, guess).items():
        if sp.issparse(value):
            out.update(encode_sparse(key, value, "csc"))
        else:
            out[key] = np.asarray(value)
    header = {**provenance(problem, formulation, "npz", list_mu=False), **notes}
    out["info"] = np.array(json.dumps(header, ensure_ascii=False))
    try:
        with open(path, "wb") as fh:
            np.savez_compressed(fh, **out)
    except OSError as exc:
        raise FileFormatError(one_line(f"{path}: cannot write the file: {exc.strerror or exc}")) from None
    return [Path(path)]
