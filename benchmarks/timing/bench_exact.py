"""Exact Coulomb methods side by side: time to a Siconos error of 1e-8 (python -m benchmarks.timing.bench_exact).

For every shared problem (../shared/data) and one generated problem of about 10,000 contacts, each
exact method is run once with tol = 1e-8 and judged by the workbench (status "solved" means
siconos_error <= 1e-8). Printed as markdown tables:

1. time to 1e-8 [s] (solve time, compile excluded; "-" not applicable) or the status and the error
   reached, per problem and method; the fixed points add their outer-iteration count;
2. the overhead of one outer iteration of a fixed point (median wall time of outer iterations 2..K:
   data update, re-solve, unpack, slip speeds; and the solver's call alone) against one plain relaxed
   solve with the same solver (median of 3 solve times of the relaxed formulation, the solver's set-up
   included, cvxpy's compile excluded), target <= 1.1x; and the
   same per inner iteration, which separates the machinery's overhead from a shifted subproblem
   needing more or fewer iterations than the relaxed one;
3. SCS's inner warm start on/off (outer iterations, inner iterations, time).

``--corpus`` instead runs every exact method once on each corpus problem with 10 or more contacts
(../shared/data, time limit 60 s, tol 1e-8) and prints, per problem, the status, solve time and
Siconos error of each method (a fixed point's outer iterations, and "+pN" when the Newton polish
ran N iterations; a run finished by another method names it and what its method reached alone), then
per method the success rate of the method alone (status "solved" = Siconos error <= 1e-8 within the
limit, up to a hand-over) and, as a row of its own, of the composite with its fallback or polish;
files the workbench cannot read are listed, not counted. ``--methods`` restricts the columns
(comma-separated formulation/solver).

``--quick`` skips the large problem (problems.synthetic.sphere_packing, 4,500 spheres), ``--large-only``
runs it alone; ``--time-limit`` caps every run (default 40 s). Siconos
methods are left out when python3-siconos is missing. Every method first solves the 2D rolling ball
once, untimed (imports, numba compilation).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from problems.scenes import rolling_ball_2d
from workbench.io import load_problem
from workbench.problem import TimeStepProblem
from workbench.shared_data import reference_files
from workbench.method import solve
from workbench.solvers import SOLVERS, SolveOptions, SolveResult
from workbench.solvers.siconos import SICONOS_PYTHON, probe

TOL = 1e-8
FIXED_POINTS = [("dual-fixed-point", "clarabel"), ("dual-fixed-point", "scs"), ("primal-fixed-point", "clarabel"),
                ("primal-fixed-point", "scs")]
SICONOS_METHODS = ("NSN_AC", "NSGS", "ADMM", "FPP", "EG", "ACLMFP")
#: the in-house first-order solvers on the anti-relaxed CCQO (Melanz et al. 2015), where registered
ANTI_RELAXED = [("anti-relaxed", s) for s in ("apgd", "pgs", "jacobi", "bb", "admm") if s in SOLVERS]


def all_methods(siconos: bool) -> list[tuple[str, str]]:
    return [("ncp", "newton"), ("ncp", "pqn")] + \
        ([("ncp", f"siconos:{m}") for m in SICONOS_METHODS] if siconos else []) + FIXED_POINTS + ANTI_RELAXED


def large_problem() -> TimeStepProblem:
    """The shared generator's packing of 4,500 spheres in a box: about 10,000 contacts."""
    from problems.synthetic import sphere_packing
    return sphere_packing(4500, seed=0)


def methods(problem: TimeStepProblem, siconos: bool) -> list[tuple[str, str]]:
    """The exact methods that take ``problem`` (Siconos: no joints; the primal: global problems)."""
    return [(f, s) for f, s in all_methods(siconos)
            if not (s.startswith("siconos:") and problem.n_bilateral)
            and (problem.is_global or f != "primal-fixed-point")]


