"""Reading and writing time-step problems.

Formats
-------
* FCLib HDF5 (``.hdf5``, ``.h5``): :mod:`workbench.io.fclib`, local (W, q, mu) and global (M, H, f, w, mu).
* Siconos numerics text (``.dat``): :mod:`workbench.io.siconos_dat`, local and global.
* The workbench's own ``.npz``: :mod:`workbench.io.native`, an exact copy of a :class:`TimeStepProblem`.

:func:`load_problem` picks the reader from the file's first bytes (the HDF5 signature, the zip
signature of an ``.npz``) and then from its extension; anything else is read as Siconos text.

Every reader checks what it reads before numpy, scipy or h5py acts on it: regular files only, declared
sizes within ``WORKBENCH_MAX_ENTRIES``, sparse structure, real numbers and shapes, no data from
outside the file (HDF5 external links, external storage, virtual datasets), no .npz entry inflated
before its header is checked; :mod:`workbench.io.validate` lists what is refused and the limits.

Every unreadable input raises :class:`~workbench.errors.FileFormatError` and every inconsistent
one :class:`~workbench.errors.ProblemDataError`, both with a one-line message that starts with the
file's path. Readers set the problem name to the file stem and record the provenance in
``metadata`` ({"source": path, "format": ..., plus title/description when the file has them}).
"""

from __future__ import annotations

import os

from workbench.io.common import HDF5_SIGNATURE, HDF5_SUFFIXES, ZIP_SIGNATURE, check_file, format_error
from workbench.io.fclib import read_fclib, read_fclib_guess, write_fclib
from workbench.io.native import load_problem_native, save_problem
from workbench.io.siconos_dat import read_siconos_dat, write_siconos_dat
from workbench.problem import TimeStepProblem


def load_problem(path: os.PathLike | str) -> TimeStepProblem:
    """Read a problem file, choosing the reader from its content, then its extension.

    HDF5 signature or ``.hdf5``/``.h5``/``.hdf`` -> :func:`read_fclib`; zip signature or ``.npz`` ->
    :func:`load_problem_native`; anything else (``.dat`` in practice) -> :func:`read_siconos_dat`.
    """
    p = check_file(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise format_error(p, f"cannot read the file ({exc.strerror or exc})") from None
    suffix = p.suffix.lower()
    if head.startswith(HDF5_SIGNATURE) or suffix in HDF5_SUFFIXES:
        return read_fclib(p)
    if head.startswith(ZIP_SIGNATURE) or suffix == ".npz":
        return load_problem_native(p)
    return read_siconos_dat(p)


__all__ = ["load_problem", "read_fclib", "read_fclib_guess", "write_fclib", "read_siconos_dat",
           "write_siconos_dat", "save_problem", "load_problem_native"]
