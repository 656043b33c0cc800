"""Datasets of single time steps taken from settled granular packings (Mazhar et al. 2014 sections 5.1-5.2).

A packing is made by the DVI time stepper (:mod:`problems.stepper`): n spheres (R = 1 m, 1 kg,
mu = 0.25) start on a jittered nested lattice (:func:`problems.granular.lattice`: every other layer in
the hollows of the one below, 0.2 m clearance) and fall into a square container (16 m for 320 spheres)
for ``duration`` seconds with step ``h``, relaxed dual x APGD (the paper's method). The time step at
the final state is written as an FCLib global file (M, H = D, f = k, w = b, mu) with a metadata JSON
next to it.

Step size: Mazhar et al. 2014 settles with h = 0.0005 s; the default here is h = 0.005 s so that both 320-sphere
datasets are made in a few minutes on two cores (benchmarks/bench_datasets.py); ``--set h=0.0005``
gives the paper's step. What separates the two datasets is the solver budget, as in the paper: tight
tolerance (1e-6, up to 10,000 APGD iterations per step) leaves the packing at rest (kinetic energy
about 2e-3 J, seed: 0.0215 J), 10 iterations per step leave it jittering (about 1 J, seed: 1.56 J);
both have about 1,090 contacts (paper: 1,049 and 1,050).

Datasets (``generate_dataset(name, out_dir, **overrides)``):

- ``settled``: TR-style thoroughly settled data (Mazhar et al. 2014 section 5.1.1): 320 spheres, 4 s, every
  step solved to a tight tolerance (up to 10,000 iterations).
- ``unsettled``: poorly settled data (section 5.1.2): the same start, 10 solver iterations per step.
- ``scaling``: settled packings of 64 ... 2,560 spheres (section 5.2: 64 to 2,560, 77 to 9,228
  contacts); ``scaling-large``: 4,096 ... 16,000 spheres (Melanz et al. 2015 section 3.4 goes to 16,000).

The metadata JSON holds the generator parameters and seed, the contact and body counts, the kinetic
energy of the stored state, a settling summary and an estimate of the conditioning of N (see
:func:`condition_estimate`). Files are reproducible: the same parameters give byte-identical files
(no clocks or host data are written; numbers that go through ARPACK are rounded to 6 digits).

Settled means at rest: a packing counts as settled when its kinetic energy is at most
``SETTLED_ENERGY`` = 1e-4 of sum_j m_j g R_j, the energy that would lift every sphere by 1e-4 of its
radius (for the 1 kg, 1 m spheres: 9.8e-4 J per sphere, an rms speed of about 0.04 m/s). The settled
data of Mazhar et al. 2014 have 6.8e-6 of it (0.0215 J for 320 spheres), their unsettled data 5e-4
(1.56 J).
:func:`generate_dataset` reports the ratio of every packing and warns when one that is meant to be
settled (settled, scaling, scaling-large) is above it.

Existing files are never overwritten (the committed datasets included) unless ``force``; every file
is written atomically (workbench.files).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from problems.granular import container_width_for, container_world
from problems.scenes import GRAVITY
from problems.stepper import Simulation, StepRecord
from workbench.errors import InputError, unknown
from workbench.files import atomic_output
from workbench.limits import check
from workbench.problem import TimeStepProblem
from workbench.solvers import SolveOptions
from workbench.params import check_params

__all__ = ["PackingSpec", "DATASETS", "generate_dataset", "settle", "step_problem", "condition_estimate",
           "DEFAULT_DIR"]

#: where the committed datasets live
DEFAULT_DIR = Path(__file__).resolve().parent / "datasets"

#: above this many degrees of freedom the nonzero spectrum is not computed (dense eigvalsh)
DENSE_SPECTRUM_MAX_DOF = 6000


@dataclass(frozen=True)
class PackingSpec:
    """How one packing is made. ``layers``: about n / layers spheres per settled layer set the floor
    (:func:`problems.granular.container_width_for`); ``width`` overrides it [m]. ``nested``,
    ``spacing``, ``jitter``: the starting lattice (:func:`problems.granular.lattice`)."""
    n: int = 320
    duration: float = 4.0
    h: float = 0.005
    formulation: str = "dual"
    solver: str = "apgd"
    tol: float = 1e-6
    max_iter: int = 10000
    mu: float = 0.25
    seed: int = 0
    width: float | None = 16.0
    layers: float = 5.0
    nested: bool = True
    spacing: float = 1.1
    jitter: float = 0.02

    @property
    def steps(self) -> int:
        return int(round(self.duration / self.h))

    @property
    def floor_width(self) -> float:
        """The container's inner width [m]."""
        return float(self.width) if self.width is not None else container_width_for(self.n, layers=self.layers)


