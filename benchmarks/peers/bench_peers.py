"""Ours against Siconos and Clarabel under fair rules, and issue 25's targets, in one run
(python -m benchmarks.peers.bench_peers [--quick]); writes docs/results/peers.md and .json. This module picks
the problems (the corpus, the generated stacks, the tuning/held-out split), computes the figures and targets and
renders the page; the timed runs themselves are benchmarks/peers/measure.py's.

docs/benchmarks.md says what each figure includes; in short:

1. Exact problem, ours against Siconos, on every problem with contacts of the shared corpus
   (../shared/data: fclib/*.hdf5, siconos/*.dat; ``--problems GLOB`` selects). Siconos runs in its own
   process, a plain script (benchmarks/peers/siconos_peer.py under the system interpreter) that reads each
   file as Siconos reads it, sends 3D local problems to fc3d, 2D ones to fc2d and global ones to gfc3d
   (2D global ones: Siconos's condensation, then fc2d), and tries every Siconos solver of that class.
   Ours: every in-house exact method. Every timed solve, on either side, starts from a freshly read
   problem object: ours is a new TimeStepProblem built from the arrays as read (no cached operator,
   norm or factor: checked before the clock starts), Siconos's is read again from the file; the
   reading is outside the clock on both sides. Repetitions are interleaved (repetition k runs every
   method on every problem, in a rotated order, before k + 1); a method that misses 1e-8 in one
   repetition is not run again on that problem (it cannot be the best). Accuracy: the workbench's
   ``siconos_error`` of the returned impulses <= 1e-8, the same function for both sides.
   Figures: solver time (ours: the formulation's build + the solver's solve, i.e. everything computed
   from (W, q, mu) or (M, H, f, w, mu); Siconos: the driver) and whole-call time (ours: the whole
   ``workbench.method.solve`` call with its checks and metrics; Siconos: SolverOptions to the
   driver's return), medians with [min-max]. Best = the smallest median among the methods that reached
   1e-8 in every repetition. A problem only one side solves counts as the time limit for the other
   (qpbenchmark's rule); problems neither solves are listed, not in the means.
2. Siconos check: the best Siconos method on a few .dat problems run by benchmarks/peers/siconos_plain.py,
   the plainest Siconos script, in a process of its own, against the times of section 1.
3. Per-call overhead: one iteration on a 1-contact problem, fresh object per call.
4. Relaxed problem against Clarabel at its own default accuracy: Clarabel's own solve time (not cvxpy's
   compilation) and objective; ours, the time to reach that objective within 1e-6 relative.
5. Cold command line: ``workbench --version`` and ``workbench solve`` of a 4-contact file in new
   processes (wall time, peak resident memory), after one untimed run that fills the on-disk caches.
6. Issue 25's targets with this run's figures, met or missed.

Options: ``--quick`` (3 repetitions, cap 2 s; default 5 repetitions, cap 5 s), ``--repetitions K``,
``--problems GLOB``, ``--time-limit S``, ``--skip-relaxed``, ``--skip-cold``, ``--write-split`` (write the
committed tuning/held-out split, benchmarks/peers/split.json, by SPLIT_RULE; the page reports issue 47's figures on each
half), ``--stacks`` (only the
corpus's towers and the generated stacks, problems.stacks, exact part; printed, never written), ``--write`` (write
docs/results/peers.* and the README's copy; without it the page is only printed).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.peers import peer_process
from benchmarks.peers.measure import (CLARABEL_DEFAULTS, COLD_FILE, FIRST_ORDER, FLOOR_LABEL, ONE_CONTACT,
                                      RELAXED_CAP_FACTOR,
                                      RELAXED_MIN_CAP, SCALING, SETTLED, TOL, best, cold, measure_exact, overhead,
                                      relaxed, siconos_check, warm_up)
from workbench.errors import InputError
from workbench.io import load_problem
from workbench.problem import TimeStepProblem
from workbench.shared_data import shared_data_dir
from workbench.solvers.siconos import SICONOS_PYTHON, probe

#: the corpus's stacked towers (box stacks, most contacts sticking)
TOWERS = ("fclib/Box_Stacks-i0122-82-5.hdf5", "siconos/BoxesStack1-i100000-32.hdf5.dat")
#: the generated stacks (problems.stacks), written as FCLib local problems (W, q) so that Siconos reads
#: them as it reads the corpus's; they enter the tower target, not the corpus's means
GENERATED = (("box_tower", {"n": 12}), ("box_tower", {"n": 15, "jitter": 0.3, "seed": 3}),
             ("brick_wall", {"courses": 6, "bricks": 5}), ("brick_wall", {"courses": 10, "bricks": 8}),
             ("box_tower", {"n": 2, "jitter": 0.2, "seed": 5}), ("box_pyramid", {"base": 5}),
             ("box_pyramid", {"base": 8, "jitter": 0.2, "seed": 2}), ("corbel_arch", {"courses": 6}),
             ("corbel_arch", {"courses": 3, "overhang": 0.3}), ("thin_box_pile", {"n": 50}),
             ("thin_box_pile", {"n": 200, "seed": 1}))
SMALL = 10
#: the tuning and held-out halves (issue 47 item 3): the corpus's problems with contacts and the GENERATED
#: stacks, split by SPLIT_RULE (split_halves) and committed as data in SPLIT_FILE before any tuning; a gain
#: counts only if the held-out half shows it
SPLIT_FILE = Path(__file__).with_name("split.json")
SPLIT_RULE = ("within each size class (SIZE_CLASSES, by contacts), the problems in the order of the SHA-256 of "
              "their names (the path under ../shared/data, or generated/NAME.hdf5), alternately tuning and "
              "held-out, starting with tuning in the first, third, ... class and held-out in the others")
HALVES = ("tuning", "held-out")
#: size classes of the split: (largest contact count, name)
SIZE_CLASSES = ((10, "at most 10 contacts"), (100, "11 to 100"), (1000, "101 to 1000"), (math.inf, "over 1000"))
#: issue 47's targets, judged on each half (the held-out half decides)
TARGETS_47 = {"geomean": 0.8, "small": 1.5, "worst": 2.0, "stacks": 1.0}
#: issue 25's targets
TARGETS = {"geomean": 0.8, "small": 1.5, "small_call": 2.5, "worst": 2.0, "tower": 1.0, "first_order": 3.0,
           "ipm": 0.6, "version_s": 0.15, "version_MiB": 60.0, "solve_s": 0.5}
#: issue 33's targets: APGD's whole solve() call on the one-contact file [us]; at most SMALL contacts, the geometric
#: mean of the solver-time ratios and the worst ratio; the corpus's geometric mean; every stack (the corpus's and
#: the generated ones); the cold `workbench solve` [s]; ipm to the accurate objective over Clarabel's own time
TARGETS_33 = {"call_us": 20.0, "small": 2.0, "small_worst": 3.0, "geomean": 0.8, "stacks": 1.0, "solve_s": 0.5,
              "ipm": 0.6}


# ---------------------------------------------------------------------------------------------- problems
def corpus(pattern: str) -> tuple[list[tuple[str, Path, TimeStepProblem]], list[str]]:
    """(relative path, file, problem) of every corpus file with contacts matching ``pattern`` (globs
    separated by commas); and the files the workbench cannot read, with why."""
    root = shared_data_dir()
    if root is None:
        sys.exit("the shared data (../shared/data) was not found; set WORKBENCH_SHARED_DATA")
    out, unread = [], []
    for f in sorted(list(root.glob("fclib/*.hdf5")) + list(root.glob("siconos/*.dat"))):
        rel = str(f.relative_to(root))
        if not any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(f.name, g) for g in pattern.split(",")):
            continue
        try:
            p = load_problem(f)
        except InputError as exc:
            unread.append(f"{f.name} ({str(exc).split(': ', 1)[-1]})")
            continue
        if p.n_contacts:
            out.append((rel, f, p))
    return out, unread


def generated_stacks(folder: Path) -> list[tuple[str, Path, TimeStepProblem]]:
    """(``generated/NAME.hdf5``, file, problem) of every GENERATED stack, written to ``folder`` and
    read back as both sides read a corpus file."""
    from problems import stacks
    from workbench.export import export
    out = []
    for name, params in GENERATED:
        p = getattr(stacks, name)(**params)
        path = folder / f"{p.name}.hdf5"
        export(p, "local", "fclib", path)
        out.append((f"generated/{path.name}", path, load_problem(path)))
    return out


def size_class(contacts: int) -> str:
    """The name of the SIZE_CLASSES class of a problem of ``contacts`` contacts."""
    return next(name for top, name in SIZE_CLASSES if contacts <= top)


def split_halves(contacts: dict[str, int]) -> dict[str, str]:
    """SPLIT_RULE applied to {name: contacts}: {name: "tuning" or "held-out"}. Depends on the names and
    their size classes only: not on the order given, the machine or any measurement."""
    out = {}
    for c, (_, cls) in enumerate(SIZE_CLASSES):
        names = sorted((n for n in contacts if size_class(contacts[n]) == cls),
                       key=lambda n: hashlib.sha256(n.encode()).hexdigest())
        for i, name in enumerate(names):
            out[name] = HALVES[(i + c) % 2]
    return out


def split_entries(corpus_rows, generated_rows) -> dict:
    """The data of SPLIT_FILE from the problems (``(name, file, problem)`` as :func:`corpus` and
    :func:`generated_stacks` give them): every problem's contacts, size class and half, and the rule."""
    contacts = {name: p.n_contacts for name, _, p in [*corpus_rows, *generated_rows]}
    halves = split_halves(contacts)
    return {"rule": SPLIT_RULE, "size_classes": [[t if t < math.inf else None, n] for t, n in SIZE_CLASSES],
            "generated": [[name, params] for name, params in GENERATED],
            "problems": [{"name": n, "contacts": contacts[n], "size_class": size_class(contacts[n]), "half": halves[n]}
                         for n in sorted(contacts)]}


