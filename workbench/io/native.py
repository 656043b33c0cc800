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
import math
import os
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import FileFormatError, ProblemDataError
from workbench.io.common import build_problem, check_file, format_error, one_line
from workbench.io.sparse_npz import decode_sparse, encode_sparse, has_sparse
from workbench.io.validate import Refused, budget_words, check_count, read_budget
from workbench.problem import TimeStepProblem, check_compressed

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


#: the largest text entry (name, metadata) read, in bytes
_TEXT_BYTES = 1 << 24


def _expected(key: str) -> tuple[str, tuple[int, ...] | int] | None:
    """(dtype kinds, shape) an entry must have: a shape tuple, or 1 for any vector; None: not read."""
    if key in ("format", "name", "metadata"):
        return "U", ()
    if key in ("version", "d"):
        return "iu", ()
    if key in ("mu", "h", *_VECTORS) or any(key == f"{X}_data" for X in _MATRICES):
        return "iuf", 1
    if any(key in (f"{X}_indices", f"{X}_indptr") for X in _MATRICES):
        return "iu", 1
    if any(key == f"{X}_shape" for X in _MATRICES):
        return "iu", (2,)
    return None


def _header(zf: zipfile.ZipFile, info: zipfile.ZipInfo, key: str) -> tuple[tuple[int, ...], np.dtype]:
    """An entry's declared shape and dtype, from its ``.npy`` header alone, checked against what the
    entry must be (:func:`_expected`), the entry limit, and the size the zip directory declares for
    the entry (which bounds what decompressing it can produce)."""
    kinds, want = _expected(key)
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise Refused(f"entry {key!r}: .npy format version {version} is not read")
        header_bytes = fh.tell()
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise Refused(f"entry {key!r} holds Python objects or records (dtype {dtype}); they are never loaded")
    if dtype.kind == "c":
        raise Refused(f"entry {key!r} has complex values (dtype {dtype}); only real numbers are accepted")
    if dtype.kind not in kinds:
        raise Refused(f"entry {key!r} has dtype {dtype}, expected "
                      f"{'text' if kinds == 'U' else 'integers' if kinds == 'iu' else 'real numbers'}")
    if (want == 1 and len(shape) != 1) or (want != 1 and tuple(shape) != want):
        raise Refused(f"entry {key!r} has shape {tuple(shape)}, expected "
                      f"{'a vector (1-D)' if want == 1 else want}")
    count = check_count(math.prod(shape), f"entry {key!r}")
    if kinds == "U" and dtype.itemsize > _TEXT_BYTES:
        raise Refused(f"entry {key!r} declares {dtype.itemsize:,} bytes of text, more than {_TEXT_BYTES:,}")
    if info.file_size != header_bytes + count * dtype.itemsize:
        raise Refused(f"entry {key!r}: the zip directory declares {info.file_size:,} bytes, its .npy "
                      f"header {header_bytes + count * dtype.itemsize:,}")
    return tuple(shape), dtype


def _entries(p: Path) -> dict[str, np.ndarray]:
    """The entries a problem reads, each checked (:func:`_header`) before any is decompressed."""
    with zipfile.ZipFile(p) as zf:
        infos = {i.filename[:-4]: i for i in zf.infolist() if i.filename.endswith(".npy")}
        if "format" not in infos:
            raise Refused(f"not a workbench problem file (no 'format' entry {FORMAT_TAG!r})")
        shapes = {key: _header(zf, info, key)[0] for key, info in infos.items() if _expected(key) is not None}
        for X in _MATRICES:
            if f"{X}_data" in shapes and shapes[f"{X}_data"] != shapes.get(f"{X}_indices"):
                raise Refused(f"{X}_data and {X}_indices have different lengths "
                              f"({shapes[f'{X}_data']} and {shapes.get(f'{X}_indices')})")
        inflated = sum(infos[key].file_size for key in shapes)
        if inflated > read_budget(p.stat().st_size):
            raise Refused(f"its entries declare {inflated:,} bytes decompressed, more than a file of this size "
                          f"can hold ({budget_words()}): a zip bomb, or not a problem the workbench wrote")
        arrays = {}
        for key in shapes:
            with zf.open(infos[key]) as fh:
                arrays[key] = _native(np.lib.format.read_array(fh, allow_pickle=False))
        return arrays


def _native(a: np.ndarray) -> np.ndarray:
    """``a`` in the machine's byte order, real numbers as float64 and integers as int64 (a big-endian
    or float32 file is valid; numba and scipy take native float64/int64 only)."""
    if a.dtype.kind == "f":
        return a.astype(np.float64, copy=False)
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    return a.astype(a.dtype.newbyteorder("="), copy=False) if not a.dtype.isnative else a


def _matrix(arrays: dict[str, np.ndarray], key: str):
    """Matrix ``key`` (CSR) after checking its shape and compressed structure (scipy trusts both)."""
    if f"{key}_shape" not in arrays or f"{key}_indptr" not in arrays:
        raise Refused(f"matrix {key} lacks {key}_shape or {key}_indptr")
    rows, cols = (int(s) for s in arrays[f"{key}_shape"])
    if min(rows, cols) < 0:
        raise Refused(f"{key}_shape {rows} x {cols} is negative")
    check_count(max(rows, cols), f"{key}_shape")
    check_compressed(arrays[f"{key}_indptr"], arrays[f"{key}_indices"], rows, cols, key,
                     n_data=arrays[f"{key}_data"].shape[0])
    return decode_sparse(arrays, key, "csr")


def _metadata(text: str) -> dict:
    try:
        metadata = json.loads(text)
    except RecursionError:
        raise Refused("metadata nests too deeply") from None
    if not isinstance(metadata, dict):
        raise Refused(f"metadata must be a JSON object, got {type(metadata).__name__}")
    return metadata


def load_problem_native(path: os.PathLike | str) -> TimeStepProblem:
    """Read a file written by :func:`save_problem` (checked as :mod:`workbench.io.validate` says)."""
    p = check_file(path)
    try:
        z = _entries(p)
        if str(z["format"]) != FORMAT_TAG:
            raise Refused(f"not a workbench problem file (no 'format' entry {FORMAT_TAG!r})")
        missing = [key for key in ("version", "d", "mu", "name", "h", "metadata") if key not in z]
        if missing:
            raise Refused(f"entries {', '.join(missing)} are missing")
        version = int(z["version"])
        if version != FORMAT_VERSION:
            raise Refused(f"workbench problem file version {version}, this reader knows version {FORMAT_VERSION}")
        h = z["h"]
        if h.size > 1:
            raise Refused(f"entry 'h' holds {h.size} numbers, expected at most one")
        kwargs: dict[str, Any] = {"d": int(z["d"]), "mu": z["mu"], "name": str(z["name"]),
                                  "h": float(h[0]) if h.size else None,
                                  "metadata": _metadata(str(z["metadata"]))}
        for key in _MATRICES:
            if has_sparse(z, key):
                kwargs[key] = _matrix(z, key)
        for key in _VECTORS:
            if key in z:
                kwargs[key] = z[key]
    except (Refused, ProblemDataError) as exc:
        raise format_error(p, exc) from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
            RuntimeError) as exc:  # corrupt or truncated zip data, encrypted or unknown compression
        raise format_error(p, f"cannot read as a workbench .npz problem file: {exc or type(exc).__name__}") from None
    return build_problem(p, **kwargs)