#: kinetic energy, as a fraction of sum_j m_j g R_j, at most which a packing counts as settled
SETTLED_ENERGY = 1e-4

#: dataset name -> (description, specs)
DATASETS: dict[str, tuple[str, Callable[[], list[PackingSpec]]]] = {
    "settled": ("320 spheres settled for 4 s, each step solved to tol 1e-6 (up to 10,000 iterations)",
                lambda: [PackingSpec()]),
    "unsettled": ("320 spheres settled for 4 s with 10 solver iterations per step",
                  lambda: [PackingSpec(max_iter=10)]),
    "scaling": ("settled packings of 64 to 2,560 spheres (geometric steps), 4 s each",
                lambda: [PackingSpec(n=n, width=None) for n in (64, 128, 256, 512, 1024, 2048, 2560)]),
    "scaling-large": ("settled packings of 4,096 to 16,000 spheres, 4 s each",
                      lambda: [PackingSpec(n=n, width=None) for n in (4096, 8192, 16000)]),
}


#: the datasets whose packings are meant to be at rest
MEANT_SETTLED = ("settled", "scaling", "scaling-large")


def settling_ratio(sim: Simulation) -> float:
    """Kinetic energy over sum_j m_j g R_j (see SETTLED_ENERGY)."""
    b = sim.world.bodies
    return b.kinetic_energy() / float(np.sum(b.mass * GRAVITY * b.radius))


def settle(spec: PackingSpec, progress: Callable[[Simulation, StepRecord], None] | None = None
           ) -> tuple[Simulation, list[StepRecord]]:
    """Run the packing of ``spec``; return the simulation at its final state and the step records."""
    world = container_world(spec.n, width=spec.floor_width, mu=spec.mu, seed=spec.seed, nested=spec.nested,
                            spacing=spec.spacing, jitter=spec.jitter)
    options = SolveOptions(tol=spec.tol, max_iter=spec.max_iter, keep_history=False)
    sim = Simulation(world, spec.h, spec.formulation, spec.solver, options, name=f"packing-{spec.n}")
    return sim, sim.run(spec.steps, progress)


def step_problem(sim: Simulation, title: str, description: str) -> TimeStepProblem:
    """The time-step problem at the simulation's current state, titled for FCLib."""
    problem, _, _ = sim.problem()
    if problem is None:
        raise InputError("the packing has no contact at its final state")
    return TimeStepProblem(M=problem.M, D=problem.D, k=problem.k, b=problem.b, mu=problem.mu, d=problem.d,
                           h=problem.h, name=title,
                           metadata={**problem.metadata, "title": title, "description": description,
                                     "math_info": "global: M v = f + H r, u = H^T v + w (Melanz et al. 2015 eqs. 7-8)"})


def _round(x: float, digits: int = 6) -> float:
    return float(f"{x:.{digits}g}")


