"""The papers' numbers reproduced: one command per paper, each writing ONE "paper vs measured" table.

    .venv/bin/python -m benchmarks.reproduce PAPER [--quick] [--write | --results-dir DIR] [dataset options]

PAPER is one of ``anitescu-hart-2003``, ``mazhar-2014``, ``melanz-2015``, ``pqn-2017`` (the projected
quasi-Newton paper). Each measures what the paper reports, at the paper's own parameters where the
workbench can make them, and writes ``repro-PAPER`` through :func:`workbench.provenance.write_results`
(date, machine, commit, command): with ``--write`` into ``docs/results/repro-PAPER.{json,md}`` and
docs/reproductions.md, else into ``--results-dir`` or a temporary folder (the working tree stays clean). Every row holds the paper's
value with its table, figure or section, the measured value, the criterion both sides use, every
parameter that differs and why, and a verdict computed from the numbers by a declared rule
(:mod:`workbench.report.reproduction`): reproduced, not reproduced, not comparable (with the reason),
or not measured (with the reason).

Datasets are named, not assumed: ``--settled``, ``--unsettled`` and ``--scaling`` (a glob) name the
committed packings of ``problems/datasets`` that the Mazhar et al. 2014 rows use, and their generator
parameters are read from the dataset's metadata: a dataset not made at the paper's protocol (h =
0.0005 s, 8,000 steps, at most 10,000 or 10 solver iterations per step) makes its rows "not comparable",
with the rule's own outcome in the reason.

``--quick`` runs a CI-sized version (smaller scenes and caps; a few seconds to a minute; ``--write``
is refused with it): its rows say what was reduced, so a quick table is never mistaken for the paper's
comparison. Without ``--quick`` each command takes minutes.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from workbench.errors import InputError
from workbench.provenance import RESULTS_DIR, embed, write_results
from benchmarks import trajectories
from workbench.report.reproduction import fmt, render_table, row
from workbench.method import solve
from workbench.solvers import SolveOptions

#: the page that embeds the tables
DOC = RESULTS_DIR.parent / "reproductions.md"
#: the protocol of Mazhar et al. 2014 sec. 5.1 for the 320-sphere packings: h [s], steps, iteration cap per step
MAZHAR_PROTOCOL = {"h": 0.0005, "steps": 8000}
MAZHAR_CAPS = {"settled": 10_000, "unsettled": 10}
#: Mazhar et al. 2014 sec. 5.1: the thresholds (relative distance to the interior-point objective) at
#: which APGD's iterations are counted; the paper's own stop (-0.023199 vs -0.0232) is 4.3e-5
THRESHOLDS = (1e-4, 5e-5, 1e-5, 1e-6)
PAPER_THRESHOLD = 5e-5
#: tolerances of the verdict rules, with the reason each is what it is
PACKING_TOL = 0.25     # an objective or an iteration count of a random packing: the packing itself differs
ENERGY_FACTOR = 3.0    # kinetic energy after settling: a residual motion, same order of magnitude
#: Mazhar et al. 2014 sec. 5.1 and Table 1, per packing: contacts, the interior-point (MOSEK) objective and
#: iterations, APGD's iterations to that objective, the kinetic energy after settling [J, sphere mass
#: not stated], cond(N)
MAZHAR_STATIC = {"settled": {"contacts": 1049, "objective": -0.0232, "ip_iterations": 23, "apgd": 561,
                             "energy": 0.0215, "cond": 8.33e22, "where": "sec. 5.1.1"},
                 "unsettled": {"contacts": 1050, "objective": -0.5312, "ip_iterations": 21, "apgd": 825,
                               "energy": 1.5637, "cond": 4.67e23, "where": "sec. 5.1.2"}}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- Anitescu and Hart 2003

def lcp2_error(mu: float, n_bottom: int = 20) -> tuple[float, float]:
    """LCP2's normal-velocity error (max, mean) [m/s] on the first step of the cannonball
    (Anitescu and Hart 2003 Table 1), computed by the workbench from the returned impulses."""
    from benchmarks.anitescu_hart_table1 import TOL
    from problems.lcp_scenes import cannonball

    res = solve(cannonball(n_bottom, mu), "lcp-pyramid", "lcp2", SolveOptions(tol=TOL))
    return float(res.metrics["normal_velocity_error"]), float(res.metrics["mean_normal_velocity_error"])


#: the quick run's cannonball: 55 disks (10 on the plank), a few hundred pivots; the CI's machine-independence test
QUICK_CANNONBALL = 10


def lemke_outcome(n_bottom: int, mu: float, cap: int, lcp0) -> tuple[str, str, str | None]:
    """(status, shown, round-off note) of LCP0 on the cannonball: ``lcp0`` is the run with the pivot row
    divided by the pivot; the round-off probe repeats it with the row multiplied by the reciprocal
    (workbench.solvers.lemke), and where the two end differently the note says so: the outcome is
    then a property of the rounding, not of the method and the data."""
    from benchmarks.anitescu_hart_table1 import TOL, lcp0_status
    from problems.lcp_scenes import cannonball

    status = lcp0_status(lcp0)
    probe = solve(cannonball(n_bottom, mu), "lcp-pyramid", "lemke",
                  SolveOptions(tol=TOL, max_iter=cap, params={"pivot_divide": False}))
    probe_status = lcp0_status(probe)
    shown = (f"{status} after {lcp0.iterations:,} pivots (pivot sequence {lcp0.info['pivot_hash']}), "
             f"{lcp0.solve_seconds:.1f} s"
             + (f", LCP residual {lcp0.metrics['lcp_residual']:.0e}" if status == "solved" else "")
             + f"; round-off probe: {probe_status} after {probe.iterations:,} pivots")
    same = probe_status == status
    note = None if same else (f"the same pivoting with the pivot row rounded otherwise (times 1 / pivot) ends "
                              f"{probe_status} after {probe.iterations:,} pivots")
    return status, shown, note


def anitescu_hart(args) -> dict:
    from benchmarks.anitescu_hart_table1 import MAX_PIVOTS, PAPER, TOL, lcp0_status, run
    from problems.lcp_scenes import cannonball

    n_bottom, mus = (QUICK_CANNONBALL, [0.1, 0.8]) if args.quick else (20, sorted(PAPER))
    cap = 2_000 if args.quick else MAX_PIVOTS
    reduced = (f"quick run: {n_bottom * (n_bottom + 1) // 2} disks ({n_bottom} on the plank), cap {cap:,} pivots"
               if args.quick else None)
    rows = []
    measured = run(n_bottom, mus, cap, "clarabel", lcp1=False)
    for r in measured:
        mu, lcp0, lcp2 = r["mu"], r["lcp0"], r["lcp2"]
        paper_cpu, paper_lcp2_cpu, paper_err = PAPER[mu]
        status, shown, roundoff = lemke_outcome(n_bottom, mu, cap, lcp0)
        solved = status == "solved"
        paper_status = "MAX ITER" if paper_cpu is None else "solved"
        if status == "MAX ITER" and paper_status == "solved" and not args.quick:
            _say(f"mu = {mu}: Lemke again with the cap at {args.extra_cap:,} pivots")
            more = solve(cannonball(n_bottom, mu), "lcp-pyramid", "lemke", SolveOptions(tol=TOL, max_iter=args.extra_cap))
            shown += ("; with the cap at {:,}: ".format(args.extra_cap)
                      + f"{lcp0_status(more)} after {more.iterations:,} pivots ({more.solve_seconds:.1f} s)")
        where = "Table 1"
        diff = ("Lemke's method of the workbench (complementary pivoting, lexicographic ratio test) for PATH's "
                "Lemke: no PATH licence here; pivot sequences of two implementations differ")
        rows.append(row(f"LCP0 (Lemke) outcome, mu = {mu:g}", where, paper_status, status, {"rule": "same"},
                        criterion=f"solved within {cap:,} pivots (the paper's MAX ITER is PATH's 10,000); "
                                  "solved: a complementary basis whose solution, recomputed, satisfies the LCP",
                        differences=diff, shown=shown, obstacle=reduced, roundoff=roundoff))
        rows.append(row(f"LCP0 CPU time [s], mu = {mu:g}", where, paper_cpu if paper_cpu is not None else "MAX ITER",
                        round(lcp0.solve_seconds, 2) if solved else None,
                        {"rule": "not_comparable",
                         "reason": "Matlab + PATH on a 2000-era machine against compiled Python now: only the pattern compares"},
                        criterion="CPU seconds of the solve", differences=diff,
                        shown=None if solved else f"{status} ({lcp0.solve_seconds:.1f} s)"))
        err_max, err_mean = (float(lcp2.metrics["normal_velocity_error"]),
                             float(lcp2.metrics["mean_normal_velocity_error"]))
        rule = {"rule": "factor", "factor": 3.0} if paper_err > 1e-6 else {"rule": "below", "threshold": 1e-6}
        rows.append(row(f"LCP2 residual error [m/s], mu = {mu:g}", where, paper_err, err_max, rule,
                        criterion="normal velocity error mu lambda at the contacts with c_n > 0 (the paper's); "
                                  "the paper does not say max or mean: max compared, mean shown",
                        differences="one QP (15) solved by Clarabel (PATH in the paper) to 1e-8",
                        shown=f"max {err_max:.2g} (mean {err_mean:.2g})", obstacle=reduced))
        rows.append(row(f"LCP2 CPU time [s], mu = {mu:g}", where, paper_lcp2_cpu, round(lcp2.solve_seconds, 3),
                        {"rule": "not_comparable", "reason": "other machine, language and QP solver"},
                        criterion="CPU seconds of the QP solve (its cvxpy compile apart)",
                        differences="Clarabel for PATH"))
    return {"title": "Anitescu and Hart 2003, Table 1: LCP0 (Lemke) against LCP2 (one QP) on the cannonball",
            "setup": (f"First step of the {n_bottom * (n_bottom + 1) // 2}-disk cannonball ({n_bottom} disks of "
                      "diameter 3 on a fixed plank, h = 0.05 s, zero initial velocity; "
                      "problems.lcp_scenes.cannonball), lcp-pyramid formulation (2D, m_C = 2), "
                      f"LCP of {measured[0]['n']:,} unknowns; Lemke capped at {cap:,} pivots, the paper's MAX ITER. "
                      "Lemke's pivoting involves no BLAS (workbench.solvers.lemke): its pivot sequence, named by "
                      "a hash, is the same for every BLAS thread count and kernel (tests/test_reproduction.py). "
                      "Rules: LCP0 outcome must be the same, and is not reproduced (depends on round-off) where "
                      "the round-off probe (the pivot row rounded otherwise) ends differently; LCP2's error must be within a factor 3 of the paper's "
                      "where the paper's is above 1e-6 and below 1e-6 where the paper's is."),
            "rows": rows}


# --------------------------------------------------------------------------- Mazhar et al. 2014

def dataset_meta(name: str) -> dict:
    """The metadata of the dataset ``name`` (problems/datasets/NAME.npz, its generator parameters and
    settling record), with ``file`` its file name."""
    from workbench.io import load_problem
    from workbench.sources import dataset_dir

    path = dataset_dir() / f"{name}.npz"
    if not path.exists():
        raise InputError(f"dataset {name!r}: no {path.name} in {dataset_dir()} (make it with workbench generate)")
    return {**load_problem(path).metadata, "file": path.name}


def unstated(meta: dict) -> str:
    """What Mazhar et al. 2014 leave unstated, as the dataset's generator chose it (its metadata)."""
    g = meta.get("generator", {})
    return (f"the generator's choices are R = {fmt(g.get('radius'))} m, {fmt(g.get('mass'))} kg, mu = {fmt(g.get('mu'))}, "
            f"a {fmt(g.get('width'))} m square container, tol {fmt(g.get('tol'))} and a {fmt(g.get('envelope'))} m "
            "contact envelope")


