"""Verdicts that do not ride on one simulated trajectory (issue 32: "where an outcome still depends on
round-off, the row says so").

A granular flow is chaotic: a change of the last bits (another BLAS kernel, another summation order,
another library release) grows into another trajectory within a few hundred steps, and a finding
measured on one trajectory can hold on it and fail on its neighbour. So the reproductions that simulate
measure each row on several trajectories: the scene as built, and the scene with every initial position
coordinate multiplied by 1 + PERTURBATION z (z standard normal, seeds 1, 2, ...): a change of the size
round-off makes. :func:`roundoff` keeps the first trajectory's rows and marks every row whose verdict
differs between the trajectories: its verdict is then "not reproduced (depends on round-off)", with
each trajectory's outcome (workbench.report.reproduction).
"""

from __future__ import annotations

import numpy as np

from workbench.report.reproduction import verdict

__all__ = ["PERTURBATION", "perturb", "name", "described", "roundoff"]

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
    return (f"measured on {count} trajectories (as built, and initial positions perturbed by a relative "
            f"{PERTURBATION:g}: benchmarks.reproduce.trajectories), the numbers shown are the first's")


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
