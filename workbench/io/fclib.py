"""FCLib HDF5 problem files (the Frictional Contact Library format), read and written.

Layout (one problem per file)::

    /fclib_local    spacedim, W (matrix), vectors/q, vectors/mu, info/{title,description,math_info}
    /fclib_global   spacedim, M, H, [G] (matrices), vectors/f, vectors/w, vectors/mu, [vectors/b],
                    info/{title,description,math_info}
    /guesses        number_of_guesses, 1/{r,u[,v]}, 2/..., warm starts
    /solution       r, u[, v] -- the upstream writer stores zeros here, so it is never read as a
                    reference solution

Mapping to the papers' notation (see :mod:`workbench.problem`)::

    local   u = W r + q                            -> TimeStepProblem(W=W, q=q, mu=mu, d=spacedim)
                                                      (W = N, q = r of the papers; FCLib's r = gamma)
    global  M v = H r + G l + f, u = H^T v + w,    -> TimeStepProblem(M=M, D=H, k=f, b=w, G=G, b_G=b,
            0 = G^T v + b                              mu=mu, d=spacedim)

A matrix is either a plain 2-D dataset (dense, read as stored: rows first) or a group holding
``m, n, nz, nzmax`` (one-element integer arrays) and ``p, i, x``:

* ``nz == -1``: CSC, ``p`` the n+1 column pointers, ``i`` row indices;
* ``nz == -2``: CSR, ``p`` the m+1 row pointers, ``i`` column indices;
* ``nz >= 0``: triplets, ``nz`` entries. Files written by Siconos put the ROW in ``i`` and the COLUMN
  in ``p``, the opposite of the fclib.h comment; the reader takes the orientation that fits the
  index ranges (m rows, n columns) and, when both fit, the Siconos one. ``nzmax`` may exceed the
  stored arrays: only ``nz`` entries (or ``p[-1]`` for compressed storage) are read.

Some files (the LMGC90 dumps CubeH8 and LMGC_GlobalFrictionContactProblem00046) store only the
upper triangle of the symmetric M; a square M whose off-diagonal entries all lie on one side of
the diagonal is expanded to T + T^T - diag(T) (recorded in ``metadata["M_storage"]``), since a
triangular M could not be a mass matrix. The writer always stores the full matrix.

The writer stores matrices as CSC (``nz = -1``) with int32 indices and ``nzmax = nnz``, which both
this reader and the C FCLib reader accept; a read -> write -> read round trip is exact.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import h5py
import numpy as np
import scipy.sparse as sp

from workbench.errors import FileFormatError, ProblemDataError
from workbench.io.common import build_problem, check_file, format_error, one_line
from workbench.io.validate import Refused as _Bad
from workbench.io.validate import budget_words, check_count, check_real, read_budget
from workbench.problem import TimeStepProblem, check_compressed

__all__ = ["read_fclib", "read_fclib_guess", "write_fclib"]

_H5_ERRORS = (OSError, KeyError, ValueError, TypeError, RuntimeError, IndexError, AttributeError)
_INFO_FIELDS = ("title", "description", "math_info")
#: the filters of the HDF5 library and h5py (deflate, shuffle, fletcher32, szip, n-bit, scale-offset,
#: LZF); any other is a plugin the library would look for and load, which a file must not trigger
_FILTERS = (1, 2, 3, 4, 5, 6, 32000)
_TEXT_BYTES = 1 << 20


# --------------------------------------------------------------------------- reading helpers
def _get(group: h5py.Group, name: str) -> h5py.Group | h5py.Dataset | None:
    """The object ``name`` of ``group`` (None when there is none), after checking that it is stored in
    this file: only hard links are followed (an external link opens another file; a soft link may
    lead to one), and a dataset with external storage, a virtual dataset or a plugin filter is refused."""
    link = group.get(name, getlink=True)
    if link is None:
        return None
    where = f"{group.name.rstrip('/')}/{name}"
    if isinstance(link, h5py.ExternalLink):
        raise _Bad(f"{where} is an external link (to {link.filename}:{link.path}); only data stored "
                   "in the file itself is read")
    if not isinstance(link, h5py.HardLink):
        raise _Bad(f"{where} is a soft link; only data stored in the file itself (hard links) is read")
    obj = group.get(name)
    if isinstance(obj, h5py.Dataset):
        _check_storage(obj)
    return obj


def _check_storage(obj: h5py.Dataset) -> None:
    if obj.is_virtual:
        raise _Bad(f"{obj.name} is a virtual dataset (data mapped from other files); only data "
                   "stored in the file itself is read")
    plist = obj.id.get_create_plist()
    if plist.get_external_count():
        raise _Bad(f"{obj.name} keeps its data in an external file; only data stored in the file "
                   "itself is read")
    for n in range(plist.get_nfilters()):
        code = plist.get_filter(n)[0]
        if code not in _FILTERS:
            raise _Bad(f"{obj.name} needs the HDF5 filter plugin {code}, which the reader does not load")


def _dataset(group: h5py.Group, name: str) -> h5py.Dataset:
    obj = _get(group, name)
    if obj is None:
        raise _Bad(f"{group.name}/{name} is missing")
    if not isinstance(obj, h5py.Dataset):
        raise _Bad(f"{obj.name} is not a dataset")
    _check_size(obj)
    return obj


#: the largest chunk read (its decompressed bytes, from the metadata) and the most chunks in one dataset
MAX_CHUNK_BYTES = 16 * 2**20
MAX_CHUNKS = 65_536


def _read_budget(f: h5py.File) -> int:
    """Decompressed bytes all datasets read from ``f`` together may hold (workbench.io.validate.read_budget:
    a file of 4 MB, 96 MB, the memory budget of one read)."""
    return read_budget(os.path.getsize(f.filename))


def _check_size(obj: h5py.Dataset) -> None:
    """Refuse, before reading it, a dataset whose metadata promise more than the file can honestly
    hold: HDF5 lets a chunked, compressed dataset declare any shape and inflate to gigabytes. Checked
    from the metadata alone: the elements (check_count), the decompressed bytes of every dataset read
    from the file so far with this one (:func:`_read_budget`), the bytes of one chunk (a 12-element
    dataset may sit in one 4 GiB chunk) and the number of chunks (300,000 one-element chunks)."""
    if obj.size is None:   # a null dataspace: no data
        raise _Bad(f"{obj.name} holds no data (null dataspace)")
    check_count(obj.size, obj.name)
    _charge(obj.file, obj.size * max(obj.dtype.itemsize, 1),
            f"{obj.name} declares {obj.size:,} elements (shape {obj.shape})")
    if obj.chunks is not None:
        chunk = int(np.prod(obj.chunks, dtype=np.float64)) * max(obj.dtype.itemsize, 1)
        count = int(np.prod([-(-n // c) for n, c in zip(obj.shape, obj.chunks)], dtype=np.float64))
        if chunk > MAX_CHUNK_BYTES or count > MAX_CHUNKS:
            raise _Bad(f"{obj.name} is stored in {count:,} chunks of {chunk:,} bytes; the reader takes chunks of "
                       f"at most {MAX_CHUNK_BYTES // 2**20} MiB, at most {MAX_CHUNKS:,} of them")


def _charge(f: h5py.File, nbytes: int, what: str) -> None:
    """Count ``nbytes`` the reader is about to allocate for the file ``f`` against its read budget;
    refuse (naming ``what``) past it."""
    read = _READ.get(f.id.id, 0) + nbytes
    if read > _read_budget(f):
        raise _Bad(f"{what}: {read / 2**20:,.0f} MiB with what was read before it, more than a file of this "
                   f"size can hold ({budget_words()})")
    _READ[f.id.id] = read


#: decompressed bytes checked so far per open file (its HDF5 id), reset when a file is opened
_READ: dict[int, int] = {}


def _int(group: h5py.Group, name: str) -> int:
    obj = _dataset(group, name)
    check_real(obj.dtype, obj.name)
    a = np.asarray(obj[()]).reshape(-1)
    if a.size != 1 or not np.issubdtype(a.dtype, np.number) or not np.isfinite(a[0]) \
            or float(a[0]) != int(a[0]):
        raise _Bad(f"{group.name}/{name} must hold one integer, got {a[:4].tolist()!r}")
    return int(a[0])


def _array(group: h5py.Group, name: str, *, integer: bool = False) -> np.ndarray:
    """A numeric dataset as a vector, its dtype (real numbers only) and shape (one dimension) checked
    before it is read."""
    obj = _dataset(group, name)
    check_real(obj.dtype, obj.name)
    if len(obj.shape) != 1:
        raise _Bad(f"{obj.name} must be a vector (1-D), got shape {obj.shape}")
    a = np.asarray(obj[()]).reshape(-1)
    if integer:
        if not np.issubdtype(a.dtype, np.integer):
            if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
                raise _Bad(f"{group.name}/{name} must hold integers")
        if a.size and (a.max() > 2**62 or a.min() < -2**62):   # beyond any index, and int64's range
            raise _Bad(f"{group.name}/{name} holds integers beyond any matrix size")
        return a.astype(np.int64)
    return a.astype(float)


def _vector(group: h5py.Group, name: str) -> np.ndarray:
    return _array(group, name)


def _matrix(group: h5py.Group, name: str, shape: tuple[int | None, int | None]) -> sp.csr_matrix:
    """A matrix stored as a dense 2-D dataset or as an FCLib sparse group, as CSR.

    ``shape`` is what the vectors of the problem say the matrix's size must be (None: not fixed by
    them); a different declared size is refused before anything is allocated.
    """
    obj = _get(group, name)
    if obj is None:
        raise _Bad(f"{group.name}/{name} is missing")
    if isinstance(obj, h5py.Dataset):
        _check_size(obj)
        check_real(obj.dtype, obj.name)
        if len(obj.shape) != 2:
            raise _Bad(f"{obj.name} must be a 2-D numeric dataset or a sparse-matrix group, "
                       f"got shape {obj.shape}")
        _check_shape(obj.name, obj.shape, shape)
        return sp.csr_matrix(np.asarray(obj[()], dtype=float))
    where = obj.name
    m, n, nz = _int(obj, "m"), _int(obj, "n"), _int(obj, "nz")
    if m < 0 or n < 0:
        raise _Bad(f"{where} has negative size {m} x {n}")
    check_count(max(m, n), f"{where} (size {m:,} x {n:,})")
    _charge(obj.file, 8 * (max(m, n) + 1), f"{where} declares a size {m:,} x {n:,}")  # its pointer array
    _check_shape(where, (m, n), shape)
    p, i, x = _array(obj, "p", integer=True), _array(obj, "i", integer=True), _array(obj, "x")
    if nz in (-1, -2):
        outer, inner = (n, m) if nz == -1 else (m, n)
        if p.shape[0] < outer + 1:
            raise _Bad(f"{where}/p has {p.shape[0]} entries, expected {outer + 1}")
        p = p[: outer + 1]
        nnz = int(p[-1])   # nzmax may exceed the entries used: only the first nnz are read
        if 0 <= nnz <= min(i.shape[0], x.shape[0]):
            i, x = i[:nnz], x[:nnz]
        check_compressed(p, i, outer, inner, where, n_data=x.shape[0])
        cls = sp.csc_matrix if nz == -1 else sp.csr_matrix
        return cls((x, i, p), shape=(m, n)).tocsr()
    if nz < 0:
        raise _Bad(f"{where}/nz = {nz}: expected -1 (CSC), -2 (CSR) or a triplet count >= 0")
    check_count(nz, f"{where}/nz")
    if min(p.shape[0], i.shape[0], x.shape[0]) < nz:
        raise _Bad(f"{where} holds fewer than nz = {nz} triplets")
    p, i, x = p[:nz], i[:nz], x[:nz]
    if nz == 0:
        return sp.csr_matrix((m, n))

    def fits(rows: np.ndarray, cols: np.ndarray) -> bool:
        return rows.min() >= 0 and rows.max() < m and cols.min() >= 0 and cols.max() < n

    if fits(i, p):          # Siconos-written files: i = row, p = column
        rows, cols = i, p
    elif fits(p, i):        # the fclib.h documentation: p = row, i = column
        rows, cols = p, i
    else:
        raise _Bad(f"{where}: triplet indices do not fit a {m} x {n} matrix either way round")
    return sp.coo_matrix((x, (rows, cols)), shape=(m, n)).tocsr()


def _check_shape(where: str, got: tuple, shape: tuple[int | None, int | None]) -> None:
    if len(got) != 2 or any(w is not None and g != w for g, w in zip(got, shape)):
        want = " x ".join("any" if w is None else str(w) for w in shape)
        raise _Bad(f"{where} has size {' x '.join(map(str, got))}, the problem's vectors need {want}")


def _symmetric_from_triangle(M: sp.csr_matrix) -> tuple[sp.csr_matrix, str | None]:
    """Expand a square matrix stored as one triangle (LMGC90 dumps store only the upper triangle
    of the symmetric M) into the full symmetric matrix T + T^T - diag(T).

    Returns the matrix and "upper"/"lower" when it expanded one, else (M, None). A matrix with
    entries on both sides of the diagonal, or none off it, is returned unchanged.
    """
    if M.shape[0] != M.shape[1]:
        return M, None
    C = M.tocoo()
    off = C.row != C.col
    if not np.any(off):
        return M, None
    if np.all(C.row[off] < C.col[off]):
        side = "upper"
    elif np.all(C.row[off] > C.col[off]):
        side = "lower"
    else:
        return M, None
    return (M + M.T - sp.diags(M.diagonal())).tocsr(), side


def _text(group: h5py.Group, name: str) -> str | None:
    """A short string dataset's text; None when absent or not a string of at most a megabyte."""
    obj = _get(group, name)
    if not isinstance(obj, h5py.Dataset) or obj.dtype.kind not in "SOU" or obj.size is None \
            or obj.size * max(obj.dtype.itemsize, 1) > _TEXT_BYTES or obj.size > 16:
        return None
    value = obj[()]
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return ""
        value = value.reshape(-1)[0]
    if isinstance(value, bytes):
        # undecodable bytes (CubeH8's description starts with uninitialised memory) are dropped
        value = value.decode("utf-8", errors="replace").replace("\ufffd", "")
    return str(value).strip()


