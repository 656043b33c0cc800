"""How far past its time limit each solver returns through the Python API (issue 24).

    .venv/bin/python -m benchmarks.timing.bench_time_limits [--limit S] [--spheres N] [--large N] [--write]

For every available solver and the first formulation it can take, after a warm-up (imports and
compilation are never inside the limit), one ``workbench.method.solve`` of a freshly generated
sphere packing with an accuracy no solver reaches (tol 1e-15, no iteration cap) and
``time_limit=S``: the wall time of the call, the solver's own solve_seconds, the build time, and
for Siconos its start-up (not counted in its limit, ``info["startup_seconds"]``). The overrun is
the call's wall time less the limit, the build and the Siconos start-up; "forecast" says where the
run stopped before a stretch of work it cannot interrupt, forecast to end past the limit
(``info["time_limit_forecast"]``, workbench.solvers.recorder.Recorder.affords). With ``--large N``
the solvers whose iterations are such native calls (NATIVE) are measured again on a packing of N
spheres, where one of those calls can outlast the limit. Solvers found by cvxpy
(scip, ...) get no time limit (workbench.solvers.cvxpy_generic) and are listed, not run. The table is
printed; with ``--write`` it goes to docs/results/time_limits.{json,md} (workbench.provenance), embedded in
docs/threat-model.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from workbench.provenance import ROOT, embed, write_results  # noqa: E402


#: the solvers whose iterations are native calls that cannot be interrupted (sparse factorisations,
#: a QP solver's iterations), measured again on the large packing of ``--large``
NATIVE = ("ipm", "admm", "newton", "lcp1", "lcp2")


def _table(rows: list[dict]) -> list[str]:
    lines = ["| solver | formulation | status | wall [s] | build [s] | start-up [s] | overrun [s] | forecast |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        f = r.get("forecast")
        told = f"stopped at {f['at_seconds']:.2f} s before {f['forecast_seconds']:.2f} s" if f else ""
        lines.append(f"| {r['solver']} | {r['formulation']} | {r['status']} | {r['wall']:.2f} | {r['build']:.2f} "
                     f"| {r['startup']:.2f} | {r['overrun']:.2f} | {told} |")
    over = [r["solver"] for r in rows if r["overrun"] > 2.0]
    return lines + ["", f"Over the limit by more than 2 s: {', '.join(over) or 'none'}."]


def render(data: dict) -> str:
    lines = [f"Sphere packing of {data['spheres']} spheres ({data['contacts']} contacts), tol 1e-15, no "
             f"iteration cap, time_limit = {data['limit']:g} s; overrun = wall - limit - build - start-up.", "",
             *_table(data["rows"])]
    large = data.get("large")
    if large:
        lines += ["", f"The solvers whose iterations are native calls that cannot be interrupted, on a sphere packing "
                      f"of {large['spheres']} spheres ({large['contacts']} contacts), the same limit:", "",
                  *_table(large["rows"])]
    if data["unbounded"]:
        lines.append(f"Not measured, as no time limit reaches them through the Python API (found by cvxpy; their "
                     f"results say so): {', '.join(data['unbounded'])}.")
    return "\n".join(lines) + "\n"


def measure(solver, limit: float, spheres: int) -> dict:
    """One solver's row."""
    from problems.synthetic import sphere_packing
    from workbench.method import Method, formulations_for, solve
    from workbench.solvers import SolveOptions

    form = formulations_for(solver)[0].name
    Method(form, solver.name).warm_up()
    problem = sphere_packing(spheres, seed=3)  # fresh: nothing cached from another solve
    t0 = time.perf_counter()
    res = solve(problem, form, solver.name, SolveOptions(tol=1e-15, time_limit=limit, keep_history=False))
    wall = time.perf_counter() - t0
    startup = float(res.info.get("startup_seconds") or 0.0)
    return {"solver": solver.name, "formulation": form, "status": res.status, "wall": wall,
            "build": res.build_seconds, "startup": startup, "overrun": wall - limit - res.build_seconds - startup,
            "forecast": res.info.get("time_limit_forecast")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=1.0)
    parser.add_argument("--spheres", type=int, default=300)
    parser.add_argument("--large", type=int, default=0, help="also measure the NATIVE solvers on a packing of this "
                        "many spheres (0: not)")
    parser.add_argument("--write", action="store_true", help="also write docs/results/time_limits.* (default: print only)")
    args = parser.parse_args()

    from problems.synthetic import sphere_packing
    from workbench.method import formulations_for
    from workbench.solvers import get_solver, list_solvers
    from workbench.solvers.cvxpy_generic import GenericCvxpySolver

    rows, unbounded = [], []
    contacts = sphere_packing(args.spheres, seed=3).n_contacts
    for solver in list_solvers():
        if not solver.availability()[0] or not formulations_for(solver):
            continue
        if isinstance(solver, GenericCvxpySolver):  # no time limit reaches it (its result says so)
            unbounded.append(solver.name)
            continue
        rows.append(measure(solver, args.limit, args.spheres))
        print(rows[-1], file=sys.stderr, flush=True)
    large = None
    if args.large > 0:
        large = {"spheres": args.large, "contacts": sphere_packing(args.large, seed=3).n_contacts, "rows": []}
        for name in NATIVE:
            large["rows"].append(measure(get_solver(name), args.limit, args.large))
            print(large["rows"][-1], file=sys.stderr, flush=True)
    import importlib
    renderer = importlib.import_module("benchmarks.timing.bench_time_limits").render  # by name, not __main__
    data = {"limit": args.limit, "spheres": args.spheres, "contacts": contacts, "rows": rows, "unbounded": unbounded,
            "large": large}
    print(renderer(data))
    if args.write:
        print(write_results("time_limits", data, renderer,
                            command=" ".join(["python -m benchmarks.timing.bench_time_limits", *sys.argv[1:]])))
        embed(ROOT / "docs" / "threat-model.md", "time_limits")


if __name__ == "__main__":
    main()
