"""Siconos numerics text files (``.dat``): friction-contact problems as whitespace-separated numbers.

The layout is the one of Siconos's ``frictionContact_printInFile`` and
``globalFrictionContact_printInFile`` (line breaks and blank lines carry no meaning)::

    local   d  nc  MATRIX(W)  q[W.size1]  mu[nc]  [flag]    u = W r + q
    global  d  nc  MATRIX(M)  MATRIX(H)  q[M.size0]  b[H.size1]  mu[nc]  [flag]
                                                           M v = q + H r,  u = H^T v + b

``flag`` is the 0/1 ``isComplete`` integer that older Siconos writers appended after mu (most of the
reference files end with it); it is accepted and ignored, and the writer leaves it out.

Mapping to the papers' notation (see :mod:`workbench.problem`)::

    local   TimeStepProblem(W=W, q=q, mu=mu, d=d)          (W = N, q = r of the papers)
    global  TimeStepProblem(M=M, D=H, k=q, b=b, mu=mu, d=d)

``MATRIX`` is a Siconos ``NumericsMatrix`` (``NM_write_in_file``)::

    storageType size0 size1 <storage>

* storageType 0, dense: ``size0 size1`` (repeated) then the size0*size1 values column-major.
* storageType 1, sparse block (``SBM_write_in_file``): ``nbblocks`` (0 means the zero matrix and
  nothing follows), ``blocknumber0 blocknumber1``, the cumulative row sizes of the block rows
  (blocknumber0 numbers, the last one = size0), the cumulative column sizes of the block columns
  (blocknumber1 numbers), ``filled1 filled2``, the block-row pointers ``index1_data`` (filled1
  numbers, CSR-like, starting at 0 and ending at nbblocks), the block-column indices
  ``index2_data`` (filled2 = nbblocks numbers), then for each block in that order its number
  (0, 1, 2, ...) followed by its values column-major.
* storageType 2, CSparse (``NSM_write_in_file``): the origin (1 triplet, 2 CSC, 3 CSR), the line
  ``CSparse Version ...``, a size line, then the entries as ``cs_print`` writes them (see
  :func:`_csparse`). The values are printed with ``%g`` (6 significant digits), so such a file holds
  a rounded copy of the simulator's matrix (``metadata["lossy"]`` says so).

Local or global is decided from the structure: after the common ``d nc MATRIX`` the local tail
``q mu`` is tried first and accepted when it uses up the numbers exactly (the optional flag
aside); otherwise the global tail ``H q b mu`` must. An error names both attempts.

:func:`write_siconos_dat` writes the same layout with sparse-block storage: d x d blocks for W
(diagonal blocks always present, as Siconos's local solvers need them); for global problems M is
split into the finest contiguous diagonal blocks its pattern allows and H uses the same row blocks
and d-column blocks. Values are written with ``repr`` (shortest exact form): a round trip is exact.
Problems with bilateral constraints (G) have no ``.dat`` form.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from workbench.errors import FileFormatError, UnsupportedError
from workbench.io.common import build_problem, check_file, format_error, one_line
from workbench.io.validate import TEXT_ENV, max_text_bytes
from workbench.io.validate import Refused as _Bad
from workbench.io.validate import check_count
from workbench.numbers import plain_float
from workbench.problem import TimeStepProblem

__all__ = ["read_siconos_dat", "write_siconos_dat"]


class _Tokens:
    """A cursor over the whitespace-separated words of a .dat file and their numeric values.

    ``values`` holds every word as a float; ``text`` is None when every word is a number, else a
    mask of the non-numeric words (only CSparse dumps have them) and ``words``/``lines`` keep the
    words and their line numbers, which the CSparse layout needs.
    """

    def __init__(self, values: np.ndarray, words: list[str] | None = None,
                 text: np.ndarray | None = None, source: str = ""):
        self.values = values
        self.words = words
        self.text = text
        self.source = source
        self.pos = 0
        self._lines: np.ndarray | None = None

    @property
    def left(self) -> int:
        return self.values.shape[0] - self.pos

    def _check_numeric(self, start: int, stop: int, what: str) -> None:
        if self.text is not None and self.text[start:stop].any():
            bad = start + int(np.argmax(self.text[start:stop]))
            raise _Bad(f"{what}: expected a number at token {bad + 1}, found {_shown(self.words[bad])!r}")

    def take(self, n: int, what: str) -> np.ndarray:
        if n > self.left:
            raise _Bad(f"file ends early: {what} needs {n} number(s) at position {self.pos}, "
                       f"only {self.left} left")
        self._check_numeric(self.pos, self.pos + n, what)
        out = self.values[self.pos:self.pos + n]
        self.pos += n
        return out

    def ints(self, n: int, what: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        a = self.take(n, what)
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise _Bad(f"{what} must be integers (at position {self.pos - n})")
        if n == 1 and a[0] > 0:
            check_count(int(a[0]), what)   # a declared size beyond the limit, named as such
        wrong = a < lo if hi is None else (a < lo) | (a > hi)
        if np.any(wrong):
            rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
            raise _Bad(f"{what} = {a[wrong][0]:g} must be {rng} (at position {self.pos - n})")
        return a.astype(np.int64)

    def int(self, what: str, lo: int = 0, hi: int | None = None) -> int:
        return int(self.ints(1, what, lo, hi)[0])

    def word(self, what: str) -> str:
        """The next word as text (for the words of a CSparse dump)."""
        if not self.left:
            raise _Bad(f"file ends early: {what} is missing")
        self.pos += 1
        return self.words[self.pos - 1] if self.words is not None else repr(self.values[self.pos - 1])

    def rest_of_line(self, what: str) -> list[str]:
        """The words from the cursor to the end of its line (the cursor moves past them)."""
        if not self.left:
            raise _Bad(f"file ends early: {what} is missing")
        if self._lines is None:
            self._lines = _line_numbers(self.source)
        line = self._lines[self.pos]
        stop = int(np.searchsorted(self._lines, line, side="right"))
        out = self.words[self.pos:stop]
        self.pos = stop
        return out


def _shown(word: str) -> str:
    return word if len(word) <= 20 else word[:20] + "..."


def _line_numbers(text: str) -> np.ndarray:
    """The line number of each whitespace-separated word of ``text``."""
    counts = [len(line.split()) for line in text.split("\n")]
    return np.repeat(np.arange(len(counts)), counts)


#: the longest word of a .dat file (a float in full takes 24 characters): a longer one is refused as
#: it stands, before numpy sizes a string array by it (one 6 GiB word asked numpy for 6.3 GiB x 4)
MAX_WORD = 64
#: the largest file read word by word (a file with words that are not numbers, the CSparse dumps):
#: a Python list of words takes about 20 bytes of memory per byte of file
WORD_PATH_BYTES = 8 * 2**20


def _tokens(path: Path) -> _Tokens:
    """The file's words. A file of numbers only is parsed straight into float64 (8 bytes of memory
    per number, never a list of words); one with words that are not numbers, only when it is at most
    WORD_PATH_BYTES, word by word."""
    import re
    import warnings
    try:
        size, limit = path.stat().st_size, max_text_bytes()
        if size > limit:
            raise format_error(path, f"a text problem file of {size:,} bytes, more than the limit of "
                                     f"{limit:,} (set {TEXT_ENV} to raise it)")
        data = path.read_bytes()
    except OSError as exc:
        raise format_error(path, f"cannot read the file ({exc.strerror or exc})") from None
    long = re.search(rb"\S{%d,}" % (MAX_WORD + 1), data)
    if long:
        raise format_error(path, f"a word of more than {MAX_WORD} characters at byte {long.start():,}; "
                                 "a .dat file holds numbers and short words")
    if not data.strip():
        raise format_error(path, "file holds no numbers")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # numpy's word for "stopped at a word"
        try:
            return _Tokens(np.fromstring(data, dtype=float, sep=" "))
        except (ValueError, DeprecationWarning):
            pass
    if len(data) > WORD_PATH_BYTES:
        raise format_error(path, f"holds words that are not numbers and is {len(data):,} bytes; such a file "
                                 f"(a CSparse dump) is read only up to {WORD_PATH_BYTES:,} bytes")
    text = data.decode("latin-1")
    words = text.split()
    # words that are not numbers: only the CSparse dumps (storage type 2) have them, and the
    # layout says where; the cursor refuses any that turns up where a number is expected
    values = np.array([plain_float(w) for w in words])
    text_mask = np.isnan(values) & np.array([w.lower().lstrip("+-") != "nan" for w in words])
    return _Tokens(values, words, text_mask, text)


# --------------------------------------------------------------------------- matrices
def _dense(tok: _Tokens, size0: int, size1: int, what: str) -> sp.csr_matrix:
    s0, s1 = tok.int(f"{what} dense size0"), tok.int(f"{what} dense size1")
    if (s0, s1) != (size0, size1):
        raise _Bad(f"{what}: dense sizes {s0} x {s1} differ from the header's {size0} x {size1}")
    if size0 * size1 > tok.left:
        raise _Bad(f"file ends early: {what} needs {size0 * size1} values, only {tok.left} left")
    values = tok.take(size0 * size1, f"{what} values")
    return sp.csr_matrix(values.reshape(size1, size0).T)


def _sparse_block(tok: _Tokens, size0: int, size1: int, what: str) -> sp.csr_matrix:
    nbblocks = tok.int(f"{what} nbblocks", 0, tok.left)
    if nbblocks == 0:
        return sp.csr_matrix((size0, size1))
    nb0 = tok.int(f"{what} blocknumber0", 1, tok.left)
    nb1 = tok.int(f"{what} blocknumber1", 1, tok.left)
    ends0 = tok.ints(nb0, f"{what} block row sizes", 1, size0)
    ends1 = tok.ints(nb1, f"{what} block column sizes", 1, size1)
    for ends, size, axis in ((ends0, size0, "row"), (ends1, size1, "column")):
        if np.any(np.diff(ends) <= 0) or ends[-1] != size:
            raise _Bad(f"{what}: cumulative block {axis} sizes must increase up to {size}, "
                       f"got ... {ends[-3:].tolist()}")
    filled1 = tok.int(f"{what} filled1", 1, nb0 + 1)
    filled2 = tok.int(f"{what} filled2", 0, tok.left)
    if filled2 != nbblocks:
        raise _Bad(f"{what}: filled2 = {filled2} differs from nbblocks = {nbblocks}")
    index1 = tok.ints(filled1, f"{what} block-row pointers", 0, nbblocks)
    if index1[0] != 0 or index1[-1] != nbblocks or np.any(np.diff(index1) < 0):
        raise _Bad(f"{what}: block-row pointers must rise from 0 to nbblocks = {nbblocks}")
    index2 = tok.ints(filled2, f"{what} block column indices", 0, nb1 - 1)

    starts0 = np.concatenate(([0], ends0[:-1]))
    starts1 = np.concatenate(([0], ends1[:-1]))
    brow = np.repeat(np.arange(filled1 - 1), np.diff(index1))   # block row of each block
    bcol = index2
    if np.unique(brow * nb1 + bcol).shape[0] != nbblocks:
        raise _Bad(f"{what}: the same block position appears twice")
    nrows = (ends0 - starts0)[brow]
    ncols = (ends1 - starts1)[bcol]
    sizes = nrows * ncols
    if nbblocks + sizes.sum(dtype=float) > tok.left:   # in floats: the int64 sum could wrap round
        raise _Bad(f"file ends early: {what} blocks need {nbblocks + sizes.sum(dtype=float):.0f} numbers, "
                   f"only {tok.left} left")
    total = int(nbblocks + sizes.sum())
    if total > tok.left:
        raise _Bad(f"file ends early: {what} blocks need {total} numbers, only {tok.left} left")
    chunk = tok.take(total, f"{what} blocks")
    # layout of chunk: [number_0, values_0..., number_1, values_1..., ...]
    heads = np.concatenate(([0], np.cumsum(sizes + 1)[:-1]))
    if np.any(chunk[heads] != np.arange(nbblocks)):
        b = int(np.nonzero(chunk[heads] != np.arange(nbblocks))[0][0])
        raise _Bad(f"{what}: block {b} is numbered {chunk[heads[b]]:g} (block sizes and the "
                   "data do not line up)")
    block = np.repeat(np.arange(nbblocks), sizes)                 # block of each value
    # position of each value inside its block (column-major)
    k = np.arange(block.shape[0]) - np.repeat(np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    values = chunk[np.repeat(heads + 1, sizes) + k]
    nr = nrows[block]
    rows = starts0[brow][block] + k % nr
    cols = starts1[bcol][block] + k // nr
    return sp.coo_matrix((values, (rows, cols)), shape=(size0, size1)).tocsr()


_CSPARSE_SIZES = re.compile(r"(?P<triplet>triplet: )?(?P<m>\d+)-by-(?P<n>\d+), nzmax: (?P<nzmax>\d+) "
                            r"nnz: (?P<nnz>\d+)(?:, 1-norm: (?P<norm>\S+))?")
_CSPARSE_ORIGINS = {1: "triplet", 2: "CSC", 3: "CSR"}


def _csparse(tok: _Tokens, size0: int, size1: int, what: str) -> sp.csr_matrix:
    """A CSparse dump (``NSM_write_in_file``: origin, then ``cs_print``), values printed with %g.

    Layout: ``origin`` (1 triplet, 2 CSC, 3 CSR), a header line ``CSparse Version ...`` (skipped
    whole: its wording differs between CSparse versions), a size line ``[triplet: ]M-by-N, nzmax: Z
    nnz: K[, 1-norm: X]``, then for triplets K lines ``i j : x`` (row, column) and for compressed
    storage one section per column (per row for CSR) ``col j : locations a to b`` followed by its
    b - a + 1 lines ``i : x``. The 1-norm is checked against the values read.
    """
    origin = tok.int(f"{what} CSparse origin", 1, 3)
    first = tok.word(f"{what} CSparse header")
    if first != "CSparse":
        raise _Bad(f"{what}: storage type 2 needs the line 'CSparse Version ...' after the origin, "
                   f"found {_shown(first)!r}")
    tok.rest_of_line(f"{what} CSparse header")
    line = " ".join(tok.rest_of_line(f"{what} CSparse size line"))
    sizes = _CSPARSE_SIZES.fullmatch(line)
    if sizes is None:
        raise _Bad(f"{what}: unreadable CSparse size line {_shown(line)!r}")
    m, n, nnz = int(sizes["m"]), int(sizes["n"]), check_count(int(sizes["nnz"]), f"{what} CSparse nnz")
    if (m, n) != (size0, size1):
        raise _Bad(f"{what}: CSparse sizes {m} x {n} differ from the header's {size0} x {size1}")
    if bool(sizes["triplet"]) != (origin == 1):
        raise _Bad(f"{what}: origin {origin} ({_CSPARSE_ORIGINS[origin]}) does not match the "
                   f"{'triplet' if sizes['triplet'] else 'compressed'} dump that follows")
    if origin == 1:
        if 4 * nnz > tok.left:
            raise _Bad(f"file ends early: {what} declares {nnz} triplets, only {tok.left} words left")
        start = tok.pos
        tok.pos += 4 * nnz
        colons = np.array(tok.words[start + 2:tok.pos:4]) if nnz else np.array([], dtype=str)
        if np.any(colons != ":"):
            raise _Bad(f"{what}: triplet lines must read 'i j : x' (at token {start + 1})")
        for offset in (0, 1, 3):
            _numbers_at(tok, np.arange(start + offset, tok.pos, 4), f"{what} triplet")
        rows = _indices(tok.values[start:tok.pos:4], m, f"{what} triplet rows")
        cols = _indices(tok.values[start + 1:tok.pos:4], n, f"{what} triplet columns")
        A = sp.coo_matrix((tok.values[start + 3:tok.pos:4], (rows, cols)), shape=(m, n)).tocsr()
    else:
        outer, inner = (n, m) if origin == 2 else (m, n)
        if 7 * outer + 3 * nnz > tok.left:
            raise _Bad(f"file ends early: {what} declares {outer} sections and {nnz} entries, "
                       f"only {tok.left} words left")
        pointers = np.zeros(outer + 1, dtype=np.int64)
        positions = np.empty(nnz, dtype=np.int64)   # token of each entry's index
        for j in range(outer):
            head = tok.pos
            a, b = tok.values[head + 4], tok.values[head + 6]
            if (tok.words[head] != "col" or tok.values[head + 1] != j or tok.words[head + 3] != "locations"
                    or a != pointers[j] or not b + 1 >= a or b + 1 > nnz or b != np.floor(b)):
                raise _Bad(f"{what}: section {j} must read 'col {j} : locations {pointers[j]} to ...' "
                           f"within the {nnz} declared entries (at token {head + 1})")
            pointers[j + 1] = int(b) + 1
            count = pointers[j + 1] - pointers[j]
            positions[pointers[j]:pointers[j + 1]] = head + 7 + 3 * np.arange(count)
            tok.pos = head + 7 + 3 * count
            if tok.pos > tok.values.shape[0]:
                raise _Bad(f"file ends early inside {what} section {j}")
        if pointers[-1] != nnz:
            raise _Bad(f"{what}: the sections hold {pointers[-1]} entries, the size line says {nnz}")
        if nnz:
            if np.any(np.array(tok.words)[positions + 1] != ":"):
                raise _Bad(f"{what}: entry lines must read 'i : x'")
            for offset in (0, 2):
                _numbers_at(tok, positions + offset, f"{what} entry")
        index = _indices(tok.values[positions], inner, f"{what} indices")
        cls = sp.csc_matrix if origin == 2 else sp.csr_matrix
        A = cls((tok.values[positions + 2], index, pointers), shape=(m, n)).tocsr()
    if sizes["norm"] is not None:
        stated, norm = plain_float(sizes["norm"]), (abs(A).sum(axis=0).max() if A.nnz else 0.0)
        if not np.isclose(norm, stated, rtol=1e-4, atol=1e-300):
            raise _Bad(f"{what}: the 1-norm of the values read, {norm:.6g}, differs from the "
                       f"stated {sizes['norm']}")
    return A


def _numbers_at(tok: _Tokens, positions: np.ndarray, what: str) -> None:
    """Check that the words at ``positions`` are numbers."""
    if tok.text is not None and positions.size and tok.text[positions].any():
        bad = int(positions[np.argmax(tok.text[positions])])
        raise _Bad(f"{what}: expected a number at token {bad + 1}, found {_shown(tok.words[bad])!r}")


def _indices(a: np.ndarray, size: int, what: str) -> np.ndarray:
    if a.size and (not np.all(a == np.round(a)) or a.min() < 0 or a.max() >= size):
        raise _Bad(f"{what} must be integers in [0, {size})")
    return a.astype(np.int64)


def _matrix(tok: _Tokens, what: str) -> sp.csr_matrix:
    storage = tok.int(f"{what} storage type", 0, 2)
    # every dimension is the length of a vector that follows (q, b): a size beyond the numbers
    # left is an error, found before anything is allocated
    size0 = tok.int(f"{what} size0", 0, tok.left)
    size1 = tok.int(f"{what} size1", 0, tok.left)
    if storage == 0:
        return _dense(tok, size0, size1, what)
    if storage == 1:
        return _sparse_block(tok, size0, size1, what)
    return _csparse(tok, size0, size1, what)


def _finish(tok: _Tokens) -> None:
    """Accept the end of the data: nothing left, or the 0/1 ``isComplete`` flag of older writers."""
    if tok.left == 1 and tok.values[-1] in (0.0, 1.0):
        tok.pos += 1
    if tok.left:
        raise _Bad(f"{tok.left} number(s) left over after mu")


def _local_tail(tok: _Tokens, nc: int, W: sp.csr_matrix) -> dict:
    """After ``d nc W``: ``q mu [flag]``."""
    q = tok.take(W.shape[1], "q")
    mu = tok.take(nc, "mu")
    _finish(tok)
    return dict(W=W, q=q, mu=mu)


def _global_tail(tok: _Tokens, nc: int, M: sp.csr_matrix) -> dict:
    """After ``d nc M``: ``H q b mu [flag]``."""
    H = _matrix(tok, "H")
    q = tok.take(M.shape[0], "q")
    b = tok.take(H.shape[1], "b")
    mu = tok.take(nc, "mu")
    _finish(tok)
    return dict(M=M, D=H, k=q, b=b, mu=mu)


def read_siconos_dat(path: os.PathLike | str) -> TimeStepProblem:
    """Read a Siconos local or global friction-contact ``.dat`` file (see the module docstring).

    ``d nc MATRIX`` is common to both layouts; the rest is read as the local tail ``q mu`` and,
    when that does not use up the numbers exactly, as the global tail ``H q b mu``.
    """
    p = check_file(path)
    tok = _tokens(p)
    try:
        d = tok.int("d", 1, 3)
        nc = tok.int("nc", 0, tok.left)
        first = _matrix(tok, "the first matrix (W or M)")
    except _Bad as exc:
        raise format_error(p, exc) from None
    start = tok.pos
    try:
        kwargs, kind = _local_tail(tok, nc, first), "local"
    except _Bad as local_error:
        tok.pos = start
        try:
            kwargs, kind = _global_tail(tok, nc, first), "global"
        except _Bad as global_error:
            raise format_error(p, f"neither a local problem (d nc W q mu: {local_error}) nor a global one "
                                  f"(d nc M H q b mu: {global_error})") from None
    metadata = {"source": str(p), "format": "siconos-dat", "kind": kind}
    if tok.words is not None:
        metadata["lossy"] = "CSparse storage: matrix values printed with 6 significant digits"
    return build_problem(p, d=d, name=p.stem, metadata=metadata, **kwargs)


# --------------------------------------------------------------------------- writing
def _contiguous_blocks(M: sp.spmatrix) -> np.ndarray:
    """Cumulative sizes of the finest split of M into contiguous diagonal blocks (no entry outside)."""
    n = M.shape[0]
    C = sp.coo_matrix(M)
    reach = np.arange(n)
    np.maximum.at(reach, C.row, C.col)
    np.maximum.at(reach, C.col, C.row)
    return np.nonzero(np.maximum.accumulate(reach) <= np.arange(n))[0] + 1


def _fmt(values) -> str:
    return " ".join(map(repr, np.asarray(values, dtype=float).tolist()))


def _ints(values) -> str:
    return "\t".join(str(int(v)) for v in values)


def _sbm_lines(A: sp.spmatrix, ends0: np.ndarray, ends1: np.ndarray, diagonal: bool) -> list[str]:
    """``A`` as a Siconos NumericsMatrix with sparse-block storage, as lines of text."""
    size0, size1 = A.shape
    nb0, nb1 = ends0.shape[0], ends1.shape[0]
    starts0 = np.concatenate(([0], ends0[:-1]))
    starts1 = np.concatenate(([0], ends1[:-1]))
    C = sp.coo_matrix(A)
    rb = np.searchsorted(ends0, C.row, side="right")
    cb = np.searchsorted(ends1, C.col, side="right")
    keys = rb * nb1 + cb
    if diagonal:
        keys_all = np.concatenate((keys, np.arange(min(nb0, nb1)) * (nb1 + 1)))
    else:
        keys_all = keys
    ukeys = np.unique(keys_all)                      # row-major order of the blocks
    brow, bcol = ukeys // nb1, ukeys % nb1
    nrows, ncols = (ends0 - starts0)[brow], (ends1 - starts1)[bcol]
    offsets = np.concatenate(([0], np.cumsum(nrows * ncols)))
    flat = np.zeros(offsets[-1])
    bid = np.searchsorted(ukeys, keys)
    flat[offsets[bid] + (C.row - starts0[rb]) + (C.col - starts1[cb]) * nrows[bid]] = C.data
    index1 = np.concatenate(([0], np.cumsum(np.bincount(brow, minlength=nb0))))
    lines = ["1", str(size0), str(size1), str(ukeys.shape[0])]
    if ukeys.shape[0] == 0:
        return lines
    lines += [str(nb0), str(nb1), _ints(ends0), _ints(ends1), str(nb0 + 1), str(ukeys.shape[0]),
              _ints(index1), _ints(bcol)]
    for b in range(ukeys.shape[0]):                  # one line per block: fine, blocks are few
        lines.append(str(b))
        lines.append(_fmt(flat[offsets[b]:offsets[b + 1]]))
    return lines


def write_siconos_dat(problem: TimeStepProblem, path: os.PathLike | str) -> None:
    """Write ``problem`` as a Siconos ``.dat`` file with sparse-block storage (exact round trip)."""
    d, nc = problem.d, problem.n_contacts
    contact_ends = np.arange(1, nc + 1) * d
    lines = [str(d), str(nc)]
    if problem.is_global:
        if problem.G is not None:
            raise UnsupportedError(f"{problem.name or 'this problem'} has bilateral constraints (G), "
                                   "which the Siconos .dat format cannot hold")
        dof_ends = _contiguous_blocks(problem.M)
        lines += _sbm_lines(problem.M, dof_ends, dof_ends, diagonal=True)
        lines += _sbm_lines(problem.D, dof_ends, contact_ends, diagonal=False)
        lines += [_fmt(problem.k), _fmt(problem.b)]
    else:
        lines += _sbm_lines(problem.N, contact_ends, contact_ends, diagonal=True)  # N is W
        lines.append(_fmt(problem.r))                                              # r is q
    lines.append(_fmt(problem.mu))
    try:
        Path(path).write_text("\n".join(lines) + "\n")
    except OSError as exc:
        raise FileFormatError(one_line(f"{path}: cannot write the file: {exc}")) from None