def protocol_gap(meta: dict, cap: int | None, series: bool = False) -> str | None:
    """What of the dataset's generator differs from Mazhar et al. 2014's protocol of sec. 5.1 (None:
    nothing). ``series``: a sec. 5.2 packing, for which the paper states neither step nor duration (only
    "settled" and the 10,000-iteration cap): the sec. 5.1 values are then named as what they are."""
    g = meta.get("generator", {})
    paper = "sec. 5.2 gives none; sec. 5.1 used" if series else "paper"
    gaps = []
    if not math.isclose(float(g.get("h", math.nan)), MAZHAR_PROTOCOL["h"], rel_tol=1e-9):
        gaps.append(f"h = {g.get('h')} s ({paper} {MAZHAR_PROTOCOL['h']} s)")
    steps = meta.get("settling", {}).get("steps", g.get("steps"))
    if steps != MAZHAR_PROTOCOL["steps"]:
        gaps.append(f"{fmt(steps)} steps ({paper} {MAZHAR_PROTOCOL['steps']:,})")
    if cap is not None and g.get("max_iter") != cap:
        gaps.append(f"at most {fmt(g.get('max_iter'))} iterations per step (paper {cap:,})")
    return None if not gaps else f"dataset {meta.get('file', '?')} not at the paper's protocol: " + ", ".join(gaps)


def _interior_point() -> str:
    from workbench.solvers import get_solver
    return "mosek" if get_solver("mosek").availability()[0] else "clarabel"


def interior_point_solve(problem):
    """The relaxed dual solved by the interior-point method (MOSEK where licensed, else Clarabel) to
    1e-10: the reference objective of Mazhar et al. 2014 sec. 5.1."""
    return solve(problem, "dual", _interior_point(), SolveOptions(tol=1e-10))


def interior_point_objective(dataset: str) -> float:
    """The sec. 5.1 reference objective of the committed dataset ``dataset``."""
    from workbench import sources

    return float(interior_point_solve(sources.load(f"dataset:{dataset}")).objective)


def apgd_to_target(problem, target: float, max_iter: int) -> dict[float, tuple[int, float] | None]:
    """Per threshold of THRESHOLDS, the first APGD iteration whose dual objective is within it (relative)
    of ``target`` and its seconds from the start of the solve (with the recording of the history), as
    (iteration, seconds); None: not within ``max_iter`` iterations. APGD runs to tol 1e-14, so only the
    cap stops it."""
    from workbench.analysis.stats import first_within

    res = solve(problem, "dual", "apgd", SolveOptions(tol=1e-14, max_iter=max_iter, keep_history=True))
    h = res.history.drop_duplicates("iteration", keep="last")
    out = {}
    for t in THRESHOLDS:
        hit = first_within(h["iteration"], h["objective"], target, t)
        out[t] = None if math.isnan(hit) else (int(hit), first_within(h["seconds"], h["objective"], target, t))
    return out