def condition_estimate(problem: TimeStepProblem) -> dict:
    """Conditioning of N = D^T M^-1 D, estimated (never formed dense).

    - lambda_max: ARPACK Lanczos (eigsh, which="LA") on the matrix-free N, fixed start vector.
    - lambda_min: eigsh in shift-invert mode around sigma = -1e-8 lambda_max (a sparse LU of N - sigma I).
      N is singular whenever d n_c > n_dof (more contact unknowns than degrees of freedom: every
      dense packing); lambda_min is then zero up to rounding and lambda_max / |lambda_min| (the
      number Mazhar et al. 2014 table 1 reports, 8.33e22) measures rounding, not the problem.
    - on the range of N: its nonzero eigenvalues are those of A A^T with A = M^-1/2 D (n_dof x n_dof);
      computed densely (eigvalsh) up to 6,000 dof, rank threshold 1e-12 lambda_max; gives the
      numerical rank and lambda_max / lambda_min_nonzero, the conditioning that governs iterative
      solvers on the relaxed problem.
    """
    N = problem.N
    n = N.shape[0]
    v0 = np.ones(n) / np.sqrt(n)
    if n > 2:
        lam_max = float(spla.eigsh(problem.N_operator, k=1, which="LA", v0=v0, tol=1e-8,
                                   return_eigenvectors=False)[0])
        sigma = -1e-8 * lam_max
        lam_min = float(spla.eigsh(N.tocsc(), k=1, sigma=sigma, which="LM", v0=v0, tol=1e-8,
                                   return_eigenvectors=False)[0])
    else:
        ev = np.linalg.eigvalsh(N.toarray())
        lam_max, lam_min = float(ev[-1]), float(ev[0])
    n_dof = problem.n_dof
    out = {
        "lambda_max": _round(lam_max),
        "lambda_min": _round(lam_min),
        "cond_estimate": _round(lam_max / abs(lam_min)) if lam_min != 0 else "inf",
        "singular": bool(n > n_dof),
        "nullity_lower_bound": int(max(0, n - n_dof)),
        "method": "eigsh LA on matrix-free N (lambda_max); shift-invert eigsh at -1e-8 lambda_max "
                  "(lambda_min); dense eigvalsh of M^-1/2 D D^T M^-1/2 for the nonzero spectrum",
    }
    if n_dof <= DENSE_SPECTRUM_MAX_DOF:
        A = sp.diags(1.0 / np.sqrt(problem.M.diagonal())) @ problem.D
        ev = la.eigvalsh((A @ A.T).toarray())
        nonzero = ev[ev > 1e-12 * ev[-1]]
        out.update(rank=int(nonzero.shape[0]), lambda_min_nonzero=_round(float(nonzero[0])),
                   cond_on_range=_round(float(ev[-1] / nonzero[0])))
    else:
        out["rank"] = out["lambda_min_nonzero"] = out["cond_on_range"] = None
        out["note"] = f"nonzero spectrum not computed (n_dof = {n_dof} > {DENSE_SPECTRUM_MAX_DOF})"
    return out


def _settling_summary(records: list[StepRecord]) -> dict:
    solved = [r for r in records if r.contacts]
    its = np.array([r.iterations for r in solved]) if solved else np.zeros(1)
    return {"steps": len(records), "steps_with_contacts": len(solved), "mean_iterations": _round(float(its.mean())),
            "max_iterations": int(its.max()), "statuses": dict(sorted(Counter(r.status for r in records).items())),
            "final_complementarity": _round(records[-1].complementarity),
            "final_max_speed": _round(records[-1].max_speed)}


def describe(spec: PackingSpec) -> str:
    """One line saying how the packing was made."""
    return (f"{spec.n} spheres (R = 1 m, 1 kg, mu = {spec.mu}) settled in a {spec.floor_width:g} m square "
            f"container for {spec.duration:g} s with h = {spec.h:g} s, {spec.formulation} x {spec.solver}, "
            f"tol {spec.tol:g}, at most {spec.max_iter} iterations per step, seed {spec.seed}")


