"""How settled a packing is against how hard its time step is for APGD, as curves (issue 32 item 3):

    .venv/bin/python -m benchmarks.reproduce.settledness [--caps 10,20,...] [--replicates R] [--quick] [--cache DIR] [--threads 1] [--write]

Mazhar et al. 2014 sec. 5.1 compare one thoroughly settled packing (at most 10,000 solver iterations per
step while settling) with one poorly settled packing (at most 10) and find the poorly settled one harder
for APGD (825 against 561 iterations to the interior-point objective). One pair cannot tell a trend from
the noise of two random packings, so this command settles the same 320 spheres with each per-step
iteration cap of CAPS and fits the trend.

The packings: problems.generator's dataset ``settled`` with ``max_iter`` the cap, all else as the
committed datasets settled-00320 (cap 10,000) and unsettled-00320 (cap 10) are made (320 spheres, h =
0.0005 s, 8,000 steps, tol 1e-6, seed 0). Each is made by :func:`problems.generator.generate_dataset` into
``CACHE/cap-NNNNN/`` (``results/settledness``, ignored by git) with its manifest; a packing there made with
the same parameters is kept, so a re-run does not regenerate it, and the seconds its generation took are
kept beside it (``generation.json``). A packing whose parameters are those of a committed dataset is
checked against the committed checksum (SHA-256 of its arrays, problems/datasets/MANIFEST.json); where
the two differ, the committed packing is measured too and shown beside the sweep (not in its fits).

Per packing, all computed here from the packing file: the kinetic energy of the final state [J] (the
generator's record), the mean penetration [m] (mean over the contacts of max(0, -Phi_i), Phi = h b in the
normal slots), the reference objective of the relaxed dual (interior point to 1e-10:
:func:`benchmarks.reproduce.mazhar_2014.interior_point_solve`) and APGD's first iteration, and its seconds with the
history recorded, whose dual objective is within each relative threshold (1e-4, 5e-5, 1e-5, 1e-6) of it
(:func:`benchmarks.reproduce.mazhar_2014.apgd_to_target`).

Replicates (issue 44: one packing per cap understates the scatter; two round-off twins of the cap-10
protocol gave APGD iterations 70 and 535). Each cap is settled ``--replicates`` times: replicate 0 as
built, replicate r > 0 with every starting coordinate moved by a uniform draw in +-1e-12 R seeded by r
(problems.generator.PackingSpec.roundoff, the round-off families' rule), each in its own
``CACHE/cap-NNNNN[-rRR]/``. Per cap the page gives the median of APGD's iterations over the replicates
with its exact 95 % interval (workbench.analysis.members; not reached counts as infinite), and every
distinct packing enters the trend fit. At least MIN_MEMBERS replicates, or the page says why fewer.
``--quick`` is a CI-sized sweep (a small packing, three caps, two replicates), never written.

The trend, per threshold: least squares of log(iterations) against log(kinetic energy), and against
log(mean penetration) (:func:`workbench.analysis.stats.loglog_fit`): the slope, its standard error and its
95 % confidence interval (Student's t, n - 2 degrees of freedom). The verdict on "poorly settled is harder
for APGD" comes from the slope against the kinetic energy: reproduced when its interval lies above 0,
not reproduced when below, undecided when it contains 0 (the verdict words of every reproduction page). It is judged on iterations only: seconds depend
on the machine and its load (fitted and shown, never judged). The paper's two points give a slope too
(log(825 / 561) / log(1.5637 / 0.0215)), shown beside ours; the paper gives no penetration.

``--write``: docs/results/settledness.{json,md} (:func:`workbench.provenance.write_results`) and the figure
docs/results/settledness.png (with .svg) and .pdf (:func:`workbench.plot.save`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.reproduce.mazhar_2014 import (MAZHAR_STATIC, PAPER_THRESHOLD, THRESHOLDS, apgd_to_target,
                                              interior_point_solve)
from problems.generator import DEFAULT_DIR, generate_dataset, read_manifest
from workbench.analysis.stats import loglog_fit
from workbench.errors import InputError
from workbench.files import atomic_output
from workbench.io import load_problem
from workbench.method import solve
from workbench.provenance import RESULTS_DIR, ROOT, write_results
from workbench.solvers import SolveOptions

#: the per-step iteration caps of the sweep (10 and 10,000: the committed unsettled and settled packings)
CAPS = (10, 20, 50, 100, 200, 500, 1000, 10000)
#: where the packings are kept between runs (ignored by git)
CACHE = ROOT / "results" / "settledness"
#: APGD's iteration cap on each packing's step
APGD_CAP = 20_000
#: the confidence level of the slopes' intervals
LEVEL = 0.95
#: the quantities the iterations are fitted against: key -> axis label
AXES = {"kinetic_energy": "kinetic energy [J]", "mean_penetration": "mean penetration [m]"}
#: the page and figure name under docs/results
NAME = "settledness"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


#: replicates per cap (round-off twins: module docstring), of a --quick sweep, and why a full sweep has
#: fewer than MIN_MEMBERS: the cost bound
REPLICATES = 10
#: the --quick sweep: a small packing, three caps, two replicates, APGD capped at 2,000
QUICK = {"overrides": {"n": 64, "width": None, "duration": 0.5}, "caps": (10, 100, 10000), "replicates": 2,
         "apgd_cap": 2_000}


def packing(cap: int, cache: Path, overrides: dict, progress: bool = True, replicate: int = 0) -> tuple[Path, dict]:
    """The packing settled with at most ``cap`` iterations per step (made once, then kept in
    ``cache/cap-NNNNN``, replicate r > 0 in ``cache/cap-NNNNN-rRR`` with its start moved by round-off:
    module docstring): its path and its generation record (seconds, the step it resumed from, the load
    average after it; seconds None when it was made by another run without one)."""
    folder = cache / (f"cap-{cap:05d}" + (f"-r{replicate:02d}" if replicate else ""))
    if replicate:
        overrides = {**overrides, "roundoff": replicate}
    made: dict = {}

    def record(path, meta, seconds, resumed_from):
        made.update(seconds=seconds, resumed_from=resumed_from, load=" ".join(f"{x:.1f}" for x in os.getloadavg()))
    path = generate_dataset("settled", folder, progress=progress, on_packing=record, max_iter=cap, **overrides)[0]
    log = folder / "generation.json"
    if made:
        with atomic_output(log) as tmp:
            tmp.write_text(json.dumps(made, sort_keys=True) + "\n")
    generation = json.loads(log.read_text()) if log.exists() else {"seconds": None}
    return path, {**generation, "kept": not made}


def mean_penetration(problem) -> float:
    """Mean over the contacts of max(0, -Phi_i) [m], Phi = h b in the normal slots (the gap term)."""
    gap = problem.b[::problem.d] * problem.h
    return float(np.mean(np.maximum(0.0, -gap)))


def committed_match(entry: dict, folder: Path, apgd_cap: int) -> dict | None:
    """The dataset of ``folder`` (its manifest) made with the same generator parameters as the manifest
    ``entry``, whether the arrays are the same bit for bit (their SHA-256) and, where they are not, its
    own measurement (:func:`measure`); None when there is none."""
    for name, committed in sorted(read_manifest(folder).items()):
        if committed["generator"] == entry["generator"]:
            same = committed["sha256"] == entry["sha256"]
            return {"file": name, "same": same, "measured": None if same else measure(folder / name, apgd_cap)}
    return None


def measure(path: Path, apgd_cap: int) -> dict:
    """The packing file's settledness, its interior-point reference and APGD's iterations and seconds
    to each threshold of it."""
    problem = load_problem(path)
    meta = problem.metadata
    ref = interior_point_solve(problem)
    usable = ref.objective is not None and math.isfinite(ref.objective)
    hits = apgd_to_target(problem, float(ref.objective), apgd_cap) if usable else {}
    return {"n_contacts": int(problem.n_contacts), "kinetic_energy": float(meta["kinetic_energy"]),
            "max_penetration": float(meta["max_penetration"]), "mean_penetration": mean_penetration(problem),
            "settle_mean_iterations": meta["settling"]["mean_iterations"],
            "settle_max_iterations": int(meta["settling"]["max_iterations"]),
            "reference": {"solver": ref.solver, "status": ref.status,
                          "objective": float(ref.objective) if usable else None,
                          "judged": ref.judged_name, "error": _plain(float(ref.metrics.get(ref.judged_name, math.nan))),
                          "iterations": int(ref.iterations), "seconds": float(ref.solve_seconds)},
            "apgd": {f"{t:g}": None if hits.get(t) is None else list(hits[t]) for t in THRESHOLDS}}


def distinct(packings: list[dict]) -> list[tuple[dict, list[int]]]:
    """Each packing once (by the SHA-256 of its arrays) with the caps that made it: a cap that no step
    reached makes the same packing as any larger one."""
    caps: dict[str, list[int]] = {}
    first: dict[str, dict] = {}
    for p in packings:
        first.setdefault(p["sha256"], p)
        caps.setdefault(p["sha256"], []).append(p["cap"])
    return [(first[k], caps[k]) for k in first]


def fits(packings: list[dict]) -> dict:
    """Per y (APGD iterations, seconds), x (AXES) and threshold: :func:`loglog_fit` over the
    :func:`distinct` packings whose APGD run reached the threshold."""
    packings = [p for p, _ in distinct(packings)]
    out: dict = {}
    for y, col in (("iterations", 0), ("seconds", 1)):
        for x in AXES:
            for t in THRESHOLDS:
                pts = [(p[x], p["apgd"][f"{t:g}"][col]) for p in packings if p["apgd"].get(f"{t:g}") is not None]
                fit = loglog_fit([a for a, _ in pts], [b for _, b in pts], LEVEL) if pts else \
                    loglog_fit([], [], LEVEL)
                out.setdefault(y, {}).setdefault(x, {})[f"{t:g}"] = {k: _plain(v) for k, v in fit.items()}
    return out


def _plain(v):
    """A JSON value: None for NaN."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def verdict(fit: dict) -> str:
    """The verdict words of every reproduction page (workbench.report.reproduction) on "poorly settled is
    harder for APGD": reproduced (the interval of the slope above 0), not reproduced (below 0),
    undecided (it contains 0) or not measured (fewer than three points)."""
    from workbench.report.reproduction import NOT_MEASURED, NOT_REPRODUCED, REPRODUCED, UNDECIDED

    if fit["low"] is None or fit["high"] is None:
        return NOT_MEASURED
    return REPRODUCED if fit["low"] > 0 else NOT_REPRODUCED if fit["high"] < 0 else UNDECIDED


