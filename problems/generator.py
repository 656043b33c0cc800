"""Datasets of single time steps taken from settled granular packings (Mazhar et al. 2014 sections 5.1-5.2,
Melanz et al. 2015 section 3.2).

A packing is made by the DVI time stepper (:mod:`problems.stepper`): n spheres (R = 1 m, 1 kg,
mu = 0.25: the generator's choices; Mazhar et al. 2014 give no radius, mass, friction, container,
tolerance or contact envelope) start on a jittered lattice (:func:`problems.granular.lattice`) and fall into a square
container for ``duration`` seconds with step ``h``, relaxed dual x APGD (the paper's method), every
step solved to ``tol`` with at most ``max_iter`` iterations and warm-started from the previous step's
impulses. The time step at the final state is written as a workbench problem file (.npz,
:mod:`workbench.io.native`: M, D, k, b, mu, h) whose metadata hold the generator parameters (h and
the number of steps among them), the kinetic energy, the largest speed and penetration of the stored
state, a settling summary and an estimate of the conditioning of N (:func:`condition_estimate`).

Datasets (``generate_dataset(name, out_dir, **overrides)``, :data:`DATASETS`):

- ``settled``: Mazhar et al. 2014 section 5.1.1, thoroughly settled: 320 spheres in a 16 m container,
  h = 0.0005 s for 4 s (8,000 steps), up to 10,000 iterations per step (tol 1e-6).
- ``unsettled``: section 5.1.2, poorly settled: the same, 10 iterations per step.
- ``scaling``: section 5.2, 64 ... 2,560 spheres in steps of 64 (40 packings; the paper: 77 to 9,228
  contacts), settled as ``settled`` but with h = 0.005 s (800 steps; the paper gives no step for
  this series, and 40 packings at 8,000 steps do not fit the time of one run on two cores).
- ``filling``: Melanz et al. 2015 section 3.2: 1,000 spheres dropped from a simple cubic lattice into a
  container, h = 0.01 s for 5 s, solver tolerance 1e-5.
- ``large``: beyond the papers, a bed of 30,000 spheres capped at :data:`BED_ITERATION_CAP` APGD
  iterations per step (over 100,000 contacts), h = 0.005 s (below): by protocol a capped settle, the kind
  of Mazhar et al. 2014's poorly settled one, not a tolerance-solved one; whether it is at rest is its
  measured kinetic energy;
  ``scaling-large``: 4,096 ... 16,000 spheres at the scaling series' protocol (tol 1e-6, at most 10,000
  iterations per step; Melanz et al. 2015 section 3.4 goes to 16,000).

Why ``large`` caps the iterations per step. APGD's iterations to a fixed tolerance grow about like the
floor's width (the long lateral modes of the bed; the scaling series' iterations per step are on
docs/results/generate.md), so at tol 1e-6 and 30,000 spheres a settle extrapolates to many hours on two
cores (the series fit's estimate is on docs/results/generate.md and docs/datasets.md). Large
granular simulations cap the iterations per step instead (Mazhar et al. 2014's poorly settled packing
is 10 per step), and with warm starting a settle carries each step's unfinished solve into the next:
the settledness sweep (benchmarks/reproduce/settledness.py, results/settledness.md) finds the 320-sphere protocol
at rest by SETTLED_ENERGY with every cap from 50 up, its kinetic energy within a factor of ten of the
10,000 cap's and its penetrations alike. The packing
written is judged as every other one, by its kinetic energy against SETTLED_ENERGY, its largest speed
and penetration, and its steps' statuses (mostly "max_iter") are in its settling summary.

Every packing's file is NAME-NNNNN.npz, its final simulation state NAME-NNNNN.state.npz (to go on
simulating from it, :func:`load_state`). ``MANIFEST.json`` in the output folder records, per file, the
SHA-256 of its arrays (:func:`workbench.problem.problem_digest`) with the generator parameters
and the summary numbers; a packing made again with the parameters of an entry of the committed
manifest (problems/datasets/MANIFEST.json) is checked against it. Files are reproducible: the same
parameters on the same machine give the same arrays (no clocks or host data are written; numbers
that go through ARPACK are rounded to 6 digits).

Resumable: every ``checkpoint_every`` steps, and whenever ``checkpoint_minutes`` of wall time have
passed since the last checkpoint (a large bed's step takes seconds), the simulation state (bodies,
time, warm-start impulses, step records) is written atomically to NAME-NNNNN.checkpoint.npz; a later
run with the same parameters picks up from it and gives the same file as an uninterrupted run (bit for bit, tested), and
removes it when the packing is written.

Settled means at rest: a packing counts as settled when its kinetic energy is at most
``SETTLED_ENERGY`` = 1e-4 of sum_j m_j g R_j, the energy that would lift every sphere by 1e-4 of its
radius (for the generator's 1 kg, 1 m spheres: 9.8e-4 J per sphere, an rms speed of about 0.04 m/s).
Mazhar et al. 2014 give kinetic energies (0.0215 J settled, 1.5637 J poorly settled, 320 spheres) but
neither the spheres' mass nor their radius, and kinetic energy scales with the mass: their energies
cannot be set against this threshold (read as 1 kg, 1 m spheres they would be 6.8e-6 and 5e-4 of it;
that reading is an assumption, not the paper's). Only their ratio (73) is free of the mass. :func:`generate_dataset` reports the ratio of every packing and warns when one that is
meant to be settled is above it.

Existing files are never overwritten unless ``force``: a file made with the same parameters is kept
(so that an interrupted series goes on where it stopped), one made with others is an error. Every
file is written atomically (workbench.files).
"""

