"""A simulation run: a dynamic scene stepped with one formulation x solver (Mazhar et al. 2014 sections 5.3-5.5,
Melanz et al. 2015 section 3), executed by the worker like any other run.

Its history is the per-step table (t, contacts, iterations, solve_seconds, status, complementarity,
fixed_force, max_speed, kinetic_energy, the tracked body's velocities and, where the scene has
them, their analytic values ``*_analytic``), which the report draws as time series per method. Its
row sums over steps (iterations, solve seconds), names the hand-overs of its steps (``handover``:
the labels, and their counts in the message) and keeps the worst: the largest complementarity
max |gamma_n u_n| [N s m/s] (Melanz et al. 2015 eq. 8) and ``analytic_error``, the largest deviation of a
tracked velocity from its analytic curve [m/s]. The run is "solved" when every step is; otherwise
its status is the worst step status, and a step without usable impulses stops the simulation.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from workbench.status import ORDER

__all__ = ["simulate"]

#: step statuses from best to worst (workbench.status; a step without contacts is not solved, but needs
#: nothing). A step records only the statuses of a returned point: one without impulses stops the run.
_ORDER = ("no_contact", *ORDER)


def simulate(source, method, options) -> dict[str, Any]:
    """Run the dynamic scene of ``source`` (a workbench.sources.ScenarioSource) for its duration with
    ``method`` (a :class:`workbench.method.Method`); the worker's answer in its one shape
    (workbench.study.record.answer: status, metrics, history, ...)."""
    from problems.stepper import Simulation, SimulationError, StepChunks
    from workbench.study.record import answer

    scenario = source.build()
    sim = Simulation(scenario.world, scenario.h, method, options=options, name=scenario.name)
    blocks: list[pd.DataFrame] = []
    rows = StepChunks(blocks.append)

    def record(_, rec) -> None:
        rows.append(scenario.step_row(rec))

    t0 = time.perf_counter()
    message = ""
    try:
        sim.run(scenario.steps, record, keep=False)
    except SimulationError as exc:
        message = f"stopped: {exc}"
    wall = time.perf_counter() - t0
    rows.flush()
    steps = pd.concat(blocks, ignore_index=True) if blocks else pd.DataFrame()
    names = {"solver": method.solver_name, "formulation": method.formulation_name}
    if steps.empty:
        return answer(status="failed", message=message or "no step was taken", wall_seconds=wall, steps=0, **names)
    statuses = steps["status"].value_counts()
    worst = max(statuses.index, key=lambda s: _ORDER.index(s) if s in _ORDER else len(_ORDER))
    status = "failed" if message else ("solved" if worst in ("no_contact", "solved") else worst)
    if not message and status != "solved":
        message = f"{statuses[worst]} of {len(steps)} steps {worst}"
    # steps finished by another method (a fallback, a polish): the run says how many, and by what
    handed = steps.loc[steps["handover"] != "", "handover"].value_counts()
    if len(handed):
        message = "; ".join([m for m in (message, ", ".join(f"{n} of {len(steps)} steps: {label}"
                                                             for label, n in handed.items())) if m])
    analytic = [c[: -len("_analytic")] for c in steps if c.endswith("_analytic")]
    metrics = {"complementarity": float(steps["complementarity"].max()),
               "max_contacts": float(steps["contacts"].max()),
               "mean_iterations": float(steps["iterations"].mean())}
    if analytic:
        metrics["analytic_error"] = float(max(np.abs(steps[c] - steps[f"{c}_analytic"]).max() for c in analytic))
    return answer(status=status, iterations=int(steps["iterations"].sum()),
                  solve_seconds=float(steps["solve_seconds"].sum()), wall_seconds=wall, steps=len(steps),
                  message=message, metrics=metrics, history=steps, handover_label=", ".join(handed.index), **names)
