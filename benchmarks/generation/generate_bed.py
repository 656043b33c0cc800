"""Issue 31's 4,096-sphere bed, timed for ``python -m benchmarks.generation.bench_generate --bed-minutes M``.

The 4,096-sphere packing of the recipe ``large`` (:data:`problems.generator.DATASETS`: h = 0.005 s for
4 s = 800 steps, relaxed dual x APGD to tol 1e-6 with at most :data:`problems.generator.BED_ITERATION_CAP`
iterations per step, warm-started from the previous step's impulses; the generator's docstring says why
the large beds cap the iterations) is simulated from its start in this process, on every core the
process has (:mod:`workbench.threads`; the iterates do not depend on the count), for at most M minutes
of wall time: a bounded number of steps. Each step's contacts, APGD iterations, wall time, CPU time
(``time.process_time``: every thread of the process) and the solver's own time
(SolveResult.solve_seconds) are recorded, and the final state's kinetic energy against the settled
criterion (:data:`problems.generator.SETTLED_ENERGY`).

When every step is done within the budget, the packing's simulation is timed (its file is not
written: ``workbench generate large --sizes 4096`` makes it). Otherwise the whole packing is
EXTRAPOLATED, and the page says so: the measured steps' wall time plus the steps left at the mean
wall time per step of the last :data:`TAIL` measured steps. The early steps of a fall (few contacts)
are cheap, so the projection is only as good as the last measured steps are like the ones left: the
page shows the measured steps in windows (contacts, iterations, time per step and per iteration), so
the trend can be read. A record of an earlier run without a recipe was of ``scaling-large`` (tol 1e-6,
at most 10,000 iterations per step): the page names the recipe of the record it shows.
"""

from __future__ import annotations

import os
import time

import numpy as np

#: spheres of the bed (issue 31: a settled packing of 4,096 spheres on the 2-core machine)
SPHERES = 4096
#: the recipe of the bed (problems.generator.DATASETS)
RECIPE = "large"
#: the last this many measured steps set the time per step of the steps left
TAIL = 50
#: steps per row of the page's table
WINDOW = 100


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def bed_spec(n: int = SPHERES, **overrides):
    """The PackingSpec of the :data:`RECIPE` for ``n`` spheres (``overrides``: for tests)."""
    from dataclasses import replace

    from problems.generator import DATASETS

    _, make = DATASETS[RECIPE]
    return replace(make()[0], n=n, **overrides)


def run(budget: float, spec=None) -> dict:
    """Simulate the bed of ``spec`` (default :func:`bed_spec`) from its start until its last step or
    until ``budget`` seconds of wall time have passed (checked between steps); the per-step records."""
    from problems.generator import settling_ratio, simulation
    from workbench import threads

    spec = spec if spec is not None else bed_spec()
    sim = simulation(spec)
    steps = {k: [] for k in ("contacts", "iterations", "wall", "cpu", "solve")}
    load, start = _load(), time.perf_counter()
    while sim.step_index < spec.steps and time.perf_counter() - start < budget:
        wall, cpu = time.perf_counter(), time.process_time()
        rec = sim.step()
        steps["wall"].append(round(time.perf_counter() - wall, 5))
        steps["cpu"].append(round(time.process_time() - cpu, 5))
        steps["contacts"].append(rec.contacts)
        steps["iterations"].append(rec.iterations)
        steps["solve"].append(round(rec.solve_seconds, 5))
    b = sim.world.bodies
    return {"recipe": RECIPE if spec == bed_spec(spec.n) else "custom", "spheres": spec.n, "total_steps": spec.steps, "h": spec.h, "tol": spec.tol, "max_iter": spec.max_iter,
            "budget": budget, "threads": threads.in_use(), "load_start": load, "load_end": _load(), "steps": steps,
            "kinetic_energy": b.kinetic_energy(), "settling_ratio": settling_ratio(b.kinetic_energy(), b.mass, b.radius)}


