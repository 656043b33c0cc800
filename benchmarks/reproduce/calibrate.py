"""The fits that calibrate the generator's unstated parameters against Mazhar et al. 2014 (issue 32 item 2):

    .venv/bin/python -m benchmarks.reproduce.calibrate [--write] [--quick] [--members N] [--large] [--tight] [--cold] [--threads N] [--cache DIR] [--sweep-cache DIR]

Mazhar et al. 2014 (sec. 5.1, 5.2) give neither the spheres' mass nor the container's floor. Both are
fitted here, each on one of the paper's numbers, and everything else they report is kept for the test.

The members (issue 44: a conclusion over the population, not over one packing). The sec. 5.1 protocol
(320 spheres, h = 0.0005 s, 8,000 steps, tol 1e-6, seed 0) with at most 10,000 iterations per step (the
thoroughly settled family) and with at most 10 (the poorly settled one), each as ``--members`` packings:
member r is the settledness sweep's packing of that cap and replicate r
(:func:`benchmarks.reproduce.settledness.packing`: replicate 0 as built, r > 0 a round-off twin, its start
moved by 1e-12 R), made once into the sweep's cache and kept there, so that the sweep and this command
share every packing and settle none twice. Each member is measured by
:func:`benchmarks.reproduce.settledness.measure`: contacts, kinetic energy [J], the interior-point objective
of the relaxed dual (to 1e-10) and APGD's iterations to it. The committed packing of the same parameters
(settled-00320, unsettled-00320) is the as-committed member: checked against member 0's arrays (SHA-256)
and measured too where they differ, shown beside the members, never one of them.

* the floor width w [m] on a contact count C(w) (sec. 5.2: 77 contacts at 64 spheres). C falls as the
  floor widens (fewer layers, fewer sphere-sphere contacts), and it is an integer, so the fit is a
  bisection over w to the narrowest bracket [w_lo, w_hi] where C crosses the target
  (:func:`fit_monotone`); a count that jumps over the target is reported as the bracket, the closest
  count reached and its residual. Each packing is the generator's dataset ``scaling`` at 64 spheres with
  the floor width overridden (the recipe of the committed scaling-00064, docs/datasets.md), made once into
  ``CACHE/width-W/`` (ignored by git) and kept;
* the common sphere mass m [kg] on the settled objective f (sec. 5.1: -0.0232). The exponent p of f
  proportional to m^p is measured, not assumed, on one step (it is exact linearity, so one step shows its
  round-off): the thoroughly settled family's member 0 solved with every mass (and so every weight) scaled
  by a few factors (:func:`mass_scaled`, the interior point to 1e-10 of
  :func:`benchmarks.reproduce.mazhar_2014.interior_point_solve`), the log-log slope of f over them
  (:func:`scaling_exponent`). Then m = m_0 (f_target / f_med)^(1/p) (:func:`fit_power`), f_med the median
  over the family's members of f at the packings' mass m_0 = 1 kg, and the 95 % interval of m is that of
  f_med mapped by the same monotone map (an order statistic maps to an order statistic). Every member is
  solved again at m: the median's residual.

Under a uniform mass scaling the whole settling trajectory is the same (impulses scale with m, velocities
and positions do not), so kinetic energies and objectives scale linearly with m and the exponent is 1 up to
round-off. The test quantities (the poorly settled objective, both kinetic energies and their mass-free
ratio, the contact counts, APGD's iterations to the interior-point objective, "poorly settled is harder")
are untouched by the fits; the fitted mass is applied to each member by that linearity. Each numeric row
is the median over the members with its exact 95 % interval (:func:`workbench.report.reproduction.over_members`)
and is judged on the interval by :mod:`workbench.report.reproduction`'s rules with
benchmarks.reproduce.mazhar_2014's tolerances; the ratio rows pair member r of one family with member r of
the other (the same starting lattice). APGD's iterations are measured at 1 kg and, on member 0, at the
fitted mass too (an invariance check). Each row is also judged at the uncalibrated parameters
(:func:`benchmarks.reproduce.calibrate_rows.mark_fit_tests`).

Single by cost, each row saying so: ``--tight`` settles the 320 spheres of settled-00320 again with each
step solved to 1e-8 (not 1e-6) and shows whether that drives the settling steps to the paper's
10,000-iteration cap; ``--cold`` settles them again with no warm start (each step's APGD from zero impulses,
problems.generator.PackingSpec.warm_start). ``--large`` also settles sec. 5.2's largest packing, 2,560
spheres, in the container fitted at 64 (one container for the whole series: the paper gives none) and tests
its contacts (9,228); without it that row is "not measured". Without ``--write`` the page is printed only;
``--write`` writes docs/results/calibration.{json,md} (:func:`workbench.provenance.write_results`) and its
copy in docs/reproductions.md. ``--quick`` is a CI-sized run (the settledness sweep's --quick packings and
members, fewer mass factors, 64-sphere floor packings settled for 0.5 s only, a 7 m bracket, APGD capped at
2,000) that is never written.
"""
from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.reproduce.calibrate_rows import (LARGE_N, PAPER_CONTACTS, TIGHT_TOL, mark_fit_tests, render_page,
                                                 test_rows)
