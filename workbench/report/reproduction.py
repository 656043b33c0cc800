"""One "paper vs measured" table per reproduced paper: rows, the declared verdict rules, the renderer.

A row (a plain dict, so that it is stored as JSON by :func:`workbench.provenance.write_results`) is

- ``quantity``, ``source`` (the paper's table, figure or section), ``paper`` and ``measured``
  (numbers, strings or ``None`` where nothing was measured), ``criterion`` (the criterion both sides
  use), ``differences`` (every parameter that differs from the paper's, and why);
- ``rule``: how the verdict is computed from ``paper`` and ``measured``, one of

  ``{"rule": "within", "rel_tol": t}``
      reproduced when |measured - paper| <= t |paper|;
  ``{"rule": "factor", "factor": f}``
      reproduced when paper / f <= measured <= f paper (same sign): agreement in order of magnitude;
  ``{"rule": "below", "threshold": t}``
      reproduced when both are <= t (both "zero" at a stated accuracy);
  ``{"rule": "same"}``
      reproduced when the two are equal (a status such as "MAX ITER", a count);
  ``{"rule": "holds", "op": OP, "factor": f, "finding": TEXT}``
      a qualitative finding of the paper, the inequality ``measured[0] OP f * measured[1]`` (OP one of
      ``<``, ``<=``, ``>``, ``>=``), reproduced when it holds; ``paper`` states the finding;
  ``{"rule": "not_comparable", "reason": TEXT}``
      the two cannot be compared (unknown units, other problem, a figure without numbers);
- ``roundoff`` (optional): what shows that the measured outcome depends on round-off (the same method
  with another, equally valid rounding ended otherwise); the verdict is then "not reproduced" with
  the reason "depends on round-off: ...", never a machine's lucky result;
- ``obstacle`` (optional): a reason the comparison does not stand although both numbers exist (a
  dataset not made at the paper's protocol); the verdict is then "not comparable", and the rule's own
  outcome is given in the reason.

The verdict is never stored: :func:`verdict` computes it from the row whenever the table is rendered,
so the page always says what the numbers in its raw data imply. A rule that needs a number which was
not measured (``None``) gives "not measured" with the row's ``missing`` reason.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["REPRODUCED", "NOT_REPRODUCED", "NOT_COMPARABLE", "NOT_MEASURED", "verdict", "row", "render_table",
           "fmt"]

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_COMPARABLE = "not comparable"
NOT_MEASURED = "not measured"

_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def fmt(x: Any) -> str:
    """A number as a table shows it (4 significant digits; integers whole); other values as text."""
    if x is None:
        return "-"
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int) or (float(x).is_integer() and abs(x) < 1e9):
        return f"{int(x):,}"
    return f"{x:.4g}"


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _rule_verdict(rule: dict, paper: Any, measured: Any) -> tuple[str, str]:
    kind = rule["rule"]
    if kind == "not_comparable":
        return NOT_COMPARABLE, rule["reason"]
    if kind == "within":
        tol = rule["rel_tol"]
        if paper == 0:
            raise ValueError("rule 'within' needs a nonzero paper value")
        dev = abs(measured - paper) / abs(paper)
        return (REPRODUCED if dev <= tol else NOT_REPRODUCED), f"relative deviation {dev:.2g} {'<=' if dev <= tol else '>'} {tol:g}"
    if kind == "factor":
        f = rule["factor"]
        ratio = measured / paper if paper != 0 else math.inf
        ok = 1.0 / f <= ratio <= f
        return (REPRODUCED if ok else NOT_REPRODUCED), f"measured / paper = {ratio:.2g}, {'within' if ok else 'outside'} [1/{f:g}, {f:g}]"
    if kind == "below":
        t = rule["threshold"]
        ok = paper <= t and measured <= t
        return (REPRODUCED if ok else NOT_REPRODUCED), f"both <= {t:g}: {'yes' if ok else 'no'}"
    if kind == "same":
        ok = paper == measured
        return (REPRODUCED if ok else NOT_REPRODUCED), "equal" if ok else "different"
    if kind == "holds":
        a, b = measured
        op, f = rule["op"], rule.get("factor", 1.0)
        ok = _OPS[op](a, f * b)
        rhs = fmt(b) if f == 1.0 else f"{f:g} x {fmt(b)}"
        return (REPRODUCED if ok else NOT_REPRODUCED), f"{fmt(a)} {op} {rhs}: {'holds' if ok else 'does not hold'}"
    raise ValueError(f"unknown verdict rule {kind!r}")


def _measured_complete(rule: dict, paper: Any, measured: Any) -> bool:
    kind = rule["rule"]
    if kind == "not_comparable":
        return True
    if kind == "holds":
        return isinstance(measured, (list, tuple)) and len(measured) == 2 and all(_number(x) for x in measured)
    if kind == "same":
        return measured is not None
    return _number(measured) and _number(paper)


def verdict(r: dict) -> tuple[str, str]:
    """(verdict, reason) of a row, computed from its numbers by its rule (module docstring)."""
    rule = r["rule"]
    if not _measured_complete(rule, r.get("paper"), r.get("measured")):
        return NOT_MEASURED, r.get("missing") or "no measured value"
    label, reason = _rule_verdict(rule, r.get("paper"), r.get("measured"))
    if r.get("roundoff") and label != NOT_COMPARABLE:
        label, reason = NOT_REPRODUCED, f"depends on round-off: {r['roundoff']}"
    if r.get("obstacle") and label != NOT_COMPARABLE:
        return NOT_COMPARABLE, f"{r['obstacle']} (by the rule alone: {label}, {reason})"
    return label, reason


def row(quantity: str, source: str, paper: Any, measured: Any, rule: dict, *, criterion: str, differences: str = "none",
        shown: str | None = None, paper_shown: str | None = None, obstacle: str | None = None,
        missing: str | None = None, roundoff: str | None = None) -> dict:
    """A table row (module docstring); ``shown`` / ``paper_shown`` replace the plain rendering of the
    measured / paper value (extra information such as a spread or a second number)."""
    out = {"quantity": quantity, "source": source, "paper": paper, "measured": measured, "rule": rule,
           "criterion": criterion, "differences": differences}
    for key, value in (("shown", shown), ("paper_shown", paper_shown), ("obstacle", obstacle), ("missing", missing),
                       ("roundoff", roundoff)):
        if value is not None:
            out[key] = value
    verdict(out)  # a malformed rule fails here, at measurement time, not when the page is checked
    return out


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(r: dict, key: str, shown: str) -> str:
    if r.get(shown):
        return r[shown]
    v = r.get(key)
    if isinstance(v, (list, tuple)):
        return " vs ".join(fmt(x) for x in v)
    return fmt(v)


def render_table(data: dict) -> str:
    """Markdown of a reproduction: title, what was run, the table (verdicts computed by
    :func:`verdict`), a count of the verdicts and the notes. ``data``: ``title``, ``setup`` (text),
    ``rows``, optional ``notes`` (list of text)."""
    head = ["quantity", "paper (where)", "measured", "criterion (both sides)", "parameters that differ, and why",
            "verdict"]
    lines = [f"### {data['title']}", "", data["setup"], "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    counts: dict[str, int] = {}
    for r in data["rows"]:
        label, reason = verdict(r)
        counts[label] = counts.get(label, 0) + 1
        paper = _value(r, "paper", "paper_shown")
        cells = [r["quantity"], f"{paper} ({r['source']})", _value(r, "measured", "shown"), r["criterion"],
                 r["differences"], f"**{label}**: {reason}"]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    order = [REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE, NOT_MEASURED]
    lines += ["", "Verdicts: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in order) + "."]
    for note in data.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"
