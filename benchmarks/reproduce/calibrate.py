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
(:func:`mark_fit_tests`).

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

from benchmarks.reproduce.mazhar_2014 import (ENERGY_FACTOR, MAZHAR_CAPS, MAZHAR_STATIC, PACKING_TOL, PAPER_THRESHOLD,
                                              THRESHOLDS, apgd_to_target, interior_point_solve, protocol_gap)
from benchmarks.reproduce import settledness
from benchmarks.reproduce.settledness import APGD_CAP, verdict as settledness_verdict
from workbench.problem import TimeStepProblem
from workbench.provenance import RESULTS_DIR, ROOT
from workbench.report.reproduction import MIN_MEMBERS, fitted, fmt, over_members, paired_members, render_table, row


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
#: Mazhar et al. 2014 sec. 5.2: contacts of the smallest and the largest packing of the series
PAPER_CONTACTS = {64: 77, 2560: 9228}
#: the floor widths [m] the bisection starts from: the generator's own floor for 64 spheres (the
#: committed scaling-00064, several layers) and one wide enough for a single layer
FLOOR_BRACKET = (10.0, 24.0)
#: the size of sec. 5.2's largest packing, made in the fitted container with --large
LARGE_N = 2560
#: the per-step tolerance of the thoroughly settled packing settled again with --tight (the committed: 1e-6)
TIGHT_TOL = 1e-8
#: the bisection stops when the bracket is at most this wide [m]
FLOOR_RESOLUTION = 0.001
#: the window [m] around the fitted width over which the page gives the spread of the counts
NEAR = 0.005
#: how far from 1 the measured exponent may be and still count as 1 "within round-off"
EXPONENT_TOL = 1e-6
#: --quick: a CI-sized run that is never written
QUICK = {"factors": (0.5, 1.0, 2.0), "duration": 0.5, "resolution": 7.0, "apgd_cap": 2_000}
#: why the rows that --large, --tight and --cold make have one member (issue 44: fewer than MIN_MEMBERS says why)
SINGLE = {"large": "one packing, by cost: a 2,560-sphere settle is the costliest packing this command makes (its "
                   "time: docs/results/generate.md), and a family of them is not made here",
          "settle": "one settle, by cost: the whole sec. 5.1 protocol run again on the committed settled-00320's "
                    "start with a costlier per-step solve; settling every member so is not done here"}


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


# --------------------------------------------------------------------------- the test rows

LABEL = {"settled": "thoroughly settled", "unsettled": "poorly settled"}
#: the paper's words as written (issue 44 item 6): sec. 5.1 "used up to 10000 iterations to settle", Table 1's
#: column "Max Iterations" (10000 / 10) beside "limited to only 10 solver iterations per step", and sec. 5.2
#: "an upperbound of iterations 10000": the cap of the protocol, not a count of iterations that a step reached
UP_TO = {"rule": "not_comparable",
         "reason": "the paper states the protocol's cap ('used up to 10000 iterations to settle', sec. 5.1; 'an "
                   "upperbound of iterations 10000', sec. 5.2), not that a step of the 320-sphere settle reached it: "
                   "'up to' is not 'reached', so there is no number to test; the measured largest count is shown"}
#: the criterion of the APGD rows (benchmarks.reproduce.mazhar_2014's)
APGD_CRITERION = (f"first iteration with |f - f_IP| <= {PAPER_THRESHOLD:g} |f_IP| (the paper stops at -0.023199 vs "
                  "-0.0232, 4.3e-5, and -0.53119 vs -0.5312, 1.9e-5)")


