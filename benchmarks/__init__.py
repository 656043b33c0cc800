"""The benchmark scripts, each run from the repository root with the workbench's environment:
``.venv/bin/python -m benchmarks.NAME`` (README, Install; no activated venv needed). Run by another
interpreter they stop here with one line saying so, not with a traceback from their first import.

The workbench package is imported first, before any benchmark loads numpy: it sets BLAS and OpenMP
to one thread (workbench.THREAD_ENV), which OpenBLAS reads only when numpy loads, so that a benchmark
measures the threads the command line uses (a benchmark that loaded numpy first ran OpenBLAS on every
core: under load, a dot product of a few ten thousand entries took milliseconds)."""

import importlib.util
import sys

_NEEDED = ("numpy", "scipy", "cvxpy", "workbench")
_missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
if _missing:
    print(f"benchmarks: {sys.executable} lacks {', '.join(_missing)}; run from the repository root with the README's "
          "environment: .venv/bin/python -m benchmarks.NAME (after .venv/bin/pip install -e .)", file=sys.stderr)
    raise SystemExit(2)

import workbench  # noqa: E402,F401 - the thread settings of the module docstring, before numpy loads
