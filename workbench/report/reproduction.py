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
  ``{"rule": "between", "low": a, "high": b}``
      reproduced when a <= measured <= b (a finding stated as a band, e.g. two fitted slopes that
      differ by at most 0.3: the difference in [-0.3, 0.3]); ``paper`` states the finding;
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

Rows over the members of a dataset family (a random packing, a chaotic simulation: issue 44) carry
``members`` (:func:`over_members`, :func:`paired_members`): the member count and the exact 95 % interval
of the median over members (:mod:`workbench.analysis.members`), and are judged on the interval, not on
one sample: **reproduced** when the interval lies inside the criterion's band (``within``: paper +-
rel_tol |paper|; ``factor``: [paper / f, f paper]; ``below``: <= threshold), **not reproduced** when
it lies outside, **undecided** when it straddles a bound (or is unbounded: under 6 members). A
``holds`` row judges the interval of the paired ratio measured[0] / measured[1] against ``factor``
the same way; one whose second number is the same constant on every member (a finding "A > 0") carries
``members`` of the first number with ``against`` that constant. Such a row has at least
:data:`MIN_MEMBERS` members, or says why fewer (``fewer``).

A row whose number is a fitted slope over packings of different sizes (one per size, a random
packing each) carries ``members`` from :func:`fitted`: the slope with its t interval, ``estimate``
naming the statistic and ``unit`` what was counted ("packings, one per size"), judged the same way.

Other words: **reproduced failure** (``failure``: both sides fail the same way, e.g. both stop at
MAX ITER: said as such, never counted with the reproductions); **depends on CHOICE** (``choices``:
a quantity with more than one reasonable definition, {"name": CHOICE, "values": {definition:
measured}}, a definition's value a number or a ``members`` dict judged on its interval: the rule is
applied under each, and when their verdicts differ the row reads "depends on CHOICE" with each verdict; when they agree, that verdict, with "the same under every CHOICE");
**not comparable** (the rule ``not_comparable``, or an ``obstacle``: say what is not given);
**not measured**.

The verdict is never stored: :func:`verdict` computes it from the row whenever the table is rendered,
so the page always says what the numbers in its raw data imply. A rule that needs a number which was
not measured (``None``) gives "not measured" with the row's ``missing`` reason.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["REPRODUCED", "NOT_REPRODUCED", "NOT_COMPARABLE", "NOT_MEASURED", "UNDECIDED", "REPRODUCED_FAILURE",
           "DEPENDS", "MIN_MEMBERS", "verdict", "row", "render_table", "fmt", "over_members", "paired_members", "fitted",
           "counted", "not_given"]

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_COMPARABLE = "not comparable"
NOT_MEASURED = "not measured"
UNDECIDED = "undecided"
REPRODUCED_FAILURE = "reproduced failure"
#: the prefix of "depends on CHOICE"
DEPENDS = "depends on"

#: the fewest members of a row over a family that needs no reason for fewer (issue 44)
MIN_MEMBERS = 10

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
    if kind == "between":
        lo, hi = rule["low"], rule["high"]
        ok = lo <= measured <= hi
        return (REPRODUCED if ok else NOT_REPRODUCED), f"{fmt(measured)} {'inside' if ok else 'outside'} [{fmt(lo)}, {fmt(hi)}]"
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
    if kind == "between":
        return _number(measured)
    return _number(measured) and _number(paper)


def not_given(what: str) -> dict:
    """The rule of a row the paper cannot be compared on because it does not give ``what`` (the sphere
    mass, the contact envelope): "not comparable (WHAT not given)"."""
    return {"rule": "not_comparable", "reason": f"{what} not given"}


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def over_members(values, *, fewer: str | None = None) -> dict:
    """The ``members`` of a row measured on each member of a family: ``n``, ``median`` (None where infinite: more
    than half the members "not reached"), ``low``, ``high`` (the exact 95 % interval of the median; None for an
    unbounded end), ``coverage``, ``of`` = "value";
    ``fewer``: why fewer than MIN_MEMBERS members (required then)."""
    from workbench.analysis.members import median_interval

    s = median_interval(values)
    out = {"n": s["n"], "median": _finite_or_none(s["median"]), "low": _finite_or_none(s["low"]),
           "high": _finite_or_none(s["high"]),
           "level": s["level"], "coverage": None if math.isnan(s["coverage"]) else s["coverage"], "of": "value"}
    return out | ({"fewer": fewer} if fewer else {})


def paired_members(a, b, *, fewer: str | None = None) -> dict:
    """The ``members`` of a ``holds`` row: the interval of the median of the paired ratios a_i / b_i over
    the same members (:func:`workbench.analysis.members.compare`), ``of`` = "ratio"."""
    from workbench.analysis.members import compare

    c = compare(a, b)
    out = {"n": c["n"], "median": _finite_or_none(c["ratio"]),
           "low": _finite_or_none(c["ratio_low"]) if c["ranks"] else None,
           "high": _finite_or_none(c["ratio_high"]) if c["ranks"] else None, "level": c["level"],
           "coverage": None if math.isnan(c["coverage"]) else c["coverage"], "of": "ratio"}
    return out | ({"fewer": fewer} if fewer else {})