def large_row(floor: dict, large: dict | None) -> dict:
    """Sec. 5.2's contacts at 2,560 spheres in the container fitted at 64: one container for the whole series,
    the reading that needs no rule beyond the fit (the paper gives none); not measured without ``large``."""
    from problems.generator import SETTLED_ENERGY

    n = LARGE_N
    if large is not None and not large["finished"]:
        return row(f"contacts, {n:,} spheres, in the fitted container", "sec. 5.2", PAPER_CONTACTS[n], None,
                   {"rule": "within", "rel_tol": PACKING_TOL}, criterion="contacts of the stored step",
                   differences=f"the floor fitted at {floor['n']} spheres kept for {n:,} (one container for the series)",
                   missing=f"begun, not finished: the packing in the cache reached step {large['steps_done']:,} of "
                           f"800 ({large['contacts']:,} contacts), its last 20 steps {large['last_step_seconds']:.1f} s "
                           f"each with APGD at up to {large['settle_max_iterations']:,} of its 10,000 iterations: the "
                           "rest is beyond this run's time on 2 shared cores")
    if large is None:
        return row(f"contacts, {n:,} spheres, in the fitted container", "sec. 5.2", PAPER_CONTACTS[n], None,
                   {"rule": "within", "rel_tol": PACKING_TOL}, criterion="contacts of the stored step",
                   differences=f"the floor fitted at {floor['n']} spheres kept for {n:,} (one container for the series)",
                   missing=f"not run (--large): one {n:,}-sphere packing is the costliest this command makes (its "
                           "time: docs/results/generate.md)")
    settled = large["energy_ratio"] <= SETTLED_ENERGY
    return row(f"contacts, {n:,} spheres, in the fitted container", "sec. 5.2", PAPER_CONTACTS[n], large["contacts"],
               {"rule": "within", "rel_tol": PACKING_TOL}, members=over_members([large["contacts"]], fewer=SINGLE["large"]),
               criterion=f"contacts of the stored step, within {PACKING_TOL:.0%} (a random packing)",
               shown=f"{large['contacts']:,} (kinetic energy {large['kinetic_energy']:.3g} J at 1 kg, "
                     f"{large['energy_ratio']:.2g} of sum m g R)",
               differences=f"{n:,} spheres settled by the scaling recipe on the {large['width']:.6g} m floor fitted at "
                           f"{floor['n']} spheres: one container for the whole series (the paper gives none; the "
                           "generator's own series widens the floor with n)",
               obstacle=None if settled else f"the packing is not settled after the recipe's 4 s (kinetic energy "
                                             f"{large['energy_ratio']:.2g} of sum m g R, above {SETTLED_ENERGY:g})")


def explanation_row(cause: str, state: dict | None, differences: str, flag: str) -> dict:
    """Whether settling the 320 spheres again with one change (``cause``: a tighter per-step tolerance, no warm
    start) drives the settling steps to the paper's 10,000-iteration cap; ``state``: that packing as far as
    the cache holds it (:func:`packing_state`), made by ``flag``."""
    what = f"settling steps at the 10,000-iteration cap with {cause}"
    kw = dict(criterion="the largest APGD iterations of one settling step, against the cap", differences=differences)
    rule = {"rule": "holds", "op": ">=", "finding": "the settling solver reaches its cap"}   # a row not run: not measured
    if state is None:
        return row(what, "Table 1; sec. 5.2", "up to 10,000 iterations per step", None, rule,
                   missing=f"not run ({flag}): the 320 spheres settled again (8,000 steps)", **kw)
    if not state["finished"] and state["settle_max_iterations"] < 10_000:
        return row(what, "Table 1; sec. 5.2", "up to 10,000 iterations per step", None, rule,
                   missing=f"begun, not finished: step {state['steps_done']:,} of 8,000 reached, largest "
                           f"{state['settle_max_iterations']:,} iterations so far", **kw)
    return row(what, "Table 1; sec. 5.2", "up to 10,000 iterations per step", [state["settle_max_iterations"], 10_000],
               UP_TO, members=over_members([state["settle_max_iterations"]], fewer=SINGLE["settle"]),
               shown=f"{state['settle_max_iterations']:,} vs 10,000 ({state['steps_at_cap']:,} steps at the cap "
                     f"over {state['steps_done']:,} steps" + ("" if state["finished"] else ", unfinished") + ")",
               **kw)


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


def mark_fit_tests(calibrated: list[dict], uncalibrated: list[dict]) -> list[dict]:
    """Each test row at the fitted parameters with its verdict at the uncalibrated ones (1 kg, the generator's
    own container: ``uncalibrated``, the same rows in the same order) in ``uncalibrated`` and its
    differences: "does not test the fit" where the verdict is the same at both (issue 44 item 6)."""
    from workbench.report.reproduction import NOT_MEASURED, verdict

    for r, u in zip(calibrated, uncalibrated, strict=True):
        assert r["quantity"] == u["quantity"], (r["quantity"], u["quantity"])
        (label, _), (label0, reason0) = verdict(r), verdict(u)
        r["uncalibrated"] = {"measured": u.get("measured"), "verdict": label0, "reason": reason0}
        if label == label0 and label != NOT_MEASURED:
            head = f"does not test the fit (the same verdict, {label0}, at the uncalibrated parameters)"
        else:
            head = f"at the uncalibrated parameters: {label0} ({reason0})"
        r["differences"] = f"{head}; {r['differences']}"
    return calibrated


