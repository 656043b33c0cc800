"""The files a study file's ``files`` name: paths and globs (``shared:REL``, ``dataset:NAME``, relative to
the study file's folder), every file inside the trusted roots (workbench.sources.trusted_roots), found by
a walk bounded by the FILES limit (workbench.limits) that follows no link to a folder."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from workbench.errors import InputError, StudyError
from workbench.files import inside
from workbench.limits import check, limit

__all__ = ["bounded_glob", "resolve_files"]


def _part_regex(part: str) -> str:
    """A regular expression for one path component of a glob (``*`` and ``?`` never match ``/``)."""
    out, i = [], 0
    while i < len(part):
        c = part[i]
        j = part.find("]", i + 2) if c == "[" else -1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif j > 0:
            body = part[i + 1:j]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def bounded_glob(pattern: Path, where: str) -> list[Path]:
    """The files matching ``pattern`` (glob syntax, ``**`` any folders), sorted, found by walking the
    folder before its first wildcard without following links to folders, over at most FILES x 10
    entries, and at most FILES matches (workbench.limits): a glob can never walk a whole disk."""
    parts = pattern.parts
    fixed = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    top = Path(*parts[:fixed])
    rest = parts[fixed:]
    last = len(rest) - 1
    try:
        regex = re.compile("".join(("(?:[^/]+/)*" + ("[^/]+" if k == last else "")) if part == "**" else
                                   _part_regex(part) + ("/" if k < last else "") for k, part in enumerate(rest)) + r"\Z")
    except re.error as exc:  # a reversed range [z-a], an unbalanced bracket, ...
        raise StudyError(f"{where}: glob {str(pattern)[:200]!r} is not a valid pattern ({exc})") from None
    deep = "**" in rest
    depth = len(rest)
    budget = limit("FILES") * 10
    visited, found = 0, []
    stack = [(top, "", 0)]  # walked with a stack, not recursion: a 1,100-level chain of folders is no RecursionError
    while stack:
        folder, rel_folder, level = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        visited += len(entries)
        if visited > budget:
            raise StudyError(f"{where}: glob {pattern} walks more than {budget:g} folder entries, the limit (10 x "
                             f"the files limit; set WORKBENCH_MAX_FILES to raise it)")
        for entry in entries:
            rel = entry.name if level == 0 else f"{rel_folder}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                # without **, no folder deeper than the pattern's; hidden ones only where the pattern says so (glob)
                if (deep or level < depth - 1) and not entry.name.startswith("."):
                    stack.append((entry.path, rel, level + 1))
            elif not entry.name.startswith(".") and entry.is_file() and regex.match(rel):
                found.append(Path(folder) / entry.name)
                check("FILES", len(found), f"{where}: glob {pattern} matches too many files")
    return sorted(found)


def resolve_files(patterns: list[str], base: Path, where: str) -> tuple[Path, ...]:
    """Paths and globs (workbench.sources.resolve_path: shared:REL, dataset:NAME, relative to ``base``,
    the study file's directory); every file they name, links resolved, must lie in
    the study's trusted roots (workbench.sources.trusted_roots), and a group names at most FILES files (workbench.limits)."""
    from workbench.sources import ROOTS_ENV, resolve_path, trusted_roots

    roots = trusted_roots(base)
    found: dict[Path, None] = {}  # ordered set: overlapping globs name a file once
    for pattern in patterns:
        try:
            full = resolve_path(pattern, base)
        except InputError as exc:
            raise StudyError(f"{where}: {exc}") from None
        if not any(Path(os.path.normpath(full)) == r or Path(r) in Path(os.path.normpath(full)).parents
                   for r in (os.path.normpath(r) for r in roots)):
            raise StudyError(f"{where}: {pattern!r} names {full}, outside the study file's folder, the reference "
                             f"data and the datasets; add its folder to {ROOTS_ENV} to allow it")
        if glob.has_magic(str(full)):
            matches = bounded_glob(full, where)
            if not matches:
                raise StudyError(f"{where}: glob {pattern!r} matches no file (looked for {full}; relative "
                                 "paths are resolved against the study file's directory)")
        elif not full.is_file():
            raise StudyError(f"{where}: file {pattern!r} does not exist (looked for {full}; relative paths "
                             "are resolved against the study file's directory)")
        else:
            matches = [full]
        for m in matches:
            try:
                found[inside(m, roots, f"{where}: {pattern!r}")] = None
            except InputError as exc:
                raise StudyError(f"{exc}; add its folder to {ROOTS_ENV} to allow it") from None
        check("FILES", len(found), f"{where} files")
    return tuple(found)
