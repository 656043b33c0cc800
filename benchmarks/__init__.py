"""The benchmark scripts, each run from the repository root with the workbench's environment:
``.venv/bin/python -m benchmarks.ROOM.NAME`` (README, Install; no activated venv needed). Run by another
interpreter they stop here with one line saying so, not with a traceback from their first import.

The rooms (docs/benchmarks.md): ``timing/`` what the workbench's own code costs; ``peers/`` the workbench
against other programs (Siconos, the readers of exported files); ``generation/`` what the dataset
generator costs; ``reproduce/`` the papers' numbers (``python -m benchmarks.reproduce PAPER``) and the
fits and sweeps behind them. ``pages.py`` lists the renderers of the committed results pages. A command
of a module that had no room yet (``python -m benchmarks.bench_peers``) stops here with one line naming
the module it now is (:data:`MOVED`).

The workbench package is imported first, before any benchmark loads numpy: it sets BLAS and OpenMP
to one thread (workbench.THREAD_ENV), which OpenBLAS reads only when numpy loads, so that a benchmark
measures the threads the command line uses (a benchmark that loaded numpy first ran OpenBLAS on every
core: under load, a dot product of a few ten thousand entries took milliseconds)."""

import importlib.util
import sys

#: the modules that moved into rooms (issue 43): old name -> new name, both under ``benchmarks.``
MOVED = {**{name: f"timing.{name}" for name in ("bench_cold_start", "bench_condense", "bench_exact", "bench_export",
                                                "bench_first_call", "bench_firstorder", "bench_ipm", "bench_iterative",
                                                "bench_scale", "bench_time_limits")},
         **{name: f"peers.{name}" for name in ("bench_peers", "export_readers", "peer_process", "siconos_peer",
                                               "siconos_plain")},
         **{name: f"generation.{name}" for name in ("bench_generate", "generate_assembly", "generate_bed")},
         **{name: f"reproduce.{name}" for name in ("anitescu_hart_table1", "calibrate", "compaction", "drum_pqn",
                                                   "settledness", "trajectories")}}


def _moved_command() -> tuple[str, str] | None:
    """(old, new) module of a ``python -m benchmarks.OLD`` command whose OLD is in :data:`MOVED` (Python
    imports this package before it looks for the module); None for any other command."""
    argv = getattr(sys, "orig_argv", [])
    if "-m" not in argv[:-1] or not argv[argv.index("-m") + 1].startswith("benchmarks."):
        return None
    old = argv[argv.index("-m") + 1].removeprefix("benchmarks.")
    return (old, MOVED[old]) if old in MOVED else None


if _moved_command():
    _OLD, _NEW = _moved_command()
    print(f"benchmarks: benchmarks.{_OLD} is now benchmarks.{_NEW}: run .venv/bin/python -m benchmarks.{_NEW} "
          "(docs/benchmarks.md)", file=sys.stderr)
    raise SystemExit(2)

_NEEDED = ("numpy", "scipy", "cvxpy", "workbench")
_missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
if _missing:
    print(f"benchmarks: {sys.executable} lacks {', '.join(_missing)}; run from the repository root with the README's "
          "environment: .venv/bin/python -m benchmarks.ROOM.NAME (after .venv/bin/pip install -e .)", file=sys.stderr)
    raise SystemExit(2)

import workbench  # noqa: E402,F401 - the thread settings of the module docstring, before numpy loads
