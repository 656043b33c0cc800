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
import re
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from workbench.errors import FileFormatError, printable, unsafe

__all__ = ["atomic_output", "default_mode", "remove_partial", "PARTIAL", "plain_name", "inside", "relative_under",
           "own_folder", "open_own", "check_output"]

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
    removed. The folder of ``path`` must exist. An OSError (a full disk, a folder in the way) becomes a
    one-line FileFormatError naming ``path``."""
    target = Path(path)
    check_output(target)
    try:
        # the writer's pid in the name: a clean-up removes only folders whose writer is gone
        folder = tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}-", suffix=PARTIAL, dir=target.parent)
    except OSError as exc:
        raise FileFormatError(f"{target}: cannot write the file: {exc.strerror or exc}") from None
    try:
        try:
            yield Path(folder) / target.name
            mode = default_mode()
            for name in sorted(os.listdir(folder)):
                check_output(target.parent / name)
                os.chmod(os.path.join(folder, name), mode)
                os.replace(os.path.join(folder, name), target.parent / name)
        except OSError as exc:  # a full disk, a folder where the file goes, ...: one line naming the file
            raise FileFormatError(f"{target}: cannot write the file: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_partial(folder: os.PathLike | str) -> None:
    """Delete the temporary folders that writers killed inside :func:`atomic_output` left in ``folder``;
    never one whose writer (the pid in its name) is still running on this machine, never a symbolic
    link or what it points to (``folder`` itself must be a folder, not a link to one)."""
    if os.path.islink(folder) or not os.path.isdir(folder):
        return
    for leftover in Path(folder).glob(f".*{PARTIAL}"):
        match = re.search(r"\.(\d+)-[^.]*" + re.escape(PARTIAL) + "$", leftover.name)
        if (match and _alive(int(match.group(1)))) or not stat.S_ISDIR(os.lstat(leftover).st_mode):
            continue
        shutil.rmtree(leftover, ignore_errors=True)  # rmtree never follows a link inside it


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid > 0
    return True


def plain_name(name: str, what: str) -> str:
    """``name`` when it is a plain file name (no folder separator, not ``.`` or ``..``, no leading dot,
    no character the printable-name rule refuses (workbench.errors.unsafe: C0/C1 controls, bidi
    overrides and isolates, line and paragraph separators), at most 200 characters); an InputError
    naming ``what`` otherwise, the name shown escaped. Study names become folder names (results/NAME,
    reports/NAME), so a name must never be a path."""
    bad = (not isinstance(name, str) or not name or name in (".", "..") or name.startswith(".")
           or any(c in name for c in "/\\") or any(unsafe(c) for c in name) or len(name) > 200)
    if bad:
        raise FileFormatError(f"{what} '{printable(str(name)[:200], one_line=False)}' is not a plain name (a name "
                              "becomes a folder name: no '/', '\\', leading '.', control, bidi or line-separator "
                              "characters, or more than 200 characters)")
    return name


def inside(path: os.PathLike | str, roots, what: str) -> Path:
    """``path`` with its symbolic links resolved, when it lies in one of the folders ``roots`` (their
    links resolved too); an InputError naming ``what`` and the roots otherwise."""
    real = Path(path).resolve()
    resolved = [Path(r).resolve() for r in roots]
    if not any(real == r or r in real.parents for r in resolved):
        raise FileFormatError(f"{what}: {path} resolves to {real}, outside "
                              f"{' and '.join(str(r) for r in resolved) or 'any allowed folder'}")
    return real


def relative_under(root: Path, rel: str, what: str) -> Path:
    """``root / rel`` for a relative ``rel`` without ``..`` (an InputError naming ``what`` otherwise);
    when it exists, its symbolic links must resolve inside ``root`` too (:func:`inside`). Globs are
    kept as they are: the caller checks each file they match."""
    import glob
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or rel.startswith("~") or ".." in parts:
        raise FileFormatError(f"{what}: {rel!r} must be a path relative to {root}, without '..'")
    path = root / rel
    if not glob.has_magic(rel) and os.path.lexists(path):
        inside(path, [root], what)
    return path


# ---------------------------------------------------------------- a folder the workbench owns
#
# Inside a folder the workbench owns (a study's results folder) every entry is the workbench's own:
# folders are real folders, files are regular files with one name (st_nlink == 1), and nothing is
# reached through a symbolic link. A received or tampered folder can hold links, hard links, FIFOs
# or devices in those places; they are refused with one line, never followed, written or waited on.

def _refuse(path, why: str) -> FileFormatError:
    return FileFormatError(f"{path}: {why}; the workbench uses only the files and folders it created itself here "
                           "(remove it, or give a new folder)")


def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a folder" if stat.S_ISDIR(mode) else "a file")


def own_folder(path: os.PathLike | str, create: bool = True) -> Path:
    """``path`` when it is a real folder (not a symbolic link), created (one level) when missing and
    ``create``; a FileFormatError naming it otherwise."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return path
        try:
            os.mkdir(path)
        except FileExistsError:
            pass
        except OSError as exc:
            raise FileFormatError(f"{path}: cannot create the folder: {exc.strerror or exc}") from None
        info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, f"is {_kind(info.st_mode)}, not a folder")
    return path


def open_own(path: os.PathLike | str, write: bool = False) -> int:
    """A file descriptor of the regular file ``path``, opened without following a symbolic link
    (O_NOFOLLOW), without waiting on a FIFO (O_NONBLOCK) and checked after opening (fstat: a regular
    file with one link, so not a hard link to a file elsewhere); ``write``: opened to append, created
    when missing. A FileFormatError naming the path otherwise; the caller closes the descriptor."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= (os.O_WRONLY | os.O_APPEND | os.O_CREAT) if write else os.O_RDONLY
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if os.path.islink(path):
            raise _refuse(path, "is a symbolic link") from None
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = None
        if mode is None or stat.S_ISREG(mode):    # a regular file the system refuses (read-only, no access)
            raise FileFormatError(f"{path}: cannot open{' for writing' if write else ''}: "
                                  f"{exc.strerror or exc}") from None
        raise _refuse(path, f"is {_kind(mode)}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise _refuse(path, f"is {_kind(info.st_mode)}" if not stat.S_ISREG(info.st_mode) else
                      f"has {info.st_nlink} names (a hard link)")
    os.set_blocking(fd, True)
    return fd


def check_output(path: os.PathLike | str) -> None:
    """An output (export's OUT, ``--history``, a file of ``--out``) goes to a new path or replaces a
    regular file; a symbolic link, a device, a FIFO or a socket there is refused, never replaced (run
    as root, replacing ``/dev/null`` would break the machine)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(mode):
        raise FileFormatError(f"{path}: is {_kind(mode)}; an output is written only to a new path or over a "
                              "regular file")
