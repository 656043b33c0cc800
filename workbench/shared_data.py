"""Where the reference problems of other simulators (FCLib HDF5, Siconos .dat) live.

They are not part of the repository: the FCLib and Siconos .dat files come from the Siconos
repository (numerics/src/FrictionContact/test/data and numerics/python/tests/data, Apache License
2.0) and the FCLib collection; they are read in place, never copied. Looked up, in order: the folder
named by the environment variable ``WORKBENCH_SHARED_DATA``; ``shared/data`` beside the repository
(``../shared/data`` from its root). A path written ``shared:fclib/NAME.hdf5`` on the command line or
in a study file is resolved here.
"""

from __future__ import annotations

import os
from pathlib import Path

from workbench.errors import InputError

ENV = "WORKBENCH_SHARED_DATA"
PREFIX = "shared:"
#: ``../shared/data`` from the repository root (this file is ROOT/workbench/shared_data.py)
BESIDE_REPOSITORY = Path(__file__).resolve().parents[2] / "shared" / "data"
#: how to get the files, for messages and skipped tests
HOW_TO_GET = (f"set {ENV} to a folder holding fclib/*.hdf5 and siconos/*.dat, or put it at {BESIDE_REPOSITORY}; "
              "the files come from the Siconos repository (numerics/src/FrictionContact/test/data, "
              "numerics/python/tests/data) and the FCLib collection (see README.md, Reference data)")


def shared_data_dir() -> Path | None:
    """The reference-data folder, or None when neither place above has one."""
    if os.environ.get(ENV):
        path = Path(os.environ[ENV]).expanduser()
        return path if path.is_dir() else None
    return BESIDE_REPOSITORY if BESIDE_REPOSITORY.is_dir() else None


def missing_reason() -> str:
    """Why :func:`shared_data_dir` found nothing, and how to fix it."""
    if os.environ.get(ENV):
        return f"{ENV}={os.environ[ENV]} is not a folder; {HOW_TO_GET}"
    return f"the reference data was not found; {HOW_TO_GET}"


def resolve_shared(spec: str) -> Path:
    """``shared:REL`` -> the absolute path of REL in the reference-data folder (InputError if absent,
    or if REL is absolute, has ``..`` or is a link that leads out of the folder)."""
    from workbench.files import relative_under
    root = shared_data_dir()
    if root is None:
        raise InputError(f"{spec}: {missing_reason()}")
    return relative_under(root, spec[len(PREFIX):], spec)


def reference_files() -> list[Path]:
    """Every reference problem file (``*/*.hdf5`` and ``*/*.dat``), sorted; empty when the folder is absent."""
    root = shared_data_dir()
    return [] if root is None else sorted(f for f in root.glob("*/*") if f.suffix in (".hdf5", ".dat"))
