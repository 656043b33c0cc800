"""Study plugins: Python files a study names (``[study] plugins``) that register solvers,
formulations or generators as they are imported. The study loader imports them while reading the
file, the worker processes again before their first run."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from workbench.errors import StudyError

__all__ = ["import_plugin"]


def import_plugin(path: Path) -> None:
    """Execute a plugin file as the module ``workbench_study_plugin_<hash of its path>`` (it registers
    solvers, formulations or generators as it is imported: ``SOLVERS["x"] = f"{__name__}:X"``), once
    per process: a file already imported (by its resolved path) is not run again, however often a
    study lists it."""
    name = "workbench_study_plugin_" + hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:12]
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise StudyError(f"plugin {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # registry entries "module:Class" name it, so it must be importable
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        del sys.modules[name]
        raise
    except BaseException as exc:  # a broken plugin is bad input, whatever it raised (SystemExit(0) too)
        del sys.modules[name]
        raise StudyError(f"plugin {path} failed to import: {type(exc).__name__}: {exc}") from None
