"""The checks a results folder's ``plan.json`` passes before a report reads it, derived from the one
declaration of plan.json (:data:`workbench.study.plan.PLAN`: each field's shape, whether it may be
absent or null, its choices, the fields of its objects).

A results folder may come from someone else: its plan names the study (which becomes the default
report folder, ``reports/<study>``) and holds the lists the report walks. A plan that is not what
``workbench run`` writes is refused with one line naming the field, so that no value of a received
folder can choose where the report goes or end the report in a traceback.
"""

from __future__ import annotations

import math
from typing import Callable

from workbench.errors import InputError
from workbench.files import plain_name
from workbench.study.plan import PLAN, Field

__all__ = ["check_plan"]


def _fail(root, field: str, wanted: str, value) -> InputError:
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return InputError(f"{root}: plan.json {field} must be {wanted}, got {type(value).__name__} {shown}")


def _real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _one_of(choices: tuple[str, ...]) -> str:
    return " or ".join(choices) if len(choices) == 2 else f"one of {', '.join(choices)}"


def _check(value, f: Field, where: str, root, later: list[Callable[[], None]]) -> None:
    """``value`` of the field ``f`` at ``where`` as declared; checks against the rest of the plan
    (``among``) go to ``later``, once every field has its shape."""
    if value is None and f.null:
        return
    shape = f.shape
    if shape in ("name", "text"):
        if not isinstance(value, str):
            raise _fail(root, where, "a string or null" if f.null else "a string", value)
        if shape == "name":
            plain_name(value, f"{root}: plan.json {where}")
        if f.among is not None:
            later.append(lambda plan: value in f.among(plan) or _raise(_fail(root, where, f.among_what, value)))
    elif shape == "number":
        if not _real(value):
            raise _fail(root, where, "a number", value)
    elif shape in ("positive", "count"):
        if not (_real(value) and math.isfinite(value) and value > 0) or (shape == "count" and not isinstance(value, int)):
            raise _fail(root, where, "a positive whole number" if shape == "count" else "a positive number", value)
    elif shape == "texts":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _fail(root, where, "a list of strings", value)
    elif shape == "choice":
        if not (isinstance(value, str) and value in f.choices()):
            raise _fail(root, where, _one_of(f.choices()), value)
    elif shape == "choices":
        if not isinstance(value, list) or not all(isinstance(v, str) and v in f.choices() for v in value):
            raise _fail(root, where, f"a list of {', '.join(f.choices())}", value)
    elif shape == "object":
        if not isinstance(value, dict):
            raise _fail(root, where, "an object", value)
        _fields(value, f.of or {}, f"{where}.", root, later)
    else:  # records
        if not isinstance(value, list):
            raise _fail(root, where, "a list", value)
        if f.nonempty and not value:
            raise _fail(root, where, f"a list of at least one {f.nonempty}", value)
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise _fail(root, f"{where}[{i}]", "an object", item)
            _fields(item, f.of or {}, f"{where}[{i}].", root, later)


def _raise(exc: Exception):
    raise exc


def _fields(obj: dict, fields: dict[str, Field], prefix: str, root, later) -> None:
    for name, f in fields.items():
        if name in obj or f.required:
            _check(obj.get(name), f, f"{prefix}{name}", root, later)


def check_plan(plan, root) -> dict:
    """``plan`` when it has the shape ``workbench run`` writes (:data:`PLAN`); InputError otherwise."""
    if not isinstance(plan, dict):
        raise _fail(root, "(the whole file)", "an object", plan)
    later: list = []
    _fields(plan, PLAN, "", root, later)
    for check in later:
        check(plan)
    return plan