from benchmarks.reproduce.mazhar_2014 import (MAZHAR_CAPS, MAZHAR_STATIC, apgd_to_target, interior_point_solve,
                                              protocol_gap)
from benchmarks.reproduce import settledness
from benchmarks.reproduce.settledness import APGD_CAP, verdict as settledness_verdict
from workbench.problem import TimeStepProblem
from workbench.provenance import RESULTS_DIR, ROOT
from workbench.report.reproduction import MIN_MEMBERS, over_members


@dataclass(frozen=True)
class Fit:
    """One fitted parameter: ``value`` (the bracket's point whose measure is closest to the target),
    the bracket [``lo``, ``hi``] that holds the crossing, and every (parameter, measure) evaluated."""
    value: float
    lo: float
    hi: float
    target: float
    evaluations: tuple[tuple[float, float], ...]

    @property
    def residual(self) -> float:
        """The fitted point's measure minus the target."""
        return dict(self.evaluations)[self.value] - self.target


def fit_monotone(measure: Callable[[float], float], target: float, lo: float, hi: float, *,
                 width: float) -> Fit:
    """Bisect [lo, hi] for the x where a monotone ``measure`` crosses ``target`` until the bracket is
    at most ``width`` wide. The measure at lo and at hi must lie on either side of the target (or on
    it); a step function (a contact count) is met to the bracket, not to a root."""
    if not lo < hi or width <= 0:
        raise ValueError(f"bad bracket [{lo}, {hi}] or width {width}")
    seen: dict[float, float] = {lo: float(measure(lo)), hi: float(measure(hi))}
    side_lo = np.sign(seen[lo] - target)
    if side_lo * np.sign(seen[hi] - target) > 0:
        raise ValueError(f"the measure does not cross {target} on [{lo}, {hi}]: {seen[lo]}, {seen[hi]}")
    while hi - lo > width and seen[lo] != target and seen[hi] != target:
        mid = 0.5 * (lo + hi)
        seen[mid] = float(measure(mid))
        if np.sign(seen[mid] - target) == side_lo:
            lo = mid
        else:
            hi = mid
    best = min((lo, hi), key=lambda x: (abs(seen[x] - target), x))
    return Fit(best, lo, hi, float(target), tuple(sorted(seen.items())))


def scaling_exponent(parameters, values) -> float:
    """The least-squares slope p of log|value| over log(parameter): value proportional to parameter^p.
    Needs at least two distinct positive parameters and values of one sign, none zero."""
    x = np.asarray(parameters, dtype=float)
    y = np.asarray(values, dtype=float)
    if x.size < 2 or np.unique(x).size < 2 or np.any(x <= 0):
        raise ValueError("need at least two distinct positive parameters")
    if np.any(y == 0) or np.unique(np.sign(y)).size > 1:
        raise ValueError("values must be nonzero and of one sign")
    return float(np.polyfit(np.log(x), np.log(np.abs(y)), 1)[0])


