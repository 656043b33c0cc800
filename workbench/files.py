"""Writing output files the same way everywhere: atomically, with the permissions of the umask.

Every file the workbench writes for a user (exports, problem files, study results, reports,
simulation tables, generated datasets) goes through :func:`atomic_output`: the writer writes into a
private temporary folder beside the target (same file system), and only when it has finished are its
files moved into place with ``os.replace`` (atomic on POSIX). A killed or failing writer therefore
leaves no half-written file, and an existing file is replaced whole or not at all. Every file gets
mode ``0o666 & ~umask``, whatever the library that wrote it chose (MOSEK writes 0600).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from workbench.errors import FileFormatError

__all__ = ["atomic_output", "default_mode", "remove_partial", "PARTIAL"]

#: suffix of the temporary folders of atomic_output (what a killed writer leaves behind)
PARTIAL = ".partial"


def default_mode() -> int:
    """0o666 less the process's umask: what ``open(path, "w")`` gives a new file."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def atomic_output(path: os.PathLike | str) -> Iterator[Path]:
    """Yield a temporary path with the same name as ``path`` for the writer to write to.

    Once the ``with`` body has finished, every file the writer left beside the temporary path (the
    file itself, and sidecars such as ``PATH.json`` or ``PATH.col``) is given the umask's permissions
    and moved next to ``path``; if the body raises, nothing is moved and the temporary folder is
    removed. The folder of ``path`` must exist."""
    target = Path(path)
    try:
        folder = tempfile.mkdtemp(prefix=f".{target.name}.", suffix=PARTIAL, dir=target.parent)
    except OSError as exc:
        raise FileFormatError(f"{target}: cannot write the file: {exc.strerror or exc}") from None
    try:
        yield Path(folder) / target.name
        mode = default_mode()
        for name in sorted(os.listdir(folder)):
            os.chmod(os.path.join(folder, name), mode)
            os.replace(os.path.join(folder, name), target.parent / name)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_partial(folder: os.PathLike | str) -> None:
    """Delete the temporary folders that writers killed inside :func:`atomic_output` left in ``folder``."""
    for leftover in Path(folder).glob(f".*{PARTIAL}"):
        shutil.rmtree(leftover, ignore_errors=True)