from __future__ import annotations

import fcntl
import json
import sys
import time
import zipfile
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from problems.granular import container_width_for, container_world
from problems.rigid import SPHERE, Bodies
from problems.scenes import GRAVITY
from problems.stepper import Simulation, StepRecord
from workbench.errors import InputError, unknown
from workbench.files import atomic_output, plain_name
from workbench.limits import check
from workbench.method import Method
from workbench.problem import TimeStepProblem, problem_digest
from workbench.solvers import SolveOptions
from workbench.params import check_params

__all__ = ["PackingSpec", "DATASETS", "generate_dataset", "settle", "step_problem", "condition_estimate",
           "DEFAULT_DIR", "MANIFEST", "LOCAL_MANIFEST", "COMMITTED", "BED_ITERATION_CAP", "LARGE_SPHERES", "read_manifest",
           "render_manifest", "packing_metadata", "load_state", "method", "simulation", "settled_packing"]

#: where the committed datasets live
DEFAULT_DIR = Path(__file__).resolve().parent / "datasets"

#: the manifest of a dataset folder: file name -> sha256 of the arrays, parameters, summary
MANIFEST = "MANIFEST.json"
#: where a user's run records what it makes in problems/datasets (ignored by git): the tracked
#: MANIFEST.json of that folder is rewritten only by the page-writing command (``--write``), so a user's
#: ``workbench generate`` leaves every tracked file as it was (issue 46)
LOCAL_MANIFEST = "MANIFEST.local.json"

#: the packings the repository carries (with the whole scaling series, about 50 MB with their states);
#: the others are made by ``workbench generate`` and checked against the manifest
COMMITTED = ("settled-00320.npz", "unsettled-00320.npz", "filling-01000.npz") + tuple(
    f"scaling-{n:05d}.npz" for n in range(64, 2561, 64))

#: the members of dataset families (problems.families) the repository carries, per family: members 0 ... n-1
#: (``workbench generate FAMILY --members N`` makes the rest and keeps these)
COMMITTED_MEMBERS = {"settled-00064": 20, "unsettled-00064": 20}

#: above this many degrees of freedom the nonzero spectrum is not computed (dense eigvalsh)
DENSE_SPECTRUM_MAX_DOF = 6000

#: above this many contacts no conditioning is estimated (a sparse LU of N would dominate the run)
CONDITION_MAX_CONTACTS = 20000

#: steps between two checkpoints (the default of generate_dataset)
CHECKPOINT_EVERY = 500

