"""Where the reference problems of other simulators (FCLib HDF5, Siconos .dat) live.

They are read in place, never copied into the repository. Looked up, in order: the folder named by the
environment variable ``WORKBENCH_SHARED_DATA``; ``../shared/data`` beside the repository (the project's
layout); ``/work/shared/data`` (where a clean clone made elsewhere, e.g. by CI, still finds it).
A path written ``shared:fclib/NAME.hdf5`` on the command line or in a study file is resolved here.
"""

from __future__ import annotations

import os
from pathlib import Path

from workbench.errors import InputError

ENV = "WORKBENCH_SHARED_DATA"
PREFIX = "shared:"
_CANDIDATES = (Path(__file__).resolve().parents[2] / "shared" / "data", Path("/work/shared/data"))


def shared_data_dir() -> Path | None:
    """The reference-data folder, or None when none of the places above has it."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    return next((p for p in _CANDIDATES if p.is_dir()), None)


def resolve_shared(spec: str) -> Path:
    """``shared:REL`` -> the absolute path of REL in the reference-data folder (InputError if absent)."""
    root = shared_data_dir()
    if root is None:
        raise InputError(f"{spec}: the shared reference data was not found (set {ENV} to its folder)")
    return root / spec[len(PREFIX):]