def mazhar_static(args, rows: list, notes: list) -> None:
    """Sec. 5.1: the settled and poorly settled packings."""
    from workbench import sources

    ip = _interior_point()
    paper = MAZHAR_STATIC
    label = {"settled": "thoroughly settled", "unsettled": "poorly settled"}
    cap = 2_000 if args.quick else args.apgd_cap
    measured: dict[str, dict] = {}
    for kind, name in (("settled", args.settled), ("unsettled", args.unsettled)):
        meta = dataset_meta(name)
        gap = protocol_gap(meta, MAZHAR_CAPS[kind])
        problem = sources.load(f"dataset:{name}")
        _say(f"{name}: {ip} to 1e-10, APGD up to {cap:,} iterations")
        ref = interior_point_solve(problem)
        iters = {t: None if hit is None else hit[0]
                 for t, hit in apgd_to_target(problem, float(ref.objective), cap).items()}
        measured[kind] = {"gap": gap, "iters": iters, "meta": meta}
        p, where = paper[kind], paper[kind]["where"]
        gen = meta.get("generator", {})
        made = (f"{name}: {fmt(meta.get('n_bodies'))} spheres, h = {gen.get('h')} s, "
                f"{fmt(meta.get('settling', {}).get('steps', gen.get('steps')))} steps, cap {fmt(gen.get('max_iter'))}")
        rows.append(row(f"contacts, {label[kind]}", where, p["contacts"], int(problem.n_contacts),
                        {"rule": "not_comparable", "reason": f"contact envelope and container not given: {unstated(meta)}; "
                                                             "the count of a packing depends on both"},
                        criterion="contacts of the stored step", differences=made))
        rows.append(row(f"kinetic energy after settling [J], {label[kind]}", "Table 1", p["energy"],
                        meta.get("kinetic_energy"),
                        {"rule": "not_comparable", "reason": f"sphere mass not given: {unstated(meta)}; the kinetic energy "
                                                             "scales linearly with the common mass (the mass-free "
                                                             "ratio of the two packings is compared below)"},
                        criterion="kinetic energy of the spheres at the stored step", differences=made))
        cond = meta.get("condition", {})
        rows.append(row(f"cond(N), {label[kind]}", "Table 1", p["cond"], cond.get("cond_estimate"),
                        {"rule": "not_comparable",
                         "reason": "N = D^T M^-1 D is singular (more contact directions than degrees of freedom): its "
                                   "condition number is infinite, and any finite value is rounding noise"},
                        criterion="condition number of N", differences=made,
                        shown=(f"singular (rank {fmt(cond.get('rank'))}); on its range {fmt(cond.get('cond_on_range'))}"
                               if cond.get("singular") else None)))
        rows.append(row(f"interior-point objective (relaxed dual), {label[kind]}", where, p["objective"],
                        float(ref.objective),
                        {"rule": "not_comparable", "reason": f"sphere mass not given: {unstated(meta)}; the dual objective "
                                                             "scales with the common mass"},
                        criterion="the dual objective 1/2 gamma^T N gamma + r^T gamma at the interior-point solution",
                        differences=f"{ip} to 1e-10 (MOSEK, default settings, in the paper); {made}"))
        rows[-1]["dataset"] = name  # the re-run test (tests/test_reproduction.py) solves it again
        rows.append(row(f"interior-point iterations, {label[kind]}", where, p["ip_iterations"], ref.iterations,
                        {"rule": "within", "rel_tol": PACKING_TOL} if ip == "mosek" else
                        {"rule": "not_comparable", "reason": "Clarabel's iterations are not MOSEK's (MOSEK has no "
                                                             "licence here)"},
                        criterion="iterations of the interior-point solver", differences=f"{ip} for MOSEK; {made}",
                        obstacle=gap))
        n = iters[PAPER_THRESHOLD]
        rows.append(row(f"APGD iterations to the interior-point objective, {label[kind]}", where, p["apgd"], n,
                        {"rule": "within", "rel_tol": PACKING_TOL},
                        criterion=f"first iteration with |f - f_IP| <= {PAPER_THRESHOLD:g} |f_IP| (the paper stops at "
                                  "-0.023199 vs -0.0232, 4.3e-5, and -0.53119 vs -0.5312, 1.9e-5)",
                        differences=f"reference objective from {ip} to 1e-10; {made}", obstacle=gap,
                        missing=f"not within {cap:,} iterations"))
    s, u = measured["settled"], measured["unsettled"]
    gap = "; ".join(g for g in (s["gap"], u["gap"]) if g) or None
    e_s, e_u = s["meta"].get("kinetic_energy"), u["meta"].get("kinetic_energy")
    ratio = e_u / e_s if e_s and e_u is not None else None
    paper_ratio = paper["unsettled"]["energy"] / paper["settled"]["energy"]
    rows.append(row("kinetic energy ratio, poorly / thoroughly settled (mass-free)", "Table 1", round(paper_ratio, 1),
                    ratio, {"rule": "factor", "factor": ENERGY_FACTOR},
                    paper_shown=f"{paper_ratio:.0f} (1.5637 J / 0.0215 J)",
                    criterion="ratio of the kinetic energies at the stored steps: free of the common sphere mass",
                    differences=f"{args.unsettled} / {args.settled}", obstacle=gap,
                    missing="a kinetic energy missing from the datasets' metadata"))
    rows.append(_settledness_trend_row())
    for t in THRESHOLDS:
        ns, nu = s["iters"][t], u["iters"][t]
        pair = None if ns is None and nu is None else [cap + 1 if nu is None else nu, cap + 1 if ns is None else ns]
        shown = " vs ".join(f"> {cap:,} (not reached)" if x is None else f"{x:,}" for x in (nu, ns))
        rows.append(row(f"poorly settled is harder for APGD, one pair, threshold {t:g}", "sec. 5.1 (825 vs 561)",
                        "unsettled iterations > settled iterations", pair,
                        {"rule": "not_comparable", "reason": "one pair of packings decides nothing: the finding is "
                         "judged on the settledness sweep's trend (the row 'poorly settled is harder for APGD, "
                         "trend')"},
                        criterion=f"APGD iterations to within {t:g} (relative) of the interior-point objective, "
                                  "poorly vs thoroughly settled",
                        differences="the paper reports one threshold only (its stop, about 4e-5)", shown=shown,
                        missing=f"neither reached within {cap:,} iterations"))
    notes.append(f"Sec. 5.1 APGD runs: at most {cap:,} iterations (tol 1e-14, so only the cap stops them); the "
                 f"interior-point reference is {ip} to 1e-10 on the same problem.")


def _settledness_trend_row() -> dict:
    """"Poorly settled is harder for APGD" judged on a curve: the slope of log(APGD iterations) against
    log(kinetic energy) over the packings of the settledness sweep (docs/results/settledness.json, written by
    ``python -m benchmarks.settledness --write``), at the paper's stop; it holds when the slope's confidence
    interval lies above 0."""
    finding = "poorly settled is harder for APGD, trend"
    s, u = MAZHAR_STATIC["settled"], MAZHAR_STATIC["unsettled"]
    where = (f"sec. 5.1 ({u['apgd']} vs {s['apgd']} iterations at {u['energy']:g} vs {s['energy']:g} J: a slope of "
             f"{math.log(u['apgd'] / s['apgd']) / math.log(u['energy'] / s['energy']):.3f} through the two points)")
    criterion = ("slope k of log(APGD iterations to the interior-point objective) against log(kinetic energy) over "
                 "the settledness sweep's packings, its lower confidence bound above 0 (read from "
                 "docs/results/settledness.json)")
    record = RESULTS_DIR / "settledness.json"
    if not record.is_file():
        return row(finding, where, "slope > 0", None, {"rule": "holds", "op": ">", "finding": "a positive slope"},
                   criterion=criterion, missing="no settledness sweep: python -m benchmarks.settledness --write")
    data = json.loads(record.read_text(encoding="utf-8"))["data"]
    fit = data["fits"]["iterations"]["kinetic_energy"][data["paper_threshold"]]
    measured = None if fit["low"] is None else [fit["low"], 0.0]
    shown = (f"k = {fmt(fit['slope'])}, {100 * fit['level']:g} % interval [{fmt(fit['low'])}, {fmt(fit['high'])}] "
             f"over {fit['n']} packings (caps {', '.join(f'{c:,}' for c in data['caps'])}), threshold "
             f"{data['paper_threshold']}")
    return row(finding, where, "slope > 0", measured, {"rule": "holds", "op": ">", "finding": "the interval above 0"},
               criterion=criterion, shown=shown, differences="the sweep's packings: 320 spheres settled with each "
               "per-step cap, the generator's parameters (docs/results/settledness.md)",
               missing="fewer than three packings in the sweep")


def _scaling_names(pattern: str, quick: bool) -> list[str]:
    from workbench.sources import dataset_dir

    names = sorted(p.name[:-len(".npz")] for p in dataset_dir().glob("*.npz")
                   if not p.name.endswith(".state.npz") and fnmatch.fnmatch(p.name[:-len(".npz")], pattern))
    return names[:3] if quick else names


