"""What the papers' reproductions share: progress lines on stderr, a scenario simulated step by step into
a table of its steps (Mazhar et al. 2014 secs. 5.3-5.5, Melanz et al. 2015), the rows that compare a
simulation with a closed form or find a relaxed lift-off, and how many trajectories a simulated row is
measured on (:mod:`benchmarks.reproduce.trajectories`), and those members measured side by side
(``--jobs``)."""

from __future__ import annotations

import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from workbench.report.reproduction import row
from workbench.solvers import SolveOptions


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- simulations

def simulate(scenario, formulation: str, solver: str, tol: float = 1e-8, max_iter: int | None = None,
             duration: float | None = None):
    """The per-step table (Scenario.step_row: t, contacts, iterations, complementarity, fixed_force,
    max_speed, v_slope, v_normal, rolling, ...) of ``scenario`` simulated with formulation x solver."""
    import pandas as pd

    from problems.stepper import Simulation

    sim = Simulation(scenario.world, scenario.h, formulation, solver,
                     SolveOptions(tol=tol, max_iter=max_iter, keep_history=False))
    steps = scenario.steps if duration is None else int(round(duration / scenario.h))
    t0 = time.perf_counter()
    rows: list[dict] = []
    sim.run(steps, callback=lambda _sim, rec: rows.append(scenario.step_row(rec)))  # observed after each step
    table = pd.DataFrame(rows)
    _say(f"{scenario.name}: {formulation} x {solver}, {steps} steps in {time.perf_counter() - t0:.1f} s")
    return table


def first_time(t, condition) -> float | None:
    """The first time at which ``condition`` holds from then on (None: it never settles)."""
    cond = np.asarray(condition, dtype=bool)
    if not cond[-1]:
        return None
    bad = np.flatnonzero(~cond)
    return float(np.asarray(t)[bad[-1] + 1] if bad.size else np.asarray(t)[0])


def lift_off(table) -> float:
    """max |v_n| [m/s]: the spurious normal velocity of the tracked body (zero in the exact motion)."""
    return float(np.abs(table["v_normal"]).max())


def _lift_off_row(what: str, source: str, table, paper: str, criterion_extra: str = "") -> dict:
    return row(f"relaxation lifts the {what} off the plane", source, paper, [lift_off(table), 1e-3],
               {"rule": "holds", "op": ">=", "finding": "a spurious normal velocity under the relaxed formulation"},
               criterion="max |v_n| of the relaxed (dual) simulation >= 1e-3 m/s" + criterion_extra,
               differences="Clarabel for MOSEK / PATH / APGD")


def _exact_row(quantity: str, source: str, analytic: float, measured: float | None, h: float, missing: str,
               differences: str = "the dual fixed point (Clarabel) for the paper's fixed-point iterations") -> dict:
    return row(quantity, source, round(analytic, 4), None if measured is None else round(measured, 4),
               {"rule": "within", "rel_tol": round(h / abs(analytic), 6)},
               paper_shown=f"{analytic:.4g} (analytic, the paper's parameters)",
               criterion=f"the simulated value within one step h = {h:g} s (relative {h / abs(analytic):.2g})",
               differences=differences, missing=missing)


def _trajectories(args) -> int:
    """How many members (trajectories) this run measures each simulated row on: ``--members``, else
    MIN_MEMBERS (benchmarks.reproduce.trajectories), or MEMBERS_QUICK with --quick."""
    from workbench.report.reproduction import MIN_MEMBERS

    chosen = getattr(args, "members", None)
    return chosen if chosen else (MEMBERS_QUICK if args.quick else MIN_MEMBERS)


def _fewer(args) -> str | None:
    """Why this run measures fewer than MIN_MEMBERS members (None: it does not)."""
    from benchmarks.reproduce.trajectories import fewer_reason

    return fewer_reason(_trajectories(args), args.quick)


#: the members of a --quick run (no interval under 6: its member rows read "undecided")
MEMBERS_QUICK = 3


def per_member(func, args, *params) -> list:
    """``[func(args, *params, k) for k in range(members)]``: the members (:func:`_trajectories`) of one
    section, each independent of the others, in ``args.jobs`` spawned processes at once (default 1: in
    this process), in member order whatever order they finish in. Spawned, not forked: this process may
    hold numba's OpenMP threads, which a forked child cannot use. Each worker gets cores // jobs compiled
    threads unless WORKBENCH_THREADS says otherwise; the rows do not depend on the count
    (workbench.threads), so a page measured with any ``--jobs`` reads the same but for its seconds."""
    count = _trajectories(args)
    jobs = min(max(1, int(getattr(args, "jobs", 1) or 1)), count)
    if jobs == 1:
        return [func(args, *params, k) for k in range(count)]
    from workbench.threads import choose, use

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=use, initargs=(choose(None, jobs),)) as pool:
        futures = [pool.submit(func, args, *params, k) for k in range(count)]
        return [f.result() for f in futures]
