"""A results directory: one parquet file per run, written atomically, consolidated on read.

Layout::

    plan.json                the current plan: study name, methods, problems, run keys, report options
    study.toml               the text of the study file that made the plan
    sessions/<id>.json       provenance of each ``workbench run`` invocation (versions, CPU, date, ...)
    problems/*.npz           generated problems, exactly as they were solved
    runs/<key>.parquet       one row per run (the workbench's metrics of the returned impulses)
    histories/<key>.parquet  that run's per-iteration history, a long table keyed by run
    logs/worker.log          what worker processes printed
    .lock                    held (fcntl.flock) by the one ``workbench run`` writing here; holds its pid

Everything inside is the workbench's own (workbench.files.own_folder, open_own): folders are real
folders, files regular files with one link, nothing is reached through a symbolic link, nothing is
waited on (a FIFO). A folder holding anything else there is refused with one line naming the entry.

Why one file per run. The driver is the only writer; each file is written in a temporary folder
beside it and renamed (``os.replace``, atomic on POSIX, relative to the held folder: ResultStore), so a study
killed at any instant leaves each run either completely recorded or absent, never torn or twice,
and a restart skips the keys present.
A parquet file cannot be appended to (its footer closes it), and an append-only log would need its
own repair of a torn last record. The history is written before the row, so the row is the commit
marker: a history without its row is simply overwritten when the run is redone.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Iterable, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workbench.errors import FileFormatError, InputError
from workbench.files import PARTIAL, check_output, open_own, own_folder, plain_name, remove_partial

__all__ = ["ResultStore", "LOCK"]

#: the lock file of a results folder (ResultStore.locked)
LOCK = ".lock"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class ResultStore:
    """The results directory ``root`` (created on first write).

    The folder is held, not re-resolved: the first write (or :meth:`locked`) opens it once (a
    directory descriptor; the name the user gave may be a link) and every later write goes relative to
    that descriptor (``dir_fd``: folders below it opened with O_NOFOLLOW, files created with O_EXCL and
    renamed within it), after checking that the name still leads to the same folder (st_dev, st_ino).
    A folder swapped during a run - replaced by a link to elsewhere, renamed, removed - is refused in
    one line, and nothing is written anywhere but in the folder that was checked."""

    def __init__(self, root: os.PathLike | str):
        self.root = Path(root)
        self.runs_dir = self.root / "runs"
        self.histories_dir = self.root / "histories"
        self._held: int | None = None
        self._identity: tuple[int, int] | None = None

    def _hold(self) -> int:
        """The descriptor of the results folder: opened (and created) on the first call, checked on
        every later one - the name must still lead to the folder first opened; InputError otherwise."""
        if self._held is None:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.root, _DIR_FLAGS)
            except OSError as exc:
                raise InputError(f"{self.root}: cannot use it as the results folder: {exc.strerror or exc}") from None
            info = os.fstat(fd)
            self._held, self._identity = fd, (info.st_dev, info.st_ino)
            return fd
        try:
            info = os.stat(self.root)
            now = (info.st_dev, info.st_ino)
        except OSError:
            now = None
        if now != self._identity:
            raise InputError(f"{self.root}: the results folder was replaced during the run (it now "
                             f"{'leads to another folder' if now else 'is missing'}); nothing more is written: "
                             "the runs recorded so far are in the folder as it was")
        return self._held

    def _release(self) -> None:
        if self._held is not None:
            os.close(self._held)
            self._held = self._identity = None

    def _subfolder(self, relative: str) -> int:
        """A new descriptor of the folder ``relative`` below the held folder, each level created when
        missing and opened without following a link (a link or a file there: one line)."""
        fd = os.dup(self._hold())
        for part in Path(relative).parts:
            try:
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
                nfd = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                os.close(fd)
                raise FileFormatError(f"{self.root / relative}: cannot use it as a folder of the results "
                                      f"({exc.strerror or exc}); the workbench uses only the folders it created "
                                      "itself here (remove it, or give a new folder)") from None
            os.close(fd)
            fd = nfd
        return fd

    # ------------------------------------------------------------------ writing
    def folder(self, relative: str, create: bool = True) -> Path:
        """The folder ``relative`` of the results folder (created when missing and ``create``), every
        level below the root a real folder, never a link (workbench.files.own_folder); the root itself
        is the folder the user named, and may be reached through a link."""
        path = self.root
        if create:
            self.root.mkdir(parents=True, exist_ok=True)
        elif not os.path.lexists(self.root):
            return self.root / relative
        if not self.root.is_dir():
            raise InputError(f"{self.root}: not a folder")
        for part in Path(relative).parts:
            path = own_folder(path / part, create)
        return path

    def log_path(self) -> Path:
        """``logs/worker.log``, created or checked (a regular file with one link, not a FIFO)."""
        path = self.folder("logs") / "worker.log"
        os.close(open_own(path, write=True))
        return path

    def _replace(self, path: Path, write) -> None:
        """Write the file ``path`` of the folder atomically, relative to the held folder: ``write(f)``
        fills a new file (a binary file object) in a temporary folder beside it (named as
        workbench.files.atomic_output names its own, so remove_partial clears what a kill leaves),
        which is then renamed over ``path`` - never over a link, a FIFO or a device."""
        relative = path.relative_to(self.root)
        parent = self._subfolder(str(relative.parent))
        name, tmp, tmp_fd = relative.name, f".{relative.name}.{os.getpid()}-{secrets.token_hex(4)}{PARTIAL}", None
        try:
            os.mkdir(tmp, 0o700, dir_fd=parent)
            tmp_fd = os.open(tmp, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=tmp_fd)
            with os.fdopen(fd, "wb") as f:
                write(f)
            try:
                mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
            except FileNotFoundError:
                mode = None
            if mode is not None and not stat.S_ISREG(mode):
                check_output(path)      # its one line: a link, a FIFO, a device is never replaced
            os.replace(name, name, src_dir_fd=tmp_fd, dst_dir_fd=parent)
        except OSError as exc:
            raise FileFormatError(f"{path}: cannot write the file: {exc.strerror or exc}") from None
        finally:
            if tmp_fd is not None:
                with suppress(OSError):
                    os.unlink(name, dir_fd=tmp_fd)
                os.close(tmp_fd)
                with suppress(OSError):
                    os.rmdir(tmp, dir_fd=parent)
            os.close(parent)

    def write_json(self, relative: str, obj: Any) -> None:
        text = json.dumps(obj, indent=2, default=str)
        self._replace(self.root / relative, lambda f: f.write(text.encode("utf-8")))

    def write_text(self, relative: str, text: str) -> None:
        self._replace(self.root / relative, lambda f: f.write(text.encode("utf-8")))

    def write_run(self, row: dict[str, Any], history: pd.DataFrame | None) -> None:
        """Record one run: its history (if any), then its row (the commit marker)."""
        key = row["key"]
        if history is not None and len(history):
            table = pa.Table.from_pandas(history.assign(key=key), preserve_index=False)
            self._replace(self.histories_dir / f"{key}.parquet", lambda f: pq.write_table(table, f))
        table = pa.Table.from_pylist([row])
        self._replace(self.runs_dir / f"{key}.parquet", lambda f: pq.write_table(table, f))

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's lock (creating the folder) while the body runs: a second run on the same
        folder is refused with an InputError naming the folder and the pid that holds it. The lock is
        an advisory ``flock`` on ``.lock``, released by the kernel whenever its holder ends."""
        import fcntl
        self._release()
        self._hold()                # the folder checked here is the one every write of the run goes to
        try:
            os.close(open_own(self.root / LOCK, write=True))  # refuses a link, a hard link, a FIFO
            fd = os.open(self.root / LOCK, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise InputError(f"{self.root}: cannot use it as the results folder: {exc.strerror or exc}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                raise InputError(f"{self.root}: results folder in use by another workbench run (pid {holder}); "
                                 "wait for it to end, or give --out another folder") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)  # releases the lock
            self._release()

    def remove_partial(self) -> None:
        """Delete temporary files a killed study left behind."""
        for d in ("", "runs", "histories", "problems", "sessions"):
            remove_partial(self.folder(d, create=False))

    # ------------------------------------------------------------------ reading
    def _run_files(self) -> list[Path]:
        runs = self.folder("runs", create=False)
        return sorted(runs.glob("*.parquet")) if runs.is_dir() else []

    def done_keys(self) -> set[str]:
        """Keys of the runs recorded so far."""
        return {p.stem for p in self._run_files()}

    def unsolved_keys(self, check=None) -> set[str]:
        """Keys of the recorded runs whose status is not "solved" (what ``--rerun-failed`` redoes),
        the rows read as :meth:`read_runs` reads them (a file that cannot be read is one line naming it)."""
        runs = self.read_runs(check)
        if not len(runs):
            return set()
        if "status" not in runs or "key" not in runs:
            raise InputError(f"{self.root / 'runs'}: run files without a key or a status column")
        return set(runs.loc[runs["status"] != "solved", "key"])

    @staticmethod
    def _read_table(path: Path, columns=None) -> pa.Table:
        """The parquet file ``path`` of the folder (opened by open_own); InputError naming it when it
        cannot be read or lacks ``columns``."""
        try:
            with os.fdopen(open_own(path), "rb") as f:
                return pq.read_table(f, columns=columns)
        except (OSError, pa.ArrowException, ValueError, KeyError) as exc:
            raise InputError(f"{path}: cannot read ({' '.join(str(exc).split())[:200]})") from None

    def read_json(self, relative: str) -> Any:
        """A JSON file of the folder: a regular file within the BYTES limit, nested within DEPTH
        (workbench.limits); InputError otherwise."""
        from workbench.limits import check, check_depth, parse_error
        path = self.root / relative
        if not os.path.lexists(path):
            raise InputError(f"{self.root}: not a study results directory (no {relative})")
        try:
            self.folder(str(Path(relative).parent), create=False)
            with os.fdopen(open_own(path), "rb") as f:
                check("BYTES", os.fstat(f.fileno()).st_size, str(path))
                obj = json.loads(f.read().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: JSON, and ints past 4300 digits
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{path}: cannot read ({' '.join(str(exc).split())[:200]})") from None
        except RecursionError as exc:
            raise parse_error(exc, str(path)) from None
        check_depth(obj, str(path))
        return obj

    def read_text(self, relative: str) -> str | None:
        """A text file of the folder (opened by open_own, within the BYTES limit), None when missing."""
        from workbench.limits import check
        path = self.root / relative
        if not os.path.lexists(path):
            return None
        self.folder(str(Path(relative).parent), create=False)
        try:
            with os.fdopen(open_own(path), "rb") as f:
                check("BYTES", os.fstat(f.fileno()).st_size, str(path))
                return f.read().decode("utf-8", "replace")
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None

    def sessions(self) -> list[dict[str, Any]]:
        """Provenance of every session, oldest first."""
        d = self.folder("sessions", create=False)
        return [self.read_json(str(p.relative_to(self.root))) for p in sorted(d.glob("*.json"))] if d.is_dir() else []

    @classmethod
    def _concat(cls, paths: Iterable[Path], check=None) -> pd.DataFrame:
        frames = []
        for p in paths:
            frame = cls._read_table(p).to_pandas()
            frames.append(frame if check is None else check(frame, p))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def read_runs(self, check=None) -> pd.DataFrame:
        """Every recorded run, one row each, each file's table passed through ``check(frame, path)``
        first. The workbench reads rows only through ``workbench.study.results.read_runs``, which
        passes the one check of the declared run row (workbench.study.row_check); without ``check``
        the rows are raw (tests)."""
        return self._concat(self._run_files(), check)

    def read_histories(self, keys: Iterable[str]) -> pd.DataFrame:
        """The long table of per-iteration histories of the runs ``keys`` that kept one (a key is a
        plain name: never a path out of the folder)."""
        folder = self.folder("histories", create=False)
        paths = [folder / f"{plain_name(str(k), f'{self.root}: run key')}.parquet" for k in keys]
        return self._concat(p for p in paths if os.path.lexists(p))
