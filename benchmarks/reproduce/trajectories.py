"""Verdicts that do not ride on one simulated trajectory (issue 32: "where an outcome still depends on
round-off, the row says so").

A granular flow is chaotic: a change of the last bits (another BLAS kernel, another summation order,
another library release) grows into another trajectory within a few hundred steps, and a finding
measured on one trajectory can hold on it and fail on its neighbour. So the reproductions that simulate
measure each row on the members of a family of trajectories (issue 44): the scene as built, and the scene
with every initial position coordinate multiplied by 1 + PERTURBATION z (z standard normal, seeds 1, 2,
...): a change of the size round-off makes. :func:`over_members` judges a numeric row on the exact 95 %
interval of the median over the members (workbench.report.reproduction.over_members, paired_members for
a finding "A OP f B": the ratio A / B): reproduced, not reproduced, or undecided when the interval
straddles the criterion (always under 6 members). At least MIN_MEMBERS members, or the row says why
fewer. A row that has no number per member (a status, a count compared exactly, a value missing on some
member) keeps the earlier rule (:func:`roundoff`): its verdict is "not reproduced (depends on round-off)"
where the members' verdicts differ, with each member's outcome.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.report.reproduction import MIN_MEMBERS, over_members as _over, paired_members, verdict

__all__ = ["PERTURBATION", "perturb", "name", "described", "roundoff", "over_members", "fewer_reason"]

#: the relative change of the initial positions of a perturbed trajectory
PERTURBATION = 1e-12


def perturb(world, k: int) -> None:
    """Trajectory ``k`` of ``world``: k = 0 leaves it as built; k > 0 multiplies every initial position
    coordinate of its bodies by 1 + PERTURBATION z, z standard normal drawn with seed k (in place)."""
    if k:
        x = world.bodies.x
        x *= 1.0 + PERTURBATION * np.random.default_rng(k).standard_normal(x.shape)


def name(k: int) -> str:
    return "as built" if k == 0 else f"perturbed (seed {k})"


def described(count: int) -> str:
    """What a row measured on ``count`` trajectories says of them (its "differences")."""
    return (f"measured on {count} members (trajectories: as built, and initial positions perturbed by a relative "
            f"{PERTURBATION:g}: benchmarks.reproduce.trajectories); a number shown apart from the interval is the "
            "first member's")


def fewer_reason(count: int, quick: bool) -> str | None:
    """Why a run measures ``count`` < MIN_MEMBERS members (None: not fewer)."""
    if count >= MIN_MEMBERS:
        return None
    return ("--quick: a CI-sized check, not the comparison" if quick else
            f"--members {count} given (the run's cost bound; each member is a full simulation)")


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _numbers(rule: dict, values: list) -> str | None:
    """How the members' interval judges the row: "value", "ratio" (a finding A OP f B on positive pairs),
    "against" (a finding A OP f c with the same constant c on every member, e.g. 0); None: it cannot."""
    if rule["rule"] in ("within", "factor", "below"):
        return "value" if all(_finite(v) for v in values) else None
    if rule["rule"] != "holds" or not all(isinstance(v, (list, tuple)) and len(v) == 2 and all(_finite(x) for x in v)
                                          for v in values):
        return None
    if all(x > 0 for v in values for x in v):
        return "ratio"
    return "against" if len({v[1] for v in values}) == 1 else None


def over_members(per_member: list[list[dict]], fewer: str | None = None) -> list[dict]:
    """The rows of the first member, each judged over all members (module docstring): a numeric row gets
    ``members`` (the interval of the value, or of the ratio of a ``holds`` row); the others the
    :func:`roundoff` rule. ``fewer``: why fewer than MIN_MEMBERS members (required then)."""
    if len(per_member) < MIN_MEMBERS and not fewer:
        raise ValueError(f"{len(per_member)} members, under {MIN_MEMBERS}, and no reason for fewer")
    fewer = fewer if len(per_member) < MIN_MEMBERS else None
    rows = per_member[0]
    rest = []
    for i, r in enumerate(rows):
        values = [rs[i].get("measured") for rs in per_member]
        how = None if r["rule"]["rule"] == "not_comparable" else _numbers(r["rule"], values)
        if how is None:
            rest.append(i)
            continue
        if how == "ratio":
            m = paired_members([v[0] for v in values], [v[1] for v in values], fewer=fewer)
        elif how == "against":
            m = {**_over([v[0] for v in values], fewer=fewer), "against": values[0][1]}
        else:
            m = _over(values, fewer=fewer)
        r["members"] = m
    roundoff([[rs[i] for i in rest] for rs in per_member])
    return rows


def roundoff(per_trajectory: list[list[dict]]) -> list[dict]:
    """The rows of the first trajectory; a row whose verdict differs between trajectories gets a
    ``roundoff`` reason listing every trajectory's outcome (its verdict is then "not reproduced")."""
    rows = per_trajectory[0]
    for i, r in enumerate(rows):
        outcomes = [verdict(rs[i]) for rs in per_trajectory]
        if len({label for label, _ in outcomes}) > 1:
            r["roundoff"] = (f"trajectories differing only by a relative {PERTURBATION:g} in the initial positions end "
                             "otherwise: " + "; ".join(f"{name(k)}: {label} ({reason})"
                                                      for k, (label, reason) in enumerate(outcomes)))
    return rows