#: minutes of wall time after which a checkpoint is written whatever the step (the default)
CHECKPOINT_MINUTES = 10.0


#: PackingSpec fields recorded among a packing's parameters only when they differ from these defaults (no
#: method parameters, warm-started), so that the packings made before the fields existed keep their recorded
#: parameters and checksums
RECORDED_UNLESS_DEFAULT = {"params": None, "warm_start": True, "roundoff": 0}

#: the round-off perturbation of a packing's start (PackingSpec.roundoff), relative to the radius
ROUNDOFF_SCALE = 1e-12


@dataclass(frozen=True)
class PackingSpec:
    """How one packing is made. ``layers``: about n / layers spheres per settled layer set the floor
    (:func:`problems.granular.container_width_for`); ``width`` overrides it [m]. ``nested``,
    ``spacing``, ``jitter``: the starting lattice (:func:`problems.granular.lattice`). ``h`` [s],
    ``duration`` [s]; ``tol`` and ``max_iter`` are the solver's per step. ``params``: the Method's
    parameters (``workbench generate --param``, checked by :class:`workbench.method.Method`: a solver's
    threads or device, say), recorded among the parameters only when given, so that the packings made
    without any keep their recorded parameters and checksums. ``warm_start``: each step's solve starts
    from the impulses of the contacts that persist from the previous step (the default), or from zero;
    recorded only when False, for the same reason. ``roundoff``: 0 (the default, recorded only when
    not 0), or k > 0: every coordinate of every sphere's start moved by a uniform draw in
    +-ROUNDOFF_SCALE R from a generator seeded by k (a round-off twin of the packing of the same seed:
    the protocol is the same, only the rounding of its start differs; :mod:`problems.families`)."""
    n: int = 320
    duration: float = 4.0
    h: float = 0.0005
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
    params: dict | None = None
    warm_start: bool = True
    roundoff: int = 0

    @property
    def steps(self) -> int:
        return int(round(self.duration / self.h))

    @property
    def floor_width(self) -> float:
        """The container's inner width [m]."""
        return float(self.width) if self.width is not None else container_width_for(self.n, layers=self.layers)

    def parameters(self) -> dict:
        """The generator parameters as recorded in the metadata and the manifest."""
        spec = asdict(self)
        for name, default in RECORDED_UNLESS_DEFAULT.items():
            if spec[name] == default or spec[name] == {}:       # empty method parameters are none
                del spec[name]
        return {**spec, "width": self.floor_width, "radius": 1.0, "mass": 1.0, "steps": self.steps,
                "module": "problems.generator"}


#: kinetic energy, as a fraction of sum_j m_j g R_j, at most which a packing counts as settled
SETTLED_ENERGY = 1e-4

#: APGD iterations per step of the ``large`` beds (module docstring: why a cap, and why this one is enough)
BED_ITERATION_CAP = 100

#: spheres of the ``large`` bed: a settled bed of five layers has about 3.5 contacts per sphere
LARGE_SPHERES = 30000

#: the sphere counts of Mazhar et al. 2014 section 5.2: 64 to 2,560 in steps of 64
SCALING_SIZES = tuple(range(64, 2561, 64))

#: dataset name -> (description, specs)
DATASETS: dict[str, tuple[str, Callable[[], list[PackingSpec]]]] = {
    "settled": ("320 spheres settled for 4 s at h = 0.0005 s (8,000 steps), each step solved to tol 1e-6 "
                "(up to 10,000 iterations); Mazhar et al. 2014 section 5.1.1", lambda: [PackingSpec()]),
    "unsettled": ("320 spheres settled for 4 s at h = 0.0005 s with 10 solver iterations per step; Mazhar et al. "
                  "2014 section 5.1.2", lambda: [PackingSpec(max_iter=10)]),
    "scaling": ("settled packings of 64 to 2,560 spheres in steps of 64, 4 s at h = 0.005 s; Mazhar et al. 2014 "
                "section 5.2", lambda: [PackingSpec(n=n, width=None, h=0.005) for n in SCALING_SIZES]),
    "filling": ("1,000 spheres falling into a container for 5 s at h = 0.01 s, tol 1e-5; Melanz et al. 2015 "
                "section 3.2", lambda: [PackingSpec(n=1000, duration=5.0, h=0.01, tol=1e-5, width=None,
                                                    nested=False, jitter=0.1)]),
    "large": (f"a bed of {LARGE_SPHERES:,} spheres capped at {BED_ITERATION_CAP} iterations per step (over 100,000 "
              "contacts), 4 s at h = 0.005 s",
              lambda: [PackingSpec(n=LARGE_SPHERES, width=None, h=0.005, max_iter=BED_ITERATION_CAP)]),
    "scaling-large": ("settled packings of 4,096 to 16,000 spheres, 4 s at h = 0.005 s",
                      lambda: [PackingSpec(n=n, width=None, h=0.005) for n in (4096, 8192, 16000)]),
}