def fitted(fit: dict, *, estimate: str, unit: str, fewer: str | None = None) -> dict:
    """The ``members`` of a row whose number is a least-squares slope (:func:`workbench.analysis.stats.loglog_fit`:
    ``n``, ``slope``, ``low``, ``high``, ``level``) over ``unit`` (e.g. "packings, one per size"): judged on
    its t interval as a row over members is on the median's; ``estimate`` names the statistic."""
    out = {"n": fit["n"], "median": _finite_or_none(fit["slope"]), "low": _finite_or_none(fit["low"]),
           "high": _finite_or_none(fit["high"]), "level": fit["level"], "coverage": None, "of": "value",
           "estimate": estimate, "unit": unit}
    return out | ({"fewer": fewer} if fewer else {})


def _band(rule: dict, paper: Any) -> tuple[float, float, str]:
    """The criterion's band of measured values: (lower, upper, text)."""
    kind = rule["rule"]
    if kind == "within":
        half = rule["rel_tol"] * abs(paper)
        return paper - half, paper + half, f"paper +- {rule['rel_tol']:g} |paper| = [{fmt(paper - half)}, {fmt(paper + half)}]"
    if kind == "factor":
        lo, hi = sorted((paper / rule["factor"], paper * rule["factor"]))
        return lo, hi, f"[{fmt(lo)}, {fmt(hi)}] (paper / {rule['factor']:g} to {rule['factor']:g} paper)"
    if kind == "below":
        return -math.inf, rule["threshold"], f"<= {rule['threshold']:g}"
    if kind == "between":
        return rule["low"], rule["high"], f"[{fmt(rule['low'])}, {fmt(rule['high'])}]"
    raise ValueError(f"rule {kind!r} cannot judge an interval over members")


def _members_verdict(rule: dict, paper: Any, members: dict) -> tuple[str, str]:
    """The verdict of a row over members, from the interval (module docstring)."""
    lo = -math.inf if members["low"] is None else members["low"]
    hi = math.inf if members["high"] is None else members["high"]
    interval = (f"{members['level']:.0%} interval [{fmt(members['low'])}, {fmt(members['high'])}] over "
                f"{_count(members)}")
    if rule["rule"] == "holds":
        op, f = rule["op"], rule.get("factor", 1.0)
        # of "value": measured[0] over members against a constant measured[1] (``against``, e.g. 0)
        f = f if members["of"] == "ratio" else f * members["against"]
        ok = {"<": hi < f, "<=": hi <= f, ">": lo > f, ">=": lo >= f}[op]
        fails = {"<": lo >= f, "<=": lo > f, ">": hi <= f, ">=": hi < f}[op]
        label = REPRODUCED if ok else NOT_REPRODUCED if fails else UNDECIDED
        what = {REPRODUCED: "inside", NOT_REPRODUCED: "outside", UNDECIDED: "straddles"}[label]
        return label, f"{'ratio' if members['of'] == 'ratio' else 'value'}'s {interval} {what} {op} {f:g}"
    if rule["rule"] == "below" and not paper <= rule["threshold"]:
        return NOT_REPRODUCED, f"the paper's value is above {rule['threshold']:g}"
    low, high, text = _band(rule, paper)
    if low <= lo and hi <= high:
        return REPRODUCED, f"{interval} inside {text}"
    if hi < low or lo > high:
        return NOT_REPRODUCED, f"{interval} outside {text}"
    return UNDECIDED, f"{interval} straddles {text}"


def _judged(rule: dict, paper: Any, measured: Any, members: dict | None) -> tuple[str, str]:
    if members is not None and rule["rule"] != "not_comparable":
        return _members_verdict(rule, paper, members)
    return _rule_verdict(rule, paper, measured)


def _is_members(value: Any) -> bool:
    """Whether a choice's value is a ``members`` dict (:func:`over_members`) rather than one number."""
    return isinstance(value, dict) and "n" in value and "of" in value


def _members_text(m: dict) -> str:
    what = m.get("estimate") or ("ratio median" if m["of"] == "ratio" else "median")
    fewer = f"; fewer because {m['fewer']}" if m.get("fewer") else ""
    return f"{what} {fmt(m['median'])}, {m['level']:.0%} interval [{fmt(m['low'])}, {fmt(m['high'])}], {_count(m)}{fewer}"


def _count(m: dict) -> str:
    """How many the interval is over: "N members" ("1 member"), or N of the row's own unit."""
    return f"{m['n']} {m.get('unit') or ('member' if m['n'] == 1 else 'members')}"


