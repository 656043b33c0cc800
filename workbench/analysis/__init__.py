"""What a set of runs says, computed from tables of runs alone: the accounting rule
(:mod:`~workbench.analysis.accounting`), the statistics (:mod:`~workbench.analysis.stats`: shifted
geometric means, log-log slopes, the first point within a tolerance), the statistics over a
family's members (:mod:`~workbench.analysis.members`: medians with exact intervals, paired comparisons), the performance profiles
(:mod:`~workbench.analysis.profiles`), and the declared sections of a report
(:mod:`~workbench.analysis.sections`). Below both the figures (:mod:`workbench.plot`) and the report
(:mod:`workbench.report`), which draw and write what is computed here."""
