"""The benchmark scripts, each run from the repository root with the workbench's environment:
``.venv/bin/python -m benchmarks.NAME`` (README, Install; no activated venv needed). Run by another
interpreter they stop here with one line saying so, not with a traceback from their first import."""

import importlib.util
import sys

_NEEDED = ("numpy", "scipy", "cvxpy", "workbench")
_missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
if _missing:
    print(f"benchmarks: {sys.executable} lacks {', '.join(_missing)}; run from the repository root with the README's "
          "environment: .venv/bin/python -m benchmarks.NAME (after .venv/bin/pip install -e .)", file=sys.stderr)
    raise SystemExit(2)