def _iterations(member: dict) -> float:
    """APGD's iterations to the paper's threshold of one member; +inf where not within the cap (not reached)."""
    n = member["apgd"][f"{PAPER_THRESHOLD:g}"]
    return math.inf if n is None else n


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _beside(family: dict, value, unit: str = "") -> str:
    """The first member's value and the as-committed member's (``value`` of a member record), shown after the
    interval: the committed packing beside the sample, never in it."""
    text = f"{fmt(value(family['members'][0]))}{unit}"
    c = family["committed"]
    if c is None:
        return text
    if c["same"]:
        return f"{text} (the same arrays as {c['file']}, as committed)"
    return f"{text}; as committed, {c['file']}: {fmt(value(c['measured']))}{unit}"


def test_rows(data: dict, calibrated: bool = True) -> list[dict]:
    """The rows of the test quantities over the members of both families, each judged on the interval of its
    median by its declared rule (workbench.report.reproduction); the fitted mass enters each member by
    linearity, the fitted floor nowhere (the members sit in the generator's container). ``calibrated`` False:
    the same rows at the uncalibrated parameters (the members' own 1 kg; for the 2,560-sphere contacts the
    committed packing in the generator's container, ``large_uncalibrated``)."""
    mass, fams, cap = data["mass"], data["families"], data["apgd_cap"]
    fewer = data["members"]["fewer"]
    m = mass["mass"] if calibrated else None

    def scale(member: dict) -> float:   # the member's quantity at the row's mass over its own
        return 1.0 if m is None else m / member["mass"]
    linear = ("the members' own mass" if m is None else
              f"fitted mass {m:.4g} kg applied to each member by linearity (the quantity is proportional to the "
              f"common mass; measured exponent p = {mass['exponent']:.9f})")
    size = {kind: f"the {len(f['members'])} members of the cap-{f['cap']:,} family (the settledness sweep's packings)"
            for kind, f in fams.items()}
    rows = []
    for kind in ("settled", "unsettled"):
        fam, p = fams[kind], MAZHAR_STATIC[kind]
        if kind == "unsettled":
            ms = over_members([x["reference"]["objective"] * scale(x) for x in fam["members"]], fewer=fewer)
            rows.append(row(f"interior-point objective (relaxed dual), {LABEL[kind]}", p["where"], p["objective"],
                            ms["median"], {"rule": "within", "rel_tol": PACKING_TOL}, members=ms,
                            shown=_beside(fam, lambda x: x["reference"]["objective"] * scale(x)),
                            criterion="the dual objective 1/2 gamma^T N gamma + r^T gamma at the interior-point "
                                      "solution",
                            differences=f"{fam['members'][0]['reference']['solver']} to 1e-10 (MOSEK, default "
                                        f"settings, in the paper); {linear}; {size[kind]}", obstacle=fam["gap"]))
        me = over_members([x["kinetic_energy"] * scale(x) for x in fam["members"]], fewer=fewer)
        rows.append(row(f"kinetic energy after settling [J], {LABEL[kind]}", "Table 1", p["energy"], me["median"],
                        {"rule": "factor", "factor": ENERGY_FACTOR}, members=me,
                        shown=_beside(fam, lambda x: x["kinetic_energy"] * scale(x), " J"),
                        criterion="kinetic energy of the spheres at the stored step, within a factor "
                                  f"{ENERGY_FACTOR:g} (a residual motion: its order of magnitude)",
                        differences=f"{linear}; {size[kind]}", obstacle=fam["gap"]))
    s, u = fams["settled"], fams["unsettled"]
    pairs = list(zip(u["members"], s["members"]))    # member r with member r: the same starting lattice
    pair = (f"member r of the poorly settled family with member r of the thoroughly settled one (the same start, "
            f"replicate r), {len(pairs)} pairs")
    paper_ratio = MAZHAR_STATIC["unsettled"]["energy"] / MAZHAR_STATIC["settled"]["energy"]
    gap = "; ".join(dict.fromkeys(g for g in (s["gap"], u["gap"]) if g)) or None
    mr = over_members([a["kinetic_energy"] / b["kinetic_energy"] for a, b in pairs], fewer=fewer) \
        if all(b["kinetic_energy"] > 0 for _, b in pairs) else None
    rows.append(row("kinetic energy ratio, poorly / thoroughly settled (mass-free)", "Table 1", round(paper_ratio, 1),
                    None if mr is None else mr["median"], {"rule": "factor", "factor": ENERGY_FACTOR}, members=mr,
                    paper_shown=f"{paper_ratio:.0f} (1.5637 J / 0.0215 J)",
                    criterion="ratio of the kinetic energies at the stored steps, per pair: free of the common sphere "
                              "mass, so untouched by the mass fit",
                    differences=pair, obstacle=gap, missing="a thoroughly settled member at zero kinetic energy"))
    for kind in ("settled", "unsettled"):
        fam, p = fams[kind], MAZHAR_STATIC[kind]
        mc = over_members([x["contacts"] for x in fam["members"]], fewer=fewer)
        rows.append(row(f"contacts, {LABEL[kind]}", p["where"], p["contacts"], mc["median"],
                        {"rule": "within", "rel_tol": PACKING_TOL}, members=mc, shown=_beside(fam, lambda x: x["contacts"]),
                        criterion=f"contacts of the stored step, within {PACKING_TOL:.0%} (a random packing)",
                        differences=f"{size[kind]}: {fam['unstated']}",
                        obstacle="contact envelope and container not given, and the members sit in the generator's "
                                 "container, not on a fitted floor: the floor fitted here (sec. 5.2, 64 spheres) does "
                                 "not change them unless they are regenerated on it, which this command does not do"))
    invariance = mass["apgd"]
    for kind in ("settled", "unsettled"):
        fam, p = fams[kind], MAZHAR_STATIC[kind]
        mi = over_members([_iterations(x) for x in fam["members"]], fewer=fewer)
        shown = _beside(fam, lambda x: "not reached" if x["apgd"][f"{PAPER_THRESHOLD:g}"] is None else _iterations(x))
        if kind == "settled":
            k = invariance["at_fitted"][f"{PAPER_THRESHOLD:g}"]
            shown += f"; member 0 at the fitted {mass['mass']:.4g} kg: {'> ' + fmt(cap) if k is None else fmt(k)}"
        rows.append(row(f"APGD iterations to the interior-point objective, {LABEL[kind]}", p["where"], p["apgd"],
                        _finite(mi["median"]), {"rule": "within", "rel_tol": PACKING_TOL}, members=mi, shown=shown,
                        criterion=f"{APGD_CRITERION}; not within {cap:,}: not reached, counted as infinite",
                        differences=f"reference objective from {fam['members'][0]['reference']['solver']} to 1e-10; "
                                    f"APGD at most {cap:,} iterations; {size[kind]} at their own 1 kg (iterations do not "
                                    "depend on the common mass: checked on member 0, see the mass fit)",
                        obstacle=fam["gap"], missing=f"the median member not within {cap:,} iterations"))
    iu, is_ = [_iterations(a) for a, _ in pairs], [_iterations(b) for _, b in pairs]
    medians = [_finite(float(np.median(iu))), _finite(float(np.median(is_)))]
    rows.append(row("poorly settled is harder for APGD, over members", "sec. 5.1 (825 vs 561)",
                    "unsettled iterations > settled iterations", None if None in medians else medians,
                    {"rule": "holds", "op": ">", "finding": "the paired ratio poorly / thoroughly settled above 1"},
                    members=paired_members(iu, is_, fewer=fewer),
                    criterion=f"APGD iterations to within {PAPER_THRESHOLD:g} of the interior-point objective, poorly / "
                              "thoroughly settled, the median of the paired ratios (not reached: infinite)",
                    differences=f"{pair}; a ratio is free of the common mass", obstacle=gap,
                    missing=f"the median member of a family not within {cap:,} iterations"))
    found = data["settledness"]
    trend = "poorly settled is harder for APGD, trend over the settledness sweep"
    if found is None:
        rows.append(row(trend, "sec. 5.1 (825 vs 561)", "harder", None,
                        {"rule": "holds", "op": ">", "finding": "poorly settled needs more APGD iterations"},
                        criterion="the settledness sweep's slope", missing="no docs/results/settledness.json"))
    else:
        f = found["fit"]
        bounded = f["low"] is not None and f["high"] is not None
        # judged on the slope's interval as a row over members (undecided when it contains 0), the packings
        # counted; one packing per cap understates the scatter, so fewer than 10 or one per cap says why
        replicates = found.get("replicates", 1)
        members = None if not bounded else fitted(
            f, estimate="slope k", unit=f"distinct packings of the sweep ({replicates} per cap)",
            fewer=None if f["n"] >= MIN_MEMBERS and replicates > 1 else
            f"the sweep has {f['n']} distinct packings, {replicates} per cap") | {"against": 0.0}
        rows.append(row(trend, "sec. 5.1 (825 vs 561)", "iterations grow as the kinetic energy grows",
                        [f["slope"], 0.0] if bounded else None,
                        {"rule": "holds", "op": ">", "finding": "poorly settled needs more APGD iterations"},
                        members=members,
                        criterion=f"the {100 * f['level']:g} % interval of the slope of log(APGD iterations to "
                                  f"{found['threshold']}) against log(kinetic energy) above 0 (undecided when it "
                                  "contains 0), over the 320 spheres settled with every per-step cap of the sweep",
                        differences=f"read from docs/results/settledness.md (`{found['provenance']['command']}`, "
                                    f"{found['provenance']['date']}, commit {found['provenance']['commit']}), not "
                                    "recomputed here; a slope is free of the common mass",
                        missing="fewer than three packings in the sweep"))
    rows.append(large_row(data["floor"], data.get("large") if calibrated else data.get("large_uncalibrated")))
    settle = over_members([x["settle_max_iterations"] for x in s["members"]], fewer=fewer)
    rows.append(row("settling steps at the 10,000-iteration cap, thoroughly settled", "Table 1; sec. 5.1",
                    "up to 10,000 iterations per step", [settle["median"], 10_000], UP_TO, members=settle,
                    shown=_beside(s, lambda x: x["settle_max_iterations"])
                    + " (the largest iterations of one settling step)",
                    criterion="the largest APGD iterations of one settling step of each member, against the cap",
                    differences=f"{size['settled']}: tol 1e-6 per step, warm-started from the previous step's impulses "
                                "(the paper gives neither)", obstacle=s["gap"]))
    large = data.get("large") if calibrated else data.get("large_uncalibrated")
    if data.get("large") is not None and large is not None:
        rows.append(row(f"settling steps reach the 10,000-iteration cap, {LARGE_N:,} spheres in the fitted container",
                        "sec. 5.2 on Fig. 6", "10,000 iterations not enough for the larger problems",
                        [large["settle_max_iterations"], 10_000],
                        {"rule": "holds", "op": ">=", "finding": "the settling solver reaches its cap"},
                        members=over_members([large["settle_max_iterations"]], fewer=SINGLE["large"]) | {"against": 10_000},
                        paper_shown="'for larger problems ... during the settling process 10000 iterations are not enough "
                                    "to allow the problem to converge' (sec. 5.2)",
                        shown=f"{large['settle_max_iterations']:,} vs 10,000 ({large['steps_at_cap']:,} steps at the "
                              f"cap over {large['steps_done']:,} steps"
                              + ("" if large["finished"] else ", the packing unfinished") + ")",
                        criterion="the largest APGD iterations of one settling step >= 10,000",
                        differences=f"the scaling recipe (tol 1e-6, warm-started) on the {large['width']:.6g} m floor "
                                    f"fitted at 64 spheres: a column of about {LARGE_N // 64} sphere layers"))
    committed = f"(largest {fmt(data['committed_settle_max'])} iterations there)"
    rows.append(explanation_row(f"settling tolerance {TIGHT_TOL:g}", data.get("tight"),
                                "the 320 spheres of settled-00320 settled again (h = 0.0005 s, 8,000 steps, "
                                f"warm-started) with each step solved to {TIGHT_TOL:g} instead of 1e-6 {committed}",
                                "--tight"))
    rows.append(explanation_row("no warm start", data.get("cold"),
                                "the 320 spheres of settled-00320 settled again (h = 0.0005 s, 8,000 steps, tol 1e-6) "
                                f"with every step's APGD started from zero impulses instead of the previous step's "
                                f"{committed}", "--cold"))
    return rows