def fit_power(value_at_unit: float, target: float, exponent: float) -> float:
    """The parameter m where value_at_unit * m^exponent equals target (same sign as value_at_unit)."""
    if exponent == 0 or value_at_unit == 0 or np.sign(value_at_unit) != np.sign(target):
        raise ValueError(f"no power fit of {target} from {value_at_unit} with exponent {exponent}")
    return float((target / value_at_unit) ** (1.0 / exponent))


# --------------------------------------------------------------------------- the measures
# Everything below measures: it solves the committed time steps and makes 64-sphere packings.

#: where the floor fit's packings are kept between runs (ignored by git)
CACHE = ROOT / "results" / "calibration"
#: the page under docs/results, and the page it reads the settledness verdict from
NAME = "calibration"
SETTLEDNESS = RESULTS_DIR / "settledness.json"
#: the committed packings of Mazhar et al. 2014 sec. 5.1 (1 kg spheres): the as-committed member of each family
DATASETS = {"settled": "settled-00320", "unsettled": "unsettled-00320"}
#: the mass factors at which the exponent p of objective ~ m^p is measured (1: the committed packing)
MASS_FACTORS = (0.5, 1.0, 2.0, 8.0)
# the paper's contact counts (PAPER_CONTACTS), the largest packing's size (LARGE_N) and the --tight tolerance
# (TIGHT_TOL) are calibrate_rows', whose rows name them too
#: the floor widths [m] the bisection starts from: the generator's own floor for 64 spheres (the
#: committed scaling-00064, several layers) and one wide enough for a single layer
FLOOR_BRACKET = (10.0, 24.0)
#: the bisection stops when the bracket is at most this wide [m]
FLOOR_RESOLUTION = 0.001
#: how far from 1 the measured exponent may be and still count as 1 "within round-off"
EXPONENT_TOL = 1e-6
#: --quick: a CI-sized run that is never written
QUICK = {"factors": (0.5, 1.0, 2.0), "duration": 0.5, "resolution": 7.0, "apgd_cap": 2_000}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def mass_scaled(problem: TimeStepProblem, factor: float) -> TimeStepProblem:
    """The time step of the same packing with every mass (and inertia) times ``factor``: M and k = M v + h f
    scale (the applied forces are weights, m g); D, b, mu and h do not. N = D^T M^-1 D scales by 1 / factor
    and r = b + D^T M^-1 k not at all, so the relaxed dual's optimal impulses and objective scale by
    ``factor``."""
    problem.require_global("a mass scaling")
    return TimeStepProblem(mu=problem.mu, d=problem.d, M=problem.M * factor, D=problem.D, k=problem.k * factor,
                           b=problem.b, h=problem.h, name=f"{problem.name} x{factor:g} mass",
                           metadata={**problem.metadata, "mass_factor": factor})


def interior_point(problem: TimeStepProblem) -> dict:
    """The sec. 5.1 reference objective of ``problem`` (:func:`benchmarks.reproduce.mazhar_2014.interior_point_solve`)
    with its solver, status, judged error and iterations."""
    res = interior_point_solve(problem)
    error = float(res.metrics.get(res.judged_name, math.nan))
    return {"objective": float(res.objective), "solver": res.solver, "status": res.status, "judged": res.judged_name,
            "error": error if math.isfinite(error) else None, "iterations": int(res.iterations)}


