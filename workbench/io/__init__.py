"""Reading and writing time-step problems.

Formats
-------
* FCLib HDF5 (``.hdf5``, ``.h5``): :mod:`workbench.io.fclib`, local (W, q, mu) and global (M, H, f, w, mu).
* Siconos numerics text (``.dat``): :mod:`workbench.io.siconos_dat`, local and global.
* The workbench's own ``.npz``: :mod:`workbench.io.native`, an exact copy of a :class:`TimeStepProblem`.

:func:`load_problem` picks the reader from the file's first bytes (the HDF5 signature, the zip
signature of an ``.npz``) and then from its extension; anything else is read as Siconos text. The
formats are the lines of :data:`workbench.io.formats.FORMATS` (a new format: a reader module and one line).

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

from workbench.io.formats import FORMATS, load_problem

__all__ = ["load_problem", "FORMATS", "read_fclib", "read_fclib_guess", "write_fclib", "read_siconos_dat",
           "write_siconos_dat", "save_problem", "load_problem_native"]

#: the readers and writers and their modules, imported on first use (PEP 562): sources and the command
#: line know the formats (workbench.io.formats) without loading numpy or h5py
_PUBLIC = {"read_fclib": "fclib", "read_fclib_guess": "fclib", "write_fclib": "fclib",
           "read_siconos_dat": "siconos_dat", "write_siconos_dat": "siconos_dat", "save_problem": "native",
           "load_problem_native": "native"}


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib
        return getattr(importlib.import_module(f"workbench.io.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module 'workbench.io' has no attribute {name!r}")
