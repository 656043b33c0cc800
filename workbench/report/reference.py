"""The reference objective of each problem, independent of the method it is used for.

Candidates for (problem, formulation): the dedicated reference runs of the study's [reference]
(role "reference": a high-accuracy run not among the compared methods; any status, as long as it
returned a point with a finite judged error) and the solved runs of the compared methods. The
reference for a method's runs is the candidate with the smallest judged error among those *not of
that method* (a method is never its own reference); the study's ``reference_method`` is preferred
where it solved the problem. Runs are pooled by :func:`objective_class`: formulations of the same
problem (relaxed or exact Coulomb, or an LCP) that report the same objective share a reference (the
anti-relaxed, fixed-point and NCP runs all report the relaxed dual objective at their impulses, the
primal ones the primal objective), so an exact method is measured against another exact method.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Reference", "References", "objective_class"]


def objective_class(formulation: str) -> str:
    """Which runs share a reference objective: the problem the formulation solves (relaxed or
    exact Coulomb; an LCP is its own class) and the objective it reports (primal or dual)."""
    from formulations import get_formulation

    cls = get_formulation(formulation)
    if "lcp" in cls.builds:
        return f"LCP ({formulation})"
    return f"{'exact' if cls.exact else 'relaxed'}, {'primal' if 'primal' in formulation else 'dual'} objective"


@dataclass(frozen=True)
class Reference:
    method: str
    role: str
    objective: float
    error: float
    repetition: int


class References:
    """The candidates of every (problem, formulation), most accurate first."""

    def __init__(self, runs: pd.DataFrame, preferred: str | None = None):
        cols = ["problem", "formulation", "method", "role", "objective", "judged_error", "repetition", "status"]
        if runs.empty:
            self._by = {}
            return
        c = runs[[col for col in cols if col in runs]].copy()
        if "role" not in c:
            c["role"] = "compared"
        ok = np.isfinite(c["objective"].astype(float)) & np.isfinite(c["judged_error"].astype(float))
        ok &= (c["status"] == "solved") | ((c["role"] == "reference") & ~c["status"].isin(["crash", "timeout",
                                                                                             "unavailable"]))
        c = c[ok]
        # preferred method first (where it solved), then the most accurate point, a dedicated
        # reference run before a compared run of the same accuracy
        c = c.assign(_pref=(c["method"] != preferred) if preferred else True, _compared=c["role"] != "reference",
                     _class=c["formulation"].map(objective_class))
        c = c.sort_values(["_pref", "judged_error", "_compared"], kind="stable")
        self._by = {k: g for k, g in c.groupby(["problem", "_class"], sort=False)}

    def for_method(self, problem: str, formulation: str, method: str) -> Reference | None:
        """The reference for ``method``'s runs on ``problem`` (never one of its own runs)."""
        g = self._by.get((problem, objective_class(formulation)))
        if g is None:
            return None
        g = g[g["method"] != method]
        if g.empty:
            return None
        r = g.iloc[0]
        return Reference(r["method"], r["role"], float(r["objective"]), float(r["judged_error"]), int(r["repetition"]))

    def best(self, problem: str, formulation: str) -> Reference | None:
        """The most accurate candidate (the reference of every method but its own)."""
        return self.for_method(problem, formulation, method="\0")

    def table(self, problems: list[str], labels: dict[str, str]) -> pd.DataFrame:
        """Per problem and objective class: the reference, its judged error and objective, and the
        one its own method's runs are measured against instead."""
        rows = []
        for problem in problems:
            for (p, klass), g in self._by.items():
                if p != problem:
                    continue
                formulation = g["formulation"].iloc[0]
                best = self.best(problem, formulation)
                second = self.for_method(problem, formulation, best.method)
                rows.append({"problem": problem, "runs of": klass,
                             "reference": labels.get(best.method, best.method),
                             "judged error": best.error, "objective": best.objective,
                             "for its own runs": (f"{labels.get(second.method, second.method)} "
                                                  f"(error {second.error:.2g})") if second else "none"})
        return pd.DataFrame(rows).set_index("problem") if rows else pd.DataFrame()
