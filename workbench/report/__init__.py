"""The report of a study's results: ``index.md`` and ``index.html`` with PNG and SVG figures and CSV +
LaTeX tables, written from a results directory alone (``workbench report RESULTS_DIR``).

Every number follows one accounting rule (:mod:`workbench.analysis.accounting`), stated at the top.
Sections, chosen and ordered by the study's ``[report] sections``:

- ``summary``: per acceptance threshold, qpbenchmark's summary: success rate, shifted geometric
  mean of time (median, with the range over repetitions) and of the judged error, each relative to
  the best; which methods are within noise of each other; success rate per tag.
- ``conclusion`` (always; after the summary unless placed): at equal accuracy, per tag and problem
  class, each method's time and iterations to stated levels of the distance to the reference
  objective and of the judged error (median over problems, exact 95 % interval), a faster method named
  only when the paired interval excludes a tie; then, not as a conclusion, the time to each method's
  own stopping threshold with its ratio to the next, success rates and caveats
  (:mod:`workbench.report.conclusion`).
- ``paper``: the numbers the papers report (the study's ``[[report.paper]]``) beside the measured ones.
- ``tables``: problem x method tables, median (min-max) over repetitions: status, objective,
  iterations, times, residuals, and the time to within ``[report] target`` of the reference objective.
- ``convergence``: the reference of each problem (:mod:`workbench.report.reference`), and per problem
  the median curves with min-max bands against iteration and time (Mazhar et al. 2014 Figs. 1-4).
- ``scaling``: time and iterations against contacts with fitted log-log slopes, within each series
  the study declares (Mazhar et al. 2014 Fig. 5); simulations swept over sizes (Melanz et al. 2015 Fig. 11).
- ``profiles``: Dolan-More performance profiles of time and of iterations.
- ``timeseries``: simulations' per-step quantities against time, analytic curves dashed.

Then always: known limitations, machine and versions, methods, the study file. Only rows of the
current plan are reported (:func:`workbench.study.results.load_results`).

Modules: :mod:`~workbench.report.data` (the results directory read), :mod:`~workbench.report.sections`
and :mod:`~workbench.report.paper` (the section builders, one per name of
:data:`workbench.analysis.sections.SECTIONS`), :mod:`~workbench.report.frame` (the header and the closing
parts), :mod:`~workbench.report.document` (blocks to markdown and HTML).
"""

from __future__ import annotations

from pathlib import Path

from workbench.report import paper  # noqa: F401 - registers the section "paper"
from workbench.report.data import ReportData, read_report_data
from workbench.report.document import write_pages
from workbench.report.frame import closing, header
from workbench.report.sections import BUILDERS

__all__ = ["write_report", "read_report_data", "ReportData"]


def _sections(names) -> list[str]:
    """The study's sections, with the conclusion always there (after the summary, else first)."""
    names = list(names)
    if "conclusion" not in names:
        names.insert(names.index("summary") + 1 if "summary" in names else 0, "conclusion")
    return names


def write_report(results_dir, out_dir=None) -> Path:
    """Write the report of ``results_dir`` to ``out_dir`` (default reports/<study name>/); the path of
    index.html."""
    res = read_report_data(results_dir)
    out = Path(out_dir) if out_dir else Path("reports") / res.plan["study"]
    out.mkdir(parents=True, exist_ok=True)
    blocks = header(res)
    if len(res.runs):
        for name in _sections(res.options["sections"]):
            blocks += BUILDERS[name](res, out)
    blocks += closing(res, out)
    return write_pages(out, f"Study {res.plan['study']}", blocks)