def load_split(path: Path = SPLIT_FILE) -> dict[str, str]:
    """{name: half} of the committed split."""
    return {e["name"]: e["half"] for e in json.loads(path.read_text())["problems"]}


# ---------------------------------------------------------------------------------------------- summary
def fair_ratio(ours: float | None, siconos: float | None, cap: float) -> float | None:
    """ours / Siconos, a side that did not solve counted as the time limit ``cap`` (None: neither did)."""
    if ours is None and siconos is None:
        return None
    return (cap if ours is None else ours) / (cap if siconos is None else siconos)


def ratios(row: dict, cap: float) -> dict:
    """The problem's best of each side and its ratios (solver, call) under the time-limit rule."""
    o, s = best(row, "ours"), best(row, "siconos")
    med = lambda b, k: None if b is None else float(np.median(b[1][k]))  # noqa: E731
    return {"ours": o, "siconos": s, "solver": fair_ratio(med(o, "solver"), med(s, "solver"), cap),
            "call": fair_ratio(med(o, "call"), med(s, "call"), cap)}


def geomean(x) -> float | None:
    x = [v for v in x if v is not None]
    return float(np.exp(np.mean(np.log(x)))) if x else None


# ---------------------------------------------------------------------------------------------- targets
def verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("met" if ok else "missed")


