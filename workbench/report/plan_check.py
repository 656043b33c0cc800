"""The checks a results folder's ``plan.json`` passes before a report reads it.

A results folder may come from someone else: its plan names the study (which becomes the default
report folder, ``reports/<study>``) and holds the lists the report walks. A plan that is not what
``workbench run`` writes is refused with one line naming the field, so that no value of a received
folder can choose where the report goes or end the report in a traceback.
"""

from __future__ import annotations

import math

from workbench.errors import InputError
from workbench.files import plain_name

__all__ = ["check_plan"]


def _fail(root, field: str, wanted: str, value) -> InputError:
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return InputError(f"{root}: plan.json {field} must be {wanted}, got {type(value).__name__} {shown}")


def _number(plan: dict, key: str, root, integer: bool = False, where: str | None = None) -> None:
    value = plan.get(key)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok or (integer and not isinstance(value, int)):
        raise _fail(root, where or key, "a positive whole number" if integer else "a positive number", value)


def _records(plan: dict, key: str, fields: tuple[str, ...], root, required: bool = True) -> None:
    """``plan[key]`` a list of objects whose ``fields`` are strings."""
    if key not in plan and not required:
        return
    items = plan.get(key)
    if not isinstance(items, list):
        raise _fail(root, key, "a list", items)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _fail(root, f"{key}[{i}]", "an object", item)
        for f in fields:
            if not isinstance(item.get(f), str):
                raise _fail(root, f"{key}[{i}].{f}", "a string", item.get(f))


def _methods(methods: list[dict], root) -> None:
    """Each compared method's formulation is a registered one; tol, accept are positive numbers (the
    report groups and judges methods by them)."""
    from formulations import FORMULATIONS
    for i, m in enumerate(methods):
        if m["formulation"] not in FORMULATIONS:
            raise _fail(root, f"methods[{i}].formulation", f"one of {', '.join(FORMULATIONS)}", m["formulation"])
        _number(m, "tol", root, where=f"methods[{i}].tol")
        if m.get("accept") is not None:
            _number(m, "accept", root, where=f"methods[{i}].accept")
        if not isinstance(m.get("params", {}), dict):
            raise _fail(root, f"methods[{i}].params", "an object", m.get("params"))


def check_plan(plan, root) -> dict:
    """``plan`` when it has the shape ``workbench run`` writes (module docstring); InputError otherwise."""
    from workbench.analysis.sections import SECTIONS

    if not isinstance(plan, dict):
        raise _fail(root, "(the whole file)", "an object", plan)
    if not isinstance(plan.get("study"), str):
        raise _fail(root, "study", "a string", plan.get("study"))
    plain_name(plan["study"], f"{root}: plan.json study")
    if not isinstance(plan.get("description", ""), str):
        raise _fail(root, "description", "a string", plan.get("description"))
    _number(plan, "time_limit", root)
    _number(plan, "repetitions", root, integer=True)
    _records(plan, "methods", ("method", "label", "formulation", "solver"), root)
    if not plan["methods"]:  # a study has at least one method (workbench.study.spec)
        raise _fail(root, "methods", "a list of at least one method", plan["methods"])
    _methods(plan["methods"], root)
    _records(plan, "references", ("method", "label", "formulation", "solver"), root, required=False)
    _methods(plan.get("references", []), root)
    _records(plan, "problems", ("problem",), root)
    _records(plan, "skipped", ("problem", "method"), root)
    _records(plan, "runs", ("key",), root)
    _records(plan, "reference_runs", ("key",), root, required=False)
    missing = plan.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
        raise _fail(root, "missing", "a list of strings", missing)
    report = plan.get("report")
    if not isinstance(report, dict):
        raise _fail(root, "report", "an object", report)
    sections = report.get("sections")
    if not isinstance(sections, list) or not all(s in SECTIONS for s in sections):
        raise _fail(root, "report.sections", f"a list of {', '.join(SECTIONS)}", sections)
    for key, choices in (("time", ("solve", "total")), ("convergence", ("error", "absolute"))):
        if report.get(key) not in choices:
            raise _fail(root, f"report.{key}", " or ".join(choices), report.get(key))
    _number(report, "shift", root)
    _number(report, "target", root)
    if not isinstance(report.get("reference_method"), (str, type(None))):
        raise _fail(root, "report.reference_method", "a string or null", report.get("reference_method"))
    _records(report, "paper", ("what", "source", "method", "quantity"), root, required=False)
    labels = {m["method"] for m in plan["methods"] + plan.get("references", [])}
    for i, entry in enumerate(report.get("paper", [])):
        where = f"report.paper[{i}]"
        if entry["method"] not in labels:
            raise _fail(root, f"{where}.method", "a method of the plan", entry["method"])
        for key in ("value", "rel_tol"):
            if isinstance(entry.get(key), bool) or not isinstance(entry.get(key), (int, float)):
                raise _fail(root, f"{where}.{key}", "a number", entry.get(key))
        for key in ("tag", "problem"):
            if not isinstance(entry.get(key), (str, type(None))):
                raise _fail(root, f"{where}.{key}", "a string or null", entry.get(key))
    return plan
