"""Export speed: writing a 10,000-contact time step in every format (python -m benchmarks.timing.bench_export).

The problem is the shared generator's packing of 4,500 spheres in a box (problems.synthetic.sphere_packing,
about 10,000 contacts, 27,000 dof). Every format is written once per formulation it takes (model formats:
the relaxed dual and primal; data formats: raw and local) into a temporary folder; the table gives the wall
time of ``workbench.export.export`` (model building, factorisation and writing included) and the size of
the files written. ``--spheres N`` changes the size; MOSEK formats are left out without the mosek package.

``--readers`` measures instead what each model file needs from the solver that reads it: every model
format x formulation of a small packing (dataset:scaling-00064) and the settled packing
(dataset:settled-00320) is exported with the default settings and solved by each installed independent
reader at its default settings (benchmarks.peers.export_readers); the file's optimum, mapped back with the
header's objective_scale and objective_offset, is compared with the workbench's own optimum: the relaxed
dual by the workbench's ipm solver at tol 1e-10 (for the cone models), the pyramid primal QP by Clarabel
through the workbench's cvxpy model at tolerances 1e-11 (for the pyramid models). Prints the table; with
``--write`` also docs/results/export-readers.{md,json} (workbench.provenance) and the copy embedded in
docs/export.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.commands.check_export import dual_value, reference  # the workbench's optimum, as workbench check-export finds it
from workbench.export import FORMATS, DATA_FORMULATIONS, MODELS, export

if TYPE_CHECKING:
    from benchmarks.peers.export_readers import Reading

#: the packings of --readers: a small one and the settled one of Mazhar et al. 2014 sec. 5.1.1
PACKINGS = ("dataset:scaling-00064", "dataset:settled-00320")
#: what a reader must reach: relative distance of the mapped optimum from the workbench's
RTOL = 1e-6


def formats() -> list[str]:
    try:
        import mosek  # noqa: F401
        return list(FORMATS)
    except ImportError:
        return [f for f in FORMATS if f not in ("ptf", "task")]


def isolated(fmt: str, reader: str, path) -> Reading:
    """Reader ``reader`` of format ``fmt`` (benchmarks.peers.export_readers.READERS) on ``path``, in a fresh Python
    process: a reader that crashes or hangs (SCIP 10 aborted in malloc on the settled packing's dual LP, and
    once hung there) is a row, "crashed (exit code N)" or "no answer after N s", not the end of the
    measurement. The child gets the time limit and a minute to start and answer."""
    import subprocess

    from benchmarks.peers.export_readers import TIME_LIMIT, Reading
    code = ("import json, sys; from benchmarks.peers.export_readers import READERS; "
            "read = next(r[1] for r in READERS[sys.argv[1]] if r[0] == sys.argv[2]); "
            "print(json.dumps(read(sys.argv[3]).__dict__))")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code, fmt, reader, str(path)], capture_output=True, text=True,
                              timeout=TIME_LIMIT + 60, cwd=Path(__file__).resolve().parents[2])
    except subprocess.TimeoutExpired:
        return Reading(None, f"no answer after {TIME_LIMIT + 60:.0f} s", time.perf_counter() - t0)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return Reading(None, f"crashed (exit code {proc.returncode})", time.perf_counter() - t0)
    return Reading(**json.loads(lines[-1]))


def measure_readers(packings=PACKINGS) -> dict:
    """Every (packing, model format, formulation, installed reader): the mapped relative distance, the
    reader's status and seconds (module docstring)."""
    from benchmarks.peers.export_readers import READERS, TIME_LIMIT, available
    from workbench.export import build_model
    from workbench.sources import load
    rows, refs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in packings:
            problem = load(spec)
            for family in ("cone", "pyramid"):
                refs[f"{spec} {family}"] = reference(problem, family)
            for fmt, readers in READERS.items():
                for name, _, package, formulations in readers:
                    for formulation in formulations:
                        row = {"packing": spec, "contacts": problem.n_contacts, "format": fmt,
                               "formulation": formulation, "reader": name}
                        if not available(package):
                            rows.append({**row, "status": f"unavailable: {package} is not installed"})
                            continue
                        path = Path(tmp) / f"model.{fmt}"
                        export(problem, formulation, fmt, path)
                        reading = isolated(fmt, name, path)
                        optimum = refs[f"{spec} {'pyramid' if formulation.startswith('lcp-') else 'cone'}"][0]
                        model = build_model(problem, formulation)
                        rel = None if reading.value is None else abs(dual_value(
                            formulation, model.objective_scale, model.objective_offset, reading.value) - optimum) / abs(optimum)
                        rows.append({**row, "status": reading.status, "seconds": reading.seconds, "relative": rel})
                        print(f"{spec} {fmt} {formulation} {name}: {reading.status}, "
                              f"{'-' if rel is None else f'{rel:.1e}'}, {reading.seconds:.1f} s", flush=True)
    return {"rows": rows, "references": {k: {"optimum": v[0], "how": v[1]} for k, v in refs.items()},
            "time_limit": TIME_LIMIT, "rtol": RTOL}


