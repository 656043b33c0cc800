"""FCLib HDF5 (``.hdf5``): the problem through :func:`workbench.io.write_fclib`, plus provenance.

``raw`` keeps the problem's kind (``/fclib_global``: M, H = D, f = k, w = b, G, b; ``/fclib_local``:
W, q); ``local`` writes the Delassus form W = N, q = r. A solution nu goes to ``/solution`` and a
guess to ``/guesses/1`` as FCLib's vectors r (= gamma), u (= N nu + r at the contacts) and, for
global problems, v (= M^-1 (k + C nu)) and l (joint impulses). The provenance (workbench.export.model.
provenance: source, workbench version, conventions, units, and where the solution came from) is
stored as string attributes of the ``info`` group, which :func:`workbench.io.read_fclib` returns in
``metadata["info_attributes"]``; FCLib readers ignore attributes.
"""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np

from workbench.errors import FileFormatError
from workbench.export.model import impulse_vectors, provenance
from workbench.io import write_fclib
from workbench.io.common import one_line
from workbench.problem import TimeStepProblem

_FCLIB_NAMES = {"gamma": "r", "u": "u", "v": "v", "lambda": "l"}


def _fclib_vectors(problem: TimeStepProblem, nu: np.ndarray | None) -> dict[str, np.ndarray] | None:
    if nu is None:
        return None
    return {_FCLIB_NAMES[k]: v for k, v in impulse_vectors(problem, nu).items()}


def write(problem: TimeStepProblem, path: os.PathLike | str, *, formulation: str, solution=None, guess=None,
          notes: dict[str, str]) -> list[Path]:
    """Write ``problem`` (already in the requested formulation) as FCLib HDF5; returns the files written."""
    write_fclib(problem, path, solution=_fclib_vectors(problem, solution), guess=_fclib_vectors(problem, guess))
    header = {**provenance(problem, formulation, "fclib", list_mu=False), **notes}
    try:
        with h5py.File(path, "a") as f:
            info = f[f"fclib_{problem.kind}/info"]
            for key, value in header.items():
                info.attrs[key] = value
    except OSError as exc:
        raise FileFormatError(one_line(f"{path}: cannot add the provenance attributes: {exc}")) from None
    return [Path(path)]