#: the datasets whose packings are meant to be at rest
MEANT_SETTLED = ("settled", "scaling", "large", "scaling-large")


def settling_ratio(kinetic_energy: float, mass, radius) -> float:
    """Kinetic energy [J] over sum_j m_j g R_j of the spheres' masses [kg] and radii [m] (arrays, or
    scalars that broadcast): the measure SETTLED_ENERGY bounds."""
    return kinetic_energy / float(np.sum(np.asarray(mass, float) * GRAVITY * np.asarray(radius, float)))


def method(spec: PackingSpec) -> Method:
    """The formulation x solver of every step of ``spec``, with its parameters (an InputError, one
    line, for an unknown name or parameter)."""
    return Method(spec.formulation, spec.solver, spec.params or {})


def simulation(spec: PackingSpec) -> Simulation:
    """The simulation of ``spec`` at its start."""
    world = container_world(spec.n, width=spec.floor_width, mu=spec.mu, seed=spec.seed, nested=spec.nested,
                            spacing=spec.spacing, jitter=spec.jitter)
    if spec.roundoff:
        b = world.bodies
        b.x[:] += ROUNDOFF_SCALE * b.radius[:, None] * np.random.default_rng(spec.roundoff).uniform(-1.0, 1.0, b.x.shape)
    options = SolveOptions(tol=spec.tol, max_iter=spec.max_iter, keep_history=False)
    return Simulation(world, spec.h, method(spec), options=options, warm_start=spec.warm_start,
                      name=f"packing-{spec.n}")


def settle(spec: PackingSpec, progress: Callable[[Simulation, StepRecord], None] | None = None
           ) -> tuple[Simulation, list[StepRecord]]:
    """Run the packing of ``spec`` from its start; return the simulation at its final state and the
    step records."""
    sim = simulation(spec)
    return sim, sim.run(spec.steps, progress)


def step_problem(sim: Simulation, title: str, description: str) -> TimeStepProblem:
    """The time-step problem at the simulation's current state, titled."""
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


def packing_metadata(sim: Simulation, records: list[StepRecord], spec: PackingSpec, dataset: str,
                     problem: TimeStepProblem) -> dict:
    """What the file of a packing records about it: how it was made (the generator parameters, h and
    steps among them), and of its final state the kinetic energy [J], the largest speed [m/s] and
    penetration [m] (max(0, -min Phi)), the settling summary and the conditioning of N."""
    bodies = sim.world.bodies
    gap = problem.b[::problem.d] * problem.h  # b = Phi / h in the normal slots
    return {
        "dataset": dataset,
        "description": describe(spec),
        "generator": spec.parameters() | {"envelope": sim.world.envelope},
        "h": spec.h,
        "steps": spec.steps,
        "seed": spec.seed,
        "time": _round(sim.t),
        "n_bodies": bodies.n,
        "n_bodies_in_problem": problem.metadata["bodies_in_problem"],
        "n_contacts": problem.n_contacts,
        "n_dof": problem.n_dof,
        "kinetic_energy": _round(bodies.kinetic_energy()),
        "max_speed": _round(float(np.linalg.norm(bodies.v, axis=1).max())),
        "max_penetration": _round(float(max(0.0, -gap.min()))),
        "settling": _settling_summary(records),
        "condition": (condition_estimate(problem) if problem.n_contacts <= CONDITION_MAX_CONTACTS else
                      {"note": f"not estimated (more than {CONDITION_MAX_CONTACTS} contacts)"}),
    }


