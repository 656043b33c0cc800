"""Declarative solver-comparison studies: a TOML file, a resumable parallel grid of runs, results as parquet.

Modelled on benchopt (problems, methods and the objective kept apart; parquet results; resumable
runs; parallel backends) and qpbenchmark (plain markdown reports, success rates, shifted geometric
means). Layers, no cycles:

- :mod:`~workbench.study.spec`: the study file, parsed and validated (one-line :class:`StudyError`s).
- :mod:`~workbench.study.problems`: problem groups -> made sources with data hashes (each a
  :class:`workbench.sources.Source`, scenes and generators included).
- :mod:`~workbench.study.store`: one parquet file per run, written atomically; read back as tables.
- :mod:`~workbench.study.worker`: the killable worker process that executes runs.
- :mod:`~workbench.study.simulation`: a run that simulates a dynamic scene (its history: per-step table).
- :mod:`~workbench.study.executors`: local worker pool or Dask cluster.
- :mod:`~workbench.study.record`: the run row declared once (``RUN_ROW``: each column's dtype, meaning
  and fill for older rows) and the worker's one answer shape.
- :mod:`~workbench.study.runner`: plan the grid, skip what is done, execute, record.
- :mod:`~workbench.study.results`: the results API, ``load_results`` (one tidy row per run) and
  ``load_histories`` (per-iteration histories in one fixed schema).

The report (:mod:`workbench.report`) reads only the results directory.
"""

import sys as _sys

if getattr(_sys, "orig_argv", [])[1:3] == ["-m", "workbench.study.conformance"]:  # the command before issue 43
    print("workbench.study.conformance is now the command `workbench conformance RESULTS_DIR [--matrix] "
          "[--results-page NAME]` (workbench.report.conformance)", file=_sys.stderr)
    raise SystemExit(2)

__all__ = ["Study", "StudyError", "load_study", "load_results", "load_histories"]

#: the public names and their modules, imported on first use (PEP 562): the command line registers its
#: subcommands with the executors' names without loading pandas
_PUBLIC = {"load_results": "results", "load_histories": "results", "Study": "spec", "StudyError": "spec",
           "load_study": "spec"}


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib
        return getattr(importlib.import_module(f"workbench.study.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module 'workbench.study' has no attribute {name!r}")
