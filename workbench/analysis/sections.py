"""The sections a study's report can have, declared once: a study file asks for them by these names
(``[report] sections``, checked by :mod:`workbench.study.spec`) and :mod:`workbench.report.sections`
builds each (one builder per name, registered with ``@section(NAME)``; ``tests/test_report.py`` checks
that every name has exactly one builder). Here, below both, so the study checks a name without
importing the report."""

#: name -> what the section shows, in the default order of a report
SECTIONS: dict[str, str] = {
    "summary": "per acceptance threshold, success rate and shifted geometric means of time and judged error, "
               "each relative to the best (qpbenchmark); methods within noise; success rate per tag",
    "conclusion": "per tag and problem class, time and iterations to stated accuracy levels (median over problems, "
                  "95 % interval, a faster method only when the paired interval excludes a tie); then the time "
                  "to each method's own threshold, not a conclusion (always; after the summary unless placed)",
    "paper": "the numbers the papers report (the study's [[report.paper]]) beside the measured ones",
    "tables": "problem x method tables (median, min-max over repetitions) and the time to the reference objective",
    "convergence": "the reference of each problem and the median convergence curves (Mazhar et al. 2014 Figs. 1-4)",
    "scaling": "time and iterations against contacts with fitted log-log slopes (Mazhar et al. 2014 Fig. 5)",
    "profiles": "Dolan-More performance profiles of time and of iterations",
    "timeseries": "simulations' per-step quantities against time, analytic curves dashed",
}

__all__ = ["SECTIONS"]
