"""Melanz et al. 2015, sec. 3: the planar ball, the filling tests and the compaction, relaxed against
anti-relaxed (``python -m benchmarks.reproduce melanz-2015``)."""

from __future__ import annotations

import math

import numpy as np

from benchmarks.reproduce import trajectories
from benchmarks.reproduce.common import (_exact_row, _fewer, _lift_off_row, _trajectories, first_time, per_member,
                                         simulate)
from workbench.method import solve
from workbench.report.reproduction import fmt, row
from workbench.solvers import SolveOptions


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
    relaxed and anti-relaxed (the rows: benchmarks.reproduce.compaction)."""
    from benchmarks.reproduce import compaction
    from problems.dynamic_scenes import compaction as scene
    from problems.generator import read_manifest

    bed, duration = (QUICK_BED, 0.3) if args.quick else (args.compaction_bed, args.compaction_duration)
    g = read_manifest().get(f"{bed}.npz", {}).get("generator", {})
    n = scene(bed=bed).world.bodies.n - 1  # an unknown bed is an InputError here, before any run
    slab = compaction.PAPER["slab_mass"] * n / compaction.PAPER["spheres"]
    count = _trajectories(args)
    stats = per_member(_compaction_member, args, bed, slab, duration, relaxed, anti)
    sc = scene(bed=bed, slab_mass=slab, duration=duration)
    width = sc.world.bodies.size[-1, 0] * 2
    size = compaction.run_size(n, slab, duration, "quick run" if args.quick else COMPACTION_WHY)
    differences = (f"bed: {bed} at rest ({n:,} spheres R = {fmt(g.get('radius'))} m, {fmt(g.get('mass'))} kg, mu = "
                   f"{fmt(g.get('mu'))}, settled {fmt(g.get('duration'))} s at h = {fmt(g.get('h'))} s by "
                   f"{g.get('formulation')} x {g.get('solver')} in a {fmt(g.get('width'))} m square container); slab "
                   f"{width:.4g} x {width:.4g} x 1 m, mu = 0.25, at rest on the highest sphere (container, slab size "
                   f"and start not given: the workbench's choices); h = {sc.h:g} s as in the paper; APGD tolerance "
                   f"{args.filling_tol:g} on the workbench's error (the paper's tau = 1e-5 'g cm s^-1' has units the "
                   f"workbench cannot map); {size}; {trajectories.described(count)}")
    return trajectories.over_members([compaction.rows(s["relaxed"], s["anti-relaxed"], differences) for s in stats],
                                     _fewer(args))


def _compaction_member(args, bed: str, slab: float, duration: float, relaxed: tuple[str, str],
                       anti: tuple[str, str], k: int) -> dict:
    """Sec. 3.3 on trajectory ``k``: benchmarks.reproduce.compaction's statistics of the relaxed and the
    anti-relaxed run."""
    from benchmarks.reproduce import compaction
    from problems.dynamic_scenes import compaction as scene

    stats = {}
    for name, (form, slv) in (("relaxed", relaxed), ("anti-relaxed", anti)):
        sc = scene(bed=bed, slab_mass=slab, duration=duration)
        trajectories.perturb(sc.world, k)
        start = sc.observe()["height"]
        stats[name] = compaction.run_stats(simulate(sc, form, slv, tol=args.filling_tol, max_iter=10_000),
                                           sc.weight, start)
    return stats


def _filling_rows(args, relaxed: tuple[str, str], anti: tuple[str, str], k: int) -> list[dict]:
    """Sec. 3.2, the filling test over time, on trajectory ``k`` (benchmarks.reproduce.trajectories)."""
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
    """Sec. 3.4, filling tests of several sizes, on trajectory ``k`` (benchmarks.reproduce.trajectories)."""
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
    # members: trajectories (benchmarks.reproduce.trajectories), --members of them, --jobs at once
    rows.extend(trajectories.over_members(per_member(_filling_rows, args, relaxed, anti), _fewer(args)))
    rows.extend(_compaction(args, relaxed, anti))
    rows.extend(trajectories.over_members(per_member(_sizes_rows, args, relaxed, anti), _fewer(args)))
    notes.append("Melanz et al. 2015 sec. 3.1 values are the paper's own numbers (N, r, the analytic impulses and "
                 "motion); the filling and compaction tests' figures have no numbers, so their rows check the "
                 "paper's findings.")
    return {"title": "Melanz et al. 2015, sec. 3: anti-relaxation against relaxation",
            "setup": ("Sec. 3.1 on the planar ball (problems.scenes.rolling_ball_2d, problems.dynamic_scenes."
                      "ball_on_plane_2d); secs. 3.2 and 3.4 on the filling scene (problems.dynamic_scenes.filling: "
                      "spheres R = 1 m, 1 kg, mu = 0.25, h = 0.01 s), sec. 3.3 on the compaction scene "
                      "(problems.dynamic_scenes.compaction: a slab on the spheres of a committed packing, h = 0.001 s; "
                      "rows: benchmarks.reproduce.compaction) with APGD on the relaxed (dual) and the anti-relaxed CCQO. Rules: "
                      "the paper's numbers exactly or within one step; its findings as inequalities, forces as "
                      "fractions of the total weight."),
            "rows": rows, "notes": notes}
