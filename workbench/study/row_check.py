"""The one check of a run row read back from a results folder, against the declared run row.

A results folder may come from someone else, or have been edited: every ``runs/<key>.parquet`` is
checked here (:func:`check_run_rows`, which ``workbench.study.results.row_check`` applies with the
declaration, and every reader of rows hands to ``ResultStore``: ``results.read_runs`` for the report,
``load_results`` and the conformance check, ``run --rerun-failed``) before it is used, so
that a bad row is one line naming its file, not a traceback deep in a table. The declaration is
passed in (:data:`workbench.study.record.RUN_ROW`), and :data:`KINDS` says which of its dtypes are
text and which numbers.

Checked: one row per file; the columns a row cannot lack (:data:`REQUIRED`); the key is a plain name
(it names the run's history file); the status one of workbench.status.ORDER; text columns text
(or missing), number columns numbers (or missing, or the text of a non-finite number); ``handover_detail`` JSON within the BYTES and
DEPTH limits, a list of hand-overs each with the fields the report reads, of their types.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from workbench.errors import InputError

__all__ = ["check_run_rows", "REQUIRED", "KINDS", "HANDOVER_FIELDS"]

#: the columns every recorded run has had since results folders were introduced
REQUIRED = ("key", "problem", "method", "status")
#: a worker's record writes a non-finite number as its text (workbench.solvers.base)
_NON_FINITE = ("nan", "inf", "-inf")
#: a declared column's dtype (workbench.study.record.DTYPES) -> what a stored row holds in it
KINDS = {"str": "text", "json": "text", "int": "number", "float": "number"}
#: the fields of one hand-over the report reads, and their types
HANDOVER_FIELDS = {"kind": str, "from": str, "to": str, "reason": str, "at_iteration": (int, float),
                   "at_seconds": (int, float), "error_before": (int, float, type(None)), "used": bool,
                   "status_alone": str}


def check_run_rows(frame: pd.DataFrame, path: Path, declared) -> pd.DataFrame:
    """``frame`` (the table of the run file ``path``) when its row fits the run row ``declared`` (name ->
    workbench.study.record.Column: text in its text columns, numbers in its number columns); an
    InputError "PATH: not a run row of the workbench: WHY" otherwise."""
    from workbench.files import plain_name
    from workbench.status import ORDER as STATUSES

    def bad(why: str) -> InputError:
        return InputError(f"{path}: not a run row of the workbench: {why}")

    if len(frame) != 1:
        raise bad(f"{len(frame)} rows (a run file holds one)")
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise bad(f"no column {', '.join(missing)}")
    row = frame.iloc[0]
    for column, kind in ((name, KINDS[c.dtype]) for name, c in declared.items()):
        if column not in frame.columns or _missing(row[column]):
            continue
        value = row[column]
        ok = isinstance(value, str) if kind == "text" else value in _NON_FINITE or \
            (pd.api.types.is_number(value) and not isinstance(value, (bool, str)))
        if not ok:
            raise bad(f"{column} must be {'text' if kind == 'text' else 'a number'}, got {type(value).__name__}")
    try:
        plain_name(row["key"], "key")
    except InputError as exc:
        raise bad(str(exc)) from None
    if row["status"] not in STATUSES:
        raise bad(f"status {str(row['status'])[:40]!r} is not one of {', '.join(STATUSES)}")
    if "handover_detail" in frame.columns and not _missing(row["handover_detail"]):
        _check_handovers(row["handover_detail"], bad)
    return frame


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _check_handovers(text: str, bad) -> None:
    from workbench.limits import check_depth, limit
    if len(text) > limit("BYTES"):
        raise bad(f"handover_detail of {len(text)} characters")
    try:
        details = json.loads(text)
        check_depth(details, "handover_detail")
    except RecursionError:
        raise bad("handover_detail nested deeper than the parser can follow") from None
    except (ValueError, InputError) as exc:
        raise bad(f"handover_detail: {' '.join(str(exc).split())[:160]}") from None
    if not isinstance(details, list):
        raise bad(f"handover_detail must be a JSON list, got {type(details).__name__}")
    for i, h in enumerate(details):
        if not isinstance(h, dict):
            raise bad(f"handover_detail[{i}] must be an object, got {type(h).__name__}")
        for field, kind in HANDOVER_FIELDS.items():
            value = h.get(field, KeyError)
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise bad(f"handover_detail[{i}].{field} missing or of the wrong type")
