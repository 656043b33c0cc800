"""The compiled kernels' on-disk cache kept true to the sources.

numba's cache (``cache=True``: ``*.nbi`` and ``*.nbc`` files in ``__pycache__`` beside the sources) checks
only the file that defines each kernel. A kernel that calls or inlines kernels of other modules (every
solver's loop inlines workbench.blocks, workbench.cones and workbench.metrics) keeps their old code
after those modules change but its own file does not: after a ``git pull`` or an edit, a cached solver
could run yesterday's projection or sums, and its results would depend on the history of the checkout.

So, when the package is imported (``workbench/__init__.py``, before any kernel is loaded), a fingerprint
of the sources of the packages that hold kernels (:data:`PACKAGES`: each ``.py`` file's path, size and
modification time) is compared with the one stamped beside the cache when it was last cleared; on a
difference every kernel cache file of those packages is deleted and the new fingerprint stamped, and
each kernel is compiled from the current sources when first used (or by ``workbench warm-up``). The
check reads the folders' entries only (a few hundred files: about a millisecond). Only the default cache
location is kept this way: a user who sets ``NUMBA_CACHE_DIR`` manages that folder. Clearing is best
effort: a read-only installation keeps its cache as it is (it was compiled from the sources installed
with it).
"""

from __future__ import annotations

import os

__all__ = ["PACKAGES", "STAMP", "fingerprint", "keep_true"]

#: the installed packages (pyproject.toml) whose modules define compiled kernels; the benchmarks' own
#: kernels inline none of them
PACKAGES = ("workbench", "formulations", "problems")
#: the stamp's name, in ``workbench/__pycache__``
STAMP = "numba-sources.stamp"
_CACHE_SUFFIXES = (".nbi", ".nbc")


def _walk(root: str, caches: bool):
    """(folder, file names) of ``root`` and its sub-folders, hidden ones aside, in a fixed order; the
    ``__pycache__`` folders only when ``caches`` (the check on every import lists the sources alone)."""
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and (caches or d != "__pycache__"))
        yield folder, sorted(files)


def fingerprint(base: str, packages=PACKAGES) -> str:
    """A line per ``.py`` file of ``packages`` under ``base``: its path relative to ``base``, size and
    modification time in ns (the text itself is the stamp: no hash library loaded at import)."""
    lines = []
    for package in packages:
        for folder, files in _walk(os.path.join(base, package), caches=False):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    st = os.stat(path)
                    lines.append(f"{os.path.relpath(path, base)} {st.st_size} {st.st_mtime_ns}")
    return "\n".join(lines)


def keep_true(base: str, packages=PACKAGES) -> int:
    """Delete the kernel cache files of ``packages`` under ``base`` when their sources changed since the
    stamp (module docstring), and stamp the sources; the number of files deleted (0: the cache was
    true, or there is nothing to keep: NUMBA_CACHE_DIR set, no ``workbench/__pycache__`` to stamp in)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return 0
    folder = os.path.join(base, "workbench", "__pycache__")
    stamp = os.path.join(folder, STAMP)
    now = fingerprint(base, packages)
    try:
        with open(stamp, encoding="utf-8") as f:
            if f.read() == now:
                return 0
    except (OSError, ValueError):
        pass
    deleted = 0
    for package in packages:
        for cache, files in _walk(os.path.join(base, package), caches=True):
            if os.path.basename(cache) != "__pycache__":
                continue
            for name in files:
                if name.endswith(_CACHE_SUFFIXES):
                    try:
                        os.remove(os.path.join(cache, name))
                        deleted += 1
                    except OSError:      # read-only, or removed by another process at the same moment
                        pass
    try:
        os.makedirs(folder, exist_ok=True)
        partial = f"{stamp}.{os.getpid()}.partial"
        with open(partial, "w", encoding="utf-8") as f:
            f.write(now)
        os.replace(partial, stamp)
    except OSError:
        pass
    return deleted
