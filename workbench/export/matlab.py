"""MATLAB ``.mat`` (v5, compressed) through ``scipy.io.savemat``: M, D, k, b (G, b_G), N, r, mu, d as
MATLAB variables, sparse matrices as MATLAB sparse, vectors as columns (see
:func:`workbench.export.model.data_arrays`; ``local`` writes N, r, mu, d only), and a struct ``info``
with the provenance strings (source, workbench version, conventions, units, solution origin).
MATLAB's indices are 1-based: contact i (1-based) owns rows d*(i-1)+1 .. d*i of D's columns, N, r.
"""

from __future__ import annotations

import os
from pathlib import Path

import scipy.io

from workbench.errors import FileFormatError
from workbench.export.model import data_arrays, provenance
from workbench.io.common import one_line
from workbench.problem import TimeStepProblem


def write(problem: TimeStepProblem, path: os.PathLike | str, *, formulation: str, solution=None, guess=None,
          notes: dict[str, str]) -> list[Path]:
    """Write the problem's arrays and an ``info`` struct to a .mat file; returns the files written."""
    arrays = data_arrays(problem, formulation, solution, guess)
    arrays["info"] = {**provenance(problem, formulation, "mat", list_mu=False), **notes}
    try:
        scipy.io.savemat(path, arrays, do_compression=True, oned_as="column", long_field_names=True)
    except OSError as exc:
        raise FileFormatError(one_line(f"{path}: cannot write the file: {exc.strerror or exc}")) from None
    return [Path(path)]
