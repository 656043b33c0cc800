"""Siconos numerics text (``.dat``): the problem through :func:`workbench.io.write_siconos_dat`.

``raw`` keeps the problem's kind (global: ``d nc M H q b mu``, read by Siconos's
``globalFrictionContact_new_from_filename``; local: ``d nc W q mu``, read by
``frictionContact_new_from_filename``); ``local`` writes the Delassus form W = N, q = r, which the
Siconos local solvers (fc3d/fc2d NSGS, NSN_AC, ...) take. The format is numbers only (Siconos reads it
with fscanf), so the provenance goes to ``PATH.json``; the .dat holds no solution.
"""

from __future__ import annotations

import os
from pathlib import Path

from workbench.errors import UnsupportedError
from workbench.export.model import provenance
from workbench.export.text import sidecar
from workbench.io import write_siconos_dat
from workbench.problem import TimeStepProblem


def write(problem: TimeStepProblem, path: os.PathLike | str, *, formulation: str, solution=None, guess=None,
          notes: dict[str, str]) -> list[Path]:
    """Write ``problem`` (already in the requested formulation) as Siconos .dat and its sidecar."""
    if solution is not None or guess is not None:
        raise UnsupportedError("the Siconos .dat format holds no solution or guess; use fclib, mat or npz")
    write_siconos_dat(problem, path)
    reader = {"siconos_reader": siconos_reader(problem)}
    return [Path(path), sidecar(path, {**provenance(problem, formulation, "dat", list_mu=False), **reader, **notes})]


def siconos_reader(problem: TimeStepProblem) -> str:
    """What Siconos reads from the .dat of ``problem``: which of its readers and solvers take the file,
    and (for a global problem) what its local reader would make of it instead."""
    if problem.is_global:
        return ("a global problem (d nc M H q b mu): read it with globalFrictionContact_new_from_filename and "
                "the gfc3d solvers; Siconos's local reader frictionContact_new_from_filename and the fc3d/fc2d "
                "solvers would misread it (take --formulation local for those: W = N, q = r)")
    return ("a local problem (d nc W q mu): read it with frictionContact_new_from_filename and the fc3d/fc2d "
            "solvers")
