"""Where the in-house first-order methods spend their iterations (issue 25 items 2 and 3):
python3 -m benchmarks.timing.bench_firstorder [--repetitions K] [--max-iter N] [--write]

Part 1, settled packing (dataset:settled-00320, relaxed dual): Clarabel to tol 1e-10
(REFERENCE_TOL, the accurate optimum, not its default stop) gives the reference objective f*; each first-order method (apgd, bb, admm, and apgd warm-started from a short
``ipm`` pass of IPM_ITERATIONS iterations) runs with a history to an unreachable tol, capped at
--max-iter iterations, and the table gives the first iteration (and its seconds, history overhead
included, and the ipm pass's seconds for the warm-started run) whose dual objective is within 1e-4,
1e-5 and 1e-6 relative of f*; "-": not within the cap. Clarabel's solve seconds (at tol 1e-6, its
everyday accuracy) are the median of K runs.

Part 2, stacks (the corpus's BoxesStack1 and Box_Stacks, tol 1e-8 on the Siconos error): anti-relaxed
apgd and admm, ncp newton, and Siconos's ADMM, NSN_AC and NSGS through the workbench's siconos
adapter; K interleaved rounds, each solve on a freshly read problem, after one warm-up solve of each
(compilation outside the timed runs). Median solve seconds [min-max], iterations and status of the
last round. benchmarks.peers.bench_peers gives the fair peer figures (Siconos on its native data).

--write stores the results under docs/results/firstorder (workbench.provenance).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from workbench.io import load_problem
from workbench.provenance import write_results
from workbench.method import solve
from workbench.solvers import SolveOptions
from workbench.shared_data import shared_data_dir
from workbench.sources import load

SETTLED = "dataset:settled-00320"
GAPS = (1e-4, 1e-5, 1e-6)
IPM_ITERATIONS = 16
FIRST_ORDER = ("apgd", "bb", "admm", f"ipm({IPM_ITERATIONS}) -> apgd")
STACKS = ("siconos/BoxesStack1-i100000-32.hdf5.dat", "fclib/Box_Stacks-i0122-82-5.hdf5")
STACK_METHODS = (("anti-relaxed", "apgd"), ("anti-relaxed", "admm"), ("ncp", "newton"), ("ncp", "siconos:ADMM"),
                 ("ncp", "siconos:NSN_AC"), ("ncp", "siconos:NSGS"))
STACK_TOL = 1e-8
#: the accuracy of the reference optimum the gaps are measured against (interior point to 1e-10)
REFERENCE_TOL = 1e-10


def _plain(x):
    """A JSON number: None for NaN."""
    return None if x is None or not np.isfinite(x) else float(x)


def first_within(history, reference: float) -> list[list]:
    """[gap, iteration, seconds] of the first history row within each relative gap of ``reference``."""
    rel = np.abs(history["objective"].to_numpy() - reference) / abs(reference)
    out = []
    for gap in GAPS:
        idx = np.flatnonzero(rel <= gap)
        out.append([gap, int(history["iteration"].iloc[idx[0]]) if idx.size else None,
                    float(history["seconds"].iloc[idx[0]]) if idx.size else None])
    return out


def settled(repetitions: int, max_iter: int) -> dict:
    p = load(SETTLED)
    clarabel = [solve(p, "dual", "clarabel", SolveOptions(tol=1e-6, keep_history=False)) for _ in range(repetitions + 1)]
    # the target is the accurate optimum, never a solver's default stop (Clarabel at tol 1e-6 stops 1.2e-3 from it)
    reference = solve(p, "dual", "clarabel", SolveOptions(tol=REFERENCE_TOL, keep_history=False)).objective
    history = SolveOptions(tol=1e-12, max_iter=max_iter)
    rows = {}
    for m in FIRST_ORDER:
        solve(p, "dual", "apgd" if "->" in m else m, SolveOptions(tol=1e-6, max_iter=20, keep_history=False))
        if "->" in m:
            pre = solve(p, "dual", "ipm", SolveOptions(tol=1e-12, max_iter=IPM_ITERATIONS, keep_history=False))
            res = solve(p, "dual", "apgd", SolveOptions(tol=1e-12, max_iter=max_iter, warm_start=pre.nu))
            start_gap, start_seconds = abs(pre.objective - reference) / abs(reference), pre.solve_seconds
        else:
            res, start_gap, start_seconds = solve(p, "dual", m, history), None, 0.0
        rows[m] = {"within": first_within(res.history, reference), "start_gap": _plain(start_gap),
                   "start_seconds": start_seconds,
                   "final_gap": _plain(abs(res.objective - reference) / abs(reference))}
    return {"contacts": p.n_contacts, "reference": reference, "reference_tol": REFERENCE_TOL, "max_iter": max_iter,
            "clarabel_seconds": sorted(r.solve_seconds for r in clarabel[1:]), "methods": rows}


def stacks(repetitions: int) -> dict:
    root = shared_data_dir()
    out = {}
    for rel in STACKS:
        path = root / rel
        for f, s in STACK_METHODS:                                        # warm-up: compilation, imports
            solve(load_problem(path), f, s, SolveOptions(tol=STACK_TOL, max_iter=20, keep_history=False))
        runs: dict[str, list] = {}
        for _ in range(repetitions):
            for f, s in STACK_METHODS:
                res = solve(load_problem(path), f, s, SolveOptions(tol=STACK_TOL, keep_history=False))
                runs.setdefault(f"{f} {s}", []).append(res)
        out[rel] = {"contacts": load_problem(path).n_contacts, "methods": {
            k: {"seconds": sorted(r.solve_seconds for r in v), "iterations": v[-1].iterations, "status": v[-1].status,
                "siconos_error": _plain(v[-1].metrics.get("siconos_error"))} for k, v in runs.items()}}
    return out


def render(data: dict) -> str:
    """Markdown of both parts (docs/results/firstorder.md)."""
    s = data["settled"]
    head = " | ".join(f"to {g:.0e}" for g in GAPS)
    lines = [f"load average {data['load']:.1f}; {SETTLED} ({s['contacts']:,} contacts), relaxed dual: Clarabel "
             f"{np.median(s['clarabel_seconds']):.3f} s (median of {len(s['clarabel_seconds'])}); first iteration "
             f"[seconds, with a history] whose objective is within the gap of "
             + (f"the accurate optimum (Clarabel to {s['reference_tol']:g})" if "reference_tol" in s else "Clarabel's")
             + f", cap {s['max_iter']:,} iterations", "",
             f"| method | {head} | gap at the cap |", "|---|" + "---:|" * (len(GAPS) + 1)]
    for m in FIRST_ORDER:               # in a fixed order: the stored record's keys are sorted
        row = s["methods"][m]
        t0 = row["start_seconds"]       # the ipm pass before a warm-started run, included in its seconds
        cells = [f"{k:,} [{t0 + t:.2f} s]" if k is not None else "-" for _, k, t in row["within"]]
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {row['final_gap']:.1e} |")
    lines += ["", f"Stacks, tol {STACK_TOL:g} (Siconos error), medians of {data['repetitions']} interleaved rounds on "
              "freshly read problems:", "", "| problem | contacts | method | status | iterations | solve s [min-max] | siconos error |",
              "|---|---:|---|---|---:|---:|---:|"]
    for rel in STACKS:
        st = data["stacks"][rel]
        for k, v in ((f"{f} {m}", st["methods"][f"{f} {m}"]) for f, m in STACK_METHODS):
            t = v["seconds"]
            err = f"{v['siconos_error']:.1e}" if v["siconos_error"] is not None else "-"
            lines.append(f"| {rel.split('/')[-1]} | {st['contacts']} | {k} | {v['status']} | {v['iterations']} | "
                         f"{np.median(t):.4f} [{t[0]:.4f}-{t[-1]:.4f}] | {err} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--max-iter", type=int, default=50_000)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    data = {"settled": settled(args.repetitions, args.max_iter), "stacks": stacks(args.repetitions),
            "repetitions": args.repetitions}
    data["load"] = os.getloadavg()[0]
    print(render(data), end="")
    if args.write:
        command = "python -m benchmarks.timing.bench_firstorder" + (f" --repetitions {args.repetitions}" if args.repetitions != 3
                                                             else "") + (f" --max-iter {args.max_iter}" if args.max_iter != 50_000 else "")
        print(write_results("firstorder", data, render, command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