def mazhar_scaling(args, rows: list, notes: list) -> None:
    """Sec. 5.2, Fig. 5: time to converge against size; APGD against the interior-point method."""
    from workbench import sources
    from workbench.analysis.stats import loglog_slope

    names = _scaling_names(args.scaling, args.quick)
    ip = _interior_point()
    table = []
    for name in names:
        meta = dataset_meta(name)
        problem = sources.load(f"dataset:{name}")
        _say(f"{name}: {problem.n_contacts} contacts")
        a = solve(problem, "dual", ip, SolveOptions(tol=args.scaling_tol))
        b = solve(problem, "dual", "apgd", SolveOptions(tol=args.scaling_tol, max_iter=args.apgd_cap))
        table.append({"name": name, "spheres": meta.get("n_bodies"), "contacts": int(problem.n_contacts),
                      "ip": a.solve_seconds if a.status == "solved" else None, "ip_status": a.status,
                      "apgd": b.solve_seconds if b.status == "solved" else None, "apgd_status": b.status, "meta": meta,
                      "gap": protocol_gap(meta, 10_000, series=True)})
    gaps = sorted({t["gap"].split(": ", 1)[1] for t in table if t["gap"]})
    gap = ("scaling datasets not at the paper's protocol: " + "; ".join(gaps)) if gaps else None
    sizes = [t["spheres"] for t in table]
    expected = list(range(64, 2561, 64))
    rows.append(row("number of packings in the series", "sec. 5.2", len(expected), len(table), {"rule": "same"},
                    criterion="settled packings of 64 ... 2,560 spheres in steps of 64",
                    differences=f"sizes measured: {', '.join(fmt(s) for s in sizes)}",
                    obstacle="quick run: the 3 smallest packings only" if args.quick else None,
                    missing="no scaling dataset"))
    by_size = {t["spheres"]: t for t in table}
    for n, contacts in ((64, 77), (2560, 9228)):
        t = by_size.get(n)
        # the step size does not set a settled packing's contacts: no protocol obstacle here, but the floor does
        rows.append(row(f"contacts, {n:,} spheres", "sec. 5.2", contacts, t["contacts"] if t else None,
                        {"rule": "not_comparable",
                         "reason": f"container floor not given: {unstated(t['meta'] if t else {})}; 77 contacts for 64 spheres means "
                                   "nearly one layer on a wide floor, and the count depends on the layers"},
                        criterion="contacts of the stored step",
                        differences="random packing of the workbench's generator", missing=f"no dataset of {n:,} spheres"))
    ok = [t for t in table if t["ip"] is not None and t["apgd"] is not None]
    k_ip = loglog_slope([t["contacts"] for t in ok], [t["ip"] for t in ok])
    k_apgd = loglog_slope([t["contacts"] for t in ok], [t["apgd"] for t in ok])
    slopes = f"fitted time ~ contacts^k over {len(ok)} packings: {ip} k = {k_ip:.2f}, APGD k = {k_apgd:.2f}"
    rows.append(row("wall time to converge against size", "Fig. 5", "plotted only", None,
                    {"rule": "not_comparable", "reason": "the paper gives the times as a plot without numbers, "
                                                         "on a 4-thread i7 with GAMS"},
                    criterion=f"solve seconds to the workbench's relaxed error <= {args.scaling_tol:g}",
                    differences=f"{ip} for MOSEK", shown=slopes))
    diff = (abs(k_apgd - k_ip) if math.isfinite(k_ip) and math.isfinite(k_apgd) else None)
    rows.append(row("APGD and the interior-point method scale alike", "sec. 6.1 (Fig. 5)",
                    "similar scaling", None if diff is None else [diff, 0.3],
                    {"rule": "holds", "op": "<=", "finding": "fitted log-log slopes differ by at most 0.3"},
                    criterion=f"|k_APGD - k_IP| of the time slopes ({slopes})",
                    differences=f"{ip} for MOSEK", obstacle=gap, missing="fewer than two packings solved by both"))
    # rows not run are "not measured", with why (a row not run is never "not comparable")
    rows.append(row("PATH solves only the first six packings in 3,600 s", "sec. 5.2", 6, None,
                    {"rule": "same"}, paper_shown="6 packings", criterion="packings solved within 3,600 s",
                    differences="no PATH", missing="not run: PATH (GAMS) is not available to the workbench"))
    rows.append(row("primal objective of the input vs the converged solution", "Fig. 6", "plotted only", None,
                    {"rule": "holds", "op": ">", "finding": "the input's objective above the converged one"},
                    criterion="primal objective", differences="-",
                    missing="not run: the datasets do not store the settling solver's last impulses, so the "
                            "input's objective is not available (and the figure has no numbers)"))
    notes.append("Sec. 5.2 per packing (solve seconds; '-' not solved): " + "; ".join(
        f"{t['spheres']} spheres / {t['contacts']} contacts: {ip} {fmt(t['ip']) if t['ip'] else t['ip_status']}, "
        f"APGD {fmt(t['apgd']) if t['apgd'] else t['apgd_status']}" for t in table) + ".")


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


def mazhar_dynamics(args, rows: list, notes: list) -> None:
    """Secs. 5.3-5.5: ball and boxes on planes, relaxed (dual) against the dual fixed point."""
    from problems.dynamic_scenes import ball_on_plane, box_incline_to_rest, box_on_incline, box_on_plane, rolling_time
    from problems.rigid import GRAVITY

    exact, relaxed = ("dual-fixed-point", "clarabel"), ("dual", "clarabel")
    # 5.3.1 ball: slides, then rolls at 5 v0 / 7 from t_roll = 2 v0 / (7 mu g)
    sc = ball_on_plane()
    fp = simulate(sc, *exact)
    rel = simulate(ball_on_plane(), *relaxed)
    t_roll = rolling_time(2.0, 0.2)
    t_fp = first_time(fp["t"], np.abs(fp["v_slope"] - fp["rolling"]) <= 1e-3 * 2.0)
    rows.append(_exact_row("time to pure rolling [s], ball", "sec. 5.3.1", t_roll, t_fp, sc.h,
                           "the ball did not settle into rolling"))
    rows.append(_exact_row("rolling speed [m/s], ball", "sec. 5.3.1", 5 * 2.0 / 7, float(fp["v_slope"].iloc[-1]), sc.h,
                           "no step"))
    rows.append(_lift_off_row("ball", "sec. 5.3.1, Fig. 11", rel, "spike of vertical velocity once sliding"))
    # 5.3.2 box on plane: decelerates at mu g, stops at v0 / (mu g)
    sc = box_on_plane()
    fp = simulate(sc, *exact)
    rel = simulate(box_on_plane(), *relaxed)
    t_stop = 2.0 / (0.3 * GRAVITY)
    rows.append(_exact_row("stopping time [s], box on plane", "sec. 5.3.2", t_stop,
                           first_time(fp["t"], fp["v_slope"] <= 1e-3), sc.h, "the box did not stop"))
    rows.append(_lift_off_row("box", "sec. 5.3.2, Fig. 14", rel, "the box lifts off, falls back"))
    # 5.4 box released on a 65 degree incline: accelerates at g (sin - mu cos)
    sc = box_on_incline()
    fp = simulate(sc, *exact)
    a = np.radians(65.0)
    accel = GRAVITY * (np.sin(a) - 0.2 * np.cos(a))
    fit = float(np.polyfit(fp["t"], fp["v_slope"], 1)[0])
    rows.append(row("acceleration down the 65 degree incline [m/s^2]", "sec. 5.4", round(accel, 4), round(fit, 4),
                    {"rule": "within", "rel_tol": 1e-3}, paper_shown=f"{accel:.4g} (analytic, the paper's parameters)",
                    criterion="least-squares slope of the simulated velocity along the slope, within 0.1 %",
                    differences="the dual fixed point (Clarabel); the paper shows curves only ('slightly different "
                                "solutions')"))
    # 5.5 box sliding up... down a 25 degree incline to rest: decelerates at g (mu cos - sin)
    sc = box_incline_to_rest()
    fp = simulate(sc, *exact)
    rel = simulate(box_incline_to_rest(), *relaxed)
    a = np.radians(25.0)
    t_stop = 2.0 / (GRAVITY * (0.6 * np.cos(a) - np.sin(a)))
    rows.append(_exact_row("stopping time on the 25 degree incline [s]", "sec. 5.5", t_stop,
                           first_time(fp["t"], fp["v_slope"] <= 1e-3), sc.h, "the box did not stop"))
    rows.append(_lift_off_row("box on the incline", "sec. 5.5, Fig. 20", rel, "the box lifts off, falls back"))
    notes.append("Secs. 5.3-5.5 scenes (problems.dynamic_scenes): the ball with h = 0.0025 s (the paper's); the boxes "
                 "with h = 0.01 s (the paper gives no step for them); Clarabel to 1e-8 in every step. The paper's "
                 "values for these sections are its closed-form answers and its plots: the table compares the "
                 "simulations with the closed forms and checks the paper's qualitative findings.")


def mazhar(args) -> dict:
    rows: list = []
    notes: list = []
    mazhar_static(args, rows, notes)
    mazhar_scaling(args, rows, notes)
    mazhar_dynamics(args, rows, notes)
    return {"title": "Mazhar et al. 2014 (TR-2014-11), sec. 5: static convergence, scaling, dynamics",
            "setup": (f"Sec. 5.1 on the datasets {args.settled} and {args.unsettled}, sec. 5.2 on {args.scaling}, "
                      "secs. 5.3-5.5 on the built-in scenes; relaxed dual CCQO. Rules: absolute numbers that depend on "
                      "a parameter the paper does not give (contacts: envelope and container; energies and objectives: "
                      "the sphere mass) are not comparable, with what was not given; the mass-free energy ratio "
                      f"within a factor {ENERGY_FACTOR:g}; iteration counts of a random packing within "
                      f"{PACKING_TOL:.0%}, measured against the interior point to 1e-10; closed-form dynamics within "
                      "one step; the paper's findings as inequalities. A dataset not made at the paper's protocol "
                      "makes its rows not comparable."),
            "rows": rows, "notes": notes}


# --------------------------------------------------------------------------- Melanz et al. 2015

def _filling_stats(table, weight: float, duration: float) -> dict:
    """Per-run statistics of a filling simulation: complementarity error (median and max over the
    steps with contacts), mean APGD iterations, jitter (mean of the largest body speed over the last
    second), the time after which the container force stays within 5 % of the total weight."""
    touching = table[table["contacts"] > 0]
    last = table[table["t"] > duration - 1.0 + 1e-9]
    settle = first_time(table["t"], np.abs(table["fixed_force"] / weight - 1.0) <= 0.05)
    return {"compl_median": float(touching["complementarity"].median()),
            "compl_max": float(touching["complementarity"].max()),
            "iterations": float(touching["iterations"].mean()), "contacts": float(touching["contacts"].mean()),
            "jitter": float(last["max_speed"].mean()), "force_end": float(last["fixed_force"].mean()),
            "settle": settle}


#: a trend is judged over at least this many sizes (Melanz et al. 2015 sec. 3.4 goes from 10 to 16,000 spheres)
TREND_SIZES = 5