def fit_mass(members: list[TimeStepProblem], mass: float, target: float, factors=MASS_FACTORS,
             objectives=None) -> dict:
    """The common sphere mass [kg] at which the median over ``members`` (the steps of a family's packings, of
    spheres of ``mass`` kg) of the interior-point objective is ``target``. The exponent p of objective ~ m^p
    is measured on ``members[0]`` at each mass factor x ``mass`` (:func:`scaling_exponent`); ``objectives``:
    each member's objective at ``mass`` (solved here when None). The mass m = ``mass`` x (target / median)^(1/p)
    (:func:`fit_power`), its 95 % interval the median's (:func:`over_members`) mapped by the same monotone map
    (None where that interval is unbounded or crosses 0); every member solved again at m: the median's
    residual."""
    if 1.0 not in factors:
        raise ValueError("the mass factors must include 1 (the packing as made)")
    evaluations = []
    for factor in factors:
        _say(f"member 0, mass x{factor:g}: interior point")
        evaluations.append({"mass": float(factor * mass), **interior_point(mass_scaled(members[0], factor))})
    exponent = scaling_exponent([e["mass"] for e in evaluations], [e["objective"] for e in evaluations])
    if objectives is None:
        objectives = [interior_point(p)["objective"] for p in members]
    median = over_members(objectives)

    def mapped(f):   # the fitted mass of an objective; None for an unbounded end or one that cannot be met
        try:
            return None if f is None else mass * fit_power(f, target, exponent)
        except ValueError:
            return None
    fitted_mass = mapped(median["median"])
    if fitted_mass is None:
        raise ValueError(f"no mass fit of {target} from the median objective {median['median']}")
    ends = [mapped(median["low"]), mapped(median["high"])]
    interval = None if None in ends else sorted(ends)
    _say(f"fitted mass {fitted_mass:.6g} kg: interior point again on {len(members)} members")
    check = [interior_point(mass_scaled(p, fitted_mass / mass)) for p in members]
    at_fitted = float(np.median([c["objective"] for c in check]))
    return {"target": target, "made_with": mass, "evaluations": evaluations, "exponent": exponent,
            "exponent_tol": EXPONENT_TOL, "objectives": median, "mass": fitted_mass,
            "interval": interval, "check": {"mass": fitted_mass, "objective": at_fitted, "members": check},
            "residual": at_fitted - target}


def floor_packing(width: float, n: int, cache: Path, progress: bool = False, **overrides) -> Path:
    """The generator's ``scaling`` packing of ``n`` spheres on a ``width`` m floor (all else the committed
    series' recipe, ``overrides`` aside), made once into ``cache/width-W`` and kept."""
    from problems.generator import generate_dataset

    folder = cache / f"width-{width:.6f}"
    return generate_dataset("scaling", folder, sizes=[n], width=float(width), progress=progress, **overrides)[0]


def floor_entry(path: Path) -> dict:
    """A floor packing's contacts, kinetic energy [J], that energy over sum m g R (settled when at most
    problems.generator.SETTLED_ENERGY), and whether its arrays are those of the committed packing of the same
    name and parameters (None: none such committed)."""
    from problems.generator import DEFAULT_DIR, GRAVITY, read_manifest

    entry = read_manifest(path.parent)[path.name]
    committed = read_manifest(DEFAULT_DIR).get(path.name)
    same = None if committed is None or committed["generator"] != entry["generator"] else \
        committed["sha256"] == entry["sha256"]
    g = entry["generator"]
    energy = float(entry["kinetic_energy"])
    return {"contacts": int(entry["n_contacts"]), "kinetic_energy": energy,
            "energy_ratio": energy / (g["n"] * g["mass"] * GRAVITY * g["radius"]), "sha256": entry["sha256"],
            "committed_same": same}


#: the contact envelopes [m] under which a floor packing's contacts are counted (issue 44 item 5): the
#: generator's 0.05 R = 5 cm (R = 1 m), which the fit uses, and 1 cm (the paper gives none)
ENVELOPES = (0.05, 0.01)


def contact_kinds(path: Path, envelopes=ENVELOPES) -> dict[str, dict[str, int]]:
    """The contacts of the stored final state of the packing ``path`` by kind, under each contact envelope
    [m] (gap <= envelope, problems.contact.detect): ``sphere-sphere``, ``floor`` (sphere-plane, vertical
    normal) and ``wall`` (sphere-plane, horizontal normal), keyed by the envelope in cm ("5 cm")."""
    from problems.contact import detect
    from problems.generator import settled_packing
    from problems.rigid import World, container_planes

    bodies, width = settled_packing(path.name[:-len(".npz")], path.parent)
    out = {}
    for env in envelopes:
        c = detect(World(bodies, container_planes(width, width, float(bodies.mu[0])), envelope=env))
        plane = c.a < 0
        floor = plane & (np.abs(c.normal[:, 2]) > 0.5)
        out[f"{100 * env:g} cm"] = {"sphere-sphere": int(np.sum(~plane)), "floor": int(np.sum(floor)),
                                    "wall": int(np.sum(plane & ~floor))}
    return out