def by_how_much(value: float | None, limit: float) -> str:
    """A figure against an upper limit: "met", "missed by 1.25x" (value / limit) or "not measured"."""
    if value is None:
        return "not measured"
    return "met" if value <= limit else f"missed by {value / limit:.2f}x"


def targets_33(data: dict) -> list[tuple[str, str, str, str]]:
    """Issue 33's targets: (figure, this run, target, met / missed by how much / not measured)."""
    T, ex = TARGETS_33, exact_figures(data)
    out = []
    call = next((o["call_us"] for o in data.get("overhead", []) if o["method"] == "apgd"), None)
    out.append((f"APGD's whole `solve()` call, one iteration on {Path(ONE_CONTACT).name} (1 contact)",
                "-" if call is None else f"{call:.0f} us", f"<= {T['call_us']:g} us", by_how_much(call, T["call_us"])))
    out.append((f"geometric mean ours / Siconos best, problems <= {SMALL} contacts, solver time",
                "-" if ex["small"] is None else f"{ex['small']:.2f} over {ex['small_n']}", f"<= {T['small']:g}",
                by_how_much(ex["small"], T["small"])))
    small = [r for r in ex["rows"] if r["solver"] is not None and not r["degenerate"] and r["contacts"] <= SMALL]
    worst = max(small, key=lambda r: r["solver"], default=None)
    over = sum(r["solver"] > T["small_worst"] for r in small)
    out.append((f"worst problem <= {SMALL} contacts, solver time",
                "-" if worst is None else f"{worst['solver']:.2f} ({Path(worst['problem']).name}); {over} of "
                                          f"{len(small)} above {T['small_worst']:g}x",
                f"<= {T['small_worst']:g}", by_how_much(None if worst is None else worst["solver"], T["small_worst"])))
    out.append(("geometric mean ours / Siconos best, every corpus problem, solver time",
                "-" if ex["geomean"] is None else f"{ex['geomean']:.2f} over {ex['n']}", f"<= {T['geomean']:g}",
                by_how_much(ex["geomean"], T["geomean"])))
    towers = [r for r in ex["towers"] if r["solver"] is not None]
    tw = max(towers, key=lambda r: r["solver"], default=None)
    out.append(("every stack, the corpus's and the generated towers and walls, the worst: "
                + ", ".join(f"{Path(r['problem']).name} {r['solver']:.2f}" for r in towers),
                "-" if tw is None else f"{tw['solver']:.2f} ({Path(tw['problem']).name})", f"<= {T['stacks']:g}",
                by_how_much(None if tw is None else tw["solver"], T["stacks"])))
    c = data.get("cold")
    s = float(np.median(c["solve"]["s"])) if c else None
    out.append((f"`workbench solve` of a 4-contact file ({Path(COLD_FILE).name}), cold process",
                "-" if s is None else f"{s:.2f} s{floor_note(c)}", f"<= {T['solve_s']:g} s", by_how_much(s, T["solve_s"])))
    rel = data.get("relaxed") or {}
    for spec in (SETTLED, SCALING):
        q = relaxed_ratio(rel[spec], "ipm") if spec in rel else None
        out.append((f"{spec.split(':')[1]}, ipm to the accurate objective / Clarabel's own time",
                    "-" if q is None else f"{q:.2f}", f"<= {T['ipm']:g}", by_how_much(q, T["ipm"])))
    return out


