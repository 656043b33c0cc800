"""``workbench simulate``: run a dynamic scene with the DVI time stepper, one formulation x solver.

    workbench simulate SCENE --formulation F --solver S [--steps N] [--dt H] [--out DIR]
                       [--set KEY=VALUE ...] [--every K] [--tol T] [--max-iter N] ...

Scenes: the dynamic scenes of workbench.sources.NAMED (ball-on-plane, ball-on-plane-2d, box-on-plane,
box-on-incline, box-incline-to-rest, filling, filling-2d, compaction, drum); ``--set`` changes a scene parameter
(n=200, mu=0.1, v0=3, angle=30, duration=1, ...). Writes into DIR (default results/sim-SCENE), each file
atomically (workbench.files):

- trajectory.csv: t, body, x, y, z, vx, vy, vz, wx, wy, wz (world frame; 2D scenes have z = 0 and the
  rotation rate in wz), the initial state and every K-th step;
- steps.csv: t, contacts, iterations, solve_seconds (the method is warmed up first, so no step's
  time includes compiling), status, complementarity (Melanz et al. 2015 eq. 8), fixed_force (magnitude of the
  total contact force on the fixed bodies [N]), max_speed, kinetic_energy, and for single-body
  scenes the tracked velocities with their analytic values;
- velocities.png (single-body scenes: simulated vs analytic velocities) and steps.png (contacts,
  iterations, complementarity, force on the fixed bodies vs the total weight), drawn from every
  stride-th step, stride = ceil(steps / PLOT_STEPS) (said in the title when above 1).

Both tables are written in blocks of BLOCK_ROWS rows as the simulation goes (workbench.files.atomic_output
moves them into place at the end, also when a step stops the run), so memory does not grow with the
steps; trajectory.csv's rows (bodies x recorded states) are bounded by WORKBENCH_MAX_ROWS before the
first step (workbench.limits).

Progress goes to stderr; a one-line summary to stdout. Exit code 0 when every step was solved, 1
when the simulation stopped (a step without usable impulses) or a step was not solved, 2 bad input.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from workbench.commands._args import EXIT_NOT_SOLVED, add_method_options, key_value, positive
from workbench.commands.solve import add_solve_options, method_of, solve_options
from workbench.errors import InputError
from workbench.files import atomic_output
from workbench.limits import check, check_work


#: the steps the figures draw at most (every stride-th step of a longer run)
PLOT_STEPS = 20_000
#: rows gathered before a block is written: steps for steps.csv, trajectory rows (bodies x states) for
#: trajectory.csv
BLOCK_ROWS = 4096
#: the columns of trajectory.csv
TRAJECTORY = ["t", "body", "x", "y", "z", "vx", "vy", "vz", "wx", "wy", "wz"]


class _Csv:
    """A CSV file written a block (a DataFrame) at a time, the header with the first."""

    def __init__(self, path: Path):
        self.path, self._started = path, False

    def write(self, block) -> None:
        with open(self.path, "a" if self._started else "w", encoding="utf-8", newline="") as f:
            block.to_csv(f, index=False, header=not self._started)
        self._started = True

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)


def _state_rows(t: float, bodies):
    import numpy as np
    """One row per body: t, body, x, y, z, vx, vy, vz, wx, wy, wz (world frame)."""
    n, dim = bodies.n, bodies.dim
    pad = np.zeros((n, 3 - dim))
    w = bodies.world_angular_velocity()
    w3 = np.column_stack([np.zeros((n, 2)), w]) if dim == 2 else w
    return np.column_stack([np.full(n, t), np.arange(n), bodies.x, pad, bodies.v, pad, w3])


def plot(out: Path, steps, scenario) -> list[Path]:
    """velocities.png (when the scene has analytic curves) and steps.png, with their PDF and SVG, drawn
    by workbench.plot."""
    from workbench import plot as figures

    title = f"{scenario.name}: {steps.attrs['method']}"
    drawn = [] if scenario.analytic is None else [("velocities.png", figures.simulation_velocities(steps, title=title))]
    drawn.append(("steps.png", figures.simulation_steps(steps, title=title, weight=scenario.weight)))
    for name, fig in drawn:  # a PNG for the screen, vector PDF and SVG beside it for a paper
        figures.save(fig, out / name)
    return [out / name for name, _ in drawn]


def cmd_simulate(args) -> int:
    import numpy as np
    import pandas as pd

    from problems.stepper import Simulation, SimulationError, StepChunks
    from workbench.sources import names, scenario as build_scenario

    if args.scene not in names("scenario"):
        from workbench.errors import unknown
        raise InputError(f"SCENE {args.scene}: {unknown('scene', args.scene, names('scenario'))} (the dynamic "
                         "ones; static scenes are solved with workbench solve scene:NAME)")
    method = method_of(args)
    params = dict(args.set or [])
    try:
        scenario = build_scenario(args.scene, **params)
    except InputError as exc:
        shown = " ".join(f"--set {k}={json.dumps(v)}" for k, v in params.items())
        raise InputError(f"{shown}: {exc}") from None
    h = args.dt or scenario.h
    if args.steps is None:
        check("STEPS", scenario.duration / h, f"--dt {h:g}: the scene's duration {scenario.duration:g} s / dt")
    n_steps = args.steps or max(1, int(round(scenario.duration / h)))
    # the steps asked (--steps, --dt) times the scene's bodies: the product the scene's declared work
    # bounds when its own duration / h is stepped (workbench.limits.check_work)
    check_work(f"simulate {scenario.name} ({n_steps:,} steps)",
               {"bodies": scenario.world.bodies.n, "steps": n_steps})
    bodies = scenario.world.bodies
    states = n_steps // args.every + 1 + (n_steps % args.every != 0)   # the start, every K-th step, the last
    check("ROWS", bodies.n * states, f"simulate {scenario.name}: trajectory.csv of {bodies.n:,} bodies x {states:,} "
          f"states (--every {args.every}; a larger K records fewer)")
    out = Path(args.out or f"results/sim-{scenario.name}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {out}: {exc.strerror or exc}") from None
    from workbench.progress import Progress

    progress = Progress(f"simulate {scenario.name}", n_steps, "step")
    progress.doing("warming the method up")
    method.warm_up()  # so that no step's solve_seconds include compiling the kernels
    progress.doing("")
    sim = Simulation(scenario.world, h, method, options=solve_options(args), name=scenario.name)
    # the figures draw every stride-th step: a bounded sample however many steps (steps.csv has them all)
    stride = -(-n_steps // PLOT_STEPS)
    drawn: list[pd.DataFrame] = []
    unsolved = 0
    t0 = time.perf_counter()
    report_every = max(1, n_steps // 20)
    stopped: BaseException | None = None
    with ExitStack() as files:
        steps_csv = _Csv(files.enter_context(atomic_output(out / "steps.csv")))
        trajectory_csv = _Csv(files.enter_context(atomic_output(out / "trajectory.csv")))

        def step_block(block):
            nonlocal unsolved
            steps_csv.write(block)
            unsolved += int((~block["status"].isin(["no_contact", "solved"])).sum())
            step = block.index + 1    # the step's number, 1 for the first
            drawn.append(block[(step % stride == 0) | (step == n_steps)])

        def state_block(block):
            trajectory_csv.write(pd.DataFrame(np.concatenate(block["rows"].tolist()), columns=TRAJECTORY)
                                 .astype({"body": int}))

        rows = StepChunks(step_block, BLOCK_ROWS)
        states = StepChunks(state_block, size=max(1, BLOCK_ROWS // bodies.n))
        states.append({"rows": _state_rows(0.0, bodies)})

        def record(s, rec):
            rows.append(scenario.step_row(rec))
            if s.step_index % args.every == 0 or s.step_index == n_steps:
                states.append({"rows": _state_rows(rec.t, bodies)})
            progress.update()
            if s.step_index % report_every == 0:
                progress.write(f"{scenario.name}: step {s.step_index}/{n_steps}, t = {rec.t:.4g} s, {rec.contacts} "
                               f"contacts, {rec.iterations} iterations, {time.perf_counter() - t0:.1f} s")

        try:
            sim.run(n_steps, record, keep=False)
        except BaseException as exc:   # what was computed is written all the same (then it is raised again)
            stopped = exc
        progress.doing("writing the trajectory")
        rows.flush()
        if rows.count:
            states.flush()
        else:    # no step taken: no files (the folders of atomic_output are left empty)
            steps_csv.discard()
            trajectory_csv.discard()
    if isinstance(stopped, SimulationError):
        progress.close()
        print(f"workbench: simulation stopped: {stopped}", file=sys.stderr)
        return EXIT_NOT_SOLVED
    if stopped is not None:
        raise stopped
    steps = pd.concat(drawn, ignore_index=True)
    steps.attrs["method"] = f"{args.formulation} x {args.solver}, h = {h:g} s" + \
        (f" (every {stride:,}th step drawn)" if stride > 1 else "")
    progress.doing("plotting")
    written = plot(out, steps, scenario)
    progress.close()
    print(f"{scenario.name}: {n_steps} steps of {h:g} s with {args.formulation} x {args.solver} in "
          f"{time.perf_counter() - t0:.1f} s; wrote {out / 'trajectory.csv'}, {out / 'steps.csv'}, "
          f"{', '.join(str(p) for p in written)}")
    return EXIT_NOT_SOLVED if unsolved else 0


def register(sub) -> None:
    from workbench.sources import names

    s = sub.add_parser("simulate", help="run a dynamic scene with the DVI time stepper")
    s.add_argument("scene", metavar="SCENE", help=", ".join(names("scenario")))
    add_method_options(s)
    s.add_argument("--steps", type=positive(int, "STEPS"), default=None, help="number of steps (default: the scene's duration / dt)")
    s.add_argument("--dt", type=positive(float), default=None, help="step size h [s] (default: the scene's)")
    s.add_argument("--out", default=None, help="output folder (default results/sim-SCENE)")
    s.add_argument("--set", action="append", type=key_value, metavar="KEY=VALUE",
                   help="scene parameter (n, mu, v0, angle, duration, seed, ...), repeatable")
    s.add_argument("--every", type=positive(int), default=1, help="write the trajectory every K steps")
    add_solve_options(s)
    s.set_defaults(func=cmd_simulate)