# --------------------------------------------------------------------------- the page

def _fit_table(data: dict) -> list[str]:
    """The fitted parameters with their targets and residuals."""
    mass, floor = data["mass"], data["floor"]
    lines = ["| parameter | fitted on (Mazhar et al. 2014) | fitted value | measured at the fitted value | residual |",
             "|---|---|---|---|---|"]
    c = mass["check"]
    if "families" not in data:
        lines.append(_one_packing(data)[0])
    else:
        interval = "no 95 % interval (under 6 members)" if mass["interval"] is None else \
            f"95 % interval [{mass['interval'][0]:.6g}, {mass['interval'][1]:.6g}]"
        statuses = ", ".join(sorted({f"{e['solver']} {e['status']}" for e in c["members"]}))
        lines.append(f"| common sphere mass [kg] | interior-point objective of the thoroughly settled step, "
                     f"{fmt(mass['target'])} (sec. 5.1.1), against the median over the {mass['objectives']['n']} "
                     f"members of the family | {mass['mass']:.6g} ({interval}) | median {c['objective']:.8g} over the "
                     f"members solved again ({statuses}) | {mass['residual']:.3g} (relative "
                     f"{mass['residual'] / abs(mass['target']):.2g}) |")
    f = floor["fit"]
    if f is None:
        lines.append(f"| floor width [m] | contacts at {floor['n']} spheres, {floor['target']} (sec. 5.2) | "
                     f"not fitted: {floor['reason']} | - | - |")
    else:
        by = {p["width"]: p for p in floor["packings"]}
        closest = by[f["closest"]]
        lines.append(f"| floor width [m] | contacts at {floor['n']} spheres, {floor['target']} (sec. 5.2) | "
                     f"{f['value']:.6g}, in the bracket [{f['lo']:.6g}, {f['hi']:.6g}] where the count crosses "
                     f"{floor['target']} | {by[f['value']]['contacts']} contacts; closest reached: "
                     f"{closest['contacts']} at {closest['width']:.6g} m | {f['residual']:g} contacts; closest "
                     f"{f['closest_residual']:d} |")
    return lines


