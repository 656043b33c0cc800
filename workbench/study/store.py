"""A results directory: one parquet file per run, written atomically, consolidated on read.

Layout::

    plan.json                the current plan: study name, methods, problems, run keys, report options
    study.toml               the text of the study file that made the plan
    sessions/<id>.json       provenance of each ``workbench run`` invocation (versions, CPU, date, ...)
    problems/*.npz           generated problems, exactly as they were solved
    runs/<key>.parquet       one row per run (the workbench's metrics of the returned impulses)
    histories/<key>.parquet  that run's per-iteration history, a long table keyed by run
    logs/worker.log          what worker processes printed

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
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workbench.errors import InputError
from workbench.files import atomic_output, remove_partial

__all__ = ["ResultStore"]

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
        path = self.root / relative
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"{self.root}: not a study results directory (no {relative})") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: cannot read ({exc})") from None

    def sessions(self) -> list[dict[str, Any]]:
        """Provenance of every session, oldest first."""
        d = self.root / "sessions"
        return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(d.glob("*.json"))] if d.is_dir() else []

    @staticmethod
    def _concat(paths: Iterable[Path]) -> pd.DataFrame:
        frames = [pq.read_table(p).to_pandas() for p in paths]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def read_runs(self) -> pd.DataFrame:
        """Every recorded run, one row each."""
        return self._concat(sorted(self.runs_dir.glob("*.parquet")) if self.runs_dir.is_dir() else [])

    def read_histories(self, keys: Iterable[str]) -> pd.DataFrame:
        """The long table of per-iteration histories of the runs ``keys`` that kept one."""
        paths = [self.histories_dir / f"{k}.parquet" for k in keys]
        return self._concat(p for p in paths if p.is_file())
