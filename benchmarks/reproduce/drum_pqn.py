"""The rotating drum of Koziara 2017 sec. 8.1 measured for ``benchmarks.reproduce pqn-2017``.

:func:`run` simulates the drum (:func:`problems.drum.drum`) with one formulation x solver and keeps, per
step, what the paper's Tables 2-4 count: the iterations of a step whose method converged alone
("it/step when converged"), the steps it did not ("divs": PQN handed over to its Gauss-Seidel
fallback, Algorithm 1 line 3; Gauss-Seidel stopped at its cap), the solve seconds and the whole
step's wall seconds (contact detection and assembly included: the paper's "runtime"), and the time
step problems of sampled steps with the warm start they were solved from.

:func:`sensitivity` solves those sampled problems again with other PQN parameters (delta,
delta_mode, epsilon, m): every setting meets the same problems, so a difference between settings is
the method's, not a trajectory's (the paper runs one simulation per setting). Its work measure is the
number of products with W (``matvecs``, Algorithm 1 steps (a) and (c)), which is what PQN's time is
spent on and, unlike seconds, does not depend on the machine or its load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from benchmarks.reproduce.trajectories import perturb
from problems.stepper import Simulation
from workbench.method import Method
from workbench.solvers import SolveOptions

__all__ = ["DrumRun", "run", "sensitivity", "spread"]


@dataclass
class DrumRun:
    """Totals of one drum simulation (module docstring); ``samples``: (problem, warm start) pairs."""
    steps: int = 0
    contact_steps: int = 0
    contacts: int = 0
    converged_iterations: int = 0
    converged_steps: int = 0
    divs: int = 0
    solve_seconds: float = 0.0
    wall_seconds: float = 0.0
    matvecs: int = 0
    samples: list = field(default_factory=list)

    @property
    def it_per_step(self) -> float:
        """Mean iterations of the steps whose method converged alone (the paper's it/step)."""
        return self.converged_iterations / self.converged_steps if self.converged_steps else float("nan")

    @property
    def mean_contacts(self) -> float:
        return self.contacts / self.contact_steps if self.contact_steps else 0.0


class _Counting:
    """A Method that adds every solve of a simulation to a :class:`DrumRun` (and keeps sampled problems)."""

    def __init__(self, method: Method, out: DrumRun, sample):
        self._method, self._out, self._sample = method, out, sample

    def __getattr__(self, name):
        return getattr(self._method, name)

    def solve(self, problem, options):
        res = self._method.solve(problem, options)
        _add(self._out, problem, res)
        if self._sample(problem.metadata["step"]):
            self._out.samples.append((problem, options.warm_start))
        return res


def _add(out: DrumRun, problem, res) -> None:
    out.contact_steps += 1
    out.contacts += problem.n_contacts
    out.solve_seconds += float(res.solve_seconds)
    out.matvecs += int(res.info.get("matvecs", 0))
    if res.handover or res.status != "solved":
        out.divs += 1
    else:
        out.converged_steps += 1
        out.converged_iterations += int(res.iterations or 0)


def run(scenario, formulation: str, solver: str, params: dict, steps: int, tol: float, max_iter: int,
        sample_every: int = 0, sample_from: int = 0, trajectory: int = 0) -> DrumRun:
    """``steps`` steps of the drum ``scenario``; every ``sample_every``-th step from ``sample_from`` on
    (0: none) keeps its problem for :func:`sensitivity`. ``trajectory`` k > 0 first perturbs the initial
    positions by a round-off-sized change (:func:`benchmarks.reproduce.trajectories.perturb`)."""
    perturb(scenario.world, trajectory)
    method = Method(formulation, solver, params)
    method.warm_up()
    out = DrumRun()
    sim = Simulation(scenario.world, scenario.h, method, options=SolveOptions(tol=tol, max_iter=max_iter,
                                                                            keep_history=False), name="drum")
    sim.method = _Counting(method, out, lambda k: sample_every > 0 and k >= sample_from
                           and (k - sample_from) % sample_every == 0)
    t0 = time.perf_counter()
    sim.run(steps)
    out.wall_seconds = time.perf_counter() - t0
    out.steps = steps
    return out


def sensitivity(samples: list, params: dict, tol: float, max_iter: int) -> DrumRun:
    """The sampled problems solved by PQN with ``params``: the totals of :class:`DrumRun` over them."""
    method = Method("ncp", "pqn", params)
    method.warm_up()
    out = DrumRun(steps=len(samples))
    t0 = time.perf_counter()
    for problem, warm in samples:
        _add(out, problem, method.solve(problem, SolveOptions(tol=tol, max_iter=max_iter, warm_start=warm,
                                                              keep_history=False)))
    out.wall_seconds = time.perf_counter() - t0
    return out


def spread(values) -> float:
    """max / min of positive values (1: all equal)."""
    v = np.asarray(values, dtype=float)
    return float(v.max() / v.min())