def _evaluations(evaluations: list[dict], fitted: dict) -> list[str]:
    """The mass fit's interior-point solves, one table row each, the solve at the fitted mass last."""
    out = []
    for e in [*evaluations, {**fitted, "fitted": True}]:
        out.append(f"| {e['mass']:.6g}{' (fitted)' if e.get('fitted') else ''} | {e['objective']:.10g} | "
                   f"{e['solver']}, {e['status']} | {e['judged']} {fmt(e['error'])} | {e['iterations']} |")
    return out


def _invariance(data: dict, step: str, at_made: dict, at_fitted: dict) -> str:
    """APGD's iterations to each threshold on ``step`` at the packings' mass and at the fitted mass."""
    mass = data["mass"]
    return (f"APGD's iterations to each threshold of the interior-point objective on {step}, at "
            f"{fmt(mass['made_with'])} kg and at the fitted {mass['mass']:.4g} kg (at most {data['apgd_cap']:,} "
            "iterations): " + "; ".join(f"{t}: {fmt(at_made[t])} vs {fmt(at_fitted[t])}"
                                        for t in (f"{x:g}" for x in THRESHOLDS)) +
            (" — the same: the iterations do not depend on the common mass." if at_made == at_fitted else
             " — they differ: the iterations depend on the common mass through round-off or the step size."))