def write_packing(sim: Simulation, records: list[StepRecord], spec: PackingSpec, dataset: str, path: Path
                  ) -> list[Path]:
    """Write the step at the simulation's state as ``path`` (.hdf5) and its metadata (.json)."""
    from workbench.io import write_fclib

    description = describe(spec)
    problem = step_problem(sim, path.stem, f"{description}; generated by workbench generate {dataset}")
    with atomic_output(path) as tmp:
        write_fclib(problem, tmp)
    bodies = sim.world.bodies
    meta = {
        "dataset": dataset,
        "file": path.name,
        "description": description,
        "generator": {**asdict(spec), "width": spec.floor_width, "radius": 1.0, "mass": 1.0,
                      "envelope": sim.world.envelope, "steps": spec.steps, "module": "problems.generator"},
        "seed": spec.seed,
        "time": _round(sim.t),
        "n_bodies": bodies.n,
        "n_bodies_in_problem": problem.metadata["bodies_in_problem"],
        "n_contacts": problem.n_contacts,
        "n_dof": problem.n_dof,
        "kinetic_energy": _round(bodies.kinetic_energy()),
        "max_speed": _round(float(np.linalg.norm(bodies.v, axis=1).max())),
        "settling": _settling_summary(records),
        "condition": condition_estimate(problem),
    }
    json_path = path.with_suffix(".json")
    with atomic_output(json_path) as tmp:
        tmp.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return [path, json_path]


def stderr_progress(label: str, every: int = 100) -> Callable[[Simulation, StepRecord], None]:
    """A callback printing one line to stderr every ``every`` steps."""
    def report(sim: Simulation, rec: StepRecord) -> None:
        if sim.step_index % every == 0:
            print(f"{label}: t = {rec.t:.3f} s, step {sim.step_index}, {rec.contacts} contacts, "
                  f"{rec.iterations} iterations, KE {rec.kinetic_energy:.4g} J, max speed {rec.max_speed:.3g} m/s",
                  file=sys.stderr, flush=True)
    return report


def generate_dataset(name: str, out_dir: str | Path = DEFAULT_DIR, *, progress: bool = True, sizes=None,
                     force: bool = False, **overrides) -> list[Path]:
    """Generate the dataset ``name`` (see DATASETS) into ``out_dir``; return the written paths.

    ``overrides`` replace PackingSpec fields of every packing (n, duration, h, solver, seed, ...);
    ``sizes`` replaces the list of sphere counts. Files are named NAME-NNNNN.hdf5 / .json; a file
    that exists already is an InputError before anything runs, unless ``force``. The kinetic energy
    of each packing goes to stderr, with a warning when a packing meant to be settled is not
    (SETTLED_ENERGY)."""
    if name not in DATASETS:
        raise unknown("dataset", name, DATASETS)
    check_params(f"dataset {name}", PackingSpec, overrides)  # names, and values against the defaults' types
    _, make = DATASETS[name]
    specs = [replace(s, **overrides) for s in make()]
    if sizes is not None:
        specs = [replace(specs[0], n=int(n)) for n in sizes]
    for spec in specs:
        if spec.n < 1 or not spec.h > 0 or not spec.duration > 0:
            raise InputError(f"dataset {name}: n, h and duration must be positive ({spec})")
        check("SIZE", spec.n, f"dataset {name}: n")
        check("STEPS", spec.duration / spec.h, f"dataset {name}: duration / h")
    out = Path(out_dir)
    labels = [f"{name}-{spec.n:05d}" for spec in specs]
    existing = [p for label in labels for p in (out / f"{label}.hdf5", out / f"{label}.json") if p.exists()]
    if existing and not force:
        committed = " (a committed dataset)" if out.resolve() == DEFAULT_DIR.resolve() else ""
        raise InputError(f"{existing[0]} exists{committed}; give --out DIR for another folder, or --force to "
                         "overwrite it")
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for spec, label in zip(specs, labels):
        sim, records = settle(spec, stderr_progress(label, max(1, spec.steps // 20)) if progress else None)
        paths += write_packing(sim, records, spec, name, out / f"{label}.hdf5")
        ratio = settling_ratio(sim)
        print(f"{label}: kinetic energy {sim.world.bodies.kinetic_energy():.4g} J = {ratio:.2g} of sum m g R "
              f"(settled at most {SETTLED_ENERGY:g})", file=sys.stderr)
        if name in MEANT_SETTLED and ratio > SETTLED_ENERGY:
            print(f"warning: {label} is not settled: its kinetic energy is {ratio:.2g} of sum m g R, above "
                  f"{SETTLED_ENERGY:g}; give it longer (--set duration=...) or a tighter solver (--set tol=...)",
                  file=sys.stderr)
    return paths