def _plain(value: Any) -> Any:
    """An HDF5 attribute value as plain JSON-able Python data."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        value = value.tolist()
        return value[0] if isinstance(value, list) and len(value) == 1 else value
    if isinstance(value, np.generic):
        value = value.item()
    # anything that is not plain JSON data (complex numbers, records, references) is kept as text
    return value if isinstance(value, (str, int, float, bool, list)) else str(value)[:200]


def _info(root: h5py.Group) -> dict[str, Any]:
    info = _get(root, "info")
    if not isinstance(info, h5py.Group):
        return {}
    out: dict[str, Any] = {}
    for field in _INFO_FIELDS:
        text = _text(info, field)
        if text:
            out[field] = text
    attrs = {str(k): _plain(v) for k, v in info.attrs.items()}
    if attrs:
        out["info_attributes"] = attrs
    return out


def _open(path: Path) -> h5py.File:
    try:
        if not h5py.is_hdf5(path):
            raise format_error(path, "not an HDF5 file")
        f = h5py.File(path, "r")
        _READ[f.id.id] = 0
        return f
    except FileFormatError:
        raise
    except _H5_ERRORS as exc:
        raise format_error(path, f"cannot open as HDF5 (truncated or corrupt?): {exc}") from None


# --------------------------------------------------------------------------- public reading API
def read_fclib(path: os.PathLike | str) -> TimeStepProblem:
    """Read an FCLib local or global problem (see the module docstring for the mapping)."""
    p = check_file(path)
    kwargs: dict[str, Any]
    with _open(p) as f:
        try:
            kind = "global" if _get(f, "fclib_global") is not None else "local"
            root = _get(f, f"fclib_{kind}")
            if root is None:
                raise _Bad("no /fclib_local or /fclib_global group: not an FCLib problem file")
            if not isinstance(root, h5py.Group):
                raise _Bad(f"{root.name} is not a group")
            d = _int(root, "spacedim")
            vectors = _get(root, "vectors")
            if not isinstance(vectors, h5py.Group):
                raise _Bad(f"{root.name}/vectors is missing")
            mu = _vector(vectors, "mu")
            # the vectors first: their lengths fix the matrices' sizes, checked before reading them
            if kind == "local":
                q = _vector(vectors, "q")
                kwargs = dict(W=_matrix(root, "W", (q.shape[0], q.shape[0])), q=q)
            else:
                f_, w = _vector(vectors, "f"), _vector(vectors, "w")
                n_dof = f_.shape[0]
                M, triangle = _symmetric_from_triangle(_matrix(root, "M", (n_dof, n_dof)))
                kwargs = dict(M=M, D=_matrix(root, "H", (n_dof, w.shape[0])), k=f_, b=w)
                if _get(root, "G") is not None:
                    b_G = _vector(vectors, "b") if _get(vectors, "b") is not None else None
                    kwargs["G"] = _matrix(root, "G", (n_dof, None if b_G is None else b_G.shape[0]))
                    if b_G is not None:
                        kwargs["b_G"] = b_G
            metadata = {"source": str(p), "format": f"fclib-{kind}", **_info(root)}
            if kind == "global" and triangle:
                metadata["M_storage"] = f"{triangle} triangle, expanded to the full symmetric matrix"
        except (_Bad, ProblemDataError) as exc:
            raise format_error(p, exc) from None
        except _H5_ERRORS as exc:
            raise format_error(p, f"cannot read the HDF5 data (truncated or corrupt?): {exc}") from None
    return build_problem(p, mu=mu, d=d, name=p.stem, metadata=metadata, **kwargs)


def read_fclib_guess(path: os.PathLike | str) -> dict[str, np.ndarray] | None:
    """The first warm start ``/guesses/1`` as ``{"r", "u"[, "v"]}`` arrays, or None when absent.

    The /solution group is deliberately not offered: the upstream writer fills it with zeros.
    """
    p = check_file(path)
    with _open(p) as f:
        try:
            guesses = _get(f, "guesses")
            if not isinstance(guesses, h5py.Group):
                return None
            if _get(guesses, "number_of_guesses") is not None and _int(guesses, "number_of_guesses") < 1:
                return None
            first = _get(guesses, "1")
            if not isinstance(first, h5py.Group):
                return None
            return {key: _vector(first, key) for key in ("r", "u", "v", "l") if _get(first, key) is not None}
        except _Bad as exc:
            raise format_error(p, exc) from None
        except _H5_ERRORS as exc:
            raise format_error(p, f"cannot read /guesses (truncated or corrupt?): {exc}") from None


# --------------------------------------------------------------------------- writing
def _write_matrix(group: h5py.Group, name: str, A: sp.spmatrix) -> None:
    S = sp.csc_matrix(A)
    S.sum_duplicates()
    S.sort_indices()
    g = group.create_group(name)
    g.create_dataset("m", data=np.array([S.shape[0]], dtype=np.int32))
    g.create_dataset("n", data=np.array([S.shape[1]], dtype=np.int32))
    g.create_dataset("nz", data=np.array([-1], dtype=np.int32))
    g.create_dataset("nzmax", data=np.array([S.nnz], dtype=np.int32))
    g.create_dataset("p", data=S.indptr.astype(np.int32))
    g.create_dataset("i", data=S.indices.astype(np.int32))
    g.create_dataset("x", data=S.data.astype(np.float64))


def _write_text(group: h5py.Group, name: str, text: str) -> None:
    raw = text.encode("utf-8")
    group.create_dataset(name, data=np.array(raw, dtype=f"S{max(1, len(raw))}"))


def _checked_vectors(values: Mapping[str, Any], sizes: Mapping[str, int | None],
                     what: str) -> dict[str, np.ndarray]:
    """``values`` as float vectors after checking their names and lengths against ``sizes``."""
    out = {}
    for key, value in values.items():
        if key not in sizes:
            raise ProblemDataError(f"{what}: unknown entry {key!r} (expected {', '.join(sizes)})")
        a = np.asarray(value, dtype=float).reshape(-1)
        if sizes[key] is not None and a.shape[0] != sizes[key]:
            raise ProblemDataError(f"{what}[{key!r}] has length {a.shape[0]}, expected {sizes[key]}")
        out[key] = a
    return out


def _write_vectors(group: h5py.Group, vectors: Mapping[str, np.ndarray]) -> None:
    for key, a in vectors.items():
        group.create_dataset(key, data=a)


def write_fclib(problem: TimeStepProblem, path: os.PathLike | str, *,
                solution: Mapping[str, Any] | None = None,
                guess: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None) -> None:
    """Write ``problem`` as an FCLib file: ``/fclib_global`` when it is global, else ``/fclib_local``.

    ``solution`` (a mapping with r, u and, for global problems, v) goes to /solution; ``guess``
    (one such mapping or a sequence of them) to /guesses/1, /guesses/2, ... with number_of_guesses.
    The info strings come from ``problem.metadata`` (title defaults to the problem name).
    """
    m = problem.n_contact_unknowns
    sizes: dict[str, int | None] = {"r": m, "u": m}
    if problem.is_global:
        sizes.update(v=problem.n_dof, l=problem.n_bilateral)
    guesses = [] if guess is None else [guess] if isinstance(guess, Mapping) else list(guess)
    # check the extra vectors before the file is created, so that a bad one leaves no file behind
    guesses = [_checked_vectors(one, sizes, f"guess {n}") for n, one in enumerate(guesses, start=1)]
    if solution is not None:
        solution = _checked_vectors(solution, sizes, "solution")
    meta = problem.metadata
    try:
        with h5py.File(path, "w") as f:
            root = f.create_group("fclib_global" if problem.is_global else "fclib_local")
            root.create_dataset("spacedim", data=np.array([problem.d], dtype=np.int32))
            vectors = root.create_group("vectors")
            if problem.is_global:
                _write_matrix(root, "M", problem.M)
                _write_matrix(root, "H", problem.D)
                vectors.create_dataset("f", data=np.asarray(problem.k, dtype=float))
                vectors.create_dataset("w", data=np.asarray(problem.b, dtype=float))
                if problem.G is not None:
                    _write_matrix(root, "G", problem.G)
                    vectors.create_dataset("b", data=np.asarray(problem.b_G, dtype=float))
            else:
                _write_matrix(root, "W", problem.N)  # N is W for a local problem
                vectors.create_dataset("q", data=np.asarray(problem.r, dtype=float))  # r is q
            vectors.create_dataset("mu", data=np.asarray(problem.mu, dtype=float))
            info = root.create_group("info")
            _write_text(info, "title", str(meta.get("title", problem.name)))
            _write_text(info, "description", str(meta.get("description", "")))
            _write_text(info, "math_info", str(meta.get("math_info", "")))
            if solution is not None:
                _write_vectors(f.create_group("solution"), solution)
            if guesses:
                g = f.create_group("guesses")
                g.create_dataset("number_of_guesses", data=np.array([len(guesses)], dtype=np.int32))
                for n, one in enumerate(guesses, start=1):
                    _write_vectors(g.create_group(str(n)), one)
    except OSError as exc:
        raise FileFormatError(one_line(f"{path}: cannot write the HDF5 file: {exc}")) from None