def _one_packing(data: dict) -> tuple[str, list[str]]:
    """The mass fit's row and paragraphs of a record of the calibration on one committed packing each (before the
    members, issue 44), rendered as it was written until its command is run again."""
    mass, tests = data["mass"], data["tests"]
    c = mass["check"]
    fit_row = (f"| common sphere mass [kg] | interior-point objective of the thoroughly settled step, "
               f"{fmt(mass['target'])} (sec. 5.1.1) | {mass['mass']:.6g} | {c['objective']:.8g} ({c['solver']}, "
               f"{c['status']}) | {mass['residual']:.3g} (relative {mass['residual'] / abs(mass['target']):.2g}) |")
    p, tol = mass["exponent"], mass["exponent_tol"]
    lines = ["", f"**Mass.** Under a uniform scaling of every mass the whole settling trajectory is the same (impulses "
             "scale with m, velocities and positions do not), so the kinetic energies and the relaxed dual's objective "
             f"scale linearly with m. Measured: the committed {tests['settled']['dataset']} step (spheres of "
             f"{fmt(mass['made_with'])} kg) solved with M and k = M v + h f (the weights) scaled, D, b, mu, h kept; "
             f"log-log slope of |objective| over the masses p = {p:.9f}, "
             f"{'within' if abs(p - 1) <= tol else 'NOT within'} {tol:g} of 1 (round-off). The fitted mass is "
             f"{fmt(mass['made_with'])} kg x (target / objective at {fmt(mass['made_with'])} kg)^(1/p); the step is "
             "solved again at it for the residual.", "",
             "| mass [kg] | interior-point objective | solver, status | judged error | iterations |",
             "|---:|---:|---|---:|---:|", *_evaluations(mass["evaluations"], c),
             "", _invariance(data, "the settled step", tests["settled"]["apgd"], tests["settled_scaled"])]
    return fit_row, lines


def _kinds(pk: dict) -> str:
    """A floor packing's contacts by kind under each envelope (:func:`contact_kinds`); '-' for a record
    made before they were counted."""
    kinds = pk.get("kinds")
    if not kinds:
        return "-"
    return "; ".join(f"{env}: {k['sphere-sphere']} + {k['floor']} + {k['wall']}" for env, k in kinds.items())