def exact_figures(data: dict) -> dict:
    """Geometric means and extremes of the exact part (the time-limit rule applied)."""
    cap = data["settings"]["cap"]
    rows = [row for row in data["exact"] if not row["problem"].startswith("generated/")]
    rs = [dict(ratios(row, cap), problem=row["problem"], contacts=row["contacts"], kind=f"{row['d']}D {row['kind']}",
               degenerate=row["degenerate"]) for row in rows]
    both = [r for r in rs if r["solver"] is not None and not r["degenerate"]]
    small = [r for r in both if r["contacts"] <= SMALL]
    worst = max(both, key=lambda r: r["solver"], default=None)
    return {"rows": rs, "n": len(both), "neither": [r["problem"] for r in rs if r["solver"] is None],
            "degenerate": [r["problem"] for r in rs if r["degenerate"]],
            "no_2d_global": geomean([r["solver"] for r in both if r["kind"] != "2D global"]),
            "ours_only": sum(r["siconos"] is None and r["ours"] is not None for r in both),
            "siconos_only": sum(r["ours"] is None and r["siconos"] is not None for r in both),
            "geomean": geomean([r["solver"] for r in both]), "geomean_call": geomean([r["call"] for r in both]),
            "small_n": len(small), "small": geomean([r["solver"] for r in small]),
            "small_call": geomean([r["call"] for r in small]),
            "big": geomean([r["solver"] for r in both if r["contacts"] >= 50]),
            "worst": worst, "towers": [dict(ratios(row, cap), problem=row["problem"]) for row in data["exact"]
                                       if row["problem"] in TOWERS or row["problem"].startswith("generated/")]}


def half_figures(data: dict, split: dict[str, str] | None = None) -> dict:
    """Issue 47's figures on each half of the split (SPLIT_FILE unless ``split`` is given), by the same
    rules as the whole page's means (the time-limit rule; problems neither side solves and round-off
    problems left out): problems counted, the geometric mean of ours / Siconos (solver time), the same over
    those of at most SMALL contacts, the worst problem, the worst stack (the corpus's TOWERS and the
    generated ones); ``unsplit``: problems of the run the split does not name."""
    split = load_split() if split is None else split
    cap = data["settings"]["cap"]
    per, unsplit = {h: [] for h in HALVES}, []
    for row in data["exact"]:
        half = split.get(row["problem"])
        r = dict(ratios(row, cap), problem=row["problem"], contacts=row["contacts"])
        if half is None:
            unsplit.append(row["problem"])
        elif r["solver"] is not None and not row["degenerate"]:
            per[half].append(r)
    out = {"unsplit": unsplit}
    for half, rs in per.items():
        small = [r for r in rs if r["contacts"] <= SMALL]
        stacks = [r for r in rs if r["problem"] in TOWERS or r["problem"].startswith("generated/")]
        worst = lambda rows: max(rows, key=lambda r: r["solver"], default=None)  # noqa: E731
        out[half] = {"n": len(rs), "geomean": geomean([r["solver"] for r in rs]), "small_n": len(small),
                     "small": geomean([r["solver"] for r in small]), "worst": worst(rs), "stacks_n": len(stacks),
                     "stacks": worst(stacks)}
    return out


def half_table(data: dict, split: dict[str, str] | None = None) -> list[str]:
    """Markdown lines: issue 47's figures on the tuning and the held-out half against TARGETS_47."""
    hf, T = half_figures(data, split), TARGETS_47
    fig = lambda x, t: "-" if x is None else f"{x:.2f} ({by_how_much(x, t)})"  # noqa: E731
    named = lambda r, t: "-" if r is None else f"{Path(r['problem']).name} {fig(r['solver'], t)}"  # noqa: E731
    body = [[half, str(hf[half]["n"]), fig(hf[half]["geomean"], T["geomean"]),
             f"{fig(hf[half]['small'], T['small'])} over {hf[half]['small_n']}", named(hf[half]["worst"], T["worst"]),
             f"{named(hf[half]['stacks'], T['stacks'])} of {hf[half]['stacks_n']}"] for half in HALVES]
    lines = table(["half", "problems", f"geometric mean (<= {T['geomean']:g})",
                   f"at most {SMALL} contacts (<= {T['small']:g})", f"worst (<= {T['worst']:g})",
                   f"worst stack (<= {T['stacks']:g})"], body, "|---|---:|---|---|---|---|")
    lines += ["", f"The split ({SPLIT_FILE.name}, committed before the work): {SPLIT_RULE}. A gain counts only if "
              "the held-out half shows it."]
    if hf["unsplit"]:
        lines.append(f"In no half (not in {SPLIT_FILE.name}): {', '.join(Path(p).name for p in hf['unsplit'])}.")
    return lines


def relaxed_ratio(entry: dict, method: str) -> float | None:
    if "missing" in entry:
        return None
    t = entry["to_target"].get(method)
    return float(np.median(t) / np.median(entry["clarabel"])) if t else None