def loglog_trend(x, y) -> tuple[float, float]:
    """(k, its standard error) of the least-squares fit log y = k log x + c
    (:func:`workbench.analysis.stats.loglog_fit`: residual variance on n - 2 degrees of freedom, whatever
    numpy's polyfit scales its covariance by); NaNs with fewer than TREND_SIZES positive points."""
    from workbench.analysis.stats import loglog_fit

    fit = loglog_fit(x, y)
    if fit["n"] < TREND_SIZES:
        return math.nan, math.nan
    return float(fit["slope"]), float(fit["se"])


def _trend_row(quantity: str, source: str, finding: str, contacts, values, what: str, differences: str,
               shown: str) -> dict:
    """A finding "grows with the collisions" judged as a trend: the log-log slope of ``values`` against the
    mean contacts over at least TREND_SIZES sizes, reproduced when k - 2 SE(k) > 0 (positive beyond its
    uncertainty), not one inequality between two sizes."""
    k, se = loglog_trend(contacts, values)
    pair = None if math.isnan(k) else [k - 2 * se, 0.0]
    return row(quantity, source, finding, pair, {"rule": "holds", "op": ">", "finding": "slope k - 2 SE(k) > 0"},
               criterion=f"log-log slope k of {what} against the mean contacts, over {len(values)} sizes: k - 2 SE > 0",
               differences=differences, shown=(f"k = {k:.2f} +- {se:.2f} (SE); " if not math.isnan(k) else "") + shown,
               missing=f"fewer than {TREND_SIZES} sizes with positive values: no trend")


#: the trajectories every simulated row is measured on (full, --quick; benchmarks.trajectories)
TRAJECTORIES, TRAJECTORIES_QUICK = 3, 2


def _trajectories(args) -> int:
    """How many trajectories this run measures each simulated row on."""
    return TRAJECTORIES_QUICK if args.quick else TRAJECTORIES

#: sec. 3.3: the settled spheres the slab compacts (a committed packing: the thoroughly settled one of Mazhar et
#: al. 2014 sec. 5.1.1), the seconds simulated (the paper's), why the bed is not the paper's size; the quick run's bed
COMPACTION_BED = "settled-00320"
COMPACTION_DURATION = 4.0
COMPACTION_WHY = ("1,024 spheres (the settled packing nearest 1,000, scaling-01024) for 4 s at h = 0.001 s take far "
                  "more than this command's minutes on two cores: anti-relaxed APGD needs hundreds to thousands of "
                  "iterations per step once the heavy slab rests on the bed")
QUICK_BED = "scaling-00064"


def _compaction(args, relaxed: tuple[str, str], anti: tuple[str, str]) -> list[dict]:
    """Sec. 3.3: the slab of problems.dynamic_scenes.compaction on the settled spheres of a committed packing,
    relaxed and anti-relaxed (the rows: benchmarks.compaction)."""
    from benchmarks import compaction
    from problems.dynamic_scenes import compaction as scene
    from problems.generator import read_manifest

    bed, duration = (QUICK_BED, 0.3) if args.quick else (args.compaction_bed, args.compaction_duration)
    g = read_manifest().get(f"{bed}.npz", {}).get("generator", {})
    n = scene(bed=bed).world.bodies.n - 1  # an unknown bed is an InputError here, before any run
    slab = compaction.PAPER["slab_mass"] * n / compaction.PAPER["spheres"]
    count = _trajectories(args)
    stats = []
    for k in range(count):
        stats.append({})
        for name, (form, slv) in (("relaxed", relaxed), ("anti-relaxed", anti)):
            sc = scene(bed=bed, slab_mass=slab, duration=duration)
            trajectories.perturb(sc.world, k)
            start = sc.observe()["height"]
            stats[k][name] = compaction.run_stats(simulate(sc, form, slv, tol=args.filling_tol, max_iter=10_000),
                                                  sc.weight, start)
    width = sc.world.bodies.size[-1, 0] * 2
    size = compaction.run_size(n, slab, duration, "quick run" if args.quick else COMPACTION_WHY)
    differences = (f"bed: {bed} at rest ({n:,} spheres R = {fmt(g.get('radius'))} m, {fmt(g.get('mass'))} kg, mu = "
                   f"{fmt(g.get('mu'))}, settled {fmt(g.get('duration'))} s at h = {fmt(g.get('h'))} s by "
                   f"{g.get('formulation')} x {g.get('solver')} in a {fmt(g.get('width'))} m square container); slab "
                   f"{width:.4g} x {width:.4g} x 1 m, mu = 0.25, at rest on the highest sphere (container, slab size "
                   f"and start not given: the workbench's choices); h = {sc.h:g} s as in the paper; APGD tolerance "
                   f"{args.filling_tol:g} on the workbench's error (the paper's tau = 1e-5 'g cm s^-1' has units the "
                   f"workbench cannot map); {size}; {trajectories.described(count)}")
    return trajectories.roundoff([compaction.rows(s["relaxed"], s["anti-relaxed"], differences) for s in stats])


def _filling_rows(args, relaxed: tuple[str, str], anti: tuple[str, str], k: int) -> list[dict]:
    """Sec. 3.2, the filling test over time, on trajectory ``k`` (benchmarks.trajectories)."""
    from problems.dynamic_scenes import filling

    out: list[dict] = []
    n, duration = (60, 1.0) if args.quick else (args.filling_n, 5.0)
    reduced = None if (n, duration) == (1000, 5.0) else f"{n} spheres for {duration:g} s (paper 1,000 for 5 s)"
    stats = {}
    for name, (form, slv) in (("relaxed", relaxed), ("anti-relaxed", anti)):
        sc = filling(n=n, duration=duration)
        trajectories.perturb(sc.world, k)
        stats[name] = _filling_stats(simulate(sc, form, slv, tol=args.filling_tol, max_iter=10_000), sc.weight,
                                     duration)
    weight = float(filling(n=n, duration=duration).weight)
    R, A = stats["relaxed"], stats["anti-relaxed"]
    diff = (f"solver tolerance {args.filling_tol:g} on the workbench's error (the paper's tau = 1e-5 'g cm s^-1' has "
            "units the workbench cannot map); APGD as in the paper" + (f"; {reduced}" if reduced else "")
            + f"; {trajectories.described(_trajectories(args))}")
    crit = "steps with contacts, complementarity error of eq. 8 (max_i |gamma_n,i u_n,i|)"
    out.append(row("anti-relaxed complementarity error several orders lower", "sec. 3.2, Fig. 8b",
                    "anti-relaxed several orders of magnitude below relaxed", [R["compl_median"], A["compl_median"]],
                    {"rule": "holds", "op": ">=", "factor": 100.0, "finding": "at least two orders of magnitude"},
                    criterion=f"median over the {crit}: relaxed >= 100 x anti-relaxed", differences=diff,
                    shown=f"relaxed {R['compl_median']:.2g} vs anti-relaxed {A['compl_median']:.2g} "
                          f"(max {R['compl_max']:.2g} vs {A['compl_max']:.2g})"))
    out.append(row("less jitter in the settled configuration", "sec. 3.2 and sec. 4",
                    "anti-relaxed jitters less", [R["jitter"], A["jitter"]],
                    {"rule": "holds", "op": ">", "finding": "relaxed jitter > anti-relaxed jitter"},
                    criterion="mean over the last second of the largest body speed [m/s]", differences=diff))
    settle = (None if R["settle"] is None or A["settle"] is None else [R["settle"], A["settle"]])
    out.append(row("anti-relaxed settles sooner", "sec. 3.2, Fig. 8a", "anti-relaxed settles much sooner", settle,
                    {"rule": "holds", "op": ">", "finding": "relaxed settling time > anti-relaxed"},
                    criterion="time after which the force on the container stays within 5 % of the total weight [s]",
                    differences=diff, missing="a run whose container force never settled within 5 % of the weight"))
    for name, s in (("relaxed", R), ("anti-relaxed", A)):
        out.append(row(f"force on the container tends to the weight, {name}", "sec. 3.2, Fig. 8a",
                        round(weight, 2), round(s["force_end"], 2), {"rule": "within", "rel_tol": 0.05},
                        paper_shown=f"the total weight, {weight:.4g} N",
                        criterion="mean force on the container over the last second, within 5 %", differences=diff))
    return out