def free_choices(data: dict) -> list[str]:
    """What the fits leave to a choice (issue 44 item 5): the contact envelope of the count the floor is
    fitted on (the count at the fitted width under each envelope, by kind) and the radius, which is not
    fitted (the density the fitted mass implies at the generator's radius)."""
    from problems.generator import PackingSpec

    floor, mass = data["floor"], data["mass"]
    out = []
    f = floor["fit"]
    pk = next((p for p in floor["packings"] if f is not None and p["width"] == f["value"]), None)
    if pk is not None and pk.get("kinds"):
        each, target = [], floor["target"]
        for env, k in pk["kinds"].items():
            total = k["sphere-sphere"] + k["floor"] + k["wall"]
            off = "the target" if total == target else f"{total - target:+d} from the target"
            each.append(f"{env}: {total} ({k['sphere-sphere']} sphere-sphere, {k['floor']} floor, {k['wall']} wall), {off}")
        same = len({k["sphere-sphere"] + k["floor"] + k["wall"] for k in pk["kinds"].values()}) == 1
        out.append(f"**Free choice: contact envelope.** The paper gives none; the generator counts a contact at a gap "
                   f"up to 0.05 R (5 cm at R = 1 m), and the fit uses that count. At the fitted width {f['value']:.6g} m "
                   "the count under each envelope: " + "; ".join(each) + ". The fit "
                   + ("does not depend on the envelope." if same else "depends on the contact envelope: under another "
                      "envelope the target is met at another width (the packings' counts by kind are in the floor table)."))
    radius = PackingSpec().parameters()["radius"]
    density = mass["mass"] / (4.0 / 3.0 * math.pi * radius ** 3)
    out.append(f"**Free choice: radius.** Not fitted: the paper gives no radius, and the generator's R = {radius:g} m is "
               f"kept, so the fitted {mass['mass']:.4g} kg is a density of {density:.3g} kg/m^3. The contact counts depend "
               "on the floor width and the envelope in units of R only (the fitted width scales with R); the objective "
               "and energies are linear in the mass at a fixed R.")
    return out


def _members_table(data: dict) -> list[str]:
    """Each member of both families at its own mass, and the as-committed packing beside them where its
    arrays differ from member 0's."""
    fams, t = data["families"], f"{PAPER_THRESHOLD:g}"
    n, fewer = data["members"]["n"], data["members"]["fewer"]
    lines = [f"### Members: the sec. 5.1 protocol, {n} packings per per-step cap", "",
             f"Member r of each family is the settledness sweep's packing of its cap and replicate r "
             "(`python -m benchmarks.reproduce.settledness`, its cache shared: replicate 0 as built, r > 0 a round-off "
             "twin, its start moved by 1e-12 R; the same r starts from the same lattice under both caps). Each row "
             "below over members gives the median with the exact 95 % interval of the median (order statistics; "
             "unbounded under 6 members) and is judged on the interval; a ratio pairs member r with member r."
             + ("" if not fewer else f" Fewer than {MIN_MEMBERS} members because {fewer}."), "",
             f"| family (cap per step) | member | contacts | kinetic energy [J] at its mass | interior-point objective | "
             f"APGD iterations to {t} | largest settling iterations of one step | arrays |",
             "|---|---|---:|---:|---:|---:|---:|---|"]

    def line(kind: str, label: str, x: dict, arrays: str) -> str:
        its = x["apgd"][t]
        return (f"| {LABEL[kind]} ({fams[kind]['cap']:,}) | {label} | {x['contacts']:,} | {x['kinetic_energy']:.4g} | "
                f"{x['reference']['objective']:.8g} | {'> ' + fmt(data['apgd_cap']) if its is None else fmt(its)} | "
                f"{fmt(x['settle_max_iterations'])} | {arrays} |")
    for kind in ("settled", "unsettled"):
        fam = fams[kind]
        c = fam["committed"]
        for x in fam["members"]:
            same = "-" if c is None or x["replicate"] else f"{'the same as' if c['same'] else 'not'} {c['file']}"
            lines.append(line(kind, f"{x['replicate']} ({x['file']})", x, same))
        if c is not None and not c["same"]:
            lines.append(line(kind, f"as committed ({c['file']}, not in the sample)", c["measured"], "committed"))
    return lines


def _members_mass(data: dict) -> list[str]:
    """The mass fit over the members: the exponent on member 0, the median objective and its interval."""
    mass = data["mass"]
    p, tol, o = mass["exponent"], mass["exponent_tol"], mass["objectives"]
    first = data["families"]["settled"]["members"][0]
    objectives = "unbounded (under 6 members)" if o["low"] is None or o["high"] is None else \
        f"[{o['low']:.8g}, {o['high']:.8g}]"
    return ["", f"**Mass.** Under a uniform scaling of every mass the whole settling trajectory is the same (impulses "
            "scale with m, velocities and positions do not), so the kinetic energies and the relaxed dual's objective "
            f"scale linearly with m. Measured on one step (exact linearity: one step shows its round-off): member 0 "
            f"of the thoroughly settled family ({first['file']}, spheres of {fmt(mass['made_with'])} kg) solved with "
            "M and k = M v + h f (the weights) scaled, D, b, mu, h kept; log-log slope of |objective| over the masses "
            f"p = {p:.9f}, {'within' if abs(p - 1) <= tol else 'NOT within'} {tol:g} of 1 (round-off). The fitted "
            f"mass is {fmt(mass['made_with'])} kg x (target / median objective at {fmt(mass['made_with'])} kg)^(1/p): "
            f"the median over the {o['n']} members is {o['median']:.8g}, its 95 % interval {objectives}, and the "
            "mass's interval is that interval through the same monotone map. Every member is solved again at the "
            "fitted mass: the median of those objectives against the target is the residual.", "",
            "| mass [kg] (member 0) | interior-point objective | solver, status | judged error | iterations |",
            "|---:|---:|---|---:|---:|",
            *_evaluations(mass["evaluations"], {**mass["check"]["members"][0], "mass": mass["mass"]}),
            "", _invariance(data, "member 0 of the thoroughly settled family", mass["apgd"]["at_made"],
                            mass["apgd"]["at_fitted"])]