def paper_points() -> dict:
    """Mazhar et al. 2014 sec. 5.1: kinetic energy [J] and APGD iterations of the two packings, and the
    slope of log(iterations) against log(kinetic energy) through them."""
    s, u = MAZHAR_STATIC["settled"], MAZHAR_STATIC["unsettled"]
    return {"settled": {"kinetic_energy": s["energy"], "apgd": s["apgd"], "cap": 10000},
            "unsettled": {"kinetic_energy": u["energy"], "apgd": u["apgd"], "cap": 10},
            "slope": math.log(u["apgd"] / s["apgd"]) / math.log(u["energy"] / s["energy"])}


def sweep(caps, cache: Path, overrides: dict | None = None, apgd_cap: int = APGD_CAP, progress: bool = True,
          committed: Path = DEFAULT_DIR, replicates: int = 1, fewer: str | None = None) -> dict:
    """Make (or keep) the packing of every cap and replicate, measure each and fit the trends: the page's
    data. ``committed``: the folder of the committed datasets each packing is checked against;
    ``replicates`` per cap (module docstring; 1: one packing per cap, as before), ``fewer``: why fewer
    than MIN_MEMBERS of them."""
    from workbench.report.reproduction import MIN_MEMBERS

    if replicates > 1 and replicates < MIN_MEMBERS and not fewer:
        raise InputError(f"{replicates} replicates per cap, under {MIN_MEMBERS}, and no reason for fewer")
    overrides = overrides or {}
    warm = None
    packings = []
    for cap in caps:
        for r in range(replicates):
            path, generation = packing(cap, cache, overrides, progress, replicate=r)
            entry = read_manifest(path.parent)[path.name]
            if warm is None:           # the kernels loaded before any clock
                warm = solve(load_problem(path), "dual", "apgd", SolveOptions(tol=1e-14, max_iter=20, keep_history=True))
            _say(f"cap {cap:,}, replicate {r}: {path} ({'kept' if generation['kept'] else 'made'}); interior point "
                 "and APGD")
            packings.append({"cap": cap, "file": str(path.relative_to(cache)), "sha256": entry["sha256"],
                             "generator": entry["generator"], "committed": committed_match(entry, committed, apgd_cap),
                             "generation": generation, **({"replicate": r} if replicates > 1 else {}),
                             **measure(path, apgd_cap)})
    from workbench.threads import in_use

    data = {"caps": list(caps), "apgd_cap": apgd_cap, "threads": in_use(), "thresholds": [f"{t:g}" for t in THRESHOLDS],
            "paper_threshold": f"{PAPER_THRESHOLD:g}", "level": LEVEL, "packings": packings,
            "fits": fits(packings), "paper": paper_points()}
    if replicates > 1:
        data.update(replicates=replicates, per_cap=per_cap(packings, f"{PAPER_THRESHOLD:g}"),
                    **({"fewer": fewer} if fewer and replicates < MIN_MEMBERS else {}))
    return data


