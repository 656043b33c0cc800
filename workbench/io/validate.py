"""The checks every problem-file reader makes before numpy, scipy or h5py acts on the file's data.

A problem file may come from anyone. The readers (:mod:`workbench.io.fclib`,
:mod:`workbench.io.siconos_dat`, :mod:`workbench.io.native`) refuse, with one line naming the file
and the problem (a :class:`~workbench.errors.FileFormatError` or
:class:`~workbench.errors.ProblemDataError`, exit code 2):

* anything that is not a regular file (a directory, FIFO, device, socket, broken link), and empty files;
* a declared size above the entry limit: any dimension (contacts, rows, columns) or array length
  (entries of a matrix or vector) above ``WORKBENCH_MAX_ENTRIES`` (default 100,000,000; set the
  environment variable to raise or lower it), refused before anything is allocated; a Siconos text
  file larger than ``WORKBENCH_MAX_TEXT_MB`` megabytes (default 512) is refused before it is read;
* sparse structure that is not one: pointers that do not start at 0, decrease, or do not end at the
  number of stored entries, the wrong number of pointers, indices outside the matrix, arrays of
  different lengths (checked with numpy before scipy builds or sorts anything: scipy's compiled
  routines trust the structure, and a non-monotone pointer array corrupts the heap);
* values that are not real numbers: complex W, q or mu (never silently truncated to their real part),
  strings, records, references, objects; matrices that are not 2-D and vectors that are not 1-D
  (a 2-D mu); NaN or Inf anywhere in the data; negative mu (:class:`~workbench.problem.TimeStepProblem`);
* in an ``.npz``: an entry whose ``.npy`` header declares a shape, dtype or size the entry does not
  hold, or more entries than the limit allows, checked from the zip directory and the header alone
  before anything is decompressed (a zip bomb is refused, not inflated); pickled objects are never
  loaded; metadata that is not a JSON object or nests deeper than a bound;
* in an HDF5 file: any link the reader follows that is not a hard link inside the file (external
  links to other files, soft links), datasets with external storage (raw data in another file),
  virtual datasets (data mapped from other files), datasets of a non-numeric type where numbers are
  expected, and chunks of more than 16 MiB or more than 65,536 chunks in one dataset (from the metadata);
* in both compressed formats, a read budget: the decompressed bytes every dataset or entry declares,
  together, at most READ_PER_BYTE (16; ``WORKBENCH_MAX_INFLATION`` raises it) per byte of the file plus
  READ_FLOOR (32 MiB), summed from the
  metadata before anything is decompressed (a 4 MB gzip bomb of 3e7 contacts is refused, not inflated);
  ``.npz`` arrays of another byte order or width (big-endian, float32) are converted to native float64/int64.

The limits are read from the environment each time a file is read, so a test or a batch script can
set them without restarting.
"""

from __future__ import annotations

import numpy as np


__all__ = ["READ_PER_BYTE", "READ_FLOOR", "CEILINGS", "read_budget", "budget_words", "Refused", "max_entries", "check_count", "check_real", "max_text_bytes"]

#: bytes of decompressed data a compressed file (HDF5, .npz) may hold per byte of its size, beyond
#: READ_FLOOR: room for any real compression of numbers (floats compress 2-4x), none for a bomb (zeros
#: compress 1000x); checked from the metadata before anything is decompressed. A file of 4 MB may
#: inflate to 96 MB: the memory a read of it may take stays well under 500 MB
READ_PER_BYTE = 16
READ_FLOOR = 32 * 2**20
#: raises READ_PER_BYTE for a legitimate file that compresses better than that
INFLATION_ENV = "WORKBENCH_MAX_INFLATION"


def read_budget(file_size: int) -> int:
    """Decompressed bytes a compressed problem file of ``file_size`` bytes may hold: READ_PER_BYTE
    (or ``WORKBENCH_MAX_INFLATION``) per byte of the file, plus READ_FLOOR."""
    from workbench.limits import env_limit
    per_byte = env_limit(INFLATION_ENV, READ_PER_BYTE, CEILINGS[INFLATION_ENV], "bytes per byte")
    return int(per_byte * file_size) + READ_FLOOR


def budget_words() -> str:
    """How the read budget is named in messages."""
    return (f"{READ_PER_BYTE} bytes per byte of file and {READ_FLOOR // 2**20} MiB; set {INFLATION_ENV} to raise "
            "the bytes per byte")

ENTRIES_ENV = "WORKBENCH_MAX_ENTRIES"
DEFAULT_MAX_ENTRIES = 100_000_000
TEXT_ENV = "WORKBENCH_MAX_TEXT_MB"
DEFAULT_MAX_TEXT_MB = 512
#: what no setting of these variables passes (workbench.limits.env_limit): 2^32 entries (32 GiB an
#: array of float64), a text file of 64 GiB, an inflation of 10,000 (a 1 MB file read as 10 GB)
CEILINGS = {ENTRIES_ENV: 2**32, TEXT_ENV: 65_536, INFLATION_ENV: 10_000}


class Refused(Exception):
    """Internal to the readers: a file the reader refuses; turned into a FileFormatError naming the file."""


def _env_limit(name: str, default: int) -> int:
    from workbench.limits import env_limit
    return env_limit(name, default, CEILINGS[name], kind=int)


def max_entries() -> int:
    """The most entries any one dimension or array of a problem file may declare (``WORKBENCH_MAX_ENTRIES``)."""
    return _env_limit(ENTRIES_ENV, DEFAULT_MAX_ENTRIES)


def max_text_bytes() -> int:
    """The largest Siconos text file read, in bytes (``WORKBENCH_MAX_TEXT_MB``)."""
    return _env_limit(TEXT_ENV, DEFAULT_MAX_TEXT_MB) * 1_000_000


def check_count(count: int, what: str) -> int:
    """``count`` (a declared size) after checking it is within :func:`max_entries`."""
    limit = max_entries()
    if count > limit:
        raise Refused(f"{what} declares {count:,} entries, more than the limit of {limit:,} "
                      f"(set {ENTRIES_ENV} to raise it)")
    return count


def check_real(dtype: np.dtype, what: str) -> None:
    """Refuse a dtype that is not a real number type (complex, strings, records, objects)."""
    if dtype.kind == "c":
        raise Refused(f"{what} has complex values (dtype {dtype}); only real numbers are accepted")
    if dtype.kind not in "iuf" or dtype.fields is not None or dtype.subdtype is not None:
        raise Refused(f"{what} must hold real numbers, got dtype {dtype}")
