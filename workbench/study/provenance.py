"""What a study's numbers depend on besides the study file: software versions and the machine.

Saved once per ``workbench run`` invocation (a study resumed later, maybe elsewhere, has one record
per session; every row names its session).
"""

from __future__ import annotations

import datetime
import os
import platform
import socket
import sys
from importlib import metadata
from typing import Any

__all__ = ["provenance", "cpu_model"]

#: distributions whose versions every session records (solver packages are added from the registry)
_PACKAGES = ("contact-workbench", "numpy", "scipy", "cvxpy", "pandas", "pyarrow", "h5py", "numba",
             "matplotlib", "dask", "distributed")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, ``platform.processor()`` elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


#: cvxpy solver names whose Python distribution is named differently
_DISTRIBUTIONS = {"SCIP": "pyscipopt", "GUROBI": "gurobipy", "COPT": "coptpy"}


def _solver_versions(names) -> dict[str, str]:
    """Version of the package behind each solver named: the package cvxpy calls for cvxpy solvers,
    the workbench for its own (whatever libraries those load themselves)."""
    import workbench
    from workbench.solvers import get_solver

    out = {}
    for name in names:
        cvxpy_name = getattr(get_solver(name), "cvxpy_name", None)
        if cvxpy_name:
            out[name] = _version(_DISTRIBUTIONS.get(cvxpy_name, cvxpy_name.lower())) or "version unknown"
        else:
            out[name] = f"workbench {workbench.__version__}"
    return out


def provenance(session: str, study_text: str, solvers, command: list[str], executor: str,
               jobs: int) -> dict[str, Any]:
    """The record of one session; ``solvers`` are the names the study uses."""
    import workbench

    return {
        "session": session,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "executor": executor,
        "jobs": jobs,
        "workbench": workbench.__version__,
        "python": sys.version.split()[0],
        "packages": {p: v for p in _PACKAGES if (v := _version(p)) is not None},
        "solvers": _solver_versions(solvers),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "study_text": study_text,
    }