def _choices_verdict(r: dict) -> tuple[str, str] | None:
    """The verdict under each definition of ``choices`` (module docstring); None when the row has none."""
    choices = r.get("choices")
    if not choices:
        return None
    rule, paper = r["rule"], r.get("paper")
    each = {}
    for name, value in sorted(choices["values"].items()):   # the raw data's order (JSON with sorted keys)
        if _is_members(value):   # a definition measured over members: judged on its interval
            each[name] = _members_verdict(rule, paper, value)
            continue
        each[name] = (_rule_verdict(rule, paper, value) if _measured_complete(rule, paper, value)
                      else (NOT_MEASURED, "no measured value"))
    labels = {label for label, _ in each.values()}
    listed = "; ".join(f"{name}: {label} ({reason})" for name, (label, reason) in each.items())
    if len(labels) == 1:
        return labels.pop(), f"the same under every {choices['name']}: {listed}"
    return f"{DEPENDS} {choices['name']}", listed


def verdict(r: dict) -> tuple[str, str]:
    """(verdict, reason) of a row, computed from its numbers by its rule (module docstring)."""
    rule = r["rule"]
    by_choice = _choices_verdict(r)
    if by_choice is not None:
        if r.get("obstacle") and by_choice[0] != NOT_COMPARABLE:   # an obstacle holds under every definition
            return NOT_COMPARABLE, f"{r['obstacle']} (by the rule alone: {by_choice[0]}, {by_choice[1]})"
        return by_choice
    if not _measured_complete(rule, r.get("paper"), r.get("measured")):
        return NOT_MEASURED, r.get("missing") or "no measured value"
    label, reason = _judged(rule, r.get("paper"), r.get("measured"), r.get("members"))
    if r.get("failure") and label == REPRODUCED:
        label, reason = REPRODUCED_FAILURE, f"{r['failure']} ({reason}); not counted with the reproductions"
    if r.get("roundoff") and label != NOT_COMPARABLE:
        label, reason = NOT_REPRODUCED, f"depends on round-off: {r['roundoff']}"
    if r.get("obstacle") and label != NOT_COMPARABLE:
        return NOT_COMPARABLE, f"{r['obstacle']} (by the rule alone: {label}, {reason})"
    return label, reason


def row(quantity: str, source: str, paper: Any, measured: Any, rule: dict, *, criterion: str, differences: str = "none",
        shown: str | None = None, paper_shown: str | None = None, obstacle: str | None = None,
        missing: str | None = None, roundoff: str | None = None, members: dict | None = None,
        failure: str | None = None, choices: dict | None = None) -> dict:
    """A table row (module docstring); ``shown`` / ``paper_shown`` replace the plain rendering of the
    measured / paper value (extra information such as a spread or a second number). ``members``
    (:func:`over_members`, :func:`paired_members`): a row over a family's members, at least MIN_MEMBERS
    of them or its ``fewer`` reason; ``failure``: what both sides fail the same way; ``choices``:
    {"name": CHOICE, "values": {definition: measured}}."""
    out = {"quantity": quantity, "source": source, "paper": paper, "measured": measured, "rule": rule,
           "criterion": criterion, "differences": differences}
    for key, value in (("shown", shown), ("paper_shown", paper_shown), ("obstacle", obstacle), ("missing", missing),
                       ("roundoff", roundoff), ("members", members), ("failure", failure), ("choices", choices)):
        if value is not None:
            out[key] = value
    if members is not None and members["n"] < MIN_MEMBERS and not members.get("fewer"):
        raise ValueError(f"{quantity}: {members['n']} members, under {MIN_MEMBERS}, and no reason for fewer")
    if choices is not None and (not choices.get("name") or len(choices.get("values") or {}) < 2):
        raise ValueError(f"{quantity}: choices need a name and at least two definitions")
    verdict(out)  # a malformed rule fails here, at measurement time, not when the page is checked
    return out


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(r: dict, key: str, shown: str) -> str:
    if key == "measured" and r.get("members"):   # the interval is always reported; ``shown`` adds to it
        extra = f"; first member: {r[shown]}" if r.get(shown) else ""
        return _members_text(r["members"]) + extra
    if r.get(shown):
        return r[shown]
    if key == "measured" and r.get("choices"):
        return "; ".join(f"{name}: {_members_text(v) if _is_members(v) else fmt(v)}"
                         for name, v in sorted(r["choices"]["values"].items()))
    v = r.get(key)
    if isinstance(v, (list, tuple)):
        return " vs ".join(fmt(x) for x in v)
    return fmt(v)


def counted(counts: dict[str, int]) -> str:
    """The count of verdicts as a page states it: the four words every page has, then undecided,
    reproduced failure and each "depends on CHOICE" where there are any (never added to the
    reproductions)."""
    order = [REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE, NOT_MEASURED]
    extra = [k for k in (UNDECIDED, REPRODUCED_FAILURE) if counts.get(k)]
    extra += sorted(k for k in counts if k.startswith(DEPENDS))
    return ", ".join(f"{counts.get(k, 0)} {k}" for k in order + extra)


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
    lines += ["", "Verdicts: " + counted(counts) + "."]
    for note in data.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"