#: reader -> why it fails on the files where it does, as found by running it by hand (docs/export.md): shown under the
#: table for each reader with a row that misses
WHY = {
    "highs": "its QP solver is an active-set method: on the pyramid primal it stops with \"QP solver has failed due "
             "to degeneracy: cannot find non-active constraint to leave basis\" (at a sticking contact all m_C faces "
             "of the pyramid are active at one point, more active rows than the contact has velocities), and on the "
             "settled packing's pyramid dual, whose work grows with the active bounds (one per iteration), it reaches "
             "the time limit. It takes no quadratic constraints, so no cone model.",
    "scip": "SCIP 10 (pyscipopt 6.3) is a global solver: it bounds the quadratic objective by linear cuts. On the "
            "settled packing it aborts in glibc (\"double free or corruption\", \"malloc(): invalid size\") on most "
            "files, after the root LP, inside its default NLP heuristic subnlp (traced on two files: with that "
            "heuristic off neither crashed), and where it does not abort its dual bound has not closed the gap at "
            "the time limit. On the small packing's primal it stops at its absolute tolerance on the quadratic cone "
            "||mu u_t||^2 <= u_n^2, which lets a slowly sliding contact's velocity leave the cone by about that "
            "tolerance over 2 u_n.",
    "mosek+clarabel": "the model MOSEK's reader parsed, its objective's epigraph handed back to Clarabel as a "
                      "quadratic objective; kept as a rotated cone, the pyramid primal sits at the edge of Clarabel's "
                      "default tolerances (\"AlmostSolved\" on the parsed model, \"Solved\" on the CBF by round-off).",
}


def _cell(row: dict) -> str:
    if "seconds" not in row:
        return row["status"]
    if row["relative"] is None:
        return f"{row['status']} after {row['seconds']:.0f} s"
    verdict = "" if row["relative"] <= row.get("rtol", RTOL) else " (misses 1e-6)"
    return f"{row['relative']:.1e}{verdict}, {row['seconds']:.1f} s"


def render(data: dict) -> str:
    """The --readers table: one row per file and reader, one column per packing."""
    packings = list(dict.fromkeys(r["packing"] for r in data["rows"]))
    contacts = {r["packing"]: r["contacts"] for r in data["rows"]}
    head = " | ".join(f"{p.split(':')[-1]} ({contacts[p]:,} contacts)" for p in packings)
    out = ["| file | formulation | reader (default settings) | " + head + " |",
           "|---|---|---|" + "---|" * len(packings)]
    cells: dict[tuple, dict] = {}
    for r in data["rows"]:
        cells.setdefault((r["format"], r["formulation"], r["reader"]), {})[r["packing"]] = r
    for (fmt, formulation, reader), by in cells.items():
        out.append(f"| `.{fmt}` | {formulation} | {reader} | " +
                   " | ".join(_cell(by[p]) if p in by else "-" for p in packings) + " |")
    out += ["", f"Relative distance of the file's optimum, mapped back with its header, from the workbench's "
                f"(\"misses 1e-6\" where it is above {data['rtol']:.0e}), and the reader's seconds; a status is the "
                f"reader's own where it did not solve (time limit {data['time_limit']:.0f} s per file). Readers: "
                "Clarabel on the CBF parsed by benchmarks.peers.export_readers, MOSEK's reader with Clarabel "
                "for PTF/task, HiGHS and SCIP on LP/MPS/NL, and two parser+solver readers of LP/MPS/NL: the model as "
                "HiGHS's reader (highs+clarabel) or SCIP's readers (scip+clarabel) parsed it, solved by Clarabel; "
                "every tolerance at the reader's default; for a parser+solver the seconds are the solver's. The "
                "workbench's optima:", ""]
    out += [f"- {key}: {ref['optimum']!r} J ({ref['how']})" for key, ref in data["references"].items()]
    missed = [reader for reader in WHY if any(r["reader"] == reader and (r.get("relative") is None or r["relative"] >
                                                                         data["rtol"]) for r in data["rows"])]
    if missed:
        out += ["", "Why a reader does not reach the optimum of a file (docs/export.md):", ""]
        out += [f"- {reader}: {WHY[reader]}" for reader in missed]
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spheres", type=int, default=4500, help="spheres in the packing (default 4500)")
    ap.add_argument("--readers", action="store_true", help="measure the independent readers instead (docstring)")
    ap.add_argument("--packings", default=",".join(PACKINGS), help="with --readers: packings, comma-separated")
    ap.add_argument("--write", action="store_true",
                    help="with --readers: also write docs/results/export-readers.* (default: print only)")
    args = ap.parse_args(argv)
    if args.readers:
        data = measure_readers(tuple(s for s in args.packings.split(",") if s))
        command = "python -m benchmarks.timing.bench_export" + "".join(
            f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
        if not args.write:
            print(render(data))
            return
        from benchmarks.timing import bench_export  # the renderer by its importable name, also under python -m
        from workbench.provenance import embed, write_results
        print(write_results("export-readers", data, bench_export.render, command).read_text())
        embed(Path(__file__).resolve().parents[2] / "docs" / "export.md", "export-readers")
        return
    from problems.synthetic import sphere_packing
    t0 = time.perf_counter()
    problem = sphere_packing(args.spheres, seed=0)
    print(f"problem: sphere packing, {problem.n_contacts} contacts, {problem.n_dof} dof, "
          f"built in {time.perf_counter() - t0:.2f} s\n")
    print("| format | formulation | seconds | MB written | files |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in formats():
            spec = FORMATS[fmt]
            for formulation in (MODELS if spec.kind == "model" else DATA_FORMULATIONS):
                out = Path(tmp) / f"{fmt}-{formulation}{spec.suffixes[0]}"
                t0 = time.perf_counter()
                files = export(problem, formulation, fmt, out)
                seconds = time.perf_counter() - t0
                size = sum(f.stat().st_size for f in files) / 1e6
                print(f"| {fmt} | {formulation} | {seconds:.2f} | {size:.1f} | {len(files)} |", flush=True)
                for f in files:
                    f.unlink()


if __name__ == "__main__":
    main()