def targets(data: dict) -> list[tuple[str, str, str, str]]:
    """Issue 25's targets: (figure, this run, target, verdict)."""
    T, ex = TARGETS, exact_figures(data)
    fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    out = [("geometric mean ours / Siconos best, exact 1e-8, fair rules, fresh objects (solver time)",
            f"{fmt(ex['geomean'])} over {ex['n']} problems", f"<= {T['geomean']:g}",
            verdict(None if ex["geomean"] is None else ex["geomean"] <= T["geomean"])),
           (f"same, problems <= {SMALL} contacts, solver time", f"{fmt(ex['small'])} over {ex['small_n']}",
            f"<= {T['small']:g}", verdict(None if ex["small"] is None else ex["small"] <= T["small"])),
           (f"same, problems <= {SMALL} contacts, whole call", fmt(ex["small_call"]), f"<= {T['small_call']:g}",
            verdict(None if ex["small_call"] is None else ex["small_call"] <= T["small_call"]))]
    w = ex["worst"]
    out.append(("worst single problem", "-" if w is None else f"{w['solver']:.2f} ({Path(w['problem']).name})",
                f"<= {T['worst']:g}", verdict(None if w is None else w["solver"] <= T["worst"])))
    towers = [r for r in ex["towers"] if r["solver"] is not None]
    tw = max(towers, key=lambda r: r["solver"], default=None)
    generated = any(r["problem"].startswith("generated/") for r in ex["towers"])
    # a run recorded before the generated stacks (none in its rows) keeps its own label
    what = ("the corpus's box stacks and the generated towers and walls, the worst of " if generated
            else "the corpus's box stacks, the worse of ")
    out.append(("stacked tower (sticking): " + what + ", ".join(Path(r["problem"]).name for r in ex["towers"]),
                "-" if tw is None else f"{tw['solver']:.2f} ({Path(tw['problem']).name})", f"<= {T['tower']:g}",
                verdict(None if tw is None else tw["solver"] <= T["tower"])))
    rel = data.get("relaxed")
    if rel and SETTLED in rel:
        e = rel[SETTLED]
        fo = {m: relaxed_ratio(e, m) for m in FIRST_ORDER}
        reached = {m: q for m, q in fo.items() if q is not None}
        m = min(reached, key=reached.get) if reached else None
        # data measured before the accurate target (no target_tol) keeps its own, honest label
        target = (f"1e-6 of the accurate optimum (Clarabel to {e['target_tol']:g})" if "target_tol" in e
                  else "1e-6 of its objective")
        out.append((f"settled-00320 relaxed, best first-order / Clarabel's own time to {target}",
                    f"{m} {reached[m]:.2f}" if m else f"none within {RELAXED_CAP_FACTOR:g}x", f"<= {T['first_order']:g}",
                    verdict(m is not None and reached[m] <= T["first_order"])))
        ipm = {spec.split(":")[1]: relaxed_ratio(rel[spec], "ipm") for spec in (SETTLED, SCALING)
               if spec in rel and "missing" not in rel[spec]}
        gone = [spec.split(":")[1] for spec in (SETTLED, SCALING) if "missing" in rel.get(spec, {"missing": 1})]
        measured = ", ".join(f"{k} {fmt(q)}" for k, q in ipm.items()) + "".join(f", {k} not measured (no dataset)" for k in gone)
        missed = any(q is None or q > T["ipm"] for q in ipm.values())
        out.append(("settled-00320 and scaling-02560, ipm to " + ("the accurate" if "target_tol" in e else "Clarabel's")
                    + " objective / Clarabel's own time",
                    measured.lstrip(", "), f"<= {T['ipm']:g}", verdict(False if missed else (None if gone else True))))
    else:
        out += [("settled-00320 relaxed, best first-order / Clarabel's own time", "-", f"<= {T['first_order']:g}",
                 verdict(None)),
                ("settled-00320 and scaling-02560, ipm / Clarabel's own time", "-", f"<= {T['ipm']:g}", verdict(None))]
    c = data.get("cold")
    if c:
        s, mib = float(np.median(c["version"]["s"])), float(np.median(c["version"]["MiB"]))
        out.append(("`workbench --version`", f"{s:.2f} s, {mib:.0f} MiB",
                    f"<= {T['version_s']:g} s, <= {T['version_MiB']:g} MiB",
                    verdict(s <= T["version_s"] and mib <= T["version_MiB"])))
        s = float(np.median(c["solve"]["s"]))
        out.append((f"`workbench solve` of a 4-contact file ({Path(COLD_FILE).name}), cold process",
                    f"{s:.2f} s{floor_note(c)}", f"<= {T['solve_s']:g} s", verdict(s <= T["solve_s"])))
    else:
        out += [("`workbench --version`", "-", f"<= {T['version_s']:g} s, <= {T['version_MiB']:g} MiB", verdict(None)),
                ("`workbench solve` of a 4-contact file, cold process", "-", f"<= {T['solve_s']:g} s", verdict(None))]
    out.append(("test suite, fresh clone, 2 cores", "not measured by this benchmark", "<= 8 min", verdict(None)))
    return out


# ---------------------------------------------------------------------------------------------- page
def spread(values) -> str:
    v = np.asarray(values)
    return f"{np.median(v):.3g} [{v.min():.3g}-{v.max():.3g}]"