def per_cap(packings: list[dict], threshold: str) -> list[dict]:
    """Per cap, over its replicates: the median of APGD's iterations to ``threshold`` (not reached: +inf)
    and of the kinetic energy, each with its exact 95 % interval (workbench.analysis.members)."""
    from workbench.analysis.members import median_interval

    out = []
    for cap in dict.fromkeys(p["cap"] for p in packings):
        mine = [p for p in packings if p["cap"] == cap]
        its = median_interval([math.inf if p["apgd"].get(threshold) is None else p["apgd"][threshold][0] for p in mine])
        energy = median_interval([p["kinetic_energy"] for p in mine])
        out.append({"cap": cap, "n": len(mine), "distinct": len({p["sha256"] for p in mine}),
                    "iterations": {k: _plain(its[k]) for k in ("median", "low", "high", "coverage")},
                    "kinetic_energy": {k: _plain(energy[k]) for k in ("median", "low", "high", "coverage")}})
    return out


# --------------------------------------------------------------------------- page

def _num(v, spec: str = ".3g") -> str:
    return "-" if v is None else format(v, spec)


def _generation(g: dict) -> str:
    return "-" if g.get("seconds") is None else f"{g['seconds']:.1f} (load {g['load']})"


def _row(cap: str, p: dict, generation: str, committed: str, data: dict) -> str:
    """One packing's row of the table."""
    ref = p["reference"]
    obj = "-" if ref["objective"] is None else \
        f"{ref['objective']:.8g} ({ref['status']}, {ref['judged']} {_num(ref['error'], '.1e')})"
    cells = [f"{h[0]:,} [{h[1]:.2f} s]" if h is not None else f"> {data['apgd_cap']:,}"
             for h in (p["apgd"][t] for t in data["thresholds"])]
    return (f"| {cap} | {p['n_contacts']:,} | {p['kinetic_energy']:.3g} | {p['mean_penetration']:.3g} | "
            f"{p['max_penetration']:.3g} | {p['settle_mean_iterations']:.3g} / {p['settle_max_iterations']:,} | "
            f"{generation} | {committed} | {obj} | "
            + " | ".join(cells) + " |")


