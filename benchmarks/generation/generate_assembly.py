"""The per-step assembly of the simulator, timed for ``python -m benchmarks.generation.bench_generate --assembly``.

Two measurements (issue 31, item 3):

1. Contact detection and the contact Jacobian D, the numpy reference (:mod:`problems.contact`: the
   assembly before the compiled one) against the compiled assembly (:mod:`problems.assembly`), one
   step, not a settle, on (a) the committed 2,560-sphere packing's final state (settled, rotated
   spheres) and (b) 45,000 spheres in the container the generator gives that many (five layers) on a
   simple cubic lattice at spacing 1.02 (every neighbour within the 0.05 m envelope: about 109,000
   contacts, about the size of the settled ``large`` bed's 30,000 spheres) with random orientations. Both assemblies give the same arrays (checked here, and bit for bit by
   tests/test_assembly.py). Each time is the least of ``REPEATS`` runs, wall and CPU, after a first
   untimed run (numba compilation or cache load); the whole time-step problem
   (:meth:`problems.stepper.Simulation.problem`: detection, D, M, k, b and the problem's own checks)
   is timed the same way with the compiled assembly.
2. Where a step of the 2,560-sphere packing spends its time: ``SPLIT_STEPS`` steps from its final
   state (after one untimed step), each step's wall time split into the assembly (the step's
   ``Simulation.problem()`` call), the solve (the workbench's timing of the solver's run,
   SolveResult.solve_seconds) and the rest (the formulation's model, the workbench's metrics, the
   warm start, the velocity and position update); on one thread, then on every core of the process
   (workbench.threads), each from the committed state: the same steps, the same iterations
   (checked here: the thread count changes the speed, never an iterate).
"""

from __future__ import annotations

import time

import numpy as np

#: the timed repetitions of each assembly measurement (the least is kept)
REPEATS = 5
#: steps of the 2,560-sphere packing whose time is split
SPLIT_STEPS = 5
#: the lattice of the large measurement: spheres and spacing (gap 2 R (spacing - 1) = 0.04 m)
LARGE_ASSEMBLY = (45000, 1.02)


def _least(func, *args) -> tuple[float, float]:
    """(wall, CPU) seconds, the least of REPEATS runs of func(*args) after one untimed run."""
    func(*args)
    wall, cpu = [], []
    for _ in range(REPEATS):
        w, c = time.perf_counter(), time.process_time()
        func(*args)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def _committed_simulation(n: int):
    from problems.generator import DEFAULT_DIR, PackingSpec, load_state, simulation
    from workbench.io import load_problem

    path = DEFAULT_DIR / f"scaling-{n:05d}.npz"
    spec = PackingSpec(**{k: v for k, v in load_problem(path).metadata["generator"].items()
                          if k in PackingSpec.__dataclass_fields__})
    sim = simulation(spec)
    sim.restore(load_state(path))
    return sim


def _lattice_simulation(n: int, spacing: float):
    from problems.generator import PackingSpec, simulation
    from problems.granular import container_world

    spec = PackingSpec(n=n, width=None, h=0.005)
    sim = simulation(spec)
    sim.world = container_world(n, width=spec.floor_width, spacing=spacing, jitter=spec.jitter)
    q = np.random.default_rng(0).normal(size=(n, 4))
    sim.world.bodies.orientation = q / np.linalg.norm(q, axis=1)[:, None]
    return sim


def time_assembly(label: str, sim) -> dict:
    """The assembly timings of one world (module docstring, 1)."""
    from problems import assembly, contact

    world, b = sim.world, sim.world.bodies
    contacts = assembly.detect(world)
    rot = b.rotations()
    want = contact.jacobian(contacts, rot, b.n)
    got = assembly.jacobian(contacts, rot, b.n).tocsr()
    same = bool(np.array_equal(got.indices, want.indices) and np.array_equal(got.data, want.data)
                and np.array_equal(got.indptr, want.indptr))
    row = {"world": label, "spheres": b.n, "contacts": contacts.n, "nnz": int(got.nnz), "same": same}
    for key, func, args in (("detect_ref", contact.detect, (world,)), ("detect", assembly.detect, (world,)),
                            ("D_ref", contact.jacobian, (contacts, rot, b.n)),
                            ("D", assembly.jacobian, (contacts, rot, b.n)), ("problem", sim.problem, ())):
        row[key], row[key + "_cpu"] = (round(t, 4) for t in _least(func, *args))
    return row


def step_split(sim, threads: int) -> list[dict]:
    """Each of SPLIT_STEPS steps on ``threads`` threads: wall seconds of the step, of its assembly (its
    own ``Simulation.problem()`` call, timed by a wrapper) and of its solve (module docstring, 2)."""
    from workbench.threads import limited

    with limited(threads):
        return _split(sim, threads)


