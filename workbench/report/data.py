"""A results directory as the report reads it (:class:`ReportData`): the plan, the runs of the current
plan with every hand-over split into the method alone and the composite (the accounting rule of
:mod:`workbench.analysis.accounting`), the dedicated reference runs, and their pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from workbench.analysis.accounting import pair_table, split_handovers
from workbench.report.reference import References
from workbench.study.results import current_runs, read_runs
from workbench.study.store import ResultStore

__all__ = ["ReportData", "read_report_data"]


@dataclass
class ReportData:
    """A results directory as the report reads it: the plan, the compared runs, the dedicated
    reference runs, and the pairs under the accounting rule. ``runs`` and ``plan`` have every method
    that handed over split into the method alone and the composite (accounting.split_handovers);
    ``recorded`` holds the runs as recorded."""
    root: Path
    plan: dict
    runs: pd.DataFrame
    recorded: pd.DataFrame
    reference_runs: pd.DataFrame
    stale: int
    store: ResultStore

    @property
    def methods(self) -> list[str]:
        return [m["method"] for m in self.plan["methods"]]

    @property
    def labels(self) -> dict[str, str]:
        return {m["method"]: m["label"] for m in self.plan["methods"] + self.plan.get("references", [])}

    @property
    def base(self) -> dict[str, str]:
        """Each method's own method: a composite's is the method that handed over."""
        return dict(zip(self.runs["method"], self.runs["base_method"])) if len(self.runs) else {}

    @property
    def problems(self) -> list[str]:
        return [p["problem"] for p in self.plan["problems"]]

    @property
    def options(self) -> dict:
        return self.plan["report"]

    @property
    def time_column(self) -> str:
        return "total_seconds" if self.options["time"] == "total" else "solve_seconds"

    @property
    def time_label(self) -> str:
        return "build + solve time" if self.options["time"] == "total" else "solve time"

    @property
    def static(self) -> pd.DataFrame:
        """The runs of single time-step problems (not simulations)."""
        return self.runs[self.runs["kind"] != "simulation"]

    @property
    def skipped(self) -> set[tuple[str, str]]:
        return {(s["problem"], s["method"]) for s in self.plan["skipped"]}

    def pairs(self) -> pd.DataFrame:
        return pair_table(self.runs, self.plan["problems"], self.plan["methods"], self.skipped, self.time_column,
                          self.plan["time_limit"])

    def references(self) -> References:
        """From the runs as recorded (a composite is not another method: look references up by the
        run's base_method)."""
        static = self.recorded[self.recorded["kind"] != "simulation"] if len(self.recorded) else self.recorded
        both = pd.concat([static, self.reference_runs], ignore_index=True) if len(self.reference_runs) \
            else static
        return References(both, self.options.get("reference_method"))


def read_report_data(results_dir) -> ReportData:
    """Read a results directory (InputError when it is not one)."""
    from workbench.report.plan_check import check_plan
    store = ResultStore(results_dir)
    plan = check_plan(store.read_json("plan.json"), store.root)
    every = read_runs(store)
    with_refs = current_runs(every, plan, include_reference=True)  # completed once (workbench.study.record.complete)
    compared = {r["key"] for r in plan["runs"]}
    recorded = with_refs[with_refs["key"].isin(compared)].reset_index(drop=True) if len(with_refs) else with_refs
    runs, plan = split_handovers(recorded, plan)
    refs = with_refs[with_refs["role"] == "reference"] if len(with_refs) else with_refs
    return ReportData(root=store.root, plan=plan, runs=runs, recorded=recorded, reference_runs=refs,
                      stale=len(every) - len(with_refs), store=store)