def projection(bed: dict) -> dict:
    """The bed's time [s], wall and CPU: measured when every step was done, else the measured steps'
    time plus the steps left at the mean of the last TAIL measured ones (module docstring)."""
    wall, cpu = np.array(bed["steps"]["wall"]), np.array(bed["steps"]["cpu"])
    done, total = wall.shape[0], bed["total_steps"]
    out = {"done": done, "measured_wall": float(wall.sum()), "measured_cpu": float(cpu.sum())}
    if done == total:
        return {**out, "wall": out["measured_wall"], "cpu": out["measured_cpu"], "extrapolated": False}
    if done == 0:
        return {**out, "wall": None, "cpu": None, "extrapolated": True}
    tail = slice(max(0, done - TAIL), done)
    left = total - done
    return {**out, "wall": float(wall.sum() + left * wall[tail].mean()),
            "cpu": float(cpu.sum() + left * cpu[tail].mean()), "extrapolated": True}


def how(bed: dict) -> str:
    """The target row's "how" for the bed."""
    p = projection(bed)
    who = (f"{bed['threads']} thread(s) in one process, load {bed['load_start']} at the start and "
           f"{bed['load_end']} at the end; CPU {p['cpu']:,.1f} s" if p["cpu"] is not None else "")
    when = f" in the run of {bed['run']}" if bed.get("run") else ""
    if not p["extrapolated"]:
        return f"all {p['done']} steps simulated and timed{when} ({who}; the file not written)"
    return (f"EXTRAPOLATED: the first {p['done']} of {bed['total_steps']} steps simulated{when} in "
            f"{p['measured_wall']:,.1f} s (budget {bed['budget']:,.0f} s), the other {bed['total_steps'] - p['done']} "
            f"at the mean wall time of the last {min(TAIL, p['done'])} measured steps ({who}, projected the same way)")


def render(bed: dict) -> list[str]:
    """The page's lines: the measured steps in windows of WINDOW steps."""
    s = {k: np.array(v) for k, v in bed["steps"].items()}
    lines = ["", f"The {bed['spheres']:,}-sphere bed (`{bed.get('recipe', 'scaling-large')}`: h = {bed['h']:g} s, {bed['total_steps']} steps, "
                 f"APGD to tol {bed['tol']:g}, at most {bed['max_iter']:,} iterations per step), simulated from its start on "
                 f"{bed['threads']} thread(s) for at most {bed['budget']:,.0f} s of wall time"
                 f"{' in the run of ' + bed['run'] if bed.get('run') else ''}; load average "
                 f"{bed['load_start']} at the start, {bed['load_end']} at the end. Per window of steps: the contacts "
                 "of its last step, the mean APGD iterations per step, wall and CPU time per step (CPU: every thread "
                 "of the process), and the solver's wall time per iteration (backtracking products included).", "",
             "| steps | contacts (last) | mean iterations | wall per step [ms] | CPU per step [ms] | ms per iteration |",
             "|---|---:|---:|---:|---:|---:|"]
    for lo in range(0, s["wall"].shape[0], WINDOW):
        w = slice(lo, lo + WINDOW)
        its = int(s["iterations"][w].sum())
        per_it = f"{1000 * s['solve'][w].sum() / its:.3f}" if its else "—"
        lines.append(f"| {lo + 1}-{lo + s['wall'][w].shape[0]} | {int(s['contacts'][w][-1]):,} | "
                     f"{s['iterations'][w].mean():.1f} | {1000 * s['wall'][w].mean():,.1f} | "
                     f"{1000 * s['cpu'][w].mean():,.1f} | {per_it} |")
    if "settling_ratio" in bed:
        from problems.generator import SETTLED_ENERGY

        done = s["wall"].shape[0] == bed["total_steps"]
        lines += ["", f"Its state after step {s['wall'].shape[0]}: kinetic energy {bed['kinetic_energy']:.3g} J = "
                      f"{bed['settling_ratio']:.2g} of sum m g R ("
                      + (("settled" if bed["settling_ratio"] <= SETTLED_ENERGY else "NOT settled") if done else "not yet at its end")
                      + f": a settled packing has at most {SETTLED_ENERGY:g}, problems.generator.SETTLED_ENERGY)."]
    return lines
