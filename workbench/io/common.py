"""Helpers the readers share: file checks and one-line errors that name the file."""

from __future__ import annotations

import os
from pathlib import Path

from workbench.errors import FileFormatError, ProblemDataError
from workbench.problem import TimeStepProblem


def one_line(text: object) -> str:
    """``text`` with all whitespace runs (newlines included) collapsed to one space."""
    return " ".join(str(text).split())


def format_error(path: os.PathLike | str, problem: object) -> FileFormatError:
    """A FileFormatError "PATH: PROBLEM" on one line (raise it ``from None``)."""
    return FileFormatError(one_line(f"{path}: {problem}"))


def check_file(path: os.PathLike | str) -> Path:
    """``path`` as a Path after checking it names a readable, non-empty regular file."""
    p = Path(path)
    try:
        if not p.exists():
            raise format_error(p, "a symbolic link that leads nowhere (broken or a loop)" if p.is_symlink()
                               else "no such file")
        if p.is_dir():
            raise format_error(p, "is a directory, not a problem file")
        if not p.is_file():
            raise format_error(p, "is not a regular file")
        if p.stat().st_size == 0:
            raise format_error(p, "file is empty")
    except OSError as exc:
        raise format_error(p, f"cannot access the file ({exc.strerror or exc})") from None
    return p


def build_problem(path: os.PathLike | str, **kwargs) -> TimeStepProblem:
    """``TimeStepProblem(**kwargs)`` with the file's path prefixed to any ProblemDataError."""
    try:
        return TimeStepProblem(**kwargs)
    except ProblemDataError as exc:
        raise ProblemDataError(one_line(f"{path}: {exc}")) from None