def fit_floor(n: int, target: int, cache: Path, bracket=FLOOR_BRACKET, resolution: float = FLOOR_RESOLUTION,
              progress: bool = False, **overrides) -> dict:
    """The floor width [m] at which ``n`` spheres settle to ``target`` contacts: :func:`fit_monotone` over
    :func:`floor_packing` counts; every packing made, with its count and kinetic energy."""
    packings: dict[float, dict] = {}

    def contacts(width: float) -> int:
        _say(f"floor {width:g} m: {n} spheres")
        path = floor_packing(width, n, cache, progress, **overrides)
        packings[width] = {"width": width, **floor_entry(path), "kinds": contact_kinds(path)}
        return packings[width]["contacts"]

    try:
        fit = fit_monotone(contacts, target, *bracket, width=resolution)
    except ValueError as exc:   # the bracket does not cross: reported, not fitted
        return {"n": n, "target": target, "bracket": list(bracket), "resolution": resolution, "fit": None,
                "reason": str(exc), "packings": [packings[w] for w in sorted(packings)], "overrides": overrides}
    closest = min(packings.values(), key=lambda p: (abs(p["contacts"] - target), p["width"]))
    return {"n": n, "target": target, "bracket": list(bracket), "resolution": resolution,
            "fit": {"value": fit.value, "lo": fit.lo, "hi": fit.hi, "residual": fit.residual,
                    "closest": closest["width"], "closest_residual": closest["contacts"] - target},
            "packings": [packings[w] for w in sorted(packings)], "overrides": overrides}


def large_state(width: float, cache: Path, n: int = LARGE_N) -> dict | None:
    """What the cache holds of the ``n``-sphere packing on the ``width`` m floor (:func:`packing_state`)."""
    state = packing_state(cache / f"width-{width:.6f}" / f"scaling-{n:05d}.npz")
    return None if state is None else {"width": width, **state}


def tight_packing(cache: Path, tol: float = TIGHT_TOL, progress: bool = False) -> Path:
    """The thoroughly settled packing (the generator's ``settled``, as settled-00320) settled again with every
    step solved to ``tol``, made once into ``cache/settled-tol-TOL`` and kept."""
    from problems.generator import generate_dataset

    return generate_dataset("settled", cache / f"settled-tol-{tol:g}", progress=progress, tol=tol)[0]


def cold_packing(cache: Path, progress: bool = False) -> Path:
    """The thoroughly settled packing settled again with no warm start (every step's solve from zero
    impulses), made once into ``cache/settled-cold`` and kept."""
    from problems.generator import generate_dataset

    return generate_dataset("settled", cache / "settled-cold", progress=progress, warm_start=False)[0]


def packing_state(path: Path) -> dict | None:
    """What the cache holds of the packing file ``path``, without making anything: the finished packing
    (:func:`floor_entry` and its settling record), else its checkpoint's progress (steps done, contacts, the
    settling iterations and seconds of its steps so far), else None."""
    from problems.generator import checkpoint_path

    if path.exists():
        from workbench.io import load_problem

        settling = load_problem(path).metadata.get("settling", {})
        return {"finished": True, **floor_entry(path), "steps_done": settling.get("steps"),
                "settle_max_iterations": settling.get("max_iterations"),
                "steps_at_cap": settling.get("statuses", {}).get("max_iter", 0)}
    check = checkpoint_path(path)
    if not check.exists():
        return None
    with np.load(check, allow_pickle=False) as z:
        its, secs, status = z["record_iterations"], z["record_solve_seconds"], z["record_status"]
        return {"finished": False, "steps_done": int(z["state_step_index"]),
                "contacts": int(z["record_contacts"][-1]), "settle_max_iterations": int(its.max()),
                "steps_at_cap": int(np.sum(status == "max_iter")), "last_step_seconds": float(np.mean(secs[-20:]))}