def _sizes_rows(args, relaxed: tuple[str, str], anti: tuple[str, str], k: int) -> list[dict]:
    """Sec. 3.4, filling tests of several sizes, on trajectory ``k`` (benchmarks.trajectories)."""
    from problems.dynamic_scenes import filling

    out: list[dict] = []
    sizes = [10, 15, 20, 30, 40] if args.quick else args.filling_sizes
    dur = 1.0 if args.quick else args.sizes_duration
    per = []
    for size in sizes:
        pair = {}
        for name, (form, slv) in (("relaxed", relaxed), ("anti-relaxed", anti)):
            sc = filling(n=size, duration=dur)
            trajectories.perturb(sc.world, k)
            pair[name] = _filling_stats(simulate(sc, form, slv, tol=args.filling_tol, max_iter=10_000), sc.weight, dur)
        per.append({"n": size, **pair})
    diff34 = (f"sizes {', '.join(map(str, sizes))} spheres for {dur:g} s each (paper 10 to 16,000 for 5 s: the larger "
              f"are beyond this command's minutes); tolerance {args.filling_tol:g}; "
              f"{trajectories.described(_trajectories(args))}")
    small = per[0]
    ratio = [p["anti-relaxed"]["iterations"] / p["relaxed"]["iterations"] for p in per]
    shown_r = "; ".join(f"{p['n']} spheres ({p['relaxed']['contacts']:.0f} contacts): anti/relaxed iterations "
                        f"{q:.2f}" for p, q in zip(per, ratio))
    out.append(row("iterations similar for small fillings", "sec. 3.4, Fig. 11b", "similar below 100 spheres",
                    [abs(math.log(ratio[0])), math.log(1.5)],
                    {"rule": "holds", "op": "<=", "finding": "anti-relaxed / relaxed mean iterations within 1.5x"},
                    criterion=f"|log(ratio)| <= log 1.5 at {small['n']} spheres (mean APGD iterations per step)",
                    differences=diff34, shown=shown_r))
    contacts = [p["relaxed"]["contacts"] for p in per]
    out.append(_trend_row("anti-relaxed increasingly costly with collisions", "sec. 3.4, Fig. 11b",
                           "the iteration ratio grows with the collisions", contacts, ratio,
                           "anti-relaxed / relaxed mean APGD iterations per step", diff34, shown_r))
    out.append(row("complementarity error several orders lower at every size", "sec. 3.4, Fig. 11a",
                    "several orders of magnitude lower",
                    [min(p["relaxed"]["compl_max"] / p["anti-relaxed"]["compl_max"] for p in per), 100.0],
                    {"rule": "holds", "op": ">=", "finding": "max error ratio >= 100 at every size"},
                    criterion="smallest over the sizes of (relaxed max error / anti-relaxed max error)",
                    differences=diff34,
                    shown="; ".join(f"{p['n']}: {p['relaxed']['compl_max']:.2g} vs {p['anti-relaxed']['compl_max']:.2g}"
                                    for p in per)))
    out.append(_trend_row("the error grows with the collisions", "sec. 3.4, Fig. 11a", "increases with collisions",
                           contacts, [p["anti-relaxed"]["compl_max"] for p in per],
                           "max complementarity error over the run, anti-relaxed", diff34,
                           "; ".join(f"{p['n']}: {p['anti-relaxed']['compl_max']:.2g}" for p in per)))
    return out


def melanz(args) -> dict:
    from problems.dynamic_scenes import ball_on_plane_2d, rolling_time
    from problems.generator import settled_packing
    from workbench import sources

    settled_packing(QUICK_BED if args.quick else args.compaction_bed)  # a bad bed: exit 2 before minutes of runs
    rows: list = []
    notes: list = []
    relaxed, anti = ("dual", "apgd"), ("anti-relaxed", "apgd")
    # 3.1: the first step of the planar ball, N and r printed in the paper (eqs. 46-47), impulses analytic
    p = sources.load("scene:rolling-ball-2d")
    N, r = p.N.toarray(), np.asarray(p.r)
    rows.append(row("N (eq. 46): diagonal", "sec. 3.1, eq. 46", [1.0, 3.5], [float(N[0, 0]), float(N[1, 1])],
                    {"rule": "same"}, paper_shown="diag(1, 3.5)", criterion="N = D^T M^-1 D of the first step",
                    differences="none (h = 0.01 s, M = diag(1, 1, 0.4))", shown=f"diag({N[0, 0]:g}, {N[1, 1]:g})"))
    rows.append(row("r (eq. 47)", "sec. 3.1, eq. 47", [-0.0981, 2.0], [round(float(x), 6) for x in r],
                    {"rule": "same"}, criterion="r = b + D^T M^-1 k of the first step (g = 9.81)",
                    differences="none"))
    for name, (form, slv) in (("anti-relaxed", anti), ("relaxed", relaxed)):
        res = solve(p, form, slv, SolveOptions(tol=1e-10, max_iter=100_000))
        g = [float(x) for x in p.contacts(res.nu).ravel()]
        err = float(np.hypot(g[0] - 0.0981, g[1] + 0.01962))
        if name == "anti-relaxed":
            rows.append(row("impulses at t = 0, anti-relaxed APGD", "sec. 3.1, Fig. 2", 0.0, round(err, 8),
                            {"rule": "below", "threshold": 1e-6},
                            paper_shown="matches gamma = [0.0981, -0.01962]",
                            criterion="distance ||gamma - gamma_analytic|| of the returned impulses [N s]",
                            differences="none", shown=f"gamma = [{g[0]:.6g}, {g[1]:.6g}], distance {err:.1g}"))
        else:
            rows.append(row("relaxed CCQO misses the analytic impulses", "sec. 3.1, Figs. 3-5",
                            "the relaxed optimum is not the analytic solution", [err, 1e-3],
                            {"rule": "holds", "op": ">=", "finding": "relaxed impulses differ from the analytic ones"},
                            criterion="||gamma_relaxed - gamma_analytic|| >= 1e-3 N s",
                            differences="none", shown=f"gamma = [{g[0]:.6g}, {g[1]:.6g}], distance {err:.2g}"))
    sc = ball_on_plane_2d()
    ar = simulate(sc, *anti, tol=1e-8, max_iter=100_000)
    rl = simulate(ball_on_plane_2d(), *relaxed, tol=1e-8, max_iter=100_000)
    t_roll = rolling_time(2.0, 0.2)
    t_ar = first_time(ar["t"], np.abs(ar["v_slope"] - ar["rolling"]) <= 1e-3 * 2.0)
    rows.append(_exact_row("time to pure rolling [s], anti-relaxed", "sec. 3.1, Fig. 2 right", t_roll, t_ar, sc.h,
                           "the ball did not settle into rolling", differences="none (h = 0.01 s, 0.5 s)"))
    rows.append(_exact_row("rolling speed R omega [m/s], anti-relaxed", "sec. 3.1, Fig. 2 right", 5 * 2.0 / 7,
                           float(ar["rolling"].iloc[-1]), sc.h, "no step", differences="none"))
    rows.append(_lift_off_row("ball (relaxed CCQO)", "sec. 3.1, Fig. 2 left", rl, "incorrect from the first step"))
    rows[-1]["differences"] = "none"
    # 3.2: the filling test over time; 3.3: the compaction; 3.4: filling tests of several sizes, each on
    # TRAJECTORIES trajectories (benchmarks.trajectories)
    count = _trajectories(args)
    rows.extend(trajectories.roundoff([_filling_rows(args, relaxed, anti, k) for k in range(count)]))
    rows.extend(_compaction(args, relaxed, anti))
    rows.extend(trajectories.roundoff([_sizes_rows(args, relaxed, anti, k) for k in range(count)]))
    notes.append("Melanz et al. 2015 sec. 3.1 values are the paper's own numbers (N, r, the analytic impulses and "
                 "motion); the filling and compaction tests' figures have no numbers, so their rows check the "
                 "paper's findings.")
    return {"title": "Melanz et al. 2015, sec. 3: anti-relaxation against relaxation",
            "setup": ("Sec. 3.1 on the planar ball (problems.scenes.rolling_ball_2d, problems.dynamic_scenes."
                      "ball_on_plane_2d); secs. 3.2 and 3.4 on the filling scene (problems.dynamic_scenes.filling: "
                      "spheres R = 1 m, 1 kg, mu = 0.25, h = 0.01 s), sec. 3.3 on the compaction scene "
                      "(problems.dynamic_scenes.compaction: a slab on the spheres of a committed packing, h = 0.001 s; "
                      "rows: benchmarks.compaction) with APGD on the relaxed (dual) and the anti-relaxed CCQO. Rules: "
                      "the paper's numbers exactly or within one step; its findings as inequalities, forces as "
                      "fractions of the total weight."),
            "rows": rows, "notes": notes}


# --------------------------------------------------------------------------- the projected quasi-Newton paper