def write_packing(sim: Simulation, records: list[StepRecord], spec: PackingSpec, dataset: str, path: Path
                  ) -> tuple[TimeStepProblem, dict]:
    """Write the step at the simulation's state as the workbench problem file ``path`` (.npz), its
    metadata inside; return the problem and its metadata."""
    from workbench.io.native import save_problem

    description = describe(spec)
    problem = step_problem(sim, path.stem, f"{description}; generated by workbench generate {dataset}")
    meta = packing_metadata(sim, records, spec, dataset, problem)
    problem = TimeStepProblem(M=problem.M, D=problem.D, k=problem.k, b=problem.b, mu=problem.mu, d=problem.d,
                              h=problem.h, name=problem.name, metadata={**problem.metadata, **meta})
    with atomic_output(path) as tmp:
        save_problem(problem, tmp)
    return problem, meta


# ---------------------------------------------------------------------------------------- manifest
def _read_json_manifest(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a dataset manifest ({exc})") from None


def read_manifest(folder: str | Path = DEFAULT_DIR, *, local: bool = True) -> dict:
    """The manifest of a dataset folder (file name -> entry), empty when there is none: its
    MANIFEST.json with, unless ``local`` is False, the entries of what was made there since
    (LOCAL_MANIFEST, which takes precedence: it describes the file now in the folder)."""
    folder = Path(folder)
    manifest = _read_json_manifest(folder / MANIFEST)
    return {**manifest, **_read_json_manifest(folder / LOCAL_MANIFEST)} if local else manifest


def manifest_entry(problem: TimeStepProblem, meta: dict) -> dict:
    """The manifest entry of a written packing: the SHA-256 of its arrays and its summary numbers."""
    return {"sha256": problem_digest(problem), "dataset": meta["dataset"], "generator": meta["generator"],
            **{k: meta[k] for k in ("h", "steps", "n_bodies", "n_contacts", "kinetic_energy", "max_speed",
                                    "max_penetration")}}


def _committed_member(entry: dict) -> bool:
    """Whether a manifest entry is a member of a dataset family that the repository carries."""
    carried = COMMITTED_MEMBERS.get(entry.get("family"), 0)
    return entry.get("member", carried) < carried


def render_manifest(manifest: dict) -> str:
    """The datasets page (docs/results/datasets.md): one row per manifest entry."""
    lines = ["| file | in the repository | spheres | contacts | h [s] | steps | max iterations/step | kinetic energy [J] "
             "| max speed [m/s] | max penetration [m] | sha256 of the arrays |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for file, e in sorted(manifest.items()):
        lines.append(f"| {file} | {'committed' if file in COMMITTED or _committed_member(e) else 'workbench generate ' + e['dataset']} | "
                     f"{e['n_bodies']:,} | {e['n_contacts']:,} | {e['h']:g} | {e['steps']:,} | {e['generator']['max_iter']:,} | "
                     f"{e['kinetic_energy']:.3g} | {e['max_speed']:.3g} | {e['max_penetration']:.3g} | `{e['sha256']}` |")
    return "\n".join(lines) + "\n"


def _record_manifest(folder: Path, file: str, entry: dict, *, tracked: bool = False) -> None:
    """Add or replace the entry of ``file``; a lock file keeps two generators writing to the same
    folder from losing each other's entries. In problems/datasets the entry goes to LOCAL_MANIFEST
    unless ``tracked`` (the page-writing ``--write``); any other folder is the user's, with one manifest."""
    folder = Path(folder)
    local = not tracked and folder.resolve() == DEFAULT_DIR.resolve()
    target = folder / (LOCAL_MANIFEST if local else MANIFEST)
    with open(folder / f".{MANIFEST}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        manifest = _read_json_manifest(target)
        manifest[file] = entry
        with atomic_output(target) as tmp:
            tmp.write_text(json.dumps(dict(sorted(manifest.items())), indent=1, sort_keys=True) + "\n")


# ---------------------------------------------------------------------------------------- checkpoints
_RECORD_FIELDS = tuple(StepRecord.__dataclass_fields__)


def checkpoint_path(path: Path) -> Path:
    """Where the checkpoint of the packing written to ``path`` lives."""
    return path.with_name(f"{path.stem}.checkpoint.npz")


def state_path(path: Path) -> Path:
    """Where the final simulation state of the packing written to ``path`` lives
    (:meth:`problems.stepper.Simulation.state`: a simulation of the same parameters restored from it
    goes on from the stored step, warm start included)."""
    return path.with_name(f"{path.stem}.state.npz")


def load_state(path: Path) -> dict[str, np.ndarray]:
    """The final simulation state stored beside the packing file ``path``."""
    with np.load(state_path(path), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def settled_packing(name: str, folder: str | Path = DEFAULT_DIR) -> tuple[Bodies, float]:
    """The spheres of the packing ``name`` (a file NAME.npz of the folder's manifest, with its state) at
    their final positions and orientations, at rest (the packing's residual velocities dropped), and
    the floor width of its container [m]; radius, mass and mu are the generator's. An InputError (one
    line) for a name that is not such a packing."""
    plain_name(name, "packing")
    entry = read_manifest(folder).get(f"{name}.npz")
    path = Path(folder) / f"{name}.npz"
    if entry is None or not state_path(path).exists():
        stored = sorted(f[:-len(".npz")] for f in read_manifest(folder) if state_path(Path(folder) / f).exists())
        raise unknown("packing with a stored state", name, stored)
    g = entry["generator"]
    state = load_state(path)
    x = state["x"]
    if x.shape != (g["n"], 3):
        raise InputError(f"packing {name}: its state holds {x.shape[0]} spheres, its manifest {g['n']}")
    bodies = Bodies.create(shape=np.full(g["n"], SPHERE), size=g["radius"], mass=g["mass"], mu=g["mu"], x=x,
                           orientation=state["orientation"])
    return bodies, float(g["width"])


def save_checkpoint(sim: Simulation, records: list[StepRecord], spec: PackingSpec, path: Path) -> None:
    """Write the simulation state and the step records so far, atomically."""
    arrays = {f"state_{k}": v for k, v in sim.state().items()}
    for name in _RECORD_FIELDS:
        arrays[f"record_{name}"] = np.array([getattr(r, name) for r in records])
    arrays["spec"] = np.array(json.dumps(spec.parameters(), sort_keys=True))
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def _read_checkpoint(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the checkpoint at ``path``; an InputError (one line) when it is not readable."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"{path}: not a readable checkpoint ({type(exc).__name__}: {exc}); remove it to "
                         "start over") from None


def load_checkpoint(sim: Simulation, spec: PackingSpec, path: Path) -> list[StepRecord]:
    """Restore the simulation from the checkpoint at ``path``; return its step records. A checkpoint
    of other parameters, or one that is not readable, is an InputError."""
    z = _read_checkpoint(path)
    try:
        recorded = json.loads(str(z["spec"]))
    except (KeyError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable checkpoint (its parameters: {type(exc).__name__}: {exc}); "
                         "remove it to start over") from None
    if recorded != json.loads(json.dumps(spec.parameters(), sort_keys=True)):
        raise InputError(f"{path} is the checkpoint of a packing with other parameters; remove it or "
                         "give the same --set and --param values")
    try:
        sim.restore({k[len("state_"):]: v for k, v in z.items() if k.startswith("state_")})
        columns = {name: z[f"record_{name}"].tolist() for name in _RECORD_FIELDS}
    except KeyError as exc:
        raise InputError(f"{path}: not a readable checkpoint (no {exc}); remove it to start over") from None
    return [StepRecord(**dict(zip(_RECORD_FIELDS, row))) for row in zip(*columns.values())]


def _checkpoint_step(path: Path) -> int:
    """The step a checkpoint holds (0 when there is none)."""
    if not path.exists():
        return 0
    try:
        return int(_read_checkpoint(path)["state_step_index"])
    except KeyError:
        raise InputError(f"{path}: not a readable checkpoint (no step index); remove it to start over") from None


def run_packing(spec: PackingSpec, path: Path, *, progress: bool = True, checkpoint_every: int = CHECKPOINT_EVERY,
                checkpoint_minutes: float = CHECKPOINT_MINUTES, stop_after: int | None = None
                ) -> tuple[Simulation, list[StepRecord]] | None:
    """Run the packing of ``spec`` to its end, from the checkpoint of ``path`` when there is one,
    writing a checkpoint every ``checkpoint_every`` steps and after ``checkpoint_minutes`` of wall time
    (the state is the same whenever it is written: the result does not depend on when).
    ``stop_after``: stop (returning None) once that many steps are done, as an interruption would
    (for tests)."""
    sim = simulation(spec)
    ckpt = checkpoint_path(path)
    records = load_checkpoint(sim, spec, ckpt) if ckpt.exists() else []
    bar = progress_bar(path.stem, spec.steps, sim.step_index, enabled=progress)
    bar.doing("")
    last = time.monotonic()
    try:
        while sim.step_index < spec.steps:
            if stop_after is not None and sim.step_index >= stop_after:
                return None
            rec = sim.step()
            records.append(rec)
            bar.update(1, postfix=f"{rec.contacts} contacts, {rec.iterations} it, KE {rec.kinetic_energy:.3g} J"
                       if sim.step_index % 50 == 0 else None)
            due = (checkpoint_every and sim.step_index % checkpoint_every == 0) or \
                time.monotonic() - last >= 60.0 * checkpoint_minutes
            if due and sim.step_index < spec.steps:
                save_checkpoint(sim, records, spec, ckpt)
                last = time.monotonic()
    finally:
        bar.close()
    return sim, records


def progress_bar(label: str, total: int, done: int, enabled: bool = True):
    """The steps' progress on stderr (:class:`workbench.progress.Progress`: a bar on a terminal, a plain
    line every few seconds elsewhere), off when ``enabled`` is false."""
    from workbench.progress import Progress

    return Progress(label, total, "step", initial=done, enabled=enabled)


def _same_parameters(path: Path, spec: PackingSpec) -> bool:
    """Whether the packing file at ``path`` was made with the parameters of ``spec``."""
    from workbench.io.native import load_problem_native

    try:
        recorded = load_problem_native(path).metadata.get("generator", {})
    except Exception:  # noqa: BLE001 - an unreadable file is not the same packing
        return False
    expected = spec.parameters()
    return (all(recorded.get(k) == v for k, v in expected.items())
            and all(recorded.get(k, d) == expected.get(k, d) for k, d in RECORDED_UNLESS_DEFAULT.items()))


def generate_dataset(name: str, out_dir: str | Path = DEFAULT_DIR, *, progress: bool = True, sizes=None,
                     force: bool = False, checkpoint_every: int = CHECKPOINT_EVERY,
                     checkpoint_minutes: float = CHECKPOINT_MINUTES, stop_after: int | None = None,
                     on_packing: Callable[[Path, dict, float, int], None] | None = None, write_page: bool = False,
                     **overrides) -> list[Path]:
    """Generate the dataset ``name`` (see DATASETS) into ``out_dir``; return the paths of its files.

    ``overrides`` replace PackingSpec fields of every packing (n, duration, h, solver, seed, ...);
    ``sizes`` replaces the list of sphere counts. Files are named NAME-NNNNN.npz. A file that exists
    is kept when it was made with the same parameters (an interrupted series goes on) and is an
    InputError before anything runs when not, unless ``force``. Each packing resumes from its
    checkpoint (module docstring). The kinetic energy of each packing goes to stderr, with a warning
    when a packing meant to be settled is not (SETTLED_ENERGY), and its digest is checked against
    the committed manifest when that has an entry of the same parameters. ``on_packing(path, metadata,
    seconds, resumed_from)`` is called after each packing written: the wall time of its simulation
    and writing [s] and the step it resumed from (0 when it started afresh). ``write_page`` (``--write``):
    when ``out_dir`` is the committed folder, also write the datasets page (docs/results/datasets.*) and
    rewrite a committed manifest entry of the same parameters (else it is kept, and a packing that
    differs from it is a warning)."""
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
        if spec.params is not None and not isinstance(spec.params, dict):
            raise InputError(f"dataset {name}: params must be a mapping of the method's parameters, got {spec.params!r}")
        method(spec)
    out = Path(out_dir)
    paths = [out / f"{name}-{spec.n:05d}.npz" for spec in specs]
    keep = {p for p, spec in zip(paths, specs) if p.exists() and not force and _same_parameters(p, spec)}
    clash = [p for p in paths if p.exists() and p not in keep]
    if clash and not force:
        committed = " (a committed dataset)" if out.resolve() == DEFAULT_DIR.resolve() else ""
        raise InputError(f"{clash[0]} exists{committed}, made with other parameters; give --out DIR for another "
                         "folder, or --force to overwrite it")
    out.mkdir(parents=True, exist_ok=True)
    committed_manifest = read_manifest(DEFAULT_DIR, local=False)
    for spec, path in zip(specs, paths):
        if path in keep:
            print(f"{path.stem}: kept (made with the same parameters)", file=sys.stderr)
            continue
        start = time.perf_counter()
        resumed_from = _checkpoint_step(checkpoint_path(path))
        done = run_packing(spec, path, progress=progress, checkpoint_every=checkpoint_every,
                           checkpoint_minutes=checkpoint_minutes, stop_after=stop_after)
        if done is None:
            return paths[:0]
        sim, records = done
        problem, meta = write_packing(sim, records, spec, name, path)
        seconds = time.perf_counter() - start
        entry = manifest_entry(problem, meta)
        with atomic_output(state_path(path)) as tmp:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **sim.state())
        committed = committed_manifest.get(path.name) if out.resolve() == DEFAULT_DIR.resolve() else None
        if write_page or committed is None or committed["generator"] != entry["generator"]:
            _record_manifest(out, path.name, entry, tracked=write_page)  # MANIFEST.json only with --write
        checkpoint_path(path).unlink(missing_ok=True)
        b = sim.world.bodies
        ratio = settling_ratio(b.kinetic_energy(), b.mass, b.radius)
        print(f"{path.stem}: {meta['n_contacts']} contacts, kinetic energy {sim.world.bodies.kinetic_energy():.4g} J "
              f"= {ratio:.2g} of sum m g R (settled at most {SETTLED_ENERGY:g}), sha256 {entry['sha256'][:16]}...",
              file=sys.stderr)
        if name in MEANT_SETTLED and ratio > SETTLED_ENERGY:
            print(f"warning: {path.stem} is not settled: its kinetic energy is {ratio:.2g} of sum m g R, above "
                  f"{SETTLED_ENERGY:g}; give it longer (--set duration=...) or a tighter solver (--set tol=...)",
                  file=sys.stderr)
        reference = committed_manifest.get(path.name)
        if reference is not None and reference["generator"] == entry["generator"]:
            if reference["sha256"] != entry["sha256"]:
                print(f"warning: {path.stem} differs from the committed manifest (sha256 {reference['sha256'][:16]}..."
                      f"): not reproduced bit for bit on this machine", file=sys.stderr)
            else:
                print(f"{path.stem}: matches the committed manifest", file=sys.stderr)
        if on_packing is not None:
            on_packing(path, meta, seconds, resumed_from)
        if write_page and out.resolve() == DEFAULT_DIR.resolve():
            from workbench.provenance import DirtyTree, write_results

            try:
                write_results("datasets", read_manifest(DEFAULT_DIR), render_manifest, own=(DEFAULT_DIR / MANIFEST,))
            except DirtyTree as exc:  # the packing and its manifest entry are written; only the page waits
                print(f"warning: docs/results/datasets not written: {exc}", file=sys.stderr)
    return paths