def table(head: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    align = align or "|---" * len(head) + "|"
    return ["| " + " | ".join(head) + " |", align] + ["| " + " | ".join(r) + " |" for r in rows]


def target_tables(data: dict) -> list[str]:
    """Issue 33's targets, then issue 25's (each figure met, missed or not measured)."""
    lines = ["## Targets (issue 33)", ""]
    lines += table(["figure", "this run", "target", ""], [list(t) for t in targets_33(data)])
    lines += ["", "## Targets (issue 25)", ""]
    return lines + table(["figure", "this run", "target", ""], [list(t) for t in targets(data)])


def render_targets(data: dict) -> str:
    """The targets tables of a run alone (the README's copy); the whole page is :func:`render`'s."""
    return "\n".join(target_tables(data) + ["", "All figures of the run, with what each includes: "
                                                 "docs/results/peers.md."])


def render(data: dict) -> str:
    """The results page of a run (markdown); the same for the data and for its JSON record, whose
    objects have sorted keys."""
    s = data["settings"]
    cap = s["cap"]
    ex = exact_figures(data)
    # settings' problems counts the generated stacks too (read as the corpus's files are)
    generated = sum(row["problem"].startswith("generated/") for row in data["exact"])
    counted = f"{s['problems'] - generated} corpus problems"
    counted += f" and {generated} generated stack{'s' * (generated != 1)}" if generated else ""
    lines = [f"{s['repetitions']} interleaved repetitions, time limit {cap:g} s per run, Siconos error "
             f"{TOL:g} judged by the workbench's siconos_error for both sides; {counted}"
             f"{' (quick run)' if s['quick'] else ''}; Siconos {s['siconos']}; load average {s['load_start']} at the "
             f"start, {s['load_end']} at the end; {s['wall_s']:.0f} s in all. Seconds, median [min-max]; a "
             "fresh problem object for every timed solve on both sides; docs/benchmarks.md says what each figure "
             "includes.", ""]
    lines += target_tables(data)
    if "split" in data:               # runs since the split (issue 47): the halves it used
        lines += ["", "## Tuning and held-out halves", "", *half_table(data, data["split"])]
    lines += ["", "## Exact problem: ours vs Siconos", ""]
    body = []
    for row in data["exact"]:  # the generated stacks too, after the corpus
        r = ratios(row, data["settings"]["cap"])
        o, sc = r["ours"], r["siconos"]
        cells = [Path(row["problem"]).name, str(row["contacts"]), f"{row['d']}D {row['kind']}"]
        cells += [o[0], spread(o[1]["solver"]), spread(o[1]["call"])] if o else ["none reached 1e-8", "-", "-"]
        cells += [sc[0], spread(sc[1]["solver"]), spread(sc[1]["call"])] if sc else ["none reached 1e-8", "-", "-"]
        q = lambda x: "-" if x is None else f"{x:.3g}"  # noqa: E731
        note = " (time limit)" if (o is None) != (sc is None) else ""
        note += " (round-off q: not in the means)" if row["degenerate"] else ""
        note += " (generated: not in the means)" if row["problem"].startswith("generated/") else ""
        cells += [q(r["solver"]) + note, q(r["call"]) + note]
        body.append(cells)
    lines += table(["problem", "contacts", "kind", "ours best", "ours solver [s]", "ours call [s]", "Siconos best",
                    "Siconos solver [s]", "Siconos call [s]", "ratio solver", "ratio call"], body,
                   "|---|---:|---|---|---|---|---|---|---|---:|---:|")
    g = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    lines += ["", f"Geometric mean of ours / Siconos: {g(ex['geomean'])} solver time, {g(ex['geomean_call'])} whole "
              f"call, over {ex['n']} problems ({ex['ours_only']} only ours solves, {ex['siconos_only']} only "
              f"Siconos solves: the other side counted at the time limit); {g(ex['small'])} solver / "
              f"{g(ex['small_call'])} call over the {ex['small_n']} with <= {SMALL} contacts; {g(ex['big'])} over "
              f"those with >= 50 contacts."]
    lines.append(f"Without the 2D global problems (Siconos 4.4 has no 2D global solver: its time there is mostly "
                 f"its condensation to the local problem): {g(ex['no_2d_global'])}.")
    if ex["neither"]:
        lines.append(f"Neither side reached 1e-8 (not in the means): {', '.join(Path(p).name for p in ex['neither'])}.")
    if ex["degenerate"]:
        lines.append(f"Not in the means, ||q|| at round-off next to W (the solution is r = 0 to round-off and a "
                     f"relative error measure divides round-off by round-off): "
                     f"{', '.join(Path(p).name for p in ex['degenerate'])}.")
    claimed = sum(row["claimed_missed"] for row in data["exact"])
    lines.append(f"Siconos runs that claimed convergence (info 0) but were above 1e-8 by the workbench's measure: "
                 f"{claimed}. Siconos process restarts (a run past the time limit or a crash): {s['restarts']}.")
    if data.get("unread"):
        lines.append(f"Not read by the workbench (left out): {'; '.join(data['unread'])}.")
    missed = [f"{Path(row['problem']).name}: " + ", ".join(f"{k.split(':', 1)[1]} ({v})"
                                                           for k, v in sorted(row["missed"].items()))
              for row in data["exact"] if row["missed"]]
    lines += ["", "<details><summary>Methods that missed 1e-8 (first repetition missed; not run again on that "
              "problem)</summary>", ""] + [f"- {m}" for m in missed] + ["", "</details>"]
    lines += ["", "## Siconos check: the plain script", "",
              "The best Siconos method of a few problems, timed again by benchmarks/peers/siconos_plain.py (read the "
              ".dat file, one untimed solve, then each repetition on a problem read anew) in a process of its own.", ""]
    body = []
    for c in data.get("siconos_check", []):
        p = c["plain"]
        if "median" in p:
            ratio = p["median"] / float(np.median(c["bench"]))
            body.append([Path(c["problem"]).name, c["method"], spread(c["bench"]),
                         f"{p['median']:.3g} [{p['min']:.3g}-{p['max']:.3g}] ({c['plain_repetitions']})", f"{ratio:.2f}"])
        else:
            body.append([Path(c["problem"]).name, c["method"], spread(c["bench"]), p.get("error", "-"), "-"])
    lines += table(["problem", "method", "this benchmark [s]", "plain script [s] (repetitions)", "plain / benchmark"],
                   body, "|---|---|---|---|---:|")
    lines += ["", "## Per-call overhead", "",
              f"One iteration (max_iter 1) on {Path(ONE_CONTACT).name} (1 contact), a fresh problem object per call, "
              "median of 200 calls; the iteration itself is well under a microsecond, so both columns are overhead.", ""]
    lines += table(["method", "whole solve() call [us]", "build + solve [us]"],
                   [[o["method"], f"{o['call_us']:.0f}", f"{o['solver_us']:.0f}"] for o in data.get("overhead", [])],
                   "|---|---:|---:|")
    lines += ["", floor_reach(data)]
    for name, why in sorted(data.get("failed_sections", {}).items()):
        lines += ["", f"Section {name} failed and was not measured: {why}"]
    rel = data.get("relaxed")
    if rel:
        lines += ["", "## Relaxed problem: ours vs Clarabel", "",
                  "Clarabel at its own default tolerances (" + ", ".join(CLARABEL_DEFAULTS) + "; one thread), "
                  "its own solve time (not cvxpy's compilation); ours: build + the time of the first iterate whose "
                  "dual objective is within 1e-6 relative of Clarabel's (from a run with a history), capped at "
                  f"{RELAXED_CAP_FACTOR:g}x Clarabel's time (at least {RELAXED_MIN_CAP:g} s).", ""]
        body = []
        for spec, e in sorted(rel.items(), key=lambda item: (item[0] != SETTLED, item[0])):
            if "missing" in e:
                body.append([spec, "-", "-", e["missing"], "-"])
                continue
            for m in ["clarabel"] + sorted(set(e["to_target"]) | set(e["missed"])):
                if m == "clarabel":
                    body.append([spec, f"{e['contacts']:,}", "clarabel (own time)", spread(e["clarabel"]), "1"])
                elif m in e["to_target"]:
                    body.append([spec, f"{e['contacts']:,}", m, spread(e["to_target"][m]), f"{relaxed_ratio(e, m):.2f}"])
                else:
                    body.append([spec, f"{e['contacts']:,}", m, e["missed"][m], "-"])
        lines += table(["problem", "contacts", "method", "seconds", "/ Clarabel"], body, "|---|---:|---|---|---:|")
    c = data.get("cold")
    if c:
        lines += ["", "## Cold command line", "",
                  "New processes, after one untimed run (the on-disk compile and byte-code caches are filled); wall "
                  "seconds and peak resident memory, median [min-max].", ""]
        lines += table(["command", "seconds", "MiB"], [[f"`{c[k]['command']}`", spread(c[k]["s"]), spread(c[k]["MiB"])]
                                                      for k in ("version", "solve", "floor", "siconos") if k in c],
                       "|---|---|---|")
        if "floor" in c:
            lines += ["", "The floor (`measure.FLOOR_CODE`) is a process that imports numpy, scipy.sparse and numba "
                      "and calls one of the workbench's smallest cached kernels, and nothing else: what any cold "
                      "command that solves with a compiled kernel pays before its own work."]
    return "\n".join(lines) + "\n"


def floor_reach(data: dict) -> str:
    """The floor row of the overhead table (measure.FloorSolver) against the exact table: the counted problems
    whose best Siconos time is below the floor over issue 47's worst-problem target, where no in-house method
    called through workbench.method.solve can meet that target."""
    floor = next((o["solver_us"] for o in data.get("overhead", []) if o["method"] == FLOOR_LABEL), None)
    if floor is None:
        return "The floor was not measured in this run."
    worst = TARGETS_47["worst"]
    below = []
    for row in data.get("exact", []):
        sic = best(row, "siconos")
        if not row.get("degenerate") and sic is not None:
            t = float(np.median(sic[1]["solver"])) * 1e6
            if floor / t > worst:
                below.append(f"{row['problem']} ({sic[0]}, {t:.1f} us)")
    head = (f"The floor (`measure.FloorSolver`: the NCP model's build, the recorder, one compiled call with the "
            f"dense Newton run's arguments that returns at once, judged as every solve) is {floor:.1f} us of "
            f"build + solve, the least any in-house method reports through `workbench.method.solve`. ")
    if not below:
        return head + f"No counted problem has a best Siconos time below it / {worst:g}."
    return (head + f"Counted problems whose best Siconos time is below the floor / {worst:g}, where the "
            f"worst-problem target ({worst:g}) is out of reach of every in-house method: " + ", ".join(below) + ".")


def floor_note(cold: dict | None) -> str:
    """" (the floor under it: X s)" when the cold section measured the floor (measure.FLOOR_CODE), else ""."""
    if not cold or "floor" not in cold:
        return ""
    return f" (the floor under it: {float(np.median(cold['floor']['s'])):.2f} s)"


# ---------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repetitions, time limit 2 s")
    ap.add_argument("--repetitions", type=int, default=None, help="interleaved repetitions (default 5; quick 3)")
    ap.add_argument("--problems", default="*", help="globs on the corpus path (fclib/NAME.hdf5) or "
                    "file name, separated by commas")
    ap.add_argument("--time-limit", type=float, default=None, help="per run of the exact part [s] (default 5; quick 2)")
    ap.add_argument("--skip-relaxed", action="store_true", help="leave out the relaxed problems against Clarabel")
    ap.add_argument("--skip-cold", action="store_true", help="leave out the cold command line")
    ap.add_argument("--stacks", action="store_true", help="only the stacks: the corpus's towers and the generated "
                    "ones, exact part only (a quick check of the tower target; not with --write)")
    ap.add_argument("--write", action="store_true", help="also write docs/results/peers.* (default: print the page only)")
    ap.add_argument("--write-split", action="store_true", help=f"write benchmarks/peers/{SPLIT_FILE.name} (the tuning "
                    "and held-out halves of the corpus and the generated stacks, SPLIT_RULE) and stop; no measurement")
    args = ap.parse_args(argv)
    if args.write_split:
        with tempfile.TemporaryDirectory(prefix="bench_peers_split_") as folder:
            data = split_entries(corpus("*")[0], generated_stacks(Path(folder)))
        tmp = SPLIT_FILE.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(SPLIT_FILE)
        print(f"{SPLIT_FILE}: {len(data['problems'])} problems")
        return 0
    reps = args.repetitions or (3 if args.quick else 5)
    cap = args.time_limit or (2.0 if args.quick else 5.0)
    info, why = probe(SICONOS_PYTHON)
    if info is None:
        print(f"Siconos is needed for this benchmark: {why}", file=sys.stderr)
        return 2
    if args.stacks and args.write:
        print("--stacks measures a part of the page: it cannot --write it", file=sys.stderr)
        return 2
    problems, unread = corpus(",".join(TOWERS) if args.stacks else args.problems)
    folder = tempfile.TemporaryDirectory(prefix="bench_peers_stacks_")
    problems += generated_stacks(Path(folder.name))
    if not problems:
        print(f"no corpus problem with contacts matches {args.problems!r}", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    load0 = " ".join(f"{x:.1f}" for x in os.getloadavg())
    peer = peer_process.SiconosProcess()
    try:
        available = peer.methods()
        warm_up(problems, cap)
        rows = measure_exact(problems, reps, cap, peer, available)
        restarts = peer.restarts
    finally:
        peer.close()
        folder.cleanup()
    data = {"exact": rows, "unread": unread, "failed_sections": {}, "split": load_split()}
    # a section that fails is recorded on the page; what the others measured is kept
    sections = [] if args.stacks else [("siconos_check", lambda: siconos_check(problems, rows, reps)),
                                       ("overhead", lambda: overhead(200))]
    sections += [] if args.skip_relaxed or args.stacks else [("relaxed", lambda: relaxed(reps))]
    sections += [] if args.skip_cold or args.stacks else [("cold", lambda: cold(rows, 5))]
    for name, measure in sections:
        try:
            data[name] = measure()
        except Exception as exc:  # noqa: BLE001 - the page says which section failed and why
            data["failed_sections"][name] = " ".join(f"{type(exc).__name__}: {exc}".split())
    data["settings"] = {"quick": args.quick, "repetitions": reps, "cap": cap, "problems": len(problems),
                        "siconos": info["version"], "load_start": load0,
                        "load_end": " ".join(f"{x:.1f}" for x in os.getloadavg()), "restarts": restarts,
                        "wall_s": time.perf_counter() - t_start}
    command = "python -m benchmarks.peers.bench_peers" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    if not args.write:
        print(render(data))
        print("docs/ unchanged: add --write to store the page in docs/results", file=sys.stderr)
    else:
        from benchmarks.peers import bench_peers  # the renderer by its importable name, also under python -m
        from workbench.provenance import ROOT, embed, write_results, write_view
        page = write_results("peers", data, bench_peers.render, command)
        write_view("peers-targets", "peers", bench_peers.render_targets)
        embed(ROOT / "docs" / "benchmarks.md", "peers-targets")   # the copy of the targets table
        print(page.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
