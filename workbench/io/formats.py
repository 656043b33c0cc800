"""The problem file formats, one registry line each: adding a format is a reader module in
``workbench/io/`` (a function ``path -> TimeStepProblem`` that checks the file first, see
:mod:`workbench.io.validate`) and one line in :data:`FORMATS`. :mod:`workbench.sources` (which
files are problems, the accepted forms in its messages), the command line's epilog and the docs'
list of formats (``tests/test_io.py`` checks docs/cli.md) derive from it.

This module is plain data and one loader: it imports no reader until a file is read, so the command
line starts without numpy or h5py.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Format", "FORMATS", "format_of", "files_accepted", "load_problem"]


@dataclass(frozen=True)
class Format:
    """A problem file format: its registry name, the suffixes it is known by, one line saying what it
    is, its reader (``module:function``), and the first bytes that identify it whatever the suffix
    (empty: none)."""
    name: str
    suffixes: tuple[str, ...]
    description: str
    reader: str
    signature: bytes = b""


#: in the order :func:`format_of` tries them; the last one is read when nothing else matches
FORMATS: tuple[Format, ...] = (
    Format("fclib", (".hdf5", ".h5", ".hdf"), "FCLib", "workbench.io.fclib:read_fclib", b"\x89HDF\r\n\x1a\n"),
    Format("native", (".npz",), "workbench", "workbench.io.native:load_problem_native", b"PK\x03\x04"),
    Format("siconos", (".dat",), "Siconos", "workbench.io.siconos_dat:read_siconos_dat"),
)


def format_of(suffix: str, head: bytes) -> Format:
    """The format of a file with ``suffix`` whose first bytes are ``head``: the first format whose
    signature starts ``head`` or whose suffixes hold ``suffix``, else the last one."""
    suffix = suffix.lower()
    return next((f for f in FORMATS if (f.signature and head.startswith(f.signature)) or suffix in f.suffixes),
                FORMATS[-1])


def files_accepted() -> str:
    """The formats as the messages and the help name them: ``.hdf5/.h5/.hdf FCLib, ...``."""
    return ", ".join(f"{'/'.join(f.suffixes)} {f.description}" for f in FORMATS)


def load_problem(path: os.PathLike | str):
    """Read a problem file with the reader of its format (:func:`format_of`: the file's first bytes, the
    HDF5 or zip signature, then its extension; anything else is read as Siconos text)."""
    from workbench.io.common import check_file, format_error

    p: Path = check_file(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise format_error(p, f"cannot read the file ({exc.strerror or exc})") from None
    module, _, function = format_of(p.suffix, head).reader.partition(":")
    return getattr(importlib.import_module(module), function)(p)
