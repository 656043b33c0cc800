"""What the process found when it first imported the workbench: the start of any command or benchmark.

:data:`START_LOAD` is the load average (1, 5, 15 min) then, or None where the system has none; the
"load at the start" that :mod:`workbench.provenance` writes on a results page, which a run of an hour
writes at its end. :data:`START_HEAD` is the commit the repository's HEAD named then (read from the
files under ``.git``, no git process, so that a command's start stays cheap), or None outside a
repository: a page names the commit its run started on, even when HEAD moved while it ran. Imported by
the package's ``__init__`` so that both are read before any work.
"""

import os
from pathlib import Path

try:
    START_LOAD: tuple[float, ...] | None = os.getloadavg()
except OSError:
    START_LOAD = None

#: the repository the package lives in
ROOT = Path(__file__).resolve().parents[1]


def head_commit(root: Path = ROOT) -> str | None:
    """The full hash HEAD names in the repository at ``root`` (a worktree's ``.git`` file followed to its
    folder, a branch's ref read loose or from packed-refs), or None where there is none to read."""
    try:
        git = root / ".git"
        if git.is_file():
            text = git.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir:"):
                return None
            git = (root / text[len("gitdir:"):].strip()).resolve()
        if not (git / "HEAD").is_file():
            return None
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head[len("ref:"):].strip()
        common = git / "commondir"
        places = [git] + ([(git / common.read_text(encoding="utf-8").strip()).resolve()] if common.is_file() else [])
        for place in places:
            if (place / ref).is_file():
                return (place / ref).read_text(encoding="utf-8").strip() or None
        for place in places:
            if (place / "packed-refs").is_file():
                for line in (place / "packed-refs").read_text(encoding="utf-8").splitlines():
                    parts = line.split()
                    if len(parts) == 2 and parts[1] == ref:
                        return parts[0]
    except (OSError, UnicodeDecodeError):
        return None
    return None


START_HEAD: str | None = head_commit()
