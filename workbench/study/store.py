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

Why one file per run. The driver is the only writer; each file is written in a temporary folder
beside it and renamed (workbench.files.atomic_output: ``os.replace``, atomic on POSIX), so a study
killed at any instant leaves each run either completely recorded or absent, never torn or twice,
and a restart skips the keys present.
A parquet file cannot be appended to (its footer closes it), and an append-only log would need its
own repair of a torn last record. The history is written before the row, so the row is the commit
marker: a history without its row is simply overwritten when the run is redone.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workbench.errors import InputError
from workbench.files import atomic_output, remove_partial

__all__ = ["ResultStore", "LOCK"]

#: the lock file of a results folder (ResultStore.locked)
LOCK = ".lock"

class ResultStore:
    """The results directory ``root`` (created on first write)."""

    def __init__(self, root: os.PathLike | str):
        self.root = Path(root)
        self.runs_dir = self.root / "runs"
        self.histories_dir = self.root / "histories"

    # ------------------------------------------------------------------ writing
    def _replace(self, path: Path, write) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as tmp:
            write(tmp)

    def write_json(self, relative: str, obj: Any) -> None:
        self._replace(self.root / relative,
                      lambda p: p.write_text(json.dumps(obj, indent=2, default=str), encoding="utf-8"))

    def write_text(self, relative: str, text: str) -> None:
        self._replace(self.root / relative, lambda p: p.write_text(text, encoding="utf-8"))

    def write_run(self, row: dict[str, Any], history: pd.DataFrame | None) -> None:
        """Record one run: its history (if any), then its row (the commit marker)."""
        key = row["key"]
        if history is not None and len(history):
            table = pa.Table.from_pandas(history.assign(key=key), preserve_index=False)
            self._replace(self.histories_dir / f"{key}.parquet", lambda p: pq.write_table(table, p))
        table = pa.Table.from_pylist([row])
        self._replace(self.runs_dir / f"{key}.parquet", lambda p: pq.write_table(table, p))

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's lock (creating the folder) while the body runs: a second run on the same
        folder is refused with an InputError naming the folder and the pid that holds it. The lock is
        an advisory ``flock`` on ``.lock``, released by the kernel whenever its holder ends."""
        import fcntl
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
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

    def remove_partial(self) -> None:
        """Delete temporary files a killed study left behind."""
        for d in (self.root, self.runs_dir, self.histories_dir, self.root / "problems", self.root / "sessions"):
            if d.is_dir():
                remove_partial(d)

    # ------------------------------------------------------------------ reading
    def done_keys(self) -> set[str]:
        """Keys of the runs recorded so far."""
        if not self.runs_dir.is_dir():
            return set()
        return {p.stem for p in self.runs_dir.glob("*.parquet")}

    def unsolved_keys(self) -> set[str]:
        """Keys of the recorded runs whose status is not "solved" (what ``--rerun-failed`` redoes)."""
        if not self.runs_dir.is_dir():
            return set()
        return {p.stem for p in self.runs_dir.glob("*.parquet")
                if pq.read_table(p, columns=["status"]).column("status")[0].as_py() != "solved"}

    def read_json(self, relative: str) -> Any:
        """A JSON file of the folder: a regular file within the BYTES limit, nested within DEPTH
        (workbench.limits); InputError otherwise."""
        from workbench.limits import check, check_depth, parse_error
        path = self.root / relative
        try:
            if not path.is_file():
                if path.exists():
                    raise InputError(f"{path}: not a regular file")
                raise InputError(f"{self.root}: not a study results directory (no {relative})")
            check("BYTES", path.stat().st_size, str(path))
            obj = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: cannot read ({exc})") from None
        except RecursionError as exc:
            raise parse_error(exc, str(path)) from None
        check_depth(obj, str(path))
        return obj

    def sessions(self) -> list[dict[str, Any]]:
        """Provenance of every session, oldest first."""
        d = self.root / "sessions"
        return [self.read_json(str(p.relative_to(self.root))) for p in sorted(d.glob("*.json"))] if d.is_dir() else []

    @staticmethod
    def _concat(paths: Iterable[Path]) -> pd.DataFrame:
        frames = []
        for p in paths:
            try:
                frames.append(pq.read_table(p).to_pandas())
            except (OSError, pa.ArrowException) as exc:
                raise InputError(f"{p}: cannot read ({' '.join(str(exc).split())})") from None
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def read_runs(self) -> pd.DataFrame:
        """Every recorded run, one row each."""
        return self._concat(sorted(self.runs_dir.glob("*.parquet")) if self.runs_dir.is_dir() else [])

    def read_histories(self, keys: Iterable[str]) -> pd.DataFrame:
        """The long table of per-iteration histories of the runs ``keys`` that kept one."""
        paths = [self.histories_dir / f"{k}.parquet" for k in keys]
        return self._concat(p for p in paths if p.is_file())