def _split(sim, threads: int) -> list[dict]:
    sim.step()
    build, spent = sim.problem, []

    def timed_problem():
        start = time.perf_counter()
        out = build()
        spent.append(time.perf_counter() - start)
        return out

    sim.problem = timed_problem
    rows = []
    for _ in range(SPLIT_STEPS):
        start = time.perf_counter()
        rec = sim.step()
        step = time.perf_counter() - start
        assembly = spent.pop()
        rows.append({"threads": threads, "contacts": rec.contacts, "iterations": rec.iterations, "step": round(step, 4),
                     "assembly": round(assembly, 4), "solve": round(rec.solve_seconds, 4),
                     "other": round(step - assembly - rec.solve_seconds, 4)})
    return rows


def measure() -> dict:
    """Both measurements, with the load average at the start of each."""
    import os

    from workbench.threads import in_use

    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    rows = [time_assembly("scaling-02560 (committed, final state)", _committed_simulation(2560))]
    n, spacing = LARGE_ASSEMBLY
    large_load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    rows.append(time_assembly(f"simple cubic lattice, spacing {spacing}, random orientations",
                             _lattice_simulation(n, spacing)))
    split_load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    by_threads = [step_split(_committed_simulation(2560), n) for n in sorted({1, in_use()})]
    runs = [[(r["contacts"], r["iterations"]) for r in steps] for steps in by_threads]
    if any(steps != runs[0] for steps in runs):
        raise AssertionError(f"the thread count changed the steps (contacts, iterations): {runs}")
    split = [row for steps in by_threads for row in steps]
    return {"rows": rows, "loads": [load, large_load], "split": split, "split_load": split_load, "repeats": REPEATS}


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:,.1f}"


def render(data: dict) -> list[str]:
    """The page's lines for :func:`measure`'s data."""
    lines = ["", f"Per-step assembly, one step (not a settle): contact detection and the Jacobian D, the numpy reference "
                 f"(the assembly before; problems/contact.py) against the compiled one (problems/assembly.py); the least "
                 f"of {data['repeats']} runs, wall (CPU) in ms; \"whole problem\": the time-step problem the stepper builds "
                 "(detection, D, M, k, b, its checks), compiled assembly.", "",
             "| world | spheres | contacts | nonzeros of D | D equal | detect, reference | detect, compiled | D, reference | "
             "D, compiled | detect + D: before | after | speed-up (CPU) | whole problem | load at start |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r, load in zip(data["rows"], data["loads"]):
        before, after = r["detect_ref"] + r["D_ref"], r["detect"] + r["D"]
        before_cpu, after_cpu = r["detect_ref_cpu"] + r["D_ref_cpu"], r["detect_cpu"] + r["D_cpu"]
        cells = [f"{_ms(r[k])} ({_ms(r[k + '_cpu'])})" for k in ("detect_ref", "detect", "D_ref", "D")]
        lines.append(f"| {r['world']} | {r['spheres']:,} | {r['contacts']:,} | {r['nnz']:,} | "
                     f"{'bit for bit' if r['same'] else 'NO'} | {' | '.join(cells)} | {_ms(before)} ({_ms(before_cpu)}) | "
                     f"{_ms(after)} ({_ms(after_cpu)}) | {before_cpu / after_cpu:.1f}x | "
                     f"{_ms(r['problem'])} ({_ms(r['problem_cpu'])}) | {load} |")
    split = data["split"]
    lines += ["", f"Where a step of the 2,560-sphere packing spends its time: {SPLIT_STEPS} steps from the committed final "
                  f"state (settled: fewer iterations than the mean of its settle) on one thread, then the same steps on "
                  f"every core of the process (the same iterations), wall ms; load at start {data['split_load']}.",
              "", "| threads | step | contacts | APGD iterations | step | assembly | solve (APGD) | other (model, metrics, update) |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for threads in sorted({s["threads"] for s in split}):
        steps = [s for s in split if s["threads"] == threads]
        total = {k: sum(s[k] for s in steps) for k in ("step", "assembly", "solve", "other")}
        for i, s in enumerate(steps, 1):
            lines.append(f"| {threads} | {i} | {s['contacts']:,} | {s['iterations']:,} | {_ms(s['step'])} | "
                         f"{_ms(s['assembly'])} | {_ms(s['solve'])} | {_ms(s['other'])} |")
        lines.append(f"| {threads} | all | | {sum(s['iterations'] for s in steps):,} | {_ms(total['step'])} | "
                     f"{_ms(total['assembly'])} ({100 * total['assembly'] / total['step']:.0f} %) | {_ms(total['solve'])} "
                     f"({100 * total['solve'] / total['step']:.0f} %) | {_ms(total['other'])} "
                     f"({100 * total['other'] / total['step']:.0f} %) |")
    return lines