def settledness_finding() -> dict | None:
    """The verdict on "poorly settled is harder for APGD" of docs/results/settledness.json (its fit of
    log(iterations) against log(kinetic energy) at the paper's threshold), read, not recomputed; None
    when there is no such page."""
    if not SETTLEDNESS.exists():
        return None
    record = json.loads(SETTLEDNESS.read_text(encoding="utf-8"))
    data = record["data"]
    fit = data["fits"]["iterations"]["kinetic_energy"][data["paper_threshold"]]
    return {"fit": fit, "threshold": data["paper_threshold"], "verdict": settledness_verdict(fit),
            "replicates": data.get("replicates", 1), "provenance": {k: record["provenance"][k] for k in ("date", "commit", "command")}}


def member_record(path: Path, apgd_cap: int, measured: dict | None = None) -> dict:
    """One packing of a family, measured (:func:`benchmarks.reproduce.settledness.measure`; ``measured``: its
    result where already at hand): its SHA-256, contacts, kinetic energy [J], the spheres' mass [kg], the largest
    settling iterations of one step, the interior-point reference and APGD's first iteration within each
    threshold of it (None: not within ``apgd_cap``)."""
    from problems.generator import read_manifest

    m = measured or settledness.measure(path, apgd_cap)
    entry = read_manifest(path.parent)[path.name]
    return {"sha256": entry["sha256"], "contacts": m["n_contacts"], "kinetic_energy": m["kinetic_energy"],
            "mass": float(entry["generator"]["mass"]),
            "settle_max_iterations": m["settle_max_iterations"],
            "reference": {k: v for k, v in m["reference"].items() if k != "seconds"},   # seconds depend on the load
            "apgd": {t: None if h is None else h[0] for t, h in m["apgd"].items()}}


def measure_family(kind: str, n: int, cache: Path, overrides: dict, apgd_cap: int, progress: bool = False,
                   committed: Path | None = None) -> dict:
    """The first ``n`` members of the sec. 5.1 family ``kind`` (at most MAZHAR_CAPS[kind] iterations per
    settling step): member r the settledness sweep's packing of that cap and replicate r
    (:func:`benchmarks.reproduce.settledness.packing`, made once into ``cache`` and kept), each measured
    (:func:`member_record`); the protocol's gap from the paper's and the generator's unstated choices (of
    member 0); ``committed``: the committed dataset of member 0's parameters in the folder ``committed``
    (default problems/datasets), the same arrays or measured apart
    (:func:`benchmarks.reproduce.settledness.committed_match`; None when none is committed)."""
    from benchmarks.reproduce.mazhar_2014 import unstated
    from problems.generator import DEFAULT_DIR, read_manifest
    from workbench.io import load_problem

    cap, members = MAZHAR_CAPS[kind], []
    for r in range(n):
        path, generation = settledness.packing(cap, cache, overrides, progress, replicate=r)
        _say(f"{kind}, member {r}: {path} ({'kept' if generation['kept'] else 'made'}); interior point and APGD up to "
             f"{apgd_cap:,} iterations")
        members.append({"replicate": r, "file": str(path.relative_to(cache)), **member_record(path, apgd_cap)})
    first = cache / members[0]["file"]
    meta = {**load_problem(first).metadata, "file": members[0]["file"]}
    folder = committed or DEFAULT_DIR
    match = settledness.committed_match(read_manifest(first.parent)[first.name], folder, apgd_cap)
    as_committed = None if match is None else {
        "file": match["file"], "same": match["same"],
        "measured": None if match["measured"] is None else
        member_record(folder / match["file"], apgd_cap, match["measured"])}
    return {"cap": cap, "members": members, "gap": protocol_gap(meta, cap), "unstated": unstated(meta),
            "committed": as_committed}


def measure_members(n: int, cache: Path, overrides: dict, apgd_cap: int, progress: bool = False) -> dict:
    """Both families (:func:`measure_family`), ``n`` members each: kind -> family."""
    return {kind: measure_family(kind, n, cache, overrides, apgd_cap, progress) for kind in ("settled", "unsettled")}


