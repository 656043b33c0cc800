"""The workbench's own problem file: one compressed ``.npz`` holding a TimeStepProblem exactly.

Arrays (all plain numpy, no pickles)::

    format      "workbench-time-step-problem"      version   1
    d, mu, name, h (empty when unknown), metadata (a JSON string)
    X_data, X_indices, X_indptr, X_shape           for each matrix X in M, D, G (global), W (local), CSR
                                                   (workbench.io.sparse_npz)
    k, b, b_G (global) or q (local)                the vectors that are present

In the papers' notation W = N and q = r; a global problem stores M, D, k, b (and G, b_G). Loading
gives back the same matrices (CSR components), vectors, d, h, name and metadata: the round trip is
exact, and unlike the other readers the name and metadata are the saved ones, not the file's.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import FileFormatError
from workbench.io.common import build_problem, check_file, format_error, one_line
from workbench.io.sparse_npz import decode_sparse, encode_sparse, has_sparse
from workbench.problem import TimeStepProblem

__all__ = ["save_problem", "load_problem_native"]

FORMAT_TAG = "workbench-time-step-problem"
FORMAT_VERSION = 1
_MATRICES = ("M", "D", "G", "W")
_VECTORS = ("k", "b", "b_G", "q")


def _jsonable(value: Any) -> Any:
    """json.dumps fallback: numpy scalars and arrays as plain Python, anything else as its str."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _parts(problem: TimeStepProblem) -> tuple[dict[str, Any], dict[str, Any]]:
    """The problem's matrices and vectors by their constructor names."""
    if problem.is_global:
        matrices = {"M": problem.M, "D": problem.D, "G": problem.G}
        vectors = {"k": problem.k, "b": problem.b, "b_G": problem.b_G}
    else:
        matrices = {"W": problem.N}   # N is W for a local problem
        vectors = {"q": problem.r}    # r is q for a local problem
    return ({k: v for k, v in matrices.items() if v is not None},
            {k: v for k, v in vectors.items() if v is not None})


def save_problem(problem: TimeStepProblem, path: os.PathLike | str) -> None:
    """Write ``problem`` to ``path`` (the name is used as given: no ``.npz`` is appended)."""
    arrays: dict[str, np.ndarray] = {
        "format": np.array(FORMAT_TAG),
        "version": np.array(FORMAT_VERSION),
        "d": np.array(problem.d),
        "mu": np.asarray(problem.mu),
        "name": np.array(problem.name),
        "h": np.array([] if problem.h is None else [problem.h], dtype=float),
        "metadata": np.array(json.dumps(dict(problem.metadata), default=_jsonable)),
    }
    matrices, vectors = _parts(problem)
    for key, S in matrices.items():
        arrays.update(encode_sparse(key, S, "csr"))
    for key, v in vectors.items():
        arrays[key] = np.asarray(v)
    try:
        with open(path, "wb") as fh:
            np.savez_compressed(fh, **arrays)
    except OSError as exc:
        raise FileFormatError(one_line(f"{path}: cannot write the file: {exc}")) from None


def load_problem_native(path: os.PathLike | str) -> TimeStepProblem:
    """Read a file written by :func:`save_problem`."""
    p = check_file(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            if "format" not in z.files or str(z["format"]) != FORMAT_TAG:
                raise format_error(p, "not a workbench problem file (no 'format' entry "
                                      f"{FORMAT_TAG!r})")
            version = int(z["version"])
            if version != FORMAT_VERSION:
                raise format_error(p, f"workbench problem file version {version}, this reader "
                                      f"knows version {FORMAT_VERSION}")
            kwargs: dict[str, Any] = {"d": int(z["d"]), "mu": z["mu"], "name": str(z["name"])}
            h = z["h"]
            kwargs["h"] = float(h[0]) if h.size else None
            kwargs["metadata"] = json.loads(str(z["metadata"]))
            for key in _MATRICES:
                if has_sparse(z, key):
                    kwargs[key] = decode_sparse(z, key, "csr")
            for key in _VECTORS:
                if key in z.files:
                    kwargs[key] = z[key]
    except FileFormatError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, IndexError, zipfile.BadZipFile,
            json.JSONDecodeError, MemoryError) as exc:  # MemoryError: an entry declares an absurd size
        raise format_error(p, f"cannot read as a workbench .npz problem file: {exc or type(exc).__name__}") from None
    return build_problem(p, **kwargs)
