"""plan.json declared once, as the run row is (workbench.study.record): every field the runner writes
(what it holds, what it means, how it is written) and the one place the report's checks of a received
plan come from (workbench.report.plan_check walks :data:`PLAN`); the study's report options, with their
choices and defaults spelled once (:data:`REPORT_CHOICES`, :class:`ReportOptions`), which the study
file's parser and the plan's check both read.

    >>> from workbench.study.plan import PLAN
    >>> PLAN["repetitions"].shape
    'count'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from workbench.analysis import sections as report_sections

__all__ = ["Field", "PLAN", "REPORT_CHOICES", "ReportOptions", "PaperValue", "plan_record"]

#: the [report] options that take one of a few words: name -> its choices, the first the default
REPORT_CHOICES = {"convergence": ("error", "absolute"), "time": ("solve", "total")}


@dataclass(frozen=True)
class PaperValue:
    """A number a paper reports, to be shown beside what the study measures ([[report.paper]])."""
    what: str
    source: str
    value: float
    method: str
    quantity: str
    tag: str | None = None
    problem: str | None = None
    rel_tol: float = 1e-4
    #: the paper's problem and its criterion (with its threshold), shown beside the study's own
    paper_problem: str | None = None
    paper_criterion: str | None = None
    #: generator parameters of the paper's data (h, steps, max_iter, ...), compared with the measured files'
    paper_params: tuple[tuple[str, float], ...] = ()
    not_comparable: str | None = None


@dataclass(frozen=True)
class ReportOptions:
    #: the default: every section of workbench.analysis.sections, in its order
    sections: tuple[str, ...] = field(default_factory=lambda: tuple(report_sections.SECTIONS))
    reference_method: str | None = None
    convergence: str = REPORT_CHOICES["convergence"][0]
    shift: float = 10.0
    time: str = REPORT_CHOICES["time"][0]
    target: float = 1e-6
    paper: tuple[PaperValue, ...] = ()
    #: convergence figures of the first N members of each dataset family only (None: of every member)
    convergence_members: int | None = None


#: what a field of plan.json may hold (the check's words for each in workbench.report.plan_check)
SHAPES = ("name", "text", "number", "positive", "count", "texts", "choice", "choices", "object", "records")


@dataclass(frozen=True)
class Field:
    """One field of plan.json (or of an object in it). ``shape``: one of SHAPES (``name``: a plain name,
    ``count``: a positive whole number, ``texts``: a list of strings, ``choice``/``choices``: one or a
    list of ``choices``, ``object``/``records``: an object, a list of objects, whose fields ``of``
    declares); ``required``: False when it may be absent, ``null``: when it may be null; ``nonempty``: a
    list of at least one ``nonempty`` (its noun); ``among``: the plan -> the values it must be one of,
    named ``among_what``; ``write``: how the runner writes a top-level field from the
    :class:`PlanContext`."""
    shape: str
    meaning: str
    required: bool = True
    null: bool = False
    choices: Callable[[], tuple[str, ...]] | None = None
    of: dict[str, Field] | None = None
    nonempty: str | None = None
    among: Callable[[dict], set] | None = None
    among_what: str = ""
    write: Callable[[PlanContext], Any] | None = None

    def __post_init__(self):
        assert self.shape in SHAPES and (self.choices is not None) == (self.shape in ("choice", "choices"))


@dataclass(frozen=True)
class PlanContext:
    """What plan.json is written from: the study, its made problems (workbench.sources.Source), the
    planned runs (workbench.study.record.PlannedRun), the skipped pairs and the reference runs."""
    study: Any
    problems: list
    runs: list
    skipped: list
    references: list


def _listed(runs) -> list[dict[str, Any]]:
    return [{"key": r.key, "problem": r.source.name, "method": r.method.name, "repetition": r.repetition}
            for r in runs]


def _formulations() -> tuple[str, ...]:
    from formulations import FORMULATIONS
    return tuple(FORMULATIONS)


def _methods_of(plan: dict) -> set:
    return {m["method"] for m in plan["methods"] + plan.get("references", [])}


_TEXT = Field("text", "")
#: a method as plan.json lists it (StudyMethod.describe); the report groups and judges methods by these
METHOD = {"method": Field("text", "the method's name in the study"), "label": Field("text", "its label"),
          "formulation": Field("choice", "a registered formulation", choices=_formulations),
          "solver": Field("text", "its solver"), "tol": Field("positive", "the accuracy asked"),
          "accept": Field("positive", "judged error at most this counts as solved (null: tol)", null=True,
                          required=False),
          "params": Field("object", "its parameters", required=False)}
#: a [[report.paper]] entry (PaperValue)
PAPER = {"what": _TEXT, "source": _TEXT, "method": Field("text", "the method measured", among=_methods_of,
                                                         among_what="a method of the plan"),
         "quantity": _TEXT, "value": Field("number", "the paper's value"),
         "rel_tol": Field("number", "the relative tolerance of iterations_to_reference"),
         "tag": Field("text", "which problems, by tag", null=True, required=False),
         "problem": Field("text", "which problem", null=True, required=False)}
#: the study's [report] options (ReportOptions)
REPORT = {"sections": Field("choices", "the report's sections, in order", choices=lambda: tuple(report_sections.SECTIONS)),
          "time": Field("choice", "the time measure", choices=lambda: REPORT_CHOICES["time"]),
          "convergence": Field("choice", "the convergence measure", choices=lambda: REPORT_CHOICES["convergence"]),
          "shift": Field("positive", "the shifted geometric mean's shift [s]"),
          "target": Field("positive", "time to within target of the reference objective (relative)"),
          "reference_method": Field("text", "the preferred reference method", null=True, required=False),
          "paper": Field("records", "numbers the papers report", of=PAPER, required=False),
          "convergence_members": Field("count", "convergence figures of the first N members of each family",
                                       null=True, required=False)}

#: plan.json, in the order the runner writes it: everything the report needs besides the rows
PLAN: dict[str, Field] = {
    "study": Field("name", "the study's name (the report's default folder, reports/<study>)",
                   write=lambda c: c.study.name),
    "description": Field("text", "the study's description", required=False, write=lambda c: c.study.description),
    "time_limit": Field("positive", "seconds per run", write=lambda c: c.study.time_limit),
    "repetitions": Field("count", "runs per (problem, method)", write=lambda c: c.study.repetitions),
    "report": Field("object", "the report's options ([report])", of=REPORT, write=lambda c: asdict(c.study.report)),
    "methods": Field("records", "the compared methods", of=METHOD, nonempty="method",
                     write=lambda c: [m.describe() for m in c.study.methods]),
    "problems": Field("records", "the made problems (Source.describe)", of={"problem": _TEXT},
                      write=lambda c: [p.describe() for p in c.problems]),
    "runs": Field("records", "the planned compared runs", of={"key": _TEXT}, write=lambda c: _listed(c.runs)),
    "skipped": Field("records", "the (problem, method) pairs that cannot run, with why",
                     of={"problem": _TEXT, "method": _TEXT}, write=lambda c: c.skipped),
    "missing": Field("texts", "why optional problem groups have no problem", required=False,
                     write=lambda c: [g.missing for g in c.study.groups if g.missing]),
    "references": Field("records", "the dedicated reference methods ([reference])", of=METHOD, required=False,
                        write=lambda c: [m.describe() for m in c.study.references]),
    "reference_runs": Field("records", "the planned reference runs", of={"key": _TEXT}, required=False,
                            write=lambda c: _listed(c.references)),
}


def plan_record(study, problems: list, runs: list, skipped: list, references: list) -> dict[str, Any]:
    """plan.json of a study, each field as :data:`PLAN` declares it is written."""
    context = PlanContext(study, problems, runs, skipped, references)
    return {name: f.write(context) for name, f in PLAN.items()}