#: the drum runs (Koziara 2017 sec. 8.1, N = 100): steps at the paper's h = 0.001 s (1.5 s of its 10 s;
#: the particles are at rest after about 0.5 s), steps whose problems the sensitivity rows solve again
#: (every DRUM_SAMPLE[0]-th from DRUM_SAMPLE[1] on: the bed turning), both sides' accuracy and cap
DRUM_STEPS, DRUM_SAMPLE, DRUM_TOL, DRUM_CAP = 1500, (50, 500), 1e-6, 1000
#: --quick: h = 0.002 s, 300 steps, every 30th from 150
DRUM_QUICK = (0.002, 300, (30, 150))
#: PQN's (delta, delta_mode, eps, m) of Table 3 (ell. rigid, delta relative to avg W_ii) and of Table 4
TABLE3 = {"delta": 0.01, "delta_mode": "avg", "eps": 0.25, "m": 10}
TABLE4 = {"min": (0.025, 0.25, 15, 495.0), "avg": (0.01, 0.25, 10, 467.0), "max": (0.01, 0.25, 20, 525.0)}
#: Fig. 2 (a) (m = 1000, epsilon varied) and (b) (epsilon = 1e-3, m varied) at delta = 1e-3; the paper's
#: best values first
FIG2_EPS, FIG2_EPS_BEST = (0.001, 0.01, 0.05, 0.1, 0.25), (0.1, 0.25)
FIG2_M, FIG2_M_BEST, FIG2_M_ROBUST = (3, 5, 10, 15, 20, 50), (10, 15), (3, 5)


def _best_row(quantity: str, source: str, finding: str, runs: dict, best: tuple, what: str, differences: str) -> dict:
    """A sensitivity finding "lowest it/step for the values ``best``": the least it/step among them
    against the least among the others (holds when <=)."""
    inside = min(runs[v].it_per_step for v in best)
    outside = min(r.it_per_step for v, r in runs.items() if v not in best)
    return row(quantity, source, finding, [inside, outside],
               {"rule": "holds", "op": "<=", "finding": f"the least it/step over {what} in {set(best)} is the least"},
               criterion=f"least mean PQN iterations per converged step over {what} in {set(best)} <= over the others",
               differences=differences,
               shown="; ".join(f"{what} = {v:g}: {r.it_per_step:.3g} it/step, {r.divs} divs" for v, r in runs.items()))


def _drum_measure(h: float, steps: int, sample: tuple[int, int], k: int) -> dict:
    """Trajectory ``k`` of the drum runs and the sensitivity solves on its sampled steps
    (:mod:`benchmarks.trajectories`)."""
    from benchmarks.drum_pqn import run, sensitivity
    from workbench import sources

    def drum_run(shape, form, slv, params, every=(0, 0)):
        t0 = time.perf_counter()
        out = run(sources.scenario("drum", shape=shape, h=h), form, slv, params, steps, DRUM_TOL, DRUM_CAP, *every,
                  trajectory=k)
        _say(f"drum ({shape}s, trajectory {k}): {form} x {slv}, {steps} steps in {time.perf_counter() - t0:.1f} s")
        return out

    P = drum_run("ellipsoid", "ncp", "pqn", TABLE3, sample)
    G = drum_run("ellipsoid", "anti-relaxed", "pgs", {})
    S = drum_run("sphere", "anti-relaxed", "pgs", {})
    samples = P.samples
    tab4 = {mode: sensitivity(samples, {"delta": d, "delta_mode": mode, "eps": e, "m": m}, DRUM_TOL, DRUM_CAP)
            for mode, (d, e, m, _) in TABLE4.items()}
    fig_a = {e: sensitivity(samples, {"delta": 1e-3, "eps": e, "m": 1000}, DRUM_TOL, DRUM_CAP) for e in FIG2_EPS}
    fig_b = {m: sensitivity(samples, {"delta": 1e-3, "eps": 1e-3, "m": m}, DRUM_TOL, DRUM_CAP) for m in FIG2_M}
    return {"P": P, "G": G, "S": S, "tab4": tab4, "fig_a": fig_a, "fig_b": fig_b}


def pqn(args) -> dict:
    h, steps, sample = DRUM_QUICK if args.quick else (0.001, DRUM_STEPS, DRUM_SAMPLE)
    count = _trajectories(args)
    common = f"{steps} steps of h = {h:g} s" + (" [--quick]" if args.quick else "") + "; set-up above"
    setup_gap = (f"What differs from the paper everywhere: {steps} steps of h = {h:g} s ({steps * h:g} s of its 10 s "
                 "at h = 0.001 s); a smooth drum without the two lifter blocks; the particles start at rest on a "
                 "lattice with the drum already turning (the paper drops them in first); both methods stop at the "
                 f"workbench's siconos_error <= {DRUM_TOL:g} or {DRUM_CAP:,} iterations (the paper: PQN at its merit "
                 "g(R) < 1e-8 with n = 1000; Gauss-Seidel's accuracy and cap are not given). Every row is measured on "
                 f"{count} trajectories of the drum: as built, and with every initial position coordinate "
                 f"multiplied by 1 + {trajectories.PERTURBATION:g} z (z standard normal; seeds 1 to {count - 1}), a "
                 "round-off-sized change that the flow amplifies into another trajectory, as other BLAS kernels or "
                 "another order of operations would. The table shows the drum as built; a row whose verdict differs "
                 "between the trajectories is \"not reproduced (depends on round-off)\", with each trajectory's outcome.")
    measured = [_drum_measure(h, steps, sample, k) for k in range(count)]
    rows = trajectories.roundoff([_pqn_rows(m, sample, common) for m in measured])
    return {"title": "The projected quasi-Newton paper (PARMES technical report, 2017): PQN against Gauss-Seidel",
            "setup": ("The rotating drum of sec. 8.1 (`workbench simulate drum`, problems/drum.py): 100 rigid "
                      "ellipsoids (semi-axes 0.09, 0.05, 0.1 m, 100 kg/m^3) or spheres (r = 0.08 m) in a drum of "
                      "radius 1 m and length 0.5 m turning at 1 rad/s about y, gravity 10 m/s^2, friction 0.3 (the "
                      "paper's h = 0.001 s). PQN is ncp x pqn (Koziara 2017 Algorithm 1 with its Gauss-Seidel fallback), "
                      "Gauss-Seidel anti-relaxed x pgs. The pseudo-rigid (\"defo\") columns need deformable "
                      "kinematics the simulator does not have and are left out; the sensitivity rows check the "
                      "findings the text states (Figs. 2-13 have no numbers). " + setup_gap),
            "rows": rows}