def cell(res) -> str:
    err = res.metrics.get("siconos_error")
    if res.status == "solved":
        text = f"{res.solve_seconds:.3g}"
    else:
        text = f"{res.status}" + (f" ({err:.1e})" if err is not None else "")
    if "outer_iterations" in res.info:
        polish = res.info.get("polish")
        text += f" [{res.info['outer_iterations']} outer" + (f" +p{polish['iterations']}" if polish else "") + "]"
    for h in res.handover:  # a run finished by another method says so, and what its method reached alone
        text += f" [{h['to']} {h['kind']}; alone {h['status_alone']} ({h['error_before']:.1e})]"
    return text


def run(problem, form, slv, time_limit, **params):
    max_iter = 20_000 if slv.startswith("siconos") else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solve(problem, form, slv, SolveOptions(tol=TOL, max_iter=max_iter, time_limit=time_limit,
                                                      keep_history=False, params=params))


CORPUS_MIN_CONTACTS = 10


def corpus(time_limit: float, only: list[tuple[str, str]] | None, siconos: bool) -> int:
    """The corpus mode of the module docstring."""
    problems, unread = [], []
    for f in reference_files():
        try:
            p = load_problem(f)
        except Exception as exc:  # a file the readers do not take yet is reported, not fatal
            unread.append(f"{f.name}: {str(exc).splitlines()[0][:120]}")
            continue
        if p.n_contacts >= CORPUS_MIN_CONTACTS:
            problems.append(p)
    listed = only or all_methods(siconos)
    ball = rolling_ball_2d()
    for m in methods(ball, siconos):  # untimed warm-up: lazy imports, numba compilation, first calls
        if m in listed:
            run(ball, *m, time_limit)
    results = {}
    for p in problems:
        for m in methods(p, siconos):
            if m in listed:
                try:
                    results[p.name, m] = run(p, *m, time_limit)
                except Exception as exc:  # a solver that raises is a finding of the benchmark, not its end
                    results[p.name, m] = SolveResult(solver=m[1], formulation=m[0], status="crash",
                                                     message=f"{type(exc).__name__}: {exc}".splitlines()[0])
                print(f"{p.name} {m}: {cell(results[p.name, m])}", file=sys.stderr, flush=True)
    names = [f"{f.replace('-fixed-point', '-fp')}/{s}" for f, s in listed]
    print(f"\n### Corpus problems with >= {CORPUS_MIN_CONTACTS} contacts: time to Siconos error {TOL:g} [s] "
          f"(else status and error; cap {time_limit:g} s)\n")
    print("| problem | contacts | d | kind | " + " | ".join(names) + " |")
    print("|---|---:|---:|---|" + "---|" * len(listed))
    for p in problems:
        cells = [cell(results[p.name, m]) if (p.name, m) in results else "-" for m in listed]
        print(f"| {p.name} | {p.n_contacts} | {p.d} | {'global' if p.is_global else 'local'} | " + " | ".join(cells) + " |")
    print("\nA method counts what it solved alone (up to a hand-over); the composite (with its fallback or polish) "
          "is its own row.\n")
    print("| method | solved / run | success | median time of the solved [s] | hand-overs |")
    print("|---|---:|---:|---:|---:|")
    for m, name in zip(listed, names):
        runs = [r for (_, mm), r in results.items() if mm == m]
        rows = [(name, [(r.status_alone, r.seconds_alone) for r in runs])]
        handed = [r for r in runs if r.handover]
        if handed:
            label = ", ".join(dict.fromkeys(f"+{h['to']} {h['kind']}" for r in handed for h in r.handover))
            rows.append((f"{name} ({label})", [(r.status, r.solve_seconds) for r in runs]))
        for shown, outcomes in rows:
            ok = [t for status, t in outcomes if status == "solved"]
            median = f"{np.median(ok):.3g}" if ok else "-"
            rate = f"{100 * len(ok) / len(outcomes):.0f}%" if outcomes else "-"
            print(f"| {shown} | {len(ok)} / {len(outcomes)} | {rate} | {median} | {len(handed)} |")
    if unread:
        print("\nNot read (not counted): " + "; ".join(unread))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shared problems only")
    ap.add_argument("--large-only", action="store_true", help="the generated problem only")
    ap.add_argument("--corpus", action="store_true", help=f"corpus problems with >= {CORPUS_MIN_CONTACTS} contacts, "
                    "success rate per method (time limit default 60 s)")
    ap.add_argument("--methods", help="comma-separated formulation/solver pairs (default: every exact method)")
    ap.add_argument("--time-limit", type=float, default=None, help="cap per run [s] (default 40, --corpus 60)")
    args = ap.parse_args(argv)
    siconos = probe(SICONOS_PYTHON)[0] is not None
    if args.corpus:
        only = [tuple(m.split("/", 1)) for m in args.methods.split(",")] if args.methods else None
        return corpus(args.time_limit or 60.0, only, siconos)
    args.time_limit = args.time_limit or 40.0
    problems = [] if args.large_only else \
        [load_problem(f) for f in reference_files()]
    if not args.quick:
        t0 = time.perf_counter()
        problems.append(large_problem())
        print(f"generated {problems[-1].name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    listed = all_methods(siconos)
    ball = rolling_ball_2d()
    for m in methods(ball, siconos):  # untimed warm-up: lazy imports, numba compilation, first calls
        run(ball, *m, args.time_limit)
    results, overhead, warm = {}, [], []
    for p in problems:
        for m in methods(p, siconos):
            results[p.name, m] = run(p, *m, args.time_limit)
            print(f"{p.name} {m}: {cell(results[p.name, m])}", file=sys.stderr, flush=True)
        for form, slv in FIXED_POINTS:
            fp = results.get((p.name, (form, slv)))
            if fp is None or len(fp.info.get("outer_seconds", [])) < 2:
                continue
            plain = [run(p, form.replace("-fixed-point", ""), slv, args.time_limit) for _ in range(3)]
            overhead.append((p.name, form, slv, float(np.median(fp.info["outer_seconds"][1:])),
                             float(np.median(fp.info["inner_seconds"][1:])),
                             float(np.median([r.solve_seconds for r in plain])), plain[0].iterations,
                             float(np.mean(fp.info["inner_iterations"][1:]))))
        if p.n_contacts > 50:
            on = results[p.name, ("dual-fixed-point", "scs")]
            off = run(p, "dual-fixed-point", "scs", args.time_limit, inner_warm_start=False)
            warm.append((p.name, off, on))

    header = " | ".join(f"{f.replace('-fixed-point', '-fp')}/{s}" for f, s in listed)
    print(f"\n### Time to Siconos error {TOL:g} [s] (else status and error reached)\n")
    print(f"| problem | contacts | {header} |")
    print("|---|---:|" + "---|" * len(listed))
    for p in problems:
        cells = [cell(results[p.name, m]) if (p.name, m) in results else "-" for m in listed]
        print(f"| {p.name} | {p.n_contacts} | " + " | ".join(cells) + " |")
    print("\n### One outer iteration against one plain relaxed solve (same solver)\n")
    print("| problem | formulation | solver | outer iteration [s] | of which solver [s] | relaxed solve [s] | ratio "
          "| inner its (outer mean) | relaxed its | ratio per iteration |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, form, slv, outer, inner_s, plain, plain_it, inner_it in overhead:
        per_it = (outer / inner_it) / (plain / plain_it) if inner_it and plain_it else float("nan")
        print(f"| {name} | {form} | {slv} | {outer:.4g} | {inner_s:.4g} | {plain:.4g} | {outer / plain:.2f} "
              f"| {inner_it:.1f} | {plain_it} | {per_it:.2f} |")
    print("\n### SCS inner warm start (dual-fixed-point)\n")
    print("| problem | warm start | status | outer | inner iterations | solve [s] |")
    print("|---|---|---|---:|---:|---:|")
    for name, off, on in warm:
        for label, r in (("off", off), ("on", on)):
            print(f"| {name} | {label} | {r.status} | {r.info.get('outer_iterations')} | {r.iterations} "
                  f"| {r.solve_seconds:.3g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