def uncalibrated_large(n: int = LARGE_N) -> dict | None:
    """The ``n``-sphere packing at the uncalibrated parameters: the committed scaling packing, in the generator's
    own container (the floor widened with n), as :func:`packing_state` gives it; None when not committed."""
    from problems.generator import DEFAULT_DIR

    path = DEFAULT_DIR / f"scaling-{n:05d}.npz"
    state = packing_state(path)
    if state is None:
        return None
    from workbench.io import load_problem
    return {"width": load_problem(path).metadata.get("generator", {}).get("width") or math.nan, **state}


# --------------------------------------------------------------------------- command

def render(data: dict) -> str:
    """The page (docs/results/calibration.md), :func:`benchmarks.reproduce.calibrate_rows.render_page`'s. The
    command's renderer stays here because a results record names its renderer by module and function
    (workbench.provenance.label): docs/results/calibration.json names ``benchmarks.reproduce.calibrate:render``."""
    return render_page(data)


def calibrate(quick: bool, cache: Path, progress: bool = False, large: bool = False, tight: bool = False,
              cold: bool = False, members: int | None = None, sweep_cache: Path = settledness.CACHE) -> dict:
    """Both fits and the test rows: the page's data. ``members`` per family (default settledness.REPLICATES,
    settledness.QUICK's with ``quick``), made or kept in ``sweep_cache`` (the settledness sweep's cache, its
    ``quick`` folder with ``quick``); ``large``: the 2,560-sphere packing in the fitted container too;
    ``tight``, ``cold``: the 320 spheres settled again at TIGHT_TOL, with no warm start (each made once into
    the cache, then kept)."""
    from benchmarks.reproduce.mazhar_2014 import dataset_meta
    from workbench.io import load_problem

    settings = QUICK if quick else {"factors": MASS_FACTORS, "resolution": FLOOR_RESOLUTION, "apgd_cap": APGD_CAP}
    n = members or (settledness.QUICK["replicates"] if quick else settledness.REPLICATES)
    fewer = None if n >= MIN_MEMBERS else ("--quick: a CI-sized check, not the calibration" if quick else
                                           f"--members {n} given (the run's cost bound: each member is a full settle "
                                           "of the sec. 5.1 protocol per family)")
    folder = sweep_cache / "quick" if quick else sweep_cache
    families = measure_members(n, folder, settledness.QUICK["overrides"] if quick else {}, settings["apgd_cap"],
                               progress)
    settled = families["settled"]["members"]
    made_with = settled[0]["mass"]
    if any(x["mass"] != made_with for fam in families.values() for x in fam["members"]):
        from workbench.errors import InputError
        raise InputError(f"the members in {folder} are not of one sphere mass: the mass fit's linear map needs one")
    problems = [load_problem(folder / x["file"]) for x in settled]
    mass = fit_mass(problems, made_with, MAZHAR_STATIC["settled"]["objective"], settings["factors"],
                    objectives=[x["reference"]["objective"] for x in settled])
    _say(f"member 0 at {mass['mass']:.4g} kg: APGD up to {settings['apgd_cap']:,} iterations")
    hits = apgd_to_target(mass_scaled(problems[0], mass["mass"] / made_with), mass["check"]["members"][0]["objective"],
                          settings["apgd_cap"])
    mass["apgd"] = {"at_made": settled[0]["apgd"],
                    "at_fitted": {f"{t:g}": None if h is None else h[0] for t, h in hits.items()}}
    overrides = {"duration": settings["duration"]} if quick else {}
    floor = fit_floor(64, PAPER_CONTACTS[64], cache / ("quick" if quick else "full"),
                      resolution=settings["resolution"], progress=progress, **overrides)
    made = None
    if floor["fit"] is not None:
        width, where = floor["fit"]["value"], cache / ("quick" if quick else "full")
        if large:
            _say(f"floor {width:g} m: {LARGE_N:,} spheres")
            floor_packing(width, LARGE_N, where, progress, **overrides)
        made = large_state(width, where)
    tight_state = cold_state = None
    if not quick:
        if tight:
            _say(f"settled-00320 again at tol {TIGHT_TOL:g}")
            tight_packing(cache / "full", progress=progress)
        tight_state = packing_state(cache / "full" / f"settled-tol-{TIGHT_TOL:g}" / "settled-00320.npz")
        if cold:
            _say("settled-00320 again with no warm start")
            cold_packing(cache / "full", progress=progress)
        cold_state = packing_state(cache / "full" / "settled-cold" / "settled-00320.npz")
    data = {"tight": tight_state, "cold": cold_state, "quick": quick, "apgd_cap": settings["apgd_cap"], "mass": mass,
            "floor": floor, "families": families, "members": {"n": n, "fewer": fewer},
            "committed_settle_max": dataset_meta(DATASETS["settled"]).get("settling", {}).get("max_iterations"),
            "settledness": settledness_finding(), "large": made, "large_uncalibrated": uncalibrated_large()}
    data["rows"] = mark_fit_tests(test_rows(data), test_rows(data, calibrated=False))
    return data