def _pqn_rows(m: dict, sample: tuple[int, int], common: str) -> list[dict]:
    """The page's rows from one trajectory's measurements (:func:`_drum_measure`)."""
    from benchmarks.drum_pqn import spread

    P, G, S, tab4, fig_a, fig_b = (m[key] for key in ("P", "G", "S", "tab4", "fig_a", "fig_b"))
    samples = P.samples
    on_samples = (f"PQN again on the same {len(samples)} sampled steps of the PQN run (every {sample[0]}th from step "
                  f"{sample[1]}: the bed turning) for every setting, not one simulation per setting; {common}")
    absolute = ("delta = 1e-3 added to the W scaled to mean W_ii = 1 (the paper's absolute delta is in Solfec's "
                "units of W); ")
    paper_spread = max(v[3] for v in TABLE4.values()) / min(v[3] for v in TABLE4.values())
    rows = [
        row("it/step, PQN vs Gauss-Seidel (ell. rigid)", "Table 3 (9 vs 112)", "PQN far fewer", [P.it_per_step, G.it_per_step],
            {"rule": "holds", "op": "<", "factor": 0.5, "finding": "PQN needs less than half the iterations of Gauss-Seidel"},
            criterion="mean iterations per step when converged (steps with contacts); PQN < 0.5 x Gauss-Seidel",
            differences=f"PQN (ncp x pqn, Table 3's delta = 0.01 avg W_ii, eps = 0.25, m = 10) against projected "
                        f"Gauss-Seidel (anti-relaxed x pgs); {common}",
            shown=f"{P.it_per_step:.3g} vs {G.it_per_step:.3g} (ratio {P.it_per_step / G.it_per_step:.2g}; paper 0.08), "
                  f"{P.mean_contacts:.0f} contacts per step"),
        row("solver time, PQN / Gauss-Seidel (ell. rigid)", "Table 3 (467 s x 0.77 vs 495 s x 0.85)",
            467 * 0.77 / (495 * 0.85), P.solve_seconds / G.solve_seconds, {"rule": "factor", "factor": 2.0},
            criterion="ratio of the total solve seconds over the run, within a factor 2 of the paper's",
            differences=f"PQN in NumPy/SciPy (GMRES), Gauss-Seidel compiled (numba), 2 shared cores; {common}",
            shown=f"{P.solve_seconds / G.solve_seconds:.3g} ({P.solve_seconds:.3g} s / {G.solve_seconds:.3g} s)"),
        row("diverged steps, PQN (ell. rigid)", "Table 3", 0, P.divs, {"rule": "same"},
            criterion="steps where PQN reached its cap and Gauss-Seidel finished (Algorithm 1 line 3)",
            differences=common),
        row("diverged steps, Gauss-Seidel (ell. rigid)", "Table 3", 20, G.divs,
            {"rule": "not_comparable", "reason": "Gauss-Seidel's accuracy and iteration cap are not given in the paper"},
            criterion="steps where Gauss-Seidel stopped at its cap", differences=common),
        row("Gauss-Seidel it/step, spheres vs ellipsoids", "Tables 2-3 (174 vs 112)", "more on spheres",
            [S.it_per_step, G.it_per_step], {"rule": "holds", "op": ">", "finding": "spheres need more iterations"},
            criterion="mean Gauss-Seidel iterations per converged step, sph. rigid > ell. rigid",
            differences=f"spheres of r_1 = 0.08 m (the paper's); {common}",
            shown=f"{S.it_per_step:.3g} vs {G.it_per_step:.3g} ({S.mean_contacts:.0f} vs {G.mean_contacts:.0f} contacts "
                  f"per step, {S.divs} vs {G.divs} diverged)"),
        row("solver time / runtime", "Table 3 (PQN 0.77, Gauss-Seidel 0.85)", "0.77, 0.85",
            [P.solve_seconds / P.wall_seconds, G.solve_seconds / G.wall_seconds],
            {"rule": "not_comparable", "reason": "the rest of a step (contact detection, assembly) is Python here and "
                                                 "C in Solfec: the ratio measures that implementation, not the solvers"},
            criterion="total solve seconds / total step seconds", differences=common),
        row("the three relative delta norms at their best parameters (ell. rigid)", "Table 4 (495, 467, 525 s)",
            "runtimes within 12%", [spread([r.matvecs for r in tab4.values()]), paper_spread ** 2],
            {"rule": "holds", "op": "<=", "finding": "spread of the work within twice the paper's on a log scale"},
            criterion=f"max / min of PQN's products with W over the three (min, avg, max W_ii) <= (paper's runtime "
                      f"spread {paper_spread:.3f})^2",
            differences=f"work counted as products with W (machine-independent; the paper: runtimes); {on_samples}",
            shown="; ".join(f"{mode} W_ii (delta {TABLE4[mode][0]:g}, eps {TABLE4[mode][1]:g}, m {TABLE4[mode][2]}): "
                            f"{r.matvecs:,} products, {r.it_per_step:.3g} it/step, {r.divs} divs, {r.solve_seconds:.3g} s"
                            for mode, r in tab4.items())),
        _best_row("sensitivity to epsilon (m = 1000, delta = 1e-3, ell. rigid)", "sec. 8.1.1, Fig. 2 (a)",
                  "lowest it/step for eps in {0.1, 0.25}", fig_a, FIG2_EPS_BEST, "eps", absolute + on_samples),
        row("no divergence at delta = 1e-3 for eps in {0.1, 0.25} (m = 1000)", "sec. 8.1.1, Fig. 2 (a)", 0,
            sum(fig_a[e].divs for e in FIG2_EPS_BEST), {"rule": "same"},
            criterion="PQN runs that reached the cap over the sampled steps, both eps", differences=absolute + on_samples),
        row("the more inexact the linear solve, the more robust (m = 1000, delta = 1e-3)", "sec. 8.1.1, Fig. 2 (a)",
            "fewer divergences as eps grows", [fig_a[FIG2_EPS[-1]].divs, fig_a[FIG2_EPS[0]].divs],
            {"rule": "holds", "op": "<", "finding": "fewer runs reach the cap at the largest eps than at the smallest"},
            criterion=f"PQN runs that reached the cap over the sampled steps, eps = {FIG2_EPS[-1]:g} < eps = "
                      f"{FIG2_EPS[0]:g}", differences=absolute + on_samples,
            shown="; ".join(f"eps = {e:g}: {r.divs}" for e, r in fig_a.items())),
        _best_row("sensitivity to m (eps = 1e-3, delta = 1e-3, ell. rigid)", "sec. 8.1.1, Fig. 2 (b)",
                  "lowest it/step for m in {10, 15}", fig_b, FIG2_M_BEST, "m", absolute + on_samples),
        row("no failures for m in {3, 5} (eps = 1e-3, delta = 1e-3)", "sec. 8.1.1, Fig. 2 (b)", 0,
            sum(fig_b[m].divs for m in FIG2_M_ROBUST), {"rule": "same"},
            criterion="PQN runs that reached the cap over the sampled steps, both m", differences=absolute + on_samples,
            shown="; ".join(f"m = {m}: {r.divs}" for m, r in fig_b.items())),
        row("stacked finite-element cubes under a sine sweep", "sec. 8.2", "plots", None,
            {"rule": "holds", "op": "<", "finding": "PQN needs fewer iterations per step than Gauss-Seidel"},
            criterion="iterations per step, PQN vs Gauss-Seidel", differences="-",
            missing="not run: finite-element bodies are not in the workbench's simulator (and the section gives "
                    "plots only)"),
    ]
    return rows


# --------------------------------------------------------------------------- command line

PAPERS: dict[str, tuple[Callable, str]] = {
    "anitescu-hart-2003": (anitescu_hart, "Anitescu and Hart 2003, Table 1"),
    "mazhar-2014": (mazhar, "Mazhar et al. 2014, sec. 5"),
    "melanz-2015": (melanz, "Melanz et al. 2015, sec. 3"),
    "pqn-2017": (pqn, "the projected quasi-Newton paper"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paper", choices=sorted(PAPERS))
    parser.add_argument("--quick", action="store_true", help="a CI-sized run")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--write", action="store_true",
                       help=f"write repro-PAPER.* into {RESULTS_DIR} and docs/reproductions.md (default: a temporary folder)")
    where.add_argument("--results-dir", type=Path, help="where to write repro-PAPER.* (default: a temporary folder)")
    parser.add_argument("--settled", default="settled-00320", help="dataset of the thoroughly settled packing")
    parser.add_argument("--unsettled", default="unsettled-00320", help="dataset of the poorly settled packing")
    parser.add_argument("--scaling", default="scaling-*", help="glob of the scaling datasets")
    parser.add_argument("--scaling-tol", type=float, default=1e-6, help="accuracy of the sec. 5.2 solves")
    parser.add_argument("--apgd-cap", type=int, default=20_000, help="APGD iteration cap")
    parser.add_argument("--extra-cap", type=int, default=30_000, help="Lemke's cap for the extra run")
    parser.add_argument("--filling-n", type=int, default=1000, help="spheres of the sec. 3.2 filling test")
    parser.add_argument("--filling-tol", type=float, default=1e-5, help="APGD tolerance in the filling tests")
    parser.add_argument("--filling-sizes", type=int, nargs="+", default=[20, 40, 60, 100, 150, 300],
                        help="sphere counts of the sec. 3.4 filling tests")
    parser.add_argument("--sizes-duration", type=float, default=2.0, help="seconds simulated per sec. 3.4 size")
    parser.add_argument("--compaction-bed", default=COMPACTION_BED,
                        help="committed packing whose settled spheres the sec. 3.3 slab compacts")
    parser.add_argument("--compaction-duration", type=float, default=COMPACTION_DURATION,
                        help="seconds simulated in the sec. 3.3 compaction test")
    args = parser.parse_args(argv)
    if min(args.apgd_cap, args.extra_cap, args.filling_n, *args.filling_sizes) < 1 or args.sizes_duration <= 1.0 \
            or not 0 < args.scaling_tol < 1 or not 0 < args.filling_tol < 1 or not args.compaction_duration > 0:
        parser.error("caps, sizes and --compaction-duration must be positive, --sizes-duration above 1 s, tolerances "
                     "in (0, 1)")
    if args.quick and args.write:
        parser.error("--quick makes a CI-sized table, not the paper's comparison: it is not written into docs/ "
                     "(drop --write, or --quick)")
    folder = RESULTS_DIR if args.write else args.results_dir or Path(tempfile.mkdtemp(prefix="reproduce-"))
    func, _ = PAPERS[args.paper]
    t0 = time.perf_counter()
    try:
        data = func(args)
    except InputError as exc:
        print(f"reproduce: {exc}", file=sys.stderr)
        return 2
    data["seconds"] = round(time.perf_counter() - t0, 1)
    data.setdefault("notes", []).append(f"Measured in {data['seconds']:.0f} s" + (" (--quick)." if args.quick else "."))
    command = "python -m benchmarks.reproduce " + " ".join(argv if argv is not None else sys.argv[1:])
    page = write_results(f"repro-{args.paper}", data, render_table, command=command.strip(), folder=folder)
    print(page.read_text(encoding="utf-8"))
    print(f"written: {page}", file=sys.stderr)
    if args.write and embed(DOC, f"repro-{args.paper}"):
        print(f"embedded in: {DOC}", file=sys.stderr)
    elif not args.write:
        print("docs/ unchanged: add --write to store the table in docs/results and docs/reproductions.md",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
