"""The one encoding of a sparse matrix among the arrays of a ``.npz`` file.

A matrix X is stored as four arrays ``X_data``, ``X_indices``, ``X_indptr`` (its compressed components)
and ``X_shape``; ``layout`` says whether they are CSR (rows compressed) or CSC (columns). The
workbench's problem files (workbench.io.native, CSR), the .npz export (workbench.export.npz, CSC) and
the hand-over to the Siconos worker (workbench.solvers.siconos, CSC) all use it. This module imports
only numpy and scipy, so that the Siconos worker, which runs in another interpreter without the
workbench, can load it from its file.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import scipy.sparse as sp

__all__ = ["encode_sparse", "decode_sparse", "has_sparse"]

_CLASSES = {"csr": sp.csr_matrix, "csc": sp.csc_matrix}


def encode_sparse(key: str, matrix, layout: str = "csc") -> dict[str, np.ndarray]:
    """The four arrays of ``matrix`` under ``key`` (module docstring)."""
    S = _CLASSES[layout](matrix)
    return {f"{key}_data": S.data, f"{key}_indices": S.indices, f"{key}_indptr": S.indptr,
            f"{key}_shape": np.array(S.shape, dtype=np.int64)}


def has_sparse(arrays: Mapping, key: str) -> bool:
    """Whether ``arrays`` (an NpzFile's ``files`` or a dict) hold the matrix ``key``."""
    names = arrays.files if hasattr(arrays, "files") else arrays
    return f"{key}_data" in names


def decode_sparse(arrays: Mapping, key: str, layout: str = "csc"):
    """The matrix stored under ``key`` by :func:`encode_sparse` with the same ``layout``."""
    shape = tuple(int(s) for s in arrays[f"{key}_shape"])
    return _CLASSES[layout]((arrays[f"{key}_data"], arrays[f"{key}_indices"].astype(np.int64),
                             arrays[f"{key}_indptr"].astype(np.int64)), shape=shape)