def _replicates_table(data: dict) -> list[str]:
    """The per-cap medians over the replicates with their intervals (:func:`per_cap`)."""
    n = data["replicates"]
    fewer = f" Fewer than 10 because {data['fewer']}." if data.get("fewer") else ""
    lines = ["", f"Per cap over its {n} replicates (round-off twins: starts moved by 1e-12 R), the median and the exact "
             f"95 % interval of the median (order statistics; unbounded '-' under 6 replicates).{fewer}", "",
             f"| cap / step | replicates (distinct) | APGD iterations to {data['paper_threshold']}, median [95 % interval] "
             "| kinetic energy [J], median [95 % interval] |", "|---|---:|---|---|"]

    def cell(m, spec):
        def one(v):
            return "-" if v is None else "not reached" if v == math.inf else format(v, spec)
        return f"{one(m['median'])} [{one(m['low'])}, {one(m['high'])}]"
    for c in data["per_cap"]:
        lines.append(f"| {c['cap']:,} | {c['n']} ({c['distinct']}) | {cell(c['iterations'], ',.0f')} | "
                     f"{cell(c['kinetic_energy'], '.3g')} |")
    return lines


def render(data: dict) -> str:
    """The page (docs/results/settledness.md)."""
    pk, th = data["packings"], data["thresholds"]
    g = pk[0]["generator"]
    lines = [f"{g['n']} spheres settled as Mazhar et al. 2014 sec. 5.1 (h = {g['h']:g} s, {g['steps']:,} steps, "
             f"tol {g['tol']:g}, seed {g['seed']}), once per per-step iteration cap; each packing's step solved by "
             f"{pk[0]['reference']['solver']} to 1e-10 (the reference objective) and by APGD (at most "
             f"{data['apgd_cap']:,} iterations): its first iteration [seconds, history recorded] within each relative "
             f"threshold of the reference; compiled kernels on {data['threads']} thread(s). Generation: the seconds "
             "of the run that made the packing (kept since), with the load average after it. Figure: "
             "[settledness.png](settledness.png) ([PDF](settledness.pdf)).", "",
             "| cap / step | contacts | kinetic energy [J] | mean penetration [m] | max penetration [m] | "
             "mean / max iterations per step while settling | generation [s] | committed packing | reference objective (status, "
             "judged error) | "
             + " | ".join(f"APGD to {t}" for t in th) + " |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|" + "---:|" * len(th)]
    for p in pk:
        c = p["committed"]
        same = "-" if c is None else f"{c['file']}: {'same sha256' if c['same'] else 'DIFFERENT sha256'}"
        label = f"{p['cap']:,}" + (f" (r{p['replicate']})" if p.get("replicate") else "")
        lines.append(_row(label, p, _generation(p["generation"]), same, data))
        if c is not None and c["measured"] is not None:
            lines.append(_row(f"{p['cap']:,}, committed", c["measured"], "-", f"{c['file']} itself", data))
    if any(p["committed"] is not None and not p["committed"]["same"] for p in pk):
        lines += ["", "A committed packing of the same parameters whose arrays differ from the sweep's is measured "
                  "too (rows \"committed\", not in the fits); why they differ: docs/datasets.md, Checksums."]
    if data.get("replicates"):
        lines += _replicates_table(data)
    else:
        lines += ["", "One packing per cap, no replicates: round-off twins of one cap's protocol can end far apart "
                  "(issue 44; the cap-10 rows above: the sweep's packing and the committed one), so the slopes' "
                  "intervals below understate the scatter and their verdicts stand on one sample per cap. "
                  f"The sweep with replicates is `python -m benchmarks.reproduce.settledness --write` "
                  f"({REPLICATES} per cap)."]
    labels = {}
    for q in pk:   # a replicate's label names it (r1, r2, ...)
        labels.setdefault(q["sha256"], []).append(f"{q['cap']:,}" + (f" (r{q['replicate']})" if q.get("replicate") else ""))
    same = [names for names in labels.values() if len(names) > 1]
    if same:
        lines += ["", "Caps that no step reached make the same packing (the same SHA-256 of its arrays): "
                  + "; ".join(" = ".join(names) for names in same) + ". Each packing counts once "
                  "in the fits."]
    lvl = f"{100 * data['level']:g} %"
    lines += ["", f"Trends: least squares of log y against log x over the packings, slope k (y ~ x^k) with its standard "
              f"error and {lvl} confidence interval (t, n - 2 degrees of freedom). The verdict on \"poorly settled is "
              "harder for APGD\" is the sign of the slope of the iterations against the kinetic energy: reproduced when "
              "the interval lies above 0, not reproduced when below, undecided when it contains 0; seconds are "
              "shown, never judged (they depend on the machine and its load). The interval assumes log y linear in "
              "log x with independent scatter over these packings; it says nothing outside their range.", "",
              f"| y | x | threshold | points | slope k | standard error | {lvl} interval | verdict |",
              "|---|---|---:|---:|---:|---:|---|---|"]
    for y in ("iterations", "seconds"):
        for x in AXES:
            for t in th:
                f = data["fits"][y][x][t]
                judged = verdict(f) if (y, x) == ("iterations", "kinetic_energy") else "(not judged)"
                lines.append(f"| APGD {y} | {AXES[x]} | {t} | {f['n']} | {_num(f['slope'], '.3f')} | "
                             f"{_num(f['se'], '.3f')} | [{_num(f['low'], '.3f')}, {_num(f['high'], '.3f')}] | {judged} |")
    paper, head = data["paper"], data["fits"]["iterations"]["kinetic_energy"][data["paper_threshold"]]
    lines += ["", f"Mazhar et al. 2014 sec. 5.1 (the paper's stop is about {data['paper_threshold']} from the MOSEK "
              f"objective): {paper['unsettled']['apgd']:,} APGD iterations poorly settled (cap "
              f"{paper['unsettled']['cap']:,}, {paper['unsettled']['kinetic_energy']:g} J) against "
              f"{paper['settled']['apgd']:,} thoroughly settled (cap {paper['settled']['cap']:,}, "
              f"{paper['settled']['kinetic_energy']:g} J): a slope of {paper['slope']:.3f} through its two points, "
              f"against {_num(head['slope'], '.3f')} [{_num(head['low'], '.3f')}, {_num(head['high'], '.3f')}] here "
              f"at {data['paper_threshold']} (verdict: {verdict(head)}). The paper's energies are in joules of "
              "spheres whose mass it does not state: the slope, a ratio of logarithms, does not depend on it, "
              "the energies themselves are not comparable with ours (the figure draws them as reported). The paper "
              "gives no penetration."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- figure

def figure(data: dict):
    """APGD iterations (top) and seconds (bottom) against the kinetic energy (left) and the mean
    penetration (right), one series per threshold, the fitted line of each, the paper's two points
    (iterations against kinetic energy, at its stop about 5e-5)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 7.5), layout="constrained")
    axes = fig.subplots(2, 2, squeeze=False)
    pk = [p for p, _ in distinct(data["packings"])]
    others = [p["committed"]["measured"] for p in pk if p["committed"] is not None and p["committed"]["measured"]]
    for row, (y, col) in enumerate((("iterations", 0), ("seconds", 1))):
        for c, x in enumerate(AXES):
            ax = axes[row][c]
            for i, t in enumerate(data["thresholds"]):
                pts = [(p[x], p["apgd"][t][col]) for p in pk if p["apgd"][t] is not None]
                if not pts:
                    continue
                xs, ys = np.array(pts).T
                f = data["fits"][y][x][t]
                ax.plot(xs, ys, "o", color=f"C{i}", label=None if f["slope"] is not None else f"to {t}")
                if f["slope"] is not None:
                    line = np.geomspace(xs.min(), xs.max(), 20)
                    ax.plot(line, np.exp(f["intercept"]) * line ** f["slope"], "-", color=f"C{i}", lw=1,
                            label=f"to {t}: fit k = {f['slope']:.2f}"
                            + (f" ± {f['se']:.2f} (s.e.)" if f["se"] is not None else ""))
                extra = [(p[x], p["apgd"][t][col]) for p in others if p["apgd"][t] is not None]
                if extra:
                    ax.plot(*np.array(extra).T, "D", color=f"C{i}", mfc="none",
                            label="committed datasets (not fitted)" if i == 0 else None)
            if (y, x) == ("iterations", "kinetic_energy"):
                i = data["thresholds"].index(data["paper_threshold"])
                paper = data["paper"]
                ax.plot([paper[k]["kinetic_energy"] for k in ("unsettled", "settled")],
                        [paper[k]["apgd"] for k in ("unsettled", "settled")], "s--", color=f"C{i}", mfc="none",
                        label="Mazhar et al. 2014 sec. 5.1\n(its stop; sphere mass not stated)")
            for p, caps in distinct(data["packings"]):
                hit = p["apgd"][data["paper_threshold"]]
                if hit is not None:
                    ax.annotate(" = ".join(f"{cap:,}" for cap in caps), (p[x], hit[col]), textcoords="offset points",
                                xytext=(4, -3), fontsize=7, color="0.35")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(AXES[x])
            ax.set_ylabel(f"APGD {y} to the reference objective")
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"{data['packings'][0]['generator']['n']} spheres settled with per-step iteration caps (grey: the "
                 f"caps, at {data['paper_threshold']})\nAPGD to the interior-point objective; fits over the "
                 "distinct packings")
    return fig


def write_figure(data: dict, folder: Path) -> list[Path]:
    """The figure as PNG (with SVG beside it) and PDF under ``folder``."""
    from workbench.plot import save

    fig = figure(data)
    paths = [folder / f"{NAME}.png", folder / f"{NAME}.pdf"]
    for path in paths:
        save(fig, path)
    return paths


# --------------------------------------------------------------------------- command

def _caps(text: str) -> tuple[int, ...]:
    try:
        caps = tuple(int(c) for c in text.split(","))
    except ValueError:
        raise InputError(f"--caps: expected positive integers separated by commas, got {text!r}") from None
    if not caps or min(caps) < 1:
        raise InputError(f"--caps: expected positive integers separated by commas, got {text!r}")
    return caps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--caps", default=",".join(map(str, CAPS)), help="per-step iteration caps, comma-separated")
    ap.add_argument("--cache", default=str(CACHE), help="folder of the packings kept between runs")
    ap.add_argument("--apgd-cap", type=int, default=APGD_CAP, help="APGD's iteration cap on each step")
    ap.add_argument("--threads", type=int, default=1, help="threads of the compiled kernels (default 1: one core)")
    ap.add_argument("--replicates", type=int, default=None,
                    help=f"packings per cap, round-off twins (default {REPLICATES}; {QUICK['replicates']} with --quick)")
    ap.add_argument("--quick", action="store_true", help="a CI-sized sweep (64 spheres for 0.5 s, caps "
                    f"{', '.join(map(str, QUICK['caps']))}, {QUICK['replicates']} replicates), never written")
    ap.add_argument("--write", action="store_true", help="write docs/results/settledness.* (the full sweep only)")
    args = ap.parse_args(argv)
    try:
        from workbench import threads
        from workbench.report.reproduction import MIN_MEMBERS
        caps = QUICK["caps"] if args.quick else _caps(args.caps)
        replicates = args.replicates or (QUICK["replicates"] if args.quick else REPLICATES)
        apgd_cap = QUICK["apgd_cap"] if args.quick else args.apgd_cap
        if args.apgd_cap < 1 or args.threads < 1 or replicates < 1:
            raise InputError("--apgd-cap, --replicates and --threads: expected positive integers")
        if args.write and (args.quick or caps != CAPS or args.apgd_cap != APGD_CAP or replicates < REPLICATES):
            raise InputError(f"--write takes the full sweep only (the default --caps and --apgd-cap, at least "
                             f"{REPLICATES} replicates, no --quick)")
        fewer = ("--quick: a CI-sized check" if args.quick else f"--replicates {replicates} given (the run's cost "
                 "bound: each replicate is a full settle per cap)") if replicates < MIN_MEMBERS else None
        threads.use(args.threads)
        data = sweep(caps, Path(args.cache) / ("quick" if args.quick else ""), QUICK["overrides"] if args.quick else None, apgd_cap=apgd_cap,
                     progress=sys.stderr.isatty(), replicates=replicates, fewer=fewer)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(data), end="")
    folder = RESULTS_DIR if args.write else Path(tempfile.mkdtemp(prefix="settledness-"))
    command = "python -m benchmarks.reproduce.settledness" + (" --quick" if args.quick else "") + \
        (f" --replicates {args.replicates}" if args.replicates else "") + (" --write" if args.write else "")
    page = write_results(NAME, data, render, command, folder=folder)
    for path in [page, *write_figure(data, folder)]:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