def main(argv: list[str] | None = None) -> int:
    from workbench.commands._args import Parser, positive
    from workbench.errors import InputError

    ap = Parser(prog="python -m benchmarks.reproduce.calibrate", description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write docs/results/calibration.* and its copy in "
                                                         "docs/reproductions.md (default: print only)")
    ap.add_argument("--quick", action="store_true", help="a CI-sized run, never written")
    ap.add_argument("--large", action="store_true", help=f"make (or keep) the {LARGE_N:,}-sphere packing in the fitted "
                                                         "container (about 1,000 s or more the first time)")
    ap.add_argument("--tight", action="store_true", help=f"settle the 320 spheres again with each step solved to "
                                                         f"{TIGHT_TOL:g} (minutes the first time; kept in the cache)")
    ap.add_argument("--cold", action="store_true", help="settle the 320 spheres again with no warm start (minutes the "
                                                        "first time; kept in the cache)")
    ap.add_argument("--threads", type=positive(int), default=1, help="threads of the compiled kernels (default 1)")
    ap.add_argument("--cache", default=str(CACHE), help="folder of the floor fit's packings, kept between runs")
    ap.add_argument("--members", type=positive(int), default=None,
                    help=f"packings per sec. 5.1 family (default {settledness.REPLICATES}; "
                         f"{settledness.QUICK['replicates']} with --quick)")
    ap.add_argument("--sweep-cache", default=str(settledness.CACHE),
                    help="the settledness sweep's cache, where the members are made or kept (shared with it)")
    try:
        args = ap.parse_args(argv)
        for option, folder in (("--cache", args.cache), ("--sweep-cache", args.sweep_cache)):
            if Path(folder).exists() and not Path(folder).is_dir():
                raise InputError(f"{option} {folder}: not a folder")
        if args.quick and args.write:
            raise InputError("--quick makes a CI-sized page, not the calibration: it is not written (drop --write "
                             "or --quick)")
        from workbench import threads
        threads.use(args.threads)
        data = calibrate(args.quick, Path(args.cache), progress=sys.stderr.isatty(), large=args.large,
                         tight=args.tight, cold=args.cold, members=args.members, sweep_cache=Path(args.sweep_cache))
    except InputError as exc:
        print(f"calibrate: {exc}", file=sys.stderr)
        return 2
    command = "python -m benchmarks.reproduce.calibrate" + "".join(f" --{k}" for k in ("quick", "large", "tight", "cold", "write") if getattr(args, k)) \
        + (f" --members {args.members}" if args.members else "")
    if args.write:
        from workbench.provenance import embed, write_results
        page = write_results(NAME, data, render, command)
        print(page.read_text(encoding="utf-8"), end="")
        if embed(RESULTS_DIR.parent / "reproductions.md", NAME):
            print("embedded in: docs/reproductions.md", file=sys.stderr)
    else:
        from workbench.provenance import provenance, render as render_record
        record = {"provenance": provenance(command), "data": json.loads(json.dumps(data, allow_nan=False))}
        print(render_record(record, render), end="")
        print("docs/ unchanged: add --write to store the page in docs/results", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