def render(data: dict) -> str:
    """The page (docs/results/calibration.md); a record of the calibration on one committed packing each
    (before the members) renders as it was written (:func:`_one_packing`)."""
    floor, members = data["floor"], "families" in data
    quick = " **Quick run (--quick): CI-sized, not the calibration.**" if data["quick"] else ""
    lines = ["Mazhar et al. 2014 (sec. 5.1, 5.2) give neither the spheres' mass nor the container's floor. Declared "
             "split: the common sphere mass is FITTED on the thoroughly settled interior-point objective"
             + (" (the median over the members of its protocol)" if members else "") + " and the floor width on the "
             "contact count of the smallest sec. 5.2 packing; every other number below is a TEST, untouched by the "
             "fits." + quick, "", "### Fitted parameters", ""]
    lines += _fit_table(data)
    lines += _members_mass(data) if members else _one_packing(data)[1]
    f = floor["fit"]
    kinds = any(pk.get("kinds") for pk in floor["packings"])   # a record made before the counts by kind renders as then
    over = ", ".join(f"{k} = {v:g}" for k, v in floor["overrides"].items())
    lines += ["", f"**Floor.** Each packing: the generator's `scaling` recipe (problems/generator.py, as the committed "
              f"scaling-00064) at {floor['n']} spheres with the floor width overridden{'; ' + over if over else ''}. "
              f"Bisection of the width over [{floor['bracket'][0]:g}, {floor['bracket'][1]:g}] m until the bracket "
              f"is at most {floor['resolution']:g} m wide. The count is an integer that falls as the floor widens (the "
              "starting lattice holds fewer layers), not smoothly: it may jump over the target, so the fit gives the "
              "bracket, the closest count reached and its residual.", "",
              *(["| floor width [m] | contacts | by kind, sphere-sphere + floor + wall, per envelope | kinetic energy [J] "
                 "(over sum m g R) | same arrays as the committed packing |", "|---:|---:|---|---:|---|"] if kinds else
                ["| floor width [m] | contacts | kinetic energy [J] (over sum m g R) | same arrays as the committed packing |",
                 "|---:|---:|---:|---|"])]
    for pk in floor["packings"]:
        same = {None: "-", True: "yes (scaling-00064)", False: "no"}[pk["committed_same"]]
        lines.append(f"| {pk['width']:.6g} | {pk['contacts']} |{f' {_kinds(pk)} |' if kinds else ''} "
                     f"{pk['kinetic_energy']:.3g} ({pk['energy_ratio']:.2g}) | {same} |")
    if f is not None:
        near = [p["contacts"] for p in floor["packings"] if abs(p["width"] - f["value"]) <= NEAR]
        lines += ["", f"Within {1000 * NEAR:g} mm of the fitted width the packings have {min(near)} to {max(near)} "
                  f"contacts: the fit holds to the bracket's width, not beyond it."]
    if f is not None and f["closest_residual"] != 0:
        lines += ["", f"The target {floor['target']} is not reached by the floor width alone: the count goes from "
                  f"{next(p['contacts'] for p in floor['packings'] if p['width'] == f['lo'])} at {f['lo']:.4g} m to "
                  f"{next(p['contacts'] for p in floor['packings'] if p['width'] == f['hi'])} at {f['hi']:.4g} m."]
    for text in free_choices(data) if kinds else []:
        lines += ["", text]
    lines += ["", *_members_table(data)] if members else []
    lines += ["", render_table({"title": "Tests: the paper's other numbers at the fitted parameters",
                                "setup": "Rules as docs/reproductions.md (workbench/report/reproduction.py): objectives, "
                                         f"counts and iterations of a random packing within {PACKING_TOL:.0%}, kinetic "
                                         f"energies within a factor {ENERGY_FACTOR:g}, the paper's findings as "
                                         "inequalities" + (", each judged on the 95 % interval over the members"
                                                           if members else "") + "; a row not run is not measured.",
                                "rows": data["rows"]}).rstrip("\n")]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- command

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
